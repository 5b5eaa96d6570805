//! The records the sweeper folds readings into and readers see: one per
//! node and port, shared between the sweeper's state and the published
//! snapshot (a node's record is copied only when a sweep changes one the
//! snapshot still holds), and the per-node readings shared between nodes
//! that answered the same. Owned by neither the sweeper nor the cache.

use std::collections::HashSet;
use std::hash::Hash;
use std::num::NonZeroU64;
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

mod ports;

use super::hc::{HC_SLOTS, HcTotals, Rates};
use crate::ib::ber::Ber;
use crate::ib::xmit_wait::TickRule;
use crate::ib::{Node, NodeIdentity, Port};
use crate::pm::optional::OPTIONAL_ATTRS;
use crate::pm::samples::PortSamplesResultExtended;
use crate::pm::{ClassPortInfo, PortCounters, PortSamplesControl, PortSamplesResult};
pub use ports::PortIter;
use ports::{Joined, Ports};

/// A moment as a record keeps it: microseconds from a process-wide origin,
/// in 8 bytes with its `Option` (an `Option<Instant>` takes 16).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Stamp(NonZeroU64);

/// The origin of [`Stamp`]s: a day before the process's time origin
/// ([`crate::time::origin`]), so instants taken a little earlier (tests'
/// virtual clocks start from `Instant::now()`) still have their own stamp.
static ORIGIN: LazyLock<Instant> = LazyLock::new(|| {
    let origin = crate::time::origin();
    origin
        .checked_sub(Duration::from_secs(86_400))
        .unwrap_or(origin)
});

impl Stamp {
    pub fn instant(self) -> Instant {
        *ORIGIN + Duration::from_micros(self.0.get() - 1)
    }

    /// Milliseconds from the stamps' origin.
    pub fn millis(self) -> u64 {
        (self.0.get() - 1) / 1000
    }
}

impl From<Instant> for Stamp {
    fn from(at: Instant) -> Stamp {
        let us = at.saturating_duration_since(*ORIGIN).as_micros() as u64;
        Stamp(NonZeroU64::new(us.saturating_add(1)).unwrap_or(NonZeroU64::MIN))
    }
}

/// What the cache knows about one port. The sweeper folds readings into
/// it in place (the node's record is shared with the published snapshot
/// and copied only when a sweep changes it).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortRecord {
    /// The port's number, GUID, LID, link state, width, speed and peer.
    pub link: Port,
    /// Running 64-bit totals ([`crate::fabric::hc::HC`]) and the latest
    /// PortCounters reading.
    pub hc: HcTotals,
    /// Per-second rates of the totals between the last two readings.
    pub rates: Rates,
    /// When the PortCounters were read.
    pub read_at: Option<Stamp>,
    /// The last time one of the port's 64-bit totals lost increments (the
    /// row appeared, a counter went down, the source changed).
    pub discontinuity: Option<Stamp>,
    /// What few ports have (optional readings, FEC rates, DOCA), in one
    /// allocation taken when first needed: read through
    /// [`PortRecord::optional`], [`PortRecord::fec_rates`].
    pub(super) extras: Option<Box<PortExtras>>,
    /// Times the port's counters went down without a clear by this agent
    /// (cleared by another tool, or the node restarted).
    pub external_resets: u32,
    /// The subnet the port is swept in: its index among the agent's
    /// subnets ([`crate::ib::subnet::SubnetView::index`]); 0 with one.
    pub subnet: u8,
    /// What the port's link should run at given its far end, and whether
    /// it does: made when the fabric's link facts change
    /// ([`super::state::FabricState::assess_links`]), not on every read.
    pub assessment: crate::ib::LinkAssessment,
    /// What the sweeper keeps to fold the next readings in.
    pub(crate) sweep: PortMemo,
}

impl PortRecord {
    /// A port with no reading yet.
    pub fn new(link: Port) -> PortRecord {
        let mut r = PortRecord {
            link,
            ..Default::default()
        };
        r.note_link();
        r
    }

    /// Remember that the link is up, if it is.
    fn note_link(&mut self) {
        self.sweep.ever_linked |= self.link.state == Some(crate::ib::PortState::Active);
    }

