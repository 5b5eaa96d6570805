//! The read path: the value of a column in a row of the latest snapshot,
//! from the column's declared [`Source`]. Nothing here touches the fabric.

use std::time::Instant;

use super::index::{IndexScheme, RowIndex};
use super::rate::{congestion_hundredths, utilization_hundredths};
use super::schema::{
    AgentCol, Column, HealthCol, LinkCol, NodeCol, PlanCol, PortCol, RateCol, Source, SubnetCol,
    Syntax, Table,
};
use super::tables::table;
use super::{EndpointCounters, Value};
use crate::fabric::cache::Snapshot;
use crate::fabric::hc;
use crate::fabric::record::{NodeRecord, PortRecord, Stamp};
use crate::ib::Guid;
use crate::ib::cabling::{Mismatch, NodeRef, PlanVerdict};
use crate::ib::health::Condition;
use crate::ib::subnet::SubnetView;
use crate::pm::class_port_info::CAP_ALL_PORT_SELECT;
use crate::pm::port_counters::PortCountersField;

/// TimeTicks (hundredths of a second) from the agent's start to `at`; 0
/// for none. TimeStamp columns and pmAgentUpTime count from the agent's
/// start ([`crate::time::origin`]): a subagent's own uptime, as net-snmp's
/// subagents keep it.
pub fn timestamp(at: Option<Instant>) -> u32 {
    let origin = crate::time::origin();
    at.map_or(0, |t| {
        (t.saturating_duration_since(origin).as_millis() / 10).min(u32::MAX as u128) as u32
    })
}

/// A row of a snapshot, resolved: what its values are read from.
#[derive(Clone, Copy)]
pub struct Row<'a> {
    pub snap: &'a Snapshot,
    pub endpoint: &'a EndpointCounters,
    /// The row's node (`None` for the scalars).
    pub node: Option<&'a NodeRecord>,
    /// The row's port, in a per-port table.
    pub port: Option<&'a PortRecord>,
    /// The row's subnet, in pmSubnetTable.
    pub subnet: Option<&'a SubnetView>,
    /// The row's mismatch, in pmPlanDiffTable.
    pub plan: Option<&'a PlanVerdict>,
    pub index: RowIndex,
    /// The row's pmPortCountersPortSelect.
    pub port_select: u8,
    /// When it is read (monotonic): pmNodeStatus's freshness and
    /// pmAgentUpTime.
    pub now: Instant,
}

/// The value of `col` in row `index` of `node`, or `None` when the row is
/// absent. `port_select` is the row's pmPortCountersPortSelect; `snap`
/// answers what a row shows of other nodes (a peer's description) and the
/// agent's scalars.
pub fn read(
    col: &Column,
    snap: &Snapshot,
    endpoint: &EndpointCounters,
    node: Option<&NodeRecord>,
    index: RowIndex,
    port_select: u8,
    now: Instant,
) -> Option<Value> {
    let t = table(col.table)?;
    let mut row = Row {
        snap,
        endpoint,
        node: None,
        port: None,
        subnet: None,
        plan: None,
        index,
        port_select,
        now,
    };
    if t.index == IndexScheme::Subnet {
        row.subnet = Some(subnet_of(snap, index.subnet.checked_sub(1)?)?);
    } else if t.index == IndexScheme::PlanDiff {
        row.plan = Some(plan_of(snap, index)?);
    } else if t.index != IndexScheme::Scalar {
        let node = node?;
        if index.guid != node.id.guid || !(t.present)(node) {
            return None;
        }
        row.node = Some(node);
        if t.per_port() {
            row.port = Some(node.port(index.port)?);
        }
    }
    read_at(col, t, &row)
}

