//! Many PM MADs in flight: the driver of a [`MadWindow`] (a window of
//! outstanding requests, a deadline and retries per MAD, no head-of-line
//! blocking behind a node that does not answer) over a [`MadTransport`].
//! Replies are matched on the [`TID_MASK`] bits of the transaction ID.

use crate::time::Clock;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::window::{MadWindow, Transmit, WindowConfig, WindowEvent, WindowStats};
use crate::pm::mad::{self, method::GET_RESP as METHOD_GET_RESP};
use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, TransportError, wire_tid};

/// One request: where, what, and the 192-byte PM data area.
#[derive(Clone, Debug)]
pub struct MadRequest {
    pub to: MadAddr,
    pub method: u8,
    pub attr_id: u16,
    pub attr_mod: u32,
    pub data: [u8; 192],
}

/// Anything the engine can send: where it goes, and its MAD for a TID.
/// Sweeps use a compact form that builds the 256 bytes only when sending.
pub trait Request {
    fn to(&self) -> MadAddr;
    fn mad(&self, tid: u64) -> [u8; MAD_SIZE];
}

impl Request for MadRequest {
    fn to(&self) -> MadAddr {
        self.to
    }
    fn mad(&self, tid: u64) -> [u8; MAD_SIZE] {
        mad::request(self.method, self.attr_id, self.attr_mod, tid, &self.data)
    }
}

/// How one request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MadOutcome {
    /// A GetResp with MAD status 0 (or only the redirect bit when `status`
    /// says so): the status and the reply's data area.
    Reply { status: u16, data: Box<[u8; 192]> },
    /// A GetResp whose MAD status reports an error.
    Status(u16),
    /// No answer after every retry.
    Timeout,
    /// The transport refused the send or failed.
    Failed(TransportError),
}

#[derive(Clone, Copy, Debug)]
pub struct EngineConfig {
    /// Requests in flight at once.
    pub window: usize,
    /// Per-MAD deadline.
    pub timeout: Duration,
    /// Resends after the first attempt.
    pub retries: u32,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            window: 64,
            timeout: Duration::from_millis(200),
            retries: 3,
        }
    }
}

/// The TID bits the engine allocates and matches.
pub use crate::transport::TID_MASK;

/// Largest window the engine accepts.
pub use super::window::MAX_WINDOW;

/// Counts of one batch.
pub type BatchStats = WindowStats;

/// The driver of one [`MadWindow`] over a transport: the only code on the
/// PM path that touches the transport; it reads the time from its
/// [`Clock`].
pub struct Engine {
    transport: Box<dyn MadTransport>,
    win: MadWindow,
    clock: Clock,
    /// How the transport failed as a whole during the last run.
    failure: Option<TransportError>,
    /// Ends a [`run`](Self::run) early (the agent's shutdown signal).
    cancel: Option<std::sync::Arc<AtomicBool>>,
}

impl Engine {
    pub fn new(transport: Box<dyn MadTransport>, cfg: EngineConfig) -> Self {
        Engine {
            transport,
            win: MadWindow::new(WindowConfig {
                window: cfg.window,
                timeout: cfg.timeout,
                retries: cfg.retries,
            }),
            failure: None,
            cancel: None,
            clock: Clock::system(),
        }
    }

