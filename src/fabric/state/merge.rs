//! The merge of a rediscovered fabric into the state: nodes found again
//! keep their index and what the agent learned of them and take their new
//! facts, new nodes are appended, nodes not found again are kept (until
//! their silence forgets them: forget.rs). Pure: the time of the discovery
//! is passed in.

use std::time::Instant;

use super::{FabricState, Flag, NodeState};
use crate::ib::Fabric;

/// What a merge of a newly discovered fabric changed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MergeReport {
    pub nodes: usize,
    pub added: usize,
    /// Ports whose state, width, speed, LID or peer changed.
    pub ports_changed: usize,
}

impl FabricState {
    /// Merge a newly discovered fabric: nodes found again keep their
    /// index and everything the agent learned of them (readings, totals,
    /// strikes) and take the new facts of the node and its ports (those
    /// the discovery read: [`crate::ib::Node::keep_unread`]); new
    /// nodes are appended, each with the next index; a node not found
    /// again is kept (its sweeps decide whether it is reachable). No index
    /// changes, so a write or a sample poll in flight meanwhile folds its
    /// outcome into the node it was sent to. `now`: when the fabric was
    /// discovered.
    pub fn merge(&mut self, new: Fabric, now: Instant) -> MergeReport {
        let mut report = MergeReport::default();
        for mut n in new.nodes {
            let Some(ni) = self.node_index(n.id.guid) else {
                report.added += 1;
                self.nodes.push(NodeState::new(&n, self.subnet.index, now));
                self.name(self.nodes.len() - 1);
                continue;
            };
            let s = &mut self.nodes[ni];
            if !s.rec.describes(&n) {
                // What this discovery could not read of the node (an SMP
                // lost under load) is what was known, not a blank: a port
                // without a LID, a node without its description.
                n.keep_unread(&s.rec.to_node());
            }
            if s.rec.describes(&n) {
                // Nothing changed: the record stays as it is.
                continue;
            }
            report.ports_changed += n
                .ports
                .iter()
                .filter(|p| s.rec.port(p.num).map(|r| &r.link) != Some(*p))
                .count();
            // A node whose PMA moved to another LID is asked ClassPortInfo
            // again at the new one.
            if s.rec.id.lid != n.id.lid {
                s.set(Flag::CpiStale, true);
                s.redirect = None;
            }
            // The record takes the node's new facts and keeps what was
            // read from it (a copy when the snapshot shares it, counted
            // toward the next publication as a sweep's copies are).
            s.rec_mut(&mut self.copies).relink(&n);
            s.set(Flag::Dirty, true);
        }
        report.nodes = self.nodes.len();
        if report.added > 0 {
            let nodes = &self.nodes;
            self.by_guid = (0..nodes.len() as u32).collect();
            self.by_guid
                .sort_by_key(|&ni| nodes[ni as usize].rec.id.guid);
        }
        self.assign_kinds();
        if report.ports_changed > 0 || report.added > 0 {
            self.assess_links();
        }
        self.figures.discovered = Some(now);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::settings::SweepConfig;
    use crate::fabric::state::SharedState;
    use crate::ib::Guid;
    use std::sync::Arc;
    use std::time::Duration;

    use crate::fabric::state::tests::TWO;

    fn fabric(text: &str) -> Fabric {
        crate::ib::topology::parse(text).unwrap()
    }

    /// A rediscovery that could not read a node (its NodeDescription and
    /// its ports' PortInfo lost under load: an empty description, ports
    /// with no state and no LID) leaves what was known of it: the sweeps
    /// go on asking its PMA at its LID (without one it would be asked
    /// nothing and reported lost), and a notification names it as before.
    #[test]
    fn a_merge_keeps_what_a_discovery_did_not_read() {
        let mut lids = fabric(TWO);
        for (i, n) in lids.nodes.iter_mut().enumerate() {
            n.id.lid = 10 + i as u16;
            n.ports.iter_mut().for_each(|p| p.lid = n.id.lid);
        }
        let state = SharedState::new(lids, SweepConfig::default(), Instant::now());
        let mut st = state.lock();
        let known = st.fabric();
        let mut unread = known.clone();
        let n = &mut unread.nodes[1];
        (n.id.description, n.id.lid) = ("".into(), 0);
        for p in &mut n.ports {
            (p.state, p.phys_state, p.width, p.speed, p.lid) = (None, None, None, None, 0);
        }
        let r = st.merge(unread, Instant::now());
        assert_eq!((r.added, r.ports_changed), (0, 0));
        assert_eq!(st.fabric(), known);
        assert!(!known.nodes[1].id.description.is_empty());
        assert!(
            st.pma(1, None)
                .is_some_and(|a| a.lid == known.nodes[1].id.lid)
        );
        // What it did read is taken: a port that answered down.
        let mut down = known.clone();
        down.nodes[1].ports[0].state = Some(crate::ib::PortState::Down);
        assert_eq!(st.merge(down.clone(), Instant::now()).ports_changed, 1);
        assert_eq!(st.fabric(), down);
    }

    #[test]
    fn a_merge_keeps_known_nodes_adds_new_ones_and_stamps_the_time_passed_in() {
        let state = SharedState::new(fabric(TWO), SweepConfig::default(), Instant::now());
        let mut st = state.lock();
        let t = Instant::now() + Duration::from_secs(3600);
        // The same fabric: nothing changes.
        let same = st.merge(fabric(TWO), t);
        assert_eq!(
            same,
            MergeReport {
                nodes: 2,
                added: 0,
                ports_changed: 0
            }
        );
        assert_eq!(st.figures.discovered, Some(t));
        let records: Vec<_> = st.nodes.iter().map(|n| Arc::as_ptr(&n.rec)).collect();
        // A third switch cabled to sw1's port 2.
        let three = format!("{TWO}Switch\t2 \"sw2\"\n[2]\t\"sw1\"[2]\n\n").replace(
            "[1]\t\"sw0\"[1]\n\n",
            "[1]\t\"sw0\"[1]\n[2]\t\"sw2\"[2]\n\n",
        );
        let later = t + Duration::from_secs(60);
        let r = st.merge(fabric(&three), later);
        assert_eq!((r.nodes, r.added), (3, 1));
        assert!(r.ports_changed >= 1, "sw1's port 2 is cabled now");
        assert_eq!(st.figures.discovered, Some(later));
        assert_eq!(st.fabric().nodes.len(), 3);
        // The fabric model is in GUID order, a state for each node.
        let guids: Vec<_> = st.fabric().nodes.iter().map(|n| n.id.guid).collect();
        assert!(guids.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(st.nodes.len(), 3);
        let kept = st
            .nodes
            .iter()
            .filter(|n| records.contains(&Arc::as_ptr(&n.rec)))
            .count();
        assert!(kept >= 1, "a node that did not change keeps its record");
        // A merge without the third switch keeps it (its sweeps decide).
        let r = st.merge(fabric(TWO), later);
        assert_eq!((r.nodes, r.added), (3, 0));
    }

    /// A merge that finds a new node ahead of the others by GUID and
    /// misses a known one keeps every known node's index: the new node
    /// is appended, the missing one keeps its index and record; the
    /// lookups by GUID, the fabric model and a publication are in GUID
    /// order.
    #[test]
    fn a_merge_keeps_every_nodes_index_and_appends_new_ones() {
        let three = fabric(&format!("{TWO}Switch\t2 \"sw2\"\n\n"));
        let state = SharedState::new(three.clone(), SweepConfig::default(), Instant::now());
        let cache = crate::fabric::cache::Cache::new();
        let mut st = state.lock();
        let guids: Vec<Guid> = (0..3).map(|ni| st.node(ni).id.guid).collect();
        assert!(guids.windows(2).all(|w| w[0] < w[1]) && guids[0] > Guid(1));
        let kept = Arc::clone(&st.nodes[1].rec);

        let mut found = three;
        let missing = found.nodes.remove(1);
        let mut newcomer = found.nodes[0].clone();
        newcomer.id.guid = Guid(1);
        newcomer.id.description = "newcomer".into();
        newcomer.ports.iter_mut().for_each(|p| p.set_remote(None));
        found.nodes.push(newcomer);
        let r = st.merge(found, Instant::now());
        assert_eq!((r.nodes, r.added), (4, 1));
        for (ni, &g) in guids.iter().enumerate() {
            assert_eq!(st.node_index(g), Some(ni));
            assert_eq!(st.node(ni).id.guid, g);
        }
        assert_eq!(st.node_index(Guid(1)), Some(3), "appended");
        assert_eq!(st.node(3).id.description.as_ref(), "newcomer");
        assert_eq!(st.node(1).id, missing.id);
        assert!(Arc::ptr_eq(&st.nodes[1].rec, &kept), "its record is kept");

        let order = [Guid(1), guids[0], guids[1], guids[2]];
        let model: Vec<Guid> = st.fabric().nodes.iter().map(|n| n.id.guid).collect();
        assert_eq!(model, order);
        st.end_sweep(&[true; 4], Instant::now());
        st.publish(&cache, Instant::now());
        let published: Vec<Guid> = cache.load().nodes.iter().map(|n| n.id.guid).collect();
        assert_eq!(published, order);
    }
}
