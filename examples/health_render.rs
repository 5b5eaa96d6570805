//! The cost of the status page and of `/api/health` at a fabric's size,
//! without HTTP: the simulated agent sweeps the fabric of a topology file
//! without traffic, then a share of its links is taken down and another
//! given symbol errors, and it is swept twice again (for rates); the
//! health evaluator judges every sweep (link lost, erroring: both ends of
//! each link), and the page, the JSON and (the baseline) the default
//! metrics exposition of the same snapshot are rendered ROUNDS times.
//! Prints the median of each, and the page's and the JSON's ratio to the
//! baseline (`scripts/bench-health` runs it on the largest subnet).
//!
//! ```text
//! health_render TOPOLOGY [ROUNDS] [UNHEALTHY_PERCENT]
//! ```

use std::sync::Arc;
use std::time::{Duration, Instant};

use ibpm_agentx::health::{Evaluator, HealthConfig};
use ibpm_agentx::ib::topology;
use ibpm_agentx::metrics::render::{Format, Scrape, render};
use ibpm_agentx::metrics::status::{Query, report};
use ibpm_agentx::metrics::{Collectors, HttpCounters, health_api, page};
use ibpm_agentx::mib::EndpointCounters;
use ibpm_agentx::rig::{AgentRig, RigOptions};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: health_render TOPOLOGY [ROUNDS] [UNHEALTHY_PERCENT]");
    let rounds: usize = args.get(2).map_or(5, |r| r.parse().expect("ROUNDS"));
    let percent: f64 = args.get(3).map_or(1.0, |r| r.parse().expect("PERCENT"));
    let fabric = topology::load(std::path::Path::new(path)).expect("topology");
    let t = Instant::now();
    let mut rig = AgentRig::new(RigOptions {
        fabric,
        traffic: false,
        ..Default::default()
    });
    let mut eval = Evaluator::new(HealthConfig::default());
    let mut now = 1_796_032_800_000u64;
    let mut sweep = |rig: &mut AgentRig, eval: &mut Evaluator| {
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        now += 10_000;
        let v = eval
            .evaluate(&rig.cache.load(), ibpm_agentx::health::At::both(now), &[])
            .expect("a sweep");
        rig.cache.set_health(Arc::new(v));
    };
    sweep(&mut rig, &mut eval);
    // Without traffic no link has a verdict of its own: half the share is
    // links taken down (link lost), half links with a symbol error rate
    // (erroring, and ranked by error rate), both ends of each.
    let f = rig.sim.fabric();
    let ports: usize = f.nodes.iter().map(|n| n.ports.len()).sum();
    let links = (ports as f64 * percent / 100.0 / 2.0).round() as usize;
    let (mut down, mut noisy) = (0, 0);
    'links: for n in &f.nodes {
        for p in &n.ports {
            if down + noisy >= links {
                break 'links;
            }
            let Some(peer) = p.remote().filter(|peer| (n.id.guid, p.num) < *peer) else {
                continue;
            };
            if down <= noisy {
                down += usize::from(rig.sim.set_link(n.id.guid, p.num, false));
            } else {
                let per_s = 1.0 + (noisy % 97) as f64;
                noisy += usize::from(rig.sim.set_symbol_error_rate(peer.0, peer.1, per_s));
            }
        }
    }
    rig.state.lock().offer(rig.sim.fabric());
    sweep(&mut rig, &mut eval);
    sweep(&mut rig, &mut eval);
    let snap = rig.cache.load();
    let h = &snap.health;
    println!(
        "fabric: {} nodes, {ports} ports, {down} links taken down, {noisy} with symbol errors, {} ports with a verdict ({:.2} %), set up in {:.1?}",
        snap.nodes.len(),
        h.unhealthy().count(),
        100.0 * h.unhealthy().count() as f64 / ports as f64,
        t.elapsed()
    );
    let (endpoint, http) = (EndpointCounters::default(), HttpCounters::default());
    let scrape = Scrape {
        snap: &snap,
        endpoint: &endpoint,
        http: &http,
        format: Format::Text,
        collectors: Collectors::defaults(),
        taken_unix: None,
        events: None,
        now: std::time::Instant::now(),
    };
    let q = Query::default();
    let (mut pg, mut js, mut base) = (Vec::new(), Vec::new(), Vec::new());
    let (mut pg_len, mut js_len) = (0, 0);
    for _ in 0..rounds {
        let t = Instant::now();
        let r = report(&snap, now, Instant::now(), &q);
        let html = page::render(&r, &q, "/metrics");
        pg.push(t.elapsed().as_secs_f64() * 1000.0);
        pg_len = html.len();
        let t = Instant::now();
        let r = report(&snap, now, Instant::now(), &q);
        let json = health_api::render(&r);
        js.push(t.elapsed().as_secs_f64() * 1000.0);
        js_len = json.len();
        let t = Instant::now();
        render(&scrape, &mut std::io::sink()).expect("render");
        base.push(t.elapsed().as_secs_f64() * 1000.0);
    }
    let (pg, js, base) = (median(pg), median(js), median(base));
    println!("baseline: the default metrics exposition of the same snapshot: {base:.1} ms");
    for (what, ms, len) in [("status page", pg, pg_len), ("/api/health", js, js_len)] {
        println!(
            "{what}: {ms:.1} ms ({len} octets), {:.3}x the baseline, target 50 ms: {}",
            ms / base,
            if ms <= 50.0 { "met" } else { "MISSED" }
        );
    }
}
