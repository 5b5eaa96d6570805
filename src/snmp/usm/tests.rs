use super::*;
use rasn_snmp::v2::{GetRequest, Response, Trap};

const ENGINE_HEX: &str = "80000000050102030405060708";

fn engine() -> EngineId {
    EngineId::from_hex(ENGINE_HEX).unwrap()
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sys_descr() -> ObjectIdentifier {
    ObjectIdentifier::new(vec![1, 3, 6, 1, 2, 1, 1, 1, 0]).unwrap()
}

fn get(request_id: i32) -> Pdus {
    Pdus::GetRequest(GetRequest(Pdu {
        request_id,
        error_status: 0,
        error_index: 0,
        variable_bindings: vec![VarBind {
            name: sys_descr(),
            value: VarBindValue::Unspecified,
        }],
    }))
}

fn answer(request_id: i32, text_len: usize) -> Pdus {
    Pdus::Response(Response(Pdu {
        request_id,
        error_status: 0,
        error_index: 0,
        variable_bindings: vec![VarBind {
            name: sys_descr(),
            value: VarBindValue::Value(ObjectSyntax::Simple(rasn_smi::v2::SimpleSyntax::String(
                vec![b'x'; text_len].into(),
            ))),
        }],
    }))
}

/// The users of the fixtures (tests/fixtures/usm/capture.sh and
/// pysnmp_capture.py): name, authentication protocol and passphrase,
/// privacy (AES) passphrase.
type TestUser = (
    &'static str,
    Option<(&'static str, &'static str)>,
    Option<&'static str>,
);
const USERS: [TestUser; 6] = [
    (
        "nms-sha",
        Some(("SHA", "sha-auth-pass")),
        Some("sha-priv-pass"),
    ),
    (
        "nms-256",
        Some(("SHA-256", "sha256-auth-pass")),
        Some("sha256-priv-pass"),
    ),
    (
        "nms-512",
        Some(("SHA-512", "sha512-auth-pass")),
        Some("sha512-priv-pass"),
    ),
    ("nobody", None, None),
    ("auth-only", Some(("SHA-224", "auth-only-pass")), None),
    (
        "nms-384",
        Some(("SHA-384", "sha384-auth-pass")),
        Some("sha384-priv-pass"),
    ),
];

const LEVELS: [SecurityLevel; 3] = [
    SecurityLevel::NoAuthNoPriv,
    SecurityLevel::AuthNoPriv,
    SecurityLevel::AuthPriv,
];

/// [`USERS`] localized to [`ENGINE_HEX`], derived once per test binary
/// (1 MB of hashing per passphrase).
fn fixture_users(e: &EngineId) -> Vec<User> {
    static DERIVED: std::sync::OnceLock<Vec<User>> = std::sync::OnceLock::new();
    assert_eq!(*e, engine());
    DERIVED
        .get_or_init(|| {
            USERS
                .iter()
                .map(|(name, auth, privacy)| {
                    let auth = auth.map(|(p, pass)| (p.parse::<AuthProtocol>().unwrap(), pass));
                    let privacy = privacy.map(|pass| (PrivProtocol::Aes128, pass));
                    User::from_passphrases(name, auth, privacy, e).unwrap()
                })
                .collect()
        })
        .clone()
}

fn agent(boots: u32) -> Usm {
    let e = engine();
    Usm::with_seeds(
        e.clone(),
        boots,
        fixture_users(&e),
        0x0102_0304_0506_0708,
        77,
    )
}

/// A manager's request: the same encoder, with the reportable flag and the
/// boots/time the manager believes the agent has.
fn request(
    usm: &mut Usm,
    user: &str,
    level: SecurityLevel,
    boots: u32,
    time: u32,
    pdus: Pdus,
) -> Vec<u8> {
    let ix = usm.user_index(user).unwrap();
    let engine = usm.engine_id().as_bytes().to_vec();
    let name = user.as_bytes().to_vec();
    let header = Header {
        msg_id: 4242,
        level,
        reportable: true,
        user: Some(ix),
        user_name: &name,
        ctx_engine: &engine,
        ctx_name: &[],
    };
    usm.encode(&header, pdus, boots, time).unwrap()
}

/// What a manager checks in a message from the agent: the digest (when
/// authenticated, with `user`'s key) and, when encrypted, the plaintext.
fn open(bytes: &[u8], user: Option<&User>) -> (Message, USMSecurityParameters, ScopedPdu) {
    let msg: Message = rasn::ber::decode(bytes).unwrap();
    let sec: USMSecurityParameters = rasn::ber::decode(&msg.security_parameters).unwrap();
    let flags = msg.global_data.flags[0];
    assert_eq!(
        flags & FLAG_REPORTABLE,
        0,
        "the agent never asks for Reports"
    );
    let scoped = match &msg.scoped_data {
        ScopedPduData::CleartextPdu(s) => {
            assert_eq!(flags & FLAG_PRIV, 0);
            s.clone()
        }
        ScopedPduData::EncryptedPdu(c) => {
            assert_eq!(flags & 3, 3);
            let (_, key) = user.unwrap().privacy.as_ref().unwrap();
            let salt: [u8; 8] = sec.privacy_parameters[..].try_into().unwrap();
            let mut plain = c.to_vec();
            let boots = non_negative(&sec.authoritative_engine_boots).unwrap();
            let time = non_negative(&sec.authoritative_engine_time).unwrap();
            crypto::aes_decrypt(key, boots, time, &salt, &mut plain);
            rasn::ber::decode(&plain).unwrap()
        }
    };
    if flags & FLAG_AUTH != 0 {
        let (proto, key) = user.unwrap().auth.as_ref().unwrap();
        let r = wire::auth_params_range(bytes).unwrap();
        let mut zeroed = bytes.to_vec();
        zeroed[r.clone()].fill(0);
        assert!(
            crypto::verify(*proto, key, &[&zeroed], &bytes[r]),
            "digest of the agent's message"
        );
    } else {
        assert!(sec.authentication_parameters.is_empty());
    }
    (msg, sec, scoped)
}

fn report_varbind(scoped: &ScopedPdu) -> (Vec<u32>, u32, i32) {
    let Pdus::Report(Report(p)) = &scoped.data else {
        panic!("not a Report: {:?}", scoped.data)
    };
    assert_eq!(p.variable_bindings.len(), 1);
    let vb = &p.variable_bindings[0];
    let VarBindValue::Value(ObjectSyntax::ApplicationWide(ApplicationSyntax::Counter(c))) =
        &vb.value
    else {
        panic!("not a Counter32: {:?}", vb.value)
    };
    (vb.name.to_vec(), c.0, p.request_id)
}

/// usmStats column `n`, written out as RFC 3414 §5 numbers it.
fn usm_stat(n: u32) -> Vec<u32> {
    vec![1, 3, 6, 1, 6, 3, 15, 1, 1, n, 0]
}

#[test]
fn mib_counters_are_in_oid_order_and_read_the_stats() {
    let usm = agent(1);
    let _ = usm.incoming(fixture("discovery"), 0);
    let c = usm.stats().mib_counters();
    assert!(c.windows(2).all(|w| w[0].0 < w[1].0));
    assert_eq!(c[0].0, &[1, 3, 6, 1, 6, 3, 11, 2, 1, 1, 0]);
    let nonzero: Vec<_> = c.iter().filter(|(_, v)| *v != 0).collect();
    assert_eq!(nonzero, [&(&USM_STATS_UNKNOWN_ENGINE_IDS, 1)]);
    assert_eq!(USM_STATS_UNKNOWN_ENGINE_IDS.to_vec(), usm_stat(4));
}

// ---- keys ----

/// RFC 3414 A.3.2: "maplesyrup", SHA, engine ID 00...02.
#[test]
fn rfc3414_a32_sha_password_to_key_and_localization() {
    let ku = password_to_key(AuthProtocol::Sha1, "maplesyrup").unwrap();
    assert_eq!(hex(&ku), "9fb5cc0381497b3793528939ff788d5d79145211");
    let engine = crypto::parse_hex("000000000000000000000002").unwrap();
    let kul = localize(AuthProtocol::Sha1, &ku, &engine);
    assert_eq!(hex(&kul), "6695febc9288e36282235fc7151f128497b38f3f");
}

/// The SHA-2 keys have the digest's length, differ per protocol and
/// engine, and are what net-snmp derives: the fixture tests below
/// authenticate snmpget's SHA-256 and SHA-512 requests with them (RFC 7860
/// itself gives no test vectors).
#[test]
fn sha2_keys_have_digest_length_and_depend_on_engine() {
    let e1 = crypto::parse_hex("000000000000000000000002").unwrap();
    let e2 = crypto::parse_hex("000000000000000000000003").unwrap();
    let mut seen = Vec::new();
    for p in AUTH_PROTOCOLS {
        let ku = password_to_key(p, "maplesyrup").unwrap();
        assert_eq!(ku.len(), p.key_len());
        let k1 = localize(p, &ku, &e1);
        let k2 = localize(p, &ku, &e2);
        assert_eq!(k1.len(), p.key_len());
        assert_ne!(k1, k2);
        assert!(!seen.contains(&k1));
        seen.push(k1);
    }
}

#[test]
fn short_passphrases_and_bad_keys_are_refused() {
    assert_eq!(
        password_to_key(AuthProtocol::Sha256, "1234567"),
        Err(KeyError::PassphraseTooShort)
    );
    assert!(password_to_key(AuthProtocol::Sha256, "12345678").is_ok());
    let e = engine();
    assert_eq!(
        User::from_passphrases("u", None, Some((PrivProtocol::Aes128, "longenough")), &e),
        Err(UserError::PrivacyWithoutAuth)
    );
    assert_eq!(
        User::from_passphrases(
            "u",
            Some((AuthProtocol::Sha1, "longenough")),
            Some((PrivProtocol::Aes128, "short")),
            &e
        ),
        Err(UserError::Privacy(KeyError::PassphraseTooShort))
    );
    assert_eq!(
        User::from_localized_keys("u", Some((AuthProtocol::Sha256, vec![0; 20])), None),
        Err(UserError::Auth(KeyError::KeyLength(20, 32)))
    );
    assert_eq!(
        User::from_localized_keys(
            "u",
            Some((AuthProtocol::Sha1, vec![0; 20])),
            Some((PrivProtocol::Aes128, vec![0; 15]))
        ),
        Err(UserError::Privacy(KeyError::KeyLength(15, 16)))
    );
    assert_eq!(
        User::from_localized_keys(&"x".repeat(33), None, None),
        Err(UserError::Name)
    );
    assert_eq!(
        User::from_localized_keys("", None, None),
        Err(UserError::Name)
    );
}

/// A user given localized keys (hex, as net-snmp's `createUser -l` takes
/// them) is the user given the passphrases.
#[test]
fn localized_hex_keys_equal_passphrase_keys() {
    let e = engine();
    let from_pass = User::from_passphrases(
        "nms",
        Some((AuthProtocol::Sha256, "sha256-auth-pass")),
        Some((PrivProtocol::Aes128, "sha256-priv-pass")),
        &e,
    )
    .unwrap();
    let ak = hex(&from_pass.auth.as_ref().unwrap().1);
    let pk = hex(&from_pass.privacy.as_ref().unwrap().1);
    let from_keys = User::from_localized_keys(
        "nms",
        Some((
            AuthProtocol::Sha256,
            crypto::parse_hex(&format!("0x{ak}")).unwrap(),
        )),
        Some((PrivProtocol::Aes128, crypto::parse_hex(&pk).unwrap())),
    )
    .unwrap();
    assert_eq!(from_pass, from_keys);
    assert!(
        !format!("{from_keys:?}").contains(&ak),
        "Debug shows no key"
    );
    assert_eq!(crypto::parse_hex("0a:0B"), Ok(vec![10, 11]));
    assert_eq!(crypto::parse_hex("abc"), Err(KeyError::NotHex));
    assert_eq!(crypto::parse_hex("zz"), Err(KeyError::NotHex));
}

#[test]
fn protocol_names_parse_and_md5_des_are_refused_with_a_reason() {
    for (s, p) in [
        ("SHA", AuthProtocol::Sha1),
        ("sha-1", AuthProtocol::Sha1),
        ("SHA-224", AuthProtocol::Sha224),
        ("SHA-256", AuthProtocol::Sha256),
        ("sha256", AuthProtocol::Sha256),
        ("SHA-384", AuthProtocol::Sha384),
        ("SHA-512", AuthProtocol::Sha512),
    ] {
        assert_eq!(s.parse::<AuthProtocol>(), Ok(p), "{s}");
        assert_eq!(p.name().parse::<AuthProtocol>(), Ok(p));
    }
    assert_eq!("AES".parse::<PrivProtocol>(), Ok(PrivProtocol::Aes128));
    assert_eq!("aes-128".parse::<PrivProtocol>(), Ok(PrivProtocol::Aes128));
    let md5 = "MD5".parse::<AuthProtocol>().unwrap_err().to_string();
    assert!(md5.starts_with("MD5 is not supported: "), "{md5}");
    let des = "DES".parse::<PrivProtocol>().unwrap_err().to_string();
    assert!(
        des.starts_with("DES is not supported: ") && des.contains("56-bit"),
        "{des}"
    );
    assert!("AES-256".parse::<PrivProtocol>().is_err());
    assert!("SHA-3".parse::<AuthProtocol>().is_err());
}

#[test]
fn engine_ids_are_validated_and_generated_in_rfc3411_format() {
    assert!(EngineId::from_hex("01020304").is_err(), "4 octets");
    assert!(EngineId::from_hex("0102030405").is_ok());
    assert!(EngineId::from_hex(&"ab".repeat(32)).is_ok());
    assert!(EngineId::from_hex(&"ab".repeat(33)).is_err());
    assert!(EngineId::from_hex("0x80001f88xx").is_err());
    assert_eq!(engine().to_hex(), ENGINE_HEX);
    let g = EngineId::generate().unwrap();
    let b = g.as_bytes();
    assert_eq!(b.len(), 13);
    assert_eq!(b[..4], (ENGINE_ID_ENTERPRISE | 0x8000_0000).to_be_bytes());
    assert_eq!(b[4], 5, "format: octets");
    assert_ne!(EngineId::generate().unwrap(), g, "random octets");
    let fixed = EngineId::from_random(8072, [1; 8]);
    assert_eq!(fixed.to_hex(), "80001f88050101010101010101");
}

// ---- real client bytes (tests/fixtures/usm, made by capture.sh) ----

fn fixture(name: &str) -> &'static [u8] {
    match name {
        "discovery" => include_bytes!("../../../tests/fixtures/usm/discovery.bin"),
        "noauth" => include_bytes!("../../../tests/fixtures/usm/noauth.bin"),
        "sha-authnopriv" => include_bytes!("../../../tests/fixtures/usm/sha-authnopriv.bin"),
        "sha-authpriv" => include_bytes!("../../../tests/fixtures/usm/sha-authpriv.bin"),
        "sha256-authnopriv" => include_bytes!("../../../tests/fixtures/usm/sha256-authnopriv.bin"),
        "sha256-authpriv" => include_bytes!("../../../tests/fixtures/usm/sha256-authpriv.bin"),
        "sha512-authpriv" => include_bytes!("../../../tests/fixtures/usm/sha512-authpriv.bin"),
        _ => unreachable!(),
    }
}

