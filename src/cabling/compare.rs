//! The comparison of the fabric as found with its plan: a pure evaluator
//! (no clock, no I/O: the time is passed in) fed the published snapshot
//! when discovery changed it (and on start), keeping verdicts with the
//! health evaluator's rules: both ends of a link carry one, each with since
//! when, last seen and how often raised, cleared only after the recovery
//! window without it.
//!
//! Per planned port: **missing** (not up: the node absent or the port
//! down), **miswired** (up to another node or port than planned),
//! **wrong rate** (up at another width or speed than the plan says). Per
//! port found up that the plan has no link for: **unplanned link**. Per
//! node: **absent** (planned, not found) and **unplanned** (found, not
//! planned).
//!
//! What it keeps is compact: the plan compiled into one array of every
//! planned port ([`PORT_BYTES`] each, its peer an index into the planned
//! nodes), the nodes beside it; a port has no state of its own beyond a
//! verdict entry while it has one. With no plan file the fabric as first
//! found is the plan (the baseline): it takes in a node or a cable where it
//! had none, and reports a cable whose peer changed (moved) or that went.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::fabric::cache::Snapshot;
use crate::fabric::record::{NodeRecord, PortRecord};
use crate::ib::cabling::{
    Mismatch, NodeRef, Plan, PlanEnd, PlanSource, PlanVerdict, PlanVerdicts, PlannedLink,
    PlannedNode,
};
use crate::ib::{Guid, LinkSpeed, LinkWidth, NodeType, PortState};

/// What the comparison is told (the `[health]` section's recovery and
/// forget_after: a mismatch is a verdict like a link's health).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompareConfig {
    /// How long a mismatch must stay gone before its verdict clears.
    pub recovery: Duration,
    /// How long a cleared verdict's raised count is remembered.
    pub forget_after: Duration,
}

impl Default for CompareConfig {
    fn default() -> Self {
        CompareConfig {
            recovery: Duration::from_secs(900),
            forget_after: Duration::from_secs(86_400),
        }
    }
}

/// One planned port: its peer (an index into the planned nodes), the port
/// numbers, and the width and speed planned (their MIB values, 0: the plan
/// does not say). A planned node's ports are a run of these, by number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct PlanPort {
    peer: u32,
    port: u8,
    peer_port: u8,
    width: u8,
    speed: u8,
}

/// The bytes one planned port takes.
pub const PORT_BYTES: usize = 8;
const _: () = assert!(size_of::<PlanPort>() <= PORT_BYTES);

/// One planned node (16 bytes): its GUID (0 for a node the plan names
/// by name), its ports (the entries of [`Compiled::ports`] from `start` to
/// the next node's), and its name (the bytes of [`Compiled::names`] from
/// its `name`'s offset to the next node's: the name it is matched by, for
/// a plan by name; the plan's name for people, for a plan by GUID).
#[derive(Clone, Copy, Debug, Default)]
struct PlanNodeC {
    guid: Guid,
    start: u32,
    /// The name's offset ([`NAME_AT`]), the [`NodeType`] as 1 CA, 2
    /// switch, 3 router, 0 not said ([`NODE_TYPE_SHIFT`]), and [`BY_NAME`].
    name: u32,
}

/// [`PlanNodeC::name`]: the offset of the node's name, in the low bits
/// (names are cut where they would end past it).
const NAME_AT: u32 = (1 << 29) - 1;
const NODE_TYPE_SHIFT: u32 = 29;
/// [`PlanNodeC::name`]: the plan names the node by name.
const BY_NAME: u32 = 1 << 31;

impl PlanNodeC {
    fn name_at(&self) -> usize {
        (self.name & NAME_AT) as usize
    }

    fn by_name(&self) -> bool {
        self.name & BY_NAME != 0
    }

    fn node_type(&self) -> u8 {
        ((self.name >> NODE_TYPE_SHIFT) & 3) as u8
    }
}

/// The bytes one planned node takes, besides its name.
pub const NODE_BYTES: usize = 16;
const _: () = assert!(size_of::<PlanNodeC>() <= NODE_BYTES);

