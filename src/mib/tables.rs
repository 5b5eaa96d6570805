//! Every column the agent serves, in one place: OID, type, access and where
//! its value comes from. The view and the SET path walk these tables.

use std::sync::LazyLock;

use std::time::Instant;

use super::{EndpointCounters, Value};
use crate::fabric::cache::{NodeRecord, PortRecord, Snapshot, Stamp};
use crate::fabric::hc::{self, HC};
use crate::ib::{Guid, NodeType};
use crate::pm::class_port_info::CAP_ALL_PORT_SELECT;
use crate::pm::decl::names15;
use crate::pm::port_counters::{COUNTERS, PortCountersField};
use crate::pm::samples::{PortSamplesControlField, PortSamplesResultField};

/// `pm` = experimental 117.
pub const PM_ROOT: [u32; 6] = [1, 3, 6, 1, 3, 117];
/// `pmMIBObjects` = { pm 1 }; table N is { pmMIBObjects N }, its entry { table 1 }.
pub const PM_OBJECTS: [u32; 7] = [1, 3, 6, 1, 3, 117, 1];

pub const T_CLASS_PORT_INFO: u32 = 1;
pub const T_SAMPLE_CNTRL: u32 = 2;
pub const T_SAMPLE_RESULT: u32 = 3;
pub const T_PORT_COUNTERS: u32 = 4;
pub const T_NODE: u32 = 5;
pub const T_PORT: u32 = 6;
pub const T_PORT_HC: u32 = 7;
pub const T_PORT_RATE: u32 = 8;
/// The agent's scalars: { pmMIBObjects 9 }, each `.0`.
pub const T_AGENT: u32 = 9;

/// A sparse per-port table showing one optional PM attribute: a column
/// per counter of the attribute's declaration, a row per port whose node
/// answers the attribute.
#[derive(Clone, Copy, Debug)]
pub struct OptionalTable {
    pub number: u32,
    pub name: &'static str,
    pub attr_id: u16,
    pub fields: &'static [crate::pm::Field],
}

/// pmPortVLTable: one row per (node, port, VL), a column per per-VL
/// optional attribute ([`crate::pm::optional::LANE_ATTRS`]).
pub const T_PORT_VL: u32 = 14;
/// pmPortSLTable: one row per (node, port, SL), a column per per-SL
/// optional attribute.
pub const T_PORT_SL: u32 = 15;

/// pmPortFecTable: a port's FEC mode and FEC totals
/// (PortExtendedSpeedsCounters).
pub const T_PORT_FEC: u32 = 18;
/// pmPortLaneTable: one row per (node, port, physical lane), a column per
/// per-lane counter of PortExtendedSpeedsCounters.
pub const T_PORT_LANE: u32 = 19;

/// pmPortSampleResultExtTable: PortSamplesResultExtended per node.
pub const T_SAMPLE_RESULT_EXT: u32 = 21;

const OWN_TABLES: usize = {
    let (mut n, mut i) = (0, 0);
    while i < crate::pm::optional::OPTIONAL.len() {
        if let crate::pm::optional::MibTable::Own { .. } = crate::pm::optional::OPTIONAL[i].table {
            n += 1;
        }
        i += 1;
    }
    n
};

/// The optional attributes with a table of their own
/// ([`crate::pm::optional::MibTable::Own`]), in declaration order.
pub const OPTIONAL_TABLES: [OptionalTable; OWN_TABLES] = {
    use crate::pm::optional::{MibTable, OPTIONAL};
    let mut out = [OptionalTable {
        number: 0,
        name: "",
        attr_id: 0,
        fields: &[],
    }; OWN_TABLES];
    let (mut n, mut i) = (0, 0);
    while i < OPTIONAL.len() {
        if let MibTable::Own { number, name } = OPTIONAL[i].table {
            out[n] = OptionalTable {
                number,
                name,
                attr_id: OPTIONAL[i].id,
                fields: OPTIONAL[i].fields,
            };
            n += 1;
        }
        i += 1;
    }
    out
};

/// The counter fields of an optional attribute: every field after
/// CounterSelect (the selector fields come first).
pub fn optional_counters(t: &OptionalTable) -> impl Iterator<Item = &'static crate::pm::Field> {
    crate::pm::optional::counter_fields(t.fields).iter()
}

/// Number of sub-identifiers of a node-GUID index (OCTET STRING (SIZE(8)),
/// no length prefix).
pub const GUID_INDEX_LEN: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    ReadOnly,
    ReadWrite,
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
    ResExt(crate::pm::samples::PortSamplesResultExtendedField),
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
    /// A 64-bit total ([`HC`] slot).
    Hc(usize),
    HcDiscontinuity,
    Rate(RateCol),
    /// The rate of an error counter ([`HC`] slot), in thousandths per second.
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

/// The time TimeStamp columns count from: the agent's start (a subagent's
/// own uptime, as net-snmp's subagents keep it; pmAgentUpTime shows it).
static EPOCH: std::sync::LazyLock<Instant> = std::sync::LazyLock::new(Instant::now);

/// Fix the epoch of TimeStamp columns (call at start-up).
pub fn start_clock() {
    std::sync::LazyLock::force(&EPOCH);
}

/// TimeTicks (hundredths of a second) from the epoch to `at`; 0 for none.
pub fn timestamp(at: Option<Instant>) -> u32 {
    at.map_or(0, |t| {
        (t.saturating_duration_since(*EPOCH).as_millis() / 10).min(u32::MAX as u128) as u32
    })
}

#[derive(Clone, Copy, Debug)]
pub struct Column {
    /// Table number under pmMIBObjects.
    pub table: u32,
    /// Column number under the table's entry.
    pub column: u32,
    pub name: &'static str,
    pub syntax: Syntax,
    pub access: Access,
    pub source: Source,
}

