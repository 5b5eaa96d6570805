//! The merge of a rediscovered fabric into the state: nodes found again
//! keep what the agent learned of them and take their new link facts, new
//! nodes are added in GUID order, nodes not found again are kept. Pure:
//! the time of the discovery is passed in.

use std::sync::Arc;
use std::time::Instant;

use super::state::{FabricState, NodeState, new_record};
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
    /// Merge a newly discovered fabric: nodes found again keep everything
    /// the agent learned of them (readings, totals, strikes) and take the
    /// new link facts of their ports; new nodes are added; a node not found
    /// again is kept (its sweeps decide whether it is reachable). Indices
    /// of nodes and ports change: call only while no request is in flight.
    /// `now`: when the fabric was discovered.
    pub fn merge(&mut self, mut new: Fabric, now: Instant) -> MergeReport {
        new.sort();
        let mut report = MergeReport::default();
        let mut old_nodes = std::mem::take(&mut self.fabric.nodes).into_iter();
        let mut old_states = std::mem::take(&mut self.nodes).into_iter();
        let mut nodes = Vec::with_capacity(new.nodes.len());
        let mut states = Vec::with_capacity(new.nodes.len());
        let mut next_old = old_nodes.next().zip(old_states.next());
        for n in new.nodes {
            // Old nodes before this GUID were not found again: keep them.
            while let Some((o, s)) = next_old.take() {
                if o.id.guid < n.id.guid {
                    nodes.push(o);
                    states.push(s);
                    next_old = old_nodes.next().zip(old_states.next());
                } else {
                    next_old = Some((o, s));
                    break;
                }
            }
            match next_old.take() {
                Some((o, s)) if o.id.guid == n.id.guid && o == n => {
                    // Nothing changed: the record stays as it is.
                    nodes.push(n);
                    states.push(s);
                    next_old = old_nodes.next().zip(old_states.next());
                }
                Some((o, mut s)) if o.id.guid == n.id.guid => {
                    for p in &n.ports {
                        if o.port(p.num) != Some(p) {
                            report.ports_changed += 1;
                        }
                    }
                    // The record takes the node's new facts and keeps
                    // what was read from it.
                    let mut old = Arc::unwrap_or_clone(std::mem::replace(
                        &mut s.rec,
                        Arc::new(new_record(&n, Vec::new())),
                    ));
                    let mut rec = new_record(&n, std::mem::take(&mut old.ports));
                    rec.reachable = old.reachable;
                    rec.failed_sweeps = old.failed_sweeps;
                    rec.class_port_info = old.class_port_info;
                    rec.samples_control = old.samples_control;
                    rec.samples_result = old.samples_result;
                    rec.samples_result_ext = old.samples_result_ext;
                    rec.source = old.source;
                    s.rec = Arc::new(rec);
                    s.dirty = true;
                    // A node whose PMA moved to another LID is asked
                    // ClassPortInfo again at the new one.
                    if o.id.lid != n.id.lid {
                        s.cpi_stale = true;
                        s.redirect = None;
                    }
                    nodes.push(n);
                    states.push(s);
                    next_old = old_nodes.next().zip(old_states.next());
                }
                other => {
                    next_old = other;
                    report.added += 1;
                    states.push(NodeState::new(&n));
                    nodes.push(n);
                }
            }
        }
        while let Some((o, s)) = next_old.take() {
            nodes.push(o);
            states.push(s);
            next_old = old_nodes.next().zip(old_states.next());
        }
        report.nodes = nodes.len();
        self.fabric.nodes = nodes;
        self.nodes = states;
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
    use std::time::Duration;

    use crate::fabric::state::tests::TWO;

    fn fabric(text: &str) -> Fabric {
        crate::ib::topology::parse(text).unwrap()
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
        // Nodes stay in GUID order, each with its state.
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
}
