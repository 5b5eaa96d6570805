//! The metrics endpoint with the real Prometheus tools: a Prometheus 2.42
//! server scrapes the agent (OpenMetrics, gzip), stores one series per
//! linked port and counter, each transmitted-bytes series equal to
//! pmPortHCOutOctets of the same port through SNMP from the same sweep (the
//! simulator's counters stand still without traffic); `promtool check
//! metrics` finds nothing to say of the text format; over TLS with a client
//! certificate and basic auth, Prometheus keeps one connection across its
//! scrapes.

mod common;

use std::collections::BTreeMap;
use std::io::Read;

use std::path::Path;
use std::time::Duration;

use common::http::Prometheus;
use common::pki::tls_web_config;
use common::{MetricsAgent, SnmpTool, poll, walk_ports};
use ibpm_agentx::metrics::Collector;
use ibpm_agentx::metrics::families::{FAMILIES, Kind};

/// A GET of `path` on 127.0.0.1:`port` with extra header lines: the status
/// and the body.
fn get(port: u16, path: &str, headers: &str) -> (u16, Vec<u8>) {
    let (status, _, body) = common::http::get(port, path, headers);
    (status, body)
}

/// The agent on the built-in fabric, its counters standing still.
fn agent(dir: &Path) -> MetricsAgent {
    MetricsAgent::start(
        dir,
        "[fabric]\nsweep_interval = 600\n[sim]\ntraffic = false",
        "",
        1,
    )
}

/// (node GUID as the metrics label it, port) -> value of a per-port
/// column, walked through the agent's SNMP endpoint.
fn walk(target: &str, column: &str) -> BTreeMap<(String, String), String> {
    walk_ports(target, column, &["-v2c", "-c", "public"])
        .into_iter()
        .map(|((g, p), v)| ((format!("0x{g:016x}"), p.to_string()), v))
        .collect()
}

