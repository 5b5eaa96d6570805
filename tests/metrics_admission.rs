//! The metrics endpoint's admission over real sockets, as an attacker on
//! the same network would try it:
//! - four addresses outside `sources` hold 16 connections each and open
//!   them again whenever they are closed, while the listed scraper scrapes
//!   (plain HTTP and TLS): they are closed at accept, counted `source`, and
//!   the scraper gets its 200s;
//! - four connections from one listed address ask for a large exposition
//!   and stop reading, while another source scrapes: it is answered, and
//!   the stalled answers end at their deadline;
//! - six listed sources scrape as fast as their rate allows: the scraper
//!   still gets its turn;
//! - refusals, hyper's own 400 and 431 included, say `Connection: close`
//!   and carry the configured security headers.

mod common;

use std::io::{Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::MetricsAgent;
use common::pki::{curl, make_pki};

/// Connections from `sources`, `per_source` each, to `target`, opened again
/// whenever the other end closes them, until the returned flag is set;
/// the counter counts the connections opened.
fn hold_connections(
    target: SocketAddr,
    sources: &[IpAddr],
    per_source: usize,
) -> (Arc<AtomicBool>, Arc<AtomicU64>, std::thread::JoinHandle<()>) {
    let stop = Arc::new(AtomicBool::new(false));
    let opened = Arc::new(AtomicU64::new(0));
    let sources = sources.to_vec();
    let (stop2, opened2) = (Arc::clone(&stop), Arc::clone(&opened));
    let t = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let mut tasks = Vec::new();
            for src in sources {
                for _ in 0..per_source {
                    let (stop, opened) = (Arc::clone(&stop2), Arc::clone(&opened2));
                    tasks.push(tokio::spawn(async move {
                        while !stop.load(Ordering::Relaxed) {
                            let sock = tokio::net::TcpSocket::new_v4().unwrap();
                            sock.bind(SocketAddr::new(src, 0)).unwrap();
                            if let Ok(s) = sock.connect(target).await {
                                opened.fetch_add(1, Ordering::Relaxed);
                                // Held until closed (or for a while).
                                let closed = async {
                                    let mut b = [0u8; 512];
                                    loop {
                                        if s.readable().await.is_err() {
                                            return;
                                        }
                                        match s.try_read(&mut b) {
                                            Ok(0) => return,
                                            Err(e)
                                                if e.kind() != std::io::ErrorKind::WouldBlock =>
                                            {
                                                return;
                                            }
                                            _ => {}
                                        }
                                    }
                                };
                                let _ = tokio::time::timeout(Duration::from_secs(2), closed).await;
                            }
                            tokio::time::sleep(Duration::from_millis(20)).await;
                        }
                    }));
                }
            }
            for t in tasks {
                let _ = t.await;
            }
        });
    });
    (stop, opened, t)
}

/// The value of `infiniband_agent_metrics_refused_total{reason}` in `body`.
fn refused(body: &str, reason: &str) -> u64 {
    let prefix = format!("infiniband_agent_metrics_refused_total{{reason=\"{reason}\"}} ");
    body.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {reason} count in {body}"))
        .parse()
        .unwrap()
}

/// The listed scraper's statuses for `n` scrapes of `url`, one every
/// 300 ms, with curl's `args`.
fn scrapes(url: &str, args: &[&str], n: usize) -> Vec<String> {
    (0..n)
        .map(|_| {
            let s = curl(url, args);
            std::thread::sleep(Duration::from_millis(300));
            s
        })
        .collect()
}

fn unlisted() -> Vec<IpAddr> {
    (3..=6).map(|n| IpAddr::from([127, 0, 0, n])).collect()
}

