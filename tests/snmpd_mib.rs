//! The whole path with real parts: a private snmpd as AgentX master, the
//! ibpm-agentx binary on a topology file, and the real snmpwalk,
//! snmpbulkwalk and snmpget clients. Values are checked against the
//! simulated PMAs, read here through the same MADs a fabric would answer.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{ChildGuard, PrivateSnmpd, SnmpTool, WalkLine, free_udp_port, parse_walk};
use ibpm_agentx::app::sim_options;
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::topology;
use ibpm_agentx::ib::{Fabric, NodeType};
use ibpm_agentx::mib::Oid;
use ibpm_agentx::pm::mad::attr;
use ibpm_agentx::pm::{ClassPortInfo, PortCounters, PortSamplesControl};
use ibpm_agentx::rig;
use ibpm_agentx::sim::SimFabric;

const PM: &str = "1.3.6.1.3.117";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/two-level.net")
}

struct Setup {
    snmpd: PrivateSnmpd,
    agent: ChildGuard,
    dir: tempfile::TempDir,
    responder: Option<String>,
}

impl Setup {
    fn start(with_responder: bool) -> Setup {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed: run scripts/install-deps"
        );
        Self::start_on(
            PrivateSnmpd::start().expect("start a private snmpd"),
            with_responder,
        )
    }

    fn start_on(snmpd: PrivateSnmpd, with_responder: bool) -> Setup {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = with_responder.then(free_udp_port);
        let cfg = format!(
            "[agentx]\nsocket = \"{sock}\"\nping_interval = 1\nreconnect_max = 1\n\
             [fabric]\ntopology = \"{topo}\"\nsweep_interval = 3600\n\
             [sim]\ntraffic = false\n\
             [snmp]\nlisten = \"{listen}\"\n",
            sock = snmpd.agentx_addr(),
            topo = fixture().display(),
            listen = port.map(|p| format!("127.0.0.1:{p}")).unwrap_or_default(),
        );
        let cfg_path = dir.path().join("agent.toml");
        std::fs::write(&cfg_path, cfg).unwrap();
        let agent = common::run_agent(&cfg_path, &dir.path().join("agent.log"));
        let mut s = Setup {
            snmpd,
            agent,
            dir,
            responder: port.map(|p| format!("127.0.0.1:{p}")),
        };
        // Rows appear as nodes are read; every test here compares whole
        // tables, so it starts once the first sweep has ended.
        let log = s.dir.path().join("agent.log");
        common::wait_sweeps(
            &s.snmpd.target(),
            1,
            Duration::from_secs(20),
            &mut s.agent,
            || std::fs::read_to_string(&log).unwrap_or_default(),
        );
        s
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }

    /// Wait until the first node's ClassPortInfo row answers through `target`.
    fn wait_rows(&mut self, target: &str, limit: Duration) -> Duration {
        let fabric = topology::load(&fixture()).unwrap();
        let oid = format!("{PM}.1.1.1.2.{}", index(fabric.nodes[0].id.guid.0));
        let start = Instant::now();
        while start.elapsed() < limit {
            assert!(self.agent.running(), "ibpm-agentx exited:\n{}", self.log());
            let out = get(target, &[&oid]);
            if out.len() == 1 && out[0].ty == "INTEGER" {
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "no rows through {target} after {limit:?}; agent log:\n{}",
            self.log()
        );
    }
}

fn index(guid: u64) -> String {
    guid.to_be_bytes().map(|b| b.to_string()).join(".")
}

fn run_ok(tool: SnmpTool) -> Vec<WalkLine> {
    let out = tool.run();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let problems: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !common::unrelated_mib_warning(l))
        .collect();
    assert!(
        out.status.success() && problems.is_empty(),
        "tool failed: {stderr}"
    );
    parse_walk(&String::from_utf8_lossy(&out.stdout))
}

