//! Several subnets in one agent. Each subnet is swept by a stack of its
//! own, the same code as with one (state, sweeper and its engine, write
//! path, rediscovery), publishing into a cache of its own: a slow or dead
//! subnet holds none of the others. The federation merges the members'
//! snapshots into the public one every face reads, whenever a member
//! stores one:
//! - nodes in GUID order, as in any snapshot; a node seen in two subnets
//!   (an adapter with a port on each plane) is one record with its ports
//!   from each, each port record carrying its subnet's index;
//! - the subnets' views, one per member, by index;
//! - the sweep figures summed (MADs, timeouts) or the latest (ends,
//!   durations), the sweep number the sum of the members';
//! - the health verdicts and notification figures the public cache holds.
//!
//! The evaluators that run after a sweep (health, notifications) run after
//! a *round*: once every member has ended a sweep since the last round, or
//! a sweep interval after it when a member is late, so that a node is
//! judged once per sweep of its subnet, not once per sweep of any subnet.
//!
//! Writes go to the member whose state has the node and port
//! ([`Writers`]).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::cache::{Cache, Snapshot, SweepFigures};
use super::control::{ControlConfig, Controller, WriteError, WriteOp};
use super::record::NodeRecord;
use super::sweep::AfterPublish;
use crate::ib::Guid;
use crate::ib::subnet::SubnetView;

/// The public cache and the members whose snapshots it merges.
pub struct Federation {
    public: Arc<Cache>,
    inner: Mutex<Inner>,
    /// The evaluators run after each round.
    after_round: Mutex<Option<AfterPublish>>,
}

#[derive(Default)]
struct Inner {
    members: Vec<Arc<Cache>>,
    /// Records of nodes seen in several subnets, with the members' records
    /// they were made from: made again only when one of those changed.
    combined: HashMap<Guid, Combined>,
    /// Each member's `forgotten` list already passed on (by address).
    forgotten_seen: Vec<usize>,
    /// Nodes forgotten by a member and in no member any more, since the
    /// last round.
    forgotten: Vec<Guid>,
    /// Each member's sweep number at the last round.
    round: Vec<u64>,
    /// When the last round ran (the latest member publication then).
    round_at: Option<Instant>,
    /// The last merge, for the next one to start from.
    last: Option<Last>,
}

/// The nodes of the last merge, and where each member's went.
struct Last {
    nodes: Vec<Arc<NodeRecord>>,
    at: Vec<MemberAt>,
}

/// One member's snapshot at the last merge, and for each of its nodes its
/// position in the merged nodes and whether the record there is combined
/// of several members'.
struct MemberAt {
    snap: Arc<Snapshot>,
    pos: Vec<(u32, bool)>,
}

