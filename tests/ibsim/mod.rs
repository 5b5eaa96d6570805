//! Test harness: a private ibsim fabric in a temp dir, LIDs assigned by
//! `opensm -o`, and helpers to run umad programs against it under
//! umad2sim. Everything started here is stopped by PID on drop, and every
//! wait is bounded.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const UMAD2SIM: &str = "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so";
pub const NET_2SW2PATH4HCA: &str = "/usr/share/doc/ibsim-utils/net-examples/net.2sw2path4hca";

/// A running simulator with its console and working directory.
pub struct IbSim {
    dir: tempfile::TempDir,
    sockname: String,
    child: Option<Child>,
    /// ibsim's console (its stdin), held open: on EOF ibsim spins.
    console: Option<ChildStdin>,
    pub opensm_time: Duration,
    netfile: PathBuf,
    args: Vec<String>,
}

/// What a program run under umad2sim printed.
pub struct Run {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    pub elapsed: Duration,
}

static SEQ: AtomicU32 = AtomicU32::new(0);

fn wait_bounded(child: &mut Child, limit: Duration, what: &str) -> ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return s,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!(
                    "{what} did not finish within {limit:?} (killed pid {})",
                    child.id()
                );
            }
            Err(e) => panic!("waiting for {what}: {e}"),
        }
    }
}

impl IbSim {
    /// Start ibsim on `netfile` and assign LIDs with `opensm -o`.
    pub fn start(netfile: &Path) -> IbSim {
        Self::start_with(netfile, &[])
    }

    /// Like [`start`](Self::start) with extra ibsim flags (e.g. `-N 4096`).
    pub fn start_with(netfile: &Path, ibsim_args: &[&str]) -> IbSim {
        assert!(
            Path::new(UMAD2SIM).exists(),
            "{UMAD2SIM} is missing: install ibsim-utils (libumad2sim0)"
        );
        let dir = tempfile::Builder::new()
            .prefix("ibpm-ibsim-")
            .tempdir()
            .expect("temp dir");
        let sockname = format!(
            "ibpmt{}x{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let mut sim = IbSim {
            dir,
            sockname,
            child: None,
            console: None,
            opensm_time: Duration::ZERO,
            netfile: netfile.to_path_buf(),
            args: ibsim_args.iter().map(|a| a.to_string()).collect(),
        };
        sim.spawn();
        sim.wait_output("Network simulator ready", Duration::from_secs(30));

        let t0 = Instant::now();
        sim.run_opensm();
        sim.opensm_time = t0.elapsed();
        sim
    }

