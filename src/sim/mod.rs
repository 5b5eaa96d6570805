//! The built-in simulated fabric: a Performance Management Agent (PMA) per
//! node that answers encoded PM MADs, with counters that advance like real
//! traffic, lazily, from a clock.
//!
//! - Planes: made from a topology file ([`SimFabric::from_topology`]) or
//!   with [`SimFabric::with_planes`], each plane of the fabric
//!   ([`crate::ib::planes`]) is a subnet of its own, with its prefix, its
//!   LIDs and a master SM ([`SimFabric::planes`]); a transport reaches one
//!   plane. [`SimFabric::new`] makes the whole fabric one subnet, whatever
//!   its links join. With one plane (every connected topology) the first
//!   plane is the whole fabric.
//! - LIDs: [`SimFabric::new`] keeps a LID the topology gave (non-zero and
//!   unique in its plane) and assigns the rest sequentially from 1 in node
//!   order (GUID order), per plane: a switch gets one LID (port 0, copied to
//!   all its ports), a CA one per port.
//! - Traffic: per link direction a rate drawn from a seeded splitmix64
//!   (`SimOptions::seed`): data in octets/4, packets, some multicast, rare
//!   errors on noisy links (symbol errors, receive errors, link error
//!   recovery), XmitWait and a few discards on congested directions. The
//!   transmit counters of one end equal the receive counters of the other.
//! - PortCounters fields saturate at their IBA widths; PortCountersExtended
//!   keeps 64-bit counts. The two attributes are cleared independently.
//!   The node types in [`SimOptions::wide_error_counters`] (channel
//!   adapters by default) and the nodes whose device kind has them
//!   ([`device::KINDS`]: ConnectX-4 and later, Quantum and later) set
//!   CapabilityMask2 bit 1 and fill the 64-bit error counters of
//!   PortCountersExtended too.
//! - The module doc of `pma.rs` says what each attribute answers, including
//!   the sample mechanism (PortSamplesControl/PortSamplesResult): per-node
//!   Tick and CounterWidth ([`SWITCH_CAPS`], [`CA_CAPS`]), optional
//!   quantities and their per-VL encoding ([`quantity`], [`option_bit`]).

pub mod device;
mod planes;
mod pma;
mod sampling;
pub mod script;
pub mod traffic;
mod transport;

pub use planes::SimPlane;
pub use sampling::{
    CA_CAPS, LINK_TRANSFER_PERIOD_PS, SWITCH_CAPS, SampleCaps, option_bit, quantity, tick_ns,
};
pub use transport::{SimTransport, VirtualClock};

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::ib::planes::{Planes, PrefixDecl};
use crate::ib::subnet::SmInfo;
use crate::ib::topology::Topology;
use crate::ib::{self, Fabric, Guid, LinkSpeed, LinkWidth, NodeType, PhysState};
use crate::transport::MAD_SIZE;

use sampling::Sample;
use traffic::{Direction, Totals};

/// A clock tests can move by hand.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(Arc<AtomicU64>);

impl ManualClock {
    pub fn new() -> ManualClock {
        ManualClock::default()
    }
    pub fn advance(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let _ = self
            .0
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |v| {
                Some(v.saturating_add(ns))
            });
    }
    /// Time since the simulation started.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::SeqCst))
    }
}

/// Where simulated time comes from.
#[derive(Clone, Debug, Default)]
pub enum SimClock {
    /// Real time since the [`SimFabric`] was created.
    #[default]
    Real,
    /// Time advanced only by [`ManualClock::advance`].
    Manual(ManualClock),
}

#[derive(Clone, Debug)]
pub struct SimOptions {
    pub seed: u64,
    /// Whether links carry traffic (when false, every counter stays 0).
    pub traffic: bool,
    pub clock: SimClock,
    /// The node types whose PMAs set ClassPortInfo CapabilityMask2 bit 1
    /// (IsAdditionalPortCountersExtendedSupported) and fill the 64-bit
    /// error counters and PortXmitWait of PortCountersExtended, as
    /// ConnectX adapters do; the others leave them 0, as ibsim does.
    pub wide_error_counters: Vec<NodeType>,
}

