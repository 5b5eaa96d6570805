//! Wiring: configuration -> fabric backend -> sweeper -> MIB view -> AgentX
//! session and built-in SNMP responder.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{error, info};

use crate::agentx::SessionHandle;
use crate::config::{Config, UserEntryError};
use crate::fabric::cache::Cache;
use crate::fabric::discover::DiscoverError;
use crate::fabric::federation::Writers;
use crate::ib::Escaped;
use crate::ib::topology::TopologyError;
use crate::mib::EndpointCounters;
use crate::snmp::ResponderHandle;
use crate::snmp::engine_file::EngineFileError;
use crate::transport::OpenError;

mod backend;
mod engine;
mod open;
pub mod plan;
mod service_loop;
mod stack;
pub mod subnets;
mod umad;
mod wiring;

use backend::spawn_rediscovery;
pub use backend::{
    Backend, FROZEN_AFTER, FabricSource, SubnetBackend, SubnetProbe, open_doca, sim_options,
};
use engine::snmp_engine;
pub use open::open_backend;
pub use service_loop::{STOP_BUDGET, run};
pub use stack::{Stacks, state_file_path};
pub use umad::open_umad;

/// A fatal start-up error, printed as one line.
#[derive(Debug)]
pub enum AppError {
    /// The topology file the configuration names is wrong.
    Topology(TopologyError),
    /// `snmp.engine_file` cannot be used.
    EngineFile(EngineFileError),
    /// An `[[snmp.user]]` cannot be made for the engine.
    User(UserEntryError),
    /// `notify.user` names no `[[snmp.user]]`.
    NotifyUser(String),
    /// The DOCA backend cannot be opened.
    Doca(String),
    /// The umad port cannot be opened.
    Umad(OpenError),
    /// A further handle on the umad port (`what` it is for).
    UmadHandle {
        what: &'static str,
        error: OpenError,
    },
    /// Discovery through the umad port (`device`, `ca`/`port`) failed.
    Discovery {
        device: String,
        ca: String,
        port: u8,
        error: DiscoverError,
    },
    /// The shutdown signal came while the fabric was discovered.
    Cancelled,
    /// The fabric has nodes but no subnet manager gave them LIDs.
    NoLids { nodes: usize },
    /// The SNMPv3 engine's random salt could not be drawn.
    Usm(getrandom::Error),
    /// The signal handlers cannot be installed.
    Signals(std::io::Error),
    /// A part cannot start (`part`: "the sweeper", "rediscovery", ...).
    Start {
        part: &'static str,
        error: std::io::Error,
    },
    /// The trap socket cannot be opened.
    TrapSocket(std::io::Error),
    /// The SNMP responder cannot listen on `addr`.
    Listen {
        addr: std::net::SocketAddr,
        error: std::io::Error,
    },
    /// The responder's socket has no local address.
    LocalAddr(std::io::Error),
    /// `metrics.web_config` cannot be used.
    WebConfig(crate::config::ConfigError),
    /// The plan file (`[topology] plan`) cannot be used.
    Plan(crate::cabling::PlanError),
}

impl AppError {
    /// A failure of the configuration or a file it names (what
    /// `check-config` reports too), not of the fabric or the system.
    pub fn is_config(&self) -> bool {
        matches!(
            self,
            AppError::Topology(_)
                | AppError::EngineFile(
                    EngineFileError::Unusable { .. }
                        | EngineFileError::NoFile
                        | EngineFileError::Write { .. }
                )
                | AppError::User(_)
                | AppError::NotifyUser(_)
                | AppError::WebConfig(_)
                | AppError::Plan(_)
        )
    }

