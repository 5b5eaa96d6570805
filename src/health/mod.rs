//! Port health: a pure evaluator fed each published sweep (no clock, no
//! I/O: the time is passed in), turning the history of the sweeps into
//! verdicts per link ([`crate::ib::health`]): flapping, link lost,
//! unresponsive, erroring, degraded, congested, each cleared only after a
//! recovery window without it. The MIB, the notifications, the metrics,
//! the status page and `ibpm-agentx health` read its verdicts from the
//! snapshot ([`crate::fabric::cache::Snapshot::health`]).
//!
//! What it keeps per port is bounded ([`PORT_BYTES`], in one array of every
//! port's, with a node's [`NODE_BYTES`] beside): the last peer seen (its
//! node's index and its port),
//! the flaps of the flap window in eight 4-bit buckets, the low bits of
//! LinkDowned, a moving average of the congestion and a few flags; no
//! sample history. A port with a verdict, or one within `forget_after`,
//! has an entry of its own besides ([`crate::ib::health::PortVerdict`]).

pub mod events;
pub mod state;
pub mod watch;

use std::sync::Arc;
use std::time::Duration;

use crate::fabric::cache::Snapshot;
use crate::fabric::hc;
use crate::fabric::record::{NodeRecord, PortRecord};
use crate::ib::ber::Ber;
use crate::ib::health::{Ack, Condition, Mark, NodeVerdict, PortVerdict, Verdicts};
use crate::ib::last_peer::{FarPeers, NodeGuid, PeerRef, keep_peer, last_peer};
use crate::ib::xmit_wait::TickRule;
use crate::ib::{Guid, PhysState, PortState};
use crate::mib::rate::congestion_hundredths;
use crate::notify::rules::{self, ThresholdRule};

/// The error counters whose per-second rates make a link erroring, with
/// the rising thresholds the notifications use (per `[notify] window`):
/// the defaults of [`rules::thresholds`] as `[[notify.threshold]]` changes
/// them for the port ([`rules::resolve`]).
pub const ERROR_COUNTERS: [usize; 4] = [
    hc::Total::SymbolErrors.k(),
    hc::Total::LocalLinkIntegrityErrors.k(),
    hc::Total::RcvErrors.k(),
    hc::Total::XmitDiscards.k(),
];

/// What the evaluator is told, typed once by the configuration's
/// `[health]` section.
#[derive(Clone, Debug, PartialEq)]
pub struct HealthConfig {
    /// Flaps within [`HealthConfig::flap_window`] that make a link
    /// flapping.
    pub flap_count: u32,
    pub flap_window: Duration,
    /// Sweeps a node's PMA must miss of the last
    /// [`HealthConfig::unresponsive_of`] to be unresponsive.
    pub unresponsive_missed: u8,
    pub unresponsive_of: u8,
    /// How long a condition must stay absent before its verdict clears.
    pub recovery: Duration,
    /// How long a lost link is reported, and an entry without verdict
    /// kept.
    pub forget_after: Duration,
    /// The share of the time spent waiting to transmit, in hundredths of
    /// a percent, above which (on average over
    /// [`HealthConfig::congestion_window`]) a link is congested.
    pub congestion_hundredths: u32,
    pub congestion_window: Duration,
    /// The window the error thresholds count over (`[notify] window`).
    pub threshold_window: Duration,
    /// `[[notify.threshold]]`: the rules the notifications resolve their
    /// thresholds by, so that a verdict and a trap never disagree.
    pub thresholds: Vec<ThresholdRule>,
}

impl Default for HealthConfig {
    fn default() -> Self {
        HealthConfig {
            flap_count: 3,
            flap_window: Duration::from_secs(600),
            unresponsive_missed: 5,
            unresponsive_of: 7,
            recovery: Duration::from_secs(900),
            forget_after: Duration::from_secs(86_400),
            congestion_hundredths: 1000,
            congestion_window: Duration::from_secs(600),
            threshold_window: Duration::from_secs(60),
            thresholds: Vec::new(),
        }
    }
}