const SNMPGET_FIXTURES: [(&str, &str, SecurityLevel); 6] = [
    ("noauth", "nms-sha", SecurityLevel::NoAuthNoPriv),
    ("sha-authnopriv", "nms-sha", SecurityLevel::AuthNoPriv),
    ("sha-authpriv", "nms-sha", SecurityLevel::AuthPriv),
    ("sha256-authnopriv", "nms-256", SecurityLevel::AuthNoPriv),
    ("sha256-authpriv", "nms-256", SecurityLevel::AuthPriv),
    ("sha512-authpriv", "nms-512", SecurityLevel::AuthPriv),
];

/// snmpget's requests authenticate and decrypt with the passphrases they
/// were made with, and carry the GetRequest for sysDescr.0.
#[test]
fn snmpget_requests_authenticate_and_decrypt() {
    for (name, user, level) in SNMPGET_FIXTURES {
        // snmpget without discovery sends boots 0, time 0.
        let usm = agent(0);
        match usm.incoming(fixture(name), 100) {
            Incoming::Request(ctx, pdus) => {
                assert_eq!(ctx.level, level, "{name}");
                assert_eq!(usm.users()[ctx.user].name(), user.as_bytes(), "{name}");
                assert!(ctx.reportable);
                assert_eq!(ctx.max_size, 65507, "{name}: net-snmp's msgMaxSize");
                assert_eq!(ctx.context_engine_id, usm.engine_id().as_bytes());
                assert!(ctx.context_name.is_empty());
                let Pdus::GetRequest(GetRequest(p)) = pdus else {
                    panic!("{name}: {pdus:?}")
                };
                assert_eq!(p.variable_bindings[0].name, sys_descr());
            }
            other => panic!("{name}: {other:?}"),
        }
        assert_eq!(usm.stats(), Stats::default(), "{name}");
    }
}

