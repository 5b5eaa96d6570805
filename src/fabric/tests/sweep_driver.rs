//! The sweeper's driver and the write path on virtual time: what
//! [`Sweeper::step`] does when, and how long the agent waits, with no
//! sleep and no wall-clock bound. A step is followed by the virtual clock
//! jumping to the wakeup it returned, as the sweeper's thread would wait.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Dying;
use crate::fabric::control::{ControlConfig, Controller, WriteError, WriteOp};
use crate::fabric::settings::SweepConfig;
use crate::fabric::sweep::{REOPEN_FIRST, REOPEN_MAX, Rediscover, STATE_SAVE_EVERY, Sweeper};
use crate::ib::NodeType;
use crate::rig::{AgentRig, RigOptions};
use crate::sim::SimTransport;
use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

/// A rig sweeping every `interval`, its sweeper transport wrapped by `wrap`.
fn rig_every(
    interval: Duration,
    wrap: impl FnOnce(SimTransport) -> Box<dyn MadTransport>,
) -> AgentRig {
    AgentRig::with_sweep_transport(
        RigOptions {
            sweep: SweepConfig {
                interval,
                ..Default::default()
            },
            ..Default::default()
        },
        |_, t| wrap(t),
    )
}

/// Steps the rig until the virtual time reaches `until` (a step due then
/// included); returns the virtual time of each step, from `t0`.
fn steps_until(rig: &mut AgentRig, t0: Instant, until: Duration) -> Vec<Duration> {
    let mut at = Vec::new();
    while rig.time.now() - t0 <= until {
        at.push(rig.time.now() - t0);
        rig.step_and_wait();
    }
    at
}

/// A healthy sweeper sweeps every interval. Once the transport dies it
/// reopens it (and sweeps right after) every interval while the backoff
/// is shorter, then after a backoff that doubles up to 30 s; once a
/// reopen works the interval is back.
#[test]
fn the_backoff_after_a_transport_death_doubles_up_to_its_cap() {
    let dead = Arc::new(AtomicBool::new(false));
    let reopen_works = Arc::new(AtomicBool::new(false));
    let reopens = Arc::new(AtomicU64::new(0));
    let (d, w, r) = (dead.clone(), reopen_works.clone(), reopens.clone());
    let interval = Duration::from_secs(2);
    let mut rig = rig_every(interval, |inner| {
        Box::new(Dying {
            inner,
            dead: d,
            reopen_works: w,
            reopens: r,
        })
    });
    let n = rig.fabric().nodes.len();
    let t0 = rig.time.now();
    assert_eq!(rig.step(), t0 + interval);
    // Waking early does nothing.
    rig.time.advance(Duration::from_millis(700));
    assert_eq!(rig.step(), t0 + interval);
    assert_eq!(rig.cache.load().sweep, 1);
    rig.time.advance_to(t0 + interval);
    assert_eq!(rig.step_and_wait(), interval);
    assert_eq!(rig.cache.load().sweep, 2);
    dead.store(true, Ordering::Relaxed);
    // The failed sweep, then reopen and sweep again after each wait.
    let waits: Vec<Duration> = (0..10).map(|_| rig.step_and_wait()).collect();
    let s = Duration::from_secs;
    assert_eq!(REOPEN_FIRST, Duration::from_millis(500));
    assert_eq!(REOPEN_MAX, s(30));
    // Backoffs 0.5, 1, 2 s are under the interval; 4, 8, 16, 30 s are not.
    assert_eq!(
        waits,
        [
            s(2),
            s(2),
            s(2),
            s(4),
            s(8),
            s(16),
            s(30),
            s(30),
            s(30),
            s(30)
        ]
    );
    assert_eq!(reopens.load(Ordering::Relaxed), 9, "one reopen per wait");
    let snap = rig.cache.load();
    assert_eq!(snap.nodes.len(), n);
    assert!(snap.nodes.iter().all(|r| !r.reachable));
    reopen_works.store(true, Ordering::Relaxed);
    // The reopen works, the sweep after it too: the interval is back.
    assert_eq!(rig.step_and_wait(), interval);
    assert_eq!(rig.step_and_wait(), interval);
    let snap = rig.cache.load();
    assert!(snap.nodes.iter().all(|r| r.reachable));
}

