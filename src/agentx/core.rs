//! The subagent's side of an AgentX session (RFC 2741) as a state machine
//! without I/O: no socket, no clock, no thread. The driver
//! ([`super::session`]) owns the connection and the clock and feeds the core:
//!
//! - input: [`AgentxCore::on_connected`] when a connection is up,
//!   [`AgentxCore::on_bytes`] with what was read, [`AgentxCore::on_timeout`]
//!   when [`AgentxCore::next_deadline`] has passed (an early call does
//!   nothing), [`AgentxCore::notify`] for a notification, and
//!   [`AgentxCore::on_disconnected`] whenever a connection ends, whatever the
//!   reason;
//! - output: the [`Action`]s each call returns, in order: bytes to write, or
//!   the end of this connection ([`Action::Lost`]).
//!
//! Every input carries the time, so tests drive the core with a virtual
//! clock. The core enforces what RFC 2741 asks of a subagent: requests of
//! another session get `notOpen`, a non-default context gets
//! `unsupportedContext`, and each SET transaction goes through TestSet,
//! CommitSet, UndoSet and CleanupSet in that order, once each.

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::time::{Duration, Instant};

use super::config::SessionConfig;
use super::pdu::{
    self, AgentxError, CloseReason, DecodeError, FrameError, Framer, HEADER_LEN, Header, Payload,
    Pdu, PduType, Region, ResError, SearchRange,
};
use crate::mib::bulk::{self, Budget, Range};
use crate::mib::{ErrorStatus, MibHandler, Oid, SetError, SetTxn, Value, VarBind};
use crate::time::{Clock, Due, Throttle};

/// How long the master has to answer Open, Register and Ping.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Number of recent responses kept to answer a master's resent packets.
const RESPONSE_CACHE: usize = 64;
/// SET transactions tracked per session; the oldest is cleaned up when a
/// TestSet would start one more (a master that never sends CleanupSet).
pub const MAX_TRANSACTIONS: usize = 64;
/// Largest number of varbinds in a GetBulk response.
pub const MAX_BULK_VARBINDS: usize = 4096;
/// Largest encoded varbind list of any Response, in octets: what one SNMP
/// message over UDP can carry at most. A GetBulk's answer ends before the
/// first varbind past it (non-repeaters included, RFC 3416 4.2.3); a Get
/// or GetNext that cannot fit is answered tooBig with no varbinds (RFC
/// 3416 4.2.1).
pub const MAX_RESPONSE_OCTETS: usize = crate::mib::bulk::MAX_UDP_PAYLOAD;
/// Of repeated failures (a refused registration, a failed connect, a
/// dropped notification) the 1st and every Nth are logged.
pub(super) const LOG_EVERY: u64 = 20;
/// A peer's misbehaviour of one kind is logged the 1st, 2nd, 4th ... up to
/// this many times, then every this-many-th time, with its count.
const MISBEHAVIOUR_LOG_CAP: u64 = 1024;

/// The master's misbehaviour the core logs, kind by kind.
#[derive(Clone, Debug)]
struct PeerRepeats {
    malformed: Throttle,
    not_a_request: Throttle,
    not_open: Throttle,
    out_of_order: Throttle,
    abandoned: Throttle,
}

impl Default for PeerRepeats {
    fn default() -> PeerRepeats {
        let t = Throttle::doubling(MISBEHAVIOUR_LOG_CAP);
        PeerRepeats {
            malformed: t.clone(),
            not_a_request: t.clone(),
            not_open: t.clone(),
            out_of_order: t.clone(),
            abandoned: t,
        }
    }
}

/// What the driver does next.
#[derive(Clone, Debug, PartialEq, Eq)]
#[must_use]
pub enum Action {
    /// Write these bytes (one encoded PDU) to the master.
    Send(Vec<u8>),
    /// This connection is over; the driver closes it, calls
    /// [`AgentxCore::on_disconnected`] and reconnects.
    Lost(Lost),
}

/// What an outstanding request of ours was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outstanding {
    Open,
    Register(usize),
    Ping,
    Notify,
}

