//! The published snapshot: the sweeper builds a new [`Snapshot`] of the
//! node records and swaps a pointer; readers never wait on the sweeper.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;

use super::record::NodeRecord;
use crate::ib::Guid;
use crate::ib::cabling::PlanVerdicts;
use crate::ib::health::{Ack, Verdicts};

/// One consistent view of the fabric: nodes ordered by GUID.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    /// Number of the sweep that produced it (0 = nothing read yet).
    pub sweep: u64,
    /// When it was published (monotonic; [`Snapshot::published_wall`]
    /// gives the wall-clock time).
    pub taken: Option<Instant>,
    /// The sweep interval of the sweeper that produced it: how long a
    /// reading may be before the next one replaces it.
    pub interval: Duration,
    /// Shared records: replacing one node's record copies pointers only.
    pub nodes: Vec<Arc<NodeRecord>>,
    /// The last sweep's figures, for the agent scalars.
    pub stats: SweepFigures,
    /// Nodes marked reachable: counted when the snapshot is stored, so no
    /// request counts them.
    pub reachable: usize,
    /// Notifications sent, suppressed and dropped so far, for the agent
    /// scalars.
    pub notify: NotifyFigures,
    /// The NodeDescriptions two or more nodes share, sorted: a port's name
    /// (pmPortName) adds the node GUID to them. Found when the snapshot is
    /// stored, so no request looks for them.
    pub shared_descriptions: Arc<[Arc<str>]>,
    /// The health evaluator's verdicts of the latest sweep it evaluated
    /// ([`Cache::set_health`]); a new snapshot carries the last ones over
    /// until the evaluator has looked at it.
    pub health: Arc<Verdicts>,
    /// The comparison with the plan ([`Cache::set_plan`]); carried over
    /// like [`Snapshot::health`].
    pub plan: Arc<PlanVerdicts>,
    /// The nodes forgotten since the snapshot before it
    /// (`fabric.forget_after`): the notification evaluator lets them go.
    pub forgotten: Arc<[crate::ib::Guid]>,
    /// The subnets the agent sweeps, by index (empty before the first
    /// publication of a sweeper that knows its subnet).
    pub subnets: Arc<[crate::ib::subnet::SubnetView]>,
}

/// What the agent scalars say about notifications: totals since the start
/// (the notifier after each sweep stores them with [`Cache::set_notify`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NotifyFigures {
    /// Handed to snmpd (or sent to the trap sinks).
    pub sent: u64,
    /// Held back by the per-sweep limit.
    pub suppressed: u64,
    /// Lost: the queue kept while snmpd was away was full.
    pub dropped: u64,
}

/// What the agent scalars say about the last sweep and discovery.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepFigures {
    pub ended: Option<Instant>,
    pub duration_ms: u64,
    pub mads: u64,
    pub timeouts: u64,
    /// When the fabric was last discovered.
    pub discovered: Option<Instant>,
}

impl Snapshot {
    /// The subnets being swept, a bit per index ([`SubnetView::sweep_state`]);
    /// None while the snapshot has no subnet views.
    ///
    /// [`SubnetView::sweep_state`]: crate::ib::subnet::SubnetView::sweep_state
    pub fn swept_subnets(&self) -> Option<u64> {
        if self.subnets.is_empty() {
            return None;
        }
        Some(
            self.subnets
                .iter()
                .filter(|v| v.sweep_state.is_swept() && usize::from(v.index) < 64)
                .fold(0, |m, v| m | 1 << v.index),
        )
    }

    /// A node whose every subnet is not being swept (the agent's trouble,
    /// not the node's): its misses are no verdict of its own. `swept`:
    /// [`Self::swept_subnets`].
    pub fn node_unswept(swept: Option<u64>, node: &NodeRecord) -> bool {
        let Some(mask) = swept else { return false };
        node.port_count() != 0
            && node
                .ports()
                .all(|p| p.subnet >= 64 || mask & (1 << p.subnet) == 0)
    }

    fn count_reachable(&mut self) {
        self.reachable = self.nodes.iter().filter(|n| n.reachable).count();
    }

    /// [`Self::find_shared_descriptions`], or `prev`'s when the nodes are
    /// the same and so are their names (most publications: a comparison
    /// of pointers instead of a sort).
    fn shared_descriptions_after(&mut self, prev: &Snapshot) {
        let same = self.nodes.len() == prev.nodes.len()
            && self
                .nodes
                .iter()
                .zip(&prev.nodes)
                .all(|(a, b)| Arc::ptr_eq(a.name_arc(), b.name_arc()) || a.name() == b.name());
        if same {
            self.shared_descriptions = Arc::clone(&prev.shared_descriptions);
        } else {
            self.find_shared_descriptions();
        }
    }

