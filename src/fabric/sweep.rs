//! The background sweeper: reads every node and port on an interval and
//! publishes one immutable snapshot per sweep.
//!
//! Per sweep: ClassPortInfo for nodes that have not answered it yet (once per
//! node, following a redirect), then PortCounters for every port (a switch
//! through its port-0 LID with PortSelect, a CA port through its own LID),
//! PortCountersExtended where the capability mask says so, and
//! PortSamplesControl/PortSamplesResult per node unless the node showed it
//! does not answer them, and the optional attributes 0x15..0x1C, 0x1F and
//! 0x30..0x37 per port unless the node showed it does not answer them (a
//! MAD status error at once, or no answer in two sweeps in which it
//! answered other MADs). An optional attribute is asked of one port of a
//! node (a probe) before all of them, until the node or its kind of node
//! (type, vendor, device) answered it; what two nodes of a kind left
//! unanswered is not asked of the others (`node_slots`).
//! Optionally (`clear_near_overflow`), PortCounters fields past 75% of
//! their range are cleared after they were read, as opensm's PerfMgr does;
//! the 64-bit totals continue across the clear. A node whose ClassPortInfo
//! says IsAdditionalPortCountersExtendedSupported has 64-bit error
//! counters and PortXmitWait in PortCountersExtended: its totals come from
//! there and it is never cleared.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use tracing::{debug, error, info, warn};

use super::cache::Cache;
use super::engine::{Engine, MadOutcome, Request, Requests};
use super::plan::{self, PmGet, SlotStream, Slots};
use super::state::{FabricState, PackedSlot, SharedState, Slot};
use crate::time::Clock;
use crate::transport::{MadAddr, TransportError};

/// What one sweep did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SweepStats {
    pub sweep: u64,
    pub nodes: usize,
    pub answered: usize,
    pub mads: u64,
    /// Requests of what the node is known to answer (ClassPortInfo, the
    /// counters, clears, the sample mechanism of a node that answered it)
    /// that ended without an answer after every retry.
    pub timeouts: u64,
    /// Requests of optional attributes, and of the sample mechanism at a
    /// node that has not answered it yet, that ended without an answer: a
    /// node that does not implement one may stay silent, which is no fault
    /// (see the state's strikes and [`FabricState::is_probe`]); counted
    /// apart so that `timeouts` means nodes that did not answer.
    pub optional_timeouts: u64,
    pub elapsed: Duration,
    /// The MAD transport failed as a whole during this sweep; every node
    /// was marked unreachable.
    pub transport_down: Option<TransportError>,
}

/// What runs after each published snapshot.
pub type AfterPublish = Box<dyn FnMut(&Cache) + Send>;

/// What a sweeper runs before each sweep ([`Sweeper::set_before_sweep`]).
pub type BeforeSweep = Box<dyn FnMut(&SharedState) + Send>;

/// First wait before reopening a failed transport; doubles up to
/// [`REOPEN_MAX`].
pub const REOPEN_FIRST: Duration = Duration::from_millis(500);
/// Longest wait between reopen attempts.
pub const REOPEN_MAX: Duration = Duration::from_secs(30);

pub struct Sweeper {
    state: SharedState,
    engine: Engine,
    cache: Arc<Cache>,
    /// Where the sweeper reads the time (the engine reads the same).
    clock: Clock,
    /// Set while the transport is down: the wait before the next reopen.
    reopen_backoff: Option<Duration>,
    interval: Duration,
    /// Where the 64-bit totals are saved.
    state_file: Option<PathBuf>,
    /// Runs after each published snapshot (the notifications).
    after_publish: Option<AfterPublish>,
    /// Runs before each sweep (what tells the subnet apart read again).
    before_sweep: Option<BeforeSweep>,
    /// Where in the interval the sweeps after the first start
    /// ([`Sweeper::set_phase`]), until the first sweep applies it.
    phase: Option<Duration>,
    /// Give free heap pages back after each publication during a sweep,
    /// not only after the sweep (false for a subnet among several: the
    /// trim walks the whole process's heap, which the other subnets'
    /// sweepers share).
    trim_during_sweep: bool,
    /// Asks for a discovery or a PortInfo refresh when one is due.
    rediscovery: Option<Rediscovery>,
    /// When each kind of work is due next.
    timers: Timers,
}

/// How often the 64-bit totals are written to the state file (and once
/// more when the sweeper stops).
pub const STATE_SAVE_EVERY: Duration = Duration::from_secs(300);

/// During the first sweep, how often the nodes read so far are published
/// (and the progress logged).
const FIRST_SWEEP_PROGRESS: Duration = Duration::from_secs(1);

/// What the sweeper asks of rediscovery when it is due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rediscover {
    /// Discover the whole fabric again (its PortInfo too).
    Discover,
    /// Read the port facts (state, width, speed) of the known fabric.
    Refresh,
}

/// Hands a [`Rediscover`] to whatever discovers (a thread of its own: a
/// discovery never holds up a sweep); the fabric it finds comes back
/// through [`FabricState::offer`](super::state::FabricState::offer) and
/// is merged before the next sweep.
pub type AskRediscovery = Box<dyn FnMut(Rediscover) + Send>;

/// Rediscovery's periods and where its requests go.
struct Rediscovery {
    every: Option<Duration>,
    refresh_every: Option<Duration>,
    ask: AskRediscovery,
}

/// When each kind of the sweeper's work is due next (`None`: never, or
/// not before something else happens); all unset until the first step.
#[derive(Clone, Copy, Debug, Default)]
struct Timers {
    started: bool,
    /// The next sweep (while the transport works).
    sweep: Option<Instant>,
    /// The next reopen of a failed transport (a sweep follows at once).
    reopen: Option<Instant>,
    /// The next save of the state file.
    save: Option<Instant>,
    /// The next discovery and PortInfo refresh.
    discover: Option<Instant>,
    refresh: Option<Instant>,
}

impl Timers {
    /// The earliest of them.
    fn next(&self) -> Option<Instant> {
        let sweep = if self.reopen.is_some() {
            self.reopen
        } else {
            self.sweep
        };
        [sweep, self.save, self.discover, self.refresh]
            .into_iter()
            .flatten()
            .min()
    }
}

/// `at` has come by `now`.
fn due(at: Option<Instant>, now: Instant) -> bool {
    at.is_some_and(|at| at <= now)
}

/// A period's ticks: due once `period` has passed since the last one
/// (pure: the time is passed in).
struct Every {
    period: Duration,
    last: Instant,
}

impl Every {
    fn new(period: Duration, now: Instant) -> Every {
        Every { period, last: now }
    }

    /// A tick is due at `now`; it starts the next period.
    fn due(&mut self, now: Instant) -> bool {
        let due = now.saturating_duration_since(self.last) >= self.period;
        if due {
            self.last = now;
        }
        due
    }
}

/// A batch of Gets made from their slots as they are sent: a batch holds
/// its slots (8 bytes a request, or a window's worth of them with a
/// [`SlotStream`]), not the requests.
struct SlotRequests<'a, 'h, S: ?Sized> {
    slots: &'a S,
    held: &'a Held<'h>,
}

impl<S: Slots + ?Sized> Requests for SlotRequests<'_, '_, S> {
    fn count(&self) -> usize {
        self.slots.count()
    }

    fn build(&self, i: usize, tid: u64) -> Option<(MadAddr, [u8; crate::transport::MAD_SIZE])> {
        self.held.with(|st| {
            let get = PmGet::of(st, Slot::from(self.slots.slot(st, i)?))?;
            Some((get.to, get.mad(tid)))
        })
    }
}

/// The state's lock during a batch: taken by the first send or outcome
/// after a wait and held until the engine waits again, so that a MAD
/// (made when sent, folded in when it ends) costs one lock, not two; and
/// what a publication made due (the federation's merge, the heap trim),
/// done once the lock is let go.
struct Held<'a> {
    state: &'a SharedState,
    guard: std::cell::RefCell<Option<MutexGuard<'a, FabricState>>>,
    published: std::cell::Cell<bool>,
    trim: std::cell::Cell<bool>,
}

impl<'a> Held<'a> {
    fn new(state: &'a SharedState) -> Held<'a> {
        Held {
            state,
            guard: Default::default(),
            published: Default::default(),
            trim: Default::default(),
        }
    }

    /// `f` on the state, locked if it is not yet.
    fn with<R>(&self, f: impl FnOnce(&mut FabricState) -> R) -> R {
        let mut g = self.guard.borrow_mut();
        f(g.get_or_insert_with(|| self.state.lock()))
    }

    /// Let go of the lock; give free heap pages back if a publication
    /// made that due (the write path and the DOCA sampler do not wait on
    /// the trim).
    fn release(&self) {
        self.guard.borrow_mut().take();
        if self.published.take() {
            self.state.published();
        }
        if self.trim.take() {
            crate::heap::trim();
        }
    }
}

/// What the batches of one sweep counted.
#[derive(Clone, Copy, Debug, Default)]
struct Tally {
    mads: u64,
    timeouts: u64,
    optional_timeouts: u64,
}

impl std::ops::AddAssign for Tally {
    fn add_assign(&mut self, o: Tally) {
        self.mads += o.mads;
        self.timeouts += o.timeouts;
        self.optional_timeouts += o.optional_timeouts;
    }
}

/// Sleep until `next` by `clock`, waking every 100 ms at most to see
/// `shutdown`.
fn wait_until(next: Instant, shutdown: &AtomicBool, clock: &Clock) {
    while !shutdown.load(Ordering::Relaxed) {
        let left = next.saturating_duration_since(clock.now());
        if left.is_zero() {
            return;
        }
        std::thread::sleep(left.min(Duration::from_millis(100)));
    }
}

impl Sweeper {
    /// A sweeper on the engine's clock.
    pub fn new(state: SharedState, engine: Engine, cache: Arc<Cache>) -> Self {
        let interval = state.lock().config().interval;
        let clock = engine.clock().clone();
        Sweeper {
            state,
            engine,
            cache,
            clock,
            interval,
            reopen_backoff: None,
            state_file: None,
            after_publish: None,
            before_sweep: None,
            trim_during_sweep: true,
            phase: None,
            rediscovery: None,
            timers: Timers::default(),
        }
    }

