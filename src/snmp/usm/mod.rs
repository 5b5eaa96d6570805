//! SNMPv3 with the User-based Security Model (RFC 3414) for the built-in
//! responder: message processing (RFC 3412 §7) for an authoritative engine,
//! authentication, privacy, timeliness, discovery and the Reports that go
//! with them. The message processing is pure: no I/O, the engine's time
//! is passed in (seconds since the engine started), so every step is
//! unit-tested; `snmp::engine_file` is the one file edge (engine ID and
//! boots).
//!
//! Protocols:
//! - Authentication: HMAC-SHA-96 (RFC 3414 §7, "SHA") and the HMAC-SHA-2
//!   protocols of RFC 7860 ("SHA-224", "SHA-256", "SHA-384", "SHA-512").
//! - Privacy: AES-128 in CFB mode (RFC 3826, "AES").
//! - Not offered: HMAC-MD5-96 and CBC-DES. MD5 is broken as a hash
//!   (collisions in seconds); HMAC-MD5 has no published break but no
//!   margin either, and a protocol a site can pick by mistake is worse than
//!   one it cannot. DES has a 56-bit key that exhaustive search on rented
//!   or dedicated hardware finds in about a day, so "authPriv with DES"
//!   would promise a secrecy it does not give. net-snmp and every current
//!   manager speak SHA and AES.
//!
//! The primitives come from RustCrypto (`hmac`, `sha1`, `sha2`, `aes`,
//! `cfb-mode`); [`crypto`] only arranges them as the RFCs say.
//!
//! Behaviour, as RFC 3414 §3.2 orders the checks:
//! 1. Not an SNMPv3 message, or undecodable: dropped (counted in
//!    [`Stats::asn_parse_errs`] when undecodable). Invalid msgFlags
//!    (privacy without authentication): dropped, `snmpInvalidMsgs`. A
//!    security model other than USM: dropped, `snmpUnknownSecurityModels`.
//! 2. An authoritative engine ID other than ours (discovery sends an empty
//!    one): `usmStatsUnknownEngineIDs` Report carrying our engine ID, boots
//!    and time.
//! 3. Unknown user: `usmStatsUnknownUserNames`. A level the user has no
//!    keys for: `usmStatsUnsupportedSecLevels`. Wrong HMAC:
//!    `usmStatsWrongDigests`. These Reports are unauthenticated.
//! 4. Authenticated but outside the time window (other boots, or more than
//!    150 s from our time): `usmStatsNotInTimeWindows`, a Report
//!    authenticated with the user's key (RFC 3414 §3.2 step 7a), so the
//!    manager can trust and adopt the boots/time it carries.
//! 5. Privacy parameters that are not 8 octets, or a ciphertext that does
//!    not decrypt into a ScopedPDU: `usmStatsDecryptionErrors`.
//! 6. A contextEngineID neither ours nor empty: `snmpUnknownPDUHandlers`,
//!    a Report at the request's level.
//!
//! A request's level is whatever its msgFlags say: anyone can send a
//! noAuthNoPriv message in a user's name (or strip the flags of a captured
//! one). Access control must therefore demand a minimum
//! [`SecurityLevel`] per user; [`RequestCtx::level`] is what was verified.
//!
//! Reports are sent only when the request's reportableFlag is set; the
//! counter counts either way. Every length is bounded by the datagram, and
//! nothing here panics on any input (a fuzz-style test mutates real
//! messages).
//!
//! Key localization (1 MB of hashing per passphrase) happens when a [`User`]
//! is built; a message costs one HMAC and, at authPriv, one AES pass.
//!
//! Use, in a responder:
//! 1. At start: `snmp::engine_file` (the engine file, the configured engine
//!    ID or none) gives the engine ID and this start's boots; build the
//!    [`User`]s with that engine ID, then [`Usm::new`]: one engine per
//!    process, its handle cloned for the endpoint and the trap sender.
//!    snmpEngineTime is the seconds since then, passed to every call.
//! 2. Per datagram whose msgVersion ([`message_version`]) is 3, from a
//!    source some v3 access entry allows (a discovery probe names no user
//!    and its Report is larger than the probe, so a spoofed source must
//!    not get one): [`Usm::incoming_guarded`], whose `permit` (the rate
//!    guard) is asked before a Report is built. A [`Incoming::Report`] is
//!    sent back as it is; a [`Incoming::Request`] goes through access
//!    control (the user `usm.users()[ctx.user]`, the verified `ctx.level`,
//!    `ctx.context_name`), then its Response PDU, sized so that PDU +
//!    [`Usm::overhead`] fits `min(ctx.max_size, own limit)`, goes to
//!    [`Usm::response`].
//! 3. Notifications to a v3 sink: [`Usm::trap`] with the sink's user.
//! 4. [`Usm::stats`] for usmStats and the SNMP-MPD-MIB counters.

