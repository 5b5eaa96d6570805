//! The totals state file (outside input: it survives restarts and may be
//! damaged or of another version): decode must never panic, and what it
//! accepts encodes back to the same bytes and restores into any fabric.
#![no_main]

use ibpm_agentx::fabric::persist;
use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::fabric::state::SharedState;
use ibpm_agentx::ib::topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(ports) = persist::decode(data) {
        assert_eq!(persist::encode(&ports), data);
        let fabric = topology::default_fabric();
        let _ = SharedState::new(fabric, SweepConfig::default(), std::time::Instant::now())
            .lock()
            .restore_totals(&ports);
    }
});