/// Why a connection ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Lost {
    /// The master closed the connection.
    Eof,
    /// Reading or writing failed.
    Io(io::ErrorKind),
    /// A header that does not parse: the byte stream is out of sync.
    OutOfSync,
    /// A PDU longer than the maximum: its payload cannot be skipped safely
    /// (the master may never send it), so the stream is started over.
    Oversized { length: u64, max: usize },
    /// The master sent Close.
    ClosedByMaster(CloseReason),
    /// The master refused Open.
    OpenRefused(ResError),
    /// The master answered Ping with an error.
    PingRefused(ResError),
    /// A request of ours stayed unanswered.
    NoAnswer { to: Outstanding, after: Duration },
    /// A PDU of ours could not be encoded.
    Encode(PduType),
}

impl fmt::Display for Lost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Lost::Eof => write!(f, "master closed the connection (EOF)"),
            Lost::Io(k) => write!(f, "I/O error ({k:?})"),
            Lost::OutOfSync => write!(f, "unparsable AgentX header from master"),
            Lost::Oversized { length, max } => {
                write!(f, "AgentX PDU of {length} bytes from master (max {max})")
            }
            Lost::ClosedByMaster(r) => write!(f, "master sent Close ({r:?})"),
            Lost::OpenRefused(e) => write!(f, "master refused Open: {e}"),
            Lost::PingRefused(e) => write!(f, "master answered Ping with {e}"),
            Lost::NoAnswer { to, after } => {
                write!(f, "no answer from the master to {to:?} within {after:?}")
            }
            Lost::Encode(t) => write!(f, "cannot encode {t:?}"),
        }
    }
}

/// Counters of one core (over all its connections).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CoreStats {
    /// Successful Opens.
    pub opens: u64,
    /// Requests answered from the resend cache instead of re-executed.
    pub resends_answered: u64,
    /// Received PDUs answered with parseError or processingError.
    pub parse_errors: u64,
    /// Requests refused for the session, context or transaction they name
    /// (notOpen, unsupportedContext, a SET phase out of order).
    pub refused: u64,
    /// Registrations refused with duplicateRegistration.
    pub duplicate_registrations: u64,
}

/// Exponential backoff between `min` and `max`.
#[derive(Debug, Clone)]
pub struct Backoff {
    min: Duration,
    max: Duration,
    cur: Duration,
}

impl Backoff {
    pub fn new(min: Duration, max: Duration) -> Self {
        let min = min.max(Duration::from_millis(1));
        let max = max.max(min);
        Backoff { min, max, cur: min }
    }
    /// The delay before the next attempt; doubles up to `max`.
    pub fn next_delay(&mut self) -> Duration {
        let d = self.cur;
        self.cur = (self.cur * 2).min(self.max);
        d
    }
    /// Start over at `min`.
    pub fn reset(&mut self) {
        self.cur = self.min;
    }
}

#[derive(Debug)]
enum RegState {
    /// Register sent, answer awaited.
    Pending {
        packet_id: u32,
    },
    Registered,
    /// Send again at this time.
    RetryAt(Instant),
}

struct Registration {
    subtree: Oid,
    state: RegState,
    backoff: Backoff,
    /// Refusals in a row, logged through this.
    failures: Throttle,
}

/// Where one SET transaction is (RFC 2741 7.2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TxnPhase {
    /// TestSet answered; `ok` when the handler accepted it.
    Tested { ok: bool },
    /// CommitSet ran, with this outcome.
    Committed(Result<(), SetError>),
    /// UndoSet ran (or had nothing to undo), with this outcome.
    Undone(Result<(), SetError>),
}

/// (h.sessionID, h.transactionID, h.packetID, h.type) of a request.
type RequestKey = (u32, u32, u32, u8);

