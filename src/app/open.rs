//! Opening the configured backend: the simulator (a subnet per plane),
//! umad (a subnet per group of local ports, DOCA beside it when enabled),
//! or DOCA alone.

use crate::config::{Config, FabricBackend};
use crate::ib::topology;
use crate::sim::SimFabric;

use super::backend::{Backend, open_doca, sim_options};
use super::umad::open_umad;
use super::{AppError, Shutdown};

/// Open the configured backend. Triggering `cancel` (the shutdown signal)
/// stops a start-up that waits on the fabric.
pub fn open_backend(cfg: &Config, cancel: &Shutdown) -> Result<Backend, AppError> {
    match cfg.fabric.backend {
        FabricBackend::Umad if cfg.doca.enabled => {
            let mut b = open_umad(cfg, cancel)?;
            let mut doca = crate::doca::sampler::open(&cfg.doca).map_err(AppError::Doca)?;
            // The local adapter is in the discovered fabric; a node that
            // is not (a port without a link) is served by DOCA alone.
            let fabric = &mut b.subnets[0].fabric;
            for n in std::mem::take(&mut doca.nodes) {
                if fabric.node(n.id.guid).is_none() {
                    fabric.nodes.push(n);
                }
            }
            fabric.sort();
            b.doca = Some(doca);
            return Ok(b);
        }
        FabricBackend::Umad => return open_umad(cfg, cancel),
        FabricBackend::Doca => return open_doca(cfg),
        FabricBackend::Sim => {}
    }
    // A file is a subnet per switch-connected part, with or without
    // subnet prefix lines: an adapter forwards nothing, so no host could
    // sweep parts joined only through adapters as one subnet. At the
    // default prefix the parts are told apart by their master SM, as on
    // a real fabric where every plane keeps fe80::.
    let sim = match cfg.topology_path() {
        Some(p) => {
            let t = topology::load_topology(&p).map_err(AppError::Topology)?;
            SimFabric::from_topology(t, sim_options(cfg))
        }
        None => SimFabric::new(topology::default_fabric(), sim_options(cfg)),
    };
    Ok(Backend::sim(&sim))
}
