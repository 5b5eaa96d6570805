//! A captured SNMPv3 request is not accepted again after a restart: the
//! engine file raises snmpEngineBoots at every start, so a message of the
//! earlier run is outside the time window (RFC 3414 3.2.7).
//!
//! net-snmp's own snmpset, at authPriv (SHA-256, AES), clears a port's
//! counters through a UDP relay of the test that records every datagram it
//! sends. The agent is restarted; the recorded datagrams are sent again,
//! byte for byte, a few seconds into the new run (well within 150 s of the
//! engine time they carry). Each draws a Report (notInTimeWindow, or
//! unknownEngineID for the discovery probe), never a Response, and the
//! counter is not cleared.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use common::snmpv3::{self, User, usm_stat};
use common::{ChildGuard, SnmpTool, free_udp_port, run_agent, sweeps, wait_until};
use rasn_snmp::v3::{Message, ScopedPduData};

const ENGINE: &str = "800000000501020304c0ffee";
const PASS: &str = "replay-test-passphrase";
const OPS: User = User::auth_priv("ops", PASS);
/// pmPortClearCounters of that port.
const CLEAR: &str = "1.3.6.1.3.117.1.6.1.14.0.0.0.0.0.16.0.0.1";
/// pmPortCountersXmitData of node01 (the port its PortSelect names, 1): the
/// PMA's own 32-bit counter, which a clear sets back to 0.
const XMIT_DATA: &str = "1.3.6.1.3.117.1.4.1.15.0.0.0.0.0.16.0.0";

fn config(dir: &Path, listen: &str) -> PathBuf {
    let settings = "[set]\nallow = true\n[fabric]\nsweep_interval = 0.5\n";
    let access = "[[snmp.access]]\nuser = \"ops\"\nwrite = true\n\
                  [[snmp.access]]\ncommunity = \"public\"\n";
    let text = snmpv3::config_text(listen, ENGINE, settings, &[OPS], access);
    snmpv3::write_config(dir, &text, 0o600)
}

fn start(cfg: &Path, log: &Path, target: &str, at_least: u64) -> ChildGuard {
    let mut guard = run_agent(cfg, log);
    wait_until(
        "the agent to sweep",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || {
            assert!(
                guard.running(),
                "{}",
                std::fs::read_to_string(log).unwrap_or_default()
            );
            sweeps(target).is_some_and(|n| n >= at_least)
        },
    );
    guard
}

