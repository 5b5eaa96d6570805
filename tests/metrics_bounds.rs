//! The metrics endpoint's doors: a web configuration with TLS, client
//! certificates and basic auth read by curl (200 with the CA, the client
//! certificate and the right user; 401 with a wrong password; an unlisted
//! source closed before the handshake), and bounded answers to what a hostile client sends
//! (malformed requests, an over-long head, a client that sends its head
//! too slowly, 1,000 connections at once from one address) while the agent keeps sweeping
//! and serving SNMP.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::time::{Duration, Instant};

use common::pki::{curl, tls_web_config};
use common::{MetricsAgent, sweeps, wait_more_sweeps};

#[test]
fn tls_client_certificates_basic_auth_and_sources() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tls_web_config(d, "prometheus", "s3cret pass");
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 600",
        "sources = [\"127.0.0.2/32\"]\nweb_config = \"web.yml\"",
        1,
    );
    let port = a.port;
    let url = format!("https://127.0.0.1:{port}/metrics");
    let ca = format!("{}", d.join("ca.pem").display());
    let cert = format!("{}", d.join("client.pem").display());
    let key = format!("{}", d.join("client.key").display());
    let tls = ["--cacert", &ca, "--cert", &cert, "--key", &key];
    let from_listed = ["--interface", "127.0.0.2"];
    let with = |extra: &[&str]| {
        let mut a: Vec<&str> = tls.to_vec();
        a.extend_from_slice(extra);
        curl(&url, &a)
    };
    assert_eq!(
        with(&[&from_listed[..], &["-u", "prometheus:s3cret pass"]].concat()),
        "200"
    );
    assert_eq!(
        with(&[&from_listed[..], &["-u", "prometheus:wrong"]].concat()),
        "401"
    );
    assert_eq!(
        with(&[&from_listed[..], &["-u", "nobody:s3cret pass"]].concat()),
        "401"
    );
    assert_eq!(with(&from_listed), "401");
    assert_eq!(
        with(&["-u", "prometheus:s3cret pass"]),
        "000",
        "127.0.0.1 is not listed: closed before the handshake"
    );
    // No client certificate, or no TLS: no HTTP answer at all.
    let no_cert = curl(
        &url,
        &[
            "--cacert",
            &ca,
            "--interface",
            "127.0.0.2",
            "-u",
            "prometheus:s3cret pass",
        ],
    );
    assert_eq!(no_cert, "000");
    assert_eq!(
        curl(
            &format!("http://127.0.0.1:{port}/metrics"),
            &["--interface", "127.0.0.2"]
        ),
        "000"
    );
    // The refusals are counted.
    let out = Command::new("curl")
        .args([
            "-s",
            "--interface",
            "127.0.0.2",
            "-u",
            "prometheus:s3cret pass",
        ])
        .args(tls)
        .arg(format!("{url}?collect[]=agent"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    for (reason, at_least) in [("auth", 3), ("source", 1), ("tls", 2)] {
        let line = body
            .lines()
            .find(|l| {
                l.starts_with(&format!(
                    "infiniband_agent_metrics_refused_total{{reason=\"{reason}\"}}"
                ))
            })
            .unwrap_or_else(|| panic!("{reason} in {body}"));
        let n: u64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(n >= at_least, "{line}");
    }
}

/// Sends `bytes` and reads the answer until the server closes (or 15 s).
fn exchange(addr: SocketAddr, bytes: &[u8]) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(15))).unwrap();
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).to_string()
}