/// [`read`] once the row is resolved: `t` is the column's table, the node
/// is in `t` (`present`), `row.port` is the row's port for a per-port
/// table. What a walk calls for each row, testing the node once per
/// column.
pub fn read_at(col: &Column, t: &Table, row: &Row) -> Option<Value> {
    let Row {
        snap,
        endpoint,
        node,
        port,
        subnet,
        plan,
        index,
        port_select,
        now,
    } = *row;
    match (t.index, col.source) {
        (IndexScheme::Scalar, Source::Agent(a)) => {
            return Some(agent_value(a, snap, endpoint, now));
        }
        (IndexScheme::Subnet, Source::Subnet(c)) => return Some(subnet_value(c, subnet?)),
        (IndexScheme::PlanDiff, Source::Plan(c)) => return Some(plan_value(c, plan?)),
        (IndexScheme::Scalar | IndexScheme::Subnet | IndexScheme::PlanDiff, _) => return None,
        _ => {}
    }
    let node = node?;
    if let Some(p) = port
        && (!(t.port_present)(p) || t.attr.is_some_and(|a| !p.optional().has(a)))
    {
        return None;
    }
    let v = match col.source {
        Source::AllPortSelect => {
            let cpi = node.class_port_info.as_ref()?;
            truth(cpi.capability_mask & CAP_ALL_PORT_SELECT != 0)
        }
        Source::Ctl(f) => wrap(col.syntax, node.samples_control.as_ref()?.get(f)),
        Source::CtlMask(i) => wrap(
            col.syntax,
            (*node.samples_control.as_ref()?.counter_masks.get(i)?).into(),
        ),
        Source::CtlSelect(i) => wrap(
            col.syntax,
            (*node.samples_control.as_ref()?.counter_select.get(i)?).into(),
        ),
        Source::Res(f) => wrap(col.syntax, node.samples_result.as_ref()?.get(f)),
        Source::ResExt(f) => wrap(col.syntax, node.samples_result_ext.as_ref()?.get(f)),
        Source::ResExtCounter(i) => {
            Value::Counter64(*node.samples_result_ext.as_ref()?.counters.get(i)?)
        }
        Source::ResCounter(i) => wrap(
            col.syntax,
            (*node.samples_result.as_ref()?.counters.get(i)?).into(),
        ),
        Source::PortSelect => Value::Gauge32(port_select as u32),
        Source::Counter(f) => Value::Gauge32(counter_value(node, port_select, f)),
        Source::Node(c) => node_value(c, node, snap, now),
        Source::Port(c) => port_value(c, node, port?, snap),
        Source::Link(c) => link_value(c, port?)?,
        Source::Hc(k) => Value::Counter64(port?.hc.shown(k)?),
        Source::HcDiscontinuity => {
            Value::TimeTicks(timestamp(port?.discontinuity.map(Stamp::instant)))
        }
        Source::Rate(c) => rate_value(c, node, port?)?,
        Source::ErrorRate(k) => Value::Gauge32(gauge((port?.rates.get(k)? * 1000.0) as u64)),
        Source::PortClear => Value::Gauge32(0),
        Source::Lane(a) => {
            let p = port?;
            if !a.layout.holds(rs_fec_layout(node, p)) {
                return None;
            }
            Value::Gauge32(gauge(p.optional().bits(
                a.attr_id,
                a.bit(index.lane)?,
                a.width,
            )?))
        }
        Source::FecMode => Value::Integer(port?.link.fec.map_or(0, |f| f.mib()) as i32),
        Source::Fec(t) => {
            let p = port?;
            let data = p
                .optional()
                .get(crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS)?;
            Value::Gauge32(gauge(crate::pm::optional::fec_total(
                &data,
                rs_fec_layout(node, p),
                t,
            )?))
        }
        Source::Optional { attr_id, field } => Value::Gauge32(gauge(port?.optional().bits(
            attr_id,
            field.offset,
            field.width,
        )?)),
        Source::Agent(_) | Source::Subnet(_) | Source::Plan(_) => return None,
        Source::Health(c) => health_value(c, node, port?, snap)?,
    };
    Some(v)
}

/// A pmPortHealthTable column: the verdicts the evaluator published in
/// the snapshot (a port without an entry has none: every condition false,
/// no times).
fn health_value(
    c: HealthCol,
    node: &NodeRecord,
    port: &PortRecord,
    snap: &Snapshot,
) -> Option<Value> {
    let h = &*snap.health;
    let (guid, num) = (node.id.guid, port.num());
    let v = h.port(guid, num);
    let standing = || {
        Condition::ALL
            .into_iter()
            .filter_map(|c| h.standing_at(guid, num, c))
    };
    Some(match c {
        HealthCol::Condition(k) => truth(h.standing_at(guid, num, k).is_some()),
        HealthCol::Flaps => Value::Counter64(v.map_or(0, |v| v.flaps)),
        HealthCol::LastFlap => date_and_time(h.wall(v?.last_flap?)),
        HealthCol::Since => date_and_time(h.wall(standing().map(|m| m.since).min()?)),
        HealthCol::LastSeen => date_and_time(h.wall(standing().map(|m| m.last_seen).max()?)),
        HealthCol::Raised => Value::Counter64(
            Condition::ALL
                .into_iter()
                .map(|c| u64::from(h.raised_at(guid, num, c)))
                .sum(),
        ),
        HealthCol::PeerNodeGuid => guid_value(v.and_then(|v| v.peer).map_or(Guid(0), |p| p.0)),
        HealthCol::PeerPortNum => Value::Gauge32(v.and_then(|v| v.peer).map_or(0, |p| p.1.into())),
        HealthCol::Acknowledge => Value::Integer(0),
    })
}

