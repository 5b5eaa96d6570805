//! Publication: the state's node records into the cache, as a whole
//! snapshot (after a sweep, during the first one as nodes are read, and
//! once a sweep has copied a share of the fabric's records), or one node's
//! record patched in (after a write or a DOCA sample).

use std::sync::Arc;
use std::time::Instant;

use super::{FabricState, Flag, PUBLISH_AFTER_PORTS};
use crate::fabric::cache::{Cache, Snapshot};
use crate::fabric::record::{DataSource, NodeRecord};
use crate::ib::subnet::SubnetView;

impl FabricState {
    /// Bring node `ni`'s record up to date with the node's state.
    fn sync(&mut self, ni: usize) {
        let s = &mut self.nodes[ni];
        if !s.take(Flag::Dirty) {
            return;
        }
        let reachable = s.failed_sweeps < self.cfg.unreachable_after;
        let source = match (s.has(Flag::Doca), self.cfg.mads) {
            (false, _) => DataSource::Pma,
            (true, false) => DataSource::Doca,
            (true, true) => DataSource::PmaAndDoca,
        };
        let r = &s.rec;
        if r.reachable == reachable && r.failed_sweeps == s.failed_sweeps && r.source == source {
            return;
        }
        let r = Arc::make_mut(&mut s.rec);
        r.reachable = reachable;
        r.failed_sweeps = s.failed_sweeps;
        r.source = source;
    }

    /// Give every node's record the node-name-map's name when the map in
    /// use changed since they were named: once per map, not per read.
    fn name_all(&mut self) {
        let generation = self.cfg.names.generation();
        if self.names_gen == generation {
            return;
        }
        self.names_gen = generation;
        for ni in 0..self.nodes.len() {
            self.name(ni);
        }
    }

    /// Give node `ni`'s record the name the node-name-map in use has for it.
    pub(super) fn name(&mut self, ni: usize) {
        let map = self.cfg.names.current();
        let s = &mut self.nodes[ni];
        let name = map.shared(s.rec.id.guid);
        if s.rec.mapped_name.as_ref() != name {
            Arc::make_mut(&mut s.rec).mapped_name = name.cloned();
        }
    }

    /// Node `ni`'s record as the cache should show it (brought up to
    /// date), or `None` when it has no rows: it never answered, or it is
    /// unreachable and unreachable nodes are not kept (an unreachable node
    /// that is kept shows the values it had when last seen).
    fn record(&mut self, ni: usize) -> Option<Arc<NodeRecord>> {
        self.sync(ni);
        self.name_all();
        let s = &self.nodes[ni];
        let rows = s.has(Flag::Seen) && (s.rec.reachable || self.cfg.keep_unreachable);
        rows.then(|| Arc::clone(&s.rec))
    }

    /// Publish a whole new snapshot, taken at `now`.
    pub fn publish(&mut self, cache: &Cache, now: Instant) {
        self.publish_as(cache, self.sweep_no, now);
    }

    /// Publish a snapshot of every node with rows, numbered `sweep` and
    /// taken at `now`; returns the number of nodes in it.
    fn publish_as(&mut self, cache: &Cache, sweep: u64, now: Instant) -> usize {
        let prev = cache.load();
        // In GUID order, as a snapshot's records are.
        let nodes: Vec<Arc<NodeRecord>> = (0..self.by_guid.len())
            .filter_map(|k| self.record(self.by_guid[k] as usize))
            .collect();
        let rows = nodes.len();
        self.copies = 0;
        let ports: usize = self.nodes.iter().map(|s| s.rec.port_count()).sum();
        self.copy_budget = PUBLISH_AFTER_PORTS.max(ports / 32);
        let subnet = self.subnet_view(sweep, &nodes);
        cache.publish(Snapshot {
            sweep,
            taken: Some(now),
            interval: self.cfg.interval,
            nodes,
            stats: self.figures,
            reachable: 0,
            notify: prev.notify,
            shared_descriptions: Default::default(),
            health: Arc::clone(&prev.health),
            plan: Arc::clone(&prev.plan),
            forgotten: std::mem::take(&mut self.forgotten).into(),
            subnets: Arc::new([subnet]),
        });
        // The replaced snapshot's records are gone (unless a reader still
        // holds them): readings no node holds any more are forgotten.
        drop(prev);
        self.readings.prune();
        rows
    }

