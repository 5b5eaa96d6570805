//! `ibpm-agentx health` against a hostile server on loopback: a report
//! that holds more than its schema allows is refused (exit 1) before it
//! costs anything; a server that drips its answer is given up at the
//! deadline (exit 1); terminal escapes from the server are shown escaped;
//! a CA file that is a device or a FIFO is refused at once.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Command;
use std::time::{Duration, Instant};

use common::MetricsAgent;

fn health_cmd(args: &[&str]) -> (i32, String, String, Duration) {
    let start = Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .arg("health")
        .args(args)
        .output()
        .expect("run ibpm-agentx health");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
        start.elapsed(),
    )
}

/// A server on loopback answering each of `answers` connections with
/// `answer` (an HTTP head and body), written `drip` octets at a time with
/// `pause` between; its URL.
fn server(answer: Vec<u8>, drip: usize, pause: Duration, answers: usize) -> String {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", l.local_addr().unwrap());
    std::thread::spawn(move || {
        for _ in 0..answers {
            let Ok((mut s, _)) = l.accept() else { return };
            let mut req = [0u8; 4096];
            let _ = s.read(&mut req);
            for part in answer.chunks(drip.max(1)) {
                if s.write_all(part).is_err() {
                    break;
                }
                std::thread::sleep(pause);
            }
        }
    });
    url
}

fn answer(body: &serde_json::Value) -> Vec<u8> {
    let body = serde_json::to_vec(body).unwrap();
    let mut a = format!(
        "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    a.extend(body);
    a
}

#[test]
fn a_hostile_server_gets_nothing_from_the_health_command() {
    // A real report to start from.
    let dir = tempfile::tempdir().unwrap();
    let a = MetricsAgent::start(dir.path(), "[fabric]\nsweep_interval = 3600", "", 1);
    let (code, json, err, _) =
        health_cmd(&["--url", &format!("http://127.0.0.1:{}", a.port), "--json"]);
    assert!(code == 0 || code == 3, "{code}: {err}");
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    let row = serde_json::json!({
        "guid": "0x1", "name": "n", "reachable": false, "failed_sweeps": 1,
        "subnets": []
    });

    // 300 rows in a section, where the schema allows 200.
    let mut many = report.clone();
    many["unreachable_nodes"] = serde_json::json!({
        "total": 300, "more": 0, "rows": vec![row.clone(); 300]
    });
    let url = server(answer(&many), 1 << 20, Duration::ZERO, 1);
    let (code, _, err, _) = health_cmd(&["--url", &url]);
    println!("300 rows: {code} {err}");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("at most 200"), "{err}");

    // A name of 100,000 octets.
    let mut wide = report.clone();
    let mut long = row.clone();
    long["name"] = "x".repeat(100_000).into();
    wide["unreachable_nodes"] = serde_json::json!({"total": 1, "more": 0, "rows": [long]});
    let url = server(answer(&wide), 1 << 20, Duration::ZERO, 1);
    let (code, _, err, _) = health_cmd(&["--url", &url]);
    println!("a wide name: {code} {err}");
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("at most 255"), "{err}");

    // Escapes in every string the server gives.
    let mut loud = report.clone();
    let evil = "\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}";
    loud["generated"] = evil.into();
    if let Some(cs) = loud["conditions"].as_array_mut() {
        for c in cs {
            c["title"] = evil.into();
        }
    }
    let mut row = row.clone();
    row["guid"] = evil.into();
    loud["unreachable_nodes"] = serde_json::json!({"total": 1, "more": 0, "rows": [row]});
    let url = server(answer(&loud), 1 << 20, Duration::ZERO, 1);
    let (code, out, err, _) = health_cmd(&["--url", &url]);
    assert!(code == 0 || code == 3, "{code}: {err}");
    assert!(out.contains("\\u{1b}"), "shown escaped: {out:?}");
    assert!(
        !out.contains('\u{1b}') && !out.contains('\u{7}') && !out.contains('\u{202e}'),
        "{out:?}"
    );

    // A server that drips its answer, a byte every 200 ms: given up at
    // the deadline.
    let url = server(answer(&report), 1, Duration::from_millis(200), 1);
    let (code, _, err, took) = health_cmd(&["--url", &url, "--timeout", "2"]);
    println!("dripped: {code} after {took:?}: {err}");
    assert_eq!(code, 1, "{err}");
    assert!(took < Duration::from_secs(6), "{took:?}");

    // A CA file that is a device, or a FIFO nobody writes: refused at once.
    let fifo = dir.path().join("ca.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    for ca in ["/dev/zero", fifo.to_str().unwrap()] {
        let (code, _, err, took) = health_cmd(&["--url", "https://127.0.0.1:1", "--cacert", ca]);
        println!("--cacert {ca}: {code} after {took:?}: {err}");
        assert_eq!(code, 1, "{err}");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }
}
