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
use std::time::{Duration, Instant, SystemTime};

use tracing::{debug, info, warn};

use super::cache::{Cache, NodeRecord, PortRecord, Snapshot, Totals};
use super::engine::{Engine, MadOutcome, MadRequest, STATUS_REDIRECT};
use super::model::{Fabric, Node, NodeType};
use crate::mib::tables::COUNTERS;
use crate::pm::class_port_info::{CAP_EXT_WIDTH, CAP_EXT_WIDTH_NOIETF};
use crate::pm::mad::method::GET as METHOD_GET;
use crate::pm::{
    ClassPortInfo, PortCounters, PortCountersExtended, PortSamplesControl, PortSamplesResult,
};
use crate::transport::MadAddr;

pub const ATTR_CLASS_PORT_INFO: u16 = 0x0001;
pub const ATTR_PORT_SAMPLES_CONTROL: u16 = 0x0010;
pub const ATTR_PORT_SAMPLES_RESULT: u16 = 0x0011;
pub const ATTR_PORT_COUNTERS: u16 = 0x0012;
pub const ATTR_PORT_COUNTERS_EXT: u16 = 0x001D;

#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Time from the start of one sweep to the start of the next.
    pub interval: Duration,
    /// Consecutive failed sweeps after which a node is marked unreachable.
    pub unreachable_after: u32,
    /// Keep an unreachable node's rows (with their last values) or drop them.
    pub keep_unreachable: bool,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            interval: Duration::from_secs(10),
            unreachable_after: 3,
            keep_unreachable: true,
        }
    }
}

#[derive(Default)]
struct PortState {
    counters: Option<PortCounters>,
    extended: Option<PortCountersExtended>,
    totals: Totals,
    read_at: Option<SystemTime>,
}

struct NodeState {
    /// The PMA's address after a ClassPortInfo redirect.
    redirect: Option<MadAddr>,
    cpi: Option<ClassPortInfo>,
    failed_sweeps: u32,
    /// Ever answered anything (a node that never did has no rows).
    seen: bool,
    /// The node does not answer PortSamplesControl/Result: stop asking.
    no_samples: bool,
    /// Sweeps in a row in which the node answered but not PortSamplesControl.
    samples_strikes: u32,
    /// PortSamplesControl went unanswered in the current sweep.
    samples_missed: bool,
    ports: Vec<PortState>,
    samples_control: Option<PortSamplesControl>,
    samples_result: Option<PortSamplesResult>,
}

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
    fabric: Fabric,
    engine: Engine,
    cache: Arc<Cache>,
    cfg: SweepConfig,
    state: Vec<NodeState>,
    sweep_no: u64,
}

/// Which reply a request's outcome belongs to.
#[derive(Clone, Copy)]
enum Slot {
    Cpi(usize),
    Counters(usize, usize),
    Extended(usize, usize),
    SamplesControl(usize),
    SamplesResult(usize),
}

impl Sweeper {
    pub fn new(fabric: Fabric, engine: Engine, cache: Arc<Cache>, cfg: SweepConfig) -> Self {
        let state = fabric
            .nodes
            .iter()
            .map(|n| NodeState {
                redirect: None,
                cpi: None,
                failed_sweeps: 0,
                seen: false,
                no_samples: false,
                samples_strikes: 0,
                samples_missed: false,
                ports: n.ports.iter().map(|_| PortState::default()).collect(),
                samples_control: None,
                samples_result: None,
            })
            .collect();
        Sweeper {
            fabric,
            engine,
            cache,
            cfg,
            state,
            sweep_no: 0,
        }
    }

    pub fn fabric(&self) -> &Fabric {
        &self.fabric
    }

    /// The address of the node's PMA (for a CA, the PMA of port `port`).
    fn pma(&self, ni: usize, port: Option<usize>) -> Option<MadAddr> {
        let node = &self.fabric.nodes[ni];
        if let Some(r) = self.state[ni].redirect {
            return Some(r);
        }
        let lid = match (node.node_type, port) {
            (NodeType::Switch, _) => node.lid,
            (_, Some(pi)) => node.ports[pi].lid,
            (_, None) => node.ports.iter().map(|p| p.lid).find(|&l| l != 0)?,
        };
        (lid != 0).then(|| MadAddr::gsi(lid))
    }

    fn get(to: MadAddr, attr_id: u16, data: [u8; 192]) -> MadRequest {
        MadRequest {
            to,
            method: METHOD_GET,
            attr_id,
            attr_mod: 0,
            data,
        }
    }

