//! PortCountersExtended (attribute 0x001D): 64-bit data/packet counters and
//! the optional 64-bit error section (valid only when the agent sets
//! ClassPortInfo CapabilityMask2 bit 1; otherwise those bytes read 0).

pm_attr! {
    pub struct PortCountersExtended per port, fields PortCountersExtendedField, table FIELDS {
        CounterSelect2 counter_select2: u32 = "CounterSelect2" @ 32:32;
        /// Octets divided by 4.
        XmitData xmit_data: u64 = "PortXmitData" @ 64:64, clear cs 0;
        /// Octets divided by 4.
        RcvData rcv_data: u64 = "PortRcvData" @ 128:64, clear cs 1;
        XmitPkts xmit_pkts: u64 = "PortXmitPkts" @ 192:64, clear cs 2;
        RcvPkts rcv_pkts: u64 = "PortRcvPkts" @ 256:64, clear cs 3;
        UnicastXmitPkts unicast_xmit_pkts: u64 = "PortUnicastXmitPkts" @ 320:64, clear cs 4;
        UnicastRcvPkts unicast_rcv_pkts: u64 = "PortUnicastRcvPkts" @ 384:64, clear cs 5;
        MulticastXmitPkts multicast_xmit_pkts: u64 = "PortMulticastXmitPkts" @ 448:64, clear cs 6;
        MulticastRcvPkts multicast_rcv_pkts: u64 = "PortMulticastRcvPkts" @ 512:64, clear cs 7;
        SymbolErrors symbol_errors: u64 = "SymbolErrorCounter" @ 576:64, clear cs2 0;
        LinkErrorRecovery link_error_recovery: u64 = "LinkErrorRecoveryCounter" @ 640:64, clear cs2 1;
        LinkDowned link_downed: u64 = "LinkDownedCounter" @ 704:64, clear cs2 2;
        RcvErrors rcv_errors: u64 = "PortRcvErrors" @ 768:64, clear cs2 3;
        RcvRemotePhysErrors rcv_remote_phys_errors: u64 = "PortRcvRemotePhysicalErrors" @ 832:64, clear cs2 4;
        RcvSwitchRelayErrors rcv_switch_relay_errors: u64 = "PortRcvSwitchRelayErrors" @ 896:64, clear cs2 5;
        XmitDiscards xmit_discards: u64 = "PortXmitDiscards" @ 960:64, clear cs2 6;
        XmitConstraintErrors xmit_constraint_errors: u64 = "PortXmitConstraintErrors" @ 1024:64, clear cs2 7;
        RcvConstraintErrors rcv_constraint_errors: u64 = "PortRcvConstraintErrors" @ 1088:64, clear cs2 8;
        LocalLinkIntegrityErrors local_link_integrity_errors: u64 = "LocalLinkIntegrityErrors" @ 1152:64, clear cs2 9;
        ExcessiveBufferOverrunErrors excessive_buffer_overrun_errors: u64 = "ExcessiveBufferOverrunErrors" @ 1216:64, clear cs2 10;
        Vl15Dropped vl15_dropped: u64 = "VL15Dropped" @ 1280:64, clear cs2 11;
        XmitWait xmit_wait: u64 = "PortXmitWait" @ 1344:64, clear cs2 12;
        Qp1Dropped qp1_dropped: u64 = "QP1Dropped" @ 1408:64, clear cs2 13;
    }
}

impl PortCountersExtended {
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
