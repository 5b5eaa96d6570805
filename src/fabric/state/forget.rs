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

use super::{FabricState, silent_since};
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
        let silent = |at: u32| silent_since(at, now);
        let mut gone = Vec::new();
        for &ni in &self.by_guid {
            let s = &self.nodes[ni as usize];
            let quiet = silent(s.answered_s);
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
        self.nodes.retain(|s| silent(s.answered_s) < after);
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

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use crate::fabric::settings::SweepConfig;
    use crate::fabric::state::SharedState;
    use crate::fabric::state::tests::two_switches;

    /// The last answer is kept in whole seconds, rounded up: a node is
    /// never forgotten before `forget_after` has passed since it answered,
    /// and at most a second after.
    #[test]
    fn a_node_is_forgotten_not_before_forget_after_and_within_a_second_of_it() {
        let after = Duration::from_secs(60);
        let cfg = SweepConfig {
            forget_after: Some(after),
            ..Default::default()
        };
        let t0 = Instant::now();
        let state = SharedState::new(two_switches(), cfg, t0);
        let mut st = state.lock();
        let answered = t0 + Duration::from_millis(400);
        st.end_sweep(&[true, true], answered);
        st.end_sweep(&[true, false], answered + Duration::from_secs(30));
        // Node 1 last answered at `answered`.
        let just_before = answered + after - Duration::from_millis(1);
        assert!(st.forget_silent(true, just_before).is_empty());
        let gone = st.forget_silent(true, answered + after + Duration::from_secs(1));
        assert_eq!(gone.len(), 1);
        assert!(
            gone[0].silent >= after && gone[0].silent <= after + Duration::from_secs(1),
            "{:?}",
            gone[0].silent
        );
        assert_eq!(st.node_count(), 1);
    }
}
