//! The agent end to end on a real (simulated) fabric: ibsim running a fat
//! tree from `scripts/gen-fat-tree`, LIDs from `opensm -o`, the
//! `ibpm-agentx` binary with `--backend umad` under umad2sim, a private
//! snmpd as its AgentX master, and perfquery / ibnetdiscover as the ground
//! truth.

mod common;
mod ibsim;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{ChildGuard, PrivateSnmpd, SnmpTool, parse_walk};
use ibpm_agentx::mib::tables::counter_columns;
use ibsim::{IbSim, IbndNode, example_path, gen_fat_tree, parse_ibnetdiscover, perfquery_fields};

const PM: &str = "1.3.6.1.3.117.1";
/// pmPortCountersPortSelect.
const COL_PORT_SELECT: u32 = 2;
/// pmPortSampleCntrlSampleInterval.
const COL_SAMPLE_INTERVAL: u32 = 26;
/// 14 leaves x 8 hosts (the last 2 of each dual-port) + 7 spines.
const LEAVES: usize = 14;
const SPINES: usize = 7;
const HOSTS: usize = 8;
const DUAL: usize = 2;
const SWEEP_S: f64 = 1.0;
const UNREACHABLE_AFTER: u32 = 2;
/// Discovery again only this often: port state comes from the light sweeps.
const REDISCOVER_S: u64 = 120;
/// Every known port's PortInfo read again this often.
const PORTINFO_S: u64 = 1;
/// The node the sample responder answers for.
const RESPONDER_NODE: &str = "H3_2";

fn index(guid: u64) -> String {
    guid.to_be_bytes()
        .iter()
        .map(|b| b.to_string())
        .collect::<Vec<_>>()
        .join(".")
}

fn guid_of_index(suffix: &[u32]) -> u64 {
    suffix.iter().fold(0u64, |g, &b| (g << 8) | u64::from(b))
}

fn column_of(name: &str) -> u32 {
    counter_columns()
        .find(|(f, _)| f.name() == name)
        .map(|(_, c)| c.column)
        .unwrap_or_else(|| panic!("no column for {name}"))
}

struct Setup {
    // Dropped in reverse order of start: the agent first, ibsim last.
    agent: ChildGuard,
    /// Held for its Drop (stops the responder).
    _responder: Option<ChildGuard>,
    snmpd: PrivateSnmpd,
    sim: IbSim,
    _netdir: tempfile::TempDir,
    ib: BTreeMap<u64, IbndNode>,
    agent_log: PathBuf,
    responder_out: PathBuf,
}

impl Setup {
    fn start(with_responder: bool) -> Setup {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed (apt-get install snmpd snmp)"
        );
        // Spine S0 has an enhanced port 0 (as NVIDIA's managed switches
        // do): a port with counters of its own.
        let text = gen_fat_tree(LEAVES, SPINES, HOSTS, DUAL).replacen(
            "\"S0\"\n",
            "\"S0\" enhanced port 0\n",
            1,
        );
        assert!(text.contains("enhanced port 0"));
        let netdir = tempfile::Builder::new()
            .prefix("ibpm-ft-")
            .tempdir()
            .expect("temp dir");
        let net = netdir.path().join("fat-tree.net");
        fs::write(&net, text).expect("write netfile");
        let sim = IbSim::start(&net);
        let ib = parse_ibnetdiscover(&sim.tool("ibnetdiscover", &[]).stdout);
        assert_eq!(ib.len(), LEAVES + SPINES + LEAVES * HOSTS);

        let responder_out = sim.dir().join("responder.out");
        let responder = with_responder.then(|| {
            let mut c = sim.command(example_path("pma_responder"));
            c.args(["--topology"])
                .arg(&net)
                .args(["--node", RESPONDER_NODE])
                .env("SIM_HOST", RESPONDER_NODE)
                .env("SIM_SET_ISSM", "1")
                .stdin(Stdio::null())
                .stdout(fs::File::create(&responder_out).expect("responder.out"))
                .stderr(fs::File::create(sim.dir().join("responder.err")).expect("err"));
            let g = ChildGuard::new("pma_responder", c.spawn().expect("start pma_responder"));
            wait_for(Duration::from_secs(20), "the responder to register", || {
                fs::read_to_string(&responder_out)
                    .unwrap_or_default()
                    .contains("\"ready\"")
            });
            g
        });

