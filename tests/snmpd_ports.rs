//! The extension tables through a private snmpd, read by name as an
//! operator reads them: every port of the simulated fabric is a row of
//! pmPortTable with its peer and state, a row of pmPortCounters64Table
//! with octets, and of pmPortRateTable with the simulated traffic's rate;
//! a link taken down shows as down on both ends within the rediscovery
//! interval and errors added on a port show in its 64-bit counters.

mod common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::{ChildGuard, PrivateSnmpd, SnmpTool, free_udp_port, mibpath, unrelated_mib_warning};
use ibpm_agentx::app::{self, Backend, Running, Shutdown};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{Fabric, Guid, topology};
use ibpm_agentx::rig;
use ibpm_agentx::sim::{ManualClock, SimClock, SimFabric, SimOptions, traffic};

struct Setup {
    snmpd: PrivateSnmpd,
    sim: SimFabric,
    agent: Option<Running>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(a) = self.agent.take() {
            a.stop();
        }
        self.snmpd.stop();
    }
}

fn config(snmpd: &PrivateSnmpd, extra: &str) -> Config {
    let text = format!(
        "[agentx]\nsocket = \"{}\"\nping_interval = 1\nreconnect_max = 1\n\
         [fabric]\nsweep_interval = 1\nrediscover_interval = 1\n[set]\nallow = true\n{extra}",
        snmpd.agentx_addr()
    );
    Config::parse(&text, "test.toml").expect("test configuration")
}

impl Setup {
    fn start() -> Setup {
        Setup::start_with(topology::default_fabric(), "")
    }

    /// The agent on `fabric`, with `extra` configuration appended.
    fn start_with(fabric: Fabric, extra: &str) -> Setup {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed: run scripts/install-deps"
        );
        let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
        let cfg = config(&snmpd, extra);
        let sim = SimFabric::new(fabric, app::sim_options(&cfg));
        let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");
        let s = Setup {
            snmpd,
            sim,
            agent: Some(agent),
        };
        // Three sweeps: every port has been read twice, so rates exist.
        s.wait_until("3 sweeps", Duration::from_secs(30), |s| {
            s.get("IB-PM-MIB::pmAgentSweeps.0")
                .and_then(|v| v.parse::<u64>().ok())
                .is_some_and(|n| n >= 3)
        });
        s
    }

    fn wait_until(&self, what: &str, limit: Duration, mut f: impl FnMut(&Setup) -> bool) {
        common::wait_until(what, limit, Duration::from_millis(200), || f(self));
    }

    /// One value by name, printed bare (`-Oqv`).
    fn get(&self, name: &str) -> Option<String> {
        let out = SnmpTool::new("snmpget")
            .mibs(true)
            .args(["-v2c", "-c", "public", "-Oqv", &self.snmpd.target(), name])
            .run();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.contains("No Such")).then_some(text)
    }

    /// `snmptable` of `table` as an operator types it; rows keyed by the
    /// index column, cells by column name.
    fn table(&self, table: &str) -> BTreeMap<String, BTreeMap<String, String>> {
        let out = SnmpTool::new("snmptable")
            .mibs(true)
            .args([
                "-v2c",
                "-c",
                "public",
                "-OX",
                "-Ci",
                "-Cf",
                "|",
                &self.snmpd.target(),
                &format!("IB-PM-MIB::{table}"),
            ])
            .run();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(out.status.success(), "snmptable {table}: {stdout}{stderr}");
        for l in stderr.lines() {
            assert!(unrelated_mib_warning(l), "snmptable {table}: {l}");
        }
        let mut lines = stdout.lines().filter(|l| l.contains('|'));
        let header: Vec<String> = lines
            .next()
            .unwrap_or_else(|| panic!("no header: {stdout}"))
            .split('|')
            .map(str::to_string)
            .collect();
        lines
            .map(|l| {
                let cells: Vec<&str> = l.split('|').collect();
                let row: BTreeMap<String, String> = header
                    .iter()
                    .cloned()
                    .zip(cells.iter().map(|c| c.trim_matches('"').to_string()))
                    .collect();
                (cells[0].to_string(), row)
            })
            .collect()
    }
}

