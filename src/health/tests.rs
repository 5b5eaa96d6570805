//! The evaluator on virtual time: every condition, its window, its
//! recovery, acknowledgements and a restart from the state file.

use std::sync::Arc;
use std::time::Duration;

use super::state::{self, StateError};
use super::*;
use crate::fabric::record::NodeRecord;
use crate::ib::LinkHealth;
use crate::ib::health::Ack;

const SEC: u64 = 1000;
const MIN: u64 = 60 * SEC;
/// The wall clock's start (2026-11-29).
const T0: u64 = 1_795_944_802_000;
const LD: usize = hc::slot("LinkDowned");
const SYM: usize = hc::slot("SymbolErrors");

/// `n` switches of `ports` ports; node 2k's port q is cabled to node
/// 2k+1's port q.
struct Fab {
    nodes: Vec<NodeRecord>,
    sweep: u64,
}

impl Fab {
    fn new(n: u64, ports: u8) -> Fab {
        let nodes = (0..n)
            .map(|i| {
                let mut rec = NodeRecord::test_switch(i, ports, |q| (Guid(0x100 + (i ^ 1)), q));
                for p in rec.ports_mut() {
                    p.link.phys_state = Some(PhysState::LinkUp);
                }
                rec
            })
            .collect();
        Fab { nodes, sweep: 0 }
    }

    fn snap(&mut self) -> Snapshot {
        self.sweep += 1;
        Snapshot {
            sweep: self.sweep,
            interval: Duration::from_secs(10),
            nodes: self.nodes.iter().cloned().map(Arc::new).collect(),
            ..Default::default()
        }
    }

    fn port(&mut self, node: usize, port: u8) -> &mut PortRecord {
        &mut self.nodes[node].ports_mut()[usize::from(port) - 1]
    }

    /// `n` more on slot `k` of a port, and its rate as if over `secs`.
    fn count(&mut self, node: usize, port: u8, k: usize, n: u64, secs: f64) {
        let p = self.port(node, port);
        let before = p.hc.all_shown();
        p.hc.add(k, n);
        p.rates.update(&before, &p.hc.clone(), 1 << k, (secs, 0.0));
    }

    fn set_state(&mut self, node: usize, port: u8, up: bool) {
        let l = &mut self.port(node, port).link;
        if up {
            l.state = Some(PortState::Active);
            l.phys_state = Some(PhysState::LinkUp);
            l.set_remote(Some((Guid(0x100 + (node as u64 ^ 1)), port)));
        } else {
            l.state = Some(PortState::Down);
            l.phys_state = Some(PhysState::Polling);
            l.set_remote(None);
        }
    }
}

/// Sweeps the fabric every 10 s of virtual time.
struct Run {
    fab: Fab,
    ev: Evaluator,
    /// The monotonic clock.
    now: u64,
    /// How far the wall clock was stepped from it.
    step: i64,
    last: Verdicts,
}

impl Run {
    fn new(fab: Fab) -> Run {
        Run::with(fab, HealthConfig::default())
    }

    fn with(fab: Fab, cfg: HealthConfig) -> Run {
        let mut r = Run {
            fab,
            ev: Evaluator::new(cfg),
            now: T0,
            step: 0,
            last: Verdicts::default(),
        };
        r.sweep();
        r
    }

    fn sweep(&mut self) -> &Verdicts {
        self.now += 10 * SEC;
        let snap = self.fab.snap();
        let at = At {
            mono_ms: self.now,
            wall_ms: self.now.saturating_add_signed(self.step),
        };
        self.last = self.ev.evaluate(&snap, at, &[]).unwrap();
        &self.last
    }

    /// Sweeps until `ms` of virtual time passed.
    fn run_for(&mut self, ms: u64) {
        let end = self.now + ms;
        while self.now < end {
            self.sweep();
        }
    }

    fn mask(&self, node: u64, port: u8) -> u8 {
        self.last
            .port(Guid(0x100 + node), port)
            .map_or(0, |v| v.mask())
    }
}

#[test]
fn a_healthy_fabric_has_no_verdicts() {
    let mut r = Run::new(Fab::new(4, 4));
    for _ in 0..10 {
        assert!(r.sweep().ports.is_empty());
    }
    assert!(r.last.nodes.is_empty());
}