/// A plan in the form the comparison walks.
#[derive(Clone, Debug)]
struct Compiled {
    source: PlanSource,
    nodes: Vec<PlanNodeC>,
    ports: Vec<PlanPort>,
    /// Every node's name, one after the other.
    names: String,
    links: u32,
}

impl Compiled {
    fn new(plan: &Plan) -> Compiled {
        let mut index: HashMap<&NodeRef, u32> = HashMap::with_capacity(plan.nodes.len());
        let mut nodes: Vec<PlanNodeC> = Vec::with_capacity(plan.nodes.len());
        let mut names = String::new();
        let mut add = |n: &'_ PlannedNode, nodes: &mut Vec<PlanNodeC>| {
            let (guid, by_name, name) = match &n.node {
                NodeRef::Guid(g) => (*g, false, n.name.as_deref().unwrap_or("")),
                NodeRef::Name(s) => (Guid(0), true, &**s),
            };
            // Cut at a character within the bounds (names are bounded
            // where a plan is read).
            let room = (NAME_AT as usize).saturating_sub(names.len());
            let mut end = name.len().min(usize::from(u16::MAX)).min(room);
            while !name.is_char_boundary(end) {
                end -= 1;
            }
            let node_type = u32::from(n.node_type.map_or(0, NodeType::code) & 3);
            nodes.push(PlanNodeC {
                guid,
                start: 0,
                name: names.len() as u32
                    | (node_type << NODE_TYPE_SHIFT)
                    | if by_name { BY_NAME } else { 0 },
            });
            names.push_str(&name[..end]);
        };
        for n in &plan.nodes {
            if !index.contains_key(&n.node) {
                index.insert(&n.node, nodes.len() as u32);
                add(n, &mut nodes);
            }
        }
        // A link's ends the node list lacks are nodes of the plan too.
        for l in &plan.links {
            for end in [&l.a, &l.z] {
                if !index.contains_key(&end.node) {
                    index.insert(&end.node, nodes.len() as u32);
                    let n = PlannedNode {
                        node: end.node.clone(),
                        node_type: None,
                        name: None,
                        line: l.line,
                    };
                    add(&n, &mut nodes);
                }
            }
        }
        let mut ends: Vec<(u32, PlanPort)> = Vec::with_capacity(plan.links.len() * 2);
        for l in &plan.links {
            let (a, z) = (index[&l.a.node], index[&l.z.node]);
            let width = l.width.map_or(0, |w| w.mib() as u8);
            let speed = l.speed.map_or(0, |s| s.mib() as u8);
            ends.push((
                a,
                PlanPort {
                    peer: z,
                    port: l.a.port,
                    peer_port: l.z.port,
                    width,
                    speed,
                },
            ));
            ends.push((
                z,
                PlanPort {
                    peer: a,
                    port: l.z.port,
                    peer_port: l.a.port,
                    width,
                    speed,
                },
            ));
        }
        // A port planned twice keeps its first link (the parsers refuse
        // such a plan; a baseline never has one).
        ends.sort_by_key(|&(n, p)| (n, p.port));
        ends.dedup_by_key(|&mut (n, p)| (n, p.port));
        let mut ports = Vec::with_capacity(ends.len());
        let mut k = 0;
        for (i, n) in nodes.iter_mut().enumerate() {
            n.start = ports.len() as u32;
            while k < ends.len() && ends[k].0 == i as u32 {
                ports.push(ends[k].1);
                k += 1;
            }
        }
        names.shrink_to_fit();
        Compiled {
            source: plan.source,
            nodes,
            ports,
            names,
            links: plan.links.len() as u32,
        }
    }

    /// How the plan names node `i`.
    fn node_ref(&self, i: usize) -> NodeRef {
        let n = &self.nodes[i];
        if n.by_name() {
            NodeRef::Name(Arc::from(self.name(i).unwrap_or("")))
        } else {
            NodeRef::Guid(n.guid)
        }
    }

    /// Node `i`'s name in the plan, if it has one.
    fn name(&self, i: usize) -> Option<&str> {
        let at = self.nodes[i].name_at();
        let end = self
            .nodes
            .get(i + 1)
            .map_or(self.names.len(), PlanNodeC::name_at);
        self.names.get(at..end).filter(|s| !s.is_empty())
    }

    fn node_type(&self, i: usize) -> Option<NodeType> {
        NodeType::from_code(self.nodes[i].node_type())
    }

    fn node_ports(&self, i: usize) -> &[PlanPort] {
        let start = self.nodes[i].start as usize;
        let end = self
            .nodes
            .get(i + 1)
            .map_or(self.ports.len(), |n| n.start as usize);
        self.ports.get(start..end).unwrap_or_default()
    }

    /// The plan this was compiled from (each link once, from its lower
    /// end).
    fn to_plan(&self) -> Plan {
        let mut links = Vec::with_capacity(self.ports.len() / 2);
        for i in 0..self.nodes.len() {
            for p in self.node_ports(i) {
                if (i as u32, p.port) > (p.peer, p.peer_port) {
                    continue;
                }
                links.push(PlannedLink {
                    a: PlanEnd {
                        node: self.node_ref(i),
                        port: p.port,
                    },
                    z: PlanEnd {
                        node: self.node_ref(p.peer as usize),
                        port: p.peer_port,
                    },
                    width: LinkWidth::from_mib(p.width.into()),
                    speed: LinkSpeed::from_mib(p.speed.into()),
                    line: 0,
                });
            }
        }
        Plan {
            source: self.source,
            nodes: (0..self.nodes.len())
                .map(|i| PlannedNode {
                    node: self.node_ref(i),
                    node_type: self.node_type(i),
                    name: (!self.nodes[i].by_name())
                        .then(|| self.name(i).map(Arc::from))
                        .flatten(),
                    line: 0,
                })
                .collect(),
            links,
        }
    }
}

