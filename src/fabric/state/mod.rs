//! What the agent has learned about each node, shared by the sweeper and the
//! write path, and turned into snapshots for the cache. Its fields are its
//! own: the rest of the agent asks through its methods, grouped by idea:
//! - here: the nodes by index and by GUID, their PMAs' addresses, the
//!   sweep's settings and figures;
//! - answers.rs: what each node and kind of node answers, reachability, what
//!   a sweep asks of each node;
//! - readings.rs: replies, DOCA samples and writes folded into the records,
//!   the totals of the state file;
//! - merge.rs: a rediscovered fabric merged in, every node keeping its index;
//! - forget.rs: nodes silent for `forget_after` forgotten;
//! - publish.rs: the records into the cache;
//! - slot.rs: which reading a reply is.

use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};
use std::time::{Duration, Instant};

use super::cache::SweepFigures;
use super::record::{NodeRecord, PortRecord, Readings, Stamp};
use super::settings::SweepConfig;
use super::strikes::{AttrMask, KindKey, KindState, NodeAnswers};
use crate::ib::subnet::SubnetView;
use crate::ib::{Fabric, Node};
use crate::pm::ClassPortInfo;
use crate::transport::MadAddr;

mod answers;
mod forget;
mod merge;
mod publish;
mod readings;
mod slot;
#[cfg(test)]
pub(crate) mod tests;

pub use forget::Forgotten;
pub use merge::MergeReport;
pub use slot::{PackedSlot, Slot};

/// A sweep that copied node records holding this many port records (it
/// changed records the published snapshot shares; a switch of 64 ports
/// counts 64), or a 32nd of the fabric's ports when that is more,
/// publishes what it has: the copies then replace the records they were
/// made from instead of adding to them, and a sweep holds two versions of
/// a bounded share of the ports at most (at 48,000 nodes a publication
/// takes 2 - 6 ms, and so does the heap trim the sweeper makes after it:
/// about 32 of each a sweep).
const PUBLISH_AFTER_PORTS: usize = 4096;

struct NodeState {
    /// The PMA's address after a ClassPortInfo redirect.
    redirect: Option<Box<MadAddr>>,
    /// Its [`Flag`]s.
    flags: u8,
    failed_sweeps: u32,
    /// What it answers of the sample mechanism and the optional
    /// attributes, and what not.
    answers: NodeAnswers,
    samples_at: Option<Stamp>,
    /// Bits of the answers' `optional_unsupported` already said in the
    /// log.
    optional_reported: AttrMask,
    /// The node's index into [`FabricState::kinds`].
    kind: u32,
    /// The node's record, shared with the published snapshot: its ports
    /// are updated in place (copied first when the snapshot shares it);
    /// the node's own fields are brought up to date when it is published.
    rec: Arc<NodeRecord>,
    /// When its PMA last answered (or DOCA delivered a sample), or when
    /// the node was added, in whole seconds from the records' origin
    /// (rounded up, [`answered_secs`]): what [`FabricState::forget_silent`]
    /// counts from (`fabric.forget_after` is whole seconds).
    answered_s: u32,
}

/// The yes/no facts of a node's state, a bit each of [`NodeState::flags`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Flag {
    /// ClassPortInfo is asked at the next sweep (none read yet, or the
    /// node came back): the record's reading is not to be relied on.
    CpiStale = 1,
    /// Ever answered anything (a node that never did has no rows).
    Seen = 2,
    /// Some port is served by DOCA telemetry diag.
    Doca = 4,
    /// DOCA delivered a sample since the last sweep ended.
    DocaFresh = 8,
    /// A field the record takes from this state changed since.
    Dirty = 16,
}

/// `at` as [`NodeState::answered_s`] keeps it: whole seconds from the
/// records' origin, rounded up (a node is never taken as silent for
/// longer than it was).
fn answered_secs(at: Instant) -> u32 {
    u32::try_from(Stamp::from(at).millis().div_ceil(1000)).unwrap_or(u32::MAX)
}

/// How long before `now` a node that answered at `answered_s` did.
fn silent_since(answered_s: u32, now: Instant) -> Duration {
    Duration::from_millis(
        Stamp::from(now)
            .millis()
            .saturating_sub(u64::from(answered_s) * 1000),
    )
}