/// The node types whose simulated PMAs have 64-bit error counters unless
/// configured otherwise: channel adapters.
pub const WIDE_ERROR_COUNTERS: &[NodeType] = &[NodeType::Ca];

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            seed: 1,
            traffic: true,
            clock: SimClock::Real,
            wide_error_counters: WIDE_ERROR_COUNTERS.to_vec(),
        }
    }
}

#[derive(Clone, Debug, Default)]
struct SimPort {
    /// Totals at the last PortCounters clear, per counter.
    pc_base: Totals,
    /// Totals at the last PortCountersExtended clear, per counter.
    pcx_base: Totals,
    /// Totals at the last clear of each optional attribute of per-counter
    /// fields the port was asked for (by attribute ID).
    optional_base: Vec<(u16, Totals)>,
}

impl SimPort {
    /// The clear points of optional attribute `attr_id`.
    fn optional_base(&mut self, attr_id: u16) -> &mut Totals {
        let k = match self.optional_base.iter().position(|(a, _)| *a == attr_id) {
            Some(k) => k,
            None => {
                self.optional_base.push((attr_id, [0; traffic::q::COUNT]));
                self.optional_base.len() - 1
            }
        };
        &mut self.optional_base[k].1
    }
}

/// What a port counted before its current link segment, plus injected
/// errors: traffic counts from `since_ns` while the link is up.
#[derive(Clone, Debug, Default)]
struct Segment {
    base: Totals,
    since_ns: u64,
}

struct State {
    /// Every node once, with all its ports (an adapter on two planes too).
    fabric: Fabric,
    /// The plane of each node and port, and the planes' prefixes.
    planes: Planes,
    /// Per plane: its master SM (None: it has none).
    sm: Vec<Option<SmInfo>>,
    clock: SimClock,
    started: Instant,
    /// Per plane: LID -> (node index, port number; 0 for a switch).
    lids: Vec<HashMap<u16, (usize, u8)>>,
    /// Transmit direction of each cabled (node index, port).
    tx: HashMap<(usize, u8), Direction>,
    ports: HashMap<(usize, u8), SimPort>,
    /// Sample mechanism per PMA: (node index, 0) for a switch, (node, port)
    /// for a CA port.
    samples: HashMap<(usize, u8), Sample>,
    /// Counts carried over from earlier link segments and injected errors.
    segments: HashMap<(usize, u8), Segment>,
    /// Transmit direction of a link taken down, kept for when it returns.
    parked: HashMap<(usize, u8), Direction>,
    /// Width and speed of a link taken down, for when it returns.
    down_links: HashMap<(usize, u8), (Option<LinkWidth>, Option<LinkSpeed>)>,
    unreachable: HashSet<Guid>,
    /// [`SimOptions::wide_error_counters`].
    wide_error_counters: Vec<NodeType>,
    /// Per node: its device kind has 64-bit error counters
    /// ([`device::DeviceKind::wide_errors`]).
    kind_wide_errors: Vec<bool>,
}

impl State {
    /// The node index of `guid`, and the node index and port of the far
    /// end of its port `port`'s link.
    fn link_ends(&self, guid: Guid, port: u8) -> Option<(usize, usize, u8)> {
        let ni = self
            .fabric
            .nodes
            .binary_search_by_key(&guid, |n| n.id.guid)
            .ok()?;
        let (rg, rp) = self.fabric.nodes[ni].port(port)?.remote()?;
        let ri = self
            .fabric
            .nodes
            .binary_search_by_key(&rg, |n| n.id.guid)
            .ok()?;
        Some((ni, ri, rp))
    }