    /// Finds the names ([`NodeRecord::name`]) two or more nodes share (a
    /// sort of every node's: done when a snapshot is stored, and by a
    /// patch only when it changes a name).
    fn find_shared_descriptions(&mut self) {
        let mut all: Vec<&Arc<str>> = self.nodes.iter().map(|n| n.name_arc()).collect();
        all.sort_unstable();
        let mut shared: Vec<Arc<str>> = all
            .windows(2)
            .filter(|w| w[0] == w[1])
            .map(|w| Arc::clone(w[0]))
            .collect();
        shared.dedup();
        self.shared_descriptions = shared.into();
    }

    /// The wall-clock time of the publication, given the wall clock and
    /// the monotonic clock read together now: the one place a wall-clock
    /// time is made of a publication's monotonic stamp.
    pub fn published_wall(&self, wall_now: SystemTime, now: Instant) -> Option<SystemTime> {
        let age = now.checked_duration_since(self.taken?)?;
        wall_now.checked_sub(age)
    }

    /// Whether another node goes by the same name ([`NodeRecord::name`]).
    pub fn name_is_shared(&self, name: &str) -> bool {
        self.shared_descriptions
            .binary_search_by(|d| (**d).cmp(name))
            .is_ok()
    }

    pub fn node(&self, guid: Guid) -> Option<&NodeRecord> {
        self.nodes
            .binary_search_by_key(&guid, |n| n.id.guid)
            .ok()
            .map(|i| &*self.nodes[i])
    }
}