impl Column {
    /// The column's OID (without an index): { table 1 column }, or
    /// { group column } for a scalar.
    pub fn oid(&self) -> ColumnOid {
        let o = PM_OBJECTS;
        let scalar = self.table == T_AGENT;
        let mut a = [0u32; 10];
        a[..7].copy_from_slice(&o);
        a[7] = self.table;
        if scalar {
            a[8] = self.column;
        } else {
            a[8] = 1;
            a[9] = self.column;
        }
        ColumnOid {
            arcs: a,
            len: if scalar { 9 } else { 10 },
        }
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

/// The pmPortCountersTable column of each PortCounters counter, indexed
/// like [`COUNTERS`] (XmitWait has none in the draft's table).
#[derive(Clone, Copy, Debug)]
pub struct CounterColumn {
    pub counter: PortCountersField,
    pub column: Option<u32>,
    pub mib_name: &'static str,
}

impl CounterColumn {
    /// The IBA name of the counter.
    pub fn name(&self) -> &'static str {
        self.counter.name()
    }

    /// The counter's maximum: it saturates at all ones of its field width.
    pub fn max(&self) -> u32 {
        u32::try_from(self.counter.field().max()).unwrap_or(u32::MAX)
    }
}

const fn cc(counter: PortCountersField, column: u32, mib_name: &'static str) -> CounterColumn {
    CounterColumn {
        counter,
        column: Some(column),
        mib_name,
    }
}

/// The counter columns of pmPortCountersTable, one per PortCounters counter.
#[rustfmt::skip]
pub const COUNTER_COLUMNS: [CounterColumn; COUNTERS.len()] = {
    use PortCountersField as F;
    [
        cc(F::SymbolErrors, 3, "pmPortCountersSymbolErrors"),
        cc(F::LinkErrorRecovery, 4, "pmPortCountersLinkErrorRecovery"),
        cc(F::LinkDowned, 5, "pmPortCountersLinkDown"),
        cc(F::RcvErrors, 6, "pmPortCountersRcvErrors"),
        cc(F::RcvRemotePhysErrors, 7, "pmPortCountersRcvRemoteErrors"),
        cc(F::RcvSwitchRelayErrors, 8, "pmPortCountersRcvSwRelayErrors"),
        cc(F::XmitDiscards, 9, "pmPortCountersXmitDiscards"),
        cc(F::XmitConstraintErrors, 10, "pmPortCountersXmitConstraintErrors"),
        cc(F::RcvConstraintErrors, 11, "pmPortCountersRcvConstraintErrors"),
        cc(F::LocalLinkIntegrityErrors, 12, "pmPortCountersLocalLinkIntegrityErrors"),
        cc(F::ExcessiveBufferOverrunErrors, 13, "pmPortCountersExcessiveBufferOverrun"),
        cc(F::Vl15Dropped, 14, "pmPortCountersVL15Dropped"),
        cc(F::XmitData, 15, "pmPortCountersXmitData"),
        cc(F::RcvData, 16, "pmPortCountersRcvData"),
        cc(F::XmitPkts, 17, "pmPortCountersXmitPkts"),
        cc(F::RcvPkts, 18, "pmPortCountersRcvPkts"),
        CounterColumn { counter: F::XmitWait, column: None, mib_name: "" },
    ]
};

const _: () = {
    let mut i = 0;
    while i < COUNTERS.len() {
        assert!(
            COUNTER_COLUMNS[i].counter as usize == COUNTERS[i].counter as usize,
            "COUNTER_COLUMNS must follow COUNTERS"
        );
        i += 1;
    }
};

/// Every accessible column of IB-PM-MIB, in OID order.
pub static COLUMNS: LazyLock<Vec<Column>> = LazyLock::new(build_columns);

fn build_columns() -> Vec<Column> {
    use Access::{ReadOnly as RO, ReadWrite as RW};
    use PortSamplesControlField as C;
    let u8max = Syntax::Unsigned32 { max: 255 };
    let mut v = Vec::with_capacity(80);
    let mut col = |table, column, name, syntax, access, source| {
        v.push(Column {
            table,
            column,
            name,
            syntax,
            access,
            source,
        })
    };

    // pmClassPortInfoTable
    let t = T_CLASS_PORT_INFO;
    col(
        t,
        2,
        "pmClassPortInfoAllPortSelect",
        Syntax::TruthValue,
        RO,
        Source::AllPortSelect,
    );

    // pmPortSampleCntrlTable
    let t = T_SAMPLE_CNTRL;
    col(
        t,
        2,
        "pmPortSampleCntrlOpCode",
        u8max,
        RW,
        Source::Ctl(C::OpCode),
    );
    col(
        t,
        3,
        "pmPortSampleCntrlPortSelect",
        u8max,
        RW,
        Source::Ctl(C::PortSelect),
    );
    col(
        t,
        4,
        "pmPortSampleCntrlTick",
        u8max,
        RO,
        Source::Ctl(C::Tick),
    );
    col(
        t,
        5,
        "pmPortSampleCntrlCounterWidth",
        Syntax::Enum { max: 4 },
        RO,
        Source::Ctl(C::CounterWidth),
    );
    for (i, name) in names15!("pmPortSampleCntrlCounter", "Mask")
        .iter()
        .enumerate()
    {
        col(
            t,
            6 + i as u32,
            name,
            Syntax::Unsigned32 { max: 7 },
            RO,
            Source::CtlMask(i),
        );
    }
    col(
        t,
        21,
        "pmPortSampleCntrlSampleMechanisms",
        u8max,
        RO,
        Source::Ctl(C::SampleMechanisms),
    );
    col(
        t,
        22,
        "pmPortSampleCntrlSampleStatus",
        Syntax::Enum { max: 3 },
        RO,
        Source::Ctl(C::SampleStatus),
    );
    col(
        t,
        23,
        "pmPortSampleCntrlOptionMask",
        Syntax::OctetString { size: 8 },
        RO,
        Source::Ctl(C::OptionMask),
    );
    col(
        t,
        24,
        "pmPortSampleCntrlVendorMask",
        Syntax::OctetString { size: 8 },
        RO,
        Source::Ctl(C::VendorMask),
    );
    col(
        t,
        25,
        "pmPortSampleCntrlSampleStart",
        Syntax::Unsigned32 { max: u32::MAX },
        RW,
        Source::Ctl(C::SampleStart),
    );
    col(
        t,
        26,
        "pmPortSampleCntrlSampleInterval",
        Syntax::Unsigned32 { max: u32::MAX },
        RW,
        Source::Ctl(C::SampleInterval),
    );
    col(
        t,
        27,
        "pmPortSampleCntrlTag",
        Syntax::OctetString { size: 2 },
        RW,
        Source::Ctl(C::Tag),
    );
    for (i, name) in names15!("pmPortSampleCntrlCounterSelect", "")
        .iter()
        .enumerate()
    {
        col(
            t,
            28 + i as u32,
            name,
            Syntax::Unsigned32 { max: 65535 },
            RW,
            Source::CtlSelect(i),
        );
    }

    // pmPortSampleResultTable
    let t = T_SAMPLE_RESULT;
    col(
        t,
        2,
        "pmPortSampleResultTag",
        Syntax::OctetString { size: 2 },
        RO,
        Source::Res(PortSamplesResultField::Tag),
    );
    col(
        t,
        3,
        "pmResultSampleStatus",
        Syntax::Enum { max: 3 },
        RO,
        Source::Res(PortSamplesResultField::SampleStatus),
    );
    for (i, name) in names15!("pmPortSampleResultCounter", "").iter().enumerate() {
        col(
            t,
            4 + i as u32,
            name,
            Syntax::Gauge32 { max: u32::MAX },
            RO,
            Source::ResCounter(i),
        );
    }

    // pmPortCountersTable
    let t = T_PORT_COUNTERS;
    col(
        t,
        2,
        "pmPortCountersPortSelect",
        u8max,
        RW,
        Source::PortSelect,
    );
    for c in &COUNTER_COLUMNS {
        if let Some(column) = c.column {
            col(
                t,
                column,
                c.mib_name,
                Syntax::Gauge32 { max: c.max() },
                RW,
                Source::Counter(c.counter),
            );
        }
    }

    let name = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let guid = Syntax::OctetString { size: 8 };
    let text = Syntax::DisplayString { max: 64 };
    let g32 = Syntax::Gauge32 { max: u32::MAX };
    let u16max = Syntax::Unsigned32 { max: 65535 };

    // pmNodeTable
    let t = T_NODE;
    use NodeCol as N;
    for (c, n, syntax, src) in [
        (2, "pmNodeDescription", text, N::Description),
        (3, "pmNodeType", Syntax::Enum { max: 3 }, N::Type),
        (4, "pmNodeSystemImageGuid", guid, N::SysGuid),
        (
            5,
            "pmNodeVendorId",
            Syntax::Unsigned32 { max: 0xFF_FFFF },
            N::VendorId,
        ),
        (6, "pmNodeDeviceId", u16max, N::DeviceId),
        (7, "pmNodeNumPorts", u8max, N::NumPorts),
        (8, "pmNodeLid", u16max, N::Lid),
        (9, "pmNodeStatus", Syntax::Enum { max: 3 }, N::Status),
        (10, "pmNodeLastUpdate", Syntax::TimeStamp, N::LastUpdate),
        (
            11,
            "pmNodePmaCapabilityMask",
            Syntax::OctetString { size: 2 },
            N::PmaCapMask,
        ),
        (12, "pmNodeOptionalAttributes", text, N::OptionalAttributes),
        (13, "pmNodeSource", Syntax::Enum { max: 3 }, N::Source),
        (
            14,
            "pmNodeWideCounters",
            Syntax::Enum { max: 3 },
            N::WideCounters,
        ),
    ] {
        col(t, c, n, syntax, RO, Source::Node(src));
    }

    // pmPortTable
    let t = T_PORT;
    use PortCol as P;
    for (c, n, syntax, src) in [
        (2, "pmPortNodeDescription", text, P::NodeDescription),
        (3, "pmPortGuid", guid, P::Guid),
        (4, "pmPortLid", u16max, P::Lid),
        (5, "pmPortState", Syntax::Enum { max: 4 }, P::State),
        (6, "pmPortPhysState", Syntax::Enum { max: 7 }, P::PhysState),
        (
            7,
            "pmPortLinkWidthActive",
            Syntax::Enum { max: 12 },
            P::Width,
        ),
        (
            8,
            "pmPortLinkSpeedActive",
            Syntax::Enum { max: 9 },
            P::Speed,
        ),
        (9, "pmPortRateMbps", g32, P::RateMbps),
        (10, "pmPortPeerNodeGuid", guid, P::PeerNodeGuid),
        (11, "pmPortPeerPortNum", u8max, P::PeerPortNum),
        (12, "pmPortPeerDescription", text, P::PeerDescription),
        (13, "pmPortLastUpdate", Syntax::TimeStamp, P::LastUpdate),
        (15, "pmPortName", Syntax::DisplayString { max: 96 }, P::Name),
    ] {
        col(t, c, n, syntax, RO, Source::Port(src));
    }
    col(
        t,
        14,
        "pmPortClearCounters",
        Syntax::Unsigned32 {
            max: CLEAR_MASK_MAX,
        },
        RW,
        Source::PortClear,
    );

    // pmPortCounters64Table
    let t = T_PORT_HC;
    for (k, c) in HC.iter().enumerate() {
        if hc::column(k) == hc::DISCONTINUITY_COLUMN + 1 {
            col(
                t,
                hc::DISCONTINUITY_COLUMN,
                "pmPortCounterDiscontinuityTime",
                Syntax::TimeStamp,
                RO,
                Source::HcDiscontinuity,
            );
        }
        col(
            t,
            hc::column(k),
            name(format!("pmPortHC{}", c.name)),
            Syntax::Counter64,
            RO,
            Source::Hc(k),
        );
    }

    // pmPortRateTable
    let t = T_PORT_RATE;
    use RateCol as R;
    for (c, n, syntax, src) in [
        (
            1,
            "pmPortRateInBitsPerSec",
            Syntax::Counter64,
            R::InBitsPerSec,
        ),
        (
            2,
            "pmPortRateOutBitsPerSec",
            Syntax::Counter64,
            R::OutBitsPerSec,
        ),
        (3, "pmPortRateInPktsPerSec", g32, R::InPktsPerSec),
        (4, "pmPortRateOutPktsPerSec", g32, R::OutPktsPerSec),
        (
            5,
            "pmPortRateOutUtilization",
            Syntax::Gauge32 { max: 10000 },
            R::OutUtilization,
        ),
        (
            6,
            "pmPortRateInUtilization",
            Syntax::Gauge32 { max: 10000 },
            R::InUtilization,
        ),
        (
            7,
            "pmPortRateCongestion",
            Syntax::Gauge32 { max: 10000 },
            R::Congestion,
        ),
        (8, "pmPortRateCongestedMbps", g32, R::CongestedMbps),
    ] {
        col(t, c, n, syntax, RO, Source::Rate(src));
    }
    let mut c = 9;
    for (k, h) in HC.iter().enumerate() {
        if h.error {
            col(
                t,
                c,
                name(format!("pmPortRate{}", h.name)),
                g32,
                RO,
                Source::ErrorRate(k),
            );
            c += 1;
        }
    }

    // The optional attributes' tables (after the scalars in OID order:
    // their numbers are higher).
    let mut optional = Vec::new();
    for ot in &OPTIONAL_TABLES {
        for (i, f) in optional_counters(ot).enumerate() {
            optional.push(Column {
                table: ot.number,
                column: 1 + i as u32,
                name: name(format!("pm{}", f.name)),
                syntax: Syntax::Gauge32 {
                    max: u32::try_from(f.max()).unwrap_or(u32::MAX),
                },
                access: RO,
                source: Source::Optional {
                    attr_id: ot.attr_id,
                    field: *f,
                },
            });
        }
    }

    // pmPortVLTable and pmPortSLTable: a column per per-lane attribute,
    // from 2 (column 1 is the lane index).
    for (table, lane) in [
        (T_PORT_VL, crate::pm::optional::Lane::Vl),
        (T_PORT_SL, crate::pm::optional::Lane::Sl),
        (T_PORT_LANE, crate::pm::optional::Lane::Phys),
    ] {
        let attrs = crate::pm::optional::LANE_ATTRS
            .iter()
            .filter(|a| a.lane == lane);
        for (i, a) in attrs.enumerate() {
            optional.push(Column {
                table,
                column: 2 + i as u32,
                name: name(format!("pm{}", a.name)),
                syntax: Syntax::Gauge32 {
                    max: u32::try_from(a.max()).unwrap_or(u32::MAX),
                },
                access: RO,
                source: Source::Lane(*a),
            });
        }
    }

    // pmPortFecTable
    {
        use crate::pm::optional::FecTotal as F;
        optional.push(Column {
            table: T_PORT_FEC,
            column: 1,
            name: "pmPortFecMode",
            syntax: Syntax::Enum { max: 4 },
            access: RO,
            source: Source::FecMode,
        });
        for (c, n, max, t) in [
            (2, "pmPortSyncHeaderErrors", 0xFFFF, F::SyncHeaderErrors),
            (3, "pmPortUnknownBlocks", 0xFFFF, F::UnknownBlocks),
            (
                4,
                "pmPortFECCorrectableBlocks",
                u32::MAX,
                F::CorrectableBlocks,
            ),
            (
                5,
                "pmPortFECUncorrectableBlocks",
                u32::MAX,
                F::UncorrectableBlocks,
            ),
            (
                6,
                "pmPortFECCorrectedSymbols",
                u32::MAX,
                F::CorrectedSymbols,
            ),
        ] {
            optional.push(Column {
                table: T_PORT_FEC,
                column: c,
                name: n,
                syntax: Syntax::Gauge32 { max },
                access: RO,
                source: Source::Fec(t),
            });
        }
    }

    // pmPortSampleResultExtTable
    {
        use crate::pm::samples::PortSamplesResultExtendedField as X;
        for (c, n, syntax, f) in [
            (
                1,
                "pmSampleResultExtTag",
                Syntax::OctetString { size: 2 },
                X::Tag,
            ),
            (
                2,
                "pmSampleResultExtStatus",
                Syntax::Enum { max: 3 },
                X::SampleStatus,
            ),
            (
                3,
                "pmSampleResultExtWidth",
                Syntax::Unsigned32 { max: 3 },
                X::ExtendedWidth,
            ),
        ] {
            optional.push(Column {
                table: T_SAMPLE_RESULT_EXT,
                column: c,
                name: n,
                syntax,
                access: RO,
                source: Source::ResExt(f),
            });
        }
        for (i, n) in names15!("pmSampleResultExtCounter", "").iter().enumerate() {
            optional.push(Column {
                table: T_SAMPLE_RESULT_EXT,
                column: 4 + i as u32,
                name: n,
                syntax: Syntax::Counter64,
                access: RO,
                source: Source::ResExtCounter(i),
            });
        }
    }

    // pmAgent scalars
    let t = T_AGENT;
    use AgentCol as A;
    for (c, n, syntax, src) in [
        (1, "pmAgentVersion", text, A::Version),
        (2, "pmAgentUpTime", Syntax::TimeTicks, A::UpTime),
        (3, "pmAgentSweeps", Syntax::Counter64, A::Sweeps),
        (
            4,
            "pmAgentLastSweepTime",
            Syntax::TimeStamp,
            A::LastSweepTime,
        ),
        (5, "pmAgentLastSweepDuration", g32, A::LastSweepDuration),
        (6, "pmAgentLastSweepMads", g32, A::LastSweepMads),
        (7, "pmAgentLastSweepTimeouts", g32, A::LastSweepTimeouts),
        (8, "pmAgentNodesReachable", g32, A::NodesReachable),
        (9, "pmAgentNodesUnreachable", g32, A::NodesUnreachable),
        (
            10,
            "pmAgentLastDiscovery",
            Syntax::TimeStamp,
            A::LastDiscovery,
        ),
        (
            11,
            "pmAgentNotificationsSent",
            Syntax::Counter64,
            A::NotificationsSent,
        ),
        (
            12,
            "pmAgentNotificationsSuppressed",
            Syntax::Counter64,
            A::NotificationsSuppressed,
        ),
        (
            13,
            "pmAgentNotificationsDropped",
            Syntax::Counter64,
            A::NotificationsDropped,
        ),
        (14, "pmAgentSnmpInPkts", Syntax::Counter64, A::SnmpInPackets),
        (
            15,
            "pmAgentSnmpOutPkts",
            Syntax::Counter64,
            A::SnmpOutPackets,
        ),
        (16, "pmAgentSnmpRefused", Syntax::Counter64, A::SnmpRefused),
        (
            17,
            "pmAgentSnmpRateLimited",
            Syntax::Counter64,
            A::SnmpRateLimited,
        ),
    ] {
        col(t, c, n, syntax, RO, Source::Agent(src));
    }
    v.extend(optional);
    v.sort_by_key(|c| (c.table, c.column));
    v
}

/// How a table's rows are indexed. The view and the SET planner reach rows
/// only through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexScheme {
    /// The node GUID as 8 sub-identifiers (OCTET STRING (SIZE(8)), no
    /// length prefix): one row per node.
    NodeGuid,
    /// The node GUID, then the port number: one row per port.
    NodeGuidPort,
    /// The node GUID, the port number, then the virtual lane or service
    /// level: one row per VL (SL) of a port.
    NodeGuidPortLane,
    /// Scalars: the one instance `.0`.
    Scalar,
}

