//! The request processor: one received datagram in, at most one datagram out.
//! Pure (no I/O), so it is unit-tested and fuzzed directly.

use std::sync::atomic::{AtomicU32, Ordering};

use rasn_snmp::v2::{self, BulkPdu, Pdu, Pdus, VarBindValue};
use rasn_snmp::v2c::Message;
use tracing::{debug, warn};

use super::codec::{self, Envelope};
use crate::mib::{ErrorStatus, MibHandler, Oid, SetError, SetTxn, Value, VarBind};

/// Largest UDP payload over IPv4 (65535 - 8 UDP - 20 IP header octets).
pub const MAX_UDP_PAYLOAD: usize = 65507;

/// The AgentX-style session id the responder uses in every `SetTxn`, so a
/// handler can tell its SETs apart from those an AgentX master sends.
pub const RESPONDER_SESSION_ID: u32 = u32::MAX;

/// What the processor needs to know besides the packet and the MIB.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Community that may read (Get, GetNext, GetBulk).
    pub community: String,
    /// Community that may also write (Set). `None`: nothing is writable and a
    /// Set with the read community is answered `noAccess` (v1: `noSuchName`),
    /// as snmpd answers a Set through a read-only community.
    pub write_community: Option<String>,
    /// Upper bound on a response message, in octets (the whole SNMP message,
    /// as it goes into one UDP datagram). SNMPv1/v2c requests carry no size
    /// of their own, so this is the only limit; at most `MAX_UDP_PAYLOAD`.
    pub max_message_size: usize,
}

impl ResponderConfig {
    pub fn new(community: impl Into<String>) -> Self {
        ResponderConfig {
            community: community.into(),
            write_community: None,
            max_message_size: MAX_UDP_PAYLOAD,
        }
    }
}

