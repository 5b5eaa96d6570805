//! The 256-byte Performance Management MAD: common header and data area.

use std::fmt;

use super::layout::{get_bits, set_bits};

/// Size of every MAD.
pub const MAD_SIZE: usize = 256;
/// Length of the common MAD header.
pub const HEADER_LEN: usize = 24;
/// Byte offset of the PM data area (bytes 24..64 are reserved for PerfMgt).
pub const DATA_OFFSET: usize = 64;
/// Size of the PM data area.
pub const DATA_SIZE: usize = 192;

pub const BASE_VERSION: u8 = 1;
/// Management class of Performance Management.
pub const MGMT_CLASS_PERF: u8 = 0x04;
pub const CLASS_VERSION: u8 = 1;

/// Methods of the PerfMgt class.
pub mod method {
    pub const GET: u8 = 0x01;
    pub const SET: u8 = 0x02;
    pub const GET_RESP: u8 = 0x81;
    pub const TRAP: u8 = 0x05;
    pub const TRAP_REPRESS: u8 = 0x07;
    /// Set in every response method.
    pub const RESPONSE_BIT: u8 = 0x80;
}

/// Attribute IDs of the PerfMgt class.
pub mod attr {
    pub const CLASS_PORT_INFO: u16 = 0x0001;
    pub const PORT_SAMPLES_CONTROL: u16 = 0x0010;
    pub const PORT_SAMPLES_RESULT: u16 = 0x0011;
    pub const PORT_COUNTERS: u16 = 0x0012;
    pub const PORT_RCV_ERROR_DETAILS: u16 = 0x0015;
    pub const PORT_XMIT_DISCARD_DETAILS: u16 = 0x0016;
    pub const PORT_OP_RCV_COUNTERS: u16 = 0x0017;
    pub const PORT_FLOW_CTL_COUNTERS: u16 = 0x0018;
    pub const PORT_VL_OP_PACKETS: u16 = 0x0019;
    pub const PORT_VL_OP_DATA: u16 = 0x001A;
    pub const PORT_VL_XMIT_FLOW_CTL_UPDATE_ERRORS: u16 = 0x001B;
    pub const PORT_VL_XMIT_WAIT_COUNTERS: u16 = 0x001C;
    pub const PORT_COUNTERS_EXTENDED: u16 = 0x001D;
    pub const PORT_SAMPLES_RESULT_EXTENDED: u16 = 0x001E;
    pub const PORT_EXTENDED_SPEEDS_COUNTERS: u16 = 0x001F;
    pub const SW_PORT_VL_CONGESTION: u16 = 0x0030;
    pub const PORT_RCV_CON_CTRL: u16 = 0x0031;
    pub const PORT_SL_RCV_FECN: u16 = 0x0032;
    pub const PORT_SL_RCV_BECN: u16 = 0x0033;
    pub const PORT_XMIT_CON_CTRL: u16 = 0x0034;
    pub const PORT_VL_XMIT_TIME_CONG: u16 = 0x0035;
    pub const PORT_XMIT_DATA_SL: u16 = 0x0036;
    pub const PORT_RCV_DATA_SL: u16 = 0x0037;
}

/// MAD status field values (big-endian u16 at byte 4).
pub mod status {
    pub const OK: u16 = 0x0000;
    /// Busy: the request was discarded, retry later.
    pub const BUSY: u16 = 0x0001;
    /// Redirect required (ClassPortInfo reply names where to go).
    pub const REDIRECT: u16 = 0x0002;
    /// Invalid field code 1: bad BaseVersion or ClassVersion.
    pub const BAD_VERSION: u16 = 0x0004;
    /// Invalid field code 2: method not supported.
    pub const METHOD_UNSUPPORTED: u16 = 0x0008;
    /// Invalid field code 3: method/attribute combination not supported.
    pub const METHOD_ATTR_UNSUPPORTED: u16 = 0x000C;
    /// Invalid field code 7: an attribute or attribute modifier field holds an
    /// invalid value (e.g. a PortSelect the agent does not serve).
    pub const INVALID_FIELD: u16 = 0x001C;
    /// Mask of the 3-bit invalid-field code (bits 2..4).
    pub const INVALID_FIELD_MASK: u16 = 0x001C;
}

/// The common MAD header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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

impl MadHeader {
    /// A PerfMgt request header.
    pub fn request(method: u8, attr_id: u16, attr_mod: u32, tid: u64) -> MadHeader {
        MadHeader {
            base_version: BASE_VERSION,
            mgmt_class: MGMT_CLASS_PERF,
            class_version: CLASS_VERSION,
            method,
            status: status::OK,
            class_specific: 0,
            tid,
            attr_id,
            attr_mod,
        }
    }

    /// Writes the header into the first 24 bytes of `mad` (the 4 reserved
    /// bytes 18..20 are zeroed).
    pub fn encode(&self, mad: &mut [u8; MAD_SIZE]) {
        mad[0] = self.base_version;
        mad[1] = self.mgmt_class;
        mad[2] = self.class_version;
        mad[3] = self.method;
        mad[4..6].copy_from_slice(&self.status.to_be_bytes());
        mad[6..8].copy_from_slice(&self.class_specific.to_be_bytes());
        mad[8..16].copy_from_slice(&self.tid.to_be_bytes());
        mad[16..18].copy_from_slice(&self.attr_id.to_be_bytes());
        mad[18..20].fill(0);
        mad[20..24].copy_from_slice(&self.attr_mod.to_be_bytes());
    }