/// The protocol state of one subagent session (see the module doc).
pub struct AgentxCore {
    cfg: SessionConfig,
    framer: Framer,
    /// True between `on_connected` and the end of that connection.
    connected: bool,
    session_id: Option<u32>,
    next_packet: u32,
    outstanding: Vec<(u32, Outstanding, Instant)>,
    regs: Vec<Registration>,
    next_ping: Option<Instant>,
    /// Encoded answers of recent requests (`None`: no answer is sent).
    cache: VecDeque<(RequestKey, Option<Vec<u8>>)>,
    /// No cached request has a higher packet ID: a request above it is
    /// new without looking through the cache (a master numbers its
    /// requests upwards, so that is almost every request).
    cache_max_packet: u32,
    /// SET transactions of this session, oldest first.
    txns: VecDeque<(u32, TxnPhase)>,
    stats: CoreStats,
    /// How often the master misbehaved, per kind, for the log.
    repeats: PeerRepeats,
}

impl AgentxCore {
    pub fn new(cfg: SessionConfig) -> Self {
        AgentxCore {
            framer: Framer::new(cfg.max_pdu),
            cfg,
            connected: false,
            session_id: None,
            next_packet: 1,
            outstanding: Vec::new(),
            regs: Vec::new(),
            next_ping: None,
            cache: VecDeque::new(),
            cache_max_packet: 0,
            txns: VecDeque::new(),
            stats: CoreStats::default(),
            repeats: PeerRepeats::default(),
        }
    }

    pub fn config(&self) -> &SessionConfig {
        &self.cfg
    }

    pub fn stats(&self) -> CoreStats {
        self.stats
    }

    /// The session ID the master gave, while a session is open.
    pub fn session_id(&self) -> Option<u32> {
        self.session_id
    }

    /// True while a session with the master is open.
    pub fn is_open(&self) -> bool {
        self.session_id.is_some()
    }

    /// True while open and every configured subtree is registered.
    pub fn is_registered(&self) -> bool {
        self.is_open()
            && self
                .regs
                .iter()
                .all(|r| matches!(r.state, RegState::Registered))
    }

    /// A connection to the master is up: start over and send Open.
    pub fn on_connected(&mut self, now: Instant) -> Vec<Action> {
        self.framer.reset();
        self.connected = true;
        self.session_id = None;
        self.next_packet = 1;
        self.outstanding.clear();
        self.regs = self
            .cfg
            .subtrees
            .iter()
            .map(|s| Registration {
                subtree: s.clone(),
                state: RegState::RetryAt(now),
                backoff: Backoff::new(self.cfg.backoff_min, self.cfg.backoff_max),
                failures: Throttle::nth(LOG_EVERY),
            })
            .collect();
        self.next_ping = None;
        self.cache.clear();
        self.cache_max_packet = 0;
        self.txns.clear();
        let mut out = Vec::new();
        let open = Payload::Open {
            timeout: self.cfg.timeout_s,
            id: self.cfg.id.clone(),
            description: self.cfg.description.as_bytes().to_vec(),
        };
        self.request(Outstanding::Open, open, now, &mut out);
        out
    }

    /// The connection ended (after [`Action::Lost`], a failed read or write,
    /// or shutdown): every SET transaction of the session is cleaned up and
    /// the handler told that the session is gone, so no reservation of it
    /// can be committed later, by this session or the next.
    pub fn on_disconnected(&mut self, mib: &dyn MibHandler) {
        let sid = self.session_id.take();
        self.connected = false;
        self.outstanding.clear();
        self.cache.clear();
        self.cache_max_packet = 0;
        self.framer.reset();
        if let Some(sid) = sid {
            for (tid, _) in self.txns.drain(..) {
                mib.cleanup_set(SetTxn {
                    session_id: sid,
                    transaction_id: tid,
                });
            }
            mib.session_closed(sid);
        }
        self.txns.clear();
    }

    /// The Close PDU to send before a deliberate disconnect, when a
    /// session is open.
    pub fn close(&mut self, reason: CloseReason) -> Option<Vec<u8>> {
        let sid = self.session_id?;
        let id = self.packet_id();
        pdu::encode(
            &Pdu::new(sid, 0, id, Payload::Close { reason }),
            self.cfg.byte_order,
        )
        .ok()
    }