    fn start(part: &'static str) -> impl FnOnce(std::io::Error) -> AppError {
        move |error| AppError::Start { part, error }
    }
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AppError::Topology(e) => e.fmt(f),
            AppError::Plan(e) => e.fmt(f),
            AppError::EngineFile(e @ EngineFileError::NoFile) => write!(f, "snmp.engine_id {e}"),
            AppError::EngineFile(e @ EngineFileError::Generate(_)) => e.fmt(f),
            AppError::EngineFile(e) => write!(f, "snmp.engine_file: {e}"),
            AppError::User(e) => e.fmt(f),
            AppError::Doca(e) => f.write_str(e),
            AppError::NotifyUser(u) => {
                write!(f, "notify.user `{}` is no [[snmp.user]]", Escaped(u))
            }
            AppError::Umad(e) => write!(f, "umad backend: {e}"),
            AppError::UmadHandle { what, error } => {
                write!(f, "umad backend: {what} handle: {error}")
            }
            AppError::Discovery {
                device,
                ca,
                port,
                error,
            } => write!(
                f,
                "umad backend: {} port {}/{port}: {error}",
                Escaped(device),
                Escaped(ca)
            ),
            AppError::Cancelled => f.write_str("umad backend: start-up cancelled"),
            AppError::NoLids { nodes } => write!(
                f,
                "umad backend: {nodes} nodes found but none has a LID: no subnet manager has \
                 configured the fabric (run opensm, or `opensm -o` once)"
            ),
            AppError::Usm(e) => write!(f, "cannot start the SNMPv3 engine: {e}"),
            AppError::Signals(e) => write!(f, "cannot install signal handler: {e}"),
            AppError::Start { part, error } => write!(f, "cannot start {part}: {error}"),
            AppError::TrapSocket(e) => write!(f, "cannot open the trap socket: {e}"),
            AppError::Listen { addr, error } => write!(f, "cannot listen on {addr}: {error}"),
            AppError::LocalAddr(e) => e.fmt(f),
            AppError::WebConfig(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for AppError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            AppError::Topology(e) => Some(e),
            AppError::EngineFile(e) => Some(e),
            AppError::User(e) => Some(e),
            AppError::Umad(e) | AppError::UmadHandle { error: e, .. } => Some(e),
            AppError::Discovery { error, .. } => Some(error),
            AppError::Usm(e) => Some(e),
            AppError::Signals(e)
            | AppError::Start { error: e, .. }
            | AppError::TrapSocket(e)
            | AppError::Listen { error: e, .. }
            | AppError::LocalAddr(e) => Some(e),
            _ => None,
        }
    }
}

/// The agent's one shutdown signal: set by SIGINT/SIGTERM or by dropping
/// the [`Running`] agent, read by every thread the agent starts. Clones
/// share the signal.
#[derive(Clone, Debug, Default)]
pub struct Shutdown(Arc<AtomicBool>);

impl Shutdown {
    pub fn new() -> Shutdown {
        Shutdown::default()
    }

    /// A signal that SIGINT and SIGTERM trigger.
    pub fn on_signals() -> Result<Shutdown, AppError> {
        let s = Shutdown::new();
        for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
            signal_hook::flag::register(sig, Arc::clone(&s.0)).map_err(AppError::Signals)?;
        }
        Ok(s)
    }

    /// Asks every thread that watches the signal to stop.
    pub fn trigger(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    pub fn is_triggered(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }

    /// The flag itself, for loops that poll an `AtomicBool`.
    pub fn flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}

/// A running agent: its threads, its session and responder. Dropping it
/// (or [`Running::stop`]) triggers the shutdown signal, closes the AgentX
/// session, stops the responder and joins every thread.
pub struct Running {
    shutdown: Shutdown,
    threads: Vec<(&'static str, JoinHandle<()>)>,
    session: Option<SessionHandle>,
    responder: Option<ResponderHandle>,
    metrics: Option<crate::metrics::MetricsHandle>,
    cache: Arc<Cache>,
}

impl Running {
    /// The cache the agent serves from.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The AgentX session, when one was configured.
    pub fn session(&self) -> Option<&SessionHandle> {
        self.session.as_ref()
    }

    /// The metrics endpoint, when one was configured.
    pub fn metrics(&self) -> Option<&crate::metrics::MetricsHandle> {
        self.metrics.as_ref()
    }

    /// The signal that stops this agent.
    pub fn shutdown_signal(&self) -> &Shutdown {
        &self.shutdown
    }

    /// Close the AgentX session, stop the responder and every thread.
    pub fn stop(self) {
        drop(self);
    }