    /// Start the ibsim process (its output appended to `ibsim.out`).
    fn spawn(&mut self) {
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("ibsim.out"))
            .expect("ibsim.out");
        let err = out.try_clone().expect("dup");
        let mut child = Command::new("ibsim")
            .arg("-s")
            .args(&self.args)
            .arg(&self.netfile)
            .current_dir(self.dir.path())
            .env("IBSIM_SOCKNAME", &self.sockname)
            .env_remove("LD_PRELOAD")
            .stdin(Stdio::piped())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start ibsim (install ibsim-utils): {e}"));
        self.console = child.stdin.take();
        self.child = Some(child);
    }

    /// Kill ibsim (by its PID) and reap it; [`restart`](Self::restart)
    /// brings it back.
    pub fn kill(&mut self) {
        drop(self.console.take());
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// One `opensm -o` sweep: assigns LIDs (the same ones again, from its
    /// cache in the sim's directory) and brings links that came up (e.g.
    /// after `ReLink`) to Active. opensm exits afterwards.
    pub fn run_opensm(&self) {
        let osm = self.dir.path().join("osm");
        fs::create_dir_all(&osm).expect("osm dir");
        let mut cmd = self.command("opensm");
        cmd.arg("-o")
            .arg("-f")
            .arg(osm.join("osm.log"))
            .env("OSM_TMP_DIR", &osm)
            .env("OSM_CACHE_DIR", &osm);
        let r = self.run_cmd(cmd, "opensm -o", Duration::from_secs(50));
        assert!(
            r.status.success(),
            "opensm -o failed: {}\n{}",
            r.stdout,
            r.stderr
        );
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Send `signal` (`STOP`, `CONT`, `KILL`) to this ibsim by its PID.
    pub fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("ibsim running").id();
        let ok = Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status()
            .expect("run kill")
            .success();
        assert!(ok, "kill -{signal} {pid} failed");
    }

    /// Whether ibsim is stopped (SIGSTOP): its state in `/proc/PID/stat`.
    pub fn stopped(&self) -> bool {
        let pid = self.child.as_ref().expect("ibsim running").id();
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        // The state follows the command name, which ends with the last ')'.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T') || rest.starts_with('t'))
    }

    pub fn ibsim_output(&self) -> String {
        fs::read_to_string(self.dir.path().join("ibsim.out")).unwrap_or_default()
    }

    fn wait_output(&self, needle: &str, limit: Duration) {
        let deadline = Instant::now() + limit;
        while !self.ibsim_output().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "ibsim did not print {needle:?} within {limit:?}:\n{}",
                self.ibsim_output()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Send one console command and wait until ibsim has handled it (it
    /// prints a fresh `sim> ` prompt after each line).
    pub fn console(&mut self, line: &str) {
        let before = self.ibsim_output().matches("sim> ").count();
        let c = self.console.as_mut().expect("console open");
        writeln!(c, "{line}").expect("write to ibsim console");
        c.flush().expect("flush console");
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.ibsim_output().matches("sim> ").count() <= before {
            assert!(
                Instant::now() < deadline,
                "ibsim did not handle {line:?}:\n{}",
                self.ibsim_output()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// A command that runs in the sim's directory under umad2sim.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new(program);
        c.current_dir(self.dir.path())
            .env("LD_PRELOAD", UMAD2SIM)
            .env("IBSIM_SOCKNAME", &self.sockname);
        c
    }

    /// The agent binary under umad2sim with the configuration `toml`
    /// (written to `agent.toml` in the sim's directory), its stdout and
    /// stderr in `agent.log` there, whose path comes with it.
    pub fn agent_command(&self, toml: &str) -> (Command, PathBuf) {
        let cfg = self.dir.path().join("agent.toml");
        fs::write(&cfg, toml).expect("write agent config");
        let log = self.dir.path().join("agent.log");
        let out = fs::File::create(&log).expect("agent.log");
        let err = out.try_clone().expect("dup agent.log");
        let mut c = self.command(env!("CARGO_BIN_EXE_ibpm-agentx"));
        c.arg("run")
            .arg("--config")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        (c, log)
    }

    /// Run `cmd` to completion within `limit`, capturing its output in
    /// files (no pipe can fill up), and kill it by PID if it overruns.
    pub fn run_cmd(&self, mut cmd: Command, what: &str, limit: Duration) -> Run {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let out_path = self.dir.path().join(format!("run{n}.out"));
        let err_path = self.dir.path().join(format!("run{n}.err"));
        let out = fs::File::create(&out_path).expect("stdout file");
        let err = fs::File::create(&err_path).expect("stderr file");
        let t0 = Instant::now();
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {what}: {e}"));
        let status = wait_bounded(&mut child, limit, what);
        Run {
            status,
            stdout: fs::read_to_string(&out_path).unwrap_or_default(),
            stderr: fs::read_to_string(&err_path).unwrap_or_default(),
            elapsed: t0.elapsed(),
        }
    }

    /// Run an installed tool (perfquery, ibnetdiscover, ...) under umad2sim.
    pub fn tool(&self, program: &str, args: &[&str]) -> Run {
        let mut c = self.command(program);
        c.args(args);
        let r = self.run_cmd(c, program, Duration::from_secs(50));
        assert!(
            r.status.success(),
            "{program} {args:?} failed ({}):\n{}\n{}",
            r.status,
            r.stdout,
            r.stderr
        );
        r
    }

    /// Run the `umad_probe` example under umad2sim.
    pub fn probe(&self, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut c = self.command(probe_path());
        c.args(args);
        for (k, v) in env {
            c.env(k, v);
        }
        self.run_cmd(c, "umad_probe", Duration::from_secs(50))
    }
}

impl Drop for IbSim {
    fn drop(&mut self) {
        // Kill by PID (the Child handle), then reap.
        self.kill();
    }
}

/// The `umad_probe` example next to this test binary, (re)built once per
/// test process: `cargo test --test X` alone does not rebuild examples, and
/// a stale probe would test old code.
pub fn probe_path() -> PathBuf {
    example_path("umad_probe")
}

/// Prefixes of the variables cargo sets for a test process (`cargo test`,
/// nextest) that a build run from it must not inherit.
const CARGO_SETS: &[&str] = &[
    "CARGO_PKG_",
    "CARGO_MANIFEST_",
    "CARGO_CFG_",
    "CARGO_BIN_",
    "CARGO_CRATE_",
    "CARGO_PRIMARY_PACKAGE",
    "CARGO_TARGET_TMPDIR",
    "OUT_DIR",
];

/// An example binary of this crate, (re)built once per test process.
pub fn example_path(name: &str) -> PathBuf {
    static BUILT: OnceLock<std::sync::Mutex<BTreeMap<String, PathBuf>>> = OnceLock::new();
    let mut built = BUILT
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(p) = built.get(name) {
        return p.clone();
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/<test> -> target/<profile>/examples/<name>
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("test binary under target/<profile>/deps");
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut c = Command::new(cargo);
    c.args(["build", "--quiet", "--example", name, "--target-dir"])
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null());
    // What cargo set for this test process is not the build's own
    // environment: build scripts that watch these variables (ring's watches
    // CARGO_PKG_NAME and CARGO_MANIFEST_DIR) would run again and rebuild
    // half the dependency tree, here and in the next `cargo build`.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if CARGO_SETS.iter().any(|p| k.starts_with(p)) {
            c.env_remove(&*k);
        }
    }
    if profile_dir.file_name().is_some_and(|n| n == "release") {
        c.arg("--release");
    }
    let mut child = c
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {name}: {e}"));
    let st = wait_bounded(
        &mut child,
        Duration::from_secs(600),
        "cargo build --example",
    );
    assert!(st.success(), "building the {name} example failed");
    let path = profile_dir.join("examples").join(name);
    assert!(path.exists(), "{} missing", path.display());
    built.insert(name.to_string(), path.clone());
    path
}

/// `scripts/gen-fat-tree` output (see the script for the layout).
pub fn gen_fat_tree(leaves: usize, spines: usize, hosts: usize, dual: usize) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gen-fat-tree");
    let dir = tempfile::tempdir().expect("temp dir");
    let out_path = dir.path().join("net");
    let mut child = Command::new(&script)
        .args([leaves, spines, hosts, dual].map(|v| v.to_string()))
        .stdin(Stdio::null())
        .stdout(fs::File::create(&out_path).expect("output file"))
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
    let st = wait_bounded(&mut child, Duration::from_secs(60), "gen-fat-tree");
    assert!(st.success(), "gen-fat-tree failed");
    fs::read_to_string(&out_path).expect("read generated netfile")
}

/// A two-level fat tree in ibsim's netfile format: `leaves` leaf switches
/// with `hosts` HCAs each, `spines` spine switches, `links` parallel links
/// from each leaf to each spine. Hosts come first so that clients attach
/// to an HCA by default.
pub fn fat_tree(leaves: usize, spines: usize, hosts: usize, links: usize) -> String {
    let leaf_ports = hosts + spines * links;
    let spine_ports = leaves * links;
    let mut s = String::new();
    for l in 0..leaves {
        for h in 0..hosts {
            let _ = writeln!(s, "Hca 1 \"H{l}_{h}\"\n[1] \"L{l}\"[{}]\n", h + 1);
        }
    }
    for l in 0..leaves {
        let _ = writeln!(s, "Switch {leaf_ports} \"L{l}\"");
        for h in 0..hosts {
            let _ = writeln!(s, "[{}] \"H{l}_{h}\"[1]", h + 1);
        }
        for sp in 0..spines {
            for k in 0..links {
                let _ = writeln!(
                    s,
                    "[{}] \"S{sp}\"[{}]",
                    hosts + sp * links + k + 1,
                    l * links + k + 1
                );
            }
        }
        s.push('\n');
    }
    for sp in 0..spines {
        let _ = writeln!(s, "Switch {spine_ports} \"S{sp}\"");
        for l in 0..leaves {
            for k in 0..links {
                let _ = writeln!(
                    s,
                    "[{}] \"L{l}\"[{}]",
                    l * links + k + 1,
                    hosts + sp * links + k + 1
                );
            }
        }
        s.push('\n');
    }
    s
}

/// One `{...}` line of the probe's output as key -> raw value (strings
/// unquoted). Flat objects only, which is all the probe prints (the
/// `summary` line is unwrapped).
pub fn parse_line(line: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut body = line.trim();
    if let Some(inner) = body.strip_prefix("{\"summary\":") {
        body = inner.strip_suffix('}').unwrap_or(inner);
    }
    let body = body.trim_start_matches('{').trim_end_matches('}');
    let mut key = String::new();
    let mut cur = String::new();
    let mut in_str = false;
    let mut esc = false;
    let mut have_key = false;
    for c in body.chars() {
        if in_str {
            if esc {
                cur.push(c);
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            } else {
                cur.push(c);
            }
            continue;
        }
        match c {
            '"' => in_str = true,
            ':' if !have_key => {
                key = std::mem::take(&mut cur);
                have_key = true;
            }
            ',' => {
                out.insert(std::mem::take(&mut key), std::mem::take(&mut cur));
                have_key = false;
            }
            c if c.is_whitespace() => {}
            c => cur.push(c),
        }
    }
    if have_key {
        out.insert(key, cur);
    }
    out
}

/// Probe output lines whose first key is `kind`.
pub fn lines_of(stdout: &str, kind: &str) -> Vec<BTreeMap<String, String>> {
    let prefix = format!("{{\"{kind}\":");
    stdout
        .lines()
        .filter(|l| l.starts_with(&prefix))
        .map(parse_line)
        .collect()
}

/// `Name:.....value` lines of perfquery.
pub fn perfquery_fields(out: &str) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for l in out.lines() {
        if let Some((k, v)) = l.split_once(':') {
            let v = v.trim_start_matches('.').trim();
            let parsed = if let Some(h) = v.strip_prefix("0x") {
                u64::from_str_radix(h, 16).ok()
            } else {
                v.parse().ok()
            };
            if let Some(v) = parsed {
                m.insert(k.trim().to_string(), v);
            }
        }
    }
    m
}

