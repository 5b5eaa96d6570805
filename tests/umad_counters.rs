//! PortCounters through the umad transport and the MAD engine, against
//! ibsim (under umad2sim), compared with perfquery.

mod ibsim;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use ibsim::{IbSim, NET_2SW2PATH4HCA, lines_of, perfquery_fields};

/// Node LIDs by description (switch: port-0 LID; CA: its port's LID).
fn lids(out: &str) -> BTreeMap<String, u16> {
    lines_of(out, "node")
        .into_iter()
        .map(|n| (n["desc"].clone(), n["lid"].parse().unwrap()))
        .collect()
}

const EXACT: [&str; 6] = [
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortXmitDiscards",
    "PortXmitWait",
];
const MOVING: [&str; 4] = ["PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"];

#[test]
fn port_counters_match_perfquery() {
    let mut sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    let sets = [
        ("Switch1", 1u8, "SymbolErrorCounter", 7u64),
        ("Switch2", 3, "LinkDownedCounter", 3),
        ("Hca2", 1, "PortRcvErrors", 11),
        ("Hca4", 1, "PortXmitWait", 4242),
        ("Switch2", 5, "PortXmitDiscards", 300),
    ];
    for (node, port, field, v) in sets {
        sim.console(&format!(
            "PerformanceSet \"{node}\"[{port}] PortCounters.{field}={v}"
        ));
    }
    // Discovery through the split-off SMP handle, counters through the
    // first handle of the same port.
    let r = sim.probe(&["--split-smp"], &[]);
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let lids = lids(&r.stdout);
    let counters = lines_of(&r.stdout, "counters");
    assert!(
        lines_of(&r.stdout, "no_counters").is_empty(),
        "{}",
        r.stdout
    );
    // 2 switches x 8 ports + 4 HCA ports.
    assert_eq!(counters.len(), 20);

    let mut checked = 0;
    for (node, port, field, v) in sets {
        let lid = lids[node];
        let got = counters
            .iter()
            .find(|c| c["lid"] == lid.to_string() && c["port"] == port.to_string())
            .unwrap_or_else(|| panic!("no counters for {node}[{port}]"));
        assert_eq!(got[field], v.to_string(), "{node}[{port}] {field}");
        let pq = sim.tool("perfquery", &[&lid.to_string(), &port.to_string()]);
        let want = perfquery_fields(&pq.stdout);
        for f in EXACT {
            assert_eq!(
                got[f].parse::<u64>().unwrap(),
                want[f],
                "{node}[{port}] {f}: probe vs perfquery"
            );
        }
        // Traffic counters move with every MAD; perfquery ran later.
        for f in MOVING {
            let g: u64 = got[f].parse().unwrap();
            assert!(g <= want[f], "{node}[{port}] {f}: {g} > {}", want[f]);
            assert!(
                want[f] - g < 10_000,
                "{node}[{port}] {f}: {g} vs {}",
                want[f]
            );
        }
        checked += 1;
    }
    assert_eq!(checked, sets.len());
}

#[test]
fn unreachable_nodes_time_out_without_stalling_others() {
    let mut sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    let first = sim.probe(&["--no-counters"], &[]);
    assert!(first.status.success(), "{}", first.stderr);
    let lids = lids(&first.stdout);
    let (hca3, hca4) = (lids["Hca3"], lids["Hca4"]);

    // Hca3's link is gone (ibsim answers "no route"); every MAD crossing
    // Hca4's port is dropped silently (only the deadline catches it).
    sim.console("Unlink \"Hca3\"");
    sim.console("Error \"Hca4\"[1] 100");

    let timeout_ms = 150u64;
    let retries = 1u64;
    let r = sim.probe(
        &[
            "--extra",
            &format!("{hca3}:1"),
            "--extra",
            &format!("{hca4}:1"),
            "--timeout-ms",
            &timeout_ms.to_string(),
            "--retries",
            &retries.to_string(),
        ],
        &[],
    );
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let ok = lines_of(&r.stdout, "counters");
    let failed = lines_of(&r.stdout, "no_counters");
    let failed_lids: Vec<u16> = failed.iter().map(|f| f["lid"].parse().unwrap()).collect();
    assert!(
        failed_lids.contains(&hca3),
        "Hca3 did not time out: {failed:?}"
    );
    assert!(
        failed.iter().all(|f| f["outcome"] == "Timeout"),
        "{failed:?}"
    );
    // Everything else answered: 2 switches x 8 ports + Hca1 and Hca2.
    assert_eq!(ok.len(), 18, "{}", r.stdout);
    assert!(
        ok.iter()
            .all(|c| c["lid"] != hca3.to_string() && c["lid"] != hca4.to_string())
    );
    assert!(
        failed_lids.contains(&hca4),
        "Hca4 did not time out: {failed:?}"
    );
    // Bounded by the failed requests' deadlines, not by their number.
    let pm_ms: f64 = lines_of(&r.stdout, "summary")[0]["pm_ms"].parse().unwrap();
    let bound = (timeout_ms * (retries + 1) * 3) as f64;
    assert!(
        pm_ms < bound,
        "PortCounters batch took {pm_ms} ms (bound {bound})"
    );
    assert!(r.elapsed < Duration::from_secs(10));
    println!("batch with unreachable nodes: {pm_ms} ms; failed: {failed_lids:?}");
}

#[test]
fn independent_handles_get_only_their_own_replies() {
    let sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    let r = sim.probe(&["--handles", "4", "--window", "8"], &[]);
    assert!(
        r.status.success(),
        "probe failed: {}\n{}",
        r.stdout,
        r.stderr
    );
    let s = &lines_of(&r.stdout, "summary")[0];
    // 4 handles x (2 switches x 8 ports + 4 HCA ports).
    assert_eq!(s["handle_replies"], "80", "{s:?}");
    assert_eq!(s["handle_timeouts"], "0", "{s:?}");
    assert_eq!(s["handle_mismatches"], "0", "{s:?}");
}
