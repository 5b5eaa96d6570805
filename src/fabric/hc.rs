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
    /// The field counts 4-octet words; the total is in octets.
    pub words: bool,
    /// UNITS of the total.
    pub units: &'static str,
    /// An error counter (its rate is a column of pmPortRateTable).
    pub error: bool,
}

const fn data(name: &'static str, pc: Pc, pcx: Pcx) -> HcCounter {
    HcCounter {
        name,
        pc: Some(pc),
        pcx: Some(pcx),
        words: true,
        units: "octets",
        error: false,
    }
}

const fn pkts(name: &'static str, pc: Option<Pc>, pcx: Pcx) -> HcCounter {
    HcCounter {
        name,
        pc,
        pcx: Some(pcx),
        words: false,
        units: "packets",
        error: false,
    }
}

const fn err(name: &'static str, pc: Pc) -> HcCounter {
    HcCounter {
        name,
        pc: Some(pc),
        pcx: None,
        words: false,
        units: "errors",
        error: true,
    }
}

/// Every 64-bit counter, in pmPortCounters64Table column order
/// ([`column`]: pmPortCounterDiscontinuityTime keeps column 22, counters
/// added after it follow it).
#[rustfmt::skip]
pub const HC: [HcCounter; 22] = [
    data("OutOctets", Pc::XmitData, Pcx::XmitData),
    data("InOctets", Pc::RcvData, Pcx::RcvData),
    pkts("OutPkts", Some(Pc::XmitPkts), Pcx::XmitPkts),
    pkts("InPkts", Some(Pc::RcvPkts), Pcx::RcvPkts),
    pkts("OutUcastPkts", None, Pcx::UnicastXmitPkts),
    pkts("InUcastPkts", None, Pcx::UnicastRcvPkts),
    pkts("OutMulticastPkts", None, Pcx::MulticastXmitPkts),
    pkts("InMulticastPkts", None, Pcx::MulticastRcvPkts),
    err("SymbolErrors", Pc::SymbolErrors),
    err("LinkErrorRecovery", Pc::LinkErrorRecovery),
    err("LinkDowned", Pc::LinkDowned),
    err("RcvErrors", Pc::RcvErrors),
    err("RcvRemotePhysErrors", Pc::RcvRemotePhysErrors),
    err("RcvSwitchRelayErrors", Pc::RcvSwitchRelayErrors),
    err("XmitDiscards", Pc::XmitDiscards),
    err("XmitConstraintErrors", Pc::XmitConstraintErrors),
    err("RcvConstraintErrors", Pc::RcvConstraintErrors),
    err("LocalLinkIntegrityErrors", Pc::LocalLinkIntegrityErrors),
    err("ExcessiveBufferOverrunErrors", Pc::ExcessiveBufferOverrunErrors),
    err("VL15Dropped", Pc::Vl15Dropped),
    HcCounter {
        name: "XmitWait",
        pc: Some(Pc::XmitWait),
        pcx: None,
        words: false,
        units: "ticks",
        error: false,
    },
    // No PM attribute has it: only DOCA telemetry diag fills it
    // (port_rx_discard_buf_packets).
    HcCounter {
        name: "InDiscards",
        pc: None,
        pcx: None,
        words: false,
        units: "packets",
        error: false,
    },
];

/// pmPortCounterDiscontinuityTime's column in pmPortCounters64Table.
pub const DISCONTINUITY_COLUMN: u32 = 22;

/// The pmPortCounters64Table column of slot `k`.
pub const fn column(k: usize) -> u32 {
    let c = 1 + k as u32;
    if c < DISCONTINUITY_COLUMN { c } else { c + 1 }
}

pub const HC_SLOTS: usize = HC.len();

/// The slot of the counter named `name` (a compile-time lookup).
pub const fn slot(name: &str) -> usize {
    let mut i = 0;
    while i < HC.len() {
        if const_eq(HC[i].name, name) {
            return i;
        }
        i += 1;
    }
    panic!("no such 64-bit counter")
}

const fn const_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

pub const OUT_OCTETS: usize = slot("OutOctets");
pub const IN_OCTETS: usize = slot("InOctets");
pub const OUT_PKTS: usize = slot("OutPkts");
pub const IN_PKTS: usize = slot("InPkts");
pub const XMIT_WAIT: usize = slot("XmitWait");
pub const IN_DISCARDS: usize = slot("InDiscards");

/// Running 64-bit totals of a port, in the counters' raw units (words for
/// data; [`HcCounter::words`] says to multiply by 4 when shown). Counter64
/// semantics: they wrap at 2^64.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HcTotals {
    pub values: [u64; HC_SLOTS],
    /// Bit k: slot k has been fed by a reading (a counter the port's
    /// attributes do not carry has no value).
    pub valid: u32,
    /// Bit k: slot k is fed in octets already (DOCA counts bytes), not in
    /// the IBA's 4-octet words.
    pub octets: u32,
}

impl HcTotals {
    /// The total of slot `k` as the MIB shows it (octets for data).
    pub fn shown(&self, k: usize) -> Option<u64> {
        (self.valid & (1 << k) != 0).then(|| {
            let v = self.values[k];
            if HC[k].words && self.octets & (1 << k) == 0 {
                v.wrapping_mul(4)
            } else {
                v
            }
        })
    }
}