/// The row key `snmptable -OX` prints for (node GUID, port) with the
/// PmGuid display hint: `[0:0:20:0][5]`.
fn key(guid: Guid, port: u8) -> String {
    format!("[{}][{port}]", hint(guid))
}

/// A GUID as net-snmp shows it with DISPLAY-HINT "2x:".
fn hint(g: Guid) -> String {
    common::guid_hint(g.0)
}

/// A number shown with its UNITS (`8000 Mb/s`).
fn num(cell: &str) -> f64 {
    cell.split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("not a number: {cell:?}"))
}

/// The node whose description starts with `prefix`.
fn node<'a>(f: &'a Fabric, prefix: &str) -> &'a ibpm_agentx::ib::Node {
    f.nodes
        .iter()
        .find(|n| n.id.description.starts_with(prefix))
        .unwrap_or_else(|| panic!("no node {prefix}"))
}

/// `IB-PM-MIB::<column>.<GUID as 8 numbers>.<port>`.
fn instance(col: &str, g: Guid, port: u8) -> String {
    let idx: Vec<String> = g.octets().iter().map(|b| b.to_string()).collect();
    format!("IB-PM-MIB::{col}.{}.{port}", idx.join("."))
}

fn ports(f: &Fabric) -> usize {
    f.nodes.iter().map(|n| n.ports.len()).sum()
}

#[test]
fn every_port_is_a_row_with_peer_state_octets_and_rate() {
    let s = Setup::start();
    let fabric = s.sim.fabric();
    let port_table = s.table("pmPortTable");
    assert_eq!(port_table.len(), ports(&fabric), "one row per port");
    for n in &fabric.nodes {
        for p in &n.ports {
            let row = &port_table[&key(n.id.guid, p.num)];
            assert_eq!(row["pmPortNodeDescription"], *n.id.description);
            match p.remote() {
                Some((g, q)) => {
                    assert_eq!(row["pmPortState"], "active", "{row:?}");
                    assert_eq!(row["pmPortPhysState"], "linkUp");
                    assert_eq!(row["pmPortPeerNodeGuid"], hint(g));
                    assert_eq!(row["pmPortPeerPortNum"], q.to_string());
                    let peer = fabric.node(g).unwrap();
                    assert_eq!(row["pmPortPeerDescription"], *peer.id.description);
                    assert_eq!(num(&row["pmPortRateMbps"]), p.rate_mbps().unwrap() as f64);
                }
                None => {
                    assert_eq!(row["pmPortState"], "down", "{row:?}");
                    assert_eq!(num(&row["pmPortRateMbps"]), 0.0);
                    assert_eq!(row["pmPortLinkWidthActive"], "unknown");
                }
            }
        }
    }
    // The 1x link of the default fabric trained narrower.
    let node12 = node(&fabric, "node12");
    assert_eq!(
        port_table[&key(node12.id.guid, 1)]["pmPortLinkWidthActive"],
        "width1x"
    );

    // 64-bit octets: 4 x the PMA's PortXmitData, read before and after.
    let hc = s.table("pmPortCounters64Table");
    assert_eq!(hc.len(), ports(&fabric));
    let rates = s.table("pmPortRateTable");
    // Expected rates from a reference simulator on a manual clock: the
    // same topology and seed draw the same traffic.
    let clock = ManualClock::new();
    let reference = SimFabric::new(
        topology::default_fabric(),
        SimOptions {
            seed: app::sim_options(&config(&s.snmpd, "")).seed,
            traffic: true,
            clock: SimClock::Manual(clock.clone()),
            ..Default::default()
        },
    );
    let rf = reference.fabric();
    let read = |n: &ibpm_agentx::ib::Node, p: u8| {
        rig::port_counters_extended(&reference, n.pma_lid(p), p).xmit_data
    };
    let mut checked = 0;
    for n in &rf.nodes {
        for p in n.ports.iter().filter(|p| p.remote().is_some()) {
            let t0 = read(n, p.num);
            clock.advance(Duration::from_secs(100));
            let t1 = read(n, p.num);
            let want_bps = (t1 - t0) as f64 * 4.0 * 8.0 / 100.0;
            let row = &rates[&key(n.id.guid, p.num)];
            let got = num(&row["pmPortRateOutBitsPerSec"]);
            assert!(
                (got - want_bps).abs() <= want_bps * 0.05,
                "{}[{}]: {got} b/s, simulated {want_bps}",
                n.id.description,
                p.num
            );
            let util = num(&row["pmPortRateOutUtilization"]);
            let cap = p.rate_mbps().unwrap() as f64 * 1e6;
            assert!(
                (util / 100.0 - want_bps / cap * 100.0).abs()
                    <= 0.05 * (want_bps / cap * 100.0) + 0.01,
                "utilisation {util} hundredths of a percent"
            );
            let out = num(&hc[&key(n.id.guid, p.num)]["pmPortHCOutOctets"]);
            assert!(out > 0.0);
            checked += 1;
        }
    }
    assert!(checked >= 40, "{checked} cabled ports");
}