#[test]
fn prometheus_scrapes_the_sweep_the_mib_shows() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path());
    let (snmp, mport) = (a.snmp.clone(), a.port);
    let agent_log = || std::fs::read_to_string(&a.log).unwrap_or_default();

    // The text format passes promtool's lint.
    let (status, text) = get(mport, "/metrics", "");
    assert_eq!(status, 200);
    common::http::promtool_check_metrics(&text);

    let prom = Prometheus::start(dir.path(), &format!("127.0.0.1:{mport}"));
    let up = poll(Duration::from_secs(60), Duration::from_millis(250), || {
        prom.query("up{job=\"infiniband\"}")
            .and_then(|r| r.first().map(|s| s.1.clone()))
            .filter(|v| v == "1")
    });
    assert!(
        up.is_some(),
        "Prometheus never saw the agent up: {}\n{}",
        std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default(),
        agent_log()
    );
    let duration = prom
        .query("scrape_duration_seconds{job=\"infiniband\"}")
        .unwrap();
    println!("scrape_duration_seconds: {}", duration[0].1);

    // One series per linked port and counter: pmPortCounters64Table's
    // cells (its discontinuity column aside) of the ports whose link is up
    // (the simulated fabric's links stay as they are) are the traffic and
    // error families' series; an uncabled port has none.
    let octets = walk(&snmp, "1.3.6.1.3.117.1.7.1.1");
    let active: std::collections::BTreeSet<(u64, u8)> =
        walk_ports(&snmp, "1.3.6.1.3.117.1.6.1.5", &["-v2c", "-c", "public"])
            .into_iter()
            .filter(|(_, state)| state == "4")
            .map(|(k, _)| k)
            .collect();
    assert!(!active.is_empty());
    let cells = SnmpTool::new("snmpbulkwalk")
        .args([
            "-v2c",
            "-c",
            "public",
            "-On",
            "-Oqn",
            "-Cr50",
            &snmp,
            "1.3.6.1.3.117.1.7",
        ])
        .timeout(Duration::from_secs(60))
        .run();
    let cells = String::from_utf8_lossy(&cells.stdout)
        .lines()
        .filter(|l| !l.starts_with(".1.3.6.1.3.117.1.7.1.22."))
        .filter(|l| {
            // The row's index: the last nine arcs of the OID.
            let oid = l.split(' ').next().unwrap_or("");
            let arcs: Vec<u64> = oid
                .rsplit('.')
                .take(9)
                .filter_map(|a| a.parse().ok())
                .collect();
            let guid = arcs[1..].iter().rev().fold(0u64, |g, b| (g << 8) | b);
            active.contains(&(guid, arcs[0] as u8))
        })
        .count();
    let names: Vec<String> = FAMILIES
        .iter()
        .filter(|f| matches!(f.collector, Collector::Traffic | Collector::Errors))
        .map(|f| {
            assert_eq!(f.kind, Kind::Counter);
            format!("{}_total", f.name)
        })
        .collect();
    let q = format!(
        "count({{job=\"infiniband\",__name__=~\"{}\"}})",
        names.join("|")
    );
    let stored = poll(Duration::from_secs(20), Duration::from_millis(250), || {
        prom.query(&q).and_then(|r| r.first().map(|s| s.1.clone()))
    })
    .expect("series stored");
    assert_eq!(
        stored,
        cells.to_string(),
        "series of the counters, against the MIB's cells"
    );
    assert!(octets.len() > 10);

    // Each port's transmitted bytes are pmPortHCOutOctets of the same sweep.
    let tx = prom
        .query("infiniband_port_transmit_data_bytes_total{job=\"infiniband\"}")
        .unwrap();
    let linked = |k: &(String, String)| {
        let guid = u64::from_str_radix(k.0.trim_start_matches("0x"), 16).unwrap();
        active.contains(&(guid, k.1.parse().unwrap()))
    };
    assert_eq!(tx.len(), octets.keys().filter(|k| linked(k)).count());
    for (labels, value) in &tx {
        let key = (labels["node_guid"].clone(), labels["port"].clone());
        assert_eq!(
            labels.len(),
            5,
            "{labels:?}: __name__, instance, job, node_guid, port"
        );
        assert_eq!(value, &octets[&key], "{key:?}");
    }
    // The info series carry the names.
    let names = walk(&snmp, "1.3.6.1.3.117.1.6.1.15");
    let info = prom
        .query("infiniband_port_info{job=\"infiniband\"}")
        .unwrap();
    assert_eq!(info.len(), names.len());
    for (labels, _) in &info {
        let key = (labels["node_guid"].clone(), labels["port"].clone());
        assert_eq!(format!("\"{}\"", labels["name"]), names[&key]);
    }
    let nodes = prom
        .query("sum(infiniband_node_up{job=\"infiniband\"})")
        .unwrap();
    let reachable = SnmpTool::new("snmpget")
        .args([
            "-v2c",
            "-c",
            "public",
            "-Oqv",
            &snmp,
            "1.3.6.1.3.117.1.9.8.0",
        ])
        .run();
    assert_eq!(
        nodes[0].1,
        String::from_utf8_lossy(&reachable.stdout).trim()
    );
}

