//! One window of outstanding MADs, without I/O: which request goes out next,
//! under which transaction ID, when it expires, when it is retried, and how
//! it ended. Time is an argument; the window never reads a clock, sleeps or
//! touches a transport. The drivers ([`crate::fabric::engine::Engine`] for PM
//! MADs, discovery's walk for directed-route SMPs) own the transport and the
//! clock and feed the window.
//!
//! Drive it like this: [`MadWindow::push`] the requests (by index into the
//! caller's own list), then in a loop drain [`MadWindow::poll_transmit`]
//! (send each, reporting a refused send with
//! [`MadWindow::handle_send_error`]), drain [`MadWindow::poll_event`], wait
//! for a completion until [`MadWindow::poll_timeout`], feed it to
//! [`MadWindow::handle_completion`], and call
//! [`MadWindow::handle_timeout`]. An early `handle_timeout` does nothing.
//!
//! Guarantees: at most `window` requests in flight; exactly one
//! [`WindowEvent`] per pushed request; a retry is sent before any queued
//! first attempt; a reply is matched only to the attempt it answers (each
//! attempt has its own TID), so late, duplicate and unknown replies are
//! ignored.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::transport::{MAD_SIZE, Received, TID_MASK, TransportError, tid_of};

/// How many requests may be outstanding, for how long, and how often each is
/// resent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowConfig {
    /// Requests in flight at once (clamped to `1..=MAX_WINDOW`).
    pub window: usize,
    /// Deadline of each attempt.
    pub timeout: Duration,
    /// Resends after the first attempt.
    pub retries: u32,
}

/// Largest window accepted (1024 in flight deadlocked umad2sim).
pub const MAX_WINDOW: usize = 256;

/// One MAD to put on the wire: the request it belongs to and the TID (the
/// bits under [`TID_MASK`]) to send it with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    pub index: usize,
    pub tid: u32,
}

/// How one request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowEvent {
    /// A completion with status 0 answered the request's current attempt.
    Reply {
        index: usize,
        mad: Box<[u8; MAD_SIZE]>,
    },
    /// No answer after every retry.
    Timeout { index: usize },
    /// The transport refused the send or failed.
    Failed { index: usize, error: TransportError },
}

impl WindowEvent {
    /// The request this event ends.
    pub fn index(&self) -> usize {
        match self {
            WindowEvent::Reply { index, .. }
            | WindowEvent::Timeout { index }
            | WindowEvent::Failed { index, .. } => *index,
        }
    }
}

/// Counts since the window was made (or since [`MadWindow::take_stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WindowStats {
    /// MADs handed to the transport (every attempt).
    pub sent: u64,
    pub replies: u64,
    pub timeouts: u64,
    pub errors: u64,
}

struct InFlight {
    index: usize,
    /// Attempts made, this one included.
    attempts: u32,
    deadline: Instant,
}

/// Requests waiting for a slot, in order: runs of consecutive indices not
/// tried yet (a sweep pushes hundreds of thousands in a row: one entry),
/// and retries (an index with the attempts made so far).
#[derive(Debug, Default)]
struct Queue(VecDeque<Queued>);

#[derive(Debug)]
enum Queued {
    Fresh(std::ops::Range<usize>),
    Retry(usize, u32),
}

impl Queue {
    fn push_back(&mut self, index: usize) {
        if let Some(Queued::Fresh(r)) = self.0.back_mut()
            && r.end == index
        {
            r.end += 1;
            return;
        }
        self.0.push_back(Queued::Fresh(index..index + 1));
    }

    fn push_front_retry(&mut self, index: usize, attempts: u32) {
        self.0.push_front(Queued::Retry(index, attempts));
    }