/// A node as ibnetdiscover prints it.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct IbndNode {
    pub guid: u64,
    pub switch: bool,
    pub desc: String,
    /// Switch: base port 0 LID; CA: not set here (per port).
    pub lid: u16,
    /// port -> (remote node guid, remote port, local port LID (CA only), "4xSDR")
    pub ports: BTreeMap<u8, (u64, u8, u16, String)>,
}

fn guid_from_name(name: &str) -> Option<u64> {
    // ibnetdiscover names nodes "S-<16 hex>" / "H-<16 hex>" / "R-<16 hex>".
    let hex = name.get(2..)?;
    u64::from_str_radix(hex, 16).ok()
}

/// Parse ibnetdiscover's topology output.
pub fn parse_ibnetdiscover(out: &str) -> BTreeMap<u64, IbndNode> {
    let mut nodes = BTreeMap::new();
    let mut cur: Option<IbndNode> = None;
    for line in out.lines() {
        let line = line.trim_end();
        if line.starts_with("Switch") || line.starts_with("Ca") || line.starts_with("Rt") {
            if let Some(n) = cur.take() {
                nodes.insert(n.guid, n);
            }
            let q: Vec<&str> = line.split('"').collect();
            // Switch\t8 "S-..."\t\t# "desc" base port 0 lid 3 lmc 0
            let mut n = IbndNode {
                guid: q.get(1).and_then(|s| guid_from_name(s)).expect("node name"),
                switch: line.starts_with("Switch"),
                desc: q.get(3).unwrap_or(&"").to_string(),
                ..Default::default()
            };
            if n.switch {
                let after = q.get(4).unwrap_or(&"");
                let toks: Vec<&str> = after.split_whitespace().collect();
                if let Some(i) = toks.iter().position(|t| *t == "lid") {
                    n.lid = toks.get(i + 1).and_then(|v| v.parse().ok()).unwrap_or(0);
                }
            }
            cur = Some(n);
        } else if line.starts_with('[') {
            let Some(n) = cur.as_mut() else { continue };
            let q: Vec<&str> = line.split('"').collect();
            let port: u8 = line[1..line.find(']').unwrap_or(1)].parse().expect("port");
            let remote = q.get(1).and_then(|s| guid_from_name(s)).expect("remote");
            let rest = q.get(2).unwrap_or(&"");
            let rport: u8 = rest
                .strip_prefix('[')
                .and_then(|r| r.split(']').next())
                .and_then(|v| v.parse().ok())
                .expect("remote port");
            let comment = line.split('#').nth(1).unwrap_or("");
            let toks: Vec<&str> = comment.split_whitespace().collect();
            let lid = if !n.switch && toks.first() == Some(&"lid") {
                toks.get(1).and_then(|v| v.parse().ok()).unwrap_or(0)
            } else {
                0
            };
            let rate = toks.last().unwrap_or(&"").to_string();
            n.ports.insert(port, (remote, rport, lid, rate));
        }
    }
    if let Some(n) = cur.take() {
        nodes.insert(n.guid, n);
    }
    nodes
}