/// A verdict entry: published while `live`; a cleared one is remembered
/// (for its raised count) until `forget_after`.
#[derive(Clone, Debug)]
struct Entry {
    v: PlanVerdict,
    live: bool,
}

/// A verdict raised or cleared by one evaluation: what the driver hands to
/// the event log and the log lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanChange {
    Raised(PlanVerdict),
    Cleared(PlanVerdict),
}

/// What one evaluation gives.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub verdicts: PlanVerdicts,
    pub changes: Vec<PlanChange>,
}

/// The comparison: the plan and the verdicts between evaluations.
pub struct Comparison {
    cfg: CompareConfig,
    plan: Option<Compiled>,
    /// Sorted by [`PlanVerdict::key`].
    entries: Vec<Entry>,
    /// The discovery the last comparison was made of.
    discovered: Option<Option<Instant>>,
    last_sweep: u64,
    /// The baseline took in something new since it was last taken.
    baseline_changed: bool,
    planned_nodes: u32,
}

/// The found port's link when it is up: its peer, width and speed.
fn up(p: &PortRecord) -> Option<(Guid, u8)> {
    let l = &p.link;
    let down = matches!(l.state, Some(PortState::Down));
    l.remote().filter(|_| !down)
}

impl Comparison {
    /// A comparison with `plan`, or with none yet: the fabric as first
    /// found becomes the baseline.
    pub fn new(cfg: CompareConfig, plan: Option<&Plan>) -> Comparison {
        let plan = plan.map(Compiled::new);
        Comparison {
            cfg,
            planned_nodes: plan.as_ref().map_or(0, |p| p.nodes.len() as u32),
            plan,
            entries: Vec::new(),
            discovered: None,
            last_sweep: 0,
            baseline_changed: false,
        }
    }

    pub fn config(&self) -> &CompareConfig {
        &self.cfg
    }

    /// Compare with another plan from the next evaluation on (the verdicts
    /// carry over by key).
    pub fn set_plan(&mut self, plan: &Plan) {
        let c = Compiled::new(plan);
        self.planned_nodes = c.nodes.len() as u32;
        self.plan = Some(c);
        self.discovered = None;
    }