/// What became of one datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send these octets back to the sender.
    Reply(Vec<u8>),
    /// Neither the read nor the write community: dropped (snmpInBadCommunityNames).
    BadCommunity,
    /// Not a decodable SNMPv1/v2c message (snmpInASNParseErrs); the reason.
    Malformed(String),
    /// A well-formed message this agent does not answer (a Response, Trap,
    /// Report or InformRequest PDU; GetBulk in an SNMPv1 message; an unknown
    /// version).
    Ignored(&'static str),
    /// Even the smallest error response exceeds the size limit (snmpSilentDrops).
    TooBig,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Version {
    V1,
    V2c,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Read,
    Write,
}

/// A response before encoding.
struct Answer {
    status: ErrorStatus,
    /// 1-based; 0 when no varbind is at fault.
    index: u32,
    varbinds: Vec<v2::VarBind>,
}

impl Answer {
    fn ok(varbinds: Vec<v2::VarBind>) -> Self {
        Answer {
            status: ErrorStatus::NoError,
            index: 0,
            varbinds,
        }
    }
    /// An error answer echoing the request's varbinds, as RFC 3416 (and
    /// RFC 1157 for v1) prescribe for every error but v2c tooBig.
    fn error(status: ErrorStatus, index: usize, request: &[v2::VarBind]) -> Self {
        Answer {
            status,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            varbinds: request.to_vec(),
        }
    }
}

static NEXT_TXN: AtomicU32 = AtomicU32::new(1);

/// Answers one datagram: `Some(response)` or `None` when nothing is to be
/// sent (wrong community, malformed, not a request, too big even for an
/// error response). Read-only: a Set is answered `noAccess` (v1: `noSuchName`).
pub fn handle_packet(bytes: &[u8], community: &str, handler: &dyn MibHandler) -> Option<Vec<u8>> {
    match process(bytes, &ResponderConfig::new(community), handler) {
        Outcome::Reply(r) => Some(r),
        _ => None,
    }
}

/// Answers one datagram under `config`, saying what happened.
pub fn process(bytes: &[u8], config: &ResponderConfig, handler: &dyn MibHandler) -> Outcome {
    let msg: Message<Pdus> = match rasn::ber::decode(bytes) {
        Ok(m) => m,
        Err(e) => {
            debug!(len = bytes.len(), error = %e, "snmp: dropping undecodable packet");
            return Outcome::Malformed(e.to_string());
        }
    };
    let version = match i64::try_from(&msg.version) {
        Ok(0) => Version::V1,
        Ok(1) => Version::V2c,
        _ => return Outcome::Ignored("unsupported SNMP version"),
    };
    let community = &msg.community[..];
    let access = if config
        .write_community
        .as_deref()
        .is_some_and(|w| w.as_bytes() == community)
    {
        Access::Write
    } else if config.community.as_bytes() == community {
        Access::Read
    } else {
        return Outcome::BadCommunity;
    };

    let (request_id, answer, request_vbs) = match &msg.data {
        Pdus::GetRequest(v2::GetRequest(p)) => (p.request_id, get(version, p, handler), p),
        Pdus::GetNextRequest(v2::GetNextRequest(p)) => {
            (p.request_id, get_next(version, p, handler), p)
        }
        Pdus::SetRequest(v2::SetRequest(p)) => (p.request_id, set(version, access, p, handler), p),
        Pdus::GetBulkRequest(v2::GetBulkRequest(b)) => {
            if version == Version::V1 {
                return Outcome::Ignored("GetBulk in an SNMPv1 message");
            }
            return match get_bulk(b, community, config.max_message_size, handler) {
                Some(bytes) => Outcome::Reply(bytes),
                None => Outcome::TooBig,
            };
        }
        Pdus::Response(_) | Pdus::Trap(_) | Pdus::Report(_) | Pdus::InformRequest(_) => {
            return Outcome::Ignored("not a request PDU");
        }
    };
    let version_num: i64 = match version {
        Version::V1 => 0,
        Version::V2c => 1,
    };
    let answer = fit(
        answer,
        version,
        version_num,
        community,
        request_id,
        &request_vbs.variable_bindings,
        config.max_message_size,
    );
    match answer {
        Some(a) => match encode(version_num, community, request_id, a) {
            Some(bytes) => Outcome::Reply(bytes),
            None => Outcome::TooBig,
        },
        None => Outcome::TooBig,
    }
}

/// `answer` if it fits in `max` octets, else the tooBig answer if that fits.
fn fit(
    answer: Answer,
    version: Version,
    version_num: i64,
    community: &[u8],
    request_id: i32,
    request: &[v2::VarBind],
    max: usize,
) -> Option<Answer> {
    let size = |a: &Answer| -> Option<usize> {
        let sum = a
            .varbinds
            .iter()
            .map(codec::varbind_size)
            .sum::<Option<usize>>()?;
        Some(
            Envelope::new(version_num, community, request_id, a.status as u32, a.index)
                .message_size(sum),
        )
    };
    if size(&answer)? <= max {
        return Some(answer);
    }
    let too_big = match version {
        // RFC 3416 4.2.1: tooBig, index 0, empty varbind list.
        Version::V2c => Answer {
            status: ErrorStatus::TooBig,
            index: 0,
            varbinds: Vec::new(),
        },
        // RFC 1157 4.1.2: the request's varbinds, tooBig, index 0.
        Version::V1 => Answer::error(ErrorStatus::TooBig, 0, request),
    };
    (size(&too_big)? <= max).then_some(too_big)
}

fn encode(version_num: i64, community: &[u8], request_id: i32, a: Answer) -> Option<Vec<u8>> {
    let msg = Message {
        version: version_num.into(),
        community: community.to_vec().into(),
        data: Pdus::Response(v2::Response(Pdu {
            request_id,
            error_status: a.status as u32,
            error_index: a.index,
            variable_bindings: a.varbinds,
        })),
    };
    match rasn::ber::encode(&msg) {
        Ok(b) => Some(b),
        Err(e) => {
            warn!(error = %e, "snmp: cannot encode response");
            None
        }
    }
}

/// RFC 3584 4.1.2.3: the v2 error codes an SNMPv1 manager understands.
fn v1_status(s: ErrorStatus) -> ErrorStatus {
    use ErrorStatus::*;
    match s {
        NoError | TooBig | NoSuchName | BadValue | ReadOnly | GenErr => s,
        WrongValue | WrongEncoding | WrongType | WrongLength | InconsistentValue => BadValue,
        NoAccess | NotWritable | NoCreation | InconsistentName | AuthorizationError => NoSuchName,
        ResourceUnavailable | CommitFailed | UndoFailed => GenErr,
    }
}

fn wire_vb(vb: &VarBind) -> Option<v2::VarBind> {
    let w = codec::to_wire_varbind(vb);
    if w.is_none() {
        warn!(name = %vb.name, value = ?vb.value, "snmp: the MIB returned a varbind BER cannot carry");
    }
    w
}

fn get(version: Version, p: &Pdu, handler: &dyn MibHandler) -> Answer {
    let mut out = Vec::with_capacity(p.variable_bindings.len());
    let names: Vec<Oid> = p
        .variable_bindings
        .iter()
        .map(|req| codec::from_wire_oid(&req.name))
        .collect();
    let values = handler.get_many(&names);
    for (i, (name, value)) in names.into_iter().zip(values).enumerate() {
        if version == Version::V1 && (value.is_exception() || matches!(value, Value::Counter64(_)))
        {
            return Answer::error(ErrorStatus::NoSuchName, i + 1, &p.variable_bindings);
        }
        match wire_vb(&VarBind::new(name, value)) {
            Some(vb) => out.push(vb),
            None => return Answer::error(ErrorStatus::GenErr, i + 1, &p.variable_bindings),
        }
    }
    Answer::ok(out)
}

/// The next instance after `start` that this version can carry: exceptions
/// are passed over (an SNMPv1 manager cannot take a Counter64 either, RFC 3584
/// 4.1.2.2.1), and a handler answer that does not move forward ends the view.
fn next_instance(version: Version, start: &Oid, handler: &dyn MibHandler) -> Option<VarBind> {
    let mut cur = start.clone();
    loop {
        let vb = handler.get_next(&cur, false, None)?;
        if vb.name <= cur {
            warn!(start = %cur, got = %vb.name, "snmp: MIB get_next did not move forward; ending view");
            return None;
        }
        let skip = vb.value.is_exception()
            || (version == Version::V1 && matches!(vb.value, Value::Counter64(_)));
        if !skip {
            return Some(vb);
        }
        cur = vb.name;
    }
}

fn get_next(version: Version, p: &Pdu, handler: &dyn MibHandler) -> Answer {
    let mut out = Vec::with_capacity(p.variable_bindings.len());
    for (i, req) in p.variable_bindings.iter().enumerate() {
        let start = codec::from_wire_oid(&req.name);
        let vb = match next_instance(version, &start, handler) {
            Some(vb) => vb,
            None if version == Version::V1 => {
                return Answer::error(ErrorStatus::NoSuchName, i + 1, &p.variable_bindings);
            }
            None => VarBind::new(start, Value::EndOfMibView),
        };
        match wire_vb(&vb) {
            Some(w) => out.push(w),
            None => return Answer::error(ErrorStatus::GenErr, i + 1, &p.variable_bindings),
        }
    }
    Answer::ok(out)
}

/// RFC 3416 4.2.3, answered and encoded here because its size bound shapes
/// the varbind list: `None` when even the non-repeaters' tooBig answer does
/// not fit.
fn get_bulk(
    b: &BulkPdu,
    community: &[u8],
    max: usize,
    handler: &dyn MibHandler,
) -> Option<Vec<u8>> {
    let reqs = &b.variable_bindings;
    let n = (b.non_repeaters as usize).min(reqs.len());
    let m = b.max_repetitions as usize;
    let env = Envelope::new(1, community, b.request_id, 0, 0);

    let gen_err = |i: usize| {
        let a = Answer::error(ErrorStatus::GenErr, i, reqs);
        let a = fit(a, Version::V2c, 1, community, b.request_id, reqs, max)?;
        encode(1, community, b.request_id, a)
    };
    let too_big = || {
        let a = Answer {
            status: ErrorStatus::TooBig,
            index: 0,
            varbinds: Vec::new(),
        };
        let a = fit(a, Version::V2c, 1, community, b.request_id, reqs, max)?;
        encode(1, community, b.request_id, a)
    };

    let mut out: Vec<v2::VarBind> = Vec::new();
    let mut total = 0usize;
    for (i, req) in reqs[..n].iter().enumerate() {
        let start = codec::from_wire_oid(&req.name);
        let vb = next_instance(Version::V2c, &start, handler)
            .unwrap_or_else(|| VarBind::new(start, Value::EndOfMibView));
        let Some(w) = wire_vb(&vb) else {
            return gen_err(i + 1);
        };
        total += codec::varbind_size(&w)?;
        out.push(w);
    }
    if env.message_size(total) > max {
        return too_big();
    }

    let repeaters = &reqs[n..];
    let mut cursor: Vec<Option<Oid>> = repeaters
        .iter()
        .map(|r| Some(codec::from_wire_oid(&r.name)))
        .collect();
    let mut ended: Vec<Oid> = repeaters
        .iter()
        .map(|r| codec::from_wire_oid(&r.name))
        .collect();
    'reps: for _ in 0..m {
        if repeaters.is_empty() {
            break;
        }
        let mut any_live = false;
        for (j, cur) in cursor.iter_mut().enumerate() {
            let vb = match cur.as_ref() {
                Some(c) => match next_instance(Version::V2c, c, handler) {
                    Some(vb) => {
                        any_live = true;
                        *cur = Some(vb.name.clone());
                        vb
                    }
                    None => {
                        // Later repetitions of an ended column repeat its
                        // last name with endOfMibView.
                        if let Some(c) = cur.take() {
                            ended[j] = c;
                        }
                        VarBind::new(ended[j].clone(), Value::EndOfMibView)
                    }
                },
                None => VarBind::new(ended[j].clone(), Value::EndOfMibView),
            };
            let Some(w) = wire_vb(&vb) else {
                return gen_err(n + j + 1);
            };
            let sz = codec::varbind_size(&w)?;
            if env.message_size(total + sz) > max {
                break 'reps;
            }
            total += sz;
            out.push(w);
        }
        // Every column is at the end of the view: more rows would only repeat
        // endOfMibView (RFC 3416 4.2.3 lets the response stop here).
        if !any_live {
            break;
        }
    }
    encode(1, community, b.request_id, Answer::ok(out))
}

