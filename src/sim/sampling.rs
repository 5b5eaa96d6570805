//! The sample mechanism of a simulated PMA: PortSamplesControl and
//! PortSamplesResult. The behaviour is described in the [`super::pma`]
//! module documentation; this file implements it.

use crate::ib::{Node, NodeType};
use crate::pm::mad::{self, status};
use crate::pm::{PortSamplesControl, PortSamplesResult, port_counters as pc, samples};

use super::State;
use super::traffic::{Totals, q};

type Data = [u8; mad::DATA_SIZE];

/// The link transfer period the sampling clock is derived from, in
/// picoseconds: one bit time of a 2.5 Gb/s lane, the period the IBA uses
/// in its Tick definition. Used for every node whatever its link speeds.
pub const LINK_TRANSFER_PERIOD_PS: u64 = 400;

/// Length of one sample tick for a Tick value: (Tick + 1) x 10 link
/// transfer periods, in ns (a multiple of 4 ns).
pub const fn tick_ns(tick: u8) -> u64 {
    (tick as u64 + 1) * 10 * LINK_TRANSFER_PERIOD_PS / 1000
}

/// Optional quantities (CounterSelect codes, without a VL number).
pub mod quantity {
    pub const XMIT_QUEUE: u16 = 0x4000;
    pub const XMIT_DATA_VL: u16 = 0x4001;
    pub const RCV_DATA_VL: u16 = 0x4002;
    pub const XMIT_PKT_VL: u16 = 0x4003;
    pub const RCV_PKT_VL: u16 = 0x4004;
    pub const LOCAL_PHYSICAL_ERRORS: u16 = 0x4005;
    pub const SW_HOQ_LIFETIME_LIMIT_DISCARDS: u16 = 0x400E;
    pub const OP_RCV_PKTS: u16 = 0x400F;
    pub const OP_RCV_DATA: u16 = 0x4010;
    pub const VL_XMIT_WAIT: u16 = 0x4016;
    pub const SW_PORT_VL_CONGESTION: u16 = 0x4030;

    /// The CounterSelect code of a per-VL quantity for VL `vl` (0..=15):
    /// the VL number in bits 8..11 (`0x0n00`), e.g. PortXmitDataVL\[3\] =
    /// `0x4301`.
    pub const fn per_vl(code: u16, vl: u8) -> u16 {
        code | (((vl & 0x0F) as u16) << 8)
    }
}

/// OptionMask bit numbers (bit 0 = least significant bit of the 64-bit
/// field), as the IBA and the draft MIB number them.
pub mod option_bit {
    pub const XMIT_QUEUE: u32 = 1;
    pub const XMIT_DATA_VL: u32 = 2;
    pub const RCV_DATA_VL: u32 = 3;
    pub const XMIT_PKT_VL: u32 = 4;
    pub const RCV_PKT_VL: u32 = 5;
    pub const LOCAL_PHYSICAL_ERRORS: u32 = 6;
    pub const SW_HOQ_LIFETIME_LIMIT_DISCARDS: u32 = 15;
    pub const OP_RCV_PKTS: u32 = 16;
    pub const OP_RCV_DATA: u32 = 17;
    pub const VL_XMIT_WAIT: u32 = 23;
    pub const SW_PORT_VL_CONGESTION: u32 = 48;
}

/// CounterMask bits.
const MASK_MANDATORY: u8 = 0b001;
const MASK_OPTIONAL: u8 = 0b010;

/// OpCode value meaning "all opcodes".
pub const ALL_OPCODES: u8 = 0xFF;

/// An optional quantity the simulator models: its code, OptionMask bit,
/// whether it counts only packets of the selected OpCode, and the traffic
/// quantity it equals on VL0 (or in total, for quantities without VLs).
struct Optional {
    code: u16,
    bit: u32,
    op_specific: bool,
    q: usize,
}

