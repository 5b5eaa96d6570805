//! The request processor: one received datagram in, at most one datagram out.
//! Pure (no I/O; time is an argument), so it is unit-tested and fuzzed
//! directly.
//!
//! Two layers. The message layer checks the source against the access rules
//! ([`super::access`]), decodes an SNMPv1/v2c message (community) and finds
//! the rule that grants the request, applies the rule's rate guard, and
//! encodes the answer. The PDU layer answers a request PDU through the
//! rule's view within a bound on the response PDU's octets, whatever
//! message carries it.

use std::cell::RefCell;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Instant;

use rasn_snmp::v2::{self, BulkPdu, Pdu, Pdus, VarBindValue};
use rasn_snmp::v2c::Message;
use tracing::warn;

use super::access::{AccessTable, Network, Principal, Rule, Subtrees, Viewed};
use super::codec::{self, int_size, max_pdu_within, pdu_size, tlv};
use super::local::{LocalObjects, WithLocal};
use super::usm::{DropReason, Incoming, ReportKind, Usm, message_version};
pub(crate) use super::work::Version;
use super::work::{self, Metered, next_instance};
use crate::edge::Gate;
use crate::mib::bulk::{self, Budget, Bulk, Cut, Range, Unencodable};
use crate::mib::{ErrorStatus, MibHandler, Oid, SetError, SetTxn, Value, VarBind};
use crate::time::{Due, Throttle};

use super::ber::MIN_MESSAGE_SIZE;
use crate::mib::bulk::MAX_UDP_PAYLOAD;

/// The AgentX-style session id the responder uses in every `SetTxn`, so a
/// handler can tell its SETs apart from those an AgentX master sends.
pub const RESPONDER_SESSION_ID: u32 = u32::MAX;

/// What the processor is configured with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResponderConfig {
    /// Who may ask what.
    pub access: AccessTable,
}

impl ResponderConfig {
    /// One read-only community, from any source, with responses up to the
    /// largest UDP payload: for tests and trials on loopback.
    pub fn new(community: impl Into<String>) -> Self {
        ResponderConfig {
            access: AccessTable::new(vec![anywhere(community.into(), false)]),
        }
    }

    /// Adds a community that may also write, from any source.
    pub fn with_write_community(mut self, community: impl Into<String>) -> Self {
        let mut rules = self.access.rules().to_vec();
        rules.insert(0, anywhere(community.into(), true));
        self.access = AccessTable::new(rules);
        self
    }

    /// Caps every rule's responses at `octets` (clamped to
    /// [`MIN_MESSAGE_SIZE`]..=[`MAX_UDP_PAYLOAD`]).
    pub fn with_max_message_size(mut self, octets: usize) -> Self {
        let octets = octets.clamp(MIN_MESSAGE_SIZE, MAX_UDP_PAYLOAD);
        let rules = self
            .access
            .rules()
            .iter()
            .map(|r| Rule {
                max_response_octets: octets,
                ..r.clone()
            })
            .collect();
        self.access = AccessTable::new(rules);
        self
    }
}

fn anywhere(community: String, write: bool) -> Rule {
    Rule {
        principal: Principal::Community(community.into_bytes()),
        sources: vec![
            "0.0.0.0/0".parse::<Network>().expect("a network"),
            "::/0".parse::<Network>().expect("a network"),
        ],
        view: Subtrees::all(),
        write,
        max_response_octets: MAX_UDP_PAYLOAD,
        rate: None,
    }
}

/// What became of one datagram.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Send these octets back to the sender.
    Reply(Vec<u8>),
    /// From a source address no access rule lists: dropped before decoding.
    Unlisted,
    /// A community no rule gives to this source (snmpInBadCommunityNames).
    BadCommunity,
    /// Over the rate guard of the rule that matched.
    RateLimited,
    /// Not a decodable SNMP message (snmpInASNParseErrs); the reason.
    Malformed(String),
    /// A well-formed message this agent does not answer (a Response, Trap,
    /// Report or InformRequest PDU; GetBulk in an SNMPv1 message; an unknown
    /// version).
    Ignored(&'static str),
    /// Even the smallest error response exceeds the size limit (snmpSilentDrops).
    TooBig,
    /// An SNMPv3 Report (discovery, time window, an unknown user, a wrong
    /// digest ...): send it back; the USM counted it.
    Report(ReportKind, Vec<u8>),
    /// An SNMPv3 message the USM refused without a Report (its reportable
    /// flag clear, a bad security model or flags): counted by the USM.
    UsmDrop(DropReason),
    /// An authenticated SNMPv3 user no rule gives to this source.
    UnknownUser,
}