    /// Decodes the header from the first 24 bytes.
    pub fn decode(mad: &[u8; MAD_SIZE]) -> MadHeader {
        let be16 = |o: usize| get_bits(mad, o * 8, 16) as u16;
        MadHeader {
            base_version: mad[0],
            mgmt_class: mad[1],
            class_version: mad[2],
            method: mad[3],
            status: be16(4),
            class_specific: be16(6),
            tid: get_bits(mad, 64, 64),
            attr_id: be16(16),
            attr_mod: get_bits(mad, 160, 32) as u32,
        }
    }

    pub fn is_response(&self) -> bool {
        self.method & method::RESPONSE_BIT != 0
    }

    /// Checks that this is a PerfMgt MAD of a version this crate speaks.
    pub fn check_pm(&self) -> Result<(), MadError> {
        if self.mgmt_class != MGMT_CLASS_PERF {
            return Err(MadError::NotPerfMgt(self.mgmt_class));
        }
        if self.base_version != BASE_VERSION || self.class_version != CLASS_VERSION {
            return Err(MadError::BadVersion {
                base: self.base_version,
                class: self.class_version,
            });
        }
        Ok(())
    }
}

/// Why a buffer is not a usable PM MAD.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MadError {
    /// Fewer than 256 bytes.
    TooShort(usize),
    NotPerfMgt(u8),
    BadVersion {
        base: u8,
        class: u8,
    },
}

impl fmt::Display for MadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MadError::TooShort(n) => write!(f, "MAD too short: {n} bytes, need {MAD_SIZE}"),
            MadError::NotPerfMgt(c) => {
                write!(f, "not a PerfMgt MAD: management class 0x{c:02x}")
            }
            MadError::BadVersion { base, class } => write!(
                f,
                "unsupported MAD version: base {base}, class {class} (expected 1, 1)"
            ),
        }
    }
}

impl std::error::Error for MadError {}

/// Builds a PerfMgt request MAD.
pub fn request(
    method: u8,
    attr_id: u16,
    attr_mod: u32,
    tid: u64,
    data: &[u8; DATA_SIZE],
) -> [u8; MAD_SIZE] {
    build(&MadHeader::request(method, attr_id, attr_mod, tid), data)
}

/// Builds a MAD from a header and a data area.
pub fn build(hdr: &MadHeader, data: &[u8; DATA_SIZE]) -> [u8; MAD_SIZE] {
    let mut mad = [0u8; MAD_SIZE];
    hdr.encode(&mut mad);
    mad[DATA_OFFSET..].copy_from_slice(data);
    mad
}

/// Builds the GetResp for `req` with `status` and `data`.
pub fn response(req: &MadHeader, status: u16, data: &[u8; DATA_SIZE]) -> [u8; MAD_SIZE] {
    let hdr = MadHeader {
        method: method::GET_RESP,
        status,
        ..*req
    };
    build(&hdr, data)
}

/// Splits a MAD into its header and data area. Only the length is checked
/// here; use [`MadHeader::check_pm`] for class and version.
pub fn parse(buf: &[u8]) -> Result<(MadHeader, &[u8; DATA_SIZE]), MadError> {
    let mad: &[u8; MAD_SIZE] = buf
        .get(..MAD_SIZE)
        .and_then(|s| s.try_into().ok())
        .ok_or(MadError::TooShort(buf.len()))?;
    let data: &[u8; DATA_SIZE] = mad[DATA_OFFSET..]
        .try_into()
        .map_err(|_| MadError::TooShort(buf.len()))?;
    Ok((MadHeader::decode(mad), data))
}

/// Writes `value` into a 16-bit big-endian header slot (helper for tests and
/// transports that patch TIDs or status).
pub fn set_status(mad: &mut [u8; MAD_SIZE], value: u16) {
    set_bits(mad, 32, 16, u64::from(value));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip_and_positions() {
        let mut data = [0u8; DATA_SIZE];
        data[0] = 0xAA;
        data[191] = 0x55;
        let mad = request(
            method::SET,
            attr::PORT_COUNTERS,
            0x0102_0304,
            0x1122_3344_5566_7788,
            &data,
        );
        assert_eq!(&mad[..4], &[1, 4, 1, 2]);
        assert_eq!(
            &mad[8..16],
            &[0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88]
        );
        assert_eq!(&mad[16..18], &[0x00, 0x12]);
        assert_eq!(&mad[20..24], &[1, 2, 3, 4]);
        assert_eq!(mad[64], 0xAA);
        assert_eq!(mad[255], 0x55);
        assert!(mad[24..64].iter().all(|b| *b == 0));
        let (h, d) = parse(&mad).unwrap();
        assert_eq!(
            h,
            MadHeader::request(method::SET, 0x12, 0x0102_0304, 0x1122_3344_5566_7788)
        );
        assert_eq!(d, &data);
        assert!(h.check_pm().is_ok());
        assert!(!h.is_response());

        let resp = response(&h, status::INVALID_FIELD, &data);
        let (rh, _) = parse(&resp).unwrap();
        assert!(rh.is_response());
        assert_eq!(rh.status, 0x001C);
        assert_eq!(&resp[4..6], &[0x00, 0x1C]);
        assert_eq!(rh.tid, h.tid);
    }

    #[test]
    fn parse_rejects_short_and_checks_class() {
        assert_eq!(parse(&[0u8; 255]).unwrap_err(), MadError::TooShort(255));
        let mut mad = [0u8; MAD_SIZE];
        mad[0] = 1;
        mad[1] = 0x81;
        mad[2] = 1;
        let (h, _) = parse(&mad).unwrap();
        assert_eq!(h.check_pm(), Err(MadError::NotPerfMgt(0x81)));
        mad[1] = 4;
        mad[2] = 2;
        let (h, _) = parse(&mad).unwrap();
        assert!(matches!(h.check_pm(), Err(MadError::BadVersion { .. })));
    }
}