/// The 64-bit totals are saved 300 s after the first step, and every
/// 300 s after that, on a wakeup of their own between sweeps.
#[test]
fn the_state_file_is_saved_every_300_s() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("totals");
    let p = path.clone();
    // Sweeps 70 s apart: the save's times are none of theirs.
    let mut rig =
        rig_every(Duration::from_secs(70), |t| Box::new(t)).with_sweeper(|s| s.with_state_file(p));
    let t0 = rig.time.now();
    assert_eq!(STATE_SAVE_EVERY, Duration::from_secs(300));
    let (mut saved, mut steps) = (Vec::new(), Vec::new());
    while rig.time.now() - t0 < Duration::from_secs(1000) {
        steps.push(rig.time.now() - t0);
        let next = rig.step();
        if path.exists() {
            saved.push(rig.time.now() - t0);
            let ports = crate::fabric::persist::load(&path).unwrap();
            assert!(!ports.is_empty());
            std::fs::remove_file(&path).unwrap();
        }
        rig.time.advance_to(next);
    }
    let s = Duration::from_secs;
    assert_eq!(saved, [s(300), s(600), s(900)]);
    assert_eq!(steps[..6], [s(0), s(70), s(140), s(210), s(280), s(300)]);
}

/// Rediscovery is asked for every 60 s and a PortInfo refresh every
/// 25 s (a discovery counts as one); the fabric it hands over is merged
/// before the next sweep.
#[test]
fn rediscovery_is_asked_every_60_s_and_merged_before_the_next_sweep() {
    let asked: Arc<Mutex<Vec<(Duration, Rediscover)>>> = Arc::default();
    let a = Arc::clone(&asked);
    let rig = rig_every(Duration::from_secs(10), |t| Box::new(t));
    let (state, sim, time) = (rig.state.clone(), rig.sim.clone(), rig.time.clone());
    let t0 = time.now();
    // The link of a switch port cabled to another switch goes down before
    // the first discovery.
    let fabric = rig.fabric();
    let (sw, port) = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Switch)
        .find_map(|n| {
            let p = n.ports.iter().find(|p| {
                p.remote()
                    .and_then(|(g, _)| fabric.node(g))
                    .is_some_and(|r| r.id.node_type == NodeType::Switch)
            })?;
            Some((n.id.guid, p.num))
        })
        .unwrap();
    let mut rig = rig.with_sweeper(|s: Sweeper| {
        s.with_rediscovery(
            Some(Duration::from_secs(60)),
            Some(Duration::from_secs(25)),
            Box::new(move |what| {
                a.lock().unwrap().push((time.now() - t0, what));
                // What a discovery thread would hand over.
                state.lock().offer(sim.fabric());
            }),
        )
    });
    let link = |rig: &AgentRig| {
        let snap = rig.cache.load();
        snap.node(sw).unwrap().port(port).unwrap().link.state
    };
    let steps = steps_until(&mut rig, t0, Duration::from_secs(59));
    assert_eq!(link(&rig), Some(crate::ib::PortState::Active));
    assert!(rig.sim.set_link(sw, port, false));
    steps_until(&mut rig, t0, Duration::from_secs(185));
    let s = Duration::from_secs;
    use Rediscover::{Discover, Refresh};
    assert_eq!(
        *asked.lock().unwrap(),
        [
            (s(25), Refresh),
            (s(50), Refresh),
            (s(60), Discover),
            (s(85), Refresh),
            (s(110), Refresh),
            (s(120), Discover),
            (s(145), Refresh),
            (s(170), Refresh),
            (s(180), Discover),
        ]
    );
    // Sweeps every 10 s, with the refresh wakeups between them.
    assert_eq!(steps[..4], [s(0), s(10), s(20), s(25)]);
    assert_eq!(link(&rig), Some(crate::ib::PortState::Down));
}

/// Gives the replies from `lid` `late` after their MAD was sent, on
/// virtual time (the others at once).
struct LateTo {
    inner: SimTransport,
    lid: u16,
    late: Duration,
    held: Vec<(Instant, Received)>,
}

impl MadTransport for LateTo {
    fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        self.inner.send(to, m)?;
        if to.lid == self.lid {
            let time = self.inner.virtual_time().unwrap().clone();
            if let Some(r) = self.inner.recv(Duration::ZERO)? {
                self.held.push((time.now() + self.late, r));
            }
        }
        Ok(())
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        if let Some(r) = self.inner.recv(Duration::ZERO)? {
            return Ok(Some(r));
        }
        let time = self.inner.virtual_time().unwrap().clone();
        match self.held.first() {
            Some(&(at, _)) if at <= time.now() + timeout => {
                time.advance_to(at);
                Ok(Some(self.held.remove(0).1))
            }
            _ => {
                time.advance(timeout);
                Ok(None)
            }
        }
    }
}

