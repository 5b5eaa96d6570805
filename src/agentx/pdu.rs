//! Sans-IO AgentX codec (RFC 2741 sections 5 and 6): pure functions from
//! PDUs to bytes and back, plus a [`Framer`] that cuts a byte stream into
//! complete PDUs. Nothing here performs I/O or panics on malformed input.
//!
//! # What a received PDU that cannot be used gets
//! RFC 2741 section 7.2.2 (subagent processing) and 6.2.16 (res.error):
//!
//! | received                                              | answer |
//! |-------------------------------------------------------|--------|
//! | header does not parse (h.version != 1): stream out of sync | no Response is possible; the session sends Close(reasonParseError) and reconnects |
//! | header parses, payload_length > the maximum PDU size  | Response parseError with the header's IDs; payload skipped ([`FrameError::Oversized`]) |
//! | header parses, payload malformed / truncated / trailing bytes | Response parseError ([`DecodeError::header`] carries the IDs) |
//! | header parses, h.type unknown (0, 19..255)            | Response parseError |
//! | well-formed PDU that only a subagent sends (Open, Register, Unregister, Notify, Ping, IndexAllocate, IndexDeallocate, AddAgentCaps, RemoveAgentCaps) | Response processingError |
//! | Response                                              | matched against the subagent's own outstanding requests, never answered |
//! | CleanupSet                                            | processed, never answered (RFC 2741 7.2.4.3) |
//! | Close                                                 | the session ends; the subagent reconnects |
//!
//! Every answer uses the received h.sessionID, h.transactionID and
//! h.packetID, in the received PDU's byte order.

use std::fmt;

use crate::mib::bulk::Range;
use crate::mib::{ErrorStatus, Oid, Value, VarBind};

/// Size of the fixed AgentX header.
pub const HEADER_LEN: usize = 20;
/// Default maximum PDU size (header + payload) a [`Framer`] accepts.
pub const DEFAULT_MAX_PDU: usize = 1 << 20;
/// RFC 2741 5.1: an OID has at most 128 sub-identifiers.
pub const MAX_SUBIDS: usize = 128;

/// Header flag bits (RFC 2741 6.1).
pub mod flags {
    pub const INSTANCE_REGISTRATION: u8 = 0x01;
    pub const NEW_INDEX: u8 = 0x02;
    pub const ANY_INDEX: u8 = 0x04;
    pub const NON_DEFAULT_CONTEXT: u8 = 0x08;
    pub const NETWORK_BYTE_ORDER: u8 = 0x10;
}

/// Byte order of every multi-byte integer in a PDU, chosen by the
/// NETWORK_BYTE_ORDER flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Network byte order (flag set).
    Big,
    /// Least significant byte first (flag clear).
    Little,
}

impl ByteOrder {
    pub fn from_flags(f: u8) -> ByteOrder {
        if f & flags::NETWORK_BYTE_ORDER != 0 {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        }
    }
}

/// The integers AgentX carries, each to and from its bytes in a
/// [`ByteOrder`].
macro_rules! in_order {
    ($($to:ident, $from:ident: $t:ty;)*) => {
        impl ByteOrder {
            $(
                fn $to(self, v: $t) -> [u8; size_of::<$t>()] {
                    match self {
                        ByteOrder::Big => v.to_be_bytes(),
                        ByteOrder::Little => v.to_le_bytes(),
                    }
                }
                fn $from(self, b: [u8; size_of::<$t>()]) -> $t {
                    match self {
                        ByteOrder::Big => <$t>::from_be_bytes(b),
                        ByteOrder::Little => <$t>::from_le_bytes(b),
                    }
                }
            )*
        }
    };
}

in_order! {
    u16_bytes, u16_from: u16;
    u32_bytes, u32_from: u32;
    u64_bytes, u64_from: u64;
}

