//! Wiring: configuration -> fabric backend -> sweeper -> MIB view -> AgentX
//! session and built-in SNMP responder.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use crate::agentx::{AgentxAddr, Session, SessionConfig, SessionHandle};
use crate::config::{Config, FabricBackend, UserEntryError};
use crate::fabric::cache::Cache;
use crate::fabric::control::Controller;
use crate::fabric::discover::{DiscoverError, DiscoverOptions, discover_with_stats};
use crate::fabric::engine::Engine;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::{AskRediscovery, Rediscover, Sweeper};
use crate::ib::topology::{self, TopologyError};
use crate::ib::{Escaped, Fabric, NodeType};
use crate::mib::schema::PM_ROOT;
use crate::mib::view::MibView;
use crate::mib::{EndpointCounters, MibHandler, Oid};
use crate::notify::send::Notifier;
use crate::notify::send::{AgentxSink, Sink, TrapSink};
use crate::service::{self, SystemdNotifier};
use crate::sim::{ManualClock, SimClock, SimFabric, SimOptions};
use crate::snmp::engine_file::EngineFileError;
use crate::snmp::{Responder, ResponderConfig, ResponderHandle};
use crate::transport::OpenError;
use crate::transport::umad::{UmadConfig, UmadTransport};
use crate::transport::{Fault, MadTransport};

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

/// What a backend provides: the fabric's shape and independent transports
/// to its PMAs (the sweeper's, the write path's and the sample poller's).
pub struct Backend {
    pub fabric: Fabric,
    pub sweep: Box<dyn MadTransport>,
    pub write: Box<dyn MadTransport>,
    pub poll: Box<dyn MadTransport>,
    /// Where the fabric is discovered again (None: never).
    pub source: Option<Box<dyn FabricSource>>,
    /// The local adapters' ports DOCA telemetry diag fills, and its
    /// sampler (the doca backend, or umad with `doca.enabled`).
    pub doca: Option<crate::doca::sampler::Opened>,
}

/// Discovers the fabric again, on its own handle to it.
pub trait FabricSource: Send {
    /// The fabric as it is now; returns soon after `cancel` is set.
    fn discover(&mut self, cancel: &Arc<AtomicBool>) -> Result<Fabric, DiscoverError>;

    /// `known` with the port facts (state, width, speed) as they are now:
    /// a light sweep. By default a whole discovery.
    fn refresh(
        &mut self,
        known: &Fabric,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Fabric, DiscoverError> {
        let _ = known;
        self.discover(cancel)
    }
}

/// The simulator's fabric as it is now (links taken down or up).
impl FabricSource for SimFabric {
    fn discover(&mut self, _cancel: &Arc<AtomicBool>) -> Result<Fabric, DiscoverError> {
        Ok(self.fabric())
    }
}

/// Directed-route discovery on its own SMP handle.
struct SmpDiscovery {
    smp: UmadTransport,
    opts: DiscoverOptions,
}

impl FabricSource for SmpDiscovery {
    fn discover(&mut self, cancel: &Arc<AtomicBool>) -> Result<Fabric, DiscoverError> {
        let opts = DiscoverOptions {
            cancel: Some(Arc::clone(cancel)),
            ..self.opts.clone()
        };
        discover_with_stats(&mut self.smp, &opts).map(|(f, _)| f)
    }