const OPTIONAL: &[Optional] = &[
    Optional {
        code: quantity::XMIT_DATA_VL,
        bit: option_bit::XMIT_DATA_VL,
        op_specific: false,
        q: q::XMIT_DATA,
    },
    Optional {
        code: quantity::RCV_DATA_VL,
        bit: option_bit::RCV_DATA_VL,
        op_specific: false,
        q: q::RCV_DATA,
    },
    Optional {
        code: quantity::XMIT_PKT_VL,
        bit: option_bit::XMIT_PKT_VL,
        op_specific: false,
        q: q::XMIT_PKTS,
    },
    Optional {
        code: quantity::RCV_PKT_VL,
        bit: option_bit::RCV_PKT_VL,
        op_specific: false,
        q: q::RCV_PKTS,
    },
    Optional {
        code: quantity::LOCAL_PHYSICAL_ERRORS,
        bit: option_bit::LOCAL_PHYSICAL_ERRORS,
        op_specific: false,
        q: q::RCV_ERRORS,
    },
    Optional {
        code: quantity::SW_HOQ_LIFETIME_LIMIT_DISCARDS,
        bit: option_bit::SW_HOQ_LIFETIME_LIMIT_DISCARDS,
        op_specific: false,
        q: q::XMIT_DISCARDS,
    },
    Optional {
        code: quantity::OP_RCV_PKTS,
        bit: option_bit::OP_RCV_PKTS,
        op_specific: true,
        q: q::RCV_PKTS,
    },
    Optional {
        code: quantity::OP_RCV_DATA,
        bit: option_bit::OP_RCV_DATA,
        op_specific: true,
        q: q::RCV_DATA,
    },
    Optional {
        code: quantity::VL_XMIT_WAIT,
        bit: option_bit::VL_XMIT_WAIT,
        op_specific: false,
        q: q::XMIT_WAIT,
    },
    Optional {
        code: quantity::SW_PORT_VL_CONGESTION,
        bit: option_bit::SW_PORT_VL_CONGESTION,
        op_specific: false,
        q: q::XMIT_DISCARDS,
    },
];

/// What one PMA's sample mechanism offers (the read-only part of
/// PortSamplesControl).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SampleCaps {
    pub tick: u8,
    pub counter_width: u8,
    pub counter_masks: [u8; samples::NUM_COUNTERS],
    pub option_mask: u64,
}

const fn bits(list: &[u32]) -> u64 {
    let mut m = 0u64;
    let mut i = 0;
    while i < list.len() {
        m |= 1u64 << list[i];
        i += 1;
    }
    m
}

const fn masks(optional_counters: usize) -> [u8; samples::NUM_COUNTERS] {
    let mut m = [MASK_MANDATORY; samples::NUM_COUNTERS];
    let mut i = 0;
    while i < optional_counters {
        m[i] |= MASK_OPTIONAL;
        i += 1;
    }
    m
}

/// Switches: Tick 0xFF (1.024 us), 32-bit counters, Counter0..3 also count
/// optional quantities.
pub const SWITCH_CAPS: SampleCaps = SampleCaps {
    tick: 0xFF,
    counter_width: 4,
    counter_masks: masks(4),
    option_mask: bits(&[
        option_bit::XMIT_DATA_VL,
        option_bit::RCV_DATA_VL,
        option_bit::XMIT_PKT_VL,
        option_bit::RCV_PKT_VL,
        option_bit::LOCAL_PHYSICAL_ERRORS,
        option_bit::SW_HOQ_LIFETIME_LIMIT_DISCARDS,
        option_bit::OP_RCV_PKTS,
        option_bit::OP_RCV_DATA,
        option_bit::VL_XMIT_WAIT,
        option_bit::SW_PORT_VL_CONGESTION,
    ]),
};

/// Channel adapters (and routers): Tick 0xF9 (1 us), 24-bit counters,
/// Counter0..1 also count optional quantities.
pub const CA_CAPS: SampleCaps = SampleCaps {
    tick: 0xF9,
    counter_width: 2,
    counter_masks: masks(2),
    option_mask: bits(&[
        option_bit::XMIT_DATA_VL,
        option_bit::RCV_DATA_VL,
        option_bit::XMIT_PKT_VL,
        option_bit::RCV_PKT_VL,
        option_bit::OP_RCV_PKTS,
        option_bit::OP_RCV_DATA,
    ]),
};

impl SampleCaps {
    /// What `n`'s PMA offers: its node type's, with the Tick its ASIC
    /// family reports where NodeInfo names one
    /// ([`crate::ib::xmit_wait::ASIC_FAMILIES`]: Quantum-2 answers 7).
    pub fn for_node(n: &Node) -> SampleCaps {
        let mut caps = SampleCaps::of(n.id.node_type);
        if let Some(f) = crate::ib::xmit_wait::AsicFamily::of(n.id.vendor_id, n.id.device_id) {
            caps.tick = f.tick;
        }
        caps
    }

    /// The rule `n`'s XmitWait ticks follow, as the agent reading its
    /// NodeInfo and PortSamplesControl takes it.
    pub fn tick_rule(n: &Node) -> crate::ib::xmit_wait::TickRule {
        let tick = SampleCaps::for_node(n).tick;
        crate::ib::xmit_wait::TickRule::of(n.id.vendor_id, n.id.device_id, Some(tick))
    }

