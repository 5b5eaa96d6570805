//! Shared harness for integration tests: a private snmpd, process guards,
//! the net-snmp command-line tools with a timeout, and a parser for their
//! numeric output. Use with `mod common;`.
#![allow(dead_code)]

pub mod doca;
pub mod health;
pub mod http;
pub mod mibpath;
pub mod pki;
pub mod snmpv3;

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::net::{TcpListener, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ibpm_agentx::mib::Oid;

/// A spawned process, killed by PID when dropped: SIGTERM, then SIGKILL
/// after `term_grace`, then reaped.
pub struct ChildGuard {
    child: Option<Child>,
    name: String,
    pub term_grace: Duration,
}

impl ChildGuard {
    pub fn new(name: &str, child: Child) -> Self {
        ChildGuard {
            child: Some(child),
            name: name.to_string(),
            term_grace: Duration::from_secs(3),
        }
    }

    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    /// True while the process has not exited.
    pub fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the process (SIGTERM, SIGKILL after the grace period) and
    /// returns its exit status.
    pub fn stop(&mut self) -> Option<ExitStatus> {
        let mut c = self.child.take()?;
        if let Ok(Some(st)) = c.try_wait() {
            return Some(st);
        }
        // Our own child, not reaped yet: its PID cannot have been reused.
        send_sigterm(c.id());
        let deadline = Instant::now() + self.term_grace;
        while Instant::now() < deadline {
            if let Ok(Some(st)) = c.try_wait() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        eprintln!("{} did not exit after SIGTERM; sending SIGKILL", self.name);
        let _ = c.kill();
        c.wait().ok()
    }
}

/// SIGTERM to one PID through kill(1) (keeps the tests free of `unsafe`).
fn send_sigterm(pid: u32) {
    let _ = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A line a net-snmp tool prints about a MIB module other than IB-PM-MIB
/// and the modules it imports: a distribution's MIB directory may hold
/// modules whose own imports it does not ship (Debian's `ietf` directory
/// imports IANA modules that live elsewhere), which does not concern us.
pub fn unrelated_mib_warning(line: &str) -> bool {
    let Some(rest) = line.strip_prefix("Cannot find module (") else {
        return false;
    };
    let module = rest.split(')').next().unwrap_or_default();
    !matches!(
        module,
        "IB-PM-MIB" | "SNMPv2-SMI" | "SNMPv2-TC" | "SNMPv2-CONF" | "SNMPv2-MIB"
    )
}

/// The agent binary's `run --config CFG`, its standard error to `log`.
pub fn run_agent(cfg: &Path, log: &Path) -> ChildGuard {
    let child = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .arg("run")
        .arg("--config")
        .arg(cfg)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(log).expect("agent log file"))
        .spawn()
        .expect("start ibpm-agentx");
    ChildGuard::new("ibpm-agentx", child)
}

/// Polls `cond` every `every` until it gives a value, for at most `limit`:
/// the value, or `None` once `limit` has passed (`cond` is asked once more
/// at the end).
pub fn poll<T>(limit: Duration, every: Duration, mut cond: impl FnMut() -> Option<T>) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(v) = cond() {
            return Some(v);
        }
        let now = Instant::now();
        if now >= deadline {
            return None;
        }
        std::thread::sleep(every.min(deadline - now));
    }
}

/// Waits until `cond` holds, polling every `every`; panics naming `what`
/// after `limit`.
pub fn wait_until(what: &str, limit: Duration, every: Duration, mut cond: impl FnMut() -> bool) {
    if poll(limit, every, || cond().then_some(())).is_none() {
        panic!("not within {limit:?}: {what}");
    }
}

/// pmAgentSweeps.0 (the sweeps the agent has ended), read through the SNMP
/// agent at `target` with community `public`.
pub fn sweeps(target: &str) -> Option<u64> {
    let out = SnmpTool::new("snmpget")
        .args(["-v2c", "-c", "public", "-Oqv", "-t", "2", "-r", "0"])
        .args([target, "1.3.6.1.3.117.1.9.3.0"])
        .run();
    String::from_utf8_lossy(&out.stdout).trim().parse().ok()
}