    /// The next (index, attempts made so far).
    fn pop_front(&mut self) -> Option<(usize, u32)> {
        match self.0.front_mut()? {
            Queued::Retry(i, a) => {
                let next = (*i, *a);
                self.0.pop_front();
                Some(next)
            }
            Queued::Fresh(r) => {
                let i = r.next()?;
                if r.start >= r.end {
                    self.0.pop_front();
                }
                Some((i, 0))
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The window. See the module documentation for the call order.
pub struct MadWindow {
    cfg: WindowConfig,
    /// Requests waiting for a slot.
    queue: Queue,
    /// After a transport failure: the error and the requests still to end
    /// `Failed` (those that were in flight, then the queued ones), given
    /// out one event at a time instead of an event per request at once (a
    /// sweep's batch holds millions).
    failing: Option<(TransportError, VecDeque<usize>, Queue)>,
    inflight: HashMap<u32, InFlight>,
    /// Deadlines of the attempts in flight, earliest first (entries of
    /// attempts that already ended are skipped when they come up).
    deadlines: VecDeque<(Instant, u32)>,
    events: VecDeque<WindowEvent>,
    next_tid: u32,
    stats: WindowStats,
}

impl MadWindow {
    pub fn new(mut cfg: WindowConfig) -> Self {
        cfg.window = cfg.window.clamp(1, MAX_WINDOW);
        MadWindow {
            cfg,
            queue: Queue::default(),
            failing: None,
            inflight: HashMap::new(),
            deadlines: VecDeque::new(),
            events: VecDeque::new(),
            next_tid: 1,
            stats: WindowStats::default(),
        }
    }

    pub fn config(&self) -> WindowConfig {
        self.cfg
    }

    /// Queue a request's first attempt behind every queued one.
    pub fn push(&mut self, index: usize) {
        self.queue.push_back(index);
    }

    /// Nothing queued and nothing in flight (events may still wait in
    /// [`poll_event`](Self::poll_event)).
    pub fn is_idle(&self) -> bool {
        self.queue.is_empty() && self.inflight.is_empty()
    }

    /// Attempts in flight now.
    pub fn in_flight(&self) -> usize {
        self.inflight.len()
    }

    /// The next MAD to send, if a slot is free and a request waits. The
    /// attempt's deadline starts at `now`.
    #[must_use]
    pub fn poll_transmit(&mut self, now: Instant) -> Option<Transmit> {
        if self.inflight.len() >= self.cfg.window {
            return None;
        }
        let (index, attempts) = self.queue.pop_front()?;
        let tid = self.alloc_tid();
        let deadline = now + self.cfg.timeout;
        self.inflight.insert(
            tid,
            InFlight {
                index,
                attempts: attempts + 1,
                deadline,
            },
        );
        // With one timeout and a monotonic `now` this appends at the back.
        let at = self.deadlines.partition_point(|&(d, _)| d <= deadline);
        self.deadlines.insert(at, (deadline, tid));
        self.stats.sent += 1;
        Some(Transmit { index, tid })
    }

    /// The transport refused the MAD of `tid`: its request ends `Failed`.
    pub fn handle_send_error(&mut self, tid: u32, error: TransportError) {
        if let Some(f) = self.inflight.remove(&tid) {
            self.stats.sent = self.stats.sent.saturating_sub(1);
            self.stats.errors += 1;
            self.events.push_back(WindowEvent::Failed {
                index: f.index,
                error,
            });
            self.trim();
        }
    }

    /// A completion from the transport: a reply (status 0), or an attempt
    /// the transport gave up on (status != 0, e.g. umad's 110), which counts
    /// as that attempt's deadline. Completions whose TID matches no attempt
    /// in flight (late, duplicate, someone else's) are ignored. Returns
    /// whether the completion was taken.
    pub fn handle_completion(&mut self, _now: Instant, rx: Received) -> bool {
        let tid = tid_of(&rx.mad);
        let Some(f) = self.inflight.remove(&tid) else {
            return false;
        };
        if rx.status != 0 {
            self.expire(f);
        } else {
            self.stats.replies += 1;
            self.events.push_back(WindowEvent::Reply {
                index: f.index,
                mad: rx.mad,
            });
        }
        self.trim();
        true
    }

    /// The transport failed as a whole: every request still queued or in
    /// flight ends `Failed`.
    pub fn handle_transport_error(&mut self, error: TransportError) {
        let mut inflight: Vec<usize> = self.inflight.drain().map(|(_, f)| f.index).collect();
        inflight.sort_unstable();
        self.deadlines.clear();
        let queued = std::mem::take(&mut self.queue);
        self.failing = Some((error, inflight.into(), queued));
    }

    /// Expire every attempt whose deadline is at or before `now`: retried
    /// (ahead of the queue) or ended `Timeout`.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(&(d, tid)) = self.deadlines.front() {
            if d > now {
                break;
            }
            self.deadlines.pop_front();
            if self.inflight.get(&tid).is_some_and(|f| f.deadline == d)
                && let Some(f) = self.inflight.remove(&tid)
            {
                self.expire(f);
            }
        }
        self.trim();
    }

    /// When [`handle_timeout`](Self::handle_timeout) next has work: the
    /// earliest deadline in flight (`None` when nothing is in flight).
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // `trim` keeps the front entry live.
        self.deadlines.front().map(|&(d, _)| d)
    }

    /// Drop deadlines of attempts that already ended from the front, so the
    /// front is always the earliest live deadline (amortised O(1)).
    fn trim(&mut self) {
        while let Some(&(d, tid)) = self.deadlines.front() {
            if self.inflight.get(&tid).is_some_and(|f| f.deadline == d) {
                break;
            }
            self.deadlines.pop_front();
        }
    }

    /// The next request that ended, in the order they ended.
    #[must_use]
    pub fn poll_event(&mut self) -> Option<WindowEvent> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        let (error, inflight, queued) = self.failing.as_mut()?;
        let Some(index) = inflight
            .pop_front()
            .or_else(|| queued.pop_front().map(|(i, _)| i))
        else {
            self.failing = None;
            return None;
        };
        self.stats.errors += 1;
        Some(WindowEvent::Failed {
            index,
            error: error.clone(),
        })
    }

