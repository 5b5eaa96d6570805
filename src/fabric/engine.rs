//! Many PM MADs in flight: a window of outstanding requests, a deadline and
//! retries per MAD, and no head-of-line blocking behind a node that does not
//! answer. Replies are matched on the low 24 bits of the transaction ID:
//! bits 24..31 belong to the transport (the umad transport routes replies
//! to one of several handles by them), the high 32 bits to the kernel.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use crate::pm::mad::{self, method::GET_RESP as METHOD_GET_RESP};
use crate::transport::{MAD_SIZE, MadAddr, MadTransport};

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
    Failed(String),
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

/// The TID bits the engine allocates and matches (the low 24).
pub const TID_MASK: u32 = 0x00FF_FFFF;

/// Largest window the engine accepts (1024 in flight deadlocked umad2sim).
pub const MAX_WINDOW: usize = 256;

struct InFlight {
    index: usize,
    attempts: u32,
    deadline: Instant,
}

/// Counts of one batch.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    pub sent: u64,
    pub replies: u64,
    pub timeouts: u64,
    pub errors: u64,
}

pub struct Engine {
    transport: Box<dyn MadTransport>,
    cfg: EngineConfig,
    /// High 32 bits of every TID (a umad transport may rewrite them).
    tid_high: u64,
    next_tid: u32,
}

impl Engine {
    pub fn new(transport: Box<dyn MadTransport>, mut cfg: EngineConfig) -> Self {
        cfg.window = cfg.window.clamp(1, MAX_WINDOW);
        let seed = std::process::id() as u64;
        Engine {
            transport,
            cfg,
            tid_high: (seed & 0xFFFF) << 32,
            next_tid: 1,
        }
    }

    pub fn config(&self) -> EngineConfig {
        self.cfg
    }

    fn tid(&mut self) -> u32 {
        let t = self.next_tid;
        self.next_tid = (self.next_tid.wrapping_add(1) & TID_MASK).max(1);
        t
    }

