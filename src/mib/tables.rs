//! Every table the agent serves, declared once: its number, name, index
//! scheme and when a node has rows, then one line per column (number,
//! name, syntax, access with the SET rule, where the value comes from), as
//! mib2c declares a table. Columns made from another declaration (the
//! 64-bit totals of `fabric::hc`, an optional attribute's fields) say so in
//! one line. The read path ([`super::read`]), the SET pipeline
//! ([`super::set`]) and the view walk these tables.

use std::sync::LazyLock;

use super::face::Collector::{
    self, Agent, Fec as FecC, Health as HealthC, Node as NodeC, Port as PortC, Subnet as SubnetC,
};
use super::face::Info::{
    Build as BuildInfo, Node as NodeInfo, Peer as PeerInfo, Port as PortInfo, Subnet as SubnetInfo,
};
use super::face::Scale::{
    AtLeast, Below, DateSeconds, Decimal, LaneBytesPerSecond, MillisToSeconds, One, Times,
    UnixSeconds,
};
use super::face::{Part, Shown, counter, gauge, label};
use super::index::IndexScheme::{NodeGuidPort, NodeGuidPortLane, PlanDiff, Scalar, Subnet};
use super::schema::Access::{ReadOnly as RO, ReadWrite};
use super::schema::SetRule::{
    Acknowledge, ClearCounter, ClearMask, PortSelect, SampleControl, SamplePortSelect,
};
use super::schema::Syntax::{
    Counter64, DateAndTime, Enum, OctetString, TimeStamp, TimeTicks, TruthValue,
};
use super::schema::{
    AgentCol as A, CLEAR_MASK_MAX, Cols, Column, G32, GUID, HealthCol as H, LinkCol as L,
    NodeCol as N, PM_OBJECTS, PlanCol as Pl, PortCol as P, RateCol as R, Source as S,
    SubnetCol as Sn, Syntax, TABLE, TEXT, Table, U8, U16, U32, Walk, col, column, every_port,
    gauge_of, no_nodes, pc,
};
use crate::fabric::hc::{self, HC};
use crate::ib::health::{CONDITION_COUNT, CONDITIONS};
use crate::ib::subnet::MAX_SUBNETS;
use crate::pm::decl::names15;
use crate::pm::optional::{FecTotal as Fec, Lane, MibTable, OPTIONAL};
use crate::pm::port_counters::PortCountersField as F;
use crate::pm::samples::{
    PortSamplesControlField as C, PortSamplesResultExtendedField as X,
    PortSamplesResultField as Res,
};

const RW_PORT_SELECT: super::schema::Access = ReadWrite(PortSelect);
const RW_CLEAR: super::schema::Access = ReadWrite(ClearCounter);
const RW_SAMPLE: super::schema::Access = ReadWrite(SampleControl);

