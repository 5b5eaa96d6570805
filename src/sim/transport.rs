//! `MadTransport` over a [`SimFabric`]: `send` answers at once into a reply
//! queue, `recv` pops it. With nothing to pop, `recv` waits up to its
//! timeout on a condition variable, or, on a [`VirtualClock`], moves that
//! clock on by the timeout and returns at once: a missing reply costs no
//! real time.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::{ManualClock, SimFabric};
use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

type Queue = Arc<(Mutex<VecDeque<Received>>, Condvar)>;

/// A [`ManualClock`] as instants: time that passes only when it is
/// moved, by a test or by a simulator transport that would otherwise
/// wait; the simulated traffic runs on the same time. Clones share it.
/// The drivers given [`VirtualClock::now`] as their clock step through
/// waits and deadlines without sleeping.
#[derive(Clone, Debug)]
pub struct VirtualClock {
    /// The instant of the manual clock's zero.
    start: Instant,
    elapsed: ManualClock,
}

impl VirtualClock {
    /// Instants of `elapsed`'s time, from an origin of now.
    pub fn new(elapsed: ManualClock) -> VirtualClock {
        VirtualClock {
            start: Instant::now(),
            elapsed,
        }
    }

    /// The virtual time now.
    pub fn now(&self) -> Instant {
        self.start + self.elapsed.now()
    }

    /// Move the time on by `d`.
    pub fn advance(&self, d: Duration) {
        self.elapsed.advance(d);
    }

    /// Move the time on to `at` (nothing when it is there already).
    pub fn advance_to(&self, at: Instant) {
        self.advance(at.saturating_duration_since(self.now()));
    }

    /// The clock as the drivers take one.
    pub fn clock(&self) -> crate::time::Clock {
        let c = self.clone();
        crate::time::Clock::new(move || c.now())
    }
}

/// A handle on a simulated fabric. Clones share the fabric and the reply
/// queue (like several threads sharing one umad fd); make independent
/// queues with [`SimFabric::transport`]. MADs to an unknown LID or an
/// unreachable node produce no completion at all: the caller's own deadline
/// handles them.
#[derive(Clone)]
pub struct SimTransport {
    fabric: SimFabric,
    /// The plane it reaches.
    plane: usize,
    queue: Queue,
    /// When set, an empty queue moves this clock instead of waiting.
    virtual_time: Option<VirtualClock>,
}

impl SimTransport {
    /// A transport that reaches the first plane.
    pub fn new(fabric: SimFabric) -> SimTransport {
        SimTransport::on_plane(fabric, 0)
    }

    /// A transport that reaches plane `plane` alone.
    pub fn on_plane(fabric: SimFabric, plane: usize) -> SimTransport {
        SimTransport {
            fabric,
            plane,
            queue: Arc::new((Mutex::new(VecDeque::new()), Condvar::new())),
            virtual_time: None,
        }
    }

    /// The same transport on virtual time: a `recv` with nothing to give
    /// moves `clock` on by its timeout and returns at once.
    pub fn on_virtual_time(mut self, clock: VirtualClock) -> SimTransport {
        self.virtual_time = Some(clock);
        self
    }

    pub fn fabric(&self) -> &SimFabric {
        &self.fabric
    }

    /// The virtual clock the transport moves, if it is on one.
    pub fn virtual_time(&self) -> Option<&VirtualClock> {
        self.virtual_time.as_ref()
    }
}

impl MadTransport for SimTransport {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if let Some(reply) = self.fabric.handle_in(self.plane, to.lid, mad) {
            let (lock, cv) = &*self.queue;
            let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
            q.push_back(Received {
                from: MadAddr::gsi(to.lid),
                status: 0,
                mad: Box::new(reply),
            });
            cv.notify_one();
        }
        Ok(())
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        let (lock, cv) = &*self.queue;
        let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(clock) = &self.virtual_time {
            let r = q.pop_front();
            if r.is_none() {
                clock.advance(timeout);
            }
            return Ok(r);
        }
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = q.pop_front() {
                return Ok(Some(r));
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            q = cv
                .wait_timeout(q, deadline - now)
                .map(|(g, _)| g)
                .unwrap_or_else(|e| e.into_inner().0);
        }
    }
}