    /// The counts so far, resetting them.
    pub fn take_stats(&mut self) -> WindowStats {
        std::mem::take(&mut self.stats)
    }

    /// The TID the next attempt gets.
    pub fn next_tid(&self) -> u32 {
        self.next_tid
    }

    /// Start allocating at `tid` (masked to [`TID_MASK`], 0 skipped).
    pub fn set_next_tid(&mut self, tid: u32) {
        self.next_tid = (tid & TID_MASK).max(1);
    }

    fn alloc_tid(&mut self) -> u32 {
        loop {
            let t = self.next_tid;
            self.next_tid = (self.next_tid.wrapping_add(1) & TID_MASK).max(1);
            // A TID still in flight after a full wrap is skipped.
            if !self.inflight.contains_key(&t) {
                return t;
            }
        }
    }

    fn expire(&mut self, f: InFlight) {
        if f.attempts <= self.cfg.retries {
            // Retries go to the front so one request's retries do not wait
            // behind the whole queue.
            self.queue.push_front_retry(f.index, f.attempts);
        } else {
            self.stats.timeouts += 1;
            self.events
                .push_back(WindowEvent::Timeout { index: f.index });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{Down, Fault, MadAddr};

    const MS: Duration = Duration::from_millis(1);

    fn cfg(window: usize, retries: u32) -> WindowConfig {
        WindowConfig {
            window,
            timeout: 100 * MS,
            retries,
        }
    }

    fn reply(tid: u32, status: i32) -> Received {
        let mut mad = Box::new([0u8; MAD_SIZE]);
        mad[12..16].copy_from_slice(&tid.to_be_bytes());
        Received {
            from: MadAddr::gsi(1),
            status,
            mad,
        }
    }

    fn drain_tx(w: &mut MadWindow, now: Instant) -> Vec<Transmit> {
        std::iter::from_fn(|| w.poll_transmit(now)).collect()
    }

    fn drain_events(w: &mut MadWindow) -> Vec<WindowEvent> {
        std::iter::from_fn(|| w.poll_event()).collect()
    }

    #[test]
    fn at_most_window_in_flight_and_one_event_per_request() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(4, 0));
        for i in 0..10 {
            w.push(i);
        }
        let mut now = t0;
        let mut seen = vec![0u32; 10];
        while !w.is_idle() {
            let tx = drain_tx(&mut w, now);
            assert!(w.in_flight() <= 4);
            assert!(tx.len() <= 4);
            // Answer each one twice: the duplicate is ignored.
            for t in &tx {
                assert!(w.handle_completion(now, reply(t.tid, 0)));
                assert!(!w.handle_completion(now, reply(t.tid, 0)));
            }
            for e in drain_events(&mut w) {
                assert!(matches!(e, WindowEvent::Reply { .. }));
                seen[e.index()] += 1;
            }
            now += MS;
        }
        assert_eq!(seen, [1; 10]);
        let s = w.take_stats();
        assert_eq!((s.sent, s.replies, s.timeouts, s.errors), (10, 10, 0, 0));
    }

