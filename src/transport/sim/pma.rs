//! What a simulated PMA answers.
//!
//! - Requests other than PerfMgt (class 0x04), and responses, get no answer.
//! - BaseVersion/ClassVersion other than 1: GetResp, status 0x0004.
//! - Methods other than Get/Set: status 0x0008.
//! - ClassPortInfo Get: CapabilityMask 0x1300 on switches (AllPortSelect,
//!   IsExtendedWidthSupported, PortCountersXmitWaitSupported), 0x1200 on CAs;
//!   CapabilityMask2 0; RespTimeValue 0x12 — as ibsim answers.
//! - PortCounters / PortCountersExtended Get and Set (Set clears the counters
//!   chosen by CounterSelect/CounterSelect2 on the selected port(s), then
//!   answers like Get). PortSelect: on a switch 0..=NumPorts or 0xFF (all
//!   ports summed, saturating); on a CA only the port the MAD arrived on.
//!   Anything else: status 0x001C (invalid attribute value), as ibsim.
//!   The optional 64-bit error section of PortCountersExtended reads 0
//!   (CapabilityMask2 bit 1 is not set).
//! - PortSamplesControl Get/Set and PortSamplesResult Get: one sample
//!   mechanism per PMA, Tick 0xFF (one tick = 1.024 us), CounterWidth 4
//!   (32 bits), every CounterMask 0b001 (mandatory quantities only),
//!   OptionMask 0. A Set loads OpCode, PortSelect, Tag, SampleStart,
//!   SampleInterval and CounterSelect0..14 and restarts sampling:
//!   SampleStatus 1 while SampleStart counts down (results read 0), 2 while
//!   sampling (results show the running count), 0 when done. Quantities
//!   0x0001..0x0005 are counted; every other quantity reads 0. Results
//!   saturate at the counter width.
//! - Any other attribute, or Set of ClassPortInfo/PortSamplesResult: status
//!   0x000C.

use crate::pm::layout::Field;
use crate::pm::mad::{self, attr, method, status};
use crate::pm::{ClassPortInfo, PortSamplesControl, PortSamplesResult, class_port_info as cpi};
use crate::pm::{port_counters as pc, port_counters_ext as pcx, samples};
use crate::transport::MAD_SIZE;

use super::traffic::q;
use super::{Sample, State};
use crate::fabric::model::NodeType;

type Data = [u8; mad::DATA_SIZE];

/// PortCounters fields: (quantity, field, CounterSelect bit, CounterSelect2 bit).
const PC_MAP: &[(usize, Field, u16, u8)] = &[
    (q::SYMBOL_ERRORS, pc::SYMBOL_ERRORS, pc::CS_SYMBOL_ERRORS, 0),
    (
        q::LINK_ERROR_RECOVERY,
        pc::LINK_ERROR_RECOVERY,
        pc::CS_LINK_ERROR_RECOVERY,
        0,
    ),
    (q::LINK_DOWNED, pc::LINK_DOWNED, pc::CS_LINK_DOWNED, 0),
    (q::RCV_ERRORS, pc::RCV_ERRORS, pc::CS_RCV_ERRORS, 0),
    (
        q::RCV_REMOTE_PHYS_ERRORS,
        pc::RCV_REMOTE_PHYS_ERRORS,
        pc::CS_RCV_REMOTE_PHYS_ERRORS,
        0,
    ),
    (
        q::RCV_SWITCH_RELAY_ERRORS,
        pc::RCV_SWITCH_RELAY_ERRORS,
        pc::CS_RCV_SWITCH_RELAY_ERRORS,
        0,
    ),
    (q::XMIT_DISCARDS, pc::XMIT_DISCARDS, pc::CS_XMIT_DISCARDS, 0),
    (
        q::XMIT_CONSTRAINT_ERRORS,
        pc::XMIT_CONSTRAINT_ERRORS,
        pc::CS_XMIT_CONSTRAINT_ERRORS,
        0,
    ),
    (
        q::RCV_CONSTRAINT_ERRORS,
        pc::RCV_CONSTRAINT_ERRORS,
        pc::CS_RCV_CONSTRAINT_ERRORS,
        0,
    ),
    (
        q::LOCAL_LINK_INTEGRITY_ERRORS,
        pc::LOCAL_LINK_INTEGRITY_ERRORS,
        pc::CS_LOCAL_LINK_INTEGRITY_ERRORS,
        0,
    ),
    (
        q::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
        pc::EXCESSIVE_BUFFER_OVERRUN_ERRORS,
        pc::CS_EXCESSIVE_BUFFER_OVERRUN_ERRORS,
        0,
    ),
    (q::QP1_DROPPED, pc::QP1_DROPPED, 0, 0),
    (q::VL15_DROPPED, pc::VL15_DROPPED, pc::CS_VL15_DROPPED, 0),
    (q::XMIT_DATA, pc::XMIT_DATA, pc::CS_XMIT_DATA, 0),
    (q::RCV_DATA, pc::RCV_DATA, pc::CS_RCV_DATA, 0),
    (q::XMIT_PKTS, pc::XMIT_PKTS, pc::CS_XMIT_PKTS, 0),
    (q::RCV_PKTS, pc::RCV_PKTS, pc::CS_RCV_PKTS, 0),
    (q::XMIT_WAIT, pc::XMIT_WAIT, 0, pc::CS2_XMIT_WAIT),
];

