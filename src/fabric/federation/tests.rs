//! Two subnets, each a simulated plane swept by its own stack, merged.

use super::*;
use crate::fabric::cache::Snapshot;
use crate::fabric::control::Controller;
use crate::fabric::engine::{Engine, EngineConfig};
use crate::fabric::record::NodeRecord;
use crate::fabric::settings::SweepConfig;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::Sweeper;
use crate::ib::Guid;
use crate::ib::subnet::SubnetView;
use crate::ib::subnet::{SmInfo, SmState, SubnetKey};
use crate::ib::topology;
use crate::rig::port_counters;
use crate::sim::{ManualClock, SimClock, SimFabric, SimOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Plane A: switch SA, adapter H on its port 1, adapter A1.
const PLANE_A: &str = "Hca 2 \"H\"\n[1] \"SA\"[1]\n\nHca 1 \"A1\"\n[1] \"SA\"[2]\n\n\
Switch 4 \"SA\"\n[1] \"H\"[1]\n[2] \"A1\"[1]\n\n";
/// Plane B: switch SB, the same adapter H on its port 2, adapter B1.
const PLANE_B: &str = "Hca 2 \"H\"\n[2] \"SB\"[1]\n\ncaguid=0x300000\nHca 1 \"B1\"\n[1] \"SB\"[2]\n\n\
switchguid=0x400000\nSwitch 4 \"SB\"\n[1] \"H\"[2]\n[2] \"B1\"[1]\n\n";

const H: Guid = Guid(0x100000);

struct Plane {
    sim: SimFabric,
    sweeper: Sweeper,
    writer: Arc<Controller>,
}

fn plane(fed: &Arc<Federation>, text: &str, index: u8, name: &str) -> Plane {
    plane_every(fed, text, index, name, SweepConfig::default().interval)
}

/// [`plane`] with a sweep interval of `interval`.
fn plane_every(
    fed: &Arc<Federation>,
    text: &str,
    index: u8,
    name: &str,
    interval: Duration,
) -> Plane {
    // Traffic on a manual clock: a minute of it, then none while the
    // test runs.
    let clock = ManualClock::new();
    clock.advance(Duration::from_secs(60));
    let opts = SimOptions {
        clock: SimClock::Manual(clock),
        ..Default::default()
    };
    let sim = SimFabric::new(topology::parse(text).unwrap(), opts);
    let cache = fed.add_member();
    let view = SubnetView {
        index,
        name: Some(name.into()),
        key: SubnetKey {
            prefix: 0xfe80_0000_0000_0000 + u64::from(index),
            sm_guid: Guid(0x200000),
        },
        sm: Some(SmInfo {
            lid: 1,
            guid: Guid(0x200000),
            priority: 5,
            state: SmState::Master,
            act_count: 7,
        }),
        ..Default::default()
    };
    let cfg = SweepConfig {
        interval,
        ..Default::default()
    };
    let state = SharedState::new(sim.fabric(), cfg, Instant::now()).in_subnet(view);
    state.join(fed);
    let writer = Arc::new(Controller::new(
        state.clone(),
        Arc::clone(&cache),
        Box::new(sim.transport()),
        Box::new(sim.transport()),
        ControlConfig::default(),
    ));
    // Short timeouts: some tests silence nodes.
    let engine = Engine::new(
        Box::new(sim.transport()),
        EngineConfig {
            timeout: Duration::from_millis(20),
            retries: 1,
            ..EngineConfig::default()
        },
    );
    let sweeper = Sweeper::new(state, engine, cache);
    Plane {
        sim,
        sweeper,
        writer,
    }
}

/// The planes' sweepers tell the federation of each sweep, as the agent
/// wires them; the rounds are counted.
fn count_rounds<const N: usize>(
    fed: &Arc<Federation>,
    planes: [&mut Plane; N],
) -> Arc<AtomicUsize> {
    let runs = Arc::new(AtomicUsize::new(0));
    let r = Arc::clone(&runs);
    fed.set_after_round(Box::new(move |_| {
        r.fetch_add(1, Ordering::SeqCst);
    }));
    for p in planes {
        let f = Arc::clone(fed);
        p.sweeper
            .set_after_publish(Box::new(move |_| f.member_swept()));
    }
    runs
}

fn two_planes() -> (Arc<Federation>, Plane, Plane) {
    let fed = Federation::new(Arc::new(Cache::new()));
    let a = plane(&fed, PLANE_A, 0, "plane-a");
    let b = plane(&fed, PLANE_B, 1, "plane-b");
    (fed, a, b)
}

#[test]
fn a_node_in_two_subnets_is_one_record_with_its_ports_from_each() {
    let (fed, mut a, mut b) = two_planes();
    a.sweeper.sweep_once();
    b.sweeper.sweep_once();
    let snap = fed.public().load();
    let guids: Vec<Guid> = snap.nodes.iter().map(|n| n.id.guid).collect();
    let mut sorted = guids.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(guids, sorted, "in GUID order, each node once");
    // SA, SB, H, A1, B1.
    assert_eq!(snap.nodes.len(), 5);
    let h = snap.node(H).expect("the adapter on both planes");
    let linked: Vec<(u8, u8)> = h
        .ports()
        .filter(|p| p.link.remote_port != 0)
        .map(|p| (p.link.num, p.subnet))
        .collect();
    assert_eq!(
        linked,
        [(1, 0), (2, 1)],
        "port 1 on plane a, port 2 on plane b"
    );
    // Each port's counters are its own plane's.
    for (num, sim) in [(1u8, &a.sim), (2u8, &b.sim)] {
        let lid = sim.fabric().node(H).unwrap().port(num).unwrap().lid;
        let direct = port_counters(sim, lid, num);
        let rec = h.port(num).unwrap();
        assert!(rec.read_at.is_some(), "port {num} read");
        assert!(
            direct.xmit_data > 0,
            "the simulator moved traffic on port {num}"
        );
    }
    // Every other node is in one subnet.
    let sb = snap.node(Guid(0x400000)).unwrap();
    assert!(sb.ports().all(|p| p.subnet == 1));
    let sa = snap.node(Guid(0x200000)).unwrap();
    assert!(sa.ports().all(|p| p.subnet == 0));
}

#[test]
fn the_snapshot_says_each_subnet_and_sums_the_sweeps() {
    let (fed, mut a, mut b) = two_planes();
    let sa = a.sweeper.sweep_once();
    b.sweeper.sweep_once();
    b.sweeper.sweep_once();
    let snap = fed.public().load();
    assert_eq!(snap.subnets.len(), 2);
    let (va, vb) = (&snap.subnets[0], &snap.subnets[1]);
    assert_eq!((va.index, vb.index), (0, 1));
    assert_eq!(
        (va.label(), vb.label()),
        ("plane-a".into(), "plane-b".into())
    );
    assert_eq!((va.sweep, vb.sweep), (1, 2));
    assert_eq!(snap.sweep, 3);
    assert_eq!(va.nodes, 3, "SA, H and A1");
    assert_eq!(va.sm.unwrap().priority, 5);
    assert!(va.swept.is_some());
    assert!(snap.stats.mads >= sa.mads);
}

#[test]
fn the_evaluators_run_once_a_round() {
    let (fed, mut a, mut b) = two_planes();
    let runs = count_rounds(&fed, [&mut a, &mut b]);
    a.sweeper.sweep_once();
    assert_eq!(runs.load(Ordering::SeqCst), 0, "plane b has not swept yet");
    b.sweeper.sweep_once();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // Plane a sweeps twice more: its second sweep is not a round while b
    // has not swept again (the sweeps are much shorter than the interval).
    a.sweeper.sweep_once();
    a.sweeper.sweep_once();
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    b.sweeper.sweep_once();
    assert_eq!(runs.load(Ordering::SeqCst), 2);
}

#[test]
fn a_write_goes_to_the_subnet_of_its_port() {
    let (fed, mut a, mut b) = two_planes();
    a.sweeper.sweep_once();
    b.sweeper.sweep_once();
    let writers = Writers::new(
        Arc::clone(fed.public()),
        vec![Arc::clone(&a.writer), Arc::clone(&b.writer)],
    );
    let lid_b = b.sim.fabric().node(H).unwrap().port(2).unwrap().lid;
    let lid_a = a.sim.fabric().node(H).unwrap().port(1).unwrap().lid;
    assert!(port_counters(&b.sim, lid_b, 2).xmit_data > 0);
    let before_a = port_counters(&a.sim, lid_a, 1).xmit_data;
    let clear = |port| WriteOp::ClearCounters {
        guid: H,
        port,
        select: 0xffff,
        select2: 0,
    };
    let out = writers.write(&[clear(2)]);
    assert_eq!(out, [Ok(())]);
    assert_eq!(
        port_counters(&b.sim, lid_b, 2).xmit_data,
        0,
        "cleared on plane b"
    );
    assert!(
        port_counters(&a.sim, lid_a, 1).xmit_data >= before_a,
        "plane a untouched"
    );
    // A node no member has.
    let out = writers.write(&[WriteOp::ClearCounters {
        guid: Guid(0xdead),
        port: 1,
        select: 1,
        select2: 0,
    }]);
    assert_eq!(out, [Err(WriteError::UnknownNode)]);
    // Both planes in one SET.
    let out = writers.write(&[clear(1), clear(2)]);
    assert_eq!(out, [Ok(()), Ok(())]);
    assert_eq!(port_counters(&a.sim, lid_a, 1).xmit_data, 0);
}

/// A merge that starts from the last one (one member published) serves
/// the member's new records and keeps the others', as a whole merge would.
#[test]
fn a_merge_after_one_members_publication_is_a_whole_merge() {
    let (fed, mut a, mut b) = two_planes();
    a.sweeper.sweep_once();
    b.sweeper.sweep_once();
    // Only plane a publishes from here.
    a.sweeper.sweep_once();
    let snap = fed.public().load();
    let members: Vec<Arc<Snapshot>> = lock(&fed.inner).members.iter().map(|c| c.load()).collect();
    for n in &snap.nodes {
        let parts: Vec<&Arc<NodeRecord>> = members
            .iter()
            .filter_map(|m| m.nodes.iter().find(|r| r.id.guid == n.id.guid))
            .collect();
        match parts.as_slice() {
            [one] => assert!(Arc::ptr_eq(one, n), "{} is its member's record", n.id.guid),
            many => {
                assert_eq!(many.len(), 2);
                for p in many {
                    for port in p.ports().filter(|p| p.link.remote_port != 0) {
                        let ours = n.port(port.link.num).unwrap();
                        assert_eq!(
                            ours.read_at, port.read_at,
                            "port {} from its member",
                            port.link.num
                        );
                    }
                }
            }
        }
    }
    let total: usize = members.iter().map(|m| m.nodes.len()).sum();
    assert_eq!(snap.nodes.len(), total - 1, "H once");
}

/// A subnet that never ends a sweep (its transport hangs) holds no round:
/// an interval after the first sweep of the others, the evaluators run.
#[test]
fn a_subnet_that_never_sweeps_holds_no_round() {
    let fed = Federation::new(Arc::new(Cache::new()));
    let interval = Duration::from_millis(100);
    let mut a = plane_every(&fed, PLANE_A, 0, "plane-a", interval);
    let _b = plane_every(&fed, PLANE_B, 1, "plane-b", interval);
    let runs = count_rounds(&fed, [&mut a]);
    a.sweeper.sweep_once();
    assert_eq!(
        runs.load(Ordering::SeqCst),
        0,
        "plane b may still end its first sweep"
    );
    std::thread::sleep(interval + Duration::from_millis(20));
    a.sweeper.sweep_once();
    assert_eq!(runs.load(Ordering::SeqCst), 1, "a round an interval later");
}

/// Plane b silenced (every node of it stops answering) while one node of
/// plane a does too: plane b is not swept, its own condition, and none of
/// its nodes turns unresponsive; the node of plane a does (its plane
/// answered). Judged over the merged snapshot, three nodes of five
/// missing held every verdict back, and a plane of eight silenced made
/// hundreds.
#[test]
fn a_silenced_subnet_is_the_subnets_condition_and_gives_its_nodes_no_verdict() {
    use crate::health::{Evaluator, HealthConfig};
    use crate::ib::subnet::SweepState;
    let (fed, mut a, mut b) = two_planes();
    a.sweeper.sweep_once();
    b.sweeper.sweep_once();
    let (sb, b1, a1) = (Guid(0x400000), Guid(0x300000), Guid(0x100003));
    assert!(fed.public().load().node(a1).is_some(), "A1");
    for g in [H, sb, b1] {
        b.sim.set_reachable(g, false);
    }
    a.sim.set_reachable(a1, false);
    let mut ev = Evaluator::new(HealthConfig::default());
    let mut now = 0;
    let mut last = None;
    for _ in 0..8 {
        a.sweeper.sweep_once();
        b.sweeper.sweep_once();
        now += 10_000;
        last = ev.evaluate(&fed.public().load(), crate::health::At::both(now), &[]);
    }
    let snap = fed.public().load();
    assert_eq!(snap.subnets[1].sweep_state, SweepState::SweepsFailing);
    assert_eq!(snap.subnets[0].sweep_state, SweepState::Swept);
    let v = last.expect("evaluated");
    for g in [sb, b1, H] {
        assert!(
            v.node(g).is_none_or(|n| n.unresponsive.is_none()),
            "{g} of the silenced plane has no verdict of its own"
        );
    }
    assert!(
        v.node(a1).is_some_and(|n| n.unresponsive.is_some()),
        "A1 missed its sweeps while its plane answered"
    );
    // The subnet says why, in the MIB (pmSubnetSweepState sweepsFailing).
    use crate::mib::schema::SubnetCol;
    assert_eq!(
        crate::mib::read::subnet_value(SubnetCol::SweepState, &snap.subnets[1]),
        crate::mib::Value::Integer(3)
    );
    // Plane b answers again: swept.
    for g in [H, sb, b1] {
        b.sim.set_reachable(g, true);
    }
    b.sweeper.sweep_once();
    assert_eq!(
        fed.public().load().subnets[1].sweep_state,
        SweepState::Swept
    );
}

/// The record of node `0x100 + i` as member `subnet` has it: ports 1 and
/// 2, only `linked` with a far end.
fn member_record(i: u64, linked: u8, subnet: u8) -> Arc<NodeRecord> {
    let mut rec = NodeRecord::test_switch(i, 2, |q| (Guid(0x900 + u64::from(q)), 1));
    for p in rec.ports_mut() {
        if p.num() != linked {
            p.link.set_remote(None);
        }
    }
    Arc::new(rec.in_subnet(subnet))
}

fn members(a: Vec<Arc<NodeRecord>>, b: Vec<Arc<NodeRecord>>) -> Vec<Arc<Snapshot>> {
    [a, b]
        .into_iter()
        .map(|nodes| {
            Arc::new(Snapshot {
                sweep: 1,
                nodes,
                ..Default::default()
            })
        })
        .collect()
}

/// Without a sweeper or a thread: a node two members have is one record
/// whose ports are the members' records themselves (each port from the
/// member where it has a link), not copies of them.
#[test]
fn a_joined_node_points_into_its_members_records() {
    // Node 0 in both (port 1 linked in a, port 2 in b); 1 in a; 2 in b.
    let (x_a, x_b) = (member_record(0, 1, 0), member_record(0, 2, 1));
    let snaps = members(
        vec![Arc::clone(&x_a), member_record(1, 1, 0)],
        vec![Arc::clone(&x_b), member_record(2, 1, 1)],
    );
    let snap = Merge::default().merge(&snaps);
    let guids: Vec<u64> = snap.nodes.iter().map(|n| n.id.guid.0).collect();
    assert_eq!(guids, [0x100, 0x101, 0x102]);
    let x = &snap.nodes[0];
    assert_eq!(x.parts().len(), 2);
    assert!(Arc::ptr_eq(&x.parts()[0], &x_a) && Arc::ptr_eq(&x.parts()[1], &x_b));
    assert!(std::ptr::eq(x.port(1).unwrap(), x_a.port(1).unwrap()));
    assert!(std::ptr::eq(x.port(2).unwrap(), x_b.port(2).unwrap()));
    let ports: Vec<(u8, u8)> = x.ports().map(|p| (p.num(), p.subnet)).collect();
    assert_eq!(ports, [(1, 0), (2, 1)], "each port from where it is linked");
    assert_eq!(x.port_count(), 2);
    assert_eq!(x.ports().next_back().map(|p| p.num()), Some(2));
    assert!(x.port(3).is_none());
    // The others are the members' records.
    assert!(Arc::ptr_eq(&snap.nodes[1], &snaps[0].nodes[1]));
    assert!(Arc::ptr_eq(&snap.nodes[2], &snaps[1].nodes[1]));
    assert_eq!(snap.subnets.len(), 2);
    assert_eq!(snap.sweep, 2);
}

/// One member publishes again: the merge starts from the last one, takes
/// the member's changed records (a joined one made again of the new part)
/// and keeps every other record; the same as a whole merge.
#[test]
fn a_merge_after_one_members_change_is_a_whole_merge() {
    let (x_a, x_b) = (member_record(0, 1, 0), member_record(0, 2, 1));
    let (y, z) = (member_record(1, 1, 0), member_record(2, 1, 1));
    let mut merge = Merge::default();
    let first = merge.merge(&members(
        vec![Arc::clone(&x_a), Arc::clone(&y)],
        vec![Arc::clone(&x_b), Arc::clone(&z)],
    ));
    // Member b read its ports again: new records of 0 and 2.
    let (x_b2, z2) = (member_record(0, 2, 1), member_record(2, 1, 1));
    let snaps = members(
        vec![Arc::clone(&x_a), Arc::clone(&y)],
        vec![Arc::clone(&x_b2), Arc::clone(&z2)],
    );
    let second = merge.merge(&snaps);
    assert!(Arc::ptr_eq(&second.nodes[1], &y), "a's record kept");
    assert!(Arc::ptr_eq(&second.nodes[2], &z2), "b's new record");
    assert!(!Arc::ptr_eq(&second.nodes[0], &first.nodes[0]));
    assert!(Arc::ptr_eq(&second.nodes[0].parts()[1], &x_b2));
    assert!(std::ptr::eq(
        second.nodes[0].port(2).unwrap(),
        x_b2.port(2).unwrap()
    ));
    let whole = Merge::default().merge(&snaps);
    assert_eq!(whole.nodes, second.nodes);
    // Nothing changed: the same records; a whole merge (a member's nodes
    // changed) keeps a joined record whose parts are the same.
    let again = merge.merge(&snaps);
    assert!(
        second
            .nodes
            .iter()
            .zip(&again.nodes)
            .all(|(a, b)| Arc::ptr_eq(a, b))
    );
    let w = member_record(3, 1, 1);
    let grown = merge.merge(&members(
        vec![Arc::clone(&x_a), Arc::clone(&y)],
        vec![Arc::clone(&x_b2), Arc::clone(&z2), w],
    ));
    assert_eq!(grown.nodes.len(), 4);
    assert!(Arc::ptr_eq(&grown.nodes[0], &second.nodes[0]));
}

/// Of a port two members have, the record with a link; when neither has
/// one, the first member's.
#[test]
fn of_a_port_two_members_have_the_linked_record_is_the_joined_one() {
    let (x_a, x_b) = (member_record(0, 2, 0), member_record(0, 2, 1));
    let snap = Merge::default().merge(&members(vec![x_a.clone()], vec![x_b.clone()]));
    let x = &snap.nodes[0];
    assert!(std::ptr::eq(x.port(2).unwrap(), x_a.port(2).unwrap()));
    assert!(std::ptr::eq(x.port(1).unwrap(), x_a.port(1).unwrap()));
    let x_b1 = member_record(0, 1, 1);
    let snap = Merge::default().merge(&members(vec![x_a.clone()], vec![x_b1.clone()]));
    let x = &snap.nodes[0];
    assert!(std::ptr::eq(x.port(1).unwrap(), x_b1.port(1).unwrap()));
    assert!(std::ptr::eq(x.port(2).unwrap(), x_a.port(2).unwrap()));
}

/// Without a sweeper or a thread: a round is due once every member has
/// swept since the last one, or a sweep interval after it when one is
/// late (a member that never sweeps holds none).
#[test]
fn a_round_is_due_when_every_member_swept_or_one_is_an_interval_late() {
    let t0 = Instant::now();
    let snap = |sweep: u64, at: Option<u64>| {
        Arc::new(Snapshot {
            sweep,
            taken: at.map(|s| t0 + Duration::from_secs(s)),
            interval: Duration::from_secs(10),
            ..Default::default()
        })
    };
    let mut round = Round::default();
    assert!(
        !round.due(&[snap(1, Some(0)), snap(0, None)]),
        "b has not swept"
    );
    assert!(!round.due(&[snap(2, Some(5)), snap(0, None)]));
    assert!(
        round.due(&[snap(2, Some(5)), snap(1, Some(6))]),
        "both swept"
    );
    assert!(
        !round.due(&[snap(3, Some(8)), snap(1, Some(6))]),
        "b not again"
    );
    assert!(
        round.due(&[snap(4, Some(16)), snap(1, Some(6))]),
        "an interval after the last round"
    );
    assert!(!round.due(&[snap(4, Some(16)), snap(1, Some(6))]));
}
