//! One subnet's MAD transport over several local ports: it sends and
//! receives through the one its [`PortChoice`] names, which the subnet's
//! probe moves to a standby port when the sweeping one goes down.
//! Requests in flight on the port left behind time out and are sent again
//! through the new one by the engine's retries.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use super::{Fault, MAD_SIZE, MadAddr, MadTransport, Received};

/// Which of a [`FailoverTransport`]'s ports is used: shared by the transports of
/// one subnet (the sweeper's, the write path's, the poller's) and the
/// probe that moves it.
#[derive(Clone, Debug, Default)]
pub struct PortChoice(Arc<AtomicUsize>);

impl PortChoice {
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    pub fn set(&self, port: usize) {
        self.0.store(port, Ordering::Relaxed);
    }
}

/// A transport through one of `ports`, the one `choice` names.
pub struct FailoverTransport {
    ports: Vec<Box<dyn MadTransport>>,
    choice: PortChoice,
}

impl FailoverTransport {
    /// `ports` in the order `choice` counts them (at least one).
    pub fn new(ports: Vec<Box<dyn MadTransport>>, choice: PortChoice) -> FailoverTransport {
        FailoverTransport { ports, choice }
    }

    fn port(&mut self) -> Result<&mut Box<dyn MadTransport>, Fault> {
        let i = self.choice.get();
        let n = self.ports.len();
        self.ports
            .get_mut(i.min(n.saturating_sub(1)))
            .ok_or(Fault::NoMadTransport)
    }
}

impl MadTransport for FailoverTransport {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        self.port()?.send(to, mad)
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        self.port()?.recv(timeout)
    }

    fn reopen(&mut self) -> Result<(), Fault> {
        self.port()?.reopen()
    }
}