/// The index of one row (`port` is 0 for a node's row and for scalars,
/// `lane` 0 outside the per-VL and per-SL tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowIndex {
    pub guid: Guid,
    pub port: u8,
    pub lane: u8,
}

impl RowIndex {
    pub fn node(guid: Guid) -> RowIndex {
        RowIndex::port(guid, 0)
    }

    pub fn port(guid: Guid, port: u8) -> RowIndex {
        RowIndex {
            guid,
            port,
            lane: 0,
        }
    }
}

/// The index of a row, without allocation (at most GUID + port).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexArcs {
    arcs: [u32; GUID_INDEX_LEN + 2],
    len: usize,
}

impl std::ops::Deref for IndexArcs {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.arcs[..self.len]
    }
}

impl IndexScheme {
    /// The sub-identifiers of a row's index.
    pub fn encode(self, row: RowIndex) -> IndexArcs {
        let mut arcs = [0u32; GUID_INDEX_LEN + 2];
        let len = match self {
            IndexScheme::Scalar => 1,
            IndexScheme::NodeGuid => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                GUID_INDEX_LEN
            }
            IndexScheme::NodeGuidPort => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                arcs[GUID_INDEX_LEN] = row.port.into();
                GUID_INDEX_LEN + 1
            }
            IndexScheme::NodeGuidPortLane => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                arcs[GUID_INDEX_LEN] = row.port.into();
                arcs[GUID_INDEX_LEN + 1] = row.lane.into();
                GUID_INDEX_LEN + 2
            }
        };
        IndexArcs { arcs, len }
    }

    /// The row an index suffix names, if it is a valid index.
    pub fn parse(self, suffix: &[u32]) -> Option<RowIndex> {
        match self {
            IndexScheme::Scalar => (suffix == [0]).then_some(RowIndex::node(Guid(0))),
            IndexScheme::NodeGuid => parse_guid_index(suffix).map(RowIndex::node),
            IndexScheme::NodeGuidPort => {
                let (&port, guid) = suffix.split_last()?;
                let guid = parse_guid_index(guid)?;
                Some(RowIndex::port(guid, u8::try_from(port).ok()?))
            }
            IndexScheme::NodeGuidPortLane => {
                let (&lane, rest) = suffix.split_last()?;
                let (&port, guid) = rest.split_last()?;
                let lane = u8::try_from(lane)
                    .ok()
                    .filter(|&v| v < crate::pm::optional::LANES)?;
                Some(RowIndex {
                    guid: parse_guid_index(guid)?,
                    port: u8::try_from(port).ok()?,
                    lane,
                })
            }
        }
    }

    /// The rows of `node` in this scheme, in index order.
    pub fn rows(self, node: &NodeRecord) -> impl Iterator<Item = RowIndex> + '_ {
        let (one, ports, lanes) = match self {
            IndexScheme::NodeGuid => (true, &node.ports[..0], 0),
            IndexScheme::NodeGuidPort => (false, &node.ports[..], 1),
            IndexScheme::NodeGuidPortLane => (false, &node.ports[..], crate::pm::optional::LANES),
            IndexScheme::Scalar => (false, &node.ports[..0], 0),
        };
        let guid = node.guid;
        std::iter::once(RowIndex::node(guid))
            .filter(move |_| one)
            .chain(ports.iter().flat_map(move |p| {
                (0..lanes).map(move |lane| RowIndex {
                    guid,
                    port: p.num(),
                    lane,
                })
            }))
    }
}