    /// The port's link was Active at some time since the agent started: a
    /// port never cabled has no counters worth a series.
    pub fn ever_linked(&self) -> bool {
        self.sweep.ever_linked
    }

    /// The port's number.
    pub fn num(&self) -> u8 {
        self.link.num
    }

    /// The latest PortCounters reading.
    pub fn counters(&self) -> Option<&PortCounters> {
        self.hc.pc()
    }

    /// `errors` over what the port's link received in `secs` at its active
    /// width and speed ([`crate::ib::ber`]).
    pub fn ber(&self, errors: f64, secs: f64) -> Option<Ber> {
        crate::ib::ber::ber(errors, secs, self.link.width, self.link.speed)
    }

    /// The share of the time (0..=1) the port waited to transmit between
    /// its last two readings, its XmitWait ticks taken by `rule` (the
    /// node's [`NodeRecord::tick_rule`]); None when the rate or the
    /// port's active width and speed are not known.
    pub fn congestion(&self, rule: &TickRule) -> Option<f64> {
        let per_s = self.rates.get(super::hc::XMIT_WAIT)?;
        rule.share(per_s, self.link.width, self.link.speed)
    }

    /// Latest readings of the optional attributes the node answers.
    pub fn optional(&self) -> &OptionalReadings {
        const NONE: &OptionalReadings = &OptionalReadings(None);
        self.extras.as_deref().map_or(NONE, |x| &x.optional)
    }

    /// Rates of the FEC totals of PortExtendedSpeedsCounters, where the
    /// port answers it.
    pub fn fec_rates(&self) -> Option<&FecRates> {
        self.extras.as_deref()?.fec_rates.as_ref()
    }

    /// Hold `rates` as the rates of the FEC totals.
    pub(crate) fn set_fec_rates(&mut self, rates: FecRates) {
        self.extras_mut().fec_rates = Some(rates);
    }

    /// The port's extras, taken when first needed.
    pub(super) fn extras_mut(&mut self) -> &mut PortExtras {
        self.extras.get_or_insert_default()
    }

    /// The readings of the optional attributes, to fold one in.
    pub fn optional_mut(&mut self) -> &mut OptionalReadings {
        &mut self.extras_mut().optional
    }

    /// What the port keeps as a DOCA-served port.
    pub(super) fn doca(&self) -> Option<&DocaPort> {
        self.extras.as_deref()?.doca.as_deref()
    }

    /// The symbol BER between the port's last two PortCounters readings.
    pub fn symbol_ber(&self) -> Option<Ber> {
        self.ber(self.rates.get(super::hc::SYMBOL_ERRORS)?, 1.0)
    }

    /// The raw (before FEC) BER between the port's last two
    /// PortExtendedSpeedsCounters readings: corrected FEC symbols.
    pub fn raw_ber(&self) -> Option<Ber> {
        self.ber(self.fec_rates()?.corrected_symbols()?, 1.0)
    }

    /// The effective (after FEC) BER between the port's last two
    /// PortExtendedSpeedsCounters readings: uncorrectable FEC blocks.
    pub fn effective_ber(&self) -> Option<Ber> {
        self.ber(self.fec_rates()?.uncorrectable_blocks()?, 1.0)
    }
}

/// What a port of a fabric read by PM MADs mostly does not have, kept
/// apart so that such a port pays one pointer for all of it: the
/// optional attributes' readings (where `fabric.optional_attributes` is
/// on and the node answers them), the rates of the FEC totals of
/// PortExtendedSpeedsCounters, and what a DOCA-served port keeps.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortExtras {
    pub(super) optional: OptionalReadings,
    pub(super) fec_rates: Option<FecRates>,
    /// The port is served by DOCA telemetry diag (boxed: few ports are,
    /// and the optional readings do not pay for it).
    pub(super) doca: Option<Box<DocaPort>>,
}

