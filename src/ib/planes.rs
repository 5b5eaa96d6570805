//! Planes: the independent subnets one topology may hold.
//!
//! A plane is a connected component of a fabric's links, where a switch
//! joins the components of all its ports and a channel adapter (or a
//! router) joins none: an adapter cabled to two planes is in both, with
//! each port in its own. An adapter port with no cable is in the plane of
//! the adapter's lowest-numbered cabled port; a node with no cabled port at
//! all is in the first plane. Planes are ordered by the lowest GUID in each
//! (a switch's node GUID, an adapter port's port GUID), so a fabric of one
//! connected component and any isolated nodes is one plane.
//!
//! Each plane is its own subnet with its own prefix: a topology file gives
//! it by a comment line before a node of the plane (`# subnetprefix=0x...`,
//! [`prefix_comment`]); the default is fe80::/64.

use super::subnet::DEFAULT_PREFIX;
use super::{Fabric, Guid, Node, NodeType};

/// A topology file's `# subnetprefix=N` line: the subnet prefix of the
/// plane of the node that follows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixDecl {
    /// The line it is on (1-based).
    pub line: usize,
    /// The node after it.
    pub node: Guid,
    pub prefix: u64,
}

/// The text that starts a prefix comment, after `#` and any blanks.
pub const PREFIX_KEY: &str = "subnetprefix=";

/// A comment line that declares a subnet prefix: `Some(Ok(prefix))` for
/// `# subnetprefix=0xfe80000000000002` (hex with `0x`, or decimal),
/// `Some(Err(text))` when the value is no number, `None` for any other
/// line. ibsim, like every reader of the format, skips it as a comment.
pub fn prefix_comment(line: &str) -> Option<Result<u64, String>> {
    let rest = line.strip_prefix('#')?.trim_start();
    let value = rest.strip_prefix(PREFIX_KEY)?.trim();
    let parsed = match value
        .strip_prefix("0x")
        .or_else(|| value.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => value.parse::<u64>(),
    };
    Some(parsed.map_err(|_| value.chars().take(40).collect()))
}

/// The first declaration that gives a plane of `fabric` another prefix
/// than an earlier one: its line and what is wrong.
pub fn prefix_conflict(fabric: &Fabric, decls: &[PrefixDecl]) -> Option<(usize, String)> {
    if decls.len() < 2 {
        return None; // only several declarations can disagree
    }
    let c = *Planes::of(fabric, decls).1.first()?;
    Some((
        c.decl.line,
        format!(
            "subnet prefix {:#018x} for a plane whose prefix line {} gave",
            c.decl.prefix, c.first_line
        ),
    ))
}

/// Which plane every node and port of a fabric is in, and each plane's
/// prefix. Made for one fabric ([`Planes::of`]); node indices are that
/// fabric's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planes {
    /// Per node: its plane (a switch's ports all are in it; an adapter's
    /// are unless listed in `split`).
    node: Vec<u32>,
    /// Adapter ports in a plane other than their node's, sorted:
    /// ((node index, port number), plane).
    split: Vec<((u32, u8), u32)>,
    /// Per plane: its subnet prefix.
    prefixes: Vec<u64>,
}

/// A prefix given again for a plane, with another value: that declaration
/// and the line of the first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefixConflict {
    pub decl: PrefixDecl,
    pub first_line: usize,
}

impl Planes {
    /// The planes of `fabric` (nodes sorted by GUID), with the prefixes
    /// `decls` give (the first for a plane wins; the others that differ
    /// from it are returned beside).
    pub fn of(fabric: &Fabric, decls: &[PrefixDecl]) -> (Planes, Vec<PrefixConflict>) {
        let nodes = &fabric.nodes;
        // One element per switch, one per adapter port.
        let mut base = Vec::with_capacity(nodes.len());
        let mut total = 0usize;
        for n in nodes {
            base.push(total);
            total += elements(n);
        }
        let elem = |ni: usize, port: u8| -> Option<usize> {
            let n = &nodes[ni];
            if n.id.node_type == NodeType::Switch {
                return Some(base[ni]);
            }
            n.ports
                .iter()
                .position(|p| p.num == port)
                .map(|k| base[ni] + k)
        };
        let mut uf = UnionFind::new(total);
        let mut linked = vec![false; total];
        for (ni, n) in nodes.iter().enumerate() {
            for p in &n.ports {
                let Some((rg, rp)) = p.remote() else { continue };
                let Ok(ri) = nodes.binary_search_by_key(&rg, |x| x.id.guid) else {
                    continue;
                };
                if let (Some(a), Some(b)) = (elem(ni, p.num), elem(ri, rp)) {
                    linked[a] = true;
                    linked[b] = true;
                    uf.union(a, b);
                }
            }
        }
        // Each linked component's lowest (GUID, element): the planes'
        // order.
        let mut low: Vec<Option<(Guid, usize)>> = vec![None; total];
        for (ni, n) in nodes.iter().enumerate() {
            for k in 0..elements(n) {
                let e = base[ni] + k;
                if !linked[e] {
                    continue;
                }
                let guid = if n.id.node_type == NodeType::Switch {
                    n.id.guid
                } else {
                    n.ports[k].guid
                };
                let r = uf.find(e);
                let key = (guid, e);
                if low[r].is_none_or(|l| key < l) {
                    low[r] = Some(key);
                }
            }
        }
        let mut roots: Vec<((Guid, usize), usize)> = low
            .iter()
            .enumerate()
            .filter_map(|(r, l)| l.map(|l| (l, r)))
            .collect();
        drop(low);
        roots.sort_unstable();
        let mut plane_of_root = vec![0u32; total];
        for (i, &(_, r)) in roots.iter().enumerate() {
            plane_of_root[r] = u32::try_from(i).unwrap_or(u32::MAX);
        }
        let count = roots.len().max(1);
        drop(roots);
        let mut node_plane = Vec::with_capacity(nodes.len());
        let mut split = Vec::new();
        for (ni, n) in nodes.iter().enumerate() {
            let mut plane_at = |k: usize| {
                let e = base[ni] + k;
                linked[e].then(|| plane_of_root[uf.find(e)])
            };
            if n.id.node_type == NodeType::Switch {
                node_plane.push(plane_at(0).unwrap_or(0));
                continue;
            }
            let each: Vec<Option<u32>> = (0..n.ports.len()).map(&mut plane_at).collect();
            let own = each.iter().flatten().next().copied().unwrap_or(0);
            node_plane.push(own);
            for (p, plane) in n.ports.iter().zip(each) {
                if let Some(plane) = plane.filter(|&x| x != own) {
                    split.push(((ni as u32, p.num), plane));
                }
            }
        }
        split.sort_unstable();
        let mut planes = Planes {
            node: node_plane,
            split,
            prefixes: vec![DEFAULT_PREFIX; count],
        };
        let mut given: Vec<Option<PrefixDecl>> = vec![None; count];
        let mut conflicts = Vec::new();
        for d in decls {
            let Ok(ni) = nodes.binary_search_by_key(&d.node, |x| x.id.guid) else {
                continue;
            };
            let plane = planes.of_node(ni);
            match given[plane] {
                Some(first) if first.prefix != d.prefix => conflicts.push(PrefixConflict {
                    decl: *d,
                    first_line: first.line,
                }),
                Some(_) => {}
                None => {
                    given[plane] = Some(*d);
                    planes.prefixes[plane] = d.prefix;
                }
            }
        }
        (planes, conflicts)
    }

