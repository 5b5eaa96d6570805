//! The status page, /api/health, the health collector (stored by a real
//! Prometheus) and `ibpm-agentx health` over real sockets, on an agent whose simulated fabric loses a
//! link: the verdict shows on both ends in every face, and clears after
//! the recovery window once the link is back.

mod common;

use std::process::Command;
use std::time::Duration;

use common::health::{HealthAgent, get};
use common::http::Prometheus;
use common::{poll, wait_until};
use ibpm_agentx::metrics::health_api;
use ibpm_agentx::metrics::page::escape;
use ibpm_agentx::metrics::status::Report;

fn report(port: u16, query: &str) -> Report {
    let (status, head, body) = get(port, &format!("/api/health{query}"), "");
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(head.contains("content-type: application/json"), "{head}");
    health_api::parse(body.as_bytes()).unwrap_or_else(|e| panic!("{e}: {body}"))
}

fn has_lost_link(r: &Report) -> bool {
    r.unhealthy_links
        .rows
        .iter()
        .any(|l| l.verdicts.iter().any(|v| v.condition.name() == "link_lost"))
}

/// `ibpm-agentx health` with `args`: its exit status and its output.
fn health_cmd(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .arg("health")
        .args(args)
        .output()
        .expect("run ibpm-agentx health");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

#[test]
fn a_lost_link_shows_on_the_page_the_api_the_metrics_and_the_command() {
    let dir = tempfile::tempdir().unwrap();
    let a = HealthAgent::start(dir.path(), "");
    let port = a.port;
    let url = format!("http://127.0.0.1:{port}");
    let prom = Prometheus::start(dir.path(), &format!("127.0.0.1:{port}"));

    // Healthy to begin with.
    let r = report(port, "");
    assert_eq!(r.status.name(), "healthy", "{r:#?}");
    assert_eq!(r.agent.nodes, r.agent.nodes_reachable);
    let (code, out, err) = health_cmd(&["--url", &url]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("HEALTHY · "), "{out}");

    // A link taken down: link lost on both ends.
    let (x, y) = a.switch_link();
    let (nx, ny) = (a.name(x), a.name(y));
    assert!(a.sim.set_link(x.0, x.1, false));
    wait_until(
        "the lost link's verdict",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || has_lost_link(&report(port, "")),
    );
    let r = report(port, "?condition=link_lost");
    assert_eq!(r.status.name(), "unhealthy");
    assert_eq!(r.unhealthy_links.total, 1, "{:#?}", r.unhealthy_links);
    let l = &r.unhealthy_links.rows[0];
    let mut ends = [l.a.name.clone(), l.b.as_ref().unwrap().name.clone()];
    ends.sort();
    let mut want = [nx.clone(), ny.clone()];
    want.sort();
    assert_eq!(ends, want);
    assert!(l.verdicts[0].holding && l.verdicts[0].raised == 1);

    // The page: its row, with both ends' names.
    let (status, head, html) = get(port, "/", "");
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/html; charset=utf-8"),
        "{head}"
    );
    let row = format!(
        "<tr class=\"link\"><td>{} &harr; {}</td>",
        escape(&l.a.name),
        escape(&l.b.as_ref().unwrap().name)
    );
    assert!(html.contains(&row), "{row}\n{html}");
    assert!(html.contains("<span class=\"badge unhealthy\" id=\"status\">unhealthy</span>"));

    // The metrics: where they were, with the verdict on both ends.
    let (status, _, text) = get(port, "/metrics?collect[]=health", "");
    assert_eq!(status, 200);
    for ((g, p), (pg, pp)) in [(x, y), (y, x)] {
        let line = format!(
            "infiniband_port_health_condition{{node_guid=\"{g}\",port=\"{p}\",peer_node_guid=\"{pg}\",peer_port=\"{pp}\",condition=\"link_lost\"}} 1"
        );
        assert!(text.contains(&line), "{line}\n{text}");
    }
    assert!(text.contains("infiniband_health_unhealthy_ports{condition=\"link_lost\"} 2"));
    // A real Prometheus stores both ends' series.
    let stored = poll(Duration::from_secs(60), Duration::from_millis(500), || {
        prom.query("infiniband_port_health_condition{condition=\"link_lost\"} == 1")
            .filter(|r| r.len() == 2)
    })
    .expect("Prometheus stores the lost link's series");
    let mut ends: Vec<(String, String)> = stored
        .iter()
        .map(|(l, _)| (l["node_guid"].clone(), l["peer_node_guid"].clone()))
        .collect();
    ends.sort();
    let mut want = vec![
        (x.0.to_string(), y.0.to_string()),
        (y.0.to_string(), x.0.to_string()),
    ];
    want.sort();
    assert_eq!(ends, want);

    // The command: the table and the exit status; JSON too.
    let (code, out, err) = health_cmd(&["--url", &url]);
    assert_eq!(code, 3, "{out}{err}");
    let line = out
        .lines()
        .find(|l| l.contains("link lost") && l.contains(&nx) && l.contains(&ny))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains("×1"), "{line}");
    let (code, out, _) = health_cmd(&["--url", &url, "--json", "--condition", "link_lost"]);
    assert_eq!(code, 3);
    let back = health_api::parse(out.as_bytes()).unwrap();
    assert_eq!(back.unhealthy_links.total, 1);

    // Bad queries: a 400 that says why; the command refuses them itself.
    for (q, says) in [
        ("/api/health?limit=0", "limit"),
        ("/?sort=random", "sort"),
        ("/api/health?condition=%3Cx%3E", "condition"),
        ("/?nope=1", "unknown parameter"),
        ("/api/health?top=1&top=2", "twice"),
    ] {
        let (status, _, body) = get(port, q, "");
        assert_eq!(status, 400, "{q}: {body}");
        assert!(body.contains(says), "{q}: {body}");
    }
    let (code, _, err) = health_cmd(&["--url", &url, "--limit", "500"]);
    assert_eq!(code, 2, "{err}");
    let (_, _, text) = get(port, "/metrics?collect[]=agent", "");
    let refused = text
        .lines()
        .find(|l| l.starts_with("infiniband_agent_metrics_refused_total{reason=\"bad_request\"}"))
        .unwrap();
    assert!(refused.ends_with(" 5"), "{refused}");

    // Back up: the verdict clears after the recovery window (2 s).
    assert!(a.sim.set_link(x.0, x.1, true));
    wait_until(
        "the verdict to clear",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || !has_lost_link(&report(port, "")),
    );
    let (code, out, err) = health_cmd(&["--url", &url, "--condition", "link_lost"]);
    assert!(code == 0 || code == 3, "{out}{err}");
    assert!(out.contains("\nUNHEALTHY LINKS (0)\n"), "{out}");
}

