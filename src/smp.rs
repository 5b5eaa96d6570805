//! Subnet Management attributes discovery reads (NodeInfo, NodeDescription,
//! SwitchInfo, PortInfo) and the directed-route SMP that carries them: pure codecs over
//! byte slices. The attributes are declared with the same `pm_attr!` field
//! layouts as the PM attributes (IBTA bit numbering, offsets into the
//! 64-byte SMP data area).

use crate::pm::layout::Field;
use crate::pm::mad::{BASE_VERSION, MAD_SIZE, method};

/// Management class of directed-route SMPs.
pub const CLASS_SMP_DIRECTED: u8 = 0x81;
/// Class version of the SMP classes.
pub const SMP_CLASS_VERSION: u8 = 1;
pub const METHOD_GET: u8 = method::GET;
pub const METHOD_GET_RESP: u8 = method::GET_RESP;
pub const ATTR_NODE_DESC: u16 = 0x0010;
pub const ATTR_NODE_INFO: u16 = 0x0011;
pub const ATTR_SWITCH_INFO: u16 = 0x0012;
pub const ATTR_PORT_INFO: u16 = 0x0015;
pub const ATTR_PORT_INFO_EXTENDED: u16 = 0x0033;
/// PortInfo CapabilityMask bit 15: IsCapabilityMask2Supported.
pub const CAP_HAS_CAP_MASK2: u32 = 1 << 15;
/// PortInfo CapabilityMask2 bit 1: IsPortInfoExtendedSupported.
pub const CAP2_PORT_INFO_EXTENDED: u16 = 1 << 1;
/// A directed route has at most 63 hops (64 path entries, entry 0 unused).
pub const MAX_HOPS: usize = 63;
/// PortInfo CapabilityMask bit 14: IsExtendedSpeedsSupported.
pub const CAP_EXT_SPEEDS: u32 = 1 << 14;
/// Size of the SMP data area.
pub const SMP_DATA_SIZE: usize = 64;
/// Byte offset of the data area in a directed-route SMP.
pub const SMP_DATA_OFFSET: usize = 64;

pm_attr! {
    /// The fields of NodeInfo (0x0011) discovery uses.
    pub struct NodeInfo in [u8; SMP_DATA_SIZE], fields NodeInfoField, table NODE_INFO_FIELDS {
        NodeType node_type: u8 = "NodeType" @ 16:8;
        NumPorts num_ports: u8 = "NumPorts" @ 24:8;
        SysGuid sys_guid: u64 = "SystemImageGUID" @ 32:64;
        NodeGuid node_guid: u64 = "NodeGUID" @ 96:64;
        PortGuid port_guid: u64 = "PortGUID" @ 160:64;
        DeviceId device_id: u16 = "DeviceID" @ 240:16;
        LocalPort local_port: u8 = "LocalPortNum" @ 288:8;
        VendorId vendor_id: u32 = "VendorID" @ 296:24;
    }
}

pm_attr! {
    /// The fields of PortInfo (0x0015) discovery uses.
    pub struct PortInfo in [u8; SMP_DATA_SIZE], fields PortInfoField, table PORT_INFO_FIELDS {
        Lid lid: u16 = "LID" @ 128:16;
        CapMask cap_mask: u32 = "CapabilityMask" @ 160:32;
        LocalPort local_port: u8 = "LocalPortNum" @ 224:8;
        WidthActive width_active: u8 = "LinkWidthActive" @ 248:8;
        /// Logical state: 1 Down, 2 Init, 3 Armed, 4 Active.
        State state: u8 = "PortState" @ 260:4;
        PhysState phys_state: u8 = "PortPhysicalState" @ 264:4;
        Lmc lmc: u8 = "LMC" @ 277:3;
        SpeedActive speed_active: u8 = "LinkSpeedActive" @ 280:4;
        CapMask2 cap_mask2: u16 = "CapabilityMask2" @ 480:16;
        SpeedExtActive speed_ext_active: u8 = "LinkSpeedExtActive" @ 496:4;
    }
}

pm_attr! {
    /// The field of PortInfoExtended (0x0033) discovery uses.
    pub struct PortInfoExtended in [u8; SMP_DATA_SIZE], fields PortInfoExtendedField, table PORT_INFO_EXTENDED_FIELDS {
        /// 0 none, 1 FireCode, 2 RS-FEC, 3 low-latency RS-FEC.
        FecModeActive fec_mode_active: u16 = "FECModeActive" @ 32:16;
    }
}

pm_attr! {
    /// The field of SwitchInfo (0x0012) discovery uses.
    pub struct SwitchInfo in [u8; SMP_DATA_SIZE], fields SwitchInfoField, table SWITCH_INFO_FIELDS {
        /// Port 0 is an enhanced port 0: it has its own PMA counters.
        EnhancedPort0 enhanced_port0: u8 = "EnhancedPort0" @ 132:1;
    }
}

impl PortInfo {
    /// The port answers PortInfoExtended (perfquery's test: CapabilityMask2
    /// is valid and says so).
    pub fn has_port_info_extended(&self) -> bool {
        self.cap_mask & CAP_HAS_CAP_MASK2 != 0 && self.cap_mask2 & CAP2_PORT_INFO_EXTENDED != 0
    }

    /// The link is up far enough to carry SMPs (Init, Armed or Active).
    pub fn link_up(&self) -> bool {
        (2..=4).contains(&self.state)
    }
}

