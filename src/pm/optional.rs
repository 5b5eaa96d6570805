//! The optional per-port PM attributes with one value per counter
//! (IBA 1.3 Tables 35-11 to 35-14): PortRcvErrorDetails (0x15),
//! PortXmitDiscardDetails (0x16), PortOpRcvCounters (0x17) and
//! PortFlowCtlCounters (0x18), and the congestion-control attributes of
//! IBA Annex A10 with one value per counter: PortRcvConCtrl (0x31) and
//! PortXmitConCtrl (0x34). Every counter clamps at all ones; a Set clears
//! those its CounterSelect bits select.
//!
//! The attributes with one counter per virtual lane or service level
//! (0x19-0x1C, 0x30, 0x32, 0x33, 0x35-0x37) are [`LANE_ATTRS`].

pm_attr! {
    /// PortRcvErrorDetails (0x0015).
    pub struct PortRcvErrorDetails per port, fields PortRcvErrorDetailsField, table RCV_ERROR_DETAILS_FIELDS {
        LocalPhysicalErrors local_physical_errors: u16 = "PortLocalPhysicalErrors" @ 32:16, clear cs 0;
        MalformedPacketErrors malformed_packet_errors: u16 = "PortMalformedPacketErrors" @ 48:16, clear cs 1;
        BufferOverrunErrors buffer_overrun_errors: u16 = "PortBufferOverrunErrors" @ 64:16, clear cs 2;
        DlidMappingErrors dlid_mapping_errors: u16 = "PortDLIDMappingErrors" @ 80:16, clear cs 3;
        VlMappingErrors vl_mapping_errors: u16 = "PortVLMappingErrors" @ 96:16, clear cs 4;
        LoopingErrors looping_errors: u16 = "PortLoopingErrors" @ 112:16, clear cs 5;
    }
}

pm_attr! {
    /// PortXmitDiscardDetails (0x0016).
    pub struct PortXmitDiscardDetails per port, fields PortXmitDiscardDetailsField, table XMIT_DISCARD_DETAILS_FIELDS {
        InactiveDiscards inactive_discards: u16 = "PortInactiveDiscards" @ 32:16, clear cs 0;
        NeighborMtuDiscards neighbor_mtu_discards: u16 = "PortNeighborMTUDiscards" @ 48:16, clear cs 1;
        SwLifetimeLimitDiscards sw_lifetime_limit_discards: u16 = "PortSwLifetimeLimitDiscards" @ 64:16, clear cs 2;
        SwHoqLimitDiscards sw_hoq_limit_discards: u16 = "PortSwHOQLimitDiscards" @ 80:16, clear cs 3;
    }
}

pm_attr! {
    /// PortOpRcvCounters (0x0017); the agent asks for every opcode
    /// (Opcode 0xFF).
    pub struct PortOpRcvCounters in [u8; super::mad::DATA_SIZE], fields PortOpRcvCountersField, table OP_RCV_COUNTERS_FIELDS {
        Opcode opcode: u8 = "Opcode" @ 0:8;
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        CounterSelect counter_select: u16 = "CounterSelect" @ 16:16;
        OpRcvPkts op_rcv_pkts: u32 = "PortOpRcvPkts" @ 32:32, clear cs 0;
        /// Octets divided by 4.
        OpRcvData op_rcv_data: u32 = "PortOpRcvData" @ 64:32, clear cs 1;
    }
}

pm_attr! {
    /// PortFlowCtlCounters (0x0018).
    pub struct PortFlowCtlCounters per port, fields PortFlowCtlCountersField, table FLOW_CTL_COUNTERS_FIELDS {
        XmitFlowPkts xmit_flow_pkts: u32 = "PortXmitFlowPkts" @ 32:32, clear cs 0;
        RcvFlowPkts rcv_flow_pkts: u32 = "PortRcvFlowPkts" @ 64:32, clear cs 1;
    }
}

pm_attr! {
    /// PortRcvConCtrl (0x0031): packets received with a congestion
    /// notification bit set.
    pub struct PortRcvConCtrl per port, fields PortRcvConCtrlField, table RCV_CON_CTRL_FIELDS {
        PktRcvFecn pkt_rcv_fecn: u32 = "PortPktRcvFECN" @ 32:32, clear cs 0;
        PktRcvBecn pkt_rcv_becn: u32 = "PortPktRcvBECN" @ 64:32, clear cs 1;
    }
}

