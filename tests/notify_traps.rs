//! Notifications end to end on the simulated fabric: the agent hands them
//! to a private snmpd as AgentX Notify PDUs; snmpd sends them to a private
//! snmptrapd as SNMPv2c traps (`trap2sink`) and to another as SNMPv1 traps
//! (`trapsink`, RFC 3584 translation); both log to files that the tests
//! read, as an operator reads them. Without snmpd (`--no-agentx`), the
//! agent sends SNMPv2c traps to the configured sinks itself.

mod common;

use std::time::{Duration, Instant};

use common::{PrivateSnmpd, PrivateSnmptrapd, SnmpTool, v1_traps, v2_traps};
use ibpm_agentx::app::{self, Backend, Running, Shutdown};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{Fabric, Guid, topology};
use ibpm_agentx::pm::mad::{attr, method};
use ibpm_agentx::rig;
use ibpm_agentx::sim::{SimFabric, traffic};

struct Setup {
    v2: PrivateSnmptrapd,
    v1: PrivateSnmptrapd,
    snmpd: Option<PrivateSnmpd>,
    sim: SimFabric,
    agent: Option<Running>,
}

impl Drop for Setup {
    fn drop(&mut self) {
        if let Some(a) = self.agent.take() {
            a.stop();
        }
        if let Some(s) = self.snmpd.as_mut() {
            s.stop();
        }
        self.v1.stop();
        self.v2.stop();
    }
}

/// Sweeps every 0.5 s, a node unreachable after 2 missed sweeps (a silent
/// node costs a sweep 50 ms and one resend, not the default 200 ms and
/// three), the fabric rediscovered every second, thresholds over a 1 s
/// window; XmitWait
/// (which the simulated congested links raise all the time), SymbolBER
/// (which the simulated noisy links, and every error burst, keep above
/// 10^-12) and EffectiveBER (the noisy RS-FEC links' uncorrectable
/// blocks) not watched unless a test says so.
const BASE: &str = "[fabric]\nsweep_interval = 0.5\nunreachable_after = 2\n\
                    rediscover_interval = 1\n\
                    [mad]\ntimeout_ms = 50\nretries = 1\n\
                    [notify]\nwindow = 1\n\
                    [[notify.threshold]]\ncounter = \"XmitWait\"\nrising = 0\n\
                    [[notify.threshold]]\ncounter = \"SymbolBER\"\nrising = 0\n\
                    [[notify.threshold]]\ncounter = \"EffectiveBER\"\nrising = 0\n";

impl Setup {
    /// snmpd with a v2c and a v1 sink, and the agent on `fabric` with the
    /// configuration `BASE` + `extra` (more `[[notify.threshold]]` rules;
    /// `[notify]` keys go into `notify_keys`).
    fn start(fabric: Fabric, notify_keys: &str, extra: &str) -> Setup {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed: run scripts/install-deps"
        );
        let v2 = PrivateSnmptrapd::start().expect("snmptrapd (v2c sink)");
        let v1 = PrivateSnmptrapd::start().expect("snmptrapd (v1 sink)");
        let snmpd = PrivateSnmpd::start_with_conf(&format!(
            "trap2sink {} public\ntrapsink {} public\n",
            v2.sink(),
            v1.sink()
        ))
        .expect("a private snmpd");
        let text = format!(
            "[agentx]\nsocket = \"{}\"\nping_interval = 1\nreconnect_max = 1\n{}",
            snmpd.agentx_addr(),
            BASE.replace("[notify]\n", &format!("[notify]\n{notify_keys}\n"))
        ) + extra;
        let cfg = Config::parse(&text, "test.toml").expect("test configuration");
        let sim = SimFabric::new(fabric, app::sim_options(&cfg));
        let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");
        let s = Setup {
            v2,
            v1,
            snmpd: Some(snmpd),
            sim,
            agent: Some(agent),
        };
        s.wait_sweeps(4);
        s
    }

    fn sweep(&self) -> u64 {
        self.agent.as_ref().unwrap().cache().load().sweep
    }

    /// Waits until the agent has published `n` more sweeps.
    fn wait_sweeps(&self, n: u64) {
        let until = self.sweep() + n;
        wait("sweeps", Duration::from_secs(30), || self.sweep() >= until);
    }

    fn get(&self, name: &str) -> String {
        let out = SnmpTool::new("snmpget")
            .mibs(true)
            .args([
                "-v2c",
                "-c",
                "public",
                "-Oqv",
                &self.snmpd.as_ref().unwrap().target(),
                name,
            ])
            .run();
        assert!(out.status.success(), "snmpget {name}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// A number, without the UNITS net-snmp prints after it.
    fn get_num(&self, name: &str) -> u64 {
        let v = self.get(name);
        v.split_whitespace()
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("{name} = {v}"))
    }
}

