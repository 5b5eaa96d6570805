//! SNMPv3 (USM) on the agent's own endpoint with net-snmp's own clients:
//! snmpget, snmpbulkwalk, snmptable and snmpset at every security level,
//! with SHA (HMAC-SHA-96) and SHA-256, and AES; the wrong user, the wrong
//! passphrase, the wrong engine ID and a stale time window each move their
//! usmStats counter by one; snmpEngineBoots goes up at every start.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use common::snmpv3::{self, PM_AGENT_SWEEPS, PM_AGENT_VERSION, PORT_TABLE, User};
use common::{ChildGuard, SnmpTool, free_udp_port, run_agent, wait_sweeps};

const ENGINE: &str = "800000000501020304aabbcc";
const PASS: &str = "maplesyrup-passphrase";

struct Agent {
    guard: ChildGuard,
    target: String,
    dir: tempfile::TempDir,
    cfg: PathBuf,
}

impl Agent {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }
}

/// The users, one at each level (two at authPriv, one of them SHA-1).
const USERS: [User; 4] = [
    User {
        name: "priv256",
        auth: Some(("SHA-256", PASS)),
        privacy: Some(PASS),
    },
    User {
        name: "priv1",
        auth: Some(("SHA", PASS)),
        privacy: Some(PASS),
    },
    User {
        name: "auth256",
        auth: Some(("SHA-256", PASS)),
        privacy: None,
    },
    User {
        name: "anon",
        auth: None,
        privacy: None,
    },
];

fn config(dir: &Path, listen: &str) -> PathBuf {
    let settings = "[set]\nallow = true\n[fabric]\nsweep_interval = 3600\n[sim]\ntraffic = false\n";
    let access = r#"[[snmp.access]]
user = "priv256"
write = true
[[snmp.access]]
user = "priv1"
[[snmp.access]]
user = "auth256"
[[snmp.access]]
user = "anon"
subtrees = ["pmAgent"]
[[snmp.access]]
community = "public"
"#;
    let text = snmpv3::config_text(listen, ENGINE, settings, &USERS, access);
    snmpv3::write_config(dir, &text, 0o600)
}

fn start(dir: tempfile::TempDir, cfg: PathBuf, target: String) -> Agent {
    let log = dir.path().join("agent.log");
    let mut guard = run_agent(&cfg, &log);
    wait_sweeps(&target, 1, Duration::from_secs(30), &mut guard, || {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    Agent {
        guard,
        target,
        dir,
        cfg,
    }
}

fn agent() -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_udp_port());
    let cfg = config(dir.path(), &target);
    start(dir, cfg, target)
}

/// The net-snmp arguments of a user at its level.
fn v3(user: &str) -> Vec<String> {
    match user {
        "public" => ["-v2c", "-c", "public"].map(String::from).to_vec(),
        _ => USERS.iter().find(|u| u.name == user).unwrap().args(),
    }
}

fn run(tool: &str, auth: &[String], target: &str, args: &[&str]) -> Output {
    SnmpTool::new(tool)
        .args(auth)
        .args(["-t", "1", "-r", "0"])
        .arg(target)
        .args(args)
        .timeout(Duration::from_secs(30))
        .run()
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A usmStats counter (1 to 6), read at authPriv without discovery.
fn usm_stat(a: &Agent, column: u32) -> u64 {
    let mut auth = v3("priv256");
    auth.extend(["-e".to_string(), ENGINE.to_string()]);
    let o = run(
        "snmpget",
        &auth,
        &a.target,
        &["-Oqv", &snmpv3::usm_stat(column)],
    );
    out(&o)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}{}", out(&o), err(&o)))
}

#[test]
fn every_security_level_reads_what_v2c_reads() {
    let a = agent();
    let want = out(&run(
        "snmpbulkwalk",
        &v3("public"),
        &a.target,
        &["-On", "-Cr25", PORT_TABLE],
    ));
    assert!(want.lines().count() > 50, "{want}");
    for user in ["priv256", "priv1", "auth256"] {
        let o = run(
            "snmpbulkwalk",
            &v3(user),
            &a.target,
            &["-On", "-Cr25", PORT_TABLE],
        );
        assert_eq!(out(&o), want, "{user}: {}", err(&o));
        let o = run("snmpget", &v3(user), &a.target, &["-On", PM_AGENT_VERSION]);
        assert!(
            out(&o).contains("STRING: \""),
            "{user}: {}{}",
            out(&o),
            err(&o)
        );
    }
    // noAuthNoPriv sees only its subtree.
    let o = run("snmpget", &v3("anon"), &a.target, &["-On", PM_AGENT_SWEEPS]);
    assert!(out(&o).contains("Counter64"), "{}{}", out(&o), err(&o));
    let o = run(
        "snmpget",
        &v3("anon"),
        &a.target,
        &["-On", "1.3.6.1.3.117.1.6.1.2.0.0.0.0.0.0.0.1.1"],
    );
    assert!(out(&o).contains("No Such Object"), "{}{}", out(&o), err(&o));
    // A user below the level its rule asks for: authorizationError.
    let o = run(
        "snmpget",
        &User {
            privacy: None,
            ..USERS[0]
        }
        .args(),
        &a.target,
        &[PM_AGENT_VERSION],
    );
    assert!(
        err(&o).contains("authorizationError"),
        "{}{}",
        out(&o),
        err(&o)
    );
    assert!(
        a.log().contains("engine ID 0x800000000501020304aabbcc"),
        "{}",
        a.log()
    );
}

