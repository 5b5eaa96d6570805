//! What ships beside the metrics endpoint (packaging/prometheus), checked
//! with promtool: the example Prometheus configuration, the alerting rules
//! and their unit tests, and every PromQL expression of the Grafana
//! dashboard. Every metric they name is one a running agent serves.

mod common;

use std::collections::BTreeSet;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::MetricsAgent;
use ibpm_agentx::metrics::Collector;

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn promtool(args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .output()
        .expect("run promtool (Debian's prometheus package)");
    assert!(
        out.status.success(),
        "promtool {args:?}:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every PromQL expression of the dashboard, its variables replaced by
/// values, and the selectors of its variables' `label_values` queries.
fn dashboard_exprs() -> Vec<String> {
    let text =
        std::fs::read_to_string(repo("packaging/prometheus/grafana-dashboard.json")).unwrap();
    let d: serde_json::Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut out = Vec::new();
    fn walk(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::Object(m) => {
                for (k, v) in m {
                    match (k.as_str(), v) {
                        ("expr", serde_json::Value::String(e)) => out.push(e.clone()),
                        ("query", serde_json::Value::String(q))
                            if q.starts_with("label_values(") =>
                        {
                            let inner = &q["label_values(".len()..q.rfind(',').unwrap()];
                            out.push(inner.to_string());
                        }
                        _ => walk(v, out),
                    }
                }
            }
            serde_json::Value::Array(a) => a.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    walk(&d, &mut out);
    out.into_iter()
        .map(|e| {
            e.replace("$__rate_interval", "5m")
                .replace("$node_guid", "0x0002c90300000001")
                .replace("$node", "leaf1")
                .replace("$port", "1")
        })
        .collect()
}

#[test]
fn shipped_rules_configuration_and_dashboard_pass_promtool() {
    let dir = repo("packaging/prometheus");
    let p = |f: &str| dir.join(f).display().to_string();
    promtool(&["check", "config", &p("prometheus.yml")]);
    promtool(&["check", "rules", &p("ibpm-agentx.rules.yml")]);
    promtool(&["test", "rules", &p("ibpm-agentx.rules.test.yml")]);

    let exprs = dashboard_exprs();
    assert!(exprs.len() >= 20, "{exprs:?}");
    let tmp = tempfile::tempdir().unwrap();
    let rules = tmp.path().join("dashboard.rules.yml");
    let mut f = std::fs::File::create(&rules).unwrap();
    writeln!(f, "groups:\n  - name: dashboard\n    rules:").unwrap();
    for (i, e) in exprs.iter().enumerate() {
        writeln!(
            f,
            "      - record: dashboard:expr{i}\n        expr: {}",
            serde_json::to_string(e).unwrap()
        )
        .unwrap();
    }
    drop(f);
    promtool(&["check", "rules", &rules.display().to_string()]);
}

/// The metric names (`infiniband_...`) a text names.
fn names_in(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(at) = rest.find("infiniband_") {
        let tail = &rest[at..];
        let end = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let name = &tail[..end];
        // A job name or a file name is not a metric.
        if !rest[..at].ends_with('"') && !rest[..at].ends_with("job=") {
            out.insert(name.to_string());
        }
        rest = &tail[end..];
    }
    out
}

#[test]
fn every_metric_the_rules_and_dashboard_name_is_served() {
    use ibpm_agentx::metrics::families::{FAMILIES, HEALTH_FAMILIES, Kind};
    let dir = tempfile::tempdir().unwrap();
    // Two sweeps: a bit error ratio needs two readings of a port.
    let a = MetricsAgent::start(dir.path(), "[fabric]\nsweep_interval = 1", "", 2);
    let port = a.port;
    let all: Vec<String> = Collector::ALL
        .iter()
        .map(|c| format!("collect[]={}", c.name()))
        .collect();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET /metrics?{} HTTP/1.0\r\nHost: x\r\n\r\n",
        all.join("&")
    )
    .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    let served: BTreeSet<String> = body
        .lines()
        .filter(|l| l.starts_with("infiniband_"))
        .map(|l| l[..l.find(['{', ' ']).unwrap()].to_string())
        .collect();
    assert!(served.len() > 50, "{served:?}");
    let rules =
        std::fs::read_to_string(repo("packaging/prometheus/ibpm-agentx.rules.yml")).unwrap();
    let mut named = names_in(&rules);
    for e in dashboard_exprs() {
        named.extend(names_in(&e));
    }
    // A regex of names in a selector names each of them.
    for e in dashboard_exprs().iter().chain([&rules]) {
        for part in e.split("__name__=~\"").skip(1) {
            let re = &part[..part.find('"').unwrap()];
            if let Some(alts) = re.strip_prefix("infiniband_port_(") {
                let (alts, suffix) = alts.split_once(')').unwrap();
                for a in alts.split('|') {
                    named.insert(format!("infiniband_port_{a}{suffix}"));
                }
            }
        }
    }
    named.retain(|n| !n.ends_with('_'));
    assert!(named.len() > 15, "{named:?}");
    // The health collector's per-port and per-node series exist only where
    // a verdict does (the simulated fabric here has none): those names
    // must be declared families (their render test serves each of them).
    let health: BTreeSet<String> = HEALTH_FAMILIES
        .iter()
        .map(|f| (f.name.to_string(), f.kind))
        .chain(
            FAMILIES
                .iter()
                .filter(|f| f.collector == Collector::Health)
                .map(|f| (f.name.clone(), f.kind)),
        )
        .map(|(name, kind)| match kind {
            Kind::Counter => format!("{name}_total"),
            Kind::Gauge => name,
        })
        .collect();
    assert!(served.contains("infiniband_health_unhealthy_ports"));
    named.retain(|n| !health.contains(n));
    for n in &named {
        assert!(
            served.contains(n),
            "{n} is named by the shipped rules or dashboard but not served"
        );
    }
}

/// docs/metrics.md lists every family under its sample name.
#[test]
fn the_metric_list_in_the_docs_is_complete() {
    use ibpm_agentx::metrics::families::{FAMILIES, Kind};
    let doc = std::fs::read_to_string(repo("docs/metrics.md")).unwrap();
    for f in FAMILIES.iter() {
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Gauge => f.name.clone(),
        };
        // A family several columns share names each of them in its row.
        let row = format!("| `{name}` | {} | ", f.collector.name());
        let col = format!("`{}`", f.column.name);
        assert!(
            doc.lines().any(|l| l.starts_with(&row) && l.contains(&col)),
            "docs/metrics.md has no row {row}{col}"
        );
    }
    for f in ibpm_agentx::metrics::families::HEALTH_FAMILIES {
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Gauge => f.name.to_string(),
        };
        let row = format!("| `{name}` | health |");
        assert!(doc.contains(&row), "docs/metrics.md has no row {row}");
        assert!(
            doc.lines()
                .any(|l| l.starts_with(&row) && l.ends_with(&format!("| {} |", f.labels))),
            "docs/metrics.md's row {row} lists the labels {}",
            f.labels
        );
    }
}