/// The shared, swappable pointer to the latest snapshot.
#[derive(Debug)]
pub struct Cache {
    current: ArcSwap<Snapshot>,
    /// Acknowledgements of verdicts (SNMP SETs) the evaluator has not
    /// taken in yet; at most [`MAX_ACKS`].
    acks: Mutex<Vec<Ack>>,
    /// Held by the writers that keep fields of the current snapshot
    /// ([`Cache::publish`],
    /// [`Cache::set_health`], [`Cache::set_notify`]), so that none loses
    /// another's.
    writer: Mutex<()>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Acknowledgements held for the evaluator at most (one SET's worth of
/// varbinds many times over; past it the oldest are let go).
pub const MAX_ACKS: usize = 4096;

impl Default for Cache {
    fn default() -> Self {
        Self::new()
    }
}

impl Cache {
    pub fn new() -> Self {
        Cache {
            current: ArcSwap::from_pointee(Snapshot::default()),
            acks: Mutex::new(Vec::new()),
            writer: Mutex::new(()),
        }
    }

    /// Publish a new snapshot (a sweeper's, or one merged from the
    /// members of a federation): its health verdicts, plan verdicts and
    /// notification figures are the current ones (those it carries are
    /// ignored).
    pub fn publish(&self, mut snap: Snapshot) {
        snap.count_reachable();
        let _w = lock(&self.writer);
        let cur = self.current.load();
        snap.shared_descriptions_after(&cur);
        // The current ones, whatever the publisher loaded before: an
        // acknowledgement or an evaluation stored since stays.
        snap.health = Arc::clone(&cur.health);
        snap.plan = Arc::clone(&cur.plan);
        snap.notify = cur.notify;
        self.current.store(Arc::new(snap));
    }
    /// The latest snapshot (a cheap pointer copy).
    pub fn load(&self) -> Arc<Snapshot> {
        self.current.load_full()
    }

    /// Store the health verdicts in the current snapshot.
    pub fn set_health(&self, verdicts: Arc<Verdicts>) {
        let _w = lock(&self.writer);
        self.current.rcu(|cur| {
            let mut next = Snapshot::clone(cur);
            next.health = Arc::clone(&verdicts);
            next
        });
    }

    /// Store the plan comparison's verdicts in the current snapshot.
    pub fn set_plan(&self, verdicts: Arc<PlanVerdicts>) {
        let _w = lock(&self.writer);
        self.current.rcu(|cur| {
            let mut next = Snapshot::clone(cur);
            next.plan = Arc::clone(&verdicts);
            next
        });
    }

    /// Store the evaluator's verdicts with the acknowledgements it has not
    /// taken in yet applied (one made while it evaluated stays seen).
    pub fn store_verdicts(&self, verdicts: Verdicts) {
        let acks = lock(&self.acks);
        let shown = acks
            .iter()
            .fold(verdicts, |v, a| v.acknowledged(*a).unwrap_or(v));
        self.set_health(Arc::new(shown));
    }

    /// Acknowledge a standing verdict: readers see it cleared at once, and
    /// the evaluator takes the acknowledgement in at its next evaluation.
    /// False (nothing changed) when the port has no such verdict.
    pub fn acknowledge(&self, ack: Ack) -> bool {
        let mut acks = lock(&self.acks);
        let Some(cleared) = self.current.load().health.acknowledged(ack) else {
            return false;
        };
        if acks.len() >= MAX_ACKS {
            acks.remove(0);
        }
        acks.push(ack);
        self.set_health(Arc::new(cleared));
        true
    }

    /// The acknowledgements made since the last call.
    pub fn take_acks(&self) -> Vec<Ack> {
        std::mem::take(&mut *self.acks.lock().unwrap_or_else(|e| e.into_inner()))
    }

    /// Store the notification figures in the current snapshot.
    pub fn set_notify(&self, figures: NotifyFigures) {
        let _w = lock(&self.writer);
        self.current.rcu(|cur| {
            let mut next = Snapshot::clone(cur);
            next.notify = figures;
            next
        });
    }

    /// Replace (or insert, or with `None` remove) one node's record in the
    /// current snapshot.
    pub fn patch(&self, guid: Guid, record: Option<Arc<NodeRecord>>) {
        self.current.rcu(|cur| {
            let mut next = Snapshot {
                sweep: cur.sweep,
                taken: cur.taken,
                interval: cur.interval,
                nodes: cur.nodes.clone(),
                stats: cur.stats,
                reachable: 0,
                notify: cur.notify,
                shared_descriptions: Arc::clone(&cur.shared_descriptions),
                health: Arc::clone(&cur.health),
                plan: Arc::clone(&cur.plan),
                forgotten: Arc::clone(&cur.forgotten),
                subnets: Arc::clone(&cur.subnets),
            };
            let renamed = match (
                next.nodes.binary_search_by_key(&guid, |n| n.id.guid),
                &record,
            ) {
                (Ok(i), Some(r)) => {
                    let renamed = next.nodes[i].name() != r.name();
                    next.nodes[i] = Arc::clone(r);
                    renamed
                }
                (Ok(i), None) => {
                    next.nodes.remove(i);
                    true
                }
                (Err(i), Some(r)) => {
                    next.nodes.insert(i, Arc::clone(r));
                    true
                }
                (Err(_), None) => false,
            };
            next.count_reachable();
            if renamed {
                next.find_shared_descriptions();
            }
            next
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::health::{Condition, Mark, PortVerdict};

    /// Verdicts of one degraded port.
    fn degraded() -> Verdicts {
        let mut e = PortVerdict {
            guid: Guid(1),
            port: 1,
            ..Default::default()
        };
        e.marks[Condition::Degraded as usize] = Some(Mark::default());
        Verdicts {
            sweep: 1,
            ports: Arc::new([e]),
            ..Default::default()
        }
    }

    const ACK: Ack = Ack {
        guid: Guid(1),
        port: 1,
        condition: None,
    };

    /// A publisher loads the snapshot, an operator acknowledges, the
    /// publisher stores what it built: the acknowledgement stays seen.
    #[test]
    fn an_acknowledgement_between_a_load_and_a_publication_stays_seen() {
        let cache = Cache::new();
        cache.set_health(Arc::new(degraded()));
        let prev = cache.load();
        assert!(cache.acknowledge(ACK));
        cache.publish(Snapshot {
            sweep: 2,
            health: Arc::clone(&prev.health),
            notify: prev.notify,
            ..Default::default()
        });
        assert!(cache.load().health.unhealthy().next().is_none());
    }

    /// The evaluator took the acknowledgements in, then one more came
    /// before it stored its verdicts: that one stays seen too.
    #[test]
    fn an_acknowledgement_made_during_an_evaluation_stays_seen() {
        let cache = Cache::new();
        cache.set_health(Arc::new(degraded()));
        assert!(cache.take_acks().is_empty());
        // The evaluation, made before the acknowledgement.
        let evaluated = degraded();
        assert!(cache.acknowledge(ACK));
        cache.store_verdicts(evaluated);
        assert!(cache.load().health.unhealthy().next().is_none());
        // Taken in by the next evaluation.
        assert_eq!(cache.take_acks(), vec![ACK]);
    }

    #[test]
    fn the_wall_clock_time_of_a_publication_is_its_age_before_now() {
        let t0 = Instant::now();
        let snap = Snapshot {
            taken: Some(t0),
            ..Default::default()
        };
        let wall = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let now = t0 + Duration::from_millis(2500);
        assert_eq!(
            snap.published_wall(wall, now),
            Some(wall - Duration::from_millis(2500))
        );
        // Read before the stamp (clocks read in another order): none.
        assert_eq!(snap.published_wall(wall, t0 - Duration::from_secs(1)), None);
        assert_eq!(Snapshot::default().published_wall(wall, now), None);
    }
}