    pub fn of(node_type: NodeType) -> SampleCaps {
        if node_type == NodeType::Switch {
            SWITCH_CAPS
        } else {
            CA_CAPS
        }
    }

    /// All ones in CounterWidth bits: the largest SampleStart,
    /// SampleInterval and result value.
    pub fn width_max(&self) -> u64 {
        let w = samples::counter_width_bits(self.counter_width).unwrap_or(32);
        (1u64 << w) - 1
    }

    pub fn tick_ns(&self) -> u64 {
        tick_ns(self.tick)
    }

    fn fill(&self, c: &mut PortSamplesControl) {
        c.tick = self.tick;
        c.counter_width = self.counter_width;
        c.counter_masks = self.counter_masks;
        c.sample_mechanisms = 0;
        c.option_mask = self.option_mask;
        c.vendor_mask = 0;
        c.samples_only_option_mask = 0;
    }
}

/// The sample mechanism state of one PMA.
#[derive(Clone, Debug)]
pub(super) struct Sample {
    /// The loaded read-write fields (read-only fields and SampleStatus are
    /// filled in on every answer).
    pub(super) control: PortSamplesControl,
    /// Simulated time of the Set that started the current or last sample,
    /// in ns; `None` before the first Set.
    pub(super) set_at: Option<u64>,
}

impl Sample {
    /// The power-on state: OpCode 0xFF (all opcodes), PortSelect = the
    /// PMA's port on a CA and port 1 on a switch, CounterSelect0..4 = the
    /// five mandatory quantities, SampleStatus 0, Tag 0, timers 0.
    pub(super) fn initial(node: &Node, port: u8) -> Sample {
        let mut control = PortSamplesControl {
            op_code: ALL_OPCODES,
            port_select: if node.id.node_type == NodeType::Switch {
                1
            } else {
                port
            },
            ..Default::default()
        };
        control.counter_select[..5].copy_from_slice(&[
            samples::Q_XMIT_DATA,
            samples::Q_RCV_DATA,
            samples::Q_XMIT_PKTS,
            samples::Q_RCV_PKTS,
            samples::Q_XMIT_WAIT,
        ]);
        Sample {
            control,
            set_at: None,
        }
    }

    /// (SampleStatus, start of sampling, end of sampling) in ns.
    fn times(&self, caps: &SampleCaps, now: u64) -> (u8, u64, u64) {
        let Some(t0) = self.set_at else {
            return (samples::STATUS_DONE, 0, 0);
        };
        let tick = caps.tick_ns();
        let start = t0.saturating_add(u64::from(self.control.sample_start).saturating_mul(tick));
        let end =
            start.saturating_add(u64::from(self.control.sample_interval).saturating_mul(tick));
        let status = if now < start {
            samples::STATUS_STARTING
        } else if now < end {
            samples::STATUS_RUNNING
        } else {
            samples::STATUS_DONE
        };
        (status, start, end)
    }
}

/// Whether an AttributeModifier names this PMA's only sample mechanism
/// (0) or all of them (0xFFFFFFFF).
pub(super) fn valid_mechanism(attr_mod: u32) -> bool {
    attr_mod == 0 || attr_mod == u32::MAX
}

fn node(st: &State, ni: usize) -> Result<&Node, u16> {
    st.fabric.nodes.get(ni).ok_or(status::INVALID_FIELD)
}

/// The PMA's sample mechanism key: a switch has one, a CA one per port.
fn key(n: &Node, ni: usize, arrival: u8) -> (usize, u8) {
    if n.id.node_type == NodeType::Switch {
        (ni, 0)
    } else {
        (ni, arrival)
    }
}

fn sample_of(st: &State, n: &Node, k: (usize, u8)) -> Sample {
    st.samples
        .get(&k)
        .cloned()
        .unwrap_or_else(|| Sample::initial(n, k.1))
}

