//! The write path to the fabric: PerformanceSet of PortCounters (clear) and
//! PortSamplesControl (start a sample), with a deadline well under the AgentX
//! master's 1 s timeout, and a poller that re-reads nodes with a running
//! sample until it completes.
//!
//! Both use their own MAD engine, so a write never waits behind a sweep or a
//! poll. Every confirmed write is folded into the shared state and published
//! at once: the next read shows it.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, warn};

use super::cache::Cache;
use super::engine::{Engine, EngineConfig, MadOutcome, MadRequest};
use super::mads::{get, port_counters_data};
use super::state::{SharedState, Slot};
use crate::ib::{Guid, NodeType};
use crate::pm::PortSamplesControl;
use crate::pm::mad::{attr, method, status};
use crate::pm::port_counters::ALL_PORTS;
use crate::pm::samples::STATUS_DONE;
use crate::time::Clock;
use crate::transport::{MadTransport, TransportError};

#[derive(Clone, Copy, Debug)]
pub struct ControlConfig {
    /// Deadline of one write MAD; a write makes at most two rounds of
    /// `timeout x (retries + 1)`.
    pub timeout: Duration,
    pub retries: u32,
    /// How often a node with a running sample is re-read.
    pub poll_interval: Duration,
}

impl Default for ControlConfig {
    fn default() -> Self {
        ControlConfig {
            timeout: Duration::from_millis(150),
            retries: 1,
            poll_interval: Duration::from_millis(200),
        }
    }
}

impl ControlConfig {
    /// The longest a `write` can take.
    pub fn deadline(&self) -> Duration {
        2 * self.timeout * (self.retries + 1)
    }
}

/// One write to a node's PMA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOp {
    /// PerformanceSet(PortCounters) on `port` (0xFF: every port of a switch
    /// with AllPortSelect) with these CounterSelect/CounterSelect2 bits.
    ClearCounters {
        guid: Guid,
        port: u8,
        select: u16,
        select2: u8,
    },
    /// PerformanceSet(PortSamplesControl): per IBA this (re)starts sampling.
    SamplesControl {
        guid: Guid,
        control: PortSamplesControl,
    },
}

impl WriteOp {
    pub fn guid(&self) -> Guid {
        match self {
            WriteOp::ClearCounters { guid, .. } | WriteOp::SamplesControl { guid, .. } => *guid,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteError {
    UnknownNode,
    NoAddress,
    Timeout,
    /// The PMA answered with this MAD status.
    Status(u16),
    /// The PMA kept another sample running (its reply shows another Tag).
    Busy {
        tag: u16,
    },
    /// The transport refused the MAD or failed.
    Failed(TransportError),
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WriteError::UnknownNode => f.write_str("unknown node"),
            WriteError::NoAddress => f.write_str("node has no LID"),
            WriteError::Timeout => f.write_str("no answer before the deadline"),
            WriteError::Status(s) => write!(f, "PMA answered MAD status {s:#06x}"),
            WriteError::Busy { tag } => write!(f, "PMA is busy with the sample of Tag {tag:#06x}"),
            WriteError::Failed(e) => e.fmt(f),
        }
    }
}

pub struct Controller {
    state: SharedState,
    cache: Arc<Cache>,
    writer: Mutex<Engine>,
    poller: Mutex<Engine>,
    /// Node indexes with a sample running.
    watch: Mutex<BTreeSet<Guid>>,
    cfg: ControlConfig,
    /// Where the writes and the polls read the time.
    clock: Clock,
}

impl Controller {
    /// `write_transport` and `poll_transport` are two handles to the fabric,
    /// separate from the sweeper's.
    pub fn new(
        state: SharedState,
        cache: Arc<Cache>,
        write_transport: Box<dyn MadTransport>,
        poll_transport: Box<dyn MadTransport>,
        cfg: ControlConfig,
    ) -> Self {
        let ecfg = EngineConfig {
            window: 64,
            timeout: cfg.timeout,
            retries: cfg.retries,
        };
        Controller {
            state,
            cache,
            writer: Mutex::new(Engine::new(write_transport, ecfg)),
            poller: Mutex::new(Engine::new(poll_transport, ecfg)),
            watch: Mutex::new(BTreeSet::new()),
            cfg,
            clock: Clock::system(),
        }
    }

