//! PM attribute data (placeholder definitions until the codecs land).
#![allow(missing_docs)]

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClassPortInfo {
    pub base_version: u8,
    pub class_version: u8,
    pub capability_mask: u16,
    pub capability_mask2: u32,
    pub resp_time_value: u8,
    pub redirect_gid: [u8; 16],
    pub redirect_tc: u8,
    pub redirect_sl: u8,
    pub redirect_fl: u32,
    pub redirect_lid: u16,
    pub redirect_pkey: u16,
    pub redirect_qp: u32,
    pub redirect_qkey: u32,
}
pub const CAP_ALL_PORT_SELECT: u16 = 1 << 8;
pub const CAP_EXT_WIDTH: u16 = 1 << 9;
pub const CAP_EXT_WIDTH_NOIETF: u16 = 1 << 10;
pub const CAP_XMIT_WAIT: u16 = 1 << 12;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
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
    pub local_link_integrity_errors: u8,
    pub excessive_buffer_overrun_errors: u8,
    pub qp1_dropped: u16,
    pub vl15_dropped: u16,
    pub xmit_data: u32,
    pub rcv_data: u32,
    pub xmit_pkts: u32,
    pub rcv_pkts: u32,
    pub xmit_wait: u32,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortCountersExtended {
    pub port_select: u8,
    pub counter_select: u16,
    pub counter_select2: u32,
    pub xmit_data: u64,
    pub rcv_data: u64,
    pub xmit_pkts: u64,
    pub rcv_pkts: u64,
    pub unicast_xmit_pkts: u64,
    pub unicast_rcv_pkts: u64,
    pub multicast_xmit_pkts: u64,
    pub multicast_rcv_pkts: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortSamplesControl {
    pub op_code: u8,
    pub port_select: u8,
    pub tick: u8,
    pub counter_width: u8,
    pub counter_masks: [u8; 15],
    pub sample_mechanisms: u8,
    pub sample_status: u8,
    pub option_mask: u64,
    pub vendor_mask: u64,
    pub sample_start: u32,
    pub sample_interval: u32,
    pub tag: u16,
    pub counter_select: [u16; 15],
    pub samples_only_option_mask: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortSamplesResult {
    pub tag: u16,
    pub sample_status: u8,
    pub counters: [u32; 15],
}

pub mod mad {
    pub const METHOD_GET: u8 = 0x01;
    pub const METHOD_SET: u8 = 0x02;
    pub const METHOD_GET_RESP: u8 = 0x81;
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct MadHeader {
        pub base_version: u8,
        pub mgmt_class: u8,
        pub class_version: u8,
        pub method: u8,
        pub status: u16,
        pub class_specific: u16,
        pub tid: u64,
        pub attr_id: u16,
        pub attr_mod: u32,
    }
    #[derive(Debug)]
    pub struct MadError(pub String);
    pub fn request(
        method: u8,
        attr_id: u16,
        attr_mod: u32,
        tid: u64,
        data: &[u8; 192],
    ) -> [u8; 256] {
        let mut m = [0u8; 256];
        m[0] = 1;
        m[1] = 4;
        m[2] = 1;
        m[3] = method;
        m[8..16].copy_from_slice(&tid.to_be_bytes());
        m[16..18].copy_from_slice(&attr_id.to_be_bytes());
        m[20..24].copy_from_slice(&attr_mod.to_be_bytes());
        m[64..].copy_from_slice(data);
        m
    }
    pub fn parse(m: &[u8]) -> Result<(MadHeader, &[u8; 192]), MadError> {
        if m.len() < 256 {
            return Err(MadError("short".into()));
        }
        let h = MadHeader {
            base_version: m[0],
            mgmt_class: m[1],
            class_version: m[2],
            method: m[3],
            status: u16::from_be_bytes([m[4], m[5]]),
            class_specific: u16::from_be_bytes([m[6], m[7]]),
            tid: u64::from_be_bytes(m[8..16].try_into().unwrap()),
            attr_id: u16::from_be_bytes([m[16], m[17]]),
            attr_mod: u32::from_be_bytes(m[20..24].try_into().unwrap()),
        };
        Ok((h, m[64..256].try_into().unwrap()))
    }
}
macro_rules! stubcodec { ($($t:ty),*) => { $(impl $t {
    pub fn decode(_d: &[u8; 192]) -> Self { Self::default() }
    pub fn encode(&self, _d: &mut [u8; 192]) {}
})* } }
stubcodec!(
    ClassPortInfo,
    PortCounters,
    PortCountersExtended,
    PortSamplesControl,
    PortSamplesResult
);