pub mod crypto;
mod user;
mod wire;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

use rasn::types::{Integer, ObjectIdentifier, OctetString};
use rasn_smi::v1::Counter;
use rasn_smi::v2::{ApplicationSyntax, ObjectSyntax};
use rasn_snmp::v2::{Pdu, Pdus, Report, VarBind, VarBindValue};
use rasn_snmp::v3::{HeaderData, Message, ScopedPdu, ScopedPduData, USMSecurityParameters};

pub use user::{ENGINE_ID_ENTERPRISE, EngineId, EngineIdError, Key, User, UserError};

pub use crypto::{
    AUTH_PROTOCOLS, AuthProtocol, KeyError, PrivProtocol, ProtocolError, localize, parse_hex,
    password_to_key,
};

use super::ber::MIN_MESSAGE_SIZE;
use super::codec::{int_size, tlv};
use crate::mib::bulk::MAX_UDP_PAYLOAD;

/// The USM's securityModel number (RFC 3411).
const USM_MODEL: i64 = 3;

/// RFC 3414 §2.2.3: a message more than this many seconds from the
/// authoritative engine's time is outside the time window.
pub const TIME_WINDOW: u32 = 150;

/// Largest snmpEngineBoots/snmpEngineTime (RFC 3414 §2.2.1); boots at this
/// value latch: no authenticated message is accepted any more.
pub const ENGINE_MAX: u32 = 2_147_483_647;

const FLAG_AUTH: u8 = 0x01;
const FLAG_PRIV: u8 = 0x02;
const FLAG_REPORTABLE: u8 = 0x04;

/// snmpMPDStats (RFC 3412 §5, SNMP-MPD-MIB).
const MPD_STATS: [u32; 9] = [1, 3, 6, 1, 6, 3, 11, 2, 1];
/// usmStats (RFC 3414 §5, SNMP-USER-BASED-SM-MIB).
const USM_STATS: [u32; 9] = [1, 3, 6, 1, 6, 3, 15, 1, 1];

/// The `.0` instance of column `n` under `group`.
const fn scalar(group: [u32; 9], n: u32) -> [u32; 11] {
    let mut o = [0; 11];
    let mut i = 0;
    while i < 9 {
        o[i] = group[i];
        i += 1;
    }
    o[9] = n;
    o
}

pub const SNMP_UNKNOWN_SECURITY_MODELS: [u32; 11] = scalar(MPD_STATS, 1);
pub const SNMP_INVALID_MSGS: [u32; 11] = scalar(MPD_STATS, 2);
pub const SNMP_UNKNOWN_PDU_HANDLERS: [u32; 11] = scalar(MPD_STATS, 3);
pub const USM_STATS_UNSUPPORTED_SEC_LEVELS: [u32; 11] = scalar(USM_STATS, 1);
pub const USM_STATS_NOT_IN_TIME_WINDOWS: [u32; 11] = scalar(USM_STATS, 2);
pub const USM_STATS_UNKNOWN_USER_NAMES: [u32; 11] = scalar(USM_STATS, 3);
pub const USM_STATS_UNKNOWN_ENGINE_IDS: [u32; 11] = scalar(USM_STATS, 4);
pub const USM_STATS_WRONG_DIGESTS: [u32; 11] = scalar(USM_STATS, 5);
pub const USM_STATS_DECRYPTION_ERRORS: [u32; 11] = scalar(USM_STATS, 6);

/// noAuthNoPriv < authNoPriv < authPriv, so a minimum can be compared.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SecurityLevel {
    NoAuthNoPriv,
    AuthNoPriv,
    AuthPriv,
}

impl SecurityLevel {
    fn flags(self) -> u8 {
        match self {
            SecurityLevel::NoAuthNoPriv => 0,
            SecurityLevel::AuthNoPriv => FLAG_AUTH,
            SecurityLevel::AuthPriv => FLAG_AUTH | FLAG_PRIV,
        }
    }

    fn from_flags(flags: u8) -> Option<Self> {
        match flags & (FLAG_AUTH | FLAG_PRIV) {
            0 => Some(SecurityLevel::NoAuthNoPriv),
            FLAG_AUTH => Some(SecurityLevel::AuthNoPriv),
            3 => Some(SecurityLevel::AuthPriv),
            _ => None,
        }
    }
}

impl fmt::Display for SecurityLevel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SecurityLevel::NoAuthNoPriv => "noAuthNoPriv",
            SecurityLevel::AuthNoPriv => "authNoPriv",
            SecurityLevel::AuthPriv => "authPriv",
        })
    }
}

