//! The umad backend: the host's local ports (`[umad]`), each opened and its
//! subnet discovered by directed-route SMPs, its prefix and master SM read;
//! the ports grouped into subnets (prefix + master SM), the first active
//! port of each sweeping it and the others standby; every subnet handed
//! out with transports through whichever of its ports the subnet's probe
//! picks ([`crate::transport::failover`]), a probe that reads the host's
//! ports and the master SM before each sweep ([`super::subnets`]), and a
//! rediscovery through the port in use.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use tracing::{info, warn};

use super::backend::{Backend, FabricSource, SubnetBackend};
use super::subnets::{LookPorts, PortsProbe, ReadSm};
use super::{AppError, Shutdown};
use crate::config::Config;
use crate::fabric::discover::{
    DiscoverError, DiscoverOptions, SearchPace, SmMap, SmSearch, SubnetRead, discover_with_stats,
    read_subnet,
};
use crate::fabric::local::{FailoverMachine, NO_MASTER_GRACE, Seen, Wanted, group};
use crate::ib::subnet::{LocalPort, SubnetView};
use crate::ib::{Escaped, Fabric, Guid, NodeType};
use crate::time::Clock;
use crate::transport::MadTransport;
use crate::transport::failover::{FailoverTransport, PortChoice};
use crate::transport::umad::{UmadConfig, UmadTransport, ib_ports, read_cas, sysfs_root};

/// One local port opened: its transport, the fabric discovered through
/// it, and what it said of its subnet.
struct Opened {
    port: LocalPort,
    t: UmadTransport,
    /// The port's SMI device, where it is another than `t`'s (a
    /// planarized port): its SMPs go there, its PM MADs through `t`.
    smi: Option<UmadTransport>,
    fabric: Fabric,
    read: SubnetRead,
}

/// A port's SMP handle, shared by the rediscovery and the probe (a umad
/// port has one SMP route).
type Smp = Arc<Mutex<UmadTransport>>;

/// Directed-route discovery through the subnet's port in use.
struct SmpDiscovery {
    smps: Vec<Smp>,
    choice: PortChoice,
    opts: DiscoverOptions,
}