        let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
        let (mut c, agent_log) = sim.agent_command(&format!(
            "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
             [fabric]\nbackend = \"umad\"\nsweep_interval = {SWEEP_S}\n\
             unreachable_after = {UNREACHABLE_AFTER}\nunreachable_rows = \"drop\"\n\
             rediscover_interval = {REDISCOVER_S}\nportinfo_interval = {PORTINFO_S}\n\
             [set]\nallow = true\n[log]\nlevel = \"info\"\n",
            snmpd.agentx_addr()
        ));
        let agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
        let mut s = Setup {
            agent,
            _responder: responder,
            snmpd,
            sim,
            _netdir: netdir,
            ib,
            agent_log,
            responder_out,
        };
        let want: BTreeSet<u64> = s.ib.keys().copied().collect();
        s.wait_rows(Duration::from_secs(20), |rows| rows == &want);
        // Rows appear as nodes are read; the tests compare whole tables
        // with perfquery, so they start once the first sweep has ended.
        let target = s.snmpd.target();
        let log = s.agent_log.clone();
        common::wait_sweeps(&target, 1, Duration::from_secs(20), &mut s.agent, || {
            fs::read_to_string(&log).unwrap_or_default()
        });
        s
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.agent_log).unwrap_or_default()
    }

    fn node(&self, desc: &str) -> &IbndNode {
        self.ib
            .values()
            .find(|n| n.desc == desc)
            .unwrap_or_else(|| panic!("no node {desc}"))
    }

    /// The LID perfquery addresses for a node's port.
    fn lid(&self, desc: &str, port: u8) -> u16 {
        let n = self.node(desc);
        if n.switch { n.lid } else { n.ports[&port].2 }
    }

    /// Node GUIDs with a pmPortCountersTable row.
    fn rows(&self) -> BTreeSet<u64> {
        let root = format!("{PM}.4.1.{COL_PORT_SELECT}");
        let out = SnmpTool::new("snmpbulkwalk")
            .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "0"])
            .arg(&self.snmpd.target())
            .arg(&root)
            .run();
        assert!(
            out.status.success(),
            "walk failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let prefix: Vec<u32> = root.split('.').map(|s| s.parse().unwrap()).collect();
        parse_walk(&String::from_utf8_lossy(&out.stdout))
            .into_iter()
            .filter_map(|l| {
                let o = l.oid.as_slice();
                (o.len() == prefix.len() + 8 && o.starts_with(&prefix))
                    .then(|| guid_of_index(&o[prefix.len()..]))
            })
            .collect()
    }

    fn wait_rows(&self, limit: Duration, ok: impl Fn(&BTreeSet<u64>) -> bool) -> Duration {
        let start = Instant::now();
        loop {
            let rows = self.rows();
            if ok(&rows) {
                return start.elapsed();
            }
            assert!(
                start.elapsed() < limit,
                "rows not as expected within {limit:?}: {} rows\nagent log:\n{}",
                rows.len(),
                self.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn snmpset(&self, args: &[String]) -> String {
        let out = SnmpTool::new("snmpset")
            .args(["-v2c", "-c", "private", "-On", "-t", "3", "-r", "0"])
            .arg(&self.snmpd.target())
            .args(args)
            .run();
        assert!(
            out.status.success(),
            "snmpset {args:?} failed: {}{}\nagent log:\n{}\nresponder:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log(),
            fs::read_to_string(&self.responder_out).unwrap_or_default()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every counter column of one port, read through snmpd (PortSelect
    /// first set to `port`).
    fn counters(&self, desc: &str, port: u8) -> BTreeMap<String, u64> {
        let idx = index(self.node(desc).guid);
        self.snmpset(&[
            format!("{PM}.4.1.{COL_PORT_SELECT}.{idx}"),
            "u".into(),
            port.to_string(),
        ]);
        let oids: Vec<String> = counter_columns()
            .map(|(_, c)| format!("{PM}.4.1.{}.{idx}", c.column))
            .collect();
        let out = SnmpTool::new("snmpget")
            .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "0"])
            .arg(&self.snmpd.target())
            .args(&oids)
            .run();
        assert!(out.status.success(), "snmpget failed");
        let lines = parse_walk(&String::from_utf8_lossy(&out.stdout));
        let mut m = BTreeMap::new();
        for (f, c) in counter_columns() {
            let oid = format!(".{PM}.4.1.{}.{idx}", c.column);
            let l = lines
                .iter()
                .find(|l| l.oid.to_string() == oid || format!(".{}", l.oid) == oid)
                .unwrap_or_else(|| panic!("no {oid} in {lines:?}"));
            assert_eq!(l.ty, "Gauge32", "{l:?}");
            m.insert(f.name().to_string(), l.value.parse().expect("number"));
        }
        m
    }

    fn perfquery(&self, desc: &str, port: u8) -> BTreeMap<String, u64> {
        let lid = self.lid(desc, port).to_string();
        perfquery_fields(
            &self
                .sim
                .tool("perfquery", &[&lid, &port.to_string()])
                .stdout,
        )
    }
}

fn wait_for(limit: Duration, what: &str, ok: impl Fn() -> bool) {
    common::wait_until(what, limit, Duration::from_millis(50), ok);
}

const EXACT: [&str; 12] = [
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
];
const MOVING: [&str; 4] = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"];

#[test]
fn agent_serves_the_fabric_as_perfquery_reads_it() {
    let mut s = Setup::start(true);

    // Every node ibnetdiscover reports is a row, with the same GUID (the
    // wait in `start` compared the sets).
    let rows = s.rows();
    assert_eq!(rows.len(), s.ib.len());
    let log = s.log();
    assert!(log.contains("fabric discovered"), "{log}");

    // Error counters preset in ibsim read back exactly as perfquery reads
    // them; H4_7 is dual-port (port 2 on leaf L5).
    let sets = [
        ("L3", 5u8, "SymbolErrorCounter", 7u64),
        ("S2", 4, "LinkDownedCounter", 3),
        ("H2_1", 1, "PortRcvErrors", 11),
        ("H4_7", 2, "PortXmitDiscards", 300),
        ("L9", 12, "PortXmitDiscards", 21),
    ];
    for (node, port, field, v) in sets {
        s.sim.console(&format!(
            "PerformanceSet \"{node}\"[{port}] PortCounters.{field}={v}"
        ));
    }
    // The next sweeps pick them up.
    for (node, port, field, v) in sets {
        let start = Instant::now();
        loop {
            let got = s.counters(node, port);
            if got[field] == v {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "{node}[{port}] {field} = {} after 10 s, want {v}",
                got[field]
            );
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    // Bound on traffic between two reads of one port: every port of the
    // fabric sees at most every MAD of three sweeps (PortCounters,
    // PortCountersExtended and 8 optional attributes per port, plus
    // per-node MADs), each MAD one packet each way and 72 dwords.
    let ports: u64 = s.ib.values().map(|n| n.ports.len() as u64).sum();
    let pkts_bound = 3 * 2 * (ports * 10 + 3 * s.ib.len() as u64);
    for (node, port, _, _) in sets {
        let got = s.counters(node, port);
        let want = s.perfquery(node, port);
        for f in EXACT {
            assert_eq!(got[f], want[f], "{node}[{port}] {f}: snmpget vs perfquery");
        }
        for f in MOVING {
            let bound = if f.ends_with("Data") {
                pkts_bound * 72
            } else {
                pkts_bound
            };
            assert!(
                got[f] <= want[f] && want[f] - got[f] <= bound,
                "{node}[{port}] {f}: snmpget {} vs perfquery {} (bound {bound})",
                got[f],
                want[f]
            );
            assert!(got[f] > 0, "{node}[{port}] {f} never moved");
        }
    }

    // A counter cleared with snmpset reads 0 in perfquery.
    let (node, port) = ("H4_7", 2u8);
    let idx = index(s.node(node).guid);
    s.snmpset(&[
        format!("{PM}.4.1.{COL_PORT_SELECT}.{idx}"),
        "u".into(),
        port.to_string(),
        format!("{PM}.4.1.{}.{idx}", column_of("PortXmitDiscards")),
        "u".into(),
        "0".into(),
    ]);
    assert_eq!(s.perfquery(node, port)["PortXmitDiscards"], 0);
    assert_eq!(s.counters(node, port)["PortXmitDiscards"], 0);
    // Only the selected counter: another port's preset value stays.
    assert_eq!(s.perfquery("L9", 12)["PortXmitDiscards"], 21);

    // PortSamplesControl: ibsim does not answer it, the responder attached
    // to RESPONDER_NODE does. Only that node has a sample row.
    let root = format!("{PM}.2.1.{COL_SAMPLE_INTERVAL}");
    let walk = SnmpTool::new("snmpbulkwalk")
        .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "0"])
        .arg(&s.snmpd.target())
        .arg(&root)
        .run();
    let lines = parse_walk(&String::from_utf8_lossy(&walk.stdout));
    let responder_guid = s.node(RESPONDER_NODE).guid;
    let sample_rows: Vec<u64> = lines
        .iter()
        .filter(|l| l.oid.to_string().contains(&format!("{root}.")))
        .map(|l| {
            let o = l.oid.as_slice();
            guid_of_index(&o[o.len() - 8..])
        })
        .collect();
    assert_eq!(
        sample_rows,
        vec![responder_guid],
        "sample rows: {lines:?}\nresponder:\n{}",
        fs::read_to_string(&s.responder_out).unwrap_or_default()
    );
    let sets_before = fs::read_to_string(&s.responder_out)
        .unwrap_or_default()
        .matches("\"request\":\"0x10\",\"method\":2")
        .count();
    // A CA's PMA samples the port the request arrived on: PortSelect 1.
    s.snmpset(&[
        format!("{PM}.2.1.3.{}", index(responder_guid)),
        "u".into(),
        "1".into(),
        format!("{root}.{}", index(responder_guid)),
        "u".into(),
        "5000".into(),
    ]);
    let out = fs::read_to_string(&s.responder_out).unwrap_or_default();
    assert_eq!(
        out.matches("\"request\":\"0x10\",\"method\":2").count(),
        sets_before + 1,
        "the sample start reached the responder:\n{out}"
    );
    assert!(s.agent.running(), "agent exited:\n{}", s.log());
}

/// snmpget of one OID in a loop until `stop`; counts requests and failures.
fn prober(
    target: String,
    oid: String,
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicU64>,
    failed: Arc<AtomicU64>,
) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut errors = Vec::new();
        while !stop.load(Ordering::Relaxed) {
            let out = SnmpTool::new("snmpget")
                .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "0"])
                .arg(&target)
                .arg(&oid)
                .timeout(Duration::from_secs(10))
                .run();
            let text = String::from_utf8_lossy(&out.stdout).into_owned()
                + &String::from_utf8_lossy(&out.stderr);
            if out.status.success() && !text.contains("Timeout") && text.contains("Gauge32") {
                ok.fetch_add(1, Ordering::Relaxed);
            } else {
                failed.fetch_add(1, Ordering::Relaxed);
                errors.push(text);
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        errors
    })
}

