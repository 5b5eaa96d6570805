//! A PerfMgt agent (PMA) for one node of an ibsim fabric, answering what
//! ibsim itself does not: PortSamplesControl (Get/Set) and
//! PortSamplesResult (Get), with the built-in simulator's sample logic.
//!
//! Run it under umad2sim attached to the node, with ibsim forwarding that
//! node's unanswerable PerfMgt requests to it:
//!
//! ```text
//! SIM_HOST=<node> SIM_SET_ISSM=1 LD_PRELOAD=.../libumad2sim.so IBSIM_SOCKNAME=<sim> \
//!     pma_responder --topology <netfile> --node <node>
//! ```
//! It prints `{"ready":..}` once registered, then one line per request it
//! answered: `{"request":"0x10","method":2,"from_lid":..,"status":..}`.
//! Runs until killed.

use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use ibpm_agentx::ib::topology;
use ibpm_agentx::pm::mad;
use ibpm_agentx::sim::{SimClock, SimFabric, SimOptions};
use ibpm_agentx::transport::MadTransport;
use ibpm_agentx::transport::umad::{UmadConfig, UmadTransport};

#[derive(Parser)]
struct Args {
    /// The fabric's topology file (the one ibsim runs).
    #[arg(long)]
    topology: std::path::PathBuf,
    /// Description of the node to answer for (as in the topology file).
    #[arg(long)]
    node: String,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let fabric = match topology::load(&args.topology) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("pma_responder: {e}");
            return ExitCode::from(2);
        }
    };
    let sim = SimFabric::new(
        fabric,
        SimOptions {
            seed: 1,
            traffic: true,
            clock: SimClock::Real,
            ..Default::default()
        },
    );
    let simulated = sim.fabric();
    let Some(node) = simulated
        .nodes
        .iter()
        .find(|n| *n.id.description == *args.node)
    else {
        eprintln!("pma_responder: no node {:?} in the topology", args.node);
        return ExitCode::from(2);
    };
    // The LID the simulator knows the node by (not the fabric's).
    let sim_lid = node.ports.first().map_or(0, |p| node.pma_lid(p.num));
    let cfg = UmadConfig {
        serve_perf_mgt: true,
        ..Default::default()
    };
    let mut t = match UmadTransport::open(&cfg) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("pma_responder: {e}");
            return ExitCode::from(2);
        }
    };
    println!(
        "{{\"ready\":\"{}\",\"lid\":{}}}",
        args.node,
        t.local_port().lid
    );
    let _ = std::io::stdout().flush();
    loop {
        let rx = match t.recv(Duration::from_millis(500)) {
            Ok(Some(rx)) => rx,
            Ok(None) => continue,
            Err(e) => {
                eprintln!("pma_responder: {e}");
                return ExitCode::FAILURE;
            }
        };
        if rx.status != 0 || rx.mad[3] & mad::method::RESPONSE_BIT != 0 {
            continue;
        }
        let Ok((h, _)) = mad::parse(&rx.mad[..]) else {
            continue;
        };
        let Some(reply) = sim.handle(sim_lid, &rx.mad) else {
            continue;
        };
        let status = mad::parse(&reply).map(|(r, _)| r.status).unwrap_or(0);
        if let Err(e) = t.send(&rx.from, &reply) {
            eprintln!("pma_responder: reply to LID {}: {e}", rx.from.lid);
            continue;
        }
        println!(
            "{{\"request\":\"0x{:02x}\",\"method\":{},\"from_lid\":{},\"status\":{status}}}",
            h.attr_id, h.method, rx.from.lid
        );
        let _ = std::io::stdout().flush();
    }
}
