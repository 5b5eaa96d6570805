//! The local ports of subnets swept through several: before each sweep a
//! subnet's probe looks at the host's local ports and asks the master SM
//! through the port it sweeps, feeds the failover machine
//! ([`crate::fabric::local::FailoverMachine`], one for every subnet of the agent)
//! and moves the subnet's transports ([`PortChoice`]) to the port the
//! machine picked. What it saw goes into the subnet's view, where the MIB,
//! the metrics, the page and the notifications read it.

use std::sync::{Arc, Mutex};

use tracing::{info, warn};

use super::backend::SubnetProbe;
use crate::fabric::local::{Change, Emitted, FailoverMachine, Seen};
use crate::fabric::sweep::BeforeSweep;
use crate::ib::Escaped;
use crate::ib::subnet::{LocalPort, SmInfo, SubnetView, SweepState};
use crate::time::Clock;
use crate::transport::failover::PortChoice;

/// How the host's local ports look now (every port it has: one missing is
/// gone).
pub type LookPorts = Box<dyn FnMut() -> Vec<Seen> + Send>;
/// The master SM read through a local port: `Some(None)` when the read
/// found none, `None` when it could not be made (the handle busy, the
/// SMPs lost), which changes nothing of what is known.
pub type ReadSm = Box<dyn FnMut(&LocalPort) -> Option<Option<SmInfo>> + Send>;

/// One subnet's probe over its local ports.
pub struct PortsProbe {
    /// The subnet's index in the machine.
    pub index: usize,
    pub machine: Arc<Mutex<FailoverMachine>>,
    pub look: LookPorts,
    pub read_sm: ReadSm,
    /// The subnet's ports in the order its transports count them.
    pub ports: Vec<LocalPort>,
    pub choice: PortChoice,
    pub clock: Clock,
    /// Where the machine's events go for the notifier to act on.
    pub emitted: Arc<Emitted>,
}

impl SubnetProbe for PortsProbe {
    fn probe(&mut self, view: &SubnetView) -> SubnetView {
        let seen = (self.look)();
        let mut m = self.machine.lock().unwrap_or_else(|e| e.into_inner());
        let mut events = m.ports(&seen);
        let (port, moved) = m.sweep(self.index);
        events.extend(moved);
        if let Some(i) = port
            .as_ref()
            .and_then(|p| self.ports.iter().position(|x| x == p))
        {
            self.choice.set(i);
        }
        if let Some(sm) = port.as_ref().and_then(|p| (self.read_sm)(p)) {
            events.extend(m.sm(self.index, self.clock.now(), sm));
        }
        // What the view shows (the SM, the sweeping port) is said when it
        // changes ([`before_sweep`]); a port gone that was standby is not.
        // The machine decided each event: the notifier acts on it.
        for e in events {
            if let Change::PortGone { port } = &e.change {
                warn!(
                    subnet = %Escaped(&view.label()),
                    port = %port,
                    "local port {port} is gone (adapter unplugged or driver reloaded)"
                );
            }
            self.emitted.push(e);
        }
        let Some(now) = m.view(self.index) else {
            return view.clone();
        };
        // No local port up: the subnet is not swept, its own condition.
        let sweep_state = match (&now.sweeping, view.sweep_state) {
            (None, _) => SweepState::NoLocalPort,
            (Some(_), SweepState::NoLocalPort) => SweepState::Swept,
            (Some(_), s) => s,
        };
        SubnetView {
            name: now.name,
            key: now.key,
            sm: now.sm,
            sweeping: now.sweeping,
            standby: now.standby,
            sweep_state,
            ..view.clone()
        }
    }
}

/// What a subnet's sweeper runs before each sweep: `probe` read into the
/// subnet's view (the state's lock is not held while it reads).
pub fn before_sweep(mut probe: Box<dyn SubnetProbe>) -> BeforeSweep {
    Box::new(move |state| {
        let was = state.lock().subnet().clone();
        let now = probe.probe(&was);
        if now != was {
            say_subnet_change(&was, &now);
            state.lock().set_subnet(now);
        }
    })
}

/// One log line for a subnet's master SM or sweeping port that changed.
fn say_subnet_change(was: &SubnetView, now: &SubnetView) {
    let label = Escaped(&now.label()).to_string();
    if was.sm.map(|s| s.guid) != now.sm.map(|s| s.guid) {
        match &now.sm {
            Some(sm) => info!(
                subnet = %label,
                sm_guid = %sm.guid,
                sm_lid = sm.lid,
                priority = sm.priority,
                "the subnet's master SM is now {} at LID {}", sm.guid, sm.lid
            ),
            None => warn!(subnet = %label, "the subnet has no master SM"),
        }
    }
    if was.sweeping != now.sweeping {
        match &now.sweeping {
            Some(p) => {
                warn!(subnet = %label, local_port = %p, "the subnet is now swept through {p}")
            }
            None => warn!(subnet = %label, "no local port of the subnet is up"),
        }
    }
}

#[cfg(test)]
mod tests;
