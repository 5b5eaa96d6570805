//! `ibpm-agentx`: serve IB-PM-MIB to snmpd over AgentX.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use ibpm_agentx::agentx::AgentxAddr;
use ibpm_agentx::config::{self, Config, FabricBackend};
use ibpm_agentx::ib::{Escaped, Guid};
use ibpm_agentx::mib::index::{IndexScheme, RowIndex, guid_index};
use ibpm_agentx::mib::tables::{COLUMNS, TABLES};

#[derive(Parser)]
#[command(
    name = "ibpm-agentx",
    version,
    about = "AgentX subagent serving IB-PM-MIB for an InfiniBand fabric",
    long_about = LONG_ABOUT,
    after_help = EXIT_STATUS
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Sweep the fabric and serve IB-PM-MIB.
    Run(RunArgs),
    /// Check a configuration file (and the topology file, node-name-map
    /// and plan it names).
    CheckConfig {
        #[arg(long, value_name = "FILE")]
        config: PathBuf,
    },
    /// Write the man page (roff) or a shell's completions to standard output
    /// (the package build installs them).
    #[command(hide = true)]
    Generate {
        #[arg(value_enum)]
        what: Generated,
    },
    /// Read one port's counters from the fabric now, as perfquery does
    /// (PortCounters and PortCountersExtended; data in octets), and show
    /// its link: active, supported, enabled and expected width and speed,
    /// and whether it is degraded.
    Query {
        /// The node: its GUID (hex), a port GUID (as perfquery -G), a LID,
        /// its name in the node-name-map, or its NodeDescription.
        node: String,
        /// The port (default: the port a port GUID or a channel adapter's
        /// LID names, else 1).
        port: Option<u8>,
        #[command(flatten)]
        fabric: FabricArgs,
        /// One JSON object instead of perfquery's layout.
        #[arg(long)]
        json: bool,
    },
    /// Show what is unhealthy in the fabric now, as the status page does:
    /// the agent, the nodes that do not answer, the unhealthy and degraded
    /// links, the worst ports. Reads a running agent's /api/health, or
    /// with --sweep sweeps the fabric itself. Exit status: 0 healthy, 3
    /// unhealthy (a verdict stands or a node does not answer), 4 the agent
    /// is not sweeping, 1 no report, 2 a wrong command line.
    Health(HealthArgs),
    /// Show the fabric's event log (nodes lost and found, port states,
    /// verdicts raised, cleared and acknowledged, SM changes, thresholds,
    /// counter resets), oldest first, from a running agent's /api/events.
    Events(EventsArgs),
    /// Print the MIB index of a node GUID (as hex: 0x0002c90300001234 or
    /// 0002:c903:0000:1234) and the OID of each table's first column for it
    /// (with PORT, of the per-port tables too).
    Oid {
        #[arg(value_name = "GUID")]
        guid: String,
        #[arg(value_name = "PORT")]
        port: Option<u8>,
    },
    /// The fabric as designed and as found.
    #[command(subcommand)]
    Topology(TopologyCmd),
}

#[derive(Subcommand)]
enum TopologyCmd {
    /// Discover the fabric through the configured backend and write it in
    /// ibnetdiscover's format to FILE ("-": standard output): the
    /// baseline a site keeps at bring-up, read back by `[topology] plan`,
    /// ibnetdiscover's readers and ibsim.
    Save {
        #[arg(value_name = "FILE")]
        file: PathBuf,
        #[command(flatten)]
        fabric: FabricArgs,
    },
    /// Say what is not as planned: every cable missing, miswired, at a
    /// wrong rate or not in the plan, every node absent or not in the
    /// plan, in words for the technician. Reads a running agent's
    /// /api/topology/diff, or with --sweep sweeps the fabric itself. Exit
    /// status: 0 as planned, 3 not, 4 not compared yet, 1 no answer, 2 a
    /// wrong command line or plan.
    Check(TopologyCheckArgs),
}

/// How a command that reads the fabric itself opens it.
#[derive(clap::Args)]
struct FabricArgs {
    /// Configuration file (backend, topology, MAD settings, [health]).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Where counters come from: sim, umad or doca.
    #[arg(long, value_name = "BACKEND")]
    backend: Option<FabricBackend>,
    /// Topology file for the simulator.
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
}

