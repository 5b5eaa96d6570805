//! PortCounters (attribute 0x0012): the mandatory 32/16/8/4-bit counters.

use super::layout::Field;
use super::mad::DATA_SIZE;

pub const PORT_SELECT: Field = Field::new("PortSelect", 8, 8);
pub const COUNTER_SELECT: Field = Field::new("CounterSelect", 16, 16);
pub const SYMBOL_ERRORS: Field = Field::new("SymbolErrorCounter", 32, 16);
pub const LINK_ERROR_RECOVERY: Field = Field::new("LinkErrorRecoveryCounter", 48, 8);
pub const LINK_DOWNED: Field = Field::new("LinkDownedCounter", 56, 8);
pub const RCV_ERRORS: Field = Field::new("PortRcvErrors", 64, 16);
pub const RCV_REMOTE_PHYS_ERRORS: Field = Field::new("PortRcvRemotePhysicalErrors", 80, 16);
pub const RCV_SWITCH_RELAY_ERRORS: Field = Field::new("PortRcvSwitchRelayErrors", 96, 16);
pub const XMIT_DISCARDS: Field = Field::new("PortXmitDiscards", 112, 16);
pub const XMIT_CONSTRAINT_ERRORS: Field = Field::new("PortXmitConstraintErrors", 128, 8);
pub const RCV_CONSTRAINT_ERRORS: Field = Field::new("PortRcvConstraintErrors", 136, 8);
pub const COUNTER_SELECT2: Field = Field::new("CounterSelect2", 144, 8);
pub const LOCAL_LINK_INTEGRITY_ERRORS: Field = Field::new("LocalLinkIntegrityErrors", 152, 4);
pub const EXCESSIVE_BUFFER_OVERRUN_ERRORS: Field =
    Field::new("ExcessiveBufferOverrunErrors", 156, 4);
pub const QP1_DROPPED: Field = Field::new("QP1Dropped", 160, 16);
pub const VL15_DROPPED: Field = Field::new("VL15Dropped", 176, 16);
pub const XMIT_DATA: Field = Field::new("PortXmitData", 192, 32);
pub const RCV_DATA: Field = Field::new("PortRcvData", 224, 32);
pub const XMIT_PKTS: Field = Field::new("PortXmitPkts", 256, 32);
pub const RCV_PKTS: Field = Field::new("PortRcvPkts", 288, 32);
pub const XMIT_WAIT: Field = Field::new("PortXmitWait", 320, 32);

/// Every field in wire order.
pub const FIELDS: &[Field] = &[
    PORT_SELECT,
    COUNTER_SELECT,
    SYMBOL_ERRORS,
    LINK_ERROR_RECOVERY,
    LINK_DOWNED,
    RCV_ERRORS,
    RCV_REMOTE_PHYS_ERRORS,
    RCV_SWITCH_RELAY_ERRORS,
    XMIT_DISCARDS,
    XMIT_CONSTRAINT_ERRORS,
    RCV_CONSTRAINT_ERRORS,
    COUNTER_SELECT2,
    LOCAL_LINK_INTEGRITY_ERRORS,
    EXCESSIVE_BUFFER_OVERRUN_ERRORS,
    QP1_DROPPED,
    VL15_DROPPED,
    XMIT_DATA,
    RCV_DATA,
    XMIT_PKTS,
    RCV_PKTS,
    XMIT_WAIT,
];

/// CounterSelect bits: a Set clears the selected counters.
pub const CS_SYMBOL_ERRORS: u16 = 1 << 0;
pub const CS_LINK_ERROR_RECOVERY: u16 = 1 << 1;
pub const CS_LINK_DOWNED: u16 = 1 << 2;
pub const CS_RCV_ERRORS: u16 = 1 << 3;
pub const CS_RCV_REMOTE_PHYS_ERRORS: u16 = 1 << 4;
pub const CS_RCV_SWITCH_RELAY_ERRORS: u16 = 1 << 5;
pub const CS_XMIT_DISCARDS: u16 = 1 << 6;
pub const CS_XMIT_CONSTRAINT_ERRORS: u16 = 1 << 7;
pub const CS_RCV_CONSTRAINT_ERRORS: u16 = 1 << 8;
pub const CS_LOCAL_LINK_INTEGRITY_ERRORS: u16 = 1 << 9;
pub const CS_EXCESSIVE_BUFFER_OVERRUN_ERRORS: u16 = 1 << 10;
pub const CS_VL15_DROPPED: u16 = 1 << 11;
pub const CS_XMIT_DATA: u16 = 1 << 12;
pub const CS_RCV_DATA: u16 = 1 << 13;
pub const CS_XMIT_PKTS: u16 = 1 << 14;
pub const CS_RCV_PKTS: u16 = 1 << 15;
/// CounterSelect2 bit: clear PortXmitWait.
pub const CS2_XMIT_WAIT: u8 = 1 << 0;

