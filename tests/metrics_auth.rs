//! Basic authentication on the metrics endpoint over real sockets, with
//! curl: a password bcrypt would truncate is answered 401 in every variant;
//! an unknown user takes as long as a known one of the highest cost; and
//! `check-config` warns of hashes of mixed costs.

mod common;

use std::process::Command;
use std::time::Duration;

use common::MetricsAgent;

/// curl's status and total time for `url` as `user:pass` from 127.0.0.2.
fn timed(url: &str, user: &str, pass: &str) -> (String, Duration) {
    let out = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code} %{time_total}"])
        .args(["--max-time", "20", "--interface", "127.0.0.2", "-u"])
        .arg(format!("{user}:{pass}"))
        .arg(url)
        .output()
        .expect("run curl");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let (code, secs) = text.split_once(' ').expect("status and time");
    (
        code.to_string(),
        Duration::from_secs_f64(secs.parse().expect("seconds")),
    )
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

#[test]
fn truncation_and_user_timing() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let long = "a".repeat(80);
    // bcrypt's own hash of an 80-octet password covers its first 72.
    let alice = bcrypt::hash(&long, 4).unwrap();
    let bob = bcrypt::hash("bob pass", 9).unwrap();
    let carol = bcrypt::hash("carol pass", 4).unwrap();
    std::fs::write(
        d.join("web.yml"),
        format!("basic_auth_users:\n  alice: {alice}\n  bob: {bob}\n  carol: {carol}\n"),
    )
    .unwrap();
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 3600",
        "sources = [\"127.0.0.2/32\"]\nweb_config = \"web.yml\"\nrate_limit = 0",
        1,
    );
    let url = format!("http://127.0.0.1:{}/metrics?collect[]=agent", a.port);
    // Every variant sharing the first 72 octets, the password itself too:
    // 401 (never checked against a truncated password).
    for variant in [
        long.clone(),
        format!("{}zzzz", &long[..72]),
        long[..72].to_string(),
    ] {
        assert_eq!(
            timed(&url, "alice", &variant).0,
            "401",
            "{} octets",
            variant.len()
        );
    }
    assert_eq!(timed(&url, "carol", "carol pass").0, "200");
    // An unknown user costs the highest cost (bob's), not the first's.
    let unknown = median((0..3).map(|_| timed(&url, "mallory", "x").1).collect());
    let bob_wrong = median((0..3).map(|_| timed(&url, "bob", "x").1).collect());
    let carol_wrong = median((0..3).map(|_| timed(&url, "carol", "x").1).collect());
    println!(
        "unknown user {unknown:?}, bob (cost 9) {bob_wrong:?}, carol (cost 4) {carol_wrong:?}"
    );
    assert!(
        unknown * 2 >= bob_wrong,
        "unknown {unknown:?} against bob's {bob_wrong:?}"
    );
    assert!(
        unknown > carol_wrong * 4,
        "unknown {unknown:?} against carol's {carol_wrong:?}"
    );
    // check-config warns of the mixed costs.
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["check-config", "--config"])
        .arg(d.join("agent.toml"))
        .output()
        .unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    assert!(text.contains("different bcrypt costs (4, 9)"), "{text}");
}