    /// The writes and the polls read the time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        for engine in [&mut self.writer, &mut self.poller] {
            let engine = engine.get_mut().unwrap_or_else(|e| e.into_inner());
            engine.set_clock(clock.clone());
        }
        self.clock = clock;
        self
    }

    /// Whether its state has node `guid` and its port `port` (unless None
    /// or 0xFF, every port): None when not, else whether that port (or
    /// some port of the node) has a link here.
    pub fn serves(&self, guid: Guid, port: Option<u8>) -> Option<bool> {
        let st = self.state.lock();
        let linked = |p: &crate::fabric::record::PortRecord| p.link.remote_port != 0;
        match port {
            Some(p) if p != ALL_PORTS => {
                let (ni, pi) = st.port_index(guid, p)?;
                Some(st.node(ni).ports().nth(pi).is_some_and(linked))
            }
            _ => {
                let ni = st.node_index(guid)?;
                Some(st.node(ni).ports().any(linked))
            }
        }
    }

    /// The cache it publishes written nodes to.
    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    pub fn config(&self) -> ControlConfig {
        self.cfg
    }

    /// Apply `ops` (all in parallel); one result per op. Returns within
    /// [`ControlConfig::deadline`].
    pub fn write(&self, ops: &[WriteOp]) -> Vec<Result<(), WriteError>> {
        let mut results: Vec<Result<(), WriteError>> = vec![Err(WriteError::Timeout); ops.len()];
        let mut reqs = Vec::new();
        // (op index, node index, port number for a one-port clear)
        let mut meta: Vec<(usize, usize, Option<u8>)> = Vec::new();
        // The node indexes are the state's of this epoch: forgotten nodes
        // meanwhile make them stale, and the outcomes are then not folded
        // in (the next sweep reads the counters anyway).
        let epoch;
        {
            let st = self.state.lock();
            epoch = st.epoch();
            for (oi, op) in ops.iter().enumerate() {
                let Some(ni) = st.node_index(op.guid()) else {
                    results[oi] = Err(WriteError::UnknownNode);
                    continue;
                };
                let node = st.node(ni);
                let (to, data, attr_id, num) = match op {
                    WriteOp::ClearCounters {
                        port,
                        select,
                        select2,
                        ..
                    } => {
                        let pi = st.port_position(ni, *port);
                        let to = match node.id.node_type {
                            NodeType::Switch => st.pma(ni, None),
                            _ => pi.and_then(|pi| st.pma(ni, Some(pi))),
                        };
                        let data = port_counters_data(*port, *select, *select2);
                        (
                            to,
                            data,
                            attr::PORT_COUNTERS,
                            pi.map(|_| *port).filter(|_| *port != ALL_PORTS),
                        )
                    }
                    WriteOp::SamplesControl { control, .. } => {
                        let mut data = [0u8; 192];
                        control.encode(&mut data);
                        (st.pma(ni, Some(0)), data, attr::PORT_SAMPLES_CONTROL, None)
                    }
                };
                let Some(to) = to else {
                    results[oi] = Err(WriteError::NoAddress);
                    continue;
                };
                reqs.push(MadRequest {
                    to,
                    method: method::SET,
                    attr_id,
                    attr_mod: 0,
                    data,
                });
                meta.push((oi, ni, num));
            }
        }
        if reqs.is_empty() {
            return results;
        }

        let mut engine = self.writer.lock().unwrap_or_else(|e| e.into_inner());
        let sent = self.clock.now();
        // The outcomes and when each was taken.
        let mut outcomes: Vec<Option<(MadOutcome, Instant)>> = vec![None; reqs.len()];
        engine.run_at(&reqs, |i, o, now| outcomes[i] = Some((o, now)));

        // Fold confirmed writes in; collect read-backs for what the Set
        // reply does not show (all-port clears, sample results).
        let mut touched = BTreeSet::new();
        let mut readback = Vec::new();
        let mut readback_slots = Vec::new();
        {
            let mut st = self.state.lock();
            let stale = st.epoch() != epoch;
            let mut answered = vec![false; st.node_count()];
            for (ri, outcome) in outcomes.into_iter().enumerate() {
                let (oi, ni, num) = meta[ri];
                let (outcome, at) = outcome.unwrap_or((MadOutcome::Timeout, sent));
                results[oi] = match &outcome {
                    MadOutcome::Reply { status: s, .. } if s & !status::REDIRECT == 0 => Ok(()),
                    MadOutcome::Reply { status: s, .. } | MadOutcome::Status(s) => {
                        Err(WriteError::Status(*s))
                    }
                    MadOutcome::Timeout => Err(WriteError::Timeout),
                    MadOutcome::Failed(m) => Err(WriteError::Failed(m.clone())),
                };
                if let (
                    Ok(()),
                    WriteOp::SamplesControl { control, .. },
                    MadOutcome::Reply { data, .. },
                ) = (&results[oi], &ops[oi], &outcome)
                {
                    // IBA's collision check: a PMA busy with another sample
                    // ignores the Set and answers with that sample's Tag.
                    let now = PortSamplesControl::decode(data);
                    if now.tag != control.tag {
                        results[oi] = Err(WriteError::Busy { tag: now.tag });
                    }
                }
                if results[oi].is_err() || stale {
                    continue;
                }
                touched.insert(ni);
                match &ops[oi] {
                    // The port by its number: a merge meanwhile may have
                    // given the node other ports.
                    WriteOp::ClearCounters { .. } => match num {
                        // The Set's reply shows the port after the clear.
                        Some(num) => {
                            if let Some(pi) = st.port_position(ni, num) {
                                st.mark_agent_clear(ni, pi);
                                st.apply(Slot::Counters(ni, pi), outcome, (sent, at), &mut answered)
                            }
                        }
                        None => {
                            let ports = st.node(ni).port_count();
                            for pi in 0..ports {
                                st.mark_agent_clear(ni, pi);
                            }
                            for (pi, p) in st.node(ni).ports().enumerate() {
                                if let Some(to) = st.pma(ni, Some(pi)) {
                                    readback.push(get(
                                        to,
                                        attr::PORT_COUNTERS,
                                        port_counters_data(p.num(), 0, 0),
                                    ));
                                    readback_slots.push((Slot::Counters(ni, pi), Some(p.num())));
                                }
                            }
                        }
                    },
                    WriteOp::SamplesControl { .. } => {
                        st.mark_samples_written(ni, sent);
                        st.apply(Slot::SamplesControl(ni), outcome, (sent, at), &mut answered);
                        if let Some(to) = st.pma(ni, Some(0)) {
                            for (attr_id, slot) in st.sample_results(ni) {
                                readback.push(get(to, attr_id, [0; 192]));
                                readback_slots.push((slot, None));
                            }
                        }
                        self.watch
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .insert(st.node(ni).id.guid);
                    }
                }
            }
        }
        if !readback.is_empty() {
            let sent = self.clock.now();
            let state = &self.state;
            engine.run_at(&readback, |i, o, now| {
                let mut st = state.lock();
                if st.epoch() != epoch {
                    return;
                }
                let slot = match readback_slots[i] {
                    (Slot::Counters(ni, _), Some(num)) => match st.port_position(ni, num) {
                        Some(pi) => Slot::Counters(ni, pi),
                        None => return,
                    },
                    (slot, _) => slot,
                };
                let mut answered = vec![false; st.node_count()];
                st.apply(slot, o, (sent, now), &mut answered);
            });
        }
        drop(engine);
        let mut st = self.state.lock();
        if st.epoch() == epoch {
            for ni in touched {
                st.publish_node(&self.cache, ni);
            }
        }
        drop(st);
        self.state.published();
        results
    }

    /// Re-read the nodes with a running sample once; stop watching those
    /// whose sample completed (or that stopped answering).
    pub fn poll_samples(&self) {
        // Held throughout: one poll at a time.
        let mut engine = self.poller.lock().unwrap_or_else(|e| e.into_inner());
        let watched: Vec<Guid> = self
            .watch
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .copied()
            .collect();
        if watched.is_empty() {
            return;
        }
        let mut reqs = Vec::new();
        let mut slots = Vec::new();
        // The watched nodes' indexes in this epoch of the state (a node
        // forgotten since is watched no more).
        let mut nodes = Vec::new();
        let epoch;
        {
            let st = self.state.lock();
            epoch = st.epoch();
            for &guid in &watched {
                let Some(ni) = st.node_index(guid) else {
                    continue;
                };
                nodes.push((guid, ni));
                if let Some(to) = st.pma(ni, Some(0)) {
                    reqs.push(get(to, attr::PORT_SAMPLES_CONTROL, [0; 192]));
                    slots.push(Slot::SamplesControl(ni));
                    for (attr_id, slot) in st.sample_results(ni) {
                        reqs.push(get(to, attr_id, [0; 192]));
                        slots.push(slot);
                    }
                }
            }
        }
        let sent = self.clock.now();
        let mut answered = vec![false; self.state.lock().node_count()];
        {
            let state = &self.state;
            engine.run_at(&reqs, |i, o, now| {
                let mut st = state.lock();
                if st.epoch() == epoch {
                    st.apply(slots[i], o, (sent, now), &mut answered)
                }
            });
        }
        let done: Vec<Guid> = {
            let mut st = self.state.lock();
            if st.epoch() != epoch {
                // Asked again at the next poll, under the new indexes.
                return;
            }
            let mut done: Vec<Guid> = watched
                .iter()
                .copied()
                .filter(|g| !nodes.iter().any(|(n, _)| n == g))
                .collect();
            for &(guid, ni) in &nodes {
                st.publish_node(&self.cache, ni);
                let finished = self
                    .cache
                    .load()
                    .node(guid)
                    .and_then(|r| r.samples_control.as_deref().copied())
                    .is_none_or(|c| c.sample_status == STATUS_DONE);
                if finished || !answered[ni] {
                    if !answered[ni] {
                        warn!(node = %guid, "node stopped answering during a sample");
                    }
                    done.push(guid);
                }
            }
            done
        };
        self.state.published();
        let mut w = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        for guid in done {
            debug!(node = %guid, "sample finished");
            w.remove(&guid);
        }
        drop(engine);
    }

    /// Poll running samples every `poll_interval` until `shutdown`.
    pub fn spawn_poller(
        self: &Arc<Self>,
        shutdown: Arc<AtomicBool>,
    ) -> std::io::Result<JoinHandle<()>> {
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("sample-poller".into())
            .spawn(move || {
                while !shutdown.load(Ordering::Relaxed) {
                    me.poll_samples();
                    std::thread::sleep(me.cfg.poll_interval);
                }
            })
    }
}