/// When a port's PortExtendedSpeedsCounters was last read and the
/// per-second rates of its corrected FEC symbols (RS-FEC layout only) and
/// uncorrectable FEC blocks between its last two readings far enough
/// apart (`f32::to_bits`; None until then, where the layout has no such
/// total, or after it went down).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FecRates {
    pub at: Stamp,
    pub corrected_symbols: Option<u32>,
    pub uncorrectable_blocks: Option<u32>,
}

impl FecRates {
    /// Corrected FEC symbols per second.
    pub fn corrected_symbols(&self) -> Option<f64> {
        self.corrected_symbols.map(|b| f64::from(f32::from_bits(b)))
    }

    /// Uncorrectable FEC blocks per second.
    pub fn uncorrectable_blocks(&self) -> Option<f64> {
        self.uncorrectable_blocks
            .map(|b| f64::from(f32::from_bits(b)))
    }
}

/// The latest readings of the optional PM attributes
/// ([`OPTIONAL_ATTRS`]) a port answers, packed in one allocation: of each
/// reading only the bytes that hold its counters
/// ([`crate::pm::optional::counter_bytes`]: no selectors, nothing reserved
/// after the last counter), without their trailing zero bytes (counters
/// that never counted take no room). A port that answers none has no
/// allocation.
///
/// Layout: the set of attributes held (u32, bit k for `OPTIONAL_ATTRS[k]`),
/// one length byte per attribute, then the counter bytes in that order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OptionalReadings(Option<Box<[u8]>>);

const OPT_HEAD: usize = 4 + OPTIONAL_ATTRS.len();
const _: () = assert!(OPTIONAL_ATTRS.len() <= 32);

/// Where each attribute's counters sit in its data area.
const SPANS: [(usize, usize); OPTIONAL_ATTRS.len()] = {
    let mut s = [(0, 0); OPTIONAL_ATTRS.len()];
    let mut k = 0;
    while k < s.len() {
        s[k] = crate::pm::optional::counter_bytes(OPTIONAL_ATTRS[k]);
        assert!(s[k].0 < s[k].1, "an optional attribute without counters");
        assert!(s[k].1 <= 192 && s[k].1 - s[k].0 <= u8::MAX as usize);
        k += 1;
    }
    s
};

