//! What the agent has learned about each node, shared by the sweeper and the
//! write path, and turned into snapshots for the cache.
//!
//! Every reading carries the time its request (or its batch) was sent; a
//! reading older than the one already held for the same port or attribute is
//! dropped, so a sweep reply that was in flight while a write changed the
//! node cannot bring back the value from before the write.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use tracing::{debug, info, warn};

use super::cache::{
    Cache, DataSource, NodeRecord, OptionalReading, PortRecord, Snapshot, SweepFigures,
};
use super::engine::MadOutcome;
use super::hc::{self, HC_SLOTS, HcTotals};
use super::persist::SavedPort;
use crate::ib::{Fabric, Node};
use crate::pm::class_port_info::{CAP_EXT_WIDTH, CAP_EXT_WIDTH_NOIETF};
use crate::pm::mad::status::REDIRECT as STATUS_REDIRECT;
use crate::pm::samples::PortSamplesResultExtended;
use crate::pm::{
    ClassPortInfo, PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult,
};
use crate::transport::MadAddr;

#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Time from the start of one sweep to the start of the next.
    pub interval: Duration,
    /// Consecutive failed sweeps after which a node is marked unreachable.
    pub unreachable_after: u32,
    /// Keep an unreachable node's rows (with their last values) or drop them.
    pub keep_unreachable: bool,
    /// Read the optional attributes [`OPTIONAL_ATTRS`] where nodes answer.
    pub optional_attributes: bool,
    /// Read them on every this many sweeps (the first sweep, then every
    /// `optional_every`-th); their readings are kept in between.
    pub optional_every: u32,
    /// Clear PortCounters fields past 75% of their range.
    pub clear_near_overflow: bool,
    /// Log one line every this many sweeps saying the sweeps are healthy
    /// (0: never).
    pub health_every: u32,
    /// Send PM MADs (false: the doca backend alone, which has no MAD
    /// transport; sweeps then only count and publish).
    pub mads: bool,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            interval: Duration::from_secs(10),
            unreachable_after: 3,
            keep_unreachable: true,
            optional_attributes: true,
            optional_every: 1,
            clear_near_overflow: false,
            health_every: 60,
            mads: true,
        }
    }
}

/// The optional per-port PM attributes the sweeper reads where a node
/// answers them: PortRcvErrorDetails, PortXmitDiscardDetails,
/// PortOpRcvCounters, PortFlowCtlCounters, PortVLOpPackets, PortVLOpData,
/// PortVLXmitFlowCtlUpdateErrors, PortVLXmitWaitCounters (0x15-0x1C) and
/// the congestion-control attributes SwPortVLCongestion, PortRcvConCtrl,
/// PortSLRcvFECN, PortSLRcvBECN, PortXmitConCtrl, PortVLXmitTimeCong,
/// PortXmitDataSL and PortRcvDataSL (0x30-0x37), and
/// PortExtendedSpeedsCounters (0x1F, FEC counters).
pub const OPTIONAL_ATTRS: [u16; 17] = [
    0x15, 0x16, 0x17, 0x18, 0x19, 0x1A, 0x1B, 0x1C, 0x30, 0x31, 0x32, 0x33, 0x34, 0x35, 0x36, 0x37,
    0x1F,
];

/// One bit per [`OPTIONAL_ATTRS`] entry.
type AttrMask = u32;

/// The attribute IDs of a mask, for a log line (`0x0018,0x001b`).
fn attr_list(mask: AttrMask) -> String {
    OPTIONAL_ATTRS
        .iter()
        .enumerate()
        .filter(|(k, _)| mask & (1 << k) != 0)
        .map(|(_, a)| format!("{a:#06x}"))
        .collect::<Vec<_>>()
        .join(",")
}
const _: () = assert!(OPTIONAL_ATTRS.len() <= AttrMask::BITS as usize);

/// Sweeps in a row in which a node answers other MADs but not an
/// attribute before the sweeper stops asking it for that attribute.
const STRIKES: u8 = 2;

/// Every this many sweeps, attributes a node did not answer are asked
/// again once (a firmware upgrade may add them); one hour at the default
/// interval. Nothing is logged again for a node that still does not
/// answer.
pub const RETRY_UNANSWERED_SWEEPS: u64 = 360;

/// The data area of a Get of optional attribute `attr_id` for `port`: the
/// PortSelect in byte 1 and, for the per-opcode attributes, Opcode 0xFF
/// (every opcode) in byte 0.
pub fn optional_request_data(attr_id: u16, port: u8) -> [u8; 192] {
    let mut d = [0u8; 192];
    if matches!(attr_id, 0x17 | 0x19 | 0x1A) {
        d[0] = 0xFF;
    }
    d[1] = port;
    d
}

