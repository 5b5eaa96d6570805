//! Fabric discovery by directed-route SMPs, as ibnetdiscover does it: from
//! the local port, ask every node reached for NodeInfo, NodeDescription and
//! PortInfo, and follow every port whose link is up (state Init, Armed or
//! Active) by extending the directed route one hop, deduplicating nodes by
//! node GUID. Switches are walked through; channel adapters and routers are
//! leaves (except the local one). Many SMPs are kept in flight at once: the
//! search is event-driven rather than level by level, so a slow or dead
//! branch never holds up the others.
//!
//! Works over any [`MadTransport`] that carries class 0x81 MADs (the umad
//! transport does); directed-route SMPs go to the permissive LID 0xFFFF on
//! QP0.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use super::engine::{DriveEnd, DriveOptions, Requester, drive};
use super::window::{MAX_WINDOW, MadWindow, Transmit, WindowConfig, WindowEvent};
use crate::ib::{Fabric, FecMode, Guid, Node, NodeIdentity, NodeType, PhysState, Port, PortState};
pub use crate::smp::{
    ATTR_MLNX_EXT_PORT_INFO, ATTR_NODE_DESC, ATTR_NODE_INFO, ATTR_PORT_INFO,
    ATTR_PORT_INFO_EXTENDED, ATTR_SWITCH_INFO, CAP_EXT_SPEEDS, CLASS_SMP_DIRECTED, MAX_HOPS,
    METHOD_GET, METHOD_GET_RESP, MlnxExtPortInfo, NodeInfo, PortInfo, PortInfoExtended, SmpReply,
    SwitchInfo, dr_smp_get, parse_smp_reply,
};
use crate::time::Clock;

mod routes;
mod sm;
use crate::transport::{MAD_SIZE, MadAddr, MadTransport, TransportError, wire_tid};
pub(crate) use routes::{Links, routes_from};
pub use sm::{SearchPace, SmMap, SmSearch, SubnetRead, read_subnet};

/// Where directed-route SMPs are sent: the permissive LID on QP0.
pub fn smp_addr() -> MadAddr {
    MadAddr {
        lid: 0xFFFF,
        qpn: 0,
        qkey: 0,
        pkey_index: 0,
        sl: 0,
    }
}

#[derive(Clone, Debug)]
pub struct DiscoverOptions {
    /// SMPs in flight at once.
    pub window: usize,
    /// Deadline per SMP (a backstop: the umad transport reports a kernel
    /// timeout earlier).
    pub timeout: Duration,
    /// Resends after the first attempt.
    pub retries: u32,
    /// Longest directed route followed.
    pub max_hops: usize,
    /// When set (e.g. by SIGTERM), discovery stops within
    /// [`CANCEL_POLL`](super::engine::CANCEL_POLL) and returns
    /// [`DiscoverError::Cancelled`].
    pub cancel: Option<Arc<AtomicBool>>,
    /// The time: deadlines, resends and how long a discovery took.
    pub clock: Clock,
}

impl Default for DiscoverOptions {
    fn default() -> Self {
        DiscoverOptions {
            window: 64,
            timeout: Duration::from_millis(500),
            retries: 2,
            max_hops: MAX_HOPS,
            cancel: None,
            clock: Clock::system(),
        }
    }
}

/// Counts and timing of one discovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DiscoverStats {
    pub smps_sent: u64,
    pub replies: u64,
    /// SMPs that got no answer after every retry.
    pub timeouts: u64,
    /// Replies with an error status.
    pub errors: u64,
    pub elapsed: Duration,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DiscoverError {
    /// The local node did not answer NodeInfo.
    NoAnswer(NoAnswer),
    /// The local port's link is down: nothing beyond it can be reached.
    LocalPortDown { port: u8, state: u8 },
    /// The transport failed.
    Transport(TransportError),
    /// The cancel flag was set.
    Cancelled,
}

/// How the local node failed to answer its NodeInfo.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NoAnswer {
    /// No usable reply came back.
    NoReply,
    /// Every attempt timed out.
    TimedOut,
    /// A reply with this SMP status.
    Status(u16),
}

impl fmt::Display for NoAnswer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoAnswer::NoReply => {
                f.write_str("the local node did not answer NodeInfo (is the umad port usable?)")
            }
            NoAnswer::TimedOut => {
                f.write_str("no answer to NodeInfo from the local node (is the umad port usable?)")
            }
            NoAnswer::Status(s) => {
                write!(f, "the local node answered NodeInfo with status 0x{s:04x}")
            }
        }
    }
}

impl fmt::Display for DiscoverError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DiscoverError::NoAnswer(m) => write!(f, "discovery: {m}"),
            DiscoverError::LocalPortDown { port, state } => write!(
                f,
                "discovery: local port {port} is {} (state {state}); check the cable and link",
                state_name(*state)
            ),
            DiscoverError::Transport(e) => write!(f, "discovery: transport failed: {e}"),
            DiscoverError::Cancelled => f.write_str("discovery: cancelled"),
        }
    }
}

impl std::error::Error for DiscoverError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DiscoverError::Transport(e) => Some(e),
            _ => None,
        }
    }
}

fn state_name(state: u8) -> &'static str {
    match state {
        1 => "Down",
        2 => "Init",
        3 => "Armed",
        4 => "Active",
        _ => "in an unknown state",
    }
}

#[derive(Clone, Debug)]
enum Query {
    /// NodeInfo along `path`; `from` = the (node, port) the last hop left by.
    NodeInfo {
        path: Vec<u8>,
        from: Option<(usize, u8)>,
    },
    NodeDesc {
        node: usize,
    },
    PortInfo {
        node: usize,
        port: u8,
    },
    SwitchInfo {
        node: usize,
    },
    PortInfoExtended {
        node: usize,
        port: u8,
    },
    MlnxExtPortInfo {
        node: usize,
        port: u8,
    },
}