fn set(version: Version, access: Access, p: &Pdu, handler: &dyn MibHandler) -> Answer {
    let reqs = &p.variable_bindings;
    let fail = |status: ErrorStatus, index: usize| {
        let status = match version {
            Version::V1 => v1_status(status),
            Version::V2c => status,
        };
        Answer::error(status, index, reqs)
    };
    if access == Access::Read {
        return fail(ErrorStatus::NoAccess, 1.min(reqs.len()));
    }
    if reqs.is_empty() {
        return Answer::ok(Vec::new());
    }
    let mut vbs = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let value = match r.value {
            VarBindValue::NoSuchObject
            | VarBindValue::NoSuchInstance
            | VarBindValue::EndOfMibView => return fail(ErrorStatus::WrongType, i + 1),
            ref v => match codec::from_wire_value(v) {
                Ok(v) => v,
                Err(codec::ValueError::IntegerRange) => {
                    return fail(ErrorStatus::WrongValue, i + 1);
                }
            },
        };
        vbs.push(VarBind::new(codec::from_wire_oid(&r.name), value));
    }
    let txn = SetTxn {
        session_id: RESPONDER_SESSION_ID,
        transaction_id: NEXT_TXN.fetch_add(1, Ordering::Relaxed),
    };
    let index = |e: SetError| usize::from(e.index);
    let answer = match handler.test_set(txn, &vbs) {
        Err(e) => fail(e.status, index(e)),
        Ok(()) => match handler.commit_set(txn) {
            Ok(()) => Answer::error(ErrorStatus::NoError, 0, reqs),
            Err(e) => match handler.undo_set(txn) {
                Ok(()) => fail(ErrorStatus::CommitFailed, index(e)),
                Err(u) => fail(ErrorStatus::UndoFailed, index(u)),
            },
        },
    };
    handler.cleanup_set(txn);
    answer
}