/// The request processor: the access rules, each admitting through an
/// [`edge::Gate`](crate::edge::Gate) of its own (its sources and rate
/// guard), and the SNMPv3 engine (USM) when users are configured.
#[derive(Debug)]
pub struct Processor {
    access: AccessTable,
    /// One per rule: the rule's sources and its rate guard (none: no
    /// limit). The HTTP edge has one gate; here a datagram names its
    /// principal, so the rule, and with it the gate, is known only once
    /// the datagram is read.
    gates: Vec<Gate>,
    /// The USM and the time its engine booted (snmpEngineTime counts from
    /// it).
    usm: Option<(Usm, Instant)>,
    /// The line of a MIB varbind BER cannot carry: at most one every 10 s.
    unencodable_log: Throttle,
}

impl Processor {
    pub fn new(config: ResponderConfig) -> Processor {
        let gates = config
            .access
            .rules()
            .iter()
            .map(|r| {
                let (rate, burst) = r.rate.map_or((0, 0), |g| (g.rate, g.burst));
                Gate::new(r.sources.clone(), rate, burst)
            })
            .collect();
        Processor {
            access: config.access,
            gates,
            usm: None,
            unencodable_log: Throttle::every(super::DROP_LOG_EVERY),
        }
    }

    /// Answers SNMPv3 through `usm`, whose engine booted at `booted`.
    pub fn with_usm(mut self, usm: Usm, booted: Instant) -> Processor {
        self.usm = Some((usm, booted));
        self
    }

    /// The USM's counters (usmStats, SNMP-MPD-MIB), with a USM.
    pub fn usm_stats(&self) -> Option<super::usm::Stats> {
        self.usm.as_ref().map(|(u, _)| u.stats())
    }

    /// Answers one datagram from `from`, received at `now`.
    pub fn process(
        &mut self,
        bytes: &[u8],
        from: IpAddr,
        now: Instant,
        handler: &dyn MibHandler,
    ) -> Outcome {
        if !self.access.source_allowed(from) {
            return Outcome::Unlisted;
        }
        let d = Datagram { bytes, from, now };
        if message_version(bytes) == Some(3) {
            self.v3(d, handler)
        } else {
            self.community(d, handler)
        }
    }

    /// An SNMPv1 or SNMPv2c message.
    fn community(&mut self, d: Datagram, handler: &dyn MibHandler) -> Outcome {
        let Datagram { bytes, from, now } = d;
        let bytes = match super::ber::normalize(bytes, false) {
            Ok(b) => b,
            Err(e) => return Outcome::Malformed(e.to_string()),
        };
        let msg: Message<Pdus> = match rasn::ber::decode(&bytes) {
            Ok(m) => m,
            Err(e) => return Outcome::Malformed(e.to_string()),
        };
        let version = match i64::try_from(&msg.version) {
            Ok(0) => Version::V1,
            Ok(1) => Version::V2,
            _ => return Outcome::Ignored("unsupported SNMP version"),
        };
        let community = &msg.community[..];
        let Some((i, rule)) = self.access.for_community(from, community) else {
            return Outcome::BadCommunity;
        };
        if !admits(&mut self.gates, i, from, now) {
            return Outcome::RateLimited;
        }
        let version_num: i64 = match version {
            Version::V1 => 0,
            Version::V2 => 1,
        };
        let local = self
            .usm
            .as_ref()
            .map(|(usm, booted)| LocalObjects::of(usm, engine_time(now, *booted)));
        let max_pdu = max_pdu_within(
            rule.max_response_octets,
            int_size(version_num) + tlv(community.len()),
        );
        let mib = WithLocal {
            inner: handler,
            local: local.as_ref(),
        };
        let grant = Grant::new(rule, &mib, version, max_pdu);
        let answer = respond(&msg.data, &grant);
        log_unencodable(&mut self.unencodable_log, &grant, now);
        match answer {
            Ok(pdu) => {
                let reply = Message {
                    version: version_num.into(),
                    community: msg.community.clone(),
                    data: Pdus::Response(v2::Response(pdu)),
                };
                match rasn::ber::encode(&reply) {
                    Ok(b) if b.len() <= rule.max_response_octets => Outcome::Reply(b),
                    _ => Outcome::TooBig,
                }
            }
            Err(o) => o,
        }
    }

