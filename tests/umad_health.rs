//! Port health from a real (simulated) fabric: ibsim running a small fat
//! tree, LIDs from `opensm -o`, the `ibpm-agentx` binary under umad2sim, a
//! private snmpd as its AgentX master with `trap2sink` to a private
//! snmptrapd. ibsim's console flaps links two ways: `PerformanceSet ...
//! LinkDownedCounter` (a flap faster than a sweep) and `Unlink` /
//! `ReLink` (the port seen leaving Active and coming back, after a
//! one-shot opensm brings it up again). Each verdict must show on both
//! ends in pmPortHealthTable, come as a pmPortUnhealthy trap, and clear
//! after the (short) recovery window with a pmPortHealthy trap.

mod common;
mod ibsim;

use std::fs;
use std::time::Duration;

use common::{
    ChildGuard, PrivateSnmpd, PrivateSnmptrapd, snmpset, traps_about, v2_traps, walk_ports,
};
use ibsim::{FatTree, named};

/// 2 leaves x 2 hosts + 2 spines.
const LEAVES: usize = 2;
const SPINES: usize = 2;
const HOSTS: usize = 2;

fn wait_for(limit: Duration, what: &str, ok: impl FnMut() -> bool) {
    common::wait_until(what, limit, Duration::from_millis(200), ok);
}

/// pmPortHealthTable's columns (numeric: the tools' MIB path does not
/// hold the repository's module); TruthValue true(1), false(2).
const HEALTH: &str = "1.3.6.1.3.117.1.23.1";
const LINK_LOST: u32 = 1;
const FLAPPING: u32 = 3;
const FLAPS: u32 = 7;
const PEER_GUID: u32 = 12;
const RAISED: u32 = 11;
const ACKNOWLEDGE: u32 = 14;

