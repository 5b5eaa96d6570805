//! The agent over the built-in simulated fabric with one node that stops
//! answering: the fixture `scripts/bench-set-stall` writes to. The simulator
//! drops every MAD to a node made unreachable (`SimFabric::set_reachable`);
//! this program does that to the first dual-port CA once its rows are
//! published.
//!
//! ```text
//! silent_node_agent --agentx unix:/path/master [--topology FILE]
//!                   [--sweep-interval SECONDS] [--wait-unreachable]
//! ```
//! With `--wait-unreachable` it waits until the sweeper has marked the node
//! unreachable. It then prints `ready <GUID index> <GUID index>` (8 decimal
//! sub-identifiers each: the silent node, then a node that still answers)
//! and runs until its standard input closes.

use std::io::{BufRead, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use ibpm_agentx::app::{self, Backend, sim_options};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{NodeType, topology};
use ibpm_agentx::sim::SimFabric;

#[derive(Parser)]
struct Args {
    /// AgentX master address (unix:PATH or tcp:HOST:PORT).
    #[arg(long)]
    agentx: String,
    /// Topology file (default: the built-in small fabric).
    #[arg(long)]
    topology: Option<PathBuf>,
    #[arg(long, default_value_t = 1.0)]
    sweep_interval: f64,
    /// Wait until the sweeper marks the silent node unreachable.
    #[arg(long)]
    wait_unreachable: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let mut cfg = Config::default();
    cfg.agentx.socket = match args.agentx.parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("silent_node_agent: --agentx: {e}");
            return ExitCode::FAILURE;
        }
    };
    cfg.set.allow = true;
    cfg.sim.traffic = false;
    cfg.fabric.sweep_interval = Duration::from_secs_f64(args.sweep_interval.clamp(0.1, 86_400.0));
    let fabric = match &args.topology {
        Some(p) => match topology::load(p) {
            Ok(f) => f,
            Err(e) => {
                eprintln!("silent_node_agent: {e}");
                return ExitCode::FAILURE;
            }
        },
        None => topology::default_fabric(),
    };
    let sim = SimFabric::new(fabric, sim_options(&cfg));
    let fabric = sim.fabric();
    let Some(node) = fabric
        .nodes
        .iter()
        .find(|n| n.id.node_type == NodeType::Ca && n.ports.len() == 2)
        .or_else(|| fabric.nodes.iter().find(|n| n.id.node_type == NodeType::Ca))
    else {
        eprintln!("silent_node_agent: the fabric has no CA");
        return ExitCode::FAILURE;
    };
    let mut backend = Backend::sim(&sim);
    backend.subnets[0].source = None;
    let running = match app::start(&cfg, backend) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("silent_node_agent: {e}");
            return ExitCode::FAILURE;
        }
    };
    let cache = std::sync::Arc::clone(running.cache());
    let t0 = Instant::now();
    let wait = |done: &dyn Fn() -> bool, what: &str| -> bool {
        while !done() {
            if t0.elapsed() > Duration::from_secs(60) {
                eprintln!("silent_node_agent: {what} never happened");
                return false;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        true
    };
    if !wait(&|| cache.load().node(node.id.guid).is_some(), "first sweep") {
        running.stop();
        return ExitCode::FAILURE;
    }
    sim.set_reachable(node.id.guid, false);
    if args.wait_unreachable
        && !wait(
            &|| {
                cache
                    .load()
                    .node(node.id.guid)
                    .is_some_and(|n| !n.reachable)
            },
            "unreachable marking",
        )
    {
        running.stop();
        return ExitCode::FAILURE;
    }
    let index = |g: ibpm_agentx::ib::Guid| -> String {
        let v: Vec<String> = g.octets().iter().map(|b| b.to_string()).collect();
        v.join(".")
    };
    let healthy = fabric
        .nodes
        .iter()
        .find(|n| n.id.guid != node.id.guid)
        .map_or(node.id.guid, |n| n.id.guid);
    println!("ready {} {}", index(node.id.guid), index(healthy));
    let _ = std::io::stdout().flush();
    for line in std::io::stdin().lock().lines() {
        if line.is_err() {
            break;
        }
    }
    running.stop();
    ExitCode::SUCCESS
}
