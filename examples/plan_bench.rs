//! The comparison with the plan at fabric scale, against the sweep it
//! follows: the simulated agent sweeps the fabric of a topology file, and
//! after each sweep the comparison is fed the published snapshot as if
//! discovery had changed it (the worst case: the agent compares only when
//! it did), with every 1000th port down (a missing cable at both ends).
//! The plan is the topology file itself, in ibnetdiscover's form. Used by
//! `scripts/bench-plan`.
//!
//! ```text
//! plan_bench TOPOLOGY [SWEEPS]
//! ```
//! Prints the sweeps' and the comparisons' time, their ratio, and the heap
//! the comparison holds per port (glibc's count of bytes in use).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ibpm_agentx::cabling::compare::{CompareConfig, Comparison};
use ibpm_agentx::fabric::cache::Snapshot;
use ibpm_agentx::ib::cabling::{Plan, PlanSource};
use ibpm_agentx::ib::{PhysState, PortState, topology};
use ibpm_agentx::rig::{AgentRig, RigOptions};

/// The snapshot as rediscovered now, with every 1000th port down (those
/// nodes' records copied; the rest shared).
fn rediscovered(snap: &Snapshot) -> Snapshot {
    let mut out = snap.clone();
    out.stats.discovered = Some(Instant::now());
    let mut k = 0u64;
    for n in &mut out.nodes {
        let first = k;
        k += n.port_count() as u64;
        if (first..k).all(|i| !i.is_multiple_of(1000)) {
            continue;
        }
        let rec = Arc::make_mut(n);
        for (i, p) in (first..).zip(rec.ports_mut().iter_mut()) {
            if i.is_multiple_of(1000) {
                p.link.state = Some(PortState::Down);
                p.link.phys_state = Some(PhysState::Polling);
                p.link.set_remote(None);
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: plan_bench TOPOLOGY [SWEEPS]");
    let sweeps: u64 = args.get(2).map_or(5, |r| r.parse().expect("SWEEPS"));
    let fabric = topology::load(std::path::Path::new(path)).expect("topology");
    let heap = || ibpm_agentx::heap::usage().map_or(0, |u| u.0);
    let t = Instant::now();
    let plan = Plan::from_fabric(&fabric, PlanSource::Ibnetdiscover);
    let mut rig = AgentRig::swept(RigOptions {
        fabric,
        ..Default::default()
    });
    let snap = rig.cache.load();
    let ports: usize = snap.nodes.iter().map(|n| n.port_count()).sum();
    println!(
        "{{\"loaded\":{{\"nodes\":{},\"ports\":{ports},\"planned_links\":{},\"s\":{:.2}}}}}",
        snap.nodes.len(),
        plan.links.len(),
        t.elapsed().as_secs_f64()
    );
    drop(snap);
    let before = heap();
    let mut cmp = Comparison::new(CompareConfig::default(), Some(&plan));
    let compiled = heap().saturating_sub(before);
    drop(plan);
    let (mut sweep_time, mut cmp_time) = (Duration::ZERO, Duration::ZERO);
    let mut now = 1_795_944_802_000u64;
    let mut verdicts = 0;
    for i in 0..sweeps {
        let t = Instant::now();
        rig.sweep();
        let s = t.elapsed();
        let snap = rediscovered(&rig.cache.load());
        now += 10_000;
        let t = Instant::now();
        let o = cmp.evaluate(&snap, now).expect("a rediscovered snapshot");
        let c = t.elapsed();
        verdicts = o.verdicts.verdicts.len();
        println!(
            "{{\"sweep\":{:.4},\"comparison\":{:.4},\"verdicts\":{verdicts}}}",
            s.as_secs_f64(),
            c.as_secs_f64(),
        );
        // The first sweep is not timed (the records are made).
        if i > 0 {
            sweep_time += s;
            cmp_time += c;
        }
        drop((o, snap));
    }
    let held_at = heap();
    let plan_bytes = cmp.plan_bytes();
    drop(cmp);
    let held = held_at.saturating_sub(heap());
    let timed = sweeps.saturating_sub(1).max(1) as f64;
    let ratio = cmp_time.as_secs_f64() / sweep_time.as_secs_f64().max(1e-9);
    let per_port = held as f64 / ports as f64;
    println!(
        "{{\"result\":{{\"ports\":{ports},\"verdicts\":{verdicts},\"sweep_s\":{:.4},\
         \"comparison_s\":{:.4},\"comparison_over_sweep\":{ratio:.4},\
         \"heap_bytes_per_port\":{per_port:.1},\"compiled_bytes_per_port\":{:.1},\
         \"plan_bytes_per_port\":{:.1}}}}}",
        sweep_time.as_secs_f64() / timed,
        cmp_time.as_secs_f64() / timed,
        compiled as f64 / ports as f64,
        plan_bytes as f64 / ports as f64,
    );
    println!(
        "comparison / sweep: {:.2}% (target at most 2%); heap per port: {per_port:.1} bytes \
         (target at most 24)",
        ratio * 100.0
    );
}