    /// Queues a Notify PDU; `None` when no session is open (the caller
    /// drops the notification).
    pub fn notify(&mut self, varbinds: Vec<VarBind>, now: Instant) -> Option<Vec<Action>> {
        if !self.connected || self.session_id.is_none() {
            return None;
        }
        let mut out = Vec::new();
        let payload = Payload::Notify { varbinds };
        self.request(Outstanding::Notify, payload, now, &mut out);
        Some(out)
    }

    /// The earliest time at which [`AgentxCore::on_timeout`] has work.
    pub fn next_deadline(&self) -> Option<Instant> {
        if !self.connected {
            return None;
        }
        let answers = self
            .outstanding
            .iter()
            .map(|(_, _, t)| *t + REQUEST_TIMEOUT);
        let mut min = answers.min();
        let mut at = |t: Instant| min = Some(min.map_or(t, |m| m.min(t)));
        if self.session_id.is_some() {
            for r in &self.regs {
                if let RegState::RetryAt(t) = r.state {
                    at(t);
                }
            }
            if let Some(t) = self.next_ping {
                at(t);
            }
        }
        min
    }

    /// Runs what is due at `now`: request deadlines, registrations, Ping.
    pub fn on_timeout(&mut self, now: Instant) -> Vec<Action> {
        let mut out = Vec::new();
        if !self.connected {
            return out;
        }
        if let Some((_, kind, _)) = self.outstanding.iter().find(|(_, k, t)| {
            *k != Outstanding::Notify && now.saturating_duration_since(*t) > REQUEST_TIMEOUT
        }) {
            let lost = Lost::NoAnswer {
                to: *kind,
                after: REQUEST_TIMEOUT,
            };
            self.lose(lost, &mut out);
            return out;
        }
        self.outstanding
            .retain(|(_, _, t)| now.saturating_duration_since(*t) <= REQUEST_TIMEOUT);
        if self.session_id.is_none() {
            return out;
        }
        for i in 0..self.regs.len() {
            if let RegState::RetryAt(t) = self.regs[i].state
                && now >= t
            {
                let payload = Payload::Register {
                    timeout: 0,
                    region: Region::subtree(self.regs[i].subtree.clone(), self.cfg.priority),
                };
                if let Some(id) = self.request(Outstanding::Register(i), payload, now, &mut out) {
                    self.regs[i].state = RegState::Pending { packet_id: id };
                }
            }
        }
        if let Some(t) = self.next_ping
            && now >= t
        {
            self.next_ping = Some(now + self.cfg.ping_interval);
            if !self
                .outstanding
                .iter()
                .any(|(_, k, _)| *k == Outstanding::Ping)
            {
                self.request(Outstanding::Ping, Payload::Ping, now, &mut out);
            }
        }
        out
    }

    /// Bytes read from the master: every complete PDU is handled.
    pub fn on_bytes(&mut self, data: &[u8], now: Instant, mib: &dyn MibHandler) -> Vec<Action> {
        let mut out = Vec::new();
        self.on_bytes_into(data, &Clock::new(move || now), mib, &mut out);
        out
    }

    /// As [`Self::on_bytes`], with the time read from `clock` only when a
    /// PDU needs it (a Response to a request of ours: a request is answered
    /// without reading the clock), and the actions appended to `out` (a
    /// driver reuses one vector for every read).
    pub fn on_bytes_into(
        &mut self,
        data: &[u8],
        clock: &Clock,
        mib: &dyn MibHandler,
        out: &mut Vec<Action>,
    ) {
        if !self.connected {
            return;
        }
        self.framer.push(data);
        while self.connected
            && let Some(frame) = self.framer.next_frame()
        {
            self.on_frame(frame, clock, mib, out);
        }
    }

    /// One decoded PDU (or why it did not decode).
    pub fn on_pdu(
        &mut self,
        pdu: Result<Pdu, DecodeError>,
        now: Instant,
        mib: &dyn MibHandler,
    ) -> Vec<Action> {
        let mut out = Vec::new();
        if self.connected {
            self.handle_pdu(pdu, &Clock::new(move || now), mib, &mut out);
        }
        out
    }