struct PortBuild {
    guid: u64,
    info: Option<PortInfo>,
    remote: Option<(usize, u8)>,
    /// PortInfoExtended FECModeActive, where the port reports it.
    fec: Option<u16>,
    /// Mellanox ExtendedPortInfo (FDR10), where it was read.
    mlnx: Option<MlnxExtPortInfo>,
}

impl PortBuild {
    /// A port known by its GUID, nothing read of it yet.
    fn new(guid: u64) -> PortBuild {
        PortBuild {
            guid,
            info: None,
            remote: None,
            fec: None,
            mlnx: None,
        }
    }
}

struct NodeBuild {
    info: NodeInfo,
    desc: Option<String>,
    /// Directed route that reaches the node.
    path: Vec<u8>,
    port0: Option<PortInfo>,
    /// SwitchInfo says port 0 is an enhanced port 0.
    enhanced_port0: bool,
    ports: BTreeMap<u8, PortBuild>,
}

impl NodeBuild {
    fn is_switch(&self) -> bool {
        self.info.node_type == 2
    }
}

struct Walk {
    opts: DiscoverOptions,
    nodes: Vec<NodeBuild>,
    by_guid: HashMap<u64, usize>,
    /// Every query asked, by window request index.
    queries: Vec<Query>,
    /// Queries asked but not yet in the window.
    asked: Vec<usize>,
    /// The transport refused an SMP.
    failed: Option<DiscoverError>,
    stats: DiscoverStats,
    /// Set when the local node answered (the walk can start).
    local_done: bool,
    local_error: Option<DiscoverError>,
}

/// Discover the fabric reachable from the transport's local port.
pub fn discover(t: &mut dyn MadTransport, opts: &DiscoverOptions) -> Result<Fabric, DiscoverError> {
    discover_with_stats(t, opts).map(|(f, _)| f)
}

/// [`discover`], also returning how many SMPs it took and how long.
pub fn discover_with_stats(
    t: &mut dyn MadTransport,
    opts: &DiscoverOptions,
) -> Result<(Fabric, DiscoverStats), DiscoverError> {
    let start = opts.clock.now();
    let mut w = Walk::new(opts);
    w.ask(Query::NodeInfo {
        path: Vec::new(),
        from: None,
    });
    w.run(t)?;
    if let Some(e) = w.local_error.take() {
        return Err(e);
    }
    if !w.local_done {
        return Err(DiscoverError::NoAnswer(NoAnswer::NoReply));
    }
    let fabric = w.build();
    w.stats.elapsed = opts.clock.now().saturating_duration_since(start);
    let (nodes, smps, timeouts) = (fabric.nodes.len(), w.stats.smps_sent, w.stats.timeouts);
    let ms = w.stats.elapsed.as_millis() as u64;
    tracing::info!(
        nodes,
        smps,
        timeouts,
        ms,
        "fabric discovered: {nodes} nodes in {ms} ms, with {smps} SMPs of which {timeouts} timed out"
    );
    Ok((fabric, w.stats))
}

/// Read the PortInfo of every port of `known` again (a light sweep, as
/// opensm's between its heavy sweeps): port state, physical state, width,
/// speed and FEC as they are now, nodes and links as `known` has them
/// (plus whatever a link that came up leads to). The SMPs follow directed
/// routes through `known`'s links from the local node; a node no route
/// reaches keeps its old port facts. One NodeInfo (the local node) and one
/// PortInfo per port (switch port 0 included): no walk of the fabric.
pub fn refresh_port_info(
    t: &mut dyn MadTransport,
    known: &Fabric,
    opts: &DiscoverOptions,
) -> Result<Fabric, DiscoverError> {
    let mut w = Walk::new(opts);
    // The local node: which one of `known` the routes start from.
    let local = local_node_info(t, &w.opts)?;
    let routes = routes_from(
        known,
        Guid(local.node_guid),
        local.local_port,
        w.opts.max_hops,
    );
    for (i, n) in known.nodes.iter().enumerate() {
        let Some(path) = routes.path(i) else {
            continue;
        };
        let idx = w.nodes.len();
        let ports = n
            .ports
            .iter()
            .filter(|p| p.num != 0)
            .map(|p| (p.num, PortBuild::new(p.guid.0)))
            .collect();
        w.nodes.push(NodeBuild {
            info: NodeInfo {
                node_type: n.id.node_type.code(),
                num_ports: n.id.num_ports,
                sys_guid: n.id.sys_guid.0,
                node_guid: n.id.guid.0,
                port_guid: n.ports.first().map_or(n.id.guid.0, |p| p.guid.0),
                device_id: n.id.device_id,
                local_port: if n.id.guid.0 == local.node_guid {
                    local.local_port
                } else {
                    0
                },
                vendor_id: n.id.vendor_id,
            },
            desc: Some(n.id.description.to_string()),
            path,
            port0: None,
            enhanced_port0: n.port(0).is_some(),
            ports,
        });
        w.by_guid.insert(n.id.guid.0, idx);
    }
    // The links as `known` has them (both ends reached).
    for n in &known.nodes {
        for p in &n.ports {
            if let (Some(&a), Some((rg, rp))) = (w.by_guid.get(&n.id.guid.0), p.remote())
                && let Some(&b) = w.by_guid.get(&rg.0)
                && let Some(pb) = w.nodes[a].ports.get_mut(&p.num)
            {
                pb.remote = Some((b, rp));
            }
        }
    }
    for (idx, n) in w.nodes.iter().enumerate() {
        let ports: Vec<u8> = if n.is_switch() {
            std::iter::once(0).chain(n.ports.keys().copied()).collect()
        } else {
            n.ports.keys().copied().collect()
        };
        for port in ports {
            w.asked.push(w.queries.len());
            w.queries.push(Query::PortInfo { node: idx, port });
        }
    }
    let start = opts.clock.now();
    w.run(t)?;
    let mut fabric = w.build();
    // A port that did not answer (its node is gone, or the route to it
    // broke) keeps what `known` says of it; so does a switch's LID.
    for n in &mut fabric.nodes {
        let Some(old) = known.node(n.id.guid) else {
            continue;
        };
        n.keep_unread(old);
        // As discovery shows it: a port whose link is down has no peer.
        for p in &mut n.ports {
            if p.state == Some(PortState::Down) {
                p.set_remote(None);
            }
        }
    }
    // Nodes no route reached keep what `known` says of them.
    for (i, n) in known.nodes.iter().enumerate() {
        if !routes.reaches(i) {
            fabric.nodes.push(n.clone());
        }
    }
    fabric.sort();
    tracing::debug!(
        nodes = fabric.nodes.len(),
        smps = w.stats.smps_sent,
        timeouts = w.stats.timeouts,
        ms = opts
            .clock
            .now()
            .saturating_duration_since(start)
            .as_millis() as u64,
        "port info refreshed"
    );
    Ok(fabric)
}