pm_attr! {
    /// PortXmitConCtrl (0x0034): time the port's transmitter spent in
    /// congestion.
    pub struct PortXmitConCtrl per port, fields PortXmitConCtrlField, table XMIT_CON_CTRL_FIELDS {
        XmitTimeCong xmit_time_cong: u32 = "PortXmitTimeCong" @ 32:32, clear cs 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_follow_the_iba_tables() {
        let mut d = [0u8; 192];
        d[1] = 3;
        d[4..6].copy_from_slice(&7u16.to_be_bytes());
        d[14..16].copy_from_slice(&9u16.to_be_bytes());
        let r = PortRcvErrorDetails::decode(&d);
        assert_eq!(r.port_select, 3);
        assert_eq!(r.local_physical_errors, 7);
        assert_eq!(r.looping_errors, 9);
        let mut e = [0u8; 192];
        r.encode(&mut e);
        assert_eq!(e, d);
        let mut d = [0u8; 192];
        d[0] = 0xFF;
        d[8..12].copy_from_slice(&0x0102_0304u32.to_be_bytes());
        let o = PortOpRcvCounters::decode(&d);
        assert_eq!((o.opcode, o.op_rcv_data), (0xFF, 0x0102_0304));
        assert_eq!(
            PortFlowCtlCountersField::RcvFlowPkts.clear(),
            Some(crate::pm::decl::ClearBit::Select(1))
        );
        assert_eq!(
            PortXmitDiscardDetailsField::SwHoqLimitDiscards
                .field()
                .offset,
            80
        );
    }
}

/// What the third index of a per-lane attribute's rows counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lane {
    /// Virtual lane.
    Vl,
    /// Service level.
    Sl,
    /// Physical lane of the link (PortExtendedSpeedsCounters).
    Phys,
}

/// Which layout of PortExtendedSpeedsCounters a per-lane counter belongs
/// to (perfquery reads the RS-FEC layout when the PMA's ClassPortInfo
/// has IsRSFECCountersSupported and the port runs RS-FEC).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FecLayout {
    /// Not PortExtendedSpeedsCounters: the counter is always there.
    Any,
    /// The layout without RS-FEC (no FEC or FireCode).
    NotRsFec,
    /// The RS-FEC layout.
    RsFec,
}

impl FecLayout {
    /// The counter is in a reading whose layout is RS-FEC (`rs_fec`) or
    /// not.
    pub fn holds(self, rs_fec: bool) -> bool {
        match self {
            FecLayout::Any => true,
            FecLayout::NotRsFec => !rs_fec,
            FecLayout::RsFec => rs_fec,
        }
    }
}

/// A counter with one value per virtual lane, service level or physical
/// lane: lane n at bit `offset + n * width` of the data area (IBA 1.3
/// Tables 35-15 to 35-18, and the congestion-control attributes of
/// Annex A10; layouts as libibmad declares them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneCounter {
    /// The IBA counter name without the lane number (`PortVLXmitWait`).
    pub name: &'static str,
    pub lane: Lane,
    /// Lanes the attribute has (0..lanes).
    pub lanes: u8,
    pub offset: usize,
    pub width: usize,
    /// The unit of a count (the MIB's UNITS).
    pub units: &'static str,
    pub layout: FecLayout,
}

/// A per-lane counter and the attribute it is read from (made from
/// [`OPTIONAL`]: see [`LANE_ATTRS`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneAttr {
    pub attr_id: u16,
    pub counter: LaneCounter,
}

impl std::ops::Deref for LaneAttr {
    type Target = LaneCounter;
    fn deref(&self) -> &LaneCounter {
        &self.counter
    }
}

/// Lanes (VLs or SLs) per port in the per-lane tables.
pub const LANES: u8 = 16;

/// A counter of a per-VL or per-SL attribute: from bit 32, one per lane.
const fn lane(
    name: &'static str,
    lane: Lane,
    lanes: u8,
    width: usize,
    units: &'static str,
) -> LaneCounter {
    LaneCounter {
        name,
        lane,
        lanes,
        offset: 32,
        width,
        units,
        layout: FecLayout::Any,
    }
}

/// A per-lane counter of PortExtendedSpeedsCounters (12 physical lanes).
const fn phys(
    name: &'static str,
    offset: usize,
    width: usize,
    layout: FecLayout,
    units: &'static str,
) -> LaneCounter {
    LaneCounter {
        name,
        lane: Lane::Phys,
        lanes: EXT_SPEEDS_LANES,
        offset,
        width,
        units,
        layout,
    }
}

