//! The metrics endpoint under attack by listed peers, over real sockets:
//! - connections that send one byte of a request head and nothing more,
//!   sixteen from one address of the scraper's /24 and sixteen from each of
//!   four other /24s, each reopened whenever it is closed: the scraper's
//!   kept-alive connection stays and is answered, and so is each fresh
//!   one it opens;
//! - one source asking for the status page or `/api/health` on four
//!   connections at once: one is rendered at a time, as a scrape is, and
//!   the answers are neither cached nor sniffed;
//! - a reader that takes 4 KiB of a large exposition and stops, with one
//!   render place: the scraper is answered as soon as the stopped answer
//!   waits on its reader, and the stopped answer ends one chunk's time
//!   later, long before its deadline.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::MetricsAgent;
use common::pki::curl;

/// Connections from `sources`, `per_source` each, to `target`, each sending
/// `first` and then holding on, opened again whenever the other end closes
/// them, until the returned flag is set; the counter counts the
/// connections opened.
pub fn attack(
    target: SocketAddr,
    sources: &[IpAddr],
    per_source: usize,
    first: &'static [u8],
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
                                let _ = s.try_write(first);
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
                                let _ = tokio::time::timeout(Duration::from_secs(30), closed).await;
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

/// One scrape on a kept-alive connection: the status, or `None` when the
/// connection was closed (or broke) before a whole answer came.
fn scrape_on(conn: &mut BufReader<TcpStream>) -> Option<u16> {
    conn.get_mut()
        .write_all(
            b"GET /metrics?collect[]=agent HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n",
        )
        .ok()?;
    let mut line = String::new();
    conn.read_line(&mut line).ok()?;
    let status = line.get(9..12)?.parse().ok()?;
    let (mut length, mut chunked) = (None, false);
    loop {
        line.clear();
        conn.read_line(&mut line).ok()?;
        let l = line.trim_end().to_ascii_lowercase();
        if l.is_empty() {
            break;
        }
        if let Some(v) = l.strip_prefix("content-length:") {
            length = v.trim().parse::<usize>().ok();
        }
        if l.starts_with("transfer-encoding:") && l.contains("chunked") {
            chunked = true;
        }
    }
    if chunked {
        loop {
            line.clear();
            conn.read_line(&mut line).ok()?;
            let n = usize::from_str_radix(line.trim_end(), 16).ok()?;
            let mut chunk = vec![0u8; n + 2];
            conn.read_exact(&mut chunk).ok()?;
            if n == 0 {
                break;
            }
        }
    } else {
        let mut body = vec![0u8; length?];
        conn.read_exact(&mut body).ok()?;
    }
    Some(status)
}

fn connect_from(from: IpAddr, to: SocketAddr) -> BufReader<TcpStream> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let s = rt.block_on(async {
        let sock = tokio::net::TcpSocket::new_v4().unwrap();
        sock.bind(SocketAddr::new(from, 0)).unwrap();
        sock.connect(to).await.unwrap().into_std().unwrap()
    });
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    BufReader::new(s)
}

