//! Every answer the endpoint sends is charged to a rate guard before it is
//! built, Reports and authorizationError answers included, and fits the
//! rule's `max_response_octets`: a flood from a listed source whose rule
//! carries a guard draws at most burst + rate x time answers.
//!
//! The agent binary, on loopback, with one SNMPv3 user rule (10/s, burst
//! 5). The flood: net-snmp's own discovery probe (tests/fixtures/usm),
//! requests of an unknown user, and noAuthNoPriv requests of ~60,000
//! octets of a known user whose rule asks for authPriv (authorizationError).
//! The figures (datagrams and octets in and out) are printed.

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::time::{Duration, Instant};

use common::snmpv3;
use common::{SnmpTool, free_udp_port, run_agent};
use rasn::types::ObjectIdentifier;
use rasn_snmp::v2::{self, Pdu, Pdus, VarBindValue};

const ENGINE: &str = "800000000501020304f100d0";
const PASS: &str = "flood-test-passphrase";
const RATE: u64 = 10;
const BURST: u64 = 5;

/// A noAuthNoPriv GetRequest of `user` with `n` varbinds (reportable).
fn plain_get(user: &str, n: u32) -> Vec<u8> {
    let vbs = (0..n)
        .map(|i| v2::VarBind {
            name: ObjectIdentifier::new(vec![1, 3, 6, 1, 3, 117, 1, 6, 1, 2, 0, 0, 0, i]).unwrap(),
            value: VarBindValue::Unspecified,
        })
        .collect();
    let get = Pdus::GetRequest(v2::GetRequest(Pdu {
        request_id: 7,
        error_status: 0,
        error_index: 0,
        variable_bindings: vbs,
    }));
    ibpm_agentx::rig::plain_v3_message(&snmpv3::engine_bytes(ENGINE), user, 4242, get)
}

fn config(dir: &Path, listen: &str) -> std::path::PathBuf {
    let settings = "[fabric]\nsweep_interval = 3600\n[sim]\ntraffic = false\n";
    let access = format!(
        "[[snmp.access]]\nuser = \"ops\"\nrate_limit = {RATE}\nrate_burst = {BURST}\n\
         max_response_octets = 1472\n[[snmp.access]]\ncommunity = \"public\"\n"
    );
    let ops = snmpv3::User::auth_priv("ops", PASS);
    let text = snmpv3::config_text(listen, ENGINE, settings, &[ops], &access);
    snmpv3::write_config(dir, &text, 0o600)
}