fn wait(what: &str, limit: Duration, f: impl FnMut() -> bool) {
    common::wait_until(what, limit, Duration::from_millis(100), f);
}

fn hint(g: Guid) -> String {
    common::guid_hint(g.0)
}

/// The trap lines about `guid` (and `port`).
fn about(lines: Vec<String>, guid: Guid, port: Option<u8>) -> Vec<String> {
    common::traps_about(lines, guid.0, port)
}

fn named(fabric: &Fabric, desc: &str) -> Guid {
    fabric
        .nodes
        .iter()
        .find(|n| n.id.description.starts_with(desc))
        .unwrap_or_else(|| panic!("no node {desc}"))
        .id
        .guid
}

#[test]
fn node_lost_and_found_port_state_and_discontinuity_reach_both_sinks() {
    let s = Setup::start(topology::default_fabric(), "", "");
    let fabric = s.sim.fabric();

    // A node stops answering: exactly one pmNodeLost, nothing per port.
    let node = named(&fabric, "node07");
    s.sim.set_reachable(node, false);
    wait("pmNodeLost", Duration::from_secs(20), || {
        !about(v2_traps(&s.v2.log(), "pmNodeLost"), node, None).is_empty()
    });
    s.wait_sweeps(4);
    let log = s.v2.log();
    let lost = about(v2_traps(&log, "pmNodeLost"), node, None);
    assert_eq!(lost.len(), 1, "{log}");
    assert!(
        lost[0].contains("pmNotifyNodeDescription.0 = STRING: node07"),
        "{}",
        lost[0]
    );
    assert!(about(v2_traps(&log, "pmPortStateChange"), node, None).is_empty());
    // ... and comes back: exactly one pmNodeFound.
    s.sim.set_reachable(node, true);
    wait("pmNodeFound", Duration::from_secs(20), || {
        !about(v2_traps(&s.v2.log(), "pmNodeFound"), node, None).is_empty()
    });
    s.wait_sweeps(3);
    assert_eq!(
        about(v2_traps(&s.v2.log(), "pmNodeFound"), node, None).len(),
        1
    );

    // A link taken down: both ends, active -> down, with their peers.
    let (spine, leaf) = (named(&fabric, "spine1"), named(&fabric, "leaf1"));
    assert!(s.sim.set_link(spine, 1, false));
    wait("pmPortStateChange", Duration::from_secs(20), || {
        let log = s.v2.log();
        let t = v2_traps(&log, "pmPortStateChange");
        !about(t.clone(), spine, Some(1)).is_empty() && !about(t, leaf, Some(13)).is_empty()
    });
    let t = about(v2_traps(&s.v2.log(), "pmPortStateChange"), spine, Some(1));
    assert_eq!(t.len(), 1);
    for want in [
        "pmNotifyOldPortState.0 = INTEGER: active(4)",
        "pmNotifyNewPortState.0 = INTEGER: down(1)",
        &format!("pmNotifyPeerNodeGuid.0 = STRING: {}", hint(leaf)),
        "pmNotifyPeerPortNum.0 = Gauge32: 13",
        "pmNotifyPeerDescription.0 = STRING: leaf1",
    ] {
        assert!(t[0].contains(want), "{want} in {}", t[0]);
    }
    assert!(s.sim.set_link(spine, 1, true));
    wait("back up", Duration::from_secs(20), || {
        about(v2_traps(&s.v2.log(), "pmPortStateChange"), spine, Some(1)).len() == 2
    });

    // A clear by another tool: pmCounterDiscontinuity naming node and port.
    let ca = fabric.node(named(&fabric, "node01")).unwrap().clone();
    let (lid, num) = (ca.ports[0].lid, ca.ports[0].num);
    let data = ibpm_agentx::fabric::mads::port_counters_data(num, 0xFFFF, 0xFF);
    let (st, _) = rig::pma_request(&s.sim, lid, method::SET, attr::PORT_COUNTERS, &data)
        .expect("the simulated PMA answers");
    assert_eq!(st, 0);
    wait("pmCounterDiscontinuity", Duration::from_secs(20), || {
        !about(
            v2_traps(&s.v2.log(), "pmCounterDiscontinuity"),
            ca.id.guid,
            Some(num),
        )
        .is_empty()
    });

    // The SNMPv1 sink got them too, translated to enterprise pm.
    wait("v1 traps", Duration::from_secs(10), || {
        let log = s.v1.log();
        [
            "pmNodeLost",
            "pmNodeFound",
            "pmPortStateChange",
            "pmCounterDiscontinuity",
        ]
        .iter()
        .all(|n| !v1_traps(&log, n).is_empty())
    });
    let v1 = s.v1.log();
    assert_eq!(v1_traps(&v1, "pmNodeLost").len(), 1, "{v1}");
    let sent = s.get_num("IB-PM-MIB::pmAgentNotificationsSent.0");
    assert!(sent >= 5, "{sent}");
    eprintln!("--- v2c sink (trap2sink) ---\n{}", s.v2.log());
    eprintln!("--- v1 sink (trapsink) ---\n{v1}");
}

