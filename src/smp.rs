//! Subnet Management attributes discovery reads (NodeInfo, NodeDescription,
//! SwitchInfo, PortInfo) and the directed-route SMP that carries them: pure codecs over
//! byte slices. The attributes are declared with the same `pm_attr!` field
//! layouts as the PM attributes (IBTA bit numbering, offsets into the
//! 64-byte SMP data area).

use crate::ib::link::{LinkCaps, LinkSpeed, LinkSpeeds, LinkWidth, LinkWidths, SpeedCodes};
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
pub const ATTR_SM_INFO: u16 = 0x0020;
pub const ATTR_PORT_INFO_EXTENDED: u16 = 0x0033;
/// PortInfo CapabilityMask bit 15: IsCapabilityMask2Supported.
pub const CAP_HAS_CAP_MASK2: u32 = 1 << 15;
/// PortInfo CapabilityMask2 bit 1: IsPortInfoExtendedSupported.
pub const CAP2_PORT_INFO_EXTENDED: u16 = 1 << 1;
/// A directed route has at most 63 hops (64 path entries, entry 0 unused).
pub const MAX_HOPS: usize = 63;
/// PortInfo CapabilityMask bit 14: IsExtendedSpeedsSupported.
pub const CAP_EXT_SPEEDS: u32 = 1 << 14;
/// PortInfo CapabilityMask2 bit 11: IsExtendedSpeeds2Supported (the
/// LinkSpeedExt*2 fields, XDR).
pub const CAP2_EXT_SPEEDS2: u16 = 1 << 11;
/// Mellanox ExtendedPortInfo, the vendor SMP attribute FDR10 is read from.
pub const ATTR_MLNX_EXT_PORT_INFO: u16 = 0xFF90;
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
        GidPrefix gid_prefix: u64 = "GidPrefix" @ 64:64;
        Lid lid: u16 = "LID" @ 128:16;
        MasterSmLid master_sm_lid: u16 = "MasterSMLID" @ 144:16;
        CapMask cap_mask: u32 = "CapabilityMask" @ 160:32;
        LocalPort local_port: u8 = "LocalPortNum" @ 224:8;
        WidthEnabled width_enabled: u8 = "LinkWidthEnabled" @ 232:8;
        WidthSupported width_supported: u8 = "LinkWidthSupported" @ 240:8;
        WidthActive width_active: u8 = "LinkWidthActive" @ 248:8;
        SpeedSupported speed_supported: u8 = "LinkSpeedSupported" @ 256:4;
        /// Logical state: 1 Down, 2 Init, 3 Armed, 4 Active.
        State state: u8 = "PortState" @ 260:4;
        PhysState phys_state: u8 = "PortPhysicalState" @ 264:4;
        Lmc lmc: u8 = "LMC" @ 277:3;
        SpeedActive speed_active: u8 = "LinkSpeedActive" @ 280:4;
        SpeedEnabled speed_enabled: u8 = "LinkSpeedEnabled" @ 284:4;
        /// XDR (IBTA 1.7; rdma-core libibmad fields.c "LinkSpeedExtActive2").
        SpeedExtActive2 speed_ext_active2: u8 = "LinkSpeedExtActive2" @ 449:2;
        SpeedExtSupported2 speed_ext_supported2: u8 = "LinkSpeedExtSupported2" @ 451:2;
        SpeedExtEnabled2 speed_ext_enabled2: u8 = "LinkSpeedExtEnabled2" @ 453:3;
        CapMask2 cap_mask2: u16 = "CapabilityMask2" @ 480:16;
        SpeedExtActive speed_ext_active: u8 = "LinkSpeedExtActive" @ 496:4;
        SpeedExtSupported speed_ext_supported: u8 = "LinkSpeedExtSupported" @ 500:4;
        SpeedExtEnabled speed_ext_enabled: u8 = "LinkSpeedExtEnabled" @ 507:5;
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
    /// Mellanox ExtendedPortInfo (0xFF90): bit 0 of each speed field is
    /// FDR10 (rdma-core libibmad fields.c, IB_MLNX_EXT_PORT_*).
    pub struct MlnxExtPortInfo in [u8; SMP_DATA_SIZE], fields MlnxExtPortInfoField, table MLNX_EXT_PORT_INFO_FIELDS {
        SpeedSupported speed_supported: u8 = "LinkSpeedSupported" @ 56:8;
        SpeedEnabled speed_enabled: u8 = "LinkSpeedEnabled" @ 88:8;
        SpeedActive speed_active: u8 = "LinkSpeedActive" @ 120:8;
    }
}

pm_attr! {
    /// The field of SwitchInfo (0x0012) discovery uses.
    pub struct SwitchInfo in [u8; SMP_DATA_SIZE], fields SwitchInfoField, table SWITCH_INFO_FIELDS {
        /// Port 0 is an enhanced port 0: it has its own PMA counters.
        EnhancedPort0 enhanced_port0: u8 = "EnhancedPort0" @ 132:1;
    }
}

