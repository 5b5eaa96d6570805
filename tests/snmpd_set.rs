//! Writes through the real snmpd and snmpset/snmpget: PortSelect, counter
//! clears, PortSamplesControl samples and every refusal, with the exact
//! error names snmpset prints. The agent runs in this process (the same
//! `app::start` the binary runs) over a simulated fabric the test can also
//! read directly and make fail.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{PrivateSnmpd, SnmpTool, WalkLine, parse_walk};
use ibpm_agentx::app::{self, Backend, Running, sim_options};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::topology;
use ibpm_agentx::ib::{Fabric, Node, NodeType};
use ibpm_agentx::pm::PortCounters;
use ibpm_agentx::rig;
use ibpm_agentx::sim::SimFabric;

const PM: &str = "1.3.6.1.3.117.1";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/two-level.net")
}

struct Agent {
    snmpd: PrivateSnmpd,
    running: Option<Running>,
    sim: SimFabric,
    fabric: Fabric,
}

impl Drop for Agent {
    fn drop(&mut self) {
        if let Some(r) = self.running.take() {
            r.stop();
        }
    }
}

impl Agent {
    fn start(allow_set: bool, traffic: bool) -> Agent {
        Agent::start_sweeping(allow_set, traffic, 3600.0)
    }

    /// An agent whose sweeper runs every `sweep_interval` seconds.
    fn start_sweeping(allow_set: bool, traffic: bool, sweep_interval: f64) -> Agent {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed: run scripts/install-deps"
        );
        let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
        let mut cfg = Config::default();
        cfg.agentx.socket = snmpd.agentx_addr().parse().unwrap();
        cfg.set.allow = allow_set;
        cfg.sim.traffic = traffic;
        cfg.fabric.sweep_interval = Duration::from_secs_f64(sweep_interval);
        let sim = SimFabric::new(topology::load(&fixture()).unwrap(), sim_options(&cfg));
        let fabric = sim.fabric();
        let mut backend = Backend::sim(&sim);
        backend.subnets[0].source = None;
        let running = app::start(&cfg, backend).expect("start the agent");
        let a = Agent {
            snmpd,
            running: Some(running),
            sim,
            fabric,
        };
        // Rows appear as nodes are read: the tests write to any node, so
        // they start once the first sweep has ended and its rows serve.
        let probe = oid(4, 2, &a.fabric.nodes[0]);
        let t0 = Instant::now();
        while a.running.as_ref().unwrap().cache().load().sweep < 1
            || get(&a.snmpd.target(), &probe).ty != "Gauge32"
        {
            assert!(
                t0.elapsed() < Duration::from_secs(15),
                "no rows through snmpd"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        a
    }

    fn target(&self) -> String {
        self.snmpd.target()
    }

    fn dual_port_ca(&self) -> &Node {
        self.fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == NodeType::Ca && n.ports.len() == 2)
            .unwrap()
    }

    fn switch(&self) -> &Node {
        self.fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == NodeType::Switch)
            .unwrap()
    }

    /// PortCounters of (node, port) straight from the simulated PMA.
    fn pma_counters(&self, node: &Node, port: u8) -> PortCounters {
        rig::port_counters(&self.sim, node.pma_lid(port), port)
    }
}

fn index(node: &Node) -> String {
    node.id
        .guid
        .0
        .to_be_bytes()
        .map(|b| b.to_string())
        .join(".")
}

fn oid(table: u32, column: u32, node: &Node) -> String {
    format!("{PM}.{table}.1.{column}.{}", index(node))
}

fn get(target: &str, oid: &str) -> WalkLine {
    let out = SnmpTool::new("snmpget")
        .args([
            "-v2c", "-c", "public", "-On", "-Ox", "-t", "2", "-r", "0", target, oid,
        ])
        .run();
    let lines = parse_walk(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1, "{}", String::from_utf8_lossy(&out.stderr));
    lines.into_iter().next().unwrap()
}

