//! A node's port records: its own, or, for a node seen in several subnets
//! (an adapter with a port on each plane), the records of the members'
//! nodes it is joined of, pointed into by a per-port index rather than
//! copied ([`NodeRecord::joined`]).

use std::iter::FusedIterator;
use std::sync::Arc;

use super::{NodeRecord, PortRecord};

/// Where a node's port records are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Ports {
    /// Its own, ordered by number.
    Own(Vec<PortRecord>),
    /// In the records it is joined of.
    Joined(Box<Joined>),
}

impl Default for Ports {
    fn default() -> Self {
        Ports::Own(Vec::new())
    }
}

/// The members' records of one node, and per port (ordered by number)
/// which of them holds its record and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Joined {
    pub(super) parts: Box<[Arc<NodeRecord>]>,
    index: Box<[PortAt]>,
}

/// A port of a joined record: `parts[part]`'s own port at `pos`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct PortAt {
    part: u8,
    pos: u16,
}

impl Joined {
    /// `parts`' ports by number; of a port two parts have, the record
    /// with a link (a far end: the member that reached the port through
    /// it), else the first part's. Only own ports are looked at (a part
    /// that is itself joined adds none), and at most 256 parts.
    pub(super) fn new(parts: Box<[Arc<NodeRecord>]>) -> Joined {
        let mut at: Vec<(u8, bool, PortAt)> = Vec::new();
        for (part, p) in parts.iter().enumerate().take(256) {
            for (pos, r) in p.own().iter().enumerate() {
                let pa = PortAt {
                    part: part as u8,
                    pos: pos as u16,
                };
                at.push((r.num(), r.link.remote_port == 0, pa));
            }
        }
        // Stable: between equals, the first part's.
        at.sort_by_key(|&(num, linkless, _)| (num, linkless));
        at.dedup_by_key(|&mut (num, _, _)| num);
        Joined {
            parts,
            index: at.into_iter().map(|(_, _, pa)| pa).collect(),
        }
    }

    fn get(&self, at: PortAt) -> &PortRecord {
        &self.parts[usize::from(at.part)].own()[usize::from(at.pos)]
    }
}

impl Ports {
    pub(super) fn iter(&self) -> PortIter<'_> {
        PortIter(match self {
            Ports::Own(v) => Inner::Own(v.iter()),
            Ports::Joined(j) => Inner::Joined(j, j.index.iter()),
        })
    }

    pub(super) fn get(&self, num: u8) -> Option<&PortRecord> {
        match self {
            Ports::Own(v) => v
                .binary_search_by_key(&num, |p| p.num())
                .ok()
                .map(|i| &v[i]),
            Ports::Joined(j) => j
                .index
                .binary_search_by_key(&num, |&a| j.get(a).num())
                .ok()
                .map(|i| j.get(j.index[i])),
        }
    }

    pub(super) fn len(&self) -> usize {
        match self {
            Ports::Own(v) => v.len(),
            Ports::Joined(j) => j.index.len(),
        }
    }
}

/// A node's port records in order of number ([`NodeRecord::ports`]).
#[derive(Clone, Debug)]
pub struct PortIter<'a>(Inner<'a>);

#[derive(Clone, Debug)]
enum Inner<'a> {
    Own(std::slice::Iter<'a, PortRecord>),
    Joined(&'a Joined, std::slice::Iter<'a, PortAt>),
}

impl<'a> Iterator for PortIter<'a> {
    type Item = &'a PortRecord;

    fn next(&mut self) -> Option<&'a PortRecord> {
        match &mut self.0 {
            Inner::Own(it) => it.next(),
            Inner::Joined(j, it) => it.next().map(|&a| j.get(a)),
        }
    }

    fn nth(&mut self, n: usize) -> Option<&'a PortRecord> {
        match &mut self.0 {
            Inner::Own(it) => it.nth(n),
            Inner::Joined(j, it) => it.nth(n).map(|&a| j.get(a)),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.0 {
            Inner::Own(it) => it.size_hint(),
            Inner::Joined(_, it) => it.size_hint(),
        }
    }
}

impl DoubleEndedIterator for PortIter<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        match &mut self.0 {
            Inner::Own(it) => it.next_back(),
            Inner::Joined(j, it) => it.next_back().map(|&a| j.get(a)),
        }
    }
}

impl ExactSizeIterator for PortIter<'_> {}
impl FusedIterator for PortIter<'_> {}