    // ------------------------------------------------------------ inside

    fn packet_id(&mut self) -> u32 {
        let id = self.next_packet;
        self.next_packet = self.next_packet.wrapping_add(1).max(1);
        id
    }

    fn lose(&mut self, why: Lost, out: &mut Vec<Action>) {
        self.connected = false;
        out.push(Action::Lost(why));
    }

    /// Sends a request of ours; its packet ID, or `None` if it could not be
    /// encoded (then the connection is lost).
    fn request(
        &mut self,
        kind: Outstanding,
        payload: Payload,
        now: Instant,
        out: &mut Vec<Action>,
    ) -> Option<u32> {
        let id = self.packet_id();
        let ty = payload.pdu_type();
        let pdu = Pdu::new(self.session_id.unwrap_or(0), id, id, payload);
        match pdu::encode(&pdu, self.cfg.byte_order) {
            Ok(b) => {
                out.push(Action::Send(b));
                self.outstanding.push((id, kind, now));
                Some(id)
            }
            Err(e) => {
                tracing::error!("cannot encode AgentX {ty:?}: {e}");
                self.lose(Lost::Encode(ty), out);
                None
            }
        }
    }

    fn on_frame(
        &mut self,
        frame: Result<Vec<u8>, FrameError>,
        clock: &Clock,
        mib: &dyn MibHandler,
        out: &mut Vec<Action>,
    ) {
        match frame {
            Ok(bytes) => self.handle_pdu(pdu::decode(&bytes), clock, mib, out),
            Err(FrameError::Oversized { header, max }) => {
                let length = u64::from(header.payload_length) + HEADER_LEN as u64;
                tracing::warn!(
                    "AgentX PDU from master too large ({length} bytes, max {max}): answering \
                     parseError and starting the session over"
                );
                self.answer_error(&header, AgentxError::ParseError, out);
                self.send_close(CloseReason::ParseError, out);
                self.lose(Lost::Oversized { length, max }, out);
            }
            Err(FrameError::Desync(e)) => {
                tracing::warn!("AgentX stream from master out of sync: {e}");
                self.send_close(CloseReason::ParseError, out);
                self.lose(Lost::OutOfSync, out);
            }
        }
    }

    fn send_close(&mut self, reason: CloseReason, out: &mut Vec<Action>) {
        let sid = self.session_id.unwrap_or(0);
        let pdu = Pdu::new(sid, 0, 0, Payload::Close { reason });
        if let Ok(b) = pdu::encode(&pdu, self.cfg.byte_order) {
            out.push(Action::Send(b));
        }
    }

    fn handle_pdu(
        &mut self,
        pdu: Result<Pdu, DecodeError>,
        clock: &Clock,
        mib: &dyn MibHandler,
        out: &mut Vec<Action>,
    ) {
        let pdu = match pdu {
            Ok(p) => p,
            Err(e) => {
                if let Some(Due { total: times, .. }) = self.repeats.malformed.count() {
                    tracing::warn!(
                        times,
                        "malformed AgentX PDU from master: {e}; answering parseError"
                    );
                }
                match e.header {
                    Some(h) => self.answer_error(&h, AgentxError::ParseError, out),
                    None => self.lose(Lost::OutOfSync, out),
                }
                return;
            }
        };
        match &pdu.payload {
            Payload::Response { .. } => self.on_response(pdu, clock.now(), out),
            Payload::Close { reason } => {
                let reason = *reason;
                self.lose(Lost::ClosedByMaster(reason), out);
            }
            Payload::Get { .. }
            | Payload::GetNext { .. }
            | Payload::GetBulk { .. }
            | Payload::TestSet { .. }
            | Payload::CommitSet
            | Payload::UndoSet
            | Payload::CleanupSet => self.on_request(pdu, mib, out),
            _ => {
                if let Some(Due { total: times, .. }) = self.repeats.not_a_request.count() {
                    tracing::warn!(
                        times,
                        "AgentX {:?} from master is not a request a subagent serves; answering processingError",
                        pdu.payload.pdu_type()
                    );
                }
                self.answer_error(&header_of(&pdu), AgentxError::ProcessingError, out);
            }
        }
    }

