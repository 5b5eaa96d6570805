//! What the agent has learned about each node, shared by the sweeper and the
//! write path, and turned into snapshots for the cache.
//!
//! Every reading carries the time its request (or its batch) was sent; a
//! reading older than the one already held for the same port or attribute is
//! dropped, so a sweep reply that was in flight while a write changed the
//! node cannot bring back the value from before the write.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

use super::cache::SweepFigures;
use super::engine::MadOutcome;
use super::fold;
use super::hc;
use super::persist::SavedPort;
use super::record::{NodeRecord, PortRecord, Readings, Stamp};
use super::settings::SweepConfig;
use super::strikes::{
    AttrMask, KIND_VERDICT, KindKey, KindState, NodeHealth, RETRY_UNANSWERED_SWEEPS, attr_list,
};
use crate::ib::{Fabric, Node};
use crate::pm::class_port_info::WideCounters;
use crate::pm::mad::status::REDIRECT as STATUS_REDIRECT;
use crate::pm::optional::OPTIONAL_ATTRS;
use crate::pm::samples::PortSamplesResultExtended;
use crate::pm::{
    ClassPortInfo, PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult,
};
use crate::transport::MadAddr;

/// A sweep that copied node records holding this many port records (it
/// changed records the published snapshot shares; a switch of 64 ports
/// counts 64), or a 32nd of the fabric's ports when that is more,
/// publishes what it has: the copies then replace the records they were
/// made from instead of adding to them, and a sweep holds two versions of
/// a bounded share of the ports at most (at 48,000 nodes a publication
/// takes 2 - 6 ms, and so does the heap trim the sweeper makes after it:
/// about 32 of each a sweep).
pub(super) const PUBLISH_AFTER_PORTS: usize = 4096;

pub(crate) struct NodeState {
    /// The PMA's address after a ClassPortInfo redirect.
    pub(crate) redirect: Option<Box<MadAddr>>,
    /// ClassPortInfo is asked at the next sweep (none read yet, or the
    /// node came back): the record's reading is not to be relied on.
    pub(crate) cpi_stale: bool,
    pub(crate) failed_sweeps: u32,
    /// Ever answered anything (a node that never did has no rows).
    pub(super) seen: bool,
    /// What it answers of the sample mechanism and the optional
    /// attributes, and what not.
    pub(crate) health: NodeHealth,
    samples_at: Option<Stamp>,
    /// Bits of the health's `optional_unsupported` already said in the
    /// log.
    optional_reported: AttrMask,
    /// The node's index into [`FabricState::kinds`].
    pub(crate) kind: u32,
    /// Some port is served by DOCA telemetry diag.
    pub(super) doca: bool,
    /// DOCA delivered a sample since the last sweep ended.
    doca_fresh: bool,
    /// The node's record, shared with the published snapshot: its ports
    /// are updated in place (copied first when the snapshot shares it);
    /// the node's own fields are brought up to date when it is published.
    pub(super) rec: Arc<NodeRecord>,
    /// A field the record takes from this state changed since.
    pub(super) dirty: bool,
}

/// Which reading a reply is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Cpi(usize),
    /// (node index, index into the node's ports)
    Counters(usize, usize),
    Extended(usize, usize),
    SamplesControl(usize),
    SamplesResult(usize),
    SamplesResultExt(usize),
    /// (node, port index, index into [`OPTIONAL_ATTRS`])
    Optional(usize, usize, usize),
}

/// A [`Slot`] in 8 bytes (a sweep's batch holds one per MAD, millions
/// with the optional attributes): node index, port index, attribute index
/// and the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedSlot {
    node: u32,
    port: u8,
    attr: u8,
    kind: u8,
}

impl From<Slot> for PackedSlot {
    fn from(s: Slot) -> PackedSlot {
        // Node indices fit 32 bits (a subnet has at most 49,151 LIDs),
        // port indices 8 (at most 255 ports and port 0), attribute
        // indices 8 (OPTIONAL_ATTRS).
        let (kind, node, port, attr) = match s {
            Slot::Cpi(n) => (0, n, 0, 0),
            Slot::Counters(n, p) => (1, n, p, 0),
            Slot::Extended(n, p) => (2, n, p, 0),
            Slot::SamplesControl(n) => (3, n, 0, 0),
            Slot::SamplesResult(n) => (4, n, 0, 0),
            Slot::SamplesResultExt(n) => (5, n, 0, 0),
            Slot::Optional(n, p, k) => (6, n, p, k),
        };
        PackedSlot {
            node: node as u32,
            port: port as u8,
            attr: attr as u8,
            kind,
        }
    }
}

impl From<PackedSlot> for Slot {
    fn from(p: PackedSlot) -> Slot {
        let (n, pi, k) = (p.node as usize, usize::from(p.port), usize::from(p.attr));
        match p.kind {
            0 => Slot::Cpi(n),
            1 => Slot::Counters(n, pi),
            2 => Slot::Extended(n, pi),
            3 => Slot::SamplesControl(n),
            4 => Slot::SamplesResult(n),
            5 => Slot::SamplesResultExt(n),
            _ => Slot::Optional(n, pi, k),
        }
    }
}

const _: () = assert!(size_of::<PackedSlot>() == 8);
const _: () = assert!(OPTIONAL_ATTRS.len() <= 256);

impl Slot {
    pub fn node(self) -> usize {
        match self {
            Slot::Cpi(n)
            | Slot::Counters(n, _)
            | Slot::Extended(n, _)
            | Slot::SamplesControl(n)
            | Slot::SamplesResult(n)
            | Slot::SamplesResultExt(n)
            | Slot::Optional(n, _, _) => n,
        }
    }

    /// The PM attribute the slot's request reads (`None` for an optional
    /// attribute index past [`OPTIONAL_ATTRS`]).
    pub fn attr_id(self) -> Option<u16> {
        use crate::pm::mad::attr;
        Some(match self {
            Slot::Cpi(_) => attr::CLASS_PORT_INFO,
            Slot::Counters(..) => attr::PORT_COUNTERS,
            Slot::Extended(..) => attr::PORT_COUNTERS_EXTENDED,
            Slot::SamplesControl(_) => attr::PORT_SAMPLES_CONTROL,
            Slot::SamplesResult(_) => attr::PORT_SAMPLES_RESULT,
            Slot::SamplesResultExt(_) => attr::PORT_SAMPLES_RESULT_EXTENDED,
            Slot::Optional(_, _, k) => *OPTIONAL_ATTRS.get(k)?,
        })
    }
}

