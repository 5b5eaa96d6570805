//! The 64-bit counters the agent keeps per port: which PM attribute field
//! feeds each, in what unit, and how readings accumulate into totals that
//! never go backwards. pmPortCounters64Table and pmPortRateTable are
//! declared from [`HC`].

use crate::pm::port_counters::PortCountersField as Pc;
use crate::pm::port_counters_ext::PortCountersExtendedField as Pcx;
use crate::pm::{PortCounters, PortCountersExtended};

/// One 64-bit counter of a port.
#[derive(Clone, Copy, Debug)]
pub struct HcCounter {
    /// The name after `pmPortHC` / `pmPortRate` in the MIB.
    pub name: &'static str,
    /// The PortCounters field that feeds it when the node has no
    /// PortCountersExtended (and for the error counters, always).
    pub pc: Option<Pc>,
    /// The PortCountersExtended field that feeds it when the node answers
    /// that attribute.
    pub pcx: Option<Pcx>,
    /// That field is one of the additional counters, filled only where
    /// ClassPortInfo CapabilityMask2 says IsAdditionalPortCountersExtended-
    /// Supported ([`crate::pm::class_port_info::WideCounters::All`]);
    /// elsewhere it reads 0 and PortCounters feeds the slot.
    pub pcx_additional: bool,
    /// The field counts 4-octet words; the total is in octets.
    pub words: bool,
    /// UNITS of the total.
    pub units: &'static str,
    /// An error counter (its rate is a column of pmPortRateTable).
    pub error: bool,
    /// Its rate is kept ([`Rates`]): pmPortRateTable shows it.
    pub rate: bool,
    /// Its Prometheus family: the name after `infiniband_` (in base units,
    /// without `_total`) and its help.
    pub family: &'static str,
    pub help: &'static str,
    /// It counts faults (errors, discards): its family is in the `errors`
    /// collector, else in `traffic`.
    pub fault: bool,
}

type Face = (&'static str, &'static str);

const fn data(pc: Pc, pcx: Pcx, (family, help): Face) -> HcCounter {
    HcCounter {
        family,
        help,
        fault: false,
        name: "",
        pc: Some(pc),
        pcx: Some(pcx),
        pcx_additional: false,
        words: true,
        units: "octets",
        error: false,
        rate: true,
    }
}

const fn pkts(pc: Option<Pc>, pcx: Pcx, rate: bool, (family, help): Face) -> HcCounter {
    HcCounter {
        family,
        help,
        fault: false,
        name: "",
        pc,
        pcx: Some(pcx),
        pcx_additional: false,
        words: false,
        units: "packets",
        error: false,
        rate,
    }
}

const fn err(pc: Pc, pcx: Pcx, (family, help): Face) -> HcCounter {
    HcCounter {
        family,
        help,
        fault: true,
        name: "",
        pc: Some(pc),
        pcx: Some(pcx),
        pcx_additional: true,
        words: false,
        units: "errors",
        error: true,
        rate: true,
    }
}

/// Declares [`Total`] and [`HC`] from one list: each counter's name
/// (its variant, and the name after `pmPortHC` in the MIB) and its
/// declaration.
macro_rules! totals {
    ($( $total:ident => $decl:expr ),+ $(,)?) => {
        /// A 64-bit counter by name: `Total::SymbolErrors.k()` is its slot
        /// in [`HC`].
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Total { $($total),+ }

        impl Total {
            /// Its slot in [`HC`].
            pub const fn k(self) -> usize {
                self as usize
            }
        }

        /// Every 64-bit counter, in pmPortCounters64Table column order
        /// ([`column`]: pmPortCounterDiscontinuityTime keeps column 22,
        /// counters added after it follow it).
        pub const HC: [HcCounter; [$(Total::$total),+].len()] = [
            $( HcCounter { name: stringify!($total), ..$decl } ),+
        ];
    };
}

