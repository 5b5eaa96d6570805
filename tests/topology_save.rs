//! `ibpm-agentx topology save` against `ibnetdiscover` on the same ibsim
//! fabric (under umad2sim, LIDs from `opensm -o`): the same nodes, ports,
//! links, LIDs, widths and speeds. The saved file is read back by
//! ibnetdiscover's own readers' source (ibsim starts on it and
//! ibnetdiscover finds the same fabric), by the agent's topology parser
//! and as a plan.

mod ibsim;

use std::path::Path;
use std::time::Duration;

use ibpm_agentx::cabling::parse_plan;
use ibpm_agentx::ib::topology;
use ibsim::{IbSim, NET_2SW2PATH4HCA, parse_ibnetdiscover};

fn save(sim: &IbSim) -> String {
    let cfg = sim.dir().join("save.toml");
    std::fs::write(
        &cfg,
        "[agentx]\nenabled = false\n[fabric]\nbackend = \"umad\"\n",
    )
    .unwrap();
    let file = sim.dir().join("saved.topo");
    let mut c = sim.command(env!("CARGO_BIN_EXE_ibpm-agentx"));
    c.args(["topology", "save"])
        .arg(&file)
        .arg("--config")
        .arg(&cfg);
    let r = sim.run_cmd(c, "topology save", Duration::from_secs(50));
    assert!(
        r.status.success(),
        "topology save failed:\n{}\n{}",
        r.stdout,
        r.stderr
    );
    std::fs::read_to_string(&file).expect("the saved file")
}

#[test]
fn topology_save_writes_what_ibnetdiscover_finds() {
    let sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    let want = parse_ibnetdiscover(&sim.tool("ibnetdiscover", &[]).stdout);
    assert!(want.len() >= 6, "{want:?}");
    let saved = save(&sim);
    let got = parse_ibnetdiscover(&saved);
    assert_eq!(
        got.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (g, w) in &want {
        let n = &got[g];
        assert_eq!(
            (n.switch, &n.desc, n.lid),
            (w.switch, &w.desc, w.lid),
            "node {g:#x}"
        );
        // Each port: peer node and port, LID, width and speed (`4xSDR`).
        assert_eq!(n.ports, w.ports, "ports of {g:#x} \"{}\"", w.desc);
    }

    // The agent reads it back, as a topology and as a plan with the rates.
    let fabric = topology::parse(&saved).expect("the saved file parses");
    assert_eq!(fabric.nodes.len(), want.len());
    let plan = parse_plan(saved.as_bytes()).expect("the saved file is a plan");
    let cabled: usize = want.values().map(|n| n.ports.len()).sum();
    assert_eq!(plan.links.len() * 2, cabled);
    assert!(
        plan.links
            .iter()
            .all(|l| l.width.is_some() && l.speed.is_some())
    );

    // ibsim reads it: the same fabric found again on it.
    let keep = tempfile::tempdir().unwrap();
    let path = keep.path().join("saved.topo");
    std::fs::write(&path, &saved).unwrap();
    drop(sim);
    let again = IbSim::start(&path);
    let found = parse_ibnetdiscover(&again.tool("ibnetdiscover", &[]).stdout);
    assert_eq!(
        found.keys().collect::<Vec<_>>(),
        want.keys().collect::<Vec<_>>()
    );
    for (g, w) in &want {
        let links = |n: &ibsim::IbndNode| {
            n.ports
                .iter()
                .map(|(p, (r, rp, _, rate))| (*p, *r, *rp, rate.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(links(&found[g]), links(w), "links of {g:#x}");
        assert_eq!(found[g].desc, w.desc);
    }
}
