//! Tests of the fabric's drivers as a whole, and the test transports the
//! fabric's tests share.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use crate::sim::SimTransport;
use crate::transport::{Down, Fault, MAD_SIZE, MadAddr, MadTransport, Received};

mod sweep_driver;
mod xmit_wait;

/// Refuses every send while `dead` is set; a reopen brings it back once
/// `reopen_works` is set. Counts reopens.
pub(crate) struct Dying {
    pub(crate) inner: SimTransport,
    pub(crate) dead: Arc<AtomicBool>,
    pub(crate) reopen_works: Arc<AtomicBool>,
    pub(crate) reopens: Arc<AtomicU64>,
}

impl MadTransport for Dying {
    fn send(&mut self, to: &MadAddr, m: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        if self.dead.load(Ordering::Relaxed) {
            return Err(Fault::Down(Down::ReaderStopped));
        }
        self.inner.send(to, m)
    }
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        self.inner.recv(timeout)
    }
    fn reopen(&mut self) -> Result<(), Fault> {
        self.reopens.fetch_add(1, Ordering::Relaxed);
        if self.reopen_works.load(Ordering::Relaxed) {
            self.dead.store(false, Ordering::Relaxed);
            Ok(())
        } else {
            Err(Fault::ReopenInProgress)
        }
    }
}