#[test]
fn link_downed_rising_three_times_in_the_window_is_flapping_on_both_ends() {
    let mut r = Run::new(Fab::new(2, 2));
    let f = Condition::Flapping.bit();
    for i in 0..2 {
        r.fab.count(0, 1, LD, 1, 10.0);
        r.sweep();
        assert_eq!(r.mask(0, 1), 0, "{} flaps are not enough", i + 1);
    }
    r.fab.count(0, 1, LD, 1, 10.0);
    r.sweep();
    assert_eq!(r.mask(0, 1), f);
    assert_eq!(r.mask(1, 1), f, "the peer carries the link's verdict");
    assert_eq!(r.mask(0, 2), 0);
    let v = r.last.port(Guid(0x101), 1).unwrap().clone();
    assert_eq!(v.peer, Some((Guid(0x100), 1)));
    let own = r.last.port(Guid(0x100), 1).unwrap();
    assert_eq!((own.flaps, own.last_flap), (3, Some(r.now)));
    let since = own.mark(Condition::Flapping).unwrap().since;
    // The flaps leave the window after 10 minutes; the verdict stands 15
    // more, then clears.
    r.run_for(10 * MIN);
    let m = *r
        .last
        .port(Guid(0x100), 1)
        .unwrap()
        .mark(Condition::Flapping)
        .unwrap();
    assert!(!m.holding, "out of the window, in recovery");
    assert_eq!(m.since, since);
    // A flap stays in the window for 7/8 to 8/8 of it (its eighths).
    r.run_for(13 * MIN);
    assert_eq!(r.mask(0, 1), f, "still in recovery");
    r.run_for(3 * MIN);
    assert_eq!(r.mask(0, 1), 0, "recovered");
    assert_eq!(r.mask(1, 1), 0);
    let e = r.last.port(Guid(0x100), 1).unwrap();
    assert_eq!(
        (e.flaps, e.raised[Condition::Flapping as usize]),
        (3, 1),
        "history kept"
    );
    // Forgotten a day after the last change.
    r.run_for(24 * 60 * MIN);
    assert!(r.last.port(Guid(0x100), 1).is_none());
}

#[test]
fn a_port_leaving_active_and_coming_back_is_one_flap_counted_once() {
    let mut r = Run::new(Fab::new(2, 1));
    // Seen down and back, LinkDowned not moving (a PMA without it): one.
    r.fab.set_state(0, 1, false);
    r.sweep();
    r.fab.set_state(0, 1, true);
    r.sweep();
    assert_eq!(r.last.port(Guid(0x100), 1).unwrap().flaps, 1);
    // Down with LinkDowned rising, then back: still one.
    r.fab.set_state(0, 1, false);
    r.fab.count(0, 1, LD, 1, 10.0);
    r.sweep();
    r.fab.set_state(0, 1, true);
    r.sweep();
    assert_eq!(r.last.port(Guid(0x100), 1).unwrap().flaps, 2);
    // A flap faster than a sweep: LinkDowned alone.
    r.fab.count(0, 1, LD, 1, 10.0);
    r.sweep();
    let e = r.last.port(Guid(0x100), 1).unwrap();
    assert_eq!(e.flaps, 3);
    assert!(e.mark(Condition::Flapping).is_some());
}

#[test]
fn a_lost_link_stands_on_both_ends_until_it_returns_or_is_forgotten() {
    let cfg = HealthConfig {
        forget_after: Duration::from_secs(3600),
        ..Default::default()
    };
    let mut r = Run::with(Fab::new(2, 2), cfg);
    let lost = Condition::LinkLost.bit();
    // Both ends go down; their peers are gone from the records.
    r.fab.set_state(0, 2, false);
    r.fab.set_state(1, 2, false);
    r.sweep();
    assert_eq!(r.mask(0, 2), lost);
    assert_eq!(r.mask(1, 2), lost);
    assert_eq!(
        r.last.port(Guid(0x100), 2).unwrap().peer,
        Some((Guid(0x101), 2)),
        "the peer last seen"
    );
    // Back: the verdict clears after the recovery window.
    r.fab.set_state(0, 2, true);
    r.fab.set_state(1, 2, true);
    r.run_for(14 * MIN);
    assert_eq!(r.mask(0, 2), lost);
    r.run_for(2 * MIN);
    assert_eq!(r.mask(0, 2), 0);
    // Lost for good: reported for forget_after, then let go.
    r.fab.set_state(0, 1, false);
    r.fab.set_state(1, 1, false);
    r.run_for(59 * MIN);
    assert_eq!(r.mask(0, 1), lost);
    r.run_for(2 * MIN);
    assert_eq!(r.mask(0, 1), 0);
    r.run_for(20 * MIN);
    assert_eq!(r.mask(0, 1), 0, "not raised again");
    // A port disabled by an operator is not lost.
    r.fab.set_state(0, 2, false);
    r.fab.port(0, 2).link.phys_state = Some(PhysState::Disabled);
    r.fab.set_state(1, 2, false);
    r.fab.port(1, 2).link.phys_state = Some(PhysState::Disabled);
    r.sweep();
    assert_eq!(r.mask(0, 2), 0);
}