/// Physical lanes in PortExtendedSpeedsCounters.
pub const EXT_SPEEDS_LANES: u8 = 12;

/// PortExtendedSpeedsCounters ErrorDetectionCounterLane0..11 (no RS-FEC).
pub const LANE_ERROR_DETECTIONS: LaneCounter = phys(
    "PortLaneErrorDetections",
    160,
    16,
    FecLayout::NotRsFec,
    "errors",
);
/// FECCorrectableBlockCtrLane0..11 (no RS-FEC).
pub const LANE_FEC_CORRECTABLE_BLOCKS: LaneCounter = phys(
    "PortLaneFECCorrectableBlocks",
    352,
    32,
    FecLayout::NotRsFec,
    "blocks",
);
/// FECUncorrectableBlockCtrLane0..11 (no RS-FEC).
pub const LANE_FEC_UNCORRECTABLE_BLOCKS: LaneCounter = phys(
    "PortLaneFECUncorrectableBlocks",
    736,
    32,
    FecLayout::NotRsFec,
    "blocks",
);
/// FECCorrectableSymbolCtrLane0..11 (RS-FEC).
pub const LANE_FEC_CORRECTABLE_SYMBOLS: LaneCounter = phys(
    "PortLaneFECCorrectableSymbols",
    352,
    32,
    FecLayout::RsFec,
    "symbols",
);

/// What the simulated fabric's traffic model feeds a counter with (the
/// simulator maps each to one of its traffic quantities).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Traffic {
    RcvErrors,
    XmitDiscards,
    RcvPkts,
    RcvData,
    XmitData,
    XmitWait,
    RcvFecn,
    RcvBecn,
    XmitTimeCong,
}

/// A counter field the simulated PMA fills, with the CounterSelect bit
/// that clears it and what feeds it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Feed {
    pub field: super::Field,
    pub clear: Option<super::decl::ClearBit>,
    pub traffic: Traffic,
}

/// `feed!(Enum::Field => Traffic)`: a [`Feed`] from a declared field.
macro_rules! feed {
    ($f:expr => $t:ident) => {
        Feed {
            field: $f.field(),
            clear: $f.clear(),
            traffic: Traffic::$t,
        }
    };
}

/// What a simulated PMA answers of an optional attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimAnswer {
    /// Status 0x000C (not modelled).
    Unsupported,
    /// Get and Set like PortCounters: these counters from the traffic
    /// model, each held at its maximum, the others 0; a Set clears what
    /// its CounterSelect selects.
    Counters(&'static [Feed]),
    /// Get only: all traffic travels on VL0 and SL0, so lane 0 holds the
    /// port's count since the start and the other lanes read 0.
    Lane0(Traffic),
    /// Get only: PortExtendedSpeedsCounters in the layout of the port's
    /// FEC (`sim::pma`).
    ExtSpeeds,
}

/// Which IB-PM-MIB table shows an optional attribute.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MibTable {
    /// A sparse per-port table of its own, `{ pmMIBObjects number }`: a
    /// column per counter field, a row per port whose node answers.
    Own { number: u32, name: &'static str },
    /// A column per lane counter in the table of its lane kind
    /// (pmPortVLTable, pmPortSLTable).
    Lanes,
    /// pmPortFecTable (its port totals) and pmPortLaneTable (its per-lane
    /// counters).
    Fec,
}

/// One optional per-port PM attribute: everything the sweeper, the MIB
/// and the simulator need to know of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OptionalAttr {
    pub id: u16,
    /// Its layout's fields, selectors first (empty for a per-lane
    /// attribute; [`counter_fields`] are the counters).
    pub fields: &'static [super::Field],
    /// Its per-lane counters.
    pub lanes: &'static [LaneCounter],
    /// A Get carries Opcode 0xFF (every opcode) in byte 0.
    pub all_opcodes: bool,
    pub table: MibTable,
    pub sim: SimAnswer,
    /// Only simulated switches answer it (status 0x000C elsewhere).
    pub sim_switches_only: bool,
    /// Its counters of 4-octet words (data; shown in bytes).
    pub words: &'static [super::Field],
}

/// A table of its own, `{ pmMIBObjects number }`.
const fn own(number: u32, name: &'static str) -> MibTable {
    MibTable::Own { number, name }
}