/// One table: its number under pmMIBObjects, name, index scheme and when a
/// node has rows in it. Its columns are the [`COLUMNS`] with its number.
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
}

impl Table {
    /// One row per port (or per lane of a port).
    pub fn per_port(&self) -> bool {
        matches!(
            self.index,
            IndexScheme::NodeGuidPort | IndexScheme::NodeGuidPortLane
        )
    }

    /// The lanes of a port's rows: 1 per port, [`crate::pm::optional::LANES`]
    /// in the per-VL and per-SL tables.
    pub fn lanes(&self) -> u8 {
        match self.index {
            IndexScheme::NodeGuidPortLane => crate::pm::optional::LANES,
            _ => 1,
        }
    }
}

/// Every table the agent serves, in OID order.
pub const TABLES: &[Table] = &[
    Table {
        number: T_CLASS_PORT_INFO,
        name: "pmClassPortInfoTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.class_port_info.is_some(),
        port_present: |_| false,
        attr: None,
    },
    Table {
        number: T_SAMPLE_CNTRL,
        name: "pmPortSampleCntrlTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.samples_control.is_some(),
        port_present: |_| false,
        attr: None,
    },
    Table {
        number: T_SAMPLE_RESULT,
        name: "pmPortSampleResultTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.samples_result.is_some(),
        port_present: |_| false,
        attr: None,
    },
    Table {
        number: T_PORT_COUNTERS,
        name: "pmPortCountersTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.ports.iter().any(|p| p.counters().is_some()),
        port_present: |_| false,
        attr: None,
    },
    Table {
        number: T_NODE,
        name: "pmNodeTable",
        index: IndexScheme::NodeGuid,
        present: |_| true,
        port_present: |_| false,
        attr: None,
    },
    Table {
        number: T_PORT,
        name: "pmPortTable",
        index: IndexScheme::NodeGuidPort,
        present: |_| true,
        port_present: |_| true,
        attr: None,
    },
    Table {
        number: T_PORT_HC,
        name: "pmPortCounters64Table",
        index: IndexScheme::NodeGuidPort,
        present: |n| n.ports.iter().any(|p| p.hc.valid != 0),
        port_present: |p| p.hc.valid != 0,
        attr: None,
    },
    Table {
        number: T_PORT_RATE,
        name: "pmPortRateTable",
        index: IndexScheme::NodeGuidPort,
        present: |n| n.ports.iter().any(|p| p.rates.valid != 0),
        port_present: |p| p.rates.valid != 0,
        attr: None,
    },
    Table {
        number: T_AGENT,
        name: "pmAgent",
        index: IndexScheme::Scalar,
        present: |_| true,
        port_present: |_| false,
        attr: None,
    },
    optional_table(0),
    optional_table(1),
    optional_table(2),
    optional_table(3),
    Table {
        number: T_PORT_VL,
        name: "pmPortVLTable",
        index: IndexScheme::NodeGuidPortLane,
        present: |_| true,
        port_present: |p| has_lane_reading(p, crate::pm::optional::Lane::Vl),
        attr: None,
    },
    Table {
        number: T_PORT_SL,
        name: "pmPortSLTable",
        index: IndexScheme::NodeGuidPortLane,
        present: |_| true,
        port_present: |p| has_lane_reading(p, crate::pm::optional::Lane::Sl),
        attr: None,
    },
    optional_table(4),
    optional_table(5),
    Table {
        number: T_PORT_FEC,
        name: "pmPortFecTable",
        index: IndexScheme::NodeGuidPort,
        present: |_| true,
        port_present: |_| true,
        attr: Some(crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS),
    },
    Table {
        number: T_PORT_LANE,
        name: "pmPortLaneTable",
        index: IndexScheme::NodeGuidPortLane,
        present: |_| true,
        port_present: |p| has_lane_reading(p, crate::pm::optional::Lane::Phys),
        attr: None,
    },
    Table {
        number: T_SAMPLE_RESULT_EXT,
        name: "pmPortSampleResultExtTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.samples_result_ext.is_some(),
        port_present: |_| false,
        attr: None,
    },
];

