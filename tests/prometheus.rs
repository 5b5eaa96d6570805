//! The shipped Prometheus configuration (packaging/prometheus) with the real
//! tools: `prometheus-snmp-generator` still makes the committed snmp.yml of
//! the committed generator.yml and IB-PM-MIB, and `prometheus-snmp-exporter`
//! with that snmp.yml scrapes the agent's own endpoint and snmpd (AgentX)
//! alike: one pmPortHCOutOctets series per port, labelled with the port's
//! pmPortName and its node's NodeDescription, each value what snmpbulkwalk
//! reads.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{
    ChildGuard, PrivateSnmpd, free_tcp_port, free_udp_port, run_agent, wait_sweeps, walk_ports,
};

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn mibdirs() -> String {
    format!(
        "/usr/share/snmp/mibs/ietf:/usr/share/snmp/mibs/iana:{}",
        repo("mibs").display()
    )
}

#[test]
fn the_committed_snmp_yml_is_what_the_generator_makes() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        repo("packaging/prometheus/generator.yml"),
        dir.path().join("generator.yml"),
    )
    .unwrap();
    let out = Command::new("prometheus-snmp-generator")
        .arg("generate")
        .current_dir(dir.path())
        .env("MIBDIRS", mibdirs())
        .output()
        .expect("run prometheus-snmp-generator (Debian's prometheus-snmp-exporter)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let made = std::fs::read_to_string(dir.path().join("snmp.yml")).unwrap();
    let committed = std::fs::read_to_string(repo("packaging/prometheus/snmp.yml")).unwrap();
    assert!(
        made == committed,
        "packaging/prometheus/snmp.yml is stale: run the generator again (see generator.yml)"
    );
}

/// prometheus-snmp-exporter on a loopback port with `config`.
struct Exporter {
    _guard: ChildGuard,
    port: u16,
}

impl Exporter {
    fn start(config: &Path, dir: &Path) -> Exporter {
        let port = free_tcp_port();
        let child = Command::new("prometheus-snmp-exporter")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(dir.join("exporter.log")).unwrap())
            .spawn()
            .expect("run prometheus-snmp-exporter");
        let guard = ChildGuard::new("prometheus-snmp-exporter", child);
        let start = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "snmp_exporter did not listen: {}",
                std::fs::read_to_string(dir.join("exporter.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Exporter {
            _guard: guard,
            port,
        }
    }

    /// One scrape of `target` with `module`: the body, and how long it took.
    fn scrape(&self, module: &str, target: &str) -> (String, Duration) {
        let start = Instant::now();
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET /snmp?module={module}&target={target} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
        )
        .unwrap();
        let mut resp = String::new();
        s.read_to_string(&mut resp).unwrap();
        let took = start.elapsed();
        let (head, body) = resp.split_once("\r\n\r\n").expect("an HTTP response");
        assert!(
            head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
            "{resp}"
        );
        (body.to_string(), took)
    }
}

/// One series: its labels and value.
#[derive(Debug)]
struct Series {
    labels: BTreeMap<String, String>,
    value: f64,
}

/// The series of metric `name` in a Prometheus text exposition.
fn series(body: &str, name: &str) -> Vec<Series> {
    let mut out = Vec::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix(name) else {
            continue;
        };
        let Some(rest) = rest.strip_prefix('{') else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").expect("labels and a value");
        let mut map = BTreeMap::new();
        // label="value",... (values here have no escaped quotes)
        for part in labels.split("\",") {
            let (k, v) = part.split_once("=\"").expect("label=value");
            map.insert(k.to_string(), v.trim_end_matches('"').to_string());
        }
        out.push(Series {
            labels: map,
            value: value.trim().parse().expect("a number"),
        });
    }
    out
}

/// (node GUID as snmp_exporter labels it, port) -> value, from a walk of
/// `column` through `target`.
fn walk(target: &str, column: &str, args: &[&str]) -> BTreeMap<(String, String), String> {
    walk_ports(target, column, args)
        .into_iter()
        .map(|((g, p), v)| {
            (
                (format!("0x{g:016X}"), p.to_string()),
                v.trim_matches('"').to_string(),
            )
        })
        .collect()
}

const NAME: &str = "1.3.6.1.3.117.1.6.1.15";
const OUT_OCTETS: &str = "1.3.6.1.3.117.1.7.1.1";
const LINK_DEGRADED: &str = "1.3.6.1.3.117.1.22.1.7";