/// The tables this file declares (the optional attributes' own tables are
/// added from their declarations, [`crate::pm::optional::OPTIONAL`]).
#[rustfmt::skip]
const DECLARED: &[Table] = &[
    Table {
        number: 1,
        name: "pmClassPortInfoTable",
        present: |n| n.class_port_info.is_some(),
        columns: &[col(2, "pmClassPortInfoAllPortSelect", TruthValue, RO, S::AllPortSelect)],
        ..TABLE
    },
    Table {
        number: 2,
        name: "pmPortSampleCntrlTable",
        present: |n| n.samples_control.is_some(),
        columns: &[
            col(2, "pmPortSampleCntrlOpCode", U8, RW_SAMPLE, S::Ctl(C::OpCode)),
            col(3, "pmPortSampleCntrlPortSelect", U8, ReadWrite(SamplePortSelect), S::Ctl(C::PortSelect)),
            col(4, "pmPortSampleCntrlTick", U8, RO, S::Ctl(C::Tick)),
            col(5, "pmPortSampleCntrlCounterWidth", Enum { max: 4 }, RO, S::Ctl(C::CounterWidth)),
            Cols::Fifteen {
                first: 6,
                names: names15!("pmPortSampleCntrlCounter", "Mask"),
                syntax: Syntax::Unsigned32 { max: 7 },
                access: RO,
                source: S::CtlMask,
            },
            col(21, "pmPortSampleCntrlSampleMechanisms", U8, RO, S::Ctl(C::SampleMechanisms)),
            col(22, "pmPortSampleCntrlSampleStatus", Enum { max: 3 }, RO, S::Ctl(C::SampleStatus)),
            col(23, "pmPortSampleCntrlOptionMask", GUID, RO, S::Ctl(C::OptionMask)),
            col(24, "pmPortSampleCntrlVendorMask", GUID, RO, S::Ctl(C::VendorMask)),
            col(25, "pmPortSampleCntrlSampleStart", U32, RW_SAMPLE, S::Ctl(C::SampleStart)),
            col(26, "pmPortSampleCntrlSampleInterval", U32, RW_SAMPLE, S::Ctl(C::SampleInterval)),
            col(27, "pmPortSampleCntrlTag", OctetString { size: 2 }, RW_SAMPLE, S::Ctl(C::Tag)),
            Cols::Fifteen {
                first: 28,
                names: names15!("pmPortSampleCntrlCounterSelect", ""),
                syntax: U16,
                access: RW_SAMPLE,
                source: S::CtlSelect,
            },
        ],
        ..TABLE
    },
    Table {
        number: 3,
        name: "pmPortSampleResultTable",
        present: |n| n.samples_result.is_some(),
        columns: &[
            col(2, "pmPortSampleResultTag", OctetString { size: 2 }, RO, S::Res(Res::Tag)),
            col(3, "pmResultSampleStatus", Enum { max: 3 }, RO, S::Res(Res::SampleStatus)),
            Cols::Fifteen {
                first: 4,
                names: names15!("pmPortSampleResultCounter", ""),
                syntax: G32,
                access: RO,
                source: S::ResCounter,
            },
        ],
        ..TABLE
    },
    Table {
        number: 4,
        name: "pmPortCountersTable",
        present: |n| n.ports().any(|p| p.counters().is_some()),
        columns: &[
            col(2, "pmPortCountersPortSelect", U8, RW_PORT_SELECT, S::PortSelect),
            col(3, "pmPortCountersSymbolErrors", pc(F::SymbolErrors), RW_CLEAR, S::Counter(F::SymbolErrors)),
            col(4, "pmPortCountersLinkErrorRecovery", pc(F::LinkErrorRecovery), RW_CLEAR, S::Counter(F::LinkErrorRecovery)),
            col(5, "pmPortCountersLinkDown", pc(F::LinkDowned), RW_CLEAR, S::Counter(F::LinkDowned)),
            col(6, "pmPortCountersRcvErrors", pc(F::RcvErrors), RW_CLEAR, S::Counter(F::RcvErrors)),
            col(7, "pmPortCountersRcvRemoteErrors", pc(F::RcvRemotePhysErrors), RW_CLEAR, S::Counter(F::RcvRemotePhysErrors)),
            col(8, "pmPortCountersRcvSwRelayErrors", pc(F::RcvSwitchRelayErrors), RW_CLEAR, S::Counter(F::RcvSwitchRelayErrors)),
            col(9, "pmPortCountersXmitDiscards", pc(F::XmitDiscards), RW_CLEAR, S::Counter(F::XmitDiscards)),
            col(10, "pmPortCountersXmitConstraintErrors", pc(F::XmitConstraintErrors), RW_CLEAR, S::Counter(F::XmitConstraintErrors)),
            col(11, "pmPortCountersRcvConstraintErrors", pc(F::RcvConstraintErrors), RW_CLEAR, S::Counter(F::RcvConstraintErrors)),
            col(12, "pmPortCountersLocalLinkIntegrityErrors", pc(F::LocalLinkIntegrityErrors), RW_CLEAR, S::Counter(F::LocalLinkIntegrityErrors)),
            col(13, "pmPortCountersExcessiveBufferOverrun", pc(F::ExcessiveBufferOverrunErrors), RW_CLEAR, S::Counter(F::ExcessiveBufferOverrunErrors)),
            col(14, "pmPortCountersVL15Dropped", pc(F::Vl15Dropped), RW_CLEAR, S::Counter(F::Vl15Dropped)),
            col(15, "pmPortCountersXmitData", pc(F::XmitData), RW_CLEAR, S::Counter(F::XmitData)),
            col(16, "pmPortCountersRcvData", pc(F::RcvData), RW_CLEAR, S::Counter(F::RcvData)),
            col(17, "pmPortCountersXmitPkts", pc(F::XmitPkts), RW_CLEAR, S::Counter(F::XmitPkts)),
            col(18, "pmPortCountersRcvPkts", pc(F::RcvPkts), RW_CLEAR, S::Counter(F::RcvPkts)),
        ],
        ..TABLE
    },
    Table {
        number: 5,
        name: "pmNodeTable",
        columns: &[
            col(2, "pmNodeDescription", TEXT, RO, S::Node(N::Description))
                .prom(&[label(NodeInfo, 1, "node_desc", Shown::Text)]),
            col(3, "pmNodeType", Enum { max: 3 }, RO, S::Node(N::Type))
                .prom(&[label(NodeInfo, 2, "node_type", Shown::NodeType)]),
            col(4, "pmNodeSystemImageGuid", GUID, RO, S::Node(N::SysGuid)),
            col(5, "pmNodeVendorId", Syntax::Unsigned32 { max: 0xFF_FFFF }, RO, S::Node(N::VendorId))
                .prom(&[label(NodeInfo, 3, "vendor_id", Shown::Hex(6))]),
            col(6, "pmNodeDeviceId", U16, RO, S::Node(N::DeviceId))
                .prom(&[label(NodeInfo, 4, "device_id", Shown::Hex(4))]),
            col(7, "pmNodeNumPorts", U8, RO, S::Node(N::NumPorts)),
            col(8, "pmNodeLid", U16, RO, S::Node(N::Lid))
                .prom(&[label(NodeInfo, 5, "lid", Shown::Number)]),
            col(9, "pmNodeStatus", Enum { max: 3 }, RO, S::Node(N::Status))
                .prom(&[gauge("node_up", NodeC, Below(3), "1 when the node answered within the configured sweeps, 0 when it is unreachable.")]),
            col(10, "pmNodeLastUpdate", TimeStamp, RO, S::Node(N::LastUpdate)),
            col(11, "pmNodePmaCapabilityMask", OctetString { size: 2 }, RO, S::Node(N::PmaCapMask)),
            col(12, "pmNodeOptionalAttributes", TEXT, RO, S::Node(N::OptionalAttributes)),
            col(13, "pmNodeSource", Enum { max: 3 }, RO, S::Node(N::Source)),
            col(14, "pmNodeWideCounters", Enum { max: 3 }, RO, S::Node(N::WideCounters)),
            col(15, "pmNodeUnresponsive", TruthValue, RO, S::Node(N::Unresponsive))
                .prom(&[gauge("node_health_unresponsive", HealthC, Below(2), "1 while the node's PMA is held unresponsive (it missed k of the last n sweeps while the fabric answered), else 0; only nodes that missed a sweep within health.forget_after.")]),
            col(16, "pmNodeSubnets", LIST, RO, S::Node(N::Subnets))
                .prom(&[label(NodeInfo, 6, "subnet", Shown::TextOrOmit)]),
            col(17, "pmNodeName", NAME, RO, S::Node(N::Name))
                .prom(&[label(NodeInfo, 7, "node_name", Shown::Text)]),
            col(18, "pmNodeXmitWaitTickSource", Enum { max: 3 }, RO, S::Node(N::XmitWaitTickSource)),
            col(19, "pmNodeXmitWaitTickRule", LIST, RO, S::Node(N::XmitWaitTickRule)),
        ],
        part: Part::Node,
        ..TABLE
    },
    Table {
        number: 6,
        name: "pmPortTable",
        index: NodeGuidPort,
        port_present: every_port,
        columns: &[
            col(2, "pmPortNodeDescription", TEXT, RO, S::Port(P::NodeDescription)),
            col(3, "pmPortGuid", GUID, RO, S::Port(P::Guid))
                .prom(&[label(PortInfo, 2, "port_guid", Shown::Guid)]),
            col(4, "pmPortLid", U16, RO, S::Port(P::Lid)),
            col(5, "pmPortState", Enum { max: 4 }, RO, S::Port(P::State)).prom(&[
                gauge("port_state", PortC, One, "PortInfo PortState: 1 down, 2 init, 3 armed, 4 active, 0 unknown."),
                label(PortInfo, 7, "state", Shown::PortState),
            ]),
            col(6, "pmPortPhysState", Enum { max: 7 }, RO, S::Port(P::PhysState))
                .prom(&[gauge("port_physical_state", PortC, One, "PortInfo PortPhysicalState: 1 sleep, 2 polling, 3 disabled, 4 training, 5 link up, 6 link error recovery, 7 phy test, 0 unknown.")]),
            col(7, "pmPortLinkWidthActive", Enum { max: 12 }, RO, S::Port(P::Width)).prom(&[
                gauge("port_link_width_lanes", PortC, One, "Lanes of the active link width (0 unknown)."),
                label(PortInfo, 5, "link_width", Shown::Width),
            ]),
            col(8, "pmPortLinkSpeedActive", Enum { max: 9 }, RO, S::Port(P::Speed)).prom(&[
                gauge("port_link_speed_bytes_per_second", PortC, LaneBytesPerSecond, "Data rate of one lane at the active link speed, in bytes per second (0 unknown)."),
                label(PortInfo, 6, "link_speed", Shown::Speed),
            ]),
            col(9, "pmPortRateMbps", G32, RO, S::Port(P::RateMbps))
                .prom(&[gauge("port_rate_bytes_per_second", PortC, Times(125_000), "Data rate of the link (width times lane speed), in bytes per second.")]),
            col(10, "pmPortPeerNodeGuid", GUID, RO, S::Port(P::PeerNodeGuid))
                .prom(&[label(PortInfo, 3, "peer_node_guid", Shown::GuidOrEmpty)]),
            col(11, "pmPortPeerPortNum", U8, RO, S::Port(P::PeerPortNum))
                .prom(&[label(PortInfo, 4, "peer_port", Shown::NumberOrEmpty)]),
            col(12, "pmPortPeerDescription", TEXT, RO, S::Port(P::PeerDescription)),
            col(13, "pmPortLastUpdate", TimeStamp, RO, S::Port(P::LastUpdate)),
            col(14, "pmPortClearCounters", Syntax::Unsigned32 { max: CLEAR_MASK_MAX, }, ReadWrite(ClearMask), S::PortClear),
            col(15, "pmPortName", Syntax::DisplayString { max: 96 }, RO, S::Port(P::Name))
                .prom(&[label(PortInfo, 1, "name", Shown::Text)]),
            col(16, "pmPortSubnet", Syntax::Unsigned32 { max: MAX_SUBNETS as u32 }, RO, S::Port(P::Subnet))
                .prom(&[label(PortInfo, 8, "subnet", Shown::SubnetOrOmit)]),
        ],
        part: Part::Port,
        ..TABLE
    },
    Table {
        number: 7,
        name: "pmPortCounters64Table",
        index: NodeGuidPort,
        present: |n| n.ports().any(|p| p.hc.valid != 0),
        port_present: |p| p.hc.valid != 0,
        columns: &[Cols::Walk(Walk::HcTotals)],
        part: Part::Totals,
        ..TABLE
    },
    Table {
        number: 8,
        name: "pmPortRateTable",
        index: NodeGuidPort,
        present: |n| n.ports().any(|p| p.rates.valid != 0),
        port_present: |p| p.rates.valid != 0,
        columns: &[
            col(1, "pmPortRateInBitsPerSec", Counter64, RO, S::Rate(R::InBitsPerSec)),
            col(2, "pmPortRateOutBitsPerSec", Counter64, RO, S::Rate(R::OutBitsPerSec)),
            col(3, "pmPortRateInPktsPerSec", G32, RO, S::Rate(R::InPktsPerSec)),
            col(4, "pmPortRateOutPktsPerSec", G32, RO, S::Rate(R::OutPktsPerSec)),
            col(5, "pmPortRateOutUtilization", gauge_of(10000), RO, S::Rate(R::OutUtilization)),
            col(6, "pmPortRateInUtilization", gauge_of(10000), RO, S::Rate(R::InUtilization)),
            col(7, "pmPortRateCongestion", gauge_of(10000), RO, S::Rate(R::Congestion)),
            col(8, "pmPortRateCongestedMbps", G32, RO, S::Rate(R::CongestedMbps)),
            Cols::Walk(Walk::ErrorRates { first: 9 }),
        ],
        ..TABLE
    },
    Table {
        number: 9,
        name: "pmAgent",
        index: Scalar,
        columns: &[
            col(1, "pmAgentVersion", TEXT, RO, S::Agent(A::Version))
                .prom(&[label(BuildInfo, 1, "version", Shown::Text)]),
            col(2, "pmAgentUpTime", TimeTicks, RO, S::Agent(A::UpTime)),
            col(3, "pmAgentSweeps", Counter64, RO, S::Agent(A::Sweeps))
                .prom(&[counter("agent_sweeps", Agent, One, "Sweeps of the fabric published.")]),
            col(4, "pmAgentLastSweepTime", TimeStamp, RO, S::Agent(A::LastSweepTime)),
            col(5, "pmAgentLastSweepDuration", G32, RO, S::Agent(A::LastSweepDuration))
                .prom(&[gauge("agent_last_sweep_duration_seconds", Agent, MillisToSeconds, "Duration of the last sweep.")]),
            col(6, "pmAgentLastSweepMads", G32, RO, S::Agent(A::LastSweepMads))
                .prom(&[gauge("agent_last_sweep_mads", Agent, One, "PM MADs the last sweep sent.")]),
            col(7, "pmAgentLastSweepTimeouts", G32, RO, S::Agent(A::LastSweepTimeouts))
                .prom(&[gauge("agent_last_sweep_timeouts", Agent, One, "PM MADs of the last sweep that timed out.")]),
            col(8, "pmAgentNodesReachable", G32, RO, S::Agent(A::NodesReachable))
                .prom(&[gauge("agent_nodes_reachable", Agent, One, "Nodes that answered within the configured sweeps.")]),
            col(9, "pmAgentNodesUnreachable", G32, RO, S::Agent(A::NodesUnreachable))
                .prom(&[gauge("agent_nodes_unreachable", Agent, One, "Nodes marked unreachable.")]),
            col(10, "pmAgentLastDiscovery", TimeStamp, RO, S::Agent(A::LastDiscovery)),
            col(11, "pmAgentNotificationsSent", Counter64, RO, S::Agent(A::NotificationsSent))
                .prom(&[counter("agent_notifications_sent", Agent, One, "Notifications sent.")]),
            col(12, "pmAgentNotificationsSuppressed", Counter64, RO, S::Agent(A::NotificationsSuppressed))
                .prom(&[counter("agent_notifications_suppressed", Agent, One, "Notifications held back by the per-sweep limit.")]),
            col(13, "pmAgentNotificationsDropped", Counter64, RO, S::Agent(A::NotificationsDropped))
                .prom(&[counter("agent_notifications_dropped", Agent, One, "Notifications lost while snmpd was away.")]),
            col(14, "pmAgentSnmpInPkts", Counter64, RO, S::Agent(A::SnmpInPackets))
                .prom(&[counter("agent_snmp_in_packets", Agent, One, "Datagrams received by the agent's SNMP endpoint.")]),
            col(15, "pmAgentSnmpOutPkts", Counter64, RO, S::Agent(A::SnmpOutPackets))
                .prom(&[counter("agent_snmp_out_packets", Agent, One, "Responses and Reports the SNMP endpoint sent.")]),
            // Served by reason as infiniband_agent_snmp_refused_total
            // (edge::refusal), of which these are sums.
            col(16, "pmAgentSnmpRefused", Counter64, RO, S::Agent(A::SnmpRefused)),
            col(17, "pmAgentSnmpRateLimited", Counter64, RO, S::Agent(A::SnmpRateLimited)),
        ],
        part: Part::Agent,
        ..TABLE
    },
    Table {
        number: 14,
        name: "pmPortVLTable",
        index: NodeGuidPortLane,
        port_present: |p| p.optional().has_lane(Lane::Vl),
        columns: &[Cols::Walk(Walk::Lanes(Lane::Vl))],
        collector: Some(Collector::Vl),
        ..TABLE
    },
    Table {
        number: 15,
        name: "pmPortSLTable",
        index: NodeGuidPortLane,
        port_present: |p| p.optional().has_lane(Lane::Sl),
        columns: &[Cols::Walk(Walk::Lanes(Lane::Sl))],
        collector: Some(Collector::Sl),
        ..TABLE
    },
    Table {
        number: 18,
        name: "pmPortFecTable",
        index: NodeGuidPort,
        port_present: every_port,
        attr: Some(crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS),
        columns: &[
            col(1, "pmPortFecMode", Enum { max: 4 }, RO, S::FecMode)
                .prom(&[gauge("port_fec_mode", FecC, One, "FEC the link runs: 1 none, 2 FireCode, 3 RS-FEC, 4 low-latency RS-FEC, 0 unknown.")]),
            col(2, "pmPortSyncHeaderErrors", gauge_of(0xFFFF), RO, S::Fec(Fec::SyncHeaderErrors)),
            col(3, "pmPortUnknownBlocks", gauge_of(0xFFFF), RO, S::Fec(Fec::UnknownBlocks)),
            col(4, "pmPortFECCorrectableBlocks", G32, RO, S::Fec(Fec::CorrectableBlocks)),
            col(5, "pmPortFECUncorrectableBlocks", G32, RO, S::Fec(Fec::UncorrectableBlocks)),
            col(6, "pmPortFECCorrectedSymbols", G32, RO, S::Fec(Fec::CorrectedSymbols)),
        ],
        part: Part::Fec,
        collector: Some(Collector::Fec),
        ..TABLE
    },
    Table {
        number: 19,
        name: "pmPortLaneTable",
        index: NodeGuidPortLane,
        port_present: |p| p.optional().has_lane(Lane::Phys),
        columns: &[Cols::Walk(Walk::Lanes(Lane::Phys))],
        collector: Some(Collector::Lanes),
        ..TABLE
    },
    Table {
        number: 21,
        name: "pmPortSampleResultExtTable",
        present: |n| n.samples_result_ext.is_some(),
        columns: &[
            col(1, "pmSampleResultExtTag", OctetString { size: 2 }, RO, S::ResExt(X::Tag)),
            col(2, "pmSampleResultExtStatus", Enum { max: 3 }, RO, S::ResExt(X::SampleStatus)),
            col(3, "pmSampleResultExtWidth", Syntax::Unsigned32 { max: 3 }, RO, S::ResExt(X::ExtendedWidth)),
            Cols::Fifteen {
                first: 4,
                names: names15!("pmSampleResultExtCounter", ""),
                syntax: Counter64,
                access: RO,
                source: S::ResExtCounter,
            },
        ],
        ..TABLE
    },
    Table {
        number: 22,
        name: "pmPortLinkTable",
        index: NodeGuidPort,
        port_present: every_port,
        columns: &[
            col(1, "pmPortLinkWidthSupported", Syntax::DisplayString { max: 32 }, RO, S::Link(L::WidthSupported)),
            col(2, "pmPortLinkWidthEnabled", Syntax::DisplayString { max: 32 }, RO, S::Link(L::WidthEnabled)),
            col(3, "pmPortLinkSpeedSupported", Syntax::DisplayString { max: 64 }, RO, S::Link(L::SpeedSupported)),
            col(4, "pmPortLinkSpeedEnabled", Syntax::DisplayString { max: 64 }, RO, S::Link(L::SpeedEnabled)),
            col(5, "pmPortLinkWidthExpected", Enum { max: 12 }, RO, S::Link(L::WidthExpected))
                .prom(&[gauge("port_link_width_expected_lanes", PortC, One, "Lanes of the widest width both ends of the link support and enable (0 unknown).")]),
            col(6, "pmPortLinkSpeedExpected", Enum { max: 9 }, RO, S::Link(L::SpeedExpected))
                .prom(&[gauge("port_link_speed_expected_bytes_per_second", PortC, LaneBytesPerSecond, "Data rate of one lane at the fastest speed both ends support and enable, in bytes per second (0 unknown).")]),
            col(7, "pmPortLinkDegraded", Enum { max: 4 }, RO, S::Link(L::Degraded)).prom(&[
                gauge("port_link_degraded", PortC, AtLeast(2), "1 while the link runs below the width or speed both ends support and enable, else 0 (also while it is down or a fact is not known); infiniband_port_link_health says which."),
                gauge("port_link_health", PortC, One, "How the link runs against what both ends support and enable: 1 normal, 2 width degraded, 3 speed degraded, 4 both, 0 unknown (down, or a fact not known)."),
            ]),
            col(8, "pmPortSymbolBer", Syntax::DisplayString { max: 16 }, RO, S::Link(L::SymbolBer))
                .prom(&[gauge("port_symbol_bit_error_ratio", PortC, Decimal, "Symbol errors over the bits received at the active width and speed between the port's last two readings.")]),
            col(9, "pmPortSymbolBerPer1e15", G32, RO, S::Link(L::SymbolBerPer1e15)),
            col(10, "pmPortRawBer", Syntax::DisplayString { max: 16 }, RO, S::Link(L::RawBer))
                .prom(&[gauge("port_raw_bit_error_ratio", FecC, Decimal, "Bit error ratio before FEC (corrected symbols over bits received) between the last two readings.")]),
            col(11, "pmPortRawBerPer1e15", G32, RO, S::Link(L::RawBerPer1e15)),
            col(12, "pmPortEffectiveBer", Syntax::DisplayString { max: 16 }, RO, S::Link(L::EffectiveBer))
                .prom(&[gauge("port_effective_bit_error_ratio", FecC, Decimal, "Bit error ratio after FEC (uncorrectable blocks over bits received) between the last two readings.")]),
            col(13, "pmPortEffectiveBerPer1e15", G32, RO, S::Link(L::EffectiveBerPer1e15)),
        ],
        part: Part::Link,
        ..TABLE
    },
    Table {
        number: 23,
        name: "pmPortHealthTable",
        index: NodeGuidPort,
        port_present: every_port,
        columns: &[
            Cols::Walk(Walk::Conditions),
            col(7, "pmPortHealthFlaps", Counter64, RO, S::Health(H::Flaps))
                .prom(&[counter("port_health_flaps", HealthC, One, "Flaps counted on the port: LinkDownedCounter rising, or the port seen leaving Active and coming back.")]),
            col(8, "pmPortHealthLastFlap", DateAndTime, RO, S::Health(H::LastFlap))
                .prom(&[gauge("port_health_last_flap_timestamp_seconds", HealthC, DateSeconds, "When the last flap of the port was counted (Unix time).")]),
            col(9, "pmPortHealthSince", DateAndTime, RO, S::Health(H::Since)),
            col(10, "pmPortHealthLastSeen", DateAndTime, RO, S::Health(H::LastSeen)),
            col(11, "pmPortHealthRaised", Counter64, RO, S::Health(H::Raised)),
            col(12, "pmPortHealthPeerNodeGuid", GUID, RO, S::Health(H::PeerNodeGuid))
                .prom(&[label(PeerInfo, 1, "peer_node_guid", Shown::GuidOrEmpty)]),
            col(13, "pmPortHealthPeerPortNum", U8, RO, S::Health(H::PeerPortNum))
                .prom(&[label(PeerInfo, 2, "peer_port", Shown::NumberOrEmpty)]),
            col(14, "pmPortHealthAcknowledge", Enum { max: ACK_ALL }, ReadWrite(Acknowledge), S::Health(H::Acknowledge)),
        ],
        ..TABLE
    },
    Table {
        number: 24,
        name: "pmSubnetTable",
        index: Subnet,
        present: no_nodes,
        columns: &[
            col(2, "pmSubnetName", TEXT, RO, S::Subnet(Sn::Name))
                .prom(&[label(SubnetInfo, 1, "subnet", Shown::Text)]),
            col(3, "pmSubnetPrefix", Syntax::OctetString { size: 8 }, RO, S::Subnet(Sn::Prefix))
                .prom(&[label(SubnetInfo, 2, "prefix", Shown::Prefix)]),
            col(4, "pmSubnetSmGuid", GUID, RO, S::Subnet(Sn::SmGuid))
                .prom(&[label(SubnetInfo, 3, "sm_guid", Shown::Guid)]),
            col(5, "pmSubnetSmLid", U16, RO, S::Subnet(Sn::SmLid))
                .prom(&[label(SubnetInfo, 4, "sm_lid", Shown::Number)]),
            col(6, "pmSubnetSmPriority", Syntax::Unsigned32 { max: 15 }, RO, S::Subnet(Sn::SmPriority))
                .prom(&[label(SubnetInfo, 5, "sm_priority", Shown::Number)]),
            col(7, "pmSubnetSmState", Enum { max: SM_STATE_NONE }, RO, S::Subnet(Sn::SmState))
                .prom(&[label(SubnetInfo, 6, "sm_state", Shown::SmState)]),
            col(8, "pmSubnetLocalCa", TEXT, RO, S::Subnet(Sn::LocalCa))
                .prom(&[label(SubnetInfo, 7, "local_ca", Shown::Text)]),
            col(9, "pmSubnetLocalPort", U8, RO, S::Subnet(Sn::LocalPort))
                .prom(&[label(SubnetInfo, 8, "local_port", Shown::NumberOrEmpty)]),
            col(10, "pmSubnetStandbyPorts", LIST, RO, S::Subnet(Sn::StandbyPorts))
                .prom(&[label(SubnetInfo, 9, "standby", Shown::Text)]),
            col(11, "pmSubnetNodes", G32, RO, S::Subnet(Sn::Nodes))
                .prom(&[gauge("subnet_nodes", SubnetC, One, "Nodes the subnet's last sweep knew of (a node seen in two subnets counts in each).")]),
            col(12, "pmSubnetPorts", G32, RO, S::Subnet(Sn::Ports))
                .prom(&[gauge("subnet_ports", SubnetC, One, "Ports swept in the subnet.")]),
            col(13, "pmSubnetLastSweep", TimeStamp, RO, S::Subnet(Sn::LastSweep))
                .prom(&[gauge("subnet_last_sweep_timestamp_seconds", SubnetC, UnixSeconds, "When the subnet's last sweep ended (Unix time).")]),
            col(14, "pmSubnetSweepDuration", U32, RO, S::Subnet(Sn::SweepDuration))
                .prom(&[gauge("subnet_sweep_duration_seconds", SubnetC, MillisToSeconds, "Duration of the subnet's last sweep.")]),
            col(15, "pmSubnetSweeps", Counter64, RO, S::Subnet(Sn::Sweeps))
                .prom(&[counter("subnet_sweeps", SubnetC, One, "Sweeps of the subnet since the agent started (each subnet has its own sweeper).")]),
            col(16, "pmSubnetSweepState", Enum { max: 3 }, RO, S::Subnet(Sn::SweepState)),
        ],
        part: Part::Subnet,
        ..TABLE
    },
    Table {
        number: 25,
        name: "pmPlanDiffTable",
        index: PlanDiff,
        present: no_nodes,
        columns: &[
            col(3, "pmPlanDiffNodeName", TEXT, RO, S::Plan(Pl::NodeName)),
            col(4, "pmPlanDiffPlannedNodeGuid", GUID, RO, S::Plan(Pl::PlannedNodeGuid)),
            col(5, "pmPlanDiffPlannedPortNum", U8, RO, S::Plan(Pl::PlannedPortNum)),
            col(6, "pmPlanDiffPlannedName", TEXT, RO, S::Plan(Pl::PlannedName)),
            col(7, "pmPlanDiffFoundNodeGuid", GUID, RO, S::Plan(Pl::FoundNodeGuid)),
            col(8, "pmPlanDiffFoundPortNum", U8, RO, S::Plan(Pl::FoundPortNum)),
            col(9, "pmPlanDiffFoundName", TEXT, RO, S::Plan(Pl::FoundName)),
            col(10, "pmPlanDiffSince", DateAndTime, RO, S::Plan(Pl::Since)),
            col(11, "pmPlanDiffLastSeen", DateAndTime, RO, S::Plan(Pl::LastSeen)),
            col(12, "pmPlanDiffRaised", Counter64, RO, S::Plan(Pl::Raised)),
            col(13, "pmPlanDiffStanding", TruthValue, RO, S::Plan(Pl::Standing)),
            col(14, "pmPlanDiffText", Syntax::DisplayString { max: 255 }, RO, S::Plan(Pl::Text)),
        ],
        ..TABLE
    },
];