/// The port's PortExtendedSpeedsCounters reading is in its RS-FEC layout:
/// the node's PMA says IsRSFECCountersSupported and the link runs RS-FEC
/// (perfquery's rule).
fn rs_fec_layout(node: &NodeRecord, port: &PortRecord) -> bool {
    node.class_port_info
        .as_ref()
        .is_some_and(|c| c.capability_mask & crate::pm::class_port_info::CAP_RSFEC_COUNTERS != 0)
        && port.link.fec.is_some_and(|f| f.rs_fec())
}

/// The port holds a reading of a per-lane attribute of kind `lane`.
fn has_lane_reading(p: &PortRecord, lane: crate::pm::optional::Lane) -> bool {
    p.optional
        .attrs()
        .any(|a| crate::pm::optional::lane_attr(a, lane).is_some())
}

const fn optional_table(i: usize) -> Table {
    let t = &OPTIONAL_TABLES[i];
    Table {
        number: t.number,
        name: t.name,
        index: IndexScheme::NodeGuidPort,
        present: |_| true,
        port_present: |_| true,
        attr: Some(t.attr_id),
    }
}

/// The table numbered `number`.
pub fn table(number: u32) -> Option<&'static Table> {
    let i = usize::try_from(number).ok()?.checked_sub(1)?;
    TABLE_BY_NUMBER
        .get(i)
        .copied()
        .flatten()
        .map(|i| &TABLES[i])
}

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

