//! Every column the agent serves, in one place: OID, type, access and where
//! its value comes from. The view and the SET path walk these tables.

use std::sync::LazyLock;

use super::Value;
use crate::fabric::cache::NodeRecord;
use crate::ib::Guid;
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
    Enum { max: u32 },
    /// Unsigned32 (0..=max); Gauge32 on the wire.
    Unsigned32 { max: u32 },
    /// Gauge32 (0..=max).
    Gauge32 { max: u32 },
    /// OCTET STRING of a fixed size.
    OctetString { size: usize },
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
    /// PortSamplesResult Counter`n`.
    ResCounter(usize),
    /// The row's selected port (agent state, default 1).
    PortSelect,
    /// A PortCounters counter of the selected port.
    Counter(PortCountersField),
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
    /// The column's OID (without an index).
    pub fn oid(&self) -> [u32; 10] {
        let o = PM_OBJECTS;
        [
            o[0],
            o[1],
            o[2],
            o[3],
            o[4],
            o[5],
            o[6],
            self.table,
            1,
            self.column,
        ]
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
    v
}

/// How a table's rows are indexed. The view and the SET planner reach rows
/// only through it; the node GUID + port and node GUID + port + VL/SL
/// schemes of the extension tables go here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexScheme {
    /// The node GUID as 8 sub-identifiers (OCTET STRING (SIZE(8)), no
    /// length prefix): one row per node.
    NodeGuid,
}

/// The index of one row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowIndex {
    pub guid: Guid,
}

impl IndexScheme {
    /// The sub-identifiers of a row's index.
    pub fn encode(self, row: RowIndex) -> Vec<u32> {
        match self {
            IndexScheme::NodeGuid => guid_index(row.guid).to_vec(),
        }
    }

    /// The row an index suffix names, if it is a valid index.
    pub fn parse(self, suffix: &[u32]) -> Option<RowIndex> {
        match self {
            IndexScheme::NodeGuid => parse_guid_index(suffix).map(|guid| RowIndex { guid }),
        }
    }

    /// The rows of `node` in this scheme, in index order.
    pub fn rows(self, node: &NodeRecord) -> impl Iterator<Item = RowIndex> {
        match self {
            IndexScheme::NodeGuid => std::iter::once(RowIndex { guid: node.guid }),
        }
    }
}

/// One table: its number under pmMIBObjects, name, index scheme and when a
/// node has rows in it. Its columns are the [`COLUMNS`] with its number.
#[derive(Clone, Copy, Debug)]
pub struct Table {
    pub number: u32,
    pub name: &'static str,
    pub index: IndexScheme,
    pub present: fn(&NodeRecord) -> bool,
}

/// Every table the agent serves, in OID order.
pub const TABLES: &[Table] = &[
    Table {
        number: T_CLASS_PORT_INFO,
        name: "pmClassPortInfoTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.class_port_info.is_some(),
    },
    Table {
        number: T_SAMPLE_CNTRL,
        name: "pmPortSampleCntrlTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.samples_control.is_some(),
    },
    Table {
        number: T_SAMPLE_RESULT,
        name: "pmPortSampleResultTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.samples_result.is_some(),
    },
    Table {
        number: T_PORT_COUNTERS,
        name: "pmPortCountersTable",
        index: IndexScheme::NodeGuid,
        present: |n| n.ports.iter().any(|p| p.counters.is_some()),
    },
];

/// The table numbered `number`.
pub fn table(number: u32) -> Option<&'static Table> {
    TABLES.iter().find(|t| t.number == number)
}

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

/// Find the column an OID names (exactly the column plus an index suffix)
/// and its table.
pub fn column_of(oid: &[u32]) -> Option<(&'static Column, &'static Table, &[u32])> {
    if !oid.starts_with(&PM_OBJECTS) || oid.len() < 10 {
        return None;
    }
    let (table_no, entry, column) = (oid[7], oid[8], oid[9]);
    if entry != 1 {
        return None;
    }
    let col = COLUMNS
        .iter()
        .find(|c| c.table == table_no && c.column == column)?;
    Some((col, table(table_no)?, &oid[10..]))
}

/// True when `node` has a row in `table`.
pub fn row_present(table_no: u32, node: &NodeRecord) -> bool {
    table(table_no).is_some_and(|t| (t.present)(node))
}

/// The value of `col` in row `row` of `node`, or `None` when the row is
/// absent. `port_select` is the row's pmPortCountersPortSelect.
pub fn read(col: &Column, node: &NodeRecord, row: RowIndex, port_select: u8) -> Option<Value> {
    if row.guid != node.guid || !row_present(col.table, node) {
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
        Source::ResCounter(i) => wrap(
            col.syntax,
            (*node.samples_result.as_ref()?.counters.get(i)?).into(),
        ),
        Source::PortSelect => Value::Gauge32(port_select as u32),
        Source::Counter(f) => Value::Gauge32(counter_value(node, port_select, f)),
    };
    Some(v)
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
            .filter_map(|p| p.counters.as_ref())
            .map(|c| c.get(counter))
            .fold(0u64, u64::saturating_add)
    } else {
        node.port(port_select)
            .and_then(|p| p.counters.as_ref())
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
            assert!(w[0].oid() < w[1].oid(), "{} !< {}", w[0].name, w[1].name);
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
        let row = RowIndex { guid: g };
        let idx = IndexScheme::NodeGuid.encode(row);
        assert_eq!(idx, [0, 2, 201, 3, 0, 0, 18, 52]);
        assert_eq!(IndexScheme::NodeGuid.parse(&idx), Some(row));
        assert_eq!(IndexScheme::NodeGuid.parse(&idx[1..]), None);
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