    /// An engine that reads the time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.set_clock(clock);
        self
    }

    /// Read the time from `clock` from now on.
    pub fn set_clock(&mut self, clock: Clock) {
        self.clock = clock;
    }

    /// The clock the engine reads.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    /// An engine whose runs end soon after `cancel` is set (within
    /// [`CANCEL_POLL`]): the requests still outstanding then get no
    /// outcome, and the next run starts from an empty window.
    pub fn with_cancel(mut self, cancel: std::sync::Arc<AtomicBool>) -> Self {
        self.cancel = Some(cancel);
        self
    }

    pub fn config(&self) -> EngineConfig {
        let w = self.win.config();
        EngineConfig {
            window: w.window,
            timeout: w.timeout,
            retries: w.retries,
        }
    }

    /// Run every request to completion; `on_done(index, outcome)` is called
    /// once per request, in completion order.
    pub fn run<R: Request>(
        &mut self,
        reqs: &[R],
        mut on_done: impl FnMut(usize, MadOutcome),
    ) -> BatchStats {
        self.run_requests(reqs, |i, o, _| on_done(i, o), || {})
    }

    /// [`Self::run`] whose `on_done(index, outcome, now)` is also given
    /// the time (of the engine's clock) the outcome was taken at.
    pub fn run_at<R: Request>(
        &mut self,
        reqs: &[R],
        on_done: impl FnMut(usize, MadOutcome, Instant),
    ) -> BatchStats {
        self.run_requests(reqs, on_done, || {})
    }

    /// [`Self::run_at`] with requests made as they are sent, and
    /// `on_wait` called each time the engine is about to wait on the
    /// transport (to let go of what its requests and outcomes hold, a
    /// lock, while it waits).
    pub fn run_requests<Q: Requests + ?Sized>(
        &mut self,
        reqs: &Q,
        on_done: impl FnMut(usize, MadOutcome, Instant),
        on_wait: impl FnMut(),
    ) -> BatchStats {
        let _ = self.win.take_stats();
        for i in 0..reqs.count() {
            self.win.push(i);
        }
        let mut batch = Batch {
            reqs,
            on_done,
            on_wait,
        };
        let opts = DriveOptions {
            cancel: self.cancel.as_deref(),
            ..Default::default()
        };
        let end = drive(
            &mut *self.transport,
            &mut self.win,
            &opts,
            &mut batch,
            &self.clock,
        );
        let cancelled = matches!(end, DriveEnd::Cancelled);
        self.failure = match end {
            DriveEnd::Failed(e) => Some(e),
            _ => None,
        };
        let stats = self.win.take_stats();
        if cancelled {
            // What was queued or in flight is forgotten; TIDs go on.
            let tid = self.win.next_tid();
            self.win = MadWindow::new(self.win.config());
            self.win.set_next_tid(tid);
        }
        stats
    }

    /// Open the transport again after it failed (see
    /// [`transport_failed`](Self::transport_failed)).
    pub fn reopen(&mut self) -> Result<(), Fault> {
        self.transport.reopen()
    }

    /// Whether the transport failed as a whole during the last
    /// [`run`](Self::run): its receive failed, or it refused every send.
    pub fn transport_failed(&self) -> bool {
        self.failure.is_some()
    }

    /// How the transport failed as a whole during the last
    /// [`run`](Self::run), if it did.
    pub fn failure(&self) -> Option<&TransportError> {
        self.failure.as_ref()
    }
}

/// A batch's requests by index: a slice of them, or anything that makes
/// request `i` when it is sent (a sweep derives each from its slot rather
/// than hold hundreds of thousands of them).
pub trait Requests {
    /// How many requests the batch has.
    fn count(&self) -> usize;
    /// The address and MAD of request `i` with transaction ID `tid`;
    /// `None` when it cannot be made (the request fails).
    fn build(&self, i: usize, tid: u64) -> Option<(MadAddr, [u8; MAD_SIZE])>;
}

impl<R: Request> Requests for [R] {
    fn count(&self) -> usize {
        self.len()
    }

    fn build(&self, i: usize, tid: u64) -> Option<(MadAddr, [u8; MAD_SIZE])> {
        let r = self.get(i)?;
        Some((r.to(), r.mad(tid)))
    }
}

/// One [`Engine::run`]: requests by index, outcomes to a callback.
struct Batch<'a, Q: ?Sized, F, W> {
    reqs: &'a Q,
    on_done: F,
    on_wait: W,
}