struct Combined {
    parts: Vec<Arc<NodeRecord>>,
    rec: Arc<NodeRecord>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Federation {
    /// A federation publishing into `public`, with no member yet.
    pub fn new(public: Arc<Cache>) -> Arc<Federation> {
        Arc::new(Federation {
            public,
            inner: Mutex::new(Inner::default()),
            after_round: Mutex::new(None),
        })
    }

    /// The cache every face reads.
    pub fn public(&self) -> &Arc<Cache> {
        &self.public
    }

    /// A new member: the cache its sweeper and write path publish into.
    /// Every store into it merges the members again.
    pub fn add_member(self: &Arc<Self>) -> Arc<Cache> {
        let cache = Arc::new(Cache::new());
        let me: Weak<Federation> = Arc::downgrade(self);
        cache.on_store(Box::new(move || {
            if let Some(f) = me.upgrade() {
                f.merge();
            }
        }));
        let mut inner = lock(&self.inner);
        inner.members.push(Arc::clone(&cache));
        inner.forgotten_seen.push(0);
        inner.round.push(0);
        cache
    }

    /// Run `f` with the public cache after each round.
    pub fn set_after_round(&self, f: AfterPublish) {
        *lock(&self.after_round) = Some(f);
    }

    /// What a member's sweeper calls after each of its sweeps: the
    /// evaluators run when the round is complete.
    pub fn member_swept(&self) {
        let due = {
            let mut inner = lock(&self.inner);
            let snaps: Vec<Arc<Snapshot>> = inner.members.iter().map(|c| c.load()).collect();
            let latest = snaps.iter().filter_map(|s| s.taken).max();
            let interval = snaps.iter().map(|s| s.interval).max().unwrap_or_default();
            let all_swept = snaps.iter().zip(&inner.round).all(|(s, &at)| s.sweep > at);
            // Late: an interval since the last round, or since the first
            // sweep ended when there was none (a subnet dead from the
            // start holds no round).
            if inner.round_at.is_none() {
                inner.round_at = latest;
            }
            let late = match (inner.round_at, latest) {
                (Some(at), Some(now)) => now.saturating_duration_since(at) >= interval,
                _ => false,
            };
            let due = all_swept || late;
            if due {
                inner.round = snaps.iter().map(|s| s.sweep).collect();
                inner.round_at = latest;
            }
            due
        };
        if !due {
            return;
        }
        if let Some(f) = lock(&self.after_round).as_mut() {
            f(&self.public);
        }
        // The evaluators have seen the forgotten nodes.
        let mut inner = lock(&self.inner);
        if !inner.forgotten.is_empty() {
            inner.forgotten.clear();
            drop(inner);
            self.merge();
        }
    }

    /// Merge the members' latest snapshots into the public cache.
    pub fn merge(&self) {
        let mut inner = lock(&self.inner);
        let snaps: Vec<Arc<Snapshot>> = inner.members.iter().map(|c| c.load()).collect();
        let nodes = inner.merge_nodes(&snaps);
        inner.take_forgotten(&snaps, &nodes);
        let mut stats = SweepFigures::default();
        let mut subnets: Vec<SubnetView> = Vec::with_capacity(snaps.len());
        for (i, s) in snaps.iter().enumerate() {
            stats.ended = stats.ended.max(s.stats.ended);
            stats.discovered = stats.discovered.max(s.stats.discovered);
            stats.duration_ms = stats.duration_ms.max(s.stats.duration_ms);
            stats.mads += s.stats.mads;
            stats.timeouts += s.stats.timeouts;
            let mut view = s.subnets.first().cloned().unwrap_or_default();
            view.index = i as u8;
            subnets.push(view);
        }
        let snap = Snapshot {
            sweep: snaps.iter().map(|s| s.sweep).sum(),
            taken: snaps.iter().filter_map(|s| s.taken).max(),
            interval: snaps
                .iter()
                .map(|s| s.interval)
                .max()
                .unwrap_or(Duration::ZERO),
            nodes,
            stats,
            forgotten: inner.forgotten.clone().into(),
            subnets: subnets.into(),
            ..Default::default()
        };
        self.public.publish_merged(snap);
    }
}

impl Inner {
    /// The members' nodes in GUID order, one record per GUID: the last
    /// merge with one member's records put in place when only that
    /// member published since and its nodes are the same ones (most
    /// publications: a pointer copy per node instead of a merge), else a
    /// merge of every member's.
    fn merge_nodes(&mut self, snaps: &[Arc<Snapshot>]) -> Vec<Arc<NodeRecord>> {
        if let Some(nodes) = self.replace_one(snaps) {
            return nodes;
        }
        self.merge_all(snaps)
    }

    /// The fast path of [`Self::merge_nodes`], when it applies.
    fn replace_one(&mut self, snaps: &[Arc<Snapshot>]) -> Option<Vec<Arc<NodeRecord>>> {
        let mut last = self.last.take()?;
        let nodes = self.replace_in(&mut last, snaps);
        self.last = Some(last);
        nodes
    }