    /// The sweeper and its engine read the time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.engine = self.engine.with_clock(clock.clone());
        self.clock = clock;
        self
    }

    /// Save the 64-bit totals to `path` every [`STATE_SAVE_EVERY`] and
    /// when stopping.
    pub fn with_state_file(mut self, path: PathBuf) -> Self {
        self.state_file = Some(path);
        self
    }

    /// Ask `ask` for a discovery every `every` and for a PortInfo refresh
    /// every `refresh_every` (a discovery counts as one), from the first
    /// step on.
    pub fn with_rediscovery(
        mut self,
        every: Option<Duration>,
        refresh_every: Option<Duration>,
        ask: AskRediscovery,
    ) -> Self {
        self.set_rediscovery(every, refresh_every, ask);
        self
    }

    /// [`Self::with_rediscovery`] on a sweeper in place.
    pub fn set_rediscovery(
        &mut self,
        every: Option<Duration>,
        refresh_every: Option<Duration>,
        ask: AskRediscovery,
    ) {
        self.rediscovery = Some(Rediscovery {
            every,
            refresh_every,
            ask,
        });
    }

    /// Write the state file now, if there is one.
    fn save_state(&mut self) {
        let Some(path) = &self.state_file else {
            return;
        };
        // Copied under the lock, written outside it.
        let ports = self.state.lock().export_totals();
        match crate::fabric::persist::save(path, &ports) {
            Ok(()) => debug!(ports = ports.len(), path = %path.display(), "64-bit totals saved"),
            Err(e) => warn!(
                "cannot save the 64-bit totals of {} ports to {}: {e}",
                ports.len(),
                path.display()
            ),
        }
    }

    /// Call `f` with the cache after every sweep's snapshot is published
    /// (the notifications are evaluated and sent there).
    pub fn with_after_publish(mut self, f: AfterPublish) -> Self {
        self.set_after_publish(f);
        self
    }

    /// Call `f` with the state before every sweep (a subnet's probe: its
    /// master SM and local ports read again, into the subnet's view).
    pub fn set_before_sweep(&mut self, f: BeforeSweep) {
        self.before_sweep = Some(f);
    }

    /// Start the sweeps after the first `phase` later in the interval:
    /// the subnets of one agent sweep one after the other, not all at
    /// once on the same cores (every first sweep is at once).
    pub fn set_phase(&mut self, phase: Duration) {
        self.phase = Some(phase);
    }

    /// Give free heap pages back only after each sweep (a subnet among
    /// several), not after each publication during it.
    pub fn trim_after_sweeps_only(&mut self) {
        self.trim_during_sweep = false;
    }

    /// [`Self::with_after_publish`] on a sweeper in place.
    pub fn set_after_publish(&mut self, f: AfterPublish) {
        self.after_publish = Some(f);
    }

    /// After a snapshot was published (on this thread; requests are
    /// answered from the snapshot meanwhile).
    fn notify(&mut self) {
        if let Some(f) = &mut self.after_publish {
            f(&self.cache);
        }
    }

    /// Merge a fabric handed over by rediscovery, between sweeps (the
    /// write path goes on meanwhile: a merge keeps every node's index).
    fn merge_pending(&mut self, now: Instant) {
        let mut st = self.state.lock();
        let Some(fabric) = st.take_pending() else {
            return;
        };
        let report = st.merge(fabric, now);
        if report.added > 0 || report.ports_changed > 0 {
            info!(
                "fabric rediscovered: {} new nodes and {} changed ports merged ({} nodes in all)",
                report.added, report.ports_changed, report.nodes
            );
        } else {
            debug!(nodes = report.nodes, "fabric rediscovered: no change");
        }
        st.publish(&self.cache, now);
        drop(st);
        self.state.published();
    }

