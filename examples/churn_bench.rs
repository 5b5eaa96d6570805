//! Nodes that leave are let go: on the simulated fabric of a topology
//! file, on virtual time, a tenth of the fabric's nodes (channel adapters)
//! leave and others join, round after round, and the heap the agent's
//! state, snapshots and notification memory hold must come back to what
//! it was. Used by `scripts/bench-churn`.
//!
//! ```text
//! churn_bench TOPOLOGY [--rounds N] [--share PERCENT]
//! ```
//!
//! The channel adapters are cut into groups of `share` percent of the
//! fabric's nodes; after a sweep of them all, one group is away at a time
//! (the first from round 0 on). Each round the group away
//! comes back (a rediscovery finds it: new nodes to the agent, which
//! forgot them) and the next group goes silent (and is not found by the
//! rediscovery); one sweep then reads the nodes back and forgets the
//! silent ones (`forget_after` is half the sweep interval). After each
//! round the notification evaluator sees the snapshot and the heap is
//! trimmed and measured. Prints one `{"round":..}` line per round and a
//! `{"result":..}` line: the heap in use before the churn (the baseline:
//! the first group already forgotten, a few sweeps of the rest read) and
//! after the last round, and their ratio; fails when that is off by more
//! than 5%.

use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::ib::{Fabric, Guid, NodeType, topology};
use ibpm_agentx::notify::{Evaluator, NotifyConfig};
use ibpm_agentx::rig::{AgentRig, RigOptions};

#[derive(Parser)]
struct Args {
    /// Topology file (scripts/gen-fat-tree's format).
    topology: std::path::PathBuf,
    /// Rounds of churn.
    #[arg(long, default_value_t = 100)]
    rounds: usize,
    /// The share of the fabric's nodes that leaves each round, percent.
    #[arg(long, default_value_t = 10)]
    share: usize,
}

/// The heap in use, in bytes, after giving free pages back.
fn heap_in_use() -> u64 {
    ibpm_agentx::heap::trim();
    ibpm_agentx::heap::usage().map_or(0, |(in_use, _)| in_use)
}

/// `fabric` without the nodes of `away`.
fn without(fabric: &Fabric, away: &[Guid]) -> Fabric {
    Fabric {
        nodes: fabric
            .nodes
            .iter()
            .filter(|n| !away.contains(&n.id.guid))
            .cloned()
            .collect(),
    }
}

/// Sweeps without churn before the baseline.
const WARM_UP: usize = 4;

fn main() -> ExitCode {
    let args = Args::parse();
    let fabric = match topology::load(&args.topology) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("churn_bench: {}: {e}", args.topology.display());
            return ExitCode::FAILURE;
        }
    };
    let interval = Duration::from_secs(60);
    let mut rig = AgentRig::new(RigOptions {
        fabric,
        traffic: false,
        sweep: SweepConfig {
            interval,
            forget_after: Some(interval / 2),
            optional_attributes: false,
            health_every: 0,
            ..Default::default()
        },
        ..Default::default()
    });
    let fabric = rig.fabric();
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    let hosts: Vec<Guid> = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Ca)
        .map(|n| n.id.guid)
        .collect();
    let size = (fabric.nodes.len() * args.share / 100).max(1);
    let groups: Vec<&[Guid]> = hosts.chunks_exact(size).collect();
    if groups.len() < 2 {
        eprintln!("churn_bench: fewer than two groups of {size} channel adapters");
        return ExitCode::FAILURE;
    }
    let mut eval = Evaluator::new(NotifyConfig::default());
    let round = |rig: &mut AgentRig, r: usize, eval: &mut Evaluator| {
        let (back, away) = (
            groups[(r + groups.len() - 1) % groups.len()],
            groups[r % groups.len()],
        );
        for &g in back {
            rig.sim.set_reachable(g, true);
        }
        for &g in away {
            rig.sim.set_reachable(g, false);
        }
        rig.state.lock().offer(without(&fabric, away));
        rig.step_and_wait();
        eval.evaluate(&rig.cache.load());
        let nodes = rig.state.lock().node_count();
        let heap = heap_in_use();
        let rss = ibpm_agentx::heap::resident_kb().unwrap_or(0);
        println!(r#"{{"round":{r},"nodes":{nodes},"heap_in_use":{heap},"rss_kb":{rss}}}"#);
        (nodes, heap)
    };
    // A sweep of every node (the simulator makes each port's state as it
    // is first read), then round 0: the first group goes and is forgotten.
    rig.step_and_wait();
    round(&mut rig, 0, &mut eval);
    // The notification memory of a port fills over its first sweeps: the
    // baseline is taken once it has.
    for _ in 0..WARM_UP {
        rig.step_and_wait();
        eval.evaluate(&rig.cache.load());
    }
    let (nodes, baseline) = (rig.state.lock().node_count(), heap_in_use());
    let rss_first = ibpm_agentx::heap::resident_kb().unwrap_or(0);
    let expected = fabric.nodes.len() - size;
    let mut last = (nodes, baseline);
    let mut most = baseline;
    for r in 1..=args.rounds {
        last = round(&mut rig, r, &mut eval);
        most = most.max(last.1);
        if last.0 != expected {
            eprintln!(
                "churn_bench: round {r}: {} nodes, expected {expected}",
                last.0
            );
            return ExitCode::FAILURE;
        }
    }
    let ratio = last.1 as f64 / baseline.max(1) as f64;
    let rss_last = ibpm_agentx::heap::resident_kb().unwrap_or(0);
    let rss_ratio = rss_last as f64 / rss_first.max(1) as f64;
    println!(
        r#"{{"result":{{"nodes":{},"ports":{ports},"churned_per_round":{size},"rounds":{},"heap_in_use_first":{baseline},"heap_in_use_last":{},"heap_in_use_most":{most},"ratio":{ratio:.4},"rss_kb_first":{rss_first},"rss_kb_last":{rss_last},"rss_ratio":{rss_ratio:.4}}}}}"#,
        fabric.nodes.len(),
        args.rounds,
        last.1
    );
    if (ratio - 1.0).abs() > 0.05 {
        eprintln!("churn_bench: the heap did not come back within 5%: {ratio:.4}");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