/// pysnmp's requests (tests/fixtures/usm/pysnmp_capture.py; sent to an
/// engine with boots 3 after discovery) authenticate and decrypt too.
#[test]
fn pysnmp_requests_authenticate_and_decrypt() {
    let cases: [(&[u8], &str, SecurityLevel); 6] = [
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-noauth.bin"),
            "nobody",
            SecurityLevel::NoAuthNoPriv,
        ),
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-sha-authpriv.bin"),
            "nms-sha",
            SecurityLevel::AuthPriv,
        ),
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-sha224-authnopriv.bin"),
            "auth-only",
            SecurityLevel::AuthNoPriv,
        ),
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-sha256-authpriv.bin"),
            "nms-256",
            SecurityLevel::AuthPriv,
        ),
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-sha384-authpriv.bin"),
            "nms-384",
            SecurityLevel::AuthPriv,
        ),
        (
            include_bytes!("../../../tests/fixtures/usm/pysnmp-sha512-authpriv.bin"),
            "nms-512",
            SecurityLevel::AuthPriv,
        ),
    ];
    for (bytes, user, level) in cases {
        let msg: Message = rasn::ber::decode(bytes).unwrap();
        let sec: USMSecurityParameters = rasn::ber::decode(&msg.security_parameters).unwrap();
        let time = non_negative(&sec.authoritative_engine_time).unwrap();
        let usm = agent(3);
        match usm.incoming(bytes, time) {
            Incoming::Request(ctx, Pdus::GetRequest(GetRequest(p))) => {
                assert_eq!(ctx.level, level, "{user}");
                assert_eq!(usm.users()[ctx.user].name(), user.as_bytes());
                assert_eq!(p.variable_bindings[0].name, sys_descr());
            }
            other => panic!("{user}: {other:?}"),
        }
    }
}