    /// Where the sweeper reads the time (its evaluators read the same).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn state(&self) -> &SharedState {
        &self.state
    }

    /// Do what is due at `now` (a sweep, a reopen of the failed transport
    /// and the sweep after it, a save of the state file, a request for
    /// rediscovery) and say when to come back: the driver's whole loop is
    /// `loop { let next = step(clock()); wait_until(next) }`. Waking early
    /// does nothing.
    pub fn step(&mut self, now: Instant) -> Instant {
        if !self.timers.started {
            self.start_timers(now);
        }
        let mut now = now;
        if due(self.timers.reopen, now) {
            self.timers.reopen = None;
            if let Err(e) = self.engine.reopen() {
                debug!(error = %e, "reopening the MAD transport failed");
            }
            self.timers.sweep = Some(now);
        }
        if self.timers.reopen.is_none() && due(self.timers.sweep, now) {
            let start = now;
            let stats = self.sweep_at(now);
            // The phase, once: the sweeps after the first start that much
            // later in the interval.
            self.timers.sweep = Some(start + self.interval + self.phase.take().unwrap_or_default());
            // The sweep took its time: what follows is reckoned from its end.
            now = start + stats.elapsed;
            if let Some(wait) = self.track_transport(&stats) {
                self.timers.reopen = Some((now + wait).max(start + self.interval));
            }
        }
        if due(self.timers.save, now) {
            self.save_state();
            self.timers.save = Some(now + STATE_SAVE_EVERY);
        }
        self.ask_rediscovery(now);
        self.next_wakeup(now)
    }

    /// When [`Self::step`] has something to do next (a little after `now`
    /// at the latest when nothing is scheduled).
    pub fn next_wakeup(&self, now: Instant) -> Instant {
        self.timers.next().unwrap_or(now + self.interval)
    }

    /// The timers as they are at the first step: a sweep at once, the
    /// rest a period later.
    fn start_timers(&mut self, now: Instant) {
        self.timers = Timers {
            started: true,
            sweep: Some(now),
            reopen: None,
            save: self.state_file.as_ref().map(|_| now + STATE_SAVE_EVERY),
            discover: self
                .rediscovery
                .as_ref()
                .and_then(|r| r.every)
                .map(|d| now + d),
            refresh: self
                .rediscovery
                .as_ref()
                .and_then(|r| r.refresh_every)
                .map(|d| now + d),
        };
    }

    /// Ask for a discovery or a refresh if one is due.
    fn ask_rediscovery(&mut self, now: Instant) {
        let Some(r) = &mut self.rediscovery else {
            return;
        };
        let what = if due(self.timers.discover, now) {
            self.timers.discover = r.every.map(|d| now + d);
            // A discovery reads every PortInfo too.
            self.timers.refresh = r.refresh_every.map(|d| now + d);
            Rediscover::Discover
        } else if due(self.timers.refresh, now) {
            self.timers.refresh = r.refresh_every.map(|d| now + d);
            Rediscover::Refresh
        } else {
            return;
        };
        (r.ask)(what);
    }

    /// Run one sweep now and publish its snapshot.
    pub fn sweep_once(&mut self) -> SweepStats {
        let now = self.clock.now();
        self.sweep_at(now)
    }

    /// Run one sweep that starts at `started` and publish its snapshot.
    fn sweep_at(&mut self, started: Instant) -> SweepStats {
        if let Some(f) = &mut self.before_sweep {
            f(&self.state);
        }
        self.merge_pending(started);
        let (sweep_no, n) = self.state.lock().begin_sweep();
        let first = sweep_no == 1;
        let mut answered = vec![false; n];
        let mut tally = self.read_class_port_info(n, first, &mut answered);
        if !self.engine.transport_failed() && self.state.lock().config().mads {
            let slots = SlotStream::new(&self.state.lock());
            tally += self.run_slots(&slots, &mut answered, first, "counters");
        }
        let transport_down = self.engine.failure().cloned();
        if transport_down.is_some() {
            let mut st = self.state.lock();
            st.mark_all_unreachable();
            st.publish(&self.cache, self.clock.now());
            drop(st);
            self.state.published();
            answered.fill(false);
        } else {
            tally += self.clear_near_overflow(&mut answered);
        }
        // A changed node-name-map is read once a sweep, outside the
        // state's lock; the publication below names the nodes by it.
        let names = std::sync::Arc::clone(&self.state.lock().config().names);
        names.refresh();
        let ended = self.clock.now();
        let stats = SweepStats {
            sweep: sweep_no,
            nodes: n,
            answered: answered.iter().filter(|a| **a).count(),
            mads: tally.mads,
            timeouts: tally.timeouts,
            optional_timeouts: tally.optional_timeouts,
            elapsed: ended.saturating_duration_since(started),
            transport_down,
        };
        if stats.transport_down.is_none() {
            let mut st = self.state.lock();
            st.end_sweep(&answered, ended);
            for f in st.forget_silent(stats.answered > 0, ended) {
                info!(
                    silent_s = f.silent.as_secs(),
                    "node forgotten: {} \"{}\" has not answered for {:.1} days: its rows, metrics and totals are gone",
                    f.guid,
                    crate::ib::Escaped(&f.description),
                    f.silent.as_secs_f64() / 86_400.0
                );
            }
            st.sweep_figures(ended, stats.elapsed, stats.mads, stats.timeouts);
            st.publish(&self.cache, ended);
            drop(st);
            self.state.published();
        }
        self.notify();
        if stats.transport_down.is_none() {
            // The records this sweep replaced are free now: their pages go back.
            trim_heap(&self.clock);
            self.log_health(&stats, first);
        }
        stats
    }

    /// ClassPortInfo of the nodes that have not answered it, twice at
    /// most: a redirect sends the second to the redirected PMA. During
    /// the first sweep every node that answered has its rows from here,
    /// before its counters are read (they follow every second).
    fn read_class_port_info(&mut self, n: usize, first: bool, answered: &mut [bool]) -> Tally {
        let mut tally = Tally::default();
        for _ in 0..2 {
            let slots: Vec<PackedSlot> = {
                let st = self.state.lock();
                (0..n)
                    .filter(|&ni| st.class_port_info_due(ni))
                    .map(|ni| Slot::Cpi(ni).into())
                    .collect()
            };
            if slots.is_empty() {
                break;
            }
            tally += self.run_slots(slots.as_slice(), answered, first, "ClassPortInfo");
            if self.engine.transport_failed() {
                return tally;
            }
        }
        if first {
            let now = self.clock.now();
            let rows = self
                .state
                .lock()
                .publish_partial(&self.cache, answered, now);
            self.state.published();
            info!(
                nodes_with_rows = rows,
                "first sweep: ClassPortInfo read, {rows} of {n} nodes have rows"
            );
        }
        tally
    }

    /// With `clear_near_overflow`: the clears [`plan::clears`] selects,
    /// each port marked as cleared by this agent.
    fn clear_near_overflow(&mut self, answered: &mut [bool]) -> Tally {
        let (reqs, slots) = {
            let mut st = self.state.lock();
            let (reqs, slots) = plan::clears(&st);
            for &slot in &slots {
                if let Slot::Counters(ni, pi) = Slot::from(slot) {
                    st.mark_agent_clear(ni, pi);
                }
            }
            (reqs, slots)
        };
        if reqs.is_empty() {
            return Tally::default();
        }
        debug!(
            ports = reqs.len(),
            "clearing counters past 75% of their range"
        );
        let state = self.state.clone();
        let held = Held::new(&state);
        self.run_batch(
            &held,
            reqs.as_slice(),
            slots.as_slice(),
            answered,
            false,
            "clears",
        )
    }

    /// The sweep's line in the log: at info after the first sweep and
    /// every `health_every` sweeps, else at debug.
    fn log_health(&self, stats: &SweepStats, first: bool) {
        let sweep_no = stats.sweep;
        let health_every = u64::from(self.state.lock().config().health_every);
        if first || (health_every > 0 && sweep_no.is_multiple_of(health_every)) {
            let ms = stats.elapsed.as_millis() as u64;
            // The figures also as fields, for the scripts that read them.
            info!(
                sweep = sweep_no,
                nodes = stats.nodes,
                answered = stats.answered,
                mads = stats.mads,
                timeouts = stats.timeouts,
                optional_timeouts = stats.optional_timeouts,
                ms,
                "{}: sweep {sweep_no} read {} of {} nodes in {ms} ms with {} MADs; {} timed out, and {} of optional attributes",
                if first {
                    "first sweep done"
                } else {
                    "sweeping: healthy"
                },
                stats.answered,
                stats.nodes,
                stats.mads,
                stats.timeouts,
                stats.optional_timeouts,
            );
        } else {
            debug!(?stats, "sweep done");
        }
    }

    /// [`Self::run_batch`] with the Gets made from their slots as they are
    /// sent.
    fn run_slots<S: Slots + ?Sized>(
        &mut self,
        slots: &S,
        answered: &mut [bool],
        log_progress: bool,
        what: &str,
    ) -> Tally {
        let state = self.state.clone();
        let held = Held::new(&state);
        let reqs = SlotRequests { slots, held: &held };
        self.run_batch(&held, &reqs, slots, answered, log_progress, what)
    }

    /// Send one batch and fold the outcomes into the state: the number of
    /// MADs, of mandatory requests that timed out and of optional ones
    /// that did.
    fn run_batch<Q: Requests + ?Sized, S: Slots + ?Sized>(
        &mut self,
        held: &Held<'_>,
        reqs: &Q,
        slots: &S,
        answered: &mut [bool],
        log_progress: bool,
        what: &str,
    ) -> Tally {
        let total = reqs.count();
        let mut tally = Tally::default();
        let mut done = 0usize;
        let sent = self.clock.now();
        let mut progress = Every::new(FIRST_SWEEP_PROGRESS, sent);
        let cache = &self.cache;
        let on_done = |i, outcome, now| {
            done += 1;
            held.with(|st| {
                let slot = slots.slot(st, i);
                slots.ended(i);
                // An index that stands for no request changes nothing.
                let Some(slot) = slot.map(Slot::from) else {
                    return;
                };
                if outcome == MadOutcome::Timeout {
                    if st.is_probe(slot) {
                        tally.optional_timeouts += 1;
                    } else {
                        tally.timeouts += 1;
                    }
                }
                st.apply(slot, outcome, (sent, now), answered);
                // Records the sweep copied replace the published ones as
                // it goes: the memory of two versions stays bounded, and
                // the pages of the records replaced go back at once
                // rather than when the sweep ends.
                if st.publish_if_due(cache, answered, now).is_some() {
                    held.published.set(true);
                    held.trim.set(self.trim_during_sweep);
                }
                if log_progress && progress.due(now) {
                    // Serve from the first second: the nodes read so far
                    // get their rows now, not when the first sweep ends.
                    let rows = st.publish_partial(cache, answered, now);
                    held.published.set(true);
                    info!(
                        nodes_with_rows = rows,
                        "first sweep: {what}: {done} of {total} MADs answered or timed out, {rows} nodes have rows"
                    );
                }
            })
        };
        let stats = self.engine.run_requests(reqs, on_done, || held.release());
        held.release();
        tally.mads = stats.sent;
        tally
    }

    /// Follow a sweep's transport state: one error line when the transport
    /// fails, one line when it is back. Returns how long to wait before
    /// reopening it (`None` while it works).
    fn track_transport(&mut self, stats: &SweepStats) -> Option<Duration> {
        match (&stats.transport_down, self.reopen_backoff) {
            (None, None) => None,
            (None, Some(_)) => {
                info!(
                    "MAD transport is back: {} of {} nodes answered",
                    stats.answered, stats.nodes
                );
                self.reopen_backoff = None;
                None
            }
            (Some(e), None) => {
                error!(
                    error = %e,
                    nodes = stats.nodes,
                    "MAD transport failed: every node marked unreachable; reopening it"
                );
                self.reopen_backoff = Some(REOPEN_FIRST);
                self.reopen_backoff
            }
            (Some(e), Some(wait)) => {
                debug!(error = %e, "MAD transport still down");
                let next = (wait * 2).min(REOPEN_MAX);
                self.reopen_backoff = Some(next);
                Some(next)
            }
        }
    }

    /// Step on the sweeper's clock until `shutdown` is set; save the state
    /// file once more then.
    pub fn spawn(mut self, shutdown: Arc<AtomicBool>) -> std::io::Result<JoinHandle<()>> {
        std::thread::Builder::new()
            .name("sweeper".into())
            .spawn(move || {
                let clock = self.clock.clone();
                while !shutdown.load(Ordering::Relaxed) {
                    let next = self.step(clock.now());
                    wait_until(next, &shutdown, &clock);
                }
                self.save_state();
            })
    }
}