/// A SET's write ends by its deadline: a reply later than every attempt's
/// deadline is a timeout after `timeout x (retries + 1)` of virtual time;
/// a reply late but within the first attempt's deadline confirms it.
#[test]
fn a_sets_deadline_holds_while_a_reply_is_late() {
    let rig = AgentRig::swept(RigOptions::default());
    let fabric = rig.fabric();
    let ca = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Ca)
        .unwrap();
    let (lid, port) = (ca.ports[0].lid, ca.ports[0].num);
    let cfg = ControlConfig::default();
    let clear = WriteOp::ClearCounters {
        guid: ca.id.guid,
        port,
        select: 0xFFFF,
        select2: 0,
    };
    for (late, want) in [
        (Duration::from_millis(100), Ok(())),
        (Duration::from_millis(300), Err(WriteError::Timeout)),
        (Duration::from_secs(3600), Err(WriteError::Timeout)),
    ] {
        let t = || rig.sim.transport().on_virtual_time(rig.time.clone());
        let c = Controller::new(
            rig.state.clone(),
            Arc::clone(&rig.cache),
            Box::new(LateTo {
                inner: t(),
                lid,
                late,
                held: Vec::new(),
            }),
            Box::new(t()),
            cfg,
        )
        .with_clock(rig.time.clock());
        let t0 = rig.time.now();
        let got = c.write(std::slice::from_ref(&clear));
        assert_eq!(got, std::slice::from_ref(&want));
        let took = rig.time.now() - t0;
        if want.is_ok() {
            // The Set's reply, then the read-back of the cleared port.
            assert_eq!(took, late, "{late:?}");
        } else {
            // Each attempt waited its whole deadline.
            assert_eq!(took, cfg.timeout * (cfg.retries + 1), "{late:?}");
            assert!(took <= cfg.deadline());
        }
    }
}

/// Merges `fabric` into `state` when the first MAD is sent through it (a
/// rediscovery merged while a write is in flight), and says which LIDs
/// its MADs went to.
struct MergeOnSend {
    inner: SimTransport,
    state: crate::fabric::state::SharedState,
    fabric: Option<crate::ib::Fabric>,
    to: Arc<Mutex<Vec<u16>>>,
}

impl MadTransport for MergeOnSend {
    fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if let Some(f) = self.fabric.take() {
            let now = self.inner.virtual_time().unwrap().now();
            self.state.lock().merge(f, now);
        }
        self.to.lock().unwrap().push(to.lid);
        self.inner.send(to, m)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        self.inner.recv(timeout)
    }
}

