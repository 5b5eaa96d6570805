//! The port-health evaluator's cost at fabric scale, against the sweep it
//! follows: the simulated agent sweeps the fabric of a topology file, and
//! after each sweep the evaluator is fed the published snapshot with 1% of
//! its ports made unhealthy (their links degraded, a flap on every tenth of
//! them). Used by `scripts/bench-health`.
//!
//! ```text
//! health_bench TOPOLOGY [SWEEPS]
//! ```
//! Prints the sweeps' and the evaluations' time, their ratio, and the heap
//! the evaluator holds per port (glibc's count of bytes in use, before
//! and after it took in the fabric).

use std::sync::Arc;
use std::time::{Duration, Instant};

use ibpm_agentx::fabric::cache::Snapshot;
use ibpm_agentx::health::{Evaluator, HealthConfig};
use ibpm_agentx::ib::{LinkHealth, PhysState, PortState, topology};
use ibpm_agentx::rig::{AgentRig, RigOptions};

/// The snapshot with every 100th port's link degraded and every 1000th
/// port down at every other sweep (the records of those nodes copied; the
/// rest shared).
fn unhealthy(snap: &Snapshot, sweep: u64) -> Snapshot {
    let mut out = snap.clone();
    let mut k = 0u64;
    for n in &mut out.nodes {
        let first = k;
        k += n.port_count() as u64;
        if (first..k).all(|i| !i.is_multiple_of(100)) {
            continue;
        }
        let rec = Arc::make_mut(n);
        for (i, p) in (first..).zip(rec.ports_mut().iter_mut()) {
            if i.is_multiple_of(100) {
                p.assessment.health = Some(LinkHealth::WidthDegraded);
            }
            if i % 1000 == 0 && sweep.is_multiple_of(2) {
                p.link.state = Some(PortState::Down);
                p.link.phys_state = Some(PhysState::Polling);
            }
        }
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: health_bench TOPOLOGY [SWEEPS]");
    let sweeps: u64 = args.get(2).map_or(5, |r| r.parse().expect("SWEEPS"));
    let fabric = topology::load(std::path::Path::new(path)).expect("topology");
    let t = Instant::now();
    let mut rig = AgentRig::swept(RigOptions {
        fabric,
        ..Default::default()
    });
    let snap = rig.cache.load();
    let ports: usize = snap.nodes.iter().map(|n| n.port_count()).sum();
    println!(
        "{{\"loaded\":{{\"nodes\":{},\"ports\":{ports},\"s\":{:.2}}}}}",
        snap.nodes.len(),
        t.elapsed().as_secs_f64()
    );
    let heap = || ibpm_agentx::heap::usage().map_or(0, |u| u.0);
    let mut ev = Evaluator::new(HealthConfig::default());
    let (mut sweep_time, mut eval_time) = (Duration::ZERO, Duration::ZERO);
    let mut now = 1_795_944_802_000u64;
    let mut last = None;
    for i in 0..sweeps {
        let t = Instant::now();
        rig.sweep();
        let s = t.elapsed();
        let snap = unhealthy(&rig.cache.load(), i + 1);
        now += 10_000;
        let t = Instant::now();
        let v = ev
            .evaluate(&snap, ibpm_agentx::health::At::both(now), &[])
            .expect("a new sweep");
        let e = t.elapsed();
        println!(
            "{{\"sweep\":{:.4},\"evaluation\":{:.4},\"unhealthy\":{}}}",
            s.as_secs_f64(),
            e.as_secs_f64(),
            v.unhealthy().count()
        );
        // The first sweep fills the evaluator: not timed.
        if i > 0 {
            sweep_time += s;
            eval_time += e;
        }
        last = Some(v);
        drop(snap);
    }
    let v = last.expect("a sweep");
    let unhealthy_ports = v.unhealthy().count();
    let state_per_port = ev.port_bytes() as f64 / ports as f64;
    // What the evaluator and its last verdicts hold: the heap they give
    // back.
    let held_at = heap();
    drop((ev, v));
    let held = held_at.saturating_sub(heap());
    let timed = sweeps.saturating_sub(1).max(1) as f64;
    let ratio = eval_time.as_secs_f64() / sweep_time.as_secs_f64().max(1e-9);
    let per_port = held as f64 / ports as f64;
    println!(
        "{{\"result\":{{\"ports\":{ports},\"unhealthy\":{},\"sweep_s\":{:.4},\"evaluation_s\":{:.4},\
         \"evaluation_over_sweep\":{ratio:.4},\"heap_bytes_per_port\":{per_port:.1},\
         \"state_bytes_per_port\":{:.1}}}}}",
        unhealthy_ports,
        sweep_time.as_secs_f64() / timed,
        eval_time.as_secs_f64() / timed,
        state_per_port,
    );
    println!(
        "evaluation / sweep: {:.2}% (target at most 5%); heap per port: {per_port:.1} bytes \
         (target at most 32)",
        ratio * 100.0
    );
}