    /// Node `ni`'s PMA fills PortCountersExtended's additional counters:
    /// its node type is configured so, or its device kind has them.
    fn wide_errors(&self, ni: usize) -> bool {
        self.kind_wide_errors.get(ni).copied().unwrap_or(false)
            || self
                .fabric
                .nodes
                .get(ni)
                .is_some_and(|n| self.wide_error_counters.contains(&n.id.node_type))
    }

    fn now_ns(&self) -> u64 {
        match &self.clock {
            SimClock::Real => u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX),
            SimClock::Manual(m) => u64::try_from(m.now().as_nanos()).unwrap_or(u64::MAX),
        }
    }

    /// Totals of (node, port) at `t_ns` since the start: what earlier
    /// link segments counted plus the traffic of the current one.
    fn totals(&self, node: usize, port: u8, t_ns: u64) -> Totals {
        let Some(seg) = self.segments.get(&(node, port)) else {
            return self.traffic(node, port, t_ns);
        };
        let now = self.traffic(node, port, t_ns);
        let then = self.traffic(node, port, seg.since_ns);
        let mut t = seg.base;
        for (i, v) in t.iter_mut().enumerate() {
            *v = v.saturating_add(now[i].saturating_sub(then[i]));
        }
        t
    }

    /// Traffic of (node, port)'s current link from 0 to `t_ns`.
    fn traffic(&self, node: usize, port: u8, t_ns: u64) -> Totals {
        let mut t = [0u64; traffic::q::COUNT];
        let Some(tx) = self.tx.get(&(node, port)) else {
            return t;
        };
        let Some((rg, rp)) = self
            .fabric
            .nodes
            .get(node)
            .and_then(|n| n.port(port))
            .and_then(|p| p.remote())
        else {
            return t;
        };
        let Ok(ri) = self.fabric.nodes.binary_search_by_key(&rg, |n| n.id.guid) else {
            return t;
        };
        let rx = self.tx.get(&(ri, rp)).copied().unwrap_or_default();
        traffic::accumulate(&mut t, tx, &rx, t_ns);
        t
    }
}

/// A simulated fabric. Clones share the same state.
#[derive(Clone)]
pub struct SimFabric {
    state: Arc<Mutex<State>>,
}

impl SimFabric {
    /// The simulated `fabric` as one subnet (one plane at the default
    /// prefix, one LID space), whatever its links join.
    pub fn new(mut fabric: Fabric, opts: SimOptions) -> SimFabric {
        fabric.sort();
        let planes = Planes::whole(&fabric);
        SimFabric::build(fabric, planes, opts)
    }

    /// The simulated fabric of a topology file: each of its planes a subnet,
    /// at the prefix the file gives it.
    pub fn from_topology(topology: Topology, opts: SimOptions) -> SimFabric {
        SimFabric::with_planes(topology.fabric, &topology.prefixes, opts)
    }

    /// The simulated `fabric`, each of its planes (connected components,
    /// [`crate::ib::planes`]) a subnet, at the prefix `prefixes` give it
    /// (the first for a plane wins; the default otherwise).
    pub fn with_planes(mut fabric: Fabric, prefixes: &[PrefixDecl], opts: SimOptions) -> SimFabric {
        fabric.sort();
        let (planes, _) = Planes::of(&fabric, prefixes);
        SimFabric::build(fabric, planes, opts)
    }