pub struct FabricState {
    pub(crate) cfg: SweepConfig,
    /// Each node by its index, which it keeps for as long as the agent
    /// runs (a merge appends the nodes it finds new), so that a write or
    /// a sample poll in flight across a merge lands on its node. Its
    /// record holds the node's identity and link facts: the fabric model.
    pub(crate) nodes: Vec<NodeState>,
    /// The node indexes in GUID order.
    pub(super) by_guid: Vec<u32>,
    pub(crate) sweep_no: u64,
    /// The last sweep's figures, published with each snapshot.
    pub(crate) figures: SweepFigures,
    /// A newly discovered fabric, merged by the sweeper between sweeps.
    pub(crate) pending: Option<Fabric>,
    /// Port records in the node records copied since the last
    /// publication.
    pub(super) copies: usize,
    /// How many make a publication due ([`PUBLISH_AFTER_PORTS`]).
    pub(super) copy_budget: usize,
    /// The per-node readings, shared between nodes that answer the same.
    pub(crate) readings: Readings,
    /// What each kind of node showed ([`NodeState::kind`] indexes it).
    pub(crate) kinds: Vec<(KindKey, KindState)>,
}

impl NodeState {
    pub(super) fn new(node: &Node) -> NodeState {
        NodeState {
            redirect: None,
            cpi_stale: true,
            failed_sweeps: 0,
            seen: false,
            health: NodeHealth::default(),
            samples_at: None,
            optional_reported: 0,
            kind: 0,
            doca: false,
            doca_fresh: false,
            rec: Arc::new(NodeRecord::new(node)),
            dirty: true,
        }
    }

    /// The ClassPortInfo read from the node, unless it is to be asked
    /// again.
    pub(crate) fn cpi(&self) -> Option<&ClassPortInfo> {
        if self.cpi_stale {
            return None;
        }
        self.rec.class_port_info.as_deref()
    }

    /// The node's record, to change (copied first when the published
    /// snapshot shares it, counted in `copies`).
    fn rec_mut(&mut self, copies: &mut usize) -> &mut NodeRecord {
        if Arc::get_mut(&mut self.rec).is_none() {
            *copies += self.rec.ports.len().max(1);
        }
        Arc::make_mut(&mut self.rec)
    }

    /// Port `pi`'s record, to change (copied first when the published
    /// snapshot shares it, counted in `copies`).
    fn port(&mut self, pi: usize, copies: &mut usize) -> Option<&mut PortRecord> {
        if pi >= self.rec.ports.len() {
            return None;
        }
        self.rec_mut(copies).ports.get_mut(pi)
    }
}

impl FabricState {
    /// Give every port's record the assessment of its link against the
    /// port at its far end in the fabric model ([`crate::ib::Port::assess`]):
    /// after the model's link facts changed (start, a merge that changed
    /// ports). Only records whose assessment changed are touched.
    pub(crate) fn assess_links(&mut self) {
        for ni in 0..self.nodes.len() {
            for pi in 0..self.nodes[ni].rec.ports.len() {
                let p = &self.nodes[ni].rec.ports[pi];
                let peer = p
                    .link
                    .remote()
                    .and_then(|(g, q)| Some(&self.nodes[self.node_index(g)?].rec.port(q)?.link));
                let a = p.link.assess(peer);
                if p.assessment == a {
                    continue;
                }
                let s = &mut self.nodes[ni];
                if let Some(r) = s.port(pi, &mut self.copies) {
                    r.assessment = a;
                    s.dirty = true;
                }
            }
        }
    }
}

/// The state, shared by the sweeper and the write path.
#[derive(Clone)]
pub struct SharedState(Arc<Mutex<FabricState>>);

impl SharedState {
    /// The state of `fabric`, discovered at `discovered`.
    pub fn new(mut fabric: Fabric, cfg: SweepConfig, discovered: Instant) -> Self {
        fabric.sort();
        let nodes: Vec<NodeState> = fabric.nodes.iter().map(NodeState::new).collect();
        let mut st = FabricState {
            cfg,
            by_guid: (0..nodes.len() as u32).collect(),
            nodes,
            sweep_no: 0,
            figures: SweepFigures {
                discovered: Some(discovered),
                ..Default::default()
            },
            pending: None,
            copies: 0,
            copy_budget: PUBLISH_AFTER_PORTS,
            readings: Readings::default(),
            kinds: Vec::new(),
        };
        st.assign_kinds();
        st.assess_links();
        SharedState(Arc::new(Mutex::new(st)))
    }

    /// Lock the state (a poisoned lock still holds consistent data: every
    /// update is a plain field store).
    pub fn lock(&self) -> MutexGuard<'_, FabricState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FabricState {
    /// The fabric as the agent knows it, nodes in GUID order (a copy:
    /// what a PortInfo refresh reads again).
    pub fn fabric(&self) -> Fabric {
        Fabric {
            nodes: self.by_guid().map(|ni| self.node(ni).to_node()).collect(),
        }
    }

    /// How many nodes the state has: their indexes are `0..node_count()`.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Node `ni`'s record: its identity, its ports' link facts and what
    /// was read of it.
    pub fn node(&self, ni: usize) -> &NodeRecord {
        &self.nodes[ni].rec
    }

    /// The node indexes in GUID order.
    pub fn by_guid(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_guid.iter().map(|&ni| ni as usize)
    }

    pub fn node_index(&self, guid: crate::ib::Guid) -> Option<usize> {
        let k = self
            .by_guid
            .binary_search_by_key(&guid, |&ni| self.nodes[ni as usize].rec.id.guid)
            .ok()?;
        Some(self.by_guid[k] as usize)
    }

    /// The index of port `num` among node `ni`'s ports.
    pub fn port_position(&self, ni: usize, num: u8) -> Option<usize> {
        self.nodes
            .get(ni)?
            .rec
            .ports
            .iter()
            .position(|p| p.num() == num)
    }

    /// The indexes of port `num` of node `guid`: (node, port).
    pub fn port_index(&self, guid: crate::ib::Guid, num: u8) -> Option<(usize, usize)> {
        let ni = self.node_index(guid)?;
        Some((ni, self.port_position(ni, num)?))
    }