    /// The plan compared with (the baseline, when there is no plan file).
    pub fn plan(&self) -> Option<Plan> {
        self.plan.as_ref().map(Compiled::to_plan)
    }

    /// Whether the baseline took in something since the last call (the
    /// driver then saves it).
    pub fn take_baseline_changed(&mut self) -> bool {
        std::mem::take(&mut self.baseline_changed)
    }

    /// The bytes the compiled plan holds (its ports' and nodes' arrays),
    /// not counting verdict entries.
    pub fn plan_bytes(&self) -> usize {
        self.plan.as_ref().map_or(0, |p| {
            p.ports.capacity() * size_of::<PlanPort>()
                + p.nodes.capacity() * size_of::<PlanNodeC>()
                + p.names.capacity()
        })
    }

    /// The ports the plan has.
    pub fn planned_ports(&self) -> usize {
        self.plan.as_ref().map_or(0, |p| p.ports.len())
    }

    /// Evaluate a published snapshot at `now` (wall-clock milliseconds).
    /// The fabric is compared when discovery changed it since the last
    /// comparison (and at the first); otherwise only the recovering
    /// verdicts move on. None when nothing changed.
    pub fn evaluate(&mut self, snap: &Snapshot, now: u64) -> Option<Outcome> {
        if snap.sweep == 0 {
            return None;
        }
        let changed = self.discovered != Some(snap.stats.discovered);
        if !changed {
            if !self.entries.iter().any(|e| !e.v.standing || !e.live) {
                return None;
            }
            let changes = self.step(Vec::new(), now, false);
            self.last_sweep = snap.sweep;
            return (!changes.is_empty()).then(|| self.outcome(now, changes));
        }
        self.discovered = Some(snap.stats.discovered);
        self.last_sweep = snap.sweep;
        if self.plan.is_none() {
            let base = baseline(snap);
            self.planned_nodes = base.nodes.len() as u32;
            self.plan = Some(Compiled::new(&base));
            self.baseline_changed = true;
        }
        let observed = self.observe(snap, now);
        let changes = self.step(observed, now, true);
        Some(self.outcome(now, changes))
    }

    fn outcome(&self, now: u64, changes: Vec<PlanChange>) -> Outcome {
        let verdicts: Vec<PlanVerdict> = self
            .entries
            .iter()
            .filter(|e| e.live)
            .map(|e| e.v.clone())
            .collect();
        Outcome {
            verdicts: PlanVerdicts {
                sweep: self.last_sweep,
                source: self.plan.as_ref().map(|p| p.source),
                verdicts: verdicts.into(),
                at: now,
                planned_nodes: self.planned_nodes,
                planned_links: self.plan.as_ref().map_or(0, |p| p.links),
            },
            changes,
        }
    }

    /// The mismatches the snapshot shows, sorted by key (the baseline
    /// takes in what it lacked first).
    fn observe(&mut self, snap: &Snapshot, now: u64) -> Vec<PlanVerdict> {
        let Some(plan) = &self.plan else {
            return Vec::new();
        };
        let guids = resolve(plan, snap);
        if plan.source == PlanSource::Baseline
            && let Some(grown) = learn(plan, &guids, snap)
        {
            self.planned_nodes = grown.nodes.len() as u32;
            self.plan = Some(Compiled::new(&grown));
            self.baseline_changed = true;
            return self.observe(snap, now);
        }
        let mut order: Vec<u32> = (0..plan.nodes.len() as u32)
            .filter(|&i| guids[i as usize].is_some())
            .collect();
        order.sort_unstable_by_key(|&i| guids[i as usize]);
        let ctx = Ctx {
            plan,
            guids: &guids,
            snap,
            now,
        };
        let mut out = Vec::new();
        let mut planned = order.iter().peekable();
        for rec in &snap.nodes {
            let guid = rec.id.guid;
            while let Some(&&i) = planned.peek() {
                if guids[i as usize].is_some_and(|g| g < guid) {
                    planned.next();
                    ctx.absent(i as usize, &mut out);
                } else {
                    break;
                }
            }
            let i = planned
                .next_if(|&&i| guids[i as usize] == Some(guid))
                .map(|&i| i as usize);
            ctx.found(rec, i, &mut out);
        }
        for &i in planned {
            ctx.absent(i as usize, &mut out);
        }
        // Planned nodes that no name of the fabric names.
        for (i, g) in guids.iter().enumerate() {
            if g.is_none() {
                ctx.absent(i, &mut out);
            }
        }
        out.sort_by_key(PlanVerdict::key);
        out.dedup_by_key(|v| v.key());
        out
    }