    /// What the publication numbered `sweep`, of `nodes`, says of the
    /// subnet.
    fn subnet_view(&self, sweep: u64, nodes: &[Arc<NodeRecord>]) -> SubnetView {
        let missed = nodes.iter().filter(|n| n.failed_sweeps > 0).count();
        SubnetView {
            sweep_state: crate::ib::subnet::SweepState::judge(
                self.subnet.sweep_state == crate::ib::subnet::SweepState::NoLocalPort,
                nodes.len(),
                missed,
            ),
            nodes: nodes.len() as u32,
            ports: nodes.iter().map(|n| n.port_count() as u32).sum(),
            sweep,
            swept: self.figures.ended,
            duration_ms: self.figures.duration_ms,
            ..self.subnet.clone()
        }
    }

    /// During the first sweep: mark the nodes that answered so far as seen
    /// and publish them (the sweep count stays at the sweeps completed).
    /// Returns the number of nodes with rows.
    pub fn publish_partial(&mut self, cache: &Cache, answered: &[bool], now: Instant) -> usize {
        for (s, _) in self.nodes.iter_mut().zip(answered).filter(|(_, a)| **a) {
            s.set(Flag::Seen, true);
        }
        self.publish_as(cache, self.sweep_no.saturating_sub(1), now)
    }

    /// Publish node `ni`'s record alone into the current snapshot.
    pub fn publish_node(&mut self, cache: &Cache, ni: usize) {
        let record = self.record(ni);
        cache.patch(self.nodes[ni].rec.id.guid, record);
    }

    /// Port records copied since the last publication, and how many make
    /// one due.
    #[cfg(test)]
    pub(crate) fn copies_pending(&self) -> (usize, usize) {
        (self.copies, self.copy_budget)
    }

    /// Publish what the sweep has so far when it has copied enough
    /// records ([`PUBLISH_AFTER_PORTS`]); returns the number of nodes with
    /// rows when it did.
    pub fn publish_if_due(
        &mut self,
        cache: &Cache,
        answered: &[bool],
        now: Instant,
    ) -> Option<usize> {
        (self.copies >= self.copy_budget).then(|| self.publish_partial(cache, answered, now))
    }
}

#[cfg(test)]
mod tests {
    use crate::fabric::cache::Cache;
    use crate::fabric::settings::SweepConfig;
    use crate::fabric::state::SharedState;
    use crate::fabric::state::tests::two_switches;

    /// A node has rows once it answered; during the first sweep the nodes
    /// that answered so far are published under sweep 0; a node that
    /// stopped answering keeps its rows only with `keep_unreachable`.
    #[test]
    fn rows_are_the_nodes_that_answered_and_unreachable_ones_as_configured() {
        for keep in [true, false] {
            let cfg = SweepConfig {
                keep_unreachable: keep,
                unreachable_after: 1,
                ..Default::default()
            };
            let state = SharedState::new(two_switches(), cfg, std::time::Instant::now());
            let cache = Cache::new();
            let mut st = state.lock();
            st.publish(&cache, std::time::Instant::now());
            assert!(cache.load().nodes.is_empty(), "nothing answered yet");
            st.sweep_no = 1;
            assert_eq!(
                st.publish_partial(&cache, &[true, false], std::time::Instant::now()),
                1
            );
            assert_eq!(cache.load().sweep, 0, "the first sweep is not done");
            st.end_sweep(&[true, true], std::time::Instant::now());
            st.publish(&cache, std::time::Instant::now());
            assert_eq!((cache.load().sweep, cache.load().nodes.len()), (1, 2));
            st.sweep_no = 2;
            st.end_sweep(&[true, false], std::time::Instant::now());
            st.publish(&cache, std::time::Instant::now());
            let snap = cache.load();
            assert_eq!(snap.nodes.len(), if keep { 2 } else { 1 }, "keep {keep}");
            assert_eq!(snap.reachable, 1);
        }
    }