/// A port's latest reading of each optional attribute.
type OptionalReadings = [Option<Arc<[u8; 192]>>; OPTIONAL_ATTRS.len()];

#[derive(Default)]
pub(crate) struct PortState {
    counters: Option<PortCounters>,
    counters_at: Option<Instant>,
    extended: Option<PortCountersExtended>,
    /// Shared with the published snapshot's record: a sweep copies it
    /// (`Arc::make_mut`) only when it changes a port the snapshot shows.
    hc: Arc<HcTotals>,
    /// Data and packets were last read from PortCountersExtended.
    hc_from_pcx: Option<bool>,
    /// The totals and time the current rates started from.
    rate_mark: Option<(Instant, HcTotals)>,
    rates: Option<Arc<[u64; HC_SLOTS]>>,
    read_at: Option<Instant>,
    discontinuity: Option<Instant>,
    /// Indexed like [`OPTIONAL_ATTRS`]; allocated at the first reading
    /// (most ports of a fabric without optional attributes have none).
    optional: Option<Box<OptionalReadings>>,
    /// The port is served by DOCA telemetry diag: the latest value of each
    /// [`crate::doca::DATA_IDS`] entry (None until read).
    doca: Option<Box<[Option<u64>; crate::doca::DATA_IDS.len()]>>,
    /// This agent cleared the port's PortCounters: the next reading may
    /// go down without that being news ([`FabricState::mark_agent_clear`]).
    agent_clear: bool,
    /// The same for PortCountersExtended (a PMA may clear both).
    agent_clear_ext: bool,
    /// Counters that went down without a clear by this agent.
    external_resets: u32,
}

pub(crate) struct NodeState {
    /// The PMA's address after a ClassPortInfo redirect.
    pub(crate) redirect: Option<MadAddr>,
    pub(crate) cpi: Option<ClassPortInfo>,
    pub(crate) failed_sweeps: u32,
    /// Ever answered anything (a node that never did has no rows).
    seen: bool,
    /// The node does not answer PortSamplesControl/Result: stop asking.
    pub(crate) no_samples: bool,
    /// Sweeps in a row in which the node answered but not PortSamplesControl.
    samples_strikes: u32,
    /// PortSamplesControl went unanswered in the current sweep.
    samples_missed: bool,
    ports: Vec<PortState>,
    samples_control: Option<PortSamplesControl>,
    samples_result: Option<PortSamplesResult>,
    samples_result_ext: Option<PortSamplesResultExtended>,
    /// The node does not answer PortSamplesResultExtended: stop asking
    /// (until the rare retry).
    no_result_ext: bool,
    samples_at: Option<Instant>,
    /// Bit k: the node does not answer `OPTIONAL_ATTRS[k]`; stop asking.
    pub(crate) optional_unsupported: AttrMask,
    /// Bit k: `OPTIONAL_ATTRS[k]` went unanswered in the current sweep.
    optional_missed: AttrMask,
    optional_strikes: [u8; OPTIONAL_ATTRS.len()],
    /// Bits of `optional_unsupported` already said in the log.
    optional_reported: AttrMask,
    /// Some port is served by DOCA telemetry diag.
    doca: bool,
    /// DOCA delivered a sample since the last sweep ended.
    doca_fresh: bool,
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
}

pub struct FabricState {
    pub(crate) fabric: Fabric,
    pub(crate) cfg: SweepConfig,
    pub(crate) nodes: Vec<NodeState>,
    pub(crate) sweep_no: u64,
    /// The last sweep's figures, published with each snapshot.
    pub(crate) figures: SweepFigures,
    /// A newly discovered fabric, merged by the sweeper between sweeps.
    pub(crate) pending: Option<Fabric>,
}

/// What a merge of a newly discovered fabric changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeReport {
    pub nodes: usize,
    pub added: usize,
    /// Ports whose state, width, speed, LID or peer changed.
    pub ports_changed: usize,
}

impl NodeState {
    fn new(node: &Node) -> NodeState {
        NodeState {
            redirect: None,
            cpi: None,
            failed_sweeps: 0,
            seen: false,
            no_samples: false,
            samples_strikes: 0,
            samples_missed: false,
            ports: node.ports.iter().map(|_| PortState::default()).collect(),
            samples_control: None,
            samples_result: None,
            samples_result_ext: None,
            no_result_ext: false,
            samples_at: None,
            optional_unsupported: 0,
            optional_missed: 0,
            optional_strikes: [0; OPTIONAL_ATTRS.len()],
            optional_reported: 0,
            doca: false,
            doca_fresh: false,
        }
    }
}

