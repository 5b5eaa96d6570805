//! PortCountersExtended (attribute 0x001D): 64-bit data/packet counters and
//! the optional 64-bit error section (valid only when the agent sets
//! ClassPortInfo CapabilityMask2 bit 1; otherwise those bytes read 0).

use super::layout::Field;
use super::mad::DATA_SIZE;

pub const PORT_SELECT: Field = Field::new("PortSelect", 8, 8);
pub const COUNTER_SELECT: Field = Field::new("CounterSelect", 16, 16);
pub const COUNTER_SELECT2: Field = Field::new("CounterSelect2", 32, 32);
pub const XMIT_DATA: Field = Field::new("PortXmitData", 64, 64);
pub const RCV_DATA: Field = Field::new("PortRcvData", 128, 64);
pub const XMIT_PKTS: Field = Field::new("PortXmitPkts", 192, 64);
pub const RCV_PKTS: Field = Field::new("PortRcvPkts", 256, 64);
pub const UNICAST_XMIT_PKTS: Field = Field::new("PortUnicastXmitPkts", 320, 64);
pub const UNICAST_RCV_PKTS: Field = Field::new("PortUnicastRcvPkts", 384, 64);
pub const MULTICAST_XMIT_PKTS: Field = Field::new("PortMulticastXmitPkts", 448, 64);
pub const MULTICAST_RCV_PKTS: Field = Field::new("PortMulticastRcvPkts", 512, 64);
pub const SYMBOL_ERRORS: Field = Field::new("SymbolErrorCounter", 576, 64);
pub const LINK_ERROR_RECOVERY: Field = Field::new("LinkErrorRecoveryCounter", 640, 64);
pub const LINK_DOWNED: Field = Field::new("LinkDownedCounter", 704, 64);
pub const RCV_ERRORS: Field = Field::new("PortRcvErrors", 768, 64);
pub const RCV_REMOTE_PHYS_ERRORS: Field = Field::new("PortRcvRemotePhysicalErrors", 832, 64);
pub const RCV_SWITCH_RELAY_ERRORS: Field = Field::new("PortRcvSwitchRelayErrors", 896, 64);
pub const XMIT_DISCARDS: Field = Field::new("PortXmitDiscards", 960, 64);
pub const XMIT_CONSTRAINT_ERRORS: Field = Field::new("PortXmitConstraintErrors", 1024, 64);
pub const RCV_CONSTRAINT_ERRORS: Field = Field::new("PortRcvConstraintErrors", 1088, 64);
pub const LOCAL_LINK_INTEGRITY_ERRORS: Field = Field::new("LocalLinkIntegrityErrors", 1152, 64);
pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: Field =
    Field::new("ExcessiveBufferOverrunErrors", 1216, 64);
pub const VL15_DROPPED: Field = Field::new("VL15Dropped", 1280, 64);
pub const XMIT_WAIT: Field = Field::new("PortXmitWait", 1344, 64);
pub const QP1_DROPPED: Field = Field::new("QP1Dropped", 1408, 64);

/// Every field in wire order.
pub const FIELDS: &[Field] = &[
    PORT_SELECT,
    COUNTER_SELECT,
    COUNTER_SELECT2,
    XMIT_DATA,
    RCV_DATA,
    XMIT_PKTS,
    RCV_PKTS,
    UNICAST_XMIT_PKTS,
    UNICAST_RCV_PKTS,
    MULTICAST_XMIT_PKTS,
    MULTICAST_RCV_PKTS,
    SYMBOL_ERRORS,
    LINK_ERROR_RECOVERY,
    LINK_DOWNED,
    RCV_ERRORS,
    RCV_REMOTE_PHYS_ERRORS,
    RCV_SWITCH_RELAY_ERRORS,
    XMIT_DISCARDS,
    XMIT_CONSTRAINT_ERRORS,
    RCV_CONSTRAINT_ERRORS,
    LOCAL_LINK_INTEGRITY_ERRORS,
    EXCESSIVE_BUFFER_OVERRUN_ERRORS,
    VL15_DROPPED,
    XMIT_WAIT,
    QP1_DROPPED,
];

/// CounterSelect bits (a Set clears the selected counters).
pub const CSX_XMIT_DATA: u16 = 1 << 0;
pub const CSX_RCV_DATA: u16 = 1 << 1;
pub const CSX_XMIT_PKTS: u16 = 1 << 2;
pub const CSX_RCV_PKTS: u16 = 1 << 3;
pub const CSX_UNICAST_XMIT_PKTS: u16 = 1 << 4;
pub const CSX_UNICAST_RCV_PKTS: u16 = 1 << 5;
pub const CSX_MULTICAST_XMIT_PKTS: u16 = 1 << 6;
pub const CSX_MULTICAST_RCV_PKTS: u16 = 1 << 7;
/// CounterSelect2 bits for the optional error section, in field order.
pub const CSX2_SYMBOL_ERRORS: u32 = 1 << 0;
pub const CSX2_LINK_ERROR_RECOVERY: u32 = 1 << 1;
pub const CSX2_LINK_DOWNED: u32 = 1 << 2;
pub const CSX2_RCV_ERRORS: u32 = 1 << 3;
pub const CSX2_RCV_REMOTE_PHYS_ERRORS: u32 = 1 << 4;
pub const CSX2_RCV_SWITCH_RELAY_ERRORS: u32 = 1 << 5;
pub const CSX2_XMIT_DISCARDS: u32 = 1 << 6;
pub const CSX2_XMIT_CONSTRAINT_ERRORS: u32 = 1 << 7;
pub const CSX2_RCV_CONSTRAINT_ERRORS: u32 = 1 << 8;
pub const CSX2_LOCAL_LINK_INTEGRITY_ERRORS: u32 = 1 << 9;
pub const CSX2_EXCESSIVE_BUFFER_OVERRUN_ERRORS: u32 = 1 << 10;
pub const CSX2_VL15_DROPPED: u32 = 1 << 11;
pub const CSX2_XMIT_WAIT: u32 = 1 << 12;
pub const CSX2_QP1_DROPPED: u32 = 1 << 13;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCountersExtended {
    pub port_select: u8,
    pub counter_select: u16,
    pub counter_select2: u32,
    /// Octets divided by 4.
    pub xmit_data: u64,
    /// Octets divided by 4.
    pub rcv_data: u64,
    pub xmit_pkts: u64,
    pub rcv_pkts: u64,
    pub unicast_xmit_pkts: u64,
    pub unicast_rcv_pkts: u64,
    pub multicast_xmit_pkts: u64,
    pub multicast_rcv_pkts: u64,
    pub symbol_errors: u64,
    pub link_error_recovery: u64,
    pub link_downed: u64,
    pub rcv_errors: u64,
    pub rcv_remote_phys_errors: u64,
    pub rcv_switch_relay_errors: u64,
    pub xmit_discards: u64,
    pub xmit_constraint_errors: u64,
    pub rcv_constraint_errors: u64,
    pub local_link_integrity_errors: u64,
    pub excessive_buffer_overrun_errors: u64,
    pub vl15_dropped: u64,
    pub xmit_wait: u64,
    pub qp1_dropped: u64,
}