    /// An SNMPv3 message. Every answer is charged to a rate guard before
    /// it is built: a request's to its rule's; a Report's (the user is not
    /// known or not verified yet) to every guard of the rules that list the
    /// source for SNMPv3; an authorizationError's to every guard of the
    /// rules that name the user from the source. Each answer fits the
    /// manager's msgMaxSize and the rules' `max_response_octets`.
    fn v3(&mut self, d: Datagram, handler: &dyn MibHandler) -> Outcome {
        let Datagram { bytes, from, now } = d;
        let Processor {
            access,
            gates,
            usm,
            unencodable_log,
        } = self;
        let Some((usm, booted)) = usm.as_mut() else {
            return Outcome::Ignored("an SNMPv3 message, but no [[snmp.user]] is configured");
        };
        if !access.users_allowed(from) {
            return Outcome::Unlisted;
        }
        let time = engine_time(now, *booted);
        let is_user = |r: &Rule| matches!(r.principal, Principal::User { .. });
        let mut permit = |_| charge(access, gates, from, now, is_user);
        let (ctx, pdus) = match usm.incoming_guarded(bytes, time, &mut permit) {
            Incoming::Request(ctx, pdus) => (ctx, pdus),
            Incoming::Report(kind, b) => {
                // A Report is far below MIN_MESSAGE_SIZE, the least any rule
                // allows.
                if b.len() > smallest_response(access, from, is_user) {
                    return Outcome::TooBig;
                }
                return Outcome::Report(kind, b);
            }
            Incoming::Drop(DropReason::Malformed) => {
                return Outcome::Malformed("not a decodable SNMPv3 message".into());
            }
            Incoming::Drop(DropReason::NotARequest) => {
                return Outcome::Ignored("not a request PDU");
            }
            Incoming::Drop(DropReason::Refused(_)) => return Outcome::RateLimited,
            Incoming::Drop(why) => return Outcome::UsmDrop(why),
        };
        let Some(user) = usm.users().get(ctx.user).map(|u| u.name().to_vec()) else {
            return Outcome::UnknownUser;
        };
        let manager_max = usize::try_from(ctx.max_size).unwrap_or(usize::MAX);
        let Some((i, rule)) = access.for_user(from, &user, ctx.level) else {
            if !access.names_user(from, &user) {
                return Outcome::UnknownUser;
            }
            // The user may ask from here, but not at this level: as VACM
            // answers a request its access entry does not allow.
            let Some((request_id, varbinds)) = request_of(&pdus) else {
                return Outcome::Ignored("not a request PDU");
            };
            let names =
                |r: &Rule| matches!(&r.principal, Principal::User { name, .. } if *name == user);
            if !charge(access, gates, from, now, names) {
                return Outcome::RateLimited;
            }
            let max_message = smallest_response(access, from, names).min(manager_max);
            let max_pdu = max_message.saturating_sub(usm.overhead(&ctx));
            let denied = Answer::error(ErrorStatus::AuthorizationError, 0, varbinds);
            let Some(a) = fit(denied, Version::V2, max_pdu, request_id, varbinds) else {
                return Outcome::TooBig;
            };
            let pdu = response_pdu(request_id, a);
            return match usm.response(&ctx, Pdus::Response(v2::Response(pdu)), time) {
                Some(b) if b.len() <= max_message => Outcome::Reply(b),
                _ => Outcome::TooBig,
            };
        };
        if !admits(gates, i, from, now) {
            return Outcome::RateLimited;
        }
        let max_message = rule.max_response_octets.min(manager_max);
        let max_pdu = max_message.saturating_sub(usm.overhead(&ctx));
        let local = LocalObjects::of(usm, time);
        let mib = WithLocal {
            inner: handler,
            local: Some(&local),
        };
        let grant = Grant::new(rule, &mib, Version::V2, max_pdu);
        let answer = respond(&pdus, &grant);
        log_unencodable(unencodable_log, &grant, now);
        match answer {
            Ok(pdu) => match usm.response(&ctx, Pdus::Response(v2::Response(pdu)), time) {
                Some(b) if b.len() <= max_message => Outcome::Reply(b),
                _ => Outcome::TooBig,
            },
            Err(o) => o,
        }
    }
}