#[test]
fn the_metrics_keep_their_path_and_no_agent_is_a_failure() {
    let dir = tempfile::tempdir().unwrap();
    let a = HealthAgent::start(dir.path(), "path = \"/api/health\"");
    let (status, head, body) = get(a.port, "/api/health", "");
    assert_eq!(status, 200);
    assert!(
        head.contains("content-type: text/plain; version=0.0.4"),
        "{head}"
    );
    assert!(body.contains("infiniband_health_unhealthy_ports"));
    let (status, _, html) = get(a.port, "/", "");
    assert_eq!(status, 200);
    assert!(
        html.contains("<a href=\"/api/health\">metrics</a>"),
        "{html}"
    );
    assert_eq!(get(a.port, "/metrics", "").0, 404);
    drop(a);
    // Nothing listens there any more: no report, exit status 1.
    let url = format!("http://127.0.0.1:{}", common::free_tcp_port());
    let (code, out, err) = health_cmd(&["--url", &url]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn a_sweep_of_its_own_judges_the_fabric_without_an_agent() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("sim.toml");
    std::fs::write(
        &cfg,
        "[fabric]\nbackend = \"sim\"\n[sim]\ntraffic = false\n",
    )
    .unwrap();
    let c = cfg.display().to_string();
    let (code, out, err) = health_cmd(&["--sweep", "--config", &c]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("sweep #1") && out.contains("18 of 18 nodes reachable"),
        "{out}"
    );
    // With traffic and a second sweep, rates: the simulated congested
    // links lead the congestion ranking.
    let (code, out, err) = health_cmd(&["--sweep", "--backend", "sim", "--rates", "1", "--json"]);
    assert!(code == 0 || code == 3, "{out}{err}");
    let r = health_api::parse(out.as_bytes()).unwrap();
    assert_eq!(r.agent.sweep, 2);
    assert!(r.worst_congested_ports.total > 0, "{r:#?}");
    let (code, _, err) = health_cmd(&["--sweep", "--rates", "0"]);
    assert_eq!(code, 2, "{err}");
}