/// Give the heap's free pages back, with a debug line of what that took.
fn trim_heap(clock: &Clock) {
    let trim = clock.now();
    crate::heap::trim();
    if tracing::enabled!(tracing::Level::DEBUG) {
        // Read only for the log line: /proc and the allocator's counters.
        let (in_use, held) = crate::heap::usage().unwrap_or_default();
        debug!(
            us = clock.now().saturating_duration_since(trim).as_micros() as u64,
            heap_in_use_kb = in_use / 1024,
            heap_held_kb = held / 1024,
            rss_kb = crate::heap::resident_kb().unwrap_or(0),
            "free heap pages given back"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::engine::EngineConfig;
    use crate::fabric::mads::port_counters_data;
    use crate::fabric::settings::SweepConfig;
    use crate::fabric::strikes::RETRY_UNANSWERED_SWEEPS;
    use crate::ib::NodeType;
    use crate::pm::PortCounters;
    use crate::pm::mad;
    use crate::pm::mad::{attr, method};
    use crate::pm::optional::OPTIONAL_ATTRS;
    use crate::rig::{self, AgentRig, RigOptions};
    use crate::sim::{ManualClock, SimFabric};
    use crate::transport::{Down, Fault, MAD_SIZE, MadTransport, Received};
    use std::collections::VecDeque;

    /// The simulated fabric plus answers to the optional attributes from
    /// the LIDs in `answer` (data: the PortSelect, the attribute ID and
    /// the request count in the first three counter bytes); requests for
    /// attribute 0x18 to LIDs in `silent` are dropped. Counts optional
    /// requests.
    struct OptionalPma {
        inner: crate::sim::SimTransport,
        answer: Vec<u16>,
        silent: Vec<u16>,
        queue: VecDeque<Received>,
        asked: Arc<std::sync::Mutex<Asked>>,
    }

    /// The optional requests [`OptionalPma`] saw: how many MADs, and which
    /// requests (LID, attribute, PortSelect) since the set was emptied, a
    /// retry (after a reply the engine waited too long for on a loaded
    /// machine) not counted twice.
    #[derive(Default)]
    struct Asked {
        mads: u64,
        distinct: std::collections::HashSet<(u16, u16, u8)>,
    }

    impl MadTransport for OptionalPma {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            let (h, data) = mad::parse(m).unwrap();
            if !OPTIONAL_ATTRS.contains(&h.attr_id) {
                return self.inner.send(to, m);
            }
            let n = {
                let mut a = self.asked.lock().unwrap();
                a.distinct.insert((to.lid, h.attr_id, data[1]));
                a.mads += 1;
                a.mads - 1
            };
            if self.silent.contains(&to.lid) && h.attr_id == 0x18 {
                return Ok(());
            }
            if !self.answer.contains(&to.lid) {
                return self.inner.send(to, m);
            }
            // In the first counter bytes (what the cache keeps).
            let at = crate::pm::optional::counter_bytes(h.attr_id).0;
            let mut reply = *data;
            reply[at] = data[1];
            reply[at + 1] = h.attr_id as u8;
            reply[at + 2] = n as u8;
            self.queue.push_back(Received {
                from: *to,
                status: 0,
                mad: Box::new(mad::response(&h, 0, &reply)),
            });
            Ok(())
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            match self.queue.pop_front() {
                Some(r) => Ok(Some(r)),
                None => self.inner.recv(timeout),
            }
        }
    }

    /// The 64-bit total `slot` of a port, as the cache holds it.
    fn published_total(c: &Cache, guid: crate::ib::Guid, port: u8, slot: usize) -> u64 {
        let snap = c.load();
        let node = snap.node(guid).unwrap();
        node.port(port).unwrap().hc.value(slot).unwrap()
    }

    fn setup(cfg: SweepConfig) -> (Sweeper, SimFabric, ManualClock, Arc<Cache>) {
        setup_with(cfg, |_, t| Box::new(t))
    }

    fn setup_with(
        cfg: SweepConfig,
        wrap: impl FnOnce(&SimFabric, crate::sim::SimTransport) -> Box<dyn MadTransport>,
    ) -> (Sweeper, SimFabric, ManualClock, Arc<Cache>) {
        let rig = AgentRig::with_sweep_transport(
            RigOptions {
                seed: 7,
                elapsed: Duration::from_secs(60),
                sweep: cfg,
                engine: EngineConfig {
                    window: 16,
                    timeout: Duration::from_millis(250),
                    retries: 1,
                },
                ..Default::default()
            },
            wrap,
        );
        (rig.sweeper, rig.sim, rig.clock, rig.cache)
    }

    /// Looks at the sweeper's state each time its engine waits (the
    /// sweeper holds the state's lock from a round's sends and outcomes
    /// until then): the most port records copied and not yet published
    /// beyond the budget, and how many snapshots were published.
    struct CopyWatch {
        inner: crate::sim::SimTransport,
        state: Arc<std::sync::OnceLock<(SharedState, Arc<Cache>)>>,
        excess: Arc<std::sync::atomic::AtomicI64>,
        published: Arc<std::sync::atomic::AtomicU64>,
        /// The address of the snapshot seen last (only compared).
        last: Option<usize>,
    }

    impl MadTransport for CopyWatch {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.inner.send(to, m)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            if let Some((state, cache)) = self.state.get() {
                let (copies, budget) = state.lock().copies_pending();
                self.excess
                    .fetch_max(copies as i64 - budget as i64, Ordering::Relaxed);
                let snap = Arc::as_ptr(&cache.load()) as usize;
                if self.last.is_some_and(|p| p != snap) {
                    self.published.fetch_add(1, Ordering::Relaxed);
                }
                self.last = Some(snap);
            }
            self.inner.recv(timeout)
        }
    }

    #[test]
    fn a_sweep_publishes_before_its_copies_hold_more_than_a_share_of_the_ports() {
        // 10,240 ports, each switch's record 64 of them.
        let fabric = crate::fabric::plan::tests::switch_pairs();
        let state = Arc::new(std::sync::OnceLock::new());
        let excess = Arc::new(std::sync::atomic::AtomicI64::new(i64::MIN));
        let published = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let mut rig = AgentRig::with_sweep_transport(
            RigOptions {
                fabric,
                ..Default::default()
            },
            |_, inner| {
                Box::new(CopyWatch {
                    inner,
                    state: Arc::clone(&state),
                    excess: Arc::clone(&excess),
                    published: Arc::clone(&published),
                    last: None,
                })
            },
        );
        rig.sweep();
        let _ = state.set((rig.state.clone(), Arc::clone(&rig.cache)));
        published.store(0, Ordering::Relaxed);
        let st = rig.sweep();
        assert_eq!(st.answered, 160);
        // Every record is copied once a sweep: 10,240 port records against
        // a budget of 4,096, so two publications come before the sweep's
        // own (seen at the next wait, so the sweep's own is not counted).
        assert_eq!(rig.state.lock().copies_pending().1, 4096);
        assert!(published.load(Ordering::Relaxed) >= 2, "{published:?}");
        // Never more than one record's ports past the budget.
        let most = excess.load(Ordering::Relaxed);
        assert!(most <= 64, "copies exceeded the budget by {most}");
        assert!(most > -4096, "the watch saw no copies ({most})");
    }

    /// What [`Late`] saw of the published snapshot when the sweeper
    /// waited for a reply: the virtual time since the transport was made,
    /// the snapshot's sweep, its nodes with rows, and those with a
    /// PortCounters reading of every port.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Seen {
        pub(crate) at: Duration,
        pub(crate) sweep: u64,
        pub(crate) rows: usize,
        pub(crate) read: usize,
    }

    /// How long [`Late`] holds the reply to a MAD (by its address and
    /// attribute ID), if it does.
    type HoldFn = dyn Fn(&MadAddr, u16) -> Option<Duration> + Send;

    /// A transport on virtual time that gives the replies `hold` picks
    /// (by address and attribute ID) only that much later (each answered
    /// at once by a simulator transport of its own and held until the
    /// clock reaches its time), and notes what the cache shows each time
    /// the engine waits.
    pub(crate) struct Late {
        inner: crate::sim::SimTransport,
        slow: crate::sim::SimTransport,
        time: crate::sim::VirtualClock,
        start: Instant,
        hold: Box<HoldFn>,
        held: Vec<(Instant, Received)>,
        pub(crate) cache: Arc<std::sync::OnceLock<Arc<Cache>>>,
        pub(crate) seen: Arc<std::sync::Mutex<Vec<Seen>>>,
    }

    impl Late {
        pub(crate) fn new(
            sim: &SimFabric,
            inner: crate::sim::SimTransport,
            hold: impl Fn(&MadAddr, u16) -> Option<Duration> + Send + 'static,
        ) -> Late {
            let time = inner.virtual_time().expect("on virtual time").clone();
            Late {
                slow: sim.transport().on_virtual_time(time.clone()),
                start: time.now(),
                time,
                inner,
                hold: Box::new(hold),
                held: Vec::new(),
                cache: Arc::default(),
                seen: Arc::default(),
            }
        }

        fn look(&self) {
            let Some(cache) = self.cache.get() else {
                return;
            };
            let snap = cache.load();
            let read = snap
                .nodes
                .iter()
                .filter(|n| n.ports().all(|p| p.counters().is_some()))
                .count();
            self.seen.lock().unwrap().push(Seen {
                at: self.time.now() - self.start,
                sweep: snap.sweep,
                rows: snap.nodes.len(),
                read,
            });
        }
    }

    impl MadTransport for Late {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            // The attribute ID is at bytes 16 and 17 of the MAD.
            let Some(d) = (self.hold)(to, u16::from_be_bytes([m[16], m[17]])) else {
                return self.inner.send(to, m);
            };
            self.slow.send(to, m)?;
            if let Some(r) = self.slow.recv(Duration::ZERO)? {
                self.held.push((self.time.now() + d, r));
            }
            Ok(())
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            if let Some(r) = self.inner.recv(Duration::ZERO)? {
                return Ok(Some(r));
            }
            self.look();
            let now = self.time.now();
            let first = (0..self.held.len()).min_by_key(|&k| self.held[k].0);
            match first {
                Some(k) if self.held[k].0 <= now + timeout => {
                    self.time.advance_to(self.held[k].0);
                    Ok(Some(self.held.remove(k).1))
                }
                _ => {
                    self.time.advance(timeout);
                    Ok(None)
                }
            }
        }
    }

    /// An agent rig whose sweeps go through [`Late`] with `hold`, its
    /// engine waiting 5 s for a reply, without retries; and what the
    /// transport sees of the cache.
    fn late_rig(
        hold: impl Fn(&crate::ib::Fabric, &MadAddr, u16) -> Option<Duration> + Send + 'static,
    ) -> (AgentRig, Arc<std::sync::Mutex<Vec<Seen>>>) {
        let cache_slot = Arc::new(std::sync::OnceLock::new());
        let seen = Arc::default();
        let (c2, s2) = (Arc::clone(&cache_slot), Arc::clone(&seen));
        let rig = AgentRig::with_sweep_transport(
            RigOptions {
                engine: EngineConfig {
                    window: 16,
                    timeout: Duration::from_secs(5),
                    retries: 0,
                },
                ..Default::default()
            },
            move |sim, t| {
                let fabric = sim.fabric();
                let mut late = Late::new(sim, t, move |to, a| hold(&fabric, to, a));
                late.cache = c2;
                late.seen = s2;
                Box::new(late)
            },
        );
        let _ = cache_slot.set(Arc::clone(&rig.cache));
        (rig, seen)
    }

    /// A tick is due a period after the last one, and starts the next.
    #[test]
    fn progress_ticks_come_a_period_apart_on_virtual_time() {
        let t0 = Instant::now();
        let mut e = Every::new(FIRST_SWEEP_PROGRESS, t0);
        assert!(!e.due(t0));
        assert!(!e.due(t0 + Duration::from_millis(999)));
        assert!(e.due(t0 + Duration::from_millis(1000)));
        assert!(!e.due(t0 + Duration::from_millis(1500)));
        assert!(e.due(t0 + Duration::from_millis(2100)));
        assert!(!e.due(t0 + Duration::from_millis(3000)));
        assert!(e.due(t0 + Duration::from_millis(3100)));
    }

    /// The first channel adapter with one port: its PMA's LID.
    fn one_port_ca(f: &crate::ib::Fabric) -> u16 {
        f.nodes
            .iter()
            .find(|n| n.id.node_type == NodeType::Ca && n.ports.len() == 1)
            .unwrap()
            .ports[0]
            .lid
    }

    /// During the first sweep the nodes read so far are served every
    /// second: one CA's PMA gives its PortCounters 3 s late and its
    /// other counters (not ClassPortInfo) 1.2 s late; from the first second on, while the
    /// sweep waits, every other node has rows with its counters.
    #[test]
    fn the_first_sweep_serves_nodes_as_they_are_read() {
        let (mut rig, seen) = late_rig(|f, to, a| match a {
            _ if to.lid != one_port_ca(f) => None,
            attr::CLASS_PORT_INFO => None,
            attr::PORT_COUNTERS => Some(Duration::from_secs(3)),
            _ => Some(Duration::from_millis(1200)),
        });
        let nodes = rig.fabric().nodes.len();
        let st = rig.sweep();
        assert_eq!(st.answered, nodes, "the slow node answers too");
        assert_eq!((st.timeouts, st.optional_timeouts), (0, 0));
        assert_eq!(st.elapsed, Duration::from_secs(3), "on virtual time");
        let seen = seen.lock().unwrap().clone();
        let during = |s: &&Seen| s.sweep == 0 && s.at >= Duration::from_secs(1);
        // Published at the tick after 1.2 s, seen while the sweep waits
        // for the last reply.
        assert!(
            seen.iter().filter(during).any(|s| s.read == nodes - 1),
            "{seen:?}"
        );
        assert!(seen.iter().all(|s| s.sweep == 0 && s.read < nodes));
        assert!(
            seen.iter()
                .all(|s| s.at < Duration::from_secs(1) || s.rows == nodes)
        );
        let snap = rig.cache.load();
        assert_eq!(snap.sweep, 1);
        assert!(
            snap.nodes
                .iter()
                .all(|n| n.ports().all(|p| p.counters().is_some()))
        );
    }

    /// Every node has rows once its ClassPortInfo is read, before its
    /// counters are: every reply but ClassPortInfo's comes 2 s late, and
    /// the sweeper, waiting, serves every node already.
    #[test]
    fn the_first_sweep_serves_every_node_once_class_port_info_is_read() {
        let (mut rig, seen) =
            late_rig(|_, _, a| (a != attr::CLASS_PORT_INFO).then_some(Duration::from_secs(2)));
        let nodes = rig.fabric().nodes.len();
        let st = rig.sweep();
        assert_eq!(st.answered, nodes);
        assert_eq!(st.timeouts, 0, "every held reply came");
        let seen = seen.lock().unwrap().clone();
        let waiting: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.at < Duration::from_secs(2))
            .collect();
        assert!(!waiting.is_empty());
        assert!(
            waiting
                .iter()
                .all(|s| (s.sweep, s.rows, s.read) == (0, nodes, 0)),
            "{waiting:?}"
        );
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
            let rec = snap.node(node.id.guid).unwrap();
            assert!(rec.class_port_info.is_some() && rec.samples_control.is_some());
            for p in &node.ports {
                let lid = if node.id.node_type == NodeType::Switch {
                    node.id.lid
                } else {
                    p.lid
                };
                let got = rec.port(p.num).unwrap().counters().copied().unwrap();
                // The frozen clock: a second read gives the same values.
                assert_eq!(
                    got,
                    rig::port_counters(&sim, lid, p.num),
                    "{} port {}",
                    node.id.guid,
                    p.num
                );
                assert!(
                    sw.state().lock().extended(node.id.guid, p.num).is_some(),
                    "capability says 64-bit"
                );
            }
        }
        // Equal per-node readings are one allocation: the simulated PMAs
        // answer ClassPortInfo by node type and run no sample.
        let distinct = |f: &dyn Fn(&crate::fabric::record::NodeRecord) -> usize| {
            let mut v: Vec<usize> = snap.nodes.iter().map(|r| f(r)).collect();
            v.sort();
            v.dedup();
            v.len()
        };
        let cpis = distinct(&|r| Arc::as_ptr(r.class_port_info.as_ref().unwrap()) as usize);
        let controls = distinct(&|r| Arc::as_ptr(r.samples_control.as_ref().unwrap()) as usize);
        assert!(
            cpis <= 2 && cpis < snap.nodes.len(),
            "{cpis} ClassPortInfo allocations"
        );
        assert!(controls <= 2, "{controls} PortSamplesControl allocations");
        let st = sw.state();
        let st = st.lock();
        assert_eq!(
            st.readings().cpi.len(),
            cpis,
            "the interner holds what is in use"
        );
    }

    /// Combined mode (umad + DOCA): a local adapter port takes its data,
    /// packet and discard totals from DOCA (in octets, no x4) and every
    /// other counter from PM MADs; the node says both fill it; other
    /// nodes stay PMA-only.
    #[test]
    fn a_doca_served_port_mixes_sources_by_counter() {
        use crate::fabric::doca_ids::DATA_IDS;
        use crate::fabric::hc::{self, slot};
        use crate::fabric::record::DataSource;
        let (mut sw, sim, clock, cache) = setup(SweepConfig::default());
        let fabric = sim.fabric();
        let mut cas = fabric
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Ca);
        let local = cas.next().unwrap().id.guid;
        let other = cas.next().unwrap().id.guid;
        sim.add_errors(local, 1, crate::sim::traffic::q::SYMBOL_ERRORS, 9);
        assert!(sw.state().lock().set_doca_ports(&[(local, 1)]).is_empty());
        let values: Vec<(usize, u64)> = (0..DATA_IDS.len())
            .map(|i| (i, 1000 * (i as u64 + 1)))
            .collect();
        for _ in 0..2 {
            sw.state()
                .lock()
                .apply_doca(local, 1, &values, 64, false, Instant::now())
                .unwrap();
            sw.sweep_once();
            clock.advance(Duration::from_secs(1));
        }
        let snap = cache.load();
        let rec = snap.node(local).unwrap();
        assert_eq!(rec.source, DataSource::PmaAndDoca);
        let t = &rec.port(1).unwrap().hc;
        for (i, d) in DATA_IDS.iter().enumerate() {
            assert_eq!(t.shown(d.slot), Some(1000 * (i as u64 + 1)), "{}", d.name);
        }
        assert!(
            t.shown(slot("SymbolErrors")).unwrap() >= 9,
            "errors from PortCounters"
        );
        assert!(
            t.shown(slot("OutUcastPkts")).is_some(),
            "from PortCountersExtended"
        );
        // Other nodes: PMA only, data x4, no discards.
        let o = snap.node(other).unwrap();
        assert_eq!(o.source, DataSource::Pma);
        assert_eq!(o.port(1).unwrap().hc.shown(hc::IN_DISCARDS), None);
        let pcx = sw.state().lock().extended(other, 1).unwrap();
        assert_eq!(
            o.port(1).unwrap().hc.shown(hc::OUT_OCTETS),
            Some(pcx.xmit_data * 4)
        );
    }

    #[test]
    fn totals_accumulate_and_survive_clears() {
        let (mut sw, sim, clock, cache) = setup(SweepConfig::default());
        sw.sweep_once();
        let node = sim
            .fabric()
            .nodes
            .into_iter()
            .find(|n| n.id.node_type == NodeType::Ca)
            .unwrap();
        let slot = crate::fabric::hc::OUT_PKTS;
        let total = |c: &Cache| published_total(c, node.id.guid, 1, slot);
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
        rig::pma_request(
            &sim,
            node.ports[0].lid,
            method::SET,
            attr::PORT_COUNTERS,
            &data,
        )
        .unwrap();
        clock.advance(Duration::from_secs(1));
        sw.sweep_once();
        let after = rig::port_counters(&sim, node.ports[0].lid, 1).xmit_pkts as u64;
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
            let victim = sim.fabric().nodes[3].id.guid;
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
                        r.ports().any(|p| p.counters().is_some()),
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

    use crate::fabric::tests::Dying;

    #[test]
    fn transport_death_marks_every_row_at_once_and_reopen_brings_them_back() {
        let dead = Arc::new(AtomicBool::new(false));
        let reopens = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let reopen_works = Arc::new(AtomicBool::new(false));
        let cfg = SweepConfig {
            unreachable_after: 3,
            keep_unreachable: true,
            ..Default::default()
        };
        let (mut sw, sim, _clock, cache) = setup_with(cfg, |_, t| {
            Box::new(Dying {
                inner: t,
                dead: Arc::clone(&dead),
                reopens: Arc::clone(&reopens),
                reopen_works: Arc::clone(&reopen_works),
            })
        });
        let n = sim.fabric().nodes.len();
        let st = sw.sweep_once();
        assert!(st.transport_down.is_none());
        assert_eq!(sw.track_transport(&st), None);
        dead.store(true, Ordering::Relaxed);
        // One sweep, not `unreachable_after`: every row is stale at once.
        let st = sw.sweep_once();
        assert!(
            matches!(
                st.transport_down,
                Some(TransportError::Send {
                    fault: Fault::Down(Down::ReaderStopped),
                    ..
                })
            ),
            "{:?}",
            st.transport_down
        );
        let snap = cache.load();
        assert_eq!(snap.nodes.len(), n, "kept as configured");
        assert!(snap.nodes.iter().all(|r| !r.reachable));
        // Backoff doubles while reopening fails, up to its cap.
        assert_eq!(sw.track_transport(&st), Some(REOPEN_FIRST));
        assert!(sw.engine.reopen().is_err());
        let st = sw.sweep_once();
        assert_eq!(sw.track_transport(&st), Some(REOPEN_FIRST * 2));
        for _ in 0..20 {
            let st = sw.sweep_once();
            assert!(sw.track_transport(&st).unwrap() <= REOPEN_MAX);
        }
        assert_eq!(sw.reopen_backoff, Some(REOPEN_MAX));
        reopen_works.store(true, Ordering::Relaxed);
        sw.engine.reopen().unwrap();
        assert_eq!(reopens.load(Ordering::Relaxed), 2);
        let st = sw.sweep_once();
        assert!(st.transport_down.is_none());
        assert_eq!(st.answered, n);
        assert_eq!(sw.track_transport(&st), None);
        let snap = cache.load();
        assert!(snap.nodes.iter().all(|r| r.reachable));
        assert!(snap.nodes.iter().all(|r| r.class_port_info.is_some()));
    }

    #[test]
    fn optional_attributes_read_where_answered_and_dropped_where_not() {
        let asked = Arc::new(std::sync::Mutex::new(Asked::default()));
        let a2 = Arc::clone(&asked);
        let (mut sweeper, sim, _clock, cache) =
            setup_with(SweepConfig::default(), move |sim, t| {
                let fabric = sim.fabric();
                let find = |ty| fabric.nodes.iter().find(|n| n.id.node_type == ty).unwrap();
                let sw_lid = find(NodeType::Switch).id.lid;
                let mut answer: Vec<u16> = find(NodeType::Ca).ports.iter().map(|p| p.lid).collect();
                answer.push(sw_lid);
                Box::new(OptionalPma {
                    inner: t,
                    answer,
                    silent: vec![sw_lid],
                    queue: VecDeque::new(),
                    asked: a2,
                })
            });
        let fabric = sim.fabric();
        let find = |ty| {
            fabric
                .nodes
                .iter()
                .find(|n| n.id.node_type == ty)
                .unwrap()
                .clone()
        };
        let (ca, sw) = (find(NodeType::Ca), find(NodeType::Switch));
        let ports: u64 = fabric.nodes.iter().map(|n| n.ports.len() as u64).sum();
        let per_sweep = |sweeper: &mut Sweeper| {
            asked.lock().unwrap().distinct.clear();
            let st = sweeper.sweep_once();
            (asked.lock().unwrap().distinct.len() as u64, st)
        };
        let ca_ports = ca.ports.len() as u64;
        let sw_ports = sw.ports.len() as u64;
        // The other nodes' simulated PMAs answer PortRcvErrorDetails,
        // PortOpRcvCounters, the per-VL 0x19, 0x1A and 0x1C, the
        // congestion-control 0x31-0x37 and PortExtendedSpeedsCounters,
        // switches PortXmitDiscardDetails and SwPortVLCongestion too, and
        // "unsupported" to the rest.
        let others: u64 = fabric
            .nodes
            .iter()
            .filter(|n| n.id.guid != ca.id.guid && n.id.guid != sw.id.guid)
            .map(|n| {
                n.ports.len() as u64
                    * if n.id.node_type == NodeType::Switch {
                        15
                    } else {
                        13
                    }
            })
            .sum();
        let all = OPTIONAL_ATTRS.len() as u64;
        // What is asked once every node and its kind showed what it
        // answers: every port, each attribute the node answers; 0x18,
        // which no switch answers, of no switch.
        let steady = ca_ports * all + sw_ports * (all - 1) + others;
        // First sweep: the first nodes of each kind are asked of one port
        // until a node of their kind answered, those after them of every
        // port; 0x18 stops being asked of switches once two switches left
        // it unanswered.
        let (n1, st1) = per_sweep(&mut sweeper);
        assert!(n1 < ports * all, "{n1} of {}", ports * all);
        assert!(n1 > steady / 2, "{n1} vs {steady}");
        assert_eq!(st1.answered, st1.nodes);
        // The switch's silence on 0x18 is counted apart, not as a timeout
        // of a node that did not answer: one probe, not one per port.
        assert_eq!(st1.timeouts, 0);
        assert_eq!(st1.optional_timeouts, 1);
        let snap = cache.load();
        let rec = snap.node(ca.id.guid).unwrap();
        let got: Vec<u16> = rec.ports().next().unwrap().optional().attrs().collect();
        assert_eq!(got, OPTIONAL_ATTRS.to_vec());
        for a in rec.ports().next().unwrap().optional().attrs() {
            let data = rec.ports().next().unwrap().optional().get(a).unwrap();
            let at = crate::pm::optional::counter_bytes(a).0;
            assert_eq!(data[at], ca.ports[0].num, "PortSelect echoed");
            assert_eq!(u16::from(data[at + 1]), a);
        }
        // What the other nodes answered "unsupported" is not asked again,
        // nor 0x18 of any switch; the ports left out of the first sweep
        // are asked from the second.
        let (n2, st2) = per_sweep(&mut sweeper);
        assert_eq!(n2, steady);
        assert_eq!((st2.timeouts, st2.optional_timeouts), (0, 0));
        let swrec = cache.load().node(sw.id.guid).unwrap().clone();
        assert!(
            swrec
                .ports()
                .all(|p| p.optional().len() == OPTIONAL_ATTRS.len() - 1)
        );
        let (n3, _) = per_sweep(&mut sweeper);
        assert_eq!(n3, steady);
        // Readings are kept, and refreshed (the request count moved).
        let first = |r: &crate::fabric::record::NodeRecord| {
            let at = crate::pm::optional::counter_bytes(OPTIONAL_ATTRS[0]).0;
            r.ports()
                .next()
                .unwrap()
                .optional()
                .get(OPTIONAL_ATTRS[0])
                .unwrap()[at + 2]
        };
        let before = first(rec);
        let snap = cache.load();
        assert_ne!(first(snap.node(ca.id.guid).unwrap()), before);
        // Rarely, what went unanswered is asked again: once, on the sweep
        // numbered a multiple of RETRY_UNANSWERED_SWEEPS, by every node.
        let mut counts = Vec::new();
        while sweeper.state().lock().sweep_no() + 1 < RETRY_UNANSWERED_SWEEPS {
            counts.push(per_sweep(&mut sweeper).0);
        }
        // Each switch that was never asked 0x18 itself (its kind's
        // verdict came first) is asked once in the meantime, at a sweep of
        // its own (one port).
        assert!(counts.iter().any(|&n| n > steady), "{counts:?}");
        assert!(
            counts.iter().all(|&n| (steady..=steady + 1).contains(&n)),
            "{counts:?}"
        );
        // Every attribute is asked again: of every port where a node of
        // the kind answered it, else of one port of the first nodes.
        let (retry, st) = per_sweep(&mut sweeper);
        assert!(retry > steady + 2 * sw_ports, "{retry} vs {steady}");
        assert!(retry <= ports * all, "{retry} of {}", ports * all);
        assert_eq!(st.timeouts, 0);
    }

    #[test]
    fn optional_attributes_off_sends_none() {
        let cfg = SweepConfig {
            optional_attributes: false,
            ..Default::default()
        };
        let (mut sw, sim, _clock, _cache) = setup(cfg);
        let st = sw.sweep_once();
        let fabric = sim.fabric();
        let ports: u64 = fabric.nodes.iter().map(|n| n.ports.len() as u64).sum();
        let n = fabric.nodes.len() as u64;
        // ClassPortInfo + PortCounters and PortCountersExtended per port +
        // PortSamplesControl per node, and PortSamplesResult/ResultExtended
        // of the nodes whose kind answered PortSamplesControl by then.
        assert!(st.mads > n + 2 * ports + n && st.mads <= n + 2 * ports + 3 * n);
        // Then the counters and the three sample attributes.
        assert_eq!(sw.sweep_once().mads, 2 * ports + 3 * n);
    }

    #[test]
    fn optional_attributes_every_nth_sweep_keep_their_readings_between() {
        let every = |n| {
            let (mut sw, sim, _clock, cache) = setup(SweepConfig {
                optional_every: n,
                ..Default::default()
            });
            let fabric = sim.fabric();
            let ca = fabric
                .nodes
                .iter()
                .find(|x| x.id.node_type == NodeType::Ca)
                .unwrap()
                .id
                .guid;
            let mads: Vec<u64> = (0..7).map(|_| sw.sweep_once().mads).collect();
            let kept = cache
                .load()
                .node(ca)
                .unwrap()
                .ports()
                .next()
                .unwrap()
                .optional()
                .len();
            (mads, kept)
        };
        let (all, kept_all) = every(1);
        let (third, kept_third) = every(3);
        // Sweeps 1, 4 and 7 read them; the others send only the rest.
        assert_eq!([third[0], third[3], third[6]], [all[0], all[3], all[6]]);
        for k in [1, 2, 4, 5] {
            assert!(third[k] < all[k], "sweep {}: {third:?} vs {all:?}", k + 1);
            assert_eq!(third[k], third[1]);
        }
        // A CA answers 13 of them: kept after the sweeps that skip them.
        assert_eq!((kept_all, kept_third), (13, 13));
    }

    #[test]
    fn counters_near_overflow_are_cleared_only_when_configured() {
        for clear in [false, true] {
            let cfg = SweepConfig {
                clear_near_overflow: clear,
                ..Default::default()
            };
            // CAs without 64-bit error counters (those are never cleared).
            let (mut sw, sim, clock, cache) = setup_with(cfg, |_, t| {
                Box::new(HideCaps(t, 0, CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED))
            });
            // Enough simulated traffic to saturate 32-bit data counters.
            clock.advance(Duration::from_secs(48 * 3600));
            sw.sweep_once();
            let fabric = sim.fabric();
            let ca = fabric
                .nodes
                .iter()
                .find(|n| n.id.node_type == NodeType::Ca)
                .unwrap();
            let lid = ca.ports[0].lid;
            let slot = crate::fabric::hc::OUT_OCTETS;
            let port = ca.ports[0].num;
            let total = || published_total(&cache, ca.id.guid, port, slot);
            let t1 = total();
            let now = rig::port_counters(&sim, lid, ca.ports[0].num);
            if clear {
                assert!(
                    u64::from(now.xmit_data) * 4 < u64::from(u32::MAX) * 3,
                    "cleared: {}",
                    now.xmit_data
                );
                // The next sweep keeps counting from the cleared value.
                clock.advance(Duration::from_secs(1));
                sw.sweep_once();
                let t2 = total();
                let after = rig::port_counters(&sim, lid, ca.ports[0].num).xmit_data;
                assert!(t2 > t1);
                assert!(t2 <= t1 + u64::from(after), "{t1} {t2} {after}");
                let rec = cache.load();
                let port = &rec.node(ca.id.guid).unwrap().ports().next().unwrap();
                assert!(port.discontinuity.is_some());
                assert_eq!(port.external_resets, 0, "the agent's own clear is no news");
            } else {
                assert_eq!(now.xmit_data, u32::MAX, "saturated, not cleared");
            }
        }
    }

    /// A clear by another tool (a PerformanceSet straight to the PMA) is
    /// counted as an external reset; the first reading of a port is not.
    #[test]
    fn an_out_of_band_clear_counts_as_an_external_reset() {
        let mut rig = AgentRig::swept(RigOptions::default());
        let fabric = rig.fabric();
        let ca = fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == NodeType::Ca && n.ports[0].remote().is_some())
            .unwrap();
        let (lid, num) = (ca.ports[0].lid, ca.ports[0].num);
        let resets = |rig: &AgentRig| {
            rig.cache
                .load()
                .node(ca.id.guid)
                .unwrap()
                .ports()
                .next()
                .unwrap()
                .external_resets
        };
        assert_eq!(resets(&rig), 0);
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        assert_eq!(resets(&rig), 0);
        // Clear every counter (CounterSelect 0xFFFF) behind the agent's back.
        let data = port_counters_data(num, 0xFFFF, 0xFF);
        let (st, _) = rig::pma_request(&rig.sim, lid, method::SET, attr::PORT_COUNTERS, &data)
            .expect("the simulated PMA answers");
        assert_eq!(st, 0);
        rig.advance(Duration::from_secs(1));
        rig.sweep();
        assert_eq!(resets(&rig), 1);
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        assert_eq!(resets(&rig), 1, "counted once");
    }

    #[test]
    fn a_rediscovered_link_change_shows_and_totals_carry_on() {
        let mut rig = AgentRig::swept(RigOptions::default());
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        let fabric = rig.fabric();
        // A switch port cabled to another switch: both ends stay reachable.
        let (sw, port, peer) = fabric
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Switch)
            .find_map(|n| {
                n.ports.iter().find_map(|p| {
                    let (g, q) = p.remote()?;
                    let r = fabric.node(g)?;
                    (r.id.node_type == NodeType::Switch).then_some((n.id.guid, p.num, (g, q)))
                })
            })
            .unwrap();
        let record = |c: &Cache, g, p| c.load().node(g).unwrap().port(p).unwrap().clone();
        let before = record(&rig.cache, sw, port);
        assert_eq!(before.link.state, Some(crate::ib::PortState::Active));
        assert_eq!(before.link.remote(), Some(peer));
        let out_before = before.hc.shown(crate::fabric::hc::OUT_OCTETS).unwrap();

        assert!(rig.sim.set_link(sw, port, false));
        rig.state.lock().offer(rig.sim.fabric());
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        for (g, p) in [(sw, port), peer] {
            let r = record(&rig.cache, g, p);
            assert_eq!(r.link.state, Some(crate::ib::PortState::Down), "{g}[{p}]");
            assert_eq!(r.link.width, None);
            let downed = r.hc.shown(crate::fabric::hc::slot("LinkDowned")).unwrap();
            assert!(downed >= 1, "LinkDownedCounter counts the loss");
        }
        let after = record(&rig.cache, sw, port);
        let out_after = after.hc.shown(crate::fabric::hc::OUT_OCTETS).unwrap();
        assert!(out_after >= out_before, "totals carry on across a merge");

        // Back up: active again, traffic resumes.
        assert!(rig.sim.set_link(sw, port, true));
        rig.state.lock().offer(rig.sim.fabric());
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        let up = record(&rig.cache, sw, port);
        assert_eq!(up.link.state, Some(crate::ib::PortState::Active));
        assert!(up.link.width.is_some());
        rig.advance(Duration::from_secs(10));
        rig.sweep();
        let later = record(&rig.cache, sw, port);
        assert!(later.hc.shown(crate::fabric::hc::OUT_OCTETS).unwrap() > out_after);
    }

    use crate::pm::class_port_info::{
        CAP_EXT_WIDTH, CAP_EXT_WIDTH_NOIETF, CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED,
    };

    /// Passes MADs through, but clears these CapabilityMask and
    /// CapabilityMask2 bits in every ClassPortInfo reply.
    struct HideCaps(crate::sim::SimTransport, u16, u32);

    /// The nodes of a fabric without PortCountersExtended.
    #[allow(non_snake_case)]
    fn NoExtended(t: crate::sim::SimTransport) -> HideCaps {
        HideCaps(
            t,
            CAP_EXT_WIDTH | CAP_EXT_WIDTH_NOIETF,
            CAP2_ADDITIONAL_PORT_COUNTERS_EXTENDED,
        )
    }

    impl MadTransport for HideCaps {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.0.send(to, m)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            let mut r = self.0.recv(timeout)?;
            if let Some(rx) = r.as_mut() {
                let (h, data) = mad::parse(&rx.mad[..]).unwrap();
                if h.attr_id == attr::CLASS_PORT_INFO {
                    let mut cpi = crate::pm::ClassPortInfo::decode(data);
                    cpi.capability_mask &= !self.1;
                    cpi.capability_mask2 &= !self.2;
                    let mut d = *data;
                    cpi.encode(&mut d);
                    rx.mad[mad::DATA_OFFSET..].copy_from_slice(&d);
                }
            }
            Ok(r)
        }
    }

    /// On nodes without PortCountersExtended the 64-bit octets come from
    /// PortCounters: with `clear_near_overflow` they keep counting where
    /// the 32-bit PortXmitData would have saturated, and match the traffic.
    #[test]
    fn totals_survive_32_bit_saturation_without_extended_counters() {
        let cfg = SweepConfig {
            clear_near_overflow: true,
            ..Default::default()
        };
        let (mut sw, sim, clock, cache) = setup_with(cfg, |_, t| Box::new(NoExtended(t)));
        sw.sweep_once();
        let fabric = sim.fabric();
        // The busiest cabled CA port, so that 2^33 words pass quickly.
        let cas: Vec<(crate::ib::Guid, u16, u8)> = fabric
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Ca)
            .flat_map(|n| {
                n.ports
                    .iter()
                    .filter(|p| p.remote().is_some())
                    .map(move |p| (n.id.guid, p.lid, p.num))
            })
            .collect();
        let words = |&(_, lid, port): &(crate::ib::Guid, u16, u8)| {
            rig::port_counters_extended(&sim, lid, port).xmit_data
        };
        let before: Vec<u64> = cas.iter().map(words).collect();
        clock.advance(Duration::from_secs(1));
        let (i, per_s) = cas
            .iter()
            .map(words)
            .zip(&before)
            .map(|(b, a)| b - a)
            .enumerate()
            .max_by_key(|&(_, r)| r)
            .unwrap();
        let (guid, lid, port) = cas[i];
        // Sweeps 10 s apart: less than 75% of 2^32 words pass between two
        // readings even on a full 4x SDR link (2.5e9 words).
        assert!(
            per_s * 10 < (u64::from(u32::MAX) / 4) * 3,
            "{per_s} words/s"
        );
        sw.sweep_once();
        let rec = |c: &Cache| c.load().node(guid).unwrap().port(port).unwrap().clone();
        assert!(
            sw.state().lock().extended(guid, port).is_none(),
            "no PortCountersExtended read"
        );
        let start = rec(&cache).hc.shown(crate::fabric::hc::OUT_OCTETS).unwrap();
        let t0 = rig::port_counters_extended(&sim, lid, port).xmit_data;
        let mut t1 = t0;
        for _ in 0..10_000 {
            clock.advance(Duration::from_secs(10));
            sw.sweep_once();
            t1 = rig::port_counters_extended(&sim, lid, port).xmit_data;
            if t1 - t0 > 2 * u64::from(u32::MAX) {
                break;
            }
        }
        let end = rec(&cache).hc.shown(crate::fabric::hc::OUT_OCTETS).unwrap();
        let counted = end - start;
        let sent = (t1 - t0) * 4;
        assert!(
            sent > u64::from(u32::MAX) * 8,
            "the test passes the 32-bit range twice"
        );
        // The clock stands still within a sweep, so an agent clear loses
        // nothing between its reading and the clear.
        assert_eq!(counted, sent, "64-bit octets follow the traffic");
        let pc = rig::port_counters(&sim, lid, port);
        assert!(
            pc.xmit_data < u32::MAX,
            "the agent kept PortXmitData from saturating"
        );
    }
}