/// Charges `from` to the gate of every rule `pick` chooses that lists
/// `from`: whether each let it through (the first that refuses stops the
/// charging).
fn charge(
    access: &AccessTable,
    gates: &mut [Gate],
    from: IpAddr,
    now: Instant,
    pick: impl Fn(&Rule) -> bool,
) -> bool {
    access
        .rules()
        .iter()
        .zip(gates.iter_mut())
        .filter(|(r, g)| pick(r) && g.listed(from))
        .all(|(_, g)| g.request(from, now).is_ok())
}

/// The smallest `max_response_octets` of the rules `pick` chooses that
/// list `from` ([`MIN_MESSAGE_SIZE`] at least).
fn smallest_response(access: &AccessTable, from: IpAddr, pick: impl Fn(&Rule) -> bool) -> usize {
    access
        .rules()
        .iter()
        .filter(|r| pick(r) && r.allows_source(from))
        .map(|r| r.max_response_octets)
        .min()
        .unwrap_or(MIN_MESSAGE_SIZE)
        .max(MIN_MESSAGE_SIZE)
}

/// A received datagram: its bytes, its source and when it came.
#[derive(Clone, Copy)]
struct Datagram<'a> {
    bytes: &'a [u8],
    from: IpAddr,
    now: Instant,
}

/// Whether rule `i`'s gate lets a request from `from` through at `now`
/// (the rule was chosen for listing `from`: only its rate is left).
fn admits(gates: &mut [Gate], i: usize, from: IpAddr, now: Instant) -> bool {
    gates
        .get_mut(i)
        .is_none_or(|g| g.request(from, now).is_ok())
}

/// snmpEngineTime: whole seconds since the engine booted.
fn engine_time(now: Instant, booted: Instant) -> u32 {
    u32::try_from(now.saturating_duration_since(booted).as_secs()).unwrap_or(u32::MAX)
}

/// The request ID and varbinds of a request (`None` for a Response, Trap,
/// Report, Inform).
fn request_of(pdus: &Pdus) -> Option<(i32, &[v2::VarBind])> {
    match pdus {
        Pdus::GetRequest(v2::GetRequest(p))
        | Pdus::GetNextRequest(v2::GetNextRequest(p))
        | Pdus::SetRequest(v2::SetRequest(p)) => Some((p.request_id, &p.variable_bindings)),
        Pdus::GetBulkRequest(v2::GetBulkRequest(b)) => Some((b.request_id, &b.variable_bindings)),
        _ => None,
    }
}

/// One datagram from loopback through a fresh processor (tests, fuzzing).
pub fn process(bytes: &[u8], config: &ResponderConfig, handler: &dyn MibHandler) -> Outcome {
    Processor::new(config.clone()).process(
        bytes,
        IpAddr::from([127, 0, 0, 1]),
        Instant::now(),
        handler,
    )
}

/// Answers a datagram with a read-only `community` from loopback.
pub fn handle_packet(bytes: &[u8], community: &str, handler: &dyn MibHandler) -> Option<Vec<u8>> {
    match process(bytes, &ResponderConfig::new(community), handler) {
        Outcome::Reply(r) => Some(r),
        _ => None,
    }
}

/// What a request may do: the MIB (with the endpoint's own objects) through
/// its rule's view, whether it may write, and the bound on its response PDU.
pub(crate) struct Grant<'a> {
    pub mib: Viewed<'a>,
    pub write: bool,
    pub version: Version,
    pub max_pdu: usize,
    /// The MIB varbind BER could not carry (the answer is genErr at it).
    unencodable: RefCell<Option<VarBind>>,
}

impl<'a> Grant<'a> {
    fn new(
        rule: &'a Rule,
        handler: &'a WithLocal<'a>,
        version: Version,
        max_pdu: usize,
    ) -> Grant<'a> {
        Grant {
            mib: Viewed {
                inner: handler,
                view: &rule.view,
            },
            write: rule.write,
            version,
            max_pdu,
            unencodable: RefCell::new(None),
        }
    }
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
    fn error(status: ErrorStatus, index: usize, request: &[v2::VarBind]) -> Self {
        Answer {
            status,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            varbinds: request.to_vec(),
        }
    }
}