/// The 8 sub-identifiers of a node-GUID index.
pub fn guid_index(guid: Guid) -> [u32; GUID_INDEX_LEN] {
    guid.octets().map(u32::from)
}

/// The GUID an index suffix names, if it is a valid 8-octet index.
pub fn parse_guid_index(suffix: &[u32]) -> Option<Guid> {
    if suffix.len() != GUID_INDEX_LEN || suffix.iter().any(|&s| s > 255) {
        return None;
    }
    Some(Guid(
        suffix.iter().fold(0u64, |acc, &s| (acc << 8) | s as u64),
    ))
}

/// The smallest GUID whose node-GUID index does not sort before the
/// index prefix `suffix` (its first 8 sub-identifiers), or `None` when every
/// GUID's does: the nodes before it have no row at or after `suffix`.
pub fn guid_lower_bound(suffix: &[u32]) -> Option<Guid> {
    let part = &suffix[..suffix.len().min(GUID_INDEX_LEN)];
    let mut prefix: u64 = 0;
    for (i, &s) in part.iter().enumerate() {
        if s > 255 {
            // Every GUID beginning with part[..i] sorts before: the bound is
            // the next such prefix.
            let next = prefix
                .checked_add(1)
                .filter(|&n| i > 0 && n < 1u64 << (8 * i))?;
            return Some(Guid(next << (8 * (GUID_INDEX_LEN - i))));
        }
        prefix = (prefix << 8) | u64::from(s);
    }
    let shift = 8 * (GUID_INDEX_LEN - part.len());
    Some(Guid(if shift == 64 { 0 } else { prefix << shift }))
}