/// The mismatch of pmPlanDiffTable's row `index`.
pub fn plan_of(snap: &Snapshot, index: RowIndex) -> Option<&PlanVerdict> {
    let kind = Mismatch::from_mib(index.kind.into())?;
    snap.plan.get((index.guid, index.port, kind, index.seq))
}

/// The row of pmPlanDiffTable of a mismatch.
pub fn plan_row(v: &PlanVerdict) -> RowIndex {
    RowIndex::plan(v.guid, v.port, v.kind.def().mib as u8, v.seq)
}

/// A pmPlanDiffTable column.
pub fn plan_value(c: PlanCol, v: &PlanVerdict) -> Value {
    let text = |s: Option<&str>| text_value(s.unwrap_or(""));
    match c {
        PlanCol::NodeName => text(v.name.as_deref()),
        PlanCol::PlannedNodeGuid => guid_value(match v.planned.as_ref().map(|e| &e.node) {
            Some(NodeRef::Guid(g)) => *g,
            _ => Guid(0),
        }),
        PlanCol::PlannedPortNum => Value::Gauge32(v.planned.as_ref().map_or(0, |e| e.port.into())),
        PlanCol::PlannedName => text(v.planned_name.as_deref().or(
            match v.planned.as_ref().map(|e| &e.node) {
                Some(NodeRef::Name(n)) => Some(&**n),
                _ => None,
            },
        )),
        PlanCol::FoundNodeGuid => guid_value(v.found.map_or(Guid(0), |f| f.0)),
        PlanCol::FoundPortNum => Value::Gauge32(v.found.map_or(0, |f| f.1.into())),
        PlanCol::FoundName => text(v.found_name.as_deref()),
        PlanCol::Since => date_and_time(v.since),
        PlanCol::LastSeen => date_and_time(v.last_seen),
        PlanCol::Raised => Value::Counter64(v.raised.into()),
        PlanCol::Standing => truth(v.standing),
        PlanCol::Text => Value::OctetString(clip_to(&v.sentence(), 255).as_bytes().to_vec()),
    }
}