/// A comma-separated list (pmNodeSubnets, pmSubnetStandbyPorts):
/// DisplayString at its largest.
const LIST: Syntax = Syntax::DisplayString {
    max: super::schema::LIST_MAX,
};

/// pmNodeName: a node-name-map's name at its longest.
const NAME: Syntax = Syntax::DisplayString {
    max: crate::ib::names::NAME_MAX,
};

/// pmSubnetSmState's none(4): no SM answered SMInfo (0..=3 are SMInfo's
/// SMState).
pub const SM_STATE_NONE: u32 = 4;

/// pmPortHealthAcknowledge: 1..=6 name a condition ([`CONDITIONS`] order),
/// this value all of them.
pub const ACK_ALL: u32 = CONDITION_COUNT as u32 + 1;
const _: () = assert!(CONDITION_COUNT == 6, "pmPortHealthTable's columns 1..=6");

/// The table of an optional attribute with one of its own
/// ([`MibTable::Own`]): a sparse per-port table, a column per counter.
/// Its families are in the `congestion` collector for the
/// congestion-control attributes (IBA Annex A10, 0x30 - 0x37), in
/// `details` otherwise.
const fn own_table(number: u32, name: &'static str, attr_id: u16) -> Table {
    let congestion = attr_id >= 0x30 && attr_id <= 0x37;
    Table {
        number,
        name,
        index: NodeGuidPort,
        port_present: every_port,
        attr: Some(attr_id),
        columns: &[Cols::Walk(Walk::AttrCounters)],
        collector: Some(if congestion {
            Collector::Congestion
        } else {
            Collector::Details
        }),
        ..TABLE
    }
}

