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
//!
//! Memory: a port's state is one [`PortMem`] inline in its node's boxed
//! slice, with no allocation of its own ([`PORT_BYTES`]), and its samples
//! ([`SAMPLES_BYTES`]) in another of its node's, from the first time its
//! link is up (an uncabled port has none). The samples' error totals are
//! kept once for all of them while they are the same in each (a port
//! without errors in the last window and a half: nearly every port), and
//! aside, per sample, in the evaluator's map of the ports whose errors
//! moved ([`Evaluator::moving`]) while not: times are milliseconds from the
//! records' origin ([`crate::fabric::record::Stamp::millis`]), the thresholds an index into the shared sets, and
//! each sample keeps the error totals in their low 32 bits and the
//! XmitWait and octet totals whole. An error counter's
//! increase is then exact while it stays below 2^32 from the base sample
//! to the reading (at most about 1.5 windows and a sweep interval apart:
//! with the longest window, a day, some 30,000 errors a second; the
//! 16-bit PortCounters fields saturate at 65,535 a reading).

use std::sync::LazyLock;

use super::rules::{Measure, NotifyConfig, THRESHOLD_COUNT, thresholds};
use super::{Event, FAMILIES, Kind, Peer};
use crate::fabric::cache::Snapshot;
use crate::fabric::hc;
use crate::fabric::record::{NodeRecord, PortRecord};
use crate::ib::Guid;
use crate::ib::health::{Condition, PortVerdict, Verdicts};
use crate::ib::xmit_wait::TickRule;
use crate::mib::rate::{congestion_hundredths, utilization_hundredths};

use crate::ib::last_peer::{FarPeers, NodeGuid, PeerRef, keep_peer, last_peer};

// What the evaluator reads of a port, in one place: `PortRecord` is
// reshaped elsewhere, and only these follow it.

/// The total of 64-bit counter slot `k` as the MIB shows it.
fn total(p: &PortRecord, k: usize) -> Option<u64> {
    p.hc.shown(k)
}

/// pmPortState (0: not known).
fn state_of(p: &PortRecord) -> u32 {
    p.link.state.map_or(0, |s| s.mib())
}

/// The port at the other end of the link, while it is up.
fn peer_of_port(p: &PortRecord) -> Option<(Guid, u8)> {
    p.link.remote()
}

/// Times the counters went down without a clear by this agent.
fn resets(p: &PortRecord) -> u16 {
    p.external_resets as u16
}

/// The port's link is (or may be) up: its state is not known to be Down.
fn link_up(p: &PortRecord) -> bool {
    p.link.state.is_none_or(|s| s != crate::ib::PortState::Down)
}

/// What the port's link should run at and whether it does.
fn assessment(p: &PortRecord) -> crate::ib::LinkAssessment {
    p.assessment
}

/// The link's data rate (0: not known).
fn rate_mbps(p: &PortRecord) -> u64 {
    p.link.rate_mbps().unwrap_or(0)
}

/// The value a windowed threshold compares: `delta`, the increase of its
/// total from a sample `span_ms` old (at least a `window_ms` old).
fn window_value(
    m: Measure,
    p: &PortRecord,
    rule: &TickRule,
    delta: u64,
    window_ms: u64,
    span_ms: u64,
) -> Option<u64> {
    let secs = span_ms as f64 / 1000.0;
    Some(match m {
        Measure::Increase(_) => {
            // Normalized to exactly one window.
            let v = u128::from(delta) * u128::from(window_ms) / u128::from(span_ms.max(1));
            u64::try_from(v).unwrap_or(u64::MAX)
        }
        Measure::Utilization => {
            u64::from(utilization_hundredths(delta as f64 / secs, rate_mbps(p)))
        }
        Measure::Congestion => u64::from(congestion_hundredths(rule.share(
            delta as f64 / secs,
            p.link.width,
            p.link.speed,
        )?)),
        Measure::SymbolBer => u64::from(p.ber(delta as f64, secs)?.per_1e15()),
        Measure::EffectiveBer => return None,
    })
}

/// Samples kept per port at most (one every half window: the newest at
/// least a window old and the ones after it, of which at most two are
/// younger than a window).
const MAX_SAMPLES: usize = 3;

/// What one sweep calls for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Evaluation {
    /// The notifications to send, in fabric order within each family.
    pub events: Vec<Event>,
    /// Per [`super::Family`]: notifications over the sweep's limit.
    pub suppressed: [u64; FAMILIES],
    /// The notifications over the limit (not sent; the event log keeps
    /// them).
    pub held: Vec<Event>,
}

impl Evaluation {
    pub fn suppressed_total(&self) -> u64 {
        self.suppressed.iter().sum()
    }
}

// `Sample::valid` and `PortMem::risen` have a bit per watched counter.
const _: () = assert!(THRESHOLD_COUNT <= 32);

/// Watched totals a sample keeps in 32 bits: the error counters (every
/// [`Measure::Increase`] but XmitWait's; SymbolBER reads SymbolErrors', and
/// EffectiveBER no sample).
const NARROW: usize = THRESHOLD_COUNT - 5;
/// And whole: XmitWait (its increase and CongestedBandwidth; 250 M ticks
/// a second pass 2^32 in 17 s) and OutOctets (Utilization).
const WIDE: usize = 2;
const WIDE_XMIT_WAIT: usize = 0;
const WIDE_OUT_OCTETS: usize = 1;

/// Where a sample keeps the total of a [`thresholds`] entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CounterSlot {
    Narrow(usize),
    Wide(usize),
}

/// Per [`thresholds`] entry: its slot and the 64-bit counter it reads.
static SLOTS: LazyLock<[(CounterSlot, usize); THRESHOLD_COUNT]> = LazyLock::new(|| {
    let mut s = [(CounterSlot::Wide(WIDE_XMIT_WAIT), hc::XMIT_WAIT); THRESHOLD_COUNT];
    let mut narrow = 0;
    for (i, d) in thresholds().iter().enumerate() {
        s[i] = match d.measure {
            Measure::Increase(k) if k == hc::XMIT_WAIT => (CounterSlot::Wide(WIDE_XMIT_WAIT), k),
            Measure::Increase(k) => {
                narrow += 1;
                (CounterSlot::Narrow(narrow - 1), k)
            }
            Measure::Utilization => (CounterSlot::Wide(WIDE_OUT_OCTETS), hc::OUT_OCTETS),
            Measure::Congestion => (CounterSlot::Wide(WIDE_XMIT_WAIT), hc::XMIT_WAIT),
            Measure::SymbolBer | Measure::EffectiveBer => {
                let k = hc::Total::SymbolErrors.k();
                let sym = thresholds()
                    .iter()
                    .position(|d| d.measure == Measure::Increase(k))
                    .filter(|&j| j < i)
                    .expect("SymbolErrors is watched before SymbolBER");
                s[sym]
            }
        };
    }
    assert_eq!(narrow, NARROW, "every error counter has a narrow slot");
    s
});

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Sample {
    /// Milliseconds from the records' origin, modulo 2^32 (ages are
    /// differences, and a port's samples are less than 2^31 ms apart).
    at: u32,
    /// Bit i: [`thresholds`] entry i is known.
    valid: u32,
    /// The low 32 bits of the totals: their difference is the increase
    /// modulo 2^32.
    narrow: [u32; NARROW],
    wide: [u64; WIDE],
}

impl Sample {
    fn of(at: u32, p: &PortRecord) -> Sample {
        let mut s = Sample {
            at,
            ..Default::default()
        };
        for (i, &(slot, k)) in SLOTS.iter().enumerate() {
            let Some(v) = total(p, k) else { continue };
            match slot {
                // The low 32 bits, by design.
                CounterSlot::Narrow(j) => s.narrow[j] = v as u32,
                CounterSlot::Wide(j) => s.wide[j] = v,
            }
            s.valid |= 1 << i;
        }
        s
    }