#[rustfmt::skip]
totals! {
    OutOctets => data(Pc::XmitData, Pcx::XmitData, ("port_transmit_data_bytes", "Data octets transmitted on the port (PortXmitData, in bytes).")),
    InOctets => data(Pc::RcvData, Pcx::RcvData, ("port_receive_data_bytes", "Data octets received on the port (PortRcvData, in bytes).")),
    OutPkts => pkts(Some(Pc::XmitPkts), Pcx::XmitPkts, true, ("port_transmit_packets", "Packets transmitted on the port (PortXmitPkts).")),
    InPkts => pkts(Some(Pc::RcvPkts), Pcx::RcvPkts, true, ("port_receive_packets", "Packets received on the port (PortRcvPkts).")),
    OutUcastPkts => pkts(None, Pcx::UnicastXmitPkts, false, ("port_unicast_transmit_packets", "Unicast packets transmitted (PortUnicastXmitPkts).")),
    InUcastPkts => pkts(None, Pcx::UnicastRcvPkts, false, ("port_unicast_receive_packets", "Unicast packets received (PortUnicastRcvPkts).")),
    OutMulticastPkts => pkts(None, Pcx::MulticastXmitPkts, false, ("port_multicast_transmit_packets", "Multicast packets transmitted (PortMulticastXmitPkts).")),
    InMulticastPkts => pkts(None, Pcx::MulticastRcvPkts, false, ("port_multicast_receive_packets", "Multicast packets received (PortMulticastRcvPkts).")),
    SymbolErrors => err(Pc::SymbolErrors, Pcx::SymbolErrors, ("port_symbol_errors", "Minor link errors detected on a physical lane (SymbolErrorCounter).")),
    LinkErrorRecovery => err(Pc::LinkErrorRecovery, Pcx::LinkErrorRecovery, ("port_link_error_recovery", "Successful link error recovery processes (LinkErrorRecoveryCounter).")),
    LinkDowned => err(Pc::LinkDowned, Pcx::LinkDowned, ("port_link_downed", "Failed link error recoveries that downed the link (LinkDownedCounter).")),
    RcvErrors => err(Pc::RcvErrors, Pcx::RcvErrors, ("port_receive_errors", "Received packets with an error (PortRcvErrors).")),
    RcvRemotePhysErrors => err(Pc::RcvRemotePhysErrors, Pcx::RcvRemotePhysErrors, ("port_receive_remote_physical_errors", "Received packets marked with the EBP delimiter (PortRcvRemotePhysicalErrors).")),
    RcvSwitchRelayErrors => err(Pc::RcvSwitchRelayErrors, Pcx::RcvSwitchRelayErrors, ("port_receive_switch_relay_errors", "Received packets discarded because they could not be forwarded (PortRcvSwitchRelayErrors).")),
    XmitDiscards => err(Pc::XmitDiscards, Pcx::XmitDiscards, ("port_transmit_discards", "Outbound packets discarded (PortXmitDiscards).")),
    XmitConstraintErrors => err(Pc::XmitConstraintErrors, Pcx::XmitConstraintErrors, ("port_transmit_constraint_errors", "Packets not transmitted for outbound partition or IP version checks (PortXmitConstraintErrors).")),
    RcvConstraintErrors => err(Pc::RcvConstraintErrors, Pcx::RcvConstraintErrors, ("port_receive_constraint_errors", "Packets received and discarded for inbound partition or IP version checks (PortRcvConstraintErrors).")),
    LocalLinkIntegrityErrors => err(Pc::LocalLinkIntegrityErrors, Pcx::LocalLinkIntegrityErrors, ("port_local_link_integrity_errors", "Times the local physical errors exceeded LocalPhyErrors (LocalLinkIntegrityErrors).")),
    ExcessiveBufferOverrunErrors => err(Pc::ExcessiveBufferOverrunErrors, Pcx::ExcessiveBufferOverrunErrors, ("port_excessive_buffer_overrun_errors", "Times buffer overruns exceeded OverrunErrors (ExcessiveBufferOverrunErrors).")),
    VL15Dropped => err(Pc::Vl15Dropped, Pcx::Vl15Dropped, ("port_vl15_dropped", "Incoming VL15 packets dropped for lack of buffers (VL15Dropped).")),
    XmitWait => HcCounter {
        name: "",
        pc: Some(Pc::XmitWait),
        pcx: Some(Pcx::XmitWait),
        pcx_additional: true,
        words: false,
        units: "ticks",
        error: false,
        rate: true,
        family: "port_transmit_wait",
        help: "Ticks during which the port had data to transmit but none was sent (PortXmitWait).",
        fault: false,
    },
    // No PM attribute has it: only DOCA telemetry diag fills it
    // (port_rx_discard_buf_packets).
    InDiscards => HcCounter {
        name: "",
        pc: None,
        pcx: None,
        pcx_additional: false,
        words: false,
        units: "packets",
        error: false,
        rate: false,
        family: "port_receive_discards",
        help: "Received packets dropped for lack of receive buffers (DOCA port_rx_discard_buf_packets).",
        fault: true,
    },
}

