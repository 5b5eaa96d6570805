//! The event log's file (outside input: it survives restarts and may be
//! damaged or of another version): decode must never panic; what it
//! accepts is taken up by a ring that encodes a file decode accepts again.
#![no_main]

use ibpm_agentx::events::{Bounds, Ring, file};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(saved) = file::decode(data) else {
        return;
    };
    let mut ring = Ring::new(Bounds::default());
    for r in saved.records {
        ring.restore(r, &saved.strings);
    }
    let again = file::encode(&ring);
    let back = file::decode(&again).expect("what is taken up encodes to a file that decodes");
    assert_eq!(back.records.len(), ring.len());
});