/// PortCountersExtended fields: (quantity, field, CounterSelect bit).
const PCX_MAP: &[(usize, Field, u16)] = &[
    (q::XMIT_DATA, pcx::XMIT_DATA, pcx::CSX_XMIT_DATA),
    (q::RCV_DATA, pcx::RCV_DATA, pcx::CSX_RCV_DATA),
    (q::XMIT_PKTS, pcx::XMIT_PKTS, pcx::CSX_XMIT_PKTS),
    (q::RCV_PKTS, pcx::RCV_PKTS, pcx::CSX_RCV_PKTS),
    (
        q::UNICAST_XMIT_PKTS,
        pcx::UNICAST_XMIT_PKTS,
        pcx::CSX_UNICAST_XMIT_PKTS,
    ),
    (
        q::UNICAST_RCV_PKTS,
        pcx::UNICAST_RCV_PKTS,
        pcx::CSX_UNICAST_RCV_PKTS,
    ),
    (
        q::MULTICAST_XMIT_PKTS,
        pcx::MULTICAST_XMIT_PKTS,
        pcx::CSX_MULTICAST_XMIT_PKTS,
    ),
    (
        q::MULTICAST_RCV_PKTS,
        pcx::MULTICAST_RCV_PKTS,
        pcx::CSX_MULTICAST_RCV_PKTS,
    ),
];

/// Sampling clock: Tick 0xFF = 2,560 x 0.4 ns.
pub(super) const TICK: u8 = 0xFF;
pub(super) const TICK_NS: u64 = 1024;
/// CounterWidth code 4 = 32-bit sample counters.
pub(super) const COUNTER_WIDTH: u8 = 4;
pub(super) const SWITCH_CAPS: u16 =
    cpi::CAP_ALL_PORT_SELECT | cpi::CAP_EXT_WIDTH | cpi::CAP_XMIT_WAIT;
pub(super) const CA_CAPS: u16 = cpi::CAP_EXT_WIDTH | cpi::CAP_XMIT_WAIT;

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
        (attr::PORT_COUNTERS, _) => port_counters(st, ni, arrival, data, set),
        (attr::PORT_COUNTERS_EXTENDED, _) => port_counters_ext(st, ni, arrival, data, set),
        (attr::PORT_SAMPLES_CONTROL, _) => samples_control(st, ni, arrival, data, set),
        (attr::PORT_SAMPLES_RESULT, false) => Ok(samples_result(st, ni, arrival)),
        _ => Err(status::METHOD_ATTR_UNSUPPORTED),
    };
    match result {
        Ok(out) => reply(status::OK, &out),
        Err(code) => reply(code, data),
    }
}