wire_enum! {
    /// PDU types (RFC 2741 6.1, h.type), each with whether it carries the
    /// optional context after the header.
    pub enum PduType: u8, from_u8,
        /// True for the PDU types in which a non-default context may be
        /// present, flagged NON_DEFAULT_CONTEXT (RFC 2741 6.1, h.flags).
        has_context: bool {
        Open = 1, false,
        Close = 2, false,
        Register = 3, true,
        Unregister = 4, true,
        Get = 5, true,
        GetNext = 6, true,
        GetBulk = 7, true,
        TestSet = 8, true,
        CommitSet = 9, false,
        UndoSet = 10, false,
        CleanupSet = 11, false,
        Notify = 12, true,
        Ping = 13, true,
        IndexAllocate = 14, true,
        IndexDeallocate = 15, true,
        AddAgentCaps = 16, true,
        RemoveAgentCaps = 17, true,
        Response = 18, false,
    }
}

/// The fixed 20-byte header as received.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    pub version: u8,
    /// Raw h.type (may be unknown).
    pub pdu_type: u8,
    pub flags: u8,
    pub session_id: u32,
    pub transaction_id: u32,
    pub packet_id: u32,
    pub payload_length: u32,
}

impl Header {
    pub fn byte_order(&self) -> ByteOrder {
        ByteOrder::from_flags(self.flags)
    }

    /// Parses the first 20 bytes. Fails when fewer bytes are given or
    /// h.version is not 1 (then nothing else in the header can be trusted).
    pub fn parse(b: &[u8]) -> Result<Header, DecodeError> {
        if b.len() < HEADER_LEN {
            return Err(DecodeError::new(
                DecodeErrorKind::Truncated {
                    what: "header",
                    need: HEADER_LEN,
                    have: b.len(),
                },
                None,
            ));
        }
        if b[0] != 1 {
            return Err(DecodeError::new(DecodeErrorKind::BadVersion(b[0]), None));
        }
        let order = ByteOrder::from_flags(b[2]);
        let u = |i: usize| order.u32_from([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        Ok(Header {
            version: b[0],
            pdu_type: b[1],
            flags: b[2],
            session_id: u(4),
            transaction_id: u(8),
            packet_id: u(12),
            payload_length: u(16),
        })
    }
}

wire_enum! {
    /// AgentX-specific res.error values, named as RFC 2741 6.2.16 names them.
    pub enum AgentxError: u16, from_u16 {
        OpenFailed = 256 => "openFailed",
        NotOpen = 257 => "notOpen",
        IndexWrongType = 258 => "indexWrongType",
        IndexAlreadyAllocated = 259 => "indexAlreadyAllocated",
        IndexNoneAvailable = 260 => "indexNoneAvailable",
        IndexNotAllocated = 261 => "indexNotAllocated",
        UnsupportedContext = 262 => "unsupportedContext",
        DuplicateRegistration = 263 => "duplicateRegistration",
        UnknownRegistration = 264 => "unknownRegistration",
        UnknownAgentCaps = 265 => "unknownAgentCaps",
        ParseError = 266 => "parseError",
        RequestDenied = 267 => "requestDenied",
        ProcessingError = 268 => "processingError",
    }
}

/// A Response's res.error: an SNMP error status (0..18, passed through to
/// the manager), an AgentX error (256..268), or a value neither defines.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResError {
    Snmp(ErrorStatus),
    Agentx(AgentxError),
    Other(u16),
}

impl ResError {
    pub const NO_ERROR: ResError = ResError::Snmp(ErrorStatus::NoError);

    pub fn from_u16(v: u16) -> ResError {
        if let Some(s) = ErrorStatus::from_u16(v) {
            ResError::Snmp(s)
        } else if let Some(a) = AgentxError::from_u16(v) {
            ResError::Agentx(a)
        } else {
            ResError::Other(v)
        }
    }

    pub fn to_u16(self) -> u16 {
        match self {
            ResError::Snmp(s) => s as u16,
            ResError::Agentx(a) => a as u16,
            ResError::Other(v) => v,
        }
    }

    pub fn is_ok(self) -> bool {
        self == ResError::NO_ERROR
    }
}

impl fmt::Display for ResError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResError::Snmp(s) => write!(f, "{} ({})", s.name(), *s as u16),
            ResError::Agentx(a) => write!(f, "{} ({})", a.name(), *a as u16),
            ResError::Other(v) => write!(f, "unknown error {v}"),
        }
    }
}

/// Close reasons (RFC 2741 6.2.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CloseReason {
    Other,
    ParseError,
    ProtocolError,
    Timeouts,
    Shutdown,
    ByManager,
    Unknown(u8),
}

