//! Time full sweeps of a fabric through a umad port against the floor: the
//! same MADs (PortCounters and PortCountersExtended of every port) sent by
//! the bare MAD engine with a window of 256. Used by `scripts/bench-sweep`
//! (which brings up ibsim); runs on a real host too.
//!
//! ```text
//! sweep_bench [--ca NAME] [--port N] [--window N] [--sweeps N] [--floor-window N]
//! ```
//! Prints `{"discovery":..}`, one `{"floor":..}` and one `{"sweep":..}` line
//! per run, and a `{"result":..}` line with the best of each and the
//! median of the runs' sweep / floor.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Parser;
use ibpm_agentx::fabric::cache::Cache;
use ibpm_agentx::fabric::discover::{DiscoverOptions, discover_with_stats};
use ibpm_agentx::fabric::engine::{Engine, EngineConfig, MadOutcome, MadRequest};
use ibpm_agentx::fabric::mads::{get, port_counters_data};
use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::fabric::state::SharedState;
use ibpm_agentx::fabric::sweep::Sweeper;
use ibpm_agentx::ib::{Fabric, NodeType};
use ibpm_agentx::pm::PortCountersExtended;
use ibpm_agentx::pm::mad::attr;
use ibpm_agentx::transport::MadAddr;
use ibpm_agentx::transport::umad::{UmadConfig, UmadTransport};

#[derive(Parser)]
struct Args {
    #[arg(long)]
    ca: Option<String>,
    #[arg(long)]
    port: Option<u8>,
    /// The sweeper's window.
    #[arg(long, default_value_t = 256)]
    window: usize,
    /// The floor sender's window.
    #[arg(long, default_value_t = 256)]
    floor_window: usize,
    /// Timed runs of each (after two warm-up sweeps).
    #[arg(long, default_value_t = 3)]
    sweeps: u32,
    /// Per-MAD deadline, ms.
    #[arg(long, default_value_t = 200)]
    timeout_ms: u32,
}

/// PortCounters and PortCountersExtended of every port, as the sweeper
/// addresses them.
fn floor_requests(fabric: &Fabric) -> Vec<MadRequest> {
    let mut reqs = Vec::new();
    for n in &fabric.nodes {
        for p in &n.ports {
            let lid = n.pma_lid(p.num);
            if lid == 0 {
                continue;
            }
            let to = MadAddr::gsi(lid);
            reqs.push(get(
                to,
                attr::PORT_COUNTERS,
                port_counters_data(p.num, 0, 0),
            ));
            let mut data = [0u8; 192];
            PortCountersExtended {
                port_select: p.num,
                ..Default::default()
            }
            .encode(&mut data);
            reqs.push(get(to, attr::PORT_COUNTERS_EXTENDED, data));
        }
    }
    reqs
}

fn main() -> ExitCode {
    let args = Args::parse();
    let t = match UmadTransport::open(&UmadConfig {
        ca: args.ca.clone(),
        port: args.port,
        timeout_ms: args.timeout_ms,
        retries: 0,
        serve_perf_mgt: false,
        ..Default::default()
    }) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("sweep_bench: {e}");
            return ExitCode::from(2);
        }
    };
    let dopts = DiscoverOptions {
        window: 256,
        ..Default::default()
    };
    let (fabric, ds) = {
        let mut smp = t.smp_handle();
        match discover_with_stats(&mut smp, &dopts) {
            Ok(r) => r,
            Err(e) => {
                eprintln!("sweep_bench: {e}");
                return ExitCode::from(3);
            }
        }
    };
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    let switches = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Switch)
        .count();
    println!(
        "{{\"discovery\":{{\"nodes\":{},\"switches\":{switches},\"ports\":{ports},\"smps\":{},\"ms\":{:.1}}}}}",
        fabric.nodes.len(),
        ds.smps_sent,
        ds.elapsed.as_secs_f64() * 1e3
    );
    let ecfg = |window| EngineConfig {
        window,
        timeout: Duration::from_millis(u64::from(args.timeout_ms)),
        retries: 3,
    };

    // The floor: the bare engine, no state, no decoding, on its own handle.
    let reqs = floor_requests(&fabric);
    let floor_handle = match t.pm_handle() {
        Ok(h) => h,
        Err(e) => {
            eprintln!("sweep_bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut floor = Engine::new(Box::new(floor_handle), ecfg(args.floor_window));

    // The sweeper: ClassPortInfo and the sample attributes settle in the
    // first two sweeps (ibsim answers no PortSamplesControl); after that a
    // sweep is PortCounters + PortCountersExtended of every port.
    let state = SharedState::new(
        fabric,
        SweepConfig {
            optional_attributes: false,
            ..Default::default()
        },
        Instant::now(),
    );
    let cache = Arc::new(Cache::new());
    let mut sweeper = Sweeper::new(state, Engine::new(Box::new(t), ecfg(args.window)), cache);
    for _ in 0..2 {
        let s = sweeper.sweep_once();
        println!(
            "{{\"warmup\":{},\"mads\":{},\"timeouts\":{},\"ms\":{:.1}}}",
            s.sweep,
            s.mads,
            s.timeouts,
            s.elapsed.as_secs_f64() * 1e3
        );
    }
    // Alternate floor and sweep runs so both see the same conditions.
    let mut best_floor = f64::MAX;
    let mut best = f64::MAX;
    let mut best_mads = 0;
    // Each run's sweep over the floor just before it: their median stands
    // against a spell of the machine's that slows a whole run or two.
    let mut pairs = Vec::new();
    for run in 0..args.sweeps.max(1) {
        let start = Instant::now();
        let mut replies = 0u64;
        let st = floor.run(&reqs, |_, o| {
            if matches!(o, MadOutcome::Reply { .. }) {
                replies += 1;
            }
        });
        let s = start.elapsed().as_secs_f64();
        best_floor = best_floor.min(s);
        println!(
            "{{\"floor\":{run},\"mads\":{},\"replies\":{replies},\"timeouts\":{},\"ms\":{:.1},\"mads_per_s\":{:.0}}}",
            st.sent,
            st.timeouts,
            s * 1e3,
            st.sent as f64 / s
        );

        let floor_secs = s;
        let s = sweeper.sweep_once();
        let secs = s.elapsed.as_secs_f64();
        pairs.push(secs / floor_secs);
        if secs < best {
            best = secs;
            best_mads = s.mads;
        }
        println!(
            "{{\"sweep\":{},\"nodes\":{},\"answered\":{},\"mads\":{},\"timeouts\":{},\"ms\":{:.1},\"mads_per_s\":{:.0}}}",
            s.sweep,
            s.nodes,
            s.answered,
            s.mads,
            s.timeouts,
            secs * 1e3,
            s.mads as f64 / secs
        );
    }
    pairs.sort_by(f64::total_cmp);
    let median = pairs[pairs.len() / 2];
    println!(
        "{{\"result\":{{\"ports\":{ports},\"floor_ms\":{:.1},\"floor_mads\":{},\"sweep_ms\":{:.1},\"sweep_mads\":{best_mads},\"sweep_mads_per_s\":{:.0},\"sweep_over_floor\":{:.3},\"median_pair_ratio\":{median:.3}}}}}",
        best_floor * 1e3,
        reqs.len(),
        best * 1e3,
        best_mads as f64 / best,
        best / best_floor
    );
    ExitCode::SUCCESS
}
