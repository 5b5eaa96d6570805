//! A simulated fabric with real verdicts for the renderers' tests: the
//! agent's health watch fed the rig's sweeps on its clock, with one link between two
//! switches taken down (link lost on both ends), one channel adapter gone
//! silent (unreachable and unresponsive) and one port with a high symbol
//! error rate.

use std::sync::Arc;
use std::time::Duration;

use crate::fabric::cache::Snapshot;
use crate::health::HealthConfig;
use crate::health::watch::Watch;
use crate::ib::{Guid, NodeType};
use crate::rig::{AgentRig, RigOptions};

/// The wall clock when the fixture starts (2026-11-29T10:00:00Z).
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
    // The rig's clock, its wall clock at T0 now.
    let (manual, start) = (rig.clock.clone(), rig.clock.now());
    let mono = rig.time.clock();
    let wall = move || {
        let d = manual.now().saturating_sub(start);
        std::time::SystemTime::UNIX_EPOCH + Duration::from_millis(T0) + d
    };
    let clock = crate::time::Clock::with_wall(move || mono.now(), wall);
    let mut ev = Watch::new(HealthConfig::default(), None).with_clock(clock);
    let mut now = T0;
    let step = |rig: &mut AgentRig, ev: &mut Watch, now: &mut u64| {
        rig.advance(Duration::from_millis(STEP));
        rig.sweep();
        let sweep = rig.cache.load().sweep;
        ev.after_sweep(&rig.cache);
        let h = Arc::clone(&rig.cache.load().health);
        assert_eq!(h.sweep, sweep, "a new sweep");
        *now = h.at;
    };
    for _ in 0..2 {
        step(&mut rig, &mut ev, &mut now);
    }
    let lost = crate::rig::switch_link(&fabric);
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

/// The report's snapshot as the agent sweeping two subnets would publish
/// it: "plane-a" (named, a master SM, a standby local port) holds every
/// port but the lost link's first end and the silent adapter's, which are
/// in the second (unnamed, no master SM, no local port up). The lost link's
/// first node is in both.
pub fn two_subnets(u: &Unhealthy) -> Arc<Snapshot> {
    use crate::ib::subnet::{LocalPort, SmInfo, SmState, SubnetKey, SubnetView};
    let mut snap = (*u.snap).clone();
    let plane_b = |g: Guid, p: u8| g == u.silent || (g, p) == u.lost.0;
    for n in snap.nodes.iter_mut() {
        let mut rec = (**n).clone();
        let g = rec.id.guid;
        for p in rec.ports_mut() {
            p.subnet = u8::from(plane_b(g, p.num()));
        }
        *n = Arc::new(rec);
    }
    let swept = snap.taken;
    snap.subnets = Arc::from(vec![
        SubnetView {
            index: 0,
            name: Some("plane-a".into()),
            key: SubnetKey {
                prefix: crate::ib::subnet::DEFAULT_PREFIX,
                sm_guid: Guid(0x0002_c903_00a1_b2c3),
            },
            sm: Some(SmInfo {
                lid: 1,
                guid: Guid(0x0002_c903_00a1_b2c3),
                priority: 14,
                state: SmState::Master,
                act_count: 7,
            }),
            sweeping: Some(LocalPort::new("mlx5_0", 1)),
            standby: vec![LocalPort::new("mlx5_2", 1)],
            nodes: 10,
            ports: 40,
            sweep: 9,
            swept,
            duration_ms: 12,
            sweep_state: Default::default(),
        },
        SubnetView {
            index: 1,
            key: SubnetKey {
                prefix: 0xfe80_0000_0000_0002,
                sm_guid: Guid(0),
            },
            nodes: 2,
            ports: 2,
            sweep: 3,
            ..Default::default()
        },
    ]);
    Arc::new(snap)
}
