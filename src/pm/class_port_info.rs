//! ClassPortInfo (attribute 0x0001) of the PerfMgt class.

use super::layout::{Field, get_bytes, set_bytes};
use super::mad::DATA_SIZE;

pub const BASE_VERSION: Field = Field::new("BaseVersion", 0, 8);
pub const CLASS_VERSION: Field = Field::new("ClassVersion", 8, 8);
pub const CAPABILITY_MASK: Field = Field::new("CapabilityMask", 16, 16);
pub const CAPABILITY_MASK2: Field = Field::new("CapabilityMask2", 32, 27);
pub const RESP_TIME_VALUE: Field = Field::new("RespTimeValue", 59, 5);
/// 128 bits: read with `get_bytes`.
pub const REDIRECT_GID_OFFSET: usize = 64;
pub const REDIRECT_TC: Field = Field::new("RedirectTC", 192, 8);
pub const REDIRECT_SL: Field = Field::new("RedirectSL", 200, 4);
pub const REDIRECT_FL: Field = Field::new("RedirectFL", 204, 20);
pub const REDIRECT_LID: Field = Field::new("RedirectLID", 224, 16);
pub const REDIRECT_PKEY: Field = Field::new("RedirectPKey", 240, 16);
pub const REDIRECT_QP: Field = Field::new("RedirectQP", 264, 24);
pub const REDIRECT_QKEY: Field = Field::new("RedirectQKey", 288, 32);
/// 128 bits: read with `get_bytes`.
pub const TRAP_GID_OFFSET: usize = 320;
pub const TRAP_TC: Field = Field::new("TrapTC", 448, 8);
pub const TRAP_SL: Field = Field::new("TrapSL", 456, 4);
pub const TRAP_FL: Field = Field::new("TrapFL", 460, 20);
pub const TRAP_LID: Field = Field::new("TrapLID", 480, 16);
pub const TRAP_PKEY: Field = Field::new("TrapPKey", 496, 16);
pub const TRAP_HL: Field = Field::new("TrapHL", 512, 8);
pub const TRAP_QP: Field = Field::new("TrapQP", 520, 24);
pub const TRAP_QKEY: Field = Field::new("TrapQKey", 544, 32);

/// The scalar fields, in wire order (the two GIDs are not listed).
pub const FIELDS: &[Field] = &[
    BASE_VERSION,
    CLASS_VERSION,
    CAPABILITY_MASK,
    CAPABILITY_MASK2,
    RESP_TIME_VALUE,
    REDIRECT_TC,
    REDIRECT_SL,
    REDIRECT_FL,
    REDIRECT_LID,
    REDIRECT_PKEY,
    REDIRECT_QP,
    REDIRECT_QKEY,
    TRAP_TC,
    TRAP_SL,
    TRAP_FL,
    TRAP_LID,
    TRAP_PKEY,
    TRAP_HL,
    TRAP_QP,
    TRAP_QKEY,
];

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

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
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
    pub trap_gid: [u8; 16],
    pub trap_tc: u8,
    pub trap_sl: u8,
    pub trap_fl: u32,
    pub trap_lid: u16,
    pub trap_pkey: u16,
    pub trap_hl: u8,
    pub trap_qp: u32,
    pub trap_qkey: u32,
}

impl ClassPortInfo {
    pub fn decode(d: &[u8; DATA_SIZE]) -> Self {
        ClassPortInfo {
            base_version: BASE_VERSION.get(d) as u8,
            class_version: CLASS_VERSION.get(d) as u8,
            capability_mask: CAPABILITY_MASK.get(d) as u16,
            capability_mask2: CAPABILITY_MASK2.get(d) as u32,
            resp_time_value: RESP_TIME_VALUE.get(d) as u8,
            redirect_gid: get_bytes(d, REDIRECT_GID_OFFSET),
            redirect_tc: REDIRECT_TC.get(d) as u8,
            redirect_sl: REDIRECT_SL.get(d) as u8,
            redirect_fl: REDIRECT_FL.get(d) as u32,
            redirect_lid: REDIRECT_LID.get(d) as u16,
            redirect_pkey: REDIRECT_PKEY.get(d) as u16,
            redirect_qp: REDIRECT_QP.get(d) as u32,
            redirect_qkey: REDIRECT_QKEY.get(d) as u32,
            trap_gid: get_bytes(d, TRAP_GID_OFFSET),
            trap_tc: TRAP_TC.get(d) as u8,
            trap_sl: TRAP_SL.get(d) as u8,
            trap_fl: TRAP_FL.get(d) as u32,
            trap_lid: TRAP_LID.get(d) as u16,
            trap_pkey: TRAP_PKEY.get(d) as u16,
            trap_hl: TRAP_HL.get(d) as u8,
            trap_qp: TRAP_QP.get(d) as u32,
            trap_qkey: TRAP_QKEY.get(d) as u32,
        }
    }

    /// Writes every field (values wider than their field are truncated).
    pub fn encode(&self, d: &mut [u8; DATA_SIZE]) {
        BASE_VERSION.set(d, self.base_version.into());
        CLASS_VERSION.set(d, self.class_version.into());
        CAPABILITY_MASK.set(d, self.capability_mask.into());
        CAPABILITY_MASK2.set(d, self.capability_mask2.into());
        RESP_TIME_VALUE.set(d, self.resp_time_value.into());
        set_bytes(d, REDIRECT_GID_OFFSET, &self.redirect_gid);
        REDIRECT_TC.set(d, self.redirect_tc.into());
        REDIRECT_SL.set(d, self.redirect_sl.into());
        REDIRECT_FL.set(d, self.redirect_fl.into());
        REDIRECT_LID.set(d, self.redirect_lid.into());
        REDIRECT_PKEY.set(d, self.redirect_pkey.into());
        REDIRECT_QP.set(d, self.redirect_qp.into());
        REDIRECT_QKEY.set(d, self.redirect_qkey.into());
        set_bytes(d, TRAP_GID_OFFSET, &self.trap_gid);
        TRAP_TC.set(d, self.trap_tc.into());
        TRAP_SL.set(d, self.trap_sl.into());
        TRAP_FL.set(d, self.trap_fl.into());
        TRAP_LID.set(d, self.trap_lid.into());
        TRAP_PKEY.set(d, self.trap_pkey.into());
        TRAP_HL.set(d, self.trap_hl.into());
        TRAP_QP.set(d, self.trap_qp.into());
        TRAP_QKEY.set(d, self.trap_qkey.into());
    }

    pub fn has(&self, cap: u16) -> bool {
        self.capability_mask & cap != 0
    }
}