/// Checks a scrape against walks of the same target.
fn check_scrape(body: &str, target: &str, walk_args: &[&str]) {
    let names = walk(target, NAME, walk_args);
    let octets = walk(target, OUT_OCTETS, walk_args);
    assert!(names.len() > 10, "{names:?}");
    let got = series(body, "pmPortHCOutOctets");
    assert_eq!(got.len(), octets.len(), "one series per port");
    for s in &got {
        let key = (
            s.labels["pmNodeGuid"].clone(),
            s.labels["pmPortNum"].clone(),
        );
        assert_eq!(s.labels["pmPortName"], names[&key], "{s:?}");
        assert!(!s.labels["pmNodeDescription"].is_empty(), "{s:?}");
        let want: u64 = octets[&key].parse().unwrap();
        assert_eq!(s.value, want as f64, "{s:?}");
    }
    // pmPortLinkTable: pmPortLinkDegraded of every port, as the walk
    // reads it; its text columns are left out.
    let degraded = walk(target, LINK_DEGRADED, walk_args);
    let got = series(body, "pmPortLinkDegraded");
    assert!(!got.is_empty());
    assert_eq!(got.len(), degraded.len(), "one series per port");
    for s in &got {
        let key = (
            s.labels["pmNodeGuid"].clone(),
            s.labels["pmPortNum"].clone(),
        );
        let want: u64 = degraded[&key].parse().unwrap();
        assert_eq!(s.value, want as f64, "{s:?}");
    }
    assert!(series(body, "pmPortSymbolBer").is_empty());
}

/// The placeholder passphrase of the shipped ib_pm_v3 module.
const V3_PASS: &str = "change-this-passphrase";

fn agent_config(dir: &Path, agentx: &str, listen: &str) -> PathBuf {
    let p = dir.join("agent.toml");
    std::fs::write(
        &p,
        format!(
            "{agentx}\n[fabric]\nsweep_interval = 3600\n[sim]\ntraffic = false\n\
             [snmp]\nlisten = \"{listen}\"\n\
             [[snmp.user]]\nname = \"nms\"\nauth = \"SHA-256\"\nauth_passphrase = \"{V3_PASS}\"\n\
             privacy = \"AES\"\nprivacy_passphrase = \"{V3_PASS}\"\n\
             [[snmp.access]]\nuser = \"nms\"\nmax_response_octets = 65507\n\
             [[snmp.access]]\ncommunity = \"public\"\nmax_response_octets = 65507\n"
        ),
    )
    .unwrap();
    p
}

#[test]
fn snmp_exporter_scrapes_the_agents_endpoint() {
    let dir = tempfile::tempdir().unwrap();
    let target = format!("127.0.0.1:{}", free_udp_port());
    let cfg = agent_config(dir.path(), "[agentx]\nenabled = false", &target);
    let log = dir.path().join("agent.log");
    let mut agent = run_agent(&cfg, &log);
    wait_sweeps(&target, 1, Duration::from_secs(30), &mut agent, || {
        std::fs::read_to_string(&log).unwrap_or_default()
    });
    let exporter = Exporter::start(&repo("packaging/prometheus/snmp.yml"), dir.path());
    let (body, took) = exporter.scrape("ib_pm", &target);
    println!("scrape of the endpoint: {took:?}, {} octets", body.len());
    check_scrape(&body, &target, &["-v2c", "-c", "public"]);
    // The same with SNMPv3 authPriv (SHA-256, AES).
    let (v3, took) = exporter.scrape("ib_pm_v3", &target);
    println!(
        "SNMPv3 scrape of the endpoint: {took:?}, {} octets",
        v3.len()
    );
    let v3_args = [
        "-v3", "-l", "authPriv", "-u", "nms", "-a", "SHA-256", "-A", V3_PASS, "-x", "AES", "-X",
        V3_PASS,
    ];
    check_scrape(&v3, &target, &v3_args);
    assert_eq!(
        series(&v3, "pmPortHCOutOctets").len(),
        series(&body, "pmPortHCOutOctets").len()
    );
}

#[test]
fn snmp_exporter_scrapes_through_snmpd() {
    let mut snmpd = PrivateSnmpd::start().expect("snmpd");
    snmpd.wait_ready(Duration::from_secs(10)).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let cfg = agent_config(
        dir.path(),
        &format!("[agentx]\nsocket = \"{}\"", snmpd.agentx_addr()),
        "",
    );
    let log = dir.path().join("agent.log");
    let mut agent = run_agent(&cfg, &log);
    wait_sweeps(
        &snmpd.target(),
        1,
        Duration::from_secs(30),
        &mut agent,
        || std::fs::read_to_string(&log).unwrap_or_default(),
    );
    let exporter = Exporter::start(&repo("packaging/prometheus/snmp.yml"), dir.path());
    let (body, took) = exporter.scrape("ib_pm", &snmpd.target());
    println!("scrape through snmpd: {took:?}, {} octets", body.len());
    check_scrape(&body, &snmpd.target(), &["-v2c", "-c", "public"]);
}