/// Find the column an OID names (exactly the column plus an index suffix)
/// and its table.
pub fn column_of(oid: &[u32]) -> Option<(&'static Column, &'static Table, &[u32])> {
    if !oid.starts_with(&PM_OBJECTS) || oid.len() < 9 {
        return None;
    }
    let table_no = oid[7];
    let t = table(table_no)?;
    let (column, rest) = if t.index == IndexScheme::Scalar {
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

/// True when `node` has a row in `table`.
pub fn row_present(table_no: u32, node: &NodeRecord) -> bool {
    // (The node-level test; per-port tables check the port in `read`.)
    table(table_no).is_some_and(|t| (t.present)(node))
}

/// The value of `col` in row `row` of `node`, or `None` when the row is
/// absent. `port_select` is the row's pmPortCountersPortSelect; `snap`
/// answers what a row shows of other nodes (a peer's description) and the
/// agent's scalars.
pub fn read(
    col: &Column,
    snap: &Snapshot,
    endpoint: &EndpointCounters,
    node: Option<&NodeRecord>,
    row: RowIndex,
    port_select: u8,
) -> Option<Value> {
    let t = table(col.table)?;
    if t.index == IndexScheme::Scalar {
        return read_at(col, t, snap, endpoint, None, None, row, port_select);
    }
    let node = node?;
    if row.guid != node.guid || !(t.present)(node) {
        return None;
    }
    let port = if t.per_port() {
        Some(node.port(row.port)?)
    } else {
        None
    };
    read_at(col, t, snap, endpoint, Some(node), port, row, port_select)
}

/// [`read`] once the row is resolved: `t` is the column's table, the node
/// is in `t` (`present`), `port` is the row's port for a per-port table.
/// What a walk calls for each row, testing the node once per column.
#[allow(clippy::too_many_arguments)]
pub fn read_at(
    col: &Column,
    t: &Table,
    snap: &Snapshot,
    endpoint: &EndpointCounters,
    node: Option<&NodeRecord>,
    port: Option<&PortRecord>,
    row: RowIndex,
    port_select: u8,
) -> Option<Value> {
    if t.index == IndexScheme::Scalar {
        let Source::Agent(a) = col.source else {
            return None;
        };
        return Some(agent_value(a, snap, endpoint));
    }
    let node = node?;
    if let Some(p) = port
        && (!(t.port_present)(p) || t.attr.is_some_and(|a| !p.optional.has(a)))
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
        Source::Node(c) => node_value(c, node, snap),
        Source::Port(c) => port_value(c, node, port?, snap),
        Source::Hc(k) => Value::Counter64(port?.hc.shown(k)?),
        Source::HcDiscontinuity => {
            Value::TimeTicks(timestamp(port?.discontinuity.map(Stamp::instant)))
        }
        Source::Rate(c) => rate_value(c, port?)?,
        Source::ErrorRate(k) => Value::Gauge32(gauge((port?.rates.get(k)? * 1000.0) as u64)),
        Source::PortClear => Value::Gauge32(0),
        Source::Lane(a) => {
            let p = port?;
            if !a.layout.holds(rs_fec_layout(node, p)) {
                return None;
            }
            Value::Gauge32(gauge(p.optional.bits(
                a.attr_id,
                a.bit(row.lane)?,
                a.width,
            )?))
        }
        Source::FecMode => Value::Integer(port?.link.fec.map_or(0, |f| f.mib()) as i32),
        Source::Fec(t) => {
            let p = port?;
            let data = p
                .optional
                .get(crate::pm::mad::attr::PORT_EXTENDED_SPEEDS_COUNTERS)?;
            Value::Gauge32(gauge(crate::pm::optional::fec_total(
                &data,
                rs_fec_layout(node, p),
                t,
            )?))
        }
        Source::Optional { attr_id, field } => Value::Gauge32(gauge(port?.optional.bits(
            attr_id,
            field.offset,
            field.width,
        )?)),
        Source::Agent(_) => return None,
    };
    Some(v)
}

/// pmPortClearCounters bits: 0..15 are PortCounters CounterSelect, bit 16
/// is CounterSelect2 bit 0 (PortXmitWait).
pub const CLEAR_MASK_MAX: u32 = 0x1_FFFF;

/// The CounterSelect and CounterSelect2 bits of a pmPortClearCounters mask.
pub fn clear_selects(mask: u32) -> (u16, u8) {
    ((mask & 0xFFFF) as u16, ((mask >> 16) & 1) as u8)
}

fn gauge(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

fn guid_value(g: Guid) -> Value {
    Value::OctetString(g.octets().to_vec())
}

fn text_value(s: &str) -> Value {
    // NodeDescription is at most 64 octets on the wire; a longer text from
    // a topology file is cut at a character boundary.
    let mut end = s.len().min(64);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Value::OctetString(s.as_bytes()[..end].to_vec())
}

/// The newest reading of any of the node's ports.
fn node_last_update(node: &NodeRecord) -> Option<Instant> {
    node.ports
        .iter()
        .filter_map(|p| p.read_at)
        .max()
        .map(Stamp::instant)
}

/// pmNodeStatus: ok(1), stale(2) (no reading for two sweep intervals),
/// unreachable(3).
fn node_status(node: &NodeRecord, snap: &Snapshot) -> i32 {
    if !node.reachable {
        return 3;
    }
    let fresh = node_last_update(node).is_some_and(|t| t.elapsed() <= snap.interval * 2);
    if fresh { 1 } else { 2 }
}

fn node_value(c: NodeCol, node: &NodeRecord, snap: &Snapshot) -> Value {
    match c {
        NodeCol::Description => text_value(&node.description),
        NodeCol::Type => Value::Integer(match node.node_type {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
        }),
        NodeCol::SysGuid => guid_value(node.sys_guid),
        NodeCol::VendorId => Value::Gauge32(node.vendor_id),
        NodeCol::DeviceId => Value::Gauge32(node.device_id.into()),
        NodeCol::NumPorts => Value::Gauge32(node.num_ports.into()),
        NodeCol::Lid => Value::Gauge32(node.lid.into()),
        NodeCol::Status => Value::Integer(node_status(node, snap)),
        NodeCol::LastUpdate => Value::TimeTicks(timestamp(node_last_update(node))),
        NodeCol::PmaCapMask => Value::OctetString(
            node.class_port_info
                .as_deref()
                .map_or(0, |c| c.capability_mask)
                .to_be_bytes()
                .to_vec(),
        ),
        NodeCol::OptionalAttributes => {
            let mut ids: Vec<u16> = node.ports.iter().flat_map(|p| p.optional.attrs()).collect();
            ids.sort_unstable();
            ids.dedup();
            let list: Vec<String> = ids.iter().map(|a| format!("{a:#06x}")).collect();
            Value::OctetString(list.join(",").into_bytes())
        }
        NodeCol::Source => Value::Integer(node.source.mib()),
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
        PortCol::NodeDescription => text_value(&node.description),
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
                .map_or("", |n| &*n.description),
        ),
        PortCol::LastUpdate => Value::TimeTicks(timestamp(port.read_at.map(Stamp::instant))),
        PortCol::Name => Value::OctetString(port_name(node, port.num(), snap).into_bytes()),
    }
}

/// pmPortName: `DESCRIPTION/PORT`, with the node GUID after a description
/// another node shares (`MT4123 ConnectX6 Mellanox Technologies
/// 0x0002c90300a1b2c3/1`) and in place of an empty one.
pub fn port_name(node: &NodeRecord, port: u8, snap: &Snapshot) -> String {
    let Value::OctetString(d) = text_value(node.description.trim()) else {
        unreachable!("text_value makes an OCTET STRING")
    };
    let d = String::from_utf8_lossy(&d);
    if d.is_empty() {
        format!("{}/{port}", node.guid)
    } else if snap.description_is_shared(&node.description) {
        format!("{d} {}/{port}", node.guid)
    } else {
        format!("{d}/{port}")
    }
}

/// A share of `capacity` in hundredths of a percent, at most 100%.
fn hundredths(part: f64, capacity: f64) -> u32 {
    if capacity <= 0.0 {
        return 0;
    }
    ((part / capacity * 10_000.0).round() as u32).min(10_000)
}

/// PortXmitWait ticks per second that mean "waiting all the time": the
/// tick is taken as one link transfer period of a 4x lane group (4 ns),
/// as the UFM congested-bandwidth figure assumes a fixed tick.
pub const XMIT_WAIT_TICKS_PER_SEC: f64 = 250_000_000.0;

/// UFM's normalized XmitData: `octets_per_s` as a share of a link of
/// `rate_mbps`, in hundredths of a percent (pmPortRateOutUtilization).
pub fn utilization_hundredths(octets_per_s: f64, rate_mbps: u64) -> u32 {
    hundredths(octets_per_s * 8.0, rate_mbps as f64 * 1e6)
}

/// The share of the time a port waited to transmit, from its XmitWait
/// ticks per second, in hundredths of a percent (pmPortRateCongestion).
pub fn congestion_hundredths(xmit_wait_per_s: f64) -> u32 {
    hundredths(congestion_share(xmit_wait_per_s), 1.0)
}

fn congestion_share(xmit_wait_per_s: f64) -> f64 {
    (xmit_wait_per_s / XMIT_WAIT_TICKS_PER_SEC).min(1.0)
}

fn rate_value(c: RateCol, port: &PortRecord) -> Option<Value> {
    let r = &port.rates;
    if r.valid == 0 {
        return None;
    }
    let per_s = |k: usize| r.get(k).unwrap_or(0.0);
    let rate_mbps = port.link.rate_mbps().unwrap_or(0);
    let capacity_bps = rate_mbps as f64 * 1e6;
    let congestion = congestion_share(per_s(hc::XMIT_WAIT));
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
        RateCol::Congestion => Value::Gauge32(congestion_hundredths(per_s(hc::XMIT_WAIT))),
        RateCol::CongestedMbps => Value::Gauge32(gauge((congestion * capacity_bps / 1e6) as u64)),
    })
}