/// Waits until pmAgentSweeps.0, read through the SNMP agent at `target`,
/// says the agent has ended at least `n` sweeps (rows appear as nodes are
/// read: a test that compares whole tables waits for the first sweep's
/// end). Fails at once if `agent` exits, and after `limit`, with `log()`.
pub fn wait_sweeps(
    target: &str,
    n: u64,
    limit: Duration,
    agent: &mut ChildGuard,
    log: impl Fn() -> String,
) {
    let reached = poll(limit, Duration::from_millis(100), || {
        assert!(agent.running(), "ibpm-agentx exited:\n{}", log());
        sweeps(target).filter(|s| *s >= n)
    });
    assert!(
        reached.is_some(),
        "fewer than {n} sweeps through {target} after {limit:?}:\n{}",
        log()
    );
}

/// Waits until the agent at `target` has ended `more` sweeps after the
/// ones it had ended when called: the time for something the sweeps
/// would do (a notification sent twice, a row back) to have happened.
pub fn wait_more_sweeps(
    target: &str,
    more: u64,
    limit: Duration,
    agent: &mut ChildGuard,
    log: impl Fn() -> String,
) {
    let now = poll(limit, Duration::from_millis(100), || sweeps(target))
        .unwrap_or_else(|| panic!("no pmAgentSweeps through {target}:\n{}", log()));
    wait_sweeps(target, now + more, limit, agent, log);
}

/// A free UDP port on 127.0.0.1 (bound and released; a tiny race remains).
pub fn free_udp_port() -> u16 {
    let s = UdpSocket::bind("127.0.0.1:0").expect("bind udp 127.0.0.1:0");
    s.local_addr().expect("local_addr").port()
}

/// A free TCP port on 127.0.0.1 (bound and released; a tiny race remains).
pub fn free_tcp_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind tcp 127.0.0.1:0");
    l.local_addr().expect("local_addr").port()
}

/// The agent without AgentX, serving its SNMP endpoint and its metrics on
/// free loopback ports, once it has ended `sweeps` sweeps.
pub struct MetricsAgent {
    pub agent: ChildGuard,
    /// The SNMP endpoint (`127.0.0.1:PORT`).
    pub snmp: String,
    /// The metrics endpoint's port.
    pub port: u16,
    pub log: PathBuf,
}

impl MetricsAgent {
    /// `settings`: the configuration's sections besides [agentx], [snmp]
    /// and [metrics] (`[fabric]`, `[sim]`, ...); `metrics`: the [metrics]
    /// keys besides `listen`. The file is `dir/agent.toml`, so a relative
    /// `web_config` is read from `dir`.
    pub fn start(dir: &Path, settings: &str, metrics: &str, sweeps: u64) -> MetricsAgent {
        let snmp = format!("127.0.0.1:{}", free_udp_port());
        let port = free_tcp_port();
        let cfg = dir.join("agent.toml");
        std::fs::write(
            &cfg,
            format!(
                "[agentx]\nenabled = false\n{settings}\n[snmp]\nlisten = \"{snmp}\"\n\
                 [metrics]\nlisten = \"127.0.0.1:{port}\"\n{metrics}\n"
            ),
        )
        .expect("write the agent's configuration");
        let log = dir.join("agent.log");
        let mut agent = run_agent(&cfg, &log);
        wait_sweeps(&snmp, sweeps, Duration::from_secs(30), &mut agent, || {
            std::fs::read_to_string(&log).unwrap_or_default()
        });
        MetricsAgent {
            agent,
            snmp,
            port,
            log,
        }
    }
}

/// A per-port column (node GUID + port index) walked with snmpbulkwalk
/// through `target`, `args` giving the version and credentials: (node
/// GUID, port) -> the value as `-Oqn` prints it.
pub fn walk_ports(target: &str, column: &str, args: &[&str]) -> BTreeMap<(u64, u8), String> {
    let out = SnmpTool::new("snmpbulkwalk")
        .args(args)
        .args(["-On", "-Oqn", "-Cr50", target, column])
        .timeout(Duration::from_secs(60))
        .run();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut m = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let (oid, value) = line.split_once(' ').expect("an OID and a value");
        let arcs: Vec<u32> = oid
            .trim_start_matches('.')
            .split('.')
            .map(|a| a.parse().expect("an arc"))
            .collect();
        let idx = &arcs[arcs.len() - 9..];
        let guid = idx[..8].iter().fold(0u64, |g, b| (g << 8) | u64::from(*b));
        m.insert((guid, idx[8] as u8), value.to_string());
    }
    m
}