const NONE: OptionalAttr = OptionalAttr {
    id: 0,
    fields: &[],
    lanes: &[],
    all_opcodes: false,
    table: MibTable::Lanes,
    sim: SimAnswer::Unsupported,
    sim_switches_only: false,
    words: &[],
};

/// The optional per-port PM attributes the sweeper reads where a node
/// answers them, in the order it asks them: 0x15 - 0x1C (IBA 1.3), the
/// congestion-control attributes 0x30 - 0x37 (Annex A10) and
/// PortExtendedSpeedsCounters (0x1F, FEC counters). A per-lane table's
/// columns follow this order.
pub const OPTIONAL: [OptionalAttr; 17] = {
    use super::mad::attr;
    use Lane::{Sl, Vl};
    use SimAnswer::{Counters, Lane0};
    [
        OptionalAttr {
            id: attr::PORT_RCV_ERROR_DETAILS,
            fields: RCV_ERROR_DETAILS_FIELDS,
            table: own(10, "pmPortRcvErrorDetailsTable"),
            sim: Counters(&[feed!(PortRcvErrorDetailsField::LocalPhysicalErrors => RcvErrors)]),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_XMIT_DISCARD_DETAILS,
            fields: XMIT_DISCARD_DETAILS_FIELDS,
            table: own(11, "pmPortXmitDiscardDetailsTable"),
            sim: Counters(&[
                feed!(PortXmitDiscardDetailsField::SwHoqLimitDiscards => XmitDiscards),
            ]),
            sim_switches_only: true,
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_OP_RCV_COUNTERS,
            fields: OP_RCV_COUNTERS_FIELDS,
            all_opcodes: true,
            table: own(12, "pmPortOpRcvCountersTable"),
            sim: Counters(&[
                feed!(PortOpRcvCountersField::OpRcvPkts => RcvPkts),
                feed!(PortOpRcvCountersField::OpRcvData => RcvData),
            ]),
            words: &[PortOpRcvCountersField::OpRcvData.field()],
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_FLOW_CTL_COUNTERS,
            fields: FLOW_CTL_COUNTERS_FIELDS,
            table: own(13, "pmPortFlowCtlCountersTable"),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_VL_OP_PACKETS,
            lanes: &[lane("PortVLOpPackets", Vl, 16, 16, "packets")],
            all_opcodes: true,
            sim: Lane0(Traffic::RcvPkts),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_VL_OP_DATA,
            lanes: &[lane("PortVLOpData", Vl, 16, 32, "octets/4")],
            all_opcodes: true,
            sim: Lane0(Traffic::RcvData),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
            lanes: &[lane("PortVLXmitFlowCtlUpdateErrors", Vl, 16, 2, "errors")],
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_VL_XMIT_WAIT_COUNTERS,
            lanes: &[lane("PortVLXmitWait", Vl, 16, 16, "ticks")],
            sim: Lane0(Traffic::XmitWait),
            ..NONE
        },
        OptionalAttr {
            id: attr::SW_PORT_VL_CONGESTION,
            lanes: &[lane("SwPortVLCongestion", Vl, 16, 16, "packets")],
            sim: Lane0(Traffic::XmitDiscards),
            sim_switches_only: true,
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_RCV_CON_CTRL,
            fields: RCV_CON_CTRL_FIELDS,
            table: own(16, "pmPortRcvConCtrlTable"),
            sim: Counters(&[
                feed!(PortRcvConCtrlField::PktRcvFecn => RcvFecn),
                feed!(PortRcvConCtrlField::PktRcvBecn => RcvBecn),
            ]),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_SL_RCV_FECN,
            lanes: &[lane("PortSLRcvFECN", Sl, 16, 32, "packets")],
            sim: Lane0(Traffic::RcvFecn),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_SL_RCV_BECN,
            lanes: &[lane("PortSLRcvBECN", Sl, 16, 32, "packets")],
            sim: Lane0(Traffic::RcvBecn),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_XMIT_CON_CTRL,
            fields: XMIT_CON_CTRL_FIELDS,
            table: own(17, "pmPortXmitConCtrlTable"),
            sim: Counters(&[feed!(PortXmitConCtrlField::XmitTimeCong => XmitTimeCong)]),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_VL_XMIT_TIME_CONG,
            lanes: &[lane("PortVLXmitTimeCong", Vl, 15, 32, "ticks")],
            sim: Lane0(Traffic::XmitTimeCong),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_XMIT_DATA_SL,
            lanes: &[lane("PortXmitDataSL", Sl, 16, 32, "octets/4")],
            sim: Lane0(Traffic::XmitData),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_RCV_DATA_SL,
            lanes: &[lane("PortRcvDataSL", Sl, 16, 32, "octets/4")],
            sim: Lane0(Traffic::RcvData),
            ..NONE
        },
        OptionalAttr {
            id: attr::PORT_EXTENDED_SPEEDS_COUNTERS,
            fields: EXT_SPEEDS_FIELDS,
            lanes: &[
                LANE_ERROR_DETECTIONS,
                LANE_FEC_CORRECTABLE_BLOCKS,
                LANE_FEC_UNCORRECTABLE_BLOCKS,
                LANE_FEC_CORRECTABLE_SYMBOLS,
            ],
            table: MibTable::Fec,
            sim: SimAnswer::ExtSpeeds,
            ..NONE
        },
    ]
};