const TABLE_COUNT: usize = {
    let (mut n, mut i) = (DECLARED.len(), 0);
    while i < OPTIONAL.len() {
        if let MibTable::Own { .. } = OPTIONAL[i].table {
            n += 1;
        }
        i += 1;
    }
    n
};

/// Every table the agent serves, in OID order: [`DECLARED`] and the
/// optional attributes' own tables.
pub const TABLES: [Table; TABLE_COUNT] = {
    let mut out = [TABLE; TABLE_COUNT];
    let mut n = 0;
    while n < DECLARED.len() {
        out[n] = DECLARED[n];
        n += 1;
    }
    let mut i = 0;
    while i < OPTIONAL.len() {
        if let MibTable::Own { number, name } = OPTIONAL[i].table {
            out[n] = own_table(number, name, OPTIONAL[i].id);
            n += 1;
        }
        i += 1;
    }
    // Insertion sort by number.
    let mut i = 1;
    while i < out.len() {
        let mut j = i;
        while j > 0 && out[j - 1].number > out[j].number {
            let t = out[j - 1];
            out[j - 1] = out[j];
            out[j] = t;
            j -= 1;
        }
        i += 1;
    }
    out
};

/// Where in [`TABLES`] table number n+1 is.
const TABLE_BY_NUMBER: [Option<usize>; 32] = {
    let mut by = [None; 32];
    let mut i = 0;
    while i < TABLES.len() {
        let n = TABLES[i].number as usize;
        assert!(
            n >= 1 && n <= 32 && by[n - 1].is_none(),
            "table numbers 1..=32, once each"
        );
        by[n - 1] = Some(i);
        i += 1;
    }
    by
};