atomic_counters! {
    /// [`Stats`] as the engine counts them, shared by everyone who holds it.
    struct Counters: AtomicU32;
    /// The counters of SNMP-USER-BASED-SM-MIB's usmStats and SNMP-MPD-MIB, and
    /// snmpInASNParseErrs for the v3 messages that did not decode. Counter32:
    /// they wrap.
    pub struct Stats: u32 {
        unsupported_sec_levels,
        not_in_time_windows,
        unknown_user_names,
        unknown_engine_ids,
        wrong_digests,
        decryption_errors,
        unknown_security_models,
        invalid_msgs,
        unknown_pdu_handlers,
        asn_parse_errs,
    }
}

impl Stats {
    /// Each SNMP-MPD-MIB and usmStats counter with its OID (the `.0`
    /// instance), in OID order, for a MIB handler to serve.
    pub fn mib_counters(&self) -> [(&'static [u32; 11], u32); 9] {
        [
            (&SNMP_UNKNOWN_SECURITY_MODELS, self.unknown_security_models),
            (&SNMP_INVALID_MSGS, self.invalid_msgs),
            (&SNMP_UNKNOWN_PDU_HANDLERS, self.unknown_pdu_handlers),
            (
                &USM_STATS_UNSUPPORTED_SEC_LEVELS,
                self.unsupported_sec_levels,
            ),
            (&USM_STATS_NOT_IN_TIME_WINDOWS, self.not_in_time_windows),
            (&USM_STATS_UNKNOWN_USER_NAMES, self.unknown_user_names),
            (&USM_STATS_UNKNOWN_ENGINE_IDS, self.unknown_engine_ids),
            (&USM_STATS_WRONG_DIGESTS, self.wrong_digests),
            (&USM_STATS_DECRYPTION_ERRORS, self.decryption_errors),
        ]
    }
}

/// Which error a Report (or an unreportable drop) is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ReportKind {
    UnsupportedSecLevel,
    NotInTimeWindow,
    UnknownUserName,
    UnknownEngineId,
    WrongDigest,
    DecryptionError,
    UnknownPduHandler,
}

impl Counters {
    /// Counts one (Counter32: wraps); the new value.
    fn bump(c: &AtomicU32) -> u32 {
        c.fetch_add(1, Ordering::Relaxed).wrapping_add(1)
    }
}

impl ReportKind {
    /// The counter's OID (its `.0` instance), the Report's one varbind.
    pub fn oid(self) -> &'static [u32; 11] {
        match self {
            ReportKind::UnsupportedSecLevel => &USM_STATS_UNSUPPORTED_SEC_LEVELS,
            ReportKind::NotInTimeWindow => &USM_STATS_NOT_IN_TIME_WINDOWS,
            ReportKind::UnknownUserName => &USM_STATS_UNKNOWN_USER_NAMES,
            ReportKind::UnknownEngineId => &USM_STATS_UNKNOWN_ENGINE_IDS,
            ReportKind::WrongDigest => &USM_STATS_WRONG_DIGESTS,
            ReportKind::DecryptionError => &USM_STATS_DECRYPTION_ERRORS,
            ReportKind::UnknownPduHandler => &SNMP_UNKNOWN_PDU_HANDLERS,
        }
    }

    fn counter(self, s: &Counters) -> &AtomicU32 {
        match self {
            ReportKind::UnsupportedSecLevel => &s.unsupported_sec_levels,
            ReportKind::NotInTimeWindow => &s.not_in_time_windows,
            ReportKind::UnknownUserName => &s.unknown_user_names,
            ReportKind::UnknownEngineId => &s.unknown_engine_ids,
            ReportKind::WrongDigest => &s.wrong_digests,
            ReportKind::DecryptionError => &s.decryption_errors,
            ReportKind::UnknownPduHandler => &s.unknown_pdu_handlers,
        }
    }
}

/// Why a datagram gets no answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    /// Not decodable as an SNMPv3 message (snmpInASNParseErrs).
    Malformed,
    /// A message of another SNMP version (for the v1/v2c path).
    NotV3,
    /// msgFlags privacy without authentication, or not one octet (snmpInvalidMsgs).
    InvalidFlags,
    /// A security model other than USM (snmpUnknownSecurityModels).
    UnknownSecurityModel,
    /// An error that would be reported, but the reportableFlag is clear.
    Unreported(ReportKind),
    /// A Response, Report or Trap: nothing this agent waits for.
    NotARequest,
    /// A Report the caller's guard did not let be built (counted, not sent).
    Refused(ReportKind),
}

/// What an incoming datagram became.
#[derive(Debug)]
pub enum Incoming {
    /// An authenticated (as its level says) and decrypted request to answer
    /// with [`Usm::response`].
    Request(RequestCtx, Pdus),
    /// Send these octets back: a Report, its counter already counted.
    Report(ReportKind, Vec<u8>),
    /// Nothing to send.
    Drop(DropReason),
}