/// The IDs of [`OPTIONAL`], in its order.
pub const OPTIONAL_ATTRS: [u16; OPTIONAL.len()] = {
    let mut ids = [0; OPTIONAL.len()];
    let mut i = 0;
    while i < OPTIONAL.len() {
        ids[i] = OPTIONAL[i].id;
        i += 1;
    }
    ids
};

/// The position of optional attribute `attr_id` in [`OPTIONAL`].
pub const fn index_of(attr_id: u16) -> Option<usize> {
    let mut k = 0;
    while k < OPTIONAL.len() {
        if OPTIONAL[k].id == attr_id {
            return Some(k);
        }
        k += 1;
    }
    None
}

/// The declaration of optional attribute `attr_id`.
pub fn optional(attr_id: u16) -> Option<&'static OptionalAttr> {
    index_of(attr_id).map(|k| &OPTIONAL[k])
}

/// The data area of a Get of optional attribute `attr_id` for `port`: the
/// PortSelect in byte 1 and, for the per-opcode attributes, Opcode 0xFF
/// (every opcode) in byte 0.
pub fn request_data(attr_id: u16, port: u8) -> [u8; super::mad::DATA_SIZE] {
    let mut d = [0u8; super::mad::DATA_SIZE];
    if optional(attr_id).is_some_and(|a| a.all_opcodes) {
        d[0] = 0xFF;
    }
    d[1] = port;
    d
}

const LANE_ATTR_COUNT: usize = {
    let (mut n, mut i) = (0, 0);
    while i < OPTIONAL.len() {
        n += OPTIONAL[i].lanes.len();
        i += 1;
    }
    n
};

/// Every per-lane counter of [`OPTIONAL`] with its attribute, in the
/// column order of its table (pmPortVLTable, pmPortSLTable,
/// pmPortLaneTable each take those of their lane kind).
pub const LANE_ATTRS: [LaneAttr; LANE_ATTR_COUNT] = {
    let mut out = [LaneAttr {
        attr_id: 0,
        counter: LANE_ERROR_DETECTIONS,
    }; LANE_ATTR_COUNT];
    let (mut n, mut i) = (0, 0);
    while i < OPTIONAL.len() {
        let mut j = 0;
        while j < OPTIONAL[i].lanes.len() {
            out[n] = LaneAttr {
                attr_id: OPTIONAL[i].id,
                counter: OPTIONAL[i].lanes[j],
            };
            n += 1;
            j += 1;
        }
        i += 1;
    }
    out
};

impl LaneCounter {
    /// The counter of `lane` in a reading (`None` past the attribute's
    /// lanes).
    pub fn get(&self, data: &[u8; super::mad::DATA_SIZE], lane: u8) -> Option<u64> {
        Some(super::layout::get_bits(data, self.bit(lane)?, self.width))
    }

    /// Where the counter of `lane` begins (a bit offset in the data area;
    /// `None` past the attribute's lanes).
    pub fn bit(&self, lane: u8) -> Option<usize> {
        (lane < self.lanes).then(|| self.offset + usize::from(lane) * self.width)
    }

    /// Write the counter of `lane` (held at the field's maximum).
    pub fn set(&self, data: &mut [u8; super::mad::DATA_SIZE], lane: u8, v: u64) {
        if lane < self.lanes {
            super::layout::set_bits(
                data,
                self.offset + usize::from(lane) * self.width,
                self.width,
                v.min(self.max()),
            );
        }
    }