impl OptionalReadings {
    fn held(&self) -> u32 {
        self.0
            .as_ref()
            .map_or(0, |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn lens(&self) -> [u8; OPTIONAL_ATTRS.len()] {
        let mut l = [0; OPTIONAL_ATTRS.len()];
        if let Some(b) = &self.0 {
            l.copy_from_slice(&b[4..OPT_HEAD]);
        }
        l
    }

    /// `attr_id`'s index in [`OPTIONAL_ATTRS`], when a reading of it is
    /// held.
    fn index(&self, attr_id: u16) -> Option<usize> {
        let k = OPTIONAL_ATTRS.iter().position(|&a| a == attr_id)?;
        (self.held() & (1 << k) != 0).then_some(k)
    }

    /// The counter bytes held for `attr_id` (trailing zeros left out) and
    /// where they start in the data area.
    fn stored(&self, attr_id: u16) -> Option<(&[u8], usize)> {
        let k = self.index(attr_id)?;
        let b = self.0.as_ref()?;
        let lens = &b[4..OPT_HEAD];
        let at = offset(lens, k);
        Some((b.get(at..at + usize::from(lens[k]))?, SPANS[k].0))
    }

    /// The reading of `attr_id`: its counters where they were, zeros
    /// elsewhere (the selectors and reserved bytes are not kept).
    pub fn get(&self, attr_id: u16) -> Option<[u8; 192]> {
        let (kept, start) = self.stored(attr_id)?;
        let mut d = [0u8; 192];
        d[start..start + kept.len()].copy_from_slice(kept);
        Some(d)
    }

    /// A port answers `attr_id`.
    pub fn has(&self, attr_id: u16) -> bool {
        self.index(attr_id).is_some()
    }

    /// The `width` bits at bit `offset` of the reading of `attr_id`, as
    /// [`crate::pm::layout::get_bits`] reads them from [`Self::get`]'s
    /// data area, without building it.
    pub fn bits(&self, attr_id: u16, offset: usize, width: usize) -> Option<u64> {
        let (kept, start) = self.stored(attr_id)?;
        if width == 0 || width > 64 || offset + width > 192 * 8 {
            return Some(0);
        }
        let (first, last) = (offset / 8, (offset + width).div_ceil(8));
        // At most 9 bytes hold 64 bits at any bit offset.
        let mut w = [0u8; 9];
        for (i, byte) in (first..last).zip(w.iter_mut()) {
            *byte = i
                .checked_sub(start)
                .and_then(|j| kept.get(j))
                .copied()
                .unwrap_or(0);
        }
        Some(crate::pm::layout::get_bits(
            &w[..last - first],
            offset % 8,
            width,
        ))
    }

    /// The attributes held, in [`OPTIONAL_ATTRS`] order.
    pub fn attrs(&self) -> impl Iterator<Item = u16> + '_ {
        let held = self.held();
        OPTIONAL_ATTRS
            .iter()
            .enumerate()
            .filter(move |(k, _)| held & (1 << k) != 0)
            .map(|(_, &a)| a)
    }

    /// A reading of a per-lane attribute of kind `lane` is held.
    pub fn has_lane(&self, lane: crate::pm::optional::Lane) -> bool {
        self.attrs()
            .any(|a| crate::pm::optional::lane_attr(a, lane).is_some())
    }

    /// How many attributes are held.
    pub fn len(&self) -> usize {
        self.held().count_ones() as usize
    }

    pub fn is_empty(&self) -> bool {
        self.held() == 0
    }

    /// Hold the counters of `data` as the reading of `OPTIONAL_ATTRS[k]`.
    pub fn set(&mut self, k: usize, data: &[u8; 192]) {
        let data = &data[SPANS[k].0..SPANS[k].1];
        let n = data.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
        let (held, lens) = (self.held(), self.lens());
        let at = offset(&lens, k);
        if held & (1 << k) != 0
            && usize::from(lens[k]) == n
            && let Some(b) = &mut self.0
        {
            b[at..at + n].copy_from_slice(&data[..n]);
            return;
        }
        // Another length: the readings are laid out again.
        let old = self.0.take();
        let old_at = |j: usize| offset(&lens, j);
        let mut v = Vec::with_capacity(offset(&lens, lens.len()) + n - usize::from(lens[k]));
        v.extend_from_slice(&(held | 1 << k).to_le_bytes());
        let mut new_lens = lens;
        new_lens[k] = n as u8;
        v.extend_from_slice(&new_lens);
        for j in 0..OPTIONAL_ATTRS.len() {
            if j == k {
                v.extend_from_slice(&data[..n]);
            } else if let Some(b) = &old {
                let a = old_at(j);
                v.extend_from_slice(&b[a..a + usize::from(lens[j])]);
            }
        }
        self.0 = Some(v.into_boxed_slice());
    }
}

/// Equal values shared: one allocation per distinct value, whoever holds
/// it. Nodes of one kind answer ClassPortInfo and PortSamplesControl
/// alike, and PortSamplesResult too while no sample runs, so a fabric's
/// nodes hold a few of each instead of one per node.
#[derive(Debug)]
pub struct Interner<T>(HashSet<Arc<T>>);

impl<T> Default for Interner<T> {
    fn default() -> Self {
        Interner(HashSet::new())
    }
}

impl<T: Hash + Eq> Interner<T> {
    /// The shared value equal to `v`.
    pub fn intern(&mut self, v: T) -> Arc<T> {
        if let Some(a) = self.0.get(&v) {
            return Arc::clone(a);
        }
        let a = Arc::new(v);
        self.0.insert(Arc::clone(&a));
        a
    }

    /// Forget the values nobody else holds any more (bounds the set by
    /// the values in use).
    pub fn prune(&mut self) {
        self.0.retain(|a| Arc::strong_count(a) > 1);
    }

