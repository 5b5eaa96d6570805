//! Every column the agent serves, in one place: OID, type, access and where
//! its value comes from. The view and the SET path walk these tables.

use std::sync::LazyLock;

use super::Value;
use crate::fabric::cache::NodeRecord;
use crate::ib::Guid;
use crate::pm::class_port_info::CAP_ALL_PORT_SELECT;
use crate::pm::layout::Field;
use crate::pm::port_counters as pc;
use crate::pm::{PortCounters, PortSamplesControl, PortSamplesResult};

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

/// PortSamplesControl fields the sample-control table reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CtlField {
    OpCode,
    PortSelect,
    Tick,
    CounterWidth,
    CounterMask(usize),
    SampleMechanisms,
    SampleStatus,
    OptionMask,
    VendorMask,
    SampleStart,
    SampleInterval,
    Tag,
    CounterSelect(usize),
}

/// PortSamplesResult fields the sample-result table reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResField {
    Tag,
    SampleStatus,
    Counter(usize),
}

/// Where a column's value comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// ClassPortInfo.CapabilityMask bit 8.
    AllPortSelect,
    Ctl(CtlField),
    Res(ResField),
    /// The row's selected port (agent state, default 1).
    PortSelect,
    /// A PortCounters field of the selected port: index into [`COUNTERS`].
    Counter(usize),
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

/// One PortCounters counter: its IBA field (name, offset, width), its
/// CounterSelect/CounterSelect2 bit and the IB-PM-MIB column that shows it
/// (XmitWait has none in the draft's table).
#[derive(Clone, Copy, Debug)]
pub struct CounterDef {
    pub field: Field,
    pub column: Option<u32>,
    pub mib_name: &'static str,
    /// CounterSelect bit (0 for a counter selected by CounterSelect2).
    pub select: u16,
    /// CounterSelect2 bit.
    pub select2: u8,
    pub get: fn(&PortCounters) -> u32,
}

impl CounterDef {
    /// The IBA name of the counter.
    pub fn name(&self) -> &'static str {
        self.field.name
    }

    /// The counter's maximum: it saturates at all ones of its field width.
    pub fn max(&self) -> u32 {
        u32::try_from(self.field.max()).unwrap_or(u32::MAX)
    }
}

const fn cdef(
    field: Field,
    column: u32,
    mib_name: &'static str,
    select: u16,
    get: fn(&PortCounters) -> u32,
) -> CounterDef {
    CounterDef {
        field,
        column: Some(column),
        mib_name,
        select,
        select2: 0,
        get,
    }
}

/// Every PortCounters counter, in the order of IB-PM-MIB's columns.
#[rustfmt::skip]
pub const COUNTERS: [CounterDef; 17] = [
    cdef(pc::SYMBOL_ERRORS, 3, "pmPortCountersSymbolErrors", pc::CS_SYMBOL_ERRORS, |c| c.symbol_errors.into()),
    cdef(pc::LINK_ERROR_RECOVERY, 4, "pmPortCountersLinkErrorRecovery", pc::CS_LINK_ERROR_RECOVERY, |c| c.link_error_recovery.into()),
    cdef(pc::LINK_DOWNED, 5, "pmPortCountersLinkDown", pc::CS_LINK_DOWNED, |c| c.link_downed.into()),
    cdef(pc::RCV_ERRORS, 6, "pmPortCountersRcvErrors", pc::CS_RCV_ERRORS, |c| c.rcv_errors.into()),
    cdef(pc::RCV_REMOTE_PHYS_ERRORS, 7, "pmPortCountersRcvRemoteErrors", pc::CS_RCV_REMOTE_PHYS_ERRORS, |c| c.rcv_remote_phys_errors.into()),
    cdef(pc::RCV_SWITCH_RELAY_ERRORS, 8, "pmPortCountersRcvSwRelayErrors", pc::CS_RCV_SWITCH_RELAY_ERRORS, |c| c.rcv_switch_relay_errors.into()),
    cdef(pc::XMIT_DISCARDS, 9, "pmPortCountersXmitDiscards", pc::CS_XMIT_DISCARDS, |c| c.xmit_discards.into()),
    cdef(pc::XMIT_CONSTRAINT_ERRORS, 10, "pmPortCountersXmitConstraintErrors", pc::CS_XMIT_CONSTRAINT_ERRORS, |c| c.xmit_constraint_errors.into()),
    cdef(pc::RCV_CONSTRAINT_ERRORS, 11, "pmPortCountersRcvConstraintErrors", pc::CS_RCV_CONSTRAINT_ERRORS, |c| c.rcv_constraint_errors.into()),
    cdef(pc::LOCAL_LINK_INTEGRITY_ERRORS, 12, "pmPortCountersLocalLinkIntegrityErrors", pc::CS_LOCAL_LINK_INTEGRITY_ERRORS, |c| c.local_link_integrity_errors.into()),
    cdef(pc::EXCESSIVE_BUFFER_OVERRUN_ERRORS, 13, "pmPortCountersExcessiveBufferOverrun", pc::CS_EXCESSIVE_BUFFER_OVERRUN_ERRORS, |c| c.excessive_buffer_overrun_errors.into()),
    cdef(pc::VL15_DROPPED, 14, "pmPortCountersVL15Dropped", pc::CS_VL15_DROPPED, |c| c.vl15_dropped.into()),
    cdef(pc::XMIT_DATA, 15, "pmPortCountersXmitData", pc::CS_XMIT_DATA, |c| c.xmit_data),
    cdef(pc::RCV_DATA, 16, "pmPortCountersRcvData", pc::CS_RCV_DATA, |c| c.rcv_data),
    cdef(pc::XMIT_PKTS, 17, "pmPortCountersXmitPkts", pc::CS_XMIT_PKTS, |c| c.xmit_pkts),
    cdef(pc::RCV_PKTS, 18, "pmPortCountersRcvPkts", pc::CS_RCV_PKTS, |c| c.rcv_pkts),
    CounterDef { field: pc::XMIT_WAIT, column: None, mib_name: "", select: 0, select2: pc::CS2_XMIT_WAIT, get: |c| c.xmit_wait },
];