impl CloseReason {
    pub fn from_u8(v: u8) -> CloseReason {
        match v {
            1 => CloseReason::Other,
            2 => CloseReason::ParseError,
            3 => CloseReason::ProtocolError,
            4 => CloseReason::Timeouts,
            5 => CloseReason::Shutdown,
            6 => CloseReason::ByManager,
            v => CloseReason::Unknown(v),
        }
    }
    pub fn to_u8(self) -> u8 {
        match self {
            CloseReason::Other => 1,
            CloseReason::ParseError => 2,
            CloseReason::ProtocolError => 3,
            CloseReason::Timeouts => 4,
            CloseReason::Shutdown => 5,
            CloseReason::ByManager => 6,
            CloseReason::Unknown(v) => v,
        }
    }
}

/// A SearchRange (RFC 2741 5.2). An empty `end` is the null OID: no bound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SearchRange {
    pub start: Oid,
    pub include: bool,
    pub end: Oid,
}

impl SearchRange {
    /// The end bound, `None` for the null OID.
    pub fn end_bound(&self) -> Option<&Oid> {
        if self.end.is_empty() {
            None
        } else {
            Some(&self.end)
        }
    }
}

impl From<SearchRange> for Range {
    fn from(r: SearchRange) -> Range {
        Range {
            start: r.start,
            include: r.include,
            end: (!r.end.is_empty()).then_some(r.end),
        }
    }
}

/// The MIB region a Register names and an Unregister withdraws (RFC 2741
/// 6.2.3, 6.2.4): `subtree`, or with `range_subid` (1-based) the
/// sub-identifier that ranges from the subtree's value to `upper_bound`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Region {
    pub priority: u8,
    pub range_subid: u8,
    pub subtree: Oid,
    pub upper_bound: Option<u32>,
}

impl Region {
    /// The whole of `subtree`.
    pub fn subtree(subtree: Oid, priority: u8) -> Region {
        Region {
            priority,
            range_subid: 0,
            subtree,
            upper_bound: None,
        }
    }
}

/// PDU-specific content (RFC 2741 6.2), after the context of the types
/// that carry one ([`Pdu::context`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Payload {
    Open {
        timeout: u8,
        id: Oid,
        description: Vec<u8>,
    },
    Close {
        reason: CloseReason,
    },
    /// `timeout`: seconds the master waits for this region's answers (0:
    /// the session's).
    Register {
        timeout: u8,
        region: Region,
    },
    Unregister(Region),
    Get {
        ranges: Vec<SearchRange>,
    },
    GetNext {
        ranges: Vec<SearchRange>,
    },
    GetBulk {
        non_repeaters: u16,
        max_repetitions: u16,
        ranges: Vec<SearchRange>,
    },
    TestSet {
        varbinds: Vec<VarBind>,
    },
    CommitSet,
    UndoSet,
    CleanupSet,
    Notify {
        varbinds: Vec<VarBind>,
    },
    Ping,
    IndexAllocate {
        varbinds: Vec<VarBind>,
    },
    IndexDeallocate {
        varbinds: Vec<VarBind>,
    },
    AddAgentCaps {
        id: Oid,
        description: Vec<u8>,
    },
    RemoveAgentCaps {
        id: Oid,
    },
    Response {
        /// sysUpTime in hundredths of a second, as carried (u32, wraps).
        sys_uptime: u32,
        error: ResError,
        index: u16,
        varbinds: Vec<VarBind>,
    },
}

impl Payload {
    pub fn pdu_type(&self) -> PduType {
        match self {
            Payload::Open { .. } => PduType::Open,
            Payload::Close { .. } => PduType::Close,
            Payload::Register { .. } => PduType::Register,
            Payload::Unregister(_) => PduType::Unregister,
            Payload::Get { .. } => PduType::Get,
            Payload::GetNext { .. } => PduType::GetNext,
            Payload::GetBulk { .. } => PduType::GetBulk,
            Payload::TestSet { .. } => PduType::TestSet,
            Payload::CommitSet => PduType::CommitSet,
            Payload::UndoSet => PduType::UndoSet,
            Payload::CleanupSet => PduType::CleanupSet,
            Payload::Notify { .. } => PduType::Notify,
            Payload::Ping => PduType::Ping,
            Payload::IndexAllocate { .. } => PduType::IndexAllocate,
            Payload::IndexDeallocate { .. } => PduType::IndexDeallocate,
            Payload::AddAgentCaps { .. } => PduType::AddAgentCaps,
            Payload::RemoveAgentCaps { .. } => PduType::RemoveAgentCaps,
            Payload::Response { .. } => PduType::Response,
        }
    }
}

