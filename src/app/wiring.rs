//! The named steps of the agent's wiring after the stacks
//! ([`super::stack`]): the threads beside the sweepers, the evaluators run
//! after each publication, the notifier, and the edges (the MIB view, the
//! AgentX session, the SNMP responder, the metrics endpoint).

use std::path::Path;
use std::sync::Arc;

use tracing::{info, warn};

use super::engine::SnmpEngine;
use super::stack::{Stacks, beside};
use super::{AppError, Running, spawn_rediscovery};
use crate::agentx::{AgentxAddr, Session, SessionConfig, SessionHandle};
use crate::config::Config;
use crate::events::Log;
use crate::fabric::cache::Cache;
use crate::fabric::federation::Writers;
use crate::fabric::sweep::AfterPublish;
use crate::ib::Escaped;
use crate::mib::schema::PM_ROOT;
use crate::mib::view::MibView;
use crate::mib::{EndpointCounters, MibHandler, Oid};
use crate::notify::send::{AgentxSink, Notifier, Sink, TrapSink};
use crate::snmp::{Responder, ResponderConfig, ResponderHandle};

/// The threads beside the sweepers: the simulated faults, each subnet's
/// sample poller, the DOCA sampler and rediscovery.
pub(super) fn companions(
    cfg: &Config,
    stacks: &mut Stacks,
    sim: Option<crate::sim::SimFabric>,
    doca: Option<crate::doca::sampler::Opened>,
    running: &mut Running,
) -> Result<(), AppError> {
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
    for s in &stacks.list {
        let poller = s
            .controller
            .spawn_poller(running.shutdown.flag())
            .map_err(AppError::start("the sample poller"))?;
        running.threads.push(("sample poller", poller));
    }
    if let (Some(doca), Some(first)) = (doca, stacks.list.first()) {
        let state = first.sweeper.state().clone();
        let missing = state.lock().set_doca_ports(&doca.ports);
        for (g, p) in missing {
            warn!(node = %g, port = p, "DOCA serves a port the fabric does not have; skipped");
        }
        let t = doca
            .sampler
            .spawn(state, Arc::clone(&first.cache), running.shutdown.flag())
            .map_err(AppError::start("the DOCA sampler"))?;
        running.threads.push(("doca sampler", t));
    }
    let (rediscover, portinfo) = (cfg.fabric.rediscover_interval, cfg.fabric.portinfo_interval);
    for s in &mut stacks.list {
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
    Ok(())
}

/// What judges each publication: the port health verdicts, the comparison
/// with the plan, and the event log, each keeping its file beside the
/// totals' state file.
pub(super) struct Evaluators {
    health: Option<crate::health::watch::Watch>,
    plan: crate::cabling::watch::Watch,
    pub(super) events: Option<Arc<Log>>,
}

impl Evaluators {
    /// The evaluators the configuration enables; the health verdicts run
    /// on the first sweeper's thread, with its clock.
    pub(super) fn new(
        cfg: &Config,
        stacks: &Stacks,
        totals: Option<&Path>,
    ) -> Result<Evaluators, AppError> {
        let events = cfg.events.enabled.then(|| {
            let log = Log::open(
                cfg.events(),
                totals.map(|p| beside(p, ".events")),
                crate::notify::log::wall_ms(),
            );
            log.set_simulated(cfg.fabric.backend == crate::config::FabricBackend::Sim);
            Arc::new(log)
        });
        let health = cfg.health.enabled.then(|| {
            let mut w = crate::health::watch::Watch::new(
                cfg.health(),
                totals.map(|p| beside(p, ".health")),
            );
            if let Some(c) = stacks.clock() {
                w = w.with_clock(c.clone());
            }
            match &events {
                Some(log) => w.with_events(Arc::clone(log)),
                None => w,
            }
        });
        Ok(Evaluators {
            health,
            plan: super::plan::watch(cfg, totals)?,
            events,
        })
    }

    /// After each publication: the health verdicts, the comparison with
    /// the plan, then the notifications (which include the verdicts'
    /// changes), then the event log.
    pub(super) fn after_publish(self, mut notifier: Option<Notifier>) -> AfterPublish {
        let Evaluators {
            mut health,
            mut plan,
            events,
        } = self;
        Box::new(move |c| {
            if let Some(h) = &mut health {
                h.after_sweep(c);
            }
            // The raised and cleared verdicts: an event log's to take.
            let _changes = plan.after_sweep(c);
            if let Some(n) = &mut notifier {
                n.after_sweep(c);
            }
            if let Some(l) = &events {
                l.after_sweep(c);
            }
        })
    }
}

/// The notifier: through snmpd when the AgentX session runs, else
/// straight to `notify.sinks`; with an event log, it records what the
/// notifier decides, sent or not.
pub(super) fn notifier(
    cfg: &Config,
    session: Option<&SessionHandle>,
    snmpv3: Option<&SnmpEngine>,
    emitted: Option<&Arc<crate::fabric::local::Emitted>>,
    events: Option<&Arc<Log>>,
) -> Result<Option<Notifier>, AppError> {
    let mut notifier = None;
    if cfg.notify.enabled {
        let sink: Option<Box<dyn Sink>> = match session {
            Some(s) => Some(Box::new(AgentxSink::new(s.clone()))),
            None if !cfg.notify.sinks.is_empty() => Some(Box::new(trap_sink(cfg, snmpv3)?)),
            None => {
                info!("no AgentX and no notify.sinks: notifications are not sent");
                None
            }
        };
        notifier = sink.map(|sink| {
            let n = Notifier::new(cfg.notify(), sink);
            match emitted {
                Some(e) => n.with_machine_events(Arc::clone(e)),
                None => n,
            }
        });
    }
    let Some(log) = events else {
        return Ok(notifier);
    };
    // Without a sink nothing is sent, so nothing is held back: no storm
    // control (and no suppressed figures in the agent scalars).
    let n = notifier.unwrap_or_else(|| {
        let mut quiet = cfg.notify();
        quiet.limit_per_sweep = 0;
        Notifier::new(quiet, Box::new(crate::notify::send::NoSink))
    });
    Ok(Some(n.with_events(Arc::clone(log))))
}

/// The sink of traps sent without snmpd: SNMPv3 as `notify.user` when set,
/// else SNMPv2c with the community.
fn trap_sink(cfg: &Config, snmpv3: Option<&SnmpEngine>) -> Result<TrapSink, AppError> {
    let mut t = TrapSink::new(
        cfg.notify.sinks.clone(),
        cfg.notify.community.text().to_string(),
    )
    .map_err(AppError::TrapSocket)?;
    match (&cfg.notify.user, snmpv3) {
        (Some(user), Some(e)) => {
            let usm = e.usm.clone();
            let index = usm.user_index(user);
            let index = index.ok_or_else(|| AppError::NotifyUser(user.clone()))?;
            t = t.with_v3(usm, index, crate::time::origin());
            info!(sinks = ?cfg.notify.sinks, "SNMPv3 traps of user {} go straight to the sinks", Escaped(user));
        }
        _ => info!(sinks = ?cfg.notify.sinks, "SNMPv2c traps go straight to the sinks"),
    }
    Ok(t)
}

/// The MIB view every SNMP face reads (and writes, when SETs are allowed).
pub(super) fn mib_view(
    cfg: &Config,
    cache: &Arc<Cache>,
    writers: Writers,
    counters: &Arc<EndpointCounters>,
    events: Option<&Arc<Log>>,
) -> Arc<dyn MibHandler> {
    let view = if cfg.set.allow {
        info!(
            deadline_ms = writers.config().deadline().as_millis() as u64,
            "SETs enabled: counters can be cleared and samples started"
        );
        MibView::with_writers(Arc::clone(cache), writers)
    } else {
        MibView::new(Arc::clone(cache))
    };
    Arc::new(
        view.with_endpoint_counters(Arc::clone(counters))
            .with_events(events.cloned()),
    )
}

/// The AgentX session with snmpd, when enabled.
pub(super) fn agentx(
    cfg: &Config,
    view: &Arc<dyn MibHandler>,
) -> Result<Option<SessionHandle>, AppError> {
    if !cfg.agentx.enabled {
        return Ok(None);
    }
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
    Session::spawn(scfg, Arc::clone(view))
        .map(Some)
        .map_err(AppError::start("the AgentX session"))
}

/// The agent's own SNMP endpoint, when `snmp.listen` is set.
pub(super) fn responder(
    cfg: &Config,
    view: &Arc<dyn MibHandler>,
    counters: &Arc<EndpointCounters>,
    snmpv3: Option<&SnmpEngine>,
) -> Result<Option<ResponderHandle>, AppError> {
    let Some(addr) = cfg.snmp.listen else {
        return Ok(None);
    };
    let config = ResponderConfig {
        access: cfg.snmp_access(),
    };
    let mut r = Responder::bind(addr, config, Arc::clone(view))
        .map_err(|error| AppError::Listen { addr, error })?
        .with_counters(Arc::clone(counters));
    if let Some(e) = snmpv3 {
        r = r.with_usm(e.usm.clone(), crate::time::origin());
    }
    let local = r.local_addr().map_err(AppError::LocalAddr)?;
    let rules = r.config().access.rules();
    let first = rules.first().map(|x| x.to_string()).unwrap_or_default();
    info!(
        "SNMP responder on {local} with {} access rule(s); the first: {}",
        rules.len(),
        Escaped(&first)
    );
    r.spawn()
        .map(Some)
        .map_err(AppError::start("the SNMP responder"))
}

/// The metrics endpoint (Prometheus, the status page, the APIs), when
/// `metrics.listen` is set.
pub(super) fn metrics(
    cfg: &Config,
    cache: &Arc<Cache>,
    counters: Arc<EndpointCounters>,
    events: Option<Arc<Log>>,
) -> Result<Option<crate::metrics::MetricsHandle>, AppError> {
    let Some(settings) = cfg.metrics.settings() else {
        return Ok(None);
    };
    let web = cfg
        .metrics
        .web()
        .map_err(AppError::WebConfig)?
        .unwrap_or_default();
    let addr = settings.listen;
    crate::metrics::serve(
        settings,
        web,
        Arc::clone(cache),
        counters,
        Arc::default(),
        events,
        crate::time::Clock::system(),
    )
    .map(Some)
    .map_err(|error| AppError::Listen { addr, error })
}