    /// The increase of [`thresholds`] entry i from `base` to `self`.
    fn increase(&self, base: &Sample, i: usize) -> u64 {
        match SLOTS[i].0 {
            CounterSlot::Narrow(j) => u64::from(self.narrow[j].wrapping_sub(base.narrow[j])),
            CounterSlot::Wide(j) => self.wide[j].wrapping_sub(base.wide[j]),
        }
    }
}

/// A port's samples, oldest first (`[..kept]` of its [`PortMem`]), as the
/// evaluation reads them ([`Samples::load`]).
type Ring = [Sample; MAX_SAMPLES];

/// The error totals of a port's samples ([`Sample::narrow`]), per sample.
type Narrows = [[u32; NARROW]; MAX_SAMPLES];

/// What a sample keeps apart from its error totals.
#[derive(Clone, Copy, Debug, Default)]
struct Head {
    at: u32,
    valid: u32,
    wide: [u64; WIDE],
}

/// A port's samples as kept: each one's [`Head`], and the error totals
/// they all have, while they are the same in each; when they are not, each
/// sample's are in [`Evaluator::moving`] (the port's [`MOVING`] flag) and
/// `narrow` is not read.
#[derive(Clone, Copy, Debug, Default)]
struct Samples {
    heads: [Head; MAX_SAMPLES],
    narrow: [u32; NARROW],
}

impl Samples {
    /// The first `kept` samples, whole (the others are not read), their
    /// error totals `moving`'s when the port keeps them aside.
    fn load(&self, kept: usize, moving: Option<&Narrows>) -> Ring {
        let mut ring = Ring::default();
        for (k, (s, h)) in ring.iter_mut().zip(&self.heads).enumerate().take(kept) {
            *s = Sample {
                at: h.at,
                valid: h.valid,
                narrow: moving.map_or(self.narrow, |m| m[k]),
                wide: h.wide,
            };
        }
        ring
    }

    /// Keep the first `kept` samples of `ring`: their error totals here
    /// when they are the same in each, or else returned, to be kept aside.
    fn store(&mut self, ring: &Ring, kept: usize) -> Option<Narrows> {
        let ring = &ring[..kept];
        for (h, s) in self.heads.iter_mut().zip(ring) {
            *h = Head {
                at: s.at,
                valid: s.valid,
                wide: s.wide,
            };
        }
        let first = ring.first().map_or([0; NARROW], |s| s.narrow);
        if ring.iter().all(|s| s.narrow == first) {
            self.narrow = first;
            return None;
        }
        let mut aside = Narrows::default();
        for (a, s) in aside.iter_mut().zip(ring) {
            *a = s.narrow;
        }
        Some(aside)
    }
}

/// [`PortMem::samples`] of a port that has none.
const NO_SAMPLES: u8 = u8::MAX;

/// One port's state: no allocation of its own. Its samples are in its
/// node's [`NodeMem::samples`], from the first time its link is seen up:
/// a port that was never cabled keeps none.
struct PortMem {
    /// 1 + the milliseconds from the records' origin of the last reading
    /// evaluated;
    /// 0: none yet.
    last_read: u64,
    /// [`resets`] modulo 2^16 (compared for a change: it moves by a few
    /// between two evaluations at most).
    resets: u16,
    /// (rising, falling) per [`thresholds`] entry: an index into the
    /// shared [`LimitSets`].
    limits: u32,
    num: u8,
    /// pmPortState (every value fits).
    state: u8,
    /// The last peer seen (a link that went down has none any more): its
    /// node's index in [`Evaluator::nodes`], or in [`Evaluator::far`].
    peer: PeerRef,
    /// [`MOVING`], [`RISEN`], and the link's last known
    /// pmPortLinkDegraded in the bits of [`HEALTH`] ([`HEALTH_UNSEEN`]
    /// before the first evaluation).
    flags: u8,
    kept: u8,
    /// The index of its samples in its node's, or [`NO_SAMPLES`] (a node
    /// has at most 255 ports: 0 to 254 are enough).
    samples: u8,
}

/// [`PortMem::flags`]: pmPortLinkDegraded (0..=4) in bits 1..=3.
const HEALTH_SHIFT: u8 = 1;
const HEALTH: u8 = 0b1110;
/// [`PortMem::flags`]: the error totals of the port's samples differ from
/// one to another; each one's are in [`Evaluator::moving`].
const MOVING: u8 = 0b1_0000;
/// [`PortMem::flags`]: a rising event was sent for some [`thresholds`]
/// entry and no falling one yet: which, in [`Evaluator::risen`].
const RISEN: u8 = 0b10_0000;
/// Not evaluated yet: the first health seen is taken as it is.
const HEALTH_UNSEEN: u8 = 7;
/// Per port (node GUID, number): bit i, a rising event was sent for
/// [`thresholds`] entry i and no falling one yet. Only the ports with one.
type Risen = std::collections::HashMap<(Guid, u8), u32>;
/// The bytes one port's state takes: [`PortMem`] holds no pointer, so
/// that is all (its node's boxed slice of them has no spare room; an
/// adapter's one port is a 32-byte block of malloc's, not a 48-byte one).
pub const PORT_BYTES: usize = 24;
/// And the bytes of its samples, once its link has been up (and, while
/// their error totals differ, [`MOVING_BYTES`] more in the evaluator's
/// map).
pub const SAMPLES_BYTES: usize = 120;
/// The error totals of a port's samples, kept aside.
pub const MOVING_BYTES: usize = 144;
const _: () = assert!(size_of::<Narrows>() <= MOVING_BYTES);
const _: () = assert!(size_of::<PortMem>() <= PORT_BYTES);
const _: () = assert!(size_of::<Samples>() <= SAMPLES_BYTES);
const _: () = assert!(!std::mem::needs_drop::<PortMem>());

impl PortMem {
    fn new(limits: u32, p: &PortRecord) -> PortMem {
        let mut m = PortMem {
            last_read: 0,
            resets: resets(p),
            limits,
            num: p.num(),
            state: 0,
            peer: PeerRef::default(),
            flags: HEALTH_UNSEEN << HEALTH_SHIFT,
            kept: 0,
            samples: NO_SAMPLES,
        };
        m.set_state(state_of(p));
        m
    }

    fn state(&self) -> u32 {
        u32::from(self.state)
    }

    fn set_state(&mut self, s: u32) {
        self.state = u8::try_from(s).unwrap_or(u8::MAX);
    }

    /// The last known pmPortLinkDegraded ([`HEALTH_UNSEEN`]: none yet).
    fn health(&self) -> u8 {
        (self.flags & HEALTH) >> HEALTH_SHIFT
    }

    fn set_health(&mut self, h: u8) {
        self.flags = (self.flags & !HEALTH) | ((h.min(HEALTH_UNSEEN) << HEALTH_SHIFT) & HEALTH);
    }

    fn kept<'a>(&self, set: &'a Ring) -> &'a [Sample] {
        &set[..usize::from(self.kept)]
    }

    fn pop_front(&mut self, set: &mut Ring) {
        set.copy_within(1.., 0);
        self.kept -= 1;
    }

    fn push(&mut self, set: &mut Ring, s: Sample) {
        if usize::from(self.kept) == MAX_SAMPLES {
            self.pop_front(set);
        }
        set[usize::from(self.kept)] = s;
        self.kept += 1;
    }
}

struct NodeMem {
    guid: Guid,
    reachable: bool,
    /// For the pmNodeLost of a node whose rows are gone.
    description: std::sync::Arc<str>,
    ports: Box<[PortMem]>,
    /// The samples of the ports whose link has been up
    /// ([`PortMem::samples`]).
    samples: Box<[Samples]>,
}

impl NodeGuid for NodeMem {
    fn node_guid(&self) -> Guid {
        self.guid
    }
}

/// The peers' node indexes of `before`'s nodes (their GUIDs, before nodes
/// were added or let go) taken to `nodes`' now.
fn renumber_peers(nodes: &mut [NodeMem], far: &mut FarPeers, before: &[Guid]) {
    let now: Vec<Guid> = nodes.iter().map(|n| n.guid).collect();
    for n in nodes.iter_mut() {
        for m in n.ports.iter_mut() {
            crate::ib::last_peer::renumber(&mut m.peer, (n.guid, m.num), before, &now, far);
        }
    }
}