/// One AgentX PDU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pdu {
    /// Header flags. On encoding NETWORK_BYTE_ORDER and NON_DEFAULT_CONTEXT
    /// are derived from the requested byte order and the payload's context;
    /// the other bits (INSTANCE_REGISTRATION, NEW_INDEX, ANY_INDEX) are taken
    /// from here. On decoding this is the received h.flags.
    pub flags: u8,
    pub session_id: u32,
    pub transaction_id: u32,
    pub packet_id: u32,
    /// The non-default context (RFC 2741 6.1.1), for the types that carry
    /// one ([`PduType::has_context`]): the payload's first field, and the
    /// NON_DEFAULT_CONTEXT flag set on encoding.
    pub context: Option<Vec<u8>>,
    pub payload: Payload,
}

impl Pdu {
    pub fn new(session_id: u32, transaction_id: u32, packet_id: u32, payload: Payload) -> Pdu {
        Pdu {
            flags: 0,
            session_id,
            transaction_id,
            packet_id,
            context: None,
            payload,
        }
    }

    /// Byte order of a decoded PDU.
    pub fn byte_order(&self) -> ByteOrder {
        ByteOrder::from_flags(self.flags)
    }

    /// A Response to the request with `header`, same IDs.
    pub fn response_to(
        header: &Header,
        error: ResError,
        index: u16,
        varbinds: Vec<VarBind>,
    ) -> Pdu {
        Pdu::new(
            header.session_id,
            header.transaction_id,
            header.packet_id,
            Payload::Response {
                sys_uptime: 0,
                error,
                index,
                varbinds,
            },
        )
    }
}

// ---------------------------------------------------------------- errors

/// What was wrong with received bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DecodeErrorKind {
    Truncated {
        what: &'static str,
        need: usize,
        have: usize,
    },
    BadVersion(u8),
    UnknownType(u8),
    /// h.payload_length does not match the bytes given.
    LengthMismatch {
        payload_length: u32,
        available: usize,
    },
    TrailingBytes(usize),
    TooManySubids(u8),
    UnknownValueType(u16),
    BadIpAddressLength(u32),
    /// A field holds a value the PDU type does not allow.
    Invalid(&'static str),
}

/// A decoding failure. `header` is present when the header itself parsed,
/// so a Response with parseError can be addressed to the sender.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    pub kind: DecodeErrorKind,
    pub header: Option<Header>,
}

impl DecodeError {
    fn new(kind: DecodeErrorKind, header: Option<Header>) -> Self {
        DecodeError { kind, header }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DecodeErrorKind::Truncated { what, need, have } => {
                write!(f, "truncated {what}: need {need} bytes, have {have}")?
            }
            DecodeErrorKind::BadVersion(v) => write!(f, "h.version is {v}, not 1")?,
            DecodeErrorKind::UnknownType(t) => write!(f, "unknown PDU type {t}")?,
            DecodeErrorKind::LengthMismatch {
                payload_length,
                available,
            } => write!(
                f,
                "h.payload_length {payload_length} but {available} payload bytes given"
            )?,
            DecodeErrorKind::TrailingBytes(n) => {
                write!(f, "{n} bytes left over after the PDU's fields")?
            }
            DecodeErrorKind::TooManySubids(n) => {
                write!(f, "OID with {n} sub-identifiers (max {MAX_SUBIDS})")?
            }
            DecodeErrorKind::UnknownValueType(t) => write!(f, "unknown varbind type {t}")?,
            DecodeErrorKind::BadIpAddressLength(n) => {
                write!(f, "IpAddress of {n} bytes (must be 4)")?
            }
            DecodeErrorKind::Invalid(what) => write!(f, "invalid {what}")?,
        }
        if let Some(h) = &self.header {
            write!(
                f,
                " (PDU type {} session {} transaction {} packet {})",
                h.pdu_type, h.session_id, h.transaction_id, h.packet_id
            )?;
        }
        Ok(())
    }
}