#[test]
fn formats_gzip_and_collectors_per_scrape() {
    let dir = tempfile::tempdir().unwrap();
    let a = agent(dir.path());
    let mport = a.port;
    let (_, text) = get(mport, "/metrics", "");
    let text = String::from_utf8(text).unwrap();
    assert!(text.contains("# TYPE infiniband_port_symbol_errors_total counter\n"));
    assert!(!text.contains("# EOF"));
    assert!(
        !text.contains("infiniband_port_vl_op_packets_total"),
        "per-VL counters are off by default"
    );

    let (_, om) = get(
        mport,
        "/metrics",
        "Accept: application/openmetrics-text; version=1.0.0\r\n",
    );
    let om = String::from_utf8(om).unwrap();
    assert!(om.ends_with("# EOF\n"));
    assert!(om.contains("# TYPE infiniband_port_symbol_errors counter\n"));
    assert!(om.contains("# TYPE infiniband_node info\n"));
    assert!(om.contains("\ninfiniband_port_symbol_errors_total{"));

    let (status, gz) = get(mport, "/metrics", "Accept-Encoding: gzip\r\n");
    assert_eq!(status, 200);
    let mut plain = String::new();
    flate2::read::GzDecoder::new(&gz[..])
        .read_to_string(&mut plain)
        .unwrap();
    assert!(plain.contains("infiniband_port_transmit_data_bytes_total{"));
    assert!(
        gz.len() * 4 < plain.len(),
        "{} gzipped of {}",
        gz.len(),
        plain.len()
    );

    let (status, errors) = get(mport, "/metrics?collect%5B%5D=errors&collect[]=vl", "");
    assert_eq!(status, 200);
    let errors = String::from_utf8(errors).unwrap();
    assert!(errors.contains("infiniband_port_symbol_errors_total{"));
    assert!(errors.contains("infiniband_port_vl_op_packets_total{node_guid="));
    assert!(errors.contains(",vl=\"0\"}"));
    assert!(!errors.contains("infiniband_port_transmit_data_bytes_total"));
    assert!(!errors.contains("infiniband_node_info"));
    let (status, body) = get(mport, "/metrics?collect[]=cpu", "");
    assert_eq!(status, 400, "{}", String::from_utf8_lossy(&body));
    let (status, index) = get(mport, "/", "");
    assert_eq!(status, 200);
    assert!(
        String::from_utf8(index)
            .unwrap()
            .contains("<a href=\"/metrics\">")
    );
    assert_eq!(get(mport, "/other", "").0, 404);
}

#[test]
fn prometheus_keeps_one_tls_connection_with_basic_auth_across_scrapes() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    tls_web_config(d, "prometheus", "scrape pass");
    let a = MetricsAgent::start(
        d,
        "[fabric]\nsweep_interval = 3600\n[sim]\ntraffic = false\n\
         [log]\nlevel = \"info,ibpm_agentx::metrics::http=debug\"",
        "web_config = \"web.yml\"\ncollectors = [\"agent\"]",
        1,
    );
    let p = d.display();
    let prom = Prometheus::start_with(
        d,
        &format!("127.0.0.1:{}", a.port),
        &format!(
            "    scrape_interval: 6s\n    scrape_timeout: 5s\n    scheme: https\n    tls_config:\n      ca_file: {p}/ca.pem\n      \
             cert_file: {p}/client.pem\n      key_file: {p}/client.key\n    \
             basic_auth:\n      username: prometheus\n      password: scrape pass\n"
        ),
    );
    // Three scrapes or more, 6 s apart (longer than a head may take), every
    // one up.
    let scrapes = poll(Duration::from_secs(60), Duration::from_millis(500), || {
        let r = prom.query("infiniband_agent_metrics_requests_total")?;
        let n: f64 = r.first()?.1.parse().ok()?;
        (n >= 3.0).then_some(n)
    })
    .unwrap_or_else(|| {
        panic!(
            "no 3 scrapes: {}",
            std::fs::read_to_string(d.join("prometheus.log")).unwrap_or_default()
        )
    });
    let down = prom
        .query("count_over_time(up{job=\"infiniband\"}[1m]) - sum_over_time(up{job=\"infiniband\"}[1m])")
        .unwrap();
    assert_eq!(down[0].1, "0", "a scrape was down");
    // One connection carried them all: one accept, one TLS handshake.
    let log = std::fs::read_to_string(&a.log).unwrap();
    let accepted = log.matches("metrics: connection accepted").count();
    println!("{scrapes} scrapes over {accepted} connection(s)");
    assert_eq!(accepted, 1, "{log}");
}
