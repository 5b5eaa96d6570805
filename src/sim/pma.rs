//! What a simulated PMA answers.
//!
//! - Requests other than PerfMgt (class 0x04), and responses, get no answer.
//! - BaseVersion/ClassVersion other than 1: GetResp, status 0x0004.
//! - Methods other than Get/Set: status 0x0008.
//! - ClassPortInfo Get: CapabilityMask 0x1300 on switches (AllPortSelect,
//!   IsExtendedWidthSupported, PortCountersXmitWaitSupported), 0x1200 on CAs;
//!   RespTimeValue 0x12 — as ibsim answers; CapabilityMask2 bit 1
//!   (IsAdditionalPortCountersExtendedSupported) on the node types of
//!   `SimOptions::wide_error_counters`, 0 elsewhere (ibsim: always 0).
//! - PortCounters / PortCountersExtended Get and Set (Set clears the counters
//!   chosen by CounterSelect/CounterSelect2 on the selected port(s), then
//!   answers like Get). PortSelect: on a switch 0..=NumPorts or 0xFF (all
//!   ports summed, saturating); on a CA only the port the MAD arrived on.
//!   Anything else: status 0x001C (invalid attribute value), as ibsim.
//!   The 64-bit error counters, PortXmitWait and QP1Dropped of
//!   PortCountersExtended count on the nodes that set CapabilityMask2 bit 1
//!   (cleared by their CounterSelect2 bits) and read 0 elsewhere.
//! - PortRcvErrorDetails (0x15), PortOpRcvCounters (0x17, Opcode 0xFF
//!   only; another opcode: status 0x001C) and, on switches,
//!   PortXmitDiscardDetails (0x16): Get and Set like PortCounters, with
//!   their own clear points. The model: every receive error is a local
//!   physical error (PortLocalPhysicalErrors = PortRcvErrors), every
//!   transmit discard a head-of-queue lifetime discard
//!   (PortSwHOQLimitDiscards = PortXmitDiscards), PortOpRcvPkts/Data are
//!   the receive totals; the other counters read 0.
//! - PortVLOpPackets (0x19), PortVLOpData (0x1A; both for Opcode 0xFF
//!   only) and PortVLXmitWaitCounters (0x1C), Get only: all traffic
//!   travels on VL0, so VL0 holds the port's PortRcvPkts, PortRcvData and
//!   PortXmitWait since the start (held at the field's maximum) and
//!   VL1..15 read 0.
//! - Any other attribute (PortFlowCtlCounters, 0x1B and 0x16 on a CA
//!   included), a Set of the per-VL attributes, or a Set of
//!   ClassPortInfo/PortSamplesResult: status 0x000C.
//!
//! # PortSamplesControl / PortSamplesResult
//!
//! One sample mechanism per PMA (SampleMechanisms 0): one per switch, one
//! per CA port. AttributeModifier must be 0 or 0xFFFFFFFF ("all
//! mechanisms", the same one here), else status 0x001C.
//!
//! **Read-only fields, per node type** ([`sampling::SWITCH_CAPS`],
//! [`sampling::CA_CAPS`]):
//!
//! | | Tick | one tick | CounterWidth | longest interval | CounterMasks |
//! |---|---|---|---|---|---|
//! | switch | 0xFF | 1.024 us | 4 (32 bits) | 4398 s | 0b011 on Counter0..3, 0b001 on 4..14 |
//! | CA, router | 0xF9 | 1.000 us | 2 (24 bits) | 16.8 s | 0b011 on Counter0..1, 0b001 on 2..14 |
//!
//! One tick is (Tick + 1) x 10 link transfer periods (IBA: "0x00 = 10 x
//! link transfer period ... 0xFF = 2,560 x"); the link transfer period is
//! taken as 400 ps (a 2.5 Gb/s lane, the IBA's example) on every node
//! whatever its link speeds. VendorMask, SamplesOnlyOptionMask 0.
//!
//! **OptionMask** (bit 0 = least significant; IBA / draft MIB numbering).
//! Switches: bits 2..5 PortXmitDataVL\[n\], PortRcvDataVL\[n\],
//! PortXmitPktVL\[n\], PortRcvPktVL\[n\]; 6 PortLocalPhysicalErrors;
//! 15 PortSwHOQLifetimeLimitDiscards; 16/17 PortOpRcvPkts/PortOpRcvData;
//! 23 PortVLXmitWait\[n\]; 48 SwPortVLCongestion\[n\]. CAs: bits 2..5, 16, 17.
//! How the model fills them: all traffic travels on VL0, so a per-VL
//! quantity equals the port total on VL0 and is 0 on VL1..15; every
//! modelled receive error is a CRC error of a noisy link
//! (PortLocalPhysicalErrors = PortRcvErrors); every modelled transmit
//! discard is a head-of-queue lifetime discard of a congested direction
//! (PortSwHOQLifetimeLimitDiscards = SwPortVLCongestion\[0\] =
//! PortXmitDiscards). Not modelled, not advertised, read 0: PortXmitQueue,
//! the other PortRcvErrorDetails and PortXmitDiscardDetails quantities,
//! PortFlowCtlCounters, PortVLOpPackets/Data, PortVLXmitFlowCtlUpdateErrors.
//!
//! **CounterSelect codes**: 0x0001..0x0005 are the mandatory quantities and
//! count on every counter. Optional codes are 0x40xx; a per-VL quantity
//! carries its VL in bits 8..11 (`0x0n00`: PortXmitDataVL\[3\] = 0x4301,
//! [`sampling::quantity::per_vl`]). A counter reads 0 when its code is
//! reserved, not advertised in OptionMask, optional on a counter whose mask
//! lacks bit 1, or opcode-specific (PortOpRcvPkts/Data) while OpCode is not
//! 0xFF: only "all opcodes" is modelled.
//!
//! **Set** (fields other than the ones below are read-only and ignored):
//! - PortSelect: on a CA only the port the MAD arrived on, else status
//!   0x001C. On a switch any value: a port number samples that port, 0xFF
//!   sums all ports (AllPortSelect is set), and a number that is not a port
//!   is accepted with "the sample timers run normally but the resulting
//!   sample counter values are zero" (IBA).
//! - While a sample is pending or underway (SampleStatus 1 or 2) a Set
//!   changes nothing and the reply shows the running sample, its Tag
//!   included: the IBA's way of telling a second application that the
//!   mechanism is in use (the Linux qib/ipath drivers do the same).
//! - Otherwise it loads OpCode, PortSelect, Tag, SampleStart,
//!   SampleInterval and CounterSelect0..14; SampleStart and SampleInterval
//!   keep only their low CounterWidth bits (upper bits ignored on Set, zero
//!   on Get). The results are zeroed and SampleStatus becomes 1; after
//!   SampleStart ticks it becomes 2 and the counters run; after a further
//!   SampleInterval ticks it becomes 0 and the results freeze. SampleStart 0
//!   starts at once (the reply already says 2), SampleStart 0 and
//!   SampleInterval 0 complete at once with zero results.
//!
//! **Get** of PortSamplesControl ignores the request's data and answers the
//! loaded fields, the read-only fields and the current SampleStatus. The
//! power-on state: OpCode 0xFF, PortSelect = the CA port / switch port 1,
//! CounterSelect0..4 = 0x0001..0x0005, Tag 0, timers 0, SampleStatus 0.
//!
//! **PortSamplesResult**: Tag and SampleStatus copied from the control;
//! counters 0 while SampleStatus is 1, the running count while it is 2
//! (the IBA leaves them undefined then), the final count once it is 0.
//! A count is the traffic model's difference over exactly the sampling
//! interval, so it equals the difference of the port's
//! PortCountersExtended counters read at the interval's start and end. It
//! stops at all ones in CounterWidth bits (IBA: event counters "clamp at a
//! count of all ones"; they do not wrap).