    /// Run every request to completion; `on_done(index, outcome)` is called
    /// once per request, in completion order.
    pub fn run<R: Request>(
        &mut self,
        reqs: &[R],
        mut on_done: impl FnMut(usize, MadOutcome),
    ) -> BatchStats {
        let mut stats = BatchStats::default();
        let mut pending: VecDeque<(usize, u32)> = (0..reqs.len()).map(|i| (i, 0)).collect();
        let mut inflight: HashMap<u32, InFlight> = HashMap::new();
        // Deadlines in send order: with one timeout for all, they are sorted.
        let mut deadlines: VecDeque<(Instant, u32)> = VecDeque::new();

        while !pending.is_empty() || !inflight.is_empty() {
            while inflight.len() < self.cfg.window {
                let Some((index, attempts)) = pending.pop_front() else {
                    break;
                };
                let r = &reqs[index];
                let to = r.to();
                let tid = self.tid();
                let mad = r.mad(self.tid_high | tid as u64);
                match self.transport.send(&to, &mad) {
                    Ok(()) => {
                        stats.sent += 1;
                        let deadline = Instant::now() + self.cfg.timeout;
                        inflight.insert(
                            tid,
                            InFlight {
                                index,
                                attempts: attempts + 1,
                                deadline,
                            },
                        );
                        deadlines.push_back((deadline, tid));
                    }
                    Err(e) => {
                        stats.errors += 1;
                        on_done(
                            index,
                            MadOutcome::Failed(format!("send to LID {}: {e}", to.lid)),
                        );
                    }
                }
            }
            if inflight.is_empty() {
                continue;
            }

            let now = Instant::now();
            let wait = deadlines
                .front()
                .map(|(d, _)| d.saturating_duration_since(now))
                .unwrap_or(self.cfg.timeout);
            match self.transport.recv(wait) {
                Ok(Some(rx)) => {
                    let tid = u32::from_be_bytes([rx.mad[12], rx.mad[13], rx.mad[14], rx.mad[15]])
                        & TID_MASK;
                    if let Some(f) = inflight.remove(&tid) {
                        if rx.status != 0 {
                            // The transport gave up on this send (e.g. umad
                            // status 110): same as a deadline expiry.
                            self.expire(f, &mut pending, &mut stats, &mut on_done);
                        } else {
                            stats.replies += 1;
                            on_done(f.index, outcome_of(&rx.mad));
                        }
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    // A broken transport fails everything still outstanding.
                    let msg = format!("receive: {e}");
                    for (_, f) in inflight.drain() {
                        stats.errors += 1;
                        on_done(f.index, MadOutcome::Failed(msg.clone()));
                    }
                    for (index, _) in pending.drain(..) {
                        stats.errors += 1;
                        on_done(index, MadOutcome::Failed(msg.clone()));
                    }
                    deadlines.clear();
                    break;
                }
            }

            let now = Instant::now();
            while let Some(&(d, tid)) = deadlines.front() {
                if d > now {
                    break;
                }
                deadlines.pop_front();
                if inflight.get(&tid).is_some_and(|f| f.deadline == d)
                    && let Some(f) = inflight.remove(&tid)
                {
                    self.expire(f, &mut pending, &mut stats, &mut on_done);
                }
            }
        }
        stats
    }

    fn expire(
        &self,
        f: InFlight,
        pending: &mut VecDeque<(usize, u32)>,
        stats: &mut BatchStats,
        on_done: &mut impl FnMut(usize, MadOutcome),
    ) {
        if f.attempts <= self.cfg.retries {
            // Retries go to the front so one request's retries do not wait
            // behind the whole queue.
            pending.push_front((f.index, f.attempts));
        } else {
            stats.timeouts += 1;
            on_done(f.index, MadOutcome::Timeout);
        }
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
        Ok((h, _)) => MadOutcome::Failed(format!("unexpected method 0x{:02x} in reply", h.method)),
        Err(e) => MadOutcome::Failed(format!("bad reply: {e:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pm::mad::{MadHeader, parse, response};
    use crate::transport::Received;
    use std::collections::VecDeque;
    use std::io;

    /// Answers every MAD to a LID in `live` at once; drops the rest. Counts
    /// the most MADs outstanding at once.
    struct Fake {
        live: Vec<u16>,
        queue: VecDeque<Received>,
        outstanding: usize,
        max_outstanding: std::sync::Arc<std::sync::atomic::AtomicUsize>,
        sends: Vec<u16>,
    }

    impl MadTransport for Fake {
        fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> io::Result<()> {
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
        fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>> {
            match self.queue.pop_front() {
                Some(r) => {
                    self.outstanding -= 1;
                    Ok(Some(r))
                }
                None => {
                    std::thread::sleep(timeout.min(Duration::from_millis(5)));
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
        let fake = Fake {
            live: (1..=40).collect(),
            queue: VecDeque::new(),
            outstanding: 0,
            max_outstanding: Default::default(),
            sends: Vec::new(),
        };
        let mut engine = Engine::new(
            Box::new(fake),
            EngineConfig {
                window: 8,
                timeout: Duration::from_millis(300),
                retries: 2,
            },
        );
        // Dead LIDs 100..103 first in the queue: live requests must not wait
        // behind them.
        let mut reqs: Vec<MadRequest> = (100..103).map(req).collect();
        reqs.extend((1..=40).map(req));
        let mut order = Vec::new();
        let started = Instant::now();
        let stats = engine.run(&reqs, |i, o| order.push((i, o, started.elapsed())));
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
    }

    /// Stamps a transport route byte into bit 24..31 of every reply's TID,
    /// as the umad transport does.
    struct Stamping(Fake, u8);

    impl MadTransport for Stamping {
        fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> io::Result<()> {
            let mut m = *mad;
            assert_eq!(m[12], 0, "engine TIDs stay within 24 bits");
            m[12] = self.1;
            self.0.send(to, &m)
        }
        fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>> {
            self.0.recv(timeout)
        }
    }

    #[test]
    fn tids_leave_the_route_byte_to_the_transport() {
        let fake = Fake {
            live: vec![5],
            queue: VecDeque::new(),
            outstanding: 0,
            max_outstanding: Default::default(),
            sends: Vec::new(),
        };
        let mut engine = Engine::new(
            Box::new(Stamping(fake, 0xA5)),
            EngineConfig {
                window: 4,
                timeout: Duration::from_millis(500),
                retries: 0,
            },
        );
        // Start just below the 24-bit wrap.
        engine.next_tid = TID_MASK - 2;
        let reqs: Vec<MadRequest> = (0..6).map(|_| req(5)).collect();
        let stats = engine.run(&reqs, |_, o| assert!(matches!(o, MadOutcome::Reply { .. })));
        assert_eq!(stats.replies, 6);
        assert_eq!(stats.timeouts, 0);
        assert!(engine.next_tid >= 1 && engine.next_tid < 8);
    }

    #[test]
    fn window_bounds_outstanding() {
        let max = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let fake = Fake {
            live: (1..=20).collect(),
            queue: VecDeque::new(),
            outstanding: 0,
            max_outstanding: max.clone(),
            sends: Vec::new(),
        };
        let mut engine = Engine::new(
            Box::new(fake),
            EngineConfig {
                window: 4,
                timeout: Duration::from_millis(500),
                retries: 0,
            },
        );
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
}