/// A snmpd of our own: loopback UDP port, AgentX master on a unix socket in
/// a temporary directory, no system configuration, no root ports.
pub struct PrivateSnmpd {
    dir: tempfile::TempDir,
    pub port: u16,
    /// AgentX over TCP on this loopback port instead of the unix socket.
    agentx_tcp: Option<u16>,
    child: Option<ChildGuard>,
}

impl PrivateSnmpd {
    pub const SNMPD: &'static str = "/usr/sbin/snmpd";

    /// True when snmpd and the client tools are installed.
    pub fn available() -> bool {
        Path::new(Self::SNMPD).exists() && which("snmpget")
    }

    /// Writes the configuration, starts snmpd and waits until it answers.
    pub fn start() -> io::Result<PrivateSnmpd> {
        Self::start_with(None)
    }

    /// The same with the AgentX master listening on TCP 127.0.0.1.
    pub fn start_tcp() -> io::Result<PrivateSnmpd> {
        let l = std::net::TcpListener::bind("127.0.0.1:0")?;
        let port = l.local_addr()?.port();
        drop(l);
        Self::start_with(Some(port))
    }

    /// The same with `extra` lines appended to snmpd.conf (trap sinks).
    pub fn start_with_conf(extra: &str) -> io::Result<PrivateSnmpd> {
        Self::start_full(None, extra)
    }

    fn start_with(agentx_tcp: Option<u16>) -> io::Result<PrivateSnmpd> {
        Self::start_full(agentx_tcp, "")
    }

    fn start_full(agentx_tcp: Option<u16>, extra: &str) -> io::Result<PrivateSnmpd> {
        let dir = tempfile::Builder::new().prefix("ibpm-snmpd-").tempdir()?;
        let port = free_udp_port();
        let mut s = PrivateSnmpd {
            dir,
            port,
            agentx_tcp,
            child: None,
        };
        std::fs::create_dir_all(s.persist_dir())?;
        let conf = format!(
            "agentAddress udp:127.0.0.1:{port}\n\
             master agentx\n\
             agentXSocket {sock}\n\
             agentXPerms 0660 0755 0 nogroup\n\
             rocommunity public 127.0.0.1\n\
             rwcommunity private 127.0.0.1\n\
             dontLogTCPWrappersConnects yes\n\
             {extra}",
            sock = s.agentx_addr()
        );
        std::fs::write(s.conf_path(), conf)?;
        s.launch()?;
        Ok(s)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
    pub fn socket_path(&self) -> PathBuf {
        self.dir.path().join("master")
    }
    /// The AgentX address string a session is configured with.
    pub fn agentx_addr(&self) -> String {
        match self.agentx_tcp {
            Some(p) => format!("tcp:127.0.0.1:{p}"),
            None => format!("unix:{}", self.socket_path().display()),
        }
    }
    /// `127.0.0.1:PORT`, the target for the client tools.
    pub fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
    pub fn conf_path(&self) -> PathBuf {
        self.dir.path().join("snmpd.conf")
    }
    pub fn persist_dir(&self) -> PathBuf {
        self.dir.path().join("persist")
    }
    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("snmpd.log")
    }
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(|c| c.pid())
    }

    fn launch(&mut self) -> io::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())?;
        let child = Command::new(Self::SNMPD)
            .args(["-f", "-Lo", "-C", "-c"])
            .arg(self.conf_path())
            .args(["-m", "", "-I", "-smux", "-p"])
            .arg(self.dir.path().join("snmpd.pid"))
            .env("SNMP_PERSISTENT_DIR", self.persist_dir())
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()?;
        self.child = Some(ChildGuard::new("snmpd", child));
        self.wait_ready(Duration::from_secs(10))
    }

    /// Waits until the AgentX socket exists and snmpd answers an SNMP get.
    pub fn wait_ready(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut()
                && !c.running()
            {
                return Err(io::Error::other(format!(
                    "snmpd exited early; log:\n{}",
                    std::fs::read_to_string(self.log_path()).unwrap_or_default()
                )));
            }
            if self.agentx_tcp.is_some() || self.socket_path().exists() {
                let out = SnmpTool::new("snmpget")
                    .args(["-v2c", "-c", "public", "-t", "0.3", "-r", "0", "-On"])
                    .arg(&self.target())
                    .arg("1.3.6.1.2.1.1.3.0")
                    .timeout(Duration::from_secs(3))
                    .run();
                if out.status.success() {
                    return Ok(());
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("snmpd not ready within {timeout:?}"),
        ))
    }

    /// Stops snmpd (SIGTERM, then SIGKILL after a bound) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.stop();
        }
    }

    /// Stops and starts again on the same socket path and port.
    pub fn restart(&mut self) -> io::Result<()> {
        self.stop();
        self.launch()
    }
}