/// The bytes a node's state takes (besides its record and what it points
/// to): one array of them holds every node's.
const NODE_STATE_BYTES: usize = 80;
const _: () = assert!(size_of::<NodeState>() <= NODE_STATE_BYTES);

pub struct FabricState {
    cfg: SweepConfig,
    /// Each node by its index, which it keeps for as long as the agent
    /// runs (a merge appends the nodes it finds new), so that a write or
    /// a sample poll in flight across a merge lands on its node. Its
    /// record holds the node's identity and link facts: the fabric model.
    nodes: Vec<NodeState>,
    /// The node indexes in GUID order.
    by_guid: Vec<u32>,
    sweep_no: u64,
    /// The last sweep's figures, published with each snapshot.
    figures: SweepFigures,
    /// A newly discovered fabric, merged by the sweeper between sweeps.
    pending: Option<Fabric>,
    /// Port records in the node records copied since the last
    /// publication.
    copies: usize,
    /// How many make a publication due ([`PUBLISH_AFTER_PORTS`]).
    copy_budget: usize,
    /// The per-node readings, shared between nodes that answer the same.
    readings: Readings,
    /// What each kind of node showed ([`NodeState::kind`] indexes it).
    kinds: Vec<(KindKey, KindState)>,
    /// Bumped each time nodes are forgotten ([`FabricState::epoch`]).
    epoch: u64,
    /// The nodes forgotten since the last publication, which it carries.
    forgotten: Vec<crate::ib::Guid>,
    /// The generation of the node-name-map every node's record is named
    /// by (0: none yet); a node added since is named as it is added.
    names_gen: u64,
    /// The subnet the state is of: what its publications say of it
    /// ([`Snapshot::subnets`](super::cache::Snapshot::subnets)) and the
    /// index its port records carry.
    subnet: SubnetView,
}

impl NodeState {
    /// A node of subnet `subnet` added at `now`.
    fn new(node: &Node, subnet: u8, now: Instant) -> NodeState {
        NodeState {
            redirect: None,
            flags: Flag::CpiStale as u8 | Flag::Dirty as u8,
            failed_sweeps: 0,
            answers: NodeAnswers::default(),
            samples_at: None,
            optional_reported: 0,
            kind: 0,
            rec: Arc::new(NodeRecord::new(node).in_subnet(subnet)),
            answered_s: answered_secs(now),
        }
    }

    fn has(&self, flag: Flag) -> bool {
        self.flags & flag as u8 != 0
    }

    fn set(&mut self, flag: Flag, on: bool) {
        if on {
            self.flags |= flag as u8;
        } else {
            self.flags &= !(flag as u8);
        }
    }

    /// Whether `flag` was set; it is not now.
    fn take(&mut self, flag: Flag) -> bool {
        let was = self.has(flag);
        self.set(flag, false);
        was
    }

    /// The ClassPortInfo read from the node, unless it is to be asked
    /// again.
    fn cpi(&self) -> Option<&ClassPortInfo> {
        if self.has(Flag::CpiStale) {
            return None;
        }
        self.rec.class_port_info.as_deref()
    }

    /// The node's record, to change (copied first when the published
    /// snapshot shares it, counted in `copies`).
    fn rec_mut(&mut self, copies: &mut usize) -> &mut NodeRecord {
        if Arc::get_mut(&mut self.rec).is_none() {
            *copies += self.rec.port_count().max(1);
        }
        Arc::make_mut(&mut self.rec)
    }

    /// Port `pi`'s record, to change (copied first when the published
    /// snapshot shares it, counted in `copies`).
    fn port(&mut self, pi: usize, copies: &mut usize) -> Option<&mut PortRecord> {
        if pi >= self.rec.port_count() {
            return None;
        }
        self.rec_mut(copies).ports_mut().get_mut(pi)
    }
}

impl FabricState {
    /// Give every port's record the assessment of its link against the
    /// port at its far end in the fabric model ([`crate::ib::Port::assess`]):
    /// after the model's link facts changed (start, a merge that changed
    /// ports). Only records whose assessment changed are touched.
    fn assess_links(&mut self) {
        for ni in 0..self.nodes.len() {
            for pi in 0..self.nodes[ni].rec.port_count() {
                let Some(p) = self.nodes[ni].rec.ports().nth(pi) else {
                    continue;
                };
                let peer = p
                    .link
                    .remote()
                    .and_then(|(g, q)| Some(&self.nodes[self.node_index(g)?].rec.port(q)?.link));
                let a = p.link.assess(peer);
                if p.assessment == a {
                    continue;
                }
                let s = &mut self.nodes[ni];
                if let Some(r) = s.port(pi, &mut self.copies) {
                    r.assessment = a;
                    s.set(Flag::Dirty, true);
                }
            }
        }
    }
}

