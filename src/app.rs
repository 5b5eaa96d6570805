//! Wiring: configuration -> fabric backend -> sweeper -> MIB view -> AgentX
//! session and built-in SNMP responder.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tracing::{error, info};

use crate::agentx::session::{AgentxAddr, Session, SessionConfig};
use crate::config::Config;
use crate::fabric::cache::Cache;
use crate::fabric::engine::{Engine, EngineConfig};
use crate::fabric::model::Fabric;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::{SweepConfig, Sweeper};
use crate::fabric::topology;
use crate::mib::tables::PM_ROOT;
use crate::mib::view::MibView;
use crate::mib::{MibHandler, Oid};
use crate::snmp::Responder;
use crate::transport::MadTransport;
use crate::transport::sim::{ManualClock, SimClock, SimFabric, SimOptions};

/// A fatal start-up error, printed as one line.
#[derive(Debug)]
pub struct AppError(pub String);

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for AppError {}

/// The fabric model and a transport to its PMAs, as the backend provides them.
pub fn open_backend(cfg: &Config) -> Result<(Fabric, Box<dyn MadTransport>), AppError> {
    let fabric = match cfg.topology_path() {
        Some(p) => topology::load(&p).map_err(|e| AppError(e.to_string()))?,
        None => topology::default_fabric(),
    };
    let sim = SimFabric::new(fabric, sim_options(cfg));
    Ok((sim.fabric(), Box::new(sim.transport())))
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
    }
}

/// Run until SIGINT/SIGTERM.
pub fn run(cfg: Config) -> Result<(), AppError> {
    let shutdown = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(sig, Arc::clone(&shutdown))
            .map_err(|e| AppError(format!("cannot install signal handler: {e}")))?;
    }

    let (fabric, transport) = open_backend(&cfg)?;
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    info!(
        backend = %cfg.fabric.backend,
        nodes = fabric.nodes.len(),
        ports,
        "fabric loaded"
    );
    let cache = Arc::new(Cache::new());
    let engine = Engine::new(
        transport,
        EngineConfig {
            window: cfg.mad.window,
            timeout: Duration::from_millis(cfg.mad.timeout_ms),
            retries: cfg.mad.retries,
        },
    );
    let state = SharedState::new(
        fabric,
        SweepConfig {
            interval: cfg.sweep_interval(),
            unreachable_after: cfg.fabric.unreachable_after,
            keep_unreachable: cfg.fabric.unreachable_rows == "keep",
        },
    );
    let sweeper = Sweeper::new(state, engine, Arc::clone(&cache));
    let sweep_thread = sweeper
        .spawn(Arc::clone(&shutdown))
        .map_err(|e| AppError(format!("cannot start the sweeper: {e}")))?;

    let view: Arc<dyn MibHandler> = Arc::new(MibView::new(Arc::clone(&cache)));

    let session = if cfg.agentx.enabled {
        let address: AgentxAddr = cfg
            .agentx
            .socket
            .parse()
            .map_err(|e| AppError(format!("agentx.socket: {e}")))?;
        let scfg = SessionConfig {
            address,
            subtrees: vec![Oid::new(&PM_ROOT)],
            priority: cfg.agentx.priority,
            ping_interval: Duration::from_secs(cfg.agentx.ping_interval),
            backoff_max: Duration::from_secs(cfg.agentx.reconnect_max),
            ..Default::default()
        };
        info!(socket = %cfg.agentx.socket, "AgentX subagent starting");
        Some(
            Session::spawn(scfg, Arc::clone(&view))
                .map_err(|e| AppError(format!("cannot start the AgentX session: {e}")))?,
        )
    } else {
        None
    };

    let responder = if cfg.snmp.listen.is_empty() {
        None
    } else {
        let addr = cfg
            .snmp
            .listen
            .parse()
            .map_err(|e| AppError(format!("snmp.listen: {e}")))?;
        let r = Responder::bind(addr, cfg.snmp.community.clone(), Arc::clone(&view))
            .map_err(|e| AppError(format!("cannot listen on {addr}: {e}")))?;
        let local = r.local_addr().map_err(|e| AppError(e.to_string()))?;
        info!(
            "SNMPv2c responder on {local}; try: snmpbulkwalk -v2c -c {} -On {local} 1.3.6.1.3.117",
            cfg.snmp.community
        );
        Some(r.spawn())
    };

    while !shutdown.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(100));
    }
    info!("shutting down");
    if let Some(s) = session {
        s.shutdown();
    }
    if let Some(r) = responder {
        r.shutdown();
    }
    if sweep_thread.join().is_err() {
        error!("sweeper thread panicked");
    }
    Ok(())
}