impl Drop for PrivateSnmpd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A snmptrapd of our own: one loopback UDP port, no system
/// configuration, every notification it receives written to a log file
/// with names from IB-PM-MIB; stopped by PID when dropped.
pub struct PrivateSnmptrapd {
    dir: tempfile::TempDir,
    pub port: u16,
    child: Option<ChildGuard>,
}

impl PrivateSnmptrapd {
    pub const SNMPTRAPD: &'static str = "/usr/sbin/snmptrapd";

    /// Starts it and waits until it has logged its start.
    pub fn start() -> io::Result<PrivateSnmptrapd> {
        PrivateSnmptrapd::start_with_conf("")
    }

    /// [`PrivateSnmptrapd::start`] with `extra` lines of configuration
    /// (`createUser` of SNMPv3 senders, say).
    pub fn start_with_conf(extra: &str) -> io::Result<PrivateSnmptrapd> {
        assert!(
            Path::new(Self::SNMPTRAPD).exists(),
            "{} is needed: run scripts/install-deps (Debian package snmptrapd)",
            Self::SNMPTRAPD
        );
        let dir = tempfile::Builder::new()
            .prefix("ibpm-snmptrapd-")
            .tempdir()?;
        let port = free_udp_port();
        std::fs::create_dir_all(dir.path().join("persist"))?;
        let conf = dir.path().join("snmptrapd.conf");
        std::fs::write(
            &conf,
            format!("disableAuthorization yes\ndoNotRetainNotificationLogs yes\n{extra}\n"),
        )?;
        let mut t = PrivateSnmptrapd {
            dir,
            port,
            child: None,
        };
        let child = Command::new(Self::SNMPTRAPD)
            .args(["-f", "-n", "-C", "-c"])
            .arg(&conf)
            .arg("-Lf")
            .arg(t.log_path())
            .arg("-p")
            .arg(t.dir.path().join("snmptrapd.pid"))
            .arg("-M")
            .arg(mibpath::mib_search_path())
            .args(["-m", "IB-PM-MIB:SNMPv2-MIB"])
            .arg(format!("udp:127.0.0.1:{port}"))
            .env("SNMP_PERSISTENT_DIR", t.dir.path().join("persist"))
            .env("SNMPCONFPATH", t.dir.path())
            .env("MIBS", "")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()?;
        t.child = Some(ChildGuard::new("snmptrapd", child));
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if t.log().contains("NET-SNMP version") {
                return Ok(t);
            }
            if let Some(c) = t.child.as_mut()
                && !c.running()
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(io::Error::other(format!(
            "snmptrapd did not start; log:\n{}",
            t.log()
        )))
    }

    pub fn log_path(&self) -> PathBuf {
        self.dir.path().join("traps.log")
    }

    /// Everything logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path()).unwrap_or_default()
    }

    /// `host:port` as snmpd.conf's trapsink lines want it.
    pub fn sink(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.stop();
        }
    }
}