    /// Move every entry on to `now` with what was observed (`full`: a
    /// comparison; else only the time passes).
    fn step(&mut self, observed: Vec<PlanVerdict>, now: u64, full: bool) -> Vec<PlanChange> {
        let recovery = self.cfg.recovery.as_millis() as u64;
        let forget = self.cfg.forget_after.as_millis() as u64;
        let mut changes = Vec::new();
        let mut out: Vec<Entry> = Vec::with_capacity(self.entries.len().max(observed.len()));
        let mut old = std::mem::take(&mut self.entries).into_iter().peekable();
        let mut obs = observed.into_iter().peekable();
        loop {
            let key = match (old.peek(), obs.peek()) {
                (None, None) => break,
                (Some(e), None) => e.v.key(),
                (None, Some(o)) => o.key(),
                (Some(e), Some(o)) => e.v.key().min(o.key()),
            };
            let prev = old.next_if(|e| e.v.key() == key);
            let seen = obs.next_if(|o| o.key() == key);
            match (prev, seen) {
                (Some(mut e), Some(o)) => {
                    let (since, raised) = (e.v.since, e.v.raised);
                    if e.live {
                        e.v = PlanVerdict { since, raised, ..o };
                    } else {
                        e.v = PlanVerdict {
                            raised: raised.saturating_add(1),
                            ..o
                        };
                        e.live = true;
                        changes.push(PlanChange::Raised(e.v.clone()));
                    }
                    out.push(e);
                }
                (None, Some(o)) => {
                    let v = PlanVerdict { raised: 1, ..o };
                    changes.push(PlanChange::Raised(v.clone()));
                    out.push(Entry { v, live: true });
                }
                (Some(mut e), None) => {
                    if e.live {
                        if full {
                            e.v.standing = false;
                        }
                        if !e.v.standing && now.saturating_sub(e.v.last_seen) >= recovery {
                            e.live = false;
                            changes.push(PlanChange::Cleared(e.v.clone()));
                        }
                        out.push(e);
                    } else if now.saturating_sub(e.v.last_seen) < forget {
                        out.push(e);
                    }
                }
                (None, None) => unreachable!("a key is taken from one of them"),
            }
        }
        self.entries = out;
        changes
    }
}

/// Each planned node's GUID in the fabric: its own for a plan by GUID;
/// for a plan by name, the node the name is the mapped name of, else the
/// NodeDescription of (a GUID taken once).
fn resolve(plan: &Compiled, snap: &Snapshot) -> Vec<Option<Guid>> {
    let by_name = plan.nodes.iter().any(PlanNodeC::by_name);
    let mut names: HashMap<&str, Vec<Guid>> = HashMap::new();
    if by_name {
        for n in &snap.nodes {
            names.entry(n.name()).or_default().push(n.id.guid);
        }
        for n in &snap.nodes {
            if *n.id.description != *n.name() {
                names.entry(&n.id.description).or_default().push(n.id.guid);
            }
        }
    }
    let mut taken: std::collections::HashSet<Guid> = std::collections::HashSet::new();
    (0..plan.nodes.len())
        .map(|i| {
            let n = &plan.nodes[i];
            if !n.by_name() {
                return taken.insert(n.guid).then_some(n.guid);
            }
            let g = names
                .get(plan.name(i)?)?
                .iter()
                .copied()
                .find(|g| !taken.contains(g))?;
            taken.insert(g);
            Some(g)
        })
        .collect()
}