    pub fn max(&self) -> u64 {
        (1u64 << self.width) - 1
    }
}

pm_attr! {
    /// PortExtendedSpeedsCounters (0x001F): the per-port counters of both
    /// layouts (the per-lane ones are [`LANE_ATTRS`]). Without RS-FEC the
    /// three port totals at 1120.. are reserved; with RS-FEC the per-lane
    /// error detection and block counters are.
    pub struct PortExtendedSpeedsCounters in [u8; super::mad::DATA_SIZE], fields PortExtendedSpeedsCountersField, table EXT_SPEEDS_FIELDS {
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        CounterSelect counter_select: u64 = "CounterSelect" @ 64:64;
        SyncHeaderErrors sync_header_errors: u16 = "SyncHeaderErrorCounter" @ 128:16;
        UnknownBlocks unknown_blocks: u16 = "UnknownBlockCounter" @ 144:16;
        FecCorrectableBlocks fec_correctable_blocks: u32 = "PortFECCorrectableBlockCtr" @ 1120:32;
        FecUncorrectableBlocks fec_uncorrectable_blocks: u32 = "PortFECUncorrectableBlockCtr" @ 1152:32;
        FecCorrectedSymbols fec_corrected_symbols: u32 = "PortFECCorrectedSymbolCtr" @ 1184:32;
    }
}

/// The layout of an optional attribute with one value per counter
/// (PortExtendedSpeedsCounters included: its port totals; its per-lane
/// counters are [`LANE_ATTRS`]); empty for the others.
pub const fn fields_of(attr_id: u16) -> &'static [super::Field] {
    match index_of(attr_id) {
        Some(k) => OPTIONAL[k].fields,
        None => &[],
    }
}

/// The counter fields of a layout: every field after CounterSelect (the
/// selector fields come first).
pub const fn counter_fields(fields: &'static [super::Field]) -> &'static [super::Field] {
    let mut i = 0;
    while i < fields.len() {
        if super::decl::str_eq(fields[i].name, "CounterSelect") {
            return fields.split_at(i + 1).1;
        }
        i += 1;
    }
    fields
}

/// The bytes of attribute `attr_id`'s data area that hold counters (its
/// per-counter fields and per-lane counters): `start..end`, the selectors
/// before and what is reserved after left out. `(0, 0)` for an attribute
/// with neither.
pub const fn counter_bytes(attr_id: u16) -> (usize, usize) {
    let Some(k) = index_of(attr_id) else {
        return (0, 0);
    };
    let (mut lo, mut hi) = (usize::MAX, 0);
    let fields = counter_fields(OPTIONAL[k].fields);
    let mut i = 0;
    while i < fields.len() {
        let f = fields[i];
        if f.offset < lo {
            lo = f.offset;
        }
        if f.offset + f.width > hi {
            hi = f.offset + f.width;
        }
        i += 1;
    }
    let lanes = OPTIONAL[k].lanes;
    let mut i = 0;
    while i < lanes.len() {
        let a = lanes[i];
        if a.offset < lo {
            lo = a.offset;
        }
        let end = a.offset + a.lanes as usize * a.width;
        if end > hi {
            hi = end;
        }
        i += 1;
    }
    if hi == 0 {
        return (0, 0);
    }
    (lo / 8, hi.div_ceil(8))
}

/// A port's FEC totals as pmPortFecTable shows them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FecTotal {
    SyncHeaderErrors,
    UnknownBlocks,
    CorrectableBlocks,
    UncorrectableBlocks,
    CorrectedSymbols,
}

/// A port's PortExtendedSpeedsCounters has its RS-FEC layout: its PMA's
/// ClassPortInfo says IsRSFECCountersSupported (`cpi_mask`, None: not
/// read) and the link runs RS-FEC, as perfquery decides.
pub fn rs_fec_layout(cpi_mask: Option<u16>, fec: Option<crate::ib::FecMode>) -> bool {
    cpi_mask.is_some_and(|m| m & super::class_port_info::CAP_RSFEC_COUNTERS != 0)
        && fec.is_some_and(|f| f.rs_fec())
}