/// pmPortCounterDiscontinuityTime's column in pmPortCounters64Table.
pub const DISCONTINUITY_COLUMN: u32 = 22;

/// The pmPortCounters64Table column of slot `k`.
pub const fn column(k: usize) -> u32 {
    let c = 1 + k as u32;
    if c < DISCONTINUITY_COLUMN { c } else { c + 1 }
}

pub const HC_SLOTS: usize = HC.len();

/// The slot of the counter named `name` (the tests' shorthand).
#[cfg(test)]
pub const fn slot(name: &str) -> usize {
    let mut i = 0;
    while i < HC.len() {
        if crate::pm::decl::str_eq(HC[i].name, name) {
            return i;
        }
        i += 1;
    }
    panic!("no such 64-bit counter")
}

pub const OUT_OCTETS: usize = Total::OutOctets.k();
pub const IN_OCTETS: usize = Total::InOctets.k();
pub const OUT_PKTS: usize = Total::OutPkts.k();
pub const IN_PKTS: usize = Total::InPkts.k();
pub const XMIT_WAIT: usize = Total::XmitWait.k();
pub const SYMBOL_ERRORS: usize = Total::SymbolErrors.k();
// pmPortRateTable's bit, packet and congestion columns read these rates,
// and it has a column for each error counter's.
const _: () = {
    assert!(HC[OUT_OCTETS].rate && HC[IN_OCTETS].rate && HC[OUT_PKTS].rate);
    assert!(HC[IN_PKTS].rate && HC[XMIT_WAIT].rate);
    let mut k = 0;
    while k < HC.len() {
        assert!(!HC[k].error || HC[k].rate);
        k += 1;
    }
};
pub const IN_DISCARDS: usize = Total::InDiscards.k();

/// The slots fed by PortCountersExtended, in [`HC`] order: their raw
/// readings are kept in [`HcTotals`]'s `pcx` (the data and packet
/// counters) and `pcx_additional` (the additional counters, after them).
pub const PCX_FED: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pcx.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
};

/// How many of them are PortCountersExtended's data and packet counters.
pub const PCX_BASE: usize = {
    let mut n = 0;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pcx.is_some() && !HC[i].pcx_additional {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Bit k: slot k is fed by one of PortCountersExtended's additional
/// counters where the node has them, by PortCounters elsewhere.
pub const PCX_ADDITIONAL_SLOTS: u32 = {
    let mut m = 0;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pcx.is_some() && HC[i].pcx_additional {
            m |= 1 << i;
        }
        i += 1;
    }
    m
};

// The additional counters follow the data and packet counters, so a
// port that never has them holds no room for their readings.
const _: () = {
    let mut seen_additional = false;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pcx.is_some() {
            assert!(!seen_additional || HC[i].pcx_additional);
            seen_additional |= HC[i].pcx_additional;
        }
        i += 1;
    }
};

/// Bit k: slot k can be fed by PortCountersExtended.
pub const PCX_SLOTS: u32 = {
    let mut m = 0;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pcx.is_some() {
            m |= 1 << i;
        }
        i += 1;
    }
    m
};

/// The slots a PortCounters reading feeds: every one it has a field for,
/// except the data and packet counters read from PortCountersExtended
/// (`use_pcx`) and those in `skip` (the additional counters of a node that
/// has them are skipped by the caller).
pub const fn pc_slots(use_pcx: bool, skip: u32) -> u32 {
    let mut m = 0;
    let mut i = 0;
    while i < HC.len() {
        if HC[i].pc.is_some() && !(use_pcx && HC[i].pcx.is_some() && !HC[i].pcx_additional) {
            m |= 1 << i;
        }
        i += 1;
    }
    m & !skip
}

/// Slot `k`'s index into the PortCountersExtended readings.
const fn pcx_index(k: usize) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < k {
        if HC[i].pcx.is_some() {
            n += 1;
        }
        i += 1;
    }
    n
}