use crate::pm::CounterAttribute;
use crate::pm::mad::{self, attr, method, status};
use crate::pm::optional::{LaneCounter, OptionalAttr, SimAnswer, Traffic};
use crate::pm::port_counters::{PortCounters, PortCountersField as Pc};
use crate::pm::port_counters_ext::{PortCountersExtended, PortCountersExtendedField as Pcx};
use crate::pm::{ClassPortInfo, class_port_info as cpi};
use crate::transport::MAD_SIZE;

use super::State;
use super::sampling;
use super::traffic::q;
use crate::ib::NodeType;

type Data = [u8; mad::DATA_SIZE];

/// The traffic quantity behind what an optional attribute's declaration
/// says the model feeds a counter with.
fn quantity(t: Traffic) -> usize {
    match t {
        Traffic::RcvErrors => q::RCV_ERRORS,
        Traffic::XmitDiscards => q::XMIT_DISCARDS,
        Traffic::RcvPkts => q::RCV_PKTS,
        Traffic::RcvData => q::RCV_DATA,
        Traffic::XmitData => q::XMIT_DATA,
        Traffic::XmitWait => q::XMIT_WAIT,
        Traffic::RcvFecn => q::RCV_FECN,
        Traffic::RcvBecn => q::RCV_BECN,
        Traffic::XmitTimeCong => q::XMIT_TIME_CONG,
    }
}