/// What merges a member's publications with the other subnets' (the
/// federation, [`super::federation::Federation`]): the state is told of it,
/// not built on it.
pub trait Merges: Send + Sync {
    /// Merge the members' latest snapshots into the public one.
    fn merge(&self);
}

/// The state, shared by the sweeper and the write path (and, with
/// several subnets, the federation it is a member of).
#[derive(Clone)]
pub struct SharedState {
    state: Arc<Mutex<FabricState>>,
    /// The federation that merges what this state publishes
    /// ([`SharedState::join`]).
    member_of: Arc<OnceLock<Weak<dyn Merges>>>,
}

impl SharedState {
    /// The state of `fabric`, discovered at `discovered`.
    pub fn new(mut fabric: Fabric, cfg: SweepConfig, discovered: Instant) -> Self {
        fabric.sort();
        let nodes: Vec<NodeState> = fabric
            .nodes
            .iter()
            .map(|n| NodeState::new(n, 0, discovered))
            .collect();
        let mut st = FabricState {
            cfg,
            by_guid: (0..nodes.len() as u32).collect(),
            nodes,
            sweep_no: 0,
            figures: SweepFigures {
                discovered: Some(discovered),
                ..Default::default()
            },
            pending: None,
            copies: 0,
            copy_budget: PUBLISH_AFTER_PORTS,
            readings: Readings::default(),
            kinds: Vec::new(),
            epoch: 0,
            forgotten: Vec::new(),
            names_gen: 0,
            subnet: SubnetView::default(),
        };
        st.assign_kinds();
        st.assess_links();
        SharedState {
            state: Arc::new(Mutex::new(st)),
            member_of: Arc::default(),
        }
    }