impl<Q, F, W> Requester for Batch<'_, Q, F, W>
where
    Q: Requests + ?Sized,
    F: FnMut(usize, MadOutcome, Instant),
    W: FnMut(),
{
    fn wait(&mut self) {
        (self.on_wait)();
    }

    fn build(&mut self, tx: Transmit) -> Option<(MadAddr, [u8; MAD_SIZE])> {
        self.reqs.build(tx.index, wire_tid(tx.tid))
    }

    fn on_event(&mut self, _win: &mut MadWindow, _ev: WindowEvent) -> bool {
        // `drive` calls `on_event_at`.
        true
    }

    fn on_event_at(&mut self, _win: &mut MadWindow, ev: WindowEvent, now: Instant) -> bool {
        let (index, outcome) = match ev {
            WindowEvent::Reply { index, mad } => (index, outcome_of(&mad)),
            WindowEvent::Timeout { index } => (index, MadOutcome::Timeout),
            WindowEvent::Failed { index, error } => (index, MadOutcome::Failed(error)),
        };
        (self.on_done)(index, outcome, now);
        true
    }
}

/// What a [`drive`] sends and how it takes each request's end.
pub trait Requester {
    /// The address and MAD of one transmit (its TID: [`wire_tid`]);
    /// `None` fails the request without sending.
    fn build(&mut self, tx: Transmit) -> Option<(MadAddr, [u8; MAD_SIZE])>;
    /// One request ended; follow-up requests may be pushed into `win`.
    /// Returning false stops the drive.
    fn on_event(&mut self, win: &mut MadWindow, ev: WindowEvent) -> bool;
    /// [`Self::on_event`] with the time the drive took the event at.
    fn on_event_at(&mut self, win: &mut MadWindow, ev: WindowEvent, now: Instant) -> bool {
        let _ = now;
        self.on_event(win, ev)
    }
    /// The drive is about to wait on the transport.
    fn wait(&mut self) {}
}

/// How often a cancellable [`drive`] looks at its flag.
pub const CANCEL_POLL: Duration = Duration::from_millis(50);

/// Options of one [`drive`].
#[derive(Clone, Copy, Debug, Default)]
pub struct DriveOptions<'a> {
    /// Stop (with [`DriveEnd::Cancelled`]) soon after this is set.
    pub cancel: Option<&'a AtomicBool>,
    /// Take only completions of this management class.
    pub class: Option<u8>,
}

/// Why a [`drive`] returned.
#[derive(Debug)]
pub enum DriveEnd {
    /// Every request ended.
    Idle,
    /// The requester returned false.
    Stopped,
    /// The cancel flag was set.
    Cancelled,
    /// The transport failed as a whole: its receive failed (every request
    /// outstanding then ended `Failed`), or it refused every send it was
    /// given for a reason other than the MAD itself
    /// ([`Fault::refuses_only_this_mad`]).
    Failed(TransportError),
}

