//! The edge reads the time on the clock it is given.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, SystemTime};

use super::*;
use crate::fabric::cache::Snapshot;

/// A year ahead of the system's wall clock.
const AHEAD: Duration = Duration::from_secs(365 * 86_400);

fn get(addr: SocketAddr, path: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut all = String::new();
    c.read_to_string(&mut all).unwrap();
    assert!(all.starts_with("HTTP/1.1 200"), "{all}");
    all.split_once("\r\n\r\n").unwrap().1.to_string()
}

#[test]
fn the_report_is_stamped_on_the_clock_the_edge_is_given() {
    let cache = Arc::new(Cache::new());
    let clock = Clock::with_wall(Instant::now, || SystemTime::now() + AHEAD);
    cache.publish(Snapshot {
        sweep: 1,
        taken: Some(clock.now()),
        interval: Duration::from_secs(10),
        ..Default::default()
    });
    let settings = MetricsSettings::on(
        ([127, 0, 0, 1], 0).into(),
        vec!["127.0.0.0/8".parse().unwrap()],
    );
    let h = serve(
        settings,
        WebConfig::default(),
        cache,
        Arc::default(),
        Arc::default(),
        None,
        clock,
    )
    .unwrap();
    let before = crate::time::unix_ms(SystemTime::now() + AHEAD);
    let r =
        crate::metrics::health_api::parse(get(h.local_addr(), "/api/health").as_bytes()).unwrap();
    let after = crate::time::unix_ms(SystemTime::now() + AHEAD);
    assert!(
        (before..=after).contains(&r.generated_ms),
        "{} not within {before}..={after}",
        r.generated_ms
    );
    assert!(!r.agent.stale);
    let page = get(h.local_addr(), "/");
    assert!(page.contains(&r.generated), "the page of the same report");
    h.shutdown();
}