/// The state, shared by the sweeper and the write path.
#[derive(Clone)]
pub struct SharedState(Arc<Mutex<FabricState>>);

impl SharedState {
    pub fn new(mut fabric: Fabric, cfg: SweepConfig) -> Self {
        fabric.sort();
        let nodes = fabric.nodes.iter().map(NodeState::new).collect();
        SharedState(Arc::new(Mutex::new(FabricState {
            fabric,
            cfg,
            nodes,
            sweep_no: 0,
            figures: SweepFigures {
                discovered: Some(Instant::now()),
                ..Default::default()
            },
            pending: None,
        })))
    }

    /// Lock the state (a poisoned lock still holds consistent data: every
    /// update is a plain field store).
    pub fn lock(&self) -> MutexGuard<'_, FabricState> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FabricState {
    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    pub fn node_index(&self, guid: crate::ib::Guid) -> Option<usize> {
        self.fabric
            .nodes
            .binary_search_by_key(&guid, |n| n.guid)
            .ok()
    }

    /// Ask every node again, once, for the optional attributes and the
    /// sample mechanism it did not answer ([`RETRY_UNANSWERED_SWEEPS`]).
    pub fn retry_unanswered(&mut self) {
        for s in &mut self.nodes {
            s.optional_unsupported = 0;
            s.optional_strikes = [0; OPTIONAL_ATTRS.len()];
            s.no_samples = false;
            s.samples_strikes = 0;
            s.no_result_ext = false;
        }
    }

    /// The sample result attributes to read of node `ni`, with their
    /// slots: PortSamplesResult, and PortSamplesResultExtended where the
    /// PMA says IsExtendedWidthSupported and has not shown it does not
    /// answer it.
    pub fn sample_results(&self, ni: usize) -> impl Iterator<Item = (u16, Slot)> {
        use crate::pm::mad::attr;
        let ext = self.nodes.get(ni).is_some_and(|s| {
            !s.no_result_ext
                && s.cpi.as_ref().is_some_and(|c| {
                    c.capability_mask & crate::pm::class_port_info::CAP_EXT_WIDTH != 0
                })
        });
        std::iter::once((attr::PORT_SAMPLES_RESULT, Slot::SamplesResult(ni))).chain(ext.then_some(
            (
                attr::PORT_SAMPLES_RESULT_EXTENDED,
                Slot::SamplesResultExt(ni),
            ),
        ))
    }

    /// Hand over a newly discovered fabric; the sweeper merges it before
    /// its next sweep.
    pub fn offer(&mut self, fabric: Fabric) {
        self.pending = Some(fabric);
    }

    /// Merge a newly discovered fabric: nodes found again keep everything
    /// the agent learned of them (readings, totals, strikes) and take the
    /// new link facts of their ports; new nodes are added; a node not found
    /// again is kept (its sweeps decide whether it is reachable). Indices
    /// of nodes and ports change: call only while no request is in flight.
    pub fn merge(&mut self, mut new: Fabric) -> MergeReport {
        new.sort();
        let mut report = MergeReport::default();
        let mut old_nodes = std::mem::take(&mut self.fabric.nodes).into_iter();
        let mut old_states = std::mem::take(&mut self.nodes).into_iter();
        let mut nodes = Vec::with_capacity(new.nodes.len());
        let mut states = Vec::with_capacity(new.nodes.len());
        let mut next_old = old_nodes.next().zip(old_states.next());
        for n in new.nodes {
            // Old nodes before this GUID were not found again: keep them.
            while let Some((o, s)) = next_old.take() {
                if o.guid < n.guid {
                    nodes.push(o);
                    states.push(s);
                    next_old = old_nodes.next().zip(old_states.next());
                } else {
                    next_old = Some((o, s));
                    break;
                }
            }
            match next_old.take() {
                Some((o, mut s)) if o.guid == n.guid => {
                    let mut ports: Vec<PortState> = Vec::with_capacity(n.ports.len());
                    let mut old_ports: Vec<(u8, PortState)> = o
                        .ports
                        .iter()
                        .map(|p| p.num)
                        .zip(std::mem::take(&mut s.ports))
                        .collect();
                    for p in &n.ports {
                        match old_ports.iter().position(|(num, _)| *num == p.num) {
                            Some(i) => {
                                ports.push(old_ports.swap_remove(i).1);
                                if o.port(p.num) != Some(p) {
                                    report.ports_changed += 1;
                                }
                            }
                            None => {
                                ports.push(PortState::default());
                                report.ports_changed += 1;
                            }
                        }
                    }
                    s.ports = ports;
                    // A node whose PMA moved to another LID is asked
                    // ClassPortInfo again at the new one.
                    if o.lid != n.lid {
                        s.cpi = None;
                        s.redirect = None;
                    }
                    nodes.push(n);
                    states.push(s);
                    next_old = old_nodes.next().zip(old_states.next());
                }
                other => {
                    next_old = other;
                    report.added += 1;
                    states.push(NodeState::new(&n));
                    nodes.push(n);
                }
            }
        }
        while let Some((o, s)) = next_old.take() {
            nodes.push(o);
            states.push(s);
            next_old = old_nodes.next().zip(old_states.next());
        }
        report.nodes = nodes.len();
        self.fabric.nodes = nodes;
        self.nodes = states;
        self.figures.discovered = Some(Instant::now());
        report
    }

