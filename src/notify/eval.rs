//! The notification rules as a pure state machine: fed one published
//! snapshot per sweep, it returns the notifications that sweep calls for.
//! No clock (a port's time is the time of its reading in the snapshot), no
//! I/O: tests drive it with snapshots built on a virtual clock.
//!
//! - A node known reachable that is marked unreachable (or whose rows were
//!   dropped) is one pmNodeLost; its ports say nothing until it answers
//!   again (pmNodeFound), and their state is then taken as it is.
//! - A port of a reachable node whose pmPortState changed: pmPortStateChange.
//! - Thresholds: the increase of a counter over the window (or, for
//!   Utilization and CongestedBandwidth, the average over it) is compared
//!   with the port's thresholds with RMON's hysteresis (RFC 2819
//!   alarmRisingThreshold): one rising event, then none until the value fell
//!   to the falling threshold (one falling event), and so on.
//! - A port whose counters went down without a clear by this agent:
//!   pmCounterDiscontinuity.
//! - A sweep longer than the interval: pmSweepOverrun, again only after a
//!   sweep that kept to the interval.
//! - Storm control: at most `limit_per_sweep` notifications of one family
//!   per sweep; the state machine moves on for the others, which are
//!   counted as suppressed.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use std::sync::Arc;

use super::rules::{Measure, NotifyConfig, THRESHOLD_COUNT, thresholds};
use super::{Event, FAMILIES, Kind, Peer};
use crate::fabric::cache::{NodeRecord, PortRecord, Snapshot};
use crate::fabric::hc;
use crate::ib::Guid;
use crate::mib::tables::{congestion_hundredths, utilization_hundredths};

/// Samples kept per port at most (one every half window: the newest at
/// least a window old and the ones after it, of which at most two are
/// younger than a window).
const MAX_SAMPLES: usize = 3;

/// What one sweep calls for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// The notifications to send, in fabric order within each family.
    pub events: Vec<Event>,
    /// Per [`super::Family`]: notifications over the sweep's limit.
    pub suppressed: [u64; FAMILIES],
}

impl Outcome {
    pub fn suppressed_total(&self) -> u64 {
        self.suppressed.iter().sum()
    }
}

// `Sample::valid` and `PortMem::risen` have a bit per watched counter.
const _: () = assert!(THRESHOLD_COUNT <= 16);

struct Sample {
    at: Instant,
    /// Bit i: `values[i]` is known.
    valid: u16,
    /// Per [`thresholds`] entry: the total it is computed from.
    values: [u64; THRESHOLD_COUNT],
}

struct PortMem {
    num: u8,
    state: u32,
    /// The last peer seen (a link that went down has none any more).
    peer: Option<(Guid, u8)>,
    resets: u32,
    /// (rising, falling) per [`thresholds`] entry, resolved once; ports
    /// with the same thresholds share them.
    limits: Arc<[(u64, u64)]>,
    /// Bit i: a rising event was sent for [`thresholds`] entry i, no
    /// falling one yet.
    risen: u16,
    last_read: Option<Instant>,
    samples: VecDeque<Sample>,
}

struct NodeMem {
    reachable: bool,
    description: String,
    ports: Vec<PortMem>,
}

pub struct Evaluator {
    cfg: NotifyConfig,
    limits: LimitSets,
    nodes: BTreeMap<Guid, NodeMem>,
    overrun: bool,
    last_sweep: Option<u64>,
}

fn state_of(p: &PortRecord) -> u32 {
    p.link.state.map_or(0, |s| s.mib())
}

fn sample_of(at: Instant, p: &PortRecord) -> Sample {
    let mut s = Sample {
        at,
        valid: 0,
        values: [0; THRESHOLD_COUNT],
    };
    for (i, d) in thresholds().iter().enumerate() {
        let v = match d.measure {
            Measure::Increase(k) => p.hc.shown(k),
            Measure::Utilization => p.hc.shown(hc::OUT_OCTETS),
            Measure::Congestion => p.hc.shown(hc::XMIT_WAIT),
        };
        if let Some(v) = v {
            s.values[i] = v;
            s.valid |= 1 << i;
        }
    }
    s
}