/// What a response needs from its request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestCtx {
    pub msg_id: i32,
    /// The manager's msgMaxSize: the largest message it accepts.
    pub max_size: u32,
    /// Index of the user in the [`Usm`]'s user list.
    pub user: usize,
    pub level: SecurityLevel,
    /// The request's contextEngineID (ours, or empty), echoed in the response.
    pub context_engine_id: Vec<u8>,
    pub context_name: Vec<u8>,
    pub reportable: bool,
}

/// The engine: its ID, boots, users and counters. A handle: its clones
/// share one engine (the endpoint and the trap sender hold the same one,
/// so usmStats count both, the AES salt never repeats between them). The
/// users and their localized keys are an immutable key store, made once at
/// the start; the keys are wiped when the last handle goes.
#[derive(Clone)]
pub struct Usm(Arc<Engine>);

/// What a [`Usm`] handle shares.
struct Engine {
    engine_id: EngineId,
    boots: u32,
    users: Vec<User>,
    by_name: HashMap<Vec<u8>, usize>,
    /// The AES salt (RFC 3826 §3.1.2.1), raised for every encrypted message.
    salt: AtomicU64,
    /// msgID of the next notification this engine sends (31 bits).
    next_msg_id: AtomicU32,
    stats: Counters,
    /// msgMaxSize in the messages this engine sends.
    max_size: AtomicU32,
}

impl fmt::Debug for Usm {
    /// Never prints keys (a [`User`] prints its name and protocols).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Usm")
            .field("engine_id", &self.0.engine_id)
            .field("boots", &self.0.boots)
            .field("users", &self.0.users)
            .field("stats", &self.0.stats.snapshot())
            .finish()
    }
}

/// Reads an INTEGER field that must lie in 0..=2^31-1 (every v3 header
/// integer does).
fn non_negative(i: &Integer) -> Option<u32> {
    i64::try_from(i)
        .ok()
        .filter(|v| (0..=ENGINE_MAX as i64).contains(v))
        .map(|v| v as u32)
}

/// A report's or response's scoped PDU is this large at most beyond the
/// PDU: contextEngineID (≤ 32 octets) and contextName (≤ 32 octets), and
/// the SEQUENCE header.
fn scoped_overhead(ctx_engine: usize, ctx_name: usize) -> usize {
    tlv(ctx_engine) + tlv(ctx_name) + 4
}

impl Usm {
    /// An engine with `boots` (snmpEngineBoots, raised at every start by the
    /// caller: `snmp::engine_file`) and `users`, whose keys must be
    /// localized to `engine_id`. The `engine_time` passed to the methods is
    /// snmpEngineTime: seconds since this start. The AES salt and the first
    /// notification msgID start at random values.
    pub fn new(engine_id: EngineId, boots: u32, users: Vec<User>) -> Result<Usm, getrandom::Error> {
        let mut r = [0u8; 12];
        getrandom::fill(&mut r)?;
        let salt = u64::from_be_bytes(r[..8].try_into().expect("8 octets"));
        let msg_id = u32::from_be_bytes(r[8..].try_into().expect("4 octets"));
        Ok(Usm::with_seeds(engine_id, boots, users, salt, msg_id))
    }

    /// [`Usm::new`] with the salt and first msgID given (for tests).
    pub fn with_seeds(
        engine_id: EngineId,
        boots: u32,
        users: Vec<User>,
        salt: u64,
        msg_id: u32,
    ) -> Usm {
        let by_name = users
            .iter()
            .enumerate()
            .map(|(i, u)| (u.name.clone(), i))
            .collect();
        Usm(Arc::new(Engine {
            engine_id,
            boots: boots.min(ENGINE_MAX),
            users,
            by_name,
            salt: AtomicU64::new(salt),
            next_msg_id: AtomicU32::new(msg_id & 0x7fff_ffff),
            stats: Counters::default(),
            max_size: AtomicU32::new(MAX_UDP_PAYLOAD as u32),
        }))
    }

    pub fn engine_id(&self) -> &EngineId {
        &self.0.engine_id
    }

    pub fn boots(&self) -> u32 {
        self.0.boots
    }

    /// msgMaxSize of the messages this engine sends (snmpEngineMaxMessageSize).
    pub fn max_message_size(&self) -> u32 {
        self.0.max_size.load(Ordering::Relaxed)
    }

    /// Announces `octets` (clamped to [`MIN_MESSAGE_SIZE`]..=[`MAX_UDP_PAYLOAD`])
    /// as this engine's msgMaxSize.
    pub fn with_max_message_size(self, octets: u32) -> Usm {
        let octets = octets.clamp(MIN_MESSAGE_SIZE as u32, MAX_UDP_PAYLOAD as u32);
        self.0.max_size.store(octets, Ordering::Relaxed);
        self
    }

    pub fn users(&self) -> &[User] {
        &self.0.users
    }

    /// The index of the user called `name`.
    pub fn user_index(&self, name: &str) -> Option<usize> {
        self.0.by_name.get(name.as_bytes()).copied()
    }

