//! Notifications from a real (simulated) fabric: ibsim running a small fat
//! tree from `scripts/gen-fat-tree`, LIDs from `opensm -o`, the
//! `ibpm-agentx` binary with `--backend umad` under umad2sim, a private
//! snmpd as its AgentX master with `trap2sink` to a private snmptrapd.
//! ibsim's console changes the fabric: `Unlink` of a switch, and
//! `PerformanceSet` of a port's SymbolErrorCounter.

mod common;
mod ibsim;

use std::fs;
use std::time::Duration;

use common::{ChildGuard, PrivateSnmpd, PrivateSnmptrapd, v2_traps};
use ibsim::{FatTree, named};

/// 4 leaves x 4 hosts (the last of each dual-port) + 2 spines.
const LEAVES: usize = 4;
const SPINES: usize = 2;
const HOSTS: usize = 4;
const DUAL: usize = 1;

use common::traps_about as about;

fn wait_for(limit: Duration, what: &str, ok: impl Fn() -> bool) {
    common::wait_until(what, limit, Duration::from_millis(100), ok);
}

#[test]
fn unlinked_switch_is_one_node_lost_and_a_fast_error_counter_rises() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let FatTree {
        dir: _dir,
        mut sim,
        nodes: ib,
    } = FatTree::start(LEAVES, SPINES, HOSTS, DUAL);
    assert_eq!(ib.len(), LEAVES + SPINES + LEAVES * HOSTS);
    let node = |desc: &str| named(&ib, desc);

    let trapd = PrivateSnmptrapd::start().expect("snmptrapd");
    let snmpd = PrivateSnmpd::start_with_conf(&format!("trap2sink {} public\n", trapd.sink()))
        .expect("a private snmpd");
    let (mut c, agent_log) = sim.agent_command(&format!(
        "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
         [fabric]\nbackend = \"umad\"\nsweep_interval = 1\nunreachable_after = 2\n\
         rediscover_interval = 2\n\
         [notify]\nwindow = 2\n",
        snmpd.agentx_addr()
    ));
    let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
    let log = || fs::read_to_string(&agent_log).unwrap_or_default();
    wait_for(Duration::from_secs(30), "the first sweep", || {
        log().contains("first sweep done")
    });
    // A window of readings for every port.
    common::wait_more_sweeps(&snmpd.target(), 3, Duration::from_secs(20), &mut agent, log);

    // PerformanceSet raises L3[5]'s SymbolErrorCounter by 500 at once:
    // far above its threshold (10 per window).
    let l3 = node("L3").guid;
    sim.console("PerformanceSet \"L3\"[5] PortCounters.SymbolErrorCounter=500");
    wait_for(Duration::from_secs(20), "pmCounterThresholdRising", || {
        !about(
            v2_traps(&trapd.log(), "pmCounterThresholdRising"),
            l3,
            Some(5),
        )
        .is_empty()
    });
    // The increase rises, and so does the symbol BER: 500 errors over
    // what a 4x SDR link (8 Gb/s) received in the 2 s window, about
    // 3.1E-8, against the default 10^-12 (1000 per 10^15 bits).
    wait_for(Duration::from_secs(20), "the SymbolBER rising", || {
        about(
            v2_traps(&trapd.log(), "pmCounterThresholdRising"),
            l3,
            Some(5),
        )
        .len()
            >= 2
    });
    let rising = about(
        v2_traps(&trapd.log(), "pmCounterThresholdRising"),
        l3,
        Some(5),
    );
    let of = |counter: &str| -> Vec<&String> {
        let name = format!("IB-PM-MIB::pmNotifyCounter.0 = STRING: {counter}");
        rising.iter().filter(|t| t.contains(&name)).collect()
    };
    let (errors, ber) = (of("SymbolErrors"), of("SymbolBER"));
    assert_eq!((errors.len(), ber.len()), (1, 1), "{rising:?}");
    for want in [
        "IB-PM-MIB::pmNotifyThreshold.0 = Gauge32: 10",
        "IB-PM-MIB::pmNotifyNodeDescription.0 = STRING: L3",
    ] {
        assert!(errors[0].contains(want), "{want} in {}", errors[0]);
    }
    assert!(
        ber[0].contains("IB-PM-MIB::pmNotifyThreshold.0 = Gauge32: 1000"),
        "{}",
        ber[0]
    );
    eprintln!("symbol BER crossing under ibsim: {}", ber[0]);

    // Unlink L1: one pmNodeLost for the switch, none of its ports says
    // anything; its single-port hosts are lost too (one each); the ports
    // at the other ends of its links go down (pmPortStateChange each).
    let l1 = node("L1");
    let single: Vec<u64> = (0..HOSTS - DUAL)
        .map(|h| node(&format!("H1_{h}")).guid)
        .collect();
    sim.console("Unlink \"L1\"");
    wait_for(Duration::from_secs(20), "pmNodeLost for L1", || {
        !about(v2_traps(&trapd.log(), "pmNodeLost"), l1.guid, None).is_empty()
    });
    // The peers' ports: every spine's port to L1 after rediscovery.
    let spine_ports: Vec<(u64, u8)> = (0..SPINES)
        .map(|s| {
            let sp = node(&format!("S{s}"));
            let port = sp
                .ports
                .iter()
                .find(|(_, (peer, _, _, _))| *peer == l1.guid)
                .map(|(p, _)| *p)
                .expect("a spine port to L1");
            (sp.guid, port)
        })
        .collect();
    wait_for(Duration::from_secs(20), "the spines' ports down", || {
        let t = v2_traps(&trapd.log(), "pmPortStateChange");
        spine_ports
            .iter()
            .all(|(g, p)| !about(t.clone(), *g, Some(*p)).is_empty())
    });
    // Three more sweeps, in which a second notification would have come.
    common::wait_more_sweeps(&snmpd.target(), 3, Duration::from_secs(20), &mut agent, log);
    let traps = trapd.log();
    let lost = v2_traps(&traps, "pmNodeLost");
    assert_eq!(about(lost.clone(), l1.guid, None).len(), 1, "{traps}");
    for h in &single {
        assert_eq!(about(lost.clone(), *h, None).len(), 1, "host {h:#x}");
    }
    assert_eq!(lost.len(), 1 + single.len(), "no other node lost: {lost:?}");
    let changes = v2_traps(&traps, "pmPortStateChange");
    assert!(
        about(changes.clone(), l1.guid, None).is_empty(),
        "no port notification of the lost switch"
    );
    for (g, p) in &spine_ports {
        let t = about(changes.clone(), *g, Some(*p));
        assert_eq!(t.len(), 1, "{t:?}");
        assert!(
            t[0].contains("IB-PM-MIB::pmNotifyNewPortState.0 = INTEGER: down(1)"),
            "{}",
            t[0]
        );
        assert!(
            t[0].contains("IB-PM-MIB::pmNotifyPeerDescription.0 = STRING: L1"),
            "{}",
            t[0]
        );
    }
    assert!(agent.running(), "agent exited:\n{}", log());
    eprintln!("{traps}");
    agent.stop();
}
