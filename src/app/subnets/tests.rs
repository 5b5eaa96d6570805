//! A subnet swept through two local ports of a simulated plane: the
//! sweeping port goes down, the next sweep goes through the standby, and
//! the subnet's view says so; on virtual time.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::fabric::cache::Cache;
use crate::fabric::engine::{Engine, EngineConfig};
use crate::fabric::local::Group;
use crate::fabric::settings::SweepConfig;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::Sweeper;
use crate::ib::Guid;
use crate::ib::subnet::SubnetKey;
use crate::ib::topology;
use crate::sim::{ManualClock, SimFabric, SimOptions, SimPlane};
use crate::transport::failover::FailoverTransport;
use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

/// A transport that counts what it sends.
struct Counted<T> {
    inner: T,
    sent: Arc<AtomicU64>,
}

impl<T: MadTransport> MadTransport for Counted<T> {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        self.inner.send(to, mad)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        self.inner.recv(timeout)
    }
}

/// What subnet 0 of a plane is swept with: the failover machine and the
/// ports it sees, the port choice the transport follows, the subnet's view.
struct Probed<'a> {
    plane: &'a SimPlane,
    machine: Arc<Mutex<FailoverMachine>>,
    look: LookPorts,
    ports: Vec<LocalPort>,
    choice: PortChoice,
    view: SubnetView,
    transport: Box<dyn MadTransport>,
}

/// Subnet 0 swept on a clock the test moves: the sweeper with its probe
/// before each sweep, the cache it publishes into, and the events the
/// failover machine emits.
struct Rig {
    manual: ManualClock,
    cache: Arc<Cache>,
    sweeper: Sweeper,
    emitted: Arc<Emitted>,
}

impl Rig {
    fn new(p: Probed) -> Rig {
        let plane = p.plane.clone();
        let read_sm: ReadSm = Box::new(move |_| Some(plane.master_sm()));
        let manual = ManualClock::new();
        let t0 = Instant::now();
        let m = manual.clone();
        let clock = Clock::new(move || t0 + m.now());
        let emitted = Arc::new(Emitted::default());
        let probe = PortsProbe {
            index: 0,
            machine: p.machine,
            look: p.look,
            read_sm,
            ports: p.ports,
            choice: p.choice,
            clock: clock.clone(),
            emitted: Arc::clone(&emitted),
        };
        let cache = Arc::new(Cache::new());
        let state =
            SharedState::new(p.plane.fabric(), SweepConfig::default(), t0).in_subnet(p.view);
        let engine = Engine::new(p.transport, EngineConfig::default());
        let mut sweeper = Sweeper::new(state, engine, Arc::clone(&cache)).with_clock(clock);
        sweeper.set_before_sweep(before_sweep(Box::new(probe)));
        Rig {
            manual,
            cache,
            sweeper,
            emitted,
        }
    }
}

#[test]
fn the_sweep_moves_to_the_standby_when_the_sweeping_port_goes_down() {
    let sim = SimFabric::new(topology::default_fabric(), SimOptions::default());
    let plane = sim.plane(0).unwrap();
    let (a, b) = (LocalPort::new("mlx5_0", 1), LocalPort::new("mlx5_1", 1));
    let (sent_a, sent_b) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let choice = PortChoice::default();
    let transport = FailoverTransport::new(
        vec![
            Box::new(Counted {
                inner: plane.transport(),
                sent: Arc::clone(&sent_a),
            }),
            Box::new(Counted {
                inner: plane.transport(),
                sent: Arc::clone(&sent_b),
            }),
        ],
        choice.clone(),
    );
    let key = SubnetKey {
        prefix: plane.prefix(),
        sm_guid: plane.master_sm().unwrap().guid,
    };
    let machine = Arc::new(Mutex::new(FailoverMachine::new(
        &[Group {
            name: Some("plane-a".into()),
            key,
            sweeping: Some(a.clone()),
            standby: vec![b.clone()],
        }],
        Duration::from_secs(5),
    )));
    // The host's ports: a up until the test takes it down, b always up.
    let a_up = Arc::new(AtomicBool::new(true));
    let up = Arc::clone(&a_up);
    let (pa, pb) = (a.clone(), b.clone());
    let look: LookPorts = Box::new(move || {
        let seen = |port: &LocalPort, up: bool| Seen {
            port: port.clone(),
            state: if up { 4 } else { 1 },
            prefix: key.prefix,
            sm_guid: key.sm_guid,
        };
        vec![seen(&pa, up.load(Ordering::SeqCst)), seen(&pb, true)]
    });
    let view = SubnetView {
        name: Some("plane-a".into()),
        key,
        sweeping: Some(a.clone()),
        standby: vec![b.clone()],
        ..Default::default()
    };
    let Rig {
        manual,
        cache,
        mut sweeper,
        ..
    } = Rig::new(Probed {
        plane: &plane,
        machine,
        look,
        ports: vec![a.clone(), b.clone()],
        choice: choice.clone(),
        view,
        transport: Box::new(transport),
    });

    sweeper.sweep_once();
    let first_a = sent_a.load(Ordering::SeqCst);
    assert!(first_a > 0, "swept through a");
    assert_eq!(sent_b.load(Ordering::SeqCst), 0, "b waits");
    let v = &cache.load().subnets[0];
    assert_eq!(v.sweeping.as_ref(), Some(&a));
    assert_eq!(v.sm.map(|s| s.guid), Some(key.sm_guid));

    // a goes down: the next sweep goes through b.
    a_up.store(false, Ordering::SeqCst);
    manual.advance(Duration::from_secs(10));
    sweeper.sweep_once();
    assert_eq!(choice.get(), 1);
    assert!(sent_b.load(Ordering::SeqCst) > 0, "swept through b");
    assert_eq!(
        sent_a.load(Ordering::SeqCst),
        first_a,
        "nothing more through a"
    );
    let snap = cache.load();
    let v = &snap.subnets[0];
    assert_eq!(v.sweeping.as_ref(), Some(&b));
    assert_eq!(v.standby, std::slice::from_ref(&a));
    assert_eq!(
        snap.reachable,
        snap.nodes.len(),
        "every node answered through b"
    );

    // a comes back: b keeps the sweep (no flapping back), a is standby.
    a_up.store(true, Ordering::SeqCst);
    manual.advance(Duration::from_secs(10));
    sweeper.sweep_once();
    assert_eq!(cache.load().subnets[0].sweeping.as_ref(), Some(&b));
}

