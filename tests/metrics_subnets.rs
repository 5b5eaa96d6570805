//! The subnet face of the metrics with a real Prometheus 2.42 server: the
//! exposition of a swept simulated fabric whose snapshot knows two subnets
//! (plane-a, and a second one named by its key), served on a loopback
//! socket, is scraped and stored with its `subnet` labels: the port info
//! series of each plane, the node info series of a node on both, the
//! subnet info series with the master SM's fields, and a subnet's sweep
//! figures. `promtool check metrics` finds nothing to say of the text.
//!
//! The snapshot's subnets are filled by hand: the agent's own wiring of
//! several subnets fills them from its sweepers.

mod common;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::http::Prometheus;
use common::poll;
use ibpm_agentx::fabric::cache::Snapshot;
use ibpm_agentx::ib::subnet::{LocalPort, SubnetView};
use ibpm_agentx::metrics::families::Collectors;
use ibpm_agentx::metrics::render::{Format, Scrape, render};
use ibpm_agentx::mib::EndpointCounters;
use ibpm_agentx::rig::{self, AgentRig, RigOptions};

const PLANE_B: &str = "fe80:0:0:2::/64@0x0002c90300b00001";

/// The rig's snapshot with two subnets: the ports of the first `on_b`
/// nodes' last port in the second, the rest in plane-a.
fn two_planes(on_b: usize) -> Snapshot {
    let rig = AgentRig::swept(RigOptions::default());
    let mut snap = Snapshot::clone(&rig.cache.load());
    let taken = snap.taken.expect("published");
    let a = SubnetView {
        standby: vec![LocalPort::new("mlx5_1", 1)],
        nodes: 10,
        ports: 40,
        sweep: 3,
        swept: Some(taken),
        duration_ms: 420,
        ..rig::subnet(0, Some("plane-a"), 0xfe80 << 48, 0x0002_c903_00a0_0001)
    };
    let b = rig::subnet(1, None, (0xfe80 << 48) | 2, 0x0002_c903_00b0_0001);
    snap.subnets = vec![a, b].into();
    for n in snap.nodes.iter_mut().take(on_b) {
        let n = Arc::make_mut(n);
        if let Some(p) = n.ports_mut().last_mut() {
            p.subnet = 1;
        }
    }
    snap
}

/// The text exposition of `snap` (every default collector).
fn exposition(snap: &Snapshot) -> Vec<u8> {
    let endpoint = EndpointCounters::default();
    let http = ibpm_agentx::metrics::HttpCounters::default();
    let s = Scrape {
        snap,
        endpoint: &endpoint,
        http: &http,
        format: Format::Text,
        collectors: Collectors::defaults(),
        taken_unix: Some(1_700_000_000.0),
        events: None,
        now: std::time::Instant::now(),
    };
    let mut out = Vec::new();
    render(&s, &mut out).unwrap();
    out
}

/// Serves `body` as the metrics of every request on a loopback port until
/// dropped.
struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Server {
    fn start(body: Vec<u8>) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let halt = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let Ok((mut c, _)) = listener.accept() else {
                    std::thread::sleep(Duration::from_millis(20));
                    continue;
                };
                let _ = c.set_nonblocking(false);
                let _ = c.set_read_timeout(Some(Duration::from_secs(2)));
                let mut req = [0u8; 4096];
                let _ = c.read(&mut req);
                let head = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                    Format::Text.content_type(),
                    body.len()
                );
                let _ = c.write_all(head.as_bytes());
                let _ = c.write_all(&body);
            }
        });
        Server {
            port,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[test]
fn prometheus_stores_the_subnet_labels() {
    let on_b = 3;
    let snap = two_planes(on_b);
    let ports: usize = snap
        .nodes
        .iter()
        .filter(|n| n.reachable)
        .map(|n| n.port_count())
        .sum();
    let body = exposition(&snap);

    common::http::promtool_check_metrics(&body);

    let server = Server::start(body);
    let dir = tempfile::tempdir().unwrap();
    let prom = Prometheus::start(dir.path(), &format!("127.0.0.1:{}", server.port));
    let count = |q: &str| {
        prom.query(&format!("count({q})"))
            .and_then(|r| r.first().map(|s| s.1.clone()))
    };
    let b = format!("infiniband_port_info{{subnet=\"{PLANE_B}\"}}");
    let stored = poll(Duration::from_secs(60), Duration::from_millis(250), || {
        count(&b).filter(|n| n == &on_b.to_string())
    });
    let log = || std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert_eq!(stored, Some(on_b.to_string()), "{}", log());
    assert_eq!(
        count("infiniband_port_info{subnet=\"plane-a\"}").as_deref(),
        Some((ports - on_b).to_string().as_str())
    );
    // A node with a port in each plane names both.
    let on_both = snap
        .nodes
        .iter()
        .take(on_b)
        .filter(|n| n.port_count() > 1)
        .count();
    assert!(on_both > 0);
    assert_eq!(
        count(&format!(
            "infiniband_node_info{{subnet=\"plane-a,{PLANE_B}\"}}"
        ))
        .as_deref(),
        Some(on_both.to_string().as_str())
    );
    let info = prom
        .query("infiniband_subnet_info{subnet=\"plane-a\"}")
        .unwrap_or_default();
    assert_eq!(info.len(), 1, "{info:?}");
    let l = &info[0].0;
    for (k, v) in [
        ("prefix", "fe80::/64"),
        ("sm_guid", "0x0002c90300a00001"),
        ("sm_lid", "1"),
        ("sm_priority", "15"),
        ("sm_state", "master"),
        ("local_ca", "mlx5_0"),
        ("local_port", "1"),
        ("standby", "mlx5_1:1"),
    ] {
        assert_eq!(l.get(k).map(String::as_str), Some(v), "{k} in {l:?}");
    }
    // Traffic per plane joins on the port info series.
    let per_plane = prom
        .query(
            "sum by (subnet) (infiniband_port_state * on (instance, node_guid, port) \
             group_left (subnet) infiniband_port_info)",
        )
        .unwrap_or_default();
    assert_eq!(per_plane.len(), 2, "{per_plane:?}");
    let d = prom
        .query("infiniband_subnet_sweep_duration_seconds{subnet=\"plane-a\"}")
        .unwrap_or_default();
    assert_eq!(d.first().map(|s| s.1.as_str()), Some("0.42"), "{d:?}");
}