    /// The address of the node's PMA; for a CA, the PMA of the port at index
    /// `port` (None: the first port with a LID).
    pub fn pma(&self, ni: usize, port: Option<usize>) -> Option<MadAddr> {
        let node = &self.fabric.nodes[ni];
        if let Some(r) = self.nodes[ni].redirect {
            return Some(r);
        }
        let lid = match port {
            Some(pi) => node.pma_lid(node.ports.get(pi)?.num),
            None => node
                .ports
                .iter()
                .map(|p| node.pma_lid(p.num))
                .find(|&l| l != 0)?,
        };
        (lid != 0).then(|| MadAddr::gsi(lid))
    }

    /// Fold one reply into the state. `sent` is when the request (or its
    /// batch) was sent; `answered` records that the node answered.
    pub fn apply(&mut self, slot: Slot, outcome: MadOutcome, sent: Instant, answered: &mut [bool]) {
        let ni = slot.node();
        let guid = self.fabric.nodes[ni].guid;
        let s = &mut self.nodes[ni];
        let data = match outcome {
            MadOutcome::Reply { status, data } => {
                answered[ni] = true;
                if let Slot::Cpi(_) = slot
                    && status & STATUS_REDIRECT != 0
                {
                    let cpi = ClassPortInfo::decode(&data);
                    if cpi.redirect_lid != 0 {
                        info!(node = %guid, lid = cpi.redirect_lid, qp = cpi.redirect_qp, "PMA redirects");
                        s.redirect = Some(MadAddr {
                            lid: cpi.redirect_lid,
                            qpn: cpi.redirect_qp,
                            qkey: cpi.redirect_qkey,
                            pkey_index: 0,
                            sl: cpi.redirect_sl,
                        });
                        return;
                    }
                }
                data
            }
            MadOutcome::Status(st) => {
                answered[ni] = true;
                if let Slot::SamplesResultExt(_) = slot {
                    s.no_result_ext = true;
                } else if matches!(slot, Slot::SamplesControl(_) | Slot::SamplesResult(_))
                    && !s.no_samples
                {
                    debug!(node = %guid, status = st, "no PortSamplesControl/Result");
                    s.no_samples = true;
                }
                if let Slot::Optional(_, _, k) = slot
                    && s.optional_unsupported & (1 << k) == 0
                {
                    debug!(node = %guid, status = st, attr = OPTIONAL_ATTRS[k], "optional attribute not supported");
                    s.optional_unsupported |= 1 << k;
                }
                return;
            }
            MadOutcome::Timeout | MadOutcome::Failed(_) => {
                match slot {
                    Slot::SamplesControl(_) => s.samples_missed = true,
                    // Asked only of nodes that answer the sample mechanism:
                    // silence is as good as "unsupported".
                    Slot::SamplesResultExt(_) => s.no_result_ext = true,
                    Slot::Optional(_, _, k) => s.optional_missed |= 1 << k,
                    _ => {}
                }
                return;
            }
        };
        let newer = |held: Option<Instant>| held.is_none_or(|h| sent >= h);
        match slot {
            Slot::Cpi(_) => s.cpi = Some(ClassPortInfo::decode(&data)),
            Slot::Counters(_, pi) => {
                let use_pcx = s.cpi.is_some_and(|c| {
                    c.capability_mask & (CAP_EXT_WIDTH | CAP_EXT_WIDTH_NOIETF) != 0
                });
                let Some(ps) = s.ports.get_mut(pi) else {
                    return;
                };
                if !newer(ps.counters_at) {
                    return;
                }
                let cur = PortCounters::decode(&data);
                let now = Instant::now();
                if ps.hc_from_pcx.is_some_and(|was| was != use_pcx) {
                    // The data and packet counters change source: their
                    // totals lose what happened in between.
                    ps.discontinuity = Some(now);
                }
                ps.hc_from_pcx = Some(use_pcx);
                let skip = if ps.doca.is_some() {
                    crate::doca::DOCA_SLOTS
                } else {
                    0
                };
                let went_down = hc::fold_pc(
                    Arc::make_mut(&mut ps.hc),
                    ps.counters.as_ref(),
                    &cur,
                    use_pcx,
                    skip,
                );
                let cleared = ps
                    .counters
                    .as_ref()
                    .is_some_and(|p| hc::pc_went_down(p, &cur));
                if cleared && !ps.agent_clear {
                    ps.external_resets = ps.external_resets.wrapping_add(1);
                }
                ps.agent_clear = false;
                if went_down || ps.counters.is_none() {
                    ps.discontinuity = Some(now);
                }
                ps.counters = Some(cur);
                ps.counters_at = Some(sent);
                ps.read_at = Some(now);
            }
            Slot::Extended(_, pi) => {
                if let Some(ps) = s.ports.get_mut(pi) {
                    let cur = PortCountersExtended::decode(&data);
                    // The first reading after a change of source starts
                    // from itself.
                    let prev = if ps.hc_from_pcx == Some(true) {
                        ps.extended.as_ref()
                    } else {
                        Some(&cur)
                    };
                    let skip = if ps.doca.is_some() {
                        crate::doca::DOCA_SLOTS
                    } else {
                        0
                    };
                    if hc::fold_pcx(Arc::make_mut(&mut ps.hc), prev, &cur, skip) {
                        ps.discontinuity = Some(Instant::now());
                        if !ps.agent_clear_ext {
                            ps.external_resets = ps.external_resets.wrapping_add(1);
                        }
                    }
                    ps.agent_clear_ext = false;
                    ps.extended = Some(cur);
                }
            }
            Slot::SamplesControl(_) => {
                s.samples_strikes = 0;
                if newer(s.samples_at) {
                    s.samples_control = Some(PortSamplesControl::decode(&data));
                }
            }
            Slot::SamplesResult(_) => {
                if newer(s.samples_at) {
                    s.samples_result = Some(PortSamplesResult::decode(&data));
                }
            }
            Slot::SamplesResultExt(_) => {
                if newer(s.samples_at) {
                    s.samples_result_ext = Some(PortSamplesResultExtended::decode(&data));
                }
            }
            Slot::Optional(_, pi, k) => {
                s.optional_strikes[k] = 0;
                if let Some(ps) = s.ports.get_mut(pi)
                    && let Some(slot) = ps.optional.get_or_insert_default().get_mut(k)
                {
                    *slot = Some(Arc::new(*data));
                }
            }
        }
    }

