//! `MadTransport` over a [`SimFabric`]: `send` answers at once into a reply
//! queue, `recv` pops it (waiting up to the timeout on a condition variable).

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::SimFabric;
use crate::transport::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

type Queue = Arc<(Mutex<VecDeque<Received>>, Condvar)>;

/// A handle on a simulated fabric. Clones share the fabric and the reply
/// queue (like several threads sharing one umad fd); make independent
/// queues with [`SimFabric::transport`]. MADs to an unknown LID or an
/// unreachable node produce no completion at all: the caller's own deadline
/// handles them.
#[derive(Clone)]
pub struct SimTransport {
    fabric: SimFabric,
    queue: Queue,
}

impl SimTransport {
    pub fn new(fabric: SimFabric) -> SimTransport {
        SimTransport {
            fabric,
            queue: Arc::new((Mutex::new(VecDeque::new()), Condvar::new())),
        }
    }

    pub fn fabric(&self) -> &SimFabric {
        &self.fabric
    }
}

impl MadTransport for SimTransport {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if let Some(reply) = self.fabric.handle(to.lid, mad) {
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
        let deadline = Instant::now() + timeout;
        let mut q = lock.lock().unwrap_or_else(|e| e.into_inner());
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
