//! What a table declaration is made of: a table (number, name, index
//! scheme, when a node has rows) and its columns (number, name, syntax,
//! access with the SET rule, where the value comes from), as net-snmp's
//! mib2c declares them. The declarations are in [`super::tables`]; the
//! read path, the SET pipeline and the view walk them.

use crate::fabric::record::{NodeRecord, PortRecord};
use crate::pm::port_counters::PortCountersField;
use crate::pm::samples::{
    PortSamplesControlField, PortSamplesResultExtendedField, PortSamplesResultField,
};

use super::face::{Collector, Face, Part};
use super::index::IndexScheme;

/// `pm` = experimental 117.
pub const PM_ROOT: [u32; 6] = [1, 3, 6, 1, 3, 117];
/// `pmMIBObjects` = { pm 1 }; table N is { pmMIBObjects N }, its entry { table 1 }.
pub const PM_OBJECTS: [u32; 7] = [1, 3, 6, 1, 3, 117, 1];

/// Who may write a column, and what a SET of it does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite(SetRule),
}

/// What a SET of a writable column checks and plans (the SET pipeline in
/// [`super::set`] runs these rules in RFC 3416's order).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SetRule {
    /// The row's pmPortCountersPortSelect (agent state, no MAD): a port
    /// of the node, 0 on a switch, 0xFF where ClassPortInfo says
    /// AllPortSelect; else inconsistentValue.
    PortSelect,
    /// A PortCounters counter: only 0 is accepted (wrongValue otherwise);
    /// clears the counter on the row's selected port, the counters of one
    /// node in one PerformanceSet.
    ClearCounter,
    /// pmPortClearCounters: a mask of the counters to clear on the row's
    /// port ([`CLEAR_MASK_MAX`]).
    ClearMask,
    /// A PortSamplesControl field: the node's PortSamplesControl with the
    /// written fields, one Set per node; refused (inconsistentValue) while
    /// a sample runs or with timers wider than CounterWidth.
    SampleControl,
    /// PortSamplesControl PortSelect, as [`SetRule::SampleControl`]: a
    /// port of a switch (as [`SetRule::PortSelect`]), a CA's own port;
    /// else inconsistentValue.
    SamplePortSelect,
    /// pmPortHealthAcknowledge: a condition's number (or all) clears the
    /// standing verdict of the row's link (agent state, no MAD); a port
    /// without such a verdict: inconsistentValue.
    Acknowledge,
}

/// pmPortClearCounters bits: 0..15 are PortCounters CounterSelect, bit 16
/// is CounterSelect2 bit 0 (PortXmitWait).
pub const CLEAR_MASK_MAX: u32 = 0x1_FFFF;

/// The CounterSelect and CounterSelect2 bits of a pmPortClearCounters mask.
pub fn clear_selects(mask: u32) -> (u16, u8) {
    ((mask & 0xFFFF) as u16, ((mask >> 16) & 1) as u8)
}

/// The SMI syntax of a column, which fixes the wire type and the legal values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Syntax {
    /// TruthValue: true(1) / false(2); INTEGER on the wire.
    TruthValue,
    /// An enumerated INTEGER with values 0..=max.
    Enum {
        max: u32,
    },
    /// Unsigned32 (0..=max); Gauge32 on the wire.
    Unsigned32 {
        max: u32,
    },
    /// Gauge32 (0..=max).
    Gauge32 {
        max: u32,
    },
    /// OCTET STRING of a fixed size.
    OctetString {
        size: usize,
    },
    /// DisplayString (0..max octets).
    DisplayString {
        max: usize,
    },
    Counter64,
    /// TimeStamp: TimeTicks since the agent started.
    TimeStamp,
    TimeTicks,
    /// DateAndTime (SNMPv2-TC) in UTC: 11 octets on the wire.
    DateAndTime,
}