#[test]
fn unlinked_switch_goes_away_and_returns_without_stalling_snmp() {
    let mut s = Setup::start(false);
    let victim = "L5";
    // Behind L5: the leaf and its single-port hosts. Its dual-port hosts
    // still answer through port 2 on L6.
    let mut gone: BTreeSet<u64> = (0..HOSTS - DUAL)
        .map(|h| s.node(&format!("H5_{h}")).guid)
        .collect();
    gone.insert(s.node(victim).guid);
    let all = s.rows();

    // A node that keeps answering: its counters keep moving.
    let watch = ("L0", 1u8);
    let xmit = |s: &Setup| s.counters(watch.0, watch.1)["PortXmitPkts"];

    let stop = Arc::new(AtomicBool::new(false));
    let (ok, failed) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let probe_oid = format!(
        "{PM}.4.1.{}.{}",
        column_of("PortXmitPkts"),
        index(s.node("S0").guid)
    );
    let th = prober(
        s.snmpd.target(),
        probe_oid,
        Arc::clone(&stop),
        Arc::clone(&ok),
        Arc::clone(&failed),
    );

    let before = xmit(&s);
    s.sim.console(&format!("Unlink \"{victim}\""));
    let took = s.wait_rows(Duration::from_secs(15), |rows| {
        rows.iter().all(|g| !gone.contains(g))
    });
    let limit = SWEEP_S * f64::from(UNREACHABLE_AFTER + 2);
    assert!(
        took.as_secs_f64() <= limit,
        "rows went away after {took:?} (limit {limit} s)"
    );
    let rows = s.rows();
    let expected: BTreeSet<u64> = all.difference(&gone).copied().collect();
    assert_eq!(rows, expected, "only the unlinked switch and its hosts go");
    let limit = Duration::from_secs_f64(SWEEP_S * 4.0);
    let moved = common::poll(limit, Duration::from_millis(200), || {
        Some(xmit(&s)).filter(|after| *after > before)
    });
    assert!(
        moved.is_some(),
        "{watch:?} stopped updating: still {before} after {limit:?}"
    );

    // The links come back up in state Init: as on a real fabric, a subnet
    // manager sweep makes them Active again (with the same LIDs).
    s.sim.console(&format!("ReLink \"{victim}\""));
    s.sim.run_opensm();
    let back = s.wait_rows(Duration::from_secs(20), |rows| rows == &all);
    stop.store(true, Ordering::Relaxed);
    let errors = th.join().expect("prober");
    assert!(ok.load(Ordering::Relaxed) > 5, "too few probes");
    assert_eq!(
        failed.load(Ordering::Relaxed),
        0,
        "SNMP requests failed meanwhile: {errors:?}"
    );
    eprintln!(
        "unlink: rows gone after {took:?}; relink: back after {back:?}; {} SNMP probes ok",
        ok.load(Ordering::Relaxed)
    );
    assert!(s.agent.running(), "agent exited:\n{}", s.log());
}