/// Feed `win` from `transport` until it is idle, the requester stops it, or
/// it is cancelled: the only loop that touches the transport for a window.
/// It reads the time from `clock` (a transport on virtual time moves that
/// clock when it has nothing to give, rather than wait).
pub fn drive(
    transport: &mut dyn MadTransport,
    win: &mut MadWindow,
    opts: &DriveOptions<'_>,
    req: &mut dyn Requester,
    clock: &Clock,
) -> DriveEnd {
    let mut failure = None;
    // Whether any send went out, and the first refusal not caused by the
    // MAD itself.
    let mut sent_any = false;
    let mut refused = None;
    let cancelled = || opts.cancel.is_some_and(|c| c.load(Ordering::Relaxed));
    loop {
        if cancelled() {
            return DriveEnd::Cancelled;
        }
        let now = clock.now();
        while let Some(tx) = win.poll_transmit(now) {
            let Some((to, mad)) = req.build(tx) else {
                win.handle_send_error(tx.tid, TransportError::NoAddress);
                continue;
            };
            match transport.send(&to, &mad) {
                Ok(()) => sent_any = true,
                Err(fault) => {
                    let only_this_mad = fault.refuses_only_this_mad();
                    let e = TransportError::Send { lid: to.lid, fault };
                    if !only_this_mad && refused.is_none() {
                        refused = Some(e.clone());
                    }
                    win.handle_send_error(tx.tid, e);
                }
            }
        }
        let mut stopped = false;
        while let Some(ev) = win.poll_event() {
            if !req.on_event_at(win, ev, now) {
                stopped = true;
                break;
            }
        }
        if stopped || win.is_idle() {
            if !sent_any && failure.is_none() {
                failure = refused.take();
            }
            return match failure {
                Some(e) => DriveEnd::Failed(e),
                None if stopped => DriveEnd::Stopped,
                None => DriveEnd::Idle,
            };
        }
        let Some(deadline) = win.poll_timeout() else {
            continue;
        };
        let mut wait = deadline.saturating_duration_since(clock.now());
        if opts.cancel.is_some() {
            wait = wait.min(CANCEL_POLL);
        }
        req.wait();
        let rx = transport.recv(wait);
        let now = clock.now();
        match rx {
            Ok(Some(rx)) => {
                if opts.class.is_none_or(|c| rx.mad[1] == c) {
                    win.handle_completion(now, rx);
                }
            }
            Ok(None) => {}
            Err(fault) => {
                let e = TransportError::Recv(fault);
                win.handle_transport_error(e.clone());
                failure = Some(e);
            }
        }
        win.handle_timeout(now);
    }
}

pub use crate::pm::mad::status::REDIRECT as STATUS_REDIRECT;