    /// Mark ports as served by DOCA telemetry diag: their data, packet and
    /// discard counters ([`crate::doca::DOCA_SLOTS`]) come from
    /// [`FabricState::apply_doca`] from now on, not from PM MADs. Returns
    /// the ports not in the fabric.
    pub fn set_doca_ports(
        &mut self,
        ports: &[(crate::ib::Guid, u8)],
    ) -> Vec<(crate::ib::Guid, u8)> {
        let mut missing = Vec::new();
        for &(guid, num) in ports {
            let Some(ni) = self.node_index(guid) else {
                missing.push((guid, num));
                continue;
            };
            let Some(pi) = self.fabric.nodes[ni]
                .ports
                .iter()
                .position(|p| p.num == num)
            else {
                missing.push((guid, num));
                continue;
            };
            let s = &mut self.nodes[ni];
            s.doca = true;
            if let Some(ps) = s.ports.get_mut(pi) {
                ps.doca
                    .get_or_insert_with(|| Box::new([None; crate::doca::DATA_IDS.len()]));
            }
        }
        missing
    }

    /// Fold one DOCA sample of a port: `values` are (index into
    /// [`crate::doca::DATA_IDS`], value) of `bits`-wide values; `gap`: the
    /// device dropped samples before this one. Returns the node's index
    /// (to publish it), or None when the port is not DOCA-served.
    pub fn apply_doca(
        &mut self,
        guid: crate::ib::Guid,
        num: u8,
        values: &[(usize, u64)],
        bits: u32,
        gap: bool,
    ) -> Option<usize> {
        let ni = self.node_index(guid)?;
        let pi = self.fabric.nodes[ni]
            .ports
            .iter()
            .position(|p| p.num == num)?;
        let s = &mut self.nodes[ni];
        let ps = s.ports.get_mut(pi)?;
        let prev = ps.doca.as_mut()?;
        let now = Instant::now();
        let mut disc = false;
        for &(i, v) in values {
            let Some(d) = crate::doca::DATA_IDS.get(i) else {
                continue;
            };
            let first = prev[i].is_none();
            disc |= hc::fold_octets(Arc::make_mut(&mut ps.hc), d.slot, prev[i], v, bits) || first;
            prev[i] = Some(v);
        }
        // A 32-bit value may have wrapped more than once in a gap.
        if disc || (gap && bits < 64) {
            ps.discontinuity = Some(now);
        }
        ps.read_at = Some(now);
        s.seen = true;
        s.doca_fresh = true;
        Some(ni)
    }