/// The table numbered `number`.
pub fn table(number: u32) -> Option<&'static Table> {
    let i = usize::try_from(number).ok()?.checked_sub(1)?;
    TABLE_BY_NUMBER
        .get(i)
        .copied()
        .flatten()
        .map(|i| &TABLES[i])
}

/// Every accessible column of IB-PM-MIB, in OID order: the columns of
/// [`TABLES`], with the walks made.
pub static COLUMNS: LazyLock<Vec<Column>> = LazyLock::new(|| {
    let mut v = Vec::with_capacity(300);
    for t in &TABLES {
        let mut add = |c: Column| {
            v.push(Column {
                table: t.number,
                scalar: t.index == Scalar,
                ..c
            })
        };
        for cols in t.columns {
            match *cols {
                Cols::One(c) => add(c),
                Cols::Fifteen {
                    first,
                    names,
                    syntax,
                    access,
                    source,
                } => {
                    for (i, name) in names.into_iter().enumerate() {
                        add(column(first + i as u32, name, syntax, access, source(i)));
                    }
                }
                Cols::Walk(w) => walk(t, w).into_iter().for_each(&mut add),
            }
        }
    }
    v.sort_by_key(|c| (c.table, c.column));
    v
});

/// The family every pmPortHealth condition column is a member of, its
/// samples labelled with the column's condition.
const CONDITION_FACE: super::face::Face = gauge(
    "port_health_condition",
    HealthC,
    Below(2),
    "1 while a verdict of the condition stands on the port's link (until its recovery window passes without it), else 0; only ports with a verdict or one within health.forget_after. unresponsive is the node's verdict.",
);