fn gauge(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn guid_value(g: Guid) -> Value {
    Value::OctetString(g.octets().to_vec())
}

fn text_value(s: &str) -> Value {
    Value::OctetString(clip(s).as_bytes().to_vec())
}

/// NodeDescription is at most 64 octets on the wire; a longer text from a
/// topology file is cut at a character boundary.
fn clip(s: &str) -> &str {
    clip_to(s, 64)
}

/// `s` cut at a character boundary to at most `max` bytes.
fn clip_to(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// The newest reading of any of the node's ports.
fn node_last_update(node: &NodeRecord) -> Option<Instant> {
    node.ports()
        .filter_map(|p| p.read_at)
        .max()
        .map(Stamp::instant)
}

/// pmNodeStatus: ok(1), stale(2) (no reading for two sweep intervals),
/// unreachable(3).
fn node_status(node: &NodeRecord, snap: &Snapshot, now: Instant) -> i32 {
    if !node.reachable {
        return 3;
    }
    let fresh = node_last_update(node)
        .is_some_and(|t| now.saturating_duration_since(t) <= snap.interval * 2);
    if fresh { 1 } else { 2 }
}

fn node_value(c: NodeCol, node: &NodeRecord, snap: &Snapshot, now: Instant) -> Value {
    match c {
        NodeCol::Description => text_value(&node.id.description),
        NodeCol::Type => Value::Integer(node.id.node_type.code().into()),
        NodeCol::SysGuid => guid_value(node.id.sys_guid),
        NodeCol::VendorId => Value::Gauge32(node.id.vendor_id),
        NodeCol::DeviceId => Value::Gauge32(node.id.device_id.into()),
        NodeCol::NumPorts => Value::Gauge32(node.id.num_ports.into()),
        NodeCol::Lid => Value::Gauge32(node.id.lid.into()),
        NodeCol::Status => Value::Integer(node_status(node, snap, now)),
        NodeCol::LastUpdate => Value::TimeTicks(timestamp(node_last_update(node))),
        NodeCol::PmaCapMask => Value::OctetString(
            node.class_port_info
                .as_deref()
                .map_or(0, |c| c.capability_mask)
                .to_be_bytes()
                .to_vec(),
        ),
        NodeCol::OptionalAttributes => {
            let mut ids: Vec<u16> = node.ports().flat_map(|p| p.optional().attrs()).collect();
            ids.sort_unstable();
            ids.dedup();
            let list: Vec<String> = ids.iter().map(|a| format!("{a:#06x}")).collect();
            Value::OctetString(list.join(",").into_bytes())
        }
        NodeCol::Source => Value::Integer(node.source.mib()),
        NodeCol::XmitWaitTickSource => Value::Integer(node.tick_rule().source.mib()),
        NodeCol::XmitWaitTickRule => text_value(&node.tick_rule().describe()),
        NodeCol::Subnets => {
            let mut seen = 0u64;
            for p in node.ports() {
                seen |= 1u64.checked_shl(p.subnet.into()).unwrap_or(0);
            }
            let labels = snap
                .subnets
                .iter()
                .filter(|s| seen & 1u64.checked_shl(s.index.into()).unwrap_or(0) != 0)
                .map(|s| clip(&s.label()).to_string());
            Value::OctetString(list(labels).into_bytes())
        }
        NodeCol::Unresponsive => truth(snap.health.unresponsive(node.id.guid).is_some()),
        NodeCol::Name => Value::OctetString(
            clip_to(node.name(), crate::ib::names::NAME_MAX)
                .as_bytes()
                .to_vec(),
        ),
        NodeCol::WideCounters => Value::Integer(
            node.class_port_info
                .as_deref()
                .map_or(crate::pm::class_port_info::WideCounters::None, |c| {
                    c.wide_counters()
                })
                .mib(),
        ),
    }
}

fn port_value(c: PortCol, node: &NodeRecord, port: &PortRecord, snap: &Snapshot) -> Value {
    let l = &port.link;
    let peer = l.remote();
    match c {
        PortCol::NodeDescription => text_value(&node.id.description),
        PortCol::Guid => guid_value(l.guid),
        PortCol::Lid => Value::Gauge32(l.lid.into()),
        PortCol::State => Value::Integer(l.state.map_or(0, |s| s.mib()) as i32),
        PortCol::PhysState => Value::Integer(l.phys_state.map_or(0, |s| s.mib()) as i32),
        PortCol::Width => Value::Integer(l.width.map_or(0, |s| s.mib()) as i32),
        PortCol::Speed => Value::Integer(l.speed.map_or(0, |s| s.mib()) as i32),
        PortCol::RateMbps => Value::Gauge32(gauge(l.rate_mbps().unwrap_or(0))),
        PortCol::PeerNodeGuid => guid_value(peer.map_or(Guid(0), |p| p.0)),
        PortCol::PeerPortNum => Value::Gauge32(peer.map_or(0, |p| p.1.into())),
        PortCol::PeerDescription => text_value(
            peer.and_then(|p| snap.node(p.0))
                .map_or("", |n| &*n.id.description),
        ),
        PortCol::LastUpdate => Value::TimeTicks(timestamp(port.read_at.map(Stamp::instant))),
        PortCol::Name => Value::OctetString(port_name(node, port.num(), snap).into_bytes()),
        PortCol::Subnet => {
            Value::Gauge32(subnet_of(snap, port.subnet).map_or(0, |s| u32::from(s.index) + 1))
        }
    }
}

/// The subnet of index `index` (pmSubnetIndex minus one) in the snapshot,
/// if it has one: a snapshot no sweeper of a subnet filled has none.
pub fn subnet_of(snap: &Snapshot, index: u8) -> Option<&SubnetView> {
    snap.subnets
        .get(usize::from(index))
        .filter(|s| s.index == index)
}

/// `items` separated by commas, as many as fit in
/// [`super::schema::LIST_MAX`] octets
/// (the rest left out).
fn list(items: impl Iterator<Item = String>) -> String {
    let mut out = String::new();
    for item in items {
        let sep = usize::from(!out.is_empty());
        if out.len() + sep + item.len() > super::schema::LIST_MAX {
            break;
        }
        if sep == 1 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out
}

/// A pmSubnetTable column.
pub fn subnet_value(c: SubnetCol, s: &SubnetView) -> Value {
    let sm = s.sm.as_ref();
    match c {
        SubnetCol::Name => text_value(&s.label()),
        SubnetCol::Prefix => Value::OctetString(s.key.prefix.to_be_bytes().to_vec()),
        SubnetCol::SmGuid => guid_value(sm.map_or(s.key.sm_guid, |m| m.guid)),
        SubnetCol::SmLid => Value::Gauge32(sm.map_or(0, |m| m.lid.into())),
        SubnetCol::SmPriority => Value::Gauge32(sm.map_or(0, |m| (m.priority & 0x0f).into())),
        SubnetCol::SmState => {
            Value::Integer(sm.map_or(super::tables::SM_STATE_NONE as i32, |m| m.state as i32))
        }
        SubnetCol::LocalCa => text_value(s.sweeping.as_ref().map_or("", |p| &*p.ca)),
        SubnetCol::LocalPort => Value::Gauge32(s.sweeping.as_ref().map_or(0, |p| p.port.into())),
        SubnetCol::StandbyPorts => {
            Value::OctetString(list(s.standby.iter().map(|p| p.to_string())).into_bytes())
        }
        SubnetCol::Nodes => Value::Gauge32(s.nodes),
        SubnetCol::Ports => Value::Gauge32(s.ports),
        SubnetCol::LastSweep => Value::TimeTicks(timestamp(s.swept)),
        SubnetCol::SweepDuration => Value::Gauge32(gauge(s.duration_ms)),
        SubnetCol::Sweeps => Value::Counter64(s.sweep),
        SubnetCol::SweepState => Value::Integer(s.sweep_state.mib()),
    }
}

/// A pmPortLinkTable column: the port's sets, what its link should run
/// at given the port at its far end (made when the link facts changed),
/// and its symbol, raw and effective BERs over the last two readings
/// (absent until there is a rate).
fn link_value(c: LinkCol, port: &PortRecord) -> Option<Value> {
    let l = &port.link;
    let text = |s: String| Value::OctetString(s.into_bytes());
    Some(match c {
        LinkCol::WidthSupported => text(l.caps.width_supported.to_string()),
        LinkCol::WidthEnabled => text(l.caps.width_enabled.to_string()),
        LinkCol::SpeedSupported => text(l.caps.speed_supported.to_string()),
        LinkCol::SpeedEnabled => text(l.caps.speed_enabled.to_string()),
        LinkCol::WidthExpected => {
            Value::Integer(port.assessment.expected_width.map_or(0, |w| w.mib()) as i32)
        }
        LinkCol::SpeedExpected => {
            Value::Integer(port.assessment.expected_speed.map_or(0, |s| s.mib()) as i32)
        }
        LinkCol::Degraded => Value::Integer(port.assessment.health.map_or(0, |h| h.mib()) as i32),
        LinkCol::SymbolBer => text(port.symbol_ber()?.scientific()),
        LinkCol::SymbolBerPer1e15 => Value::Gauge32(port.symbol_ber()?.per_1e15()),
        LinkCol::RawBer => text(port.raw_ber()?.scientific()),
        LinkCol::RawBerPer1e15 => Value::Gauge32(port.raw_ber()?.per_1e15()),
        LinkCol::EffectiveBer => text(port.effective_ber()?.scientific()),
        LinkCol::EffectiveBerPer1e15 => Value::Gauge32(port.effective_ber()?.per_1e15()),
    })
}

/// pmPortName: `NAME/PORT` (the node's name: the node-name-map's, else
/// its NodeDescription), with the node GUID after a name another node
/// shares (`MT4123 ConnectX6 Mellanox Technologies 0x0002c90300a1b2c3/1`)
/// and in place of an empty one.
pub fn port_name(node: &NodeRecord, port: u8, snap: &Snapshot) -> String {
    let d = clip(node.name().trim());
    if d.is_empty() {
        format!("{}/{port}", node.id.guid)
    } else if snap.name_is_shared(node.name()) {
        format!("{d} {}/{port}", node.id.guid)
    } else {
        format!("{d}/{port}")
    }
}

fn rate_value(c: RateCol, node: &NodeRecord, port: &PortRecord) -> Option<Value> {
    let r = &port.rates;
    if r.valid == 0 {
        return None;
    }
    let per_s = |k: usize| r.get(k).unwrap_or(0.0);
    let rate_mbps = port.link.rate_mbps().unwrap_or(0);
    let capacity_bps = rate_mbps as f64 * 1e6;
    // A port of unknown width or speed sends nothing: it waited 0.
    let congestion = port.congestion(&node.tick_rule()).unwrap_or(0.0);
    Some(match c {
        RateCol::InBitsPerSec => Value::Counter64((per_s(hc::IN_OCTETS) * 8.0) as u64),
        RateCol::OutBitsPerSec => Value::Counter64((per_s(hc::OUT_OCTETS) * 8.0) as u64),
        RateCol::InPktsPerSec => Value::Gauge32(gauge(per_s(hc::IN_PKTS) as u64)),
        RateCol::OutPktsPerSec => Value::Gauge32(gauge(per_s(hc::OUT_PKTS) as u64)),
        RateCol::OutUtilization => {
            Value::Gauge32(utilization_hundredths(per_s(hc::OUT_OCTETS), rate_mbps))
        }
        RateCol::InUtilization => {
            Value::Gauge32(utilization_hundredths(per_s(hc::IN_OCTETS), rate_mbps))
        }
        RateCol::Congestion => Value::Gauge32(congestion_hundredths(congestion)),
        RateCol::CongestedMbps => Value::Gauge32(gauge((congestion * capacity_bps / 1e6) as u64)),
    })
}

fn agent_value(c: AgentCol, snap: &Snapshot, endpoint: &EndpointCounters, now: Instant) -> Value {
    use crate::edge::refusal::Column::{RateLimited, Refused};
    let reachable = snap.reachable;
    let count = |a: &std::sync::atomic::AtomicU64| {
        Value::Counter64(a.load(std::sync::atomic::Ordering::Relaxed))
    };
    match c {
        AgentCol::Version => Value::OctetString(env!("CARGO_PKG_VERSION").as_bytes().to_vec()),
        AgentCol::UpTime => Value::TimeTicks(timestamp(Some(now))),
        AgentCol::Sweeps => Value::Counter64(snap.sweep),
        AgentCol::LastSweepTime => Value::TimeTicks(timestamp(snap.stats.ended)),
        AgentCol::LastSweepDuration => Value::Gauge32(gauge(snap.stats.duration_ms)),
        AgentCol::LastSweepMads => Value::Gauge32(gauge(snap.stats.mads)),
        AgentCol::LastSweepTimeouts => Value::Gauge32(gauge(snap.stats.timeouts)),
        AgentCol::NodesReachable => Value::Gauge32(gauge(reachable as u64)),
        AgentCol::NodesUnreachable => Value::Gauge32(gauge((snap.nodes.len() - reachable) as u64)),
        AgentCol::LastDiscovery => Value::TimeTicks(timestamp(snap.stats.discovered)),
        AgentCol::NotificationsSent => Value::Counter64(snap.notify.sent),
        AgentCol::NotificationsSuppressed => Value::Counter64(snap.notify.suppressed),
        AgentCol::NotificationsDropped => Value::Counter64(snap.notify.dropped),
        AgentCol::SnmpInPackets => count(&endpoint.in_packets),
        AgentCol::SnmpOutPackets => count(&endpoint.out_packets),
        AgentCol::SnmpRefused => Value::Counter64(endpoint.refused.figures().column(Refused)),
        AgentCol::SnmpRateLimited => {
            Value::Counter64(endpoint.refused.figures().column(RateLimited))
        }
    }
}

fn truth(b: bool) -> Value {
    Value::Integer(if b { 1 } else { 2 })
}

/// A field's value as its column's syntax shows it: OCTET STRINGs are the
/// field in network byte order.
pub fn wrap(syntax: Syntax, v: u64) -> Value {
    match syntax {
        Syntax::TruthValue | Syntax::Enum { .. } => Value::Integer(v as i32),
        Syntax::Unsigned32 { .. } | Syntax::Gauge32 { .. } => Value::Gauge32(v as u32),
        Syntax::OctetString { size } => {
            let b = v.to_be_bytes();
            Value::OctetString(b[b.len().saturating_sub(size)..].to_vec())
        }
        Syntax::Counter64 => Value::Counter64(v),
        Syntax::TimeStamp | Syntax::TimeTicks => Value::TimeTicks(v as u32),
        Syntax::DisplayString { .. } => Value::OctetString(v.to_string().into_bytes()),
        Syntax::DateAndTime => date_and_time(v),
    }
}

/// DateAndTime (SNMPv2-TC) in UTC of a wall-clock time in milliseconds
/// since the UNIX epoch: 11 octets, the last three `+ 0 0`.
pub fn date_and_time(ms: u64) -> Value {
    let (y, mo, d, h, mi, s, ds) = crate::ib::health::civil(ms);
    let y = u16::try_from(y).unwrap_or(0).to_be_bytes();
    Value::OctetString(vec![y[0], y[1], mo, d, h, mi, s, ds, b'+', 0, 0])
}

/// The wall-clock milliseconds of a DateAndTime [`date_and_time`] made
/// (to its deciseconds); `None` for any other value.
pub fn date_and_time_ms(v: &Value) -> Option<u64> {
    let Value::OctetString(b) = v else {
        return None;
    };
    let &[y0, y1, mo, d, h, mi, s, ds, ..] = b.as_slice() else {
        return None;
    };
    let y = i64::from(u16::from_be_bytes([y0, y1]));
    Some(crate::ib::health::from_civil(y, mo, d, h, mi, s, ds))
}

/// The field value a SET's value carries (the reverse of [`wrap`], for a
/// value its column's syntax accepted).
pub fn unwrap(v: &Value) -> u64 {
    match v {
        Value::Gauge32(x) => (*x).into(),
        Value::Integer(x) => *x as u64,
        Value::OctetString(b) => b
            .iter()
            .take(8)
            .fold(0, |acc, &x| (acc << 8) | u64::from(x)),
        _ => 0,
    }
}

/// A counter of the selected port. A port the node does not have reads zero
/// (IBA); 0xFF on a node with AllPortSelect is the saturating sum over ports.
pub fn counter_value(node: &NodeRecord, port_select: u8, counter: PortCountersField) -> u32 {
    let max = counter.field().max();
    let v = if port_select == 0xFF {
        let all = node
            .class_port_info
            .as_ref()
            .is_some_and(|c| c.capability_mask & CAP_ALL_PORT_SELECT != 0);
        if !all {
            return 0;
        }
        node.ports()
            .filter_map(|p| p.counters())
            .map(|c| c.get(counter))
            .fold(0u64, u64::saturating_add)
    } else {
        node.port(port_select)
            .and_then(|p| p.counters())
            .map_or(0, |c| c.get(counter))
    };
    u32::try_from(v.min(max)).unwrap_or(u32::MAX)
}

/// The port's PortExtendedSpeedsCounters reading is in its RS-FEC layout:
/// the node's PMA says IsRSFECCountersSupported and the link runs RS-FEC
/// (perfquery's rule).
fn rs_fec_layout(node: &NodeRecord, port: &PortRecord) -> bool {
    crate::pm::optional::rs_fec_layout(
        node.class_port_info.as_ref().map(|c| c.capability_mask),
        port.link.fec,
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// TimeStamps are the hundredths of a second since the process's time
    /// origin; none, or one before it, is 0.
    #[test]
    fn timestamps_count_hundredths_from_the_time_origin() {
        let origin = crate::time::origin();
        assert_eq!(timestamp(None), 0);
        assert_eq!(timestamp(Some(origin)), 0);
        assert_eq!(timestamp(Some(origin + Duration::from_millis(1_509))), 150);
        assert_eq!(
            timestamp(Some(origin + Duration::from_secs(86_400))),
            8_640_000
        );
        if let Some(before) = origin.checked_sub(Duration::from_secs(1)) {
            assert_eq!(timestamp(Some(before)), 0);
        }
    }
}
