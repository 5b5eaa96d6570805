//! The health state file (outside input: it survives restarts and may be
//! damaged or of another version): decode must never panic; what it
//! accepts restores into an evaluator that encodes a file decode accepts
//! again, and that evaluates a sweep of a fabric without panicking.
#![no_main]

use std::sync::Arc;

use ibpm_agentx::fabric::cache::Snapshot;
use ibpm_agentx::fabric::record::NodeRecord;
use ibpm_agentx::health::{Evaluator, HealthConfig, state};
use ibpm_agentx::ib::topology;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(saved) = state::decode(data) else {
        return;
    };
    let mut ev = Evaluator::new(HealthConfig::default());
    ev.restore(saved);
    let again = state::encode(&ev);
    state::decode(&again).expect("what restores encodes to a file that decodes");
    let fabric = topology::default_fabric();
    let snap = Snapshot {
        sweep: 1,
        nodes: fabric.nodes.iter().map(|n| Arc::new(NodeRecord::new(n))).collect(),
        ..Default::default()
    };
    let v = ev
        .evaluate(&snap, ibpm_agentx::health::At::both(1_795_944_802_000), &[])
        .expect("a new sweep");
    assert!(v.ports.windows(2).all(|w| (w[0].guid, w[0].port) < (w[1].guid, w[1].port)));
});
