//! `ibpm-agentx query NODE PORT`: one read of a port through the configured
//! backend, as perfquery reads it; checked against the simulated PMA itself.

use std::process::Command;

use ibpm_agentx::app::sim_options;
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{NodeType, topology};
use ibpm_agentx::rig;
use ibpm_agentx::sim::SimFabric;

/// A configuration file with frozen traffic (every simulator built from it
/// holds the same counters) in a new directory, and such a simulator.
fn frozen() -> (tempfile::TempDir, SimFabric) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("agent.toml"), "[sim]\ntraffic = false\n").unwrap();
    let mut cfg = Config::default();
    cfg.sim.traffic = false;
    (
        dir,
        SimFabric::new(topology::default_fabric(), sim_options(&cfg)),
    )
}

#[test]
fn query_prints_the_pmas_counters_with_names_and_octets() {
    let (dir, sim) = frozen();
    let conf = dir.path().join("agent.toml");
    let fabric = sim.fabric();
    let sw = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Switch)
        .unwrap();
    let want = rig::port_counters(&sim, sw.id.lid, 2);
    assert!(want.xmit_data > 0, "the frozen fabric carried traffic");

    for node in [
        sw.id.guid.to_string(),
        sw.id.lid.to_string(),
        sw.id.description.to_string(),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
            .args(["query", &node, "2", "--config"])
            .arg(&conf)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        let value = |name: &str| -> u64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(&format!("{name}:.")))
                .unwrap_or_else(|| panic!("no {name} in\n{text}"));
            line.rsplit('.').next().unwrap().parse().unwrap()
        };
        assert_eq!(
            value("PortXmitData (octets)"),
            u64::from(want.xmit_data) * 4
        );
        assert_eq!(value("PortRcvPkts"), u64::from(want.rcv_pkts));
        assert_eq!(value("SymbolErrorCounter"), u64::from(want.symbol_errors));
        assert!(text.contains(&format!("node {} ", sw.id.guid)), "{text}");
        // Which subnet: the plane's prefix and master SM.
        let subnet = sim.plane(0).unwrap().key().to_string();
        assert!(text.contains(&format!("# Subnet: {subnet}\n")), "{text}");
    }

    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["query", &sw.id.guid.to_string(), "2", "--json", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    let json = String::from_utf8(out.stdout).unwrap();
    assert!(
        json.contains(&format!("\"PortXmitPkts\":{},", want.xmit_pkts)),
        "{json}"
    );
    let subnet = sim.plane(0).unwrap().key().to_string();
    assert!(json.contains(&format!("\"subnet\":\"{subnet}\"")), "{json}");

    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["query", &sw.id.guid.to_string(), "77", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no port 77"));
}

/// A channel adapter's port GUID names its node and port, as perfquery's
/// `-G` takes one; `--json` keys are identifiers.
#[test]
fn query_takes_a_port_guid_and_prints_json_with_identifier_keys() {
    let (dir, sim) = frozen();
    let conf = dir.path().join("agent.toml");
    let fabric = sim.fabric();
    let ca = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Ca && n.ports.len() > 1)
        .unwrap();
    let p = ca.ports[1];
    assert_ne!(p.guid, ca.id.guid, "a CA port has a GUID of its own");
    let want = rig::port_counters(&sim, p.lid, p.num);
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["query", &p.guid.to_string(), "--json", "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let json = String::from_utf8(out.stdout).unwrap();
    assert!(json.contains(&format!("\"port\":{},", p.num)), "{json}");
    assert!(
        json.contains(&format!(
            "\"PortXmitDataOctets\":{}",
            u64::from(want.xmit_data) * 4
        )),
        "{json}"
    );
    assert!(!json.contains("(octets)"), "{json}");
    // Another port through that port's GUID is refused, with the reason.
    let other = ca.ports[0].num.to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["query", &p.guid.to_string(), &other, "--config"])
        .arg(&conf)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("is port {} of node {}", p.num, ca.id.guid)),
        "{err}"
    );
}