pub struct Evaluator {
    cfg: NotifyConfig,
    /// The window in milliseconds (at most 2^31 - 1: the config allows a
    /// day).
    window_ms: u64,
    limits: LimitSets,
    /// Ordered by GUID, as the snapshot's nodes.
    nodes: Vec<NodeMem>,
    /// The error totals of each sample of the ports whose samples do not
    /// all have the same ([`MOVING`]), by node and port number.
    moving: std::collections::HashMap<(Guid, u8), Narrows>,
    /// The rising events sent without a falling one yet ([`RISEN`]).
    risen: Risen,
    /// The last peers of nodes not in `nodes` ([`crate::ib::last_peer::FAR`]).
    far: FarPeers,
    overrun: bool,
    last_sweep: Option<u64>,
    /// The health verdicts of the last evaluation.
    health: std::sync::Arc<Verdicts>,
    /// The plan verdicts of the last evaluation.
    plan: std::sync::Arc<crate::ib::cabling::PlanVerdicts>,
    /// The subnets of the last evaluation.
    subnets: std::sync::Arc<[crate::ib::subnet::SubnetView]>,
    /// The events of the subnets' failover machine: for the subnets it
    /// decides, the master SM and local-port notifications are its
    /// events, not a comparison of views.
    machine: Option<std::sync::Arc<crate::fabric::local::Emitted>>,
}

/// Resolved thresholds, shared by the ports that have the same.
#[derive(Default)]
struct LimitSets(Vec<Box<[(u64, u64)]>>);

impl LimitSets {
    fn get(&mut self, cfg: &NotifyConfig, node: &NodeRecord, port: u8) -> u32 {
        let v = cfg.resolve(node.id.guid, &node.id.description, node.id.node_type, port);
        let i = match self.0.iter().position(|a| **a == *v) {
            Some(i) => i,
            None => {
                self.0.push(v.into());
                self.0.len() - 1
            }
        };
        // There are fewer sets than ports.
        u32::try_from(i).expect("fewer threshold sets than ports")
    }
}

fn ports_mem(limits: &mut LimitSets, cfg: &NotifyConfig, node: &NodeRecord) -> Box<[PortMem]> {
    node.ports()
        .map(|p| PortMem::new(limits.get(cfg, node, p.num()), p))
        .collect()
}

impl Evaluator {
    pub fn new(cfg: NotifyConfig) -> Evaluator {
        let window_ms = u64::try_from(cfg.window.as_millis())
            .unwrap_or(u64::MAX)
            .min((1 << 31) - 1);
        Evaluator {
            cfg,
            window_ms,
            limits: LimitSets::default(),
            nodes: Vec::new(),
            moving: Default::default(),
            risen: Risen::new(),
            far: FarPeers::new(),
            overrun: false,
            last_sweep: None,
            health: Default::default(),
            plan: Default::default(),
            subnets: std::sync::Arc::new([]),
            machine: None,
        }
    }

    pub fn config(&self) -> &NotifyConfig {
        &self.cfg
    }

    /// The notifications `snap` calls for. A snapshot of a sweep already
    /// evaluated calls for none.
    /// Act on the events of the subnets' failover machine
    /// ([`crate::fabric::local::FailoverMachine`]) for the subnets it decides.
    pub fn with_machine_events(mut self, m: std::sync::Arc<crate::fabric::local::Emitted>) -> Self {
        self.machine = Some(m);
        self
    }

    pub fn evaluate(&mut self, snap: &Snapshot) -> Evaluation {
        let mut events = Vec::new();
        if self.last_sweep == Some(snap.sweep) {
            return Evaluation::default();
        }
        self.last_sweep = Some(snap.sweep);
        // Forgotten nodes (`fabric.forget_after`) are let go, each with a
        // pmNodeForgotten (its description from the evaluator's memory).
        if !snap.forgotten.is_empty() {
            for m in &self.nodes {
                if snap.forgotten.binary_search(&m.guid).is_ok() {
                    events.push(Event::node(Kind::NodeForgotten, m.guid, &m.description));
                }
            }
            let before: Vec<Guid> = self.nodes.iter().map(|m| m.guid).collect();
            self.nodes
                .retain(|m| snap.forgotten.binary_search(&m.guid).is_err());
            let gone = |(g, _): &(Guid, u8)| snap.forgotten.binary_search(g).is_ok();
            self.moving.retain(|k, _| !gone(k));
            self.risen.retain(|k, _| !gone(k));
            self.far.retain(|k, _| !gone(k));
            renumber_peers(&mut self.nodes, &mut self.far, &before);
        }
        // Nodes: lost (marked unreachable or gone) and found.
        let swept = snap.swept_subnets();
        let mut ports_events = Vec::new();
        let mut fresh = Vec::new();
        for node in &snap.nodes {
            let Ok(i) = self.nodes.binary_search_by_key(&node.id.guid, |m| m.guid) else {
                // First sight: taken as it is.
                fresh.push(NodeMem {
                    guid: node.id.guid,
                    reachable: node.reachable,
                    description: node.name_arc().clone(),
                    ports: ports_mem(&mut self.limits, &self.cfg, node),
                    samples: Box::default(),
                });
                continue;
            };
            let mem = &mut self.nodes[i];
            if !node.reachable && Snapshot::node_unswept(swept, node) {
                // Its subnet is not swept (pmSubnetNotSwept says so): no
                // verdict of its own; it is judged when swept again.
                continue;
            }
            match (mem.reachable, node.reachable) {
                (true, false) => {
                    events.push(Event::node(Kind::NodeLost, node.id.guid, node.name()))
                }
                (false, true) => {
                    events.push(Event::node(Kind::NodeFound, node.id.guid, node.name()));
                    // Its ports are taken as they are now (their peers
                    // with their first evaluation, below).
                    mem.ports = ports_mem(&mut self.limits, &self.cfg, node);
                    mem.samples = Box::default();
                    let this = |(g, _): &(Guid, u8)| *g == node.id.guid;
                    self.moving.retain(|k, _| !this(k));
                    self.risen.retain(|k, _| !this(k));
                    self.far.retain(|k, _| !this(k));
                }
                _ => {}
            }
            mem.reachable = node.reachable;
            if *mem.description != *node.name() {
                mem.description = node.name_arc().clone();
            }
            if node.reachable {
                // Its ports' state taken out while the nodes are read (the
                // peers are their indexes).
                let mut ports = std::mem::take(&mut mem.ports);
                let mut samples = std::mem::take(&mut mem.samples);
                let mut ctx = PortCtx {
                    snap,
                    node,
                    cfg: &self.cfg,
                    window_ms: self.window_ms,
                    limits: &mut self.limits,
                    moving: &mut self.moving,
                    risen: &mut self.risen,
                    far: &mut self.far,
                    nodes: &self.nodes,
                    out: &mut ports_events,
                };
                ctx.ports(&mut ports, &mut samples);
                self.nodes[i].ports = ports;
                self.nodes[i].samples = samples;
            }
        }
        for mem in &mut self.nodes {
            if mem.reachable && snap.node(mem.guid).is_none() {
                mem.reachable = false;
                events.push(Event::node(Kind::NodeLost, mem.guid, &mem.description));
            }
        }
        if !fresh.is_empty() {
            let before: Vec<Guid> = self.nodes.iter().map(|m| m.guid).collect();
            let first_seen: Vec<Guid> = fresh.iter().map(|m| m.guid).collect();
            self.nodes.append(&mut fresh);
            self.nodes.sort_by_key(|m| m.guid);
            self.nodes.dedup_by_key(|m| m.guid);
            self.nodes.shrink_to_fit();
            renumber_peers(&mut self.nodes, &mut self.far, &before);
            // The peers of the nodes seen first, as their records have them.
            for guid in first_seen {
                let (Ok(i), Some(rec)) = (
                    self.nodes.binary_search_by_key(&guid, |m| m.guid),
                    snap.node(guid),
                ) else {
                    continue;
                };
                let mut ports = std::mem::take(&mut self.nodes[i].ports);
                for (m, p) in ports.iter_mut().zip(rec.ports()) {
                    if let Some(peer) = peer_of_port(p) {
                        keep_peer(&self.nodes, &mut self.far, (guid, m.num), &mut m.peer, peer);
                    }
                }
                self.nodes[i].ports = ports;
            }
        }
        events.extend(ports_events);
        if !std::sync::Arc::ptr_eq(&self.health, &snap.health) {
            events.extend(health_events(&self.health, &snap.health, snap));
            self.health = std::sync::Arc::clone(&snap.health);
        }
        if !std::sync::Arc::ptr_eq(&self.plan, &snap.plan) {
            events.extend(super::plan::events(&self.plan, &snap.plan));
            self.plan = std::sync::Arc::clone(&snap.plan);
        }
        let decided = self.machine.as_ref().map_or(0, |m| m.decided());
        if !std::sync::Arc::ptr_eq(&self.subnets, &snap.subnets) {
            events.extend(super::subnets::events(
                &self.subnets,
                &snap.subnets,
                decided,
            ));
            self.subnets = std::sync::Arc::clone(&snap.subnets);
        }
        if let Some(m) = &self.machine {
            events.extend(super::subnets::of_machine(&m.take(), &snap.subnets));
        }
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
    fn limit(&self, events: Vec<Event>) -> Evaluation {
        let mut out = Evaluation::default();
        let mut sent = [0u32; FAMILIES];
        let limit = self.cfg.limit_per_sweep;
        for e in events {
            let f = e.family() as usize;
            if limit > 0 && sent[f] >= limit {
                out.suppressed[f] += 1;
                out.held.push(e);
            } else {
                sent[f] += 1;
                out.events.push(e);
            }
        }
        out
    }
}

/// pmPortUnhealthy and pmPortHealthy: the verdicts raised and cleared
/// between two evaluations of the health evaluator, one per link and
/// condition (from the end with the lower (GUID, port), or the end whose
/// peer has no entry); the cleared first.
fn health_events(old: &Verdicts, new: &Verdicts, snap: &Snapshot) -> Vec<Event> {
    let mut out = Vec::new();
    let speaks = |v: &Verdicts, e: &PortVerdict| {
        e.peer
            .is_none_or(|p| (e.guid, e.port) < p || v.port(p.0, p.1).is_none())
    };
    let mut event = |kind: Kind, e: &PortVerdict, c: Condition| {
        let description = snap
            .node(e.guid)
            .map_or(String::new(), |n| n.name().to_string());
        let mut ev = Event::node(kind, e.guid, &description);
        ev.port = e.port;
        ev.peer = peer_of(snap, e.peer);
        ev.condition = Some(c);
        ev.value = e.raised[c as usize].into();
        out.push(ev);
    };
    // A verdict standing in both with another since cleared (an
    // acknowledgement) and was raised again in between.
    let since = |v: Option<&PortVerdict>, c: Condition| v.and_then(|v| v.mark(c)).map(|m| m.since);
    let gone = |e: &PortVerdict, other: Option<&PortVerdict>| {
        Condition::of_mask(e.mask())
            .filter(|&c| since(Some(e), c) != since(other, c))
            .collect::<Vec<_>>()
    };
    for o in old.ports.iter().filter(|e| speaks(old, e)) {
        for c in gone(o, new.port(o.guid, o.port)) {
            event(Kind::PortHealthy, o, c);
        }
    }
    for e in new.ports.iter().filter(|e| speaks(new, e)) {
        for c in gone(e, old.port(e.guid, e.port)) {
            event(Kind::PortUnhealthy, e, c);
        }
    }
    out
}

fn peer_of(snap: &Snapshot, peer: Option<(Guid, u8)>) -> Option<Peer> {
    peer.map(|(guid, port)| Peer {
        guid,
        port,
        description: snap
            .node(guid)
            .map_or(String::new(), |n| n.name().to_string()),
    })
}

/// What the ports of one reachable node are evaluated with.
struct PortCtx<'a> {
    snap: &'a Snapshot,
    node: &'a NodeRecord,
    cfg: &'a NotifyConfig,
    window_ms: u64,
    limits: &'a mut LimitSets,
    moving: &'a mut std::collections::HashMap<(Guid, u8), Narrows>,
    risen: &'a mut Risen,
    far: &'a mut FarPeers,
    /// The evaluator's nodes, which the peers' indexes are of (the ports
    /// evaluated are taken out of theirs).
    nodes: &'a [NodeMem],
    out: &'a mut Vec<Event>,
}