#[test]
fn an_error_burst_rises_once_and_falls_once() {
    let s = Setup::start(
        topology::default_fabric(),
        "",
        "[[notify.threshold]]\ncounter = \"SymbolErrors\"\nrising = 100\nfalling = 5\n",
    );
    let fabric = s.sim.fabric();
    let leaf = named(&fabric, "leaf2");
    // Three bursts, each read by a sweep of its own.
    for _ in 0..3 {
        assert!(s.sim.add_errors(leaf, 3, traffic::q::SYMBOL_ERRORS, 300));
        s.wait_sweeps(1);
    }
    wait("rising", Duration::from_secs(20), || {
        !about(
            v2_traps(&s.v2.log(), "pmCounterThresholdRising"),
            leaf,
            Some(3),
        )
        .is_empty()
    });
    wait("falling", Duration::from_secs(20), || {
        !about(
            v2_traps(&s.v2.log(), "pmCounterThresholdFalling"),
            leaf,
            Some(3),
        )
        .is_empty()
    });
    s.wait_sweeps(4);
    let log = s.v2.log();
    let rising = about(v2_traps(&log, "pmCounterThresholdRising"), leaf, Some(3));
    let falling = about(v2_traps(&log, "pmCounterThresholdFalling"), leaf, Some(3));
    assert_eq!((rising.len(), falling.len()), (1, 1), "{log}");
    for want in [
        "pmNotifyCounter.0 = STRING: SymbolErrors",
        "pmNotifyThreshold.0 = Gauge32: 100",
        "pmNotifyWindow.0 = Gauge32: 1",
        "pmNotifyNodeDescription.0 = STRING: leaf2",
    ] {
        assert!(rising[0].contains(want), "{want} in {}", rising[0]);
    }
    assert!(
        falling[0].contains("pmNotifyThreshold.0 = Gauge32: 5"),
        "{}",
        falling[0]
    );
    eprintln!("{}\n{}", rising[0], falling[0]);
}