impl Drop for PrivateSnmptrapd {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The notifications an SNMPv2c sink logged (snmptrapd's default format:
/// a header line, then every varbind on one tab-separated line), each as
/// its varbind line.
pub fn v2_traps(log: &str, name: &str) -> Vec<String> {
    let needle = format!("snmpTrapOID.0 = OID: IB-PM-MIB::{name}\t");
    log.lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

/// The notifications an SNMPv1 sink logged: the lines naming the
/// enterprise-specific trap that snmpd translated `name` to (RFC 3584).
pub fn v1_traps(log: &str, name: &str) -> Vec<String> {
    let needle = format!("IB-PM-MIB::pm Enterprise Specific Trap (IB-PM-MIB::{name})");
    log.lines()
        .filter(|l| l.contains(&needle))
        .map(str::to_string)
        .collect()
}

fn which(name: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(name).is_file()))
        .unwrap_or(false)
}

/// Private, empty directory for SNMP_PERSISTENT_DIR / SNMPCONFPATH of the
/// client tools (so they never touch /var/lib/snmp or read ~/.snmp).
fn tools_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("ibpm-snmp-tools-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&d);
        d
    })
}

/// One run of a net-snmp client tool with a process-level timeout.
pub struct SnmpTool {
    name: String,
    args: Vec<String>,
    mibs: bool,
    timeout: Duration,
}

impl SnmpTool {
    pub fn new(name: &str) -> Self {
        SnmpTool {
            name: name.to_string(),
            args: Vec::new(),
            mibs: false,
            timeout: Duration::from_secs(30),
        }
    }
    pub fn arg(mut self, a: &str) -> Self {
        self.args.push(a.to_string());
        self
    }
    pub fn args<I, S>(mut self, a: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.args
            .extend(a.into_iter().map(|s| s.as_ref().to_string()));
        self
    }
    /// Adds `-M <repo mibs:ietf mibs> -m IB-PM-MIB` (otherwise `-m ''`: no
    /// MIBs).
    pub fn mibs(mut self, yes: bool) -> Self {
        self.mibs = yes;
        self
    }
    pub fn timeout(mut self, t: Duration) -> Self {
        self.timeout = t;
        self
    }

    /// Runs the tool. On timeout the process is killed and the output so
    /// far returned with a failed status.
    pub fn run(self) -> Output {
        let mut cmd = Command::new(&self.name);
        if self.mibs {
            cmd.arg("-M")
                .arg(mibpath::mib_search_path())
                .args(["-m", "IB-PM-MIB"]);
        } else {
            cmd.args(["-m", ""]);
        }
        cmd.args(&self.args)
            .env("SNMP_PERSISTENT_DIR", tools_dir())
            .env("SNMPCONFPATH", tools_dir())
            .env("MIBS", "")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run {}: {e}", self.name),
        };
        let mut guard = ChildGuard::new(&self.name, child);
        guard.term_grace = Duration::from_millis(500);
        let c = guard.child.as_mut().expect("child");
        let mut out = c.stdout.take().expect("stdout");
        let mut err = c.stderr.take().expect("stderr");
        let to = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = out.read_to_end(&mut v);
            v
        });
        let te = std::thread::spawn(move || {
            let mut v = Vec::new();
            let _ = err.read_to_end(&mut v);
            v
        });
        let deadline = Instant::now() + self.timeout;
        let mut status = None;
        while Instant::now() < deadline {
            if let Some(c) = guard.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                status = Some(st);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let timed_out = status.is_none();
        let status = match status {
            Some(s) => {
                guard.child.take();
                s
            }
            None => guard.stop().unwrap_or_else(failed_status),
        };
        let stdout = to.join().unwrap_or_default();
        let mut stderr = te.join().unwrap_or_default();
        if timed_out {
            stderr.extend_from_slice(
                format!("\n[{} killed after {:?}]\n", self.name, self.timeout).as_bytes(),
            );
        }
        Output {
            status,
            stdout,
            stderr,
        }
    }
}

fn failed_status() -> ExitStatus {
    use std::os::unix::process::ExitStatusExt;
    ExitStatus::from_raw(1 << 8)
}