    fn answer_error(&mut self, h: &Header, err: AgentxError, out: &mut Vec<Action>) {
        self.stats.parse_errors += 1;
        if h.pdu_type == PduType::Response as u8 || h.pdu_type == PduType::CleanupSet as u8 {
            // Responses and CleanupSet are never answered.
            return;
        }
        let resp = Pdu::response_to(h, ResError::Agentx(err), 0, vec![]);
        match pdu::encode(&resp, h.byte_order()) {
            Ok(b) => out.push(Action::Send(b)),
            Err(_) => self.lose(Lost::Encode(PduType::Response), out),
        }
    }

    fn on_response(&mut self, pdu: Pdu, now: Instant, out: &mut Vec<Action>) {
        let Payload::Response { error, .. } = pdu.payload else {
            return;
        };
        let Some(pos) = self
            .outstanding
            .iter()
            .position(|(id, _, _)| *id == pdu.packet_id)
        else {
            tracing::debug!(packet = pdu.packet_id, "unexpected AgentX Response ignored");
            return;
        };
        let (_, kind, _) = self.outstanding.remove(pos);
        match kind {
            Outstanding::Open => {
                if !error.is_ok() {
                    self.lose(Lost::OpenRefused(error), out);
                    return;
                }
                self.session_id = Some(pdu.session_id);
                self.stats.opens += 1;
                tracing::info!(
                    address = %self.cfg.address,
                    session = pdu.session_id,
                    "AgentX session open"
                );
                if !self.cfg.ping_interval.is_zero() {
                    self.next_ping = Some(now);
                }
                // Register (and Ping) at once.
                out.extend(self.on_timeout(now));
            }
            Outstanding::Register(i) => self.on_register_response(i, pdu.packet_id, error, now),
            Outstanding::Ping => {
                if !error.is_ok() {
                    self.lose(Lost::PingRefused(error), out);
                }
            }
            Outstanding::Notify => {
                if !error.is_ok() {
                    tracing::warn!("master refused Notify: {error}");
                }
            }
        }
    }

    fn on_register_response(&mut self, i: usize, packet_id: u32, error: ResError, now: Instant) {
        let prio = self.cfg.priority;
        let Some(reg) = self.regs.get_mut(i) else {
            return;
        };
        if !matches!(reg.state, RegState::Pending { packet_id: p } if p == packet_id) {
            return;
        }
        if error.is_ok() {
            tracing::info!(subtree = %reg.subtree, priority = prio, "AgentX subtree registered");
            reg.state = RegState::Registered;
            reg.failures.reset();
            reg.backoff.reset();
            return;
        }
        let log = reg.failures.count();
        reg.state = RegState::RetryAt(now + reg.backoff.next_delay());
        let duplicate = error == ResError::Agentx(AgentxError::DuplicateRegistration);
        if duplicate {
            self.stats.duplicate_registrations += 1;
        }
        if let Some(Due { total: attempt, .. }) = log {
            tracing::error!(
                subtree = %reg.subtree,
                priority = prio,
                attempt,
                "AgentX Register of {} at priority {} refused: {}{}; retrying with backoff",
                reg.subtree,
                prio,
                error,
                if duplicate {
                    " (another subagent holds this subtree at the same priority)"
                } else {
                    ""
                }
            );
        }
    }

