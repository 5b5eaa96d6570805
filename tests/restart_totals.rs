//! The 64-bit totals across a restart of the agent, through the real
//! snmpd: the agent (the release binary's `run`, stopped by SIGTERM) keeps
//! them in its state file, so a manager polling pmPortCounters64Table sees
//! them go on rather than start again from zero; a damaged state file, or
//! one from another fabric, is ignored with one log line.
//!
//! The simulated fabric lives in the agent's process, so its counters
//! start again from zero with every run: the totals continue only because
//! of the file (a run without it shows the reset a manager would see).

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::{ChildGuard, PrivateSnmpd, SnmpTool};
use tempfile::TempDir;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/topology/two-level.net")
}

struct Run {
    agent: ChildGuard,
    log: PathBuf,
}

/// Starts the agent on `topology` (the built-in fabric when `None`), with
/// its state file at `state`, logging to `log`.
fn start(snmpd: &PrivateSnmpd, dir: &Path, topology: Option<&Path>, log: &str) -> Run {
    let cfg = format!(
        "[agentx]\nsocket = \"{sock}\"\nreconnect_max = 1\n\
         [fabric]\n{topo}sweep_interval = 0.5\nstate_file = \"{state}\"\n\
         [log]\nlevel = \"info\"\n",
        sock = snmpd.agentx_addr(),
        topo = topology
            .map(|t| format!("topology = \"{}\"\n", t.display()))
            .unwrap_or_default(),
        state = dir.join("totals").display(),
    );
    let cfg_path = dir.join("agent.toml");
    std::fs::write(&cfg_path, cfg).unwrap();
    let log = dir.join(log);
    Run {
        agent: common::run_agent(&cfg_path, &log),
        log,
    }
}

impl Run {
    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until pmAgentSweeps.0, read through snmpd, is at least `n`.
    fn wait_sweeps(&mut self, snmpd: &PrivateSnmpd, n: u64) {
        let log = self.log.clone();
        common::wait_sweeps(
            &snmpd.target(),
            n,
            Duration::from_secs(20),
            &mut self.agent,
            || std::fs::read_to_string(&log).unwrap_or_default(),
        );
    }

    /// Stops the agent by SIGTERM (it writes the state file on its way
    /// out) and checks it exited cleanly.
    fn stop(&mut self) {
        let status = self.agent.stop().expect("exit status");
        assert!(status.success(), "{status}:\n{}", self.log());
    }
}

/// The unsigned values `tool` prints for `oid` (-Oqv; a column with
/// UNITS prints them after the number).
fn values(snmpd: &PrivateSnmpd, tool: &str, oid: &str) -> Vec<u64> {
    let out = SnmpTool::new(tool)
        .mibs(true)
        .args(["-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "1"])
        .arg(&snmpd.target())
        .arg(oid)
        .run();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next()?.parse().ok())
        .collect()
}

/// The sum of pmPortHCOutOctets over every port, and the number of ports.
fn out_octets(snmpd: &PrivateSnmpd) -> (u128, usize) {
    let v = values(snmpd, "snmpwalk", "IB-PM-MIB::pmPortHCOutOctets");
    (v.iter().map(|&x| u128::from(x)).sum(), v.len())
}

/// A private snmpd, a directory for the agent's files, the state file's
/// path in it and the fixture's topology.
fn setup() -> (PrivateSnmpd, TempDir, PathBuf, PathBuf) {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("totals");
    (snmpd, dir, state, fixture())
}

#[test]
fn totals_go_on_across_a_restart_and_start_again_without_the_state_file() {
    let (snmpd, dir, state, topo) = setup();

    // First run: traffic for a while, then SIGTERM.
    let mut run = start(&snmpd, dir.path(), Some(&topo), "run1.log");
    run.wait_sweeps(&snmpd, 2);
    // Traffic until the totals are four times what they were at the second
    // sweep: well above what a run started afresh shows at its first.
    let (early, _) = out_octets(&snmpd);
    let (before, ports) = common::poll(Duration::from_secs(30), Duration::from_millis(500), || {
        Some(out_octets(&snmpd)).filter(|(total, _)| *total > 4 * early.max(1))
    })
    .unwrap_or_else(|| panic!("totals stayed near {early}:\n{}", run.log()));
    assert!(
        ports > 0 && before > 0,
        "no traffic counted:\n{}",
        run.log()
    );
    run.stop();
    let size = std::fs::metadata(&state)
        .unwrap_or_else(|e| panic!("no state file after SIGTERM ({e}):\n{}", run.log()))
        .len();
    // A port's fixed part and its 64-bit totals with their raw readings:
    // a few hundred bytes per port at most, nothing that grows with time.
    assert!(
        size < 512 * ports as u64,
        "state file of {size} bytes for {ports} ports"
    );

    // Second run: the totals go on from where they were.
    let mut run = start(&snmpd, dir.path(), Some(&topo), "run2.log");
    run.wait_sweeps(&snmpd, 1);
    let (after, n) = out_octets(&snmpd);
    assert_eq!(n, ports);
    assert!(
        after >= before,
        "totals went back across the restart: {after} < {before}\n{}",
        run.log()
    );
    assert_eq!(
        run.log()
            .matches("64-bit totals restored from the state file")
            .count(),
        1,
        "{}",
        run.log()
    );
    run.stop();

    // Third run, the file gone: what a manager would see without it (the
    // fabric's counters started again with the process).
    std::fs::remove_file(&state).unwrap();
    let mut run = start(&snmpd, dir.path(), Some(&topo), "run3.log");
    run.wait_sweeps(&snmpd, 1);
    let (fresh, _) = out_octets(&snmpd);
    assert!(
        fresh < before,
        "without the file the totals start again: {fresh} against {before} before"
    );
    assert!(run.log().contains("no state file yet"), "{}", run.log());
    run.stop();
}

#[test]
fn a_damaged_or_foreign_state_file_is_ignored_with_one_line() {
    let (snmpd, dir, state, topo) = setup();

    // Damaged: the agent serves as if there were no file.
    std::fs::write(&state, b"IBPM\x00\x01not a state file at all").unwrap();
    let mut run = start(&snmpd, dir.path(), Some(&topo), "damaged.log");
    run.wait_sweeps(&snmpd, 1);
    let (total, ports) = out_octets(&snmpd);
    assert!(ports > 0 && total > 0, "{}", run.log());
    let log = run.log();
    assert_eq!(log.matches("state file ignored").count(), 1, "{log}");
    // Stopping writes a good file over the damaged one.
    run.stop();

    // Foreign: the file of the fixture's fabric, read by an agent on the
    // built-in fabric (no GUID in common).
    let mut run = start(&snmpd, dir.path(), None, "foreign.log");
    run.wait_sweeps(&snmpd, 1);
    let (total, ports) = out_octets(&snmpd);
    assert!(ports > 0 && total > 0, "{}", run.log());
    let log = run.log();
    assert_eq!(
        log.matches("state file of another fabric").count(),
        1,
        "{log}"
    );
    run.stop();
}
