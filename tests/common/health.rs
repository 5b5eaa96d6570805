//! An agent on the simulated fabric, in this process, with its metrics
//! endpoint on a free loopback port and a short health recovery window: a
//! link taken down shows as a verdict within a few sweeps and clears
//! seconds after it comes back.

use std::path::Path;
use std::time::Duration;

use ibpm_agentx::app::{self, Backend, Running, Shutdown};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::{Guid, topology};
use ibpm_agentx::sim::SimFabric;

pub struct HealthAgent {
    pub sim: SimFabric,
    pub agent: Option<Running>,
    pub port: u16,
}

impl Drop for HealthAgent {
    fn drop(&mut self) {
        if let Some(a) = self.agent.take() {
            a.stop();
        }
    }
}

impl HealthAgent {
    /// Sweeps every 0.5 s, the fabric rediscovered every second, no
    /// simulated traffic (no errors, no congestion: healthy until a test
    /// breaks it), verdicts cleared 2 s after their condition is gone;
    /// `metrics` adds [metrics] keys (the file is `dir/agent.toml`).
    pub fn start(dir: &Path, metrics: &str) -> HealthAgent {
        let port = super::free_tcp_port();
        let text = format!(
            "[agentx]\nenabled = false\n\
             [fabric]\nsweep_interval = 0.5\nrediscover_interval = 1\n\
             [sim]\ntraffic = false\n\
             [health]\nrecovery = 2\nflap_window = 60\ncongestion_window = 60\n\
             [metrics]\nlisten = \"127.0.0.1:{port}\"\n{metrics}\n"
        );
        let path = dir.join("agent.toml");
        std::fs::write(&path, &text).unwrap();
        let cfg = Config::load(&path).expect("test configuration");
        let sim = SimFabric::new(topology::default_fabric(), app::sim_options(&cfg));
        let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");
        let a = HealthAgent {
            sim,
            agent: Some(agent),
            port,
        };
        a.wait_evaluated(3);
        a
    }

    /// Waits until the evaluator has judged `n` more sweeps.
    pub fn wait_evaluated(&self, n: u64) {
        let cache = self.agent.as_ref().unwrap().cache();
        let until = cache.load().health.sweep + n;
        super::wait_until(
            "evaluated sweeps",
            Duration::from_secs(30),
            Duration::from_millis(50),
            || cache.load().health.sweep >= until,
        );
    }

    /// A link between two switches: its ends.
    pub fn switch_link(&self) -> ((Guid, u8), (Guid, u8)) {
        switch_link(&self.sim.fabric())
    }

    /// The pmPortName of an end, as the page shows it.
    pub fn name(&self, (g, p): (Guid, u8)) -> String {
        let snap = self.agent.as_ref().unwrap().cache().load();
        let n = snap.node(g).unwrap();
        ibpm_agentx::mib::read::port_name(n, p, &snap)
    }
}

/// A GET on 127.0.0.1:`port` with extra header lines: the status, the
/// head and the body as text. A 503 with Retry-After (a render of this
/// host's under way: the test's Prometheus scraping) is asked again, up
/// to 50 times 100 ms apart.
pub fn get(port: u16, path: &str, headers: &str) -> (u16, String, String) {
    let mut got = super::http::get(port, path, headers);
    for _ in 0..50 {
        if got.0 != 503 || !got.1.to_ascii_lowercase().contains("retry-after") {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        got = super::http::get(port, path, headers);
    }
    let (status, head, body) = got;
    (
        status,
        head,
        String::from_utf8(body).expect("a text answer"),
    )
}

pub use ibpm_agentx::rig::switch_link;
