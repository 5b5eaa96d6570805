//! No secret of the configuration is ever printed: not the communities,
//! not the SNMPv3 passphrases, not the keys (given in hex or localized from
//! a passphrase). The agent runs at log level `trace` and answers
//! net-snmp's clients (right and wrong communities and passphrases);
//! neither its log, nor `check-config`'s output (with its warnings), nor a
//! Debug print of the configuration, the access rules or the processor
//! holds any of them.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::snmpv3::{self, PM_AGENT, PM_AGENT_VERSION, User};
use common::{SnmpTool, free_udp_port, run_agent, wait_until};
use ibpm_agentx::config::Config;
use ibpm_agentx::snmp::usm::{AuthProtocol, EngineId, Usm, localize, password_to_key};
use ibpm_agentx::snmp::{Processor, ResponderConfig};

const ENGINE: &str = "800000000501020304abcdef";
const RO: &str = "ro-community-Q7x";
const RW: &str = "rw-community-Z9k";
const AUTH: &str = "auth-passphrase-W3m";
const PRIV: &str = "priv-passphrase-V8n";
const TRAPS: &str = "trap-community-K4p";
/// A localized SHA-256 key given in hex (32 octets) and a privacy key.
const AUTH_KEY: &str = "5c7b1e1f0e39a3c6c2d6e75b1f6ea1b8a1f3c4d5e6f708192a3b4c5d6e7f8091";
const PRIV_KEY: &str = "0f1e2d3c4b5a69788796a5b4c3d2e1f0";

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Every secret as it could appear in text: as given, in hex, and the
/// keys localized from the passphrases.
fn secrets() -> Vec<String> {
    let engine = EngineId::from_hex(ENGINE).unwrap();
    let mut s = vec![
        RO.to_string(),
        RW.to_string(),
        AUTH.to_string(),
        PRIV.to_string(),
        TRAPS.to_string(),
        AUTH_KEY.to_string(),
        PRIV_KEY.to_string(),
        AUTH_KEY.to_uppercase(),
        hex(RO.as_bytes()),
        hex(AUTH.as_bytes()),
    ];
    for pass in [AUTH, PRIV] {
        let k = localize(
            AuthProtocol::Sha256,
            &password_to_key(AuthProtocol::Sha256, pass).unwrap(),
            engine.as_bytes(),
        );
        s.push(hex(&k));
        s.push(hex(&k[..16]));
        // As a Debug print of the octets would show them.
        s.push(format!("{:?}", &k[..8]).trim_end_matches(']').to_string());
    }
    s
}

fn assert_clean(what: &str, text: &str) {
    for secret in secrets() {
        assert!(
            !text.contains(&secret),
            "{what} holds a secret ({secret}):\n{text}"
        );
    }
}

fn config_text(listen: &str) -> String {
    let settings = format!(
        "[set]\nallow = true\n[log]\nlevel = \"trace\"\n[notify]\ncommunity = \"{TRAPS}\"\n\
         [fabric]\nsweep_interval = 3600\n[sim]\ntraffic = false\n"
    );
    let ops = User {
        privacy: Some(PRIV),
        ..User::auth_priv("ops", AUTH)
    };
    let rest = format!(
        r#"[[snmp.user]]
name = "keyed"
auth = "SHA-256"
auth_key = "{AUTH_KEY}"
privacy = "AES"
privacy_key = "{PRIV_KEY}"
[[snmp.access]]
user = "ops"
write = true
[[snmp.access]]
user = "keyed"
[[snmp.access]]
community = "{RW}"
write = true
[[snmp.access]]
community = "{RO}"
sources = ["127.0.0.0/8", "192.0.2.0/24"]
"#
    );
    snmpv3::config_text(listen, ENGINE, &settings, &[ops], &rest)
}

fn write_config(dir: &Path, listen: &str) -> std::path::PathBuf {
    // Readable by others: check-config warns (without the secrets).
    snmpv3::write_config(dir, &config_text(listen), 0o644)
}

#[test]
fn check_config_prints_no_secret() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write_config(dir.path(), "0.0.0.0:16199");
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["check-config", "--config", cfg.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("warning"), "the warnings are there: {text}");
    assert!(text.contains("clear text"), "{text}");
    assert!(text.contains("chmod"), "{text}");
    assert_clean("check-config", &text);

    // A refused configuration names the key, not its value.
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        format!(
            "[snmp]\ncommunity = \"{RO}\"\nwrite_community = \"{RO}\"\n\
             [[snmp.user]]\nname = \"u\"\nauth = \"SHA-256\"\nauth_key = \"{}\"\n",
            &AUTH_KEY[..62]
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["check-config", "--config", bad.to_str().unwrap()])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(!out.status.success(), "{text}");
    assert_clean("check-config's refusal", &text);
}

#[test]
fn debug_prints_show_no_secret() {
    let cfg = Config::parse(&config_text("127.0.0.1:16199"), "agent.toml").unwrap();
    assert_clean("Debug of the configuration", &format!("{cfg:?}"));
    assert_clean("{:#?} of the configuration", &format!("{cfg:#?}"));
    let access = cfg.snmp_access();
    assert_clean("Debug of the access rules", &format!("{access:?}"));
    let engine = EngineId::from_hex(ENGINE).unwrap();
    let users = cfg
        .snmp
        .user
        .iter()
        .map(|u| u.user(&engine).unwrap())
        .collect::<Vec<_>>();
    assert_clean("Debug of the users", &format!("{users:?}"));
    let usm = Usm::new(engine, 1, users).unwrap();
    assert_clean("Debug of the USM", &format!("{usm:?}"));
    let p = Processor::new(ResponderConfig { access }).with_usm(usm, std::time::Instant::now());
    assert_clean("Debug of the processor", &format!("{p:?}"));
}

#[test]
fn the_agent_logs_no_secret_at_trace() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_udp_port());
    let cfg = write_config(dir.path(), &target);
    let log = dir.path().join("agent.log");
    let mut agent = run_agent(&cfg, &log);
    wait_until(
        "the agent to answer",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            assert!(
                agent.running(),
                "{}",
                std::fs::read_to_string(&log).unwrap()
            );
            SnmpTool::new("snmpget")
                .args(["-v2c", "-c", RO, "-t", "1", "-r", "0"])
                .arg(&target)
                .arg(PM_AGENT_VERSION)
                .run()
                .status
                .success()
        },
    );
    let v3 = |name: &str, auth: &str, privacy: &str| {
        let user = User {
            name,
            privacy: Some(privacy),
            ..User::auth_priv(name, auth)
        };
        SnmpTool::new("snmpget")
            .args(user.args())
            .args(["-t", "1", "-r", "0"])
            .arg(&target)
            .arg(PM_AGENT_VERSION)
            .run()
    };
    assert!(v3("ops", AUTH, PRIV).status.success());
    assert!(!v3("ops", "not-the-passphrase", PRIV).status.success());
    assert!(!v3("nobody", AUTH, PRIV).status.success());
    for community in [RW, RO, "not-a-community"] {
        let _ = SnmpTool::new("snmpwalk")
            .args(["-v2c", "-c", community, "-t", "1", "-r", "0"])
            .arg(&target)
            .arg(PM_AGENT)
            .run();
    }
    assert!(agent.stop().unwrap().success());
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("TRACE") || text.contains("DEBUG"),
        "the log is at trace level:\n{text}"
    );
    assert_clean("the agent's log", &text);
}