    /// Run one sweep and publish its snapshot.
    pub fn sweep_once(&mut self) -> SweepStats {
        let started = Instant::now();
        self.sweep_no += 1;
        let first = self.sweep_no == 1;
        let mut answered = vec![false; self.fabric.nodes.len()];
        let mut mads = 0;
        let mut timeouts = 0;

        // ClassPortInfo, twice at most: a redirect sends the second to the
        // redirected PMA.
        for _ in 0..2 {
            let mut reqs = Vec::new();
            let mut slots = Vec::new();
            for ni in 0..self.fabric.nodes.len() {
                if self.state[ni].cpi.is_none()
                    && let Some(to) = self.pma(ni, None)
                {
                    reqs.push(Self::get(to, ATTR_CLASS_PORT_INFO, [0; 192]));
                    slots.push(Slot::Cpi(ni));
                }
            }
            if reqs.is_empty() {
                break;
            }
            let st = self.run_batch(&reqs, &slots, &mut answered, first, "ClassPortInfo");
            mads += st.0;
            timeouts += st.1;
        }

        let mut reqs = Vec::new();
        let mut slots = Vec::new();
        for (ni, node) in self.fabric.nodes.iter().enumerate() {
            let Some(cpi) = &self.state[ni].cpi else {
                continue;
            };
            let ext = cpi.capability_mask & (CAP_EXT_WIDTH | CAP_EXT_WIDTH_NOIETF) != 0;
            for (pi, port) in node.ports.iter().enumerate() {
                let Some(to) = self.pma(ni, Some(pi)) else {
                    continue;
                };
                let mut data = [0u8; 192];
                PortCounters {
                    port_select: port.num,
                    ..Default::default()
                }
                .encode(&mut data);
                reqs.push(Self::get(to, ATTR_PORT_COUNTERS, data));
                slots.push(Slot::Counters(ni, pi));
                if ext {
                    let mut data = [0u8; 192];
                    PortCountersExtended {
                        port_select: port.num,
                        ..Default::default()
                    }
                    .encode(&mut data);
                    reqs.push(Self::get(to, ATTR_PORT_COUNTERS_EXT, data));
                    slots.push(Slot::Extended(ni, pi));
                }
            }
            if !self.state[ni].no_samples
                && let Some(to) = self.pma(ni, Some(0))
            {
                reqs.push(Self::get(to, ATTR_PORT_SAMPLES_CONTROL, [0; 192]));
                slots.push(Slot::SamplesControl(ni));
                reqs.push(Self::get(to, ATTR_PORT_SAMPLES_RESULT, [0; 192]));
                slots.push(Slot::SamplesResult(ni));
            }
        }
        let st = self.run_batch(&reqs, &slots, &mut answered, first, "counters");
        mads += st.0;
        timeouts += st.1;

        // Reachability.
        for (ni, ok) in answered.iter().enumerate() {
            let s = &mut self.state[ni];
            if std::mem::take(&mut s.samples_missed) && *ok {
                s.samples_strikes += 1;
                if s.samples_strikes >= 2 {
                    debug!(node = %self.fabric.nodes[ni].guid, "no answer to PortSamplesControl: not asking again");
                    s.no_samples = true;
                }
            }
            if *ok {
                if s.failed_sweeps >= self.cfg.unreachable_after {
                    info!(node = %self.fabric.nodes[ni].guid, "node answers again");
                }
                s.failed_sweeps = 0;
                s.seen = true;
            } else {
                s.failed_sweeps = s.failed_sweeps.saturating_add(1);
                if s.failed_sweeps == self.cfg.unreachable_after {
                    warn!(
                        node = %self.fabric.nodes[ni].guid,
                        desc = %self.fabric.nodes[ni].description,
                        sweeps = s.failed_sweeps,
                        "node unreachable"
                    );
                    // Ask ClassPortInfo again when it comes back.
                    s.cpi = None;
                    s.redirect = None;
                    s.no_samples = false;
                    s.samples_strikes = 0;
                }
            }
        }

        self.publish();
        let stats = SweepStats {
            sweep: self.sweep_no,
            nodes: self.fabric.nodes.len(),
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

    /// Send one batch and fold the outcomes into the node state. Returns the
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
        let now = SystemTime::now();
        let state = &mut self.state;
        let nodes = &self.fabric.nodes;
        let stats = self.engine.run(reqs, |i, outcome| {
            done += 1;
            if log_progress && last_log.elapsed() >= Duration::from_secs(2) {
                last_log = Instant::now();
                info!("first sweep: {what}: {done}/{total} MADs answered or timed out");
            }
            apply(state, nodes, slots[i], outcome, answered, now);
        });
        (stats.sent, stats.timeouts)
    }

    fn publish(&self) {
        let prev = self.cache.load();
        let mut out = Vec::with_capacity(self.fabric.nodes.len());
        for (node, s) in self.fabric.nodes.iter().zip(&self.state) {
            if !s.seen {
                continue;
            }
            let reachable = s.failed_sweeps < self.cfg.unreachable_after;
            if !reachable && !self.cfg.keep_unreachable {
                continue;
            }
            // An unreachable node keeps the values it had when last seen.
            if !reachable && let Some(old) = prev.node(node.guid) {
                let mut old = old.clone();
                old.reachable = false;
                old.failed_sweeps = s.failed_sweeps;
                out.push(old);
                continue;
            }
            out.push(record(node, s, reachable));
        }
        out.sort_by_key(|n| n.guid);
        self.cache.publish(Snapshot {
            sweep: self.sweep_no,
            taken: Some(SystemTime::now()),
            nodes: out,
        });
    }

    /// Sweep every `interval` until `shutdown` is set.
    pub fn spawn(mut self, shutdown: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("sweeper".into())
            .spawn(move || {
                while !shutdown.load(Ordering::Relaxed) {
                    let start = Instant::now();
                    self.sweep_once();
                    let next = start + self.cfg.interval;
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

fn record(node: &Node, s: &NodeState, reachable: bool) -> NodeRecord {
    NodeRecord {
        guid: node.guid,
        node_type: node.node_type,
        description: node.description.clone(),
        num_ports: node.num_ports,
        lid: node.lid,
        reachable,
        failed_sweeps: s.failed_sweeps,
        class_port_info: s.cpi,
        ports: node
            .ports
            .iter()
            .zip(&s.ports)
            .map(|(p, ps)| PortRecord {
                num: p.num,
                counters: ps.counters,
                extended: ps.extended,
                totals: ps.totals.clone(),
                read_at: ps.read_at,
            })
            .collect(),
        samples_control: s.samples_control,
        samples_result: s.samples_result,
    }
}

/// Add a new PortCounters reading to the 64-bit totals.
pub fn accumulate(totals: &mut Totals, prev: Option<&PortCounters>, cur: &PortCounters) {
    for (slot, def) in COUNTERS.iter().enumerate() {
        let now = (def.get)(cur) as u64;
        let inc = match prev {
            None => now,
            Some(p) => {
                let before = (def.get)(p) as u64;
                // A counter that went down was cleared out of band: count
                // from zero.
                if now >= before { now - before } else { now }
            }
        };
        totals.values[slot] = totals.values[slot].saturating_add(inc);
    }
}

fn apply(
    state: &mut [NodeState],
    nodes: &[Node],
    slot: Slot,
    outcome: MadOutcome,
    answered: &mut [bool],
    now: SystemTime,
) {
    let ni = match slot {
        Slot::Cpi(n)
        | Slot::Counters(n, _)
        | Slot::Extended(n, _)
        | Slot::SamplesControl(n)
        | Slot::SamplesResult(n) => n,
    };
    let s = &mut state[ni];
    let data = match outcome {
        MadOutcome::Reply { status, data } => {
            if let Slot::Cpi(_) = slot
                && status & STATUS_REDIRECT != 0
            {
                let cpi = ClassPortInfo::decode(&data);
                if cpi.redirect_lid != 0 {
                    info!(node = %nodes[ni].guid, lid = cpi.redirect_lid, qp = cpi.redirect_qp, "PMA redirects");
                    s.redirect = Some(MadAddr {
                        lid: cpi.redirect_lid,
                        qpn: cpi.redirect_qp,
                        qkey: cpi.redirect_qkey,
                        pkey_index: 0,
                        sl: cpi.redirect_sl,
                    });
                    answered[ni] = true;
                    return;
                }
            }
            answered[ni] = true;
            data
        }
        MadOutcome::Status(st) => {
            answered[ni] = true;
            if matches!(slot, Slot::SamplesControl(_) | Slot::SamplesResult(_)) && !s.no_samples {
                debug!(node = %nodes[ni].guid, status = st, "no PortSamplesControl/Result");
                s.no_samples = true;
            }
            return;
        }
        MadOutcome::Timeout | MadOutcome::Failed(_) => {
            if matches!(slot, Slot::SamplesControl(_)) {
                s.samples_missed = true;
            }
            return;
        }
    };
    match slot {
        Slot::Cpi(_) => s.cpi = Some(ClassPortInfo::decode(&data)),
        Slot::Counters(_, pi) => {
            let cur = PortCounters::decode(&data);
            let ps = &mut s.ports[pi];
            accumulate(&mut ps.totals, ps.counters.as_ref(), &cur);
            ps.counters = Some(cur);
            ps.read_at = Some(now);
        }
        Slot::Extended(_, pi) => s.ports[pi].extended = Some(PortCountersExtended::decode(&data)),
        Slot::SamplesControl(_) => {
            s.samples_strikes = 0;
            s.samples_control = Some(PortSamplesControl::decode(&data));
        }
        Slot::SamplesResult(_) => s.samples_result = Some(PortSamplesResult::decode(&data)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::engine::EngineConfig;
    use crate::fabric::topology;
    use crate::pm::mad::{self, attr, method};
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
        let sweeper = Sweeper::new(sim.fabric(), engine, Arc::clone(&cache), cfg);
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