fn the_scraper_outlasts_unlisted_holders(tls: bool) {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let web = if tls {
        make_pki(d);
        std::fs::write(
            d.join("web.yml"),
            "tls_server_config:\n  cert_file: server.pem\n  key_file: server.key\n",
        )
        .unwrap();
        "\nweb_config = \"web.yml\""
    } else {
        ""
    };
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 3600",
        &format!("sources = [\"127.0.0.2/32\"]{web}"),
        1,
    );
    let target: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let (stop, opened, holders) = hold_connections(target, &unlisted(), 16);
    let scheme = if tls { "https" } else { "http" };
    let url = format!("{scheme}://127.0.0.1:{}/metrics", a.port);
    let ca = d.join("ca.pem").display().to_string();
    let mut args = vec!["--interface", "127.0.0.2"];
    if tls {
        args.extend(["--cacert", &ca]);
    }
    // Let the holders reach their 64 connections first (polled, bounded).
    let deadline = Instant::now() + Duration::from_secs(60);
    while opened.load(Ordering::Relaxed) < 64 {
        assert!(Instant::now() < deadline, "the holders never held 64");
        std::thread::sleep(Duration::from_millis(20));
    }
    let got = scrapes(&url, &args, 20);
    stop.store(true, Ordering::Relaxed);
    holders.join().unwrap();
    let ok = got.iter().filter(|s| *s == "200").count();
    let opened = opened.load(Ordering::Relaxed);
    println!("tls={tls}: {ok} of 20 scrapes answered 200; the holders opened {opened} connections");
    assert!(ok >= 18, "{got:?}");
    assert!(opened >= 64, "{opened}");
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .args(&args)
        .arg(format!("{url}?collect[]=agent"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    let source = refused(&body, "source");
    assert!(source >= opened.min(64), "{source} of {opened}");
    assert_eq!(refused(&body, "busy"), 0, "{body}");
}

#[test]
fn unlisted_peers_do_not_lock_the_scraper_out() {
    the_scraper_outlasts_unlisted_holders(false);
}

#[test]
fn unlisted_peers_do_not_lock_the_scraper_out_over_tls() {
    the_scraper_outlasts_unlisted_holders(true);
}

/// A fat tree large enough that its full exposition fills the socket
/// buffers many times over.
fn large_fabric(dir: &Path) -> String {
    let net = dir.join("fabric.net");
    let out = Command::new(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-fat-tree"))
        .args(["24", "12", "12", "1"])
        .output()
        .expect("run gen-fat-tree");
    assert!(out.status.success());
    std::fs::write(&net, out.stdout).unwrap();
    format!(
        "[fabric]\ntopology = \"{}\"\nsweep_interval = 3600\n[sim]\ntraffic = false",
        net.display()
    )
}

#[test]
fn stalled_readers_do_not_hold_the_renders() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = MetricsAgent::start(
        d,
        &large_fabric(d),
        "sources = [\"127.0.0.0/8\"]\nresponse_timeout = 4\nmin_rate = 0",
        1,
    );
    let addr: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let all = "collect[]=traffic&collect[]=errors&collect[]=vl&collect[]=sl&collect[]=lanes&collect[]=details";
    // Four connections from 127.0.0.1 ask for ~20 MB, read 4 KiB, stop.
    let stall = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..4)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
            write!(
                s,
                "GET /metrics?{all} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"
            )
            .unwrap();
            let mut b = [0u8; 4096];
            let _ = s.read(&mut b).unwrap();
            s
        })
        .collect();
    // Another source is answered at once, though 127.0.0.1 renders.
    let start = Instant::now();
    let url = format!("http://127.0.0.1:{}/metrics", a.port);
    let status = curl(&url, &["--interface", "127.0.0.2"]);
    let took = start.elapsed();
    println!("another source: {status} after {took:?}");
    assert_eq!(status, "200");
    assert!(took < Duration::from_secs(35), "{took:?}");
    // The stalled answer ends at its deadline (4 s): the event is its
    // refusal counted (polled from another source, bounded); then each
    // connection is closed after the bytes the socket buffers held, none
    // whole.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let out = Command::new("curl")
            .args(["-s", "--max-time", "10", "--interface", "127.0.0.2"])
            .arg(format!("{url}?collect[]=agent"))
            .output()
            .unwrap();
        if refused(&String::from_utf8_lossy(&out.stdout), "timeout") >= 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the stalled answer never timed out"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    println!("the stalled answer timed out after {:?}", stall.elapsed());
    let start = Instant::now();
    for s in &mut stalled {
        let mut sink = Vec::new();
        let r = s.read_to_end(&mut sink);
        assert!(
            r.is_ok()
                || r.as_ref()
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionReset),
            "{r:?}"
        );
        assert!(
            sink.len() < 19_000_000,
            "the stalled answer was cut: {} octets",
            sink.len()
        );
    }
    // Each read waits at most its 30 s read timeout: a connection left
    // open fails above.
    println!(
        "the stalled connections were read to their close in {:?}",
        start.elapsed()
    );
    // The renders are free again: 127.0.0.1 itself is answered.
    assert_eq!(curl(&format!("{url}?collect[]=agent"), &[]), "200");
    let out = Command::new("curl")
        .args(["-s", "--max-time", "10"])
        .arg(format!("{url}?collect[]=agent"))
        .output()
        .unwrap();
    let body = String::from_utf8_lossy(&out.stdout);
    assert!(refused(&body, "timeout") >= 1, "{body}");
    assert!(refused(&body, "busy") >= 3, "one render per source: {body}");
}

/// Sends `bytes` from `from` and reads the answer until the server closes
/// (or 10 s).
fn exchange_from(from: IpAddr, to: SocketAddr, bytes: &[u8]) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::new(from, 0)).unwrap();
        sock.connect(to).await.unwrap().into_std().unwrap()
    });
    let mut s = s;
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _ = s.write_all(bytes);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).to_lowercase()
}