/// The columns a [`Walk`] makes of table `t`; names are made once, when
/// [`COLUMNS`] is first used.
fn walk(t: &Table, w: Walk) -> Vec<Column> {
    let name = |prefix: &str, s: &str| -> &'static str { format!("{prefix}{s}").leak() };
    match w {
        Walk::HcTotals => {
            let mut v = vec![column(
                hc::DISCONTINUITY_COLUMN,
                "pmPortCounterDiscontinuityTime",
                TimeStamp,
                RO,
                S::HcDiscontinuity,
            )];
            v.extend(HC.iter().enumerate().map(|(k, c)| {
                let collector = if c.fault {
                    Collector::Errors
                } else {
                    Collector::Traffic
                };
                let face = counter(c.family, collector, One, c.help);
                Column {
                    faces: Box::leak(Box::new([face])),
                    ..column(
                        hc::column(k),
                        name("pmPortHC", c.name),
                        Counter64,
                        RO,
                        S::Hc(k),
                    )
                }
            }));
            v
        }
        Walk::ErrorRates { first } => HC
            .iter()
            .enumerate()
            .filter(|(_, h)| h.error)
            .zip(first..)
            .map(|((k, h), c)| column(c, name("pmPortRate", h.name), G32, RO, S::ErrorRate(k)))
            .collect(),
        Walk::AttrCounters => {
            let attr_id = t.attr.unwrap_or(0);
            let fields = crate::pm::optional::fields_of(attr_id);
            crate::pm::optional::counter_fields(fields)
                .iter()
                .zip(1..)
                .map(|(f, c)| {
                    let source = S::Optional { attr_id, field: *f };
                    column(c, name("pm", f.name), gauge_of(f.max()), RO, source)
                })
                .collect()
        }
        Walk::Lanes(lane) => crate::pm::optional::LANE_ATTRS
            .iter()
            .filter(|a| a.lane == lane)
            .zip(2..)
            .map(|(a, c)| column(c, name("pm", a.name), gauge_of(a.max()), RO, S::Lane(*a)))
            .collect(),
        Walk::Conditions => CONDITIONS
            .iter()
            .zip(1..)
            .map(|(d, c)| {
                let source = S::Health(H::Condition(d.condition));
                let face = CONDITION_FACE.labelled("condition", d.name);
                Column {
                    faces: Box::leak(Box::new([face])),
                    ..column(c, name("pmPortHealth", d.mib), TruthValue, RO, source)
                }
            })
            .collect(),
    }
}