fn get(target: &str, oids: &[&str]) -> Vec<WalkLine> {
    let out = SnmpTool::new("snmpget")
        .args([
            "-v2c", "-c", "public", "-On", "-Ox", "-t", "1", "-r", "0", target,
        ])
        .args(oids)
        .run();
    parse_walk(&String::from_utf8_lossy(&out.stdout))
}

/// A walk of the draft's four tables (the module's whole subtree, less
/// the extension tables and scalars, which have tests of their own).
fn walk(tool: &str, target: &str) -> Vec<WalkLine> {
    let draft: Vec<Oid> = (1..=4)
        .map(|t| format!("{PM}.1.{t}").parse().unwrap())
        .collect();
    walk_all(tool, target)
        .into_iter()
        .filter(|l| draft.iter().any(|d| l.oid.starts_with(d.as_slice())))
        .collect()
}

fn walk_all(tool: &str, target: &str) -> Vec<WalkLine> {
    let mut args = vec!["-v2c", "-c", "public", "-On", "-Ox", "-t", "3", "-r", "1"];
    if tool == "snmpbulkwalk" {
        args.push("-Cr50");
    }
    args.extend([target, PM]);
    run_ok(SnmpTool::new(tool).args(args))
}

/// The accessible columns of each table, as the draft numbers them.
fn expected_columns() -> Vec<(u32, u32)> {
    let mut v = vec![(1, 2)];
    v.extend((2..=42).map(|c| (2, c)));
    v.extend((2..=18).map(|c| (3, c)));
    v.extend((2..=18).map(|c| (4, c)));
    v
}

/// The same simulated fabric as the agent's (same topology, seed, frozen
/// traffic), to read what its PMAs hold.
fn reference_sim() -> (Fabric, SimFabric) {
    let mut cfg = Config::default();
    cfg.sim.traffic = false;
    let sim = SimFabric::new(topology::load(&fixture()).unwrap(), sim_options(&cfg));
    (sim.fabric(), sim)
}

fn gauge(l: &WalkLine) -> u64 {
    assert_eq!(l.ty, "Gauge32", "{l:?}");
    l.value.parse().unwrap()
}