/// A FEC total of a PortExtendedSpeedsCounters reading in the layout
/// `rs_fec` says: the RS-FEC layout has port totals; without RS-FEC the
/// block counts are the sums of the 12 lanes, and there is no symbol
/// count.
pub fn fec_total(data: &[u8; super::mad::DATA_SIZE], rs_fec: bool, t: FecTotal) -> Option<u64> {
    use PortExtendedSpeedsCountersField as F;
    let r = PortExtendedSpeedsCounters::decode(data);
    let lanes = |a: LaneCounter| (0..a.lanes).filter_map(|l| a.get(data, l)).sum::<u64>();
    Some(match (t, rs_fec) {
        (FecTotal::SyncHeaderErrors, _) => r.get(F::SyncHeaderErrors),
        (FecTotal::UnknownBlocks, _) => r.get(F::UnknownBlocks),
        (FecTotal::CorrectableBlocks, true) => r.get(F::FecCorrectableBlocks),
        (FecTotal::UncorrectableBlocks, true) => r.get(F::FecUncorrectableBlocks),
        (FecTotal::CorrectedSymbols, true) => r.get(F::FecCorrectedSymbols),
        (FecTotal::CorrectableBlocks, false) => lanes(LANE_FEC_CORRECTABLE_BLOCKS),
        (FecTotal::UncorrectableBlocks, false) => lanes(LANE_FEC_UNCORRECTABLE_BLOCKS),
        (FecTotal::CorrectedSymbols, false) => return None,
    })
}

/// The per-lane attribute `attr_id` counting lanes of kind `lane`.
pub fn lane_attr(attr_id: u16, lane: Lane) -> Option<&'static LaneAttr> {
    LANE_ATTRS
        .iter()
        .find(|a| a.attr_id == attr_id && a.lane == lane)
}

#[cfg(test)]
mod lane_tests {
    use super::*;

    #[test]
    fn counter_bytes_cover_every_counter_and_no_selector() {
        use crate::pm::mad::attr;
        // Per-counter fields from bit 32, per-lane counters from bit 32.
        assert_eq!(counter_bytes(attr::PORT_RCV_ERROR_DETAILS), (4, 16));
        assert_eq!(counter_bytes(attr::PORT_OP_RCV_COUNTERS), (4, 12));
        assert_eq!(counter_bytes(attr::PORT_XMIT_CON_CTRL), (4, 8));
        assert_eq!(counter_bytes(attr::PORT_VL_OP_DATA), (4, 4 + 16 * 4));
        assert_eq!(
            counter_bytes(attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS),
            (4, 8)
        );
        assert_eq!(counter_bytes(attr::PORT_VL_XMIT_TIME_CONG), (4, 4 + 15 * 4));
        // PortExtendedSpeedsCounters: after its 64-bit CounterSelect, up to
        // the RS-FEC port totals.
        assert_eq!(
            counter_bytes(attr::PORT_EXTENDED_SPEEDS_COUNTERS),
            (16, 152)
        );
        assert_eq!(counter_bytes(attr::PORT_COUNTERS), (0, 0));
        assert_eq!(
            counter_fields(OP_RCV_COUNTERS_FIELDS)
                .iter()
                .map(|f| f.name)
                .collect::<Vec<_>>(),
            ["PortOpRcvPkts", "PortOpRcvData"]
        );
    }

    #[test]
    fn each_optional_attribute_is_declared_once_and_whole() {
        for (i, a) in OPTIONAL.iter().enumerate() {
            assert!(!OPTIONAL[..i].iter().any(|b| b.id == a.id), "{:#x}", a.id);
            assert!(!a.fields.is_empty() || !a.lanes.is_empty(), "{:#x}", a.id);
            assert_eq!(optional(a.id), Some(a));
            if let SimAnswer::Counters(feeds) = a.sim {
                for f in feeds {
                    assert!(
                        counter_fields(a.fields).contains(&f.field),
                        "{}",
                        f.field.name
                    );
                    assert!(f.clear.is_some(), "{}", f.field.name);
                }
            }
        }
        let opcode: Vec<u16> = OPTIONAL
            .iter()
            .filter(|a| a.all_opcodes)
            .map(|a| a.id)
            .collect();
        assert_eq!(opcode, [0x17, 0x19, 0x1A]);
        assert_eq!(request_data(0x17, 3)[..2], [0xFF, 3]);
        assert_eq!(request_data(0x15, 3)[..2], [0, 3]);
        assert_eq!(LANE_ATTRS.len(), 14);
        assert_eq!(lane_attr(0x35, Lane::Vl).map(|a| a.lanes), Some(15));
    }