/// Unsigned32 (0..255).
pub const U8: Syntax = Syntax::Unsigned32 { max: 255 };
/// Unsigned32 (0..65535).
pub const U16: Syntax = Syntax::Unsigned32 { max: 65535 };
/// Unsigned32.
pub const U32: Syntax = Syntax::Unsigned32 { max: u32::MAX };
/// Gauge32.
pub const G32: Syntax = Syntax::Gauge32 { max: u32::MAX };
/// A GUID: OCTET STRING (SIZE(8)).
pub const GUID: Syntax = Syntax::OctetString { size: 8 };
/// The longest a comma-separated list column (pmNodeSubnets,
/// pmSubnetStandbyPorts) is: a DisplayString's 255 octets.
pub const LIST_MAX: usize = 255;
/// A NodeDescription: DisplayString (SIZE(0..64)).
pub const TEXT: Syntax = Syntax::DisplayString { max: 64 };

/// Gauge32 ranged to a PortCounters field's width (it saturates there).
pub const fn pc(f: PortCountersField) -> Syntax {
    gauge_of(f.field().max())
}

/// Gauge32 (0..max), `max` held to 32 bits.
pub const fn gauge_of(max: u64) -> Syntax {
    Syntax::Gauge32 {
        max: if max > u32::MAX as u64 {
            u32::MAX
        } else {
            max as u32
        },
    }
}

/// Where a column's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// ClassPortInfo.CapabilityMask bit 8.
    AllPortSelect,
    /// A scalar PortSamplesControl field.
    Ctl(PortSamplesControlField),
    /// PortSamplesControl CounterMask`n`.
    CtlMask(usize),
    /// PortSamplesControl CounterSelect`n`.
    CtlSelect(usize),
    /// A scalar PortSamplesResult field.
    Res(PortSamplesResultField),
    /// A scalar PortSamplesResultExtended field.
    ResExt(PortSamplesResultExtendedField),
    /// PortSamplesResultExtended Counter`n`.
    ResExtCounter(usize),
    /// PortSamplesResult Counter`n`.
    ResCounter(usize),
    /// The row's selected port (agent state, default 1).
    PortSelect,
    /// A PortCounters counter of the selected port.
    Counter(PortCountersField),
    Node(NodeCol),
    Port(PortCol),
    Link(LinkCol),
    /// A 64-bit total ([`crate::fabric::hc::HC`] slot).
    Hc(usize),
    HcDiscontinuity,
    Rate(RateCol),
    /// The rate of an error counter ([`crate::fabric::hc::HC`] slot), in
    /// thousandths per second.
    ErrorRate(usize),
    /// pmPortClearCounters: writing a mask clears the port's PortCounters
    /// counters it selects (reads 0).
    PortClear,
    /// The counter of the row's VL, SL or physical lane in a per-lane
    /// attribute's reading.
    Lane(crate::pm::optional::LaneAttr),
    /// The FEC the port's link runs.
    FecMode,
    /// A FEC total of the port's PortExtendedSpeedsCounters reading.
    Fec(crate::pm::optional::FecTotal),
    /// A counter of an optional attribute's latest reading.
    Optional {
        attr_id: u16,
        field: crate::pm::Field,
    },
    Agent(AgentCol),
    /// What the snapshot says of a subnet ([`crate::ib::subnet::SubnetView`]).
    Subnet(SubnetCol),
    /// A port's health verdicts ([`crate::ib::health`]).
    Health(HealthCol),
    /// A mismatch with the plan ([`crate::ib::cabling::PlanVerdict`]).
    Plan(PlanCol),
}

/// Columns of pmPlanDiffTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanCol {
    NodeName,
    PlannedNodeGuid,
    PlannedPortNum,
    PlannedName,
    FoundNodeGuid,
    FoundPortNum,
    FoundName,
    Since,
    LastSeen,
    Raised,
    Standing,
    Text,
}

/// Columns of pmNodeTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeCol {
    Description,
    Type,
    SysGuid,
    VendorId,
    DeviceId,
    NumPorts,
    Lid,
    Status,
    LastUpdate,
    PmaCapMask,
    OptionalAttributes,
    Source,
    WideCounters,
    /// The node's unresponsive verdict.
    Unresponsive,
    /// The labels of the subnets its ports are swept in.
    Subnets,
    /// The name the node goes by: the node-name-map's, else its
    /// NodeDescription.
    Name,
    /// Where the Tick of its XmitWait came from
    /// ([`crate::ib::xmit_wait::TickSource`]).
    XmitWaitTickSource,
    /// The rule its XmitWait ticks are converted by, in words.
    XmitWaitTickRule,
}