/// Flap buckets of the flap window: its eighths, 4 bits each.
const BUCKETS: u64 = 8;
/// Most flaps a bucket counts (a 4-bit count saturates).
pub const MAX_FLAP_COUNT: u32 = 15 * BUCKETS as u32;
/// Most sweeps the unresponsive window counts.
pub const MAX_UNRESPONSIVE_OF: u8 = 32;

/// [`PortMem::flags`]: the port was seen.
const SEEN: u8 = 1;
/// The port was Active since the start (or the state file says so).
const EVER_ACTIVE: u8 = 2;
/// The port was Active at the last evaluation.
const ACTIVE: u8 = 4;
/// A LinkDowned rise was counted as a flap since the port left Active.
const LEFT_COUNTED: u8 = 8;
/// [`PortMem::link_downed`] holds a reading.
const HAS_LINK_DOWNED: u8 = 16;
/// The state file's flag: the port has a last peer (kept in
/// [`PortMem::peer`], not in [`PortMem::flags`]).
const HAS_PEER: u8 = 32;

/// One port's state: no allocation of its own, in one array of every
/// port's ([`Evaluator::ports`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PortMem {
    /// Flaps per eighth of the flap window, the newest in the low nibble.
    flaps: u32,
    /// LinkDowned modulo 2^16 (it moves by a few between two sweeps).
    link_downed: u16,
    /// The moving average of the congestion, in hundredths of a percent.
    congestion: u16,
    num: u8,
    flags: u8,
    /// The last peer: its node's index in [`Evaluator::nodes`], or in
    /// [`Evaluator::far`].
    peer: PeerRef,
}

/// The bytes one port's state takes.
pub const PORT_BYTES: usize = 16;
const _: () = assert!(size_of::<PortMem>() <= PORT_BYTES);

impl PortMem {
    fn new(num: u8) -> PortMem {
        PortMem {
            num,
            ..Default::default()
        }
    }

    fn flaps_in_window(&self) -> u32 {
        (0..BUCKETS).map(|i| (self.flaps >> (4 * i)) & 0xf).sum()
    }

    fn add_flaps(&mut self, n: u32) {
        let b = (self.flaps & 0xf).saturating_add(n).min(15);
        self.flaps = (self.flaps & !0xf) | b;
    }
}

impl NodeGuid for NodeMem {
    fn node_guid(&self) -> Guid {
        self.guid
    }
}

/// The time of an evaluation as the two clocks read it together:
/// milliseconds of the monotonic clock (from any origin) and of the wall
/// clock (since the UNIX epoch).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct At {
    pub mono_ms: u64,
    pub wall_ms: u64,
}

impl At {
    /// Both clocks at `ms` (a test's virtual time).
    pub fn both(ms: u64) -> At {
        At {
            mono_ms: ms,
            wall_ms: ms,
        }
    }
}

/// One node's state; its ports are the next `len` entries of
/// [`Evaluator::ports`] after the previous nodes' (walked in order: no
/// start is kept).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct NodeMem {
    guid: Guid,
    /// Bit i: the PMA missed the sweep i evaluations ago.
    misses: u32,
    len: u8,
    /// Sweeps counted in `misses` (at most the window).
    counted: u8,
}

/// The bytes one node's state takes.
pub const NODE_BYTES: usize = 16;
const _: () = assert!(size_of::<NodeMem>() <= NODE_BYTES);

/// What makes a port erroring: a rate per second per [`ERROR_COUNTERS`]
/// entry (None: not watched), and the two BERs (None: not watched).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Limits {
    rates: [Option<f64>; ERROR_COUNTERS.len()],
    symbol_ber: Option<Ber>,
    effective_ber: Option<Ber>,
}