    /// `fabric` as one plane, whatever its links join.
    pub fn whole(fabric: &Fabric) -> Planes {
        Planes {
            node: vec![0; fabric.nodes.len()],
            split: Vec::new(),
            prefixes: vec![DEFAULT_PREFIX],
        }
    }

    /// How many planes (at least 1).
    pub fn count(&self) -> usize {
        self.prefixes.len()
    }

    /// The subnet prefix of plane `plane` (the default past the last).
    pub fn prefix(&self, plane: usize) -> u64 {
        self.prefixes.get(plane).copied().unwrap_or(DEFAULT_PREFIX)
    }

    /// The plane of node `ni` (of a multi-plane adapter: its lowest
    /// cabled port's).
    pub fn of_node(&self, ni: usize) -> usize {
        self.node.get(ni).map_or(0, |&p| p as usize)
    }

    /// The plane of port `port` of node `ni`.
    pub fn of_port(&self, ni: usize, port: u8) -> usize {
        let Ok(n) = u32::try_from(ni) else {
            return self.of_node(ni);
        };
        match self.split.binary_search_by_key(&(n, port), |&(k, _)| k) {
            Ok(i) => self.split[i].1 as usize,
            Err(_) => self.of_node(ni),
        }
    }

    /// Whether node `ni` has a port in plane `plane`.
    pub fn has_node(&self, ni: usize, plane: usize) -> bool {
        self.of_node(ni) == plane || self.split_ports(ni).any(|(_, p)| p == plane)
    }

    /// Node `ni`'s ports in a plane other than its node's: (port, plane).
    fn split_ports(&self, ni: usize) -> impl Iterator<Item = (u8, usize)> + '_ {
        let ni = u32::try_from(ni).unwrap_or(u32::MAX);
        let from = self.split.partition_point(|&((n, _), _)| n < ni);
        self.split[from..]
            .iter()
            .take_while(move |&&((n, _), _)| n == ni)
            .map(|&((_, port), plane)| (port, plane as usize))
    }

    /// Plane `plane` of `fabric` (the fabric these planes were made for,
    /// its links possibly changed since): its nodes, each with only its
    /// ports in the plane; an adapter's node LID is its first such port's.
    pub fn extract(&self, fabric: &Fabric, plane: usize) -> Fabric {
        let mut nodes = Vec::new();
        for (ni, n) in fabric.nodes.iter().enumerate() {
            if !self.has_node(ni, plane) {
                continue;
            }
            if self.split_ports(ni).next().is_none() {
                nodes.push(n.clone());
                continue;
            }
            let ports: Vec<_> = n
                .ports
                .iter()
                .filter(|p| self.of_port(ni, p.num) == plane)
                .copied()
                .collect();
            let mut id = n.id.clone();
            if id.node_type != NodeType::Switch {
                id.lid = ports.first().map_or(0, |p| p.lid);
            }
            nodes.push(Node { id, ports });
        }
        nodes.shrink_to_fit();
        Fabric { nodes }
    }
}

/// The union-find elements of a node: a switch is one, an adapter one per
/// port.
fn elements(n: &Node) -> usize {
    if n.id.node_type == NodeType::Switch {
        1
    } else {
        n.ports.len()
    }
}

/// Disjoint sets over 0..n, with path halving and union by size.
struct UnionFind {
    parent: Vec<u32>,
    size: Vec<u32>,
}

impl UnionFind {
    fn new(n: usize) -> UnionFind {
        UnionFind {
            parent: (0..n).map(|i| i as u32).collect(),
            size: vec![1; n],
        }
    }

    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] as usize != x {
            let up = self.parent[self.parent[x] as usize];
            self.parent[x] = up;
            x = up as usize;
        }
        x
    }

    fn union(&mut self, a: usize, b: usize) {
        let (mut a, mut b) = (self.find(a), self.find(b));
        if a == b {
            return;
        }
        if self.size[a] < self.size[b] {
            std::mem::swap(&mut a, &mut b);
        }
        self.parent[b] = a as u32;
        self.size[a] += self.size[b];
    }
}