/// The same requests with a wrong passphrase: a digest Report (or, for the
/// privacy passphrase, a decryption Report).
#[test]
fn snmpget_requests_with_wrong_keys_get_reports() {
    let e = engine();
    for (name, user, level) in SNMPGET_FIXTURES {
        if level == SecurityLevel::NoAuthNoPriv {
            continue;
        }
        let real = fixture_users(&e)
            .into_iter()
            .find(|u| u.name() == user.as_bytes())
            .unwrap();
        let proto = real.auth_protocol().unwrap();
        let wrong_auth =
            User::from_passphrases(user, Some((proto, "wrong-pass")), None, &e).unwrap();
        let usm = Usm::with_seeds(e.clone(), 0, vec![wrong_auth], 1, 1);
        let got = usm.incoming(fixture(name), 0);
        let wanted = if level == SecurityLevel::AuthPriv {
            ReportKind::UnsupportedSecLevel // a user without privacy keys
        } else {
            ReportKind::WrongDigest
        };
        assert!(
            matches!(got, Incoming::Report(k, _) if k == wanted),
            "{name}: {got:?}"
        );

        if level == SecurityLevel::AuthPriv {
            let wrong_priv = User::from_localized_keys(
                user,
                real.auth.as_ref().map(|(p, k)| (*p, k.to_vec())),
                Some((PrivProtocol::Aes128, vec![0x55; 16])),
            )
            .unwrap();
            let usm = Usm::with_seeds(e.clone(), 0, vec![wrong_priv], 1, 1);
            let got = usm.incoming(fixture(name), 0);
            assert!(
                matches!(got, Incoming::Report(ReportKind::DecryptionError, _)),
                "{name}: {got:?}"
            );
            assert_eq!(usm.stats().decryption_errors, 1);
        }
    }
}

/// snmpget's discovery probe (empty engine ID and user, noAuthNoPriv) gets
/// the usmStatsUnknownEngineIDs Report with our engine ID, boots and time.
#[test]
fn discovery_gets_unknown_engine_id_report_with_engine_values() {
    let usm = agent(9);
    let probe = fixture("discovery");
    let probe_msg: Message = rasn::ber::decode(probe).unwrap();
    let Incoming::Report(ReportKind::UnknownEngineId, bytes) = usm.incoming(probe, 4321) else {
        panic!()
    };
    let (msg, sec, scoped) = open(&bytes, None);
    assert_eq!(msg.global_data.message_id, probe_msg.global_data.message_id);
    assert_eq!(msg.global_data.flags[0], 0, "noAuthNoPriv, not reportable");
    assert_eq!(sec.authoritative_engine_id[..], *usm.engine_id().as_bytes());
    assert_eq!(non_negative(&sec.authoritative_engine_boots), Some(9));
    assert_eq!(non_negative(&sec.authoritative_engine_time), Some(4321));
    assert_eq!(scoped.engine_id[..], *usm.engine_id().as_bytes());
    let (oid, value, _) = report_varbind(&scoped);
    assert_eq!((oid, value), (usm_stat(4), 1));
    assert_eq!(usm.stats().unknown_engine_ids, 1);
    // Counted again, the Report carries the new value.
    let Incoming::Report(_, bytes) = usm.incoming(probe, 4321) else {
        panic!()
    };
    assert_eq!(report_varbind(&open(&bytes, None).2).1, 2);
}

// ---- round trips and Reports with this module's own manager side ----

#[test]
fn round_trip_at_every_level_and_protocol() {
    for (user, _, _) in USERS {
        let mut usm = agent(3);
        let u = usm.users()[usm.user_index(user).unwrap()].clone();
        for level in LEVELS {
            if level > u.max_level() {
                continue;
            }
            let req = request(&mut usm, user, level, 3, 1000, get(17));
            let Incoming::Request(ctx, pdus) = usm.incoming(&req, 1010) else {
                panic!("{user} {level}")
            };
            assert_eq!((ctx.level, ctx.msg_id), (level, 4242));
            assert_eq!(pdus, get(17));
            let resp = usm.response(&ctx, answer(17, 10), 1011).unwrap();
            let (msg, sec, scoped) = open(&resp, Some(&u));
            assert_eq!(msg.global_data.flags[0], level.flags(), "{user} {level}");
            assert_eq!(non_negative(&msg.global_data.message_id), Some(4242));
            assert_eq!(non_negative(&sec.authoritative_engine_boots), Some(3));
            assert_eq!(non_negative(&sec.authoritative_engine_time), Some(1011));
            assert_eq!(sec.user_name[..], *user.as_bytes());
            assert_eq!(scoped.data, answer(17, 10));
        }
        assert_eq!(usm.stats(), Stats::default());
    }
}

/// Two responses never share an AES salt (so never an IV).
#[test]
fn each_encrypted_message_has_a_new_salt() {
    let mut usm = agent(1);
    let req = request(&mut usm, "nms-256", SecurityLevel::AuthPriv, 1, 5, get(1));
    let Incoming::Request(ctx, _) = usm.incoming(&req, 5) else {
        panic!()
    };
    let mut salts = std::collections::HashSet::new();
    for _ in 0..100 {
        let r = usm.response(&ctx, answer(1, 3), 5).unwrap();
        let (_, sec, _) = open(&r, Some(&usm.users()[ctx.user].clone()));
        assert!(salts.insert(sec.privacy_parameters.to_vec()));
    }
}