/// The fabric as found, as a baseline: every node, and every link that is
/// up once.
fn baseline(snap: &Snapshot) -> Plan {
    let mut plan = Plan {
        source: PlanSource::Baseline,
        nodes: Vec::with_capacity(snap.nodes.len()),
        links: Vec::new(),
    };
    for n in &snap.nodes {
        plan.nodes.push(planned_node(n));
        for p in n.ports() {
            if let Some(peer) = up(p)
                && (n.id.guid, p.num()) < peer
            {
                plan.links.push(planned_link(n.id.guid, p, peer));
            }
        }
    }
    plan
}

fn planned_node(n: &NodeRecord) -> PlannedNode {
    PlannedNode {
        node: NodeRef::Guid(n.id.guid),
        node_type: Some(n.id.node_type),
        name: Some(Arc::from(n.name())),
        line: 0,
    }
}

fn planned_link(guid: Guid, p: &PortRecord, (peer, peer_port): (Guid, u8)) -> PlannedLink {
    PlannedLink {
        a: PlanEnd {
            node: NodeRef::Guid(guid),
            port: p.num(),
        },
        z: PlanEnd {
            node: NodeRef::Guid(peer),
            port: peer_port,
        },
        width: p.link.width,
        speed: p.link.speed,
        line: 0,
    }
}

/// The baseline grown by what the snapshot shows that it lacks: nodes, and
/// links up on ports it has no link for at either end (a port whose
/// planned peer changed is moved, not new). None when it lacks nothing.
fn learn(plan: &Compiled, guids: &[Option<Guid>], snap: &Snapshot) -> Option<Plan> {
    let mut known: Vec<(Guid, usize)> = guids
        .iter()
        .enumerate()
        .filter_map(|(i, g)| Some(((*g)?, i)))
        .collect();
    known.sort_unstable();
    let planned_port = |g: Guid, port: u8| {
        known
            .binary_search_by_key(&g, |k| k.0)
            .ok()
            .is_some_and(|k| {
                plan.node_ports(known[k].1)
                    .binary_search_by_key(&port, |p| p.port)
                    .is_ok()
            })
    };
    let mut nodes = Vec::new();
    let mut links = Vec::new();
    for n in &snap.nodes {
        let guid = n.id.guid;
        if known.binary_search_by_key(&guid, |k| k.0).is_err() {
            nodes.push(planned_node(n));
        }
        for p in n.ports() {
            let Some(peer) = up(p) else { continue };
            if (guid, p.num()) < peer
                && !planned_port(guid, p.num())
                && !planned_port(peer.0, peer.1)
            {
                links.push(planned_link(guid, p, peer));
            }
        }
    }
    if nodes.is_empty() && links.is_empty() {
        return None;
    }
    let mut grown = plan.to_plan();
    grown.nodes.extend(nodes);
    grown.links.extend(links);
    Some(grown)
}

/// What one comparison walks with.
struct Ctx<'a> {
    plan: &'a Compiled,
    guids: &'a [Option<Guid>],
    snap: &'a Snapshot,
    now: u64,
}

fn name_of(rec: &NodeRecord) -> Arc<str> {
    Arc::from(rec.name())
}