    pub fn stats(&self) -> Stats {
        self.0.stats.snapshot()
    }

    /// Counts a datagram dropped before USM processing (not decodable).
    fn malformed(&self) -> Incoming {
        Counters::bump(&self.0.stats.asn_parse_errs);
        Incoming::Drop(DropReason::Malformed)
    }

    /// Processes one received datagram at `engine_time` (seconds since this
    /// engine's boot; clamped to 2^31-1), answering every reportable error
    /// with a Report.
    pub fn incoming(&self, bytes: &[u8], engine_time: u32) -> Incoming {
        self.incoming_guarded(bytes, engine_time, &mut |_| true)
    }

    /// [`Usm::incoming`], asking `permit` before a Report is built (a
    /// rate guard): refused, it is counted but neither built nor sent
    /// ([`DropReason::Refused`]).
    pub fn incoming_guarded(
        &self,
        bytes: &[u8],
        engine_time: u32,
        permit: &mut dyn FnMut(ReportKind) -> bool,
    ) -> Incoming {
        let now = engine_time.min(ENGINE_MAX);
        // The framing checked (no octets after the message), a cleartext
        // GetBulk's negative fields read as 0; the digest is checked over
        // the octets as received.
        let Ok(framed) = super::ber::normalize(bytes, false) else {
            return match message_version(bytes) {
                Some(v) if v != 3 => Incoming::Drop(DropReason::NotV3),
                _ => self.malformed(),
            };
        };
        let Ok(msg) = rasn::ber::decode::<Message>(&framed) else {
            // A v1/v2c message does not decode as a v3 one; say so.
            return match message_version(bytes) {
                Some(v) if v != 3 => Incoming::Drop(DropReason::NotV3),
                _ => self.malformed(),
            };
        };
        if i64::try_from(&msg.version).ok() != Some(3) {
            return Incoming::Drop(DropReason::NotV3);
        }
        let h = &msg.global_data;
        let (Some(msg_id), Some(max_size), Some(model)) = (
            non_negative(&h.message_id),
            non_negative(&h.max_size),
            i64::try_from(&h.security_model).ok(),
        ) else {
            return self.malformed();
        };
        // The smallest msgMaxSize a manager may announce (RFC 3412 §6.3).
        if max_size < MIN_MESSAGE_SIZE as u32 || !(1..=ENGINE_MAX as i64).contains(&model) {
            return self.malformed();
        }
        let msg_id = msg_id as i32;
        let (flags, level) = match &h.flags[..] {
            [f] => match SecurityLevel::from_flags(*f) {
                Some(l) => (*f, l),
                None => {
                    Counters::bump(&self.0.stats.invalid_msgs);
                    return Incoming::Drop(DropReason::InvalidFlags);
                }
            },
            _ => {
                Counters::bump(&self.0.stats.invalid_msgs);
                return Incoming::Drop(DropReason::InvalidFlags);
            }
        };
        let reportable = flags & FLAG_REPORTABLE != 0;
        if model != USM_MODEL {
            Counters::bump(&self.0.stats.unknown_security_models);
            return Incoming::Drop(DropReason::UnknownSecurityModel);
        }
        let Ok(sec) = rasn::ber::decode::<USMSecurityParameters>(&msg.security_parameters) else {
            return self.malformed();
        };
        let (Some(msg_boots), Some(msg_time)) = (
            non_negative(&sec.authoritative_engine_boots),
            non_negative(&sec.authoritative_engine_time),
        ) else {
            return self.malformed();
        };
        if sec.authoritative_engine_id.len() > 32 || sec.user_name.len() > 32 {
            return self.malformed();
        }
        // The request-id, when the PDU is in clear, for the Reports below.
        let clear_request_id = match &msg.scoped_data {
            ScopedPduData::CleartextPdu(s) => request_id(&s.data),
            ScopedPduData::EncryptedPdu(_) => 0,
        };
        let report = Reporter {
            msg_id,
            max_size,
            reportable,
            user_name: &sec.user_name,
            request_id: clear_request_id,
            now,
        };

        // RFC 3414 3.2 step 3: we are authoritative for every request.
        if sec.authoritative_engine_id[..] != *self.0.engine_id.as_bytes() {
            return self.report(permit, &report, ReportKind::UnknownEngineId, None);
        }
        // Step 4: the user.
        let Some(&user_ix) = self.0.by_name.get(&sec.user_name[..]) else {
            return self.report(permit, &report, ReportKind::UnknownUserName, None);
        };
        // Step 5: a level the user's keys allow.
        if level > self.0.users[user_ix].max_level() {
            return self.report(permit, &report, ReportKind::UnsupportedSecLevel, None);
        }
        // Step 6: the digest.
        if level >= SecurityLevel::AuthNoPriv {
            let Some(range) = wire::auth_params_range(bytes) else {
                return self.malformed();
            };
            let Some((proto, key)) = self.0.users[user_ix].auth.as_ref() else {
                return self.report(permit, &report, ReportKind::UnsupportedSecLevel, None);
            };
            let zeros = [0u8; 48];
            let tag = &bytes[range.clone()];
            let ok = tag.len() == proto.mac_len()
                && tag[..] == sec.authentication_parameters[..]
                && crypto::verify(
                    *proto,
                    key,
                    &[
                        &bytes[..range.start],
                        &zeros[..range.len()],
                        &bytes[range.end..],
                    ],
                    tag,
                );
            if !ok {
                return self.report(permit, &report, ReportKind::WrongDigest, None);
            }
            // Step 7: timeliness, for an authoritative receiver.
            if self.0.boots == ENGINE_MAX
                || msg_boots != self.0.boots
                || msg_time.abs_diff(now) > TIME_WINDOW
            {
                return self.report(permit, &report, ReportKind::NotInTimeWindow, Some(user_ix));
            }
        }
        // Step 8: privacy.
        let scoped = if level == SecurityLevel::AuthPriv {
            let ScopedPduData::EncryptedPdu(cipher) = &msg.scoped_data else {
                return self.report(permit, &report, ReportKind::DecryptionError, None);
            };
            let Ok(salt) = <[u8; 8]>::try_from(&sec.privacy_parameters[..]) else {
                return self.report(permit, &report, ReportKind::DecryptionError, None);
            };
            let Some((_, key)) = self.0.users[user_ix].privacy.as_ref() else {
                return self.report(permit, &report, ReportKind::UnsupportedSecLevel, None);
            };
            let mut plain = cipher.to_vec();
            crypto::aes_decrypt(key, msg_boots, msg_time, &salt, &mut plain);
            // RFC 3826 leaves no padding, but a decoder reads the one
            // ScopedPDU and stops: what follows it is not looked at.
            let plain = match super::ber::normalize(&plain, true) {
                Ok(p) => p,
                Err(_) => return self.report(permit, &report, ReportKind::DecryptionError, None),
            };
            match rasn::ber::decode::<ScopedPdu>(&plain) {
                Ok(s) => s,
                Err(_) => return self.report(permit, &report, ReportKind::DecryptionError, None),
            }
        } else {
            match msg.scoped_data {
                ScopedPduData::CleartextPdu(s) => s,
                // authNoPriv or noAuthNoPriv with an encrypted PDU.
                ScopedPduData::EncryptedPdu(_) => return self.malformed(),
            }
        };
        let ScopedPdu {
            engine_id: context_engine_id,
            name: context_name,
            data,
        } = scoped;
        if context_engine_id.len() > 32 || context_name.len() > 32 {
            return self.malformed();
        }
        match data {
            Pdus::GetRequest(_)
            | Pdus::GetNextRequest(_)
            | Pdus::GetBulkRequest(_)
            | Pdus::SetRequest(_)
            | Pdus::InformRequest(_) => {}
            Pdus::Response(_) | Pdus::Trap(_) | Pdus::Report(_) => {
                return Incoming::Drop(DropReason::NotARequest);
            }
        }
        let ctx = RequestCtx {
            msg_id,
            max_size,
            user: user_ix,
            level,
            context_engine_id: context_engine_id.to_vec(),
            context_name: context_name.to_vec(),
            reportable,
        };
        // RFC 3412 4.2.2.1: no application for another engine's contexts.
        if !ctx.context_engine_id.is_empty()
            && ctx.context_engine_id[..] != *self.0.engine_id.as_bytes()
        {
            let report = Reporter {
                request_id: request_id(&data),
                ..report
            };
            return self.report_at(
                permit,
                &report,
                ReportKind::UnknownPduHandler,
                Some(user_ix),
                level,
            );
        }
        Incoming::Request(ctx, data)
    }