    /// The PortCountersExtended reading held for a port (node index, port
    /// index): the sweeper's, the cache does not keep it.
    pub fn extended(&self, guid: crate::ib::Guid, num: u8) -> Option<&PortCountersExtended> {
        let ni = self.node_index(guid)?;
        let pi = self.fabric.nodes[ni]
            .ports
            .iter()
            .position(|p| p.num == num)?;
        self.nodes[ni].ports.get(pi)?.extended.as_ref()
    }

    /// This agent is clearing counters of port `pi` of node `ni`: the
    /// next reading of them going down is no discontinuity notification.
    pub fn mark_agent_clear(&mut self, ni: usize, pi: usize) {
        if let Some(ps) = self.nodes.get_mut(ni).and_then(|n| n.ports.get_mut(pi)) {
            ps.agent_clear = true;
            ps.agent_clear_ext = true;
        }
    }

    /// The PortCounters reading held for a port (node index, port index).
    pub fn counters(&self, ni: usize, pi: usize) -> Option<&PortCounters> {
        self.nodes.get(ni)?.ports.get(pi)?.counters.as_ref()
    }

    /// Record that a write at `sent` produced this sample state: earlier
    /// readings in flight are dropped.
    pub fn mark_samples_written(&mut self, ni: usize, sent: Instant) {
        self.nodes[ni].samples_at = Some(sent);
    }

    /// The MAD transport itself failed: every node counts as unreachable at
    /// once (no line per node), and is asked ClassPortInfo again when it
    /// answers.
    pub fn mark_all_unreachable(&mut self) {
        let after = self.cfg.unreachable_after.max(1);
        for s in &mut self.nodes {
            s.failed_sweeps = s.failed_sweeps.max(after);
            s.cpi = None;
            s.redirect = None;
        }
    }

    /// End of a sweep: count failures, mark nodes unreachable or back,
    /// and update the rates of the ports read since the last mark.
    pub fn end_sweep(&mut self, answered: &[bool]) {
        for s in &mut self.nodes {
            for ps in &mut s.ports {
                update_rates(ps);
            }
        }
        // Nodes that newly left optional attributes unanswered, by the set
        // of attributes: (count, first node's GUID and index). One log line
        // per set, not per node: a fabric of one device type logs once.
        let mut unanswered: std::collections::BTreeMap<AttrMask, (usize, crate::ib::Guid, usize)> =
            std::collections::BTreeMap::new();
        for (ni, answered) in answered.iter().enumerate() {
            let node = &self.fabric.nodes[ni];
            let s = &mut self.nodes[ni];
            let ok = &(*answered || std::mem::take(&mut s.doca_fresh));
            if std::mem::take(&mut s.samples_missed) && *ok {
                s.samples_strikes += 1;
                if s.samples_strikes >= u32::from(STRIKES) {
                    debug!(node = %node.guid, "no answer to PortSamplesControl: asking again rarely");
                    s.no_samples = true;
                }
            }
            let missed = std::mem::take(&mut s.optional_missed);
            if *ok && missed != 0 {
                for (k, attr) in OPTIONAL_ATTRS.iter().enumerate() {
                    if missed & (1 << k) != 0 {
                        s.optional_strikes[k] += 1;
                        if s.optional_strikes[k] >= STRIKES {
                            debug!(node = %node.guid, attr, "no answer to an optional attribute: asking again rarely");
                            s.optional_unsupported |= 1 << k;
                        }
                    }
                }
            }
            let new_unsupported = s.optional_unsupported & !s.optional_reported;
            if new_unsupported != 0 {
                debug!(
                    node = %node.guid,
                    attrs = %attr_list(new_unsupported),
                    "optional PM attributes this node does not answer"
                );
                let e = unanswered
                    .entry(new_unsupported)
                    .or_insert((0, node.guid, ni));
                e.0 += 1;
                s.optional_reported |= new_unsupported;
            }
            if *ok {
                if s.failed_sweeps >= self.cfg.unreachable_after {
                    info!(node = %node.guid, desc = %crate::ib::Escaped(&node.description), "node answers again");
                }
                s.failed_sweeps = 0;
                s.seen = true;
            } else {
                s.failed_sweeps = s.failed_sweeps.saturating_add(1);
                if s.failed_sweeps == self.cfg.unreachable_after {
                    warn!(
                        node = %node.guid,
                        desc = %crate::ib::Escaped(&node.description),
                        sweeps = s.failed_sweeps,
                        "node unreachable"
                    );
                    // Ask ClassPortInfo again when it comes back.
                    s.cpi = None;
                    s.redirect = None;
                    s.no_samples = false;
                    s.samples_strikes = 0;
                    s.no_result_ext = false;
                    s.optional_unsupported = 0;
                    s.optional_strikes = [0; OPTIONAL_ATTRS.len()];
                    s.optional_reported = 0;
                }
            }
        }
        for (mask, (nodes, guid, ni)) in unanswered {
            info!(
                nodes,
                attrs = %attr_list(mask),
                first = %guid,
                desc = %crate::ib::Escaped(&self.fabric.nodes[ni].description),
                retry_sweeps = RETRY_UNANSWERED_SWEEPS,
                "optional PM attributes that `nodes` nodes (the first: `first`) do not answer: asked again once every `retry_sweeps` sweeps"
            );
        }
    }

