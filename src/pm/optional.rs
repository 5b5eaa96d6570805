//! The optional per-port PM attributes with one value per counter
//! (IBA 1.3 Tables 35-11 to 35-14): PortRcvErrorDetails (0x15),
//! PortXmitDiscardDetails (0x16), PortOpRcvCounters (0x17) and
//! PortFlowCtlCounters (0x18). Every counter clamps at all ones; a Set
//! clears those its CounterSelect bits select.

pm_attr! {
    /// PortRcvErrorDetails (0x0015).
    pub struct PortRcvErrorDetails in [u8; super::mad::DATA_SIZE], fields PortRcvErrorDetailsField, table RCV_ERROR_DETAILS_FIELDS {
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        CounterSelect counter_select: u16 = "CounterSelect" @ 16:16;
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
    pub struct PortXmitDiscardDetails in [u8; super::mad::DATA_SIZE], fields PortXmitDiscardDetailsField, table XMIT_DISCARD_DETAILS_FIELDS {
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        CounterSelect counter_select: u16 = "CounterSelect" @ 16:16;
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
    pub struct PortFlowCtlCounters in [u8; super::mad::DATA_SIZE], fields PortFlowCtlCountersField, table FLOW_CTL_COUNTERS_FIELDS {
        PortSelect port_select: u8 = "PortSelect" @ 8:8;
        CounterSelect counter_select: u16 = "CounterSelect" @ 16:16;
        XmitFlowPkts xmit_flow_pkts: u32 = "PortXmitFlowPkts" @ 32:32, clear cs 0;
        RcvFlowPkts rcv_flow_pkts: u32 = "PortRcvFlowPkts" @ 64:32, clear cs 1;
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

/// A per-VL optional attribute: one counter per virtual lane, VL n at bit
/// `offset + n * width` of the data area (IBA 1.3 Tables 35-15 to 35-18).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VlAttr {
    pub attr_id: u16,
    /// The IBA counter name without the VL number (`PortVLXmitWait`).
    pub name: &'static str,
    pub offset: usize,
    pub width: usize,
}

/// Virtual lanes per port in the per-VL attributes.
pub const VLS: u8 = 16;

/// PortVLOpPackets (0x19), PortVLOpData (0x1A, octets/4),
/// PortVLXmitFlowCtlUpdateErrors (0x1B, 2 bits each) and
/// PortVLXmitWaitCounters (0x1C).
pub const VL_ATTRS: [VlAttr; 4] = [
    VlAttr {
        attr_id: super::mad::attr::PORT_VL_OP_PACKETS,
        name: "PortVLOpPackets",
        offset: 32,
        width: 16,
    },
    VlAttr {
        attr_id: super::mad::attr::PORT_VL_OP_DATA,
        name: "PortVLOpData",
        offset: 32,
        width: 32,
    },
    VlAttr {
        attr_id: super::mad::attr::PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS,
        name: "PortVLXmitFlowCtlUpdateErrors",
        offset: 32,
        width: 2,
    },
    VlAttr {
        attr_id: super::mad::attr::PORT_VL_XMIT_WAIT_COUNTERS,
        name: "PortVLXmitWait",
        offset: 32,
        width: 16,
    },
];

impl VlAttr {
    /// The counter of `vl` in a reading.
    pub fn get(&self, data: &[u8; super::mad::DATA_SIZE], vl: u8) -> u64 {
        super::layout::get_bits(data, self.offset + usize::from(vl) * self.width, self.width)
    }

    /// Write the counter of `vl` (held at the field's maximum).
    pub fn set(&self, data: &mut [u8; super::mad::DATA_SIZE], vl: u8, v: u64) {
        let max = (1u64 << self.width) - 1;
        super::layout::set_bits(
            data,
            self.offset + usize::from(vl) * self.width,
            self.width,
            v.min(max),
        );
    }

    pub fn max(&self) -> u64 {
        (1u64 << self.width) - 1
    }
}

/// True for the attribute IDs of [`VL_ATTRS`].
pub fn is_vl_attr(attr_id: u16) -> bool {
    VL_ATTRS.iter().any(|a| a.attr_id == attr_id)
}

#[cfg(test)]
mod vl_tests {
    use super::*;

    #[test]
    fn per_vl_counters_sit_side_by_side_and_fit_the_data_area() {
        for a in &VL_ATTRS {
            assert!(
                a.offset + usize::from(VLS) * a.width <= 192 * 8,
                "{}",
                a.name
            );
            let mut d = [0u8; 192];
            a.set(&mut d, 3, 1);
            a.set(&mut d, 15, u64::MAX);
            assert_eq!(a.get(&d, 3), 1);
            assert_eq!(a.get(&d, 15), a.max());
            assert_eq!(a.get(&d, 2) + a.get(&d, 4), 0);
        }
        let mut d = [0u8; 192];
        VL_ATTRS[3].set(&mut d, 0, 0x1234);
        assert_eq!(&d[4..6], &[0x12, 0x34], "VL0 of PortVLXmitWait at byte 4");
    }
}