fn gauge(target: &str, oid: &str) -> u64 {
    let l = get(target, oid);
    assert_eq!(l.ty, "Gauge32", "{l:?}");
    l.value.parse().unwrap()
}

use common::snmpset as set;

fn expect_error(r: Result<String, String>, reason: &str, failed_oid: &str) {
    let err = r.expect_err("the SET must fail");
    assert!(
        err.contains(&format!("Reason: {reason}")),
        "want {reason}: {err}"
    );
    assert!(
        err.contains(&format!("Failed object: .{failed_oid}")),
        "want {failed_oid}: {err}"
    );
}

#[test]
fn sets_are_refused_when_writes_are_off() {
    let a = Agent::start(false, false);
    let ca = a.dual_port_ca();
    let ps = oid(4, 2, ca);
    expect_error(
        set(&a.target(), "private", &[&ps, "u", "2"]),
        "notWritable",
        &ps,
    );
    // The read-only community never reaches the agent.
    expect_error(
        set(&a.target(), "public", &[&ps, "u", "2"]),
        "noAccess",
        &ps,
    );
    assert_eq!(gauge(&a.target(), &ps), 1);
}

#[test]
fn every_refusal_has_its_error_and_changes_nothing() {
    let a = Agent::start(true, false);
    let t = a.target();
    let ca = a.dual_port_ca();
    let sw = a.switch();
    let ps = oid(4, 2, ca);
    let sym = oid(4, 3, ca);
    let before = gauge(&t, &sym);

    expect_error(set(&t, "private", &[&ps, "u", "300"]), "wrongValue", &ps);
    expect_error(
        set(&t, "private", &[&ps, "u", "5"]),
        "inconsistentValue",
        &ps,
    );
    expect_error(
        set(&t, "private", &[&ps, "u", "255"]),
        "inconsistentValue",
        &ps,
    );
    expect_error(
        set(&t, "private", &[&ps, "u", "0"]),
        "inconsistentValue",
        &ps,
    );
    expect_error(set(&t, "private", &[&ps, "i", "2"]), "wrongType", &ps);
    expect_error(set(&t, "private", &[&sym, "u", "5"]), "wrongValue", &sym);
    expect_error(set(&t, "private", &[&sym, "s", "x"]), "wrongType", &sym);
    let tick = oid(2, 4, sw);
    expect_error(set(&t, "private", &[&tick, "u", "1"]), "notWritable", &tick);
    let allps = oid(1, 2, sw);
    expect_error(
        set(&t, "private", &[&allps, "i", "1"]),
        "notWritable",
        &allps,
    );
    let tag = oid(2, 27, sw);
    expect_error(
        set(&t, "private", &[&tag, "x", "01020304"]),
        "wrongLength",
        &tag,
    );
    let ghost = format!("{PM}.4.1.2.0.0.0.0.0.0.0.1");
    expect_error(
        set(&t, "private", &[&ghost, "u", "1"]),
        "noCreation",
        &ghost,
    );
    let nothing = format!("{PM}.4.1.99.{}", index(ca));
    expect_error(
        set(&t, "private", &[&nothing, "u", "1"]),
        "notWritable",
        &nothing,
    );

    // One bad varbind in a PDU: nothing is applied, the error names it.
    expect_error(
        set(&t, "private", &[&ps, "u", "2", &sym, "u", "9"]),
        "wrongValue",
        &sym,
    );
    assert_eq!(gauge(&t, &ps), 1, "PortSelect unchanged");
    assert_eq!(gauge(&t, &sym), before, "counter not cleared");

    // A switch has AllPortSelect: 0xFF is accepted there.
    let sw_ps = oid(4, 2, sw);
    set(&t, "private", &[&sw_ps, "u", "255"]).unwrap();
    assert_eq!(gauge(&t, &sw_ps), 255);
}

