//! The planes of a simulated fabric: each a subnet of its own, with its
//! prefix, its nodes (an adapter on several planes with only its ports on
//! each), its LIDs, a transport that reaches it alone, and a master SM that
//! tests may change or take away.

use crate::ib::planes::Planes;
use crate::ib::subnet::{LocalPort, SmInfo, SmState, SubnetKey};
use crate::ib::{Fabric, NodeType};

use super::{SimFabric, SimTransport};

/// The CA name of the simulated local ports ([`SimPlane::local_port`]).
pub const LOCAL_CA: &str = "sim0";

/// One plane of a [`SimFabric`]: a handle (clones share the fabric).
#[derive(Clone)]
pub struct SimPlane {
    sim: SimFabric,
    index: usize,
}

impl SimFabric {
    /// How many planes the fabric has (at least 1).
    pub fn plane_count(&self) -> usize {
        self.lock().planes.count()
    }

    /// Every plane, in order.
    pub fn planes(&self) -> Vec<SimPlane> {
        (0..self.plane_count())
            .map(|index| SimPlane {
                sim: self.clone(),
                index,
            })
            .collect()
    }

    /// Plane `index`, if there is one.
    pub fn plane(&self, index: usize) -> Option<SimPlane> {
        (index < self.plane_count()).then(|| SimPlane {
            sim: self.clone(),
            index,
        })
    }

    /// A MAD transport that reaches plane `plane` alone (nothing past the
    /// last), with its own reply queue.
    pub fn plane_transport(&self, plane: usize) -> SimTransport {
        SimTransport::on_plane(self.clone(), plane)
    }

    /// Plane `plane`'s master SM (None: it has none).
    pub fn master_sm(&self, plane: usize) -> Option<SmInfo> {
        self.lock().sm.get(plane).copied().flatten()
    }

    /// Make `sm` plane `plane`'s master SM, or leave it with none, as a
    /// failover or a lost SM would. False past the last plane.
    pub fn set_master_sm(&self, plane: usize, sm: Option<SmInfo>) -> bool {
        match self.lock().sm.get_mut(plane) {
            Some(slot) => {
                *slot = sm;
                true
            }
            None => false,
        }
    }
}

impl SimPlane {
    /// Its position, from 0.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Its subnet prefix.
    pub fn prefix(&self) -> u64 {
        self.sim.lock().planes.prefix(self.index)
    }

    /// Its nodes as they are now (links taken down or up), with its LIDs.
    pub fn fabric(&self) -> Fabric {
        self.sim.plane_fabric(self.index)
    }

    /// A transport that reaches this plane alone.
    pub fn transport(&self) -> SimTransport {
        self.sim.plane_transport(self.index)
    }

    /// Its master SM (None: it has none).
    pub fn master_sm(&self) -> Option<SmInfo> {
        self.sim.master_sm(self.index)
    }

    /// Its subnet key: its prefix and its master SM's GUID (zero while it
    /// has none).
    pub fn key(&self) -> SubnetKey {
        SubnetKey {
            prefix: self.prefix(),
            sm_guid: self.master_sm().map(|s| s.guid).unwrap_or_default(),
        }
    }

    /// See [`SimFabric::set_master_sm`].
    pub fn set_master_sm(&self, sm: Option<SmInfo>) {
        self.sim.set_master_sm(self.index, sm);
    }

    /// The simulated local port it is reached through: `sim0:1` for the
    /// first plane, `sim0:2` for the second...
    pub fn local_port(&self) -> LocalPort {
        LocalPort::new(LOCAL_CA, u8::try_from(self.index + 1).unwrap_or(u8::MAX))
    }

    /// The whole simulated fabric.
    pub fn sim(&self) -> &SimFabric {
        &self.sim
    }
}

/// The master SM a plane starts with: its first switch by GUID (its LID
/// and node GUID), else its first adapter port by GUID; priority 0 (the
/// opensm default), state Master.
pub(super) fn first_sm(fabric: &Fabric, planes: &Planes, plane: usize) -> Option<SmInfo> {
    let at = |lid, guid| SmInfo {
        lid,
        guid,
        priority: 0,
        state: SmState::Master,
        act_count: 0,
    };
    let in_plane = |ni: &usize| planes.has_node(*ni, plane);
    let switch = (0..fabric.nodes.len())
        .filter(in_plane)
        .map(|ni| &fabric.nodes[ni])
        .find(|n| n.id.node_type == NodeType::Switch);
    if let Some(n) = switch {
        return Some(at(n.id.lid, n.id.guid));
    }
    (0..fabric.nodes.len())
        .flat_map(|ni| fabric.nodes[ni].ports.iter().map(move |p| (ni, p)))
        .filter(|&(ni, p)| planes.of_port(ni, p.num) == plane)
        .map(|(_, p)| (p.guid, p.lid))
        .min()
        .map(|(guid, lid)| at(lid, guid))
}