#[test]
fn a_pma_missing_five_of_seven_sweeps_is_unresponsive_unless_the_fabric_was() {
    let mut r = Run::new(Fab::new(4, 1));
    let missing = [1, 0, 1, 1, 0, 1, 1];
    for (i, m) in missing.iter().enumerate() {
        r.fab.nodes[2].failed_sweeps = *m;
        r.sweep();
        let n = r.last.node(Guid(0x102)).unwrap();
        assert_eq!(n.unresponsive.is_some(), i == 6, "sweep {i}");
    }
    assert_eq!(r.last.node(Guid(0x102)).unwrap().missed, 5);
    // When most of the fabric is silent, the sweep is not counted.
    let mut q = Run::new(Fab::new(4, 1));
    for _ in 0..7 {
        for n in &mut q.fab.nodes[..3] {
            n.failed_sweeps = 1;
        }
        q.sweep();
    }
    assert!(q.last.nodes.is_empty(), "{:?}", q.last.nodes);
    // Recovery: answering again, the verdict stands for the window.
    r.fab.nodes[2].failed_sweeps = 0;
    r.run_for(15 * MIN - 10 * SEC);
    assert!(r.last.node(Guid(0x102)).unwrap().unresponsive.is_some());
    r.run_for(20 * SEC);
    assert!(r.last.node(Guid(0x102)).unwrap().unresponsive.is_none());
}

#[test]
fn error_rates_and_ber_over_their_thresholds_are_erroring() {
    let mut r = Run::new(Fab::new(2, 2));
    let e = Condition::Erroring.bit();
    // 10 symbol errors a minute is the threshold: 1 in 10 s is under it.
    r.fab.count(0, 1, SYM, 1, 10.0);
    r.sweep();
    assert_eq!(r.mask(0, 1), 0);
    r.fab.count(0, 1, SYM, 2, 10.0);
    r.sweep();
    assert_eq!(r.mask(0, 1), e);
    assert_eq!(r.mask(1, 1), e);
    // RcvErrors' threshold too.
    let rcv = hc::slot("RcvErrors");
    r.fab.count(0, 2, rcv, 100, 10.0);
    r.sweep();
    assert_eq!(r.mask(0, 2), e);
}

/// The verdict reads the thresholds the traps read: `[[notify.threshold]]`
/// rules raise, lower and turn off the rising threshold of a port.
#[test]
fn the_configured_threshold_rules_make_erroring_as_they_make_traps() {
    use crate::ib::NodeType;
    use crate::notify::rules::{CounterName, NotifyConfig, ThresholdRule};
    let sym: CounterName = "SymbolErrors".parse().unwrap();
    let rule = |node: u64, port: u8, rising: u64| ThresholdRule {
        counter: sym,
        rising: Some(rising),
        falling: None,
        node_type: None,
        node: Some(crate::notify::rules::NodeMatch::Guid(Guid(0x100 + node))),
        ports: vec![port],
    };
    // Node 0: port 1 raised to 100 a minute, port 2 lowered to 1, port 3
    // off; node 2 untouched (the default, 10).
    let rules = vec![rule(0, 1, 100), rule(0, 2, 1), rule(0, 3, 0)];
    let cfg = HealthConfig {
        thresholds: rules.clone(),
        ..HealthConfig::default()
    };
    let mut r = Run::with(Fab::new(4, 3), cfg);
    // 3 in 10 s: 18 a minute.
    for (node, port) in [(0, 1), (0, 3), (2, 1)] {
        r.fab.count(node, port, SYM, 3, 10.0);
    }
    // 1 in 20 s: 3 a minute.
    r.fab.count(0, 2, SYM, 1, 20.0);
    r.sweep();
    let e = Condition::Erroring.bit();
    assert_eq!(r.mask(0, 1), 0, "over the default, under the rule");
    assert_eq!(r.mask(0, 2), e, "under the default, over the rule");
    assert_eq!(r.mask(0, 3), 0, "the rule turned it off");
    assert_eq!(r.mask(2, 1), e, "the default");
    // The traps resolve the same thresholds for the same ports.
    let notify = NotifyConfig {
        rules,
        ..Default::default()
    };
    let rising =
        |node: u64, port| notify.resolve(Guid(0x100 + node), "", NodeType::Switch, port)[sym.0].0;
    assert_eq!(
        [rising(0, 1), rising(0, 2), rising(0, 3), rising(2, 1)],
        [100, 1, 0, 10]
    );
}

