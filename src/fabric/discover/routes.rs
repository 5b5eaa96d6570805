//! Directed routes through a known topology: breadth first from the local
//! node, kept as each reached node's previous node and the port left by
//! (one array of 8-byte entries by node place), a node's path made when
//! asked. The SM probe searches them before every sweep and the port-info
//! refresh on each of its rounds: no path is allocated for a node nobody
//! asks for.

use std::collections::VecDeque;

use crate::ib::{Fabric, Guid, NodeType};

/// What the search for directed routes reads of a topology: the
/// discovered [`Fabric`], or the compact [`super::SmMap`] kept between
/// reads of a subnet's SMs. A node's place is its index in the topology.
pub(crate) trait Links {
    /// The node's place, by GUID.
    fn find(&self, guid: Guid) -> Option<usize>;
    fn is_switch(&self, i: usize) -> bool;
    /// How many nodes there are (places run from 0 to this).
    fn node_count(&self) -> usize;
    /// Each cabled port of the node: its number and the place of the node
    /// at the far end (a far end the topology does not have is left out).
    fn links(&self, i: usize) -> impl Iterator<Item = (u8, usize)>;
}

impl Links for Fabric {
    fn find(&self, guid: Guid) -> Option<usize> {
        self.nodes.binary_search_by_key(&guid, |n| n.id.guid).ok()
    }

    fn is_switch(&self, i: usize) -> bool {
        self.nodes[i].id.node_type == NodeType::Switch
    }

    fn node_count(&self) -> usize {
        self.nodes.len()
    }

    fn links(&self, i: usize) -> impl Iterator<Item = (u8, usize)> {
        self.nodes[i]
            .ports
            .iter()
            .filter_map(|p| Some((p.num, self.find(p.remote()?.0)?)))
    }
}

/// How a reached node is reached: the place of the node before it on its
/// route and the port that node is left by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Via {
    from: u32,
    port: u8,
    hops: u8,
}

/// Not reached ([`Via::from`]); the local node is reached from itself.
const UNREACHED: u32 = u32::MAX;

/// The directed routes from the local node to every node of a topology it
/// reaches, by node place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Routes {
    via: Vec<Via>,
}

impl Routes {
    /// Node `i` is reached.
    pub fn reaches(&self, i: usize) -> bool {
        self.via.get(i).is_some_and(|v| v.from != UNREACHED)
    }

    /// The ports to leave by from the local node to node `i` (empty for
    /// the local node itself), when it is reached.
    pub fn path(&self, i: usize) -> Option<Vec<u8>> {
        let v = *self.via.get(i).filter(|v| v.from != UNREACHED)?;
        let mut path = vec![0; usize::from(v.hops)];
        let mut v = v;
        for slot in path.iter_mut().rev() {
            *slot = v.port;
            v = self.via[v.from as usize];
        }
        Some(path)
    }

    /// How many nodes are reached.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.via.iter().filter(|v| v.from != UNREACHED).count()
    }
}

/// Directed routes (the ports to leave by) from the local node to every
/// node of `fabric` it reaches through its links: breadth first, through
/// switches only (and out of the local node by `local_port` when it is a
/// channel adapter), at most `max_hops` long (at most 255).
pub(crate) fn routes_from(
    fabric: &impl Links,
    local: Guid,
    local_port: u8,
    max_hops: usize,
) -> Routes {
    let unreached = Via {
        from: UNREACHED,
        port: 0,
        hops: 0,
    };
    let mut routes = Routes {
        via: vec![unreached; fabric.node_count()],
    };
    let Some(start) = fabric.find(local) else {
        return routes;
    };
    let max_hops = max_hops.min(usize::from(u8::MAX));
    routes.via[start] = Via {
        from: start as u32,
        port: 0,
        hops: 0,
    };
    let mut queue = VecDeque::from([start]);
    while let Some(n) = queue.pop_front() {
        let hops = routes.via[n].hops;
        let is_local = n == start;
        let switch = fabric.is_switch(n);
        if usize::from(hops) >= max_hops || (!switch && !is_local) {
            continue;
        }
        for (num, r) in fabric.links(n) {
            if is_local && !switch && num != local_port {
                continue;
            }
            if routes.via[r].from != UNREACHED {
                continue;
            }
            routes.via[r] = Via {
                from: n as u32,
                port: num,
                hops: hops + 1,
            };
            queue.push_back(r);
        }
    }
    routes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A node as a list: GUID, switch, [(port, far GUID)].
    type Listed = (u64, bool, Vec<(u8, u64)>);

    /// A topology as lists, by GUID.
    struct Lists(Vec<Listed>);

    impl Links for Lists {
        fn find(&self, guid: Guid) -> Option<usize> {
            self.0.binary_search_by_key(&guid.0, |n| n.0).ok()
        }
        fn is_switch(&self, i: usize) -> bool {
            self.0[i].1
        }
        fn node_count(&self) -> usize {
            self.0.len()
        }
        fn links(&self, i: usize) -> impl Iterator<Item = (u8, usize)> {
            self.0[i]
                .2
                .iter()
                .filter_map(|&(p, g)| Some((p, self.find(Guid(g))?)))
        }
    }

    /// CA 1 (ports 1 and 2) - switch 10 - switch 20 - CA 2, and CA 1's
    /// port 2 to switch 30; a link to a node the topology lacks.
    fn lists() -> Lists {
        Lists(vec![
            (1, false, vec![(1, 10), (2, 30)]),
            (2, false, vec![(1, 20)]),
            (3, false, vec![(1, 20), (2, 99)]),
            (10, true, vec![(1, 1), (5, 20), (6, 99)]),
            (20, true, vec![(2, 10), (3, 2), (4, 3)]),
            (30, true, vec![(1, 1)]),
        ])
    }

    #[test]
    fn routes_are_breadth_first_through_switches_out_of_the_local_port() {
        let l = lists();
        let r = routes_from(&l, Guid(1), 1, 64);
        let path = |g| r.path(l.find(Guid(g)).unwrap());
        assert_eq!(path(1), Some(vec![]));
        assert_eq!(path(10), Some(vec![1]));
        assert_eq!(path(20), Some(vec![1, 5]));
        assert_eq!(path(2), Some(vec![1, 5, 3]));
        assert_eq!(path(30), None, "not out of the local CA's other port");
        assert_eq!(r.len(), 5);
        // Out of port 2: switch 30 alone (a CA is no transit).
        let r = routes_from(&l, Guid(1), 2, 64);
        assert_eq!(r.len(), 2);
        assert!(r.reaches(l.find(Guid(30)).unwrap()));
        // From a switch, every port; at most two hops.
        let r = routes_from(&l, Guid(10), 0, 2);
        let path = |g| r.path(l.find(Guid(g)).unwrap());
        assert_eq!(path(30), None, "only through CA 1");
        assert_eq!(path(3), Some(vec![5, 4]));
        let r = routes_from(&l, Guid(10), 0, 1);
        assert_eq!(r.path(l.find(Guid(3)).unwrap()), None, "two hops away");
        // A local node the topology does not have reaches nothing.
        assert_eq!(routes_from(&l, Guid(7), 1, 64).len(), 0);
    }
}