    fn refresh(
        &mut self,
        known: &Fabric,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Fabric, DiscoverError> {
        let opts = DiscoverOptions {
            cancel: Some(Arc::clone(cancel)),
            ..self.opts.clone()
        };
        crate::fabric::discover::refresh_port_info(&mut self.smp, known, &opts)
    }
}

impl Backend {
    /// The simulated fabric `sim`: its fabric (with the LIDs the simulator
    /// assigned) and three transports of its own.
    pub fn sim(sim: &SimFabric) -> Backend {
        Backend {
            fabric: sim.fabric(),
            sweep: Box::new(sim.transport()),
            write: Box::new(sim.transport()),
            poll: Box::new(sim.transport()),
            source: Some(Box::new(sim.clone())),
            doca: None,
        }
    }
}

/// Open the configured backend. Triggering `cancel` (the shutdown signal)
/// stops a start-up that waits on the fabric.
pub fn open_backend(cfg: &Config, cancel: &Shutdown) -> Result<Backend, AppError> {
    match cfg.fabric.backend {
        FabricBackend::Umad if cfg.doca.enabled => {
            let mut b = open_umad(cfg, cancel)?;
            let mut doca = crate::doca::sampler::open(&cfg.doca).map_err(AppError::Doca)?;
            // The local adapter is in the discovered fabric; a node that
            // is not (a port without a link) is served by DOCA alone.
            for n in std::mem::take(&mut doca.nodes) {
                if b.fabric.node(n.guid).is_none() {
                    b.fabric.nodes.push(n);
                }
            }
            b.fabric.sort();
            b.doca = Some(doca);
            return Ok(b);
        }
        FabricBackend::Umad => return open_umad(cfg, cancel),
        FabricBackend::Doca => return open_doca(cfg),
        FabricBackend::Sim => {}
    }
    let fabric = match cfg.topology_path() {
        Some(p) => topology::load(&p).map_err(AppError::Topology)?,
        None => topology::default_fabric(),
    };
    let sim = SimFabric::new(fabric, sim_options(cfg));
    Ok(Backend::sim(&sim))
}

/// The umad backend: open the port, discover the fabric by directed-route
/// SMPs, and hand out three PerfMgt handles on the same port. Discovery
/// returns soon after `cancel` is set.
pub fn open_umad(cfg: &Config, cancel: &Shutdown) -> Result<Backend, AppError> {
    let ucfg = UmadConfig {
        ca: cfg.umad.ca.clone(),
        port: cfg.umad.port,
        // The kernel's per-MAD timeout stays at or under the engines'
        // deadlines (the write path's is the shortest), so the engines
        // decide about retries.
        timeout_ms: (cfg.mad.timeout.min(cfg.control().timeout).as_millis() as u64)
            .clamp(1, u64::from(u32::MAX)) as u32,
        retries: 0,
        serve_perf_mgt: false,
    };
    let sweep = UmadTransport::open(&ucfg).map_err(AppError::Umad)?;
    let local = sweep.local_port().clone();
    let dopts = DiscoverOptions {
        window: cfg.mad.window,
        timeout: cfg.umad.discovery_timeout,
        cancel: Some(cancel.flag()),
        ..Default::default()
    };
    info!(ca = %Escaped(&local.ca), port = local.port, lid = local.lid, "discovering the fabric (directed-route SMPs)");
    let (fabric, stats) = {
        let mut smp = sweep.smp_handle();
        match discover_with_stats(&mut smp, &dopts) {
            Ok(r) => r,
            Err(DiscoverError::Cancelled) => return Err(AppError::Cancelled),
            Err(error) => {
                return Err(AppError::Discovery {
                    device: local.device.clone(),
                    ca: local.ca.clone(),
                    port: local.port,
                    error,
                });
            }
        }
    };
    let switches = fabric
        .nodes
        .iter()
        .filter(|n| n.node_type == NodeType::Switch)
        .count();
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    let with_lid = fabric
        .nodes
        .iter()
        .filter(|n| n.lid != 0 || n.ports.iter().any(|p| p.lid != 0))
        .count();
    info!(
        nodes = fabric.nodes.len(),
        switches,
        channel_adapters = fabric.nodes.len() - switches,
        ports,
        smps = stats.smps_sent,
        smp_timeouts = stats.timeouts,
        ms = stats.elapsed.as_millis() as u64,
        "fabric discovered"
    );
    if with_lid == 0 {
        return Err(AppError::NoLids {
            nodes: fabric.nodes.len(),
        });
    }
    if with_lid < fabric.nodes.len() {
        tracing::warn!(
            without_lid = fabric.nodes.len() - with_lid,
            "some nodes have no LID and cannot be swept"
        );
    }
    let handle = |what| {
        sweep
            .pm_handle()
            .map_err(|error| AppError::UmadHandle { what, error })
    };
    let write = handle("write")?;
    let poll = handle("sample poller")?;
    let source = SmpDiscovery {
        smp: sweep.smp_handle(),
        opts: DiscoverOptions {
            cancel: None,
            ..dopts
        },
    };
    Ok(Backend {
        fabric,
        sweep: Box::new(sweep),
        write: Box::new(write),
        poll: Box::new(poll),
        source: Some(Box::new(source)),
        doca: None,
    })
}

/// The doca backend: the local adapters' ports, from DOCA telemetry diag
/// alone. There is no MAD transport: the sweeper sends nothing and a SET
/// fails cleanly.
pub fn open_doca(cfg: &Config) -> Result<Backend, AppError> {
    let mut doca = crate::doca::sampler::open(&cfg.doca).map_err(AppError::Doca)?;
    let mut fabric = Fabric {
        nodes: std::mem::take(&mut doca.nodes),
    };
    fabric.sort();
    Ok(Backend {
        fabric,
        sweep: Box::new(NoMads),
        write: Box::new(NoMads),
        poll: Box::new(NoMads),
        source: None,
        doca: Some(doca),
    })
}

/// The doca backend's MAD transport: it has none.
struct NoMads;

impl MadTransport for NoMads {
    fn send(
        &mut self,
        _to: &crate::transport::MadAddr,
        _mad: &[u8; crate::transport::MAD_SIZE],
    ) -> Result<(), Fault> {
        Err(Fault::NoMadTransport)
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<crate::transport::Received>, Fault> {
        std::thread::sleep(timeout.min(Duration::from_millis(100)));
        Ok(None)
    }
}

/// Discover the fabric (or refresh its PortInfo) when the sweeper asks,
/// and hand it to the sweeper, until `shutdown` or until the sweeper is
/// gone. A failed discovery is logged and tried again when next asked.
/// Returns what the sweeper asks through (a request while one is running
/// or waiting is dropped).
fn spawn_rediscovery(
    mut source: Box<dyn FabricSource>,
    state: SharedState,
    shutdown: Arc<AtomicBool>,
) -> std::io::Result<(AskRediscovery, std::thread::JoinHandle<()>)> {
    let (tx, rx) = std::sync::mpsc::sync_channel::<Rediscover>(1);
    let t = std::thread::Builder::new()
        .name("rediscovery".into())
        .spawn(move || {
            while !shutdown.load(Ordering::Relaxed) {
                let what = match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(what) => what,
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
                };
                let (what, result) = match what {
                    Rediscover::Discover => ("rediscovery", source.discover(&shutdown)),
                    Rediscover::Refresh => {
                        let known = state.lock().fabric().clone();
                        ("port info refresh", source.refresh(&known, &shutdown))
                    }
                };
                match result {
                    Ok(f) => state.lock().offer(f),
                    Err(e) if !shutdown.load(Ordering::Relaxed) => {
                        tracing::warn!(error = %e, "{what} failed; the fabric stays as it was")
                    }
                    Err(_) => return,
                }
            }
        })?;
    let ask: AskRediscovery = Box::new(move |what| {
        let _ = tx.try_send(what);
    });
    Ok((ask, t))
}

/// How long a frozen simulated fabric (`sim.traffic = false`) has run.
pub const FROZEN_AFTER: Duration = Duration::from_secs(3600);

/// The simulator's options from the configuration. `sim.traffic = false`
/// freezes every counter where one simulated hour of traffic left it, so
/// reads are repeatable across processes with the same topology and seed.
pub fn sim_options(cfg: &Config) -> SimOptions {
    let clock = if cfg.sim.traffic {
        SimClock::Real
    } else {
        let c = ManualClock::new();
        c.advance(FROZEN_AFTER);
        SimClock::Manual(c)
    };
    SimOptions {
        seed: cfg.sim.seed,
        traffic: true,
        clock,
        wide_error_counters: cfg
            .sim
            .wide_error_counters
            .iter()
            .map(|&k| k.into())
            .collect(),
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

/// Run until SIGINT/SIGTERM.
/// The agent's SNMPv3 engine: its ID (configured, kept in the engine file,
/// or generated), its boots (raised in the engine file), and the users
/// with their keys localized to it. Made once per start: the endpoint and
/// the trap sender hold the same engine (one key store, one set of
/// usmStats).
struct SnmpEngine {
    usm: crate::snmp::usm::Usm,
    booted: std::time::Instant,
}

fn snmp_engine(cfg: &Config) -> Result<SnmpEngine, AppError> {
    use crate::snmp::engine_file;
    let configured = cfg.snmp.engine_id.as_ref();
    let st = match &cfg.snmp.engine_file {
        Some(path) => {
            engine_file::load_and_advance(path, configured).map_err(AppError::EngineFile)?
        }
        None => engine_file::without_file(configured).map_err(AppError::EngineFile)?,
    };
    let (engine, boots) = (st.engine_id, st.boots);
    let users = cfg
        .snmp
        .user
        .iter()
        .map(|u| u.user(&engine))
        .collect::<Result<Vec<_>, _>>()
        .map_err(AppError::User)?;
    info!(
        "SNMPv3: engine ID {engine}, boots {boots}, {} user(s)",
        users.len()
    );
    let usm = crate::snmp::usm::Usm::new(engine, boots, users).map_err(AppError::Usm)?;
    Ok(SnmpEngine {
        usm,
        booted: std::time::Instant::now(),
    })
}

pub fn run(mut cfg: Config) -> Result<(), AppError> {
    let shutdown = Shutdown::on_signals()?;
    let backend = match open_backend(&cfg, &shutdown) {
        Err(_) if shutdown.is_triggered() => {
            info!("shutting down during start-up");
            return Ok(());
        }
        r => r?,
    };
    let running = start_with(&cfg, backend, shutdown.clone())?;
    // The users' keys are localized and the access rules made: the
    // passphrases, keys and communities of the file go.
    cfg.snmp.forget_secrets();
    let notifier = match SystemdNotifier::from_env() {
        Some(Ok(n)) => Some(n),
        Some(Err(e)) => {
            warn!("cannot notify systemd: {e}");
            None
        }
        None => None,
    };
    let ping_every = service::watchdog_ping_interval();
    let (mut ready, mut last_ping) = (false, None::<Instant>);
    let mut watch = service::SweeperWatch::new(0, Instant::now());
    while !shutdown.is_triggered() {
        if let Some(n) = &notifier {
            let snap = running.cache().load();
            let registered = running.session().is_none_or(|s| s.registered());
            if !ready && snap.sweep > 0 && registered {
                let status = format!("READY=1\nSTATUS=serving {} nodes", snap.nodes.len());
                match n.send(&status) {
                    Ok(()) => info!("told systemd the agent is ready"),
                    Err(e) => warn!("cannot notify systemd: {e}"),
                }
                ready = true;
            }
            if ready
                && let Some(every) = ping_every
                && last_ping.is_none_or(|t| t.elapsed() >= every)
                && watch.alive(snap.sweep, snap.interval, Instant::now())
            {
                let _ = n.send("WATCHDOG=1");
                last_ping = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    info!("shutting down");
    if let Some(n) = &notifier {
        let _ = n.send("STOPPING=1");
    }
    if !running.stop_within(STOP_BUDGET) {
        warn!(
            budget_ms = STOP_BUDGET.as_millis() as u64,
            "some threads did not stop in time (blocked in a transport call); exiting without them"
        );
    }
    info!("stopped");
    Ok(())
}

/// How long the agent's stop may take before it exits anyway: with the
/// exit handlers' own bound (in `main`), a SIGTERM ends the process within
/// 3 s whatever a thread is blocked in.
pub const STOP_BUDGET: Duration = Duration::from_millis(1800);

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
pub fn start_with(cfg: &Config, backend: Backend, shutdown: Shutdown) -> Result<Running, AppError> {
    let Backend {
        fabric,
        sweep: transport,
        write,
        poll,
        source,
        doca,
    } = backend;
    let discovered = Instant::now();
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    info!(
        backend = %cfg.fabric.backend,
        nodes = fabric.nodes.len(),
        ports,
        rss_kb = crate::heap::resident_kb().unwrap_or(0),
        peak_kb = crate::heap::peak_kb().unwrap_or(0),
        "fabric loaded"
    );
    crate::mib::read::start_clock();
    let cache = Arc::new(Cache::new());
    // A sweep in progress ends at the shutdown signal: the stop does not
    // wait for a sweep of a fabric that stopped answering.
    let engine = Engine::new(transport, cfg.engine()).with_cancel(shutdown.flag());
    let state = SharedState::new(fabric, cfg.sweep(), discovered);
    let controller = Arc::new(Controller::new(
        state.clone(),
        Arc::clone(&cache),
        write,
        poll,
        cfg.control(),
    ));
    let mut sweeper = Sweeper::new(state.clone(), engine, Arc::clone(&cache))
        .with_controller(Arc::clone(&controller));
    if let Some(path) = state_file_path(
        cfg.fabric.state_file.as_deref(),
        std::env::var_os("STATE_DIRECTORY"),
    ) {
        restore_totals(&state, &path);
        sweeper = sweeper.with_state_file(path);
    }
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
    let poller = controller
        .spawn_poller(running.shutdown.flag())
        .map_err(AppError::start("the sample poller"))?;
    running.threads.push(("sample poller", poller));
    if let Some(doca) = doca {
        let missing = state.lock().set_doca_ports(&doca.ports);
        for (g, p) in missing {
            warn!(node = %g, port = p, "DOCA serves a port the fabric does not have; skipped");
        }
        let t = doca
            .sampler
            .spawn(state.clone(), Arc::clone(&cache), running.shutdown.flag())
            .map_err(AppError::start("the DOCA sampler"))?;
        running.threads.push(("doca sampler", t));
    }
    let (rediscover, portinfo) = (cfg.fabric.rediscover_interval, cfg.fabric.portinfo_interval);
    if let Some(source) = source.filter(|_| rediscover.is_some() || portinfo.is_some()) {
        let (ask, t) = spawn_rediscovery(source, state, running.shutdown.flag())
            .map_err(AppError::start("rediscovery"))?;
        running.threads.push(("rediscovery", t));
        sweeper = sweeper.with_rediscovery(rediscover, portinfo, ask);
    }

    let endpoint_counters = Arc::new(EndpointCounters::default());
    let view: Arc<dyn MibHandler> = if cfg.set.allow {
        info!(
            deadline_ms = controller.config().deadline().as_millis() as u64,
            "SETs enabled: counters can be cleared and samples started"
        );
        Arc::new(
            MibView::with_writes(Arc::clone(&cache), Arc::clone(&controller))
                .with_endpoint_counters(Arc::clone(&endpoint_counters)),
        )
    } else {
        Arc::new(
            MibView::new(Arc::clone(&cache)).with_endpoint_counters(Arc::clone(&endpoint_counters)),
        )
    };

    let session = if cfg.agentx.enabled {
        let address: AgentxAddr = cfg.agentx.socket.clone();
        let scfg = SessionConfig {
            address,
            subtrees: vec![Oid::new(&PM_ROOT)],
            priority: cfg.agentx.priority,
            ping_interval: cfg.agentx.ping_interval,
            backoff_max: cfg.agentx.reconnect_max,
            notify_queue: cfg.notify.queue,
            ..Default::default()
        };
        info!(socket = %cfg.agentx.socket, "AgentX subagent starting");
        Some(
            Session::spawn(scfg, Arc::clone(&view))
                .map_err(AppError::start("the AgentX session"))?,
        )
    } else {
        None
    };

    running.session = session;

    let engine = if cfg.snmp.user.is_empty() {
        None
    } else {
        Some(snmp_engine(cfg)?)
    };

    // Notifications: through snmpd, or without it straight to the sinks.
    if cfg.notify.enabled {
        let sink: Option<Box<dyn Sink>> = match &running.session {
            Some(s) => Some(Box::new(AgentxSink::new(s.clone()))),
            None if !cfg.notify.sinks.is_empty() => {
                let mut t = TrapSink::new(
                    cfg.notify.sinks.clone(),
                    cfg.notify.community.text().to_string(),
                )
                .map_err(AppError::TrapSocket)?;
                match (&cfg.notify.user, &engine) {
                    (Some(user), Some(e)) => {
                        let usm = e.usm.clone();
                        let index = usm.user_index(user);
                        let index = index.ok_or_else(|| AppError::NotifyUser(user.clone()))?;
                        t = t.with_v3(usm, index, e.booted);
                        info!(sinks = ?cfg.notify.sinks, "SNMPv3 traps of user {} go straight to the sinks", Escaped(user));
                    }
                    _ => info!(sinks = ?cfg.notify.sinks, "SNMPv2c traps go straight to the sinks"),
                }
                Some(Box::new(t))
            }
            None => {
                info!("no AgentX and no notify.sinks: notifications are not sent");
                None
            }
        };
        if let Some(sink) = sink {
            let mut notifier = Notifier::new(cfg.notify(), sink);
            sweeper = sweeper.with_after_publish(Box::new(move |c| notifier.after_sweep(c)));
        }
    }
    let sweep_thread = sweeper
        .spawn(running.shutdown.flag())
        .map_err(AppError::start("the sweeper"))?;
    running.threads.push(("sweeper", sweep_thread));

    let responder = if let Some(addr) = cfg.snmp.listen {
        let config = ResponderConfig {
            access: cfg.snmp_access(),
        };
        let mut r = Responder::bind(addr, config, Arc::clone(&view))
            .map_err(|error| AppError::Listen { addr, error })?
            .with_counters(Arc::clone(&endpoint_counters));
        if let Some(e) = &engine {
            r = r.with_usm(e.usm.clone(), e.booted);
        }
        let local = r.local_addr().map_err(AppError::LocalAddr)?;
        let rules = r.config().access.rules().len();
        info!(
            "SNMP responder on {local} with {rules} access rule(s); the first: {}",
            Escaped(
                &r.config()
                    .access
                    .rules()
                    .first()
                    .map(|x| x.to_string())
                    .unwrap_or_default()
            )
        );
        Some(r.spawn().map_err(AppError::start("the SNMP responder"))?)
    } else {
        None
    };

    running.responder = responder;
    if let Some(settings) = cfg.metrics.settings() {
        let web = cfg
            .metrics
            .web()
            .map_err(AppError::WebConfig)?
            .unwrap_or_default();
        let addr = settings.listen;
        let handle = crate::metrics::serve(
            settings,
            web,
            Arc::clone(&cache),
            endpoint_counters,
            Arc::default(),
        )
        .map_err(|error| AppError::Listen { addr, error })?;
        running.metrics = Some(handle);
    }
    Ok(running)
}

/// The state file of the 64-bit totals: the configured path, none for
/// "off", else `totals` in the service manager's state directory (the
/// first of STATE_DIRECTORY's colon-separated entries), if it sets one.
pub fn state_file_path(
    configured: Option<&std::path::Path>,
    state_directory: Option<std::ffi::OsString>,
) -> Option<std::path::PathBuf> {
    match configured {
        Some(p) if p.as_os_str() == "off" => None,
        Some(p) => Some(p.to_path_buf()),
        None => {
            let dirs = state_directory?;
            let first = std::env::split_paths(&dirs).next()?;
            (!first.as_os_str().is_empty()).then(|| first.join("totals"))
        }
    }
}

/// Take up the totals saved by the agent's last run, saying in the log
/// what became of the file.
fn restore_totals(state: &SharedState, path: &std::path::Path) {
    use crate::fabric::persist::{self, PersistError};
    match persist::load(path) {
        Ok(saved) => {
            let matched = state.lock().restore_totals(&saved);
            if matched == 0 && !saved.is_empty() {
                warn!(
                    path = %path.display(),
                    saved = saved.len(),
                    "state file of another fabric (no port matches): ignored; 64-bit totals start afresh"
                );
            } else {
                info!(path = %path.display(), saved = saved.len(), matched, "64-bit totals restored from the state file");
            }
        }
        Err(PersistError::Io(e)) if !path.exists() => {
            info!(path = %path.display(), "no state file yet ({e}): 64-bit totals start afresh");
        }
        Err(e) => {
            warn!(path = %path.display(), error = %e, "state file ignored: 64-bit totals start afresh")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;
    use crate::transport::{MAD_SIZE, MadAddr, Received};

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
            fabric: sim.fabric(),
            sweep: t(),
            write: t(),
            poll: t(),
            source: None,
            doca: None,
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
