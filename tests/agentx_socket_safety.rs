//! The agent does not connect to an AgentX socket in a directory other users
//! can write to (anyone there could stand in for snmpd), says why in its log,
//! and connects once the directory is fixed.

mod common;

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixListener;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::ChildGuard;

/// Waits up to `limit` for a connection on `l` (non-blocking).
fn accepted_within(l: &UnixListener, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if l.accept().is_ok() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn a_socket_in_a_directory_others_can_write_is_refused_until_fixed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("agentx");
    fs::create_dir(&dir).unwrap();
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).unwrap();
    let socket = dir.join("master");
    let listener = UnixListener::bind(&socket).unwrap();
    listener.set_nonblocking(true).unwrap();
    let log = tmp.path().join("agent.log");

    let child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["run", "--sweep-interval", "60", "--agentx-socket"])
        .arg(format!("unix:{}", socket.display()))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut agent = ChildGuard::new("ibpm-agentx", child);

    assert!(
        !accepted_within(&listener, Duration::from_secs(2)),
        "the agent connected through a world-writable directory"
    );
    assert!(agent.running(), "the agent keeps running and retrying");
    let mut text = String::new();
    fs::File::open(&log)
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert!(
        text.contains("refusing the AgentX socket")
            && text.contains(&dir.display().to_string())
            && text.contains("writable by other users"),
        "log does not say why:\n{text}"
    );

    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).unwrap();
    assert!(
        accepted_within(&listener, Duration::from_secs(20)),
        "the agent did not connect once the directory was fixed"
    );
    agent.stop();
}