#[test]
fn port_select_and_clears_show_at_once() {
    let a = Agent::start(true, false);
    let t = a.target();
    let ca = a.dual_port_ca();
    let ps = oid(4, 2, ca);
    let xmit = oid(4, 15, ca);
    let xmit_pkts = oid(4, 17, ca);
    let p1 = a.pma_counters(ca, 1);
    let p2 = a.pma_counters(ca, 2);
    assert_ne!(p1.xmit_pkts, p2.xmit_pkts);
    assert_eq!(gauge(&t, &xmit_pkts), p1.xmit_pkts as u64);
    set(&t, "private", &[&ps, "u", "2"]).unwrap();
    assert_eq!(gauge(&t, &ps), 2);
    assert_eq!(gauge(&t, &xmit_pkts), p2.xmit_pkts as u64, "port 2 at once");
    assert_eq!(gauge(&t, &xmit), p2.xmit_data as u64);

    // Clear three counters of port 2 in one PDU, with a PortSelect to port 2
    // in the same PDU after switching back to 1: the select applies first.
    set(&t, "private", &[&ps, "u", "1"]).unwrap();
    let rcv_pkts = oid(4, 18, ca);
    assert!(p2.xmit_pkts > 0 && p2.rcv_pkts > 0);
    set(
        &t,
        "private",
        &[
            &ps, "u", "2", &xmit, "u", "0", &xmit_pkts, "u", "0", &rcv_pkts, "u", "0",
        ],
    )
    .unwrap();
    assert_eq!(gauge(&t, &xmit), 0);
    assert_eq!(gauge(&t, &xmit_pkts), 0);
    assert_eq!(gauge(&t, &rcv_pkts), 0);
    assert_eq!(
        gauge(&t, &oid(4, 16, ca)),
        p2.rcv_data as u64,
        "RcvData untouched"
    );
    let now2 = a.pma_counters(ca, 2);
    assert_eq!((now2.xmit_data, now2.xmit_pkts, now2.rcv_pkts), (0, 0, 0));
    assert_eq!(now2.rcv_data, p2.rcv_data);
    assert_eq!(a.pma_counters(ca, 1), p1, "port 1 untouched");
}

#[test]
fn a_node_that_stops_answering_gets_commit_failed_within_the_deadline() {
    // Sweeps every 3 s: the node is not yet marked unreachable when the
    // first SET goes to it.
    let interval = Duration::from_secs(3);
    let a = Agent::start_sweeping(true, false, interval.as_secs_f64());
    let t = a.target();
    let ca = a.dual_port_ca();
    let xmit = oid(4, 15, ca);
    let before = gauge(&t, &xmit);
    assert!(before > 0);
    a.sim.set_reachable(ca.id.guid, false);
    let t0 = Instant::now();
    expect_error(
        set(&t, "private", &[&xmit, "u", "0"]),
        "commitFailed",
        &xmit,
    );
    let failed_at = Instant::now();
    let took = failed_at - t0;
    eprintln!("commitFailed answered in {took:?} (snmpset round trip)");
    assert!(
        took < Duration::from_millis(1000),
        "commitFailed took {took:?}"
    );
    // The cache still shows what the node last reported; other nodes are
    // untouched and the master kept the session.
    assert_eq!(gauge(&t, &xmit), before);
    // The node answers again, but for one sweep interval after the failed
    // write the agent refuses writes to it at TestSet, without a MAD.
    a.sim.set_reachable(ca.id.guid, true);
    expect_error(
        set(&t, "private", &[&xmit, "u", "0"]),
        "resourceUnavailable",
        &xmit,
    );
    assert!(
        failed_at.elapsed() < interval,
        "the refusal must come within the interval for this test to mean anything"
    );
    // The refusal lasts one sweep interval from the failure: wait it out.
    std::thread::sleep(interval.saturating_sub(failed_at.elapsed()));
    set(&t, "private", &[&xmit, "u", "0"]).unwrap();
    assert_eq!(gauge(&t, &xmit), 0);
}

