//! Several subnets in one agent. Each subnet is swept by a stack of its
//! own, the same code as with one (state, sweeper and its engine, write
//! path, rediscovery), publishing into a cache of its own: a slow or dead
//! subnet holds none of the others. The federation merges the members'
//! snapshots into the public one every face reads ([`Merge`], a function
//! of the members' snapshots), when a driver that published into a
//! member asks it to ([`crate::fabric::state::SharedState::published`]):
//! - nodes in GUID order, as in any snapshot; a node seen in two subnets
//!   (an adapter with a port on each plane) is one record pointing into
//!   the members' records of it ([`crate::fabric::record::NodeRecord::joined`]), each port
//!   record carrying its subnet's index;
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

use std::sync::{Arc, Mutex, MutexGuard};

use super::cache::Cache;
use super::control::{ControlConfig, Controller, WriteError, WriteOp};
use super::sweep::AfterPublish;

mod merge;

pub use merge::{Merge, Round};

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
    merge: Merge,
    round: Round,
}

impl Inner {
    fn snapshots(&self) -> Vec<Arc<super::cache::Snapshot>> {
        self.members.iter().map(|c| c.load()).collect()
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl super::state::Merges for Federation {
    fn merge(&self) {
        Federation::merge(self);
    }
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

    /// A new member: the cache its sweeper and write path publish into
    /// (their state joins the federation,
    /// [`crate::fabric::state::SharedState::join`], so that they merge
    /// after they publish).
    pub fn add_member(&self) -> Arc<Cache> {
        let cache = Arc::new(Cache::new());
        lock(&self.inner).members.push(Arc::clone(&cache));
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
            let snaps = inner.snapshots();
            inner.round.due(&snaps)
        };
        if !due {
            return;
        }
        if let Some(f) = lock(&self.after_round).as_mut() {
            f(&self.public);
        }
        // The evaluators have seen the forgotten nodes.
        if lock(&self.inner).merge.clear_forgotten() {
            self.merge();
        }
    }

    /// Merge the members' latest snapshots into the public cache (loaded,
    /// merged and published under one lock: publications keep the order
    /// of the members' stores).
    pub fn merge(&self) {
        let mut inner = lock(&self.inner);
        let snaps = inner.snapshots();
        let snap = inner.merge.merge(&snaps);
        self.public.publish(snap);
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