/// The 15 names `prefix0suffix` .. `prefix14suffix` of a repeated column.
macro_rules! names15 {
    ($prefix:literal, $suffix:literal) => {
        [
            concat!($prefix, "0", $suffix),
            concat!($prefix, "1", $suffix),
            concat!($prefix, "2", $suffix),
            concat!($prefix, "3", $suffix),
            concat!($prefix, "4", $suffix),
            concat!($prefix, "5", $suffix),
            concat!($prefix, "6", $suffix),
            concat!($prefix, "7", $suffix),
            concat!($prefix, "8", $suffix),
            concat!($prefix, "9", $suffix),
            concat!($prefix, "10", $suffix),
            concat!($prefix, "11", $suffix),
            concat!($prefix, "12", $suffix),
            concat!($prefix, "13", $suffix),
            concat!($prefix, "14", $suffix),
        ]
    };
}

const MASK_NAMES: [&str; 15] = names15!("pmPortSampleCntrlCounter", "Mask");
const SELECT_NAMES: [&str; 15] = names15!("pmPortSampleCntrlCounterSelect", "");
const RESULT_NAMES: [&str; 15] = names15!("pmPortSampleResultCounter", "");

/// Every accessible column of IB-PM-MIB, in OID order.
pub static COLUMNS: LazyLock<Vec<Column>> = LazyLock::new(build_columns);