/// A write and a sample poll in flight while a merge adds nodes ahead of
/// theirs (by GUID) land on their node: a merge keeps every node's index.
#[test]
fn a_write_and_a_sample_poll_across_a_merge_land_on_their_node() {
    use crate::ib::Guid;
    let rig = AgentRig::swept(RigOptions::default());
    let fabric = rig.fabric();
    // A channel adapter with a node before it.
    let ni = (1..fabric.nodes.len())
        .find(|&i| fabric.nodes[i].id.node_type == NodeType::Ca)
        .unwrap();
    let (ca, before) = (&fabric.nodes[ni], &fabric.nodes[ni - 1]);
    assert_eq!(rig.state.lock().node_index(ca.id.guid), Some(ni));
    let port = ca.ports[0].num;
    // Rediscovery finds the fabric and new nodes of GUIDs below every other.
    let found = |guids: &[u64]| {
        let mut f = fabric.clone();
        for &g in guids {
            let mut n = ca.clone();
            n.id.guid = Guid(g);
            n.ports.iter_mut().for_each(|p| p.set_remote(None));
            f.nodes.push(n);
        }
        f
    };
    let counters = |guid| {
        let snap = rig.cache.load();
        *snap
            .node(guid)
            .unwrap()
            .port(port)
            .unwrap()
            .counters()
            .unwrap()
    };
    let (ca_before, other_before) = (counters(ca.id.guid), counters(before.id.guid));
    assert!(ca_before.xmit_data > 0 && other_before.xmit_data > 0);

    let to = Arc::new(Mutex::new(Vec::new()));
    let polled = Arc::new(Mutex::new(Vec::new()));
    let t = || rig.sim.transport().on_virtual_time(rig.time.clone());
    let writer = |fabric| MergeOnSend {
        inner: t(),
        state: rig.state.clone(),
        fabric: Some(fabric),
        to: Arc::clone(&to),
    };
    // The write path: its writer merges `fabric` as it sends, its poller
    // records the LIDs it polls.
    let controller = |fabric| {
        Controller::new(
            rig.state.clone(),
            Arc::clone(&rig.cache),
            Box::new(writer(fabric)),
            Box::new(MergeOnSend {
                inner: t(),
                state: rig.state.clone(),
                fabric: None,
                to: Arc::clone(&polled),
            }),
            ControlConfig::default(),
        )
        .with_clock(rig.time.clock())
    };
    let c = controller(found(&[1]));
    let clear = WriteOp::ClearCounters {
        guid: ca.id.guid,
        port,
        select: 0xFFFF,
        select2: 0,
    };
    assert_eq!(c.write(&[clear]), [Ok(())]);
    {
        let st = rig.state.lock();
        assert_eq!(st.node_index(Guid(1)), Some(fabric.nodes.len()), "appended");
        assert_eq!(st.node_index(ca.id.guid), Some(ni));
    }
    let ca_after = counters(ca.id.guid);
    assert!(
        ca_after.xmit_data < ca_before.xmit_data,
        "the clear's reply"
    );
    assert_eq!(ca_after.symbol_errors, 0);
    assert_eq!(
        counters(before.id.guid),
        other_before,
        "not the node before"
    );

    // A sample started while another merge adds a node; the poll after
    // it reads the node the sample runs on.
    let c = controller(found(&[1, 2]));
    let mut control = *rig
        .cache
        .load()
        .node(ca.id.guid)
        .unwrap()
        .samples_control
        .as_deref()
        .unwrap();
    control.tag = 0x77;
    control.sample_status = 0;
    let start = WriteOp::SamplesControl {
        guid: ca.id.guid,
        control,
    };
    assert_eq!(c.write(&[start]), [Ok(())]);
    assert_eq!(
        rig.state.lock().node_index(Guid(2)),
        Some(fabric.nodes.len() + 1)
    );
    c.poll_samples();
    let polled = polled.lock().unwrap().clone();
    assert!(!polled.is_empty());
    assert!(
        polled.iter().all(|&lid| lid == ca.ports[0].lid),
        "{polled:?}"
    );
    let snap = rig.cache.load();
    let tag = snap
        .node(ca.id.guid)
        .unwrap()
        .samples_control
        .as_ref()
        .map(|c| c.tag);
    assert_eq!(tag, Some(0x77));
}

/// A rig sweeping every 600 s that forgets nodes silent for an hour,
/// after its first step; with the time of that step and the fabric.
fn forgetting_rig() -> (AgentRig, Instant, crate::ib::Fabric) {
    let mut rig = AgentRig::new(RigOptions {
        sweep: SweepConfig {
            interval: Duration::from_secs(600),
            forget_after: Some(Duration::from_secs(3600)),
            ..Default::default()
        },
        ..Default::default()
    });
    let t0 = rig.time.now();
    rig.step_and_wait();
    let fabric = rig.fabric();
    (rig, t0, fabric)
}

/// A node whose PMA stays silent for `forget_after` leaves the state, the
/// snapshot and the state file's totals at the end of the sweep that finds
/// it so, which names it for the notification evaluator; the other nodes
/// keep their rows. Before that it stays, unreachable.
#[test]
fn a_node_silent_for_forget_after_is_forgotten_the_others_stay() {
    let (mut rig, t0, fabric) = forgetting_rig();
    let n = fabric.nodes.len();
    let (cas, switches): (Vec<_>, Vec<_>) = fabric
        .nodes
        .iter()
        .partition(|x| x.id.node_type == NodeType::Ca);
    let (gone, stays) = (cas[0].id.guid, switches[0].id.guid);
    assert!(rig.cache.load().node(gone).is_some());
    rig.sim.set_reachable(gone, false);
    let mut forgotten_at = None;
    while rig.time.now() - t0 <= Duration::from_secs(6000) {
        rig.step_and_wait();
        let snap = rig.cache.load();
        let st = rig.state.lock();
        match st.node_index(gone) {
            Some(_) => {
                assert_eq!(st.node_count(), n);
                assert!(snap.forgotten.is_empty());
                // Its rows kept (unreachable after three sweeps).
                assert!(snap.node(gone).is_some());
            }
            None if forgotten_at.is_none() => {
                forgotten_at = Some(snap.stats.ended.unwrap() - t0);
                assert_eq!(st.node_count(), n - 1);
                assert_eq!(&snap.forgotten[..], &[gone]);
                assert!(snap.node(gone).is_none());
                assert_eq!(snap.nodes.len(), n - 1);
                assert!(snap.node(stays).unwrap().reachable);
                assert!(st.export_totals().iter().all(|p| p.guid != gone));
                assert!(st.export_totals().iter().any(|p| p.guid == stays));
            }
            None => {
                // Said once: the next publication names nobody.
                assert!(snap.forgotten.is_empty());
                assert!(snap.node(gone).is_none());
            }
        }
    }
    // Its last answer ended the first sweep; the first sweep that ends an
    // hour after that forgets it: the one at 3600 s or the next.
    let at = forgotten_at.expect("forgotten");
    assert!(
        at >= Duration::from_secs(3600) && at < Duration::from_secs(4800),
        "{at:?}"
    );
}

