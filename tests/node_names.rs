//! A node-name-map renames nodes in every face, with real parts: the MIB
//! through a private snmpd (AgentX) and snmpget, /metrics and the status
//! page over a real socket. The map is read again when it changes, and a
//! bad map keeps the names read before.

mod common;

use std::time::Duration;

use common::health::get;
use common::{PrivateSnmpd, SnmpTool, free_tcp_port, poll, wait_until};
use ibpm_agentx::app::{self, Backend, Shutdown};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{Guid, topology};
use ibpm_agentx::sim::SimFabric;

const NODE: &str = "1.3.6.1.3.117.1.5.1";
const PORT: &str = "1.3.6.1.3.117.1.6.1";

fn index(g: Guid) -> String {
    g.0.to_be_bytes().map(|b| b.to_string()).join(".")
}

/// One object's value through snmpd, as `-Oqv` prints it (quotes
/// removed).
fn snmpget(target: &str, oid: &str) -> String {
    let out = SnmpTool::new("snmpget")
        .args([
            "-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "0", target, oid,
        ])
        .run();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .trim_matches('"')
        .to_string()
}

#[test]
fn a_node_name_map_renames_nodes_in_the_mib_the_metrics_and_the_page() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
    let target = snmpd.target();
    let dir = tempfile::tempdir().unwrap();
    let fabric = topology::default_fabric();
    // A link between two switches: named by the map, then taken down so
    // that the page names both ends.
    let (x, y) = common::health::switch_link(&fabric);
    let desc_x = fabric.node(x.0).unwrap().id.description.to_string();
    let map = dir.path().join("ib-node-name-map");
    std::fs::write(
        &map,
        format!(
            "# racks\n{} \"leaf07-rack12\"\n{} \"spine01-row3\" # spine\n",
            x.0, y.0
        ),
    )
    .unwrap();
    let port = free_tcp_port();
    let text = format!(
        "[agentx]\nsocket = \"{sock}\"\nping_interval = 1\nreconnect_max = 1\n\
         [fabric]\nsweep_interval = 0.5\nrediscover_interval = 1\n\
         node_name_map = \"ib-node-name-map\"\n\
         [sim]\ntraffic = false\n\
         [health]\nrecovery = 2\nflap_window = 60\ncongestion_window = 60\n\
         [metrics]\nlisten = \"127.0.0.1:{port}\"\n",
        sock = snmpd.agentx_addr()
    );
    let path = dir.path().join("agent.toml");
    std::fs::write(&path, &text).unwrap();
    let cfg = Config::load(&path).expect("test configuration");
    let sim = SimFabric::new(fabric.clone(), app::sim_options(&cfg));
    let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");

    // The MIB through snmpd: pmNodeName renamed, pmNodeDescription the
    // node's own, pmPortName made of the name.
    let name_oid = format!("{NODE}.17.{}", index(x.0));
    wait_until(
        "pmNodeName through snmpd",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || snmpget(&target, &name_oid) == "leaf07-rack12",
    );
    assert_eq!(
        snmpget(&target, &format!("{NODE}.2.{}", index(x.0))),
        desc_x
    );
    assert_eq!(
        snmpget(&target, &format!("{PORT}.15.{}.{}", index(x.0), x.1)),
        format!("leaf07-rack12/{}", x.1)
    );
    // A node the map leaves out goes by its NodeDescription.
    let other = fabric
        .nodes
        .iter()
        .find(|n| n.id.guid != x.0 && n.id.guid != y.0)
        .unwrap();
    assert_eq!(
        snmpget(&target, &format!("{NODE}.17.{}", index(other.id.guid))),
        &*other.id.description
    );

    // /metrics: the node info series carries both.
    let (status, _, metrics) = get(port, "/metrics", "");
    assert_eq!(status, 200);
    let info = metrics
        .lines()
        .find(|l| l.starts_with("infiniband_node_info{") && l.contains(&format!("\"{}\"", x.0)))
        .unwrap_or_else(|| panic!("no node info series for {}:\n{metrics}", x.0));
    assert!(info.contains("node_name=\"leaf07-rack12\""), "{info}");
    assert!(info.contains(&format!("node_desc=\"{desc_x}\"")), "{info}");
    assert!(metrics.contains("node_name=\"spine01-row3\""));

    // The page: the lost link named by both ends' names.
    assert!(sim.set_link(x.0, x.1, false));
    let page = poll(Duration::from_secs(30), Duration::from_millis(200), || {
        let (_, _, html) = get(port, "/", "");
        (html.contains(&format!("leaf07-rack12/{}", x.1))
            && html.contains(&format!("spine01-row3/{}", y.1)))
        .then_some(html)
    });
    assert!(page.is_some(), "the page never named the link's ends");

    // The map changed: read again at a sweep.
    std::fs::write(&map, format!("{} \"leaf07-rack12-moved\"\n", x.0)).unwrap();
    wait_until(
        "the map read again",
        Duration::from_secs(30),
        Duration::from_millis(200),
        || snmpget(&target, &name_oid) == "leaf07-rack12-moved",
    );
    assert_eq!(
        snmpget(&target, &format!("{NODE}.17.{}", index(y.0))),
        &*fabric.node(y.0).unwrap().id.description,
        "a node left out of the map goes back to its NodeDescription"
    );
    // A bad map: the names read before stay.
    std::fs::write(&map, format!("{} \"ok\"\nnot a line of a map\n", x.0)).unwrap();
    let cache = agent.cache();
    let sweep = cache.load().sweep;
    wait_until(
        "two more sweeps",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || cache.load().sweep >= sweep + 2,
    );
    assert_eq!(snmpget(&target, &name_oid), "leaf07-rack12-moved");
    agent.stop();
}