/// A port's running 64-bit totals, in the counters' raw units (words for
/// data; [`HcCounter::words`] says to multiply by 4 when shown), with
/// Counter64 semantics (they wrap at 2^64).
///
/// Nothing is kept that the readings give: the total of a slot is the
/// latest raw reading of its source plus an offset, and the offset is zero
/// until the counter went down, changed source or was restored from the
/// state file (most ports never have one, and then have no offsets at
/// all). Slots fed by DOCA telemetry diag keep their total in the offset.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HcTotals {
    /// The latest PortCounters reading (the draft's 32-bit table shows it).
    pc: Option<PortCounters>,
    /// The latest PortCountersExtended data and packet counters of the
    /// slots it feeds.
    pcx: [u64; PCX_BASE],
    /// The latest additional counters, for a port whose node has them.
    pcx_additional: Option<Box<[u64; PCX_FED - PCX_BASE]>>,
    /// Bit k: slot k has been fed by a reading (a counter the port's
    /// attributes do not carry has no value).
    pub valid: u32,
    /// Bit k: slot k is fed by PortCountersExtended.
    from_pcx: u32,
    /// What a port whose totals left its readings keeps (most ports have
    /// none).
    offsets: Option<Box<Offsets>>,
}

/// The offsets of a port's totals from their readings, and the slots DOCA
/// telemetry diag feeds: a DOCA-fed slot's total is its offset alone, so
/// a port with one has offsets anyway.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Offsets {
    by_slot: [u64; HC_SLOTS],
    /// Bit k: slot k is fed in octets already (DOCA counts bytes), not in
    /// the IBA's 4-octet words.
    octets: u32,
    /// Bit k: slot k's total is its offset alone (DOCA).
    explicit: u32,
}

/// Where a slot's readings come from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Source {
    Pc,
    Pcx,
    Explicit,
}

impl HcTotals {
    /// The latest PortCounters reading.
    pub fn pc(&self) -> Option<&PortCounters> {
        self.pc.as_ref()
    }

    /// The latest PortCountersExtended reading of the counters that feed
    /// totals (None until one was folded in).
    pub fn pcx(&self) -> Option<PortCountersExtended> {
        if self.from_pcx == 0 {
            return None;
        }
        let mut x = PortCountersExtended::default();
        for (k, c) in HC.iter().enumerate() {
            if let Some(f) = c.pcx {
                x.set(f, self.pcx_raw(k));
            }
        }
        Some(x)
    }

    /// The latest PortCountersExtended reading of slot `k` (0 when none
    /// is kept).
    fn pcx_raw(&self, k: usize) -> u64 {
        let i = pcx_index(k);
        match i.checked_sub(PCX_BASE) {
            None => self.pcx[i],
            Some(j) => self.pcx_additional.as_ref().map_or(0, |a| a[j]),
        }
    }

    fn set_pcx_raw(&mut self, k: usize, v: u64) {
        let i = pcx_index(k);
        match i.checked_sub(PCX_BASE) {
            None => self.pcx[i] = v,
            Some(j) => self.pcx_additional.get_or_insert_with(Default::default)[j] = v,
        }
    }

    /// Slot `k` reads from PortCountersExtended.
    pub fn fed_by_pcx(&self, k: usize) -> bool {
        self.from_pcx & (1 << k) != 0
    }

    /// Bit k: slot k is fed in octets already (DOCA), not in the IBA's
    /// 4-octet words.
    pub fn octets(&self) -> u32 {
        self.offsets.as_ref().map_or(0, |o| o.octets)
    }

    fn explicit(&self) -> u32 {
        self.offsets.as_ref().map_or(0, |o| o.explicit)
    }

    fn offsets_mut(&mut self) -> &mut Offsets {
        self.offsets.get_or_insert_default()
    }

    fn source(&self, k: usize) -> Source {
        if self.explicit() & (1 << k) != 0 {
            Source::Explicit
        } else if self.from_pcx & (1 << k) != 0 {
            Source::Pcx
        } else {
            Source::Pc
        }
    }

    /// The latest raw reading of slot `k`'s source.
    fn raw(&self, k: usize) -> u64 {
        match self.source(k) {
            Source::Explicit => 0,
            Source::Pcx => self.pcx_raw(k),
            Source::Pc => match (HC[k].pc, &self.pc) {
                (Some(f), Some(pc)) => pc.get(f),
                _ => 0,
            },
        }
    }

