//! Files from outside as untrusted input, through the binary as an operator
//! runs it: `check-config` and `run` refuse the same bad file with the same
//! exit status (2) and one short line, at once: a FIFO or a device is never
//! waited on or read, an empty or degenerate topology is refused, and a
//! control character in a configured address never reaches a log line.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The binary with `args`: exit status and standard error. Killed (by its
/// PID) and failed after 10 s.
fn agent(args: &[&str]) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let err_path = dir.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(args)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err_path).unwrap())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("ibpm-agentx {args:?} did not exit within 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let err = std::fs::read_to_string(&err_path).unwrap_or_default();
    (status.code().unwrap_or(-1), err)
}

/// `check-config` and `run` on `conf`: both exit 2 with `want` in a
/// short error.
fn both_refuse(conf: &Path, want: &str) {
    let conf = conf.to_str().unwrap();
    for args in [
        vec!["check-config", "--config", conf],
        vec!["run", "--no-agentx", "--config", conf],
    ] {
        let (code, err) = agent(&args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        let last = err.trim().lines().last().unwrap_or_default();
        assert!(last.len() < 600, "{args:?}: {} bytes", last.len());
    }
}

fn mkfifo(p: &Path) {
    assert!(Command::new("mkfifo").arg(p).status().unwrap().success());
}

#[test]
fn a_fifo_or_a_device_as_the_configuration_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("agent.toml");
    mkfifo(&fifo);
    both_refuse(&fifo, "not a regular file");
    both_refuse(Path::new("/dev/zero"), "not a regular file");
    let big = dir.path().join("big.toml");
    std::fs::File::create(&big)
        .unwrap()
        .set_len(ibpm_agentx::config::MAX_CONFIG_FILE + 1)
        .unwrap();
    both_refuse(&big, "more than");
}

#[test]
fn bad_topologies_are_refused_by_check_config_and_run_alike() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(&conf, "[fabric]\ntopology = \"fabric.net\"\n").unwrap();
    let topo = dir.path().join("fabric.net");

    mkfifo(&topo);
    both_refuse(&conf, "not a regular file");
    std::fs::remove_file(&topo).unwrap();

    std::fs::write(&topo, "# nothing here\n").unwrap();
    both_refuse(&conf, "no nodes");

    std::fs::write(
        &topo,
        "caguid=0xffffffffffffffff\nHca 2 \"H\"\n[1] \"S\"[1]\nSwitch 2 \"S\"\n[1] \"H\"[1]\n",
    )
    .unwrap();
    both_refuse(&conf, "wrap around to 0");

    let huge = format!("Switch 2 \"S\"\n[1] \"H\"[1] {}\n", "x".repeat(10 << 20));
    std::fs::write(&topo, huge).unwrap();
    both_refuse(&conf, "fabric.net:2");
}

#[test]
fn a_newline_in_the_agentx_socket_fails_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        "[agentx]\nsocket = \"unix:/run/snmp/agentx\\nFAKE LOG LINE\"\n",
    )
    .unwrap();
    let (code, err) = agent(&["check-config", "--config", conf.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("control character"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let (code, err) = agent(&["run", "--config", conf.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        !err.lines().any(|l| l.starts_with("FAKE LOG LINE")),
        "{err}"
    );
}