/// One column of a per-port extension table: (node GUID, port) -> line.
fn port_column(s: &Setup, table: u32, col: u32) -> BTreeMap<(u64, u8), common::WalkLine> {
    let root = format!("{PM}.{table}.1.{col}");
    let out = SnmpTool::new("snmpbulkwalk")
        .args(["-v2c", "-c", "public", "-On", "-Ox", "-t", "3", "-r", "0"])
        .arg(&s.snmpd.target())
        .arg(&root)
        .run();
    assert!(out.status.success(), "walk {root}");
    let prefix: Vec<u32> = root.split('.').map(|x| x.parse().unwrap()).collect();
    parse_walk(&String::from_utf8_lossy(&out.stdout))
        .into_iter()
        .filter_map(|l| {
            let o = l.oid.as_slice().to_vec();
            (o.len() == prefix.len() + 9 && o.starts_with(&prefix)).then(|| {
                let g = guid_of_index(&o[prefix.len()..prefix.len() + 8]);
                ((g, o[prefix.len() + 8] as u8), l)
            })
        })
        .collect()
}

fn hex_bytes(v: &str) -> u64 {
    v.split_whitespace().fold(0u64, |a, b| {
        (a << 8) | u64::from_str_radix(b, 16).expect("hex")
    })
}

const T_PORT: u32 = 6;
const T_HC: u32 = 7;

