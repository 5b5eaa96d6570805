//! Directed-route discovery through the umad transport, against ibsim
//! (under umad2sim), compared with ibnetdiscover's view of the same fabric.

mod ibsim;

use std::path::Path;

use ibsim::{IbSim, NET_2SW2PATH4HCA, assert_same_fabric, lines_of, parse_ibnetdiscover};

fn compare(sim: &IbSim, env: &[(&str, &str)]) -> usize {
    let r = sim.probe(&["--no-counters"], env);
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let mut ibnd = sim.command("ibnetdiscover");
    for (k, v) in env {
        ibnd.env(k, v);
    }
    let ib = sim.run_cmd(ibnd, "ibnetdiscover", std::time::Duration::from_secs(50));
    assert!(ib.status.success(), "ibnetdiscover failed: {}", ib.stderr);
    let want = parse_ibnetdiscover(&ib.stdout);
    assert!(
        !want.is_empty(),
        "ibnetdiscover found nothing:\n{}",
        ib.stdout
    );
    let links = assert_same_fabric(&r.stdout, &want);
    let summary = &lines_of(&r.stdout, "summary")[0];
    println!(
        "{} nodes, {links} port links checked; discovery {} ms, {} SMPs (ibnetdiscover process: {:?})",
        want.len(),
        summary["discover_ms"],
        summary["smps"],
        ib.elapsed
    );
    links
}

#[test]
fn discovery_from_a_switch_matches_ibnetdiscover() {
    let sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    // The first node of the file (a switch) is where clients attach by default.
    let links = compare(&sim, &[]);
    assert_eq!(links, 4 * 2 + 4);
}

#[test]
fn discovery_from_a_two_port_hca_matches_ibnetdiscover() {
    let net = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca2port";
    let sim = IbSim::start(Path::new(net));
    let links = compare(&sim, &[("SIM_HOST", "Hca1")]);
    assert!(links >= 8, "expected both ports of the dual-port HCAs");
    // Both ports of the local dual-port HCA are known, each with its own LID.
    let r = sim.probe(&["--no-counters"], &[("SIM_HOST", "Hca1")]);
    let local = &lines_of(&r.stdout, "local")[0];
    let guid = &local["node_guid"];
    let ports: Vec<_> = lines_of(&r.stdout, "port")
        .into_iter()
        .filter(|p| &p["port"] == guid)
        .collect();
    assert_eq!(ports.len(), 2, "local HCA ports: {ports:?}");
    assert_ne!(ports[0]["lid"], ports[1]["lid"]);
}

#[test]
fn local_port_down_is_a_clear_error() {
    let mut sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    sim.console("Unlink \"Hca2\"");
    let r = sim.probe(&["--no-counters"], &[("SIM_HOST", "Hca2")]);
    assert!(!r.status.success(), "probe should fail: {}", r.stdout);
    assert!(
        r.stderr.contains("link down") || r.stderr.contains("is Down"),
        "unclear error: {}",
        r.stderr
    );
}
