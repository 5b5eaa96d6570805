//! The event log from a real (simulated) fabric: ibsim running a small fat
//! tree, LIDs from `opensm -o`, the `ibpm-agentx` binary under umad2sim
//! with a private snmpd as its AgentX master and its metrics endpoint on
//! loopback. ibsim's console unlinks a leaf's uplink, links it again, then
//! sets LinkDownedCounter on a leaf's host port: the events appear in that
//! order in /api/events, in `ibpm-agentx events`, on the status page (in
//! headless Chromium, with the charts) and in pmEventTable through snmpd,
//! and are still there after the agent restarts. The host behind the
//! flapping leaf port appears in /api/hosts and in `health --hosts`.

mod common;
mod ibsim;

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{ChildGuard, PrivateSnmpd, free_tcp_port, wait_until};
use ibpm_agentx::metrics::events_api::{EventJson, parse_answer};
use ibpm_agentx::metrics::hosts;
use ibsim::{FatTree, named};

const BIN: &str = env!("CARGO_BIN_EXE_ibpm-agentx");
/// pmEventKind ({ pmEventEntry 4 }).
const EVENT_KIND: &str = "1.3.6.1.3.117.1.26.1.4";

fn wait_for(limit: Duration, what: &str, ok: impl FnMut() -> bool) {
    wait_until(what, limit, Duration::from_millis(200), ok);
}

fn events(port: u16) -> Vec<EventJson<'static>> {
    let (status, _, body) = common::http::get(port, "/api/events?limit=100000", "");
    assert_eq!(status, 200, "{}", String::from_utf8_lossy(&body));
    parse_answer(&body).expect("the events' JSON").events
}

/// The position of the first event matching `f`.
fn first(ev: &[EventJson<'static>], f: impl Fn(&EventJson<'static>) -> bool) -> Option<usize> {
    ev.iter().position(f)
}

/// Runs `cmd` to its end (within 60 s, stopped by PID past that): its
/// exit code and standard output.
fn run(dir: &Path, name: &str, cmd: &mut Command) -> (Option<i32>, String) {
    let out = dir.join(format!("{name}.out"));
    let child = cmd
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the command");
    let mut g = ChildGuard::new(name, child);
    wait_until(
        name,
        Duration::from_secs(60),
        Duration::from_millis(50),
        || !g.running(),
    );
    let status = g.stop().expect("an exit status");
    (status.code(), fs::read_to_string(&out).unwrap_or_default())
}

fn chromium_dom(dir: &Path, url: &str) -> String {
    let profile = dir.join("chromium-profile");
    let (_, dom) = run(
        dir,
        "chromium",
        Command::new("chromium")
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .args(["--dump-dom", url]),
    );
    dom
}

