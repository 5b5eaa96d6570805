//! Node-name-maps (rdma-core's format): parse must never panic, and every
//! name taken is bounded, without control characters.
#![no_main]

use ibpm_agentx::ib::names::{NAME_MAX, NameMap};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(map) = NameMap::parse(data) {
        for (_, name) in map.iter() {
            assert!(!name.is_empty() && name.len() <= NAME_MAX);
            assert!(!name.chars().any(char::is_control));
        }
    }
});