/// An SM handover on virtual time, through the probe, the subnet's view
/// and the notifier: the master gone for a read or two and another one
/// master within [`crate::fabric::local::NO_MASTER_GRACE`] is
/// pmSubnetMasterChanged and nothing more (the view keeps the old master
/// meanwhile, the key stays the first one); a master gone past the grace
/// is pmSubnetNoMaster, once; one again is pmSubnetMasterChanged.
#[test]
fn an_sm_handover_within_the_grace_is_a_change_of_master_and_nothing_more() {
    use crate::fabric::local::NO_MASTER_GRACE;
    use crate::ib::subnet::{SmInfo, SmState};
    use crate::notify::eval::Evaluator;
    use crate::notify::{Kind, NotifyConfig};
    let sim = SimFabric::new(topology::default_fabric(), SimOptions::default());
    let plane = sim.plane(0).unwrap();
    let a = LocalPort::new("mlx5_0", 1);
    let first = plane.master_sm().unwrap();
    let key = SubnetKey {
        prefix: plane.prefix(),
        sm_guid: first.guid,
    };
    let machine = Arc::new(Mutex::new(FailoverMachine::new(
        &[Group {
            name: Some("plane-a".into()),
            key,
            sweeping: Some(a.clone()),
            standby: vec![],
        }],
        NO_MASTER_GRACE,
    )));
    let pa = a.clone();
    let look: LookPorts = Box::new(move || {
        vec![Seen {
            port: pa.clone(),
            state: 4,
            prefix: key.prefix,
            sm_guid: key.sm_guid,
        }]
    });
    let view = SubnetView {
        name: Some("plane-a".into()),
        key,
        sweeping: Some(a.clone()),
        ..Default::default()
    };
    let Rig {
        manual,
        cache,
        mut sweeper,
        emitted,
    } = Rig::new(Probed {
        plane: &plane,
        machine,
        look,
        ports: vec![a.clone()],
        choice: PortChoice::default(),
        view,
        transport: Box::new(plane.transport()),
    });
    emitted.decides(0);
    let mut notifier = Evaluator::new(NotifyConfig::default()).with_machine_events(emitted);
    let mut step = |secs: u64| -> Vec<Kind> {
        manual.advance(Duration::from_secs(secs));
        sweeper.sweep_once();
        let e = notifier.evaluate(&cache.load()).events;
        e.iter()
            .filter(|e| e.subnet.is_some())
            .map(|e| e.kind)
            .collect()
    };
    assert!(step(0).is_empty());
    let second = SmInfo {
        guid: Guid(first.guid.0 + 1),
        ..first
    };
    // The master gone: within the grace, nothing; the view keeps it.
    plane.set_master_sm(None);
    assert!(step(10).is_empty());
    assert!(step(10).is_empty());
    let v = cache.load().subnets[0].clone();
    assert_eq!(
        v.sm.map(|s| s.guid),
        Some(first.guid),
        "the old master meanwhile"
    );
    // The standby took over: a change of master, nothing more.
    plane.set_master_sm(Some(second));
    assert_eq!(step(10), [Kind::SubnetMasterChanged]);
    let v = cache.load().subnets[0].clone();
    assert_eq!(v.sm.map(|s| s.guid), Some(second.guid));
    assert_eq!(v.key, key, "the subnet keeps its first key");
    // Gone past the grace: no master, once.
    plane.set_master_sm(None);
    let mut said = Vec::new();
    for _ in 0..8 {
        said.extend(step(10));
    }
    assert_eq!(said, [Kind::SubnetNoMaster]);
    assert_eq!(cache.load().subnets[0].sm, None);
    // A master again.
    plane.set_master_sm(Some(SmInfo {
        state: SmState::Master,
        ..second
    }));
    assert_eq!(step(10), [Kind::SubnetMasterChanged]);
}