/// Resolved thresholds, shared by the ports that have the same.
#[derive(Default)]
struct LimitSets(Vec<Arc<[(u64, u64)]>>);

impl LimitSets {
    fn get(&mut self, cfg: &NotifyConfig, node: &NodeRecord, port: u8) -> Arc<[(u64, u64)]> {
        let v = cfg.resolve(node.guid, &node.description, node.node_type, port);
        if let Some(a) = self.0.iter().find(|a| ***a == *v) {
            return Arc::clone(a);
        }
        let a: Arc<[(u64, u64)]> = v.into();
        self.0.push(Arc::clone(&a));
        a
    }
}

fn port_mem(
    limits: &mut LimitSets,
    cfg: &NotifyConfig,
    node: &NodeRecord,
    p: &PortRecord,
) -> PortMem {
    PortMem {
        num: p.num,
        state: state_of(p),
        peer: p.link.remote,
        resets: p.external_resets,
        risen: 0,
        limits: limits.get(cfg, node, p.num),
        last_read: None,
        samples: VecDeque::with_capacity(MAX_SAMPLES),
    }
}

impl Evaluator {
    pub fn new(cfg: NotifyConfig) -> Evaluator {
        Evaluator {
            cfg,
            limits: LimitSets::default(),
            nodes: BTreeMap::new(),
            overrun: false,
            last_sweep: None,
        }
    }

    pub fn config(&self) -> &NotifyConfig {
        &self.cfg
    }

    /// The notifications `snap` calls for. A snapshot of a sweep already
    /// evaluated calls for none.
    pub fn evaluate(&mut self, snap: &Snapshot) -> Outcome {
        let mut events = Vec::new();
        if self.last_sweep == Some(snap.sweep) {
            return Outcome::default();
        }
        self.last_sweep = Some(snap.sweep);
        // Nodes: lost (marked unreachable or gone) and found.
        let mut ports_events = Vec::new();
        for node in &snap.nodes {
            let fresh = !self.nodes.contains_key(&node.guid);
            if fresh {
                let ports = node
                    .ports
                    .iter()
                    .map(|p| port_mem(&mut self.limits, &self.cfg, node, p))
                    .collect();
                self.nodes.insert(
                    node.guid,
                    NodeMem {
                        reachable: node.reachable,
                        description: node.description.clone(),
                        ports,
                    },
                );
            }
            let was = self.nodes[&node.guid].reachable;
            match (was, node.reachable) {
                (true, false) => {
                    events.push(Event::node(Kind::NodeLost, node.guid, &node.description))
                }
                (false, true) => {
                    events.push(Event::node(Kind::NodeFound, node.guid, &node.description));
                    // Its ports are taken as they are now.
                    let ports = node
                        .ports
                        .iter()
                        .map(|p| port_mem(&mut self.limits, &self.cfg, node, p))
                        .collect();
                    self.nodes.get_mut(&node.guid).expect("inserted").ports = ports;
                }
                _ => {}
            }
            let window = self.cfg.window;
            let mem = self.nodes.get_mut(&node.guid).expect("inserted");
            mem.reachable = node.reachable;
            mem.description.clone_from(&node.description);
            if node.reachable && !fresh {
                ports_events.extend(ports_of(
                    node,
                    mem,
                    snap,
                    window,
                    &self.cfg,
                    &mut self.limits,
                ));
            }
        }
        for (guid, mem) in &mut self.nodes {
            if mem.reachable && snap.node(*guid).is_none() {
                mem.reachable = false;
                events.push(Event::node(Kind::NodeLost, *guid, &mem.description));
            }
        }
        events.extend(ports_events);
        // The sweep itself; not the first, which also reads every node's
        // ClassPortInfo once.
        let interval_ms = snap.interval.as_millis() as u64;
        let over = snap.sweep > 1 && interval_ms > 0 && snap.stats.duration_ms > interval_ms;
        if over && !self.overrun {
            let mut e = Event::node(Kind::SweepOverrun, Guid(0), "");
            e.sweep_ms = snap.stats.duration_ms;
            e.interval_ms = interval_ms;
            events.push(e);
        }
        if snap.stats.ended.is_some() {
            self.overrun = over;
        }
        self.limit(events)
    }