/// PortSamplesControl Get or Set.
pub(super) fn control(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
) -> Result<Data, u16> {
    let n = node(st, ni)?;
    let caps = SampleCaps::for_node(n);
    let k = key(n, ni, arrival);
    let mut s = sample_of(st, n, k);
    let now = st.now_ns();
    if set {
        let req = PortSamplesControl::decode(data);
        // A CA's PMA samples only the port it answers for (as ibsim and the
        // Linux qib driver); a switch accepts any PortSelect: 0xFF (all
        // ports, AllPortSelect is set) or a port number, and for a number
        // that is not a port "the sample timers run normally but the
        // resulting sample counter values are zero" (IBA PortSelect).
        if n.id.node_type != NodeType::Switch && req.port_select != arrival {
            return Err(status::INVALID_FIELD);
        }
        // A Set while a sample is pending or underway changes nothing: the
        // reply carries the running sample's Tag, which is how the IBA lets
        // an application detect that another one owns the mechanism.
        if s.times(&caps, now).0 == samples::STATUS_DONE {
            let w = caps.width_max();
            s.control.op_code = req.op_code;
            s.control.port_select = req.port_select;
            s.control.tag = req.tag;
            // Only the low CounterWidth bits exist; the rest are ignored.
            s.control.sample_start = (u64::from(req.sample_start) & w) as u32;
            s.control.sample_interval = (u64::from(req.sample_interval) & w) as u32;
            s.control.counter_select = req.counter_select;
            s.set_at = Some(now);
            st.samples.insert(k, s.clone());
        }
    }
    let mut c = s.control;
    caps.fill(&mut c);
    c.sample_status = s.times(&caps, now).0;
    let mut out = [0u8; mad::DATA_SIZE];
    c.encode(&mut out);
    Ok(out)
}

/// The ports a sample's PortSelect covers.
fn sampled_ports(n: &Node, port_select: u8) -> Vec<u8> {
    if n.id.node_type != NodeType::Switch {
        return vec![port_select];
    }
    if port_select == pc::ALL_PORTS {
        (0..=n.id.num_ports).collect()
    } else if port_select <= n.id.num_ports {
        vec![port_select]
    } else {
        Vec::new()
    }
}

fn summed(st: &State, ni: usize, ports: &[u8], t_ns: u64) -> Totals {
    let mut sum = [0u64; q::COUNT];
    for &p in ports {
        let t = st.totals(ni, p, t_ns);
        for (s, v) in sum.iter_mut().zip(t) {
            *s = s.saturating_add(v);
        }
    }
    sum
}

/// The traffic quantity a CounterSelect code samples on counter `i`, or
/// `None` when it reads zero (reserved, unimplemented, not allowed by the
/// counter's mask, a VL other than 0, or an opcode-specific quantity while
/// OpCode is not 0xFF).
fn quantity_of(caps: &SampleCaps, i: usize, sel: u16, op_code: u8) -> Option<usize> {
    let mask = caps.counter_masks.get(i).copied().unwrap_or(0);
    match sel {
        samples::Q_XMIT_DATA if mask & MASK_MANDATORY != 0 => return Some(q::XMIT_DATA),
        samples::Q_RCV_DATA if mask & MASK_MANDATORY != 0 => return Some(q::RCV_DATA),
        samples::Q_XMIT_PKTS if mask & MASK_MANDATORY != 0 => return Some(q::XMIT_PKTS),
        samples::Q_RCV_PKTS if mask & MASK_MANDATORY != 0 => return Some(q::RCV_PKTS),
        samples::Q_XMIT_WAIT if mask & MASK_MANDATORY != 0 => return Some(q::XMIT_WAIT),
        _ => {}
    }
    if mask & MASK_OPTIONAL == 0 || sel & 0xC000 != 0x4000 {
        return None;
    }
    let vl = (sel >> 8) & 0x0F;
    let base = sel & 0xF0FF;
    let o = OPTIONAL.iter().find(|o| o.code == base)?;
    if caps.option_mask & (1u64 << o.bit) == 0 {
        return None;
    }
    if vl != 0 {
        // All simulated traffic travels on VL0: VL1..15 of a per-VL
        // quantity read zero (and a VL number on a quantity without VLs is
        // a reserved code).
        return None;
    }
    if o.op_specific && op_code != ALL_OPCODES {
        return None;
    }
    Some(o.q)
}

/// PortSamplesResult Get.
pub(super) fn result(st: &mut State, ni: usize, arrival: u8) -> Result<Data, u16> {
    let (tag, status, counts, caps) = sample_counts(st, ni, arrival)?;
    // Sample counters stop at all ones in CounterWidth bits rather than
    // wrap: the IBA's rule for its event counters ("clamp at a count of
    // all ones", optional PM attributes; PortCounters likewise), and what
    // lets an application size the interval from Tick and CounterWidth to
    // avoid overflow.
    let r = PortSamplesResult {
        tag,
        sample_status: status,
        counters: counts.map(|c| c.min(caps.width_max()) as u32),
    };
    let mut out = [0u8; mad::DATA_SIZE];
    r.encode(&mut out);
    Ok(out)
}