#[test]
fn a_byte_of_head_does_not_lock_the_scraper_out() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 3600",
        "sources = [\"127.0.0.0/8\"]",
        1,
    );
    let target: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let scraper: IpAddr = [127, 0, 0, 1].into();
    // The scraper's kept-alive connection, answered before the attack.
    let mut kept = connect_from(scraper, target);
    assert_eq!(scrape_on(&mut kept), Some(200));
    // Sixteen from one address of the scraper's /24, sixteen from each of
    // sixteen addresses of four other /24s.
    let (stop, opened, one) = attack(target, &[[127, 0, 0, 2].into()], 16, b"G");
    let others: Vec<IpAddr> = (1..=4u8)
        .flat_map(|net| (1..=16u8).map(move |h| IpAddr::from([127, 0, net, h])))
        .collect();
    let (stop2, opened2, many) = attack(target, &others, 1, b"G");
    // Let the attack fill the table first.
    let begun = Instant::now();
    while opened.load(Ordering::Relaxed) < 16 || opened2.load(Ordering::Relaxed) < 64 {
        assert!(
            begun.elapsed() < Duration::from_secs(20),
            "the attack began"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let url = format!("http://127.0.0.1:{}/metrics?collect[]=agent", a.port);
    let (mut kept_ok, mut fresh) = (0, Vec::new());
    for _ in 0..12 {
        if scrape_on(&mut kept) == Some(200) {
            kept_ok += 1;
        }
        fresh.push(curl(&url, &["--interface", "127.0.0.1"]));
        std::thread::sleep(Duration::from_millis(300));
    }
    stop.store(true, Ordering::Relaxed);
    stop2.store(true, Ordering::Relaxed);
    let held = (
        opened.load(Ordering::Relaxed),
        opened2.load(Ordering::Relaxed),
    );
    drop(kept);
    one.join().unwrap();
    many.join().unwrap();
    let fresh_ok = fresh.iter().filter(|s| *s == "200").count();
    println!(
        "kept alive: {kept_ok} of 12 answered 200; fresh: {fresh_ok} of 12; \
         the attack opened {held:?} connections"
    );
    assert_eq!(kept_ok, 12, "the kept-alive connection stayed");
    assert_eq!(fresh_ok, 12, "{fresh:?}");
}

/// A fat tree large enough that its report takes a while to make.
fn large_fabric(dir: &std::path::Path) -> String {
    let net = dir.join("fabric.net");
    let out = std::process::Command::new(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-fat-tree"),
    )
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

/// One request from `from`: the status and the head of its answer.
fn ask(from: IpAddr, to: SocketAddr, path: &str) -> (u16, String) {
    let mut c = connect_from(from, to);
    write!(
        c.get_mut(),
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = Vec::new();
    let _ = c.read_to_end(&mut all);
    let text = String::from_utf8_lossy(&all).to_lowercase();
    let head = text.split("\r\n\r\n").next().unwrap_or("").to_string();
    (
        head.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0),
        head,
    )
}

#[test]
fn the_page_and_the_report_are_their_sources_render() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let a = MetricsAgent::start(
        d,
        &large_fabric(d),
        "sources = [\"127.0.0.0/8\"]\nmin_rate = 0",
        1,
    );
    let target: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let source: IpAddr = [127, 0, 0, 3].into();
    // The source's scrape of everything, not read: its render holds on.
    let all = "collect[]=traffic&collect[]=errors&collect[]=vl&collect[]=sl&collect[]=lanes&collect[]=details";
    let mut stalled = connect_from(source, target);
    write!(
        stalled.get_mut(),
        "GET /metrics?{all} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 4096];
    let _ = stalled.get_mut().read(&mut first).unwrap();
    for path in ["/", "/api/health"] {
        let (status, head) = ask(source, target, path);
        println!("{path} while the source's scrape renders: {status}");
        assert_eq!(status, 503, "one render per source: {head}");
        assert!(head.contains("retry-after"), "{head}");
        // Another source is answered, and the answer is neither cached
        // nor sniffed.
        let (status, head) = ask([127, 0, 0, 4].into(), target, path);
        assert_eq!(status, 200, "{head}");
        for h in ["cache-control: no-store", "x-content-type-options: nosniff"] {
            assert!(head.lines().any(|l| l == h), "{path} lacks {h}: {head}");
        }
    }
    drop(stalled);
}

#[test]
fn a_reader_that_stops_holds_no_render_place() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // One render place: the stopped reader holds the only one.
    let a = MetricsAgent::start(
        d,
        &large_fabric(d),
        "sources = [\"127.0.0.0/8\"]\nmax_renders = 1",
        1,
    );
    let target: SocketAddr = ([127, 0, 0, 1], a.port).into();
    let all = "collect[]=traffic&collect[]=errors&collect[]=vl&collect[]=sl&collect[]=lanes&collect[]=details";
    let mut stopped = connect_from([127, 0, 0, 3].into(), target);
    write!(
        stopped.get_mut(),
        "GET /metrics?{all} HTTP/1.1\r\nHost: x\r\nAccept-Encoding: identity\r\n\r\n"
    )
    .unwrap();
    let mut first = [0u8; 4096];
    let _ = stopped.get_mut().read(&mut first).unwrap();
    // The scraper has the place as soon as the stopped answer waits on
    // its reader: not one chunk's time at the minimum rate (64 KiB at
    // 16 KiB/s, 4 s) after the buffers filled, nor the 30 s of the stopped
    // answer's deadline.
    let start = Instant::now();
    let url = format!("http://127.0.0.1:{}/metrics?collect[]=agent", a.port);
    let status = curl(&url, &["--interface", "127.0.0.4"]);
    let took = start.elapsed();
    println!("the scraper: {status} after {took:?}");
    assert_eq!(status, "200");
    assert!(took < Duration::from_secs(4), "{took:?}");
    drop(stopped);
}