    /// Give every node the index of its kind (kinds already known keep
    /// what they learned).
    pub(super) fn assign_kinds(&mut self) {
        let mut index: std::collections::HashMap<KindKey, u32> = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i as u32))
            .collect();
        for s in &mut self.nodes {
            let id = &s.rec.id;
            let key = (id.node_type, id.vendor_id, id.device_id);
            s.kind = *index.entry(key).or_insert_with(|| {
                self.kinds.push((key, KindState::default()));
                (self.kinds.len() - 1) as u32
            });
        }
    }

    /// What node `ni`'s kind showed.
    pub(crate) fn kind(&self, ni: usize) -> &KindState {
        &self.kinds[self.nodes[ni].kind as usize].1
    }

    /// The current sweep is node `ni`'s own, once every
    /// [`RETRY_UNANSWERED_SWEEPS`] (spread over the nodes by index): it is
    /// asked what its kind does not answer, as a node may differ from its
    /// kind (another firmware).
    pub(crate) fn self_check(&self, ni: usize) -> bool {
        (self.sweep_no + ni as u64).is_multiple_of(RETRY_UNANSWERED_SWEEPS)
    }

    /// The optional attributes not to ask of node `ni` (bit k:
    /// `OPTIONAL_ATTRS[k]`): what it does not answer, and what its kind
    /// does not, except what it answered itself and on its own sweep.
    pub(crate) fn optional_skipped(&self, ni: usize) -> AttrMask {
        let s = &self.nodes[ni];
        let kind = if self.self_check(ni) {
            0
        } else {
            self.kind(ni).unsupported & !s.health.optional_answered
        };
        s.health.optional_unsupported | kind
    }

    /// The request of `slot` asks whether the node has something it has
    /// not shown it has: an optional attribute, PortSamplesResultExtended,
    /// or the sample mechanism of a node that has not answered it yet (ibsim
    /// and some PMAs never do). Its timeout is no sign of a node in
    /// trouble: counted apart from the others.
    pub fn is_probe(&self, slot: Slot) -> bool {
        match slot {
            Slot::Optional(..) | Slot::SamplesResultExt(_) => true,
            Slot::SamplesControl(ni) | Slot::SamplesResult(ni) => self
                .nodes
                .get(ni)
                .is_some_and(|s| !s.health.samples_answered),
            _ => false,
        }
    }

    /// Start a sweep: its number (every [`RETRY_UNANSWERED_SWEEPS`]th
    /// asks again what went unanswered) and the number of nodes.
    pub fn begin_sweep(&mut self) -> (u64, usize) {
        self.sweep_no += 1;
        if self.sweep_no.is_multiple_of(RETRY_UNANSWERED_SWEEPS) {
            self.retry_unanswered();
        }
        (self.sweep_no, self.nodes.len())
    }

    /// Ask every node again, once, for the optional attributes and the
    /// sample mechanism it did not answer ([`RETRY_UNANSWERED_SWEEPS`]).
    pub fn retry_unanswered(&mut self) {
        for s in &mut self.nodes {
            s.health.retry();
        }
    }

    /// The sample result attributes to read of node `ni`, with their
    /// slots: PortSamplesResult, and PortSamplesResultExtended where the
    /// PMA says IsExtendedWidthSupported and has not shown it does not
    /// answer it.
    pub fn sample_results(&self, ni: usize) -> impl Iterator<Item = (u16, Slot)> {
        let ext = self.nodes.get(ni).is_some_and(|s| {
            !s.health.no_result_ext
                && s.cpi().is_some_and(|c| {
                    c.capability_mask & crate::pm::class_port_info::CAP_EXT_WIDTH != 0
                })
        });
        std::iter::once(Slot::SamplesResult(ni))
            .chain(ext.then_some(Slot::SamplesResultExt(ni)))
            .filter_map(|slot| Some((slot.attr_id()?, slot)))
    }

    /// Hand over a newly discovered fabric; the sweeper merges it before
    /// its next sweep.
    pub fn offer(&mut self, fabric: Fabric) {
        self.pending = Some(fabric);
    }

    /// The fabric handed over by [`Self::offer`] and not merged yet.
    pub fn take_pending(&mut self) -> Option<Fabric> {
        self.pending.take()
    }

    /// The sweep's settings.
    pub fn config(&self) -> &SweepConfig {
        &self.cfg
    }

    /// Node `ni`'s ClassPortInfo is to be read (again) this sweep: MADs
    /// are sent, it has not answered it (or its PMA moved), and its PMA
    /// has an address.
    pub fn class_port_info_due(&self, ni: usize) -> bool {
        self.cfg.mads && self.nodes[ni].cpi_stale && self.pma(ni, None).is_some()
    }

    /// The figures of the sweep that ended at `ended` after `elapsed`,
    /// for the agent's scalars.
    pub fn sweep_figures(&mut self, ended: Instant, elapsed: Duration, mads: u64, timeouts: u64) {
        self.figures.ended = Some(ended);
        self.figures.duration_ms = elapsed.as_millis() as u64;
        self.figures.mads = mads;
        self.figures.timeouts = timeouts;
    }

    /// The address of the node's PMA; for a CA, the PMA of the port at index
    /// `port` (None: the first port with a LID).
    pub fn pma(&self, ni: usize, port: Option<usize>) -> Option<MadAddr> {
        let s = &self.nodes[ni];
        if let Some(r) = s.redirect.as_deref().copied() {
            return Some(r);
        }
        let id = &s.rec.id;
        let lid = match port {
            Some(pi) => id.pma_lid(Some(&s.rec.ports.get(pi)?.link)),
            None => s
                .rec
                .ports
                .iter()
                .map(|p| id.pma_lid(Some(&p.link)))
                .find(|&l| l != 0)?,
        };
        (lid != 0).then(|| MadAddr::gsi(lid))
    }

    /// Fold one reply into the state. `sent` is when the request (or its
    /// batch) was sent, `now` when its outcome came; `answered` records
    /// that the node answered.
    pub fn apply(
        &mut self,
        slot: Slot,
        outcome: MadOutcome,
        (sent, now): (Instant, Instant),
        answered: &mut [bool],
    ) {
        let ni = slot.node();
        let s = &mut self.nodes[ni];
        let guid = s.rec.id.guid;
        let kind = &mut self.kinds[s.kind as usize].1;
        let readings = &mut self.readings;
        let data = match outcome {
            MadOutcome::Reply { status, data } => {
                answered[ni] = true;
                if let Slot::Cpi(_) = slot
                    && status & STATUS_REDIRECT != 0
                {
                    let cpi = ClassPortInfo::decode(&data);
                    if cpi.redirect_lid != 0 {
                        info!(
                            "the PMA of node {guid} redirects to LID {}, QP {:#x}",
                            cpi.redirect_lid, cpi.redirect_qp
                        );
                        s.redirect = Some(Box::new(MadAddr {
                            lid: cpi.redirect_lid,
                            qpn: cpi.redirect_qp,
                            qkey: cpi.redirect_qkey,
                            pkey_index: 0,
                            sl: cpi.redirect_sl,
                        }));
                        return;
                    }
                }
                data
            }
            MadOutcome::Status(st) => {
                answered[ni] = true;
                let h = &mut s.health;
                // The attribute the node refuses, when this is the first refusal.
                let news = match slot {
                    Slot::SamplesResultExt(_) => {
                        h.no_result_ext = true;
                        None
                    }
                    Slot::SamplesControl(_) | Slot::SamplesResult(_) => h
                        .samples_unsupported()
                        .then_some("PortSamplesControl/Result"),
                    Slot::Optional(_, _, k) => h
                        .optional_unsupported(k, kind)
                        .then_some("an optional attribute"),
                    _ => None,
                };
                if let Some(what) = news {
                    debug!(node = %guid, status = st, attr = slot.attr_id(), "{what} not supported");
                }
                return;
            }
            MadOutcome::Timeout | MadOutcome::Failed(_) => {
                // Silence from a node that answers other MADs is what a
                // PMA does with an attribute it lacks: evidence for the
                // node's kind, once per node and sweep.
                let alive = answered[ni];
                match slot {
                    Slot::SamplesControl(_) => s.health.samples_missed(),
                    // Asked only of nodes that answer the sample mechanism:
                    // silence is as good as "unsupported".
                    Slot::SamplesResultExt(_) => s.health.no_result_ext = true,
                    Slot::Optional(_, _, k) => s.health.optional_missed(k, alive, kind),
                    _ => {}
                }
                return;
            }
        };
        let sent_at = Stamp::from(sent);
        let newer = |held: Option<Stamp>| held.is_none_or(|h| sent_at >= h);
        let at = fold::At {
            now,
            min_secs: hc::rate_min_secs(self.cfg.interval),
        };
        let copies = &mut self.copies;
        match slot {
            Slot::Cpi(_) => {
                s.rec_mut(copies).class_port_info =
                    Some(readings.cpi.intern(ClassPortInfo::decode(&data)));
                s.cpi_stale = false;
            }
            Slot::Counters(_, pi) => {
                let wide = s
                    .cpi()
                    .map_or(WideCounters::None, ClassPortInfo::wide_counters);
                if !s
                    .rec
                    .ports
                    .get(pi)
                    .is_some_and(|pr| fold::counters_newer(pr, sent))
                {
                    return;
                }
                if let Some(pr) = s.port(pi, copies) {
                    fold::counters(pr, &PortCounters::decode(&data), wide, sent, at);
                }
            }
            Slot::Extended(_, pi) => {
                // A reply that comes after ClassPortInfo was marked stale
                // is read as the node's last ClassPortInfo said.
                let wide = s
                    .rec
                    .class_port_info
                    .as_deref()
                    .map_or(WideCounters::DataAndPackets, ClassPortInfo::wide_counters);
                if let Some(pr) = s.port(pi, copies) {
                    fold::extended(pr, &PortCountersExtended::decode(&data), wide, at);
                }
            }
            Slot::SamplesControl(_) => {
                s.health.samples_answer(kind);
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_control =
                        Some(readings.control.intern(PortSamplesControl::decode(&data)));
                }
            }
            Slot::SamplesResult(_) => {
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_result =
                        Some(readings.result.intern(PortSamplesResult::decode(&data)));
                }
            }
            Slot::SamplesResultExt(_) => {
                if newer(s.samples_at) {
                    s.rec_mut(copies).samples_result_ext = Some(
                        readings
                            .result_ext
                            .intern(PortSamplesResultExtended::decode(&data)),
                    );
                }
            }
            Slot::Optional(_, pi, k) => {
                s.health.optional_answer(k, kind);
                let cpi_mask = s.cpi().map(|c| c.capability_mask);
                if let Some(pr) = s.port(pi, copies) {
                    if OPTIONAL_ATTRS[k] == crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS {
                        let rs_fec = crate::pm::optional::rs_fec_layout(cpi_mask, pr.link.fec);
                        fold::fec_rates(pr, &data, rs_fec, sent, at);
                    }
                    pr.optional.set(k, &data);
                }
            }
        }
    }

    /// Mark ports as served by DOCA telemetry diag: their data, packet and
    /// discard counters ([`super::doca_ids::DOCA_SLOTS`]) come from
    /// [`FabricState::apply_doca`] from now on, not from PM MADs. Returns
    /// the ports not in the fabric.
    pub fn set_doca_ports(
        &mut self,
        ports: &[(crate::ib::Guid, u8)],
    ) -> Vec<(crate::ib::Guid, u8)> {
        let mut missing = Vec::new();
        for &(guid, num) in ports {
            let Some((ni, pi)) = self.port_index(guid, num) else {
                missing.push((guid, num));
                continue;
            };
            let s = &mut self.nodes[ni];
            s.doca = true;
            s.dirty = true;
            if let Some(pr) = s.port(pi, &mut self.copies) {
                fold::serve_by_doca(pr);
            }
        }
        missing
    }

    /// Fold one DOCA sample of a port: `values` are (index into
    /// [`super::doca_ids::DATA_IDS`], value) of `bits`-wide values; `gap`: the
    /// device dropped samples before this one; `now`: when it came.
    /// Returns the node's index (to publish it), or None when the port is
    /// not DOCA-served.
    pub fn apply_doca(
        &mut self,
        guid: crate::ib::Guid,
        num: u8,
        values: &[(usize, u64)],
        bits: u32,
        gap: bool,
        now: Instant,
    ) -> Option<usize> {
        let (ni, pi) = self.port_index(guid, num)?;
        let s = &mut self.nodes[ni];
        if !fold::doca_served(s.rec.ports.get(pi)?) {
            return None;
        }
        let pr = s.port(pi, &mut self.copies)?;
        fold::doca(pr, values, bits, gap, now);
        s.seen = true;
        s.doca_fresh = true;
        Some(ni)
    }

    /// The PortCountersExtended counters held for a port: those that feed
    /// its totals.
    pub fn extended(&self, guid: crate::ib::Guid, num: u8) -> Option<PortCountersExtended> {
        let ni = self.node_index(guid)?;
        self.nodes[ni].rec.port(num)?.hc.pcx()
    }

    /// This agent is clearing counters of port `pi` of node `ni`: the
    /// next reading of them going down is no discontinuity notification.
    pub fn mark_agent_clear(&mut self, ni: usize, pi: usize) {
        if let Some(pr) = self
            .nodes
            .get_mut(ni)
            .and_then(|n| n.port(pi, &mut self.copies))
        {
            fold::agent_clear(pr);
        }
    }

    /// The PortCounters reading held for a port (node index, port index).
    pub fn counters(&self, ni: usize, pi: usize) -> Option<&PortCounters> {
        self.nodes.get(ni)?.rec.ports.get(pi)?.counters()
    }

    /// Record that a write at `sent` produced this sample state: earlier
    /// readings in flight are dropped.
    pub fn mark_samples_written(&mut self, ni: usize, sent: Instant) {
        self.nodes[ni].samples_at = Some(sent.into());
    }

    /// The MAD transport itself failed: every node counts as unreachable at
    /// once (no line per node), and is asked ClassPortInfo again when it
    /// answers.
    pub fn mark_all_unreachable(&mut self) {
        let after = self.cfg.unreachable_after.max(1);
        for s in &mut self.nodes {
            s.failed_sweeps = s.failed_sweeps.max(after);
            s.dirty = true;
            s.cpi_stale = true;
            s.redirect = None;
        }
    }

    /// End of a sweep: count failures, mark nodes unreachable or back.
    pub fn end_sweep(&mut self, answered: &[bool]) {
        // Nodes that newly left optional attributes unanswered, by the set
        // of attributes: (count, first node's GUID and index). One log line
        // per set, not per node: a fabric of one device type logs once.
        let mut unanswered: std::collections::BTreeMap<AttrMask, (usize, crate::ib::Guid, usize)> =
            std::collections::BTreeMap::new();
        for (ni, answered) in answered.iter().enumerate() {
            let s = &mut self.nodes[ni];
            let node = &s.rec;
            let ok = &(*answered || std::mem::take(&mut s.doca_fresh));
            let (samples_out, out) = s.health.end_sweep(*ok);
            if samples_out {
                debug!(node = %node.id.guid, "no answer to PortSamplesControl: asking again rarely");
            }
            for (k, attr) in OPTIONAL_ATTRS.iter().enumerate() {
                if out & (1 << k) != 0 {
                    debug!(node = %node.id.guid, attr, "no answer to an optional attribute: asking again rarely");
                }
            }
            // What the node's kind left unanswered is said once for the kind.
            let kind_unsupported = self.kinds[s.kind as usize].1.unsupported;
            let unsupported = s.health.optional_unsupported;
            s.optional_reported |= unsupported & kind_unsupported;
            let new_unsupported = unsupported & !s.optional_reported;
            if new_unsupported != 0 {
                debug!(
                    node = %node.id.guid,
                    attrs = %attr_list(new_unsupported),
                    "optional PM attributes this node does not answer"
                );
                let e = unanswered
                    .entry(new_unsupported)
                    .or_insert((0, node.id.guid, ni));
                e.0 += 1;
                s.optional_reported |= new_unsupported;
            }
            if *ok {
                if s.failed_sweeps >= self.cfg.unreachable_after {
                    info!(
                        "node answers again: {} \"{}\"",
                        node.id.guid,
                        crate::ib::Escaped(&node.id.description)
                    );
                }
                s.dirty |= s.failed_sweeps != 0 || !s.seen;
                s.failed_sweeps = 0;
                s.seen = true;
            } else {
                s.dirty = true;
                s.failed_sweeps = s.failed_sweeps.saturating_add(1);
                if s.failed_sweeps == self.cfg.unreachable_after {
                    warn!(
                        "node unreachable: {} \"{}\" did not answer in {} sweeps in a row",
                        node.id.guid,
                        crate::ib::Escaped(&node.id.description),
                        s.failed_sweeps
                    );
                    // Ask ClassPortInfo again when it comes back.
                    s.cpi_stale = true;
                    s.redirect = None;
                    s.health = NodeHealth::default();
                    s.optional_reported = 0;
                }
            }
        }
        for (mask, (nodes, guid, ni)) in unanswered {
            info!(
                "{nodes} node(s) do not answer the optional PM attributes {attrs} (the first: {guid}, \"{desc}\"); they are asked again once every {RETRY_UNANSWERED_SWEEPS} sweeps",
                attrs = attr_list(mask),
                desc = crate::ib::Escaped(&self.nodes[ni].rec.id.description),
            );
        }
        self.report_kinds();
    }

    /// One log line per kind of node for what its nodes newly showed they
    /// do not answer (and so is not asked of the kind's other nodes).
    fn report_kinds(&mut self) {
        let mut counts = vec![0usize; self.kinds.len()];
        for s in &self.nodes {
            counts[s.kind as usize] += 1;
        }
        for ((key, k), count) in self.kinds.iter_mut().zip(counts) {
            let (node_type, vendor, device) = *key;
            let kind = format!(
                "{count} {} node(s) of vendor {vendor:#08x}, device {device:#06x}",
                match node_type {
                    crate::ib::NodeType::Ca => "channel adapter",
                    crate::ib::NodeType::Switch => "switch",
                    crate::ib::NodeType::Router => "router",
                }
            );
            let new = k.unsupported & !k.reported;
            if new != 0 {
                k.reported |= new;
                info!(
                    "{kind}: the optional PM attributes {} are not asked of them, as {KIND_VERDICT} of them left them unanswered and none answered (each node is asked again once every {RETRY_UNANSWERED_SWEEPS} sweeps)",
                    attr_list(new)
                );
            }
        }
    }

    /// The 64-bit totals of every port read by PM MADs, with the raw
    /// readings that fed them, for the state file (DOCA-served ports start
    /// again after a restart: their readings are not kept).
    pub fn export_totals(&self) -> Vec<SavedPort> {
        let mut out = Vec::new();
        for s in &self.nodes {
            for pr in &s.rec.ports {
                if pr.counters().is_none() || fold::doca_served(pr) {
                    continue;
                }
                let (valid, raw, totals) = pr.hc.export();
                out.push(SavedPort {
                    guid: s.rec.id.guid,
                    port: pr.num(),
                    from_pcx: pr.hc.fed_by_pcx(hc::OUT_OCTETS),
                    valid,
                    totals,
                    raw,
                });
            }
        }
        out
    }

    /// Take up saved totals before the first sweep: each port of the
    /// fabric not read yet continues from its saved totals, the saved raw
    /// readings standing for the last reading. Returns how many saved
    /// ports matched a port of this fabric.
    pub fn restore_totals(&mut self, saved: &[SavedPort]) -> usize {
        let mut matched = 0;
        for sp in saved {
            let Some((ni, pi)) = self.port_index(sp.guid, sp.port) else {
                continue;
            };
            let Some(pr) = self.nodes[ni].port(pi, &mut self.copies) else {
                continue;
            };
            if pr.counters().is_some() || fold::doca_served(pr) {
                continue;
            }
            fold::restore(pr, sp);
            matched += 1;
        }
        matched
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::fabric::cache::Cache;
    use crate::fabric::doca_ids::DATA_IDS;
    use crate::fabric::fold::tests::rate;
    use crate::fabric::hc::{IN_OCTETS, OUT_OCTETS, slot};
    use crate::fabric::record::DataSource;
    use crate::fabric::strikes::STRIKES;
    use crate::pm::class_port_info::CAP_EXT_WIDTH;
    use crate::pm::mad::attr;
    use std::time::Duration;

    /// Two switches of two ports, cabled by port 1 (one kind of node).
    pub(crate) const TWO: &str =
        "Switch\t2 \"sw0\"\n[1]\t\"sw1\"[1]\n\nSwitch\t2 \"sw1\"\n[1]\t\"sw0\"[1]\n\n";

    pub(crate) fn two_switches() -> Fabric {
        crate::ib::topology::parse(TWO).unwrap()
    }

    const S: Duration = Duration::from_secs(1);
    const MS: Duration = Duration::from_millis(1);

    fn state(cfg: SweepConfig) -> SharedState {
        SharedState::new(two_switches(), cfg, Instant::now())
    }

    fn reply(encode: impl FnOnce(&mut [u8; 192])) -> MadOutcome {
        reply_status(0, encode)
    }

    fn reply_status(status: u16, encode: impl FnOnce(&mut [u8; 192])) -> MadOutcome {
        let mut data = Box::new([0u8; 192]);
        encode(&mut data);
        MadOutcome::Reply { status, data }
    }

    fn pc(xmit_data: u32) -> MadOutcome {
        reply(|d| {
            PortCounters {
                port_select: 1,
                xmit_data,
                symbol_errors: 3,
                ..Default::default()
            }
            .encode(d)
        })
    }

    fn cpi(capability_mask: u16) -> MadOutcome {
        reply(|d| {
            ClassPortInfo {
                capability_mask,
                ..Default::default()
            }
            .encode(d)
        })
    }

    /// Node `ni`'s port at index `pi`.
    fn port(st: &FabricState, ni: usize, pi: usize) -> &PortRecord {
        &st.nodes[ni].rec.ports[pi]
    }

    /// PortCounters of port index 0 of node 0, its request sent 10 ms
    /// before `now`.
    fn read(st: &mut FabricState, xmit_data: u32, now: Instant) -> [bool; 2] {
        let mut answered = [false; 2];
        st.apply(
            Slot::Counters(0, 0),
            pc(xmit_data),
            (now - 10 * MS, now),
            &mut answered,
        );
        answered
    }

    /// A second PortCounters reading adds to the 64-bit totals, makes a
    /// rate over the virtual time between the readings, and shows in the
    /// published record; a reply to a request sent before the held
    /// reading's changes nothing.
    #[test]
    fn readings_fold_into_the_totals_and_the_published_record() {
        let t0 = Instant::now();
        let discovered = t0 - 5 * S;
        let state = SharedState::new(two_switches(), SweepConfig::default(), discovered);
        let cache = Cache::new();
        let mut st = state.lock();
        assert_eq!(read(&mut st, 100, t0), [true, false]);
        assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(400));
        let t1 = t0 + 10 * S;
        read(&mut st, 1100, t1);
        assert_eq!(st.counters(0, 0).map(|c| c.xmit_data), Some(1100));
        let p = port(&st, 0, 0);
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(4400));
        assert_eq!(p.hc.shown(slot("SymbolErrors")), Some(3));
        assert_eq!(rate(p, OUT_OCTETS), Some(400.0), "4000 octets in 10 s");
        assert_eq!(p.read_at, Some(t1.into()));
        assert_eq!(p.discontinuity, Some(t0.into()));
        // In flight since before the held reading: dropped.
        let mut answered = [false; 2];
        st.apply(
            Slot::Counters(0, 0),
            pc(9000),
            (t0 + 5 * S, t1 + S),
            &mut answered,
        );
        assert!(answered[0], "still an answer of the node");
        assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4400));

        st.sweep_no = 1;
        st.end_sweep(&[true, false]);
        st.publish(&cache);
        let snap = cache.load();
        assert_eq!(snap.nodes.len(), 1, "node 1 never answered");
        assert_eq!(snap.stats.discovered, Some(discovered));
        let rec = &snap.nodes[0];
        assert_eq!(rec.id.guid, st.fabric().nodes[0].id.guid);
        assert_eq!(rec.ports[0].hc.shown(OUT_OCTETS), Some(4400));
        assert!(rec.reachable);
    }

    /// A node silent in `unreachable_after` sweeps in a row is
    /// unreachable, forgets its PMA's redirect and ClassPortInfo, and is
    /// reachable again at its next answer; a DOCA sample counts as an
    /// answer; a transport failure makes every node unreachable at once.
    #[test]
    fn a_silent_node_is_unreachable_after_the_configured_sweeps_until_it_answers() {
        let cfg = SweepConfig {
            unreachable_after: 3,
            ..Default::default()
        };
        let state = state(cfg);
        let cache = Cache::new();
        let mut st = state.lock();
        let t0 = Instant::now();
        let mut answered = [false; 2];
        st.apply(Slot::Cpi(1), cpi(0), (t0, t0 + MS), &mut answered);
        assert!(st.nodes[1].cpi().is_some());
        st.end_sweep(&answered);
        for sweep in 1..=3u32 {
            let mut answered = [false; 2];
            let at = t0 + 10 * S * sweep;
            st.apply(
                Slot::Counters(1, 0),
                MadOutcome::Timeout,
                (at, at + S),
                &mut answered,
            );
            st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
            assert_eq!(answered, [true, false]);
            st.end_sweep(&answered);
            assert_eq!(st.nodes[1].failed_sweeps, sweep);
            st.publish(&cache);
            let snap = cache.load();
            let rec = snap
                .nodes
                .iter()
                .find(|n| n.id.guid == st.fabric().nodes[1].id.guid);
            assert_eq!(rec.map(|r| r.reachable), Some(sweep < 3), "sweep {sweep}");
            assert_eq!(st.nodes[1].cpi().is_some(), sweep < 3, "sweep {sweep}");
        }
        assert_eq!(cache.load().reachable, 1);
        // It answers again.
        st.end_sweep(&[true, true]);
        assert_eq!(st.nodes[1].failed_sweeps, 0);
        st.publish(&cache);
        assert_eq!(cache.load().reachable, 2);

        // A DOCA sample since the last sweep ended is an answer.
        let guid = st.fabric().nodes[1].id.guid;
        st.set_doca_ports(&[(guid, 1)]);
        let now = t0 + 60 * S;
        assert_eq!(st.apply_doca(guid, 1, &[(0, 5)], 64, false, now), Some(1));
        st.end_sweep(&[true, false]);
        assert_eq!(st.nodes[1].failed_sweeps, 0, "DOCA answered");
        st.end_sweep(&[true, false]);
        assert_eq!(st.nodes[1].failed_sweeps, 1, "once per sample");

        st.mark_all_unreachable();
        st.publish(&cache);
        assert_eq!(cache.load().reachable, 0);
        assert!(
            st.nodes
                .iter()
                .all(|n| n.cpi().is_none() && n.failed_sweeps == 3)
        );
    }

    /// Port index 0 of node 0 read at `t0` and `t0 + 10 s`: 4400 octets
    /// out.
    fn read_twice(st: &mut FabricState, t0: Instant) {
        read(st, 100, t0);
        read(st, 1100, t0 + 10 * S);
    }

    /// Error statuses say what a node does not have: the sample
    /// mechanism, PortSamplesResultExtended, an optional attribute (for
    /// the kind once [`KIND_VERDICT`] nodes said so); a ClassPortInfo with
    /// the redirect status moves the node's PMA; the rare retry asks again.
    #[test]
    fn error_statuses_mark_what_a_node_lacks_and_a_redirect_moves_its_pma() {
        let mut fabric = two_switches();
        fabric.nodes[0].id.lid = 5;
        let state = SharedState::new(fabric, SweepConfig::default(), Instant::now());
        let mut st = state.lock();
        let t0 = Instant::now();
        let times = (t0, t0 + MS);
        let mut answered = [false; 2];
        assert_eq!(st.pma(0, None), Some(MadAddr::gsi(5)));

        // PortSamplesResultExtended is asked where the PMA says it has it.
        st.apply(Slot::Cpi(0), cpi(CAP_EXT_WIDTH), times, &mut answered);
        let results = |st: &FabricState| st.sample_results(0).map(|(a, _)| a).collect::<Vec<_>>();
        assert_eq!(
            results(&st),
            [
                attr::PORT_SAMPLES_RESULT,
                attr::PORT_SAMPLES_RESULT_EXTENDED
            ]
        );
        let bad = || MadOutcome::Status(crate::pm::mad::status::METHOD_ATTR_UNSUPPORTED);
        st.apply(Slot::SamplesResultExt(0), bad(), times, &mut answered);
        assert_eq!(results(&st), [attr::PORT_SAMPLES_RESULT]);
        assert!(st.is_probe(Slot::SamplesControl(0)), "not answered yet");
        st.apply(Slot::SamplesControl(0), bad(), times, &mut answered);
        assert!(st.nodes[0].health.no_samples);
        assert_eq!(answered, [true, false], "an error status is an answer");

        // An optional attribute: the node's, then its kind's.
        let k = 1;
        st.apply(Slot::Optional(0, 0, k), bad(), times, &mut answered);
        assert_eq!(st.nodes[0].health.optional_unsupported, 1 << k);
        assert_eq!(st.kind(1).unsupported, 0, "one node is no verdict");
        st.apply(Slot::Optional(1, 0, k), bad(), times, &mut answered);
        assert_eq!(st.kind(1).unsupported, 1 << k);
        assert_eq!(st.optional_skipped(1), 1 << k);

        // The rare retry asks the nodes again; the kind's verdict stands
        // but on each node's own sweep.
        st.retry_unanswered();
        assert!(!st.nodes[0].health.no_samples);
        assert_eq!(st.nodes[0].health.optional_unsupported, 0);
        for ni in 0..2 {
            let own = st.self_check(ni);
            assert_eq!(own, ni == 0, "sweep 0 is node 0's own");
            let skipped = if own { 0 } else { 1 << k };
            assert_eq!(st.optional_skipped(ni), skipped, "node {ni}");
        }
        assert_eq!(results(&st).len(), 2);

        // The redirect: the PMA elsewhere, no ClassPortInfo taken from it
        // (the one read is stale once the node was unreachable).
        st.mark_all_unreachable();
        let redirect = reply_status(STATUS_REDIRECT, |d| {
            ClassPortInfo {
                redirect_lid: 9,
                redirect_qp: 0x42,
                redirect_qkey: 0x8001_0000,
                redirect_sl: 2,
                ..Default::default()
            }
            .encode(d)
        });
        st.apply(Slot::Cpi(0), redirect, times, &mut answered);
        let to = MadAddr {
            lid: 9,
            qpn: 0x42,
            qkey: 0x8001_0000,
            pkey_index: 0,
            sl: 2,
        };
        assert_eq!(st.pma(0, None), Some(to));
        assert!(st.nodes[0].cpi().is_none());
        // Unreachable: the redirect is forgotten.
        st.mark_all_unreachable();
        assert_eq!(st.pma(0, None), Some(MadAddr::gsi(5)));
    }

    /// Node `ni` leaves PortSamplesControl and optional attribute `k`
    /// of its first port unanswered, asked at `at`.
    fn silent(st: &mut FabricState, ni: usize, k: usize, at: Instant, answered: &mut [bool]) {
        for slot in [Slot::SamplesControl(ni), Slot::Optional(ni, 0, k)] {
            st.apply(slot, MadOutcome::Timeout, (at, at + S), answered);
        }
    }

    /// Silence to an attribute from a node that answers others is a
    /// strike; [`STRIKES`] sweeps of it and the attribute is not asked
    /// any more; a node that answers nothing gets no strike; an answer
    /// takes the strikes back.
    #[test]
    fn silence_of_an_answering_node_strikes_an_attribute_out() {
        let state = state(SweepConfig::default());
        let mut st = state.lock();
        let t0 = Instant::now();
        let k = 2;
        for sweep in 1..=u32::from(STRIKES) {
            let at = t0 + 10 * S * sweep;
            let mut answered = [false; 2];
            silent(&mut st, 0, k, at, &mut answered);
            silent(&mut st, 1, k, at, &mut answered);
            // Node 0 answers something, node 1 nothing.
            st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
            st.end_sweep(&answered);
            let out = sweep == u32::from(STRIKES);
            assert_eq!(st.nodes[0].health.no_samples, out, "sweep {sweep}");
            assert!(st.nodes[0].health.samples_silent());
            assert_eq!(st.nodes[0].health.optional_unsupported, u32::from(out) << k);
            assert!(!st.nodes[1].health.no_samples && st.nodes[1].health.optional_unsupported == 0);
        }
        assert_eq!(st.kind(0).unsupported, 0, "one node is no verdict");

        // A strike, then answers: the strikes start again.
        st.retry_unanswered();
        let at = t0 + 100 * S;
        let mut answered = [false; 2];
        silent(&mut st, 0, k, at, &mut answered);
        st.apply(Slot::Cpi(0), cpi(0), (at, at + MS), &mut answered);
        st.end_sweep(&answered);
        let control = reply(|d| PortSamplesControl::default().encode(d));
        st.apply(
            Slot::SamplesControl(0),
            control,
            (at, at + MS),
            &mut answered,
        );
        let optional = reply(|d| d[0] = 1);
        st.apply(
            Slot::Optional(0, 0, k),
            optional,
            (at, at + MS),
            &mut answered,
        );
        assert!(!st.is_probe(Slot::SamplesControl(0)), "answered");
        assert!(st.is_probe(Slot::Optional(0, 0, k)));
        assert!(!st.is_probe(Slot::Counters(0, 0)));
        for _ in 0..STRIKES - 1 {
            silent(&mut st, 0, k, at, &mut answered);
            st.end_sweep(&answered);
        }
        assert!(!st.nodes[0].health.no_samples);
        assert_eq!(st.nodes[0].health.optional_unsupported, 0);
        assert_eq!(st.nodes[0].health.optional_answered, 1 << k);
        assert_eq!(st.kind(0).answered, 1 << k);
    }

    /// The totals exported for the state file continue in a fresh state
    /// of the same fabric: the next reading adds what moved since the
    /// saved one; ports already read and ports of other fabrics are left.
    #[test]
    fn exported_totals_continue_in_a_fresh_state() {
        let t0 = Instant::now();
        let saved = {
            let state = state(SweepConfig::default());
            let mut st = state.lock();
            read_twice(&mut st, t0);
            st.export_totals()
        };
        assert_eq!(saved.len(), 1, "one port read");
        let words = (saved[0].port, saved[0].totals[OUT_OCTETS]);
        assert_eq!(words, (1, 1100), "PortXmitData counts words of 4 octets");

        let state = state(SweepConfig::default());
        let mut st = state.lock();
        let mut stranger = saved[0].clone();
        stranger.guid = crate::ib::Guid(0x99);
        assert_eq!(st.restore_totals(&[saved[0].clone(), stranger]), 1);
        assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4400));
        let t1 = t0 + 3600 * S;
        read(&mut st, 1200, t1);
        assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4800));
        assert_eq!(st.export_totals()[0].totals[OUT_OCTETS], 1200);
        // Read now: a restore does not go back.
        assert_eq!(st.restore_totals(&saved), 0);
        assert_eq!(port(&st, 0, 0).hc.shown(OUT_OCTETS), Some(4800));
    }

    /// Counters going down after this agent marked its clear are no
    /// reset by someone else; without the mark they are.
    #[test]
    fn a_marked_clear_of_the_agent_is_no_external_reset() {
        for marked in [true, false] {
            let state = state(SweepConfig::default());
            let mut st = state.lock();
            let t0 = Instant::now();
            read_twice(&mut st, t0);
            if marked {
                st.mark_agent_clear(0, 0);
            }
            st.mark_agent_clear(7, 0);
            let t2 = t0 + 20 * S;
            read(&mut st, 10, t2);
            let p = port(&st, 0, 0);
            assert_eq!(p.external_resets, u32::from(!marked), "marked {marked}");
            assert_eq!(p.hc.shown(OUT_OCTETS), Some(4440), "marked {marked}");
        }
    }

    /// Sample readings sent before a write of the sample state are
    /// dropped; those sent after are kept.
    #[test]
    fn sample_readings_from_before_a_write_are_dropped() {
        let state = state(SweepConfig::default());
        let mut st = state.lock();
        let t0 = Instant::now();
        let control = |tick: u8| {
            reply(move |d| {
                PortSamplesControl {
                    tick,
                    ..Default::default()
                }
                .encode(d)
            })
        };
        let mut answered = [false; 2];
        st.mark_samples_written(0, t0 + S);
        st.apply(
            Slot::SamplesControl(0),
            control(1),
            (t0, t0 + 2 * S),
            &mut answered,
        );
        assert!(st.nodes[0].rec.samples_control.is_none());
        st.apply(
            Slot::SamplesControl(0),
            control(2),
            (t0 + S, t0 + 2 * S),
            &mut answered,
        );
        assert_eq!(
            st.nodes[0].rec.samples_control.as_ref().map(|c| c.tick),
            Some(2)
        );
    }

    /// DOCA-served ports take their data counters from DOCA samples, not
    /// from PortCounters, and are not in the state file; ports not in the
    /// fabric are returned.
    #[test]
    fn doca_ports_take_their_data_counters_from_doca() {
        let state = state(SweepConfig::default());
        let cache = Cache::new();
        let mut st = state.lock();
        let t0 = Instant::now();
        let guid = st.fabric().nodes[0].id.guid;
        let stranger = (crate::ib::Guid(0x99), 1);
        assert_eq!(
            st.set_doca_ports(&[(guid, 1), (guid, 9), stranger]),
            [(guid, 9), stranger]
        );
        assert_eq!(
            st.apply_doca(guid, 2, &[(0, 5)], 64, false, t0),
            None,
            "port 2 is not served"
        );
        let tx = DATA_IDS.iter().position(|d| d.slot == OUT_OCTETS).unwrap();
        let rx = DATA_IDS.iter().position(|d| d.slot == IN_OCTETS).unwrap();
        assert_eq!(
            st.apply_doca(guid, 1, &[(tx, 1000), (rx, 50)], 64, false, t0),
            Some(0)
        );
        assert_eq!(
            st.apply_doca(guid, 1, &[(tx, 3000)], 64, false, t0 + S),
            Some(0)
        );
        read(&mut st, 100_000, t0 + 2 * S);
        let p = port(&st, 0, 0);
        assert_eq!(p.hc.shown(OUT_OCTETS), Some(3000), "DOCA's bytes");
        assert_eq!(p.hc.shown(IN_OCTETS), Some(50));
        assert_eq!(
            p.hc.shown(slot("SymbolErrors")),
            Some(3),
            "from PortCounters"
        );
        assert!(st.export_totals().is_empty());
        st.end_sweep(&[false, false]);
        st.publish(&cache);
        assert_eq!(cache.load().nodes[0].source, DataSource::PmaAndDoca);
    }
}