/// A fabric of `switches` unlinked 18-port switches.
/// `n` (even) 18-port switches in pairs, every port of one cabled to the
/// same port of the other: every port's link is up.
fn switches(n: usize) -> Fabric {
    let text: String = (0..n)
        .map(|i| {
            let peer = i ^ 1;
            let links: String = (1..=18)
                .map(|p| format!("[{p}]\t\"sw{peer:02}\"[{p}]\n"))
                .collect();
            format!("Switch\t18 \"sw{i:02}\"\t\t# \"sw{i:02} IB switch\"\n{links}\n")
        })
        .collect();
    topology::parse(&text).expect("generated topology")
}

/// 500 ports crossing at once: the configured number of traps in that
/// sweep, the rest counted in pmAgentNotificationsSuppressed.
#[test]
fn a_storm_is_limited_per_sweep_and_counted() {
    let fabric = switches(28);
    let ports: Vec<(Guid, u8)> = fabric
        .nodes
        .iter()
        .flat_map(|n| n.ports.iter().map(move |p| (n.id.guid, p.num)))
        .take(500)
        .collect();
    assert_eq!(ports.len(), 500);
    let s = Setup::start(fabric, "limit_per_sweep = 20", "");
    let before = s.get_num("IB-PM-MIB::pmAgentNotificationsSuppressed.0");
    assert_eq!(before, 0);
    // Right after a sweep was published (polled every millisecond; the
    // next sweep starts 0.5 s after this one did), so that the next one
    // reads every port after the errors.
    let n = s.sweep();
    let t0 = Instant::now();
    while s.sweep() == n {
        assert!(t0.elapsed() < Duration::from_secs(10), "no sweep");
        std::thread::sleep(Duration::from_millis(1));
    }
    for (g, p) in &ports {
        assert!(s.sim.add_errors(*g, *p, traffic::q::SYMBOL_ERRORS, 1000));
    }
    wait("20 rising", Duration::from_secs(20), || {
        v2_traps(&s.v2.log(), "pmCounterThresholdRising").len() >= 20
    });
    s.wait_sweeps(3);
    let rising = v2_traps(&s.v2.log(), "pmCounterThresholdRising");
    assert_eq!(
        rising.len(),
        20,
        "at most the limit in that sweep, none later"
    );
    let suppressed = s.get_num("IB-PM-MIB::pmAgentNotificationsSuppressed.0");
    assert!(suppressed >= 480, "{suppressed}");
    eprintln!("suppressed after the storm: {suppressed}");
}

/// While snmpd is away, the newest `notify.queue` notifications wait for
/// it and the older ones are dropped and counted.
#[test]
fn notifications_wait_for_snmpd_in_a_bounded_queue() {
    // Without the health verdicts: their notifications (the default
    // fabric has congested and degraded links) would change the count.
    let mut s = Setup::start(
        topology::default_fabric(),
        "queue = 3",
        "[health]\nenabled = false\n",
    );
    let fabric = s.sim.fabric();
    let nodes: Vec<Guid> = ["node07", "node08", "node09", "node10", "node11"]
        .iter()
        .map(|d| named(&fabric, d))
        .collect();
    let figures = |s: &Setup| s.agent.as_ref().unwrap().cache().load().notify;
    let before = figures(&s);
    s.snmpd.as_mut().unwrap().stop();
    let agent = s.agent.as_ref().unwrap();
    wait("the session to notice", Duration::from_secs(10), || {
        !agent.session().unwrap().connected()
    });
    for g in &nodes {
        s.sim.set_reachable(*g, false);
    }
    s.wait_sweeps(4);
    // Five pmNodeLost, and pmSweepOverrun before them when the sweeps
    // waiting for the silent nodes took longer than 0.5 s: the oldest two
    // or three are dropped.
    let away = figures(&s);
    assert_eq!(
        away.sent, before.sent,
        "nothing written while snmpd is away"
    );
    assert!((2..=3).contains(&away.dropped), "{before:?} {away:?}");
    s.snmpd.as_mut().unwrap().restart().expect("snmpd again");
    wait("3 pmNodeLost", Duration::from_secs(20), || {
        v2_traps(&s.v2.log(), "pmNodeLost").len() >= 3
    });
    s.wait_sweeps(2);
    let lost = v2_traps(&s.v2.log(), "pmNodeLost");
    assert_eq!(lost.len(), 3, "{lost:?}");
    // The newest three (the sweep found them in GUID order).
    for g in &nodes[2..] {
        assert_eq!(about(lost.clone(), *g, None).len(), 1, "{g}");
    }
    assert_eq!(
        s.get_num("IB-PM-MIB::pmAgentNotificationsDropped.0"),
        away.dropped
    );
    assert!(figures(&s).sent >= before.sent + 3);
}