    /// Publish as a member of `fed`: each driver that published into the
    /// member's cache merges the members then ([`Self::published`]).
    /// Once set, it stays.
    pub fn join<M: Merges + 'static>(&self, fed: &Arc<M>) {
        let fed: Weak<dyn Merges> = Arc::downgrade(fed) as Weak<dyn Merges>;
        let _ = self.member_of.set(fed);
    }

    /// What a driver (sweeper, write path, DOCA sampler) calls after it
    /// published, with the state's lock let go: with several subnets the
    /// federation merges the members' snapshots into the public one;
    /// with one, nothing.
    pub fn published(&self) {
        if let Some(fed) = self.member_of.get().and_then(Weak::upgrade) {
            fed.merge();
        }
    }

    /// The state of a subnet: its port records carry `view.index`, and
    /// its publications say `view` of it.
    pub fn in_subnet(self, view: SubnetView) -> Self {
        self.lock().set_subnet(view);
        self
    }

    /// Lock the state (a poisoned lock still holds consistent data: every
    /// update is a plain field store).
    pub fn lock(&self) -> MutexGuard<'_, FabricState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl FabricState {
    /// The fabric as the agent knows it, nodes in GUID order (a copy:
    /// what a PortInfo refresh reads again).
    pub fn fabric(&self) -> Fabric {
        Fabric {
            nodes: self.by_guid().map(|ni| self.node(ni).to_node()).collect(),
        }
    }

    /// How many nodes the state has: their indexes are `0..node_count()`.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Node `ni`'s record: its identity, its ports' link facts and what
    /// was read of it.
    pub fn node(&self, ni: usize) -> &NodeRecord {
        &self.nodes[ni].rec
    }

    /// The node indexes in GUID order.
    pub fn by_guid(&self) -> impl Iterator<Item = usize> + '_ {
        self.by_guid.iter().map(|&ni| ni as usize)
    }

    pub fn node_index(&self, guid: crate::ib::Guid) -> Option<usize> {
        let k = self
            .by_guid
            .binary_search_by_key(&guid, |&ni| self.nodes[ni as usize].rec.id.guid)
            .ok()?;
        Some(self.by_guid[k] as usize)
    }

    /// The index of port `num` among node `ni`'s ports.
    pub fn port_position(&self, ni: usize, num: u8) -> Option<usize> {
        self.nodes.get(ni)?.rec.ports().position(|p| p.num() == num)
    }

    /// The indexes of port `num` of node `guid`: (node, port).
    pub fn port_index(&self, guid: crate::ib::Guid, num: u8) -> Option<(usize, usize)> {
        let ni = self.node_index(guid)?;
        Some((ni, self.port_position(ni, num)?))
    }

    /// Hand over a newly discovered fabric; the sweeper merges it before
    /// its next sweep.
    pub fn offer(&mut self, fabric: Fabric) {
        self.pending = Some(fabric);
    }

    /// The fabric handed over by [`Self::offer`] and not merged yet.
    pub fn take_pending(&mut self) -> Option<Fabric> {
        self.pending.take()
    }

    /// The sweep's settings.
    pub fn config(&self) -> &SweepConfig {
        &self.cfg
    }

    /// The number of the sweep under way (or the last one).
    pub fn sweep_no(&self) -> u64 {
        self.sweep_no
    }

    /// The optional attributes are asked this sweep (every
    /// `optional_every` sweeps from the first, when they are asked at all).
    pub fn optional_due(&self) -> bool {
        self.cfg.optional_attributes
            && self
                .sweep_no
                .saturating_sub(1)
                .is_multiple_of(u64::from(self.cfg.optional_every.max(1)))
    }

    /// The ClassPortInfo read from node `ni`, unless it is to be asked
    /// again.
    pub fn cpi(&self, ni: usize) -> Option<&ClassPortInfo> {
        self.nodes[ni].cpi()
    }

    /// What node `ni` answers of the sample mechanism and the optional
    /// attributes, and what not.
    pub(crate) fn answers(&self, ni: usize) -> &NodeAnswers {
        &self.nodes[ni].answers
    }

    /// The same, to change (tests: as a write or a strike would).
    #[cfg(test)]
    pub(crate) fn answers_mut(&mut self, ni: usize) -> &mut NodeAnswers {
        &mut self.nodes[ni].answers
    }

    /// The per-node readings' interners (tests: what they hold).
    #[cfg(test)]
    pub(crate) fn readings(&self) -> &Readings {
        &self.readings
    }

    /// What the state's publications say of its subnet.
    pub fn subnet(&self) -> &SubnetView {
        &self.subnet
    }

    /// Say `view` of the subnet from the next publication on (its SM, its
    /// local ports); a new index is stamped on every port record.
    pub fn set_subnet(&mut self, view: SubnetView) {
        if view.index != self.subnet.index {
            for s in &mut self.nodes {
                if s.rec.ports().any(|p| p.subnet != view.index) {
                    let rec = Arc::make_mut(&mut s.rec);
                    for p in rec.ports_mut() {
                        p.subnet = view.index;
                    }
                }
            }
        }
        self.subnet = view;
    }

    /// The figures of the sweep that ended at `ended` after `elapsed`,
    /// for the agent's scalars.
    pub fn sweep_figures(&mut self, ended: Instant, elapsed: Duration, mads: u64, timeouts: u64) {
        self.figures.ended = Some(ended);
        self.figures.duration_ms = elapsed.as_millis() as u64;
        self.figures.mads = mads;
        self.figures.timeouts = timeouts;
    }

    /// The address of the node's PMA; for a CA, the PMA of the port at index
    /// `port` (None: the first port with a LID).
    pub fn pma(&self, ni: usize, port: Option<usize>) -> Option<MadAddr> {
        let s = &self.nodes[ni];
        if let Some(r) = s.redirect.as_deref().copied() {
            return Some(r);
        }
        let id = &s.rec.id;
        let lid = match port {
            Some(pi) => id.pma_lid(Some(&s.rec.ports().nth(pi)?.link)),
            // A port with a link first: a channel adapter whose port 1 is
            // down (or on another plane) answers through the port that
            // is up.
            None => {
                let lid = |p: &&PortRecord| id.pma_lid(Some(&p.link));
                s.rec
                    .ports()
                    .filter(|p| p.link.remote_port != 0)
                    .map(|p| lid(&p))
                    .find(|&l| l != 0)
                    .or_else(|| s.rec.ports().map(|p| lid(&p)).find(|&l| l != 0))?
            }
        };
        (lid != 0).then(|| MadAddr::gsi(lid))
    }
}