/// Fold one reading of a counter into its total. `prev` is the reading
/// before it from the same source (None: the first). Returns true when the
/// counter went down (cleared out of band, by this agent, or the node
/// restarted): a discontinuity.
fn fold(total: &mut u64, prev: Option<u64>, now: u64) -> bool {
    match prev {
        None => {
            *total = total.wrapping_add(now);
            false
        }
        Some(p) if now >= p => {
            *total = total.wrapping_add(now - p);
            false
        }
        Some(_) => {
            *total = total.wrapping_add(now);
            true
        }
    }
}

/// Fold a PortCounters reading: every slot it feeds, except those the
/// port reads from PortCountersExtended (`use_pcx`) and those in `skip`
/// (bit k: slot k has another source). Returns true on a discontinuity.
pub fn fold_pc(
    t: &mut HcTotals,
    prev: Option<&PortCounters>,
    cur: &PortCounters,
    use_pcx: bool,
    skip: u32,
) -> bool {
    let mut disc = false;
    for (k, c) in HC.iter().enumerate() {
        let Some(f) = c.pc else { continue };
        if (use_pcx && c.pcx.is_some()) || skip & (1 << k) != 0 {
            continue;
        }
        disc |= fold(&mut t.values[k], prev.map(|p| p.get(f)), cur.get(f));
        t.valid |= 1 << k;
    }
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
/// those in `skip`.
pub fn fold_pcx(
    t: &mut HcTotals,
    prev: Option<&PortCountersExtended>,
    cur: &PortCountersExtended,
    skip: u32,
) -> bool {
    let mut disc = false;
    for (k, c) in HC.iter().enumerate() {
        let Some(f) = c.pcx else { continue };
        if skip & (1 << k) != 0 {
            continue;
        }
        disc |= fold(&mut t.values[k], prev.map(|p| p.get(f)), cur.get(f));
        t.valid |= 1 << k;
    }
    disc
}

/// Fold one counter reading in octets or packets (DOCA telemetry diag)
/// into slot `k`. `bits` is the width of the value the device reported:
/// a 32-bit value is taken to have wrapped when it went down (the agent
/// reads it far more often than it can wrap twice); a 64-bit one that
/// went down was reset (a discontinuity, returned as true).
pub fn fold_octets(t: &mut HcTotals, k: usize, prev: Option<u64>, now: u64, bits: u32) -> bool {
    t.valid |= 1 << k;
    t.octets |= 1 << k;
    match prev {
        Some(p) if bits < 64 => {
            let mask = (1u64 << bits) - 1;
            t.values[k] = t.values[k].wrapping_add(now.wrapping_sub(p) & mask);
            false
        }
        _ => fold(&mut t.values[k], prev, now),
    }
}

/// Per-second rates of every slot over the last interval, in thousandths
/// (octets for data), from two totals `secs` apart.
pub fn rates(before: &HcTotals, after: &HcTotals, secs: f64) -> [u64; HC_SLOTS] {
    let mut r = [0u64; HC_SLOTS];
    if secs <= 0.0 {
        return r;
    }
    for (k, v) in r.iter_mut().enumerate() {
        if let (Some(a), Some(b)) = (before.shown(k), after.shown(k)) {
            *v = (b.wrapping_sub(a) as f64 * 1000.0 / secs) as u64;
        }
    }
    r
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
        assert!(!fold_pc(&mut t, None, &pc(100, 1), false, 0));
        assert!(!fold_pc(&mut t, Some(&pc(100, 1)), &pc(150, 3), false, 0));
        assert_eq!(t.shown(OUT_OCTETS), Some(600));
        assert_eq!(t.shown(slot("SymbolErrors")), Some(3));
        // An out-of-band clear: the total keeps counting.
        assert!(fold_pc(&mut t, Some(&pc(150, 3)), &pc(10, 0), false, 0));
        assert_eq!(t.shown(OUT_OCTETS), Some(640));
        // Ucast counters come from PortCountersExtended only.
        assert_eq!(t.shown(slot("OutUcastPkts")), None);
        // With PortCountersExtended, data comes from there.
        let x = PortCountersExtended {
            xmit_data: 1 << 40,
            unicast_xmit_pkts: 7,
            ..Default::default()
        };
        let mut u = HcTotals::default();
        fold_pc(&mut u, None, &pc(5, 0), true, 0);
        assert_eq!(u.shown(OUT_OCTETS), None);
        fold_pcx(&mut u, None, &x, 0);
        assert_eq!(u.shown(OUT_OCTETS), Some(4 << 40));
        assert_eq!(u.shown(slot("OutUcastPkts")), Some(7));
        let r = rates(
            &t,
            &{
                let mut t2 = t;
                t2.values[OUT_OCTETS] += 250;
                t2
            },
            10.0,
        );
        assert_eq!(r[OUT_OCTETS], 100_000, "100 octets/s in thousandths");
    }

    #[test]
    fn octet_counters_are_not_multiplied_and_32_bit_values_wrap() {
        let mut t = HcTotals::default();
        // A port whose data comes from elsewhere: PortCounters skips it.
        fold_pc(
            &mut t,
            None,
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
