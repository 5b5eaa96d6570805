//! Topology files (ibnetdiscover / ibsim format): parse must never panic,
//! and a parsed fabric must be usable by the simulation and the sweeper.
#![no_main]

use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::fabric::state::SharedState;
use ibpm_agentx::ib::topology;
use ibpm_agentx::sim::{SimFabric, SimOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(fabric) = topology::parse(text) {
        let _ = SimFabric::new(fabric.clone(), SimOptions::default());
        let _ = SharedState::new(fabric, SweepConfig::default(), std::time::Instant::now());
    }
});
