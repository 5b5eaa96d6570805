//! Nothing the fabric does holds snmpd or the agent's stop: the umad agent
//! under umad2sim behind a private snmpd, with ibsim frozen (SIGSTOP), so
//! that umad2sim's `write()` of a MAD blocks. SETs (counter clears) are
//! answered within their deadline, snmpd keeps answering its own objects,
//! the subtree stays registered, and SIGTERM ends the agent within 3 s
//! with the session closed and the state file written.

mod common;
mod ibsim;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::{ChildGuard, PrivateSnmpd, SnmpTool};
use ibsim::IbSim;

const PM: &str = "1.3.6.1.3.117.1";
/// pmPortCountersPortSelect.
const COL_PORT_SELECT: u32 = 2;
/// pmPortCountersXmitData: written with 0, it clears the counter.
const COL_XMIT_DATA: u32 = 15;
/// pmAgentSweeps.0.
const SWEEPS: &str = "1.3.6.1.3.117.1.9.3.0";
/// The longest a SET may take with the fabric frozen.
const SET_BOUND: Duration = Duration::from_millis(1500);
/// The longest snmpd's own sysUpTime.0 may wait meanwhile.
const SNMPD_BOUND: Duration = Duration::from_millis(500);
/// The longest the agent may take to exit after SIGTERM.
const STOP_BOUND: Duration = Duration::from_secs(3);

struct Setup {
    agent: ChildGuard,
    snmpd: PrivateSnmpd,
    sim: IbSim,
    log: PathBuf,
    state: PathBuf,
}