    /// [`stop`](Self::stop) on a thread of its own, waiting for it at most
    /// `budget`; false when it has not ended by then (a thread blocked in
    /// a transport call is left behind: the process is about to exit).
    pub fn stop_within(self, budget: Duration) -> bool {
        self.shutdown.trigger();
        let (tx, rx) = std::sync::mpsc::channel();
        let stopper = std::thread::Builder::new()
            .name("stop".into())
            .spawn(move || {
                drop(self);
                let _ = tx.send(());
            });
        // When no thread can be started, the closure (and the agent) was
        // dropped here, stopping it in place.
        stopper.is_err() || rx.recv_timeout(budget).is_ok()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.shutdown.trigger();
        if let Some(s) = self.session.take() {
            s.shutdown();
        }
        if let Some(r) = self.responder.take() {
            r.shutdown();
        }
        if let Some(m) = self.metrics.take() {
            m.shutdown();
        }
        for (name, t) in self.threads.drain(..) {
            if t.join().is_err() {
                error!("{name} thread panicked");
            }
        }
    }
}

/// Start the sweeper, the write path, the AgentX session and the responder
/// over an opened backend, with a shutdown signal of their own.
pub fn start(cfg: &Config, backend: Backend) -> Result<Running, AppError> {
    start_with(cfg, backend, Shutdown::new())
}

/// [`start`] with the given shutdown signal. When a part cannot start, the
/// parts already started are stopped before the error is returned.
///
/// The steps: the stacks ([`Stacks`]), the threads beside them, the
/// evaluators and the notifier after each publication, the edges (the MIB
/// view, AgentX, the SNMP responder, the metrics endpoint), each a
/// function of its own that `health --sweep` and `topology check --sweep`
/// share where they need it.
pub fn start_with(cfg: &Config, backend: Backend, shutdown: Shutdown) -> Result<Running, AppError> {
    let Backend {
        subnets,
        doca,
        sim,
        emitted,
    } = backend;
    let discovered = Instant::now();
    log_loaded(cfg, &subnets);
    crate::time::start();
    // The SNMPv3 engine boots as the agent starts: snmpEngineTime, the
    // seconds since its boots were raised, counts from the time origin.
    let snmpv3 = if cfg.snmp.user.is_empty() {
        None
    } else {
        Some(snmp_engine(cfg)?)
    };
    let cache = Arc::new(Cache::new());
    let totals = state_file_path(
        cfg.fabric.state_file.as_deref(),
        std::env::var_os("STATE_DIRECTORY"),
    );
    let mut stacks = Stacks::new(
        cfg,
        subnets,
        &cache,
        totals.as_deref(),
        &shutdown,
        discovered,
    );
    let evaluators = wiring::Evaluators::new(cfg, &stacks, totals.as_deref())?;
    let events = evaluators.events.clone();
    // Owns what has started so far: an early return drops it, and its
    // Drop stops them.
    let mut running = Running {
        shutdown,
        threads: Vec::new(),
        session: None,
        responder: None,
        metrics: None,
        cache: Arc::clone(&cache),
    };
    wiring::companions(cfg, &mut stacks, sim, doca, &mut running)?;
    let writers = Writers::new(
        Arc::clone(&cache),
        stacks
            .list
            .iter()
            .map(|s| Arc::clone(&s.controller))
            .collect(),
    );
    let counters = Arc::new(EndpointCounters::default());
    let view = wiring::mib_view(cfg, &cache, writers, &counters, events.as_ref());
    running.session = wiring::agentx(cfg, &view)?;
    let notifier = wiring::notifier(
        cfg,
        running.session.as_ref(),
        snmpv3.as_ref(),
        emitted.as_ref(),
        events.as_ref(),
    )?;
    stacks.after_publish(cfg, evaluators.after_publish(notifier));
    stacks.spawn(&mut running)?;
    running.responder = wiring::responder(cfg, &view, &counters, snmpv3.as_ref())?;
    running.metrics = wiring::metrics(cfg, &cache, counters, events)?;
    Ok(running)
}

/// Say in the log what the backend found.
fn log_loaded(cfg: &Config, subnets: &[SubnetBackend]) {
    let nodes = subnets.iter().map(|s| s.fabric.nodes.len()).sum::<usize>();
    let ports: usize = subnets
        .iter()
        .flat_map(|s| &s.fabric.nodes)
        .map(|n| n.ports.len())
        .sum();
    info!(
        backend = %cfg.fabric.backend,
        subnets = subnets.len(),
        nodes,
        ports,
        rss_kb = crate::heap::resident_kb().unwrap_or(0),
        peak_kb = crate::heap::peak_kb().unwrap_or(0),
        "fabric loaded"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentx::AgentxAddr;
    use crate::ib::topology;
    use crate::sim::{SimFabric, SimOptions};
    use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

    /// A simulator transport that holds a token: while any thread still
    /// owns one of these transports, the token has more than one owner.
    struct Tracked {
        inner: crate::sim::SimTransport,
        _token: Arc<()>,
    }

    impl MadTransport for Tracked {
        fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.inner.send(to, mad)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            self.inner.recv(timeout)
        }
    }

    fn tracked_backend() -> (Backend, Arc<()>) {
        let sim = SimFabric::new(topology::default_fabric(), SimOptions::default());
        let token = Arc::new(());
        let t = || -> Box<dyn MadTransport> {
            Box::new(Tracked {
                inner: sim.transport(),
                _token: Arc::clone(&token),
            })
        };
        let backend = Backend {
            subnets: vec![SubnetBackend {
                view: Default::default(),
                fabric: sim.fabric(),
                sweep: t(),
                write: t(),
                poll: t(),
                source: None,
                probe: None,
            }],
            doca: None,
            sim: None,
            emitted: None,
        };
        (backend, token)
    }

    /// A wrong file the configuration names is the configuration's failure
    /// (exit status 2, as `check-config`); the fabric's and the system's
    /// are not (exit status 1). Each reads as it did as a plain line.
    #[test]
    fn start_up_errors_say_whose_failure_they_are() {
        let io = || std::io::Error::from_raw_os_error(libc::EADDRINUSE);
        let topology = topology::parse("bogus line\n").unwrap_err();
        let config = [
            AppError::Topology(topology),
            AppError::EngineFile(EngineFileError::NoFile),
            AppError::EngineFile(EngineFileError::Unusable {
                path: "/var/lib/ibpm-agentx/snmp-engine".into(),
                why: crate::snmp::engine_file::FileProblem::Incomplete,
            }),
            AppError::User(crate::config::UserEntryError {
                name: "ops".into(),
                error: crate::snmp::usm::UserError::Name,
            }),
            AppError::NotifyUser("ops".into()),
        ];
        assert!(config.iter().all(AppError::is_config));
        let system = [
            AppError::Doca("no library".into()),
            AppError::Umad(OpenError::ZeroTimeout),
            AppError::Cancelled,
            AppError::NoLids { nodes: 3 },
            AppError::Signals(io()),
            AppError::Start {
                part: "the sweeper",
                error: io(),
            },
            AppError::Discovery {
                device: "/dev/infiniband/umad0".into(),
                ca: "mlx5_0".into(),
                port: 1,
                error: DiscoverError::Cancelled,
            },
        ];
        assert!(!system.iter().any(AppError::is_config));
        assert_eq!(
            system[4].to_string(),
            format!("cannot install signal handler: {}", io())
        );
        assert_eq!(
            system[6].to_string(),
            "umad backend: /dev/infiniband/umad0 port mlx5_0/1: discovery: cancelled"
        );
        assert_eq!(
            AppError::NotifyUser("a\u{1b}b".into()).to_string(),
            format!("notify.user `{}` is no [[snmp.user]]", Escaped("a\u{1b}b"))
        );
        let handle = AppError::UmadHandle {
            what: "write",
            error: OpenError::ZeroTimeout,
        };
        assert!(std::error::Error::source(&handle).is_some());
    }

    /// The responder cannot bind after the sweeper, the sample poller and
    /// the AgentX session started: the start fails and none of them keeps
    /// running. The session's view writes through the controller, so every
    /// transport is dropped only when all three have stopped.
    #[test]
    fn a_failed_start_leaves_no_thread_running() {
        let taken = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::default();
        cfg.agentx.socket = AgentxAddr::Unix(dir.path().join("no-master"));
        cfg.set.allow = true;
        cfg.snmp.listen = Some(taken.local_addr().unwrap());
        let (backend, token) = tracked_backend();
        let e = start(&cfg, backend).err().expect("the port is taken");
        assert!(matches!(e, AppError::Listen { .. }), "{e}");
        assert!(
            e.to_string().starts_with("cannot listen on 127.0.0.1:"),
            "{e}"
        );
        assert!(!e.is_config());
        assert_eq!(
            Arc::strong_count(&token),
            1,
            "a thread still owns a transport after the failed start"
        );
    }

    /// Dropping the running agent (without `stop`) ends every thread: the
    /// sweeper, the sample poller, the AgentX session (still trying to
    /// connect) and the responder, which between them own every transport
    /// and every reference to the cache.
    #[test]
    fn dropping_the_running_agent_stops_every_thread() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::default();
        cfg.agentx.socket = AgentxAddr::Unix(dir.path().join("no-master"));
        cfg.snmp.listen = Some("127.0.0.1:0".parse().unwrap());
        cfg.set.allow = true;
        let (backend, token) = tracked_backend();
        let running = start(&cfg, backend).expect("start");
        assert!(running.session().is_some());
        let cache = Arc::clone(running.cache());
        let signal = running.shutdown_signal().clone();
        assert!(Arc::strong_count(&cache) > 2 && Arc::strong_count(&token) > 1);
        drop(running);
        assert!(signal.is_triggered());
        assert_eq!(
            Arc::strong_count(&token),
            1,
            "a transport outlived the agent"
        );
        assert_eq!(
            Arc::strong_count(&cache),
            1,
            "a thread still serves the cache"
        );
    }
}

#[cfg(test)]
mod state_file {
    use super::state_file_path;
    use std::path::{Path, PathBuf};

    #[test]
    fn configured_off_or_the_service_state_directory() {
        let dir = Some("/var/lib/ibpm-agentx:/var/lib/other".into());
        assert_eq!(
            state_file_path(None, dir.clone()),
            Some(PathBuf::from("/var/lib/ibpm-agentx/totals"))
        );
        assert_eq!(state_file_path(None, None), None);
        assert_eq!(state_file_path(Some(Path::new("off")), dir.clone()), None);
        assert_eq!(
            state_file_path(Some(Path::new("/tmp/t")), dir),
            Some(PathBuf::from("/tmp/t"))
        );
    }
}