#[test]
fn a_degraded_link_and_a_congested_one_are_seen() {
    let mut r = Run::new(Fab::new(2, 2));
    r.fab.port(0, 1).assessment.health = Some(LinkHealth::WidthDegraded);
    r.sweep();
    assert_eq!(r.mask(0, 1), Condition::Degraded.bit());
    assert_eq!(r.mask(1, 1), Condition::Degraded.bit());
    // XmitWait half of the time: over 10 % once the average over the
    // 10-minute window catches up (a fifth of the way: 14 sweeps of 10 s).
    // A node of no known family that answers no PortSamplesControl: the
    // IBA's Tick 0, one symbol time, 4 ns at SDR.
    let l = &mut r.fab.port(0, 2).link;
    (l.width, l.speed) = (
        Some(crate::ib::LinkWidth::X4),
        Some(crate::ib::LinkSpeed::Sdr),
    );
    let ticks = 250_000_000 * 5;
    let mut first = None;
    for i in 0..60 {
        r.fab.count(0, 2, hc::XMIT_WAIT, ticks, 10.0);
        r.sweep();
        if r.mask(0, 2) != 0 && first.is_none() {
            first = Some(i);
        }
    }
    let first = first.expect("congested");
    assert!((12..=15).contains(&first), "after {first} sweeps");
    assert_eq!(r.mask(1, 2), Condition::Congested.bit());
}

#[test]
fn an_acknowledgement_clears_the_link_until_the_condition_returns() {
    let mut r = Run::new(Fab::new(2, 1));
    r.fab.port(0, 1).assessment.health = Some(LinkHealth::SpeedDegraded);
    r.sweep();
    assert_eq!(r.mask(1, 1), Condition::Degraded.bit());
    r.fab.port(0, 1).assessment.health = Some(LinkHealth::Normal);
    r.sweep();
    assert_eq!(r.mask(1, 1), Condition::Degraded.bit(), "in recovery");
    let ack = Ack {
        guid: Guid(0x101),
        port: 1,
        condition: None,
    };
    let snap = r.fab.snap();
    r.now += 10 * SEC;
    let v = r.ev.evaluate(&snap, At::both(r.now), &[ack]).unwrap();
    assert!(v.unhealthy().next().is_none());
    // Taken in without a new sweep too.
    let v = r.ev.evaluate(&snap, At::both(r.now), &[ack]).unwrap();
    assert!(v.unhealthy().next().is_none());
    assert!(
        r.ev.evaluate(&snap, At::both(r.now), &[]).is_none(),
        "nothing new"
    );
    r.sweep();
    assert_eq!(r.mask(0, 1), 0);
}