#[test]
fn every_column_has_one_row_per_node_with_the_pma_values() {
    let s = Setup::start(false);
    let target = s.snmpd.target();
    let (fabric, sim) = reference_sim();
    assert_eq!(fabric.nodes.len(), 7);
    // The GUIDs the topology's switchguid=/caguid= lines give.
    let guids: BTreeSet<u64> = fabric.nodes.iter().map(|n| n.id.guid.0).collect();
    assert!(guids.contains(&0x0002_c900_0000_1000));
    assert!(guids.contains(&0x0002_c903_0000_1234));
    assert!(guids.contains(&0x0002_c903_0000_12ff));

    let t0 = Instant::now();
    let bulk = walk("snmpbulkwalk", &target);
    let bulk_time = t0.elapsed();
    let t0 = Instant::now();
    let next = walk("snmpwalk", &target);
    let walk_time = t0.elapsed();
    eprintln!(
        "{} varbinds: snmpbulkwalk -Cr50 {:?}, snmpwalk {:?}",
        bulk.len(),
        bulk_time,
        walk_time
    );
    assert_eq!(bulk, next, "GetNext and GetBulk walks differ");

    // Group by column; every column has exactly one row per node, in
    // numeric GUID order.
    let mut by_col: BTreeMap<(u32, u32), Vec<(u64, WalkLine)>> = BTreeMap::new();
    let root: Oid = PM.parse().unwrap();
    for l in &bulk {
        let o = l.oid.as_slice();
        assert!(l.oid.starts_with(root.as_slice()), "{l:?}");
        assert_eq!(o.len(), 6 + 1 + 3 + 8, "index is 8 sub-identifiers: {l:?}");
        assert_eq!(o[8], 1);
        let g = o[10..].iter().fold(0u64, |a, &b| {
            assert!(b <= 255);
            (a << 8) | b as u64
        });
        by_col.entry((o[7], o[9])).or_default().push((g, l.clone()));
    }
    assert_eq!(
        by_col.keys().copied().collect::<Vec<_>>(),
        expected_columns()
    );
    let sorted: Vec<u64> = guids.iter().copied().collect();
    for (col, rows) in &by_col {
        let got: Vec<u64> = rows.iter().map(|r| r.0).collect();
        assert_eq!(got, sorted, "rows of column {col:?}");
    }
    assert_eq!(bulk.len(), expected_columns().len() * fabric.nodes.len());

    let cell = |t: u32, c: u32, g: u64| -> &WalkLine {
        &by_col[&(t, c)].iter().find(|r| r.0 == g).unwrap().1
    };
    for node in &fabric.nodes {
        let g = node.id.guid.0;
        let pma = node.pma_lid(1);
        // pmClassPortInfoAllPortSelect
        let cpi = ClassPortInfo::decode(&rig::pma_get(&sim, pma, attr::CLASS_PORT_INFO, &[0; 192]));
        let all = cpi.capability_mask & (1 << 8) != 0;
        assert_eq!(cell(1, 2, g).value, if all { "1" } else { "2" }, "{node:?}");

        // pmPortCounters* report port 1 (the default PortSelect).
        let mut req = [0u8; 192];
        PortCounters {
            port_select: 1,
            ..Default::default()
        }
        .encode(&mut req);
        let pc = PortCounters::decode(&rig::pma_get(&sim, pma, attr::PORT_COUNTERS, &req));
        assert_eq!(gauge(cell(4, 2, g)), 1, "pmPortCountersPortSelect");
        let expect: [(u32, u64); 16] = [
            (3, pc.symbol_errors as u64),
            (4, pc.link_error_recovery as u64),
            (5, pc.link_downed as u64),
            (6, pc.rcv_errors as u64),
            (7, pc.rcv_remote_phys_errors as u64),
            (8, pc.rcv_switch_relay_errors as u64),
            (9, pc.xmit_discards as u64),
            (10, pc.xmit_constraint_errors as u64),
            (11, pc.rcv_constraint_errors as u64),
            (12, pc.local_link_integrity_errors as u64),
            (13, pc.excessive_buffer_overrun_errors as u64),
            (14, pc.vl15_dropped as u64),
            (15, pc.xmit_data as u64),
            (16, pc.rcv_data as u64),
            (17, pc.xmit_pkts as u64),
            (18, pc.rcv_pkts as u64),
        ];
        for (c, v) in expect {
            assert_eq!(
                gauge(cell(4, c, g)),
                v,
                "pmPortCounters column {c} of {g:#x}"
            );
        }
        // A cabled port of a frozen fabric that ran for a while has traffic.
        assert!(pc.xmit_data > 0 && pc.rcv_pkts > 0, "{pc:?}");

        // PortSamplesControl
        let ctl = PortSamplesControl::decode(&rig::pma_get(
            &sim,
            pma,
            attr::PORT_SAMPLES_CONTROL,
            &[0; 192],
        ));
        assert_eq!(gauge(cell(2, 4, g)), ctl.tick as u64);
        assert_eq!(cell(2, 5, g).ty, "INTEGER");
        assert_eq!(cell(2, 5, g).value, ctl.counter_width.to_string());
        assert_eq!(gauge(cell(2, 6, g)), ctl.counter_masks[0] as u64);
        assert_eq!(cell(2, 22, g).value, ctl.sample_status.to_string());
        let hex = |b: &[u8]| {
            b.iter()
                .map(|x| format!("{x:02X}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        assert_eq!(cell(2, 23, g).ty, "Hex-STRING");
        assert_eq!(
            cell(2, 23, g).value.trim(),
            hex(&ctl.option_mask.to_be_bytes())
        );
        assert_eq!(cell(2, 27, g).value.trim(), hex(&ctl.tag.to_be_bytes()));
        assert_eq!(gauge(cell(2, 28, g)), ctl.counter_select[0] as u64);
        assert_eq!(cell(3, 3, g).ty, "INTEGER");
        for c in 4..=18 {
            assert_eq!(cell(3, c, g).ty, "Gauge32");
        }
    }

    // snmpget with the MIB loaded by name.
    let sw = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Switch)
        .unwrap();
    let name = format!("IB-PM-MIB::pmPortCountersXmitData.{}", index(sw.id.guid.0));
    let out = run_ok(SnmpTool::new("snmpget").mibs(true).args([
        "-v2c", "-c", "public", "-On", "-t", "3", "-r", "1", &target, &name,
    ]));
    assert_eq!(out.len(), 1);
    assert_eq!(
        out[0].oid.to_string(),
        format!("{PM}.1.4.1.15.{}", index(sw.id.guid.0))
    );
    let numeric = &by_col[&(4, 15)]
        .iter()
        .find(|r| r.0 == sw.id.guid.0)
        .unwrap()
        .1;
    assert_eq!(out[0].value, numeric.value);
    // and the symbolic rendering knows the object and its type
    let out = SnmpTool::new("snmpget")
        .mibs(true)
        .args(["-v2c", "-c", "public", "-t", "3", "-r", "1", &target, &name])
        .run();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.starts_with("IB-PM-MIB::pmPortCountersXmitData.") && text.contains("= Gauge32: "),
        "{text}"
    );

    // Get of an instance that does not exist, and of a non-object.
    let missing = get(
        &target,
        &[
            &format!("{PM}.1.4.1.15.0.0.0.0.0.0.0.1"),
            &format!("{PM}.1.4.1.99.0"),
        ],
    );
    assert_eq!(missing.len(), 2);
    assert!(missing[0].value.contains("No Such Instance"), "{missing:?}");
    assert!(missing[1].value.contains("No Such Object"), "{missing:?}");
}

#[test]
fn walks_work_again_within_5_s_of_an_snmpd_restart() {
    let mut s = Setup::start(false);
    let target = s.snmpd.target();
    let before = walk("snmpbulkwalk", &target);
    assert!(!before.is_empty());
    for round in 0..2 {
        s.snmpd.restart().expect("restart snmpd");
        let back = s.wait_rows(&target, Duration::from_secs(5));
        eprintln!("round {round}: rows again {back:?} after the restart");
        let after = walk("snmpbulkwalk", &target);
        assert_eq!(
            after, before,
            "frozen fabric: the same walk after the restart"
        );
    }
}

#[test]
fn builtin_responder_answers_like_snmpd() {
    let mut s = Setup::start(true);
    let responder = s.responder.clone().unwrap();
    s.wait_rows(&responder, Duration::from_secs(5));
    let via_snmpd = walk_all("snmpbulkwalk", &s.snmpd.target());
    let mut via_responder = walk_all("snmpbulkwalk", &responder);
    // Our subtree is all the responder serves: its walk ends with
    // endOfMibView, which snmpbulkwalk prints; snmpd's walk ends at the next
    // subtree instead.
    let last = via_responder.pop().expect("responder walk");
    assert!(last.value.contains("No more variables left"), "{last:?}");
    assert!(via_snmpd.len() > 100);
    assert_eq!(via_snmpd.len(), via_responder.len());
    for (a, b) in via_snmpd.iter().zip(&via_responder) {
        let agent: Oid = format!("{PM}.1.9").parse().unwrap();
        if a.ty == "Timeticks" || a.oid.starts_with(agent.as_slice()) {
            // Times and the agent's sweep figures move between the walks.
            assert_eq!((&a.oid, &a.ty), (&b.oid, &b.ty));
        } else {
            assert_eq!(a, b);
        }
    }
}

#[test]
fn agentx_over_tcp_serves_the_same_walk() {
    let unix = Setup::start(false);
    let via_unix = walk("snmpbulkwalk", &unix.snmpd.target());
    let tcp = Setup::start_on(
        PrivateSnmpd::start_tcp().expect("snmpd with AgentX on TCP"),
        false,
    );
    assert!(tcp.snmpd.agentx_addr().starts_with("tcp:127.0.0.1:"));
    let via_tcp = walk("snmpbulkwalk", &tcp.snmpd.target());
    assert!(!via_tcp.is_empty());
    assert_eq!(via_unix, via_tcp);
}

fn agent_cmd(args: &[&str]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn broken_config_and_topology_files_get_one_clear_line() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        format!("[fabric]\ntopology = \"{}\"\n", fixture().display()),
    )
    .unwrap();
    let (code, err) = agent_cmd(&["check-config", "--config", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");

    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/ibpm-agentx.toml");
    let (code, err) = agent_cmd(&["check-config", "--config", shipped.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");

    let cases = [
        (
            "[fabric]\nsweep_interval = \"soon\"\n",
            ":2",
            "sweep_interval",
        ),
        (
            "[agentx]\npriority = 127\n\n[mad]\nwindow = 4096\n",
            ":5",
            "mad.window",
        ),
        (
            "[fabric]\nbackend = \"sim\"\ncolour = \"blue\"\n",
            ":3",
            "colour",
        ),
        (
            "[agentx]\nsocket = \"udp:1.2.3.4:705\"\n",
            ":2",
            "agentx.socket",
        ),
        ("[snmp]\nlisten = \"localhost\"\n", ":2", "snmp.listen"),
    ];
    for (text, line, key) in cases {
        let p = dir.path().join("bad.toml");
        std::fs::write(&p, text).unwrap();
        let (code, err) = agent_cmd(&["check-config", "--config", p.to_str().unwrap()]);
        assert_ne!(code, 0, "{text}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
        assert!(err.contains(line) && err.contains(key), "{text} -> {err}");
        // `run` refuses it the same way, before doing anything.
        let (code, err2) = agent_cmd(&["run", "--config", p.to_str().unwrap(), "--no-agentx"]);
        assert_ne!(code, 0);
        assert!(err2.contains(key), "{err2}");
    }

    // A broken topology: the error names the file and line, exit non-zero.
    let topo = dir.path().join("bad.net");
    std::fs::write(
        &topo,
        "Switch 4 \"s1\"\n[1] \"h1\"[1]\n\nHca 1 \"h1\"\n[1] \"s1\"[1]\n[9] \"s1\"[2]\n",
    )
    .unwrap();
    let (code, err) = agent_cmd(&["run", "--no-agentx", "--topology", topo.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.net:6"), "{err}");
    assert_eq!(
        err.trim().lines().filter(|l| l.contains("bad.net")).count(),
        1,
        "{err}"
    );
    let cfg = dir.path().join("topo.toml");
    std::fs::write(
        &cfg,
        format!("[fabric]\ntopology = \"{}\"\n", topo.display()),
    )
    .unwrap();
    let (code, err) = agent_cmd(&["check-config", "--config", cfg.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("bad.net:6"), "{err}");
}

#[test]
fn only_unrelated_mib_warnings_are_tolerated() {
    use common::unrelated_mib_warning as unrelated;
    assert!(unrelated(
        "Cannot find module (IANAifType-MIB): At line 13 in /var/lib/mibs/ietf/IF-MIB"
    ));
    assert!(!unrelated(
        "Cannot find module (SNMPv2-SMI): At line 1 in mibs/IB-PM-MIB.txt"
    ));
    assert!(!unrelated(
        "Cannot find module (IB-PM-MIB): At line 0 in (none)"
    ));
    assert!(!unrelated("IB-PM-MIB::pm: Unknown Object Identifier"));
}
