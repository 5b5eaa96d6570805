//! The running agent owns its threads: the process's thread count (from
//! /proc/self/task) is back where it was once the agent is dropped, and a
//! start that fails part-way leaves no thread behind. Both are checked in
//! one test, so that no other test's threads come and go in between.

use std::time::{Duration, Instant};

use ibpm_agentx::agentx::AgentxAddr;
use ibpm_agentx::app::{self, Backend};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::topology;
use ibpm_agentx::sim::{SimFabric, SimOptions};

fn threads() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// Waits (bounded) for the thread count to come back to `want`: a joined
/// thread may linger in /proc for a moment after `join` returns.
fn settles_at(want: usize) -> usize {
    let t0 = Instant::now();
    loop {
        let n = threads();
        if n <= want || t0.elapsed() > Duration::from_secs(5) {
            return n;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn config(dir: &std::path::Path) -> Config {
    let mut cfg = Config::default();
    // No master there: the session keeps trying to connect.
    cfg.agentx.socket = AgentxAddr::Unix(dir.join("no-master"));
    cfg.snmp.listen = Some("127.0.0.1:0".parse().unwrap());
    cfg.set.allow = true;
    cfg
}

fn backend() -> Backend {
    Backend::sim(&SimFabric::new(
        topology::default_fabric(),
        SimOptions::default(),
    ))
}

#[test]
fn the_agent_ends_every_thread_it_started() {
    let dir = tempfile::tempdir().unwrap();
    let before = threads();
    let running = app::start(&config(dir.path()), backend()).expect("start");
    assert!(
        threads() >= before + 4,
        "sweeper, poller, session, responder"
    );
    drop(running);
    assert_eq!(settles_at(before), before, "threads left after drop");

    // The responder cannot bind after the other parts started.
    let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let mut cfg = config(dir.path());
    cfg.snmp.listen = Some(taken.local_addr().unwrap());
    let e = app::start(&cfg, backend())
        .err()
        .expect("the port is taken");
    assert!(e.to_string().contains("cannot listen"), "{e}");
    assert_eq!(
        settles_at(before),
        before,
        "threads left after a failed start"
    );
}