#[test]
fn snmptable_and_snmpset_work_at_auth_priv() {
    let a = agent();
    let table = |auth: &[String]| {
        let o = SnmpTool::new("snmptable")
            .mibs(true)
            .args(auth)
            .args(["-t", "2", "-r", "0", "-OX", "-Cb", "-Cf", ","])
            .arg(&a.target)
            .arg("IB-PM-MIB::pmPortTable")
            .run();
        assert!(o.status.success(), "{}", err(&o));
        out(&o)
    };
    let want = table(&v3("public"));
    assert!(want.lines().count() > 20, "{want}");
    assert_eq!(table(&v3("priv256")), want);
    // Clear a port's counters through the write rule ...
    let first = out(&run(
        "snmpgetnext",
        &v3("public"),
        &a.target,
        &["-On", "1.3.6.1.3.117.1.6.1.14"],
    ));
    let name = first.split_whitespace().next().unwrap().to_string();
    let o = run("snmpset", &v3("priv256"), &a.target, &[&name, "u", "1"]);
    assert!(o.status.success(), "{}{}", out(&o), err(&o));
    // ... which a read-only user may not.
    let o = run("snmpset", &v3("priv1"), &a.target, &[&name, "u", "1"]);
    assert!(err(&o).contains("noAccess"), "{}{}", out(&o), err(&o));
}

#[test]
fn each_failure_gets_its_report() {
    let a = agent();
    let get = |auth: Vec<String>| run("snmpget", &auth, &a.target, &[PM_AGENT_VERSION]);

    let before = usm_stat(&a, 3);
    let mut nobody = v3("auth256");
    nobody[4] = "nobody".into();
    let o = get(nobody);
    assert!(err(&o).contains("Unknown user name"), "{}", err(&o));
    assert_eq!(usm_stat(&a, 3), before + 1, "usmStatsUnknownUserNames");

    let before = usm_stat(&a, 5);
    let mut wrong = v3("priv256");
    wrong[8] = "not-the-passphrase".into();
    let o = get(wrong);
    assert!(err(&o).contains("Authentication failure"), "{}", err(&o));
    assert_eq!(usm_stat(&a, 5), before + 1, "usmStatsWrongDigests");

    // A wrong engine ID, without discovery: the Report names ours (net-snmp
    // then gives up, as it does with snmpd).
    let before = usm_stat(&a, 4);
    let mut other = v3("priv256");
    other.extend(["-e".into(), "8000000005deadbeef".into()]);
    let o = get(other);
    assert!(!o.status.success(), "{}", out(&o));
    assert_eq!(usm_stat(&a, 4), before + 1, "usmStatsUnknownEngineIDs");

    // A stale time window: an authenticated Report with the right boots and
    // time, after which the client asks again and is answered.
    let before = usm_stat(&a, 2);
    let mut stale = v3("priv256");
    stale.extend(["-e".into(), ENGINE.into(), "-Z".into(), "0,0".into()]);
    let o = get(stale);
    assert!(out(&o).contains("STRING"), "{}{}", out(&o), err(&o));
    // net-snmp may probe the time window once more on its own.
    let after = usm_stat(&a, 2);
    assert!(
        (before + 1..=before + 2).contains(&after),
        "usmStatsNotInTimeWindows {before} -> {after}"
    );
}

#[test]
fn engine_boots_go_up_at_every_start() {
    let mut a = agent();
    let boots = |a: &Agent| {
        let o = run(
            "snmpget",
            &v3("priv256"),
            &a.target,
            &["-Oqv", "1.3.6.1.6.3.10.2.1.2.0"],
        );
        out(&o)
            .trim()
            .parse::<u32>()
            .unwrap_or_else(|_| panic!("{}{}", out(&o), err(&o)))
    };
    assert_eq!(boots(&a), 1);
    assert!(a.guard.stop().unwrap().success());
    let Agent {
        dir, cfg, target, ..
    } = a;
    let a = start(dir, cfg, target);
    assert_eq!(boots(&a), 2);
    let file = std::fs::read_to_string(a.dir.path().join("engine")).unwrap();
    assert!(
        file.contains("engine_id 800000000501020304aabbcc\nboots 2\n"),
        "{file}"
    );
}
