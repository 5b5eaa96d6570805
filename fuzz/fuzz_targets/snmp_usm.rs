//! SNMPv3 datagrams through the endpoint's `Processor` with a USM whose
//! users cover every level and protocol (those of tests/fixtures/usm, the
//! fixtures' engine ID, boots 0, so net-snmp's and pysnmp's captured
//! requests authenticate), over a writable MIB view of the simulated
//! fabric: never a panic, and every answer is one decodable SNMP message of
//! at most the rules' 1472 octets.
//!
//! Input: octet 0 chooses the mode, octet 1 is snmpEngineTime (seconds).
//! - Mode 0 (octet 0 even): the rest is the datagram.
//! - Mode 1 (odd): the rest is [user, level, msgMaxSize (2 octets),
//!   plaintext]: the target builds the message a manager with that user's
//!   keys would send (authenticated, and encrypted at authPriv) around the
//!   plaintext as its ScopedPDU, so the fuzzer reaches what follows the
//!   digest check (decryption, the ScopedPDU and PDU decoders, access
//!   control, the PDU layer), which no mutated datagram can.
#![no_main]

use std::net::IpAddr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ibpm_agentx::snmp::access::{AccessTable, Level, Principal, RateGuard, Rule, Subtrees};
use ibpm_agentx::snmp::usm::{
    AuthProtocol, EngineId, PrivProtocol, User, Usm, crypto, localize, password_to_key,
};
use ibpm_agentx::snmp::{Outcome, Processor, ResponderConfig};
use ibpm_agentx_fuzz::{Bytes, with_sim_view};
use libfuzzer_sys::fuzz_target;
use rasn::types::{Integer, OctetString};
use rasn_snmp::v3::{HeaderData, Message, ScopedPduData, USMSecurityParameters};

const ENGINE: &str = "80000000050102030405060708";
const MAX_RESPONSE: usize = 1472;

/// name, (auth protocol, passphrase), privacy passphrase: the fixtures'.
type FixtureUser = (&'static str, Option<(AuthProtocol, &'static str)>, Option<&'static str>);
const USERS: [FixtureUser; 6] = [
    ("nms-sha", Some((AuthProtocol::Sha1, "sha-auth-pass")), Some("sha-priv-pass")),
    ("nms-256", Some((AuthProtocol::Sha256, "sha256-auth-pass")), Some("sha256-priv-pass")),
    ("nms-512", Some((AuthProtocol::Sha512, "sha512-auth-pass")), Some("sha512-priv-pass")),
    ("nobody", None, None),
    ("auth-only", Some((AuthProtocol::Sha224, "auth-only-pass")), None),
    ("nms-384", Some((AuthProtocol::Sha384, "sha384-auth-pass")), Some("sha384-priv-pass")),
];

/// A user's localized keys, as a manager holds them.
struct Keys {
    name: &'static str,
    auth: Option<(AuthProtocol, Vec<u8>)>,
    privacy: Option<Vec<u8>>,
}

struct Fixture {
    usm: Usm,
    config: ResponderConfig,
    keys: Vec<Keys>,
    engine: EngineId,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let engine = EngineId::from_hex(ENGINE).unwrap();
        let keys: Vec<Keys> = USERS
            .iter()
            .map(|(name, auth, privacy)| {
                let key = |p: AuthProtocol, pass: &str| {
                    localize(p, &password_to_key(p, pass).unwrap(), engine.as_bytes())
                };
                Keys {
                    name,
                    auth: auth.map(|(p, pass)| (p, key(p, pass))),
                    privacy: match (auth, privacy) {
                        (Some((p, _)), Some(pass)) => Some(key(*p, pass)),
                        _ => None,
                    },
                }
            })
            .collect();
        let users = keys
            .iter()
            .map(|k| {
                User::from_localized_keys(
                    k.name,
                    k.auth.clone(),
                    k.privacy.clone().map(|p| (PrivProtocol::Aes128, p)),
                )
                .unwrap()
            })
            .collect();
        let usm = Usm::with_seeds(engine.clone(), 0, users, 0x0102_0304_0506_0708, 77);
        let lo = vec!["127.0.0.0/8".parse().unwrap(), "::1".parse().unwrap()];
        let user = |name: &str, level, write, rate| Rule {
            principal: Principal::User {
                name: name.as_bytes().to_vec(),
                level,
            },
            sources: lo.clone(),
            view: Subtrees::all(),
            write,
            max_response_octets: MAX_RESPONSE,
            rate,
        };
        let rules = vec![
            user("nms-sha", Level::AuthPriv, true, None),
            // Asks more than authNoPriv requests give: authorizationError.
            user("nms-256", Level::AuthPriv, false, None),
            user("nms-512", Level::AuthNoPriv, false, Some(RateGuard { rate: 1000, burst: 1000 })),
            user("nobody", Level::NoAuthNoPriv, false, None),
            user("auth-only", Level::AuthNoPriv, true, None),
            Rule {
                view: Subtrees::new(vec!["1.3.6.1.3.117.1.9".parse().unwrap()]),
                ..user("nms-384", Level::AuthNoPriv, false, None)
            },
            Rule {
                principal: Principal::Community(b"public".to_vec()),
                ..user("", Level::NoAuthNoPriv, false, None)
            },
        ];
        Fixture {
            usm,
            config: ResponderConfig {
                access: AccessTable::new(rules),
            },
            keys,
            engine,
        }
    })
}