    fn on_request(&mut self, pdu: Pdu, mib: &dyn MibHandler, out: &mut Vec<Action>) {
        let h = header_of(&pdu);
        let key = (h.session_id, h.transaction_id, h.packet_id, h.pdu_type);
        if h.packet_id <= self.cache_max_packet
            && let Some((_, cached)) = self.cache.iter().find(|(k, _)| *k == key)
        {
            self.stats.resends_answered += 1;
            tracing::debug!(
                packet = h.packet_id,
                "resent AgentX request answered from cache"
            );
            if let Some(bytes) = cached {
                out.push(Action::Send(bytes.clone()));
            }
            return;
        }
        let answer = match self.refusal(&pdu) {
            Some(err) => {
                self.stats.refused += 1;
                (pdu.payload != Payload::CleanupSet)
                    .then(|| Pdu::response_to(&h, ResError::Agentx(err), 0, vec![]))
            }
            None => self.answer(&h, pdu.payload, mib),
        };
        let bytes = answer.and_then(|p| match pdu::encode(&p, h.byte_order()) {
            Ok(b) => Some(b),
            Err(e) => {
                tracing::error!("cannot encode AgentX Response: {e}; answering genErr");
                let p = Pdu::response_to(&h, ResError::Snmp(ErrorStatus::GenErr), 1, vec![]);
                pdu::encode(&p, h.byte_order()).ok()
            }
        });
        // The oldest answer's buffer is reused for the copy kept: no
        // allocation per request once the cache is full.
        let spare = if self.cache.len() >= RESPONSE_CACHE {
            self.cache.pop_front().and_then(|(_, b)| b)
        } else {
            None
        };
        let kept = bytes.as_ref().map(|b| {
            let mut v = spare.unwrap_or_default();
            v.clear();
            v.extend_from_slice(b);
            v
        });
        self.cache.push_back((key, kept));
        self.cache_max_packet = self.cache_max_packet.max(h.packet_id);
        if let Some(b) = bytes {
            out.push(Action::Send(b));
        }
    }

    /// RFC 2741 7.1.4.x / 7.2.1: a request for another session is answered
    /// `notOpen`, one for a non-default context `unsupportedContext`.
    fn refusal(&mut self, pdu: &Pdu) -> Option<AgentxError> {
        if self.session_id != Some(pdu.session_id) {
            if let Some(Due { total: times, .. }) = self.repeats.not_open.count() {
                tracing::warn!(
                    session = pdu.session_id,
                    open = ?self.session_id,
                    times,
                    "AgentX {:?} for a session that is not open here; answering notOpen",
                    pdu.payload.pdu_type()
                );
            }
            return Some(AgentxError::NotOpen);
        }
        if pdu.context.is_some() {
            tracing::debug!(
                "AgentX request for a non-default context; answering unsupportedContext"
            );
            return Some(AgentxError::UnsupportedContext);
        }
        None
    }

