//! ClassPortInfo (attribute 0x0001) of the PerfMgt class.

pm_attr! {
    pub struct ClassPortInfo in [u8; super::mad::DATA_SIZE], fields ClassPortInfoField, table FIELDS {
        BaseVersion base_version: u8 = "BaseVersion" @ 0:8;
        ClassVersion class_version: u8 = "ClassVersion" @ 8:8;
        CapabilityMask capability_mask: u16 = "CapabilityMask" @ 16:16;
        CapabilityMask2 capability_mask2: u32 = "CapabilityMask2" @ 32:27;
        RespTimeValue resp_time_value: u8 = "RespTimeValue" @ 59:5;
        RedirectTc redirect_tc: u8 = "RedirectTC" @ 192:8;
        RedirectSl redirect_sl: u8 = "RedirectSL" @ 200:4;
        RedirectFl redirect_fl: u32 = "RedirectFL" @ 204:20;
        RedirectLid redirect_lid: u16 = "RedirectLID" @ 224:16;
        RedirectPkey redirect_pkey: u16 = "RedirectPKey" @ 240:16;
        RedirectQp redirect_qp: u32 = "RedirectQP" @ 264:24;
        RedirectQkey redirect_qkey: u32 = "RedirectQKey" @ 288:32;
        TrapTc trap_tc: u8 = "TrapTC" @ 448:8;
        TrapSl trap_sl: u8 = "TrapSL" @ 456:4;
        TrapFl trap_fl: u32 = "TrapFL" @ 460:20;
        TrapLid trap_lid: u16 = "TrapLID" @ 480:16;
        TrapPkey trap_pkey: u16 = "TrapPKey" @ 496:16;
        TrapHl trap_hl: u8 = "TrapHL" @ 512:8;
        TrapQp trap_qp: u32 = "TrapQP" @ 520:24;
        TrapQkey trap_qkey: u32 = "TrapQKey" @ 544:32;
    }
    bytes {
        redirect_gid: [u8; 16] = "RedirectGID" @ 64;
        trap_gid: [u8; 16] = "TrapGID" @ 320;
    }
}

/// Generic class capability bits.
pub const CAP_TRAP: u16 = 1 << 0;
pub const CAP_GET_SET: u16 = 1 << 1;
pub const CAP_MASK2: u16 = 1 << 2;
/// PerfMgt capability bits.
pub const CAP_ALL_PORT_SELECT: u16 = 1 << 8;
pub const CAP_EXT_WIDTH: u16 = 1 << 9;
pub const CAP_EXT_WIDTH_NOIETF: u16 = 1 << 10;
pub const CAP_SAMPLES_ONLY: u16 = 1 << 11;
pub const CAP_XMIT_WAIT: u16 = 1 << 12;
pub const CAP_INH_LIMITED_PKEY_MCAST: u16 = 1 << 13;
pub const CAP_RSFEC_COUNTERS: u16 = 1 << 14;
pub const CAP_QP1_DROP: u16 = 1 << 15;
/// CapabilityMask2 bits.
pub const CAP2_PM_KEY: u32 = 1 << 0;
pub const CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED: u32 = 1 << 1;

/// Which of a PMA's counters are 64 bits wide at the source, as its
/// ClassPortInfo says (pmNodeWideCounters shows it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WideCounters {
    /// PortCounters alone: 32-bit data and packets, 4- to 16-bit errors.
    None,
    /// PortCountersExtended's data and packet counters
    /// (IsExtendedWidthSupported or IsExtendedWidthSupportedNoIETF).
    DataAndPackets,
    /// Also its error counters and PortXmitWait (CapabilityMask2
    /// IsAdditionalPortCountersExtendedSupported).
    All,
}

impl WideCounters {
    /// The pmNodeWideCounters value.
    pub fn mib(self) -> i32 {
        match self {
            WideCounters::None => 1,
            WideCounters::DataAndPackets => 2,
            WideCounters::All => 3,
        }
    }
}

impl ClassPortInfo {
    pub fn has(&self, cap: u16) -> bool {
        self.capability_mask & cap != 0
    }

    /// Which counters the PMA keeps 64 bits wide. The additional
    /// counters live in PortCountersExtended, so the CapabilityMask2 bit
    /// alone says that attribute is answered.
    pub fn wide_counters(&self) -> WideCounters {
        if self.capability_mask2 & CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED != 0 {
            WideCounters::All
        } else if self.has(CAP_EXT_WIDTH | CAP_EXT_WIDTH_NOIETF) {
            WideCounters::DataAndPackets
        } else {
            WideCounters::None
        }
    }
}
