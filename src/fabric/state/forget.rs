//! Nodes that leave: a node whose PMA has not answered for
//! `fabric.forget_after` is forgotten. Its state, its record and with them
//! its rows, its metrics and its totals in the state file go; a node found
//! again later starts over as a new one. Pure: the time is passed in.
//!
//! Forgetting moves the nodes after a forgotten one down: every index
//! taken before it is stale. [`FabricState::epoch`] changes with each
//! forgetting, so whoever holds an index across a release of the lock (the
//! write path, the sample poller) sees that and lets its outcome go.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::FabricState;
use crate::fabric::record::Stamp;
use crate::ib::Guid;

/// A node forgotten: who it was and how long it had been silent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forgotten {
    pub guid: Guid,
    pub description: Arc<str>,
    pub silent: Duration,
}

impl FabricState {
    /// Forget the nodes whose PMA has not answered since `forget_after`
    /// before `now` (counted from when each was added, for one that never
    /// answered). Nothing is forgotten without `forget_after`, or after a
    /// sweep in which no node answered (`any_answered`: the local port or
    /// its link was down, not the nodes). Returns the nodes forgotten, in
    /// GUID order.
    pub fn forget_silent(&mut self, any_answered: bool, now: Instant) -> Vec<Forgotten> {
        let Some(after) = self.cfg.forget_after else {
            return Vec::new();
        };
        if !any_answered {
            return Vec::new();
        }
        let silent = |at: Stamp| now.saturating_duration_since(at.instant());
        let mut gone = Vec::new();
        for &ni in &self.by_guid {
            let s = &self.nodes[ni as usize];
            let quiet = silent(s.answered_at);
            if quiet >= after {
                gone.push(Forgotten {
                    guid: s.rec.id.guid,
                    description: Arc::clone(s.rec.name_arc()),
                    silent: quiet,
                });
            }
        }
        if gone.is_empty() {
            return gone;
        }
        self.nodes.retain(|s| silent(s.answered_at) < after);
        let nodes = &self.nodes;
        self.by_guid = (0..nodes.len() as u32).collect();
        self.by_guid
            .sort_by_key(|&ni| nodes[ni as usize].rec.id.guid);
        self.epoch += 1;
        self.forgotten = gone.iter().map(|f| f.guid).collect();
        // The links that led to a forgotten node lead nowhere now.
        self.assess_links();
        gone
    }

    /// Changes each time nodes are forgotten: a node index taken under an
    /// older epoch names another node, or none.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }
}