    /// The record of node `ni` as the cache should show it, or `None` when
    /// it has no rows.
    fn record(&self, ni: usize, prev: &Snapshot) -> Option<NodeRecord> {
        let mut r = self.record_inner(ni, prev)?;
        r.source = match (self.nodes[ni].doca, self.cfg.mads) {
            (false, _) => DataSource::Pma,
            (true, false) => DataSource::Doca,
            (true, true) => DataSource::PmaAndDoca,
        };
        Some(r)
    }

    fn record_inner(&self, ni: usize, prev: &Snapshot) -> Option<NodeRecord> {
        let node = &self.fabric.nodes[ni];
        let s = &self.nodes[ni];
        if !s.seen {
            return None;
        }
        let reachable = s.failed_sweeps < self.cfg.unreachable_after;
        if !reachable {
            if !self.cfg.keep_unreachable {
                return None;
            }
            // An unreachable node keeps the values it had when last seen.
            if let Some(old) = prev.node(node.guid) {
                let mut old = old.clone();
                old.reachable = false;
                old.failed_sweeps = s.failed_sweeps;
                return Some(old);
            }
        }
        Some(record(node, s, reachable))
    }

    /// Publish a whole new snapshot.
    pub fn publish(&self, cache: &Cache) {
        self.publish_as(cache, self.sweep_no);
    }

    /// Publish a snapshot of every node with rows, numbered `sweep`;
    /// returns the number of nodes in it.
    fn publish_as(&self, cache: &Cache, sweep: u64) -> usize {
        let prev = cache.load();
        let nodes: Vec<Arc<NodeRecord>> = (0..self.fabric.nodes.len())
            .filter_map(|ni| self.record(ni, &prev))
            .map(Arc::new)
            .collect();
        let rows = nodes.len();
        // Fabric nodes are ordered by GUID, so the records are too.
        cache.publish(Snapshot {
            sweep,
            taken: Some(SystemTime::now()),
            interval: self.cfg.interval,
            nodes,
            stats: self.figures,
            reachable: 0,
            notify: prev.notify,
        });
        rows
    }