fn is_switch(st: &State, ni: usize) -> bool {
    st.fabric
        .nodes
        .get(ni)
        .is_some_and(|n| n.node_type == NodeType::Switch)
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
    if n.node_type == NodeType::Switch {
        if port_select == pc::ALL_PORTS && allow_all {
            Ok((0..=n.num_ports).collect())
        } else if port_select <= n.num_ports {
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

fn port_counters(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
) -> Result<Data, u16> {
    let ps = pc::PORT_SELECT.get(data) as u8;
    let cs = pc::COUNTER_SELECT.get(data) as u16;
    let cs2 = pc::COUNTER_SELECT2.get(data) as u8;
    let ports = selected(st, ni, arrival, ps, true)?;
    let now = st.now_ns();
    let mut sums = [0u64; PC_MAP.len()];
    for p in ports {
        let totals = st.totals(ni, p, now);
        let Some(ps_state) = st.ports.get_mut(&(ni, p)) else {
            continue;
        };
        if set {
            for &(qi, _, bit, bit2) in PC_MAP {
                if cs & bit != 0 || cs2 & bit2 != 0 {
                    ps_state.pc_base[qi] = totals[qi];
                }
            }
        }
        for (sum, &(qi, f, _, _)) in sums.iter_mut().zip(PC_MAP) {
            let v = totals[qi].saturating_sub(ps_state.pc_base[qi]).min(f.max());
            *sum = sum.saturating_add(v).min(f.max());
        }
    }
    let mut out = [0u8; mad::DATA_SIZE];
    pc::PORT_SELECT.set(&mut out, ps.into());
    pc::COUNTER_SELECT.set(&mut out, cs.into());
    pc::COUNTER_SELECT2.set(&mut out, cs2.into());
    for (sum, &(_, f, _, _)) in sums.iter().zip(PC_MAP) {
        f.set(&mut out, *sum);
    }
    Ok(out)
}

fn port_counters_ext(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
) -> Result<Data, u16> {
    let ps = pcx::PORT_SELECT.get(data) as u8;
    let cs = pcx::COUNTER_SELECT.get(data) as u16;
    let cs2 = pcx::COUNTER_SELECT2.get(data);
    let ports = selected(st, ni, arrival, ps, true)?;
    let now = st.now_ns();
    let mut sums = [0u64; PCX_MAP.len()];
    for p in ports {
        let totals = st.totals(ni, p, now);
        let Some(ps_state) = st.ports.get_mut(&(ni, p)) else {
            continue;
        };
        if set {
            for &(qi, _, bit) in PCX_MAP {
                if cs & bit != 0 {
                    ps_state.pcx_base[qi] = totals[qi];
                }
            }
        }
        for (sum, &(qi, _, _)) in sums.iter_mut().zip(PCX_MAP) {
            *sum = sum.saturating_add(totals[qi].saturating_sub(ps_state.pcx_base[qi]));
        }
    }
    let mut out = [0u8; mad::DATA_SIZE];
    pcx::PORT_SELECT.set(&mut out, ps.into());
    pcx::COUNTER_SELECT.set(&mut out, cs.into());
    pcx::COUNTER_SELECT2.set(&mut out, cs2);
    for (sum, &(_, f, _)) in sums.iter().zip(PCX_MAP) {
        f.set(&mut out, *sum);
    }
    Ok(out)
}

/// The PMA's sample mechanism key: a switch has one, a CA one per port.
fn pma_key(st: &State, ni: usize, arrival: u8) -> (usize, u8) {
    if is_switch(st, ni) {
        (ni, 0)
    } else {
        (ni, arrival)
    }
}

/// (SampleStatus, start of sampling, end of sampling) in ns.
fn sample_times(s: &Sample, now: u64) -> (u8, u64, u64) {
    let Some(t0) = s.set_at else {
        return (samples::STATUS_DONE, 0, 0);
    };
    let start = t0.saturating_add(u64::from(s.control.sample_start).saturating_mul(TICK_NS));
    let end = start.saturating_add(u64::from(s.control.sample_interval).saturating_mul(TICK_NS));
    let status = if now < start {
        samples::STATUS_STARTING
    } else if now < end {
        samples::STATUS_RUNNING
    } else {
        samples::STATUS_DONE
    };
    (status, start, end)
}

fn control_fixed(c: &mut PortSamplesControl) {
    c.tick = TICK;
    c.counter_width = COUNTER_WIDTH;
    c.counter_masks = [0b001; samples::NUM_COUNTERS];
    c.sample_mechanisms = 0;
    c.option_mask = 0;
    c.vendor_mask = 0;
    c.samples_only_option_mask = 0;
}

fn samples_control(
    st: &mut State,
    ni: usize,
    arrival: u8,
    data: &Data,
    set: bool,
) -> Result<Data, u16> {
    let key = pma_key(st, ni, arrival);
    let now = st.now_ns();
    if set {
        let req = PortSamplesControl::decode(data);
        selected(st, ni, arrival, req.port_select, false)?;
        let s = st.samples.entry(key).or_default();
        s.control.op_code = req.op_code;
        s.control.port_select = req.port_select;
        s.control.tag = req.tag;
        s.control.sample_start = req.sample_start;
        s.control.sample_interval = req.sample_interval;
        s.control.counter_select = req.counter_select;
        s.set_at = Some(now);
    }
    let s = st.samples.entry(key).or_default();
    let mut c = s.control;
    control_fixed(&mut c);
    c.sample_status = sample_times(s, now).0;
    let mut out = [0u8; mad::DATA_SIZE];
    c.encode(&mut out);
    Ok(out)
}

fn samples_result(st: &mut State, ni: usize, arrival: u8) -> Data {
    let key = pma_key(st, ni, arrival);
    let now = st.now_ns();
    let s = st.samples.get(&key).cloned().unwrap_or_default();
    let (status, start, end) = sample_times(&s, now);
    let mut r = PortSamplesResult {
        tag: s.control.tag,
        sample_status: status,
        counters: [0; samples::NUM_COUNTERS],
    };
    if s.set_at.is_some() && status != samples::STATUS_STARTING {
        let port = s.control.port_select;
        let t_end = now.min(end);
        let a = st.totals(ni, port, start);
        let b = st.totals(ni, port, t_end);
        let max = samples::counter_width_bits(COUNTER_WIDTH)
            .map_or(u64::from(u32::MAX), |w| (1u64 << w) - 1);
        for (c, sel) in r.counters.iter_mut().zip(s.control.counter_select) {
            let qi = match sel {
                samples::Q_XMIT_DATA => Some(q::XMIT_DATA),
                samples::Q_RCV_DATA => Some(q::RCV_DATA),
                samples::Q_XMIT_PKTS => Some(q::XMIT_PKTS),
                samples::Q_RCV_PKTS => Some(q::RCV_PKTS),
                samples::Q_XMIT_WAIT => Some(q::XMIT_WAIT),
                _ => None,
            };
            *c = qi.map_or(0, |qi| b[qi].saturating_sub(a[qi]).min(max) as u32);
        }
    }
    let mut out = [0u8; mad::DATA_SIZE];
    r.encode(&mut out);
    out
}