    /// Counts `kind` and, when reportable, a Report: unauthenticated, or
    /// authNoPriv with `user`'s key (a time-window Report).
    fn report(
        &self,
        permit: &mut dyn FnMut(ReportKind) -> bool,
        r: &Reporter<'_>,
        kind: ReportKind,
        user: Option<usize>,
    ) -> Incoming {
        let level = match user {
            Some(_) => SecurityLevel::AuthNoPriv,
            None => SecurityLevel::NoAuthNoPriv,
        };
        self.report_at(permit, r, kind, user, level)
    }

    /// Counts `kind` and, when reportable and `permit` lets it, a Report
    /// at `level` (RFC 3412 7.1: contextEngineID ours, the default context,
    /// reportableFlag clear) within the request's msgMaxSize.
    fn report_at(
        &self,
        permit: &mut dyn FnMut(ReportKind) -> bool,
        r: &Reporter<'_>,
        kind: ReportKind,
        user: Option<usize>,
        level: SecurityLevel,
    ) -> Incoming {
        let value = Counters::bump(kind.counter(&self.0.stats));
        if !r.reportable {
            return Incoming::Drop(DropReason::Unreported(kind));
        }
        if !permit(kind) {
            return Incoming::Drop(DropReason::Refused(kind));
        }
        let pdus = report_pdu(r.request_id, kind, value);
        let engine = self.0.engine_id.as_bytes().to_vec();
        let header = Header {
            msg_id: r.msg_id,
            level,
            reportable: false,
            user,
            user_name: r.user_name,
            ctx_engine: &engine,
            ctx_name: &[],
        };
        match self.encode(&header, pdus, self.0.boots, r.now) {
            Some(bytes) if bytes.len() <= r.max_size as usize => Incoming::Report(kind, bytes),
            _ => Incoming::Drop(DropReason::Unreported(kind)),
        }
    }