    fn offset(&self, k: usize) -> u64 {
        self.offsets.as_ref().map_or(0, |o| o.by_slot[k])
    }

    fn set_offset(&mut self, k: usize, v: u64) {
        if v != 0 || self.offsets.is_some() {
            self.offsets_mut().by_slot[k] = v;
        }
    }

    /// The total of slot `k` in raw units.
    pub fn value(&self, k: usize) -> Option<u64> {
        (self.valid & (1 << k) != 0).then(|| self.raw(k).wrapping_add(self.offset(k)))
    }

    /// The total of slot `k` as the MIB shows it (octets for data).
    pub fn shown(&self, k: usize) -> Option<u64> {
        self.value(k).map(|v| {
            if HC[k].words && self.octets() & (1 << k) == 0 {
                v.wrapping_mul(4)
            } else {
                v
            }
        })
    }

    /// Totals of zero in the slots of `valid` (tests build records with it).
    #[cfg(test)]
    pub(crate) fn zeros(valid: u32) -> HcTotals {
        HcTotals {
            valid,
            ..Default::default()
        }
    }

    /// Add `n` to slot `k`'s total (tests move totals with it).
    #[cfg(test)]
    pub(crate) fn add(&mut self, k: usize, n: u64) {
        self.valid |= 1 << k;
        let o = self.offset(k).wrapping_add(n);
        self.set_offset(k, o);
    }

    /// Every slot as shown.
    pub fn all_shown(&self) -> [Option<u64>; HC_SLOTS] {
        std::array::from_fn(|k| self.shown(k))
    }

    /// Slot `k` now reads `now` from `src`, `delta` more than its total
    /// before: the offset keeps the total. The raw reading itself is
    /// stored by the caller (`pcx` here, the PortCounters reading after
    /// every slot it feeds was folded).
    fn advance(&mut self, k: usize, src: Source, now: u64, delta: u64) {
        let total = self.value(k).unwrap_or(0).wrapping_add(delta);
        let bit = 1 << k;
        self.valid |= bit;
        self.from_pcx &= !bit;
        if let Some(o) = &mut self.offsets {
            o.explicit &= !bit;
        }
        match src {
            Source::Pc => {}
            Source::Pcx => {
                self.from_pcx |= bit;
                self.set_pcx_raw(k, now);
            }
            Source::Explicit => self.offsets_mut().explicit |= bit,
        }
        let raw = if src == Source::Explicit { 0 } else { now };
        self.set_offset(k, total.wrapping_sub(raw));
    }

    /// Take up totals saved with the raw readings that fed them (the state
    /// file): bit k of `valid` says slot k is saved; `from_pcx`: the data
    /// and packet slots were fed by PortCountersExtended. The state file
    /// does not say whether the additional counters were: with `from_pcx`
    /// their saved reading stands for the last of either attribute (as a
    /// PortCounters reading, held at the field's maximum), so the first
    /// reading after the restart adds its increase whichever feeds them.
    pub fn restore(
        &mut self,
        from_pcx: bool,
        valid: u32,
        raw: &[u64; HC_SLOTS],
        totals: &[u64; HC_SLOTS],
    ) {
        let mut pc = PortCounters::default();
        for (k, c) in HC.iter().enumerate() {
            if valid & (1 << k) == 0 {
                continue;
            }
            let bit = 1 << k;
            match (c.pcx, c.pc) {
                (Some(_), pc_field) if from_pcx => {
                    self.from_pcx |= bit;
                    self.set_pcx_raw(k, raw[k]);
                    if let Some(f) = pc_field.filter(|_| c.pcx_additional) {
                        pc.set(f, raw[k].min(f.field().max()));
                    }
                }
                (_, Some(f)) => pc.set(f, raw[k]),
                _ => continue,
            }
            self.valid |= bit;
            self.set_offset(k, totals[k].wrapping_sub(raw[k]));
        }
        self.pc = Some(pc);
    }