/// `N` rows of a PortCounters map and the same of a PortCountersExtended map.
type Both<const N: usize> = ([(usize, Pc); N], [(usize, Pcx); N]);

/// `QUANTITY => Field` rows for fields PortCounters and PortCountersExtended
/// both have: the rows of each attribute's map (width and clear bit come
/// from the attribute's declaration).
macro_rules! both {
    ($($q:ident => $f:ident),* $(,)?) => {
        ([$((q::$q, Pc::$f)),*], [$((q::$q, Pcx::$f)),*])
    };
}

/// The error counters, PortXmitWait and QP1Dropped: PortCounters counts
/// them everywhere, PortCountersExtended on the PMAs of the node types in
/// `SimOptions::wide_error_counters` (elsewhere they read 0).
const ERRORS: Both<14> = both!(
    SYMBOL_ERRORS => SymbolErrors,
    LINK_ERROR_RECOVERY => LinkErrorRecovery,
    LINK_DOWNED => LinkDowned,
    RCV_ERRORS => RcvErrors,
    RCV_REMOTE_PHYS_ERRORS => RcvRemotePhysErrors,
    RCV_SWITCH_RELAY_ERRORS => RcvSwitchRelayErrors,
    XMIT_DISCARDS => XmitDiscards,
    XMIT_CONSTRAINT_ERRORS => XmitConstraintErrors,
    RCV_CONSTRAINT_ERRORS => RcvConstraintErrors,
    LOCAL_LINK_INTEGRITY_ERRORS => LocalLinkIntegrityErrors,
    EXCESSIVE_BUFFER_OVERRUN_ERRORS => ExcessiveBufferOverrunErrors,
    VL15_DROPPED => Vl15Dropped,
    XMIT_WAIT => XmitWait,
    QP1_DROPPED => Qp1Dropped,
);

/// The data and packet counters every simulated PMA counts in both.
const DATA: Both<4> = both!(
    XMIT_DATA => XmitData,
    RCV_DATA => RcvData,
    XMIT_PKTS => XmitPkts,
    RCV_PKTS => RcvPkts,
);

/// The PortCounters fields the simulator counts.
const PC_MAP: [(usize, Pc); 18] = concat(ERRORS.0, DATA.0);

/// The PortCountersExtended fields every simulated PMA counts.
const PCX_MAP: [(usize, Pcx); 8] = concat(
    DATA.1,
    [
        (q::UNICAST_XMIT_PKTS, Pcx::UnicastXmitPkts),
        (q::UNICAST_RCV_PKTS, Pcx::UnicastRcvPkts),
        (q::MULTICAST_XMIT_PKTS, Pcx::MulticastXmitPkts),
        (q::MULTICAST_RCV_PKTS, Pcx::MulticastRcvPkts),
    ],
);

/// What the PMAs of the node types in `SimOptions::wide_error_counters`
/// count of PortCountersExtended.
const PCX_WIDE_MAP: [(usize, Pcx); 22] = concat(PCX_MAP, ERRORS.1);

/// `a` then `b`.
const fn concat<T: Copy, const A: usize, const B: usize, const C: usize>(
    a: [T; A],
    b: [T; B],
) -> [T; C] {
    assert!(A > 0 && A + B == C);
    let mut out = [a[0]; C];
    let mut i = 0;
    while i < C {
        out[i] = if i < A { a[i] } else { b[i - A] };
        i += 1;
    }
    out
}

pub(super) const SWITCH_CAPS: u16 =
    cpi::CAP_ALL_PORT_SELECT | cpi::CAP_EXT_WIDTH | cpi::CAP_XMIT_WAIT | cpi::CAP_RSFEC_COUNTERS;