fn build_columns() -> Vec<Column> {
    use Access::{ReadOnly as RO, ReadWrite as RW};
    use CtlField as C;
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
    for (i, name) in MASK_NAMES.iter().enumerate() {
        col(
            t,
            6 + i as u32,
            name,
            Syntax::Unsigned32 { max: 7 },
            RO,
            Source::Ctl(C::CounterMask(i)),
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
    for (i, name) in SELECT_NAMES.iter().enumerate() {
        col(
            t,
            28 + i as u32,
            name,
            Syntax::Unsigned32 { max: 65535 },
            RW,
            Source::Ctl(C::CounterSelect(i)),
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
        Source::Res(ResField::Tag),
    );
    col(
        t,
        3,
        "pmResultSampleStatus",
        Syntax::Enum { max: 3 },
        RO,
        Source::Res(ResField::SampleStatus),
    );
    for (i, name) in RESULT_NAMES.iter().enumerate() {
        col(
            t,
            4 + i as u32,
            name,
            Syntax::Gauge32 { max: u32::MAX },
            RO,
            Source::Res(ResField::Counter(i)),
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
    for (i, c) in COUNTERS.iter().enumerate() {
        if let Some(column) = c.column {
            col(
                t,
                column,
                c.mib_name,
                Syntax::Gauge32 { max: c.max() },
                RW,
                Source::Counter(i),
            );
        }
    }
    v
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

/// Find the column an OID names (exactly the column plus an index suffix).
pub fn column_of(oid: &[u32]) -> Option<(&'static Column, &[u32])> {
    if !oid.starts_with(&PM_OBJECTS) || oid.len() < 10 {
        return None;
    }
    let (table, entry, column) = (oid[7], oid[8], oid[9]);
    if entry != 1 {
        return None;
    }
    COLUMNS
        .iter()
        .find(|c| c.table == table && c.column == column)
        .map(|c| (c, &oid[10..]))
}

/// True when `node` has a row in `table`.
pub fn row_present(table: u32, node: &NodeRecord) -> bool {
    match table {
        T_CLASS_PORT_INFO => node.class_port_info.is_some(),
        T_SAMPLE_CNTRL => node.samples_control.is_some(),
        T_SAMPLE_RESULT => node.samples_result.is_some(),
        T_PORT_COUNTERS => node.ports.iter().any(|p| p.counters.is_some()),
        _ => false,
    }
}

/// The value of `col` in `node`'s row, or `None` when the row is absent.
/// `port_select` is the row's pmPortCountersPortSelect.
pub fn read(col: &Column, node: &NodeRecord, port_select: u8) -> Option<Value> {
    if !row_present(col.table, node) {
        return None;
    }
    let v = match col.source {
        Source::AllPortSelect => {
            let cpi = node.class_port_info.as_ref()?;
            truth(cpi.capability_mask & CAP_ALL_PORT_SELECT != 0)
        }
        Source::Ctl(f) => ctl_value(node.samples_control.as_ref()?, f),
        Source::Res(f) => res_value(node.samples_result.as_ref()?, f),
        Source::PortSelect => Value::Gauge32(port_select as u32),
        Source::Counter(i) => Value::Gauge32(counter_value(node, port_select, &COUNTERS[i])),
    };
    Some(v)
}

fn truth(b: bool) -> Value {
    Value::Integer(if b { 1 } else { 2 })
}

/// A counter of the selected port. A port the node does not have reads zero
/// (IBA); 0xFF on a node with AllPortSelect is the saturating sum over ports.
pub fn counter_value(node: &NodeRecord, port_select: u8, def: &CounterDef) -> u32 {
    if port_select == 0xFF {
        let all = node
            .class_port_info
            .as_ref()
            .is_some_and(|c| c.capability_mask & CAP_ALL_PORT_SELECT != 0);
        if !all {
            return 0;
        }
        let sum: u64 = node
            .ports
            .iter()
            .filter_map(|p| p.counters.as_ref())
            .map(|c| (def.get)(c) as u64)
            .sum();
        return sum.min(def.max() as u64) as u32;
    }
    node.port(port_select)
        .and_then(|p| p.counters.as_ref())
        .map(|c| (def.get)(c))
        .unwrap_or(0)
}

fn ctl_value(c: &PortSamplesControl, f: CtlField) -> Value {
    let g = |v: u32| Value::Gauge32(v);
    match f {
        CtlField::OpCode => g(c.op_code as u32),
        CtlField::PortSelect => g(c.port_select as u32),
        CtlField::Tick => g(c.tick as u32),
        CtlField::CounterWidth => Value::Integer(c.counter_width as i32),
        CtlField::CounterMask(i) => g(c.counter_masks.get(i).copied().unwrap_or(0) as u32),
        CtlField::SampleMechanisms => g(c.sample_mechanisms as u32),
        CtlField::SampleStatus => Value::Integer(c.sample_status as i32),
        CtlField::OptionMask => Value::OctetString(c.option_mask.to_be_bytes().to_vec()),
        CtlField::VendorMask => Value::OctetString(c.vendor_mask.to_be_bytes().to_vec()),
        CtlField::SampleStart => g(c.sample_start),
        CtlField::SampleInterval => g(c.sample_interval),
        CtlField::Tag => Value::OctetString(c.tag.to_be_bytes().to_vec()),
        CtlField::CounterSelect(i) => g(c.counter_select.get(i).copied().unwrap_or(0) as u32),
    }
}

fn res_value(r: &PortSamplesResult, f: ResField) -> Value {
    match f {
        ResField::Tag => Value::OctetString(r.tag.to_be_bytes().to_vec()),
        ResField::SampleStatus => Value::Integer(r.sample_status as i32),
        ResField::Counter(i) => Value::Gauge32(r.counters.get(i).copied().unwrap_or(0)),
    }
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
    fn counter_widths_match_iba() {
        let w = |n: &str| COUNTERS.iter().find(|c| c.name() == n).unwrap().max();
        assert_eq!(w("SymbolErrorCounter"), 0xFFFF);
        assert_eq!(w("LinkDownedCounter"), 0xFF);
        assert_eq!(w("LocalLinkIntegrityErrors"), 0xF);
        assert_eq!(w("PortRcvPkts"), 0xFFFF_FFFF);
    }
}