#[test]
fn a_link_down_and_an_error_burst_show_within_the_intervals() {
    let s = Setup::start();
    let fabric = s.sim.fabric();
    let leaf = node(&fabric, "leaf1");
    let up = leaf.port(13).unwrap();
    let (spine, sp) = up.remote().unwrap();
    let by_index = |col: &str, g: Guid, p: u8| s.get(&instance(col, g, p));
    assert_eq!(
        by_index("pmPortState", leaf.id.guid, 13).as_deref(),
        Some("active")
    );
    let sym_before = num(&by_index("pmPortHCSymbolErrors", leaf.id.guid, 13).unwrap());
    let disc_before = by_index("pmPortCounterDiscontinuityTime", leaf.id.guid, 13).unwrap();

    assert!(s.sim.set_link(leaf.id.guid, 13, false));
    assert!(
        s.sim
            .add_errors(leaf.id.guid, 13, traffic::q::SYMBOL_ERRORS, 500)
    );
    let t0 = Instant::now();
    s.wait_until("both ends down", Duration::from_secs(10), |_| {
        by_index("pmPortState", leaf.id.guid, 13).as_deref() == Some("down")
            && by_index("pmPortState", spine, sp).as_deref() == Some("down")
    });
    eprintln!("link down seen through snmpd after {:?}", t0.elapsed());
    s.wait_until("500 symbol errors", Duration::from_secs(10), |_| {
        by_index("pmPortHCSymbolErrors", leaf.id.guid, 13)
            .is_some_and(|v| num(&v) >= sym_before + 500.0)
    });
    assert_eq!(
        by_index("pmPortLinkWidthActive", leaf.id.guid, 13).as_deref(),
        Some("unknown")
    );
    let downed = num(&by_index("pmPortHCLinkDowned", spine, sp).unwrap());
    assert!(downed >= 1.0);
    // No discontinuity: the counters only went up.
    assert_eq!(
        by_index("pmPortCounterDiscontinuityTime", leaf.id.guid, 13).unwrap(),
        disc_before
    );

    assert!(s.sim.set_link(leaf.id.guid, 13, true));
    s.wait_until("back up", Duration::from_secs(10), |_| {
        by_index("pmPortState", leaf.id.guid, 13).as_deref() == Some("active")
            && by_index("pmPortLinkSpeedActive", spine, sp).as_deref() == Some("qdr")
    });
}