/// After a sweep in which no node answered (the local port down, not the
/// nodes) nothing is forgotten, however long the silence.
#[test]
fn nothing_is_forgotten_while_no_node_answers() {
    let (mut rig, t0, fabric) = forgetting_rig();
    for node in &fabric.nodes {
        rig.sim.set_reachable(node.id.guid, false);
    }
    while rig.time.now() - t0 <= Duration::from_secs(6000) {
        rig.step_and_wait();
    }
    assert_eq!(rig.state.lock().node_count(), fabric.nodes.len());
    assert_eq!(rig.cache.load().nodes.len(), fabric.nodes.len());
}

/// Forgets the nodes silent for `forget_after` at `at` when the first MAD
/// is sent through it (forgetting while a write is in flight).
struct ForgetOnSend {
    inner: SimTransport,
    state: crate::fabric::state::SharedState,
    at: Option<Instant>,
}

impl MadTransport for ForgetOnSend {
    fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if let Some(at) = self.at.take() {
            assert_eq!(self.state.lock().forget_silent(true, at).len(), 1);
        }
        self.inner.send(to, m)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        self.inner.recv(timeout)
    }
}

/// A write in flight while a node ahead of its own is forgotten (every
/// index after it moves down) answers, and its outcome goes into no other
/// node: the node now at the written node's old index keeps its counters.
#[test]
fn a_write_across_a_forgetting_lands_on_no_other_node() {
    let (mut rig, t0, _) = forgetting_rig();
    // The nodes by their indexes in the state.
    let nodes: Vec<crate::ib::Node> = {
        let st = rig.state.lock();
        (0..st.node_count()).map(|i| st.node(i).to_node()).collect()
    };
    let ni = (2..nodes.len() - 1)
        .find(|&i| nodes[i].id.node_type == NodeType::Ca)
        .unwrap();
    let (silent, written, next) = (&nodes[0], &nodes[ni], &nodes[ni + 1]);
    rig.sim.set_reachable(silent.id.guid, false);
    // Silent for 50 minutes at the next sweep (the rig's first step
    // waited 10 of them): kept.
    rig.time.advance(Duration::from_secs(2400));
    rig.sweep();
    assert_eq!(rig.state.lock().node_index(written.id.guid), Some(ni));
    let before = rig.cache.load().node(next.id.guid).unwrap().clone();
    let c = Controller::new(
        rig.state.clone(),
        Arc::clone(&rig.cache),
        Box::new(ForgetOnSend {
            inner: rig.sim.transport().on_virtual_time(rig.time.clone()),
            state: rig.state.clone(),
            at: Some(t0 + Duration::from_secs(4200)),
        }),
        Box::new(rig.sim.transport().on_virtual_time(rig.time.clone())),
        ControlConfig::default(),
    )
    .with_clock(rig.time.clock());
    let clear = WriteOp::ClearCounters {
        guid: written.id.guid,
        port: written.ports[0].num,
        select: 0xFFFF,
        select2: 0,
    };
    assert_eq!(c.write(&[clear]), [Ok(())]);
    let st = rig.state.lock();
    assert_eq!(st.node_index(silent.id.guid), None, "forgotten");
    assert_eq!(st.node_index(next.id.guid), Some(ni), "moved down");
    assert_eq!(st.node(ni), &before, "untouched by the write");
}