#[test]
fn a_set_to_a_node_marked_unreachable_is_refused_at_once() {
    let a = Agent::start_sweeping(true, false, 0.2);
    let t = a.target();
    let ca = a.dual_port_ca();
    let xmit = oid(4, 15, ca);
    a.sim.set_reachable(ca.id.guid, false);
    // Wait for the sweeper to mark the node unreachable (3 sweeps).
    let cache = std::sync::Arc::clone(a.running.as_ref().unwrap().cache());
    let t0 = Instant::now();
    while cache.load().node(ca.id.guid).is_some_and(|n| n.reachable) {
        assert!(t0.elapsed() < Duration::from_secs(10), "never unreachable");
        std::thread::sleep(Duration::from_millis(50));
    }
    // Refused at TestSet, so well before the commit deadline a write to a
    // silent node takes.
    // The fastest of three tries (a loaded machine can slow any one
    // snmpset) must beat the deadline a write to a silent node waits out.
    let deadline = ibpm_agentx::fabric::control::ControlConfig::default().deadline();
    let mut fastest = Duration::MAX;
    for _ in 0..3 {
        let t1 = Instant::now();
        expect_error(
            set(&t, "private", &[&xmit, "u", "0"]),
            "resourceUnavailable",
            &xmit,
        );
        let took = t1.elapsed();
        eprintln!("refused in {took:?} (snmpset round trip)");
        fastest = fastest.min(took);
    }
    assert!(fastest < deadline, "refusal took {fastest:?}");
    // PortSelect is agent state: it is still writable.
    set(&t, "private", &[&oid(4, 2, ca), "u", "2"]).unwrap();
    assert_eq!(gauge(&t, &oid(4, 2, ca)), 2);
}

/// PortCountersExtended XmitData of a switch port, straight from the PMA.
fn ext_xmit_data(a: &Agent, node: &Node, port: u8) -> u64 {
    rig::port_counters_extended(&a.sim, node.id.lid, port).xmit_data
}