/// Runs the agent without snmpd on configuration `text` (whose
/// `notify.sinks` is `trapd`), makes node08 unreachable and returns the
/// line the sink logged for its pmNodeLost.
fn node_lost_without_agentx(trapd: &PrivateSnmptrapd, text: &str) -> String {
    let cfg = Config::parse(text, "test.toml").expect("test configuration");
    let sim = SimFabric::new(topology::default_fabric(), app::sim_options(&cfg));
    let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");
    wait("sweeps", Duration::from_secs(20), || {
        agent.cache().load().sweep >= 3
    });
    let node = named(&sim.fabric(), "node08");
    sim.set_reachable(node, false);
    wait("pmNodeLost", Duration::from_secs(20), || {
        !about(v2_traps(&trapd.log(), "pmNodeLost"), node, None).is_empty()
    });
    agent.stop();
    about(v2_traps(&trapd.log(), "pmNodeLost"), node, None).remove(0)
}

/// Without snmpd the agent sends SNMPv2c traps to `notify.sinks` itself.
#[test]
fn without_agentx_traps_go_straight_to_the_sinks() {
    let trapd = PrivateSnmptrapd::start().expect("snmptrapd");
    let text = format!(
        "[agentx]\nenabled = false\n{}",
        BASE.replace(
            "[notify]\n",
            &format!("[notify]\nsinks = [\"{}\"]\n", trapd.sink())
        )
    );
    let line = node_lost_without_agentx(&trapd, &text);
    assert!(
        line.starts_with("SNMPv2-MIB::sysUpTime.0 = Timeticks: "),
        "{line}"
    );
}

/// Without snmpd, with `notify.user`: SNMPv3 traps (authPriv, SHA-256,
/// AES) from the agent's own engine, which snmptrapd authenticates and
/// decrypts with the user's keys for that engine ID.
#[test]
fn without_agentx_traps_go_to_the_sinks_as_snmpv3() {
    let engine = "800000000501020304feed01";
    let pass = "trap-sender-passphrase";
    let trapd = PrivateSnmptrapd::start_with_conf(&format!(
        "createUser -e 0x{engine} traps SHA-256 {pass} AES {pass}\nformat2 [%P] %v\\n"
    ))
    .expect("snmptrapd");
    // The engine's boots are kept beside its ID (an ID without a file is
    // refused).
    let dir = tempfile::tempdir().unwrap();
    let engine_file = dir.path().join("engine");
    let text = format!(
        "[agentx]\nenabled = false\n[snmp]\nengine_id = \"{engine}\"\n\
         engine_file = \"{}\"\n\
         [[snmp.user]]\nname = \"traps\"\nauth = \"SHA-256\"\nauth_passphrase = \"{pass}\"\n\
         privacy = \"AES\"\nprivacy_passphrase = \"{pass}\"\n{}",
        engine_file.display(),
        BASE.replace(
            "[notify]\n",
            &format!(
                "[notify]\nuser = \"traps\"\nsinks = [\"{}\"]\n",
                trapd.sink()
            )
        )
    );
    let line = node_lost_without_agentx(&trapd, &text);
    assert!(line.contains("SNMP v3, user traps"), "{line}");
}