fn hc_col(t: ibpm_agentx::fabric::hc::Total) -> u32 {
    t.k() as u32 + 1
}

#[test]
fn extension_tables_match_perfquery_and_ibnetdiscover() {
    let mut s = Setup::start(false);

    // Every port ibnetdiscover lists is an active row of pmPortTable with
    // the same peer.
    let state = port_column(&s, T_PORT, 5);
    let peer = port_column(&s, T_PORT, 10);
    let peer_port = port_column(&s, T_PORT, 11);
    let mut links = 0;
    for (g, n) in &s.ib {
        for (p, (rg, rp, _, _)) in &n.ports {
            let k = (*g, *p);
            assert_eq!(state[&k].value, "4", "{} [{p}] active", n.desc);
            assert_eq!(hex_bytes(&peer[&k].value), *rg, "{} [{p}] peer", n.desc);
            assert_eq!(peer_port[&k].value, rp.to_string());
            links += 1;
        }
    }
    assert!(state.len() >= links);

    // pmPortLinkTable: what ibsim's PortInfo says each linked port
    // supports (every width; SDR to QDR), and its links run at what both
    // ends enable (ibsim trains them so): normal(1).
    const T_LINK: u32 = 22;
    let text = |v: &str| {
        let bytes: Vec<u8> = v
            .split_whitespace()
            .map(|b| u8::from_str_radix(b, 16).expect("hex"))
            .collect();
        String::from_utf8(bytes).expect("text")
    };
    let widths = port_column(&s, T_LINK, 1);
    let speeds = port_column(&s, T_LINK, 3);
    let degraded = port_column(&s, T_LINK, 7);
    for (g, n) in &s.ib {
        for p in n.ports.keys() {
            let k = (*g, *p);
            assert_eq!(
                text(&widths[&k].value),
                "1x,2x,4x,8x,12x",
                "{} [{p}]",
                n.desc
            );
            assert_eq!(text(&speeds[&k].value), "SDR,DDR,QDR", "{} [{p}]", n.desc);
            assert_eq!(degraded[&k].value, "1", "{} [{p}] normal", n.desc);
        }
    }

    // S0's enhanced port 0 is a row of its own: active, no peer, its
    // counters those perfquery reads of port 0. The other switches' base
    // port 0 is not a row.
    let s0 = s.node("S0").guid;
    assert_eq!(state[&(s0, 0)].value, "4", "S0 port 0 active");
    assert_eq!(hex_bytes(&peer[&(s0, 0)].value), 0, "port 0 has no peer");
    let s1 = s.node("S1").guid;
    assert!(!state.contains_key(&(s1, 0)), "a base port 0 is no row");
    s.sim
        .console("PerformanceSet \"S0\"[0] PortCounters.SymbolErrorCounter=9");
    let s0_lid = s.lid("S0", 0).to_string();
    let pq0 = perfquery_fields(&s.sim.tool("perfquery", &[&s0_lid, "0"]).stdout);
    assert_eq!(pq0["SymbolErrorCounter"], 9, "perfquery reads port 0");
    wait_for(
        Duration::from_secs(10),
        "S0 port 0 SymbolErrors = 9",
        || {
            port_column(
                &s,
                T_HC,
                hc_col(ibpm_agentx::fabric::hc::Total::SymbolErrors),
            )
            .get(&(s0, 0))
            .is_some_and(|l| l.value == "9")
        },
    );

    // An error counter preset with PerformanceSet shows in the 64-bit table.
    s.sim
        .console("PerformanceSet \"L3\"[5] PortCounters.SymbolErrorCounter=7");
    let l3 = s.node("L3").guid;
    let sym = |s: &Setup| -> u64 {
        port_column(
            s,
            T_HC,
            hc_col(ibpm_agentx::fabric::hc::Total::SymbolErrors),
        )[&(l3, 5)]
            .value
            .parse()
            .unwrap()
    };
    wait_for(Duration::from_secs(10), "64-bit SymbolErrors = 7", || {
        sym(&s) >= 7
    });

    // Octets are 4 x the words perfquery -x reads, within the traffic the
    // reads themselves cause.
    let l0 = s.node("L0").guid;
    let out_octets = |s: &Setup| -> u64 {
        port_column(s, T_HC, hc_col(ibpm_agentx::fabric::hc::Total::OutOctets))[&(l0, 1)]
            .value
            .parse()
            .unwrap()
    };
    let lid = s.lid("L0", 1).to_string();
    let before = out_octets(&s);
    let pq = perfquery_fields(&s.sim.tool("perfquery", &["-x", &lid, "1"]).stdout)["PortXmitData"];
    let limit = Duration::from_secs_f64(SWEEP_S * 4.0);
    let after = common::poll(limit, Duration::from_millis(200), || {
        Some(out_octets(&s)).filter(|after| *after >= 4 * pq)
    });
    assert!(
        before <= 4 * pq && after.is_some(),
        "pmPortHCOutOctets {before}, then {after:?} within {limit:?}, perfquery -x PortXmitData {pq} words"
    );
    let after = after.unwrap_or_default();

    // An out-of-band clear: the 64-bit counter keeps counting, and the
    // row's discontinuity time moves.
    let disc = |s: &Setup| {
        port_column(
            s,
            T_HC,
            hc_col(ibpm_agentx::fabric::hc::Total::XmitWait) + 1,
        )[&(l0, 1)]
            .value
            .clone()
    };
    let disc_before = disc(&s);
    s.sim.tool("perfquery", &["-x", "-R", &lid, "1"]);
    s.sim.tool("perfquery", &["-R", &lid, "1"]);
    wait_for(
        Duration::from_secs(10),
        "the discontinuity time to move",
        || disc(&s) != disc_before,
    );
    assert!(out_octets(&s) >= after, "the 64-bit total went backwards");

    // The optional attributes ibsim answers read as perfquery reads them
    // (-E PortRcvErrorDetails, -D PortXmitDiscardDetails, --flowctlcounters
    // PortFlowCtlCounters).
    for (table, flag, cols) in [
        (
            10u32,
            "-E",
            &["PortLocalPhysicalErrors", "PortMalformedPktErrors"][..],
        ),
        (
            11,
            "-D",
            &["PortInactiveDiscards", "PortNeighborMTUDiscards"][..],
        ),
        (
            13,
            "--flowctlcounters",
            &["PortXmitFlowPkts", "PortRcvFlowPkts"][..],
        ),
    ] {
        let pq = perfquery_fields(&s.sim.tool("perfquery", &[flag, &lid, "1"]).stdout);
        for (i, name) in cols.iter().enumerate() {
            let got = port_column(&s, table, i as u32 + 1);
            let v: u64 = got[&(l0, 1)].value.parse().unwrap();
            assert_eq!(Some(&v), pq.get(*name), "{name}: perfquery {flag} {pq:?}");
        }
    }

    // The per-VL attributes: pmPortVLTable's VL rows as perfquery reads
    // them.
    for (col, flag, field) in [
        (2u32, "--vloppackets", "PortVLOpPackets"),
        (5, "--vlxmitcounters", "PortVLXmitWait"),
    ] {
        let pq = perfquery_fields(&s.sim.tool("perfquery", &[flag, &lid, "1"]).stdout);
        let root = format!("{PM}.14.1.{col}");
        let out = SnmpTool::new("snmpbulkwalk")
            .args(["-v2c", "-c", "public", "-On", "-t", "3", "-r", "0"])
            .arg(&s.snmpd.target())
            .arg(&root)
            .run();
        let rows = parse_walk(&String::from_utf8_lossy(&out.stdout));
        let prefix: Vec<u32> = format!("{root}.{}.1", index(l0))
            .split('.')
            .map(|x| x.parse().unwrap())
            .collect();
        let mut vls = 0;
        for l in rows.iter().filter(|l| l.oid.starts_with(&prefix)) {
            let vl = l.oid.as_slice()[prefix.len()];
            let name = format!("{field}{vl}");
            let v: u64 = l.value.parse().unwrap();
            assert_eq!(Some(&v), pq.get(&name), "{name}: perfquery {flag} {pq:?}");
            vls += 1;
        }
        assert_eq!(vls, 16, "{field}: 16 VL rows of L0[1]");
    }

    // Unlink a leaf's host link: the leaf's port goes down within the light
    // sweeps' interval (rediscovery is minutes away).
    let (host, _, _, _) = s.node("L1").ports[&1].clone();
    let host_desc = s.ib[&host].desc.clone();
    s.sim.console(&format!("Unlink \"{host_desc}\""));
    let l1 = s.node("L1").guid;
    let t0 = Instant::now();
    wait_for(
        Duration::from_secs(PORTINFO_S * 3 + 3),
        "L1[1] down through snmpd",
        || port_column(&s, T_PORT, 5)[&(l1, 1)].value == "1",
    );
    eprintln!(
        "{links} links checked against ibnetdiscover; L1[1] down after {:?}",
        t0.elapsed()
    );
    assert!(s.agent.running(), "agent exited:\n{}", s.log());
}