#[test]
fn unlink_relink_and_a_flap_are_logged_in_order_on_every_face_and_survive_a_restart() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let FatTree {
        dir,
        mut sim,
        nodes: ib,
    } = FatTree::start(2, 2, 2, 0);
    let node = |desc: &str| named(&ib, desc).clone();
    let (l0, l1, s0) = (node("L0"), node("L1"), node("S0"));
    let (&host_port, &(host, _, _, _)) = l0
        .ports
        .iter()
        .find(|(_, (peer, _, _, _))| ib[peer].desc.starts_with('H'))
        .expect("a host port");
    let host_name = ib[&host].desc.clone();
    let (&up, _) = l1
        .ports
        .iter()
        .find(|(_, (peer, _, _, _))| *peer == s0.guid)
        .expect("an uplink to S0");

    let snmpd = PrivateSnmpd::start().expect("a private snmpd");
    let port = free_tcp_port();
    let state = dir.path().join("state");
    let toml = format!(
        "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
         [fabric]\nbackend = \"umad\"\nsweep_interval = 1\nunreachable_after = 2\n\
         rediscover_interval = 2\nportinfo_interval = 1\nstate_file = \"{}\"\n\
         [health]\nflap_count = 1\nflap_window = 600\nrecovery = 600\n\
         [metrics]\nlisten = \"127.0.0.1:{port}\"\n",
        snmpd.agentx_addr(),
        state.display()
    );
    let (mut c, agent_log) = sim.agent_command(&toml);
    let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
    let log = || fs::read_to_string(&agent_log).unwrap_or_default();
    wait_for(Duration::from_secs(30), "the first sweep", || {
        log().contains("first sweep done")
    });
    common::wait_more_sweeps(&snmpd.target(), 2, Duration::from_secs(20), &mut agent, log);
    let about = |e: &EventJson, g: u64| e.node_guid == format!("0x{g:016x}");
    let l1_guid = format!("0x{:016x}", l1.guid);
    let uplink = |e: &EventJson| {
        (about(e, l1.guid) && e.port == up)
            || (about(e, s0.guid) && e.peer.as_ref().is_some_and(|p| p.guid == l1_guid))
    };

    // 1. Unlink: the uplink's ports go down, its link is lost.
    sim.console(&format!("Unlink \"L1\"[{up}]"));
    wait_for(Duration::from_secs(20), "the uplink lost", || {
        events(port)
            .iter()
            .any(|e| e.kind == "verdict-raised" && e.detail == "link_lost" && uplink(e))
    });
    // 2. ReLink, opensm brings the ports up: they come back.
    sim.console(&format!("ReLink \"L1\"[{up}]"));
    sim.run_opensm();
    wait_for(Duration::from_secs(30), "the uplink back", || {
        events(port)
            .iter()
            .any(|e| e.kind == "port-state" && e.after == 4 && uplink(e))
    });
    // 3. A flap faster than a sweep on L0's host port.
    sim.console(&format!(
        "PerformanceSet \"L0\"[{host_port}] PortCounters.LinkDownedCounter=1"
    ));
    let host_flap = |e: &EventJson| {
        e.kind == "verdict-raised"
            && e.detail == "flapping"
            && (about(e, l0.guid) || about(e, host))
    };
    wait_for(Duration::from_secs(20), "the host port flapping", || {
        events(port).iter().any(host_flap)
    });

    // In order in /api/events.
    let ev = events(port);
    let down = first(&ev, |e| {
        e.kind == "port-state" && e.before == 4 && uplink(e)
    });
    let lost = first(&ev, |e| {
        e.kind == "verdict-raised" && e.detail == "link_lost" && uplink(e)
    });
    let back = first(&ev, |e| e.kind == "port-state" && e.after == 4 && uplink(e));
    let flap = first(&ev, host_flap);
    let order = [down, lost, back, flap];
    assert!(order.iter().all(Option::is_some), "{order:?}: {ev:#?}");
    assert!(
        order.windows(2).all(|w| w[0] <= w[1]),
        "in order {order:?}: {ev:#?}"
    );
    let seqs: Vec<u64> = ev.iter().map(|e| e.seq).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "numbered in order");
    assert!(
        ev.iter().all(|e| !e.simulated),
        "a umad fabric is not the simulator's"
    );

    // In `ibpm-agentx events`.
    let url = format!("http://127.0.0.1:{port}");
    let (code, text) = run(
        dir.path(),
        "events",
        Command::new(BIN).args(["events", "--url", &url, "--since", "1h"]),
    );
    assert_eq!(code, Some(0), "{text}");
    let at = |what: &str| {
        text.find(what)
            .unwrap_or_else(|| panic!("{what} in {text}"))
    };
    assert!(at("link_lost") < at("flapping"), "{text}");
    assert!(text.contains("port-state"), "{text}");

    // In pmEventTable through snmpd: the kinds in the log's order.
    let walk = Command::new("snmpwalk")
        .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "1"])
        .arg(snmpd.target())
        .arg(EVENT_KIND)
        .output()
        .expect("snmpwalk");
    let walked = String::from_utf8_lossy(&walk.stdout);
    let kinds: Vec<(u64, String)> = walked
        .lines()
        .filter_map(|l| {
            let (oid, v) = l.split_once(" = ")?;
            let seq = oid.rsplit('.').next()?.parse().ok()?;
            Some((seq, v.trim_start_matches("INTEGER: ").to_string()))
        })
        .collect();
    let logged: Vec<(u64, String)> = events(port)
        .iter()
        .map(|e| {
            let mib = ibpm_agentx::events::Kind::from_name(&e.kind)
                .unwrap()
                .def()
                .mib;
            (e.seq, mib.to_string())
        })
        .collect();
    assert!(
        kinds.len() >= ev.len() && logged.starts_with(&kinds[..ev.len().min(kinds.len())]),
        "pmEventTable {kinds:?} against the log {logged:?}"
    );

    // On the page, in a real browser, with the charts.
    let dom = chromium_dom(dir.path(), &format!("{url}/"));
    assert!(dom.contains("id=\"last-hour\""), "{dom}");
    assert!(dom.matches("<svg").count() >= 6, "the charts: {dom}");
    assert!(
        dom.contains("Verdict raised") && dom.contains("Port state"),
        "{dom}"
    );
    assert!(dom.contains("hosts behind L0"), "{dom}");

    // The host behind the flapping leaf port.
    let (status, _, body) = common::http::get(port, "/api/hosts?unhealthy=1", "");
    assert_eq!(status, 200);
    let h = hosts::parse(&body).expect("the hosts' JSON");
    let row = h
        .hosts
        .iter()
        .find(|x| x.host == host_name)
        .expect("the host");
    assert!(
        row.ports
            .iter()
            .any(|p| p.conditions.contains(&"flapping".to_string()))
    );
    let l0_hosts = h
        .switches
        .iter()
        .find(|s| s.name == "L0")
        .expect("L0 with a verdict");
    assert!(l0_hosts.hosts.contains(&host_name), "{l0_hosts:?}");
    let (code, text) = run(
        dir.path(),
        "hosts",
        Command::new(BIN).args(["health", "--hosts", "--url", &url]),
    );
    assert_eq!(code, Some(3), "{text}");
    assert!(text.lines().any(|l| l == host_name), "{text}");

    // A restart: the log is taken up from its file.
    agent.stop();
    assert!(dir.path().join("state.events").exists(), "the log's file");
    let (mut c, _) = sim.agent_command(&toml);
    let _again = ChildGuard::new("ibpm-agentx", c.spawn().expect("restart ibpm-agentx"));
    wait_for(Duration::from_secs(30), "the endpoint back", || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let after = events(port);
    for (i, e) in ev.iter().enumerate() {
        assert_eq!(
            after.get(i).map(|a| (a.seq, &a.kind)),
            Some((e.seq, &e.kind)),
            "kept"
        );
    }
}
