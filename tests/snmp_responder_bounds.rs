//! The built-in responder is no traffic reflector: a small GetBulk asking
//! for everything gets at most `snmp.max_response_octets` back, and one
//! source address gets at most `snmp.rate_limit` answers per second after
//! a first `snmp.rate_burst`. Run against the real binary on loopback.

mod common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ChildGuard, free_udp_port};

/// One BER TLV.
fn tlv(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    if body.len() < 128 {
        v.push(body.len() as u8);
    } else {
        v.push(0x82);
        v.extend_from_slice(&(body.len() as u16).to_be_bytes());
    }
    v.extend_from_slice(body);
    v
}

fn int(n: u32) -> Vec<u8> {
    let b = n.to_be_bytes();
    let skip = b.iter().take(3).take_while(|&&x| x == 0).count();
    let mut body = b[skip..].to_vec();
    if body[0] & 0x80 != 0 {
        body.insert(0, 0);
    }
    tlv(0x02, &body)
}

/// An SNMPv2c message with community `public`: `pdu_tag` over request ID,
/// the two integers and one varbind for 1.3.6.1.3.117 (value NULL).
fn message(pdu_tag: u8, request_id: u32, a: u32, b: u32) -> Vec<u8> {
    let oid = tlv(0x06, &[0x2b, 0x06, 0x01, 0x03, 0x75]);
    let vb = tlv(0x30, &[oid, vec![0x05, 0x00]].concat());
    let vbl = tlv(0x30, &vb);
    let pdu = tlv(pdu_tag, &[int(request_id), int(a), int(b), vbl].concat());
    tlv(0x30, &[int(1), tlv(0x04, b"public"), pdu].concat())
}

struct Agent {
    _guard: ChildGuard,
    addr: String,
    _dir: tempfile::TempDir,
}

fn agent(snmp_keys: &str) -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let port = free_udp_port();
    let addr = format!("127.0.0.1:{port}");
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        format!("[agentx]\nenabled = false\n[snmp]\nlisten = \"{addr}\"\n{snmp_keys}\n"),
    )
    .unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["run", "--config"])
        .arg(&conf)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("agent.log")).unwrap())
        .spawn()
        .unwrap();
    let guard = ChildGuard::new("ibpm-agentx", child);
    wait_for_rows(&addr, dir.path());
    Agent {
        _guard: guard,
        addr,
        _dir: dir,
    }
}

/// Waits until a GetNext of the subtree is answered with a row.
fn wait_for_rows(addr: &str, dir: &Path) {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();
    let mut buf = [0u8; 65536];
    for i in 0..200 {
        let _ = s.send_to(&message(0xa1, i, 0, 0), addr);
        if let Ok(n) = s.recv(&mut buf)
            && n > 40
            && buf[..n]
                .windows(5)
                .any(|w| w == [0x2b, 0x06, 0x01, 0x03, 0x75])
            && !buf[..n].windows(2).any(|w| w == [0x82, 0x00])
        {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!(
        "no rows from the responder; log:\n{}",
        std::fs::read_to_string(dir.join("agent.log")).unwrap_or_default()
    );
}

#[test]
fn a_small_get_bulk_gets_at_most_the_configured_response_size() {
    let a = agent("rate_limit = 0");
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    // GetBulk, non-repeaters 0, max-repetitions 10000: everything it can get.
    let req = message(0xa5, 7, 0, 10_000);
    s.send_to(&req, &a.addr).unwrap();
    let mut buf = [0u8; 65536];
    let n = s.recv(&mut buf).expect("an answer");
    println!(
        "request {} octets, response {} octets: amplification {:.1}x",
        req.len(),
        n,
        n as f64 / req.len() as f64
    );
    assert!(n <= 1472, "response of {n} octets over the default 1472");
    // Still a useful answer: many varbinds of the subtree, noError.
    let varbinds = buf[..n]
        .windows(6)
        .filter(|w| w[0] == 0x06 && w[2..6] == [0x2b, 0x06, 0x01, 0x03])
        .count();
    assert!(varbinds > 10, "only {varbinds} varbinds in {n} octets");
}

#[test]
fn one_source_gets_at_most_its_burst_and_rate() {
    let a = agent("rate_limit = 20\nrate_burst = 50");
    // A source of its own (wait_for_rows spent tokens of 127.0.0.1's): a
    // full bucket from the first request.
    let s = UdpSocket::bind("127.0.0.2:0").unwrap();
    s.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 65536];
    let start = Instant::now();
    let mut answers = 0u32;
    for i in 0..400u32 {
        s.send_to(&message(0xa0, 1000 + i, 0, 0), &a.addr).unwrap();
        // Requests spread over time, as a source asking steadily sends them.
        std::thread::sleep(Duration::from_millis(1));
        while s.recv(&mut buf).is_ok() {
            answers += 1;
        }
    }
    let sent_for = start.elapsed();
    // The answers still on their way (a bound in time: nothing says when the
    // last has come).
    std::thread::sleep(Duration::from_millis(300));
    while s.recv(&mut buf).is_ok() {
        answers += 1;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let most = 50.0 + 20.0 * elapsed + 2.0;
    println!("400 requests in {sent_for:?}: {answers} answered (at most {most:.0} allowed)");
    assert!(answers >= 50, "the burst is answered: {answers}");
    assert!(
        f64::from(answers) <= most,
        "{answers} answers in {elapsed:.2} s with rate 20/s and burst 50"
    );
}