/// NodeInfo of the local node (one SMP along the empty route).
fn local_node_info(
    t: &mut dyn MadTransport,
    opts: &DiscoverOptions,
) -> Result<NodeInfo, DiscoverError> {
    struct Local(Option<NodeInfo>);
    impl Requester for Local {
        fn build(&mut self, tx: Transmit) -> Option<(MadAddr, [u8; MAD_SIZE])> {
            Some((
                smp_addr(),
                dr_smp_get(ATTR_NODE_INFO, 0, wire_tid(tx.tid), &[]),
            ))
        }
        fn on_event(&mut self, _win: &mut MadWindow, ev: WindowEvent) -> bool {
            if let WindowEvent::Reply { mad, .. } = ev
                && let Some(r) = parse_smp_reply(&mad)
                && r.status == 0
            {
                self.0 = Some(NodeInfo::decode(&r.data));
            }
            false
        }
    }
    let mut win = MadWindow::new(WindowConfig {
        window: 1,
        timeout: opts.timeout,
        retries: opts.retries,
    });
    win.push(0);
    let mut local = Local(None);
    let drive_opts = DriveOptions {
        cancel: opts.cancel.as_deref(),
        class: Some(CLASS_SMP_DIRECTED),
    };
    match drive(t, &mut win, &drive_opts, &mut local, &opts.clock) {
        DriveEnd::Cancelled => return Err(DiscoverError::Cancelled),
        DriveEnd::Failed(e) => return Err(DiscoverError::Transport(e)),
        DriveEnd::Idle | DriveEnd::Stopped => {}
    }
    local.0.ok_or(DiscoverError::NoAnswer(NoAnswer::NoReply))
}

impl Requester for Walk {
    fn build(&mut self, tx: Transmit) -> Option<(MadAddr, [u8; MAD_SIZE])> {
        Some((smp_addr(), self.smp(tx)))
    }

    fn on_event(&mut self, win: &mut MadWindow, ev: WindowEvent) -> bool {
        match ev {
            WindowEvent::Reply { index, mad } => self.complete(index, &mad),
            WindowEvent::Timeout { index } => self.expire(index),
            WindowEvent::Failed { error, .. } => {
                self.failed = Some(DiscoverError::Transport(error));
                return false;
            }
        }
        for i in self.asked.drain(..) {
            win.push(i);
        }
        self.local_error.is_none()
    }
}

impl Walk {
    /// A walk with nothing asked yet, its window and hops in range.
    fn new(opts: &DiscoverOptions) -> Walk {
        let mut opts = opts.clone();
        opts.window = opts.window.clamp(1, MAX_WINDOW);
        opts.max_hops = opts.max_hops.clamp(1, MAX_HOPS);
        Walk {
            opts,
            nodes: Vec::new(),
            by_guid: HashMap::new(),
            queries: Vec::new(),
            asked: Vec::new(),
            failed: None,
            stats: DiscoverStats::default(),
            local_done: false,
            local_error: None,
        }
    }

    /// Ask `q` once the current event is handled.
    fn ask(&mut self, q: Query) {
        self.asked.push(self.queries.len());
        self.queries.push(q);
    }

    fn run(&mut self, t: &mut dyn MadTransport) -> Result<(), DiscoverError> {
        let mut win = MadWindow::new(WindowConfig {
            window: self.opts.window,
            timeout: self.opts.timeout,
            retries: self.opts.retries,
        });
        let cancel = self.opts.cancel.clone();
        let opts = DriveOptions {
            cancel: cancel.as_deref(),
            class: Some(CLASS_SMP_DIRECTED),
        };
        for i in self.asked.drain(..) {
            win.push(i);
        }
        let clock = self.opts.clock.clone();
        let end = drive(t, &mut win, &opts, self, &clock);
        self.stats.smps_sent += win.take_stats().sent;
        match end {
            DriveEnd::Idle | DriveEnd::Stopped => {}
            DriveEnd::Cancelled => return Err(DiscoverError::Cancelled),
            DriveEnd::Failed(e) => return Err(DiscoverError::Transport(e)),
        }
        self.failed.take().map_or(Ok(()), Err)
    }

    fn path_of(&self, q: &Query) -> Vec<u8> {
        match q {
            Query::NodeInfo { path, .. } => path.clone(),
            Query::NodeDesc { node }
            | Query::PortInfo { node, .. }
            | Query::SwitchInfo { node }
            | Query::PortInfoExtended { node, .. }
            | Query::MlnxExtPortInfo { node, .. } => self.nodes[*node].path.clone(),
        }
    }