#[test]
fn a_per_port_clear_clears_the_pma_and_the_64_bit_counter_keeps_counting() {
    let s = Setup::start();
    let fabric = s.sim.fabric();
    let leaf = node(&fabric, "leaf2");
    let oid = |col: &str| instance(col, leaf.id.guid, 14);
    let set = |ty: &str, v: &str| {
        SnmpTool::new("snmpset")
            .mibs(true)
            .args([
                "-v2c",
                "-c",
                "private",
                &s.snmpd.target(),
                &oid("pmPortClearCounters"),
                ty,
                v,
            ])
            .run()
    };
    assert!(
        s.sim
            .add_errors(leaf.id.guid, 14, traffic::q::SYMBOL_ERRORS, 300)
    );
    s.wait_until(
        "300 symbol errors in the 64-bit table",
        Duration::from_secs(10),
        |s| {
            s.get(&oid("pmPortHCSymbolErrors"))
                .is_some_and(|v| num(&v) >= 300.0)
        },
    );
    let hc_before = num(&s.get(&oid("pmPortHCSymbolErrors")).unwrap());
    let disc_before = s.get(&oid("pmPortCounterDiscontinuityTime")).unwrap();

    // A wrong type and a mask past bit 16 are refused; nothing is cleared.
    for (ty, v) in [("i", "1"), ("u", "131072")] {
        assert!(!set(ty, v).status.success(), "{ty} {v} accepted");
    }
    let pc = rig::port_counters(&s.sim, leaf.pma_lid(14), 14);
    assert!(pc.symbol_errors >= 300);

    // Bit 0: SymbolErrorCounter.
    let out = set("u", "1");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let pc = rig::port_counters(&s.sim, leaf.pma_lid(14), 14);
    assert!(
        pc.symbol_errors < 300,
        "cleared on the PMA: {}",
        pc.symbol_errors
    );
    s.wait_until(
        "the discontinuity time to move",
        Duration::from_secs(10),
        |s| {
            s.get(&oid("pmPortCounterDiscontinuityTime"))
                .is_some_and(|v| v != disc_before)
        },
    );
    let hc_after = num(&s.get(&oid("pmPortHCSymbolErrors")).unwrap());
    assert!(hc_after >= hc_before, "{hc_before} -> {hc_after}");
    assert_eq!(s.get(&oid("pmPortClearCounters")).as_deref(), Some("0"));
}

/// The generator of Prometheus' snmp_exporter (Debian's 0.21) and the
/// exporter itself, as an NMS would use them.
const GENERATOR: &str = "/usr/bin/prometheus-snmp-generator";
const EXPORTER: &str = "/usr/bin/prometheus-snmp-exporter";