#[test]
fn refusals_close_and_carry_the_security_headers() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    std::fs::write(
        d.join("web.yml"),
        "http_server_config:\n  headers:\n    X-Frame-Options: deny\n    X-Content-Type-Options: nosniff\n",
    )
    .unwrap();
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 3600",
        "sources = [\"127.0.0.1/32\"]\nweb_config = \"web.yml\"",
        1,
    );
    let to: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let listed: IpAddr = [127, 0, 0, 1].into();
    let long = format!(
        "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Long: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let cases: [(IpAddr, &[u8], &str); 5] = [
        (listed, b"GARBAGE\r\n\r\n", "http/1.1 400"),
        (listed, long.as_bytes(), "http/1.1 431"),
        (
            listed,
            b"GET /metrics?collect[]=cpu HTTP/1.1\r\nHost: x\r\n\r\n",
            "http/1.1 400",
        ),
        (
            listed,
            b"GET /metrics?collect[]=%ff HTTP/1.1\r\nHost: x\r\n\r\n",
            "http/1.1 400",
        ),
        (
            [127, 0, 0, 2].into(),
            b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
            "http/1.1 403",
        ),
    ];
    for (from, bytes, status) in cases {
        let answer = exchange_from(from, to, bytes);
        let head = answer.split("\r\n\r\n").next().unwrap_or("");
        assert!(head.starts_with(status), "{status}: {answer}");
        for h in [
            "connection: close",
            "x-frame-options: deny",
            "x-content-type-options: nosniff",
        ] {
            assert!(head.lines().any(|l| l == h), "{status} lacks {h}: {head}");
        }
    }
    // A scrape carries them too, and keeps the connection.
    let answer = exchange_from(
        listed,
        to,
        b"GET /metrics?collect[]=agent HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    );
    assert!(answer.starts_with("http/1.1 200"), "{answer}");
    assert!(answer.contains("x-frame-options: deny"), "{answer}");
}

/// `n`-second load: from each of `sources`, full scrapes one after another
/// with `pause` between them; the statuses each source got.
fn scrape_load(
    to: SocketAddr,
    sources: &[IpAddr],
    pause: Duration,
    n: Duration,
) -> std::thread::JoinHandle<Vec<u16>> {
    let sources = sources.to_vec();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let end = tokio::time::Instant::now() + n;
            let tasks: Vec<_> = sources
                .into_iter()
                .map(|src| {
                    tokio::spawn(async move {
                        let mut got = Vec::new();
                        while tokio::time::Instant::now() < end {
                            let sock = tokio::net::TcpSocket::new_v4().unwrap();
                            sock.bind(SocketAddr::new(src, 0)).unwrap();
                            let Ok(s) = sock.connect(to).await else { continue };
                            let mut s = s.into_std().unwrap();
                            let status = tokio::task::spawn_blocking(move || {
                                s.set_nonblocking(false).unwrap();
                                s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                                let _ = s.write_all(
                                    b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
                                );
                                let mut b = Vec::new();
                                let _ = s.read_to_end(&mut b);
                                std::str::from_utf8(b.get(9..12).unwrap_or(b"000"))
                                    .ok()
                                    .and_then(|c| c.parse().ok())
                                    .unwrap_or(0)
                            })
                            .await
                            .unwrap();
                            got.push(status);
                            tokio::time::sleep(pause).await;
                        }
                        got
                    })
                })
                .collect();
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.unwrap());
            }
            all
        })
    })
}

#[test]
fn busy_sources_leave_the_scraper_its_turn() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = MetricsAgent::start(d, &large_fabric(d), "sources = [\"127.0.0.0/8\"]", 1);
    let to: SocketAddr = ([127, 0, 0, 1], a.port).into();
    // Six sources, each scraping within its rate (10 a second), keep every
    // render place busy.
    let busy: Vec<IpAddr> = (3..=8).map(|n| IpAddr::from([127, 0, 0, n])).collect();
    let load = scrape_load(
        to,
        &busy,
        Duration::from_millis(100),
        Duration::from_secs(10),
    );
    std::thread::sleep(Duration::from_secs(1));
    let url = format!("http://127.0.0.1:{}/metrics", a.port);
    let got = scrapes(&url, &["--interface", "127.0.0.2"], 16);
    let theirs = load.join().unwrap();
    let ok = got.iter().filter(|s| *s == "200").count();
    let their_ok = theirs.iter().filter(|s| **s == 200).count();
    println!(
        "the scraper: {ok} of 16 answered 200; the six others: {their_ok} of {} 200",
        theirs.len()
    );
    assert!(ok >= 15, "{got:?}");
    assert!(their_ok >= 6, "the others were served too: {theirs:?}");
}
