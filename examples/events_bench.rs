//! The event log's cost, against baselines measured in the same run. Used
//! by `scripts/bench-events`.
//!
//! ```text
//! events_bench TOPOLOGY [SWEEPS] [ROUNDS]
//! ```
//! - bytes held per event: a full ring (10,000 events about 2,000 nodes,
//!   a flood) by glibc's count of bytes in use, against the 256-byte
//!   target;
//! - `/api/events` with 10,000 events: its render (median of ROUNDS),
//!   against the 50 ms target and the bare copy out of the ring;
//! - the ring and the summaries after each sweep of the fabric of
//!   TOPOLOGY (a sweep's summary, the age bound and a sweep's events
//!   written), against the sweep itself.

use std::time::{Duration, Instant};

use ibpm_agentx::events::{Bounds, Filter, Kind, Log, New, Summary};
use ibpm_agentx::ib::{Guid, topology};
use ibpm_agentx::metrics::events_api;
use ibpm_agentx::rig::{AgentRig, RigOptions};

const T0: u64 = 1_796_000_000_000;

fn fill(log: &Log, n: u64) {
    let names: Vec<String> = (0..2000).map(|i| format!("node{i:04} HCA-1")).collect();
    for i in 0..n {
        let k = Kind::ALL[(i % 6) as usize + 3];
        log.write([New {
            kind: Some(k),
            time_ms: T0 + i,
            sweep: i / 100,
            guid: Guid(0x0002_c903_0000_0000 + (i % 2000)),
            name: &names[(i % 2000) as usize],
            port: (i % 36) as u8 + 1,
            peer: Some((Guid(0x0002_c903_0001_0000 + i % 50), 7, "leaf07")),
            before: 4,
            after: 1,
            detail: "flapping",
            ..Default::default()
        }]);
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: events_bench TOPOLOGY [SWEEPS] [ROUNDS]");
    let sweeps: u64 = args.get(2).map_or(4, |r| r.parse().expect("SWEEPS"));
    let rounds: usize = args.get(3).map_or(5, |r| r.parse().expect("ROUNDS"));
    let heap = || ibpm_agentx::heap::usage().map_or(0, |u| u.0);

    // Bytes per event.
    let before = heap();
    let log = Log::new(Bounds::default(), None);
    fill(&log, 30_000);
    let held = heap().saturating_sub(before);
    let per_event = held as f64 / log.len() as f64;
    println!(
        "{{\"events\":{},\"heap_bytes\":{held},\"ring_bytes\":{},\"bytes_per_event\":{per_event:.1}}}",
        log.len(),
        log.bytes()
    );

    // /api/events with 10,000 events.
    let all = Filter {
        limit: 10_000,
        ..Default::default()
    };
    let (mut render, mut copy) = (Vec::new(), Vec::new());
    let mut size = 0;
    for _ in 0..rounds {
        let t = Instant::now();
        let got = log.query(&all);
        copy.push(t.elapsed());
        assert_eq!(got.len(), 10_000);
        let t = Instant::now();
        size = events_api::render(Some(&log), &all, T0 + 40_000).len();
        render.push(t.elapsed());
    }
    let (render, copy) = (median(render), median(copy));
    println!(
        "{{\"api_events_ms\":{:.2},\"copy_ms\":{:.2},\"body_bytes\":{size}}}",
        render.as_secs_f64() * 1e3,
        copy.as_secs_f64() * 1e3
    );

    // The ring and the summaries against the sweep.
    let fabric = topology::load(std::path::Path::new(path)).expect("topology");
    let mut rig = AgentRig::swept(RigOptions {
        fabric,
        ..Default::default()
    });
    let snap = rig.cache.load();
    let ports: usize = snap.nodes.iter().map(|n| n.port_count()).sum();
    let log = Log::new(Bounds::default(), None);
    let (mut sweep_t, mut log_t) = (Duration::ZERO, Duration::ZERO);
    let names: Vec<String> = (0..100).map(|i| format!("node{i:04} HCA-1")).collect();
    for i in 0..sweeps {
        let t = Instant::now();
        rig.sweep();
        sweep_t += t.elapsed();
        let snap = rig.cache.load();
        let now = T0 + i * 10_000;
        let t = Instant::now();
        // A sweep's worth of events (a hundred ports changing), its
        // summary and the age bound.
        log.write(names.iter().enumerate().map(|(k, n)| New {
            kind: Some(Kind::PortState),
            time_ms: now,
            sweep: snap.sweep,
            guid: Guid(k as u64),
            name: n,
            port: 1,
            before: 4,
            after: 1,
            ..Default::default()
        }));
        log.summarize(Summary::of(&snap, now));
        log.tend(now, Instant::now());
        log_t += t.elapsed();
    }
    let ratio = log_t.as_secs_f64() / sweep_t.as_secs_f64().max(1e-9);
    println!(
        "{{\"ports\":{ports},\"sweep_s\":{:.4},\"log_s\":{:.6},\"log_over_sweep\":{ratio:.6}}}",
        sweep_t.as_secs_f64() / sweeps as f64,
        log_t.as_secs_f64() / sweeps as f64
    );
    println!(
        "bytes per event: {per_event:.1} (target at most 256: ratio {:.2}); \
         /api/events with 10,000 events: {:.1} ms (target at most 50: ratio {:.2}; \
         {:.1}x the copy out of the ring); ring and summaries: {:.4}% of the sweep at {ports} ports \
         (target at most 1%)",
        per_event / 256.0,
        render.as_secs_f64() * 1e3,
        render.as_secs_f64() * 1e3 / 50.0,
        render.as_secs_f64() / copy.as_secs_f64().max(1e-9),
        ratio * 100.0
    );
}