/// A Get of PortSamplesResultExtended: the same sample's counts in 64
/// bits (ExtendedWidth 2), not held at CounterWidth.
pub(super) fn result_extended(st: &mut State, ni: usize, arrival: u8) -> Result<Data, u16> {
    let (tag, status, counts, _) = sample_counts(st, ni, arrival)?;
    let r = samples::PortSamplesResultExtended {
        tag,
        sample_status: status,
        extended_width: samples::EXTENDED_WIDTH_64,
        counters: counts,
    };
    let mut out = [0u8; mad::DATA_SIZE];
    r.encode(&mut out);
    Ok(out)
}

/// The sample's Tag, SampleStatus and the count of each counter so far
/// (0 before the sample starts), with the PMA's capabilities.
fn sample_counts(
    st: &mut State,
    ni: usize,
    arrival: u8,
) -> Result<(u16, u8, [u64; samples::NUM_COUNTERS], SampleCaps), u16> {
    let n = node(st, ni)?;
    let caps = SampleCaps::for_node(n);
    let s = sample_of(st, n, key(n, ni, arrival));
    let now = st.now_ns();
    let (status, start, end) = s.times(&caps, now);
    let mut counts = [0u64; samples::NUM_COUNTERS];
    if s.set_at.is_some() && status != samples::STATUS_STARTING {
        let ports = sampled_ports(n, s.control.port_select);
        let a = summed(st, ni, &ports, start);
        let b = summed(st, ni, &ports, now.min(end));
        for (i, (c, &sel)) in counts
            .iter_mut()
            .zip(s.control.counter_select.iter())
            .enumerate()
        {
            *c = quantity_of(&caps, i, sel, s.control.op_code)
                .map_or(0, |qi| b[qi].saturating_sub(a[qi]));
        }
    }
    Ok((s.control.tag, status, counts, caps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_follows_the_iba_formula() {
        // 0x00 = 10 x 0.4 ns, 0xFF = 2,560 x 0.4 ns.
        assert_eq!(tick_ns(0x00), 4);
        assert_eq!(tick_ns(0x01), 8);
        assert_eq!(tick_ns(0xF9), 1000);
        assert_eq!(tick_ns(0xFF), 1024);
    }

    #[test]
    fn half_a_second_fits_every_profile() {
        for caps in [SWITCH_CAPS, CA_CAPS] {
            let ticks = 500_000_000 / caps.tick_ns();
            assert!(ticks <= caps.width_max(), "{caps:?}");
            assert!(caps.counter_masks.iter().all(|m| m & MASK_MANDATORY != 0));
            assert_eq!(caps.option_mask & 1, 0, "bit 0 is reserved");
        }
    }

    #[test]
    fn per_vl_codes() {
        assert_eq!(quantity::per_vl(quantity::XMIT_DATA_VL, 3), 0x4301);
        assert_eq!(
            quantity::per_vl(quantity::SW_PORT_VL_CONGESTION, 15),
            0x4F30
        );
        let c = &SWITCH_CAPS;
        assert_eq!(quantity_of(c, 0, 0x4001, 0xFF), Some(q::XMIT_DATA));
        assert_eq!(quantity_of(c, 0, 0x4101, 0xFF), None);
        // Counter 4 only takes mandatory quantities.
        assert_eq!(quantity_of(c, 4, 0x4001, 0xFF), None);
        assert_eq!(quantity_of(c, 4, 0x0001, 0x12), Some(q::XMIT_DATA));
        // Opcode-specific quantities need OpCode 0xFF.
        assert_eq!(quantity_of(c, 1, 0x400F, 0xFF), Some(q::RCV_PKTS));
        assert_eq!(quantity_of(c, 1, 0x400F, 0x04), None);
        // A VL number on a quantity without VLs is no quantity.
        assert_eq!(quantity_of(c, 1, 0x4105, 0xFF), None);
        // Not advertised on CAs.
        assert_eq!(quantity_of(&CA_CAPS, 0, 0x4005, 0xFF), None);
        assert_eq!(quantity_of(&CA_CAPS, 0, 0x4002, 0xFF), Some(q::RCV_DATA));
        // Reserved codes.
        for sel in [0x0000, 0x0006, 0x3FFF, 0xC001, 0x8001] {
            assert_eq!(quantity_of(c, 0, sel, 0xFF), None, "{sel:#x}");
        }
    }
}
