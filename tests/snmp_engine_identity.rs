//! The SNMPv3 engine's identity fails closed, in `check-config` and `run`
//! alike (exit 2, one line saying why): an `engine_id` without an
//! `engine_file` to keep its boots, and an engine file that is damaged,
//! unreadable or keeps another engine ID, are refused, and such a file is
//! left as it was. snmpEngineBoots never repeats for an engine ID.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

fn agent(args: &[&str]) -> (i32, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A start that is not refused would run on: stop it by its PID.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    // `run` logs its start before it refuses: the refusal is the line
    // that is not a log line.
    let said = err
        .lines()
        .filter(|l| !l.contains(" INFO ") && !l.contains(" DEBUG "))
        .collect::<Vec<_>>()
        .join("\n");
    (status.code().unwrap_or(-1), said)
}

fn check(conf: &Path) -> (i32, String) {
    agent(&["check-config", "--config", conf.to_str().unwrap()])
}

fn run(conf: &Path) -> (i32, String) {
    agent(&["run", "--no-agentx", "--config", conf.to_str().unwrap()])
}

const USER: &str = "[[snmp.user]]\nname = \"nms\"\nauth = \"SHA-256\"\n\
                    auth_passphrase = \"engine-test-passphrase\"\n";

fn config(dir: &Path, snmp: &str) -> std::path::PathBuf {
    let p = dir.join("agent.toml");
    std::fs::write(
        &p,
        format!(
            "[fabric]\nsweep_interval = 3600\n[snmp]\nlisten = \"127.0.0.1:0\"\n{snmp}{USER}\
             [[snmp.access]]\nuser = \"nms\"\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o600)).unwrap();
    p
}

/// The message after the key: what check-config and run both say.
fn message(line: &str, key: &str) -> String {
    let at = line
        .find(key)
        .unwrap_or_else(|| panic!("{key} not in {line}"));
    let rest = &line[at + key.len()..];
    rest.trim_start_matches(['`', ':', ' ']).trim().to_string()
}

#[test]
fn an_engine_id_without_an_engine_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let conf = config(dir.path(), "engine_id = \"800000000501020304aabbcc\"\n");
    let (code, err) = check(&conf);
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("agent.toml:5: key `snmp.engine_id`"), "{err}");
    assert!(err.contains("is set without snmp.engine_file"), "{err}");
    let (code, run_err) = run(&conf);
    assert_eq!(code, 2, "{run_err}");
    assert_eq!(run_err.trim().lines().count(), 1, "{run_err}");
    assert_eq!(
        message(&run_err, "snmp.engine_id"),
        message(&err, "snmp.engine_id")
    );
}

#[test]
fn a_damaged_engine_file_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("engine");
    let conf = config(
        dir.path(),
        "engine_id = \"800000000501020304aabbcc\"\nengine_file = \"engine\"\n",
    );
    let big = format!(
        "engine_id 800000000501020304aabbcc\nboots 3\n#{}\n",
        "x".repeat(5000)
    );
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            b"engine_id 800000000501020304aabbcc\nboots x\n".to_vec(),
            "line 2",
        ),
        (b"engine_id 800000000501020304aabbcc\n".to_vec(), "lacks"),
        (Vec::new(), "lacks"),
        (b"\xff\xfe".to_vec(), "not UTF-8"),
        (big.into_bytes(), "more than the 4096"),
        (
            b"engine_id 80000000050f0f0f0f\nboots 3\n".to_vec(),
            "keeps engine ID 0x80000000050f0f0f0f",
        ),
    ];
    for (bytes, why) in cases {
        std::fs::write(&engine, &bytes).unwrap();
        let (code, err) = check(&conf);
        assert_eq!(code, 2, "{why}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
        assert!(err.contains("key `snmp.engine_file`"), "{err}");
        assert!(err.contains(&engine.display().to_string()), "{err}");
        assert!(err.contains(why), "{why}: {err}");
        let (code, run_err) = run(&conf);
        assert_eq!(code, 2, "{why}: {run_err}");
        assert_eq!(run_err.trim().lines().count(), 1, "{run_err}");
        assert_eq!(
            message(&run_err, "snmp.engine_file"),
            message(&err, "snmp.engine_file"),
            "check-config and run say the same"
        );
        assert_eq!(std::fs::read(&engine).unwrap(), bytes, "{why}: left alone");
    }
    // A FIFO: refused at once, not waited on.
    std::fs::remove_file(&engine).unwrap();
    let made = Command::new("mkfifo").arg(&engine).status();
    if made.is_ok_and(|s| s.success()) {
        let (code, err) = run(&conf);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("not a regular file"), "{err}");
    }
}