/// How a command reaches a running agent.
#[derive(clap::Args)]
struct AgentArgs {
    /// The agent's metrics endpoint (http:// or https://, with a path
    /// prefix when it is behind a proxy).
    #[arg(long, value_name = "URL", default_value = ibpm_agentx::checkup::DEFAULT_URL)]
    url: String,
    /// The CA certificate (PEM) of an https:// endpoint.
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// Basic auth user; the password is read from IBPM_AGENTX_PASSWORD.
    #[arg(long, value_name = "USER")]
    user: Option<String>,
}

#[derive(clap::Args)]
struct HealthArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Seconds for the whole exchange with the agent (1 to 3600); past
    /// them the command fails (exit status 1).
    #[arg(long, value_name = "SECONDS", default_value_t = 60, conflicts_with = "sweep", value_parser = clap::value_parser!(u64).range(1..=3600))]
    timeout: u64,
    /// Sweep the fabric through the configured backend instead of asking
    /// an agent.
    #[arg(long, conflicts_with = "url")]
    sweep: bool,
    /// With --sweep: sweep again after this many seconds (1 to 60), for
    /// error rates and congestion.
    #[arg(long, value_name = "SECONDS", requires = "sweep", value_parser = clap::value_parser!(u64).range(1..=60))]
    rates: Option<u64>,
    #[command(flatten)]
    fabric: FabricArgs,
    /// Only the links with this condition (link_lost, unresponsive,
    /// flapping, erroring, degraded, congested).
    #[arg(long, value_name = "NAME")]
    condition: Option<String>,
    /// Order of the links: severity, since, flaps or name.
    #[arg(long, value_name = "ORDER")]
    sort: Option<String>,
    /// Rows per section (1 to 200).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Ports per ranking (0 to 200).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// The report as JSON (the schema of /api/health).
    #[arg(long)]
    json: bool,
    /// Print only the hosts with a standing verdict on their own links,
    /// one per line (from /api/hosts), for a scheduler's drain command.
    #[arg(long, conflicts_with_all = ["sweep", "json"])]
    hosts: bool,
}

#[derive(clap::Args)]
struct EventsArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// How far back: 90s, 30m, 1h, 2d (at most 30d).
    #[arg(long, value_name = "DURATION")]
    since: Option<String>,
    /// Only events of this kind (node-lost, port-state, verdict-raised...;
    /// several with commas).
    #[arg(long, value_name = "KIND")]
    kind: Option<String>,
    /// Only events about this node (its GUID, name or host).
    #[arg(long, value_name = "NODE")]
    node: Option<String>,
    /// At most this many events (1 to 100000).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Keep reading: print new events as they come (every 2 s).
    #[arg(long)]
    follow: bool,
    /// The answer as JSON (the schema of /api/events).
    #[arg(long, conflicts_with = "follow")]
    json: bool,
}

