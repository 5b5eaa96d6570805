//! Back at once after any outage of a unix-socket master: the agent (on
//! the simulated fabric, with the default reconnect backoff of up to 5 s)
//! behind a private snmpd that is stopped for a while and started again on
//! the same socket. The subtree answers through snmpd within 1 s of snmpd
//! answering again, however long it was away.
//!
//! `OUTAGES=2,5,8,12 cargo nextest run --test agentx_outage --no-capture`
//! measures other outage lengths (seconds); the suite tries 2 and 4 s,
//! long enough for the backoff (0.2 s, doubling) to have grown past 1 s:
//! to 1.6 s and 3.2 s.

mod common;

use std::time::{Duration, Instant};

use common::{PrivateSnmpd, SnmpTool};

/// pmAgentSweeps.0.
const SWEEPS: &str = "1.3.6.1.3.117.1.9.3.0";
const BACK_WITHIN: Duration = Duration::from_secs(1);

fn registered(snmpd: &PrivateSnmpd) -> bool {
    let out = SnmpTool::new("snmpget")
        .args(["-v2c", "-c", "public", "-Oqv", "-t", "0.5", "-r", "0"])
        .args([&snmpd.target(), SWEEPS])
        .run();
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse::<u64>()
        .is_ok()
}

#[test]
fn the_subtree_is_back_within_a_second_of_snmpd() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed (apt-get install snmpd snmp)"
    );
    let outages: Vec<u64> = std::env::var("OUTAGES")
        .ok()
        .map(|v| v.split(',').filter_map(|s| s.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![2, 4]);
    let mut snmpd = PrivateSnmpd::start().expect("start a private snmpd");
    let dir = tempfile::tempdir().expect("temp dir");
    let cfg = dir.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agentx]\nsocket = \"{}\"\n[fabric]\nsweep_interval = 0.5\n[log]\nlevel = \"info\"\n",
            snmpd.agentx_addr()
        ),
    )
    .expect("write config");
    let log = dir.path().join("agent.log");
    let mut agent = common::run_agent(&cfg, &log);
    let read_log = || std::fs::read_to_string(&log).unwrap_or_default();
    common::wait_sweeps(
        &snmpd.target(),
        1,
        Duration::from_secs(20),
        &mut agent,
        read_log,
    );
    for secs in outages {
        snmpd.stop();
        // The outage itself: snmpd away for `secs` seconds.
        std::thread::sleep(Duration::from_secs(secs));
        // `restart` returns once snmpd answers SNMP again.
        snmpd.restart().expect("restart snmpd");
        let back = Instant::now();
        while !registered(&snmpd) {
            assert!(
                back.elapsed() < Duration::from_secs(10),
                "subtree not back 10 s after a {secs} s outage:\n{}",
                read_log()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        let took = back.elapsed();
        eprintln!("snmpd away {secs} s: subtree back {took:?} after snmpd answered");
        assert!(
            took < BACK_WITHIN,
            "subtree back only {took:?} after a {secs} s outage:\n{}",
            read_log()
        );
        assert!(agent.running(), "agent exited:\n{}", read_log());
    }
}