impl PortCtx<'_> {
    fn event(&self, kind: Kind, p: &PortRecord, peer: Option<Peer>) -> Event {
        let mut e = Event::node(kind, self.node.id.guid, self.node.name());
        e.port = p.num();
        e.peer = peer;
        e
    }

    /// The events of a reachable node's ports.
    fn ports(&mut self, ports: &mut Box<[PortMem]>, samples: &mut Box<[Samples]>) {
        let node = self.node;
        // Ports rediscovery added: taken as they are.
        if node
            .ports()
            .any(|p| !ports.iter().any(|m| m.num == p.num()))
        {
            let mut v = std::mem::take(ports).into_vec();
            for p in node.ports() {
                if !v.iter().any(|m| m.num == p.num()) {
                    v.push(PortMem::new(self.limits.get(self.cfg, node, p.num()), p));
                }
            }
            *ports = v.into_boxed_slice();
        }
        // Samples for the ports whose link is up for the first time, all
        // added at once.
        let mut held = samples.len();
        for p in node.ports() {
            if let Some(m) = ports.iter_mut().find(|m| m.num == p.num())
                && m.samples == NO_SAMPLES
                && link_up(p)
                && held < usize::from(NO_SAMPLES)
            {
                m.samples = held as u8;
                held += 1;
            }
        }
        if held > samples.len() {
            let mut v = std::mem::take(samples).into_vec();
            v.resize(held, Samples::default());
            *samples = v.into_boxed_slice();
        }
        let rule = node.tick_rule();
        for p in node.ports() {
            if let Some(pm) = ports.iter_mut().find(|m| m.num == p.num()) {
                self.port(p, pm, samples, &rule);
            }
        }
    }

    /// pmLinkDegraded when the link came to run below what both ends
    /// support and enable (or degraded another way), pmLinkRecovered when
    /// it runs at that again. An unknown health (the link is down) keeps
    /// the last known one; the first one seen is taken as it is (a link
    /// first seen down that comes up degraded is notified).
    fn link_health(&mut self, p: &PortRecord, pm: &mut PortMem) {
        let a = assessment(p);
        let old = pm.health();
        let Some(health) = a.health else {
            if old == HEALTH_UNSEEN {
                pm.set_health(0);
            }
            return;
        };
        let new = health.mib() as u8;
        pm.set_health(new);
        let normal = crate::ib::LinkHealth::Normal.mib() as u8;
        let kind = match old {
            HEALTH_UNSEEN => None,
            o if new != normal && o != new => Some(Kind::LinkDegraded),
            o if new == normal && o != normal && o != 0 => Some(Kind::LinkRecovered),
            _ => None,
        };
        if let Some(kind) = kind {
            let mut e = self.event(kind, p, peer_of(self.snap, peer_of_port(p)));
            let l = &p.link;
            e.link = super::LinkFacts {
                health: u32::from(new),
                width: l.width.map_or(0, |w| w.mib()),
                speed: l.speed.map_or(0, |s| s.mib()),
                width_expected: a.expected_width.map_or(0, |w| w.mib()),
                speed_expected: a.expected_speed.map_or(0, |s| s.mib()),
            };
            self.out.push(e);
        }
    }

    fn port(&mut self, p: &PortRecord, pm: &mut PortMem, samples: &mut [Samples], rule: &TickRule) {
        let state = state_of(p);
        let remote = peer_of_port(p);
        let own = (self.node.id.guid, pm.num);
        let last = last_peer(self.nodes, self.far, own, pm.peer);
        if state != pm.state() {
            let peer = peer_of(self.snap, remote.or(last));
            let mut e = self.event(Kind::PortStateChange, p, peer);
            e.old_state = pm.state();
            e.new_state = state;
            self.out.push(e);
            pm.set_state(state);
        }
        if let Some(peer) = remote {
            keep_peer(self.nodes, self.far, own, &mut pm.peer, peer);
        }
        self.link_health(p, pm);
        if resets(p) != pm.resets {
            self.out.push(self.event(Kind::Discontinuity, p, None));
            pm.resets = resets(p);
        }
        let Some(at) = p.read_at else { return };
        let now = at.millis();
        if pm.last_read > now {
            // Not newer than the last reading evaluated.
            return;
        }
        if pm.last_read > 0 && now - (pm.last_read - 1) >= 1 << 31 {
            // Not read for 24 days: too old for the 32-bit sample times.
            pm.kept = 0;
        }
        pm.last_read = now + 1;
        let Some(stored) = samples.get_mut(usize::from(pm.samples)) else {
            // Its link has never been up: no threshold to watch.
            return;
        };
        let key = (self.node.id.guid, pm.num);
        let aside = (pm.flags & MOVING != 0)
            .then(|| self.moving.get(&key))
            .flatten();
        let mut ring = stored.load(usize::from(pm.kept), aside);
        let set = &mut ring;
        let now = now as u32; // sample times are modulo 2^32
        let age = |s: &Sample| u64::from(now.wrapping_sub(s.at));
        let window = self.window_ms;
        let cur = Sample::of(now, p);
        // The newest sample at least a window old is the base.
        let base = pm
            .kept(set)
            .iter()
            .rev()
            .find(|s| age(s) >= window)
            .copied();
        let limits = &self.limits.0[pm.limits as usize];
        let mut risen_bits = match pm.flags & RISEN {
            0 => 0,
            _ => self.risen.get(&key).copied().unwrap_or(0),
        };
        for (i, d) in thresholds().iter().enumerate() {
            let (rising, falling) = limits[i];
            let both = 1u32 << i;
            if rising == 0 {
                continue;
            }
            let value = match d.measure {
                Measure::EffectiveBer => p.effective_ber().map(|b| u64::from(b.per_1e15())),
                m => base
                    .filter(|b| b.valid & cur.valid & both != 0)
                    .and_then(|b| window_value(m, p, rule, cur.increase(&b, i), window, age(&b))),
            };
            let Some(value) = value else { continue };
            let risen = risen_bits & both != 0;
            let kind = if !risen && value >= rising {
                risen_bits |= both;
                Some((Kind::ThresholdRising, rising))
            } else if risen && value <= falling {
                risen_bits &= !both;
                Some((Kind::ThresholdFalling, falling))
            } else {
                None
            };
            if let Some((kind, threshold)) = kind {
                let peer = peer_of(
                    self.snap,
                    remote.or(last_peer(self.nodes, self.far, own, pm.peer)),
                );
                let mut e = self.event(kind, p, peer);
                e.counter = d.name;
                e.value = value;
                e.threshold = threshold;
                e.window_s = u32::try_from(self.cfg.window.as_secs()).unwrap_or(u32::MAX);
                self.out.push(e);
            }
        }
        if risen_bits != 0 {
            self.risen.insert(key, risen_bits);
            pm.flags |= RISEN;
        } else if pm.flags & RISEN != 0 {
            self.risen.remove(&key);
            pm.flags &= !RISEN;
        }
        // Keep a sample every half window, and of the older ones only the
        // newest at least a window old.
        if pm.kept(set).last().is_none_or(|s| age(s) >= window / 2) {
            pm.push(set, cur);
        }
        while pm.kept > 1 && age(&set[1]) >= window {
            pm.pop_front(set);
        }
        match stored.store(&ring, usize::from(pm.kept)) {
            Some(aside) => {
                self.moving.insert(key, aside);
                pm.flags |= MOVING;
            }
            None if pm.flags & MOVING != 0 => {
                self.moving.remove(&key);
                pm.flags &= !MOVING;
            }
            None => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::Family;
    use super::super::rules::{CounterName, ThresholdRule};
    use super::*;
    use crate::fabric::cache::SweepFigures;
    use crate::ib::{LinkSpeed, LinkSpeeds, LinkWidth, LinkWidths, NodeType, Port, PortState};
    use std::sync::Arc;
    use std::time::{Duration, Instant};

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
                .map(|i| NodeRecord::test_switch(i, ports, |q| (Guid(0x100 + (i + 1) % n), q)))
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
                    for p in n.ports_mut() {
                        p.read_at = Some(at.into());
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
                ..Default::default()
            }
        }

        fn add(&mut self, node: usize, port: usize, slot: usize, n: u64) {
            self.nodes[node].ports_mut()[port].hc.add(slot, n);
        }
    }

    fn kinds(o: &Evaluation) -> Vec<(Kind, u64, u8)> {
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

    /// A node the snapshot says is forgotten is let go: one
    /// pmNodeForgotten, no memory of it.
    #[test]
    fn a_forgotten_node_is_let_go() {
        let mut f = Fab::new(3, 4);
        let mut ev = eval(0);
        ev.evaluate(&f.snap(0));
        f.nodes[1].reachable = false;
        assert_eq!(
            kinds(&ev.evaluate(&f.snap(1))),
            vec![(Kind::NodeLost, 0x101, 0)]
        );
        let gone = f.nodes.remove(1);
        let mut snap = f.snap(2);
        snap.forgotten = vec![gone.id.guid].into();
        let o = ev.evaluate(&snap);
        assert_eq!(kinds(&o), vec![(Kind::NodeForgotten, 0x101, 0)]);
        assert_eq!(o.events[0].description, "sw1");
        assert!(ev.evaluate(&f.snap(3)).events.is_empty(), "once");
        assert_eq!(ev.nodes.len(), 2);
        assert!(ev.nodes.iter().all(|m| m.guid != gone.id.guid));
    }

    #[test]
    fn a_node_is_lost_once_and_found_once_and_its_ports_stay_quiet() {
        let mut f = Fab::new(3, 4);
        let mut ev = eval(0);
        assert!(ev.evaluate(&f.snap(0)).events.is_empty(), "first sight");
        f.nodes[1].reachable = false;
        // Its ports go down while it is lost: no port notifications.
        for p in f.nodes[1].ports_mut() {
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
        let p = &mut f.nodes[0].ports_mut()[1].link;
        p.state = Some(PortState::Down);
        p.set_remote(None);
        let o = ev.evaluate(&f.snap(1));
        assert_eq!(kinds(&o), vec![(Kind::PortStateChange, 0x100, 2)]);
        let e = &o.events[0];
        assert_eq!((e.old_state, e.new_state), (4, 1));
        let peer = e.peer.as_ref().unwrap();
        assert_eq!((peer.guid, peer.port), (Guid(0x101), 2), "the peer it had");
        assert_eq!(peer.description, "sw1");
        assert!(ev.evaluate(&f.snap(2)).events.is_empty());
        f.nodes[0].ports_mut()[1].link.state = Some(PortState::Active);
        let o = ev.evaluate(&f.snap(3));
        assert_eq!((o.events[0].old_state, o.events[0].new_state), (1, 4));
    }

    /// Take node `n`'s port `q` down, its peer gone from the record.
    fn take_down(f: &mut Fab, n: usize, q: usize) {
        let l = &mut f.nodes[n].ports_mut()[q].link;
        l.state = Some(PortState::Down);
        l.set_remote(None);
    }

    /// A port recabled while up is reported with the peer it had last,
    /// whether its node is one the evaluator keeps (by index, through nodes
    /// added before it and nodes forgotten) or not.
    #[test]
    fn a_port_state_change_names_the_peer_it_had_last() {
        let mut f = Fab::new(4, 3);
        let mut ev = eval(0);
        ev.evaluate(&f.snap(0));
        let peer = |o: &Evaluation| {
            let p = o.events[0].peer.as_ref().unwrap();
            (p.guid, p.port)
        };
        // Recabled: node 0's port 1 to node 3's port 3.
        f.nodes[0].ports_mut()[0]
            .link
            .set_remote(Some((Guid(0x103), 3)));
        ev.evaluate(&f.snap(1));
        // Nodes before it come (indexes move on), and a node of no record
        // is the peer of node 0's port 2.
        let mut low = NodeRecord::test_switch(0, 1, |_| (Guid(0x101), 1));
        low.id.guid = Guid(0x50);
        f.nodes.insert(0, low);
        f.nodes[1].ports_mut()[1]
            .link
            .set_remote(Some((Guid(0x900), 5)));
        ev.evaluate(&f.snap(2));
        take_down(&mut f, 1, 0);
        let o = ev.evaluate(&f.snap(3));
        assert_eq!(kinds(&o), vec![(Kind::PortStateChange, 0x100, 1)]);
        assert_eq!(peer(&o), (Guid(0x103), 3));
        assert_eq!(o.events[0].peer.as_ref().unwrap().description, "sw3");
        take_down(&mut f, 1, 1);
        let o = ev.evaluate(&f.snap(4));
        assert_eq!(peer(&o), (Guid(0x900), 5));
        // Node 3 forgotten: its GUID is still the peer named.
        f.nodes[1].ports_mut()[0].link.state = Some(PortState::Active);
        ev.evaluate(&f.snap(5));
        let gone = f.nodes.remove(4);
        let mut snap = f.snap(6);
        snap.forgotten = vec![gone.id.guid].into();
        ev.evaluate(&snap);
        take_down(&mut f, 1, 0);
        let o = ev.evaluate(&f.snap(7));
        assert_eq!(peer(&o), (Guid(0x103), 3));
        assert_eq!(o.events[0].peer.as_ref().unwrap().description, "");
        // Node 2's port 3 kept its own all along (node 3 was after it).
        take_down(&mut f, 3, 2);
        let o = ev.evaluate(&f.snap(8));
        assert_eq!(kinds(&o), vec![(Kind::PortStateChange, 0x102, 3)]);
        assert_eq!(peer(&o), (Guid(0x103), 3));
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
        assert!(ev.risen.is_empty(), "kept only while a rising stands");
        // And it can rise again.
        let mut again = Vec::new();
        for _ in 0..10 {
            again.extend(step(&mut f, &mut ev, 10).events);
        }
        assert_eq!(again.len(), 1);
        assert_eq!(again[0].kind, Kind::ThresholdRising);
        assert_eq!(ev.risen.len(), 1);
    }

    /// Links of two EDR switches (node 0 port q <-> node 1 port q) at
    /// `width` and `speed`.
    fn edr_link(f: &mut Fab, width: Option<LinkWidth>, speed: Option<LinkSpeed>) {
        let caps = crate::ib::LinkCaps {
            width_supported: LinkWidths::of(&[LinkWidth::X1, LinkWidth::X4]),
            width_enabled: LinkWidths::of(&[LinkWidth::X1, LinkWidth::X4]),
            speed_supported: LinkSpeeds::range(LinkSpeed::Sdr, LinkSpeed::Edr, true),
            speed_enabled: LinkSpeeds::range(LinkSpeed::Sdr, LinkSpeed::Edr, true),
        };
        for n in &mut f.nodes {
            for p in n.ports_mut() {
                (p.link.width, p.link.speed, p.link.caps) = (width, speed, caps);
            }
        }
        assess(f);
    }

    /// Each port's assessment against its peer, as the state makes it.
    fn assess(f: &mut Fab) {
        let links: Vec<Vec<Port>> = f
            .nodes
            .iter()
            .map(|n| n.ports().map(|p| p.link).collect())
            .collect();
        for n in &mut f.nodes {
            for p in n.ports_mut() {
                let peer = p.link.remote().and_then(|(g, q)| {
                    let i = usize::try_from(g.0 - 0x100).ok()?;
                    links.get(i)?.iter().find(|x| x.num == q)
                });
                p.assessment = p.link.assess(peer);
            }
        }
    }

    #[test]
    fn a_link_that_degrades_and_recovers_is_notified_from_both_ends() {
        use crate::ib::{LinkSpeed as S, LinkWidth as Wd};
        let mut f = Fab::new(2, 1);
        let mut ev = eval(0);
        // Degraded from the start: taken as it is.
        edr_link(&mut f, Some(Wd::X4), Some(S::Ddr));
        assert!(ev.evaluate(&f.snap(0)).events.is_empty());
        assert!(ev.evaluate(&f.snap(1)).events.is_empty(), "first health");
        edr_link(&mut f, Some(Wd::X4), Some(S::Edr));
        let o = ev.evaluate(&f.snap(2));
        assert_eq!(
            kinds(&o),
            vec![
                (Kind::LinkRecovered, 0x100, 1),
                (Kind::LinkRecovered, 0x101, 1)
            ]
        );
        assert_eq!(o.events[0].link.health, 1);
        assert!(ev.evaluate(&f.snap(3)).events.is_empty());
        // Speed down to DDR: both ends, with what it runs and should run.
        edr_link(&mut f, Some(Wd::X4), Some(S::Ddr));
        let o = ev.evaluate(&f.snap(4));
        assert_eq!(
            kinds(&o),
            vec![
                (Kind::LinkDegraded, 0x100, 1),
                (Kind::LinkDegraded, 0x101, 1)
            ]
        );
        let e = &o.events[0];
        assert_eq!(
            e.link,
            super::super::LinkFacts {
                health: 3,
                width: 4,
                speed: 2,
                width_expected: 4,
                speed_expected: 6
            }
        );
        assert_eq!(e.peer.as_ref().unwrap().guid, Guid(0x101));
        assert_eq!(e.family(), Family::Port);
        // Worse (width too): degraded another way.
        edr_link(&mut f, Some(Wd::X1), Some(S::Ddr));
        let o = ev.evaluate(&f.snap(5));
        assert_eq!(o.events.len(), 2);
        assert!(
            o.events
                .iter()
                .all(|e| e.kind == Kind::LinkDegraded && e.link.health == 4)
        );
        // Down (unknown): nothing; up at full width and speed: recovered.
        edr_link(&mut f, None, None);
        for p in f.nodes.iter_mut().flat_map(|n| n.ports_mut().iter_mut()) {
            p.link.state = Some(PortState::Down);
        }
        let o = ev.evaluate(&f.snap(6));
        assert!(
            o.events.iter().all(|e| e.kind == Kind::PortStateChange),
            "{o:?}"
        );
        edr_link(&mut f, Some(Wd::X4), Some(S::Edr));
        for p in f.nodes.iter_mut().flat_map(|n| n.ports_mut().iter_mut()) {
            p.link.state = Some(PortState::Active);
        }
        let o = ev.evaluate(&f.snap(7));
        let rec: Vec<_> = o
            .events
            .iter()
            .filter(|e| e.kind == Kind::LinkRecovered)
            .collect();
        assert_eq!(rec.len(), 2, "{o:?}");
        // Storm control counts them with the port family.
        let mut ev = eval(1);
        edr_link(&mut f, Some(Wd::X4), Some(S::Edr));
        ev.evaluate(&f.snap(8));
        ev.evaluate(&f.snap(9));
        edr_link(&mut f, Some(Wd::X1), Some(S::Edr));
        let o = ev.evaluate(&f.snap(10));
        assert_eq!(
            (o.events.len(), o.suppressed[Family::Port as usize]),
            (1, 1)
        );
    }

    #[test]
    fn symbol_ber_rises_over_the_threshold_and_falls() {
        use crate::ib::{LinkSpeed as S, LinkWidth as Wd};
        let mut f = Fab::new(1, 1);
        // 4x SDR: 8 Gb/s; a 10 s window is 8e10 bits.
        edr_link(&mut f, Some(Wd::X4), Some(S::Sdr));
        let mut ev = eval(0);
        let ber = |o: &Evaluation| -> Vec<(Kind, u64, u64)> {
            o.events
                .iter()
                .filter(|e| e.counter == "SymbolBER")
                .map(|e| (e.kind, e.value, e.threshold))
                .collect()
        };
        ev.evaluate(&f.snap(0));
        let mut seen = Vec::new();
        for t in 1..=12 {
            // 1 error every 2 s: 5 per window = 6.25E-11, 62500 per 10^15.
            if t % 2 == 0 {
                f.add(0, 0, SYM, 1);
            }
            seen.extend(ber(&ev.evaluate(&f.snap(t))));
        }
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (kind, value, threshold) = seen[0];
        assert_eq!((kind, threshold), (Kind::ThresholdRising, 1000));
        assert!((50_000..=75_000).contains(&value), "{value}");
        // Clean for a window: below 100 (10^-13), falling.
        let mut seen = Vec::new();
        for t in 13..=30 {
            seen.extend(ber(&ev.evaluate(&f.snap(t))));
        }
        assert_eq!(seen, vec![(Kind::ThresholdFalling, 0, 100)]);
        // Without a rate (width or speed not known) there is no BER.
        edr_link(&mut f, None, Some(S::Sdr));
        let mut seen = Vec::new();
        for t in 31..=50 {
            f.add(0, 0, SYM, 100);
            seen.extend(ber(&ev.evaluate(&f.snap(t))));
        }
        assert!(seen.is_empty(), "{seen:?}");
    }

    /// EffectiveBER compares the rate of uncorrectable FEC blocks between
    /// the last two PortExtendedSpeedsCounters readings (not sampled over
    /// the window) with UFM's 10^-14.
    #[test]
    fn effective_ber_rises_and_falls_with_the_fec_rates() {
        use crate::fabric::record::FecRates;
        use crate::ib::{LinkSpeed as S, LinkWidth as Wd};
        let mut f = Fab::new(1, 1);
        // 4x HDR: 200 Gb/s; 1 uncorrectable block a second is 5E-12.
        edr_link(&mut f, Some(Wd::X4), Some(S::Hdr));
        let mut ev = eval(0);
        let eff = |o: &Evaluation| -> Vec<(Kind, u64, u64)> {
            o.events
                .iter()
                .filter(|e| e.counter == "EffectiveBER")
                .map(|e| (e.kind, e.value, e.threshold))
                .collect()
        };
        let rates = |f: &mut Fab, per_s: Option<f32>| {
            f.nodes[0].ports_mut()[0].set_fec_rates(FecRates {
                at: f.t0.into(),
                corrected_symbols: None,
                uncorrectable_blocks: per_s.map(f32::to_bits),
            });
        };
        ev.evaluate(&f.snap(0));
        assert!(eff(&ev.evaluate(&f.snap(1))).is_empty(), "no FEC rates yet");
        rates(&mut f, Some(1.0));
        assert_eq!(
            eff(&ev.evaluate(&f.snap(2))),
            vec![(Kind::ThresholdRising, 5000, 10)]
        );
        assert!(eff(&ev.evaluate(&f.snap(3))).is_empty(), "once");
        rates(&mut f, Some(0.0));
        assert_eq!(
            eff(&ev.evaluate(&f.snap(4))),
            vec![(Kind::ThresholdFalling, 0, 1)]
        );
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
            kinds(&Evaluation {
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
        for p in f.nodes[0].ports_mut() {
            p.link.width = Some(crate::ib::LinkWidth::X4);
            p.link.speed = Some(crate::ib::LinkSpeed::Sdr);
        }
        let rate_bps = f.nodes[0].ports().next().unwrap().link.rate_mbps().unwrap() * 1_000_000;
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
        f.nodes[0].ports_mut()[1].external_resets += 1;
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
        let count = |o: &Evaluation, k| o.events.iter().filter(|e| e.kind == k).count();
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

    /// An uncabled port keeps no samples; from the first time its link is
    /// up it does, and keeps them while it flaps (LinkDowned is watched).
    #[test]
    fn only_ports_whose_link_came_up_keep_samples() {
        let mut f = Fab::new(1, 3);
        f.nodes[0].ports_mut()[2].link.state = Some(PortState::Down);
        let mut ev = eval(0);
        for t in [0, 5, 10] {
            assert!(ev.evaluate(&f.snap(t)).events.is_empty());
        }
        assert_eq!(ev.nodes[0].samples.len(), 2);
        assert_eq!(ev.nodes[0].ports[2].samples, NO_SAMPLES);
        f.nodes[0].ports_mut()[2].link.state = Some(PortState::Active);
        let o = ev.evaluate(&f.snap(15));
        assert_eq!(kinds(&o), vec![(Kind::PortStateChange, 0x100, 3)]);
        assert_eq!(ev.nodes[0].samples.len(), 3);
        assert_eq!(ev.nodes[0].ports[2].samples, 2);
        for t in [20, 25] {
            assert!(ev.evaluate(&f.snap(t)).events.is_empty());
        }
        // Down, with the link-down count past its threshold: still watched.
        f.nodes[0].ports_mut()[2].link.state = Some(PortState::Down);
        f.add(0, 2, hc::slot("LinkDowned"), 11);
        let o = ev.evaluate(&f.snap(30));
        assert_eq!(
            kinds(&o),
            vec![
                (Kind::PortStateChange, 0x100, 3),
                (Kind::ThresholdRising, 0x100, 3)
            ]
        );
        assert_eq!(ev.nodes[0].samples.len(), 3);
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
        let n = ev.nodes[0].ports[0].kept;
        assert!(usize::from(n) <= MAX_SAMPLES, "{n}");
        // Sweeps every half window keep a sample each time: full before
        // the oldest one ages out.
        let mut f = Fab::new(1, 1);
        let mut ev = Evaluator::new(NotifyConfig {
            window: Duration::from_secs(10),
            limit_per_sweep: 0,
            rules: vec![],
        });
        for t in 0..50 {
            ev.evaluate(&f.snap(5 * t));
        }
        let p = &ev.nodes[0].ports[0];
        assert_eq!(usize::from(p.kept), MAX_SAMPLES);
        let set = ev.nodes[0].samples[usize::from(p.samples)].load(usize::from(p.kept), None);
        let at: Vec<u32> = p.kept(&set).iter().map(|s| s.at).collect();
        assert_eq!(at[1] - at[0], 5000);
        assert_eq!(at[2] - at[1], 5000);
    }

    /// The memory of the evaluator for a fabric shaped like
    /// scripts/bench-scale's (36-port switches, one-port HCAs, 3.6 ports a
    /// node; here 3.9), counted with what malloc adds to each block (8
    /// bytes, in blocks of 16), once the window has filled.
    #[test]
    fn memory_per_port_is_bounded() {
        fn block(bytes: usize) -> usize {
            (bytes + 8).div_ceil(16).max(2) * 16
        }
        let mut f = Fab::new(48, 36);
        for (i, n) in f.nodes.iter_mut().enumerate().skip(4) {
            n.id.node_type = NodeType::Ca;
            n.id.description = format!("node{i:05} HCA-1").into();
            let first = n.ports().next().cloned();
            *n = n.clone().with_ports(first.into_iter().collect());
        }
        let mut ev = eval(0);
        for t in 0..10 {
            ev.evaluate(&f.snap(5 * t));
        }
        let ports: usize = ev.nodes.iter().map(|n| n.ports.len()).sum();
        assert_eq!(ports, 4 * 36 + 44);
        assert!(
            ev.nodes
                .iter()
                .flat_map(|n| &n.ports[..])
                .all(|p| p.kept == 3)
        );
        let port_bytes = ports * (size_of::<PortMem>() + size_of::<Samples>());
        let node_bytes: usize = ev
            .nodes
            .iter()
            .map(|n| {
                size_of::<NodeMem>() + block(n.ports.len() * size_of::<PortMem>())
                    - n.ports.len() * size_of::<PortMem>()
                    + block(n.samples.len() * size_of::<Samples>())
                    - n.samples.len() * size_of::<Samples>()
            })
            .sum();
        let per_port = (port_bytes + node_bytes) / ports;
        // PortMem and its samples, and at most 48 bytes of its node's
        // share (the description is the snapshot's).
        assert!(
            per_port <= PORT_BYTES + SAMPLES_BYTES + 48,
            "{per_port} bytes per port"
        );
    }

    /// Samples give back what they were given: the error totals once when
    /// every kept sample has the same, else each one's, to be kept aside.
    #[test]
    fn samples_keep_their_error_totals_once_while_they_stand_still() {
        let sample = |at: u32, errors: u32| {
            let mut s = Sample {
                at,
                valid: 0b101,
                wide: [u64::from(at) << 33, 7],
                ..Default::default()
            };
            s.narrow[3] = errors;
            s
        };
        let mut kept = Samples::default();
        let still = [sample(1, 5), sample(2, 5), sample(3, 5)];
        for n in 0..=MAX_SAMPLES {
            assert_eq!(kept.store(&still, n), None);
            assert_eq!(kept.load(n, None)[..n], still[..n]);
        }
        let moved = [sample(1, 5), sample(2, 5), sample(3, 6)];
        let aside = kept.store(&moved, 3).expect("kept aside");
        assert_eq!(kept.load(3, Some(&aside)), moved);
        assert_eq!(kept.store(&moved, 2), None, "the first two are the same");
        assert_eq!(kept.load(2, None)[..2], moved[..2]);
    }

    /// A port whose errors move keeps its samples' error totals aside for
    /// as long as they differ, and its thresholds see the same increases.
    #[test]
    fn a_port_whose_errors_move_keeps_its_totals_aside_until_they_stand_still() {
        let mut f = Fab::new(2, 2);
        let mut ev = eval(0);
        for t in [0, 5, 10] {
            assert!(ev.evaluate(&f.snap(t)).events.is_empty());
        }
        assert!(ev.moving.is_empty(), "no error moved");
        f.add(0, 1, SYM, 4);
        ev.evaluate(&f.snap(15));
        f.add(0, 1, SYM, 8);
        let o = ev.evaluate(&f.snap(20));
        assert_eq!(ev.moving.len(), 1, "{:?}", ev.moving.keys());
        assert!(ev.moving.contains_key(&(Guid(0x100), 2)));
        // 12 errors over the window (10 s): SymbolErrors' rising threshold
        // (10) crossed.
        let rising: Vec<_> = o
            .events
            .iter()
            .filter(|e| e.kind == Kind::ThresholdRising)
            .map(|e| (e.counter, e.value, e.port))
            .collect();
        assert_eq!(rising, [("SymbolErrors", 12, 2)]);
        // Still for a window and a half: the samples agree again.
        for t in [25, 30, 35, 40] {
            ev.evaluate(&f.snap(t));
        }
        assert!(ev.moving.is_empty(), "{:?}", ev.moving.keys());
        assert!(ev.nodes[0].ports.iter().all(|p| p.flags & MOVING == 0));
    }

    /// Error totals are kept in their low 32 bits: an increase across a
    /// multiple of 2^32 is still the increase.
    #[test]
    fn error_totals_past_32_bits_give_their_increase() {
        let mut f = Fab::new(1, 1);
        f.add(0, 0, SYM, (7 << 32) - 3);
        let mut ev = eval(0);
        // First sight, then the first samples.
        for t in [0, 5, 10] {
            assert!(ev.evaluate(&f.snap(t)).events.is_empty());
        }
        f.add(0, 0, SYM, 12);
        let o = ev.evaluate(&f.snap(15));
        assert_eq!(kinds(&o), vec![(Kind::ThresholdRising, 0x100, 1)]);
        assert_eq!(o.events[0].value, 12, "across 2^32");
        // Nothing more: the falling event, at 0, once a window is clean.
        assert!(ev.evaluate(&f.snap(20)).events.is_empty());
        let o = ev.evaluate(&f.snap(25));
        assert_eq!(kinds(&o), vec![(Kind::ThresholdFalling, 0x100, 1)]);
        assert_eq!(o.events[0].value, 0);
    }

    /// XmitWait and octets are kept whole: 6e9 ticks in a window (past
    /// 2^32) and a 400 Gb/s link at 97% over a day.
    #[test]
    fn xmit_wait_and_utilization_past_32_bits() {
        let util = "Utilization".parse::<CounterName>().unwrap();
        let cong = "CongestedBandwidth".parse::<CounterName>().unwrap();
        let rule = |counter, rising| ThresholdRule {
            counter,
            rising: Some(rising),
            falling: Some(1000),
            node_type: None,
            node: None,
            ports: vec![],
        };
        let day = 86_400;
        let mut f = Fab::new(1, 1);
        let link = &mut f.nodes[0].ports_mut()[0].link;
        link.width = Some(crate::ib::LinkWidth::X4);
        link.speed = Some(crate::ib::LinkSpeed::Ndr);
        let rate_bps = link.rate_mbps().unwrap() * 1_000_000;
        assert_eq!(rate_bps, 400_000_000_000);
        let mut ev = Evaluator::new(NotifyConfig {
            window: Duration::from_secs(day),
            limit_per_sweep: 0,
            rules: vec![rule(util, 9000), rule(cong, 9000)],
        });
        let mut got = Vec::new();
        // First sight, the first sample, then a day at that rate.
        for t in 0..=3 {
            if t >= 2 {
                // Half a day: in 4-octet words, and 3e9 ticks.
                f.add(0, 0, hc::OUT_OCTETS, rate_bps / 8 * 97 / 100 * day / 2 / 4);
                f.add(0, 0, hc::XMIT_WAIT, 3_000_000_000);
            }
            got.extend(ev.evaluate(&f.snap(t * day / 2)).events);
        }
        let value = |name| got.iter().find(|e| e.counter == name).map(|e| e.value);
        assert_eq!(value("Utilization"), Some(9700));
        assert_eq!(value("XmitWait"), Some(6_000_000_000));
        // 6e9 ticks of 4 ns in a day: 0.03% of the time.
        assert_eq!(value("CongestedBandwidth"), None);
        assert_eq!(got.len(), 2, "{got:?}");
    }

    #[test]
    fn a_verdict_raised_and_cleared_is_one_notification_each_per_link() {
        use crate::ib::health::{Condition, Mark, PortVerdict, Verdicts};
        let mut f = Fab::new(2, 2);
        let mut ev = eval(0);
        ev.evaluate(&f.snap(0));
        let entry = |guid: u64, peer: u64, marked: bool| {
            let mut e = PortVerdict {
                guid: Guid(guid),
                port: 1,
                peer: Some((Guid(peer), 1)),
                ..Default::default()
            };
            if marked {
                e.marks[Condition::Flapping as usize] = Some(Mark::default());
                e.raised[Condition::Flapping as usize] = 2;
            }
            e
        };
        let mut s = f.snap(1);
        s.health = Arc::new(Verdicts {
            sweep: 1,
            ports: vec![entry(0x100, 0x101, true), entry(0x101, 0x100, true)].into(),
            ..Default::default()
        });
        let o = ev.evaluate(&s);
        assert_eq!(kinds(&o), vec![(Kind::PortUnhealthy, 0x100, 1)]);
        let e = &o.events[0];
        assert_eq!(e.condition, Some(Condition::Flapping));
        assert_eq!(e.value, 2, "raised twice");
        assert_eq!(e.peer.as_ref().unwrap().description, "sw1");
        let vbs = e.varbinds();
        assert_eq!(vbs.len(), 9);
        assert_eq!(
            vbs[7].value,
            crate::mib::Value::Integer(Condition::Flapping as i32 + 1)
        );
        // The same verdicts again: nothing.
        let mut s2 = f.snap(2);
        s2.health = Arc::clone(&s.health);
        assert!(ev.evaluate(&s2).events.is_empty());
        let mut s3 = f.snap(3);
        s3.health = Arc::new(Verdicts {
            sweep: 3,
            ports: vec![entry(0x100, 0x101, false), entry(0x101, 0x100, false)].into(),
            ..Default::default()
        });
        assert_eq!(
            kinds(&ev.evaluate(&s3)),
            vec![(Kind::PortHealthy, 0x100, 1)]
        );
    }
}