#[cfg(test)]
mod wide_error_tests {
    use super::*;
    use crate::fabric::hc::{XMIT_WAIT, slot};
    use crate::fabric::settings::SweepConfig;
    use crate::ib::NodeType;
    use crate::pm::mad;
    use crate::pm::mad::method;
    use crate::rig::{self, AgentRig, RigOptions};
    use crate::sim::traffic::q;
    use crate::transport::{Fault, MAD_SIZE, MadTransport, Received};
    use std::sync::Mutex;

    /// Passes MADs through and notes the LID of every Set.
    struct SetWatch {
        inner: crate::sim::SimTransport,
        sets: Arc<Mutex<Vec<u16>>>,
    }

    impl MadTransport for SetWatch {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            if mad::parse(m).is_ok_and(|(h, _)| h.method == method::SET) {
                self.sets.lock().unwrap().push(to.lid);
            }
            self.inner.send(to, m)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            self.inner.recv(timeout)
        }
    }

    /// The first cabled port of a node of type `t`: (GUID, PMA LID, port).
    fn cabled(fabric: &crate::ib::Fabric, t: NodeType) -> (crate::ib::Guid, u16, u8) {
        fabric
            .nodes
            .iter()
            .filter(|n| n.id.node_type == t)
            .find_map(|n| {
                let p = n.ports.iter().find(|p| p.remote().is_some())?;
                Some((n.id.guid, n.pma_lid(p.num), p.num))
            })
            .unwrap()
    }

    #[test]
    fn error_counters_past_their_portcounters_width_are_exact_and_never_cleared_where_the_pma_has_64_bit_ones()
     {
        let sets = Arc::new(Mutex::new(Vec::new()));
        let watch = Arc::clone(&sets);
        let mut rig = AgentRig::with_sweep_transport(
            RigOptions {
                // Only what the test adds counts.
                traffic: false,
                sweep: SweepConfig {
                    clear_near_overflow: true,
                    ..Default::default()
                },
                ..Default::default()
            },
            |_, inner| Box::new(SetWatch { inner, sets: watch }),
        );
        rig.sweep();
        let fabric = rig.fabric();
        // The simulator's channel adapters set CapabilityMask2 bit 1, its
        // switches do not.
        let ca = cabled(&fabric, NodeType::Ca);
        let sw = cabled(&fabric, NodeType::Switch);
        let wide = |g| {
            let snap = rig.cache.load();
            let cpi = snap.node(g).unwrap().class_port_info.as_deref().copied();
            cpi.unwrap().wide_counters()
        };
        use crate::pm::class_port_info::WideCounters;
        assert_eq!(wide(ca.0), WideCounters::All);
        assert_eq!(wide(sw.0), WideCounters::DataAndPackets);

        // Three sweeps, each adding less than a PortCounters field holds
        // (so that clearing keeps the switch's totals exact) but more
        // than 75% of it; 5e9 XmitWait ticks pass 32 bits at once.
        let (mut symbols, mut downed) = (0, 0);
        for _ in 0..3 {
            for (g, _, p) in [ca, sw] {
                assert!(rig.sim.add_errors(g, p, q::SYMBOL_ERRORS, 60_000));
                assert!(rig.sim.add_errors(g, p, q::LINK_DOWNED, 200));
            }
            assert!(rig.sim.add_errors(ca.0, ca.2, q::XMIT_WAIT, 5_000_000_000));
            (symbols, downed) = (symbols + 60_000, downed + 200);
            rig.advance(Duration::from_secs(10));
            rig.sweep();
        }
        let port = |g, p| rig.cache.load().node(g).unwrap().port(p).unwrap().clone();
        let sent_to = |lid| sets.lock().unwrap().contains(&lid);

        // The CA: its PMA's 64-bit counters, exact, and no Set sent.
        let pcx = rig::port_counters_extended(&rig.sim, ca.1, ca.2);
        assert_eq!((pcx.symbol_errors, pcx.link_downed), (symbols, downed));
        assert_eq!(pcx.xmit_wait, 15_000_000_000);
        let r = port(ca.0, ca.2);
        assert_eq!(r.hc.shown(slot("SymbolErrors")), Some(symbols));
        assert_eq!(r.hc.shown(slot("LinkDowned")), Some(downed));
        assert_eq!(r.hc.shown(XMIT_WAIT), Some(15_000_000_000));
        assert!(
            !sent_to(ca.1),
            "a node with 64-bit counters is never cleared"
        );
        let pc = rig::port_counters(&rig.sim, ca.1, ca.2);
        assert_eq!((pc.symbol_errors, pc.link_downed), (u16::MAX, u8::MAX));

        // The switch: PortCounters, cleared past 75% and counted on.
        assert!(sent_to(sw.1), "the switch's counters were cleared");
        let r = port(sw.0, sw.2);
        assert_eq!(r.hc.shown(slot("SymbolErrors")), Some(symbols));
        assert_eq!(r.hc.shown(slot("LinkDowned")), Some(downed));
        let pcx = rig::port_counters_extended(&rig.sim, sw.1, sw.2);
        assert_eq!(pcx.symbol_errors, 0, "not filled without the bit");
    }
}