    /// Distinct values held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The per-node readings' interners.
#[derive(Debug, Default)]
pub struct Readings {
    pub cpi: Interner<ClassPortInfo>,
    pub control: Interner<PortSamplesControl>,
    pub result: Interner<PortSamplesResult>,
    pub result_ext: Interner<PortSamplesResultExtended>,
}

impl Readings {
    pub fn prune(&mut self) {
        self.cpi.prune();
        self.control.prune();
        self.result.prune();
        self.result_ext.prune();
    }
}

/// What fills a node's rows (pmNodeSource).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DataSource {
    /// PM MADs to the node's PMA (or the simulator's PMAs).
    #[default]
    Pma,
    /// DOCA telemetry diag on the local adapter alone.
    Doca,
    /// A local adapter: data, packets and discards from DOCA telemetry
    /// diag, everything else from PM MADs.
    PmaAndDoca,
}

impl DataSource {
    /// The pmNodeSource value.
    pub fn mib(self) -> i32 {
        match self {
            DataSource::Pma => 1,
            DataSource::Doca => 2,
            DataSource::PmaAndDoca => 3,
        }
    }
}

/// What the cache knows about one node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeRecord {
    /// The fabric model's node's identity (its description shared with it).
    pub id: NodeIdentity,
    /// False once the node failed the configured number of sweeps in a row.
    pub reachable: bool,
    /// Consecutive sweeps in which the node did not answer.
    pub failed_sweeps: u32,
    /// The readings of the node's per-node attributes, shared with every
    /// node that answered the same ([`Readings`]).
    pub class_port_info: Option<Arc<ClassPortInfo>>,
    /// Physical ports 1..=num_ports, ordered by number: the record's own,
    /// or its parts' ([`NodeRecord::joined`]); read through
    /// [`NodeRecord::ports`] and [`NodeRecord::port`].
    ports: Ports,
    pub samples_control: Option<Arc<PortSamplesControl>>,
    pub samples_result: Option<Arc<PortSamplesResult>>,
    /// PortSamplesResultExtended, where the node answers it.
    pub samples_result_ext: Option<Arc<PortSamplesResultExtended>>,
    /// What fills the node's rows.
    pub source: DataSource,
    /// The node-name-map's name for the node, set where a snapshot is
    /// published ([`NodeRecord::name`]): one pointer, shared with the map.
    pub mapped_name: Option<crate::ib::names::MappedName>,
}

impl NodeRecord {
    /// The name every face names the node by: the node-name-map's name
    /// when the map has the GUID, else its NodeDescription (applied once,
    /// where a snapshot is published). NodeDescription itself stays
    /// readable as `id.description`.
    pub fn name(&self) -> &str {
        self.name_arc()
    }

    /// [`NodeRecord::name`], shared.
    pub fn name_arc(&self) -> &Arc<str> {
        self.mapped_name.as_deref().unwrap_or(&self.id.description)
    }

    /// The rule the node's XmitWait ticks follow: its ASIC family by
    /// NodeInfo, the Tick its PMA answered in PortSamplesControl
    /// ([`crate::ib::xmit_wait`]).
    pub fn tick_rule(&self) -> TickRule {
        TickRule::of(
            self.id.vendor_id,
            self.id.device_id,
            self.samples_control.as_deref().map(|c| c.tick),
        )
    }

    /// The record of `node`, nothing read yet.
    pub fn new(node: &Node) -> NodeRecord {
        NodeRecord {
            id: node.id.clone(),
            reachable: true,
            failed_sweeps: 0,
            class_port_info: None,
            ports: Ports::Own(node.ports.iter().map(|&p| PortRecord::new(p)).collect()),
            samples_control: None,
            samples_result: None,
            samples_result_ext: None,
            source: DataSource::Pma,
            mapped_name: None,
        }
    }

    /// One record of a node seen in several subnets, made of the
    /// members' records of it (`parts`, at least one): the first part's
    /// node facts; the ports of every part, pointed into, not copied (of
    /// a port two parts have, the record with a link); reachable when any
    /// part is.
    pub fn joined(parts: Vec<Arc<NodeRecord>>) -> NodeRecord {
        let first = &parts[0];
        NodeRecord {
            id: first.id.clone(),
            reachable: parts.iter().any(|p| p.reachable),
            failed_sweeps: parts.iter().map(|p| p.failed_sweeps).min().unwrap_or(0),
            class_port_info: first.class_port_info.clone(),
            samples_control: first.samples_control.clone(),
            samples_result: first.samples_result.clone(),
            samples_result_ext: first.samples_result_ext.clone(),
            source: first.source,
            mapped_name: first.mapped_name.clone(),
            ports: Ports::Joined(Box::new(Joined::new(parts.into_boxed_slice()))),
        }
    }