    fn answer(&mut self, h: &Header, payload: Payload, mib: &dyn MibHandler) -> Option<Pdu> {
        let txn = SetTxn {
            session_id: h.session_id,
            transaction_id: h.transaction_id,
        };
        let vbs = match payload {
            Payload::Get { ranges, .. } => {
                let names: Vec<Oid> = ranges.into_iter().map(|r| r.start).collect();
                let values = mib.get_many(&names);
                let vbs: Vec<VarBind> = names
                    .into_iter()
                    .zip(values)
                    .map(|(n, v)| VarBind::new(n, v))
                    .collect();
                return Some(whole_or_too_big(h, vbs));
            }
            Payload::GetNext { ranges, .. } => {
                let vbs = ranges.into_iter().map(|r| next_in_range(mib, r)).collect();
                return Some(whole_or_too_big(h, vbs));
            }
            Payload::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges,
                ..
            } => get_bulk(mib, non_repeaters, max_repetitions, &ranges),
            Payload::TestSet { varbinds, .. } => {
                return Some(set_answer(h, self.test_set(txn, &varbinds, mib)));
            }
            Payload::CommitSet => return Some(set_answer(h, self.commit_set(txn, mib))),
            Payload::UndoSet => return Some(set_answer(h, self.undo_set(txn, mib))),
            Payload::CleanupSet => {
                self.cleanup_set(txn, mib);
                return None;
            }
            _ => return None,
        };
        Some(Pdu::response_to(h, ResError::NO_ERROR, 0, vbs))
    }

    fn phase(&mut self, tid: u32) -> Option<&mut TxnPhase> {
        self.txns
            .iter_mut()
            .find(|(t, _)| *t == tid)
            .map(|(_, p)| p)
    }

    /// Refuses a SET phase that does not follow the transaction's last one.
    fn out_of_order(
        &mut self,
        txn: SetTxn,
        what: &'static str,
        status: ErrorStatus,
    ) -> Result<(), SetError> {
        if let Some(Due { total: times, .. }) = self.repeats.out_of_order.count() {
            tracing::warn!(
                transaction = txn.transaction_id,
                times,
                "AgentX {what} refused ({})",
                status.name()
            );
        }
        self.stats.refused += 1;
        Err(SetError { status, index: 0 })
    }

    fn test_set(
        &mut self,
        txn: SetTxn,
        varbinds: &[VarBind],
        mib: &dyn MibHandler,
    ) -> Result<(), SetError> {
        if self.phase(txn.transaction_id).is_some() {
            return self.out_of_order(txn, "a second TestSet", ErrorStatus::GenErr);
        }
        if self.txns.len() >= MAX_TRANSACTIONS
            && let Some((old, _)) = self.txns.pop_front()
        {
            if let Some(Due { total: times, .. }) = self.repeats.abandoned.count() {
                tracing::warn!(
                    transaction = old,
                    times,
                    "AgentX SET transaction without CleanupSet dropped"
                );
            }
            mib.cleanup_set(SetTxn {
                session_id: txn.session_id,
                transaction_id: old,
            });
        }
        let r = mib.test_set(txn, varbinds);
        self.txns
            .push_back((txn.transaction_id, TxnPhase::Tested { ok: r.is_ok() }));
        r
    }

    fn commit_set(&mut self, txn: SetTxn, mib: &dyn MibHandler) -> Result<(), SetError> {
        let Some(phase) = self.phase(txn.transaction_id).copied() else {
            return self.out_of_order(txn, "CommitSet without TestSet", ErrorStatus::CommitFailed);
        };
        match phase {
            TxnPhase::Tested { ok: true } => {
                let r = mib.commit_set(txn);
                if let Some(p) = self.phase(txn.transaction_id) {
                    *p = TxnPhase::Committed(r);
                }
                r
            }
            // Committed already: the same answer, nothing applied twice.
            TxnPhase::Committed(r) => r,
            TxnPhase::Tested { ok: false } => self.out_of_order(
                txn,
                "CommitSet after a failed TestSet",
                ErrorStatus::CommitFailed,
            ),
            TxnPhase::Undone(_) => {
                self.out_of_order(txn, "CommitSet after UndoSet", ErrorStatus::CommitFailed)
            }
        }
    }

    fn undo_set(&mut self, txn: SetTxn, mib: &dyn MibHandler) -> Result<(), SetError> {
        let Some(phase) = self.phase(txn.transaction_id).copied() else {
            return self.out_of_order(txn, "UndoSet without TestSet", ErrorStatus::UndoFailed);
        };
        let r = match phase {
            // Nothing was committed: nothing to undo.
            TxnPhase::Tested { .. } => Ok(()),
            TxnPhase::Committed(_) => mib.undo_set(txn),
            TxnPhase::Undone(r) => return r,
        };
        if let Some(p) = self.phase(txn.transaction_id) {
            *p = TxnPhase::Undone(r);
        }
        r
    }

    fn cleanup_set(&mut self, txn: SetTxn, mib: &dyn MibHandler) {
        match self.txns.iter().position(|(t, _)| *t == txn.transaction_id) {
            Some(i) => {
                self.txns.remove(i);
                mib.cleanup_set(txn);
            }
            None => tracing::debug!(
                transaction = txn.transaction_id,
                "AgentX CleanupSet for an unknown transaction ignored"
            ),
        }
    }
}

mod answers;

pub use answers::get_bulk;
use answers::{header_of, next_in_range, set_answer, whole_or_too_big};

#[cfg(test)]
mod tests;