static NEXT_TXN: AtomicU32 = AtomicU32::new(1);

/// The Response PDU to a request PDU, within `grant.max_pdu`; `Err` when
/// there is none to send.
pub(crate) fn respond(pdus: &Pdus, grant: &Grant) -> Result<Pdu, Outcome> {
    let mib = Metered::new(&grant.mib, work::STEPS);
    let (p, answer) = match pdus {
        Pdus::GetRequest(v2::GetRequest(p)) => (p, get(grant, p)),
        Pdus::GetNextRequest(v2::GetNextRequest(p)) => (p, get_next(grant, &mib, p)),
        Pdus::SetRequest(v2::SetRequest(p)) => (p, set(grant, p)),
        Pdus::GetBulkRequest(v2::GetBulkRequest(b)) => {
            if grant.version == Version::V1 {
                return Err(Outcome::Ignored("GetBulk in an SNMPv1 message"));
            }
            let a = get_bulk(grant, &mib, b).ok_or(Outcome::TooBig)?;
            return Ok(response_pdu(b.request_id, a));
        }
        Pdus::Response(_) | Pdus::Trap(_) | Pdus::Report(_) | Pdus::InformRequest(_) => {
            return Err(Outcome::Ignored("not a request PDU"));
        }
    };
    let a = fit(
        answer,
        grant.version,
        grant.max_pdu,
        p.request_id,
        &p.variable_bindings,
    )
    .ok_or(Outcome::TooBig)?;
    Ok(response_pdu(p.request_id, a))
}

fn response_pdu(request_id: i32, a: Answer) -> Pdu {
    Pdu {
        request_id,
        error_status: a.status as u32,
        error_index: a.index,
        variable_bindings: a.varbinds,
    }
}

/// The answer, or tooBig in its place, within `max_pdu` octets; `None`
/// when not even tooBig fits.
fn fit(
    answer: Answer,
    version: Version,
    max_pdu: usize,
    request_id: i32,
    request: &[v2::VarBind],
) -> Option<Answer> {
    let size = |a: &Answer| -> Option<usize> {
        let sum = a
            .varbinds
            .iter()
            .map(codec::varbind_size)
            .sum::<Option<usize>>()?;
        Some(pdu_size(request_id, a.status as u32, a.index, sum))
    };
    if size(&answer)? <= max_pdu {
        return Some(answer);
    }
    let too_big = match version {
        Version::V2 => Answer {
            status: ErrorStatus::TooBig,
            index: 0,
            varbinds: Vec::new(),
        },
        Version::V1 => Answer::error(ErrorStatus::TooBig, 0, request),
    };
    (size(&too_big)? <= max_pdu).then_some(too_big)
}

fn v1_status(s: ErrorStatus) -> ErrorStatus {
    use ErrorStatus::*;
    match s {
        NoError | TooBig | NoSuchName | BadValue | ReadOnly | GenErr => s,
        WrongValue | WrongEncoding | WrongType | WrongLength | InconsistentValue => BadValue,
        NoAccess | NotWritable | NoCreation | InconsistentName | AuthorizationError => NoSuchName,
        ResourceUnavailable | CommitFailed | UndoFailed => GenErr,
    }
}

/// `vb` on the wire; `None` (kept in `g` for its log line) when BER cannot
/// carry it.
fn wire_vb(g: &Grant, vb: &VarBind) -> Option<v2::VarBind> {
    let w = codec::to_wire_varbind(vb);
    if w.is_none() {
        *g.unencodable.borrow_mut() = Some(vb.clone());
    }
    w
}

/// The line of an answer that met a MIB varbind BER cannot carry, at
/// `now`, through `log`.
fn log_unencodable(log: &mut Throttle, g: &Grant, now: Instant) {
    if let Some(vb) = g.unencodable.borrow().as_ref()
        && let Some(Due { since: n, .. }) = log.at(now)
    {
        warn!(name = %vb.name, value = ?vb.value, "snmp: the MIB returned {n} varbind(s) BER cannot carry (answered genErr; logged at most every 10 s)");
    }
}