/// The topology of every generation (tests/fixtures/topology): Switch-IB
/// switches with one link at 4x DDR, a 129-port Quantum-2 with split
/// ports at 2x NDR (one trained at 1x), an X800 at 4x XDR, FDR10.
fn generations() -> Fabric {
    topology::load(std::path::Path::new(
        "tests/fixtures/topology/generations.net",
    ))
    .expect("the fixture parses")
}

/// `column.<node GUID as 8 sub-identifiers>.<port>`.
fn cell(column: &str, guid: Guid, port: u8) -> String {
    let sub: Vec<String> = guid.octets().iter().map(|b| b.to_string()).collect();
    format!("IB-PM-MIB::{column}.{}.{port}", sub.join("."))
}

/// Each port of the simulator's devices shows what its kind supports, its
/// active width, speed and rate, what the link should run at, and whether
/// it is degraded; retraining the 4x DDR link at 4x EDR sends
/// pmLinkRecovered from both ends, and back at DDR pmLinkDegraded.
#[test]
fn a_link_below_what_its_ends_support_is_degraded_and_notified() {
    let s = Setup::start(generations(), "", "");
    let fabric = s.sim.fabric();
    let sibs: Vec<Guid> = fabric
        .nodes
        .iter()
        .filter(|n| &*n.id.description == "SwitchIB Mellanox Technologies")
        .map(|n| n.id.guid)
        .collect();
    let (q2, cx7, xdr, cx3) = (
        named(&fabric, "MF0;gpu-sw-01:MQM9700/U1"),
        named(&fabric, "gpu01 mlx5_0"),
        named(&fabric, "xdr01 ConnectX-8"),
        named(&fabric, "old01 ConnectX-3"),
    );
    // (node, port, width, speed, rate, width expected, speed expected,
    // degraded)
    let rows = [
        (
            sibs[0], 1, "width4x", "edr", 100_000, "width4x", "edr", "normal",
        ),
        (
            sibs[0],
            2,
            "width4x",
            "ddr",
            16_000,
            "width4x",
            "edr",
            "speedDegraded",
        ),
        (
            sibs[1],
            2,
            "width4x",
            "ddr",
            16_000,
            "width4x",
            "edr",
            "speedDegraded",
        ),
        (q2, 1, "width2x", "ndr", 200_000, "width2x", "ndr", "normal"),
        (
            q2,
            2,
            "width1x",
            "ndr",
            100_000,
            "width2x",
            "ndr",
            "widthDegraded",
        ),
        (
            cx7, 1, "width2x", "ndr", 200_000, "width2x", "ndr", "normal",
        ),
        (
            xdr, 1, "width4x", "xdr", 800_000, "width4x", "xdr", "normal",
        ),
        (
            xdr, 2, "width4x", "xdr", 800_000, "width4x", "xdr", "normal",
        ),
        (
            cx3,
            1,
            "width4x",
            "fdr10",
            40_000,
            "width4x",
            "fdr",
            "speedDegraded",
        ),
    ];
    for (g, p, w, sp, rate, we, se, degraded) in rows {
        let got = [
            s.get(&cell("pmPortLinkWidthActive", g, p)),
            s.get(&cell("pmPortLinkSpeedActive", g, p)),
            s.get_num(&cell("pmPortRateMbps", g, p)).to_string(),
            s.get(&cell("pmPortLinkWidthExpected", g, p)),
            s.get(&cell("pmPortLinkSpeedExpected", g, p)),
            s.get(&cell("pmPortLinkDegraded", g, p)),
        ];
        let want = [w, sp, &rate.to_string(), we, se, degraded];
        assert_eq!(got, want, "{g}[{p}]");
    }
    assert_eq!(s.get(&cell("pmPortLinkWidthSupported", q2, 1)), "1x,2x");
    assert_eq!(
        s.get(&cell("pmPortLinkSpeedSupported", sibs[0], 2)),
        "SDR,DDR,QDR,FDR10,FDR,EDR"
    );
    assert_eq!(s.get(&cell("pmPortLinkWidthEnabled", cx7, 1)), "1x,2x,4x");
    // A Quantum-2 has 64-bit error counters (CapabilityMask2 bit 1), a
    // Switch-IB of the simulator not.
    let node_cell = |g: Guid| {
        let c = cell("pmNodeWideCounters", g, 0);
        c[..c.rfind('.').unwrap()].to_string()
    };
    assert_eq!(s.get(&node_cell(q2)), "all");
    assert_eq!(s.get(&node_cell(sibs[0])), "dataAndPackets");

    // Retrained at full speed: recovered, from both ends.
    assert!(s.sim.set_link_rate(
        sibs[0],
        2,
        Some(ibpm_agentx::ib::LinkWidth::X4),
        Some(ibpm_agentx::ib::LinkSpeed::Edr)
    ));
    wait("pmLinkRecovered", Duration::from_secs(20), || {
        let t = v2_traps(&s.v2.log(), "pmLinkRecovered");
        !about(t.clone(), sibs[0], Some(2)).is_empty() && !about(t, sibs[1], Some(2)).is_empty()
    });
    assert_eq!(s.get(&cell("pmPortLinkDegraded", sibs[0], 2)), "normal");
    // And down to DDR again: degraded.
    assert!(s.sim.set_link_rate(
        sibs[0],
        2,
        Some(ibpm_agentx::ib::LinkWidth::X4),
        Some(ibpm_agentx::ib::LinkSpeed::Ddr)
    ));
    wait("pmLinkDegraded", Duration::from_secs(20), || {
        let t = v2_traps(&s.v2.log(), "pmLinkDegraded");
        !about(t.clone(), sibs[0], Some(2)).is_empty() && !about(t, sibs[1], Some(2)).is_empty()
    });
    s.wait_sweeps(3);
    let log = s.v2.log();
    let degraded = about(v2_traps(&log, "pmLinkDegraded"), sibs[0], Some(2));
    let recovered = about(v2_traps(&log, "pmLinkRecovered"), sibs[0], Some(2));
    assert_eq!((degraded.len(), recovered.len()), (1, 1), "{log}");
    for want in [
        "pmNotifyLinkDegraded.0 = INTEGER: speedDegraded(3)",
        "pmNotifyLinkWidth.0 = INTEGER: width4x(4)",
        "pmNotifyLinkSpeed.0 = INTEGER: ddr(2)",
        "pmNotifyLinkWidthExpected.0 = INTEGER: width4x(4)",
        "pmNotifyLinkSpeedExpected.0 = INTEGER: edr(6)",
        "pmNotifyPeerPortNum.0 = Gauge32: 2",
    ] {
        assert!(degraded[0].contains(want), "{want} in {}", degraded[0]);
    }
    assert!(
        recovered[0].contains("pmNotifyLinkDegraded.0 = INTEGER: normal(1)"),
        "{}",
        recovered[0]
    );
    // The v1 sink: enterprise pm, specific traps 8 and 9.
    wait("v1 link traps", Duration::from_secs(10), || {
        let v1 = s.v1.log();
        !v1_traps(&v1, "pmLinkDegraded").is_empty() && !v1_traps(&v1, "pmLinkRecovered").is_empty()
    });
    eprintln!("{}\n{}", recovered[0], degraded[0]);
}