/// pmPortCountersXmitData of node01, read with v2c.
fn xmit_data(target: &str) -> u64 {
    let o = SnmpTool::new("snmpget")
        .args(["-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "1"])
        .arg(target)
        .arg(XMIT_DATA)
        .run();
    let text = String::from_utf8_lossy(&o.stdout);
    text.trim()
        .parse()
        .unwrap_or_else(|_| panic!("{text}{}", String::from_utf8_lossy(&o.stderr)))
}

/// A UDP relay on loopback: what a client sends to it goes to `agent`, and
/// the agent's answers go back to the client; every datagram from the client
/// is recorded.
struct Relay {
    addr: SocketAddr,
    sent: Arc<Mutex<Vec<Vec<u8>>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Relay {
    fn new(agent: SocketAddr) -> Relay {
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        let back = UdpSocket::bind("127.0.0.1:0").unwrap();
        back.connect(agent).unwrap();
        front
            .set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        back.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        let addr = front.local_addr().unwrap();
        let sent = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let (sent2, stop2) = (sent.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            let mut buf = vec![0u8; 65536];
            let mut client = None;
            while !stop2.load(Ordering::Relaxed) {
                if let Ok((n, from)) = front.recv_from(&mut buf) {
                    client = Some(from);
                    sent2.lock().unwrap().push(buf[..n].to_vec());
                    let _ = back.send(&buf[..n]);
                }
                if let (Ok(n), Some(c)) = (back.recv(&mut buf), client) {
                    let _ = front.send_to(&buf[..n], c);
                }
            }
        });
        Relay {
            addr,
            sent,
            stop,
            thread: Some(thread),
        }
    }

    fn recorded(&self) -> Vec<Vec<u8>> {
        self.sent.lock().unwrap().clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the agent answers a datagram: the OID of a Report's first varbind,
/// or what else came (a Response, encrypted or not; nothing).
fn answer(sock: &UdpSocket, datagram: &[u8]) -> Result<String, String> {
    sock.send(datagram).unwrap();
    let mut buf = vec![0u8; 65536];
    let n = sock.recv(&mut buf).map_err(|e| format!("no answer: {e}"))?;
    let msg: Message = rasn::ber::decode(&buf[..n]).map_err(|e| format!("undecodable: {e}"))?;
    match msg.scoped_data {
        ScopedPduData::CleartextPdu(s) => match s.data {
            rasn_snmp::v2::Pdus::Report(r) => {
                let vb = r.0.variable_bindings.first().ok_or("an empty Report")?;
                let oid = vb.name.iter().map(u32::to_string).collect::<Vec<_>>();
                Ok(oid.join("."))
            }
            other => Err(format!("not a Report: {other:?}")),
        },
        ScopedPduData::EncryptedPdu(_) => Err("an encrypted answer (a Response)".into()),
    }
}

#[test]
fn a_set_captured_before_a_restart_is_refused_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_udp_port());
    let cfg = config(dir.path(), &target);
    let log = dir.path().join("agent.log");
    let mut agent = start(&cfg, &log, &target, 3);

    // The SET through the relay, as an NMS sends it: discovery, then the
    // request at authPriv. It clears the counter.
    let before = xmit_data(&target);
    assert!(before > 0, "traffic flows");
    let relay = Relay::new(target.parse().unwrap());
    let o = SnmpTool::new("snmpset")
        .args(OPS.args())
        .args(["-t", "2", "-r", "0"])
        .arg(&relay.addr.to_string())
        .args([CLEAR, "u", "65535"])
        .timeout(Duration::from_secs(30))
        .run();
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    let captured = relay.recorded();
    drop(relay);
    assert!(captured.len() >= 2, "discovery and the SET");
    let swept = sweeps(&target).unwrap();
    wait_until(
        "two sweeps after the SET",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || sweeps(&target).is_some_and(|n| n >= swept + 2),
    );
    let cleared = xmit_data(&target);
    assert!(
        cleared < before,
        "the SET cleared it: {before} -> {cleared}"
    );

    // The restart: the same engine ID, the next boots.
    assert!(agent.stop().unwrap().success());
    let mut agent = start(&cfg, &log, &target, 6);
    let file = std::fs::read_to_string(dir.path().join("engine")).unwrap();
    assert!(
        file.contains(&format!("engine_id {ENGINE}\nboots 2\n")),
        "{file}"
    );
    let before = xmit_data(&target);

    // The same bytes again, each from the same kind of socket.
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(&target).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut reports = Vec::new();
    for d in &captured {
        match answer(&sock, d) {
            Ok(oid) => reports.push(oid),
            Err(e) => panic!("a replayed datagram of {} octets: {e}", d.len()),
        }
    }
    assert!(
        reports
            .iter()
            .all(|o| *o == usm_stat(2) || *o == usm_stat(4)),
        "{reports:?}"
    );
    assert!(
        reports.iter().any(|o| *o == usm_stat(2)),
        "the SET is outside the time window: {reports:?}"
    );

    // Not cleared: the counter only went on counting.
    let swept = sweeps(&target).unwrap();
    wait_until(
        "two sweeps after the replay",
        Duration::from_secs(20),
        Duration::from_millis(100),
        || sweeps(&target).is_some_and(|n| n >= swept + 2),
    );
    let after = xmit_data(&target);
    assert!(after >= before, "cleared again: {before} -> {after}");
    assert!(agent.stop().unwrap().success());
}