    #[test]
    fn per_lane_counters_sit_side_by_side_and_fit_the_data_area() {
        for a in &LANE_ATTRS {
            assert!(a.lanes <= LANES, "{}", a.name);
            assert!(
                a.offset + usize::from(a.lanes) * a.width <= 192 * 8,
                "{}",
                a.name
            );
            let last = a.lanes - 1;
            let mut d = [0u8; 192];
            a.set(&mut d, 3, 1);
            a.set(&mut d, last, u64::MAX);
            a.set(&mut d, LANES, 5);
            assert_eq!(a.get(&d, 3), Some(1));
            assert_eq!(a.get(&d, last), Some(a.max()));
            assert_eq!(a.get(&d, LANES), None);
            assert_eq!(a.get(&d, 2).unwrap() + a.get(&d, 4).unwrap(), 0);
        }
        let mut d = [0u8; 192];
        LANE_ATTRS[3].set(&mut d, 0, 0x1234);
        assert_eq!(&d[4..6], &[0x12, 0x34], "VL0 of PortVLXmitWait at byte 4");
        // PortVLXmitTimeCong has VL0..14 only: VL14 is the last word.
        let tc = lane_attr(0x35, Lane::Vl).unwrap();
        assert_eq!(tc.get(&d, 15), None);
        tc.set(&mut d, 14, 7);
        assert_eq!(&d[60..64], &[0, 0, 0, 7]);
        let fecn = lane_attr(0x32, Lane::Sl).unwrap();
        assert!(lane_attr(0x32, Lane::Vl).is_none());
        assert_eq!(fecn.width, 32);
    }

    #[test]
    fn extended_speeds_layouts_follow_libibmad() {
        let mut d = [0u8; 192];
        d[1] = 3;
        d[16..18].copy_from_slice(&5u16.to_be_bytes()); // SyncHeaderErrorCounter
        d[20..22].copy_from_slice(&1u16.to_be_bytes()); // ErrorDetectionCounterLane0
        d[44..48].copy_from_slice(&10u32.to_be_bytes()); // FEC*CtrLane0 at bit 352
        d[48..52].copy_from_slice(&11u32.to_be_bytes()); // lane 1
        d[92..96].copy_from_slice(&4u32.to_be_bytes()); // FECUncorrectableBlockCtrLane0
        d[140..144].copy_from_slice(&30u32.to_be_bytes()); // PortFECCorrectableBlockCtr
        d[148..152].copy_from_slice(&60u32.to_be_bytes()); // PortFECCorrectedSymbolCtr
        let r = PortExtendedSpeedsCounters::decode(&d);
        assert_eq!((r.port_select, r.sync_header_errors), (3, 5));
        use FecTotal as T;
        assert_eq!(fec_total(&d, false, T::SyncHeaderErrors), Some(5));
        assert_eq!(fec_total(&d, false, T::CorrectableBlocks), Some(21));
        assert_eq!(fec_total(&d, false, T::UncorrectableBlocks), Some(4));
        assert_eq!(fec_total(&d, false, T::CorrectedSymbols), None);
        assert_eq!(fec_total(&d, true, T::CorrectableBlocks), Some(30));
        assert_eq!(fec_total(&d, true, T::CorrectedSymbols), Some(60));
        assert_eq!(LANE_FEC_CORRECTABLE_SYMBOLS.get(&d, 1), Some(11));
        assert_eq!(LANE_ERROR_DETECTIONS.get(&d, 0), Some(1));
        assert_eq!(LANE_ERROR_DETECTIONS.get(&d, 12), None);
        assert!(FecLayout::RsFec.holds(true) && !FecLayout::RsFec.holds(false));
    }

    #[test]
    fn congestion_control_layouts_follow_annex_a10() {
        let mut d = [0u8; 192];
        d[1] = 9;
        d[4..8].copy_from_slice(&5u32.to_be_bytes());
        d[8..12].copy_from_slice(&6u32.to_be_bytes());
        let r = PortRcvConCtrl::decode(&d);
        assert_eq!((r.port_select, r.pkt_rcv_fecn, r.pkt_rcv_becn), (9, 5, 6));
        let x = PortXmitConCtrl::decode(&d);
        assert_eq!(x.xmit_time_cong, 5);
        assert_eq!(
            PortRcvConCtrlField::PktRcvBecn.clear(),
            Some(crate::pm::decl::ClearBit::Select(1))
        );
    }
}