/// SMInfo's SM_Key: the key that authenticates an SM to another. It is
/// never shown: its `Debug` says only whether it is set, and nothing of
/// the agent keeps it (see [`SmInfoAttr::sm_info`]).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct SmKey(u64);

impl SmKey {
    /// Overwrite the key with zeros (a write the compiler keeps).
    pub fn wipe(&mut self) {
        zeroize::Zeroize::zeroize(&mut self.0);
    }
}

impl std::fmt::Debug for SmKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0 == 0 {
            "SmKey(zero)"
        } else {
            "SmKey(set)"
        })
    }
}

impl crate::pm::decl::Bits for SmKey {
    const BITS: usize = 64;
    fn to_bits(self) -> u64 {
        self.0
    }
    fn from_bits(v: u64) -> Self {
        SmKey(v)
    }
}

pm_attr! {
    /// SMInfo (0x0020, IBTA 14.2.5.13): a Subnet Manager's port GUID, key,
    /// activity count, priority and state.
    pub struct SmInfoAttr in [u8; SMP_DATA_SIZE], fields SmInfoField, table SM_INFO_FIELDS {
        Guid guid: u64 = "GUID" @ 0:64;
        SmKey sm_key: SmKey = "SM_Key" @ 64:64;
        ActCount act_count: u32 = "ActCount" @ 128:32;
        Priority priority: u8 = "Priority" @ 160:4;
        /// 0 not active, 1 discovering, 2 standby, 3 master.
        SmState sm_state: u8 = "SMState" @ 164:4;
    }
}

impl SmInfoAttr {
    /// What the agent keeps of it (not the key), with the LID it was read
    /// from.
    pub fn sm_info(&self, lid: u16) -> crate::ib::subnet::SmInfo {
        crate::ib::subnet::SmInfo {
            lid,
            guid: crate::ib::Guid(self.guid),
            priority: self.priority,
            state: crate::ib::subnet::SmState::from_bits(self.sm_state),
            act_count: self.act_count,
        }
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

/// The device IDs (and Bull's, vendor 0x119f) whose ports answer
/// Mellanox ExtendedPortInfo: SwitchX, Switch-IB, Quantum, ConnectX-3,
/// Connect-IB, ConnectX-4 and later (rdma-core libibnetdisc
/// `is_mlnx_ext_port_info_supported`).
pub fn has_mlnx_ext_port_info(vendor_id: u32, device_id: u16) -> bool {
    const BULL: u32 = 0x119f;
    let d = device_id;
    matches!(d, 0xc738..=0xc73b | 0xc839 | 0xcb20 | 0xcf08 | 0xcf09 | 0xd2f0 | 0x1003..=0x101b | 0xa2d2)
        || (vendor_id == BULL
            && matches!(
                d,
                0x1b02 | 0x1b50 | 0x1ba0 | 0x1bd0..=0x1bd5 | 0x1bf0 | 0x1b33 | 0x1b73 | 0x1b40
                    | 0x1b41 | 0x1b60 | 0x1b61 | 0x1b83 | 0x1b93 | 0x1b94 | 0x1bb4 | 0x1bb5
                    | 0x1bc4..=0x1bc6
            ))
}

/// A port's link facts as its PortInfo states them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortLink {
    /// Active width and speed (None while the link is down).
    pub width: Option<LinkWidth>,
    pub speed: Option<LinkSpeed>,
    pub caps: LinkCaps,
}

impl PortInfo {
    /// The port's widths and speeds. `cap` is the PortInfo whose
    /// CapabilityMask applies (a switch's port 0, a CA port's own; None:
    /// not read, and then the speed sets are not known); `mlnx` the
    /// port's Mellanox ExtendedPortInfo where it was read (FDR10).
    pub fn link(&self, cap: Option<&PortInfo>, mlnx: Option<&MlnxExtPortInfo>) -> PortLink {
        let ext = cap.is_some_and(|c| c.cap_mask & CAP_EXT_SPEEDS != 0);
        let ext2 = ext
            && cap.is_some_and(|c| {
                c.cap_mask & CAP_HAS_CAP_MASK2 != 0 && c.cap_mask2 & CAP2_EXT_SPEEDS2 != 0
            });
        let codes = |legacy: u8, e: u8, e2: u8, m: Option<u8>| SpeedCodes {
            legacy,
            ext: if ext { e } else { 0 },
            ext2: if ext2 { e2 } else { 0 },
            mlnx: m.unwrap_or(0) & 1,
        };
        let up = self.link_up();
        let caps = LinkCaps {
            width_supported: LinkWidths::from_port_info(self.width_supported),
            width_enabled: LinkWidths::from_port_info(self.width_enabled),
            speed_supported: if cap.is_some() {
                LinkSpeeds::from_port_info(codes(
                    self.speed_supported,
                    self.speed_ext_supported,
                    self.speed_ext_supported2,
                    mlnx.map(|m| m.speed_supported),
                ))
            } else {
                LinkSpeeds::default()
            },
            speed_enabled: if cap.is_some() {
                LinkSpeeds::from_port_info(codes(
                    self.speed_enabled,
                    self.speed_ext_enabled,
                    self.speed_ext_enabled2,
                    mlnx.map(|m| m.speed_enabled),
                ))
            } else {
                LinkSpeeds::default()
            },
        };
        PortLink {
            width: up
                .then(|| LinkWidth::from_code(self.width_active))
                .flatten(),
            speed: up
                .then(|| {
                    LinkSpeed::active(codes(
                        self.speed_active,
                        self.speed_ext_active,
                        self.speed_ext_active2,
                        mlnx.map(|m| m.speed_active),
                    ))
                })
                .flatten(),
            caps,
        }
    }