    fn replace_in(
        &mut self,
        last: &mut Last,
        snaps: &[Arc<Snapshot>],
    ) -> Option<Vec<Arc<NodeRecord>>> {
        if last.at.len() != snaps.len() {
            return None;
        }
        let mut changed = snaps
            .iter()
            .zip(&last.at)
            .enumerate()
            .filter(|(_, (s, at))| !Arc::ptr_eq(s, &at.snap));
        let (m, (snap, at)) = changed.next()?;
        if changed.next().is_some()
            || snap.nodes.len() != at.snap.nodes.len()
            || snap
                .nodes
                .iter()
                .zip(&at.snap.nodes)
                .any(|(a, b)| a.id.guid != b.id.guid)
        {
            return None;
        }
        let mut nodes = last.nodes.clone();
        for (k, n) in snap.nodes.iter().enumerate() {
            let (pos, multi) = at.pos[k];
            nodes[pos as usize] = if multi {
                let parts: Vec<Arc<NodeRecord>> = snaps
                    .iter()
                    .filter_map(|s| {
                        let i = s
                            .nodes
                            .binary_search_by_key(&n.id.guid, |r| r.id.guid)
                            .ok()?;
                        Some(Arc::clone(&s.nodes[i]))
                    })
                    .collect();
                self.combined_of(n.id.guid, parts)
            } else {
                Arc::clone(n)
            };
        }
        last.at[m].snap = Arc::clone(snap);
        last.nodes = nodes.clone();
        Some(nodes)
    }

    /// Every member's nodes merged by GUID; where each member's went is
    /// kept for [`Self::replace_one`].
    fn merge_all(&mut self, snaps: &[Arc<Snapshot>]) -> Vec<Arc<NodeRecord>> {
        let total: usize = snaps.iter().map(|s| s.nodes.len()).sum();
        let mut out = Vec::with_capacity(total);
        let mut at: Vec<MemberAt> = snaps
            .iter()
            .map(|s| MemberAt {
                snap: Arc::clone(s),
                pos: Vec::with_capacity(s.nodes.len()),
            })
            .collect();
        let mut heads = vec![0usize; snaps.len()];
        let mut parts: Vec<Arc<NodeRecord>> = Vec::new();
        let mut from: Vec<usize> = Vec::new();
        let mut multi: Vec<Guid> = Vec::new();
        while let Some(guid) = snaps
            .iter()
            .zip(&heads)
            .filter_map(|(s, &h)| s.nodes.get(h).map(|n| n.id.guid))
            .min()
        {
            parts.clear();
            from.clear();
            for (m, (s, h)) in snaps.iter().zip(heads.iter_mut()).enumerate() {
                if let Some(n) = s.nodes.get(*h)
                    && n.id.guid == guid
                {
                    parts.push(Arc::clone(n));
                    from.push(m);
                    *h += 1;
                }
            }
            let pos = out.len() as u32;
            let is_multi = parts.len() > 1;
            for &m in &from {
                at[m].pos.push((pos, is_multi));
            }
            if !is_multi {
                out.push(parts.pop().expect("one part"));
                continue;
            }
            multi.push(guid);
            let rec = self.combined_of(guid, std::mem::take(&mut parts));
            out.push(rec);
        }
        if self.combined.len() != multi.len() {
            multi.sort_unstable();
            self.combined.retain(|g, _| multi.binary_search(g).is_ok());
        }
        self.last = Some(Last {
            nodes: out.clone(),
            at,
        });
        out
    }

    /// The one record of node `guid` made of the members' `parts`: the
    /// one made before when they are the same records.
    fn combined_of(&mut self, guid: Guid, parts: Vec<Arc<NodeRecord>>) -> Arc<NodeRecord> {
        if let Some(c) = self.combined.get(&guid)
            && c.parts.len() == parts.len()
            && c.parts.iter().zip(&parts).all(|(a, b)| Arc::ptr_eq(a, b))
        {
            return Arc::clone(&c.rec);
        }
        let rec = Arc::new(combine(&parts));
        self.combined.insert(
            guid,
            Combined {
                parts,
                rec: Arc::clone(&rec),
            },
        );
        rec
    }