/// Find the column an OID names (exactly the column plus an index suffix)
/// and its table.
pub fn column_of(oid: &[u32]) -> Option<(&'static Column, &'static Table, &[u32])> {
    if !oid.starts_with(&PM_OBJECTS) || oid.len() < 9 {
        return None;
    }
    let table_no = oid[7];
    let t = table(table_no)?;
    let (column, rest) = if t.index == Scalar {
        (oid[8], 9)
    } else {
        if oid.len() < 10 || oid[8] != 1 {
            return None;
        }
        (oid[9], 10)
    };
    let col = COLUMNS
        .binary_search_by_key(&(table_no, column), |c| (c.table, c.column))
        .ok()
        .map(|i| &COLUMNS[i])?;
    Some((col, t, &oid[rest..]))
}

/// The first OID past every instance of the Counter64 column holding
/// `oid`: a walk SNMPv1 cannot carry steps over the whole column at once.
/// `None` when `oid` is in no Counter64 column.
pub fn counter64_column_end(oid: &[u32]) -> Option<super::Oid> {
    let (col, _, _) = column_of(oid)?;
    if !matches!(col.syntax, Counter64) {
        return None;
    }
    let mut end = col.oid().to_vec();
    let last = end.last_mut()?;
    *last = last.checked_add(1)?;
    Some(super::Oid::from(end))
}