#[test]
fn check_config_reads_a_good_engine_file_without_writing_it() {
    let dir = tempfile::tempdir().unwrap();
    let engine = dir.path().join("engine");
    let conf = config(
        dir.path(),
        "engine_id = \"800000000501020304aabbcc\"\nengine_file = \"engine\"\n",
    );
    std::fs::write(&engine, "engine_id 800000000501020304aabbcc\nboots 41\n").unwrap();
    let (code, err) = check(&conf);
    assert_eq!(code, 0, "{err}");
    // check-config reads the file, never writes it.
    assert!(
        std::fs::read_to_string(&engine)
            .unwrap()
            .contains("boots 41\n")
    );
}

/// A localized key of the wrong length: refused by check-config and run
/// with the same words (run used to refuse it only when it made the user).
#[test]
fn a_key_of_the_wrong_length_is_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        format!(
            "[fabric]\nsweep_interval = 3600\n[snmp]\nlisten = \"127.0.0.1:0\"\n\
             engine_file = \"engine\"\n[[snmp.user]]\nname = \"k\"\nauth = \"SHA-256\"\n\
             auth_key = \"{}\"\n",
            "ab".repeat(31)
        ),
    )
    .unwrap();
    let (code, err) = check(&conf);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("key `snmp.user.auth_key`"), "{err}");
    let (code, run_err) = run(&conf);
    assert_eq!(code, 2, "{run_err}");
    assert_eq!(run_err.trim(), format!("ibpm-agentx: {}", err.trim()));
    assert!(
        !dir.path().join("engine").exists(),
        "refused before the engine"
    );
}

/// The raised boots survives a power loss: the engine file is synced, then
/// renamed into place, then its directory is synced (seen with strace).
#[test]
fn the_engine_file_and_its_directory_are_synced() {
    if Command::new("strace").arg("-V").output().is_err() {
        eprintln!("strace is not installed: skipped");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    // The agent writes its engine file, then cannot listen (the port is
    // taken) and exits by itself.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        format!(
            "[agentx]\nenabled = false\n[fabric]\nsweep_interval = 3600\n[snmp]\n\
             listen = \"{}\"\nengine_file = \"engine\"\n{USER}",
            taken.local_addr().unwrap()
        ),
    )
    .unwrap();
    let trace = dir.path().join("trace");
    let out = Command::new("strace")
        .args([
            "-f",
            "-qq",
            "-e",
            "trace=openat,fsync,rename,renameat,renameat2",
            "-o",
        ])
        .arg(&trace)
        .arg(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["run", "--config", conf.to_str().unwrap()])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(dir.path().join("engine").exists());
    let text = std::fs::read_to_string(&trace).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let engine = dir.path().join("engine").display().to_string();
    let dir_name = dir.path().display().to_string();
    let fd_of = |l: &str| l.rsplit("= ").next().map(|f| f.trim().to_string());
    let tmp_open = lines
        .iter()
        .position(|l| l.contains("openat(") && l.contains(&format!("{engine}.tmp\"")))
        .unwrap_or_else(|| panic!("{text}"));
    let tmp_fd = fd_of(lines[tmp_open]).unwrap();
    let rename = lines
        .iter()
        .position(|l| l.contains("rename") && l.contains(&format!("\"{engine}\"")))
        .unwrap_or_else(|| panic!("{text}"));
    let synced = |from: usize, to: usize, fd: &str| {
        lines[from..to]
            .iter()
            .any(|l| l.contains(&format!("fsync({fd})")))
    };
    assert!(
        synced(tmp_open, rename, &tmp_fd),
        "the file before the rename:\n{text}"
    );
    let dir_open = lines[rename..]
        .iter()
        .position(|l| l.contains("openat(") && l.contains(&format!("\"{dir_name}\"")))
        .map(|i| i + rename)
        .unwrap_or_else(|| panic!("the directory is opened after the rename:\n{text}"));
    let dir_fd = fd_of(lines[dir_open]).unwrap();
    assert!(
        synced(dir_open, lines.len(), &dir_fd),
        "the directory after the rename:\n{text}"
    );
}

/// An engine file in a directory that is not there: refused alike.
#[test]
fn an_engine_file_without_its_directory_is_refused_alike() {
    let dir = tempfile::tempdir().unwrap();
    let conf = config(dir.path(), "engine_file = \"gone/engine\"\n");
    let (code, err) = check(&conf);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("key `snmp.engine_file`"), "{err}");
    assert!(err.contains("gone/engine"), "{err}");
    let (code, run_err) = run(&conf);
    assert_eq!(code, 2, "{run_err}");
    assert_eq!(
        message(&run_err, "snmp.engine_file"),
        message(&err, "snmp.engine_file")
    );
}