impl Ctx<'_> {
    fn verdict(&self, kind: Mismatch, guid: Guid, port: u8) -> PlanVerdict {
        PlanVerdict::new(kind, guid, port, self.now)
    }

    /// A planned node's name for people: the found node's, else the
    /// plan's.
    fn planned_name(&self, i: usize) -> Option<Arc<str>> {
        if let Some(rec) = self.guids[i].and_then(|g| self.snap.node(g)) {
            return Some(name_of(rec));
        }
        self.plan.name(i).map(Arc::from)
    }

    fn planned_end(&self, p: &PlanPort) -> PlanEnd {
        PlanEnd {
            node: self.plan.node_ref(p.peer as usize),
            port: p.peer_port,
        }
    }

    /// A planned node the fabric does not show: absent, and its planned
    /// ports missing (when it has a GUID to name them by).
    fn absent(&self, i: usize, out: &mut Vec<PlanVerdict>) {
        let guid = self.guids[i].unwrap_or(self.plan.nodes[i].guid);
        let name = self.planned_name(i);
        let mut v = self.verdict(Mismatch::AbsentNode, guid, 0);
        v.name = name.clone();
        // Absent nodes known by name alone stay apart by their place in
        // the plan.
        v.seq = if guid == Guid(0) { i as u32 + 1 } else { 0 };
        out.push(v);
        if guid == Guid(0) {
            return;
        }
        for p in self.plan.node_ports(i) {
            let mut m = self.verdict(Mismatch::Missing, guid, p.port);
            m.name = name.clone();
            m.planned = Some(self.planned_end(p));
            m.planned_name = self.planned_name(p.peer as usize);
            out.push(m);
        }
    }

    /// A node found: unplanned when the plan lacks it (`planned` None),
    /// else each of its ports against the plan.
    fn found(&self, rec: &NodeRecord, planned: Option<usize>, out: &mut Vec<PlanVerdict>) {
        let guid = rec.id.guid;
        let name = name_of(rec);
        let plan_ports = planned.map_or(&[][..], |i| self.plan.node_ports(i));
        if planned.is_none() {
            let mut v = self.verdict(Mismatch::UnplannedNode, guid, 0);
            v.name = Some(Arc::clone(&name));
            out.push(v);
        }
        let mut k = 0;
        for p in rec.ports() {
            let num = p.num();
            while k < plan_ports.len() && plan_ports[k].port < num {
                // A planned port the node does not have.
                out.push(self.missing(guid, &name, &plan_ports[k]));
                k += 1;
            }
            let pp = (k < plan_ports.len() && plan_ports[k].port == num).then(|| {
                k += 1;
                &plan_ports[k - 1]
            });
            self.port(guid, &name, p, pp, out);
        }
        for pp in &plan_ports[k..] {
            out.push(self.missing(guid, &name, pp));
        }
    }

    fn missing(&self, guid: Guid, name: &Arc<str>, pp: &PlanPort) -> PlanVerdict {
        let mut v = self.verdict(Mismatch::Missing, guid, pp.port);
        v.name = Some(Arc::clone(name));
        v.planned = Some(self.planned_end(pp));
        v.planned_name = self.planned_name(pp.peer as usize);
        v
    }

    fn port(
        &self,
        guid: Guid,
        name: &Arc<str>,
        p: &PortRecord,
        pp: Option<&PlanPort>,
        out: &mut Vec<PlanVerdict>,
    ) {
        let found = up(p);
        let rate = (p.link.width, p.link.speed);
        let found_name = || found.and_then(|(g, _)| self.snap.node(g)).map(name_of);
        let Some(pp) = pp else {
            if let Some(peer) = found {
                let mut v = self.verdict(Mismatch::UnplannedLink, guid, p.num());
                v.name = Some(Arc::clone(name));
                v.found = Some(peer);
                v.found_name = found_name();
                v.found_rate = rate;
                out.push(v);
            }
            return;
        };
        let Some(peer) = found else {
            out.push(self.missing(guid, name, pp));
            return;
        };
        let planned_peer = self.guids[pp.peer as usize].map(|g| (g, pp.peer_port));
        let planned_rate = (
            LinkWidth::from_mib(pp.width.into()),
            LinkSpeed::from_mib(pp.speed.into()),
        );
        let kind = if planned_peer != Some(peer) {
            Mismatch::Miswired
        } else if planned_rate.0.is_some_and(|w| rate.0 != Some(w))
            || planned_rate.1.is_some_and(|s| rate.1 != Some(s))
        {
            Mismatch::WrongRate
        } else {
            return;
        };
        let mut v = self.missing(guid, name, pp);
        v.kind = kind;
        v.found = Some(peer);
        v.found_name = found_name();
        v.found_rate = rate;
        v.planned_rate = planned_rate;
        out.push(v);
    }
}

#[cfg(test)]
mod tests;