/// Runs a net-snmp tool (no MIBs loaded) with a 30 s process timeout.
pub fn snmp_tool(name: &str, args: &[&str]) -> Output {
    SnmpTool::new(name).args(args).run()
}

/// One line of `snmpwalk -On -Oe` (or snmpget) output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WalkLine {
    pub oid: Oid,
    /// `INTEGER`, `Counter64`, `Hex-STRING`, `STRING`, ... or empty for
    /// exception lines ("No Such Object ...") and `""`.
    pub ty: String,
    /// The text after `TYPE: `, continuation lines joined with a space.
    pub value: String,
}

/// Parses numeric tool output (`.1.3.6... = TYPE: value`); lines that do not
/// start with an OID continue the previous value (long Hex-STRINGs wrap).
pub fn parse_walk(text: &str) -> Vec<WalkLine> {
    let mut out: Vec<WalkLine> = Vec::new();
    for line in text.lines() {
        let parsed = line.split_once(" = ").and_then(|(o, rest)| {
            let o = o.trim();
            if !o.starts_with('.') && !o.starts_with(|c: char| c.is_ascii_digit()) {
                return None;
            }
            let oid: Oid = o.parse().ok()?;
            let (ty, value) = match rest.split_once(": ") {
                Some((t, v)) if !t.contains(' ') || t == "OCTET STRING" => {
                    (t.to_string(), v.trim_end().to_string())
                }
                _ => (String::new(), rest.trim_end().to_string()),
            };
            Some(WalkLine { oid, ty, value })
        });
        match parsed {
            Some(l) => out.push(l),
            None => {
                if let Some(last) = out.last_mut()
                    && !line.trim().is_empty()
                {
                    last.value.push(' ');
                    last.value.push_str(line.trim());
                }
            }
        }
    }
    for l in &mut out {
        l.value = l.value.trim().to_string();
    }
    out
}

/// What `f` logs at info level and above, as the agent's log would show it
/// (plain text, no colours).
pub fn capture_log(f: impl FnOnce()) -> String {
    #[derive(Clone, Default)]
    struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
    impl std::io::Write for Captured {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let log = Captured::default();
    let w = log.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || w.clone())
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .finish();
    tracing::subscriber::with_default(subscriber, f);
    let bytes = log.0.lock().unwrap().clone();
    String::from_utf8(bytes).unwrap()
}

/// A GUID as net-snmp shows it with IB-PM-MIB's PmGuid DISPLAY-HINT
/// "2x:" (`0:0:10:12`: no zero padding).
pub fn guid_hint(g: u64) -> String {
    g.to_be_bytes()
        .chunks(2)
        .map(|c| format!("{:x}", u16::from_be_bytes([c[0], c[1]])))
        .collect::<Vec<_>>()
        .join(":")
}

/// snmpset, SNMPv2c with `community`, numeric OIDs, one try of 3 s:
/// Ok(stdout) or Err(stderr).
pub fn snmpset(target: &str, community: &str, args: &[&str]) -> Result<String, String> {
    let out = SnmpTool::new("snmpset")
        .args(["-v2c", "-c", community, "-On", "-t", "3", "-r", "0", target])
        .args(args)
        .run();
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// A node GUID as the eight sub-identifiers of an index, dotted.
pub fn guid_index(g: u64) -> String {
    g.to_be_bytes()
        .iter()
        .map(u8::to_string)
        .collect::<Vec<_>>()
        .join(".")
}

/// The trap lines (snmptrapd's, varbinds separated by tabs) naming node
/// `guid` (and `port`), varbinds compared whole.
pub fn traps_about(lines: Vec<String>, guid: u64, port: Option<u8>) -> Vec<String> {
    let node = format!(
        "IB-PM-MIB::pmNotifyNodeGuid.0 = STRING: {}",
        guid_hint(guid)
    );
    let port = port.map(|p| format!("IB-PM-MIB::pmNotifyPortNum.0 = Gauge32: {p}"));
    lines
        .into_iter()
        .filter(|l| {
            let vbs: Vec<&str> = l.split('\t').collect();
            vbs.contains(&node.as_str()) && port.as_ref().is_none_or(|p| vbs.contains(&p.as_str()))
        })
        .collect()
}
