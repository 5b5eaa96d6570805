//! A port's last peer as an evaluator keeps it (the port health and the
//! notification evaluators, each in the state it keeps of every port): the
//! index of the peer's node in the evaluator's own nodes (ordered by GUID)
//! and the peer's port number, in 5 bytes of the port's state
//! ([`PeerRef`]), not the peer's GUID; the peer of a node the evaluator does not lay out (gone
//! from the fabric, or not seen yet) in a map aside, [`FarPeers`]. An
//! evaluator that adds or lets go of nodes takes the indexes along
//! ([`renumber`]).

use std::collections::BTreeMap;

use super::Guid;

/// The node index of a peer kept in [`FarPeers`].
pub const FAR: u32 = u32::MAX;

/// The last peers whose node the evaluator does not lay out, by the port's
/// own (node GUID, number): few, or none.
pub type FarPeers = BTreeMap<(Guid, u8), (Guid, u8)>;

/// A port's last peer, in a port's state: the peer's node index (or
/// [`FAR`]) and port number, in 5 bytes of alignment 1, so it packs among
/// the state's small fields. Port 0: no peer (a port is cabled to a peer
/// port numbered from 1, [`super::Port::remote`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PeerRef {
    node: [u8; 4],
    port: u8,
}

impl PeerRef {
    /// The peer's node index and port, when the port has had a peer.
    fn get(self) -> Option<(u32, u8)> {
        (self.port != 0).then(|| (u32::from_ne_bytes(self.node), self.port))
    }

    fn set(&mut self, node: u32, port: u8) {
        (self.node, self.port) = (node.to_ne_bytes(), port);
    }

    /// The port has had a peer.
    pub fn is_some(self) -> bool {
        self.port != 0
    }

    /// Forget the peer (its entry in [`FarPeers`], if any, is the
    /// caller's).
    pub fn clear(&mut self) {
        *self = PeerRef::default();
    }
}

/// An evaluator's node, by which its peers' indexes are found.
pub trait NodeGuid {
    fn node_guid(&self) -> Guid;
}

/// Port `own`'s last peer (`p`), its node index one of `nodes`.
pub fn last_peer<N: NodeGuid>(
    nodes: &[N],
    far: &FarPeers,
    own: (Guid, u8),
    p: PeerRef,
) -> Option<(Guid, u8)> {
    let (node, port) = p.get()?;
    match nodes.get(node as usize) {
        Some(n) if node != FAR => Some((n.node_guid(), port)),
        _ => far.get(&own).copied(),
    }
}

/// Make `peer` port `own`'s last peer (`p`): an index into `nodes` when
/// the peer's node is there, else an entry of `far`. A peer port 0 is no
/// peer and changes nothing.
pub fn keep_peer<N: NodeGuid>(
    nodes: &[N],
    far: &mut FarPeers,
    own: (Guid, u8),
    p: &mut PeerRef,
    peer: (Guid, u8),
) {
    if peer.1 == 0 {
        return;
    }
    if let Some((node, port)) = p.get() {
        if node == FAR {
            far.remove(&own);
        } else if port == peer.1
            && nodes
                .get(node as usize)
                .is_some_and(|n| n.node_guid() == peer.0)
        {
            return;
        }
    }
    let node = match nodes.binary_search_by_key(&peer.0, N::node_guid) {
        Ok(i) => i as u32,
        Err(_) => {
            far.insert(own, peer);
            FAR
        }
    };
    p.set(node, peer.1);
}

/// Take port `own`'s peer index (`p`) from the nodes `before` (their
/// GUIDs, by index) to the nodes `now`; a peer whose node is not among
/// them any more goes to `far`.
pub fn renumber(
    p: &mut PeerRef,
    own: (Guid, u8),
    before: &[Guid],
    now: &[Guid],
    far: &mut FarPeers,
) {
    let Some((node, port)) = p.get().filter(|&(n, _)| n != FAR) else {
        return;
    };
    let Some(&guid) = before.get(node as usize) else {
        return;
    };
    match now.binary_search(&guid) {
        Ok(j) => p.set(j as u32, port),
        Err(_) => {
            p.set(FAR, port);
            far.insert(own, (guid, port));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Node(Guid);

    impl NodeGuid for Node {
        fn node_guid(&self) -> Guid {
            self.0
        }
    }

    /// A peer among the nodes is an index, one outside them an entry
    /// aside; moving between the two keeps no stale entry, and the
    /// indexes follow nodes added and let go; a peer port 0 is none.
    #[test]
    fn a_peer_is_an_index_or_an_entry_aside_and_follows_the_nodes() {
        let nodes = [Node(Guid(0x10)), Node(Guid(0x20))];
        let own = (Guid(0x10), 1);
        let (mut far, mut m) = (FarPeers::new(), PeerRef::default());
        assert_eq!(last_peer(&nodes, &far, own, m), None);
        keep_peer(&nodes, &mut far, own, &mut m, (Guid(0x20), 0));
        assert!(!m.is_some(), "port 0 is no peer");
        keep_peer(&nodes, &mut far, own, &mut m, (Guid(0x20), 3));
        assert_eq!(m.get(), Some((1, 3)));
        assert_eq!(last_peer(&nodes, &far, own, m), Some((Guid(0x20), 3)));
        keep_peer(&nodes, &mut far, own, &mut m, (Guid(0x99), 7));
        assert_eq!(m.get(), Some((FAR, 7)));
        assert_eq!(last_peer(&nodes, &far, own, m), Some((Guid(0x99), 7)));
        keep_peer(&nodes, &mut far, own, &mut m, (Guid(0x20), 4));
        assert!(far.is_empty(), "the entry aside goes with the peer");
        assert_eq!(last_peer(&nodes, &far, own, m), Some((Guid(0x20), 4)));
        // A node added before the peer's: its index moves on.
        let before = [Guid(0x10), Guid(0x20)];
        let now = [Guid(0x10), Guid(0x15), Guid(0x20)];
        renumber(&mut m, own, &before, &now, &mut far);
        assert_eq!(m.get(), Some((2, 4)));
        // The peer's node let go: the peer is kept aside.
        renumber(&mut m, own, &now, &[Guid(0x10)], &mut far);
        assert_eq!(m.get(), Some((FAR, 4)));
        assert_eq!(far.get(&own), Some(&(Guid(0x20), 4)));
        assert_eq!(last_peer(&nodes, &far, own, m), Some((Guid(0x20), 4)));
        assert_eq!(std::mem::size_of::<PeerRef>(), 5);
        assert_eq!(std::mem::align_of::<PeerRef>(), 1);
    }
}