/// NodeDescription (0x0010): up to 64 octets, NUL-padded; invalid UTF-8
/// is replaced and trailing blanks dropped.
pub fn node_description(d: &[u8; SMP_DATA_SIZE]) -> String {
    let end = d.iter().position(|&b| b == 0).unwrap_or(d.len());
    String::from_utf8_lossy(&d[..end]).trim_end().to_string()
}

/// The directed-route SMP header fields (bit offsets into the 256-byte
/// MAD).
mod hdr {
    use super::Field;
    pub const BASE_VERSION: Field = Field::new("BaseVersion", 0, 8);
    pub const MGMT_CLASS: Field = Field::new("MgmtClass", 8, 8);
    pub const CLASS_VERSION: Field = Field::new("ClassVersion", 16, 8);
    pub const METHOD: Field = Field::new("Method", 24, 8);
    /// D bit and Status.
    pub const STATUS: Field = Field::new("Status", 33, 15);
    pub const HOP_COUNT: Field = Field::new("HopCount", 56, 8);
    pub const TID: Field = Field::new("TID", 64, 64);
    pub const ATTR_ID: Field = Field::new("AttributeID", 128, 16);
    pub const ATTR_MOD: Field = Field::new("AttributeModifier", 160, 32);
    pub const DR_SLID: Field = Field::new("DrSLID", 256, 16);
    pub const DR_DLID: Field = Field::new("DrDLID", 272, 16);
    /// InitialPath: 64 octets from byte 128 (entry 0 unused).
    pub const INITIAL_PATH_BYTE: usize = 128;
}

/// Build a directed-route SMP Get along `path` (`path[i]` = the port to
/// leave by at hop i+1; empty = the local node).
pub fn dr_smp_get(attr_id: u16, attr_mod: u32, tid: u64, path: &[u8]) -> [u8; MAD_SIZE] {
    let mut m = [0u8; MAD_SIZE];
    hdr::BASE_VERSION.set(&mut m, BASE_VERSION.into());
    hdr::MGMT_CLASS.set(&mut m, CLASS_SMP_DIRECTED.into());
    hdr::CLASS_VERSION.set(&mut m, SMP_CLASS_VERSION.into());
    hdr::METHOD.set(&mut m, METHOD_GET.into());
    // D bit, status and hop pointer stay 0.
    hdr::HOP_COUNT.set(&mut m, path.len().min(MAX_HOPS) as u64);
    hdr::TID.set(&mut m, tid);
    hdr::ATTR_ID.set(&mut m, attr_id.into());
    hdr::ATTR_MOD.set(&mut m, attr_mod.into());
    // M_Key 0; DrSLID and DrDLID: permissive.
    hdr::DR_SLID.set(&mut m, 0xFFFF);
    hdr::DR_DLID.set(&mut m, 0xFFFF);
    for (i, &p) in path.iter().take(MAX_HOPS).enumerate() {
        m[hdr::INITIAL_PATH_BYTE + 1 + i] = p;
    }
    m
}

/// A parsed SMP reply: status (D bit masked off) and the 64-byte data.
#[derive(Debug, PartialEq, Eq)]
pub struct SmpReply {
    pub tid: u64,
    pub attr_id: u16,
    pub status: u16,
    pub data: [u8; SMP_DATA_SIZE],
}

pub fn parse_smp_reply(m: &[u8; MAD_SIZE]) -> Option<SmpReply> {
    if hdr::MGMT_CLASS.get(m) != u64::from(CLASS_SMP_DIRECTED)
        || hdr::METHOD.get(m) != u64::from(METHOD_GET_RESP)
    {
        return None;
    }
    let mut data = [0u8; SMP_DATA_SIZE];
    data.copy_from_slice(&m[SMP_DATA_OFFSET..SMP_DATA_OFFSET + SMP_DATA_SIZE]);
    Some(SmpReply {
        tid: hdr::TID.get(m),
        attr_id: hdr::ATTR_ID.get(m) as u16,
        status: hdr::STATUS.get(m) as u16,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_description_stops_at_nul_and_trims() {
        let mut d = [0u8; 64];
        d[..9].copy_from_slice(b"sw-1 HCA ");
        assert_eq!(node_description(&d), "sw-1 HCA");
        let full = [b'x'; 64];
        assert_eq!(node_description(&full).len(), 64);
    }

    #[test]
    fn layouts_match_the_byte_offsets_ibtracert_uses() {
        let mut d = [0u8; 64];
        d[36] = 9;
        d[3] = 36;
        let n = NodeInfo::decode(&d);
        assert_eq!((n.local_port, n.num_ports), (9, 36));
        let mut d = [0u8; 64];
        d[34] = 0xFA; // LMC is the low 3 bits
        assert_eq!(PortInfo::decode(&d).lmc, 2);
        let mut back = [0u8; 64];
        PortInfo::decode(&d).encode(&mut back);
        assert_eq!(back[34], 0x02);
        // EnhancedPort0 is the fourth bit of byte 16 (libibmad: bit 132).
        let mut d = [0u8; 64];
        d[16] = 0x08;
        assert_eq!(SwitchInfo::decode(&d).enhanced_port0, 1);
        d[16] = 0xF7;
        assert_eq!(SwitchInfo::decode(&d).enhanced_port0, 0);
    }
}