/// The message a manager with `k`'s keys sends at `level` (0, 1, 2) around
/// `plain` as its ScopedPDU.
fn manager_message(
    f: &Fixture,
    k: &Keys,
    level: u8,
    max_size: u16,
    time: u32,
    plain: &[u8],
) -> Option<Vec<u8>> {
    let auth = if level >= 1 { Some(k.auth.as_ref()?) } else { None };
    let privacy = if level >= 2 { Some(k.privacy.as_ref()?) } else { None };
    let salt = [9u8, 8, 7, 6, 5, 4, 3, 2];
    let scoped = match privacy {
        Some(key) => {
            let mut c = plain.to_vec();
            crypto::aes_encrypt(key, 0, time, &salt, &mut c);
            ScopedPduData::EncryptedPdu(c.into())
        }
        None => ScopedPduData::CleartextPdu(rasn::ber::decode(plain).ok()?),
    };
    let mac_len = auth.map_or(0, |(p, _)| p.mac_len());
    let marker = vec![0xa5u8; mac_len];
    let sec = USMSecurityParameters {
        authoritative_engine_id: OctetString::from(f.engine.as_bytes().to_vec()),
        authoritative_engine_boots: Integer::from(0),
        authoritative_engine_time: Integer::from(i64::from(time)),
        user_name: OctetString::from(k.name.as_bytes().to_vec()),
        authentication_parameters: marker.clone().into(),
        privacy_parameters: if privacy.is_some() {
            salt.to_vec().into()
        } else {
            Vec::new().into()
        },
    };
    let flags = [0u8, 1, 3][usize::from(level.min(2))] | 0x04;
    let msg = Message {
        version: Integer::from(3),
        global_data: HeaderData {
            message_id: Integer::from(4242),
            max_size: Integer::from(i64::from(max_size)),
            flags: vec![flags].into(),
            security_model: Integer::from(3),
        },
        security_parameters: rasn::ber::encode(&sec).ok()?.into(),
        scoped_data: scoped,
    };
    let mut bytes = rasn::ber::encode(&msg).ok()?;
    if let Some((proto, key)) = auth {
        let at = bytes.windows(mac_len).position(|w| w == marker.as_slice())?;
        bytes[at..at + mac_len].fill(0);
        let mut tag = [0u8; 48];
        crypto::sign(*proto, key, &bytes, &mut tag);
        bytes[at..at + mac_len].copy_from_slice(&tag[..mac_len]);
    }
    Some(bytes)
}

fn check(outcome: Outcome) {
    let bytes = match outcome {
        Outcome::Reply(b) | Outcome::Report(_, b) => b,
        _ => return,
    };
    assert!(
        bytes.len() <= MAX_RESPONSE,
        "an answer of {} octets over the rules' {MAX_RESPONSE}",
        bytes.len()
    );
    let v3: Result<Message, _> = rasn::ber::decode(&bytes);
    let v2: Result<rasn_snmp::v2c::Message<rasn_snmp::v2::Pdus>, _> = rasn::ber::decode(&bytes);
    assert!(v3.is_ok() || v2.is_ok(), "an answer that does not decode");
}

fuzz_target!(|data: &[u8]| {
    let f = fixture();
    let mut b = Bytes(data);
    let mode = b.u8();
    let time = u32::from(b.u8());
    let datagram = if mode & 1 == 0 {
        b.0.to_vec()
    } else {
        let k = &f.keys[usize::from(b.u8()) % f.keys.len()];
        let level = b.u8() % 3;
        let max_size = b.u16();
        match manager_message(f, k, level, max_size, time, b.0) {
            Some(m) => m,
            None => return,
        }
    };
    let now = Instant::now();
    let booted = now.checked_sub(Duration::from_secs(time.into())).unwrap_or(now);
    let mut p = Processor::new(f.config.clone()).with_usm(f.usm.clone(), booted);
    let from = IpAddr::from([127, 0, 0, 1]);
    with_sim_view(|s| check(p.process(&datagram, from, now, &s.view)));
});