    /// The response to a request: `pdus` (a Response PDU) at the request's
    /// level, for its user, `None` only when `ctx` is not from this engine.
    pub fn response(&self, ctx: &RequestCtx, pdus: Pdus, engine_time: u32) -> Option<Vec<u8>> {
        let user_name = self.0.users.get(ctx.user)?.name.clone();
        let header = Header {
            msg_id: ctx.msg_id,
            level: ctx.level,
            reportable: false,
            user: Some(ctx.user),
            user_name: &user_name,
            ctx_engine: &ctx.context_engine_id,
            ctx_name: &ctx.context_name,
        };
        self.encode(&header, pdus, self.0.boots, engine_time.min(ENGINE_MAX))
    }

    /// Octets a response to `ctx` adds around its PDU's BER encoding, at
    /// most: a response is never longer than this plus the PDU (for a
    /// message under 64 KiB, which a UDP datagram is).
    pub fn overhead(&self, ctx: &RequestCtx) -> usize {
        let user = self.0.users.get(ctx.user);
        let name = user.map_or(32, |u| u.name.len());
        let (mac, salt) = match ctx.level {
            SecurityLevel::NoAuthNoPriv => (0, 0),
            SecurityLevel::AuthNoPriv => (
                user.and_then(|u| u.auth_protocol())
                    .map_or(48, |p| p.mac_len()),
                0,
            ),
            SecurityLevel::AuthPriv => (
                user.and_then(|u| u.auth_protocol())
                    .map_or(48, |p| p.mac_len()),
                8,
            ),
        };
        let max_int = int_size(ENGINE_MAX as i64);
        let usm =
            tlv(self.0.engine_id.as_bytes().len()) + 2 * max_int + tlv(name) + tlv(mac) + tlv(salt);
        let header = int_size(ctx.msg_id.into()) + int_size(self.max_message_size().into()) + 3 + 3;
        let scoped = scoped_overhead(ctx.context_engine_id.len(), ctx.context_name.len());
        // An encrypted scoped PDU is wrapped in an OCTET STRING of its length.
        let wrap = if ctx.level == SecurityLevel::AuthPriv {
            4
        } else {
            0
        };
        // message SEQUENCE header (≤ 4 octets under 64 KiB) + version
        4 + 3 + tlv(header) + tlv(tlv(usm)) + scoped + wrap
    }

    /// An SNMPv2-Trap (or any unconfirmed PDU) from this engine, the
    /// authoritative one, to `user` at `level` (capped at what the user's
    /// keys allow). `None` when `user` is no index of this engine's users.
    pub fn trap(
        &self,
        user: usize,
        level: SecurityLevel,
        pdus: Pdus,
        engine_time: u32,
    ) -> Option<Vec<u8>> {
        let u = self.0.users.get(user)?;
        let level = level.min(u.max_level());
        let name = u.name.clone();
        let msg_id = (self.0.next_msg_id.fetch_add(1, Ordering::Relaxed) & 0x7fff_ffff) as i32;
        let engine = self.0.engine_id.as_bytes().to_vec();
        let header = Header {
            msg_id,
            level,
            reportable: false,
            user: Some(user),
            user_name: &name,
            ctx_engine: &engine,
            ctx_name: &[],
        };
        self.encode(&header, pdus, self.0.boots, engine_time.min(ENGINE_MAX))
    }