/// The pmPortCountersTable column of each PortCounters counter it shows
/// (XmitWait has none in the draft's table).
pub fn counter_columns() -> impl Iterator<Item = (F, &'static Column)> {
    COLUMNS.iter().filter_map(|c| match c.source {
        S::Counter(f) => Some((f, c)),
        _ => None,
    })
}
#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::Guid;
    use crate::mib::index::{IndexScheme, RowIndex};

    #[test]
    fn columns_are_in_oid_order_and_complete() {
        let cols = &*COLUMNS;
        for w in cols.windows(2) {
            assert!(*w[0].oid() < *w[1].oid(), "{} !< {}", w[0].name, w[1].name);
        }
        let count = |t| cols.iter().filter(|c| c.table == t).count();
        // The draft's accessible columns: 1, 41, 17 and 17 (the GUID index
        // column of each table is not-accessible).
        assert_eq!(count(1), 1);
        assert_eq!(count(2), 41);
        assert_eq!(count(3), 17);
        assert_eq!(count(4), 17);
    }

    /// The column table and mibs/IB-PM-MIB.txt agree on every name, column
    /// number and access.
    #[test]
    fn columns_match_the_mib_file() {
        let mib = include_str!("../../mibs/IB-PM-MIB.txt");
        for c in COLUMNS.iter() {
            let head = format!("\n{} OBJECT-TYPE", c.name);
            let at = mib
                .find(&head)
                .unwrap_or_else(|| panic!("{} not in the MIB", c.name));
            let body = &mib[at..];
            let body = &body[..body.find("::=").unwrap() + 40];
            let access = if c.writable() {
                "read-write"
            } else {
                "read-only"
            };
            assert!(
                body.contains(&format!("MAX-ACCESS  {access}"))
                    || body.contains(&format!("MAX-ACCESS {access}")),
                "{}: {access}",
                c.name
            );
            let tail = &body[body.find("::=").unwrap()..];
            assert!(
                tail.contains(&format!(" {} }}", c.column)),
                "{}: column {} in {tail}",
                c.name,
                c.column
            );
        }
    }

    /// The column table and mibs/IB-PM-MIB.txt agree on every syntax: the
    /// type, the range or size, an enumeration's largest value.
    #[test]
    fn column_syntaxes_match_the_mib_file() {
        let mib = include_str!("../../mibs/IB-PM-MIB.txt");
        for c in COLUMNS.iter() {
            let at = mib.find(&format!("\n{} OBJECT-TYPE", c.name)).unwrap();
            let body = &mib[at..];
            let body = &body[body.find("SYNTAX").unwrap() + 6..body.find("MAX-ACCESS").unwrap()];
            let syntax = &body[..body.find("UNITS").unwrap_or(body.len())];
            let syntax = syntax
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
                .replace("SIZE (", "SIZE(");
            let ranged = |ty: &str, max: u32| {
                syntax == format!("{ty} (0..{max})") || (max == u32::MAX && syntax == ty)
            };
            let ok = match c.syntax {
                Syntax::Counter64 => syntax == "Counter64",
                Syntax::TimeStamp => syntax == "TimeStamp",
                Syntax::TimeTicks => syntax == "TimeTicks",
                Syntax::DateAndTime => syntax == "DateAndTime",
                Syntax::TruthValue => syntax == "TruthValue",
                Syntax::Gauge32 { max } => ranged("Gauge32", max),
                Syntax::Unsigned32 { max } => ranged("Unsigned32", max),
                Syntax::OctetString { size } => {
                    syntax == format!("OCTET STRING (SIZE({size}))")
                        || (size == 8 && syntax == "PmGuid")
                }
                Syntax::DisplayString { max } => {
                    syntax == format!("DisplayString (SIZE(0..{max}))")
                }
                Syntax::Enum { max } => {
                    syntax.starts_with("INTEGER {")
                        && syntax
                            .split(['(', ')'])
                            .skip(1)
                            .step_by(2)
                            .filter_map(|v| v.parse::<u32>().ok())
                            .max()
                            == Some(max)
                }
            };
            assert!(ok, "{}: {:?} against {syntax}", c.name, c.syntax);
        }
    }

    /// Every writable column's SET rule fits what it shows, so the SET
    /// pipeline can plan it; the read-only columns have none.
    #[test]
    fn set_rules_fit_their_columns() {
        use super::super::schema::{Access, SetRule};
        let mut writable = 0;
        for c in COLUMNS.iter() {
            let Access::ReadWrite(rule) = c.access else {
                continue;
            };
            writable += 1;
            let fits = match rule {
                SetRule::PortSelect => c.source == S::PortSelect,
                SetRule::ClearCounter => matches!(c.source, S::Counter(_)),
                SetRule::ClearMask => c.source == S::PortClear,
                SetRule::SampleControl => matches!(c.source, S::Ctl(_) | S::CtlSelect(_)),
                SetRule::SamplePortSelect => c.source == S::Ctl(C::PortSelect),
                SetRule::Acknowledge => c.source == S::Health(H::Acknowledge),
            };
            assert!(fits, "{}: {rule:?} on {:?}", c.name, c.source);
        }
        // pmPortCountersPortSelect and its 16 counters, pmPortClearCounters,
        // and PortSamplesControl's OpCode, PortSelect, SampleStart,
        // SampleInterval, Tag and 15 CounterSelects, pmPortHealthAcknowledge.
        assert_eq!(writable, 17 + 1 + 20 + 1);
    }

    #[test]
    fn tables_sorted_and_index_schemes_encode_and_parse() {
        // TABLES is sorted by number when it is built (a const sort).
        for w in TABLES.windows(2) {
            assert!(w[0].number < w[1].number);
        }
        let g = Guid(0x0002_c903_0000_1234);
        let row = RowIndex::node(g);
        let idx = IndexScheme::NodeGuid.encode(row);
        assert_eq!(*idx, [0, 2, 201, 3, 0, 0, 18, 52]);
        let port = RowIndex::port(g, 7);
        let pidx = IndexScheme::NodeGuidPort.encode(port);
        assert_eq!(*pidx, [0, 2, 201, 3, 0, 0, 18, 52, 7]);
        assert_eq!(IndexScheme::NodeGuidPort.parse(&pidx), Some(port));
        assert_eq!(IndexScheme::NodeGuidPort.parse(&idx), None);
        assert_eq!(
            IndexScheme::NodeGuidPort.parse(&[0, 2, 201, 3, 0, 0, 18, 52, 256]),
            None
        );
        assert_eq!(
            IndexScheme::Scalar.parse(&[0]),
            Some(RowIndex::node(Guid(0)))
        );
        assert_eq!(IndexScheme::Scalar.parse(&[0, 0]), None);
        assert_eq!(IndexScheme::NodeGuid.parse(&idx), Some(row));
        assert_eq!(IndexScheme::NodeGuid.parse(&idx[1..]), None);
    }

    /// The enumerations of pmPortState, pmPortPhysState and the link
    /// width and speed columns are the link enums' labels and values.
    #[test]
    fn link_enumerations_match_the_mib_file() {
        use crate::ib::{LinkSpeed, LinkWidth, PhysState, PortState};
        let mib = include_str!("../../mibs/IB-PM-MIB.txt");
        let syntax = |name: &str| {
            let at = mib.find(&format!("\n{name} OBJECT-TYPE")).unwrap();
            let body = &mib[at..];
            body[..body.find("MAX-ACCESS").unwrap()].to_string()
        };
        let check = |name: &str, items: Vec<(String, u32)>| {
            let text = syntax(name);
            assert!(text.contains("unknown(0)"), "{name}");
            for (label, v) in items {
                assert!(
                    text.contains(&format!("{label}({v})")),
                    "{name}: {label}({v})"
                );
            }
        };
        check(
            "pmPortState",
            PortState::ALL
                .iter()
                .map(|s| (s.mib_label(), s.mib()))
                .collect(),
        );
        check(
            "pmPortPhysState",
            PhysState::ALL
                .iter()
                .map(|s| (s.mib_label(), s.mib()))
                .collect(),
        );
        check(
            "pmPortLinkWidthActive",
            LinkWidth::ALL
                .iter()
                .map(|s| (s.mib_label(), s.mib()))
                .collect(),
        );
        check(
            "pmPortFecMode",
            crate::ib::FecMode::ALL
                .iter()
                .map(|s| (s.mib_label(), s.mib()))
                .collect(),
        );
        check(
            "pmPortLinkSpeedActive",
            LinkSpeed::ALL
                .iter()
                .map(|s| (s.mib_label(), s.mib()))
                .collect(),
        );
    }

    #[test]
    fn counter_widths_match_iba() {
        let w = |n: &str| match counter_columns().find(|(f, _)| f.name() == n) {
            Some((_, c)) => c.syntax,
            None => panic!("{n}"),
        };
        let w = |n: &str| match w(n) {
            Syntax::Gauge32 { max } => max,
            s => panic!("{n}: {s:?}"),
        };
        assert_eq!(w("SymbolErrorCounter"), 0xFFFF);
        assert_eq!(w("LinkDownedCounter"), 0xFF);
        assert_eq!(w("LocalLinkIntegrityErrors"), 0xF);
        assert_eq!(w("PortRcvPkts"), 0xFFFF_FFFF);
    }
}