    /// The raw reading and the total of every slot fed by PM MADs, for
    /// the state file: (bit k: slot k is saved, raw, totals).
    pub fn export(&self) -> (u32, [u64; HC_SLOTS], [u64; HC_SLOTS]) {
        let (mut valid, mut raw, mut totals) = (0, [0; HC_SLOTS], [0; HC_SLOTS]);
        for k in 0..HC_SLOTS {
            if self.source(k) == Source::Explicit {
                continue;
            }
            if let Some(v) = self.value(k) {
                valid |= 1 << k;
                raw[k] = self.raw(k);
                totals[k] = v;
            }
        }
        (valid, raw, totals)
    }
}

/// The increase of a counter from reading `prev` (None: the first) to
/// `now`, and whether it went down (cleared out of band, by this agent,
/// or the node restarted: a discontinuity, counted from zero).
fn increase(prev: Option<u64>, now: u64) -> (u64, bool) {
    match prev {
        None => (now, false),
        Some(p) if now >= p => (now - p, false),
        Some(_) => (now, true),
    }
}

/// Fold a PortCounters reading: every slot it feeds, except those the
/// port reads from PortCountersExtended (`use_pcx`) and those in `skip`
/// (bit k: slot k has another source). Returns true on a discontinuity.
pub fn fold_pc(t: &mut HcTotals, cur: &PortCounters, use_pcx: bool, skip: u32) -> bool {
    let mut disc = false;
    let fed = pc_slots(use_pcx, skip);
    for (k, c) in HC.iter().enumerate() {
        let Some(f) = c.pc else { continue };
        if fed & (1 << k) == 0 {
            continue;
        }
        let (delta, down) = increase(t.pc.as_ref().map(|p| p.get(f)), cur.get(f));
        disc |= down;
        t.advance(k, Source::Pc, cur.get(f), delta);
    }
    t.pc = Some(*cur);
    disc
}

/// True when any PortCounters counter of `cur` is below `prev`: cleared
/// (the counters saturate, they never wrap), whichever source the totals
/// take them from.
pub fn pc_went_down(prev: &PortCounters, cur: &PortCounters) -> bool {
    HC.iter()
        .filter_map(|c| c.pc)
        .any(|f| cur.get(f) < prev.get(f))
}

/// Fold a PortCountersExtended reading into the slots it feeds, except
/// those in `skip`. A slot fed by another source before continues from its
/// total (the first reading adds nothing). Returns true on a
/// discontinuity.
pub fn fold_pcx(t: &mut HcTotals, cur: &PortCountersExtended, skip: u32) -> bool {
    let mut disc = false;
    for (k, c) in HC.iter().enumerate() {
        let Some(f) = c.pcx else { continue };
        if skip & (1 << k) != 0 {
            continue;
        }
        let now = cur.get(f);
        let prev = match (t.valid & (1 << k) != 0, t.source(k)) {
            (false, _) => None,
            (true, Source::Pcx) => Some(t.pcx_raw(k)),
            (true, _) => Some(now),
        };
        let (delta, down) = increase(prev, now);
        disc |= down;
        t.advance(k, Source::Pcx, now, delta);
    }
    disc
}

/// Fold one counter reading in octets or packets (DOCA telemetry diag)
/// into slot `k`. `bits` is the width of the value the device reported:
/// a 32-bit value is taken to have wrapped when it went down (the agent
/// reads it far more often than it can wrap twice); a 64-bit one that
/// went down was reset (a discontinuity, returned as true).
pub fn fold_octets(t: &mut HcTotals, k: usize, prev: Option<u64>, now: u64, bits: u32) -> bool {
    t.offsets_mut().octets |= 1 << k;
    let (delta, down) = match prev {
        Some(p) if bits < 64 => {
            let mask = (1u64 << bits) - 1;
            (now.wrapping_sub(p) & mask, false)
        }
        _ => increase(prev, now),
    };
    t.advance(k, Source::Explicit, now, delta);
    down
}

/// Readings closer together than this make no rate (a write's reply
/// folded in between sweeps would make one out of a few milliseconds);
/// half the sweep interval where that is shorter ([`rate_min_secs`]).
pub const RATE_MIN_SECS: f64 = 1.0;

/// The shortest time between two readings that makes a rate, for sweeps
/// `interval` apart: [`RATE_MIN_SECS`], or half the interval where that is
/// shorter (readings of consecutive sweeps come about an interval apart,
/// a little less or more as the port's place in the sweep moves).
pub fn rate_min_secs(interval: std::time::Duration) -> f64 {
    (interval.as_secs_f64() / 2.0).min(RATE_MIN_SECS)
}