/// The windows run on monotonic time: the wall clock stepped an hour
/// either way (NTP) ages no window and changes no verdict; only the times
/// shown and saved move with it.
#[test]
fn a_step_of_the_wall_clock_changes_no_verdict() {
    const HOUR: i64 = 3_600_000;
    let runs = [0, HOUR, -HOUR].map(|step| {
        let mut r = Run::new(Fab::new(2, 2));
        for _ in 0..3 {
            r.fab.count(0, 1, LD, 1, 10.0);
            r.sweep();
        }
        r.fab.set_state(0, 2, false);
        r.fab.set_state(1, 2, false);
        r.sweep();
        assert_eq!(r.mask(0, 1), Condition::Flapping.bit());
        assert_eq!(r.mask(0, 2), Condition::LinkLost.bit());
        r.step = step;
        // 30 minutes: the flap window, then the recovery, pass.
        let mut masks = Vec::new();
        for _ in 0..180 {
            r.sweep();
            masks.push((r.mask(0, 1), r.mask(0, 2), r.mask(1, 1)));
        }
        (masks, r)
    });
    let (masks, r0) = &runs[0];
    assert_eq!(masks[0].0, Condition::Flapping.bit(), "held at first");
    assert_eq!(masks.last().unwrap().0, 0, "cleared after its recovery");
    for (m, r) in &runs[1..] {
        assert_eq!(m, masks, "step {}", r.step);
        assert_eq!(
            r.last.ports, r0.last.ports,
            "the same times on the timeline"
        );
        assert_eq!(r.last.nodes, r0.last.nodes);
        // Shown and saved on the wall clock.
        let lost = r.last.port(Guid(0x100), 2).unwrap();
        let since = lost.mark(Condition::LinkLost).unwrap().since;
        assert_eq!(r.last.wall(since), since.saturating_add_signed(r.step));
        let saved = state::decode(&state::encode(&r.ev)).unwrap();
        let e = saved.entries.iter().find(|e| e.port == 2).unwrap();
        assert_eq!(
            e.mark(Condition::LinkLost).unwrap().since,
            r.last.wall(since)
        );
        // Taken up again, the same verdicts on the wall clock.
        let mut ev = Evaluator::new(HealthConfig::default());
        ev.restore(saved);
        let mut fab = Fab::new(2, 2);
        fab.set_state(0, 2, false);
        fab.set_state(1, 2, false);
        let v = ev.evaluate(
            &fab.snap(),
            At::both(r.now.saturating_add_signed(r.step)),
            &[],
        );
        let e = v.as_ref().and_then(|v| v.port(Guid(0x100), 2)).unwrap();
        assert_eq!(
            e.mark(Condition::LinkLost).unwrap().since,
            r.last.wall(since)
        );
    }
}

#[test]
fn verdicts_and_active_ports_survive_a_restart() {
    let mut r = Run::new(Fab::new(2, 2));
    for _ in 0..3 {
        r.fab.count(0, 1, LD, 1, 10.0);
        r.sweep();
    }
    let bytes = state::encode(&r.ev);
    let saved = state::decode(&bytes).unwrap();
    assert_eq!(saved.ports.len(), 4, "every Active port");
    let mut ev = Evaluator::new(HealthConfig::default());
    ev.restore(saved);
    // The agent was down while a link went down: lost at the first sweep.
    r.fab.set_state(0, 2, false);
    r.fab.set_state(1, 2, false);
    let snap = r.fab.snap();
    let v = ev.evaluate(&snap, At::both(r.now + MIN), &[]).unwrap();
    let e = v.port(Guid(0x100), 1).unwrap();
    assert_eq!(e.flaps, 3);
    assert!(e.mark(Condition::Flapping).is_some(), "still standing");
    assert_eq!(
        v.port(Guid(0x100), 2).unwrap().mask(),
        Condition::LinkLost.bit()
    );
    assert_eq!(
        v.port(Guid(0x101), 2).map(|e| e.peer),
        Some(Some((Guid(0x100), 2)))
    );
    // The first LinkDowned reading after the start is taken as it is.
    assert_eq!(v.port(Guid(0x100), 1).unwrap().flaps, 3);
}

#[test]
fn a_broken_state_file_is_an_error_not_a_panic() {
    let mut r = Run::new(Fab::new(2, 2));
    r.fab.count(0, 1, LD, 1, 10.0);
    r.sweep();
    let bytes = state::encode(&r.ev);
    for n in 0..bytes.len() {
        assert!(state::decode(&bytes[..n]).is_err(), "cut at {n}");
    }
    let mut flipped = bytes.clone();
    flipped[12] ^= 1;
    assert_eq!(state::decode(&flipped), Err(StateError::Checksum));
    let mut other = bytes.clone();
    other[0] = b'X';
    assert_eq!(
        state::decode(&other),
        Err(StateError::BadMagic("a health state file"))
    );
    // A count far beyond the bytes: refused before anything is allocated.
    let mut huge = state::MAGIC.to_vec();
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    let sum = crate::files::fnv1a(&huge);
    huge.extend_from_slice(&sum.to_le_bytes());
    assert_eq!(
        state::decode(&huge),
        Err(StateError::TooMany {
            count: u32::MAX,
            max: state::MAX_PORTS
        })
    );
    // A file that cannot be read says why, its kind kept.
    let dir = tempfile::tempdir().unwrap();
    let kind = |p: &std::path::Path| match state::load(p) {
        Err(StateError::Io { kind, .. }) => Some(kind),
        _ => None,
    };
    assert_eq!(
        kind(&dir.path().join("none")),
        Some(std::io::ErrorKind::NotFound)
    );
    assert_ne!(
        kind(dir.path()),
        Some(std::io::ErrorKind::NotFound),
        "a directory"
    );
    assert!(kind(dir.path()).is_some());
}