/// Columns of pmPortHealthTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HealthCol {
    /// A verdict of the condition stands on the link (for
    /// [`crate::ib::health::Condition::Unresponsive`]: on the node).
    Condition(crate::ib::health::Condition),
    Flaps,
    LastFlap,
    Since,
    LastSeen,
    Raised,
    PeerNodeGuid,
    PeerPortNum,
    Acknowledge,
}

/// Columns of pmPortTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PortCol {
    NodeDescription,
    Guid,
    Lid,
    State,
    PhysState,
    Width,
    Speed,
    RateMbps,
    PeerNodeGuid,
    PeerPortNum,
    PeerDescription,
    LastUpdate,
    Name,
    /// The pmSubnetIndex of the subnet the port is swept in.
    Subnet,
}

/// Columns of pmPortLinkTable: what a port's link should run at, whether
/// it does, and its bit error rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkCol {
    WidthSupported,
    WidthEnabled,
    SpeedSupported,
    SpeedEnabled,
    WidthExpected,
    SpeedExpected,
    Degraded,
    SymbolBer,
    SymbolBerPer1e15,
    RawBer,
    RawBerPer1e15,
    EffectiveBer,
    EffectiveBerPer1e15,
}

/// Columns of pmPortRateTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RateCol {
    InBitsPerSec,
    OutBitsPerSec,
    InPktsPerSec,
    OutPktsPerSec,
    OutUtilization,
    InUtilization,
    Congestion,
    CongestedMbps,
}

/// The agent's scalars.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentCol {
    Version,
    UpTime,
    Sweeps,
    LastSweepTime,
    LastSweepDuration,
    LastSweepMads,
    LastSweepTimeouts,
    NodesReachable,
    NodesUnreachable,
    LastDiscovery,
    NotificationsSent,
    NotificationsSuppressed,
    NotificationsDropped,
    SnmpInPackets,
    SnmpOutPackets,
    SnmpRefused,
    SnmpRateLimited,
}

/// Columns of pmSubnetTable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SubnetCol {
    Name,
    Prefix,
    SmGuid,
    SmLid,
    SmPriority,
    SmState,
    LocalCa,
    LocalPort,
    StandbyPorts,
    Nodes,
    Ports,
    LastSweep,
    SweepDuration,
    Sweeps,
    /// Whether it is being swept ([`crate::ib::subnet::SweepState`]).
    SweepState,
}

/// One accessible column (or scalar).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Column {
    /// Table number under pmMIBObjects (filled in from its table).
    pub table: u32,
    /// Column number under the table's entry (a scalar's number under
    /// its group).
    pub column: u32,
    pub name: &'static str,
    pub syntax: Syntax,
    pub access: Access,
    pub source: Source,
    /// A scalar: `{ group column }.0`, no entry.
    pub scalar: bool,
    /// Its Prometheus face: the families it is shown as and the info
    /// labels it fills.
    pub faces: &'static [Face],
}

impl Column {
    /// The column's OID (without an index): { table 1 column }, or
    /// { group column } for a scalar.
    pub fn oid(&self) -> ColumnOid {
        let mut a = [0u32; 10];
        a[..7].copy_from_slice(&PM_OBJECTS);
        a[7] = self.table;
        if self.scalar {
            a[8] = self.column;
        } else {
            a[8] = 1;
            a[9] = self.column;
        }
        ColumnOid {
            arcs: a,
            len: if self.scalar { 9 } else { 10 },
        }
    }

    pub fn writable(&self) -> bool {
        matches!(self.access, Access::ReadWrite(_))
    }
}

/// A column's OID, without allocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnOid {
    arcs: [u32; 10],
    len: usize,
}

impl std::ops::Deref for ColumnOid {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.arcs[..self.len]
    }
}

/// A column line of a table declaration: `col(3, "pmPortCountersSymbolErrors",
/// pc(F::SymbolErrors), RW(SetRule::ClearCounter), Source::Counter(F::SymbolErrors))`.
pub const fn col(
    column: u32,
    name: &'static str,
    syntax: Syntax,
    access: Access,
    source: Source,
) -> Cols {
    Cols::One(self::column(column, name, syntax, access, source))
}