    /// The members' records a joined record is made of (none for a
    /// record with ports of its own).
    pub fn parts(&self) -> &[Arc<NodeRecord>] {
        match &self.ports {
            Ports::Own(_) => &[],
            Ports::Joined(j) => &j.parts,
        }
    }

    /// The node's port records, ordered by number.
    pub fn ports(&self) -> PortIter<'_> {
        self.ports.iter()
    }

    /// How many ports the record has.
    pub fn port_count(&self) -> usize {
        self.ports.len()
    }

    /// The record of port `num`.
    pub fn port(&self, num: u8) -> Option<&PortRecord> {
        self.ports.get(num)
    }

    /// The record's own ports (none for a joined record).
    fn own(&self) -> &[PortRecord] {
        match &self.ports {
            Ports::Own(v) => v,
            Ports::Joined(_) => &[],
        }
    }

    /// The record's own ports, to fold readings into (the sweeper's
    /// records; a joined record has none of its own to change).
    pub fn ports_mut(&mut self) -> &mut [PortRecord] {
        match &mut self.ports {
            Ports::Own(v) => v,
            Ports::Joined(_) => &mut [],
        }
    }

    /// The record with `ports` as its own ports (ordered by number).
    pub fn with_ports(mut self, ports: Vec<PortRecord>) -> NodeRecord {
        self.ports = Ports::Own(ports);
        self
    }

    /// The record holds `node` as it is: the same identity, the same
    /// ports with the same link facts.
    pub fn describes(&self, node: &Node) -> bool {
        self.id == node.id
            && self.port_count() == node.ports.len()
            && self.ports().zip(&node.ports).all(|(r, p)| r.link == *p)
    }

    /// Take `node`'s identity and link facts, keeping what was read of
    /// the node and of the ports it still has (matched by number).
    pub fn relink(&mut self, node: &Node) {
        self.id = node.id.clone();
        let subnet = self.ports().next().map_or(0, |p| p.subnet);
        let mut old = match std::mem::take(&mut self.ports) {
            Ports::Own(v) => v,
            joined @ Ports::Joined(_) => joined.iter().cloned().collect(),
        };
        self.ports = Ports::Own(
            node.ports
                .iter()
                .map(|&p| {
                    let mut r = match old.iter().position(|r| r.num() == p.num) {
                        Some(i) => old.swap_remove(i),
                        None => PortRecord {
                            subnet,
                            ..PortRecord::new(p)
                        },
                    };
                    r.link = p;
                    r.note_link();
                    r
                })
                .collect(),
        );
    }

    /// The record with every port in subnet `subnet`.
    pub fn in_subnet(mut self, subnet: u8) -> NodeRecord {
        for p in self.ports_mut() {
            p.subnet = subnet;
        }
        self
    }

    /// The fabric model's node the record holds.
    pub fn to_node(&self) -> Node {
        Node {
            id: self.id.clone(),
            ports: self.ports().map(|p| p.link).collect(),
        }
    }
}

#[cfg(test)]
impl NodeRecord {
    /// A reachable switch `sw{i}` of GUID 0x100 + i with `ports` ports,
    /// each Active with every 64-bit total at zero, its link to what
    /// `peer` says (tests build fabrics of them).
    pub(crate) fn test_switch(
        i: u64,
        ports: u8,
        peer: impl Fn(u8) -> (crate::ib::Guid, u8),
    ) -> NodeRecord {
        use crate::ib::{Guid, NodeType, PortState};
        let node = Node {
            id: NodeIdentity {
                guid: Guid(0x100 + i),
                sys_guid: Guid(0),
                node_type: NodeType::Switch,
                vendor_id: 0,
                device_id: 0,
                description: format!("sw{i}").into(),
                num_ports: ports,
                lid: 1,
            },
            ports: (1..=ports)
                .map(|q| {
                    let mut p = Port {
                        num: q,
                        state: Some(PortState::Active),
                        ..Default::default()
                    };
                    p.set_remote(Some(peer(q)));
                    p
                })
                .collect(),
        };
        let mut rec = NodeRecord::new(&node);
        for p in rec.ports_mut() {
            p.hc = HcTotals::zeros(u32::MAX >> (32 - super::hc::HC_SLOTS));
        }
        rec
    }
}