#[cfg(test)]
mod probe_tests {
    use super::*;
    use crate::pm::mad;
    use crate::pm::optional::OPTIONAL_ATTRS;
    use crate::rig::{AgentRig, RigOptions};
    use crate::transport::{Fault, MAD_SIZE, MadTransport, Received};
    use std::sync::atomic::AtomicU64;

    /// Drops, as ibsim does, PortSamplesControl/Result(Extended), the
    /// congestion-control attributes and PortExtendedSpeedsCounters;
    /// counts the requests dropped.
    struct SilentPma {
        inner: crate::sim::SimTransport,
        dropped: Arc<AtomicU64>,
    }

    fn silent(attr_id: u16) -> bool {
        matches!(attr_id, 0x10 | 0x11 | 0x1E | 0x1F | 0x30..=0x37)
    }

    impl MadTransport for SilentPma {
        fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            if mad::parse(m).is_ok_and(|(h, _)| silent(h.attr_id)) {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            self.inner.send(to, m)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            self.inner.recv(timeout)
        }
    }

    /// A fabric of 160 switches (one kind) whose PMAs never answer some
    /// attributes: the first sweep asks the optional ones of a few
    /// switches, on one port, and the three sample attributes of each
    /// switch, the second PortSamplesControl alone (the node's second
    /// strike); no timeout of a node is counted; later sweeps ask none.
    #[test]
    fn what_a_kind_of_node_never_answers_is_probed_on_a_few_nodes_and_one_port() {
        let mut text = String::new();
        for i in 0..160 {
            let peer = i ^ 1;
            text.push_str(&format!("Switch\t8 \"sw{i}\"\n[1]\t\"sw{peer}\"[1]\n\n"));
        }
        let fabric = crate::ib::topology::parse(&text).unwrap();
        let dropped = Arc::new(AtomicU64::new(0));
        let d2 = Arc::clone(&dropped);
        let mut rig = AgentRig::with_sweep_transport(
            RigOptions {
                fabric,
                engine: crate::fabric::engine::EngineConfig {
                    window: 16,
                    timeout: Duration::from_millis(50),
                    retries: 1,
                },
                ..Default::default()
            },
            |_, inner| Box::new(SilentPma { inner, dropped: d2 }),
        );
        let silent_attrs = OPTIONAL_ATTRS.iter().filter(|&&a| silent(a)).count() as u64;
        let first = rig.sweep();
        assert_eq!(first.answered, 160);
        assert_eq!(first.timeouts, 0, "no node counted as silent");
        // Asking every port of every switch would be 160 x 9 x the
        // silent attributes, and three sample attributes of every switch.
        let probes = first.optional_timeouts;
        assert!(probes > 3 * 160);
        assert!(
            probes <= 3 * 160 + 16 * silent_attrs,
            "{probes} requests went unanswered"
        );
        // Each sent twice (one retry).
        assert_eq!(dropped.load(Ordering::Relaxed), 2 * probes);
        let second = rig.sweep();
        assert_eq!((second.timeouts, second.optional_timeouts), (0, 160));
        let before = dropped.load(Ordering::Relaxed);
        let third = rig.sweep();
        assert_eq!((third.timeouts, third.optional_timeouts), (0, 0));
        assert_eq!(
            dropped.load(Ordering::Relaxed),
            before,
            "nothing silent asked"
        );
        // The attributes the switches answer are read on every port: all
        // but the silent ones, 0x18 and 0x1B ("unsupported").
        let snap = rig.cache.load();
        let answered = OPTIONAL_ATTRS.len() as u64 - silent_attrs - 2;
        let ports = snap.nodes.iter().flat_map(|n| n.ports());
        assert!(ports.clone().count() >= 160 * 8);
        for p in ports {
            assert_eq!(p.optional().len() as u64, answered);
        }
    }
}