#[test]
fn a_sample_runs_from_start_to_results_and_blocks_other_starts() {
    let a = Agent::start(true, true);
    let t = a.target();
    let sw = a.switch();
    let col = |c: u32| oid(2, c, sw);
    let res = |c: u32| oid(3, c, sw);

    // The node's tick, as the agent reports it.
    let tick = gauge(&t, &col(4)) as u8;
    let tick_ns = ibpm_agentx::sim::tick_ns(tick);
    let start_ticks = 100_000u64;
    let interval_ticks = 600_000u64;
    let interval = Duration::from_nanos(interval_ticks * tick_ns);

    // The traffic rate of the sampled port (port 1, the power-on PortSelect),
    // measured over the time the sample takes to run.
    let port = gauge(&t, &col(3)) as u8;
    let (d0, t0) = (ext_xmit_data(&a, sw, port), Instant::now());

    let started = Instant::now();
    set(
        &t,
        "private",
        &[
            &col(27),
            "x",
            "0102",
            &col(28),
            "u",
            "1",
            &col(29),
            "u",
            "2",
            &col(30),
            "u",
            "3",
            &col(31),
            "u",
            "4",
            &col(32),
            "u",
            "5",
            &col(25),
            "u",
            &start_ticks.to_string(),
            &col(26),
            "u",
            &interval_ticks.to_string(),
        ],
    )
    .unwrap();
    // The write is published at once: the start timer is running.
    assert_eq!(get(&t, &col(22)).value, "1");
    assert_eq!(get(&t, &res(2)).value.trim(), "01 02");
    assert_eq!(get(&t, &col(27)).value.trim(), "01 02");

    // A second manager cannot start another sample meanwhile.
    expect_error(
        set(
            &t,
            "private",
            &[&col(27), "x", "0909", &col(26), "u", "1000"],
        ),
        "inconsistentValue",
        &col(27),
    );

    // Status goes 1 -> 2 -> 0 as the node reports it, within ~0.2 s of it.
    let mut seen = vec![1u8];
    let mut seen_result = vec![1u8];
    let done_at = loop {
        let s: u8 = get(&t, &col(22)).value.parse().unwrap();
        let r: u8 = get(&t, &res(3)).value.parse().unwrap();
        if *seen.last().unwrap() != s {
            seen.push(s);
        }
        if *seen_result.last().unwrap() != r {
            seen_result.push(r);
        }
        if s == 0 && r == 0 {
            break started.elapsed();
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "sample never completed: {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let (d1, t1) = (ext_xmit_data(&a, sw, port), Instant::now());
    let rate = (d1 - d0) as f64 / (t1 - t0).as_secs_f64();
    assert!(rate > 0.0, "the sampled port carries traffic");
    assert_eq!(seen, vec![1, 2, 0], "pmPortSampleCntrlSampleStatus");
    assert_eq!(seen_result, vec![1, 2, 0], "pmResultSampleStatus");
    let nominal = Duration::from_nanos((start_ticks + interval_ticks) * tick_ns);
    eprintln!("sample: nominal {nominal:?}, status 0 seen after {done_at:?}");
    assert!(done_at >= nominal, "done before the node could be");
    assert!(
        done_at < nominal + Duration::from_millis(1000),
        "{done_at:?}"
    );

    // Results: Counter0 = PortXmitData over the interval (octets/4), the
    // others in proportion; consistent with the port's traffic rate.
    let xmit = gauge(&t, &res(4)) as f64;
    let expect = rate * interval.as_secs_f64();
    assert!(
        (xmit / expect - 1.0).abs() < 0.05,
        "XmitData {xmit} vs rate x interval {expect}"
    );
    let rcv = gauge(&t, &res(5));
    let xpkts = gauge(&t, &res(6));
    let rpkts = gauge(&t, &res(7));
    assert!(rcv > 0 && xpkts > 0 && rpkts > 0);
    assert!(xmit as u64 >= xpkts, "data (octets/4) outweighs packets");
    // Counters not selected (0 = reserved) read zero.
    for c in 9..=18 {
        assert_eq!(gauge(&t, &res(c)), 0);
    }
    // pmPortSampleResultExtTable (PortSamplesResultExtended): the same
    // sample in 64 bits; these counts fit 32 bits, so they are equal.
    let ext = |c: u32| oid(21, c, sw);
    assert_eq!(get(&t, &ext(1)).value.trim(), "01 02");
    assert_eq!(get(&t, &ext(2)).value, "0");
    assert_eq!(get(&t, &ext(3)).value, "2", "ExtendedWidth: 64 bits");
    for i in 0..15 {
        let c64 = get(&t, &ext(4 + i));
        assert_eq!(c64.ty, "Counter64");
        assert_eq!(
            c64.value.parse::<u64>().unwrap(),
            gauge(&t, &res(4 + i)),
            "Counter{i}"
        );
    }

    // Done: the next sample may start, with another Tag.
    set(
        &t,
        "private",
        &[&col(27), "x", "0909", &col(26), "u", "1000"],
    )
    .unwrap();
    assert_eq!(get(&t, &res(2)).value.trim(), "09 09");
}

#[test]
fn sample_timers_wider_than_the_counter_width_are_refused() {
    let a = Agent::start(true, false);
    let t = a.target();
    let ca = a.dual_port_ca();
    // CAs here count SampleInterval in 24 bits.
    assert_eq!(
        get(&t, &oid(2, 5, ca)).value,
        "2",
        "CounterWidth code 2 = 24 bits"
    );
    let interval = oid(2, 26, ca);
    expect_error(
        set(&t, "private", &[&interval, "u", "16777216"]),
        "inconsistentValue",
        &interval,
    );
    set(&t, "private", &[&interval, "u", "16777215"]).unwrap();
}