impl std::error::Error for DecodeError {}

/// Why a PDU could not be encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EncodeError {
    OidTooLong(usize),
    StringTooLong(usize),
    /// A value the PDU cannot carry (e.g. an OID as search-range end with include).
    Invalid(&'static str),
}

impl fmt::Display for EncodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EncodeError::OidTooLong(n) => {
                write!(f, "OID with {n} sub-identifiers (max {MAX_SUBIDS})")
            }
            EncodeError::StringTooLong(n) => write!(f, "octet string of {n} bytes is too long"),
            EncodeError::Invalid(w) => write!(f, "cannot encode {w}"),
        }
    }
}

impl std::error::Error for EncodeError {}

// ---------------------------------------------------------------- the codec

mod decode;
mod encode;

pub use decode::decode;
pub use encode::{encode, value_type, varbind_len};

// ---------------------------------------------------------------- framing

/// A framing failure.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FrameError {
    /// The header parsed but the PDU is larger than the maximum. Its payload
    /// is skipped as it arrives, so the stream stays in sync; the session
    /// answers parseError using `header`.
    Oversized { header: Header, max: usize },
    /// The header does not parse (h.version != 1): the byte stream is out of
    /// sync and nothing more can be read from it. The framer stays in this
    /// state until [`Framer::reset`].
    Desync(DecodeError),
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrameError::Oversized { header, max } => write!(
                f,
                "PDU of {} bytes exceeds the maximum of {max} (type {} packet {})",
                header.payload_length as u64 + HEADER_LEN as u64,
                header.pdu_type,
                header.packet_id
            ),
            FrameError::Desync(e) => write!(f, "AgentX stream out of sync: {e}"),
        }
    }
}

impl std::error::Error for FrameError {}

/// Cuts a byte stream into complete PDUs by h.payload_length. Accepts
/// arbitrary chunks (partial reads, several PDUs per read).
#[derive(Debug)]
pub struct Framer {
    buf: Vec<u8>,
    max_pdu: usize,
    skip: u64,
    desync: Option<DecodeError>,
}

impl Framer {
    /// `max_pdu` is the largest PDU (header + payload) accepted.
    pub fn new(max_pdu: usize) -> Framer {
        Framer {
            buf: Vec::new(),
            max_pdu: max_pdu.max(HEADER_LEN),
            skip: 0,
            desync: None,
        }
    }

    /// Appends received bytes.
    pub fn push(&mut self, mut data: &[u8]) {
        if self.desync.is_some() {
            return;
        }
        if self.skip > 0 {
            let n = (self.skip.min(data.len() as u64)) as usize;
            self.skip -= n as u64;
            data = &data[n..];
        }
        self.buf.extend_from_slice(data);
    }

    /// Bytes held that do not yet form a complete PDU.
    pub fn buffered(&self) -> usize {
        self.buf.len()
    }

    /// Forgets everything (after a reconnect).
    pub fn reset(&mut self) {
        self.buf.clear();
        self.skip = 0;
        self.desync = None;
    }

    /// The next complete PDU's bytes, an error, or `None` when more bytes
    /// are needed.
    pub fn next_frame(&mut self) -> Option<Result<Vec<u8>, FrameError>> {
        if let Some(e) = &self.desync {
            return Some(Err(FrameError::Desync(e.clone())));
        }
        if self.buf.len() < HEADER_LEN {
            return None;
        }
        let header = match Header::parse(&self.buf) {
            Ok(h) => h,
            Err(e) => {
                self.buf.clear();
                self.desync = Some(e.clone());
                return Some(Err(FrameError::Desync(e)));
            }
        };
        let total = HEADER_LEN as u64 + header.payload_length as u64;
        if total > self.max_pdu as u64 {
            let held = self.buf.len() as u64;
            if held >= total {
                self.buf.drain(..total as usize);
            } else {
                self.skip = total - held;
                self.buf.clear();
            }
            return Some(Err(FrameError::Oversized {
                header,
                max: self.max_pdu,
            }));
        }
        let total = total as usize;
        if self.buf.len() < total {
            return None;
        }
        let frame: Vec<u8> = self.buf.drain(..total).collect();
        Some(Ok(frame))
    }
}

#[cfg(test)]
mod tests;