fn outcome_of(raw: &[u8; MAD_SIZE]) -> MadOutcome {
    match mad::parse(raw) {
        Ok((h, data)) if h.method == METHOD_GET_RESP => {
            // Bits 2..4 carry the error code; bit 1 is redirect.
            if h.status & !STATUS_REDIRECT & 0x7FFF != 0 {
                MadOutcome::Status(h.status)
            } else {
                MadOutcome::Reply {
                    status: h.status,
                    data: Box::new(*data),
                }
            }
        }
        Ok((h, _)) => MadOutcome::Failed(TransportError::NotAResponse { method: h.method }),
        Err(e) => MadOutcome::Failed(TransportError::BadReply(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pm::mad::{MadHeader, parse, response};
    use crate::sim::{ManualClock, VirtualClock};
    use crate::transport::{Down, IoFault, Received};
    use std::collections::VecDeque;

    /// Answers every MAD to a LID in `live` at once; drops the rest. Counts
    /// the most MADs outstanding at once.
    struct Fake {
        live: Vec<u16>,
        queue: VecDeque<Received>,
        outstanding: usize,
        max_outstanding: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        sends: Vec<u16>,
        /// The engine's time: a receive with nothing to give moves it on
        /// by its timeout.
        time: VirtualClock,
    }

    impl Fake {
        /// Answers `live` on a virtual clock of its own.
        fn answering(live: Vec<u16>) -> Fake {
            Fake {
                live,
                queue: VecDeque::new(),
                outstanding: 0,
                max_outstanding: Default::default(),
                sends: Vec::new(),
                time: VirtualClock::new(ManualClock::new()),
            }
        }
    }

    /// An engine over `transport` (a fake, or one wrapping it) on `time`.
    fn engine_on(
        time: &VirtualClock,
        transport: Box<dyn MadTransport>,
        window: usize,
        timeout_ms: u64,
        retries: u32,
    ) -> Engine {
        Engine::new(
            transport,
            EngineConfig {
                window,
                timeout: Duration::from_millis(timeout_ms),
                retries,
            },
        )
        .with_clock(time.clock())
    }

    impl MadTransport for Fake {
        fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.sends.push(to.lid);
            self.outstanding += 1;
            self.max_outstanding
                .fetch_max(self.outstanding, std::sync::atomic::Ordering::Relaxed);
            if self.live.contains(&to.lid) {
                let (h, data): (MadHeader, _) = parse(mad).unwrap();
                let mut reply = *data;
                reply[0] = to.lid as u8;
                self.queue.push_back(Received {
                    from: *to,
                    status: 0,
                    mad: Box::new(response(&h, 0, &reply)),
                });
            } else {
                // A dropped MAD stops counting once its deadline passes; the
                // engine re-sends it, so count it as answered here.
                self.outstanding -= 1;
            }
            Ok(())
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            match self.queue.pop_front() {
                Some(r) => {
                    self.outstanding -= 1;
                    Ok(Some(r))
                }
                None => {
                    self.time.advance(timeout);
                    Ok(None)
                }
            }
        }
    }

    fn req(lid: u16) -> MadRequest {
        MadRequest {
            to: MadAddr::gsi(lid),
            method: crate::pm::mad::method::GET,
            attr_id: 0x12,
            attr_mod: 0,
            data: [0; 192],
        }
    }

    #[test]
    fn window_retries_and_no_head_of_line_blocking() {
        let fake = Fake::answering((1..=40).collect());
        let time = fake.time.clone();
        let mut engine = engine_on(&time, Box::new(fake), 8, 300, 2);
        // Dead LIDs 100..103 first in the queue: live requests must not wait
        // behind them.
        let mut reqs: Vec<MadRequest> = (100..103).map(req).collect();
        reqs.extend((1..=40).map(req));
        let mut order = Vec::new();
        let started = time.now();
        let stats = engine.run(&reqs, |i, o| order.push((i, o, time.now() - started)));
        assert_eq!(order.len(), reqs.len());
        assert_eq!(stats.replies, 40);
        assert_eq!(stats.timeouts, 3);
        // 3 dead requests x (1 + 2 retries) + 40 live.
        assert_eq!(stats.sent, 9 + 40);
        for (i, o, _) in &order {
            if *i < 3 {
                assert_eq!(*o, MadOutcome::Timeout);
            } else {
                let MadOutcome::Reply { data, .. } = o else {
                    panic!("{o:?}")
                };
                assert_eq!(data[0] as u16, reqs[*i].to.lid);
            }
        }
        // Every live reply arrived before the first dead request timed out.
        let first_timeout = order.iter().position(|(i, _, _)| *i < 3).unwrap();
        assert_eq!(first_timeout, 40, "live replies waited behind dead ones");
        // On virtual time: the live replies at once, the dead requests
        // after three deadlines each.
        assert!(order[..40].iter().all(|(_, _, t)| t.is_zero()));
        assert!(
            order[40..]
                .iter()
                .all(|(_, _, t)| *t == Duration::from_millis(900))
        );
    }

    /// Stamps a transport route byte into bit 24..31 of every reply's TID,
    /// as the umad transport does.
    struct Stamping(Fake, u8);

    impl MadTransport for Stamping {
        fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            let mut m = *mad;
            assert_eq!(m[12], 0, "engine TIDs stay within 24 bits");
            m[12] = self.1;
            self.0.send(to, &m)
        }
        fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
            self.0.recv(timeout)
        }
    }

    #[test]
    fn tids_leave_the_route_byte_to_the_transport() {
        let fake = Fake::answering(vec![5]);
        let time = fake.time.clone();
        let mut engine = engine_on(&time, Box::new(Stamping(fake, 0xA5)), 4, 500, 0);
        // Start just below the 24-bit wrap.
        engine.win.set_next_tid(TID_MASK - 2);
        let reqs: Vec<MadRequest> = (0..6).map(|_| req(5)).collect();
        let stats = engine.run(&reqs, |_, o| assert!(matches!(o, MadOutcome::Reply { .. })));
        assert_eq!(stats.replies, 6);
        assert_eq!(stats.timeouts, 0);
        assert!(engine.win.next_tid() >= 1 && engine.win.next_tid() < 8);
    }

    #[test]
    fn window_bounds_outstanding() {
        let max = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let fake = Fake {
            max_outstanding: max.clone(),
            ..Fake::answering((1..=20).collect())
        };
        let time = fake.time.clone();
        let mut engine = engine_on(&time, Box::new(fake), 4, 500, 0);
        let reqs: Vec<MadRequest> = (1..=20).map(req).collect();
        let mut n = 0;
        let stats = engine.run(&reqs, |_, o| {
            assert!(matches!(o, MadOutcome::Reply { .. }));
            n += 1;
        });
        assert_eq!(n, 20);
        assert_eq!(stats.sent, 20);
        assert_eq!(max.load(std::sync::atomic::Ordering::Relaxed), 4);
    }

    /// Refuses every send with its fault.
    struct Refusing(Fault);

    impl MadTransport for Refusing {
        fn send(&mut self, _to: &MadAddr, _mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            Err(self.0.clone())
        }
        fn recv(&mut self, _timeout: Duration) -> Result<Option<Received>, Fault> {
            Ok(None)
        }
    }

    #[test]
    fn a_transport_that_refuses_every_send_has_failed_unless_the_mads_were_bad() {
        for (fault, dead) in [
            (Fault::Down(Down::AwaitingReopen), true),
            (Fault::Io(IoFault::Os(libc::EPIPE)), true),
            (Fault::NoAgent { class: 0x81 }, false),
            (Fault::Io(IoFault::Os(libc::EINVAL)), false),
        ] {
            let mut engine =
                Engine::new(Box::new(Refusing(fault.clone())), EngineConfig::default());
            let mut failed = Vec::new();
            let stats = engine.run(&[req(1), req(2)], |_, o| failed.push(o));
            let each = |lid| {
                MadOutcome::Failed(TransportError::Send {
                    lid,
                    fault: fault.clone(),
                })
            };
            assert_eq!(failed, [each(1), each(2)]);
            assert_eq!((stats.sent, stats.errors), (0, 2));
            assert_eq!(engine.transport_failed(), dead, "{fault:?}");
            // The run's failure is the first refusal, as it was sent.
            assert_eq!(
                engine.failure(),
                dead.then(|| TransportError::Send {
                    lid: 1,
                    fault: fault.clone()
                })
                .as_ref()
            );
        }
    }

    /// Answers nothing; its receive fails once `sends` MADs went out.
    struct FailsAfter(usize);

    impl MadTransport for FailsAfter {
        fn send(&mut self, _to: &MadAddr, _mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
            self.0 = self.0.saturating_sub(1);
            Ok(())
        }
        fn recv(&mut self, _timeout: Duration) -> Result<Option<Received>, Fault> {
            if self.0 == 0 {
                Err(Fault::Down(Down::Read(IoFault::Os(libc::ENODEV))))
            } else {
                Ok(None)
            }
        }
    }

    #[test]
    fn a_failed_receive_ends_every_request_with_it() {
        let mut engine = Engine::new(
            Box::new(FailsAfter(2)),
            EngineConfig {
                window: 2,
                ..EngineConfig::default()
            },
        );
        let reqs: Vec<MadRequest> = (1..=5).map(req).collect();
        let mut ended = Vec::new();
        engine.run(&reqs, |i, o| ended.push((i, o)));
        let down = TransportError::Recv(Fault::Down(Down::Read(IoFault::Os(libc::ENODEV))));
        assert_eq!(ended.len(), 5);
        assert!(
            ended
                .iter()
                .all(|(_, o)| *o == MadOutcome::Failed(down.clone()))
        );
        assert_eq!(engine.failure(), Some(&down));
        assert!(
            down.to_string().starts_with("receive: umad read: "),
            "{down}"
        );
    }
}
