//! A simulated fabric with real verdicts for the renderers' tests: the
//! health evaluator fed the rig's sweeps, with one link between two
//! switches taken down (link lost on both ends), one channel adapter gone
//! silent (unreachable and unresponsive) and one port with a high symbol
//! error rate.

use std::sync::Arc;
use std::time::Duration;

use crate::fabric::cache::Snapshot;
use crate::health::{Evaluator, HealthConfig};
use crate::ib::{Guid, NodeType};
use crate::rig::{AgentRig, RigOptions};

/// The first evaluation's wall-clock time (2026-11-29T10:00:00Z).
pub const T0: u64 = 1_796_032_800_000;
/// The sweep interval of the fixture.
pub const STEP: u64 = 10_000;

pub struct Unhealthy {
    pub rig: AgentRig,
    pub snap: Arc<Snapshot>,
    /// The lost link's ends.
    pub lost: ((Guid, u8), (Guid, u8)),
    /// The silent channel adapter.
    pub silent: Guid,
    /// The erroring port.
    pub noisy: (Guid, u8),
    /// The time of the last evaluation.
    pub now: u64,
}

pub fn unhealthy() -> Unhealthy {
    let mut rig = AgentRig::new(RigOptions::default());
    let fabric = rig.fabric();
    let mut ev = Evaluator::new(HealthConfig::default());
    let mut now = T0;
    let step = |rig: &mut AgentRig, ev: &mut Evaluator, now: &mut u64| {
        rig.advance(Duration::from_millis(STEP));
        rig.sweep();
        *now += STEP;
        let v = ev
            .evaluate(&rig.cache.load(), *now, &[])
            .expect("a new sweep");
        rig.cache.set_health(Arc::new(v));
    };
    for _ in 0..2 {
        step(&mut rig, &mut ev, &mut now);
    }
    let switch = |g: Guid| {
        fabric
            .node(g)
            .is_some_and(|n| n.id.node_type == NodeType::Switch)
    };
    let lost = fabric
        .nodes
        .iter()
        .filter(|n| switch(n.id.guid))
        .find_map(|n| {
            n.ports.iter().find_map(|p| {
                let peer = p.remote()?;
                switch(peer.0).then_some(((n.id.guid, p.num), peer))
            })
        })
        .expect("a link between two switches");
    let silent = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Ca)
        .map(|n| n.id.guid)
        .expect("a channel adapter");
    let noisy = fabric
        .nodes
        .iter()
        .rev()
        .find(|n| n.id.node_type == NodeType::Ca && n.id.guid != silent)
        .map(|n| (n.id.guid, n.ports[0].num))
        .expect("another channel adapter");
    assert!(rig.sim.set_link(lost.0.0, lost.0.1, false));
    rig.state.lock().offer(rig.sim.fabric());
    rig.sim.set_reachable(silent, false);
    assert!(rig.sim.set_symbol_error_rate(noisy.0, noisy.1, 1000.0));
    for _ in 0..7 {
        step(&mut rig, &mut ev, &mut now);
    }
    let snap = rig.cache.load();
    Unhealthy {
        rig,
        snap,
        lost,
        silent,
        noisy,
        now,
    }
}