    /// Storm control: the first `limit_per_sweep` of each family.
    fn limit(&self, events: Vec<Event>) -> Outcome {
        let mut out = Outcome::default();
        let mut sent = [0u32; FAMILIES];
        let limit = self.cfg.limit_per_sweep;
        for e in events {
            let f = e.family() as usize;
            if limit > 0 && sent[f] >= limit {
                out.suppressed[f] += 1;
            } else {
                sent[f] += 1;
                out.events.push(e);
            }
        }
        out
    }
}

fn peer_of(snap: &Snapshot, peer: Option<(Guid, u8)>) -> Option<Peer> {
    peer.map(|(guid, port)| Peer {
        guid,
        port,
        description: snap
            .node(guid)
            .map_or(String::new(), |n| n.description.clone()),
    })
}

/// The events of a reachable node's ports.
fn ports_of(
    node: &NodeRecord,
    mem: &mut NodeMem,
    snap: &Snapshot,
    window: Duration,
    cfg: &NotifyConfig,
    limits: &mut LimitSets,
) -> Vec<Event> {
    let mut out = Vec::new();
    let event = |kind, p: &PortRecord, peer| {
        let mut e = Event::node(kind, node.guid, &node.description);
        e.port = p.num;
        e.peer = peer;
        e
    };
    for p in &node.ports {
        let pm = match mem.ports.iter().position(|m| m.num == p.num) {
            Some(i) => &mut mem.ports[i],
            None => {
                // A port rediscovery added: taken as it is.
                mem.ports.push(port_mem(limits, cfg, node, p));
                continue;
            }
        };
        let state = state_of(p);
        if state != pm.state {
            let peer = p.link.remote.or(pm.peer);
            let mut e = event(Kind::PortStateChange, p, peer_of(snap, peer));
            e.old_state = pm.state;
            e.new_state = state;
            out.push(e);
            pm.state = state;
        }
        if p.link.remote.is_some() {
            pm.peer = p.link.remote;
        }
        if p.external_resets != pm.resets {
            out.push(event(Kind::Discontinuity, p, None));
            pm.resets = p.external_resets;
        }
        let Some(at) = p.read_at else { continue };
        if pm.last_read.is_some_and(|l| l >= at) {
            continue;
        }
        pm.last_read = Some(at);
        let cur = sample_of(at, p);
        // The newest sample at least a window old is the base.
        let base = pm
            .samples
            .iter()
            .rev()
            .find(|s| at.saturating_duration_since(s.at) >= window);
        if let Some(base) = base {
            let span = at.saturating_duration_since(base.at);
            let secs = span.as_secs_f64();
            for (i, d) in thresholds().iter().enumerate() {
                let (rising, falling) = pm.limits[i];
                let both = 1u16 << i;
                if rising == 0 || base.valid & cur.valid & both == 0 {
                    continue;
                }
                let delta = cur.values[i].wrapping_sub(base.values[i]);
                let value = match d.measure {
                    Measure::Increase(_) => {
                        // Normalized to exactly one window.
                        let v = u128::from(delta) * window.as_nanos() / span.as_nanos().max(1);
                        u64::try_from(v).unwrap_or(u64::MAX)
                    }
                    Measure::Utilization => u64::from(utilization_hundredths(
                        delta as f64 / secs,
                        p.link.rate_mbps().unwrap_or(0),
                    )),
                    Measure::Congestion => u64::from(congestion_hundredths(delta as f64 / secs)),
                };
                let risen = pm.risen & both != 0;
                let kind = if !risen && value >= rising {
                    pm.risen |= both;
                    Some((Kind::ThresholdRising, rising))
                } else if risen && value <= falling {
                    pm.risen &= !both;
                    Some((Kind::ThresholdFalling, falling))
                } else {
                    None
                };
                if let Some((kind, threshold)) = kind {
                    let mut e = event(kind, p, peer_of(snap, p.link.remote.or(pm.peer)));
                    e.counter = d.name;
                    e.value = value;
                    e.threshold = threshold;
                    e.window_s = u32::try_from(window.as_secs()).unwrap_or(u32::MAX);
                    out.push(e);
                }
            }
        }
        // Keep a sample every half window, and of the older ones only the
        // newest at least a window old.
        let keep = pm
            .samples
            .back()
            .is_none_or(|s| at.saturating_duration_since(s.at) >= window / 2);
        if keep {
            // Room first, so the deque never grows past MAX_SAMPLES.
            while pm.samples.len() >= MAX_SAMPLES {
                pm.samples.pop_front();
            }
            pm.samples.push_back(cur);
        }
        while pm.samples.len() > 1 && at.saturating_duration_since(pm.samples[1].at) >= window {
            pm.samples.pop_front();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::Family;
    use super::super::rules::{CounterName, ThresholdRule};
    use super::*;
    use crate::fabric::cache::SweepFigures;
    use crate::fabric::hc::HcTotals;
    use crate::ib::{NodeType, Port, PortState};
    use std::sync::Arc;

    const SYM: usize = 8; // HC slot of SymbolErrors
    const W: Duration = Duration::from_secs(10);

    /// A fabric of `n` switches with `ports` ports each, on a virtual clock.
    struct Fab {
        t0: Instant,
        nodes: Vec<NodeRecord>,
        sweep: u64,
        duration_ms: u64,
    }

    impl Fab {
        fn new(n: u64, ports: u8) -> Fab {
            assert_eq!(hc::HC[SYM].name, "SymbolErrors");
            let nodes = (0..n)
                .map(|i| NodeRecord {
                    guid: Guid(0x100 + i),
                    sys_guid: Guid(0),
                    node_type: NodeType::Switch,
                    vendor_id: 0,
                    device_id: 0,
                    description: format!("sw{i}"),
                    num_ports: ports,
                    lid: 1,
                    reachable: true,
                    failed_sweeps: 0,
                    class_port_info: None,
                    ports: (1..=ports)
                        .map(|q| PortRecord {
                            num: q,
                            link: Port {
                                num: q,
                                state: Some(PortState::Active),
                                remote: Some((Guid(0x100 + (i + 1) % n), q)),
                                ..Default::default()
                            },
                            hc: HcTotals::zeros(u32::MAX >> (32 - hc::HC_SLOTS)),
                            ..Default::default()
                        })
                        .collect(),
                    samples_control: None,
                    samples_result: None,
                    samples_result_ext: None,
                    source: Default::default(),
                })
                .collect();
            Fab {
                t0: Instant::now(),
                nodes,
                sweep: 0,
                duration_ms: 100,
            }
        }

        /// A snapshot of a sweep at `secs` on the virtual clock: every
        /// reachable node's ports read then.
        fn snap(&mut self, secs: u64) -> Snapshot {
            self.sweep += 1;
            let at = self.t0 + Duration::from_secs(secs);
            for n in &mut self.nodes {
                if n.reachable {
                    for p in &mut n.ports {
                        p.read_at = Some(at);
                    }
                }
            }
            Snapshot {
                sweep: self.sweep,
                taken: None,
                interval: Duration::from_secs(1),
                nodes: self.nodes.iter().cloned().map(Arc::new).collect(),
                stats: SweepFigures {
                    ended: Some(at),
                    duration_ms: self.duration_ms,
                    ..Default::default()
                },
                reachable: 0,
                notify: Default::default(),
            }
        }

        fn add(&mut self, node: usize, port: usize, slot: usize, n: u64) {
            self.nodes[node].ports[port].hc.add(slot, n);
        }
    }

    fn kinds(o: &Outcome) -> Vec<(Kind, u64, u8)> {
        o.events
            .iter()
            .map(|e| (e.kind, e.node.0, e.port))
            .collect()
    }

    fn eval(limit: u32) -> Evaluator {
        Evaluator::new(NotifyConfig {
            window: W,
            limit_per_sweep: limit,
            rules: vec![],
        })
    }

    #[test]
    fn a_node_is_lost_once_and_found_once_and_its_ports_stay_quiet() {
        let mut f = Fab::new(3, 4);
        let mut ev = eval(0);
        assert!(ev.evaluate(&f.snap(0)).events.is_empty(), "first sight");
        f.nodes[1].reachable = false;
        // Its ports go down while it is lost: no port notifications.
        for p in &mut f.nodes[1].ports {
            p.link.state = Some(PortState::Down);
        }
        let o = ev.evaluate(&f.snap(1));
        assert_eq!(kinds(&o), vec![(Kind::NodeLost, 0x101, 0)]);
        assert!(ev.evaluate(&f.snap(2)).events.is_empty());
        assert!(ev.evaluate(&f.snap(3)).events.is_empty());
        f.nodes[1].reachable = true;
        let o = ev.evaluate(&f.snap(4));
        assert_eq!(kinds(&o), vec![(Kind::NodeFound, 0x101, 0)]);
        assert!(ev.evaluate(&f.snap(5)).events.is_empty());
        // Rows dropped (unreachable_rows = drop): lost as well.
        let gone = f.nodes.remove(2);
        let o = ev.evaluate(&f.snap(6));
        assert_eq!(kinds(&o), vec![(Kind::NodeLost, 0x102, 0)]);
        assert_eq!(o.events[0].description, "sw2");
        f.nodes.push(gone);
        let o = ev.evaluate(&f.snap(7));
        assert_eq!(kinds(&o), vec![(Kind::NodeFound, 0x102, 0)]);
        // The same snapshot twice: nothing the second time.
        let s = f.snap(8);
        f.nodes[0].reachable = false;
        ev.evaluate(&s);
        assert!(ev.evaluate(&s).events.is_empty());
    }

    #[test]
    fn port_state_changes_carry_old_new_and_peer() {
        let mut f = Fab::new(2, 2);
        let mut ev = eval(0);
        ev.evaluate(&f.snap(0));
        let p = &mut f.nodes[0].ports[1].link;
        p.state = Some(PortState::Down);
        p.remote = None;
        let o = ev.evaluate(&f.snap(1));
        assert_eq!(kinds(&o), vec![(Kind::PortStateChange, 0x100, 2)]);
        let e = &o.events[0];
        assert_eq!((e.old_state, e.new_state), (4, 1));
        let peer = e.peer.as_ref().unwrap();
        assert_eq!((peer.guid, peer.port), (Guid(0x101), 2), "the peer it had");
        assert_eq!(peer.description, "sw1");
        assert!(ev.evaluate(&f.snap(2)).events.is_empty());
        f.nodes[0].ports[1].link.state = Some(PortState::Active);
        let o = ev.evaluate(&f.snap(3));
        assert_eq!((o.events[0].old_state, o.events[0].new_state), (1, 4));
    }

    #[test]
    fn rising_once_then_falling_once_with_hysteresis() {
        let mut f = Fab::new(1, 2);
        let mut ev = eval(0);
        let mut t = 0;
        let mut step = |f: &mut Fab, ev: &mut Evaluator, errors: u64| {
            f.add(0, 0, SYM, errors);
            t += 2;
            ev.evaluate(&f.snap(t))
        };
        ev.evaluate(&f.snap(0));
        // 1 error per 2 s: 5 per 10 s window, under the default 10.
        for _ in 0..10 {
            assert!(step(&mut f, &mut ev, 1).events.is_empty());
        }
        // A burst: 4 per 2 s = 20 per window.
        let mut rising = Vec::new();
        for _ in 0..10 {
            rising.extend(step(&mut f, &mut ev, 4).events);
        }
        assert_eq!(rising.len(), 1, "{rising:?}");
        let e = &rising[0];
        assert_eq!(e.kind, Kind::ThresholdRising);
        assert_eq!(
            (e.counter, e.threshold, e.window_s, e.port),
            ("SymbolErrors", 10, 10, 1)
        );
        assert!(e.value >= 10 && e.value <= 20, "{}", e.value);
        assert_eq!(e.peer.as_ref().unwrap().guid, Guid(0x100));
        // Down to 1 per 2 s: above the falling threshold (0), no event.
        for _ in 0..10 {
            assert!(step(&mut f, &mut ev, 1).events.is_empty());
        }
        // Stopped: one falling event once a whole window is clean.
        let mut falling = Vec::new();
        for _ in 0..10 {
            falling.extend(step(&mut f, &mut ev, 0).events);
        }
        assert_eq!(falling.len(), 1, "{falling:?}");
        assert_eq!(falling[0].kind, Kind::ThresholdFalling);
        assert_eq!((falling[0].value, falling[0].threshold), (0, 0));
        // And it can rise again.
        let mut again = Vec::new();
        for _ in 0..10 {
            again.extend(step(&mut f, &mut ev, 10).events);
        }
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].kind, Kind::ThresholdRising);
    }

    #[test]
    fn configured_rules_change_and_disable_thresholds() {
        let sym = "SymbolErrors".parse::<CounterName>().unwrap();
        let mut f = Fab::new(2, 1);
        let mut ev = Evaluator::new(NotifyConfig {
            window: W,
            limit_per_sweep: 0,
            rules: vec![
                ThresholdRule {
                    counter: sym,
                    rising: Some(0),
                    falling: None,
                    node_type: None,
                    node: Some("sw0".parse().unwrap()),
                    ports: vec![],
                },
                ThresholdRule {
                    counter: sym,
                    rising: Some(1000),
                    falling: Some(500),
                    node_type: Some(NodeType::Switch),
                    node: Some("0x101".parse().unwrap()),
                    ports: vec![1],
                },
            ],
        });
        ev.evaluate(&f.snap(0));
        let mut got = Vec::new();
        for t in 1..=5 {
            f.add(0, 0, SYM, 100);
            f.add(1, 0, SYM, 100);
            got.extend(ev.evaluate(&f.snap(t * 5)).events);
        }
        assert!(got.is_empty(), "sw0 off, sw1 at 1000: {got:?}");
        for t in 6..=10 {
            f.add(1, 0, SYM, 600);
            got.extend(ev.evaluate(&f.snap(t * 5)).events);
        }
        assert_eq!(
            kinds(&Outcome {
                events: got,
                ..Default::default()
            }),
            vec![(Kind::ThresholdRising, 0x101, 1)]
        );
    }

    #[test]
    fn utilization_and_congestion_are_off_until_configured() {
        let util = "Utilization".parse::<CounterName>().unwrap();
        let mut f = Fab::new(1, 1);
        for p in &mut f.nodes[0].ports {
            p.link.width = Some(crate::ib::LinkWidth::X4);
            p.link.speed = Some(crate::ib::LinkSpeed::Sdr);
        }
        let rate_bps = f.nodes[0].ports[0].link.rate_mbps().unwrap() * 1_000_000;
        let run = |rules: Vec<ThresholdRule>| {
            let mut f = Fab {
                nodes: f.nodes.clone(),
                t0: f.t0,
                sweep: 0,
                duration_ms: 1,
            };
            let mut ev = Evaluator::new(NotifyConfig {
                window: W,
                limit_per_sweep: 0,
                rules,
            });
            ev.evaluate(&f.snap(0));
            let mut got = Vec::new();
            for t in 1..=4 {
                // 95% of the link over 5 s (the total counts 4-octet words).
                f.add(0, 0, hc::OUT_OCTETS, rate_bps / 8 * 5 * 95 / 100 / 4);
                got.extend(ev.evaluate(&f.snap(t * 5)).events);
            }
            got
        };
        assert!(run(vec![]).is_empty());
        let got = run(vec![ThresholdRule {
            counter: util,
            rising: Some(9000),
            falling: Some(5000),
            node_type: None,
            node: None,
            ports: vec![],
        }]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].counter, "Utilization");
        assert_eq!(got[0].value, 9500);
    }

    #[test]
    fn discontinuities_and_overruns() {
        let mut f = Fab::new(1, 2);
        let mut ev = eval(0);
        f.duration_ms = 5000;
        assert!(ev.evaluate(&f.snap(0)).events.is_empty(), "the first sweep");
        f.duration_ms = 100;
        f.nodes[0].ports[1].external_resets += 1;
        let o = ev.evaluate(&f.snap(1));
        assert_eq!(kinds(&o), vec![(Kind::Discontinuity, 0x100, 2)]);
        assert!(ev.evaluate(&f.snap(2)).events.is_empty());
        f.duration_ms = 1500;
        let o = ev.evaluate(&f.snap(3));
        assert_eq!(o.events.len(), 1);
        assert_eq!(o.events[0].kind, Kind::SweepOverrun);
        assert_eq!(
            (o.events[0].sweep_ms, o.events[0].interval_ms),
            (1500, 1000)
        );
        assert!(
            ev.evaluate(&f.snap(4)).events.is_empty(),
            "still overrunning"
        );
        f.duration_ms = 900;
        assert!(ev.evaluate(&f.snap(5)).events.is_empty());
        f.duration_ms = 1200;
        assert_eq!(ev.evaluate(&f.snap(6)).events.len(), 1, "a new overrun");
    }

    /// 500 ports crossing at once: at most the limit that sweep, the rest
    /// counted; the next sweep does not send them late (their state moved
    /// on: what comes next is their falling events).
    #[test]
    fn storm_control_limits_each_family_per_sweep() {
        let mut f = Fab::new(25, 20);
        let mut ev = eval(20);
        ev.evaluate(&f.snap(0));
        ev.evaluate(&f.snap(10));
        for n in 0..25 {
            for p in 0..20 {
                f.add(n, p, SYM, 1000);
            }
        }
        f.nodes[3].reachable = false;
        let o = ev.evaluate(&f.snap(20));
        let count = |o: &Outcome, k| o.events.iter().filter(|e| e.kind == k).count();
        assert_eq!(count(&o, Kind::ThresholdRising), 20);
        assert_eq!(o.suppressed[Family::Threshold as usize], 480 - 20);
        assert_eq!(
            count(&o, Kind::NodeLost),
            1,
            "other families keep their own limit"
        );
        assert_eq!(o.suppressed_total(), 460);
        let o = ev.evaluate(&f.snap(30));
        assert_eq!(count(&o, Kind::ThresholdRising), 0);
        assert_eq!(count(&o, Kind::ThresholdFalling), 20);
        assert_eq!(o.suppressed[Family::Threshold as usize], 460);
    }

    #[test]
    fn samples_per_port_stay_bounded() {
        let mut f = Fab::new(1, 1);
        let mut ev = Evaluator::new(NotifyConfig {
            window: Duration::from_secs(3600),
            limit_per_sweep: 0,
            rules: vec![],
        });
        for t in 0..5000 {
            ev.evaluate(&f.snap(t));
        }
        let n = ev.nodes.values().next().unwrap().ports[0].samples.len();
        assert!(n <= MAX_SAMPLES, "{n}");
        // Sweeps every half window keep a sample each time: the deque is
        // full before the oldest one ages out, and its allocation stays
        // at MAX_SAMPLES.
        let mut f = Fab::new(1, 1);
        let mut ev = Evaluator::new(NotifyConfig {
            window: Duration::from_secs(10),
            limit_per_sweep: 0,
            rules: vec![],
        });
        for t in 0..50 {
            ev.evaluate(&f.snap(5 * t));
        }
        let samples = &ev.nodes.values().next().unwrap().ports[0].samples;
        assert_eq!(samples.len(), MAX_SAMPLES);
        assert_eq!(samples.capacity(), MAX_SAMPLES);
    }
}
