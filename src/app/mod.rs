//! Wiring: configuration -> fabric backend -> sweeper -> MIB view -> AgentX
//! session and built-in SNMP responder.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{error, info, warn};

use crate::agentx::{AgentxAddr, Session, SessionConfig, SessionHandle};
use crate::config::{Config, UserEntryError};
use crate::fabric::cache::Cache;
use crate::fabric::control::Controller;
use crate::fabric::discover::DiscoverError;
use crate::fabric::engine::Engine;
use crate::fabric::federation::{Federation, Writers};
use crate::fabric::state::SharedState;
use crate::fabric::sweep::Sweeper;
use crate::ib::Escaped;
use crate::ib::subnet::SubnetView;
use crate::ib::topology::TopologyError;
use crate::mib::schema::PM_ROOT;
use crate::mib::view::MibView;
use crate::mib::{EndpointCounters, MibHandler, Oid};
use crate::notify::send::Notifier;
use crate::notify::send::{AgentxSink, Sink, TrapSink};
use crate::snmp::engine_file::EngineFileError;
use crate::snmp::{Responder, ResponderConfig, ResponderHandle};
use crate::transport::OpenError;

mod backend;
mod engine;
mod open;
pub mod plan;
mod service_loop;
pub mod subnets;
mod umad;

use backend::spawn_rediscovery;
pub use backend::{
    Backend, FROZEN_AFTER, FabricSource, SubnetBackend, SubnetProbe, open_doca, sim_options,
};
use engine::snmp_engine;
pub use open::open_backend;
pub use service_loop::{STOP_BUDGET, run};
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
pub fn start_with(cfg: &Config, backend: Backend, shutdown: Shutdown) -> Result<Running, AppError> {
    let Backend {
        subnets,
        doca,
        sim,
        emitted,
    } = backend;
    let discovered = Instant::now();
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
    crate::time::start();
    // The SNMPv3 engine boots as the agent starts: snmpEngineTime, the
    // seconds since its boots were raised, counts from the time origin.
    let snmpv3 = if cfg.snmp.user.is_empty() {
        None
    } else {
        Some(snmp_engine(cfg)?)
    };
    let cache = Arc::new(Cache::new());
    // With several subnets each publishes into a cache of its own and the
    // federation merges them into `cache`; with one it publishes there.
    let federation = (subnets.len() > 1).then(|| Federation::new(Arc::clone(&cache)));
    let totals_file = state_file_path(
        cfg.fabric.state_file.as_deref(),
        std::env::var_os("STATE_DIRECTORY"),
    );
    let mut stacks = Vec::with_capacity(subnets.len());
    for (index, subnet) in subnets.into_iter().enumerate() {
        let member = match &federation {
            Some(f) => f.add_member(),
            None => Arc::clone(&cache),
        };
        let totals = totals_file.as_ref().map(|p| subnet_file(p, index));
        stacks.push(Stack::new(
            cfg, subnet, index, member, totals, &shutdown, discovered,
        ));
    }
    // Port health: its state file beside the totals'.
    let mut health = cfg.health.enabled.then(|| {
        let path = totals_file.as_ref().map(|p| {
            let mut s = p.as_os_str().to_owned();
            s.push(".health");
            std::path::PathBuf::from(s)
        });
        let watch = crate::health::watch::Watch::new(cfg.health(), path);
        // On the first sweeper's thread, with its clock.
        match stacks.first() {
            Some(s) => watch.with_clock(s.sweeper.clock().clone()),
            None => watch,
        }
    });
    // The comparison with the plan: its baseline beside the totals too.
    let mut plan = plan::watch(cfg, totals_file.as_deref())?;
    // The event log: its file beside the totals'.
    let events = cfg.events.enabled.then(|| {
        let path = totals_file.as_ref().map(|p| {
            let mut s = p.as_os_str().to_owned();
            s.push(".events");
            std::path::PathBuf::from(s)
        });
        let log = crate::events::Log::open(cfg.events(), path, crate::notify::log::wall_ms());
        log.set_simulated(cfg.fabric.backend == crate::config::FabricBackend::Sim);
        Arc::new(log)
    });
    if let (Some(h), Some(log)) = (health.take(), &events) {
        health = Some(h.with_events(Arc::clone(log)));
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
    if let Some(sim) = sim.filter(|_| cfg.sim.faults) {
        match crate::sim::script::Faults::choose(&sim.fabric()) {
            Some(f) => {
                info!(
                    flapping = %format!("{}/{}", f.flapping.0, f.flapping.1),
                    erroring = %format!("{}/{}", f.erroring.0, f.erroring.1),
                    degraded = %format!("{}/{}", f.degraded.0, f.degraded.1),
                    "simulated faults: a flapping link, an erroring port, a degraded link"
                );
                let t = crate::sim::script::spawn(sim, f, running.shutdown.flag())
                    .map_err(AppError::start("the simulated faults"))?;
                running.threads.push(("sim faults", t));
            }
            None => warn!(
                "sim.faults: the simulated fabric has fewer than three adapters cabled to switches"
            ),
        }
    }
    for s in &stacks {
        let poller = s
            .controller
            .spawn_poller(running.shutdown.flag())
            .map_err(AppError::start("the sample poller"))?;
        running.threads.push(("sample poller", poller));
    }
    if let Some(doca) = doca {
        let state = stacks[0].sweeper.state().clone();
        let missing = state.lock().set_doca_ports(&doca.ports);
        for (g, p) in missing {
            warn!(node = %g, port = p, "DOCA serves a port the fabric does not have; skipped");
        }
        let t = doca
            .sampler
            .spawn(state, Arc::clone(&stacks[0].cache), running.shutdown.flag())
            .map_err(AppError::start("the DOCA sampler"))?;
        running.threads.push(("doca sampler", t));
    }
    let (rediscover, portinfo) = (cfg.fabric.rediscover_interval, cfg.fabric.portinfo_interval);
    for s in &mut stacks {
        if let Some(source) = s
            .source
            .take()
            .filter(|_| rediscover.is_some() || portinfo.is_some())
        {
            let state = s.sweeper.state().clone();
            let (ask, t) = spawn_rediscovery(source, state, running.shutdown.flag())
                .map_err(AppError::start("rediscovery"))?;
            running.threads.push(("rediscovery", t));
            s.sweeper.set_rediscovery(rediscover, portinfo, ask);
        }
    }
    let writers = Writers::new(
        Arc::clone(&cache),
        stacks.iter().map(|s| Arc::clone(&s.controller)).collect(),
    );

    let endpoint_counters = Arc::new(EndpointCounters::default());
    let view: Arc<dyn MibHandler> = if cfg.set.allow {
        info!(
            deadline_ms = writers.config().deadline().as_millis() as u64,
            "SETs enabled: counters can be cleared and samples started"
        );
        Arc::new(
            MibView::with_writers(Arc::clone(&cache), writers)
                .with_endpoint_counters(Arc::clone(&endpoint_counters))
                .with_events(events.clone()),
        )
    } else {
        Arc::new(
            MibView::new(Arc::clone(&cache))
                .with_endpoint_counters(Arc::clone(&endpoint_counters))
                .with_events(events.clone()),
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

    // Notifications: through snmpd, or without it straight to the sinks.
    let mut notifier = None;
    if cfg.notify.enabled {
        let sink: Option<Box<dyn Sink>> = match &running.session {
            Some(s) => Some(Box::new(AgentxSink::new(s.clone()))),
            None if !cfg.notify.sinks.is_empty() => {
                let mut t = TrapSink::new(
                    cfg.notify.sinks.clone(),
                    cfg.notify.community.text().to_string(),
                )
                .map_err(AppError::TrapSocket)?;
                match (&cfg.notify.user, &snmpv3) {
                    (Some(user), Some(e)) => {
                        let usm = e.usm.clone();
                        let index = usm.user_index(user);
                        let index = index.ok_or_else(|| AppError::NotifyUser(user.clone()))?;
                        t = t.with_v3(usm, index, crate::time::origin());
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
        notifier = sink.map(|sink| {
            let n = Notifier::new(cfg.notify(), sink);
            match &emitted {
                Some(e) => n.with_machine_events(Arc::clone(e)),
                None => n,
            }
        });
    }
    // The event log records what the notifier decides, sent or not.
    if let Some(log) = &events {
        // Without a sink nothing is sent, so nothing is held back: no
        // storm control (and no suppressed figures in the agent scalars).
        let n = notifier.take().unwrap_or_else(|| {
            let mut quiet = cfg.notify();
            quiet.limit_per_sweep = 0;
            Notifier::new(quiet, Box::new(crate::notify::send::NoSink))
        });
        notifier = Some(n.with_events(Arc::clone(log)));
    }
    let events_after = events.clone();
    // After each publication (with several subnets, each round): the
    // health verdicts, the comparison with the plan, then the
    // notifications (which include the verdicts' changes).
    {
        let evaluate: crate::fabric::sweep::AfterPublish = Box::new(move |c| {
            if let Some(h) = &mut health {
                h.after_sweep(c);
            }
            // The raised and cleared verdicts: an event log's to take.
            let _changes = plan.after_sweep(c);
            if let Some(n) = &mut notifier {
                n.after_sweep(c);
            }
            if let Some(l) = &events_after {
                l.after_sweep(c);
            }
        });
        match &federation {
            Some(f) => f.set_after_round(evaluate),
            None => stacks[0].sweeper.set_after_publish(evaluate),
        }
    }
    if let Some(f) = &federation {
        for s in &mut stacks {
            let f = Arc::clone(f);
            s.sweeper
                .set_after_publish(Box::new(move |_| f.member_swept()));
            s.sweeper.trim_after_sweeps_only();
        }
        // Their sweeps spread over the interval.
        let n = stacks.len() as u32;
        for (i, s) in stacks.iter_mut().enumerate() {
            s.sweeper
                .set_phase(cfg.fabric.sweep_interval * i as u32 / n);
        }
    }
    for s in stacks {
        let sweep_thread = s
            .sweeper
            .spawn(running.shutdown.flag())
            .map_err(AppError::start("the sweeper"))?;
        running.threads.push(("sweeper", sweep_thread));
    }

    let responder = if let Some(addr) = cfg.snmp.listen {
        let config = ResponderConfig {
            access: cfg.snmp_access(),
        };
        let mut r = Responder::bind(addr, config, Arc::clone(&view))
            .map_err(|error| AppError::Listen { addr, error })?
            .with_counters(Arc::clone(&endpoint_counters));
        if let Some(e) = &snmpv3 {
            r = r.with_usm(e.usm.clone(), crate::time::origin());
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
            events.clone(),
            crate::time::Clock::system(),
        )
        .map_err(|error| AppError::Listen { addr, error })?;
        running.metrics = Some(handle);
    }
    Ok(running)
}

/// One subnet's sweeping stack: its state and sweeper, its write path,
/// where its fabric is discovered again, and the cache it publishes into.
struct Stack {
    sweeper: Sweeper,
    controller: Arc<Controller>,
    source: Option<Box<dyn FabricSource>>,
    cache: Arc<Cache>,
}

impl Stack {
    /// The stack of subnet `index`, publishing into `cache`, its 64-bit
    /// totals restored from and saved to `totals`.
    fn new(
        cfg: &Config,
        subnet: SubnetBackend,
        index: usize,
        cache: Arc<Cache>,
        totals: Option<std::path::PathBuf>,
        shutdown: &Shutdown,
        discovered: Instant,
    ) -> Stack {
        let view = SubnetView {
            index: index as u8,
            ..subnet.view
        };
        // A sweep in progress ends at the shutdown signal: the stop does
        // not wait for a sweep of a fabric that stopped answering.
        let engine = Engine::new(subnet.sweep, cfg.engine()).with_cancel(shutdown.flag());
        let state = SharedState::new(subnet.fabric, cfg.sweep(), discovered).in_subnet(view);
        let controller = Arc::new(Controller::new(
            state.clone(),
            Arc::clone(&cache),
            subnet.write,
            subnet.poll,
            cfg.control(),
        ));
        let mut sweeper = Sweeper::new(state.clone(), engine, Arc::clone(&cache));
        if let Some(probe) = subnet.probe {
            sweeper.set_before_sweep(subnets::before_sweep(probe));
        }
        if let Some(path) = totals {
            restore_totals(&state, &path);
            sweeper = sweeper.with_state_file(path);
        }
        Stack {
            sweeper,
            controller,
            source: subnet.source,
            cache,
        }
    }
}

/// The state file of subnet `index`: the first subnet's is `path`, the
/// others' `path.2`, `path.3`, ...
fn subnet_file(path: &std::path::Path, index: usize) -> std::path::PathBuf {
    if index == 0 {
        return path.to_path_buf();
    }
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{}", index + 1));
    std::path::PathBuf::from(s)
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
        Err(PersistError::Frame(e)) if e.is_missing() => {
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