/// One HTTP/1.0 GET on loopback: (status code, body).
fn http_get(port: u16, path: &str) -> std::io::Result<(u16, String)> {
    use std::io::{Read, Write};
    let mut c = std::net::TcpStream::connect(("127.0.0.1", port))?;
    c.set_read_timeout(Some(Duration::from_secs(30)))?;
    write!(c, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")?;
    let mut text = String::new();
    c.read_to_string(&mut text)?;
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map_or("", |b| b.1).to_string();
    Ok((code, body))
}

/// A module generated from the MIB scrapes every table: the GUID index is
/// seen as 8 octets (PmGuid), every port is a series.
#[test]
fn an_snmp_exporter_module_generated_from_the_mib_scrapes_every_table() {
    assert!(
        std::path::Path::new(GENERATOR).exists() && std::path::Path::new(EXPORTER).exists(),
        "prometheus-snmp-exporter is needed: run scripts/install-deps"
    );
    let s = Setup::start();
    let dir = tempfile::tempdir().unwrap();
    // Every table the agent serves, as the agent declares them.
    let tables: Vec<&str> = ibpm_agentx::mib::tables::TABLES
        .iter()
        .map(|t| t.name)
        .collect();
    assert!(tables.len() >= 20, "{tables:?}");
    let walk: String = tables.iter().map(|t| format!("      - {t}\n")).collect();
    std::fs::write(
        dir.path().join("generator.yml"),
        format!("modules:\n  ibpm:\n    version: 2\n    auth:\n      community: public\n    walk:\n{walk}"),
    )
    .unwrap();
    // IF-MIB in the IETF directory imports IANAifType-MIB: give the
    // generator Debian's IANA directory too, so that it parses cleanly.
    let iana = mibpath::ietf_mib_dir().with_file_name("iana");
    let mibdirs = format!("{}:{}", mibpath::mib_search_path(), iana.display());
    let out = std::process::Command::new(GENERATOR)
        .args(["--fail-on-parse-errors", "generate"])
        .current_dir(dir.path())
        .env("MIBDIRS", mibdirs)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "generator: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let snmp_yml = std::fs::read_to_string(dir.path().join("snmp.yml")).unwrap();
    assert!(
        snmp_yml.contains("fixed_size: 8"),
        "the GUID index is fixed-size"
    );

    let port = free_udp_port(); // a free number; the exporter listens on TCP
    let child = std::process::Command::new(EXPORTER)
        .arg(format!(
            "--config.file={}",
            dir.path().join("snmp.yml").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(dir.path().join("exporter.log")).unwrap())
        .spawn()
        .unwrap();
    let _exporter = ChildGuard::new("prometheus-snmp-exporter", child);
    let path = format!("/snmp?module=ibpm&target={}", s.snmpd.target());
    let start = Instant::now();
    let (code, body) = loop {
        match http_get(port, &path) {
            Ok(r) => break r,
            Err(e) if start.elapsed() < Duration::from_secs(10) => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("exporter: {e}"),
        }
    };
    assert_eq!(code, 200, "scrape failed: {body}");
    let fabric = s.sim.fabric();
    let leaf = node(&fabric, "leaf1");
    let label = format!("pmNodeGuid=\"0x{:016X}\",pmPortNum=\"13\"", leaf.id.guid.0);
    for metric in [
        "pmPortState",
        "pmPortHCOutOctets",
        "pmPortRateOutBitsPerSec",
        "pmPortPktRcvFECN",
        "pmPortFecMode",
    ] {
        let line = body
            .lines()
            .find(|l| l.starts_with(&format!("{metric}{{")) && l.contains(&label))
            .unwrap_or_else(|| panic!("no {metric}{{{label}}} in the scrape"));
        assert!(!line.contains("pmNodeGuid=\"\""), "{line}");
    }
    let states = body
        .lines()
        .filter(|l| l.starts_with("pmPortState{"))
        .count();
    assert_eq!(states, ports(&fabric), "one pmPortState series per port");
    assert!(
        body.lines().any(|l| l.starts_with("pmAgentSweeps ")),
        "the scalars"
    );
    // A third index (SL, lane) is a label of its own.
    let sl = format!("{label},pmSl=\"0\"");
    assert!(
        body.lines()
            .any(|l| l.starts_with("pmPortXmitDataSL{") && l.contains(&sl)),
        "no pmPortXmitDataSL{{{sl}}}"
    );
    assert!(
        body.lines()
            .any(|l| l.starts_with("pmSampleResultExtWidth{")),
        "the 64-bit sample results"
    );
}

/// The optional attributes' tables are sparse: a row where the node
/// answers the attribute (the simulated switches answer
/// PortXmitDiscardDetails, the channel adapters do not).
#[test]
fn optional_attribute_tables_have_rows_where_nodes_answer() {
    let s = Setup::start();
    let fabric = s.sim.fabric();
    let switch_ports: usize = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == ibpm_agentx::ib::NodeType::Switch)
        .map(|n| n.ports.len())
        .sum();
    let rcv = s.table("pmPortRcvErrorDetailsTable");
    assert_eq!(rcv.len(), ports(&fabric), "every port's node answers 0x15");
    let hc = s.table("pmPortCounters64Table");
    for (k, row) in &rcv {
        // Every modelled receive error is a local physical error.
        assert_eq!(
            num(&row["pmPortLocalPhysicalErrors"]),
            num(&hc[k]["pmPortHCRcvErrors"]),
            "{k}"
        );
    }
    let xmit = s.table("pmPortXmitDiscardDetailsTable");
    assert_eq!(xmit.len(), switch_ports, "switch ports only");
    let op = s.table("pmPortOpRcvCountersTable");
    assert_eq!(op.len(), ports(&fabric));
    let node12 = node(&fabric, "node12");
    assert!(!xmit.contains_key(&key(node12.id.guid, 1)));
    assert!(op.contains_key(&key(node12.id.guid, 1)));

    // pmPortVLTable: 16 rows per port; all simulated traffic is on VL0.
    let vl = s.table("pmPortVLTable");
    assert_eq!(vl.len(), 16 * ports(&fabric));
    for n in &fabric.nodes {
        for p in &n.ports {
            let wait = num(&hc[&key(n.id.guid, p.num)]["pmPortHCXmitWait"]);
            let vl0 = num(&vl[&format!("{}[0]", key(n.id.guid, p.num))]["pmPortVLXmitWait"]);
            if wait == 0.0 {
                assert_eq!(vl0, 0.0);
            } else if wait >= 65535.0 {
                assert_eq!(vl0, 65535.0, "held at the 16-bit maximum");
            }
            for v in 1..16 {
                let row = &vl[&format!("{}[{v}]", key(n.id.guid, p.num))];
                assert_eq!(num(&row["pmPortVLXmitWait"]), 0.0);
                assert_eq!(num(&row["pmPortVLOpPackets"]), 0.0);
                // 0x1B is not answered: the column has no instance.
                assert!(
                    !has_value(&row["pmPortVLXmitFlowCtlUpdateErrors"]),
                    "{row:?}"
                );
            }
            // SwPortVLCongestion on switch ports only; PortVLXmitTimeCong
            // has VL0..14.
            let is_switch = n.id.node_type == ibpm_agentx::ib::NodeType::Switch;
            let vl0 = &vl[&format!("{}[0]", key(n.id.guid, p.num))];
            assert_eq!(has_value(&vl0["pmSwPortVLCongestion"]), is_switch);
            assert!(has_value(&vl0["pmPortVLXmitTimeCong"]));
            let vl15 = &vl[&format!("{}[15]", key(n.id.guid, p.num))];
            assert!(!has_value(&vl15["pmPortVLXmitTimeCong"]), "{vl15:?}");
        }
    }

    // The congestion-control attributes: a row per port; FECN arrives where
    // the peer's transmitter is congested (waits), time in congestion where
    // the port's own is; SL0 carries all traffic.
    let rcv_cc = s.table("pmPortRcvConCtrlTable");
    let xmit_cc = s.table("pmPortXmitConCtrlTable");
    let sl = s.table("pmPortSLTable");
    assert_eq!(rcv_cc.len(), ports(&fabric));
    assert_eq!(xmit_cc.len(), ports(&fabric));
    assert_eq!(sl.len(), 16 * ports(&fabric));
    let (mut congested, mut cabled) = (0, 0);
    for n in &fabric.nodes {
        for p in &n.ports {
            let k = key(n.id.guid, p.num);
            let Some((pg, pp)) = p.remote() else { continue };
            if p.state != Some(ibpm_agentx::ib::PortState::Active) {
                continue;
            }
            cabled += 1;
            let own_wait = num(&hc[&k]["pmPortHCXmitWait"]) > 0.0;
            let peer_wait = num(&hc[&key(pg, pp)]["pmPortHCXmitWait"]) > 0.0;
            assert_eq!(num(&rcv_cc[&k]["pmPortPktRcvFECN"]) > 0.0, peer_wait, "{k}");
            assert_eq!(
                num(&xmit_cc[&k]["pmPortXmitTimeCong"]) > 0.0,
                own_wait,
                "{k}"
            );
            congested += usize::from(own_wait);
            let sl0 = &sl[&format!("{k}[0]")];
            assert!(num(&sl0["pmPortXmitDataSL"]) > 0.0, "{k}: {sl0:?}");
            for v in 1..16 {
                let row = &sl[&format!("{k}[{v}]")];
                for c in [
                    "pmPortSLRcvFECN",
                    "pmPortSLRcvBECN",
                    "pmPortXmitDataSL",
                    "pmPortRcvDataSL",
                ] {
                    assert_eq!(num(&row[c]), 0.0, "{k}[{v}] {c}");
                }
            }
        }
    }
    assert!(cabled >= 40 && congested > 0 && congested < cabled);
}

/// A cell of `snmptable` that holds a value (an absent instance prints
/// as `?`).
fn has_value(cell: &str) -> bool {
    cell.chars().any(|c| c.is_ascii_digit())
}

/// PortExtendedSpeedsCounters by FEC mode: an HDR link runs RS-FEC (port
/// totals, corrected symbols per lane), an FDR link FireCode (block
/// counts per lane, summed in pmPortFecTable), a QDR link no FEC (error
/// detections only); errors added on the (frozen) simulated ports show
/// exactly.
#[test]
fn fec_counters_follow_each_links_fec_mode() {
    let text = "Switch 4 \"S-1\" # \"sw\" lid 1\n\
                [1] \"H-1\"[1] # lid 2 4xHDR\n\
                [2] \"H-2\"[1] # lid 3 4xFDR\n\
                [3] \"H-3\"[1] # lid 4 4xQDR\n\n\
                Hca 1 \"H-1\"\n[1] \"S-1\"[1] # lid 1 4xHDR\n\n\
                Hca 1 \"H-2\"\n[1] \"S-1\"[2] # lid 1 4xFDR\n\n\
                Hca 1 \"H-3\"\n[1] \"S-1\"[3] # lid 1 4xQDR\n";
    let fabric = topology::parse(text).expect("topology");
    let sw = node(&fabric, "sw").id.guid;
    let s = Setup::start_with(fabric, "[sim]\ntraffic = false\n");
    for port in 1..=3 {
        assert!(
            s.sim
                .add_errors(sw, port, traffic::q::SYMBOL_ERRORS, 1000 + u64::from(port))
        );
        assert!(s.sim.add_errors(sw, port, traffic::q::RCV_ERRORS, 7));
    }
    s.wait_until("the errors swept", Duration::from_secs(10), |s| {
        s.table("pmPortFecTable")
            .get(&key(sw, 3))
            .is_some_and(|r| num(&r["pmPortSyncHeaderErrors"]) == 0.0)
            && s.table("pmPortLaneTable")
                .get(&format!("{}[0]", key(sw, 3)))
                .is_some_and(|r| num(&r["pmPortLaneErrorDetections"]) > 0.0)
    });
    let fec = s.table("pmPortFecTable");
    let lanes = s.table("pmPortLaneTable");
    let lane_sum = |port: u8, col: &str| -> f64 {
        (0..12)
            .map(|l| &lanes[&format!("{}[{l}]", key(sw, port))][col])
            .filter(|c| has_value(c))
            .map(|c| num(c))
            .sum()
    };
    // HDR: RS-FEC layout.
    let hdr = &fec[&key(sw, 1)];
    assert_eq!(hdr["pmPortFecMode"], "rsfec", "{hdr:?}");
    assert_eq!(num(&hdr["pmPortFECCorrectableBlocks"]), 1001.0);
    assert_eq!(num(&hdr["pmPortFECUncorrectableBlocks"]), 7.0);
    assert_eq!(num(&hdr["pmPortFECCorrectedSymbols"]), 2002.0);
    assert_eq!(lane_sum(1, "pmPortLaneFECCorrectableSymbols"), 2002.0);
    let l0 = &lanes[&format!("{}[0]", key(sw, 1))];
    assert!(!has_value(&l0["pmPortLaneFECCorrectableBlocks"]), "{l0:?}");
    // FDR: FireCode, the layout without RS-FEC.
    let fdr = &fec[&key(sw, 2)];
    assert_eq!(fdr["pmPortFecMode"], "fireCode", "{fdr:?}");
    assert_eq!(num(&fdr["pmPortFECCorrectableBlocks"]), 1002.0);
    assert_eq!(num(&fdr["pmPortFECUncorrectableBlocks"]), 7.0);
    assert!(!has_value(&fdr["pmPortFECCorrectedSymbols"]), "{fdr:?}");
    assert_eq!(lane_sum(2, "pmPortLaneFECCorrectableBlocks"), 1002.0);
    assert_eq!(lane_sum(2, "pmPortLaneErrorDetections"), 1002.0);
    // QDR: no FEC, error detections only.
    let qdr = &fec[&key(sw, 3)];
    assert_eq!(qdr["pmPortFecMode"], "noFEC", "{qdr:?}");
    assert_eq!(num(&qdr["pmPortFECCorrectableBlocks"]), 0.0);
    assert_eq!(lane_sum(3, "pmPortLaneErrorDetections"), 1003.0);
    // 4x links: four lanes carry the counts, lanes 4..11 read 0.
    let l5 = &lanes[&format!("{}[5]", key(sw, 3))];
    assert_eq!(num(&l5["pmPortLaneErrorDetections"]), 0.0);
    // The uncabled port has a row, its FEC mode unknown.
    assert_eq!(fec[&key(sw, 4)]["pmPortFecMode"], "unknown");
}