    #[test]
    fn a_run_of_indices_is_one_queue_entry_and_retries_go_first() {
        let mut q = Queue::default();
        for i in 0..100_000 {
            q.push_back(i);
        }
        q.push_back(7);
        assert_eq!(q.0.len(), 2, "one run, then an index out of order");
        assert_eq!(q.pop_front(), Some((0, 0)));
        q.push_front_retry(42, 2);
        assert_eq!(q.pop_front(), Some((42, 2)));
        assert_eq!(q.pop_front(), Some((1, 0)));
        let rest: Vec<usize> = std::iter::from_fn(|| q.pop_front().map(|(i, _)| i)).collect();
        assert_eq!(rest.len(), 99_999);
        assert_eq!(rest[..2], [2, 3]);
        assert_eq!(*rest.last().unwrap(), 7);
        assert!(q.is_empty());
    }

    #[test]
    fn timeouts_retry_ahead_of_the_queue_then_end() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(1, 2));
        w.push(7);
        w.push(8);
        let first = w.poll_transmit(t0).unwrap();
        assert_eq!(first.index, 7);
        assert_eq!(w.poll_transmit(t0), None, "window of one is full");
        assert_eq!(w.poll_timeout(), Some(t0 + 100 * MS));
        // Early: nothing happens.
        w.handle_timeout(t0 + 99 * MS);
        assert_eq!(w.in_flight(), 1);
        w.handle_timeout(t0 + 100 * MS);
        // The retry of 7 goes before 8's first attempt, under a new TID.
        let retry = w.poll_transmit(t0 + 100 * MS).unwrap();
        assert_eq!(retry.index, 7);
        assert_ne!(retry.tid, first.tid);
        // A late reply to the first attempt is ignored.
        assert!(!w.handle_completion(t0 + 101 * MS, reply(first.tid, 0)));
        w.handle_timeout(t0 + 200 * MS);
        let last = w.poll_transmit(t0 + 200 * MS).unwrap();
        assert_eq!(last.index, 7);
        assert!(drain_events(&mut w).is_empty());
        w.handle_timeout(t0 + 300 * MS);
        assert_eq!(drain_events(&mut w), [WindowEvent::Timeout { index: 7 }]);
        let next = w.poll_transmit(t0 + 300 * MS).unwrap();
        assert_eq!(next.index, 8);
        w.handle_completion(t0 + 301 * MS, reply(next.tid, 0));
        assert!(matches!(
            drain_events(&mut w)[..],
            [WindowEvent::Reply { index: 8, .. }]
        ));
        assert!(w.is_idle());
        assert_eq!(w.poll_timeout(), None);
        let s = w.take_stats();
        assert_eq!((s.sent, s.replies, s.timeouts), (4, 1, 1));
    }

    #[test]
    fn transport_timeout_status_counts_as_the_deadline() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(2, 1));
        w.push(0);
        let a = w.poll_transmit(t0).unwrap();
        // umad reports ETIMEDOUT before our own deadline.
        assert!(w.handle_completion(t0 + 10 * MS, reply(a.tid, 110)));
        let b = w.poll_transmit(t0 + 10 * MS).unwrap();
        assert_eq!(b.index, 0);
        assert!(w.handle_completion(t0 + 20 * MS, reply(b.tid, 110)));
        assert_eq!(drain_events(&mut w), [WindowEvent::Timeout { index: 0 }]);
        assert!(w.is_idle());
    }

    #[test]
    fn poll_timeout_is_the_earliest_live_deadline() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(8, 0));
        w.push(0);
        w.push(1);
        let a = w.poll_transmit(t0).unwrap();
        let _b = w.poll_transmit(t0 + 10 * MS).unwrap();
        assert_eq!(w.poll_timeout(), Some(t0 + 100 * MS));
        w.handle_completion(t0 + 20 * MS, reply(a.tid, 0));
        assert_eq!(w.poll_timeout(), Some(t0 + 110 * MS));
        // Ended attempts leave nothing behind in the deadline queue.
        assert_eq!(w.deadlines.len(), 1);
    }

    #[test]
    fn unknown_tids_are_ignored() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(2, 0));
        w.push(0);
        let a = w.poll_transmit(t0).unwrap();
        assert!(!w.handle_completion(t0, reply(a.tid + 1, 0)));
        assert!(!w.handle_completion(t0, reply(0, 0)));
        assert_eq!(w.in_flight(), 1);
        assert!(drain_events(&mut w).is_empty());
    }

    #[test]
    fn send_errors_end_the_request_and_free_the_slot() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(1, 3));
        w.push(0);
        w.push(1);
        let a = w.poll_transmit(t0).unwrap();
        w.handle_send_error(a.tid, TransportError::NoAddress);
        assert_eq!(
            drain_events(&mut w),
            [WindowEvent::Failed {
                index: 0,
                error: TransportError::NoAddress
            }]
        );
        // No retry of a refused send; the next request takes the slot.
        let b = w.poll_transmit(t0).unwrap();
        assert_eq!(b.index, 1);
        let s = w.take_stats();
        assert_eq!((s.sent, s.errors), (1, 1));
    }

    #[test]
    fn transport_error_fails_everything_once() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(2, 0));
        for i in 0..5 {
            w.push(i);
        }
        let _ = drain_tx(&mut w, t0);
        let gone = TransportError::Recv(Fault::Down(Down::ReaderStopped));
        w.handle_transport_error(gone.clone());
        assert!(w.is_idle());
        // In flight first, then the queued ones, each once, with the error.
        let ended = drain_events(&mut w);
        let failed = |index| WindowEvent::Failed {
            index,
            error: gone.clone(),
        };
        assert_eq!(ended, (0..5).map(failed).collect::<Vec<_>>());
        assert_eq!(w.take_stats().errors, 5);
        // A batch's worth queued: its Failed events are made as they are
        // taken, none held at once.
        for i in 0..100_000 {
            w.push(i);
        }
        w.handle_transport_error(TransportError::Recv(Fault::Down(Down::ReaderStopped)));
        assert!(w.events.is_empty());
        assert_eq!(drain_events(&mut w).len(), 100_000);
        w.handle_timeout(t0 + 10 * 100 * MS);
        assert!(drain_events(&mut w).is_empty());
    }

    #[test]
    fn tids_stay_under_the_mask_and_skip_zero() {
        let t0 = Instant::now();
        let mut w = MadWindow::new(cfg(4, 0));
        w.set_next_tid(TID_MASK - 1);
        for i in 0..4 {
            w.push(i);
        }
        let tids: Vec<u32> = drain_tx(&mut w, t0).iter().map(|t| t.tid).collect();
        assert_eq!(tids, [TID_MASK - 1, TID_MASK, 1, 2]);
    }
}