pub(super) const CA_CAPS: u16 = cpi::CAP_EXT_WIDTH | cpi::CAP_XMIT_WAIT | cpi::CAP_RSFEC_COUNTERS;

/// Answers one MAD that arrived at (node `ni`, port `arrival`; 0 = switch
/// port 0).
pub(super) fn answer(
    st: &mut State,
    ni: usize,
    arrival: u8,
    buf: &[u8; MAD_SIZE],
) -> Option<[u8; MAD_SIZE]> {
    let (h, data) = mad::parse(buf).ok()?;
    if h.mgmt_class != mad::MGMT_CLASS_PERF || h.is_response() {
        return None;
    }
    let reply = |status: u16, out: &Data| Some(mad::response(&h, status, out));
    if h.base_version != mad::BASE_VERSION || h.class_version != mad::CLASS_VERSION {
        return reply(status::BAD_VERSION, data);
    }
    if h.method != method::GET && h.method != method::SET {
        return reply(status::METHOD_UNSUPPORTED, data);
    }
    let set = h.method == method::SET;
    let result = match (h.attr_id, set) {
        (attr::CLASS_PORT_INFO, false) => Ok(class_port_info(st, ni)),
        (attr::PORT_COUNTERS, _) => {
            counters::<PortCounters>(st, ni, arrival, data, set, &PC_MAP, |p| &mut p.pc_base)
        }
        (attr::PORT_COUNTERS_EXTENDED, _) => {
            let map = if st.wide_errors(ni) {
                &PCX_WIDE_MAP[..]
            } else {
                &PCX_MAP[..]
            };
            counters::<PortCountersExtended>(st, ni, arrival, data, set, map, |p| &mut p.pcx_base)
        }
        (attr::PORT_SAMPLES_CONTROL, _) | (attr::PORT_SAMPLES_RESULT, false)
            if !sampling::valid_mechanism(h.attr_mod) =>
        {
            Err(status::INVALID_FIELD)
        }
        (attr::PORT_SAMPLES_CONTROL, _) => sampling::control(st, ni, arrival, data, set),
        (attr::PORT_SAMPLES_RESULT, false) => sampling::result(st, ni, arrival),
        (attr::PORT_SAMPLES_RESULT_EXTENDED, false) => sampling::result_extended(st, ni, arrival),
        (id, _) => match crate::pm::optional::optional(id) {
            Some(a) => optional(st, ni, arrival, data, set, a),
            None => Err(status::METHOD_ATTR_UNSUPPORTED),
        },
    };
    match result {
        Ok(out) => reply(status::OK, &out),
        Err(code) => reply(code, data),
    }
}

/// A Get or Set of an optional attribute, as its declaration's
/// [`SimAnswer`] says: a Set of an attribute with Get only, a node type
/// that does not answer it, or one it does not model gets status 0x000C;
/// a per-opcode attribute for another opcode than 0xFF, status 0x001C.
fn optional(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
    a: &OptionalAttr,
) -> Result<Data, u16> {
    let get_only = matches!(a.sim, SimAnswer::Lane0(_) | SimAnswer::ExtSpeeds);
    if a.sim == SimAnswer::Unsupported
        || (set && get_only)
        || (a.sim_switches_only && !is_switch(st, ni))
    {
        return Err(status::METHOD_ATTR_UNSUPPORTED);
    }
    if a.all_opcodes && data[0] != 0xFF {
        return Err(status::INVALID_FIELD);
    }
    match a.sim {
        SimAnswer::Counters(feeds) => {
            // As `counters` does: the selectors (Opcode, PortSelect,
            // CounterSelect) are echoed, the fed counters answered, the
            // others 0.
            let selector = |name: &str| {
                a.fields
                    .iter()
                    .find(|f| f.name == name)
                    .map(|f| f.get(data))
            };
            let port_select = selector("PortSelect").unwrap_or(0) as u8;
            let counter_select = selector("CounterSelect").unwrap_or(0) as u32;
            let ports = selected(st, ni, arrival, port_select, true)?;
            let plan: Vec<_> = feeds
                .iter()
                .map(|f| {
                    let clears = set && f.clear.is_some_and(|b| counter_select & b.select() != 0);
                    (quantity(f.traffic), f.field.max(), clears)
                })
                .collect();
            let id = a.id;
            let sums = count(st, ni, ports, &plan, |p| p.optional_base(id));
            let mut out = [0u8; mad::DATA_SIZE];
            let counters = crate::pm::optional::counter_fields(a.fields).len();
            for f in &a.fields[..a.fields.len() - counters] {
                f.set(&mut out, f.get(data));
            }
            for (sum, feed) in sums.iter().zip(feeds) {
                feed.field.set(&mut out, *sum);
            }
            Ok(out)
        }
        SimAnswer::Lane0(t) => match a.lanes.first() {
            Some(l) => per_lane(st, ni, arrival, data, l, quantity(t)),
            None => Err(status::METHOD_ATTR_UNSUPPORTED),
        },
        SimAnswer::ExtSpeeds => ext_speeds(st, ni, arrival, data),
        SimAnswer::Unsupported => Err(status::METHOD_ATTR_UNSUPPORTED),
    }
}

