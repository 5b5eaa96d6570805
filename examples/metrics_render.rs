//! The cost of rendering the metrics of a fabric, without HTTP: the
//! simulated agent sweeps the fabric of a topology file once, then the
//! default exposition is rendered ROUNDS times plain and gzipped into a
//! sink. Used to profile `metrics::render` (`scripts/bench-metrics large`
//! measures the endpoint as a scraper sees it).
//!
//! ```text
//! metrics_render TOPOLOGY [ROUNDS]
//! ```

use std::io::Write;
use std::time::Instant;

use ibpm_agentx::ib::topology;
use ibpm_agentx::metrics::HttpCounters;
use ibpm_agentx::metrics::render::{Format, Scrape, render};
use ibpm_agentx::metrics::{Collectors, stream::gzip_writer};
use ibpm_agentx::mib::EndpointCounters;
use ibpm_agentx::rig::{AgentRig, RigOptions};

/// Counts what it is given.
struct Count(u64);

impl Write for Count {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0 += b.len() as u64;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: metrics_render TOPOLOGY [ROUNDS]");
    let rounds: u32 = args.get(2).map_or(3, |r| r.parse().expect("ROUNDS"));
    let fabric = topology::load(std::path::Path::new(path)).expect("topology");
    let t = Instant::now();
    let rig = AgentRig::swept(RigOptions {
        fabric,
        traffic: false,
        ..Default::default()
    });
    let snap = rig.cache.load();
    let ports: usize = snap.nodes.iter().map(|n| n.port_count()).sum();
    println!(
        "swept {} nodes, {ports} ports in {:.2?}",
        snap.nodes.len(),
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
    for _ in 0..rounds {
        let mut plain = Count(0);
        let t = Instant::now();
        render(&scrape, &mut plain).unwrap();
        let p = t.elapsed();
        let mut out = Count(0);
        let t = Instant::now();
        let mut z = gzip_writer(&mut out);
        render(&scrape, &mut z).unwrap();
        z.finish().unwrap();
        let g = t.elapsed();
        println!(
            "plain {:.3} s ({} octets), gzip {:.3} s ({} octets)",
            p.as_secs_f64(),
            plain.0,
            g.as_secs_f64(),
            out.0
        );
    }
}