    /// Encodes, encrypts and signs one message from this (authoritative)
    /// engine.
    fn encode(&self, h: &Header<'_>, pdus: Pdus, boots: u32, now: u32) -> Option<Vec<u8>> {
        let Header {
            msg_id,
            level,
            reportable,
            user,
            user_name,
            ctx_engine,
            ctx_name,
        } = *h;
        let extra_flags = if reportable { FLAG_REPORTABLE } else { 0 };
        let u = match level {
            SecurityLevel::NoAuthNoPriv => None,
            _ => Some(self.0.users.get(user?)?),
        };
        let auth = match u {
            Some(u) => Some(u.auth.as_ref()?),
            None => None,
        };
        let scoped = ScopedPdu {
            engine_id: OctetString::from(ctx_engine.to_vec()),
            name: OctetString::from(ctx_name.to_vec()),
            data: pdus,
        };
        let (scoped_data, priv_params) = if level == SecurityLevel::AuthPriv {
            let (_, key) = u?.privacy.as_ref()?;
            let salt = self.0.salt.fetch_add(1, Ordering::Relaxed).to_be_bytes();
            let mut plain = rasn::ber::encode(&scoped).ok()?;
            crypto::aes_encrypt(key, boots, now, &salt, &mut plain);
            (ScopedPduData::EncryptedPdu(plain.into()), salt.to_vec())
        } else {
            (ScopedPduData::CleartextPdu(scoped), Vec::new())
        };
        let sec = USMSecurityParameters {
            authoritative_engine_id: OctetString::from(self.0.engine_id.as_bytes().to_vec()),
            authoritative_engine_boots: Integer::from(i64::from(boots)),
            authoritative_engine_time: Integer::from(i64::from(now)),
            user_name: OctetString::from(user_name.to_vec()),
            authentication_parameters: vec![0u8; auth.map_or(0, |a| a.0.mac_len())].into(),
            privacy_parameters: priv_params.into(),
        };
        let msg = Message {
            version: Integer::from(3),
            global_data: HeaderData {
                message_id: Integer::from(i64::from(msg_id)),
                max_size: Integer::from(i64::from(self.max_message_size())),
                flags: vec![level.flags() | extra_flags].into(),
                security_model: Integer::from(USM_MODEL),
            },
            security_parameters: rasn::ber::encode(&sec).ok()?.into(),
            scoped_data,
        };
        let mut bytes = rasn::ber::encode(&msg).ok()?;
        if let Some((proto, key)) = auth {
            let range = wire::auth_params_range(&bytes)?;
            let mut tag = [0u8; 48];
            crypto::sign(*proto, key, &bytes, &mut tag);
            bytes[range].copy_from_slice(&tag[..proto.mac_len()]);
        }
        Some(bytes)
    }
}

/// The header fields of a message this engine sends.
#[derive(Clone, Copy)]
struct Header<'a> {
    msg_id: i32,
    level: SecurityLevel,
    reportable: bool,
    /// Whose keys sign and encrypt (unused at noAuthNoPriv).
    user: Option<usize>,
    user_name: &'a [u8],
    ctx_engine: &'a [u8],
    ctx_name: &'a [u8],
}

/// What a Report echoes from the request.
#[derive(Clone, Copy)]
struct Reporter<'a> {
    msg_id: i32,
    /// The request's msgMaxSize.
    max_size: u32,
    reportable: bool,
    user_name: &'a [u8],
    request_id: i32,
    now: u32,
}

fn request_id(p: &Pdus) -> i32 {
    match p {
        Pdus::GetRequest(r) => r.0.request_id,
        Pdus::GetNextRequest(r) => r.0.request_id,
        Pdus::GetBulkRequest(r) => r.0.request_id,
        Pdus::SetRequest(r) => r.0.request_id,
        Pdus::InformRequest(r) => r.0.request_id,
        Pdus::Response(r) => r.0.request_id,
        Pdus::Trap(r) => r.0.request_id,
        Pdus::Report(r) => r.0.request_id,
    }
}

fn report_pdu(request_id: i32, kind: ReportKind, value: u32) -> Pdus {
    Pdus::Report(Report(Pdu {
        request_id,
        error_status: 0,
        error_index: 0,
        variable_bindings: vec![VarBind {
            name: ObjectIdentifier::new(kind.oid().to_vec()).expect("a valid OID"),
            value: VarBindValue::Value(ObjectSyntax::ApplicationWide(ApplicationSyntax::Counter(
                Counter(value),
            ))),
        }],
    }))
}

/// The msgVersion of an SNMP message (0 v1, 1 v2c, 3 v3) without decoding
/// the rest, for a responder to choose its path: the first INTEGER inside
/// the outer SEQUENCE. `None` when the octets do not start that way.
pub fn message_version(bytes: &[u8]) -> Option<i64> {
    let (&t, rest) = bytes.split_first()?;
    if t != 0x30 {
        return None;
    }
    let skip = match *rest.first()? {
        l if l < 0x80 => 1,
        l => 1 + (l & 0x7f) as usize,
    };
    let body = rest.get(skip..)?;
    let (&t, rest) = body.split_first()?;
    let (&n, rest) = rest.split_first()?;
    if t != 0x02 || n == 0 || n > 8 {
        return None;
    }
    let v = rest.get(..n as usize)?;
    let init = if v[0] & 0x80 != 0 { -1i64 } else { 0 };
    Some(v.iter().fold(init, |a, b| (a << 8) | i64::from(*b)))
}