/// PortSelect value that means "all ports" (when AllPortSelect is supported).
pub const ALL_PORTS: u8 = 0xFF;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortCounters {
    pub port_select: u8,
    pub counter_select: u16,
    pub symbol_errors: u16,
    pub link_error_recovery: u8,
    pub link_downed: u8,
    pub rcv_errors: u16,
    pub rcv_remote_phys_errors: u16,
    pub rcv_switch_relay_errors: u16,
    pub xmit_discards: u16,
    pub xmit_constraint_errors: u8,
    pub rcv_constraint_errors: u8,
    pub counter_select2: u8,
    /// 4 bits.
    pub local_link_integrity_errors: u8,
    /// 4 bits.
    pub excessive_buffer_overrun_errors: u8,
    pub qp1_dropped: u16,
    pub vl15_dropped: u16,
    /// Octets divided by 4.
    pub xmit_data: u32,
    /// Octets divided by 4.
    pub rcv_data: u32,
    pub xmit_pkts: u32,
    pub rcv_pkts: u32,
    pub xmit_wait: u32,
}

impl PortCounters {
    pub fn decode(d: &[u8; DATA_SIZE]) -> Self {
        PortCounters {
            port_select: PORT_SELECT.get(d) as u8,
            counter_select: COUNTER_SELECT.get(d) as u16,
            symbol_errors: SYMBOL_ERRORS.get(d) as u16,
            link_error_recovery: LINK_ERROR_RECOVERY.get(d) as u8,
            link_downed: LINK_DOWNED.get(d) as u8,
            rcv_errors: RCV_ERRORS.get(d) as u16,
            rcv_remote_phys_errors: RCV_REMOTE_PHYS_ERRORS.get(d) as u16,
            rcv_switch_relay_errors: RCV_SWITCH_RELAY_ERRORS.get(d) as u16,
            xmit_discards: XMIT_DISCARDS.get(d) as u16,
            xmit_constraint_errors: XMIT_CONSTRAINT_ERRORS.get(d) as u8,
            rcv_constraint_errors: RCV_CONSTRAINT_ERRORS.get(d) as u8,
            counter_select2: COUNTER_SELECT2.get(d) as u8,
            local_link_integrity_errors: LOCAL_LINK_INTEGRITY_ERRORS.get(d) as u8,
            excessive_buffer_overrun_errors: EXCESSIVE_BUFFER_OVERRUN_ERRORS.get(d) as u8,
            qp1_dropped: QP1_DROPPED.get(d) as u16,
            vl15_dropped: VL15_DROPPED.get(d) as u16,
            xmit_data: XMIT_DATA.get(d) as u32,
            rcv_data: RCV_DATA.get(d) as u32,
            xmit_pkts: XMIT_PKTS.get(d) as u32,
            rcv_pkts: RCV_PKTS.get(d) as u32,
            xmit_wait: XMIT_WAIT.get(d) as u32,
        }
    }

    /// Writes every field; the two 4-bit counters are truncated to 4 bits.
    pub fn encode(&self, d: &mut [u8; DATA_SIZE]) {
        PORT_SELECT.set(d, self.port_select.into());
        COUNTER_SELECT.set(d, self.counter_select.into());
        SYMBOL_ERRORS.set(d, self.symbol_errors.into());
        LINK_ERROR_RECOVERY.set(d, self.link_error_recovery.into());
        LINK_DOWNED.set(d, self.link_downed.into());
        RCV_ERRORS.set(d, self.rcv_errors.into());
        RCV_REMOTE_PHYS_ERRORS.set(d, self.rcv_remote_phys_errors.into());
        RCV_SWITCH_RELAY_ERRORS.set(d, self.rcv_switch_relay_errors.into());
        XMIT_DISCARDS.set(d, self.xmit_discards.into());
        XMIT_CONSTRAINT_ERRORS.set(d, self.xmit_constraint_errors.into());
        RCV_CONSTRAINT_ERRORS.set(d, self.rcv_constraint_errors.into());
        COUNTER_SELECT2.set(d, self.counter_select2.into());
        LOCAL_LINK_INTEGRITY_ERRORS.set(d, self.local_link_integrity_errors.into());
        EXCESSIVE_BUFFER_OVERRUN_ERRORS.set(d, self.excessive_buffer_overrun_errors.into());
        QP1_DROPPED.set(d, self.qp1_dropped.into());
        VL15_DROPPED.set(d, self.vl15_dropped.into());
        XMIT_DATA.set(d, self.xmit_data.into());
        RCV_DATA.set(d, self.rcv_data.into());
        XMIT_PKTS.set(d, self.xmit_pkts.into());
        RCV_PKTS.set(d, self.rcv_pkts.into());
        XMIT_WAIT.set(d, self.xmit_wait.into());
    }

    /// A Get/Set request body selecting `port` (and, for a Set, the counters
    /// to clear).
    pub fn select(port: u8, counter_select: u16, counter_select2: u8) -> Self {
        PortCounters {
            port_select: port,
            counter_select,
            counter_select2,
            ..Default::default()
        }
    }
}
