//! The last peer of each port, as the evaluator keeps it: its node's index
//! in the evaluator's nodes and its port number ([`super::PortMem`]), or,
//! for a peer whose node the evaluator does not keep, an entry aside.

use super::{HAS_PEER, NodeMem, PortMem};
use crate::ib::Guid;

/// [`super::PortMem::peer_node`] of a peer whose node the evaluator does not
/// keep (never answered, or forgotten): the peer is in [`super::Evaluator::far`].
pub(super) const FAR: u32 = u32::MAX;

/// The last peers of the ports whose peer's node is not kept, by the
/// port's (node GUID, number).
pub(super) type FarPeers = std::collections::HashMap<(Guid, u8), (Guid, u8)>;

/// Port `own`'s last peer (`m` its state), its index of `nodes`'.
pub(super) fn last_peer(
    nodes: &[NodeMem],
    far: &FarPeers,
    own: (Guid, u8),
    m: &PortMem,
) -> Option<(Guid, u8)> {
    if m.flags & HAS_PEER == 0 {
        return None;
    }
    match nodes.get(m.peer_node as usize) {
        Some(n) if m.peer_node != FAR => Some((n.guid, m.peer_port)),
        _ => far.get(&own).copied(),
    }
}

/// Make `peer` port `own`'s last peer (`m` its state; None keeps the last
/// one): an index into `nodes` when its node is there, else in `far`.
pub(super) fn keep_peer(
    nodes: &[NodeMem],
    far: &mut FarPeers,
    own: (Guid, u8),
    m: &mut PortMem,
    peer: Option<(Guid, u8)>,
) {
    let Some((guid, port)) = peer else { return };
    let had_far = m.flags & HAS_PEER != 0 && m.peer_node == FAR;
    if !had_far
        && m.flags & HAS_PEER != 0
        && m.peer_port == port
        && nodes
            .get(m.peer_node as usize)
            .is_some_and(|n| n.guid == guid)
    {
        return;
    }
    if had_far {
        far.remove(&own);
    }
    m.flags |= HAS_PEER;
    m.peer_port = port;
    match nodes.binary_search_by_key(&guid, |n| n.guid) {
        Ok(i) => m.peer_node = i as u32,
        Err(_) => {
            m.peer_node = FAR;
            far.insert(own, (guid, port));
        }
    }
}

/// The peers' node indexes of `before`'s (the nodes' GUIDs before
/// nodes were added or let go) taken to the nodes' now, each peer whose
/// node is no longer kept put aside.
pub(super) fn renumber(nodes: &mut [NodeMem], far: &mut FarPeers, before: &[Guid]) {
    let now: Vec<Guid> = nodes.iter().map(|n| n.guid).collect();
    for n in nodes.iter_mut() {
        for m in n.ports.iter_mut() {
            if m.flags & HAS_PEER == 0 || m.peer_node == FAR {
                continue;
            }
            let Some(&guid) = before.get(m.peer_node as usize) else {
                continue;
            };
            match now.binary_search(&guid) {
                Ok(j) => m.peer_node = j as u32,
                Err(_) => {
                    m.peer_node = FAR;
                    far.insert((n.guid, m.num), (guid, m.peer_port));
                }
            }
        }
    }
}
