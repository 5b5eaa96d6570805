//! `Type=notify`: the agent tells systemd READY=1 only once it serves (first
//! snapshot published and, with AgentX, the subtree registered), pings the
//! watchdog while the sweeper publishes, and says STOPPING=1 on SIGTERM.
//! systemd's side is a unix datagram socket named in NOTIFY_SOCKET.

mod common;

use std::os::unix::net::UnixDatagram;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ChildGuard, free_udp_port};

/// Messages received within `limit`, stopping early at one containing `until`.
fn collect(rx: &UnixDatagram, limit: Duration, until: &str) -> Vec<String> {
    let end = Instant::now() + limit;
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while Instant::now() < end {
        rx.set_read_timeout(Some(
            end.saturating_duration_since(Instant::now())
                .max(Duration::from_millis(1)),
        ))
        .unwrap();
        match rx.recv(&mut buf) {
            Ok(n) => {
                let m = String::from_utf8_lossy(&buf[..n]).into_owned();
                let stop = m.contains(until);
                got.push(m);
                if stop {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    got
}

fn spawn(dir: &std::path::Path, extra: &[&str]) -> ChildGuard {
    let child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["run", "--sweep-interval", "1"])
        .args(extra)
        .env("NOTIFY_SOCKET", dir.join("notify"))
        .env("WATCHDOG_USEC", "400000")
        .env_remove("WATCHDOG_PID")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("agent.log")).unwrap())
        .spawn()
        .unwrap();
    ChildGuard::new("ibpm-agentx", child)
}

#[test]
fn ready_after_the_first_snapshot_then_watchdog_pings_then_stopping() {
    let dir = tempfile::tempdir().unwrap();
    let rx = UnixDatagram::bind(dir.path().join("notify")).unwrap();
    let port = free_udp_port();
    let listen = format!("127.0.0.1:{port}");
    let mut agent = spawn(dir.path(), &["--no-agentx", "--snmp-listen", &listen]);

    let got = collect(&rx, Duration::from_secs(20), "READY=1");
    let ready = got.iter().find(|m| m.contains("READY=1"));
    assert!(ready.is_some(), "no READY=1: {got:?}");
    assert!(
        ready.unwrap().contains("STATUS=serving 18 nodes"),
        "{got:?}"
    );
    // Serving by then: the responder answers a row.
    let out = Command::new("snmpgetnext")
        .args([
            "-v2c",
            "-c",
            "public",
            "-On",
            "-t",
            "2",
            "-r",
            "0",
            &listen,
            "1.3.6.1.3.117",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with(".1.3.6.1.3.117.1."), "{text}");

    // WATCHDOG_USEC 400 ms: a ping about every 200 ms.
    let pings = collect(&rx, Duration::from_millis(1500), "never")
        .into_iter()
        .filter(|m| m == "WATCHDOG=1")
        .count();
    assert!(pings >= 3, "{pings} watchdog pings in 1.5 s");

    agent.stop();
    let rest = collect(&rx, Duration::from_secs(2), "STOPPING=1");
    assert!(rest.iter().any(|m| m == "STOPPING=1"), "{rest:?}");
}

#[test]
fn not_ready_while_the_agentx_subtree_is_not_registered() {
    let dir = tempfile::tempdir().unwrap();
    let rx = UnixDatagram::bind(dir.path().join("notify")).unwrap();
    // No snmpd behind this socket: the first sweep happens, registration not.
    let socket = format!("unix:{}", dir.path().join("no-master").display());
    let mut agent = spawn(dir.path(), &["--agentx-socket", &socket]);
    let got = collect(&rx, Duration::from_secs(3), "READY=1");
    assert!(
        !got.iter().any(|m| m.contains("READY=1")),
        "READY=1 without a registered subtree: {got:?}"
    );
    let log = std::fs::read_to_string(dir.path().join("agent.log")).unwrap();
    assert!(log.contains("first sweep done"), "{log}");
    agent.stop();
}