/// A Get of a per-lane attribute: all traffic travels on VL0 and SL0, so
/// lane 0 holds the port's count of quantity `qi` since the start (held at
/// the field's maximum) and the other lanes read 0. Opcode and PortSelect
/// are echoed.
fn per_lane(
    st: &State,
    ni: usize,
    arrival: u8,
    data: &Data,
    a: &LaneCounter,
    qi: usize,
) -> Result<Data, u16> {
    let port_select = data[1];
    let ports = selected(st, ni, arrival, port_select, false)?;
    let now = st.now_ns();
    let count = ports
        .iter()
        .map(|&p| st.totals(ni, p, now)[qi])
        .sum::<u64>();
    let mut out = [0u8; mad::DATA_SIZE];
    out[..2].copy_from_slice(&data[..2]);
    a.set(&mut out, 0, count);
    Ok(out)
}

/// A Get of PortExtendedSpeedsCounters in the layout of the port's FEC
/// (the simulated PMAs say IsRSFECCountersSupported): link error
/// recoveries show as sync header errors; every symbol error is an error
/// detection (no FEC), a corrected block (FireCode and RS-FEC; RS-FEC
/// corrects two symbols per block); every receive error is an
/// uncorrectable block. Counts are since the start, spread over the
/// link's lanes, each held at its field's maximum.
fn ext_speeds(st: &State, ni: usize, arrival: u8, data: &Data) -> Result<Data, u16> {
    use crate::pm::optional::{
        LANE_ERROR_DETECTIONS, LANE_FEC_CORRECTABLE_BLOCKS, LANE_FEC_CORRECTABLE_SYMBOLS,
        LANE_FEC_UNCORRECTABLE_BLOCKS, PortExtendedSpeedsCounters,
        PortExtendedSpeedsCountersField as F,
    };
    let port_select = data[1];
    let &[port] = &selected(st, ni, arrival, port_select, false)?[..] else {
        return Err(status::INVALID_FIELD);
    };
    let t = st.totals(ni, port, st.now_ns());
    let link = st.fabric.nodes.get(ni).and_then(|n| n.port(port));
    let fec = link
        .and_then(|l| l.fec)
        .unwrap_or(crate::ib::FecMode::NoFec);
    let lanes = link
        .and_then(|l| l.width)
        .map_or(1, |w| w.lanes())
        .clamp(1, u32::from(crate::pm::optional::EXT_SPEEDS_LANES)) as u8;
    let (sym, rcv) = (t[q::SYMBOL_ERRORS], t[q::RCV_ERRORS]);
    let mut r = PortExtendedSpeedsCounters {
        port_select,
        ..Default::default()
    };
    let mut out = [0u8; mad::DATA_SIZE];
    let held = |f: F, v: u64| v.min(f.field().max());
    r.sync_header_errors = held(F::SyncHeaderErrors, t[q::LINK_ERROR_RECOVERY]) as u16;
    if fec.rs_fec() {
        r.fec_correctable_blocks = held(F::FecCorrectableBlocks, sym) as u32;
        r.fec_uncorrectable_blocks = held(F::FecUncorrectableBlocks, rcv) as u32;
        r.fec_corrected_symbols = held(F::FecCorrectedSymbols, 2 * sym) as u32;
    }
    r.encode(&mut out);
    let mut spread = |a: &LaneCounter, total: u64| {
        for l in 0..lanes {
            let share =
                total / u64::from(lanes) + u64::from(u64::from(l) < total % u64::from(lanes));
            a.set(&mut out, l, share);
        }
    };
    match fec {
        f if f.rs_fec() => spread(&LANE_FEC_CORRECTABLE_SYMBOLS, 2 * sym),
        crate::ib::FecMode::FireCode => {
            spread(&LANE_ERROR_DETECTIONS, sym);
            spread(&LANE_FEC_CORRECTABLE_BLOCKS, sym);
            spread(&LANE_FEC_UNCORRECTABLE_BLOCKS, rcv);
        }
        _ => spread(&LANE_ERROR_DETECTIONS, sym),
    }
    Ok(out)
}

