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
use crate::ib::subnet::SubnetKey;
use crate::ib::topology;
use crate::sim::{ManualClock, SimFabric, SimOptions};
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
    let machine = Arc::new(Mutex::new(Machine::new(
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
    let p = plane.clone();
    let read_sm: ReadSm = Box::new(move |_| Some(p.master_sm()));
    let manual = ManualClock::new();
    let t0 = Instant::now();
    let m = manual.clone();
    let clock = Clock::new(move || t0 + m.now());
    let probe = PortsProbe {
        index: 0,
        machine,
        look,
        read_sm,
        ports: vec![a.clone(), b.clone()],
        choice: choice.clone(),
        clock: clock.clone(),
    };
    let cache = Arc::new(Cache::new());
    let view = SubnetView {
        name: Some("plane-a".into()),
        key,
        sweeping: Some(a.clone()),
        standby: vec![b.clone()],
        ..Default::default()
    };
    let state = SharedState::new(plane.fabric(), SweepConfig::default(), t0).in_subnet(view);
    let engine = Engine::new(Box::new(transport), EngineConfig::default());
    let mut sweeper = Sweeper::new(state, engine, Arc::clone(&cache)).with_clock(clock);
    sweeper.set_before_sweep(before_sweep(Box::new(probe)));

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