#[test]
fn flaps_and_a_lost_link_are_verdicts_on_both_ends_that_clear_after_recovery() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let FatTree {
        dir: _dir,
        mut sim,
        nodes: ib,
    } = FatTree::start(LEAVES, SPINES, HOSTS, 0);
    let node = |desc: &str| named(&ib, desc).clone();
    let l0 = node("L0");
    let l1 = node("L1");
    // L0's link to its first host, and L1's link to spine S0.
    let (&host_port, &(host, host_peer_port, _, _)) = l0
        .ports
        .iter()
        .find(|(_, (peer, _, _, _))| ib[peer].desc.starts_with('H'))
        .expect("a host port");
    let s0 = node("S0");
    let (&up, &(_, s0_port, _, _)) = l1
        .ports
        .iter()
        .find(|(_, (peer, _, _, _))| *peer == s0.guid)
        .expect("an uplink to S0");

    let trapd = PrivateSnmptrapd::start().expect("snmptrapd");
    let snmpd = PrivateSnmpd::start_with_conf(&format!("trap2sink {} public\n", trapd.sink()))
        .expect("a private snmpd");
    let (mut c, agent_log) = sim.agent_command(&format!(
        "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
         [fabric]\nbackend = \"umad\"\nsweep_interval = 1\nunreachable_after = 2\n\
         rediscover_interval = 2\nportinfo_interval = 1\n\
         [set]\nallow = true\n\
         [health]\nflap_count = 1\nflap_window = 8\nrecovery = 4\nforget_after = 600\n",
        snmpd.agentx_addr()
    ));
    let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
    let log = || fs::read_to_string(&agent_log).unwrap_or_default();
    wait_for(Duration::from_secs(30), "the first sweep", || {
        log().contains("first sweep done")
    });
    common::wait_more_sweeps(&snmpd.target(), 2, Duration::from_secs(20), &mut agent, log);
    let target = snmpd.target();
    let column = |n: u32| walk_ports(&target, &format!("{HEALTH}.{n}"), &["-v2c", "-c", "public"]);
    let is = |c: &std::collections::BTreeMap<(u64, u8), String>, e: &(u64, u8), v: &str| {
        c.get(e).map(String::as_str) == Some(v)
    };
    let healthy = column(FLAPPING);
    assert!(
        healthy.len() >= 2 * LEAVES * (HOSTS + SPINES),
        "a row per port: {healthy:?}"
    );
    assert!(healthy.values().all(|v| v == "2"), "{healthy:?}");

    // A flap faster than a sweep: LinkDowned rises on L0's host port.
    sim.console(&format!(
        "PerformanceSet \"L0\"[{host_port}] PortCounters.LinkDownedCounter=1"
    ));
    let ends = [(l0.guid, host_port), (host, host_peer_port)];
    wait_for(Duration::from_secs(20), "flapping on both ends", || {
        let c = column(FLAPPING);
        ends.iter().all(|e| is(&c, e, "1"))
    });
    wait_for(Duration::from_secs(10), "pmPortUnhealthy flapping", || {
        v2_traps(&trapd.log(), "pmPortUnhealthy")
            .iter()
            .any(|t| t.contains("pmNotifyHealthCondition.0 = INTEGER: flapping(3)"))
    });
    let unhealthy = v2_traps(&trapd.log(), "pmPortUnhealthy");
    let t: Vec<_> = unhealthy
        .iter()
        .filter(|t| t.contains("flapping(3)"))
        .collect();
    assert_eq!(t.len(), 1, "one trap for the link: {unhealthy:?}");
    let from_l0 = !traps_about(vec![t[0].clone()], l0.guid, Some(host_port)).is_empty();
    let from_host = !traps_about(vec![t[0].clone()], host, Some(host_peer_port)).is_empty();
    assert!(from_l0 ^ from_host, "from one end: {}", t[0]);
    let other = if from_l0 { host } else { l0.guid };
    assert!(
        t[0].contains(&format!(
            "pmNotifyPeerNodeGuid.0 = STRING: {}",
            common::guid_hint(other)
        )),
        "naming the other end: {}",
        t[0]
    );
    assert!(is(&column(FLAPS), &(l0.guid, host_port), "1"));
    // Acknowledging a condition that has no verdict: inconsistentValue.
    let ack = format!(
        "{HEALTH}.{ACKNOWLEDGE}.{}.{host_port}",
        common::guid_index(l0.guid)
    );
    let err = snmpset(&target, "private", &[&ack, "i", "4"]).expect_err("no erroring verdict");
    assert!(err.contains("inconsistentValue"), "{err}");
    // The flap leaves the 8 s window, then 4 s of recovery: cleared.
    wait_for(Duration::from_secs(30), "flapping cleared", || {
        let c = column(FLAPPING);
        ends.iter().all(|e| is(&c, e, "2"))
    });
    wait_for(Duration::from_secs(10), "pmPortHealthy flapping", || {
        v2_traps(&trapd.log(), "pmPortHealthy")
            .iter()
            .any(|t| t.contains("flapping(3)"))
    });

    // A link lost: L1's uplink to S0 unlinked. Both ends are down.
    sim.console(&format!("Unlink \"L1\"[{up}]"));
    let ends = [(l1.guid, up), (s0.guid, s0_port)];
    wait_for(Duration::from_secs(20), "link lost on both ends", || {
        let c = column(LINK_LOST);
        ends.iter().all(|e| is(&c, e, "1"))
    });
    let peer = column(PEER_GUID);
    assert!(
        peer.get(&(l1.guid, up)).is_some_and(|v| v
            .replace(' ', "")
            .to_lowercase()
            .contains(&format!("{:016x}", s0.guid))),
        "the peer as last seen up: {:?}",
        peer.get(&(l1.guid, up))
    );
    wait_for(Duration::from_secs(10), "pmPortUnhealthy linkLost", || {
        v2_traps(&trapd.log(), "pmPortUnhealthy")
            .iter()
            .any(|t| t.contains("linkLost(1)"))
    });
    // Acknowledged from S0's end while the link is still down: cleared,
    // and raised again by the next sweep (a second pair of traps, the
    // count of verdicts raised on L1's port up by one).
    let raised = |c: &std::collections::BTreeMap<(u64, u8), String>| -> u64 {
        c.get(&(l1.guid, up)).map_or(0, |v| v.parse().unwrap_or(0))
    };
    let before = raised(&column(RAISED));
    let ack = format!(
        "{HEALTH}.{ACKNOWLEDGE}.{}.{s0_port}",
        common::guid_index(s0.guid)
    );
    snmpset(&target, "private", &[&ack, "i", "1"]).expect("acknowledged");
    wait_for(Duration::from_secs(10), "linkLost raised again", || {
        let lost = |name: &str| {
            v2_traps(&trapd.log(), name)
                .iter()
                .filter(|t| t.contains("linkLost(1)"))
                .count()
        };
        lost("pmPortUnhealthy") == 2 && lost("pmPortHealthy") == 1
    });
    assert_eq!(raised(&column(RAISED)), before + 1);
    // Back: ReLink, and opensm brings the ports up again. The return is
    // a flap; the lost link clears after the recovery window.
    sim.console(&format!("ReLink \"L1\"[{up}]"));
    sim.run_opensm();
    wait_for(Duration::from_secs(30), "the return seen as a flap", || {
        let c = column(FLAPPING);
        ends.iter().all(|e| is(&c, e, "1"))
    });
    wait_for(Duration::from_secs(30), "link lost cleared", || {
        let c = column(LINK_LOST);
        ends.iter().all(|e| is(&c, e, "2"))
    });
    wait_for(Duration::from_secs(10), "pmPortHealthy linkLost", || {
        v2_traps(&trapd.log(), "pmPortHealthy")
            .iter()
            .filter(|t| t.contains("linkLost(1)"))
            .count()
            == 2
    });
    assert!(agent.running(), "agent exited:\n{}", log());
    assert!(log().contains("link unhealthy: link lost"), "{}", log());
    eprintln!("{}", trapd.log());
    agent.stop();
}