pub fn hex_guid(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).expect("guid")
}

/// Check the probe's discovery against ibnetdiscover's, node by node and
/// link by link; returns the number of links compared.
pub fn assert_same_fabric(probe_out: &str, ibnd: &BTreeMap<u64, IbndNode>) -> usize {
    let nodes = lines_of(probe_out, "node");
    let ports = lines_of(probe_out, "port");
    let got: BTreeMap<u64, &BTreeMap<String, String>> =
        nodes.iter().map(|n| (hex_guid(&n["node"]), n)).collect();
    let want: Vec<u64> = ibnd.keys().copied().collect();
    let have: Vec<u64> = got.keys().copied().collect();
    assert_eq!(have, want, "node GUIDs differ from ibnetdiscover's");
    let mut port_map = BTreeMap::new();
    for p in &ports {
        let num: u8 = p["num"].parse().expect("port num");
        port_map.insert((hex_guid(&p["port"]), num), p);
    }
    let mut links = 0;
    for (guid, n) in ibnd {
        let g = got[guid];
        assert_eq!(
            g["type"],
            if n.switch { "switch" } else { "ca" },
            "type of {guid:#x}"
        );
        assert_eq!(g["desc"], n.desc, "description of {guid:#x}");
        if n.switch {
            assert_eq!(g["lid"], n.lid.to_string(), "LID of switch {guid:#x}");
        }
        for (num, (rguid, rport, lid, rate)) in &n.ports {
            let p = port_map
                .get(&(*guid, *num))
                .unwrap_or_else(|| panic!("port {guid:#x}/{num} not discovered"));
            assert_eq!(
                (
                    hex_guid(&p["remote"]),
                    p["remote_port"].parse::<u8>().unwrap()
                ),
                (*rguid, *rport),
                "link of {guid:#x}/{num}"
            );
            assert_eq!(
                format!("{}{}", p["width"], p["speed"]),
                *rate,
                "rate of {guid:#x}/{num}"
            );
            if !n.switch {
                assert_eq!(p["lid"], lid.to_string(), "LID of CA port {guid:#x}/{num}");
            }
            links += 1;
        }
    }
    // No link ibnetdiscover does not know.
    for ((guid, num), p) in &port_map {
        if p["remote"] != "null" {
            assert!(
                ibnd.get(guid).is_some_and(|n| n.ports.contains_key(num)),
                "extra link at {guid:#x}/{num}"
            );
        }
    }
    links
}

/// ibsim running `gen_fat_tree(leaves, spines, hosts, dual)` from a
/// temporary directory of its own (kept while this lives), and the nodes
/// ibnetdiscover finds in it.
pub struct FatTree {
    pub dir: tempfile::TempDir,
    pub sim: IbSim,
    pub nodes: BTreeMap<u64, IbndNode>,
}

impl FatTree {
    pub fn start(leaves: usize, spines: usize, hosts: usize, dual: usize) -> FatTree {
        let dir = tempfile::Builder::new()
            .prefix("ibpm-ft-")
            .tempdir()
            .expect("temp dir");
        let net = dir.path().join("fat-tree.net");
        fs::write(&net, gen_fat_tree(leaves, spines, hosts, dual)).expect("write netfile");
        let sim = IbSim::start(&net);
        let nodes = parse_ibnetdiscover(&sim.tool("ibnetdiscover", &[]).stdout);
        FatTree { dir, sim, nodes }
    }
}

/// The node ibnetdiscover names `desc`.
pub fn named<'a>(nodes: &'a BTreeMap<u64, IbndNode>, desc: &str) -> &'a IbndNode {
    nodes
        .values()
        .find(|n| n.desc == desc)
        .unwrap_or_else(|| panic!("no node {desc}"))
}