#[test]
fn unknown_user_and_unsupported_level_get_unauthenticated_reports() {
    let mut usm = agent(1);
    let mut req = request(
        &mut usm,
        "nobody",
        SecurityLevel::NoAuthNoPriv,
        1,
        5,
        get(8),
    );
    // Rename the user in place (same length): "nobody" -> "nobodz".
    let at = req.windows(6).position(|w| w == b"nobody").unwrap();
    req[at + 5] = b'z';
    let Incoming::Report(ReportKind::UnknownUserName, bytes) = usm.incoming(&req, 5) else {
        panic!()
    };
    let (_, sec, scoped) = open(&bytes, None);
    assert_eq!(sec.user_name[..], b"nobodz"[..]);
    assert_eq!(report_varbind(&scoped), (usm_stat(3), 1, 8));

    // auth-only asks for authPriv: the manager's message is built as if
    // the user had privacy keys.
    let e = engine();
    let mut users = fixture_users(&e);
    let ix = users.iter().position(|u| u.name == b"auth-only").unwrap();
    users[ix].privacy = Some((PrivProtocol::Aes128, Key::new(vec![1; 16])));
    let mut manager = Usm::with_seeds(e, 1, users, 0x0102_0304_0506_0708, 77);
    let req = request(
        &mut manager,
        "auth-only",
        SecurityLevel::AuthPriv,
        1,
        5,
        get(9),
    );
    let Incoming::Report(ReportKind::UnsupportedSecLevel, bytes) = usm.incoming(&req, 5) else {
        panic!()
    };
    let (_, _, scoped) = open(&bytes, None);
    assert_eq!(report_varbind(&scoped), (usm_stat(1), 1, 0));
    let s = usm.stats();
    assert_eq!((s.unknown_user_names, s.unsupported_sec_levels), (1, 1));
}

#[test]
fn tampered_message_or_digest_gets_wrong_digest_report() {
    let mut usm = agent(1);
    let req = request(&mut usm, "nms-256", SecurityLevel::AuthNoPriv, 1, 5, get(3));
    let r = wire::auth_params_range(&req).unwrap();
    // A flipped bit in the digest, and one in the PDU.
    for at in [r.start + 3, req.len() - 3] {
        let mut bad = req.clone();
        bad[at] ^= 0x10;
        match usm.incoming(&bad, 5) {
            Incoming::Report(ReportKind::WrongDigest, bytes) => {
                let (msg, _, scoped) = open(&bytes, None);
                assert_eq!(msg.global_data.flags[0], 0);
                assert_eq!(report_varbind(&scoped).0, usm_stat(5));
            }
            other => panic!("{at}: {other:?}"),
        }
    }
    assert_eq!(usm.stats().wrong_digests, 2);
    assert!(matches!(usm.incoming(&req, 5), Incoming::Request(..)));
}