    /// The 64-bit totals of every port read by PM MADs, with the raw
    /// readings that fed them, for the state file (DOCA-served ports start
    /// again after a restart: their readings are not kept).
    pub fn export_totals(&self) -> Vec<SavedPort> {
        let mut out = Vec::new();
        for (node, s) in self.fabric.nodes.iter().zip(&self.nodes) {
            for (p, ps) in node.ports.iter().zip(&s.ports) {
                let (Some(pc), None) = (&ps.counters, &ps.doca) else {
                    continue;
                };
                let from_pcx = ps.hc_from_pcx == Some(true) && ps.extended.is_some();
                let mut saved = SavedPort {
                    guid: node.guid,
                    port: p.num,
                    from_pcx,
                    valid: 0,
                    totals: ps.hc.values,
                    raw: [0; HC_SLOTS],
                };
                for (k, c) in hc::HC.iter().enumerate() {
                    if ps.hc.valid & (1 << k) == 0 {
                        continue;
                    }
                    let raw = match (c.pcx, &ps.extended, c.pc) {
                        (Some(f), Some(x), _) if from_pcx => x.get(f),
                        (_, _, Some(f)) if !(from_pcx && c.pcx.is_some()) => pc.get(f),
                        _ => continue,
                    };
                    saved.raw[k] = raw;
                    saved.valid |= 1 << k;
                }
                out.push(saved);
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
            let Some(ni) = self.node_index(sp.guid) else {
                continue;
            };
            let Some(pi) = self.fabric.nodes[ni]
                .ports
                .iter()
                .position(|p| p.num == sp.port)
            else {
                continue;
            };
            let Some(ps) = self.nodes[ni].ports.get_mut(pi) else {
                continue;
            };
            if ps.counters.is_some() || ps.doca.is_some() {
                continue;
            }
            let mut pc = PortCounters::default();
            let mut pcx = PortCountersExtended::default();
            for (k, c) in hc::HC.iter().enumerate() {
                if sp.valid & (1 << k) == 0 {
                    continue;
                }
                match (c.pcx, c.pc) {
                    (Some(f), _) if sp.from_pcx => pcx.set(f, sp.raw[k]),
                    (_, Some(f)) => pc.set(f, sp.raw[k]),
                    _ => continue,
                }
                let t = Arc::make_mut(&mut ps.hc);
                t.values[k] = sp.totals[k];
                t.valid |= 1 << k;
            }
            ps.hc_from_pcx = Some(sp.from_pcx);
            ps.counters = Some(pc);
            ps.extended = sp.from_pcx.then_some(pcx);
            matched += 1;
        }
        matched
    }

    /// During the first sweep: mark the nodes that answered so far as seen
    /// and publish them (the sweep count stays at the sweeps completed).
    /// Returns the number of nodes with rows.
    pub fn publish_partial(&mut self, cache: &Cache, answered: &[bool]) -> usize {
        for (s, _) in self.nodes.iter_mut().zip(answered).filter(|(_, a)| **a) {
            s.seen = true;
        }
        self.publish_as(cache, self.sweep_no.saturating_sub(1))
    }

    /// Publish node `ni`'s record alone into the current snapshot.
    pub fn publish_node(&self, cache: &Cache, ni: usize) {
        let prev = cache.load();
        cache.patch(self.fabric.nodes[ni].guid, self.record(ni, &prev));
    }
}

fn record(node: &Node, s: &NodeState, reachable: bool) -> NodeRecord {
    NodeRecord {
        guid: node.guid,
        sys_guid: node.sys_guid,
        node_type: node.node_type,
        vendor_id: node.vendor_id,
        device_id: node.device_id,
        description: node.description.clone(),
        num_ports: node.num_ports,
        lid: node.lid,
        reachable,
        failed_sweeps: s.failed_sweeps,
        class_port_info: s.cpi,
        ports: node
            .ports
            .iter()
            .zip(&s.ports)
            .map(|(p, ps)| PortRecord {
                num: p.num,
                link: *p,
                counters: ps.counters,
                hc: Arc::clone(&ps.hc),
                rates: ps.rates.clone(),
                read_at: ps.read_at,
                discontinuity: ps.discontinuity,
                external_resets: ps.external_resets,
                optional: ps
                    .optional
                    .iter()
                    .flat_map(|o| o.iter())
                    .zip(OPTIONAL_ATTRS)
                    .filter_map(|(d, attr_id)| {
                        d.as_ref().map(|d| OptionalReading {
                            attr_id,
                            data: Arc::clone(d),
                        })
                    })
                    .collect(),
            })
            .collect(),
        samples_control: s.samples_control,
        samples_result: s.samples_result,
        samples_result_ext: s.samples_result_ext,
        source: Default::default(),
    }
}

/// Rates over the time since the port's rate mark, when it was read
/// since: at least a second apart, so a write's reply folded in between
/// sweeps does not make a rate out of a few milliseconds.
fn update_rates(ps: &mut PortState) {
    let Some(read_at) = ps.read_at else { return };
    match ps.rate_mark {
        Some((at, before)) => {
            let secs = read_at.saturating_duration_since(at).as_secs_f64();
            if secs >= 1.0 {
                ps.rates = Some(Arc::new(hc::rates(&before, &ps.hc, secs)));
                ps.rate_mark = Some((read_at, *ps.hc));
            }
        }
        None => ps.rate_mark = Some((read_at, *ps.hc)),
    }
}