impl PortCountersExtended {
    pub fn decode(d: &[u8; DATA_SIZE]) -> Self {
        PortCountersExtended {
            port_select: PORT_SELECT.get(d) as u8,
            counter_select: COUNTER_SELECT.get(d) as u16,
            counter_select2: COUNTER_SELECT2.get(d) as u32,
            xmit_data: XMIT_DATA.get(d),
            rcv_data: RCV_DATA.get(d),
            xmit_pkts: XMIT_PKTS.get(d),
            rcv_pkts: RCV_PKTS.get(d),
            unicast_xmit_pkts: UNICAST_XMIT_PKTS.get(d),
            unicast_rcv_pkts: UNICAST_RCV_PKTS.get(d),
            multicast_xmit_pkts: MULTICAST_XMIT_PKTS.get(d),
            multicast_rcv_pkts: MULTICAST_RCV_PKTS.get(d),
            symbol_errors: SYMBOL_ERRORS.get(d),
            link_error_recovery: LINK_ERROR_RECOVERY.get(d),
            link_downed: LINK_DOWNED.get(d),
            rcv_errors: RCV_ERRORS.get(d),
            rcv_remote_phys_errors: RCV_REMOTE_PHYS_ERRORS.get(d),
            rcv_switch_relay_errors: RCV_SWITCH_RELAY_ERRORS.get(d),
            xmit_discards: XMIT_DISCARDS.get(d),
            xmit_constraint_errors: XMIT_CONSTRAINT_ERRORS.get(d),
            rcv_constraint_errors: RCV_CONSTRAINT_ERRORS.get(d),
            local_link_integrity_errors: LOCAL_LINK_INTEGRITY_ERRORS.get(d),
            excessive_buffer_overrun_errors: EXCESSIVE_BUFFER_OVERRUN_ERRORS.get(d),
            vl15_dropped: VL15_DROPPED.get(d),
            xmit_wait: XMIT_WAIT.get(d),
            qp1_dropped: QP1_DROPPED.get(d),
        }
    }

    pub fn encode(&self, d: &mut [u8; DATA_SIZE]) {
        PORT_SELECT.set(d, self.port_select.into());
        COUNTER_SELECT.set(d, self.counter_select.into());
        COUNTER_SELECT2.set(d, self.counter_select2.into());
        XMIT_DATA.set(d, self.xmit_data);
        RCV_DATA.set(d, self.rcv_data);
        XMIT_PKTS.set(d, self.xmit_pkts);
        RCV_PKTS.set(d, self.rcv_pkts);
        UNICAST_XMIT_PKTS.set(d, self.unicast_xmit_pkts);
        UNICAST_RCV_PKTS.set(d, self.unicast_rcv_pkts);
        MULTICAST_XMIT_PKTS.set(d, self.multicast_xmit_pkts);
        MULTICAST_RCV_PKTS.set(d, self.multicast_rcv_pkts);
        SYMBOL_ERRORS.set(d, self.symbol_errors);
        LINK_ERROR_RECOVERY.set(d, self.link_error_recovery);
        LINK_DOWNED.set(d, self.link_downed);
        RCV_ERRORS.set(d, self.rcv_errors);
        RCV_REMOTE_PHYS_ERRORS.set(d, self.rcv_remote_phys_errors);
        RCV_SWITCH_RELAY_ERRORS.set(d, self.rcv_switch_relay_errors);
        XMIT_DISCARDS.set(d, self.xmit_discards);
        XMIT_CONSTRAINT_ERRORS.set(d, self.xmit_constraint_errors);
        RCV_CONSTRAINT_ERRORS.set(d, self.rcv_constraint_errors);
        LOCAL_LINK_INTEGRITY_ERRORS.set(d, self.local_link_integrity_errors);
        EXCESSIVE_BUFFER_OVERRUN_ERRORS.set(d, self.excessive_buffer_overrun_errors);
        VL15_DROPPED.set(d, self.vl15_dropped);
        XMIT_WAIT.set(d, self.xmit_wait);
        QP1_DROPPED.set(d, self.qp1_dropped);
    }

    /// A Get/Set request body selecting `port`.
    pub fn select(port: u8, counter_select: u16, counter_select2: u32) -> Self {
        PortCountersExtended {
            port_select: port,
            counter_select,
            counter_select2,
            ..Default::default()
        }
    }
}
