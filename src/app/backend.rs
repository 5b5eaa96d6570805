//! The fabric backends: the simulator, umad (and DOCA beside it), DOCA
//! alone; what each provides for each subnet it sweeps, and where the
//! fabric is discovered again.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use crate::config::Config;
use crate::fabric::discover::DiscoverError;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::{AskRediscovery, Rediscover};
use crate::ib::subnet::SubnetView;
use crate::ib::{Fabric, Node};
use crate::sim::{ManualClock, SimClock, SimFabric, SimOptions, SimPlane};
use crate::transport::{Fault, MadTransport};

use super::AppError;

/// What a backend provides: the subnets it sweeps, and DOCA telemetry
/// diag beside them.
pub struct Backend {
    /// At least one; each is swept by a stack of its own.
    pub subnets: Vec<SubnetBackend>,
    /// The local adapters' ports DOCA telemetry diag fills, and its
    /// sampler (the doca backend, or umad with `doca.enabled`): in the
    /// first subnet.
    pub doca: Option<crate::doca::sampler::Opened>,
    /// The simulated fabric, for its scripted faults (`[sim] faults`).
    pub sim: Option<SimFabric>,
    /// The events of the subnets' failover machine (umad), for the
    /// notifier to act on: for those subnets the machine decides.
    pub emitted: Option<Arc<crate::fabric::local::Emitted>>,
}

/// One subnet: what tells it apart, its fabric's shape, and independent
/// transports to its PMAs (the sweeper's, the write path's and the sample
/// poller's).
pub struct SubnetBackend {
    /// Its name, key, master SM and local ports (its index is given when
    /// the agent starts).
    pub view: SubnetView,
    pub fabric: Fabric,
    pub sweep: Box<dyn MadTransport>,
    pub write: Box<dyn MadTransport>,
    pub poll: Box<dyn MadTransport>,
    /// Where the fabric is discovered again (None: never).
    pub source: Option<Box<dyn FabricSource>>,
    /// What reads the subnet's master SM and local ports again before
    /// each sweep (None: the view stays as opened).
    pub probe: Option<Box<dyn SubnetProbe>>,
}

/// Reads what tells a subnet apart as it is now.
pub trait SubnetProbe: Send {
    /// `view` with its master SM (and local ports) as they are now.
    fn probe(&mut self, view: &SubnetView) -> SubnetView;
}

/// A simulated plane's master SM as the tests set it.
impl SubnetProbe for SimPlane {
    fn probe(&mut self, view: &SubnetView) -> SubnetView {
        SubnetView {
            sm: self.master_sm(),
            // A subnet keeps the key it was first known by: a handover
            // changes its master SM, not what labels it.
            key: if view.key.sm_guid.0 != 0 {
                view.key
            } else {
                self.key()
            },
            ..view.clone()
        }
    }
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

/// A simulated plane as it is now (links taken down or up).
impl FabricSource for SimPlane {
    fn discover(&mut self, _cancel: &Arc<AtomicBool>) -> Result<Fabric, DiscoverError> {
        Ok(SimPlane::fabric(self))
    }
}

impl Backend {
    /// The simulated fabric `sim`: a subnet per plane, each with its
    /// fabric (with the LIDs the simulator assigned), three transports of
    /// its own and its master SM.
    pub fn sim(sim: &SimFabric) -> Backend {
        Backend {
            subnets: sim.planes().into_iter().map(SubnetBackend::sim).collect(),
            doca: None,
            sim: Some(sim.clone()),
            emitted: None,
        }
    }

    /// The nodes of every subnet (a node in several, once per subnet).
    pub fn nodes(&self) -> impl Iterator<Item = &Node> {
        self.subnets.iter().flat_map(|s| &s.fabric.nodes)
    }
}

impl SubnetBackend {
    /// A simulated plane.
    pub fn sim(plane: SimPlane) -> SubnetBackend {
        SubnetBackend {
            view: SubnetView {
                key: plane.key(),
                sm: plane.master_sm(),
                sweeping: Some(plane.local_port()),
                ..Default::default()
            },
            fabric: plane.fabric(),
            sweep: Box::new(plane.transport()),
            write: Box::new(plane.transport()),
            poll: Box::new(plane.transport()),
            source: Some(Box::new(plane.clone())),
            probe: Some(Box::new(plane)),
        }
    }
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
        subnets: vec![SubnetBackend {
            view: SubnetView::default(),
            fabric,
            sweep: Box::new(NoMads),
            write: Box::new(NoMads),
            poll: Box::new(NoMads),
            source: None,
            probe: None,
        }],
        doca: Some(doca),
        sim: None,
        emitted: None,
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
pub(super) fn spawn_rediscovery(
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
                        let known = state.lock().fabric();
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