    fn smp(&self, tx: Transmit) -> [u8; MAD_SIZE] {
        let q = &self.queries[tx.index];
        let (attr, modifier) = match q {
            Query::NodeInfo { .. } => (ATTR_NODE_INFO, 0),
            Query::NodeDesc { .. } => (ATTR_NODE_DESC, 0),
            Query::PortInfo { port, .. } => (ATTR_PORT_INFO, u32::from(*port)),
            Query::SwitchInfo { .. } => (ATTR_SWITCH_INFO, 0),
            Query::PortInfoExtended { port, .. } => (ATTR_PORT_INFO_EXTENDED, u32::from(*port)),
            Query::MlnxExtPortInfo { port, .. } => (ATTR_MLNX_EXT_PORT_INFO, u32::from(*port)),
        };
        dr_smp_get(attr, modifier, wire_tid(tx.tid), &self.path_of(q))
    }

    /// No answer after every retry.
    fn expire(&mut self, index: usize) {
        self.stats.timeouts += 1;
        match &self.queries[index] {
            Query::NodeInfo { path, from: None } if path.is_empty() => {
                self.local_error = Some(DiscoverError::NoAnswer(NoAnswer::TimedOut));
            }
            q => tracing::debug!(query = ?q, "SMP got no answer"),
        }
    }

    fn complete(&mut self, index: usize, mad: &[u8; MAD_SIZE]) {
        let query = self.queries[index].clone();
        let Some(reply) = parse_smp_reply(mad) else {
            self.stats.errors += 1;
            return;
        };
        self.stats.replies += 1;
        if reply.status != 0 {
            self.stats.errors += 1;
            tracing::debug!(query = ?query, status = reply.status, "SMP error status");
            if matches!(&query, Query::NodeInfo { from: None, .. }) {
                self.local_error = Some(DiscoverError::NoAnswer(NoAnswer::Status(reply.status)));
            }
            return;
        }
        match query {
            Query::NodeInfo { path, from } => self.on_node_info(path, from, &reply.data),
            Query::NodeDesc { node } => {
                let end = reply.data.iter().position(|&b| b == 0).unwrap_or(64);
                self.nodes[node].desc = Some(
                    String::from_utf8_lossy(&reply.data[..end])
                        .trim_end()
                        .to_string(),
                );
            }
            Query::PortInfo { node, port } => self.on_port_info(node, port, &reply.data),
            Query::PortInfoExtended { node, port } => {
                if let Some(pb) = self.nodes[node].ports.get_mut(&port) {
                    pb.fec = Some(PortInfoExtended::decode(&reply.data).fec_mode_active);
                }
            }
            Query::MlnxExtPortInfo { node, port } => {
                if let Some(pb) = self.nodes[node].ports.get_mut(&port) {
                    pb.mlnx = Some(MlnxExtPortInfo::decode(&reply.data));
                }
            }
            Query::SwitchInfo { node } => {
                self.nodes[node].enhanced_port0 =
                    SwitchInfo::decode(&reply.data).enhanced_port0 != 0;
            }
        }
    }

    fn on_node_info(&mut self, path: Vec<u8>, from: Option<(usize, u8)>, data: &[u8; 64]) {
        let ni = NodeInfo::decode(data);
        if from.is_none() {
            self.local_done = true;
        }
        // For a switch the port the SMP arrived on is LocalPortNum; for the
        // local switch (path empty) that is port 0.
        let in_port = ni.local_port;
        let idx = match self.by_guid.get(&ni.node_guid) {
            Some(&idx) => {
                let n = &mut self.nodes[idx];
                if !n.is_switch() && !n.ports.contains_key(&in_port) && in_port != 0 {
                    // Another port of a known CA: learn its state and LID.
                    n.ports.insert(in_port, PortBuild::new(ni.port_guid));
                    // PortInfo's attribute modifier picks the CA port, so
                    // the node's first route reaches this port's record too.
                    self.ask(Query::PortInfo {
                        node: idx,
                        port: in_port,
                    });
                }
                idx
            }
            None => {
                let idx = self.nodes.len();
                let mut ports = BTreeMap::new();
                if ni.node_type == 2 {
                    for p in 1..=ni.num_ports {
                        ports.insert(p, PortBuild::new(ni.node_guid));
                    }
                } else if in_port != 0 {
                    ports.insert(in_port, PortBuild::new(ni.port_guid));
                }
                self.nodes.push(NodeBuild {
                    info: ni,
                    desc: None,
                    path,
                    port0: None,
                    enhanced_port0: false,
                    ports,
                });
                self.by_guid.insert(ni.node_guid, idx);
                self.ask(Query::NodeDesc { node: idx });
                if ni.node_type == 2 {
                    self.ask(Query::SwitchInfo { node: idx });
                    for p in 0..=ni.num_ports {
                        self.ask(Query::PortInfo { node: idx, port: p });
                    }
                } else if in_port != 0 {
                    self.ask(Query::PortInfo {
                        node: idx,
                        port: in_port,
                    });
                }
                idx
            }
        };
        if let Some((a, q)) = from {
            self.link(a, q, idx, in_port);
        }
    }

    fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
        if let Some(p) = self.nodes[a].ports.get_mut(&pa) {
            p.remote = Some((b, pb));
        }
        if let Some(p) = self.nodes[b].ports.get_mut(&pb) {
            p.remote = Some((a, pa));
        }
    }

    fn on_port_info(&mut self, node: usize, port: u8, data: &[u8; 64]) {
        let pi = PortInfo::decode(data);
        let local = self.nodes[node].path.is_empty();
        if port == 0 {
            self.nodes[node].port0 = Some(pi);
            // A switch's port 0 says whether its ports answer
            // PortInfoExtended (as perfquery asks it).
            if pi.has_port_info_extended() {
                let ports: Vec<u8> = self.nodes[node].ports.keys().copied().collect();
                for port in ports {
                    self.ask(Query::PortInfoExtended { node, port });
                }
            }
            return;
        }
        let is_switch = self.nodes[node].is_switch();
        let (vendor, device) = (
            self.nodes[node].info.vendor_id,
            self.nodes[node].info.device_id,
        );
        let Some(pb) = self.nodes[node].ports.get_mut(&port) else {
            return;
        };
        pb.info = Some(pi);
        let known = pb.remote.is_some();
        // FDR10 is in Mellanox ExtendedPortInfo (as ibnetdiscover asks it).
        if pi.wants_fdr10(vendor, device) {
            self.ask(Query::MlnxExtPortInfo { node, port });
        }
        if !is_switch && pi.has_port_info_extended() {
            self.ask(Query::PortInfoExtended { node, port });
        }
        let n = &self.nodes[node];
        if local && !n.is_switch() && port == n.info.local_port && !pi.link_up() {
            self.local_error = Some(DiscoverError::LocalPortDown {
                port,
                state: pi.state,
            });
            return;
        }
        let walk_through = n.is_switch() || local;
        if walk_through && pi.link_up() && !known && n.path.len() < self.opts.max_hops {
            let mut path = n.path.clone();
            path.push(port);
            self.ask(Query::NodeInfo {
                path,
                from: Some((node, port)),
            });
        }
    }

    fn build(&self) -> Fabric {
        let mut fabric = Fabric::default();
        for n in &self.nodes {
            let is_switch = n.is_switch();
            let sw_lid = n.port0.map(|p| p.lid).unwrap_or(0);
            let port0 = (is_switch && n.enhanced_port0).then(|| {
                let mut p = Port::enhanced_port0(Guid(n.info.node_guid), sw_lid);
                if let Some(i) = n.port0 {
                    p.state = PortState::from_code(i.state);
                    p.phys_state = PhysState::from_code(i.phys_state);
                }
                p
            });
            let ports: Vec<Port> = port0
                .into_iter()
                .chain(n.ports.iter().map(|(&num, pb)| {
                    let up = pb.info.filter(|i| i.link_up());
                    // A switch port's CapabilityMask is port 0's.
                    let cap = if is_switch {
                        n.port0.as_ref()
                    } else {
                        pb.info.as_ref()
                    };
                    let link = pb
                        .info
                        .map(|i| i.link(cap, pb.mlnx.as_ref()))
                        .unwrap_or_default();
                    Port {
                        num,
                        guid: Guid(pb.guid),
                        lid: if is_switch {
                            sw_lid
                        } else {
                            pb.info.map(|i| i.lid).unwrap_or(0)
                        },
                        remote_guid: pb
                            .remote
                            .map_or(Guid(0), |(r, _)| Guid(self.nodes[r].info.node_guid)),
                        remote_port: pb.remote.map_or(0, |(_, rp)| rp),
                        state: pb.info.and_then(|i| PortState::from_code(i.state)),
                        phys_state: pb.info.and_then(|i| PhysState::from_code(i.phys_state)),
                        width: link.width,
                        speed: link.speed,
                        fec: up.and(pb.fec).and_then(FecMode::from_code),
                        caps: link.caps,
                    }
                }))
                .collect();
            let lid = if is_switch {
                sw_lid
            } else {
                ports.iter().map(|p| p.lid).find(|&l| l != 0).unwrap_or(0)
            };
            fabric.nodes.push(Node {
                id: NodeIdentity {
                    guid: Guid(n.info.node_guid),
                    sys_guid: Guid(n.info.sys_guid),
                    vendor_id: n.info.vendor_id,
                    device_id: n.info.device_id,
                    node_type: NodeType::from_code(n.info.node_type).unwrap_or(NodeType::Ca),
                    description: n.desc.as_deref().unwrap_or_default().into(),
                    num_ports: n.info.num_ports,
                    lid,
                },
                ports,
            });
        }
        fabric.sort();
        fabric
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::{LinkSpeed, LinkWidth};
    use crate::smp::{CAP_HAS_CAP_MASK2, CAP2_PORT_INFO_EXTENDED};
    use crate::transport::Fault;

    #[test]
    fn dr_smp_layout() {
        let m = dr_smp_get(ATTR_PORT_INFO, 3, 0x1122_3344_5566_7788, &[1, 3, 5]);
        assert_eq!(&m[0..4], &[1, 0x81, 1, 1]);
        assert_eq!(m[6], 0, "hop pointer");
        assert_eq!(m[7], 3, "hop count");
        assert_eq!(&m[8..16], &0x1122_3344_5566_7788u64.to_be_bytes());
        assert_eq!(&m[16..18], &[0, 0x15]);
        assert_eq!(&m[20..24], &[0, 0, 0, 3]);
        assert_eq!(&m[32..36], &[0xFF, 0xFF, 0xFF, 0xFF]);
        assert_eq!(&m[128..132], &[0, 1, 3, 5]);
        assert!(m[132..].iter().all(|&b| b == 0));
    }

    #[test]
    fn port_info_fields() {
        let mut d = [0u8; 64];
        d[16..18].copy_from_slice(&0x0102u16.to_be_bytes());
        d[20..24].copy_from_slice(&(CAP_EXT_SPEEDS | 2).to_be_bytes());
        d[28] = 7;
        d[31] = 2; // 4x
        d[32] = 0x34; // supported 3, state Active
        d[33] = 0x52; // LinkUp
        d[34] = 0x02;
        d[35] = 0x41; // active QDR, enabled 1
        d[62] = 0x10; // ext FDR
        let p = PortInfo::decode(&d);
        let fields = (p.lid, p.local_port, p.state, p.phys_state, p.lmc);
        assert_eq!(fields, (0x0102, 7, 4, 5, 2));
        assert_eq!((p.speed_active, p.speed_ext_active), (4, 1));
        assert!(p.link_up());
        assert_eq!(LinkWidth::from_code(p.width_active), Some(LinkWidth::X4));
        assert_eq!(
            LinkSpeed::from_port_info(p.speed_active, p.speed_ext_active),
            Some(LinkSpeed::Fdr)
        );
    }

    #[test]
    fn node_info_fields() {
        let mut d = [0u8; 64];
        d[2] = 2;
        d[3] = 36;
        d[4..12].copy_from_slice(&0xAAu64.to_be_bytes());
        d[12..20].copy_from_slice(&0xBBu64.to_be_bytes());
        d[20..28].copy_from_slice(&0xCCu64.to_be_bytes());
        d[36] = 9;
        let n = NodeInfo::decode(&d);
        assert_eq!(
            n,
            NodeInfo {
                node_type: 2,
                num_ports: 36,
                sys_guid: 0xAA,
                node_guid: 0xBB,
                port_guid: 0xCC,
                device_id: 0,
                local_port: 9,
                vendor_id: 0,
            }
        );
    }

    /// An in-memory fabric answering directed-route SMPs.
    struct FakeNode {
        guid: u64,
        switch: bool,
        nports: u8,
        /// port -> (node index, remote port)
        links: HashMap<u8, (usize, u8)>,
        /// Port states (missing = Active when linked, Down otherwise).
        down: Vec<u8>,
        silent: bool,
        /// SwitchInfo says EnhancedPort0.
        enhanced_port0: bool,
        /// PortInfoExtended FECModeActive of every port (None: the node
        /// does not support PortInfoExtended).
        fec: Option<u16>,
    }

    struct FakeFabric {
        nodes: Vec<FakeNode>,
        local: usize,
        local_port: u8,
        replies: VecDeque<Received>,
        /// SMPs sent (retries included).
        sent: u64,
    }

    use crate::transport::Received;
    use std::collections::VecDeque;

    impl FakeFabric {
        fn node(guid: u64, switch: bool, nports: u8) -> FakeNode {
            FakeNode {
                guid,
                switch,
                nports,
                links: HashMap::new(),
                down: Vec::new(),
                silent: false,
                enhanced_port0: false,
                fec: None,
            }
        }
        fn link(&mut self, a: usize, pa: u8, b: usize, pb: u8) {
            self.nodes[a].links.insert(pa, (b, pb));
            self.nodes[b].links.insert(pb, (a, pa));
        }
        fn answer(&self, m: &[u8; MAD_SIZE]) -> Option<[u8; 64]> {
            let hops = m[7] as usize;
            let (mut at, mut in_port) = (self.local, self.local_port);
            for i in 0..hops {
                let out = m[128 + 1 + i];
                let n = &self.nodes[at];
                if n.down.contains(&out) {
                    return None;
                }
                let &(next, rp) = n.links.get(&out)?;
                at = next;
                in_port = rp;
                if self.nodes[at].silent {
                    return None;
                }
            }
            let n = &self.nodes[at];
            if n.silent {
                return None;
            }
            let attr = u16::from_be_bytes([m[16], m[17]]);
            let modifier = u32::from_be_bytes([m[20], m[21], m[22], m[23]]) as u8;
            let mut d = [0u8; 64];
            match attr {
                ATTR_NODE_INFO => {
                    d[2] = if n.switch { 2 } else { 1 };
                    d[3] = n.nports;
                    d[4..12].copy_from_slice(&n.guid.to_be_bytes());
                    d[12..20].copy_from_slice(&n.guid.to_be_bytes());
                    let pg = if n.switch {
                        n.guid
                    } else {
                        n.guid + u64::from(in_port)
                    };
                    d[20..28].copy_from_slice(&pg.to_be_bytes());
                    d[36] = in_port;
                }
                ATTR_NODE_DESC => {
                    let t = format!("node{:x}", n.guid);
                    d[..t.len()].copy_from_slice(t.as_bytes());
                }
                ATTR_PORT_INFO => {
                    let lid = if n.switch {
                        n.guid as u16
                    } else {
                        (n.guid as u16) + u16::from(modifier)
                    };
                    d[16..18].copy_from_slice(&lid.to_be_bytes());
                    d[28] = modifier;
                    d[31] = 2;
                    let up = modifier == 0
                        || (n.links.contains_key(&modifier) && !n.down.contains(&modifier));
                    d[32] = if up { 0x24 } else { 0x21 };
                    d[35] = 0x40;
                    if n.fec.is_some() {
                        d[20..24].copy_from_slice(&CAP_HAS_CAP_MASK2.to_be_bytes());
                        d[60..62].copy_from_slice(&CAP2_PORT_INFO_EXTENDED.to_be_bytes());
                    }
                }
                ATTR_PORT_INFO_EXTENDED => d[4..6].copy_from_slice(&n.fec?.to_be_bytes()),
                ATTR_SWITCH_INFO if n.switch => d[16] = u8::from(n.enhanced_port0) << 3,
                _ => return None,
            }
            Some(d)
        }
    }

    impl MadTransport for FakeFabric {
        fn send(&mut self, _to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.sent += 1;
            if let Some(d) = self.answer(mad) {
                let mut r = *mad;
                r[3] = METHOD_GET_RESP;
                r[4] = 0x80;
                r[64..128].copy_from_slice(&d);
                self.replies.push_back(Received {
                    from: smp_addr(),
                    status: 0,
                    mad: Box::new(r),
                });
            }
            Ok(())
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            match self.replies.pop_front() {
                Some(r) => Ok(Some(r)),
                None => {
                    std::thread::sleep(timeout.min(Duration::from_millis(5)));
                    Ok(None)
                }
            }
        }
    }

    /// CA 0x10 (local, port 1) - switch 0x100 - switch 0x200 - CA 0x30,
    /// two parallel switch links, and CA 0x30's second port on switch 0x100.
    fn sample() -> FakeFabric {
        let mut f = FakeFabric {
            nodes: vec![
                FakeFabric::node(0x10, false, 2),
                FakeFabric::node(0x100, true, 8),
                FakeFabric::node(0x200, true, 8),
                FakeFabric::node(0x30, false, 2),
            ],
            local: 0,
            local_port: 1,
            replies: VecDeque::new(),
            sent: 0,
        };
        f.link(0, 1, 1, 1);
        f.link(1, 3, 2, 3);
        f.link(1, 4, 2, 4);
        f.link(2, 1, 3, 1);
        f.link(1, 7, 3, 2);
        f
    }

    fn quick() -> DiscoverOptions {
        DiscoverOptions {
            window: 8,
            timeout: Duration::from_millis(200),
            retries: 1,
            max_hops: MAX_HOPS,
            ..Default::default()
        }
    }

    #[test]
    fn walks_a_small_fabric() {
        let mut f = sample();
        f.nodes[2].enhanced_port0 = true;
        f.nodes[1].fec = Some(1);
        f.nodes[3].fec = Some(2);
        let fab = discover(&mut f, &quick()).unwrap();
        assert_eq!(fab.nodes.len(), 4);
        let ca = fab.node(Guid(0x30)).unwrap();
        assert_eq!(ca.id.node_type, NodeType::Ca);
        assert_eq!(&*ca.id.description, "node30");
        let nums: Vec<u8> = ca.ports.iter().map(|p| p.num).collect();
        assert_eq!(nums, [1, 2]);
        assert_eq!(ca.ports[0].remote(), Some((Guid(0x200), 1)));
        assert_eq!(ca.ports[1].remote(), Some((Guid(0x100), 7)));
        assert_eq!(ca.ports[1].lid, 0x32);
        assert_eq!(ca.ports[1].guid, Guid(0x32));
        assert_eq!(ca.id.lid, 0x31);
        let sw = fab.node(Guid(0x100)).unwrap();
        assert_eq!(sw.ports.len(), 8, "a base port 0 is not listed");
        // An enhanced port 0 is a port of its own: Active, no peer.
        let sw2 = fab.node(Guid(0x200)).unwrap();
        assert_eq!(sw2.ports.len(), 9);
        let p0 = sw2.port(0).unwrap();
        assert_eq!((p0.lid, p0.remote()), (0x200, None));
        assert_eq!(p0.state, Some(PortState::Active));
        // FECModeActive from PortInfoExtended where a port reports it
        // (a switch through port 0's capability mask), on up links only.
        assert_eq!(ca.ports[0].fec, Some(FecMode::RsFec));
        assert_eq!(sw.port(1).unwrap().fec, Some(FecMode::FireCode));
        assert_eq!(sw.port(5).unwrap().fec, None, "down");
        assert_eq!(sw2.port(1).unwrap().fec, None, "no PortInfoExtended");
        assert_eq!(sw.id.lid, 0x100);
        assert_eq!(sw.port(4).unwrap().remote(), Some((Guid(0x200), 4)));
        assert_eq!(sw.port(7).unwrap().remote(), Some((Guid(0x30), 2)));
        assert_eq!(sw.port(5).unwrap().remote(), None);
        assert_eq!(sw.port(5).unwrap().width, None);
        assert_eq!(sw.port(1).unwrap().width, Some(LinkWidth::X4));
        assert_eq!(sw.port(1).unwrap().speed, Some(LinkSpeed::Qdr));
        assert_eq!(sw.port(1).unwrap().state, Some(PortState::Active));
        assert_eq!(sw.port(5).unwrap().state, Some(PortState::Down));
        let local = fab.node(Guid(0x10)).unwrap();
        assert_eq!(local.ports.len(), 1);
        assert_eq!(local.ports[0].remote(), Some((Guid(0x100), 1)));
    }

    /// The map kept for reading the SMs routes as the fabric it was made
    /// of, and asks each node at the LID the fabric gives it.
    #[test]
    fn the_sm_map_routes_as_its_fabric_does() {
        let mut f = sample();
        let fab = discover(&mut f, &quick()).unwrap();
        let map = SmMap::of(&fab);
        for (local, port) in [(0x10, 1), (0x30, 1), (0x30, 2), (0x100, 0)] {
            let from_fabric = routes_from(&fab, Guid(local), port, MAX_HOPS);
            assert_eq!(
                routes_from(&map, Guid(local), port, MAX_HOPS),
                from_fabric,
                "from {local:#x} port {port}"
            );
            assert!(from_fabric.len() >= 2, "{from_fabric:?}");
        }
        // Out of a channel adapter by the port it is on only.
        let routes = routes_from(&map, Guid(0x30), 2, MAX_HOPS);
        let path = |g| routes.path(map.find(Guid(g)).unwrap());
        assert_eq!(path(0x30), Some(vec![]), "the local node");
        assert_eq!(path(0x100), Some(vec![2]));
        assert_eq!(path(0x200), Some(vec![2, 3]));
        let ca = map.find(Guid(0x30)).unwrap();
        let sw = map.find(Guid(0x100)).unwrap();
        assert_eq!(map.lid_of(ca, 0x32), 0x32, "the port that has the SM's LID");
        assert_eq!(map.lid_of(ca, 0), 0x31, "else the node's");
        assert_eq!(map.lid_of(ca, 0x200), 0x31);
        assert_eq!(map.lid_of(sw, 0x32), 0x100, "a switch at its own");
    }

    /// Asked for the SM at the MasterSMLID only, a read sends the local
    /// node's two SMPs and no more when the port names none; asked for
    /// every node, one SMInfo a node reached besides.
    #[test]
    fn only_a_search_of_every_node_asks_every_node() {
        let mut f = sample();
        let fab = discover(&mut f, &quick()).unwrap();
        let map = SmMap::of(&fab);
        let mut opts = quick();
        opts.retries = 0;
        opts.timeout = Duration::from_millis(20);
        f.sent = 0;
        let r = read_subnet(&mut f, &map, &opts, SmSearch::AtMasterLid).unwrap();
        assert_eq!((r.sm, f.sent), (None, 2));
        f.sent = 0;
        let r = read_subnet(&mut f, &map, &opts, SmSearch::EveryNode).unwrap();
        assert_eq!((r.sm, f.sent), (None, 2 + fab.nodes.len() as u64));
    }

    /// Every node is asked at most once per period; the first time at once.
    #[test]
    fn a_search_of_every_node_is_paced() {
        let t0 = std::time::Instant::now();
        let s = Duration::from_secs;
        let mut pace = SearchPace::new(s(45));
        assert!(pace.every_node(t0));
        assert!(!pace.every_node(t0 + s(1)));
        assert!(!pace.every_node(t0 + s(44)));
        assert!(pace.every_node(t0 + s(45)));
        assert!(!pace.every_node(t0 + s(46)));
        assert!(pace.every_node(t0 + s(200)));
    }

    #[test]
    fn a_light_sweep_reads_port_state_along_the_known_links() {
        let mut f = sample();
        let known = discover(&mut f, &quick()).unwrap();
        let ports: usize = known
            .nodes
            .iter()
            .map(|n| n.ports.len() + usize::from(n.id.node_type == NodeType::Switch))
            .sum();
        // One of the parallel switch links goes down (both ends), and CA
        // 0x30 stops answering.
        f.nodes[1].down.push(4);
        f.nodes[2].down.push(4);
        f.nodes[3].silent = true;
        let fresh = refresh_port_info(&mut f, &known, &quick()).unwrap();
        let sw = fresh.node(Guid(0x100)).unwrap();
        assert_eq!(sw.port(4).unwrap().state, Some(PortState::Down));
        assert_eq!(
            sw.port(4).unwrap().remote(),
            None,
            "a down port has no peer"
        );
        assert_eq!(sw.port(3).unwrap().state, Some(PortState::Active));
        assert_eq!(sw.port(3).unwrap().remote(), Some((Guid(0x200), 3)));
        let sw2 = fresh.node(Guid(0x200)).unwrap();
        assert_eq!(sw2.port(4).unwrap().state, Some(PortState::Down));
        assert_eq!((sw2.id.lid, sw2.port(1).unwrap().lid), (0x200, 0x200));
        // The silent CA keeps what was known of it.
        assert_eq!(fresh.node(Guid(0x30)), known.node(Guid(0x30)));
        assert_eq!(fresh.nodes.len(), known.nodes.len());
        // No walk: NodeInfo of the local node, then one PortInfo per port
        // (switch port 0 included), where discovery sends more.
        let mut f2 = sample();
        let (_, stats) = discover_with_stats(&mut f2, &quick()).unwrap();
        assert!(stats.smps_sent > 1 + ports as u64);
        let mut counting = sample();
        refresh_port_info(&mut counting, &known, &quick()).unwrap();
        assert_eq!(counting.sent, 1 + ports as u64);
    }

    #[test]
    fn silent_switch_costs_only_its_deadlines() {
        let mut f = sample();
        f.nodes[2].silent = true;
        let (fab, stats) = discover_with_stats(&mut f, &quick()).unwrap();
        // 0x200 is gone; 0x30 is still reached through its second port.
        let guids: Vec<u64> = fab.nodes.iter().map(|n| n.id.guid.0).collect();
        assert_eq!(guids, [0x10, 0x30, 0x100]);
        assert!(stats.timeouts >= 2, "{stats:?}");
        assert!(
            stats.timeouts <= 4,
            "only the silent switch's requests time out: {stats:?}"
        );
        let sw = fab.node(Guid(0x100)).unwrap();
        assert_eq!(sw.port(3).unwrap().remote(), None);
    }

    #[test]
    fn local_port_down_and_silent_local_node_are_errors() {
        let mut f = sample();
        f.nodes[0].down.push(1);
        match discover(&mut f, &quick()) {
            Err(DiscoverError::LocalPortDown { port: 1, state: 1 }) => {}
            other => panic!("{other:?}"),
        }
        let mut f = sample();
        f.nodes[0].silent = true;
        let e = discover(&mut f, &quick()).unwrap_err();
        assert_eq!(e, DiscoverError::NoAnswer(NoAnswer::TimedOut));
        assert_eq!(
            e.to_string(),
            "discovery: no answer to NodeInfo from the local node (is the umad port usable?)"
        );
    }

    #[test]
    fn a_set_cancel_flag_stops_discovery() {
        // The local node never answers, and its deadline is far away: only
        // the flag can end the walk.
        let mut f = sample();
        f.nodes[0].silent = true;
        let cancel = Arc::new(AtomicBool::new(true));
        let opts = DiscoverOptions {
            timeout: Duration::from_secs(3600),
            retries: 100,
            cancel: Some(Arc::clone(&cancel)),
            ..quick()
        };
        assert!(matches!(
            discover(&mut f, &opts),
            Err(DiscoverError::Cancelled)
        ));
        // Unset, the same walk on a live fabric completes.
        cancel.store(false, std::sync::atomic::Ordering::Relaxed);
        let mut f = sample();
        assert_eq!(discover(&mut f, &opts).unwrap().nodes.len(), 4);
    }

    #[test]
    fn reply_parse_masks_direction_bit() {
        let mut m = dr_smp_get(ATTR_NODE_INFO, 0, 5, &[]);
        m[3] = METHOD_GET_RESP;
        m[4] = 0x80; // D bit
        m[64] = 0x42;
        let r = parse_smp_reply(&m).unwrap();
        assert_eq!(r.status, 0);
        assert_eq!(r.tid, 5);
        assert_eq!(r.data[0], 0x42);
        m[3] = METHOD_GET;
        assert!(parse_smp_reply(&m).is_none());
    }
}