/// What the sweeper keeps of a port to fold its next readings in: part of
/// its record ([`PortRecord::sweep`]), where no table looks.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortMemo {
    /// When the held PortCounters reading's request was sent.
    pub(super) counters_at: Option<Stamp>,
    /// When PortCountersExtended was last read (its rates start there).
    pub(super) pcx_read_at: Option<Stamp>,
    /// Data and packets were last read from PortCountersExtended.
    pub(super) hc_from_pcx: Option<bool>,
    /// This agent cleared the port's PortCounters: the next reading may
    /// go down without that being news ([`super::state::FabricState::mark_agent_clear`]).
    pub(super) agent_clear: bool,
    /// The same for PortCountersExtended (a PMA may clear both).
    pub(super) agent_clear_ext: bool,
    /// The port's link was Active at some time since the agent started.
    pub(super) ever_linked: bool,
}

/// A DOCA-served port: the latest value of each [`super::doca_ids::DATA_IDS`]
/// entry (None until read), and the totals its rates start from (DOCA
/// samples come faster than a rate is worth making).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct DocaPort {
    pub(super) prev: [Option<u64>; super::doca_ids::DATA_IDS.len()],
    pub(super) rate_mark: Option<(Instant, [Option<u64>; HC_SLOTS])>,
}