/// Replays and stale clocks: another boots, or more than 150 s either way,
/// get an authenticated notInTimeWindow Report with the agent's boots and
/// time; 150 s is still inside.
#[test]
fn outside_time_window_gets_authenticated_report_with_engine_time() {
    let mut usm = agent(5);
    let u = usm.users()[usm.user_index("nms-sha").unwrap()].clone();
    for (boots, time, now, inside) in [
        (5, 1000, 1150, true),
        (5, 1000, 850, true),
        (5, 1000, 1151, false),
        (5, 1000, 849, false),
        (4, 1000, 1000, false),
        (6, 1000, 1000, false),
    ] {
        let req = request(
            &mut usm,
            "nms-sha",
            SecurityLevel::AuthPriv,
            boots,
            time,
            get(5),
        );
        match usm.incoming(&req, now) {
            Incoming::Request(..) => assert!(inside, "{boots} {time} {now}"),
            Incoming::Report(ReportKind::NotInTimeWindow, bytes) => {
                assert!(!inside, "{boots} {time} {now}");
                let (msg, sec, scoped) = open(&bytes, Some(&u));
                assert_eq!(msg.global_data.flags[0], FLAG_AUTH, "authNoPriv");
                assert_eq!(non_negative(&sec.authoritative_engine_boots), Some(5));
                assert_eq!(non_negative(&sec.authoritative_engine_time), Some(now));
                assert_eq!(report_varbind(&scoped).0, usm_stat(2));
            }
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(usm.stats().not_in_time_windows, 4);
    // Latched boots: nothing authenticated is accepted.
    let mut latched = agent(ENGINE_MAX);
    let req = request(
        &mut latched,
        "nms-sha",
        SecurityLevel::AuthNoPriv,
        ENGINE_MAX,
        5,
        get(5),
    );
    assert!(matches!(
        latched.incoming(&req, 5),
        Incoming::Report(ReportKind::NotInTimeWindow, _)
    ));
    // snmpget's fixture (boots 0, time 0) long after boot.
    let usm = agent(0);
    assert!(matches!(
        usm.incoming(fixture("sha256-authpriv"), 151),
        Incoming::Report(ReportKind::NotInTimeWindow, _)
    ));
}

#[test]
fn wrong_context_engine_gets_unknown_pdu_handler_report_at_request_level() {
    let usm = agent(1);
    let u = usm.users()[0].clone();
    let ix = usm.user_index("nms-sha").unwrap();
    let header = Header {
        msg_id: 9,
        level: SecurityLevel::AuthPriv,
        reportable: true,
        user: Some(ix),
        user_name: b"nms-sha",
        ctx_engine: b"\x80\x00\x00\x00\x05other",
        ctx_name: &[],
    };
    let req = usm.encode(&header, get(31), 1, 5).unwrap();
    let Incoming::Report(ReportKind::UnknownPduHandler, bytes) = usm.incoming(&req, 5) else {
        panic!()
    };
    let (msg, _, scoped) = open(&bytes, Some(&u));
    assert_eq!(msg.global_data.flags[0], 3, "authPriv, as the request");
    assert_eq!(
        report_varbind(&scoped),
        (SNMP_UNKNOWN_PDU_HANDLERS.to_vec(), 1, 31)
    );
}

#[test]
fn no_report_without_reportable_flag_but_counted() {
    let mut usm = agent(1);
    let mut req = request(&mut usm, "nms-sha", SecurityLevel::AuthNoPriv, 1, 5, get(3));
    // The flags octet: 04 01 05 in the header; clear reportable (this also
    // breaks the digest, which is what is reported).
    let at = req.windows(3).position(|w| w == [4, 1, 5]).unwrap();
    req[at + 2] = 1;
    assert_eq!(
        usm.incoming(&req, 5).drop_reason(),
        Some(DropReason::Unreported(ReportKind::WrongDigest))
    );
    assert_eq!(usm.stats().wrong_digests, 1);
}

#[test]
fn invalid_flags_and_other_security_models_are_dropped_and_counted() {
    let mut usm = agent(1);
    let req = request(
        &mut usm,
        "nobody",
        SecurityLevel::NoAuthNoPriv,
        1,
        5,
        get(3),
    );
    let at = req.windows(3).position(|w| w == [4, 1, 4]).unwrap();
    let mut priv_only = req.clone();
    priv_only[at + 2] = 6; // priv without auth
    assert_eq!(
        usm.incoming(&priv_only, 5).drop_reason(),
        Some(DropReason::InvalidFlags)
    );
    let mut model = req.clone();
    // securityModel follows the flags: 02 01 03.
    assert_eq!(model[at + 3..at + 6], [2, 1, 3]);
    model[at + 5] = 2;
    assert_eq!(
        usm.incoming(&model, 5).drop_reason(),
        Some(DropReason::UnknownSecurityModel)
    );
    let s = usm.stats();
    assert_eq!((s.invalid_msgs, s.unknown_security_models), (1, 1));
}

#[test]
fn v2c_messages_and_unconfirmed_pdus_are_not_requests() {
    let mut usm = agent(1);
    let v2c = rasn::ber::encode(&rasn_snmp::v2c::Message {
        version: 1.into(),
        community: b"public".to_vec().into(),
        data: get(1),
    })
    .unwrap();
    assert_eq!(usm.incoming(&v2c, 0).drop_reason(), Some(DropReason::NotV3));
    assert_eq!(message_version(&v2c), Some(1));
    assert_eq!(message_version(fixture("sha256-authpriv")), Some(3));
    assert_eq!(
        message_version(&[0x30, 0x03, 0x02, 0x01]),
        None,
        "truncated"
    );
    assert_eq!(message_version(&[0x04, 0x00]), None);
    let trap = Pdus::Trap(Trap(Pdu {
        request_id: 1,
        error_status: 0,
        error_index: 0,
        variable_bindings: vec![],
    }));
    let req = request(&mut usm, "nms-sha", SecurityLevel::AuthNoPriv, 1, 5, trap);
    assert_eq!(
        usm.incoming(&req, 5).drop_reason(),
        Some(DropReason::NotARequest)
    );
    assert_eq!(usm.stats(), Stats::default());
}

/// Truncations, every single-octet change and random octets: no panic, and
/// no changed authenticated message accepted as authenticated.
#[test]
fn garbage_and_mutations_never_panic_or_pass() {
    let usm = agent(0);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for (name, _, level) in SNMPGET_FIXTURES {
        let msg = fixture(name);
        for n in 0..msg.len() {
            assert!(!matches!(usm.incoming(&msg[..n], 5), Incoming::Request(..)));
        }
        for i in 0..msg.len() {
            for x in [0x01u8, 0x80, 0xff] {
                let mut m = msg.to_vec();
                m[i] ^= x;
                let got = usm.incoming(&m, 5);
                if level > SecurityLevel::NoAuthNoPriv
                    && let Incoming::Request(ctx, _) = &got
                {
                    // Clearing the auth flag turns any message into a
                    // noAuthNoPriv one: USM cannot tell (RFC 3414 §1.5.2
                    // leaves it to access control to demand a level).
                    // Anything else must not pass.
                    assert_eq!(
                        ctx.level,
                        SecurityLevel::NoAuthNoPriv,
                        "{name}: changed octet {i} ^ {x:#x} accepted"
                    );
                }
            }
        }
        for _ in 0..200 {
            let mut m = msg.to_vec();
            let n = (rnd() % 8) as usize + 1;
            for _ in 0..n {
                let i = (rnd() as usize) % m.len();
                m[i] = rnd() as u8;
            }
            let _ = usm.incoming(&m, 5);
        }
    }
    for len in [0usize, 1, 2, 5, 50, 500, 5000] {
        let m: Vec<u8> = (0..len).map(|_| rnd() as u8).collect();
        let _ = usm.incoming(&m, 5);
        let mut seq = vec![0x30, 0x84, 0xff, 0xff, 0xff, 0xff];
        seq.extend_from_slice(&m);
        let _ = usm.incoming(&seq, 5);
    }
}

/// The responder sizes answers as PDU + overhead: never more than the
/// encoder gives, and not much less, across BER length boundaries.
#[test]
fn overhead_bounds_real_encodings() {
    for (user, _, _) in USERS {
        let usm = agent(ENGINE_MAX - 1);
        let u = usm.users()[usm.user_index(user).unwrap()].clone();
        for level in LEVELS {
            if level > u.max_level() {
                continue;
            }
            for (ctx_engine, msg_id) in
                [(usm.engine_id().as_bytes().to_vec(), 0), (vec![], i32::MAX)]
            {
                let ctx = RequestCtx {
                    msg_id,
                    max_size: 65507,
                    user: usm.user_index(user).unwrap(),
                    level,
                    context_engine_id: ctx_engine.clone(),
                    context_name: b"ctx".to_vec(),
                    reportable: true,
                };
                let bound = usm.overhead(&ctx);
                for text in [
                    0usize, 50, 90, 100, 110, 120, 200, 230, 250, 300, 65000, 65300,
                ] {
                    for now in [0u32, 200, 70_000, ENGINE_MAX] {
                        let pdus = answer(1, text);
                        let pdu_len = rasn::ber::encode(&pdus).unwrap().len();
                        let real = usm.response(&ctx, pdus, now).unwrap().len();
                        if real > 65507 {
                            continue;
                        }
                        assert!(
                            real <= pdu_len + bound,
                            "{user} {level} pdu {pdu_len}: {real} > {pdu_len} + {bound}"
                        );
                        assert!(
                            pdu_len + bound - real <= 16,
                            "{user} {level} pdu {pdu_len}: bound {bound} loose ({real})"
                        );
                    }
                }
            }
        }
    }
}

#[test]
fn traps_are_authoritative_notifications_at_the_users_level() {
    let usm = agent(2);
    for (user, level, want) in [
        ("nms-256", SecurityLevel::AuthPriv, SecurityLevel::AuthPriv),
        (
            "nms-sha",
            SecurityLevel::AuthNoPriv,
            SecurityLevel::AuthNoPriv,
        ),
        (
            "auth-only",
            SecurityLevel::AuthPriv,
            SecurityLevel::AuthNoPriv,
        ),
        (
            "nobody",
            SecurityLevel::AuthPriv,
            SecurityLevel::NoAuthNoPriv,
        ),
    ] {
        let ix = usm.user_index(user).unwrap();
        let u = usm.users()[ix].clone();
        let trap = Pdus::Trap(Trap(Pdu {
            request_id: 99,
            error_status: 0,
            error_index: 0,
            variable_bindings: vec![],
        }));
        let bytes = usm.trap(ix, level, trap.clone(), 600).unwrap();
        let (msg, sec, scoped) = open(&bytes, Some(&u));
        assert_eq!(msg.global_data.flags[0], want.flags(), "{user}");
        assert_eq!(sec.authoritative_engine_id[..], *usm.engine_id().as_bytes());
        assert_eq!(non_negative(&sec.authoritative_engine_boots), Some(2));
        assert_eq!(non_negative(&sec.authoritative_engine_time), Some(600));
        assert_eq!(scoped.engine_id[..], *usm.engine_id().as_bytes());
        assert_eq!(scoped.data, trap);
    }
    assert!(
        usm.trap(99, SecurityLevel::NoAuthNoPriv, get(1), 0)
            .is_none()
    );
}

impl Incoming {
    fn drop_reason(&self) -> Option<DropReason> {
        match self {
            Incoming::Drop(r) => Some(*r),
            _ => None,
        }
    }
}

// ---- net-snmp's snmpget against this module over loopback UDP ----

/// A test-only loop: answers every Get with `DESCR` for each varbind until
/// `stop`, the engine's time in whole seconds since the loop started.
/// With `record`, each datagram received is also written there as N.bin.
fn serve(
    socket: std::net::UdpSocket,
    usm: Usm,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    record: Option<&std::path::Path>,
) -> Usm {
    use std::sync::atomic::Ordering;
    let start = std::time::Instant::now();
    let mut buf = [0u8; 65536];
    let mut received = 0;
    // Bounded: two minutes at most, whoever forgets to stop it.
    while !stop.load(Ordering::Relaxed) && start.elapsed().as_secs() < 120 {
        let Ok((n, peer)) = socket.recv_from(&mut buf) else {
            continue;
        };
        if let Some(dir) = record {
            if &buf[..n] == b"stop" {
                break;
            }
            received += 1;
            std::fs::write(dir.join(format!("{received}.bin")), &buf[..n]).unwrap();
        }
        let now = start.elapsed().as_secs() as u32;
        let out = match usm.incoming(&buf[..n], now) {
            Incoming::Request(ctx, Pdus::GetRequest(GetRequest(p))) => {
                let vbs = p
                    .variable_bindings
                    .into_iter()
                    .map(|vb| VarBind {
                        name: vb.name,
                        value: VarBindValue::Value(ObjectSyntax::Simple(
                            rasn_smi::v2::SimpleSyntax::String(DESCR.as_bytes().to_vec().into()),
                        )),
                    })
                    .collect();
                let pdus = Pdus::Response(Response(Pdu {
                    request_id: p.request_id,
                    error_status: 0,
                    error_index: 0,
                    variable_bindings: vbs,
                }));
                usm.response(&ctx, pdus, now)
            }
            Incoming::Report(_, bytes) => Some(bytes),
            _ => None,
        };
        if let Some(out) = out {
            let _ = socket.send_to(&out, peer);
        }
    }
    usm
}

const DESCR: &str = "usm-loop-answer";

fn snmpget(port: u16, args: &[String]) -> (bool, String) {
    let out = std::process::Command::new("snmpget")
        .args(["-v3", "-r", "1", "-t", "2", "-Oqv"])
        .args(args)
        .arg(format!("127.0.0.1:{port}"))
        .arg("1.3.6.1.2.1.1.1.0")
        .output()
        .expect("snmpget (Debian package snmp) must be installed for this test");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// snmpget discovers the engine, syncs its clock, and accepts the answers
/// at every level with SHA, SHA-224, SHA-256 and SHA-512, AES; a wrong
/// passphrase, an unknown user and a level the user lacks get the errors
/// net-snmp prints for the matching Reports.
#[test]
fn net_snmp_snmpget_accepts_answers_and_reports() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(100)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let server = {
        let stop = stop.clone();
        let usm = agent(3);
        std::thread::spawn(move || serve(socket, usm, stop, None))
    };
    // user, auth protocol and passphrase, privacy passphrase (AES)
    let v3 = |user: &str, auth: Option<(&str, &str)>, privacy: Option<&str>| {
        let level = match (auth, privacy) {
            (None, _) => "noAuthNoPriv",
            (Some(_), None) => "authNoPriv",
            (Some(_), Some(_)) => "authPriv",
        };
        let mut args = vec!["-l".to_string(), level.into(), "-u".into(), user.into()];
        if let Some((proto, pass)) = auth {
            args.extend(["-a", proto, "-A", pass].map(String::from));
        }
        if let Some(pass) = privacy {
            args.extend(["-x", "AES", "-X", pass].map(String::from));
        }
        args
    };
    let mut with_engine_id = v3(
        "nms-256",
        Some(("SHA-256", "sha256-auth-pass")),
        Some("sha256-priv-pass"),
    );
    with_engine_id.splice(0..0, ["-e".to_string(), ENGINE_HEX.into()]);
    let ok = [
        v3("nobody", None, None),
        v3("nms-sha", Some(("SHA", "sha-auth-pass")), None),
        v3(
            "nms-sha",
            Some(("SHA", "sha-auth-pass")),
            Some("sha-priv-pass"),
        ),
        v3("auth-only", Some(("SHA-224", "auth-only-pass")), None),
        v3(
            "nms-256",
            Some(("SHA-256", "sha256-auth-pass")),
            Some("sha256-priv-pass"),
        ),
        v3(
            "nms-384",
            Some(("SHA-384", "sha384-auth-pass")),
            Some("sha384-priv-pass"),
        ),
        v3(
            "nms-512",
            Some(("SHA-512", "sha512-auth-pass")),
            Some("sha512-priv-pass"),
        ),
        // The engine ID given, as an NMS configured with it does: snmpget
        // sends boots 0 and time 0, takes the authenticated time-window
        // Report's values and sends again.
        with_engine_id,
    ];
    let refused = [
        (
            v3("nms-256", Some(("SHA-256", "not-the-pass")), None),
            "Authentication failure",
        ),
        (v3("stranger", None, None), "Unknown user name"),
        (
            v3(
                "auth-only",
                Some(("SHA-224", "auth-only-pass")),
                Some("auth-only-pass"),
            ),
            "Unsupported security level",
        ),
        (
            v3(
                "nms-sha",
                Some(("SHA", "sha-auth-pass")),
                Some("not-the-priv-pass"),
            ),
            "Decryption error",
        ),
    ];
    let mut failures = Vec::new();
    for args in &ok {
        let (success, text) = snmpget(port, args);
        if !(success && text.contains(DESCR)) {
            failures.push(format!("{args:?}: {text}"));
        }
    }
    for (args, want) in &refused {
        let (success, text) = snmpget(port, args);
        if success || !text.contains(want) {
            failures.push(format!("{args:?}: wanted {want:?}, got {text}"));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let usm = server.join().unwrap();
    assert!(failures.is_empty(), "{failures:#?}");
    let s = usm.stats();
    assert!(
        s.unknown_engine_ids >= 1 && s.not_in_time_windows >= 1,
        "{s:?}"
    );
    assert!(s.wrong_digests >= 1 && s.unknown_user_names >= 1, "{s:?}");
    assert!(
        s.unsupported_sec_levels >= 1 && s.decryption_errors >= 1,
        "{s:?}"
    );
}

/// Not a check: serves this module on USM_CAPTURE_PORT, writing what it
/// receives into USM_CAPTURE_DIR, until a "stop" datagram, for
/// tests/fixtures/usm/pysnmp_capture.py to run another client against.
#[test]
#[ignore = "run by tests/fixtures/usm/pysnmp_capture.py"]
fn serve_for_capture() {
    let port: u16 = std::env::var("USM_CAPTURE_PORT").unwrap().parse().unwrap();
    let dir = std::path::PathBuf::from(std::env::var("USM_CAPTURE_DIR").unwrap());
    let socket = std::net::UdpSocket::bind(("127.0.0.1", port)).unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_millis(500)))
        .unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    serve(socket, agent(3), stop, Some(&dir));
}

/// net-snmp's snmptrapd, configured with the users for this engine ID as
/// a v3 trap sink is, takes the traps at each level.
#[test]
fn net_snmp_snmptrapd_accepts_traps() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("snmptrapd.conf");
    std::fs::write(
        &conf,
        format!(
            "createUser -e 0x{ENGINE_HEX} nms-256 SHA-256 sha256-auth-pass AES sha256-priv-pass\n\
             createUser -e 0x{ENGINE_HEX} nms-sha SHA sha-auth-pass\n\
             createUser -e 0x{ENGINE_HEX} nobody\n\
             disableAuthorization yes\n"
        ),
    )
    .unwrap();
    let port = std::net::UdpSocket::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut child = std::process::Command::new("snmptrapd")
        .args(["-f", "-Lo", "-C", "-m", "", "-c"])
        .arg(&conf)
        .arg(format!("udp:127.0.0.1:{port}"))
        .env("SNMP_PERSISTENT_DIR", dir.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("snmptrapd (Debian package snmptrapd) must be installed for this test");
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines() {
            if tx.send(line.unwrap_or_default()).is_err() {
                break;
            }
        }
    });
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let mut seen = String::new();
    let wait_for = |what: &str, seen: &mut String| {
        while !seen.contains(what) {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) => {
                    seen.push_str(&line);
                    seen.push('\n');
                }
                Err(_) => return false,
            }
        }
        true
    };
    let started = wait_for("NET-SNMP version", &mut seen);

    let usm = agent(4);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let cases = [
        ("nms-256", SecurityLevel::AuthPriv, "trap-at-authPriv"),
        ("nms-sha", SecurityLevel::AuthNoPriv, "trap-at-authNoPriv"),
        (
            "nobody",
            SecurityLevel::NoAuthNoPriv,
            "trap-at-noAuthNoPriv",
        ),
    ];
    for (user, level, marker) in cases {
        let string = |s: &str| {
            VarBindValue::Value(ObjectSyntax::Simple(rasn_smi::v2::SimpleSyntax::String(
                s.as_bytes().to_vec().into(),
            )))
        };
        let oid = |o: &[u32]| ObjectIdentifier::new(o.to_vec()).unwrap();
        let trap = Pdus::Trap(Trap(Pdu {
            request_id: 1,
            error_status: 0,
            error_index: 0,
            variable_bindings: vec![
                VarBind {
                    name: oid(&[1, 3, 6, 1, 2, 1, 1, 3, 0]),
                    value: VarBindValue::Value(ObjectSyntax::ApplicationWide(
                        ApplicationSyntax::Ticks(rasn_smi::v1::TimeTicks(100)),
                    )),
                },
                VarBind {
                    name: oid(&[1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0]),
                    value: VarBindValue::Value(ObjectSyntax::Simple(
                        rasn_smi::v2::SimpleSyntax::ObjectId(oid(&[1, 3, 6, 1, 6, 3, 1, 1, 5, 1])),
                    )),
                },
                VarBind {
                    name: oid(&[1, 3, 6, 1, 2, 1, 1, 5, 0]),
                    value: string(marker),
                },
            ],
        }));
        let ix = usm.user_index(user).unwrap();
        let bytes = usm.trap(ix, level, trap, 30).unwrap();
        socket.send_to(&bytes, ("127.0.0.1", port)).unwrap();
    }
    let got: Vec<bool> = cases
        .iter()
        .map(|(_, _, marker)| wait_for(marker, &mut seen))
        .collect();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(started, "snmptrapd did not start: {seen}");
    assert_eq!(got, [true; 3], "snmptrapd logged: {seen}");
}
