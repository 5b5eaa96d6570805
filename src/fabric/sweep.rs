//! The background sweeper: reads every node and port on an interval and
//! publishes one immutable snapshot per sweep.
//!
//! Per sweep: ClassPortInfo for nodes that have not answered it yet (once per
//! node, following a redirect), then PortCounters for every port (a switch
//! through its port-0 LID with PortSelect, a CA port through its own LID),
//! PortCountersExtended where the capability mask says so, and
//! PortSamplesControl/PortSamplesResult per node unless the node showed it
//! does not answer them.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, info};

use super::cache::Cache;
use super::engine::{Engine, MadRequest};
use super::state::{SharedState, Slot};
use crate::pm::class_port_info::{CAP_EXT_WIDTH, CAP_EXT_WIDTH_NOIETF};
use crate::pm::mad::{attr, method};
use crate::pm::{PortCounters, PortCountersExtended};
use crate::transport::MadAddr;

pub use super::state::SweepConfig;

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepStats {
    pub sweep: u64,
    pub nodes: usize,
    pub answered: usize,
    pub mads: u64,
    pub timeouts: u64,
    pub elapsed: Duration,
}

pub struct Sweeper {
    state: SharedState,
    engine: Engine,
    cache: Arc<Cache>,
    interval: Duration,
}

/// A Get of `attr_id` with the given data area.
pub fn get(to: MadAddr, attr_id: u16, data: [u8; 192]) -> MadRequest {
    MadRequest {
        to,
        method: method::GET,
        attr_id,
        attr_mod: 0,
        data,
    }
}

/// The data area of a PortCounters request for `port` with these
/// CounterSelect bits (all zero for a Get).
pub fn port_counters_data(port: u8, counter_select: u16, counter_select2: u8) -> [u8; 192] {
    let mut data = [0u8; 192];
    PortCounters {
        port_select: port,
        counter_select,
        counter_select2,
        ..Default::default()
    }
    .encode(&mut data);
    data
}

impl Sweeper {
    pub fn new(state: SharedState, engine: Engine, cache: Arc<Cache>) -> Self {
        let interval = state.lock().cfg.interval;
        Sweeper {
            state,
            engine,
            cache,
            interval,
        }
    }

    pub fn state(&self) -> &SharedState {
        &self.state
    }

    /// Run one sweep and publish its snapshot.
    pub fn sweep_once(&mut self) -> SweepStats {
        let started = Instant::now();
        let (sweep_no, n) = {
            let mut st = self.state.lock();
            st.sweep_no += 1;
            (st.sweep_no, st.fabric.nodes.len())
        };
        let first = sweep_no == 1;
        let mut answered = vec![false; n];
        let mut mads = 0;
        let mut timeouts = 0;

        // ClassPortInfo, twice at most: a redirect sends the second to the
        // redirected PMA.
        for _ in 0..2 {
            let (reqs, slots) = {
                let st = self.state.lock();
                let mut reqs = Vec::new();
                let mut slots = Vec::new();
                for ni in 0..n {
                    if st.nodes[ni].cpi.is_none()
                        && let Some(to) = st.pma(ni, None)
                    {
                        reqs.push(get(to, attr::CLASS_PORT_INFO, [0; 192]));
                        slots.push(Slot::Cpi(ni));
                    }
                }
                (reqs, slots)
            };
            if reqs.is_empty() {
                break;
            }
            let st = self.run_batch(&reqs, &slots, &mut answered, first, "ClassPortInfo");
            mads += st.0;
            timeouts += st.1;
        }

        let (reqs, slots) = self.counter_requests();
        let st = self.run_batch(&reqs, &slots, &mut answered, first, "counters");
        mads += st.0;
        timeouts += st.1;

        {
            let mut st = self.state.lock();
            st.end_sweep(&answered);
            st.publish(&self.cache);
        }
        let stats = SweepStats {
            sweep: sweep_no,
            nodes: n,
            answered: answered.iter().filter(|a| **a).count(),
            mads,
            timeouts,
            elapsed: started.elapsed(),
        };
        if first {
            info!(
                nodes = stats.nodes,
                answered = stats.answered,
                mads = stats.mads,
                timeouts = stats.timeouts,
                ms = stats.elapsed.as_millis() as u64,
                "first sweep done"
            );
        } else {
            debug!(?stats, "sweep done");
        }
        stats
    }