impl Limits {
    /// The limits of one port's resolved (rising, falling) thresholds
    /// ([`rules::resolve`]), over a window of `secs`.
    fn of(resolved: &[(u64, u64)], secs: f64) -> Limits {
        let rising = |i: Option<usize>| i.map_or(0, |i| resolved[i].0);
        let by_name = |name: &str| rules::thresholds().iter().position(|d| d.name == name);
        let ber = |name| Some(rising(by_name(name))).filter(|t| *t > 0);
        Limits {
            rates: ERROR_COUNTERS.map(|k| {
                Some(rising(rules::threshold_of(k)))
                    .filter(|t| *t > 0)
                    .map(|t| t as f64 / secs)
            }),
            symbol_ber: ber("SymbolBER").map(Ber::from_per_1e15),
            effective_ber: ber("EffectiveBER").map(Ber::from_per_1e15),
        }
    }
}

/// The evaluator: what it keeps between sweeps.
pub struct Evaluator {
    cfg: HealthConfig,
    /// The limits of a port no `[[notify.threshold]]` rule changes,
    /// resolved once.
    limits: Limits,
    /// Ordered by GUID, as a snapshot's nodes.
    nodes: Vec<NodeMem>,
    ports: Vec<PortMem>,
    /// The last peers of ports whose peer's node is not in `nodes`.
    far: FarPeers,
    /// The verdict entries, shared with the verdicts last published.
    entries: Arc<[PortVerdict]>,
    node_entries: Arc<[NodeVerdict]>,
    last_sweep: Option<u64>,
    /// The flap bucket the newest nibbles stand for.
    bucket: Option<u64>,
    /// When the last sweep was evaluated.
    last_at: Option<u64>,
    /// The timeline's origin: (monotonic, wall) milliseconds at the first
    /// evaluation. Every window runs on the timeline, which is the wall
    /// clock as it read then, moved on by the monotonic clock since: a
    /// step of the wall clock moves no window.
    anchor: Option<(u64, u64)>,
    /// The wall clock minus the timeline at the last evaluation, in
    /// milliseconds: how a time of the timeline is shown and saved.
    offset: i64,
}

/// One port's evaluation, before the link's ends are joined.
struct Seen {
    key: (Guid, u8),
    peer: Option<(Guid, u8)>,
    /// The conditions observed.
    mask: u8,
    /// Flaps counted now.
    flaps: u32,
}

/// What the evaluation of one port moves on with.
struct PortStep {
    shift: u32,
    since_last: u64,
}

impl Evaluator {
    pub fn new(cfg: HealthConfig) -> Evaluator {
        let defaults: Vec<(u64, u64)> = rules::thresholds()
            .iter()
            .map(|d| (d.rising, d.falling))
            .collect();
        let limits = Limits::of(&defaults, cfg.threshold_window.as_secs_f64().max(1.0));
        Evaluator {
            cfg,
            limits,
            nodes: Vec::new(),
            ports: Vec::new(),
            far: FarPeers::new(),
            entries: Arc::new([]),
            node_entries: Arc::new([]),
            last_sweep: None,
            bucket: None,
            last_at: None,
            anchor: None,
            offset: 0,
        }
    }

    pub fn config(&self) -> &HealthConfig {
        &self.cfg
    }