    /// The node-name-map's names are on the published records, once per
    /// map: a map read again renames at the next publication, and a node
    /// it leaves out goes back to its NodeDescription.
    #[test]
    fn records_are_named_by_the_node_name_map() {
        use crate::ib::names::Names;
        use crate::mib::read::port_name;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("map");
        let fabric = two_switches();
        let (a, b) = (fabric.nodes[0].id.guid, fabric.nodes[1].id.guid);
        std::fs::write(&file, format!("{a} \"leaf07\"\n")).unwrap();
        let names = std::sync::Arc::new(Names::open(Some(&file)).unwrap());
        let cfg = SweepConfig {
            names: std::sync::Arc::clone(&names),
            ..Default::default()
        };
        let state = SharedState::new(fabric.clone(), cfg, std::time::Instant::now());
        let cache = Cache::new();
        let mut st = state.lock();
        st.end_sweep(&[true, true], std::time::Instant::now());
        st.publish(&cache, std::time::Instant::now());
        let snap = cache.load();
        let (na, nb) = (snap.node(a).unwrap(), snap.node(b).unwrap());
        assert_eq!(na.name(), "leaf07");
        assert_eq!(&*na.id.description, &*fabric.nodes[0].id.description);
        assert_eq!(nb.name(), &*fabric.nodes[1].id.description);
        assert_eq!(port_name(na, 1, &snap), "leaf07/1");
        // Both named alike: the GUID tells them apart.
        std::fs::write(&file, format!("{a} \"leaf07\"\n{b} \"leaf07\"\n")).unwrap();
        assert!(names.refresh());
        st.publish(&cache, std::time::Instant::now());
        let snap = cache.load();
        assert_eq!(snap.node(b).unwrap().name(), "leaf07");
        assert_eq!(
            port_name(snap.node(a).unwrap(), 2, &snap),
            format!("leaf07 {a}/2")
        );
        // Out of the map: its NodeDescription again.
        std::fs::write(&file, format!("{b} \"spine01-renamed\"\n")).unwrap();
        assert!(names.refresh());
        st.publish(&cache, std::time::Instant::now());
        let snap = cache.load();
        assert_eq!(
            snap.node(a).unwrap().name(),
            &*fabric.nodes[0].id.description
        );
        assert_eq!(snap.node(b).unwrap().name(), "spine01-renamed");
    }

    /// A node a rediscovery adds after the map was taken up is named by
    /// it at its first publication, alone or with the others, and renamed
    /// when the map is read again.
    #[test]
    fn a_node_merged_in_is_named_by_the_map_in_use() {
        use crate::ib::names::Names;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("map");
        let fabric = two_switches();
        let mut three = fabric.clone();
        let mut newcomer = three.nodes[0].clone();
        newcomer.id.guid = crate::ib::Guid(0x77);
        newcomer.ports.iter_mut().for_each(|p| p.set_remote(None));
        three.nodes.push(newcomer);
        std::fs::write(&file, "0x77 \"rack3-new\"\n").unwrap();
        let names = std::sync::Arc::new(Names::open(Some(&file)).unwrap());
        let cfg = SweepConfig {
            names: std::sync::Arc::clone(&names),
            ..Default::default()
        };
        let state = SharedState::new(fabric, cfg, std::time::Instant::now());
        let cache = Cache::new();
        let mut st = state.lock();
        st.end_sweep(&[true, true], std::time::Instant::now());
        st.publish(&cache, std::time::Instant::now());
        st.merge(three, std::time::Instant::now());
        let ni = st.node_index(crate::ib::Guid(0x77)).unwrap();
        st.end_sweep(&[true, true, true], std::time::Instant::now());
        // Alone first (a write's publication), then with the others.
        st.publish_node(&cache, ni);
        assert_eq!(
            cache.load().node(crate::ib::Guid(0x77)).unwrap().name(),
            "rack3-new"
        );
        st.publish(&cache, std::time::Instant::now());
        assert_eq!(
            cache.load().node(crate::ib::Guid(0x77)).unwrap().name(),
            "rack3-new"
        );
        std::fs::write(&file, "0x77 \"rack3-moved\"\n").unwrap();
        assert!(names.refresh());
        st.publish_node(&cache, ni);
        assert_eq!(
            cache.load().node(crate::ib::Guid(0x77)).unwrap().name(),
            "rack3-moved"
        );
    }
}