/// The agent's pmAgentSnmp counter `name`, read with v2c.
fn counter(target: &str, name: &str) -> u64 {
    let o = SnmpTool::new("snmpget")
        .mibs(true)
        .args(["-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "1"])
        .arg(target)
        .arg(&format!("IB-PM-MIB::{name}.0"))
        .run();
    let text = String::from_utf8_lossy(&o.stdout);
    // The value, then its UNITS ("0 datagrams").
    text.split_whitespace()
        .next()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("{name}: {text}{}", String::from_utf8_lossy(&o.stderr)))
}

#[test]
fn a_flood_from_a_listed_source_draws_at_most_burst_plus_rate_times_time() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_udp_port());
    let cfg = config(dir.path(), &target);
    let log = dir.path().join("agent.log");
    let mut agent = run_agent(&cfg, &log);
    // Answering at all: pmAgentSweeps reads 0 or more.
    common::wait_sweeps(&target, 0, Duration::from_secs(30), &mut agent, || {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    let discovery = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/usm/discovery.bin"
    ))
    .unwrap();
    let unknown_user = plain_get("nobody", 1);
    let below_level = plain_get("ops", 3000);
    assert!(below_level.len() > 55_000, "{}", below_level.len());
    let kinds: [(&str, &[u8]); 3] = [
        ("discovery probes", &discovery),
        ("requests of an unknown user", &unknown_user),
        ("noAuthNoPriv requests below the user's level", &below_level),
    ];

    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(&target).unwrap();
    sock.set_nonblocking(true).unwrap();
    let mut buf = vec![0u8; 65536];
    let limited_before = counter(&target, "pmAgentSnmpRateLimited");
    let in_before = counter(&target, "pmAgentSnmpInPkts");
    let mut total = (0u64, 0u64, 0u64, 0u64); // datagrams, octets in; answers, octets out
    let start = Instant::now();
    for (what, d) in kinds {
        let mut mine = (0u64, 0u64, 0u64, 0u64);
        // 3,000 of each, paced over about a second so that the socket
        // buffers hold them.
        for i in 0..3000u32 {
            sock.send(d).unwrap();
            mine.0 += 1;
            mine.1 += d.len() as u64;
            if i % 30 == 29 {
                std::thread::sleep(Duration::from_millis(10));
            }
            while let Ok(n) = sock.recv(&mut buf) {
                assert!(n <= 1472, "an answer of {n} octets");
                mine.2 += 1;
                mine.3 += n as u64;
            }
        }
        // The last answers.
        let until = Instant::now() + Duration::from_millis(300);
        while Instant::now() < until {
            match sock.recv(&mut buf) {
                Ok(n) => {
                    assert!(n <= 1472, "an answer of {n} octets");
                    mine.2 += 1;
                    mine.3 += n as u64;
                }
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        println!(
            "{what}: {} datagrams, {} octets in; {} answers, {} octets out ({:.2} s so far)",
            mine.0,
            mine.1,
            mine.2,
            mine.3,
            start.elapsed().as_secs_f64()
        );
        total = (
            total.0 + mine.0,
            total.1 + mine.1,
            total.2 + mine.2,
            total.3 + mine.3,
        );
    }
    let secs = start.elapsed().as_secs_f64();
    let bound = BURST as f64 + RATE as f64 * secs;
    let received = counter(&target, "pmAgentSnmpInPkts") - in_before;
    let limited = counter(&target, "pmAgentSnmpRateLimited") - limited_before;
    println!(
        "in {secs:.2} s: {} datagrams sent ({} received by the agent), {} octets; {} answers \
         (bound {bound:.0}), {} octets; {limited} rate-limited",
        total.0, received, total.1, total.2, total.3
    );
    assert!(
        total.2 as f64 <= bound,
        "{} answers over burst + rate x time = {bound:.1}",
        total.2
    );
    assert!(total.2 >= BURST, "the burst is answered");
    assert!(limited >= received.saturating_sub(total.2 + 3), "{limited}");
    // The largest answer a listed community draws: a GetBulk of
    // max-repetitions 10,000 (the rule's cap is 1472 octets).
    let mut bulk = Vec::new();
    {
        let vb = [
            0x30, 0x0c, 0x06, 0x08, 0x2b, 6, 1, 3, 0x75, 1, 6, 1, 0x05, 0x00,
        ];
        let mut pdu = vec![0x02, 0x01, 0x01, 0x02, 0x01, 0x00, 0x02, 0x02, 0x27, 0x10];
        pdu.extend_from_slice(&[0x30, vb.len() as u8]);
        pdu.extend_from_slice(&vb);
        let mut inner = vec![0x02, 0x01, 0x01, 0x04, 0x06];
        inner.extend_from_slice(b"public");
        inner.push(0xa5);
        inner.push(pdu.len() as u8);
        inner.extend_from_slice(&pdu);
        bulk.push(0x30);
        bulk.push(inner.len() as u8);
        bulk.extend_from_slice(&inner);
    }
    sock.set_nonblocking(false).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    sock.send(&bulk).unwrap();
    let n = sock.recv(&mut buf).unwrap();
    println!(
        "a GetBulk of {} octets (max-repetitions 10,000) through a community rule: {n} octets \
         ({:.1}x)",
        bulk.len(),
        n as f64 / bulk.len() as f64
    );
    assert!(n <= 1472, "{n}");
    // The log holds throttled lines only, not one per datagram.
    let text = std::fs::read_to_string(&log).unwrap();
    let lines = text.lines().filter(|l| l.contains("snmp:")).count();
    assert!(lines <= 10, "{lines} lines:\n{text}");
    assert!(agent.stop().unwrap().success());
}