    /// Take up the nodes members forgot since their last look that no
    /// member has any more.
    fn take_forgotten(&mut self, snaps: &[Arc<Snapshot>], nodes: &[Arc<NodeRecord>]) {
        for (i, s) in snaps.iter().enumerate() {
            let at = s.forgotten.as_ptr() as usize;
            if s.forgotten.is_empty() || self.forgotten_seen[i] == at {
                continue;
            }
            self.forgotten_seen[i] = at;
            for &g in s.forgotten.iter() {
                let gone = nodes.binary_search_by_key(&g, |n| n.id.guid).is_err();
                if gone && !self.forgotten.contains(&g) {
                    self.forgotten.push(g);
                }
            }
        }
    }
}

/// One record of a node seen in several subnets: the first member's node
/// facts, the ports of every member (by number; of a port two members
/// report, the record with a link), reachable when any member reaches it.
fn combine(parts: &[Arc<NodeRecord>]) -> NodeRecord {
    let first = &parts[0];
    let mut ports: Vec<_> = parts.iter().flat_map(|p| p.ports.iter().cloned()).collect();
    // Of two records of one port, the one whose link has a far end (the
    // member that reached the port through it); between equals, the
    // first member's (the sort is stable).
    ports.sort_by_key(|p| (p.link.num, p.link.remote_port == 0));
    ports.dedup_by_key(|p| p.link.num);
    NodeRecord {
        id: first.id.clone(),
        reachable: parts.iter().any(|p| p.reachable),
        failed_sweeps: parts.iter().map(|p| p.failed_sweeps).min().unwrap_or(0),
        class_port_info: first.class_port_info.clone(),
        ports,
        samples_control: first.samples_control.clone(),
        samples_result: first.samples_result.clone(),
        samples_result_ext: first.samples_result_ext.clone(),
        source: first.source,
        mapped_name: first.mapped_name.clone(),
    }
}

/// The write paths of every member, and the cache acknowledgements go to:
/// a write goes to the member whose state has its node and port.
pub struct Writers {
    cache: Arc<Cache>,
    paths: Vec<Arc<Controller>>,
}

impl Writers {
    /// One subnet's write path, acknowledging into its own cache.
    pub fn one(path: Arc<Controller>) -> Writers {
        Writers {
            cache: Arc::clone(path.cache()),
            paths: vec![path],
        }
    }

    /// The members' write paths; acknowledgements go to `public`.
    pub fn new(public: Arc<Cache>, paths: Vec<Arc<Controller>>) -> Writers {
        Writers {
            cache: public,
            paths,
        }
    }

    /// The cache the faces read (where acknowledgements go).
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The write paths' settings (the first's: every member has the same).
    pub fn config(&self) -> ControlConfig {
        self.paths.first().map(|p| p.config()).unwrap_or_default()
    }

    /// Apply `ops`, each through the member that has its node and port,
    /// the members side by side; one result per op, within
    /// [`ControlConfig::deadline`].
    pub fn write(&self, ops: &[WriteOp]) -> Vec<Result<(), WriteError>> {
        if let [path] = self.paths.as_slice() {
            return path.write(ops);
        }
        let mut results: Vec<Result<(), WriteError>> =
            vec![Err(WriteError::UnknownNode); ops.len()];
        // Per member: the ops it takes and their positions.
        let mut groups: Vec<(Vec<WriteOp>, Vec<usize>)> =
            vec![Default::default(); self.paths.len()];
        for (i, op) in ops.iter().enumerate() {
            let port = match op {
                WriteOp::ClearCounters { port, .. } => Some(*port),
                WriteOp::SamplesControl { .. } => None,
            };
            // The member where the port has a link, else the first that
            // has it.
            let serves: Vec<Option<bool>> = self
                .paths
                .iter()
                .map(|p| p.serves(op.guid(), port))
                .collect();
            let m = serves
                .iter()
                .position(|s| *s == Some(true))
                .or_else(|| serves.iter().position(Option::is_some));
            if let Some(m) = m {
                groups[m].0.push(op.clone());
                groups[m].1.push(i);
            }
        }
        std::thread::scope(|s| {
            let running: Vec<_> = groups
                .iter()
                .zip(&self.paths)
                .filter(|((ops, _), _)| !ops.is_empty())
                .map(|((ops, at), path)| (at, s.spawn(move || path.write(ops))))
                .collect();
            for (at, handle) in running {
                let out = handle
                    .join()
                    .unwrap_or_else(|_| vec![Err(WriteError::Timeout); at.len()]);
                for (&i, r) in at.iter().zip(out) {
                    results[i] = r;
                }
            }
        });
        results
    }
}

#[cfg(test)]
mod tests;