fn is_switch(st: &State, ni: usize) -> bool {
    st.fabric
        .nodes
        .get(ni)
        .is_some_and(|n| n.id.node_type == NodeType::Switch)
}

fn class_port_info(st: &State, ni: usize) -> Data {
    let info = ClassPortInfo {
        base_version: 1,
        class_version: 1,
        capability_mask: if is_switch(st, ni) {
            SWITCH_CAPS
        } else {
            CA_CAPS
        },
        capability_mask2: if st.wide_errors(ni) {
            cpi::CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED
        } else {
            0
        },
        resp_time_value: 0x12,
        ..Default::default()
    };
    let mut out = [0u8; mad::DATA_SIZE];
    info.encode(&mut out);
    out
}

/// The ports a PortSelect names, or the status to answer.
fn selected(
    st: &State,
    ni: usize,
    arrival: u8,
    port_select: u8,
    allow_all: bool,
) -> Result<Vec<u8>, u16> {
    let n = st.fabric.nodes.get(ni).ok_or(status::INVALID_FIELD)?;
    if n.id.node_type == NodeType::Switch {
        if port_select == crate::pm::port_counters::ALL_PORTS && allow_all {
            Ok((0..=n.id.num_ports).collect())
        } else if port_select <= n.id.num_ports {
            Ok(vec![port_select])
        } else {
            Err(status::INVALID_FIELD)
        }
    } else if port_select == arrival {
        Ok(vec![arrival])
    } else {
        Err(status::INVALID_FIELD)
    }
}

/// A Get or Set of a counter attribute: per field of `map`, the sum over
/// the selected ports of its count since it was last cleared, each port's
/// count and the sum held at the field's maximum. A Set first clears the
/// fields its CounterSelect bits name. `base` picks the attribute's clear
/// points of a port.
fn counters<A: CounterAttribute>(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
    map: &[(usize, A::Field)],
    base: fn(&mut super::SimPort) -> &mut super::traffic::Totals,
) -> Result<Data, u16> {
    let req = A::decode(data);
    let ports = selected(st, ni, arrival, req.port_select(), true)?;
    let plan: Vec<_> = map
        .iter()
        .map(|&(qi, f)| (qi, A::max(f), set && req.clears(f)))
        .collect();
    let sums = count(st, ni, ports, &plan, base);
    let mut reply = req.selects();
    for (sum, &(_, f)) in sums.iter().zip(map) {
        reply.set(f, *sum);
    }
    let mut out = [0u8; mad::DATA_SIZE];
    reply.encode(&mut out);
    Ok(out)
}

/// Per counter of `plan` (traffic quantity, maximum, cleared first), the
/// sum over `ports` of its count since it was last cleared, each port's
/// count and the sum held at the maximum. `base` picks the attribute's
/// clear points of a port.
fn count(
    st: &mut State,
    ni: usize,
    ports: Vec<u8>,
    plan: &[(usize, u64, bool)],
    mut base: impl FnMut(&mut super::SimPort) -> &mut super::traffic::Totals,
) -> Vec<u64> {
    let now = st.now_ns();
    let mut sums = vec![0u64; plan.len()];
    for p in ports {
        let totals = st.totals(ni, p, now);
        let Some(ps_state) = st.ports.get_mut(&(ni, p)) else {
            continue;
        };
        let base = base(ps_state);
        for (sum, &(qi, max, clears)) in sums.iter_mut().zip(plan) {
            if clears {
                base[qi] = totals[qi];
            }
            let v = totals[qi].saturating_sub(base[qi]).min(max);
            *sum = sum.saturating_add(v).min(max);
        }
    }
    sums
}
