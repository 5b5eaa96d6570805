//! Discovery and PortCounters sweeps of generated fat trees through the
//! umad transport against ibsim: the result must match ibnetdiscover, and
//! the timings are printed (run with `--nocapture`).

mod ibsim;

use std::time::Duration;

use ibsim::{IbSim, assert_same_fabric, fat_tree, lines_of, parse_ibnetdiscover};

fn run(leaves: usize, spines: usize, hosts: usize, links: usize, ibsim_args: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let net = dir.path().join("fat-tree.net");
    std::fs::write(&net, fat_tree(leaves, spines, hosts, links)).expect("write netfile");
    let sim = IbSim::start_with(&net, ibsim_args);
    let switches = leaves + spines;
    let hcas = leaves * hosts;

    let probe = sim.probe(&["--window", "256", "--repeat", "5"], &[]);
    assert!(
        probe.status.success(),
        "probe failed: {}\n{}",
        probe.stdout,
        probe.stderr
    );
    let s = &lines_of(&probe.stdout, "summary")[0];
    assert_eq!(s["nodes"], (switches + hcas).to_string());
    assert_eq!(s["smp_timeouts"], "0");
    assert_eq!(s["pm_timeouts"], "0");

    let ib = sim.run_cmd(
        sim.command("ibnetdiscover"),
        "ibnetdiscover",
        Duration::from_secs(50),
    );
    assert!(ib.status.success(), "ibnetdiscover: {}", ib.stderr);
    let checked = assert_same_fabric(&probe.stdout, &parse_ibnetdiscover(&ib.stdout));
    // Every link is seen from both ends.
    assert_eq!(checked, 2 * (hcas + leaves * spines * links));

    let discover_ms: f64 = s["discover_ms"].parse().unwrap();
    println!(
        "fat tree {switches} switches / {hcas} HCAs: opensm -o {:?}; discovery {discover_ms:.1} ms \
         ({} SMPs); ibnetdiscover process {:?}; PortCounters {} MADs in {} ms = {} MADs/s (window 256)",
        sim.opensm_time, s["smps"], ib.elapsed, s["pm_mads"], s["pm_ms"], s["pm_mads_per_s"]
    );
}

#[test]
fn mid_size_fat_tree_27_switches_324_hcas() {
    run(18, 9, 18, 2, &[]);
}