fn agent_value(c: AgentCol, snap: &Snapshot, endpoint: &EndpointCounters) -> Value {
    let reachable = snap.reachable;
    let count = |a: &std::sync::atomic::AtomicU64| {
        Value::Counter64(a.load(std::sync::atomic::Ordering::Relaxed))
    };
    match c {
        AgentCol::Version => Value::OctetString(env!("CARGO_PKG_VERSION").as_bytes().to_vec()),
        AgentCol::UpTime => Value::TimeTicks(timestamp(Some(Instant::now()))),
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
        AgentCol::SnmpRefused => Value::Counter64(endpoint.refused()),
        AgentCol::SnmpRateLimited => count(&endpoint.rate_limited),
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
    }
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
        node.ports
            .iter()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_in_oid_order_and_complete() {
        let cols = &*COLUMNS;
        for w in cols.windows(2) {
            assert!(*w[0].oid() < *w[1].oid(), "{} !< {}", w[0].name, w[1].name);
        }
        let count = |t| cols.iter().filter(|c| c.table == t).count();
        // The draft's accessible columns: 1, 41, 17 and 17 (the GUID index
        // column of each table is not-accessible).
        assert_eq!(count(T_CLASS_PORT_INFO), 1);
        assert_eq!(count(T_SAMPLE_CNTRL), 41);
        assert_eq!(count(T_SAMPLE_RESULT), 17);
        assert_eq!(count(T_PORT_COUNTERS), 17);
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
            let access = if c.access == Access::ReadWrite {
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

    #[test]
    fn every_column_belongs_to_a_declared_table() {
        for w in TABLES.windows(2) {
            assert!(w[0].number < w[1].number);
        }
        for c in COLUMNS.iter() {
            assert!(table(c.table).is_some(), "{} has no table", c.name);
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
        let w = |n: &str| {
            COUNTER_COLUMNS
                .iter()
                .find(|c| c.name() == n)
                .unwrap()
                .max()
        };
        assert_eq!(w("SymbolErrorCounter"), 0xFFFF);
        assert_eq!(w("LinkDownedCounter"), 0xFF);
        assert_eq!(w("LocalLinkIntegrityErrors"), 0xF);
        assert_eq!(w("PortRcvPkts"), 0xFFFF_FFFF);
    }
}