    fn build(mut fabric: Fabric, planes: Planes, opts: SimOptions) -> SimFabric {
        let lids = assign_lids(&mut fabric, &planes);
        let sm = (0..planes.count())
            .map(|i| planes::first_sm(&fabric, &planes, i))
            .collect();
        // Ports of a known device support and enable what its kind does.
        let kind_wide_errors = device::apply(&mut fabric.nodes);
        // Every link runs the FEC of its speed.
        for p in fabric.nodes.iter_mut().flat_map(|n| n.ports.iter_mut()) {
            p.fec = p.speed.map(ib::FecMode::simulated);
        }
        let mut tx = HashMap::new();
        let mut ports = HashMap::new();
        let mut samples = HashMap::new();
        for (ni, n) in fabric.nodes.iter().enumerate() {
            if n.id.node_type == NodeType::Switch {
                ports.insert((ni, 0), SimPort::default());
                samples.insert((ni, 0), Sample::initial(n, 0));
            }
            for p in &n.ports {
                ports.insert((ni, p.num), SimPort::default());
                if n.id.node_type != NodeType::Switch {
                    samples.insert((ni, p.num), Sample::initial(n, p.num));
                }
                if p.remote().is_some() && opts.traffic {
                    // One stream per (seed, GUID, port): stable when other
                    // nodes are added or removed.
                    let mut rng = opts.seed
                        ^ n.id.guid.0.wrapping_mul(0x9E37_79B9_7F4A_7C15)
                        ^ u64::from(p.num).wrapping_mul(0xD1B5_4A32_D192_ED03);
                    traffic::splitmix64(&mut rng);
                    let ticks = SampleCaps::tick_rule(n).ticks_per_sec(p.width, p.speed);
                    tx.insert(
                        (ni, p.num),
                        traffic::draw(&mut rng, p.width, p.speed, ticks),
                    );
                }
            }
        }
        SimFabric {
            state: Arc::new(Mutex::new(State {
                fabric,
                planes,
                sm,
                clock: opts.clock,
                started: Instant::now(),
                lids,
                tx,
                ports,
                samples,
                segments: HashMap::new(),
                parked: HashMap::new(),
                down_links: HashMap::new(),
                unreachable: HashSet::new(),
                wide_error_counters: opts.wide_error_counters,
                kind_wide_errors,
            })),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the state half-updated
        // in a way that matters to readers; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The first plane's fabric with the LIDs the simulator assigned (with
    /// one plane, the whole fabric), as it is now.
    pub fn fabric(&self) -> Fabric {
        self.plane_fabric(0)
    }

    /// Plane `plane`'s nodes as they are now, an adapter on several planes
    /// with only its ports on this one (empty past the last plane).
    pub fn plane_fabric(&self, plane: usize) -> Fabric {
        let st = self.lock();
        if st.planes.count() == 1 {
            return if plane == 0 {
                st.fabric.clone()
            } else {
                Fabric::default()
            };
        }
        st.planes.extract(&st.fabric, plane)
    }

    /// An unreachable node answers nothing (its MADs are dropped).
    pub fn set_reachable(&self, guid: Guid, reachable: bool) {
        let mut st = self.lock();
        if reachable {
            st.unreachable.remove(&guid);
        } else {
            st.unreachable.insert(guid);
        }
    }

    /// Take the link at (`guid`, `port`) down or bring it back up: both
    /// ends change state (Down/Polling, or Active/LinkUp with the width and
    /// speed they had), traffic stops and resumes, counters keep what they
    /// counted, and LinkDownedCounter counts each loss of the link. False
    /// when there is no such port or it was never cabled.
    pub fn set_link(&self, guid: Guid, port: u8, up: bool) -> bool {
        let mut st = self.lock();
        let st = &mut *st;
        let Ok(ni) = st.fabric.nodes.binary_search_by_key(&guid, |n| n.id.guid) else {
            return false;
        };
        let Some(p) = st.fabric.nodes[ni].port(port).copied() else {
            return false;
        };
        let Some((rg, rp)) = p.remote() else {
            return false;
        };
        let Ok(ri) = st.fabric.nodes.binary_search_by_key(&rg, |n| n.id.guid) else {
            return false;
        };
        let is_up = p.state == Some(ib::PortState::Active);
        if is_up == up {
            return true;
        }
        let now = st.now_ns();
        for end in [(ni, port), (ri, rp)] {
            // Close the current segment at `now`.
            let t = st.totals(end.0, end.1, now);
            let seg = st.segments.entry(end).or_default();
            seg.base = t;
            seg.since_ns = now;
            if !up {
                seg.base[traffic::q::LINK_DOWNED] += 1;
            }
        }
        for end in [(ni, port), (ri, rp)] {
            if up {
                if let Some(d) = st.parked.remove(&end) {
                    st.tx.insert(end, d);
                }
            } else if let Some(d) = st.tx.remove(&end) {
                st.parked.insert(end, d);
            }
        }
        for (n, q) in [(ni, port), (ri, rp)] {
            if let Some(x) = st.fabric.nodes[n].ports.iter_mut().find(|x| x.num == q) {
                x.state = Some(if up {
                    ib::PortState::Active
                } else {
                    ib::PortState::Down
                });
                x.phys_state = Some(if up {
                    PhysState::LinkUp
                } else {
                    PhysState::Polling
                });
                if up {
                    (x.width, x.speed) = st.down_links.remove(&(n, q)).unwrap_or_default();
                } else {
                    st.down_links
                        .insert((n, q), (x.width.take(), x.speed.take()));
                }
                x.fec = x.speed.map(ib::FecMode::simulated);
            }
        }
        true
    }

    /// Retrain the link at (`guid`, `port`) at `width` and `speed` (both
    /// ends; None: not known), as a link that came up below what its ends
    /// support does, or recovers. Its FEC follows the speed. False when
    /// there is no such port or it has no link.
    pub fn set_link_rate(
        &self,
        guid: Guid,
        port: u8,
        width: Option<LinkWidth>,
        speed: Option<LinkSpeed>,
    ) -> bool {
        let mut st = self.lock();
        let Some((ni, ri, rp)) = st.link_ends(guid, port) else {
            return false;
        };
        for (n, q) in [(ni, port), (ri, rp)] {
            if let Some(x) = st.fabric.nodes[n].ports.iter_mut().find(|x| x.num == q) {
                (x.width, x.speed) = (width, speed);
                x.fec = speed.map(ib::FecMode::simulated);
            }
        }
        true
    }

    /// From now on (`guid`, `port`) receives `per_s` symbol errors a
    /// second (what it counted so far stays). False when there is no such
    /// port or it has no link.
    pub fn set_symbol_error_rate(&self, guid: Guid, port: u8, per_s: f64) -> bool {
        let mut st = self.lock();
        let Some((ni, ri, rp)) = st.link_ends(guid, port) else {
            return false;
        };
        let now = st.now_ns();
        let t = st.totals(ni, port, now);
        let seg = st.segments.entry((ni, port)).or_default();
        seg.base = t;
        seg.since_ns = now;
        // The errors a port sees are its peer's transmit direction's.
        let micro = (per_s.max(0.0) * 1e6) as u64;
        let st = &mut *st;
        if let Some(d) = st.parked.get_mut(&(ri, rp)) {
            d.symbol_micro = micro;
        } else if st.fabric.nodes[ni].port(port).and_then(|p| p.state)
            == Some(ib::PortState::Active)
        {
            // A link without traffic gets directions that carry none.
            st.tx.entry((ni, port)).or_default();
            st.tx.entry((ri, rp)).or_default().symbol_micro = micro;
        }
        true
    }

    /// Add `n` to counter `counter` (a [`traffic::q`] index) of (`guid`,
    /// `port`), as if the port had seen that many events. False when there
    /// is no such port.
    pub fn add_errors(&self, guid: Guid, port: u8, counter: usize, n: u64) -> bool {
        let mut st = self.lock();
        let Ok(ni) = st.fabric.nodes.binary_search_by_key(&guid, |x| x.id.guid) else {
            return false;
        };
        if st.fabric.nodes[ni].port(port).is_none() || counter >= traffic::q::COUNT {
            return false;
        }
        let seg = st.segments.entry((ni, port)).or_default();
        seg.base[counter] = seg.base[counter].saturating_add(n);
        true
    }

    /// Ports whose transmit direction is congested (XmitWait grows there).
    pub fn congested_ports(&self) -> Vec<(Guid, u8)> {
        let st = self.lock();
        let mut v: Vec<(Guid, u8)> = st
            .tx
            .iter()
            .filter(|(_, d)| d.congested())
            .filter_map(|(&(ni, p), _)| st.fabric.nodes.get(ni).map(|n| (n.id.guid, p)))
            .collect();
        v.sort();
        v
    }

    /// Handles one MAD sent to `lid` of the first plane; `None` when
    /// nothing answers (unknown LID, unreachable node, not a PerfMgt
    /// request).
    pub fn handle(&self, lid: u16, mad: &[u8; MAD_SIZE]) -> Option<[u8; MAD_SIZE]> {
        self.handle_in(0, lid, mad)
    }

    /// Handles one MAD sent to `lid` of plane `plane`, as [`Self::handle`].
    pub fn handle_in(
        &self,
        plane: usize,
        lid: u16,
        mad: &[u8; MAD_SIZE],
    ) -> Option<[u8; MAD_SIZE]> {
        let mut st = self.lock();
        let &(ni, port) = st.lids.get(plane)?.get(&lid)?;
        let node = st.fabric.nodes.get(ni)?;
        if st.unreachable.contains(&node.id.guid) {
            return None;
        }
        // A channel adapter port whose link is down cannot be reached.
        if port != 0
            && node
                .port(port)
                .is_some_and(|p| p.state == Some(ib::PortState::Down))
        {
            return None;
        }
        pma::answer(&mut st, ni, port, mad)
    }

    /// A MAD transport over the first plane with its own reply queue.
    pub fn transport(&self) -> SimTransport {
        SimTransport::new(self.clone())
    }
}

/// Keeps valid LIDs from the topology, unique in their plane, and assigns
/// the rest from 1, per plane.
fn assign_lids(fabric: &mut Fabric, planes: &Planes) -> Vec<HashMap<u16, (usize, u8)>> {
    let mut want: Vec<Vec<(usize, u8)>> = vec![Vec::new(); planes.count()];
    for (ni, n) in fabric.nodes.iter().enumerate() {
        if n.id.node_type == NodeType::Switch {
            want[planes.of_node(ni)].push((ni, 0));
        } else {
            for p in &n.ports {
                want[planes.of_port(ni, p.num)].push((ni, p.num));
            }
        }
    }
    want.into_iter()
        .map(|w| assign_plane_lids(fabric, &w))
        .collect()
}

/// [`assign_lids`] for the PMAs of one plane, `want`.
fn assign_plane_lids(fabric: &mut Fabric, want: &[(usize, u8)]) -> HashMap<u16, (usize, u8)> {
    const MAX_UNICAST: u16 = 0xBFFF;
    let mut map: HashMap<u16, (usize, u8)> = HashMap::new();
    let given = |f: &Fabric, ni: usize, p: u8| -> u16 {
        let n = &f.nodes[ni];
        if p == 0 {
            n.id.lid
        } else {
            n.port(p).map_or(0, |x| x.lid)
        }
    };
    let mut missing = Vec::new();
    for &(ni, p) in want {
        let lid = given(fabric, ni, p);
        if (1..=MAX_UNICAST).contains(&lid) && !map.contains_key(&lid) {
            map.insert(lid, (ni, p));
        } else {
            missing.push((ni, p));
        }
    }
    let mut next: u16 = 1;
    for (ni, p) in missing {
        while map.contains_key(&next) && next < MAX_UNICAST {
            next += 1;
        }
        if map.contains_key(&next) {
            break; // LID space exhausted: the rest stay unaddressable
        }
        map.insert(next, (ni, p));
    }
    for (&lid, &(ni, p)) in &map {
        let n = &mut fabric.nodes[ni];
        if p == 0 {
            n.id.lid = lid;
            for port in &mut n.ports {
                port.lid = lid;
            }
        } else {
            if let Some(port) = n.ports.iter_mut().find(|x| x.num == p) {
                port.lid = lid;
            }
            if n.ports.first().map(|x| x.num) == Some(p) {
                n.id.lid = lid;
            }
        }
    }
    map
}