#[derive(clap::Args)]
struct TopologyCheckArgs {
    #[command(flatten)]
    agent: AgentArgs,
    /// Sweep the fabric through the configured backend instead of asking
    /// an agent.
    #[arg(long, conflicts_with = "url")]
    sweep: bool,
    /// With --sweep: the plan to compare with (ibnetdiscover's format);
    /// without it, the configured plan, else the baseline beside the
    /// configured state file.
    #[arg(long, value_name = "FILE", requires = "sweep")]
    plan: Option<PathBuf>,
    #[command(flatten)]
    fabric: FabricArgs,
    /// The comparison as JSON (the schema of /api/topology/diff).
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Generated {
    Man,
    Bash,
    Zsh,
    Fish,
}

#[derive(clap::Args)]
struct RunArgs {
    /// Configuration file (TOML); flags below override it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// snmpd's AgentX socket: PATH, unix:PATH or tcp:HOST:PORT.
    #[arg(long, value_name = "ADDR")]
    agentx_socket: Option<AgentxAddr>,
    /// Do not connect to snmpd (serve only the built-in responder).
    #[arg(long)]
    no_agentx: bool,
    /// Where counters come from: sim, umad or doca.
    #[arg(long, value_name = "BACKEND")]
    backend: Option<FabricBackend>,
    /// Topology file (ibnetdiscover / ibsim format) for the simulator.
    #[arg(long, value_name = "FILE")]
    topology: Option<PathBuf>,
    /// Seconds between sweeps.
    #[arg(long, value_name = "SECONDS", value_parser = config::sweep_interval_arg)]
    sweep_interval: Option<Duration>,
    /// Serve SNMP (v1, v2c, v3) on HOST:PORT with the agent's own endpoint.
    #[arg(long, value_name = "HOST:PORT")]
    snmp_listen: Option<SocketAddr>,
    /// Serve Prometheus metrics on HOST:PORT (the [metrics] section says to whom and how).
    #[arg(long, value_name = "HOST:PORT")]
    metrics_listen: Option<SocketAddr>,
    /// Accept SNMP SETs.
    #[arg(long)]
    allow_set: bool,
}

impl RunArgs {
    /// The arguments of a command that reads the fabric once, outside an
    /// agent (`query`, `health --sweep`): no AgentX, no endpoints.
    fn offline(f: FabricArgs) -> RunArgs {
        RunArgs {
            config: f.config,
            agentx_socket: None,
            no_agentx: true,
            backend: f.backend,
            topology: f.topology,
            sweep_interval: None,
            snmp_listen: None,
            metrics_listen: None,
            allow_set: false,
        }
    }
}

/// The description the man page gives (`--help` shows it too).
const LONG_ABOUT: &str = "AgentX subagent serving IB-PM-MIB for an InfiniBand fabric: it sweeps \
every node's Performance Management counters (umad, the built-in simulator, or NVIDIA DOCA \
telemetry diag) and serves them to snmpd as an AgentX subagent, and to NMSes through its own SNMP \
endpoint.

The endpoint ([snmp] listen) answers SNMPv1, v2c and v3 (USM: SHA and SHA-2 authentication, \
AES-128 privacy) from the same snapshot, a whole GetBulk per datagram, for NMSes that read a large \
fabric (snmpd forwards one varbind per AgentX round trip). [[snmp.access]] rules name a community \
or an SNMPv3 user, the source networks (CIDR, IPv4 and IPv6; default loopback), the subtrees it \
sees, whether it may write and the largest response; a source no rule lists gets no answer. \
[[snmp.user]] entries give SNMPv3 users with passphrases or localized keys; snmp.engine_file keeps \
snmpEngineID and snmpEngineBoots. A Prometheus snmp_exporter module for the per-port tables \
(generator.yml and the snmp.yml it makes) is shipped with the documentation.

The metrics endpoint ([metrics] listen, or --metrics-listen) serves the same snapshot as \
Prometheus metrics over HTTP: the text format 0.0.4 or OpenMetrics 1.0 as the scraper's Accept \
header asks, gzipped when it accepts gzip, at [metrics] path (default /metrics). [metrics] \
sources lists who may scrape (CIDR, IPv4 and IPv6; default loopback; others get 403); \
[metrics] web_config names the web configuration file of Prometheus exporters (TLS, client \
certificates, basic auth with bcrypt hashes); [metrics] collectors chooses what a scrape gets, \
and a scrape may ask for collectors with ?collect[]=NAME. A Prometheus configuration, alerting \
rules and a Grafana dashboard are shipped with the documentation. The configuration file \
documents every key (/etc/ibpm-agentx.toml).";

/// Exit status, one per kind of failure, the same for every command.
const EXIT_STATUS: &str = "Exit status: 0 success; 1 the agent or the fabric failed (a backend \
that cannot be opened, a part that cannot start, an agent that gave no report); 2 the command \
line, the configuration or a file it names (topology, state file path) is wrong: `run` and \
`check-config` exit 2 for the same bad file. `health`: 0 nothing unhealthy, 3 a verdict stands \
or a node does not answer, 4 the agent is not sweeping. `topology check`: 0 as planned, 3 not, \
4 not compared yet.";
/// The agent or the fabric failed.
const EXIT_FAILED: u8 = 1;
/// The command line, the configuration or a file it names is wrong (clap
/// exits 2 on a bad command line too).
const EXIT_CONFIG: u8 = 2;

fn main() -> ExitCode {
    ibpm_agentx::heap::configure(1);
    let cli = Cli::parse();
    match cli.cmd {
        Cmd::CheckConfig { config } => match check(&config) {
            Ok(()) => {
                println!("{}: ok", config.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("{e}");
                ExitCode::from(EXIT_CONFIG)
            }
        },
        Cmd::Generate { what } => match generate(what) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                ExitCode::FAILURE
            }
        },
        Cmd::Query {
            node,
            port,
            fabric,
            json,
        } => {
            let run_args = RunArgs::offline(fabric);
            let cfg = match build_config(run_args) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("ibpm-agentx: {e}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match query(&cfg, &node, port) {
                Ok(r) if json => {
                    print!("{}", ibpm_agentx::query::json(&r));
                    ExitCode::SUCCESS
                }
                Ok(r) => {
                    print!("{}", ibpm_agentx::query::text(&r));
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("ibpm-agentx: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        Cmd::Health(args) => health(args),
        Cmd::Events(args) => events(args),
        Cmd::Topology(TopologyCmd::Save { file, fabric }) => topology_save(&file, fabric),
        Cmd::Topology(TopologyCmd::Check(args)) => topology_check(args),
        Cmd::Oid { guid, port } => match guid.parse::<Guid>() {
            Ok(g) => {
                print!("{}", oid_text(g, port));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                ExitCode::from(EXIT_CONFIG)
            }
        },
        Cmd::Run(args) => {
            let cfg = match build_config(args) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("ibpm-agentx: {e}");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            init_logging(&cfg.log.level);
            let code = match ibpm_agentx::app::run(cfg) {
                Ok(()) => 0,
                Err(e) => {
                    eprintln!("ibpm-agentx: {e}");
                    if e.is_config() {
                        EXIT_CONFIG
                    } else {
                        EXIT_FAILED
                    }
                }
            };
            exit_now(code)
        }
    }
}

/// How long the exit handlers may take before the process ends without
/// them.
const EXIT_GRACE: Duration = Duration::from_millis(800);

/// Ends the process after the agent has stopped (session closed, state
/// file written): the exit handlers run, but for at most [`EXIT_GRACE`].
/// A library's handler may wait on something that no longer answers
/// (umad2sim's tells ibsim it leaves, and waits forever on a stopped
/// simulator), or on a lock a thread the stop left behind holds.
fn exit_now(code: u8) -> ! {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    let _ = std::thread::Builder::new()
        .name("exit".into())
        .spawn(move || {
            std::thread::sleep(EXIT_GRACE);
            // SAFETY: _exit takes no pointer and never returns; what the
            // process writes was flushed above (logs go to stderr
            // unbuffered).
            unsafe { libc::_exit(i32::from(code)) }
        });
    std::process::exit(i32::from(code))
}

/// Opens the configured backend and reads `port` of the node `node` names.
fn query(
    cfg: &Config,
    node: &str,
    port: Option<u8>,
) -> Result<ibpm_agentx::query::Reading, Box<dyn std::error::Error>> {
    init_offline_logging(cfg);
    let backend = ibpm_agentx::app::open_backend(cfg, &ibpm_agentx::app::Shutdown::new())?;
    // The port is read in the subnet that has it (a node on several
    // planes has each port in one).
    let names = cfg.names.current();
    let (i, _, port) = ibpm_agentx::query::find_port_in(
        backend.subnets.iter().map(|s| &s.fabric),
        &names,
        node,
        port,
    )?;
    let subnet = backend
        .subnets
        .into_iter()
        .nth(i)
        .expect("the subnet it was found in");
    let label = subnet.view.label();
    let n = ibpm_agentx::query::find_port_named(&subnet.fabric, &names, node, Some(port))?.0;
    let mut r = ibpm_agentx::query::read(subnet.sweep, cfg.engine(), &subnet.fabric, n, port)?;
    r.subnet = Some(label);
    if let Some(name) = names.get(r.guid) {
        r.name = name.to_string();
    }
    Ok(r)
}

/// `topology save`: the fabric discovered through the configured backend,
/// in ibnetdiscover's format. A node found in several subnets is written
/// once, as its first subnet shows it.
fn topology_save(file: &std::path::Path, fabric: FabricArgs) -> ExitCode {
    use ibpm_agentx::ib::topology::write;
    let cfg = match build_config(RunArgs::offline(fabric)) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    init_offline_logging(&cfg);
    let t0 = std::time::Instant::now();
    let backend = match ibpm_agentx::app::open_backend(&cfg, &ibpm_agentx::app::Shutdown::new()) {
        Ok(b) => b,
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let discovered = t0.elapsed();
    let t1 = std::time::Instant::now();
    let mut seen = std::collections::HashSet::new();
    let nodes: Vec<write::WriteNode<'_>> = backend
        .subnets
        .iter()
        .flat_map(|s| write::of_fabric(&s.fabric))
        .filter(|(id, _)| seen.insert(id.guid))
        .collect();
    let text = write::write(&nodes);
    let written = if file.as_os_str() == "-" {
        use std::io::Write as _;
        std::io::stdout().lock().write_all(text.as_bytes())
    } else {
        ibpm_agentx::files::write_atomic(file, text.as_bytes())
    };
    match written {
        Ok(()) => {
            eprintln!(
                "ibpm-agentx: wrote {} nodes ({} bytes) to {}: discovered in {} ms, written in {} ms",
                nodes.len(),
                text.len(),
                Escaped(&file.display().to_string()),
                discovered.as_millis(),
                t1.elapsed().as_millis()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!(
                "ibpm-agentx: cannot write {}: {e}",
                Escaped(&file.display().to_string())
            );
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// `health`: the report of an agent or of a sweep of its own; the exit
/// status says what it found.
fn health(a: HealthArgs) -> ExitCode {
    use ibpm_agentx::checkup::{self, Outcome};
    use ibpm_agentx::metrics::status::Query;
    let mut parts = Vec::new();
    for (k, v) in [
        ("condition", a.condition.clone()),
        ("sort", a.sort.clone()),
        ("limit", a.limit.map(|n| n.to_string())),
        ("top", a.top.map(|n| n.to_string())),
    ] {
        if let Some(v) = v {
            parts.push(format!("{k}={v}"));
        }
    }
    let q = match Query::parse(&parts.join("&")) {
        Ok(q) => q,
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if a.hosts {
        let remote = match remote(a.agent, Duration::ZERO) {
            Ok(r) => r,
            Err(code) => return code,
        };
        let got = checkup::get(&remote, "/api/hosts?unhealthy=1").and_then(|b| {
            ibpm_agentx::metrics::hosts::parse(&b)
                .map_err(|e| format!("the agent's answer is no host list: {e}"))
        });
        return match got {
            Ok(h) => {
                let text = ibpm_agentx::metrics::hosts::lines(&h);
                if !print_lines(text.lines().map(str::to_string)) {
                    return ExitCode::SUCCESS;
                }
                ExitCode::from(if h.hosts.is_empty() { 0 } else { 3 })
            }
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                ExitCode::from(EXIT_FAILED)
            }
        };
    }
    let got = if a.sweep {
        let run_args = RunArgs::offline(a.fabric);
        let cfg = match build_config(run_args) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        init_offline_logging(&cfg);
        checkup::sweep(&cfg, a.rates.map(Duration::from_secs), &q)
    } else {
        let remote = match remote(a.agent, Duration::from_secs(a.timeout)) {
            Ok(r) => r,
            Err(code) => return code,
        };
        checkup::fetch(&remote, &q)
    };
    match got {
        Ok(r) => {
            if a.json {
                print!(
                    "{}",
                    String::from_utf8_lossy(&ibpm_agentx::metrics::health_api::render(&r))
                );
            } else {
                print!("{}", checkup::text(&r));
            }
            ExitCode::from(Outcome::of(&r).code())
        }
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// How to reach a running agent: the password of `user` from
/// IBPM_AGENTX_PASSWORD.
fn remote(a: AgentArgs, timeout: Duration) -> Result<ibpm_agentx::checkup::Remote, ExitCode> {
    let AgentArgs { url, cacert, user } = a;
    let user = match user {
        Some(u) => match std::env::var("IBPM_AGENTX_PASSWORD") {
            Ok(p) => Some((u, zeroize::Zeroizing::new(p))),
            Err(_) => {
                eprintln!("ibpm-agentx: --user needs the password in IBPM_AGENTX_PASSWORD");
                return Err(ExitCode::from(EXIT_CONFIG));
            }
        },
        None => None,
    };
    Ok(ibpm_agentx::checkup::Remote {
        url,
        cacert,
        user,
        timeout,
    })
}

/// Print `lines` and flush; false when standard output is gone (a pipe
/// closed by `head`): the command then ends quietly.
fn print_lines(lines: impl Iterator<Item = String>) -> bool {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    for l in lines {
        if writeln!(out, "{l}").is_err() {
            return false;
        }
    }
    out.flush().is_ok()
}

/// `events`: the event log of a running agent, once or followed.
fn events(a: EventsArgs) -> ExitCode {
    use ibpm_agentx::metrics::events_api::{self, line, parse_answer};
    let mut parts = Vec::new();
    for (k, v) in [
        ("since", a.since.clone()),
        ("kind", a.kind.clone()),
        ("node", a.node.clone()),
        ("limit", a.limit.map(|n| n.to_string())),
    ] {
        if let Some(v) = v {
            let v: String = v
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b',' => {
                        char::from(b).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect();
            parts.push(format!("{k}={v}"));
        }
    }
    // The query is checked here as the agent checks it.
    if let Err(e) = events_api::parse(&parts.join("&"), 0) {
        eprintln!("ibpm-agentx: {e}");
        return ExitCode::from(EXIT_CONFIG);
    }
    let remote = match remote(a.agent, Duration::ZERO) {
        Ok(r) => r,
        Err(code) => return code,
    };
    let fetch = |parts: &[String]| {
        let q = parts.join("&");
        let path = format!("/api/events{}{q}", if q.is_empty() { "" } else { "?" });
        ibpm_agentx::checkup::get(&remote, &path).and_then(|b| {
            parse_answer(&b)
                .map(|doc| (doc, b))
                .map_err(|e| format!("the agent's answer is no event list: {e}"))
        })
    };
    let mut last = match fetch(&parts) {
        Ok((doc, body)) => {
            if a.json {
                print!("{}", String::from_utf8_lossy(&body));
                return ExitCode::SUCCESS;
            }
            if !print_lines(doc.events.iter().map(line)) {
                return ExitCode::SUCCESS;
            }
            doc.last_seq
        }
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    if !a.follow {
        return ExitCode::SUCCESS;
    }
    // Until interrupted.
    loop {
        std::thread::sleep(Duration::from_secs(2));
        let mut next: Vec<String> = parts
            .iter()
            .filter(|p| !p.starts_with("since=") && !p.starts_with("limit="))
            .cloned()
            .collect();
        next.push(format!("after={last}"));
        match fetch(&next) {
            Ok((doc, _)) => {
                if !print_lines(doc.events.iter().map(line)) {
                    return ExitCode::SUCCESS;
                }
                last = doc.last_seq.max(last);
            }
            Err(e) => eprintln!("ibpm-agentx: {e}"),
        }
    }
}

/// `topology check`: the comparison of an agent or of a sweep of its
/// own; the exit status says whether the fabric is as planned.
fn topology_check(a: TopologyCheckArgs) -> ExitCode {
    use ibpm_agentx::checkup::plan;
    let got = if a.sweep {
        let cfg = match build_config(RunArgs::offline(a.fabric)) {
            Ok(c) => c,
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        init_offline_logging(&cfg);
        let state = ibpm_agentx::app::state_file_path(
            cfg.fabric.state_file.as_deref(),
            std::env::var_os("STATE_DIRECTORY"),
        );
        let file = a.plan.or_else(|| ibpm_agentx::app::plan::plan_file(&cfg));
        let loaded = match (file, state) {
            (Some(f), _) => ibpm_agentx::cabling::load_plan(&f).map_err(|e| e.to_string()),
            (None, Some(s)) => plan::baseline(&s),
            (None, None) => Err("no plan: give --plan FILE".to_string()),
        };
        let p = match loaded {
            Ok(p) => p,
            Err(e) => {
                eprintln!("ibpm-agentx: {e}");
                return ExitCode::from(EXIT_CONFIG);
            }
        };
        plan::sweep(&cfg, &p, ibpm_agentx::app::plan::compare_config(&cfg))
    } else {
        match remote(a.agent, Duration::ZERO) {
            Ok(r) => plan::fetch(&r),
            Err(code) => return code,
        }
    };
    match got {
        Ok(d) => {
            if a.json {
                print!(
                    "{}",
                    String::from_utf8_lossy(&ibpm_agentx::metrics::plan_diff::render_json(&d))
                );
            } else {
                let now = ibpm_agentx::health::watch::wall_ms(std::time::SystemTime::now());
                print!("{}", plan::text(&d, now));
            }
            ExitCode::from(plan::code(&d))
        }
        Err(e) => {
            eprintln!("ibpm-agentx: {e}");
            ExitCode::from(EXIT_FAILED)
        }
    }
}

/// The man page or completions, from the command-line declaration itself.
fn generate(what: Generated) -> std::io::Result<()> {
    use clap::CommandFactory;
    use clap_complete::Shell;
    use std::io::Write;
    let mut cmd = Cli::command();
    // Rendered into memory first: a closed stdout is then an error, not a
    // panic inside the generator.
    let mut text = Vec::new();
    let shell = match what {
        Generated::Man => None,
        Generated::Bash => Some(Shell::Bash),
        Generated::Zsh => Some(Shell::Zsh),
        Generated::Fish => Some(Shell::Fish),
    };
    match shell {
        Some(sh) => clap_complete::generate(sh, &mut cmd, "ibpm-agentx", &mut text),
        None => clap_mangen::Man::new(cmd).section("8").render(&mut text)?,
    }
    std::io::stdout().write_all(&text)
}

/// What `oid` prints: the index, then each table's first column with its
/// numeric OID for the node.
fn oid_text(g: Guid, port: Option<u8>) -> String {
    let join = |s: &[u32]| s.iter().map(u32::to_string).collect::<Vec<_>>().join(".");
    let index = join(&guid_index(g));
    let mut out = format!("node GUID {g}\nindex     {index}\n");
    for t in TABLES {
        let Some(c) = COLUMNS.iter().find(|c| c.table == t.number) else {
            continue;
        };
        let row = match (t.index, port) {
            (IndexScheme::NodeGuid, _) => RowIndex::node(g),
            (IndexScheme::NodeGuidPort | IndexScheme::NodeGuidPortLane, Some(port)) => {
                RowIndex::port(g, port)
            }
            _ => continue,
        };
        let idx = t.index.encode(row);
        out += &format!("{:<36} {}.{}\n", c.name, join(&c.oid()), join(&idx));
    }
    if port.is_none() {
        out += "(give a PORT for the per-port tables)\n";
    }
    out
}

fn check(path: &std::path::Path) -> Result<(), config::ConfigError> {
    let (cfg, _) = Config::check_file(path)?;
    for w in cfg.warnings() {
        eprintln!("{}: warning: {}", path.display(), Escaped(&w));
    }
    Ok(())
}

/// Why the configuration `run` and `query` start from is not usable.
enum ConfigFailure {
    /// The file.
    File(config::ConfigError),
    /// The file with the command line's flags applied: `section.key`.
    Flags(config::ConfigError),
}

impl std::fmt::Display for ConfigFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigFailure::File(e) => e.fmt(f),
            ConfigFailure::Flags(e) => write!(
                f,
                "{}: {}",
                Escaped(&e.key_path().unwrap_or_default()),
                Escaped(&e.reason)
            ),
        }
    }
}

fn build_config(a: RunArgs) -> Result<Config, ConfigFailure> {
    let mut cfg = match &a.config {
        Some(p) => Config::load(p).map_err(ConfigFailure::File)?,
        // No file: rdma-core's default node-name-map still names nodes
        // when it exists (a bad one is logged and left out).
        None => Config {
            names: std::sync::Arc::new(
                ibpm_agentx::ib::names::Names::open(None).unwrap_or_default(),
            ),
            ..Config::default()
        },
    };
    if let Some(s) = a.agentx_socket {
        cfg.agentx.socket = s;
    }
    if a.no_agentx {
        cfg.agentx.enabled = false;
    }
    if let Some(b) = a.backend {
        cfg.fabric.backend = b;
    }
    if let Some(t) = a.topology {
        cfg.fabric.topology = Some(t);
    }
    if let Some(s) = a.sweep_interval {
        cfg.fabric.sweep_interval = s;
    }
    if let Some(l) = a.snmp_listen {
        cfg.snmp.listen = Some(l);
    }
    if let Some(l) = a.metrics_listen {
        cfg.metrics.listen = Some(l);
    }
    if a.allow_set {
        cfg.set.allow = true;
    }
    cfg.validate().map_err(ConfigFailure::Flags)?;
    Ok(cfg)
}

/// The log of a command that reads the fabric once: warnings and worse
/// unless the configuration asks for more than `info`.
fn init_offline_logging(cfg: &Config) {
    init_logging(if cfg.log.level == "info" {
        "warn"
    } else {
        &cfg.log.level
    });
}

fn init_logging(level: &str) {
    let filter = std::env::var("RUST_LOG")
        .ok()
        .and_then(|env| ibpm_agentx::config::log_filter(&env))
        .or_else(|| ibpm_agentx::config::log_filter(level))
        .unwrap_or_else(|| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
