//! The merge of the members' snapshots into the public one, and when the
//! evaluators' round is due: functions of the members' snapshots (and of
//! what they kept from the last call), no lock, thread or clock of their
//! own. [`super::Federation`] is their driver.

use std::sync::Arc;
use std::time::Duration;

use crate::fabric::cache::{Snapshot, SweepFigures};
use crate::fabric::record::NodeRecord;
use crate::ib::Guid;
use crate::ib::subnet::SubnetView;

/// The members' snapshots merged into one: nodes in GUID order, one record
/// per GUID (a node in several members is a record joined of theirs,
/// [`NodeRecord::joined`]); the subnets' views by member; the sweep
/// figures summed (MADs, timeouts) or the latest (ends, durations); the
/// nodes members forgot that none has any more, until the round that saw
/// them ([`Merge::clear_forgotten`]).
#[derive(Default)]
pub struct Merge {
    /// Each member's `forgotten` list already passed on (by address).
    forgotten_seen: Vec<usize>,
    /// Nodes forgotten by a member and in no member any more, since the
    /// last round.
    forgotten: Vec<Guid>,
    /// The last merge, for the next one to start from.
    last: Option<Last>,
}

/// The nodes of the last merge, and where each member's went.
struct Last {
    nodes: Vec<Arc<NodeRecord>>,
    at: Vec<MemberAt>,
}

/// One member's snapshot at the last merge, and for each of its nodes its
/// position in the merged nodes and whether the record there is joined of
/// several members'.
struct MemberAt {
    snap: Arc<Snapshot>,
    pos: Vec<(u32, bool)>,
}

impl Merge {
    /// The snapshot of the members' `snaps` (one per member, in member
    /// order; the health verdicts, plan verdicts and notification
    /// figures are the public cache's, left at their defaults here).
    pub fn merge(&mut self, snaps: &[Arc<Snapshot>]) -> Snapshot {
        self.forgotten_seen.resize(snaps.len(), 0);
        let nodes = match self.replace_one(snaps) {
            Some(nodes) => nodes,
            None => self.merge_all(snaps),
        };
        self.take_forgotten(snaps, &nodes);
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
        Snapshot {
            sweep: snaps.iter().map(|s| s.sweep).sum(),
            taken: snaps.iter().filter_map(|s| s.taken).max(),
            interval: snaps
                .iter()
                .map(|s| s.interval)
                .max()
                .unwrap_or(Duration::ZERO),
            nodes,
            stats,
            forgotten: self.forgotten.clone().into(),
            subnets: subnets.into(),
            ..Default::default()
        }
    }

    /// Forget the forgotten nodes passed on so far (the evaluators have
    /// seen them); true when there were some (a merge is due then).
    pub fn clear_forgotten(&mut self) -> bool {
        let had = !self.forgotten.is_empty();
        self.forgotten.clear();
        had
    }

    /// The last merge with one member's changed records put in place,
    /// when only that member's snapshot changed since and its nodes are
    /// the same ones (most publications: a pointer copy per changed node
    /// instead of a merge); None when a whole merge is due.
    fn replace_one(&mut self, snaps: &[Arc<Snapshot>]) -> Option<Vec<Arc<NodeRecord>>> {
        let last = self.last.as_mut()?;
        if last.at.len() != snaps.len() {
            return None;
        }
        let mut changed = snaps
            .iter()
            .zip(&last.at)
            .enumerate()
            .filter(|(_, (s, at))| !Arc::ptr_eq(s, &at.snap));
        let Some((m, (snap, at))) = changed.next() else {
            return Some(last.nodes.clone());
        };
        if changed.next().is_some() || snap.nodes.len() != at.snap.nodes.len() {
            return None;
        }
        // The member's records that changed; none of another node.
        let mut new: Vec<usize> = Vec::new();
        for (k, (a, b)) in snap.nodes.iter().zip(&at.snap.nodes).enumerate() {
            if Arc::ptr_eq(a, b) {
                continue;
            }
            if a.id.guid != b.id.guid {
                return None;
            }
            new.push(k);
        }
        for k in new {
            let n = &snap.nodes[k];
            let (pos, joined) = at.pos[k];
            last.nodes[pos as usize] = if joined {
                Arc::new(NodeRecord::joined(parts_of(snaps, n.id.guid)))
            } else {
                Arc::clone(n)
            };
        }
        last.at[m].snap = Arc::clone(snap);
        Some(last.nodes.clone())
    }