#[test]
fn a_port_costs_its_16_bytes_and_a_share_of_its_nodes_in_steady_state() {
    let mut r = Run::new(Fab::new(100, 36));
    r.sweep();
    assert_eq!(r.ev.ports(), 3600);
    assert_eq!(
        r.ev.port_bytes(),
        3600 * PORT_BYTES + 100 * NODE_BYTES,
        "every port and node kept, no spare room"
    );
    // An adapter of one port: 32 bytes.
    let mut r = Run::new(Fab::new(100, 1));
    r.sweep();
    assert_eq!(r.ev.port_bytes(), 100 * (PORT_BYTES + NODE_BYTES));
}

/// The up link's peer, as the far end's index, changes with the cable; the
/// verdict of the link lost names the peer it had last.
#[test]
fn a_link_lost_names_the_peer_it_had_last() {
    let mut r = Run::new(Fab::new(4, 2));
    let lost = Condition::LinkLost.bit();
    // Node 0's port 1 is recabled to node 3's port 2, then lost.
    r.fab.port(0, 1).link.set_remote(Some((Guid(0x103), 2)));
    r.sweep();
    r.fab.port(0, 1).link.state = Some(PortState::Down);
    r.fab.port(0, 1).link.phys_state = Some(PhysState::Polling);
    r.fab.port(0, 1).link.set_remote(None);
    r.sweep();
    let e = r.last.port(Guid(0x100), 1).unwrap();
    assert_eq!((e.mask(), e.peer), (lost, Some((Guid(0x103), 2))));
    assert_eq!(r.mask(3, 2), lost, "the far end carries it");
    // Recabled back while up: the peer is node 1's again.
    r.fab.set_state(0, 2, true);
    r.fab.port(0, 2).link.set_remote(Some((Guid(0x102), 1)));
    r.sweep();
    r.fab.set_state(0, 2, false);
    r.sweep();
    let e = r.last.port(Guid(0x100), 2).unwrap();
    assert_eq!(e.peer, Some((Guid(0x102), 1)));
}

/// A peer whose node the fabric does not show (never answered, or gone)
/// is kept all the same: through a rediscovery, a restart, and back into
/// the fabric.
#[test]
fn a_peer_outside_the_fabric_is_kept() {
    let mut r = Run::new(Fab::new(2, 2));
    r.fab.port(0, 1).link.set_remote(Some((Guid(0x900), 7)));
    r.sweep();
    // A rediscovery that drops node 1: the layout changes.
    let gone = r.fab.nodes.remove(1);
    r.sweep();
    let saved = state::decode(&state::encode(&r.ev)).unwrap();
    assert!(saved.ports.contains(&(
        Guid(0x100),
        1,
        SEEN | EVER_ACTIVE | ACTIVE | HAS_PEER,
        Guid(0x900),
        7
    )));
    let mut ev = Evaluator::new(HealthConfig::default());
    ev.restore(saved);
    r.ev = ev;
    r.fab.port(0, 1).link.state = Some(PortState::Down);
    r.fab.port(0, 1).link.phys_state = Some(PhysState::Polling);
    r.fab.port(0, 1).link.set_remote(None);
    r.sweep();
    let e = r.last.port(Guid(0x100), 1).unwrap();
    assert_eq!(e.peer, Some((Guid(0x900), 7)));
    assert_eq!(
        r.last.port(Guid(0x900), 7).unwrap().peer,
        Some((Guid(0x100), 1))
    );
    // Node 1 is back, and its port 2's peer (node 0's port 2, lost since
    // it went) is still known by its index.
    r.fab.nodes.push(gone);
    r.fab.set_state(0, 2, false);
    r.sweep();
    assert_eq!(
        r.last.port(Guid(0x100), 2).unwrap().peer,
        Some((Guid(0x101), 2))
    );
    assert_eq!(
        r.last.port(Guid(0x100), 1).unwrap().peer,
        Some((Guid(0x900), 7))
    );
}

