//! Scripted faults of the simulated fabric (`[sim] faults = true`, as
//! `scripts/demo` runs it): one link that flaps, one port that counts
//! symbol errors, one link that came up at a lower width. So a newcomer
//! sees verdicts and events within a minute, not an empty page. The
//! choice of ports is pure; [`spawn`] drives the flapping link on a
//! thread that stops with the agent.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use super::SimFabric;
use crate::ib::{Fabric, Guid, LinkWidth, NodeType};

/// How long the flapping link stays down, then up.
pub const FLAP_EVERY: Duration = Duration::from_secs(4);
/// Symbol errors a second on the erroring port.
pub const SYMBOL_ERRORS_PER_S: f64 = 5_000.0;

/// The ports the faults are on: each a channel adapter's port cabled to
/// a switch (its host is "behind" that switch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Faults {
    pub flapping: (Guid, u8),
    pub erroring: (Guid, u8),
    pub degraded: (Guid, u8),
}

impl Faults {
    /// Three distinct adapter ports cabled to switches, on three distinct
    /// adapters; None when the fabric has fewer.
    pub fn choose(fabric: &Fabric) -> Option<Faults> {
        let switch = |g: Guid| {
            fabric
                .node(g)
                .is_some_and(|n| n.id.node_type == NodeType::Switch)
        };
        let mut ports = fabric
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Ca)
            .filter_map(|n| {
                n.ports
                    .iter()
                    .find(|p| p.remote().is_some_and(|(g, _)| switch(g)))
                    .map(|p| (n.id.guid, p.num))
            });
        Some(Faults {
            flapping: ports.next()?,
            erroring: ports.next()?,
            degraded: ports.next()?,
        })
    }

    /// The faults that hold still: the errors and the degraded link.
    pub fn apply(&self, sim: &SimFabric) {
        let (g, p) = self.erroring;
        sim.set_symbol_error_rate(g, p, SYMBOL_ERRORS_PER_S);
        let (g, p) = self.degraded;
        let speed = sim
            .fabric()
            .node(g)
            .and_then(|n| n.ports.iter().find(|x| x.num == p).and_then(|x| x.speed));
        sim.set_link_rate(g, p, Some(LinkWidth::X1), speed);
    }

    /// Step `n` of the flapping link: down on odd steps, up on even.
    pub fn step(&self, sim: &SimFabric, n: u64) {
        let (g, p) = self.flapping;
        sim.set_link(g, p, n.is_multiple_of(2));
    }
}

/// Apply `faults` to `sim` and flap its link every [`FLAP_EVERY`] until
/// `stop` is set (checked every 100 ms).
pub fn spawn(
    sim: SimFabric,
    faults: Faults,
    stop: Arc<AtomicBool>,
) -> std::io::Result<JoinHandle<()>> {
    faults.apply(&sim);
    std::thread::Builder::new()
        .name("sim faults".into())
        .spawn(move || {
            let tick = Duration::from_millis(100);
            let per = (FLAP_EVERY.as_millis() / tick.as_millis()) as u64;
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(tick);
                n += 1;
                if n.is_multiple_of(per) {
                    faults.step(&sim, n / per);
                }
            }
            // The link is left up.
            faults.step(&sim, 0);
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;
    use crate::sim::SimOptions;

    #[test]
    fn faults_land_on_three_adapters_cabled_to_switches() {
        let fabric = topology::default_fabric();
        let f = Faults::choose(&fabric).expect("the default fabric has three adapters");
        let guids = [f.flapping.0, f.erroring.0, f.degraded.0];
        assert!(guids[0] != guids[1] && guids[1] != guids[2] && guids[0] != guids[2]);
        let sim = SimFabric::new(fabric, SimOptions::default());
        f.apply(&sim);
        let after = sim.fabric();
        let p = after
            .node(f.degraded.0)
            .unwrap()
            .ports
            .iter()
            .find(|p| p.num == f.degraded.1)
            .unwrap();
        assert_eq!(p.width, Some(LinkWidth::X1));
        f.step(&sim, 1);
        let down = sim.fabric();
        let p = down.node(f.flapping.0).unwrap();
        let p = p.ports.iter().find(|p| p.num == f.flapping.1).unwrap();
        assert_ne!(p.state, Some(crate::ib::PortState::Active));
        assert!(Faults::choose(&Fabric::default()).is_none());
    }
}