    /// Every member's nodes merged by GUID; where each member's went is
    /// kept for [`Self::replace_one`]. A joined record whose parts are
    /// the last merge's stays the same record.
    fn merge_all(&mut self, snaps: &[Arc<Snapshot>]) -> Vec<Arc<NodeRecord>> {
        let total: usize = snaps.iter().map(|s| s.nodes.len()).sum();
        let mut out: Vec<Arc<NodeRecord>> = Vec::with_capacity(total);
        let mut at: Vec<MemberAt> = snaps
            .iter()
            .map(|s| MemberAt {
                snap: Arc::clone(s),
                pos: Vec::with_capacity(s.nodes.len()),
            })
            .collect();
        let before = self.last.take().map(|l| l.nodes).unwrap_or_default();
        let mut heads = vec![0usize; snaps.len()];
        let mut parts: Vec<Arc<NodeRecord>> = Vec::new();
        let mut from: Vec<usize> = Vec::new();
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
            let joined = parts.len() > 1;
            for &m in &from {
                at[m].pos.push((pos, joined));
            }
            if !joined {
                out.push(parts.pop().expect("one part"));
                continue;
            }
            let same = before
                .binary_search_by_key(&guid, |n| n.id.guid)
                .ok()
                .map(|i| &before[i])
                .filter(|r| {
                    r.parts().len() == parts.len()
                        && r.parts().iter().zip(&parts).all(|(a, b)| Arc::ptr_eq(a, b))
                });
            out.push(match same {
                Some(r) => Arc::clone(r),
                None => Arc::new(NodeRecord::joined(std::mem::take(&mut parts))),
            });
        }
        self.last = Some(Last {
            nodes: out.clone(),
            at,
        });
        out
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

/// The members' records of node `guid`, in member order.
fn parts_of(snaps: &[Arc<Snapshot>], guid: Guid) -> Vec<Arc<NodeRecord>> {
    snaps
        .iter()
        .filter_map(|s| {
            let i = s.nodes.binary_search_by_key(&guid, |r| r.id.guid).ok()?;
            Some(Arc::clone(&s.nodes[i]))
        })
        .collect()
}

/// When the evaluators that run after a sweep (health, notifications) run
/// with several subnets: once every member has ended a sweep since the
/// last round, or a sweep interval after it when a member is late (a
/// subnet dead from the start holds no round), so that a node is judged
/// once per sweep of its subnet, not once per sweep of any subnet.
#[derive(Default)]
pub struct Round {
    /// Each member's sweep number at the last round.
    at: Vec<u64>,
    /// When the last round ran (the latest member publication then).
    when: Option<std::time::Instant>,
}

impl Round {
    /// Whether a round is due given the members' snapshots; when it is,
    /// it is taken as run.
    pub fn due(&mut self, snaps: &[Arc<Snapshot>]) -> bool {
        self.at.resize(snaps.len(), 0);
        let latest = snaps.iter().filter_map(|s| s.taken).max();
        let interval = snaps.iter().map(|s| s.interval).max().unwrap_or_default();
        let all_swept = snaps.iter().zip(&self.at).all(|(s, &at)| s.sweep > at);
        // Late: an interval since the last round, or since the first
        // sweep ended when there was none.
        if self.when.is_none() {
            self.when = latest;
        }
        let late = match (self.when, latest) {
            (Some(at), Some(now)) => now.saturating_duration_since(at) >= interval,
            _ => false,
        };
        let due = all_swept || late;
        if due {
            self.at = snaps.iter().map(|s| s.sweep).collect();
            self.when = latest;
        }
        due
    }
}