    fn counter_requests(&self) -> (Vec<MadRequest>, Vec<Slot>) {
        let st = self.state.lock();
        let mut reqs = Vec::new();
        let mut slots = Vec::new();
        for (ni, node) in st.fabric.nodes.iter().enumerate() {
            let Some(cpi) = &st.nodes[ni].cpi else {
                continue;
            };
            let ext = cpi.capability_mask & (CAP_EXT_WIDTH | CAP_EXT_WIDTH_NOIETF) != 0;
            for (pi, port) in node.ports.iter().enumerate() {
                let Some(to) = st.pma(ni, Some(pi)) else {
                    continue;
                };
                reqs.push(get(
                    to,
                    attr::PORT_COUNTERS,
                    port_counters_data(port.num, 0, 0),
                ));
                slots.push(Slot::Counters(ni, pi));
                if ext {
                    let mut data = [0u8; 192];
                    PortCountersExtended {
                        port_select: port.num,
                        ..Default::default()
                    }
                    .encode(&mut data);
                    reqs.push(get(to, attr::PORT_COUNTERS_EXTENDED, data));
                    slots.push(Slot::Extended(ni, pi));
                }
            }
            if !st.nodes[ni].no_samples
                && let Some(to) = st.pma(ni, Some(0))
            {
                reqs.push(get(to, attr::PORT_SAMPLES_CONTROL, [0; 192]));
                slots.push(Slot::SamplesControl(ni));
                reqs.push(get(to, attr::PORT_SAMPLES_RESULT, [0; 192]));
                slots.push(Slot::SamplesResult(ni));
            }
        }
        (reqs, slots)
    }

    /// Send one batch and fold the outcomes into the state. Returns the
    /// number of MADs and of timeouts.
    fn run_batch(
        &mut self,
        reqs: &[MadRequest],
        slots: &[Slot],
        answered: &mut [bool],
        log_progress: bool,
        what: &str,
    ) -> (u64, u64) {
        let total = reqs.len();
        let mut done = 0usize;
        let mut last_log = Instant::now();
        let sent = Instant::now();
        let state = &self.state;
        let stats = self.engine.run(reqs, |i, outcome| {
            done += 1;
            if log_progress && last_log.elapsed() >= Duration::from_secs(2) {
                last_log = Instant::now();
                info!("first sweep: {what}: {done}/{total} MADs answered or timed out");
            }
            state.lock().apply(slots[i], outcome, sent, answered);
        });
        (stats.sent, stats.timeouts)
    }