impl Setup {
    fn start() -> Setup {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed (apt-get install snmpd snmp)"
        );
        let sim = IbSim::start(Path::new(ibsim::NET_2SW2PATH4HCA));
        let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
        let state = sim.dir().join("totals");
        let (mut c, log) = sim.agent_command(&format!(
            "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
             [fabric]\nbackend = \"umad\"\nsweep_interval = 0.2\n\
             state_file = \"{}\"\n\
             [set]\nallow = true\n[log]\nlevel = \"info\"\n",
            snmpd.agentx_addr(),
            state.display()
        ));
        let agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
        let mut s = Setup {
            agent,
            snmpd,
            sim,
            log,
            state,
        };
        let (target, log) = (s.snmpd.target(), s.log.clone());
        common::wait_sweeps(&target, 2, Duration::from_secs(20), &mut s.agent, || {
            fs::read_to_string(&log).unwrap_or_default()
        });
        s
    }

    fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The index suffixes of pmPortCountersTable's rows.
    fn rows(&self) -> Vec<String> {
        let out = SnmpTool::new("snmpwalk")
            .args(["-v2c", "-c", "public", "-On", "-t", "2", "-r", "0"])
            .arg(&self.snmpd.target())
            .arg(&format!("{PM}.4.1.{COL_PORT_SELECT}"))
            .run();
        let prefix = format!(".{PM}.4.1.{COL_PORT_SELECT}.");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.strip_prefix(&prefix))
            .filter_map(|l| l.split(' ').next())
            .map(str::to_string)
            .collect()
    }

    /// A clear of one row's PortXmitData: how long it took and what snmpset
    /// said.
    fn clear(&self, row: &str) -> (Duration, String) {
        let t0 = Instant::now();
        let out = SnmpTool::new("snmpset")
            .args(["-v2c", "-c", "private", "-On", "-t", "5", "-r", "0"])
            .arg(&self.snmpd.target())
            .args([&format!("{PM}.4.1.{COL_XMIT_DATA}.{row}"), "u", "0"])
            .run();
        let took = t0.elapsed();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (took, text)
    }

    /// pmAgentSweeps.0 through snmpd: a number while the subtree is
    /// registered.
    fn registered(&self) -> bool {
        let out = SnmpTool::new("snmpget")
            .args(["-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "0"])
            .args([&self.snmpd.target(), SWEEPS])
            .run();
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u64>()
            .is_ok()
    }
}

/// sysUpTime.0 from snmpd in a loop until `stop`: the slowest answer.
fn probe_snmpd(target: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Duration> {
    std::thread::spawn(move || {
        let mut worst = Duration::ZERO;
        while !stop.load(Ordering::Relaxed) {
            let t0 = Instant::now();
            let out = SnmpTool::new("snmpget")
                .args(["-v2c", "-c", "public", "-t", "5", "-r", "0"])
                .args([target.as_str(), "1.3.6.1.2.1.1.3.0"])
                .run();
            let took = t0.elapsed();
            assert!(out.status.success(), "snmpd did not answer sysUpTime.0");
            worst = worst.max(took);
            std::thread::sleep(Duration::from_millis(20));
        }
        worst
    })
}

#[test]
fn a_frozen_fabric_holds_neither_snmpd_nor_the_stop() {
    let mut s = Setup::start();
    let rows = s.rows();
    assert!(rows.len() >= 4, "rows: {rows:?}\n{}", s.log());
    // The write path works while the fabric does.
    let (took, text) = s.clear(&rows[0]);
    assert!(
        !text.contains("Error") && !text.contains("Reason"),
        "{text}\n{}",
        s.log()
    );
    assert!(took < SET_BOUND, "a SET on a live fabric took {took:?}");

    s.sim.signal("STOP");
    let stop = Arc::new(AtomicBool::new(false));
    let probe = probe_snmpd(s.snmpd.target(), Arc::clone(&stop));
    // Clears of every row, twice, while the sweeper's MADs pile up behind
    // the frozen simulator.
    let mut worst_set = Duration::ZERO;
    let mut answers = Vec::new();
    let until = Instant::now() + Duration::from_secs(4);
    while Instant::now() < until {
        for row in &rows {
            let (took, text) = s.clear(row);
            worst_set = worst_set.max(took);
            answers.push(
                text.lines()
                    .find(|l| l.contains("Reason"))
                    .map(str::to_string),
            );
            assert!(
                took < SET_BOUND,
                "a SET with the fabric frozen took {took:?}: {text}\n{}",
                s.log()
            );
        }
    }
    assert!(
        s.registered(),
        "the subtree is gone from snmpd:\n{}",
        s.log()
    );
    stop.store(true, Ordering::Relaxed);
    let worst_get = probe.join().expect("probe thread");
    eprintln!(
        "frozen fabric: {} SETs, slowest {worst_set:?}; slowest sysUpTime.0 {worst_get:?}",
        answers.len()
    );
    assert!(
        worst_get < SNMPD_BOUND,
        "snmpd waited {worst_get:?} for sysUpTime.0 while SETs ran:\n{}",
        s.log()
    );
    assert!(
        answers.iter().any(Option::is_some),
        "no SET failed although the fabric is frozen: {answers:?}"
    );
    assert!(
        s.log().contains("umad write blocked"),
        "the blocked write was not noticed:\n{}",
        s.log()
    );

    // SIGTERM with the fabric still frozen.
    let before = fs::metadata(&s.state).and_then(|m| m.modified()).ok();
    // File times have a granularity: a write from now on shows a later one.
    std::thread::sleep(Duration::from_millis(20));
    let t0 = Instant::now();
    s.agent.term_grace = Duration::from_secs(10);
    let status = s.agent.stop().expect("agent status");
    let took = t0.elapsed();
    s.sim.signal("CONT");
    let log = s.log();
    assert!(took < STOP_BOUND, "the agent took {took:?} to stop:\n{log}");
    assert!(status.success(), "{status}\n{log}");
    assert!(log.contains("AgentX session closed"), "{log}");
    let after = fs::metadata(&s.state).and_then(|m| m.modified()).ok();
    assert!(
        after.is_some() && after != before,
        "state file not written at the stop:\n{log}"
    );
    eprintln!("stopped {took:?} after SIGTERM");
}

/// The start-up race: SIGTERM 10 ms after the agent says it is discovering
/// the fabric ends it within 3 s, start after start. `STARTS=N` and
/// `FAT_TREE=leaves,spines,hosts,dual` (default 14,7,8,2: 133 nodes) try
/// more starts or a larger fabric.
#[test]
fn sigterm_right_after_discovering_always_ends_the_agent() {
    let netdir = tempfile::Builder::new()
        .prefix("ibpm-ft-")
        .tempdir()
        .expect("temp dir");
    let net = netdir.path().join("fat-tree.net");
    let shape: Vec<usize> = std::env::var("FAT_TREE")
        .ok()
        .map(|v| v.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .filter(|v: &Vec<usize>| v.len() == 4)
        .unwrap_or_else(|| vec![14, 7, 8, 2]);
    let text = ibsim::gen_fat_tree(shape[0], shape[1], shape[2], shape[3]);
    fs::write(&net, text).expect("write netfile");
    let sim = IbSim::start(&net);
    let starts: usize = std::env::var("STARTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(15);
    let mut worst = Duration::ZERO;
    for i in 0..starts {
        let (mut c, log) = sim.agent_command(
            "[agentx]\nenabled = false\n[fabric]\nbackend = \"umad\"\n[log]\nlevel = \"info\"\n",
        );
        let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));
        let deadline = Instant::now() + Duration::from_secs(20);
        while !fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("discovering the fabric")
        {
            assert!(Instant::now() < deadline, "start {i}: no discovery");
            std::thread::sleep(Duration::from_millis(1));
        }
        // SIGTERM 10 ms into discovery, the moment this test is about.
        std::thread::sleep(Duration::from_millis(10));
        let t0 = Instant::now();
        agent.term_grace = Duration::from_secs(10);
        let status = agent.stop().expect("status");
        let took = t0.elapsed();
        let text = fs::read_to_string(&log).unwrap_or_default();
        assert!(took < STOP_BOUND, "start {i}: {took:?} to stop:\n{text}");
        assert!(status.success(), "start {i}: {status}:\n{text}");
        worst = worst.max(took);
    }
    eprintln!("{starts} starts: SIGTERM 10 ms after discovering; slowest stop {worst:?}");
}