fn get(g: &Grant, p: &Pdu) -> Answer {
    let mut out = Vec::with_capacity(p.variable_bindings.len());
    let names: Vec<Oid> = p
        .variable_bindings
        .iter()
        .map(|req| codec::from_wire_oid(&req.name))
        .collect();
    let values = g.mib.get_many(&names);
    for (i, (name, value)) in names.into_iter().zip(values).enumerate() {
        if g.version == Version::V1
            && (value.is_exception() || matches!(value, Value::Counter64(_)))
        {
            return Answer::error(ErrorStatus::NoSuchName, i + 1, &p.variable_bindings);
        }
        match wire_vb(g, &VarBind::new(name, value)) {
            Some(vb) => out.push(vb),
            None => return Answer::error(ErrorStatus::GenErr, i + 1, &p.variable_bindings),
        }
    }
    Answer::ok(out)
}

fn get_next(g: &Grant, mib: &Metered, p: &Pdu) -> Answer {
    let mut out = Vec::with_capacity(p.variable_bindings.len());
    for (i, req) in p.variable_bindings.iter().enumerate() {
        let start = Range::after(codec::from_wire_oid(&req.name));
        let next = next_instance(g.version, &start, mib);
        if mib.exhausted() {
            return Answer::error(ErrorStatus::GenErr, i + 1, &p.variable_bindings);
        }
        let vb = match next {
            Some(vb) => vb,
            None if g.version == Version::V1 => {
                return Answer::error(ErrorStatus::NoSuchName, i + 1, &p.variable_bindings);
            }
            None => VarBind::new(start.start, Value::EndOfMibView),
        };
        match wire_vb(g, &vb) {
            Some(w) => out.push(w),
            None => return Answer::error(ErrorStatus::GenErr, i + 1, &p.variable_bindings),
        }
    }
    Answer::ok(out)
}

/// RFC 3416 4.2.3 ([`bulk::bulk`]) within the grant's bound: repetitions
/// that do not fit are left off; tooBig when the non-repeaters alone do
/// not fit (a request of many non-repeaters makes the responder build at
/// most one response's worth). `None`: not even the error response fits.
fn get_bulk(g: &Grant, mib: &Metered, b: &BulkPdu) -> Option<Answer> {
    let reqs = &b.variable_bindings;
    let ranges = reqs
        .iter()
        .map(|r| Range::after(codec::from_wire_oid(&r.name)))
        .collect();
    let budget = Budget {
        varbinds: usize::MAX,
        octets: codec::varbinds_within(g.max_pdu, b.request_id),
    };
    let encode = |vb: VarBind| {
        let w = wire_vb(g, &vb)?;
        let n = codec::varbind_size(&w)?;
        Some((w, n))
    };
    let walked = bulk::bulk(
        mib,
        ranges,
        b.non_repeaters as usize,
        b.max_repetitions as usize,
        budget,
        encode,
    );
    let answer = match walked {
        // A walk that ran out of steps: no varbind of it can be trusted
        // (the step refused read as the end of the view).
        _ if mib.exhausted() => Answer::error(ErrorStatus::GenErr, 0, reqs),
        Ok(Bulk {
            cut: Some(Cut::NonRepeaters),
            ..
        }) => Answer {
            status: ErrorStatus::TooBig,
            index: 0,
            varbinds: Vec::new(),
        },
        Ok(walked) => return Some(Answer::ok(walked.varbinds)),
        Err(Unencodable { index }) => Answer::error(ErrorStatus::GenErr, index, reqs),
    };
    fit(answer, g.version, g.max_pdu, b.request_id, reqs)
}

fn set(g: &Grant, p: &Pdu) -> Answer {
    let reqs = &p.variable_bindings;
    let fail = |status: ErrorStatus, index: usize| {
        let status = match g.version {
            Version::V1 => v1_status(status),
            Version::V2 => status,
        };
        Answer::error(status, index, reqs)
    };
    if !g.write {
        return fail(ErrorStatus::NoAccess, 1.min(reqs.len()));
    }
    if reqs.is_empty() {
        return Answer::ok(Vec::new());
    }
    let mut vbs = Vec::with_capacity(reqs.len());
    for (i, r) in reqs.iter().enumerate() {
        let name = codec::from_wire_oid(&r.name);
        // An object outside the rule's view cannot be written (RFC 3416
        // 4.2.5: not accessible -> noAccess).
        if !g.mib.view.contains(&name) {
            return fail(ErrorStatus::NoAccess, i + 1);
        }
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
        vbs.push(VarBind::new(name, value));
    }
    let handler = g.mib.inner;
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