impl SmpDiscovery {
    fn with<R>(&self, f: impl FnOnce(&mut UmadTransport) -> R) -> R {
        let smp = &self.smps[self.choice.get().min(self.smps.len() - 1)];
        f(&mut smp.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn opts(&self, cancel: &Arc<AtomicBool>) -> DiscoverOptions {
        DiscoverOptions {
            cancel: Some(Arc::clone(cancel)),
            ..self.opts.clone()
        }
    }
}

impl FabricSource for SmpDiscovery {
    fn discover(&mut self, cancel: &Arc<AtomicBool>) -> Result<Fabric, DiscoverError> {
        let opts = self.opts(cancel);
        self.with(|smp| discover_with_stats(smp, &opts).map(|(f, _)| f))
    }

    fn refresh(
        &mut self,
        known: &Fabric,
        cancel: &Arc<AtomicBool>,
    ) -> Result<Fabric, DiscoverError> {
        let opts = self.opts(cancel);
        self.with(|smp| crate::fabric::discover::refresh_port_info(smp, known, &opts))
    }
}

/// Open the configured local ports and hand out their subnets. Discovery
/// returns soon after `cancel` is set.
pub fn open_umad(cfg: &Config, cancel: &Shutdown) -> Result<Backend, AppError> {
    let wanted = cfg.umad.wanted();
    let root = sysfs_root();
    // The ports to open: the old ca/port keys let the transport pick one;
    // otherwise the ports listed, or every active InfiniBand port.
    let candidates: Vec<(Option<String>, Option<u8>)> = match &wanted {
        Wanted::First { ca, port } => vec![(ca.as_deref().map(str::to_string), *port)],
        Wanted::Ports(ports) => ports
            .iter()
            .map(|p| (Some(p.ca.to_string()), Some(p.port)))
            .collect(),
        Wanted::Planes(planes) => planes
            .iter()
            .flat_map(|p| &p.ports)
            .map(|p| (Some(p.ca.to_string()), Some(p.port)))
            .collect(),
        Wanted::Every => {
            let cas = read_cas(&root).map_err(AppError::Umad)?;
            let active: Vec<_> = ib_ports(&cas)
                .filter(|p| p.state == crate::fabric::local::PORT_ACTIVE)
                .map(|p| (Some(p.ca.clone()), Some(p.port)))
                .collect();
            // None active: the transport says why.
            if active.is_empty() {
                vec![(None, None)]
            } else {
                active
            }
        }
    };
    let mut opened: Vec<Opened> = Vec::new();
    let mut first_error = None;
    for (ca, port) in candidates {
        match open_port(cfg, ca, port, cancel) {
            Ok(o) => opened.push(o),
            Err(AppError::Cancelled) => return Err(AppError::Cancelled),
            Err(e) => {
                warn!("{e}; the port is left out");
                first_error.get_or_insert(e);
            }
        }
    }
    if opened.is_empty() {
        return Err(first_error.unwrap_or(AppError::Cancelled));
    }
    let seen: Vec<Seen> = opened
        .iter()
        .map(|o| Seen::from_read(o.port.clone(), &o.read))
        .collect();
    let mut grouping = group(&wanted, &seen);
    for p in &grouping.idle {
        warn!(port = %p, "local port not active: its subnet is not known, it is not swept");
    }
    for (p, plane, key) in &grouping.stray {
        warn!(port = %p, plane, subnet = %key, "local port of a configured plane is on another subnet: left out");
    }
    if grouping.left_out > 0 {
        warn!(
            subnets = grouping.left_out,
            "more subnets than one agent sweeps: left out"
        );
    }
    // A subnet is swept only through a port that opened.
    let mut opened: HashMap<LocalPort, Opened> =
        opened.into_iter().map(|o| (o.port.clone(), o)).collect();
    grouping
        .subnets
        .retain(|g| g.sweeping.as_ref().is_some_and(|p| opened.contains_key(p)));
    if grouping.subnets.is_empty() {
        // Every port that opened is down, or on no configured plane.
        return Err(AppError::Umad(crate::transport::OpenError::LinkDown {
            wanted: format!("{wanted:?}"),
            states: grouping
                .idle
                .iter()
                .map(|p| format!("{p} not active"))
                .collect(),
        }));
    }
    let machine = Arc::new(Mutex::new(FailoverMachine::new(
        &grouping.subnets,
        NO_MASTER_GRACE,
    )));
    let emitted = Arc::new(crate::fabric::local::Emitted::default());
    let dopts = discover_options(cfg, None);
    let mut subnets = Vec::new();
    for (index, g) in grouping.subnets.iter().enumerate() {
        let ports: Vec<LocalPort> = g
            .sweeping
            .iter()
            .chain(&g.standby)
            .filter(|p| opened.contains_key(*p))
            .cloned()
            .collect();
        let sweeping = opened.remove(&ports[0]).expect("kept above");
        let (fabric, read) = (sweeping.fabric.clone(), sweeping.read.clone());
        let mut all = vec![sweeping];
        all.extend(ports[1..].iter().filter_map(|p| opened.remove(p)));
        let choice = PortChoice::default();
        let (mut sweeps, mut writes, mut polls, mut smps) = (vec![], vec![], vec![], vec![]);
        for o in all {
            let handle = |what| {
                o.t.pm_handle()
                    .map_err(|error| AppError::UmadHandle { what, error })
            };
            writes.push(Box::new(handle("write")?) as Box<dyn MadTransport>);
            polls.push(Box::new(handle("sample poller")?) as Box<dyn MadTransport>);
            smps.push(Arc::new(Mutex::new(
                o.smi.as_ref().unwrap_or(&o.t).smp_handle(),
            )));
            sweeps.push(Box::new(o.t) as Box<dyn MadTransport>);
        }
        let probe = PortsProbe {
            index,
            machine: Arc::clone(&machine),
            look: look_ports(root.clone()),
            read_sm: read_sm(
                ports.clone(),
                smps.clone(),
                SmMap::of(&fabric),
                dopts.clone(),
                Clock::system(),
            ),
            ports: ports.clone(),
            choice: choice.clone(),
            clock: Clock::system(),
            emitted: Arc::clone(&emitted),
        };
        emitted.decides(index);
        let view = SubnetView {
            name: g.name.clone(),
            key: g.key,
            sm: read.sm,
            sweeping: g.sweeping.clone(),
            standby: g.standby.clone(),
            ..Default::default()
        };
        info!(
            subnet = %Escaped(&view.label()),
            sweeping = %ports[0],
            standby = ports.len() - 1,
            "subnet {}", Escaped(&view.label())
        );
        subnets.push(SubnetBackend {
            view,
            fabric,
            sweep: Box::new(FailoverTransport::new(sweeps, choice.clone())),
            write: Box::new(FailoverTransport::new(writes, choice.clone())),
            poll: Box::new(FailoverTransport::new(polls, choice.clone())),
            source: Some(Box::new(SmpDiscovery {
                smps,
                choice,
                opts: dopts.clone(),
            })),
            probe: Some(Box::new(probe)),
        });
    }
    Ok(Backend {
        subnets,
        doca: None,
        sim: None,
        emitted: Some(emitted),
    })
}

fn discover_options(cfg: &Config, cancel: Option<&Shutdown>) -> DiscoverOptions {
    DiscoverOptions {
        window: cfg.mad.window,
        timeout: cfg.umad.discovery_timeout,
        cancel: cancel.map(Shutdown::flag),
        ..Default::default()
    }
}

/// The host's local ports as sysfs shows them now; the last look when
/// sysfs cannot be read (a failed read is not every port gone).
fn look_ports(root: String) -> LookPorts {
    let mut last: Vec<Seen> = Vec::new();
    Box::new(move || {
        match read_cas(&root) {
            Ok(cas) => {
                last = ib_ports(&cas)
                    .map(|p| Seen::from_sysfs(p, Guid(0)))
                    .collect()
            }
            Err(e) => tracing::debug!(error = %e, "local ports unreadable; the last look stands"),
        }
        last.clone()
    })
}

/// The master SM read through one of `ports` (by its SMP handle in
/// `smps`), along the routes of `known`: the SM at the port's MasterSMLID,
/// and when that is no master, every node, at most once per
/// [`NO_MASTER_GRACE`] (the failover machine holds the master that long).
/// A read that would wait on a rediscovery holding the handle, or whose
/// SMPs fail, is not made: it says nothing of the SM.
fn read_sm(
    ports: Vec<LocalPort>,
    smps: Vec<Smp>,
    known: SmMap,
    opts: DiscoverOptions,
    clock: Clock,
) -> ReadSm {
    let mut pace = SearchPace::new(NO_MASTER_GRACE);
    Box::new(move |port| {
        let i = ports.iter().position(|p| p == port)?;
        let mut smp = smps[i].try_lock().ok()?;
        let mut read = |search| match read_subnet(&mut *smp, &known, &opts, search) {
            Ok(r) => Some(r.sm),
            Err(e) => {
                tracing::debug!(port = %port, error = %e, "SMInfo not read");
                None
            }
        };
        match read(SmSearch::AtMasterLid)? {
            Some(sm) => Some(Some(sm)),
            None if pace.every_node(clock.now()) => read(SmSearch::EveryNode),
            None => Some(None),
        }
    })
}

/// Open one local port (the CA and port, or the transport's pick),
/// discover its fabric and read its subnet.
fn open_port(
    cfg: &Config,
    ca: Option<String>,
    port: Option<u8>,
    cancel: &Shutdown,
) -> Result<Opened, AppError> {
    let ucfg = UmadConfig {
        ca,
        port,
        // The kernel's per-MAD timeout stays at or under the engines'
        // deadlines (the write path's is the shortest), so the engines
        // decide about retries.
        timeout_ms: (cfg.mad.timeout.min(cfg.control().timeout).as_millis() as u64)
            .clamp(1, u64::from(u32::MAX)) as u32,
        retries: 0,
        serve_perf_mgt: false,
        poll: cfg.umad.reader_poll,
    };
    let t = UmadTransport::open(&ucfg).map_err(AppError::Umad)?;
    let local = t.local_port().clone();
    // A planarized port (XDR): SMPs through its SMI device, paired from
    // sysfs as libibumad pairs them; PM MADs through `t`, its GSI device.
    let cas = read_cas(&sysfs_root()).unwrap_or_default();
    let smi = match crate::transport::umad::pairs::smi_of(&cas, &(local.ca.clone(), local.port)) {
        Some((ca, port)) => {
            info!(gsi = %Escaped(&local.ca), smi = %Escaped(&ca), port, "a planarized port: SMPs go through its SMI device");
            let smi_cfg = UmadConfig {
                ca: Some(ca),
                port: Some(port),
                ..ucfg.clone()
            };
            Some(UmadTransport::open(&smi_cfg).map_err(AppError::Umad)?)
        }
        None => None,
    };
    let dopts = discover_options(cfg, Some(cancel));
    info!(ca = %Escaped(&local.ca), port = local.port, lid = local.lid, "discovering the fabric (directed-route SMPs)");
    let mut smp = smi.as_ref().unwrap_or(&t).smp_handle();
    let (fabric, stats) = match discover_with_stats(&mut smp, &dopts) {
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
    };
    let switches = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Switch)
        .count();
    let ports: usize = fabric.nodes.iter().map(|n| n.ports.len()).sum();
    let with_lid = fabric
        .nodes
        .iter()
        .filter(|n| n.id.lid != 0 || n.ports.iter().any(|p| p.lid != 0))
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
        warn!(
            without_lid = fabric.nodes.len() - with_lid,
            "some nodes have no LID and cannot be swept"
        );
    }
    let read = match read_subnet(&mut smp, &SmMap::of(&fabric), &dopts, SmSearch::EveryNode) {
        Ok(r) => r,
        Err(DiscoverError::Cancelled) => return Err(AppError::Cancelled),
        Err(e) => {
            warn!(error = %e, "the subnet's prefix and master SM could not be read");
            SubnetRead {
                port: local.port,
                state: crate::fabric::local::PORT_ACTIVE,
                prefix: crate::ib::subnet::DEFAULT_PREFIX,
                sm_lid: 0,
                sm: None,
                others: Vec::new(),
                smps: 0,
            }
        }
    };
    match &read.sm {
        Some(sm) => info!(
            prefix = %crate::ib::subnet::prefix_text(read.prefix),
            sm_guid = %sm.guid,
            sm_lid = sm.lid,
            priority = sm.priority,
            "master SM {} at LID {}", sm.guid, sm.lid
        ),
        None => {
            warn!(prefix = %crate::ib::subnet::prefix_text(read.prefix), "no master SM answered")
        }
    }
    Ok(Opened {
        port: LocalPort::new(&local.ca, local.port),
        t,
        smi,
        fabric,
        read,
    })
}