/// Where the reading of attribute `k` starts in a readings buffer whose
/// readings have the lengths `lens`.
fn offset(lens: &[u8], k: usize) -> usize {
    OPT_HEAD + lens[..k].iter().map(|&l| usize::from(l)).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(port: u8, fill: &[(usize, u8)]) -> [u8; 192] {
        let mut d = [0u8; 192];
        d[1] = port;
        for &(i, v) in fill {
            d[i] = v;
        }
        d
    }

    #[test]
    fn equal_values_share_one_allocation_until_nobody_holds_them() {
        let mut i = Interner::default();
        let a = i.intern(ClassPortInfo {
            capability_mask: 0x200,
            ..Default::default()
        });
        let b = i.intern(ClassPortInfo {
            capability_mask: 0x200,
            ..Default::default()
        });
        let c = i.intern(ClassPortInfo::default());
        assert!(Arc::ptr_eq(&a, &b));
        assert!(!Arc::ptr_eq(&a, &c));
        assert_eq!(i.len(), 2);
        drop(c);
        i.prune();
        assert_eq!(i.len(), 1, "the value nobody holds is forgotten");
        drop((a, b));
        i.prune();
        assert!(i.is_empty());
    }

    #[test]
    fn stamps_give_back_their_instant_to_the_microsecond() {
        let t = Instant::now();
        let earlier = t - Duration::from_secs(3600);
        for at in [earlier, t, t + Duration::from_nanos(1_500)] {
            let back = Stamp::from(at).instant();
            let diff = if back > at { back - at } else { at - back };
            assert!(diff < Duration::from_micros(1), "{diff:?}");
        }
        assert!(Stamp::from(earlier) < Stamp::from(t));
        assert_eq!(std::mem::size_of::<Option<Stamp>>(), 8);
    }

    /// The sizes docs/design.md gives (memory per port and per node).
    #[test]
    fn a_port_record_and_its_fec_rates_take_what_the_design_says() {
        assert_eq!(std::mem::size_of::<crate::ib::Port>(), 32);
        assert_eq!(std::mem::size_of::<PortRecord>(), 296);
        assert_eq!(std::mem::size_of::<FecRates>(), 24);
        // With the 16 bytes of its Arc, a block of 144 bytes of malloc's.
        assert_eq!(std::mem::size_of::<NodeRecord>(), 120);
    }

    #[test]
    fn optional_readings_keep_the_counter_bytes_without_their_trailing_zeros() {
        let mut o = OptionalReadings::default();
        assert!(
            o.is_empty() && o.0.is_none(),
            "nothing held, nothing allocated"
        );
        // 0x15: counters in bytes 4..16; 0x1A: 4..68; 0x1F: 16..152.
        let (a, b, c) = (OPTIONAL_ATTRS[0], OPTIONAL_ATTRS[5], OPTIONAL_ATTRS[16]);
        assert_eq!(
            (SPANS[0], SPANS[5], SPANS[16]),
            ((4, 16), (4, 68), (16, 152))
        );
        o.set(5, &reading(3, &[(40, 9)]));
        o.set(0, &reading(3, &[(4, 1), (100, 5)]));
        o.set(16, &reading(3, &[(151, 7), (191, 5)]));
        assert_eq!(o.attrs().collect::<Vec<_>>(), vec![a, b, c]);
        // The selectors (PortSelect 3) and what lies past the last counter
        // are not kept.
        assert_eq!(o.get(a), Some(reading(0, &[(4, 1)])));
        assert_eq!(o.get(b), Some(reading(0, &[(40, 9)])));
        assert_eq!(o.get(c), Some(reading(0, &[(151, 7)])));
        assert_eq!(o.get(OPTIONAL_ATTRS[1]), None);
        assert_eq!(o.0.as_ref().unwrap().len(), 4 + 17 + 1 + 37 + 136);
        // The same length is written in place; another one lays the
        // readings out again, the others unchanged.
        o.set(0, &reading(3, &[(4, 2)]));
        assert_eq!(o.get(a), Some(reading(0, &[(4, 2)])));
        o.set(5, &reading(3, &[(60, 1), (40, 9)]));
        assert_eq!(o.get(b), Some(reading(0, &[(60, 1), (40, 9)])));
        assert_eq!(o.get(a), Some(reading(0, &[(4, 2)])));
        assert_eq!(o.get(c), Some(reading(0, &[(151, 7)])));
        // A reading of zeros only (port 0) is held, in no room.
        o.set(1, &[0; 192]);
        assert_eq!(o.get(OPTIONAL_ATTRS[1]), Some([0; 192]));
        assert_eq!(o.len(), 4);
        // Every counter of every attribute answered: at most the sum of
        // the counter bytes.
        let mut full = OptionalReadings::default();
        for k in 0..OPTIONAL_ATTRS.len() {
            full.set(k, &[0xFF; 192]);
            let mut want = [0u8; 192];
            want[SPANS[k].0..SPANS[k].1].fill(0xFF);
            assert_eq!(full.get(OPTIONAL_ATTRS[k]), Some(want));
        }
        // Bits read in place agree with the data area, at every offset and
        // width, inside and outside what is kept.
        for (k, bytes) in [
            (0usize, vec![(4, 0x81), (15, 0xF0)]),
            (16, vec![(16, 1), (151, 0xFF)]),
        ] {
            let mut o = OptionalReadings::default();
            let r = reading(9, &bytes);
            o.set(k, &r);
            let d = o.get(OPTIONAL_ATTRS[k]).unwrap();
            assert!(o.has(OPTIONAL_ATTRS[k]) && !o.has(OPTIONAL_ATTRS[1]));
            for off in (0..192 * 8 - 64).step_by(3) {
                for width in [1, 2, 8, 13, 16, 32, 64] {
                    assert_eq!(
                        o.bits(OPTIONAL_ATTRS[k], off, width),
                        Some(crate::pm::layout::get_bits(&d, off, width)),
                        "attr {k} bit {off} width {width}"
                    );
                }
            }
            assert_eq!(o.bits(OPTIONAL_ATTRS[1], 32, 16), None);
        }
        let kept: usize = SPANS.iter().map(|(s, e)| e - s).sum();
        assert_eq!(full.0.as_ref().unwrap().len(), OPT_HEAD + kept);
    }
}