/// The fuzz target's seed is a state file of this evaluator's: three flaps
/// on a link of a two-switch fabric (`IBPM_WRITE_SEED=1` rewrites it).
#[test]
fn the_fuzz_seed_is_a_state_file_that_restores() {
    let mut r = Run::new(Fab::new(2, 2));
    for _ in 0..3 {
        r.fab.count(0, 1, LD, 1, 10.0);
        r.sweep();
    }
    let bytes = state::encode(&r.ev);
    let seed = include_bytes!("../../fuzz/seeds/health_state/flaps.bin");
    if std::env::var_os("IBPM_WRITE_SEED").is_some() {
        std::fs::write("fuzz/seeds/health_state/flaps.bin", &bytes).unwrap();
    }
    let saved = state::decode(seed).expect("the seed decodes");
    assert_eq!(saved.entries.len(), 2, "both ends of the flapping link");
    assert_eq!(saved.ports.len(), 4);
}

#[test]
fn a_state_file_of_another_fabric_leaves_no_verdict_standing_past_the_recovery_window() {
    // Another fabric: node 0x102 unresponsive, a flapping link on 0x100.
    let mut other = Run::new(Fab::new(4, 1));
    for _ in 0..7 {
        other.fab.nodes[2].failed_sweeps = 1;
        other.fab.count(0, 1, LD, 1, 10.0);
        other.sweep();
    }
    assert!(other.last.node(Guid(0x102)).unwrap().unresponsive.is_some());
    assert_ne!(other.mask(0, 1), 0);
    let saved = state::decode(&state::encode(&other.ev)).unwrap();
    // This fabric has none of its GUIDs.
    let mut here = Fab::new(2, 1);
    for n in &mut here.nodes {
        n.id.guid = Guid(n.id.guid.0 + 0x1000);
    }
    let mut ev = Evaluator::new(HealthConfig::default());
    ev.restore(saved);
    let mut now = other.now;
    let mut last = Verdicts::default();
    while now < other.now + 15 * MIN + 20 * SEC {
        now += 10 * SEC;
        last = ev.evaluate(&here.snap(), At::both(now), &[]).unwrap();
    }
    assert!(
        last.node(Guid(0x102))
            .is_none_or(|n| n.unresponsive.is_none()),
        "{:?}",
        last.nodes
    );
    assert!(last.unhealthy().next().is_none(), "{:?}", last.ports);
}

/// A sweep of the same nodes and ports moves their state on where it is
/// (no second copy of every port's state each sweep); a rediscovery that
/// changed the nodes keeps each remaining port's state by GUID and number.
#[test]
fn the_same_fabric_is_evaluated_in_place() {
    let mut r = Run::new(Fab::new(4, 2));
    let flap = |r: &mut Run, up: bool| {
        r.fab.set_state(2, 1, up);
        r.fab.set_state(3, 1, up);
        let at = r.ev.ports.as_ptr();
        r.sweep();
        assert_eq!(r.ev.ports.as_ptr(), at, "the ports' state not copied");
    };
    for _ in 0..3 {
        flap(&mut r, false);
        flap(&mut r, true);
    }
    assert_ne!(r.mask(2, 1) & Condition::Flapping.bit(), 0);
    let flaps = |r: &Run, guid: u64| {
        let (_, ports) = r.ev.spans().find(|(n, _)| n.guid == Guid(guid)).unwrap();
        ports[0].flaps_in_window()
    };
    assert_eq!(flaps(&r, 0x102), 3);
    r.fab.nodes.drain(0..2);
    r.sweep();
    assert_eq!(r.ev.ports(), 4);
    assert_eq!(flaps(&r, 0x102), 3, "kept across the rediscovery");
    assert_eq!(flaps(&r, 0x103), 3);
    assert_ne!(r.mask(2, 1) & Condition::Flapping.bit(), 0);
}

/// The state file's bytes are made in one buffer of their size, nothing
/// copied beside them.
#[test]
fn the_state_file_is_encoded_in_one_buffer_of_its_size() {
    let mut r = Run::new(Fab::new(8, 4));
    for _ in 0..3 {
        r.fab.count(0, 1, LD, 1, 10.0);
        r.fab.count(2, 3, LD, 1, 10.0);
        r.sweep();
    }
    let bytes = state::encode(&r.ev);
    assert_eq!(bytes.capacity(), bytes.len());
    let saved = state::decode(&bytes).unwrap();
    assert_eq!(saved.entries.len(), 4, "both ends of both links");
    assert_eq!(saved.ports.len(), 32);
}