/// A port whose simulated symbol error rate puts its BER above 10^-12:
/// pmPortSymbolBer shows it, and SymbolBER rises, then falls when the
/// errors stop.
#[test]
fn a_symbol_error_rate_crosses_the_ber_threshold() {
    // The default SymbolBER threshold (10^-12, falling 10^-13) on the
    // adapters only (the simulator's noisy switch links stay above it).
    let s = Setup::start(
        generations(),
        "",
        "[[notify.threshold]]\ncounter = \"SymbolBER\"\nnode = \"gpu01*\"\nrising = 1000\n",
    );
    let fabric = s.sim.fabric();
    let cx7 = named(&fabric, "gpu01 mlx5_0");
    // The SymbolBER notifications about the adapter's port (SymbolErrors
    // has its own, with its own threshold).
    let ber = |name: &str| -> Vec<String> {
        about(v2_traps(&s.v2.log(), name), cx7, Some(1))
            .into_iter()
            .filter(|t| t.contains("pmNotifyCounter.0 = STRING: SymbolBER"))
            .collect()
    };
    // 1000 errors a second on a 2x NDR link (200 Gb/s): 5.0E-9.
    assert!(s.sim.set_symbol_error_rate(cx7, 1, 1000.0));
    wait("SymbolBER rising", Duration::from_secs(20), || {
        !ber("pmCounterThresholdRising").is_empty()
    });
    // Once two readings both come after the change, the BER is the
    // simulated rate's.
    wait("pmPortSymbolBer 5.0E-9", Duration::from_secs(10), || {
        ["4.9E-9", "5.0E-9", "5.1E-9"].contains(&s.get(&cell("pmPortSymbolBer", cx7, 1)).as_str())
    });
    let text = s.get(&cell("pmPortSymbolBer", cx7, 1));
    let per = s.get_num(&cell("pmPortSymbolBerPer1e15", cx7, 1));
    assert!((4_500_000..=5_500_000).contains(&per), "{per}");
    let rising = ber("pmCounterThresholdRising");
    assert_eq!(rising.len(), 1, "{rising:?}");
    for want in [
        "pmNotifyCounter.0 = STRING: SymbolBER",
        "pmNotifyThreshold.0 = Gauge32: 1000",
        "pmNotifyWindow.0 = Gauge32: 1",
    ] {
        assert!(rising[0].contains(want), "{want} in {}", rising[0]);
    }
    // The simulated RS-FEC corrects two symbols per symbol error: a raw
    // BER (before FEC) of 2000 / 2e11 = 1.0E-8 from
    // PortExtendedSpeedsCounters, within the jitter of when the sweeps'
    // requests are answered (a loaded machine stretches some intervals);
    // the effective BER (after FEC) counts uncorrectable blocks.
    let mut raw = 0;
    wait("pmPortRawBer about 1.0E-8", Duration::from_secs(10), || {
        raw = s.get_num(&cell("pmPortRawBerPer1e15", cx7, 1));
        (8_000_000..=12_000_000).contains(&raw)
    });
    let raw_text = s.get(&cell("pmPortRawBer", cx7, 1));
    assert!(
        raw_text.ends_with("E-8") || raw_text.ends_with("E-9"),
        "{raw_text}"
    );
    let effective = s.get(&cell("pmPortEffectiveBer", cx7, 1));
    assert!(!effective.is_empty(), "{effective}");
    eprintln!("raw BER {raw} per 10^15 bits, effective BER {effective}");
    // The errors stop: falling under 100 (10^-13).
    assert!(s.sim.set_symbol_error_rate(cx7, 1, 0.0));
    wait("SymbolBER falling", Duration::from_secs(20), || {
        !ber("pmCounterThresholdFalling").is_empty()
    });
    let falling = ber("pmCounterThresholdFalling");
    assert!(
        falling[0].contains("pmNotifyThreshold.0 = Gauge32: 100"),
        "{}",
        falling[0]
    );
    wait("BER back to 0", Duration::from_secs(10), || {
        s.get(&cell("pmPortSymbolBer", cx7, 1)) == "0"
    });
    eprintln!(
        "BER {text} ({per} per 10^15 bits)\n{}\n{}",
        rising[0], falling[0]
    );
}