    /// The bytes the evaluator holds for the ports it tracks (their state
    /// and their nodes'), not counting verdict entries.
    pub fn port_bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<NodeMem>() + self.ports.capacity() * size_of::<PortMem>()
    }

    /// The ports tracked.
    pub fn ports(&self) -> usize {
        self.ports.len()
    }

    /// The snapshot has the nodes the evaluator keeps, in the same order,
    /// each with the same ports: its state can be moved on in place.
    fn same_layout(&self, snap: &Snapshot) -> bool {
        self.nodes.len() == snap.nodes.len()
            && self.spans().zip(&snap.nodes).all(|((m, mine), node)| {
                let len = node.port_count().min(usize::from(u8::MAX));
                m.guid == node.id.guid
                    && usize::from(m.len) == len
                    && mine.len() == len
                    && mine.iter().zip(node.ports()).all(|(m, p)| m.num == p.num())
            })
    }

    /// Lay the state out as `snap` has its nodes and ports, each node
    /// keeping its state by GUID and each port by number (rediscovery may
    /// change a node's ports); a new one starts afresh.
    fn lay_out(&mut self, snap: &Snapshot) {
        let total: usize = snap.nodes.iter().map(|n| n.port_count()).sum();
        let mut nodes: Vec<NodeMem> = Vec::with_capacity(snap.nodes.len());
        let mut ports: Vec<PortMem> = Vec::with_capacity(total);
        // The old nodes with their ports, walked along the new ones.
        let mut old = self.spans().peekable();
        for node in &snap.nodes {
            let guid = node.id.guid;
            while old.next_if(|(m, _)| m.guid < guid).is_some() {}
            let (prev, before) = match old.next_if(|(m, _)| m.guid == guid) {
                Some((m, b)) => (Some(*m), b),
                None => (None, &[][..]),
            };
            let len = node.port_count().min(usize::from(u8::MAX));
            nodes.push(NodeMem {
                guid,
                len: len as u8,
                ..prev.unwrap_or_default()
            });
            let same = before.len() == len
                && before
                    .iter()
                    .zip(node.ports())
                    .all(|(m, p)| m.num == p.num());
            for (i, p) in node.ports().take(len).enumerate() {
                ports.push(if same {
                    before[i]
                } else {
                    before
                        .iter()
                        .find(|m| m.num == p.num())
                        .copied()
                        .unwrap_or(PortMem::new(p.num()))
                });
            }
        }
        drop(old);
        // The peers kept are of the old nodes' indexes: taken to the new
        // ones' (or aside, for a node no longer laid out).
        let mut far = FarPeers::new();
        let mut start = 0;
        for n in &nodes {
            for m in &mut ports[start..start + usize::from(n.len)] {
                let own = (n.guid, m.num);
                if let Some(peer) = last_peer(&self.nodes, &self.far, own, m.peer) {
                    m.peer.clear();
                    keep_peer(&nodes, &mut far, own, &mut m.peer, peer);
                }
            }
            start += usize::from(n.len);
        }
        self.nodes = nodes;
        self.ports = ports;
        self.far = far;
    }

    /// Each node with its ports, in order.
    fn spans(&self) -> impl Iterator<Item = (&NodeMem, &[PortMem])> {
        let mut start = 0;
        self.nodes.iter().map(move |n| {
            let end = start + usize::from(n.len);
            let ports = self.ports.get(start..end).unwrap_or_default();
            start = end;
            (n, ports)
        })
    }

    /// Port `own`'s last peer.
    fn peer(&self, own: (Guid, u8), m: &PortMem) -> Option<(Guid, u8)> {
        last_peer(&self.nodes, &self.far, own, m.peer)
    }

    /// The time of the timeline at `at` (milliseconds): the wall clock
    /// of the first evaluation, moved on by the monotonic clock since.
    /// Keeps [`Evaluator::offset`] for the times shown and saved.
    fn timeline(&mut self, at: At) -> u64 {
        let (mono0, wall0) = *self.anchor.get_or_insert((at.mono_ms, at.wall_ms));
        let now = wall0.saturating_add(at.mono_ms.saturating_sub(mono0));
        self.offset = at.wall_ms as i64 - now as i64;
        now
    }

    /// Evaluate a published snapshot at `at`, taking in the operators'
    /// acknowledgements first. The windows run on monotonic time (the
    /// timeline); the verdicts' times are of the timeline, shown through
    /// [`Verdicts::wall`]. A snapshot of a sweep already evaluated (or of
    /// no sweep yet) changes nothing and gives None.
    pub fn evaluate(&mut self, snap: &Snapshot, at: At, acks: &[Ack]) -> Option<Verdicts> {
        let now = self.timeline(at);
        for a in acks {
            self.take_ack(*a);
        }
        if snap.sweep == 0 || self.last_sweep == Some(snap.sweep) {
            return (!acks.is_empty()).then(|| self.verdicts(at));
        }
        self.last_sweep = Some(snap.sweep);
        let step = PortStep {
            shift: self.rotate(now),
            since_last: self.last_at.map_or(0, |t| now.saturating_sub(t)),
        };
        self.last_at = Some(now);
        // The agent's own trouble (its port, the SM) is no node's fault:
        // judged per subnet (a dead plane is the plane's condition,
        // [`crate::ib::subnet::SweepState`]), or over the whole snapshot
        // when it says nothing of subnets.
        let swept = snap.swept_subnets();
        let fabric_answered = swept.is_some() || {
            let missed_nodes = snap.nodes.iter().filter(|n| n.failed_sweeps > 0).count();
            missed_nodes * 2 <= snap.nodes.len()
        };
        let window = (1u64 << self.cfg.unresponsive_of.min(MAX_UNRESPONSIVE_OF)) - 1;
        let mut seen: Vec<Seen> = Vec::new();
        let mut misses: Vec<(Guid, u8, u8)> = Vec::new();
        // The state laid out as the snapshot has its nodes and ports: as
        // it was, but after a rediscovery changed them. Each sweep then
        // moves it on in place, so no second copy of it is made.
        if !self.same_layout(snap) {
            self.lay_out(snap);
        }
        for (node, mem) in snap.nodes.iter().zip(self.nodes.iter_mut()) {
            if fabric_answered && !Snapshot::node_unswept(swept, node) {
                let missed = u32::from(node.failed_sweeps > 0);
                mem.misses = (((u64::from(mem.misses) << 1) | u64::from(missed)) & window) as u32;
                mem.counted = mem.counted.saturating_add(1).min(self.cfg.unresponsive_of);
                misses.push((node.id.guid, mem.misses.count_ones() as u8, mem.counted));
            }
        }
        let (mut ports, mut far) = (
            std::mem::take(&mut self.ports),
            std::mem::take(&mut self.far),
        );
        let mut start = 0;
        for (node, mem) in snap.nodes.iter().zip(&self.nodes) {
            let rule = node.tick_rule();
            let mine = &mut ports[start..start + usize::from(mem.len)];
            start += usize::from(mem.len);
            for (m, p) in mine.iter_mut().zip(node.ports()) {
                if node.reachable {
                    seen.extend(self.port(node, m, &mut far, p, &rule, &step));
                } else {
                    m.flaps = shifted(m.flaps, step.shift);
                }
            }
        }
        self.ports = ports;
        self.far = far;
        self.nodes_seen(&misses, now, |g| snap.node(g).is_some());
        self.join(seen, now);
        Some(self.verdicts(at))
    }

    /// Move the flap buckets on to `now`'s: the shift of every port's
    /// nibbles, in bits.
    fn rotate(&mut self, now: u64) -> u32 {
        let width = (self.cfg.flap_window.as_millis() as u64 / BUCKETS).max(1);
        let b = now / width;
        let shift = match self.bucket {
            Some(prev) if b > prev => ((b - prev).min(BUCKETS) * 4) as u32,
            _ => 0,
        };
        self.bucket = Some(b);
        shift
    }

    /// The nodes' unresponsive verdicts after their windows moved:
    /// `misses` (GUID, sweeps missed, sweeps counted) in GUID order. A
    /// verdict of a node the fabric does not have (`present` says no: gone,
    /// or a state file of another fabric) is seen no more, so it clears
    /// after the recovery window; one of a node the fabric has but did not
    /// judge this time (its subnet not swept) is held as it is.
    fn nodes_seen(&mut self, misses: &[(Guid, u8, u8)], now: u64, present: impl Fn(Guid) -> bool) {
        let recovery = self.cfg.recovery.as_millis() as u64;
        let forget = self.cfg.forget_after.as_millis() as u64;
        let mut out: Vec<NodeVerdict> = Vec::with_capacity(self.node_entries.len());
        let mut old = self.node_entries.iter().peekable();
        let mut take_old_before = |guid: Option<Guid>, out: &mut Vec<NodeVerdict>| {
            while let Some(e) = old.next_if(|e| guid.is_none_or(|g| e.guid < g)) {
                let mut e = *e;
                if !present(e.guid) && step_mark(&mut e.unresponsive, false, now, recovery) {
                    e.last_change = now;
                }
                out.push(e);
            }
            guid.and_then(|g| old.next_if(|e| e.guid == g).copied())
        };
        for &(guid, missed, of) in misses {
            let prev = take_old_before(Some(guid), &mut out);
            if missed == 0 && prev.is_none() {
                continue;
            }
            let mut e = prev.unwrap_or(NodeVerdict {
                guid,
                last_change: now,
                ..Default::default()
            });
            (e.missed, e.of) = (missed, of);
            if missed > 0 {
                e.last_change = now;
            }
            let holds = missed >= self.cfg.unresponsive_missed;
            if step_mark(&mut e.unresponsive, holds, now, recovery) {
                e.last_change = now;
                if holds {
                    e.raised += 1;
                }
            }
            out.push(e);
        }
        take_old_before(None, &mut out);
        out.retain(|e| e.unresponsive.is_some() || now.saturating_sub(e.last_change) < forget);
        self.node_entries = out.into();
    }

    /// One port of a reachable node: its state moved on, and what it shows
    /// now. None when nothing is to be said of it.
    fn port(
        &self,
        node: &NodeRecord,
        m: &mut PortMem,
        far: &mut FarPeers,
        p: &PortRecord,
        rule: &TickRule,
        step: &PortStep,
    ) -> Option<Seen> {
        let key = (node.id.guid, p.num());
        m.flaps = shifted(m.flaps, step.shift);
        let l = &p.link;
        let active = l.state == Some(PortState::Active);
        let was_active = m.flags & ACTIVE != 0;
        let seen_before = m.flags & SEEN != 0;
        m.flags |= SEEN;
        if let Some(peer) = l.remote() {
            keep_peer(&self.nodes, far, key, &mut m.peer, peer);
        }
        // Flaps: LinkDowned rising (a flap faster than a sweep too), or
        // the port seen leaving Active and coming back; one flap is not
        // counted twice.
        let mut flaps = 0;
        if let Some(ld) = p.hc.shown(hc::Total::LinkDowned.k()) {
            let ld = ld as u16;
            if m.flags & HAS_LINK_DOWNED != 0 {
                let d = ld.wrapping_sub(m.link_downed);
                if d < 0x8000 {
                    flaps += u32::from(d);
                }
            }
            m.link_downed = ld;
            m.flags |= HAS_LINK_DOWNED;
        }
        if flaps > 0 && !active {
            m.flags |= LEFT_COUNTED;
        }
        if active && !was_active && seen_before && m.flags & EVER_ACTIVE != 0 {
            if m.flags & LEFT_COUNTED == 0 && flaps == 0 {
                flaps = 1;
            }
            m.flags &= !LEFT_COUNTED;
        }
        if active {
            m.flags |= ACTIVE | EVER_ACTIVE;
        } else {
            m.flags &= !ACTIVE;
        }
        m.add_flaps(flaps);
        let mut mask = 0;
        if m.flaps_in_window() >= self.cfg.flap_count {
            mask |= Condition::Flapping.bit();
        }
        let down = l.state == Some(PortState::Down) && l.phys_state != Some(PhysState::Disabled);
        if down && m.flags & EVER_ACTIVE != 0 {
            mask |= Condition::LinkLost.bit();
        }
        if active {
            if self.erroring(node, p) {
                mask |= Condition::Erroring.bit();
            }
            if p.assessment.health.is_some_and(|h| h.is_degraded()) {
                mask |= Condition::Degraded.bit();
            }
            let now = p
                .congestion(rule)
                .map_or(0, |r| congestion_hundredths(r).min(10_000) as u16);
            let alpha = if step.since_last == 0 {
                1.0
            } else {
                let window = self.cfg.congestion_window.as_millis().max(1) as f64;
                (step.since_last as f64 / window).min(1.0)
            };
            let avg = f64::from(m.congestion) + (f64::from(now) - f64::from(m.congestion)) * alpha;
            m.congestion = avg.round().clamp(0.0, 10_000.0) as u16;
            if u32::from(m.congestion) >= self.cfg.congestion_hundredths {
                mask |= Condition::Congested.bit();
            }
        } else {
            m.congestion = 0;
        }
        (mask != 0 || flaps > 0).then(|| Seen {
            key,
            peer: last_peer(&self.nodes, far, key, m.peer),
            mask,
            flaps,
        })
    }

    /// Error rates over their thresholds, or a BER over its own: the
    /// thresholds the notifications resolve for the port.
    fn erroring(&self, node: &NodeRecord, p: &PortRecord) -> bool {
        let rates = ERROR_COUNTERS.map(|k| p.rates.get(k).filter(|r| *r > 0.0));
        let symbol = p.symbol_ber().filter(|b| b.0 > 0.0);
        let effective = p.effective_ber().filter(|b| b.0 > 0.0);
        if rates.iter().all(Option::is_none) && symbol.is_none() && effective.is_none() {
            // No error: no threshold of any rule is crossed.
            return false;
        }
        let resolved;
        let limits = if self.cfg.thresholds.is_empty() {
            &self.limits
        } else {
            let id = &node.id;
            let r = rules::resolve(
                &self.cfg.thresholds,
                id.guid,
                &id.description,
                id.node_type,
                p.num(),
            );
            resolved = Limits::of(&r, self.cfg.threshold_window.as_secs_f64().max(1.0));
            &resolved
        };
        let over_rate = rates
            .iter()
            .zip(limits.rates)
            .any(|(r, t)| r.zip(t).is_some_and(|(r, t)| r >= t));
        let over = |b: Option<Ber>, t: Option<Ber>| b.zip(t).is_some_and(|(b, t)| b.0 > t.0);
        over_rate || over(symbol, limits.symbol_ber) || over(effective, limits.effective_ber)
    }

    /// Join the link's ends (each carries the other's conditions), and
    /// move every entry on to `now`.
    fn join(&mut self, seen: Vec<Seen>, now: u64) {
        // The ports seen, and the far ends of those with a condition, in
        // key order.
        let mut observed = seen;
        let far: Vec<Seen> = observed
            .iter()
            .filter(|s| s.mask != 0)
            .filter_map(|s| {
                Some(Seen {
                    key: s.peer?,
                    peer: Some(s.key),
                    mask: s.mask,
                    flaps: 0,
                })
            })
            .collect();
        observed.extend(far);
        observed.sort_unstable_by_key(|o| o.key);
        let recovery = self.cfg.recovery.as_millis() as u64;
        let forget = self.cfg.forget_after.as_millis() as u64;
        let mut out: Vec<PortVerdict> = Vec::with_capacity(self.entries.len());
        let mut forgotten = Vec::new();
        let mut old = self.entries.iter().peekable();
        let mut obs = observed.chunk_by(|a, b| a.key == b.key).peekable();
        loop {
            let next_old = old.peek().map(|e| (e.guid, e.port));
            let next_obs = obs.peek().map(|run| run[0].key);
            let key = match (next_old, next_obs) {
                (None, None) => break,
                (Some(a), None) => a,
                (None, Some(b)) => b,
                (Some(a), Some(b)) => a.min(b),
            };
            let mut e = old
                .next_if(|e| (e.guid, e.port) == key)
                .cloned()
                .unwrap_or_else(|| PortVerdict {
                    guid: key.0,
                    port: key.1,
                    last_change: now,
                    ..Default::default()
                });
            let mut mask = 0;
            if let Some(run) = obs.next_if(|run| run[0].key == key) {
                let flaps: u32 = run.iter().map(|o| o.flaps).sum();
                mask = run.iter().fold(0, |m, o| m | o.mask);
                // The peer as the port saw it (or as its far end did).
                if let Some(peer) = run.iter().find_map(|o| o.peer) {
                    e.peer = Some(peer);
                }
                if flaps > 0 {
                    e.flaps += u64::from(flaps);
                    e.last_flap = Some(now);
                    e.last_change = now;
                }
            }
            for c in Condition::ALL {
                let i = c as usize;
                let holds = mask & c.bit() != 0;
                if step_mark(&mut e.marks[i], holds, now, recovery) {
                    e.last_change = now;
                    if holds {
                        e.raised[i] += 1;
                    }
                }
            }
            // A lost link is reported for forget_after at most.
            let lost = Condition::LinkLost as usize;
            if e.marks[lost].is_some_and(|m| now.saturating_sub(m.since) >= forget) {
                e.marks[lost] = None;
                e.last_change = now;
                forgotten.push(key);
            }
            if e.is_unhealthy() || now.saturating_sub(e.last_change) < forget {
                out.push(e);
            }
        }
        // A link lost past forget_after is no longer looked for: its
        // ports are as if never Active. (Where each node's ports start,
        // counted once for all of them.)
        let starts: Vec<usize> = if forgotten.is_empty() {
            Vec::new()
        } else {
            self.nodes
                .iter()
                .scan(0, |at, n| {
                    let start = *at;
                    *at += usize::from(n.len);
                    Some(start)
                })
                .collect()
        };
        for (guid, num) in forgotten {
            if let Ok(i) = self.nodes.binary_search_by_key(&guid, |n| n.guid) {
                let n = self.nodes[i];
                let start = starts[i];
                let ports = self
                    .ports
                    .get_mut(start..start + usize::from(n.len))
                    .unwrap_or_default();
                if let Some(m) = ports.iter_mut().find(|m| m.num == num) {
                    m.flags &= !EVER_ACTIVE;
                }
            }
        }
        self.entries = out.into();
    }

    /// An operator's acknowledgement: the marks of the link's both ends
    /// (and, for unresponsive, of the node) go ([`Ack::apply`]).
    fn take_ack(&mut self, a: Ack) {
        a.apply(&mut self.entries, &mut self.node_entries);
    }

    /// The published form of what the evaluator holds (its entries
    /// shared, not copied); its driver fills in how long it took.
    fn verdicts(&self, at: At) -> Verdicts {
        Verdicts {
            sweep: self.last_sweep.unwrap_or(0),
            at: at.wall_ms,
            wall_offset_ms: self.offset,
            took_us: 0,
            ports: Arc::clone(&self.entries),
            nodes: Arc::clone(&self.node_entries),
        }
    }
}

/// Move a verdict on: raised when its condition holds and none stands,
/// kept while it holds or within `recovery` of the last time it did,
/// cleared after. True when it was raised or cleared.
fn step_mark(mark: &mut Option<Mark>, holds: bool, now: u64, recovery: u64) -> bool {
    match (mark.as_mut(), holds) {
        (Some(m), true) => {
            m.last_seen = now;
            m.holding = true;
            false
        }
        (None, true) => {
            *mark = Some(Mark::holding(now, now));
            true
        }
        (Some(m), false) => {
            m.holding = false;
            let over = now.saturating_sub(m.last_seen) >= recovery;
            if over {
                *mark = None;
            }
            over
        }
        (None, false) => false,
    }
}

/// `flaps` with its buckets moved on by `shift` bits (older ones fall
/// out).
fn shifted(flaps: u32, shift: u32) -> u32 {
    flaps.checked_shl(shift).unwrap_or(0)
}

#[cfg(test)]
mod tests;