/// How many [`HC`] slots have a rate.
pub const RATE_SLOTS: usize = {
    let mut n = 0;
    let mut k = 0;
    while k < HC_SLOTS {
        n += HC[k].rate as usize;
        k += 1;
    }
    n
};

/// Where slot k's rate is in [`Rates`] (`u8::MAX`: it has none).
const RATE_INDEX: [u8; HC_SLOTS] = {
    let mut idx = [u8::MAX; HC_SLOTS];
    let (mut n, mut k) = (0, 0);
    while k < HC_SLOTS {
        if HC[k].rate {
            idx[k] = n;
            n += 1;
        }
        k += 1;
    }
    idx
};

/// Per-second rates of a port's totals (octets for data) between its last
/// two readings at least [`rate_min_secs`] apart, as `f32` (a rate is an
/// average: seven significant digits are plenty), for the slots that have
/// one ([`HcCounter::rate`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rates {
    /// `f32::to_bits` of each rate, in slot order.
    per_s: [u32; RATE_SLOTS],
    /// Bit k: slot k has a rate.
    pub valid: u32,
}

impl Rates {
    /// Slot `k`'s rate per second.
    pub fn get(&self, k: usize) -> Option<f64> {
        let i = usize::from(*RATE_INDEX.get(k)?);
        (self.valid & (1 << k) != 0).then(|| f64::from(f32::from_bits(self.per_s[i])))
    }