    /// Sweep every `interval` until `shutdown` is set.
    pub fn spawn(mut self, shutdown: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("sweeper".into())
            .spawn(move || {
                while !shutdown.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    self.sweep_once();
                    let next = start + self.interval;
                    while !shutdown.load(Ordering::Relaxed) && Instant::now() < next {
                        std::thread::sleep(
                            next.saturating_duration_since(Instant::now())
                                .min(Duration::from_millis(100)),
                        );
                    }
                }
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::engine::EngineConfig;
    use crate::fabric::model::NodeType;
    use crate::fabric::topology;
    use crate::mib::tables::COUNTERS;
    use crate::pm::mad;
    use crate::transport::sim::{ManualClock, SimClock, SimFabric, SimOptions};

    fn setup(cfg: SweepConfig) -> (Sweeper, SimFabric, ManualClock, Arc<Cache>) {
        let clock = ManualClock::new();
        clock.advance(Duration::from_secs(60));
        let sim = SimFabric::new(
            topology::default_fabric(),
            SimOptions {
                seed: 7,
                traffic: true,
                clock: SimClock::Manual(clock.clone()),
            },
        );
        let engine = Engine::new(
            Box::new(sim.transport()),
            EngineConfig {
                window: 16,
                timeout: Duration::from_millis(20),
                retries: 1,
            },
        );
        let cache = Arc::new(Cache::new());
        let sweeper = Sweeper::new(
            SharedState::new(sim.fabric(), cfg),
            engine,
            Arc::clone(&cache),
        );
        (sweeper, sim, clock, cache)
    }

    fn read_pc(sim: &SimFabric, lid: u16, port: u8) -> PortCounters {
        let mut data = [0u8; 192];
        PortCounters {
            port_select: port,
            ..Default::default()
        }
        .encode(&mut data);
        let reply = sim
            .handle(
                lid,
                &mad::request(method::GET, attr::PORT_COUNTERS, 0, 9, &data),
            )
            .unwrap();
        PortCounters::decode(mad::parse(&reply).unwrap().1)
    }

    #[test]
    fn sweep_reads_every_node_and_port() {
        let (mut sw, sim, _clock, cache) = setup(SweepConfig::default());
        let st = sw.sweep_once();
        let fabric = sim.fabric();
        assert_eq!(st.nodes, fabric.nodes.len());
        assert_eq!(st.answered, fabric.nodes.len());
        assert_eq!(st.timeouts, 0);
        let snap = cache.load();
        assert_eq!(snap.sweep, 1);
        assert_eq!(snap.nodes.len(), fabric.nodes.len());
        for node in &fabric.nodes {
            let rec = snap.node(node.guid).unwrap();
            assert!(rec.class_port_info.is_some() && rec.samples_control.is_some());
            for p in &node.ports {
                let lid = if node.node_type == NodeType::Switch {
                    node.lid
                } else {
                    p.lid
                };
                let got = rec.port(p.num).unwrap().counters.unwrap();
                // The frozen clock: a second read gives the same values.
                assert_eq!(
                    got,
                    read_pc(&sim, lid, p.num),
                    "{} port {}",
                    node.guid,
                    p.num
                );
                assert!(
                    rec.port(p.num).unwrap().extended.is_some(),
                    "capability says 64-bit"
                );
            }
        }
    }

    #[test]
    fn totals_accumulate_and_survive_clears() {
        let (mut sw, sim, clock, cache) = setup(SweepConfig::default());
        sw.sweep_once();
        let node = sim
            .fabric()
            .nodes
            .into_iter()
            .find(|n| n.node_type == NodeType::Ca)
            .unwrap();
        let slot = COUNTERS
            .iter()
            .position(|c| c.name == "PortXmitPkts")
            .unwrap();
        let total = |c: &Cache| {
            c.load()
                .node(node.guid)
                .unwrap()
                .port(1)
                .unwrap()
                .totals
                .values[slot]
        };
        let t1 = total(&cache);
        assert!(t1 > 0);
        clock.advance(Duration::from_secs(1));
        sw.sweep_once();
        let t2 = total(&cache);
        assert!(t2 > t1);
        // Clear PortXmitPkts out of band: the total keeps growing from the
        // new, lower reading instead of jumping backwards.
        let mut data = [0u8; 192];
        PortCounters {
            port_select: 1,
            counter_select: 1 << 14,
            ..Default::default()
        }
        .encode(&mut data);
        sim.handle(
            node.ports[0].lid,
            &mad::request(method::SET, attr::PORT_COUNTERS, 0, 1, &data),
        )
        .unwrap();
        clock.advance(Duration::from_secs(1));
        sw.sweep_once();
        let after = read_pc(&sim, node.ports[0].lid, 1).xmit_pkts as u64;
        assert_eq!(total(&cache), t2 + after);
    }

    #[test]
    fn unreachable_nodes_keep_or_drop_rows_and_come_back() {
        for keep in [true, false] {
            let cfg = SweepConfig {
                unreachable_after: 2,
                keep_unreachable: keep,
                ..Default::default()
            };
            let (mut sw, sim, _clock, cache) = setup(cfg);
            sw.sweep_once();
            let victim = sim.fabric().nodes[3].guid;
            let n = sim.fabric().nodes.len();
            sim.set_reachable(victim, false);
            let st = sw.sweep_once();
            assert_eq!(st.answered, n - 1);
            assert!(
                cache.load().node(victim).unwrap().reachable,
                "one failed sweep"
            );
            sw.sweep_once();
            match cache.load().node(victim) {
                Some(r) => {
                    assert!(keep);
                    assert!(!r.reachable);
                    assert!(
                        r.ports.iter().any(|p| p.counters.is_some()),
                        "last values kept"
                    );
                }
                None => assert!(!keep),
            }
            assert_eq!(cache.load().nodes.len(), if keep { n } else { n - 1 });
            sim.set_reachable(victim, true);
            sw.sweep_once();
            let r = cache.load();
            let r = r.node(victim).unwrap();
            assert!(r.reachable && r.class_port_info.is_some());
        }
    }
}