fn raise_fd_limit(n: u64) {
    // SAFETY: getrlimit/setrlimit write and read a plain rlimit struct
    // owned here.
    unsafe {
        let mut r = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < n {
            r.rlim_cur = n.min(r.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

#[test]
fn hostile_clients_get_bounded_answers_and_the_agent_goes_on() {
    raise_fd_limit(4096);
    let dir = tempfile::tempdir().unwrap();
    let MetricsAgent {
        mut agent,
        snmp,
        port,
        log,
    } = MetricsAgent::start(
        dir.path(),
        "[fabric]\nsweep_interval = 0.5",
        "sources = [\"127.0.0.0/8\"]",
        1,
    );
    let agent_log = || std::fs::read_to_string(&log).unwrap_or_default();
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();

    // Malformed requests get 400, an over-long head 431.
    assert!(exchange(addr, b"GARBAGE\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(exchange(addr, b"GET /metrics HTTP/1.1\r\nHost\r\n\r\n").starts_with("HTTP/1.1 400"));
    let long = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    assert!(exchange(addr, long.as_bytes()).starts_with("HTTP/1.1 431"));
    assert!(
        exchange(
            addr,
            b"POST /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n"
        )
        .starts_with("HTTP/1.1 405")
    );

    // A head sent too slowly: the connection is closed within the bound.
    let start = Instant::now();
    let mut slow = TcpStream::connect(addr).unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    slow.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    let took = start.elapsed();
    assert!(took < Duration::from_secs(10), "closed after {took:?}");
    println!(
        "a slow head was cut after {took:?}: {:?}",
        String::from_utf8_lossy(&buf)
    );

    // 1,000 connections at once from one address: those over its rate are
    // answered 429 at accept; of the others, its network's share of the
    // slots is held, each newcomer closing the one idle the longest, until
    // the head timeout closes the last ones.
    let mut conns = Vec::new();
    for _ in 0..1000 {
        match TcpStream::connect(addr) {
            Ok(c) => conns.push(c),
            Err(e) => panic!("connect: {e}"),
        }
    }
    // Meanwhile another source scrapes, SNMP answers and the sweeps go on.
    let before = sweeps(&snmp).unwrap();
    assert_eq!(
        curl(
            &format!("http://127.0.0.1:{port}/metrics"),
            &["--interface", "127.0.0.2"]
        ),
        "200"
    );
    wait_more_sweeps(&snmp, 2, Duration::from_secs(20), &mut agent, agent_log);
    assert!(sweeps(&snmp).unwrap() >= before + 2);
    // Each connection ends: with a 429, or closed without an answer (to
    // make room, or by the head timeout).
    let deadline = Instant::now() + Duration::from_secs(30);
    let (mut refused, mut held) = (0, 0);
    for c in &mut conns {
        let left = deadline.saturating_duration_since(Instant::now());
        c.set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .unwrap();
        let mut b = Vec::new();
        let ended = match c.read_to_end(&mut b) {
            Ok(_) => true,
            Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
        };
        if ended && b.starts_with(b"HTTP/1.1 429") {
            refused += 1;
        } else if ended && b.is_empty() {
            held += 1;
        }
    }
    println!("of 1000 connections: {refused} answered 429, {held} closed");
    assert_eq!(refused + held, 1000, "every connection ended");
    assert!(refused >= 900, "over the rate of their source");
    drop(conns);
    // Only those still held at the end waited for the head timeout: the
    // network's share (16) at most, the others made room.
    let agent_figures = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .arg(format!("http://127.0.0.1:{port}/metrics?collect[]=agent"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&agent_figures.stdout).to_string();
    let timeouts: u64 = body
        .lines()
        .find_map(|l| l.strip_prefix("infiniband_agent_metrics_refused_total{reason=\"timeout\"} "))
        .unwrap_or_else(|| panic!("no timeout count in {body}"))
        .parse()
        .unwrap();
    assert!(
        (1..=16 + 1).contains(&timeouts),
        "{timeouts} connections held until the head timeout"
    );
    assert!(agent.running(), "{}", agent_log());
    let log = agent_log();
    let refusals = log
        .lines()
        .filter(|l| l.contains("metrics: refused"))
        .count();
    assert!(
        refusals <= 10,
        "refusals are logged at most every 10 s per reason:\n{log}"
    );
}