    /// Whether rdma-core would ask this port's Mellanox ExtendedPortInfo
    /// for FDR10: a device that has it, link up at QDR with no extended
    /// speed active.
    pub fn wants_fdr10(&self, vendor_id: u32, device_id: u16) -> bool {
        has_mlnx_ext_port_info(vendor_id, device_id)
            && self.phys_state == 5
            && self.speed_active == 4
            && self.speed_ext_active == 0
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

    /// The data area of the SMInfo reply `sminfo -dd 1` printed from
    /// opensm 3.3.23 (priority 5, master) under ibsim: GUID 0x10000a, the
    /// SM_Key opensm answers with (1), ActCount 0x76.
    #[test]
    fn sm_info_decodes_the_bytes_opensm_sent() {
        let mut d = [0u8; 64];
        d[..21].copy_from_slice(&[
            0x00, 0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
            0x00, 0x01, 0x00, 0x00, 0x00, 0x76, 0x53,
        ]);
        let a = SmInfoAttr::decode(&d);
        assert_eq!(
            (a.guid, a.act_count, a.priority, a.sm_state),
            (0x10000a, 0x76, 5, 3)
        );
        assert_eq!(a.sm_key, SmKey(1));
        let shown = format!("{a:?}");
        assert!(shown.contains("SmKey(set)"), "{shown}");
        assert!(
            !shown.contains("sm_key: 1") && !shown.contains("SmKey(1)"),
            "{shown}"
        );
        assert_eq!(format!("{:?}", SmKey(0)), "SmKey(zero)");
        let mut k = a.sm_key;
        k.wipe();
        assert_eq!(k, SmKey(0));
        let mut back = [0u8; 64];
        a.encode(&mut back);
        assert_eq!(back, d);
        let sm = a.sm_info(1);
        assert_eq!(
            (sm.lid, sm.guid.0, sm.priority, sm.state, sm.act_count),
            (1, 0x10000a, 5, crate::ib::subnet::SmState::Master, 0x76)
        );
        // The names as libibmad's fields.c spells them.
        let names: Vec<&str> = SM_INFO_FIELDS.iter().map(|f| f.name).collect();
        assert_eq!(names, ["GUID", "SM_Key", "ActCount", "Priority", "SMState"]);
    }

    /// PortInfo's GidPrefix and MasterSMLID, as `smpquery portinfo` reads
    /// them (IBTA 14.2.5.6: bytes 8..16 and 18..20).
    #[test]
    fn port_info_has_the_prefix_and_the_master_sm_lid() {
        let mut d = [0u8; 64];
        d[8..16].copy_from_slice(&0xfe80_0000_0000_0002u64.to_be_bytes());
        d[16..18].copy_from_slice(&0x12u16.to_be_bytes());
        d[18..20].copy_from_slice(&0x1u16.to_be_bytes());
        let p = PortInfo::decode(&d);
        assert_eq!(
            (p.gid_prefix, p.lid, p.master_sm_lid),
            (0xfe80_0000_0000_0002, 0x12, 1)
        );
    }

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

    /// PortInfo bytes (IBTA 14.2.5.6; byte offsets as libibmad's bit
    /// offsets / 8) for a port linked at `width` code and the given
    /// speed nibbles.
    fn port_info(cap: u32, cap2: u16, widths: (u8, u8, u8), legacy: (u8, u8, u8)) -> [u8; 64] {
        let mut d = [0u8; 64];
        d[20..24].copy_from_slice(&cap.to_be_bytes());
        (d[29], d[30], d[31]) = widths; // enabled, supported, active
        d[32] = (legacy.0 << 4) | 4; // supported, state Active
        d[33] = 5 << 4; // LinkUp
        d[35] = (legacy.2 << 4) | legacy.1; // active, enabled
        d[60..62].copy_from_slice(&cap2.to_be_bytes());
        d
    }

    #[test]
    fn link_widths_and_speeds_every_generation() {
        use crate::ib::{LinkSpeed as S, LinkSpeeds, LinkWidth as W, LinkWidths};
        let ext = CAP_EXT_SPEEDS | CAP_HAS_CAP_MASK2;
        // A 2x NDR split port of a ConnectX-7: 1x, 2x, 4x; SDR..NDR.
        let mut d = port_info(ext, 0, (0x13, 0x13, 0x10), (7, 7, 4));
        d[62] = 0x8F; // ext active NDR, supported FDR..NDR
        d[63] = 0x0F; // ext enabled FDR..NDR
        let p = PortInfo::decode(&d);
        let l = p.link(Some(&p), None);
        assert_eq!((l.width, l.speed), (Some(W::X2), Some(S::Ndr)));
        assert_eq!(
            l.caps.width_supported,
            LinkWidths::of(&[W::X1, W::X2, W::X4])
        );
        assert_eq!(l.caps.width_enabled.to_string(), "1x,2x,4x");
        assert_eq!(
            l.caps.speed_supported.to_string(),
            "SDR,DDR,QDR,FDR,EDR,HDR,NDR"
        );
        assert_eq!(l.caps.speed_enabled, l.caps.speed_supported);
        // XDR: LinkSpeedExt*2, only where CapabilityMask2 says so.
        d[56] = (1 << 5) | (1 << 3) | 1; // active2, supported2, enabled2
        let p = PortInfo::decode(&d);
        assert_eq!(
            p.link(Some(&p), None).speed,
            Some(S::Ndr),
            "no IsExtendedSpeeds2"
        );
        d[60..62].copy_from_slice(&CAP2_EXT_SPEEDS2.to_be_bytes());
        let p = PortInfo::decode(&d);
        let l = p.link(Some(&p), None);
        assert_eq!(l.speed, Some(S::Xdr));
        assert!(l.caps.speed_supported.contains(S::Xdr) && l.caps.speed_enabled.contains(S::Xdr));
        // LinkSpeedExtEnabled 30: extended speeds disabled.
        d[63] = 30;
        let p = PortInfo::decode(&d);
        assert!(!p.link(Some(&p), None).caps.speed_enabled.contains(S::Ndr));
        // Without the CapabilityMask (a switch whose port 0 did not
        // answer) the speed sets are not known and only the legacy
        // active speed is read.
        let l = p.link(None, None);
        assert_eq!(
            (l.speed, l.caps.speed_supported),
            (Some(S::Qdr), LinkSpeeds::default())
        );
        assert!(l.caps.width_supported.is_known());
        // A port that does not support extended speeds (ibsim): its
        // extended fields are not read, whatever they hold.
        let mut d = port_info(0, 0, (2, 0x1F, 2), (7, 1, 1));
        d[62] = 0x88;
        let p = PortInfo::decode(&d);
        let l = p.link(Some(&p), None);
        assert_eq!((l.width, l.speed), (Some(W::X4), Some(S::Sdr)));
        assert_eq!(l.caps.speed_supported.to_string(), "SDR,DDR,QDR");
        assert_eq!(l.caps.width_supported.to_string(), "1x,2x,4x,8x,12x");
        // Down: no active width or speed; the sets stay.
        d[32] = (7 << 4) | 1;
        let l = PortInfo::decode(&d).link(Some(&p), None);
        assert_eq!((l.width, l.speed), (None, None));
        assert!(l.caps.width_enabled.is_known());
    }

    #[test]
    fn fdr10_comes_from_mellanox_extended_port_info() {
        use crate::ib::LinkSpeed as S;
        let d = port_info(0, 0, (3, 3, 2), (7, 7, 4));
        let p = PortInfo::decode(&d);
        assert!(p.wants_fdr10(0x02c9, 0xc738), "SwitchX");
        assert!(p.wants_fdr10(0x119f, 0x1b02), "Bull SwitchX");
        assert!(!p.wants_fdr10(0x02c9, 0xd2f2), "not in rdma-core's list");
        let mut m = [0u8; 64];
        (m[7], m[11], m[15]) = (1, 1, 1); // supported, enabled, active
        let x = MlnxExtPortInfo::decode(&m);
        let l = p.link(Some(&p), Some(&x));
        assert_eq!(l.speed, Some(S::Fdr10));
        assert_eq!(l.caps.speed_supported.to_string(), "SDR,DDR,QDR,FDR10");
        m[15] = 0;
        let l = p.link(Some(&p), Some(&MlnxExtPortInfo::decode(&m)));
        assert_eq!(l.speed, Some(S::Qdr));
    }
}
