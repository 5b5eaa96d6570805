//! What the simulator holds per port for each topology file given: its
//! fabric model and its own tables (LIDs, traffic, counters' clear points,
//! sample state), as heap bytes in use (glibc's count) after the file is
//! loaded into a [`SimFabric`], per port; and what one copy of every
//! plane's fabric takes beside it (what the agent's backends are handed).
//! Compare a one-plane file with the same ports split in planes:
//!
//! ```text
//! scripts/gen-pods 60 16 48 4 > one.net
//! scripts/gen-pods --planes 8 60 2 48 4 > eight.net
//! cargo run --release --example sim_memory one.net eight.net
//! ```
//! Prints one JSON line per file.

use std::path::Path;
use std::process::ExitCode;

use ibpm_agentx::ib::topology;
use ibpm_agentx::sim::{SimFabric, SimOptions};

fn in_use() -> u64 {
    ibpm_agentx::heap::usage().map_or(0, |(used, _)| used)
}

fn main() -> ExitCode {
    let files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        eprintln!("usage: sim_memory FILE...");
        return ExitCode::from(2);
    }
    for f in &files {
        let before = in_use();
        let t = match topology::load_topology(Path::new(f)) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("{e}");
                return ExitCode::FAILURE;
            }
        };
        let ports: usize = t.fabric.nodes.iter().map(|n| n.ports.len()).sum();
        let nodes = t.fabric.nodes.len();
        let cabled = t
            .fabric
            .nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter(|p| p.remote().is_some())
            .count();
        let sim = SimFabric::from_topology(t, SimOptions::default());
        let built = in_use();
        let planes: Vec<_> = sim.planes().iter().map(|p| p.fabric()).collect();
        let with_planes = in_use();
        let plane_ports: usize = planes
            .iter()
            .flat_map(|f| &f.nodes)
            .map(|n| n.ports.len())
            .sum();
        let per = |b: u64| b as f64 / ports as f64;
        println!(
            "{{\"file\":{f:?},\"nodes\":{nodes},\"ports\":{ports},\"cabled\":{cabled},\"planes\":{},\"plane_ports\":{plane_ports},\"sim_bytes_per_port\":{:.1},\"plane_fabrics_bytes_per_port\":{:.1}}}",
            planes.len(),
            per(built.saturating_sub(before)),
            per(with_planes.saturating_sub(built)),
        );
        drop(planes);
        drop(sim);
    }
    ExitCode::SUCCESS
}