    /// Update the slots in `mask` from the totals `before` (as shown) to
    /// `after`, `secs` apart; nothing when they are closer together than
    /// `min_secs`.
    pub fn update(
        &mut self,
        before: &[Option<u64>; HC_SLOTS],
        after: &HcTotals,
        mask: u32,
        (secs, min_secs): (f64, f64),
    ) {
        if secs < min_secs {
            return;
        }
        for (k, from) in before.iter().enumerate() {
            let Some(rate) = self.per_s.get_mut(usize::from(RATE_INDEX[k])) else {
                continue;
            };
            if mask & (1 << k) == 0 {
                continue;
            }
            if let (Some(from), Some(to)) = (*from, after.shown(k)) {
                *rate = ((to.wrapping_sub(from) as f64 / secs) as f32).to_bits();
                self.valid |= 1 << k;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn totals_count_through_clears_and_show_octets() {
        let mut t = HcTotals::default();
        let pc = |d: u32, s: u16| PortCounters {
            xmit_data: d,
            symbol_errors: s,
            ..Default::default()
        };
        assert!(!fold_pc(&mut t, &pc(100, 1), false, 0));
        assert!(!fold_pc(&mut t, &pc(150, 3), false, 0));
        assert_eq!(t.shown(OUT_OCTETS), Some(600));
        assert_eq!(t.shown(slot("SymbolErrors")), Some(3));
        // An out-of-band clear: the total keeps counting.
        assert!(fold_pc(&mut t, &pc(10, 0), false, 0));
        assert_eq!(t.shown(OUT_OCTETS), Some(640));
        assert_eq!(t.pc().unwrap().xmit_data, 10, "the reading itself is kept");
        // Ucast counters come from PortCountersExtended only.
        assert_eq!(t.shown(slot("OutUcastPkts")), None);
        // With PortCountersExtended, data comes from there.
        let x = PortCountersExtended {
            xmit_data: 1 << 40,
            unicast_xmit_pkts: 7,
            ..Default::default()
        };
        let mut u = HcTotals::default();
        fold_pc(&mut u, &pc(5, 0), true, 0);
        assert_eq!(u.shown(OUT_OCTETS), None);
        fold_pcx(&mut u, &x, 0);
        assert_eq!(u.shown(OUT_OCTETS), Some(4 << 40));
        assert_eq!(u.shown(slot("OutUcastPkts")), Some(7));
        assert!(u.offsets.is_none(), "no offsets while nothing went down");
        let before = u.all_shown();
        let y = PortCountersExtended {
            xmit_data: (1 << 40) + 250,
            ..x
        };
        fold_pcx(&mut u, &y, 0);
        let mut r = Rates::default();
        let min = rate_min_secs(std::time::Duration::from_secs(10));
        r.update(&before, &u, !0, (0.5, min));
        assert_eq!(r.get(OUT_OCTETS), None, "too close together");
        r.update(&before, &u, !0, (10.0, min));
        assert_eq!(r.get(OUT_OCTETS), Some(100.0), "1000 octets in 10 s");
        assert_eq!(r.get(OUT_PKTS), Some(0.0));
        assert_eq!(
            r.get(slot("OutUcastPkts")),
            None,
            "no rate column: not kept"
        );
        // Sweeps a second apart: readings come a little less than that
        // apart as often as a little more, and both make rates.
        let min = rate_min_secs(std::time::Duration::from_secs(1));
        let mut r = Rates::default();
        r.update(&before, &u, !0, (0.998, min));
        let got = r.get(OUT_OCTETS).expect("a rate from 0.998 s");
        assert!((got - 1000.0 / 0.998).abs() < 1e-3, "{got}");
        r.update(&before, &u, !0, (0.2, min));
        assert_eq!(r.get(OUT_OCTETS), Some(got), "0.2 s apart: kept");
    }

    #[test]
    fn a_change_of_source_continues_the_total_and_a_restore_gives_it_back() {
        let mut t = HcTotals::default();
        let pc = PortCounters {
            xmit_data: 1000,
            ..Default::default()
        };
        fold_pc(&mut t, &pc, false, 0);
        assert_eq!(t.value(OUT_OCTETS), Some(1000));
        // The node now answers PortCountersExtended: its first reading
        // adds nothing, the next one its increase.
        let x = |d: u64| PortCountersExtended {
            xmit_data: d,
            ..Default::default()
        };
        fold_pcx(&mut t, &x(5_000_000), 0);
        assert_eq!(t.value(OUT_OCTETS), Some(1000));
        fold_pcx(&mut t, &x(5_000_100), 0);
        assert_eq!(t.value(OUT_OCTETS), Some(1100));
        assert!(t.fed_by_pcx(OUT_OCTETS));
        // Back to PortCounters: its increase since its last reading.
        fold_pc(
            &mut t,
            &PortCounters {
                xmit_data: 1010,
                ..pc
            },
            false,
            0,
        );
        assert_eq!(t.value(OUT_OCTETS), Some(1110));
        // A PortCountersExtended reset: counted from zero.
        fold_pcx(&mut t, &x(7), 0);
        fold_pcx(&mut t, &x(9), 0);
        assert!(fold_pcx(&mut t, &x(3), 0));
        assert_eq!(t.value(OUT_OCTETS), Some(1110 + 2 + 3));
        // Saved and taken up again.
        let (valid, raw, totals) = t.export();
        let mut u = HcTotals::default();
        u.restore(true, valid, &raw, &totals);
        assert_eq!(u.all_shown(), t.all_shown());
        fold_pcx(&mut u, &x(13), 0);
        assert_eq!(u.value(OUT_OCTETS), Some(1110 + 2 + 3 + 10));
    }

    #[test]
    fn octet_counters_are_not_multiplied_and_32_bit_values_wrap() {
        let mut t = HcTotals::default();
        // A port whose data comes from elsewhere: PortCounters skips it.
        fold_pc(
            &mut t,
            &PortCounters {
                xmit_data: 100,
                symbol_errors: 2,
                ..Default::default()
            },
            false,
            1 << OUT_OCTETS,
        );
        assert_eq!(t.shown(OUT_OCTETS), None);
        assert_eq!(t.shown(slot("SymbolErrors")), Some(2));
        assert!(!fold_octets(&mut t, OUT_OCTETS, None, 1000, 64));
        assert!(!fold_octets(&mut t, OUT_OCTETS, Some(1000), 1500, 64));
        assert_eq!(t.shown(OUT_OCTETS), Some(1500), "bytes, not words");
        // A 64-bit counter that went down was reset.
        assert!(fold_octets(&mut t, OUT_OCTETS, Some(1500), 10, 64));
        assert_eq!(t.shown(OUT_OCTETS), Some(1510));
        // A 32-bit one wrapped.
        let mut u = HcTotals::default();
        fold_octets(&mut u, IN_OCTETS, None, 0xFFFF_FF00, 32);
        assert!(!fold_octets(&mut u, IN_OCTETS, Some(0xFFFF_FF00), 0x10, 32));
        assert_eq!(u.shown(IN_OCTETS), Some(0x1_0000_0010));
    }
}