/// A column of a table not yet placed (its table fills in `table` and
/// `scalar`).
pub const fn column(
    column: u32,
    name: &'static str,
    syntax: Syntax,
    access: Access,
    source: Source,
) -> Column {
    Column {
        table: 0,
        column,
        name,
        syntax,
        access,
        source,
        scalar: false,
        faces: &[],
    }
}

impl Cols {
    /// The column with its Prometheus face (`col(...).prom(&[...])`).
    pub const fn prom(self, faces: &'static [Face]) -> Cols {
        match self {
            Cols::One(mut c) => {
                c.faces = faces;
                Cols::One(c)
            }
            _ => panic!("a face is declared on one column"),
        }
    }
}

/// Columns declared in a table.
#[derive(Clone, Copy, Debug)]
pub enum Cols {
    /// One column.
    One(Column),
    /// Fifteen columns from `first`, for a field repeated 15 times
    /// (Counter0..14 of the sample attributes): column `first + i` is
    /// `names[i]` and shows `source(i)`.
    Fifteen {
        first: u32,
        names: [&'static str; 15],
        syntax: Syntax,
        access: Access,
        source: fn(usize) -> Source,
    },
    /// Columns made from another declaration.
    Walk(Walk),
}

/// The declarations a table's columns may be made from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Walk {
    /// A column per 64-bit total of [`crate::fabric::hc::HC`] (`pmPortHC`
    /// and its name, at [`crate::fabric::hc::column`]), and
    /// pmPortCounterDiscontinuityTime at
    /// [`crate::fabric::hc::DISCONTINUITY_COLUMN`].
    HcTotals,
    /// A column per error counter of [`crate::fabric::hc::HC`]
    /// (`pmPortRate` and its name), from `first`.
    ErrorRates { first: u32 },
    /// A column per counter field of the table's optional attribute
    /// (`pm` and its IBA name), from 1.
    AttrCounters,
    /// A column per per-lane counter of that lane kind
    /// ([`crate::pm::optional::LANE_ATTRS`]), from 2 (column 1 is the
    /// lane index).
    Lanes(crate::pm::optional::Lane),
    /// A column per health condition ([`crate::ib::health::CONDITIONS`]:
    /// `pmPortHealth` and its MIB name), from 1.
    Conditions,
}

/// One table: its number under pmMIBObjects, name, index scheme, when a
/// node has rows in it, and its columns.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub number: u32,
    pub name: &'static str,
    pub index: IndexScheme,
    /// The node has rows in the table (for a per-port table: some port
    /// may have a row).
    pub present: fn(&NodeRecord) -> bool,
    /// A port of the node has a row (per-port tables only).
    pub port_present: fn(&PortRecord) -> bool,
    /// The optional attribute whose reading a port needs for a row.
    pub attr: Option<u16>,
    pub columns: &'static [Cols],
    /// Where the families declared on its columns come in a scrape.
    pub part: Part,
    /// The collector of the families named from its columns by one rule
    /// (an optional attribute's counters: `metrics::families`), for the
    /// columns with no face of their own.
    pub collector: Option<Collector>,
}

impl Table {
    /// One row per port (or per lane of a port).
    pub fn per_port(&self) -> bool {
        matches!(
            self.index,
            IndexScheme::NodeGuidPort | IndexScheme::NodeGuidPortLane
        )
    }
}

/// Every node has a row.
pub const fn always(_: &NodeRecord) -> bool {
    true
}

/// Per-node tables: no port rows.
pub const fn no_ports(_: &PortRecord) -> bool {
    false
}

/// Tables not of nodes (pmSubnetTable): no node has rows.
pub const fn no_nodes(_: &NodeRecord) -> bool {
    false
}

/// Every port has a row.
pub const fn every_port(_: &PortRecord) -> bool {
    true
}

/// A table with nothing declared yet, for `..TABLE` in declarations.
pub const TABLE: Table = Table {
    number: 0,
    name: "",
    index: IndexScheme::NodeGuid,
    present: always,
    port_present: no_ports,
    attr: None,
    columns: &[],
    part: Part::Derived,
    collector: None,
};
