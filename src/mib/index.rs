//! The index schemes of the tables: the sub-identifiers of a row's index,
//! the row an index names, and where in the fabric a walk from an index
//! starts. The view and the SET planner reach rows only through these.

use std::sync::Arc;

use crate::fabric::record::NodeRecord;
use crate::ib::Guid;
use crate::ib::subnet::MAX_SUBNETS;
use crate::pm::optional::LANES;

/// Number of sub-identifiers of a node-GUID index (OCTET STRING (SIZE(8)),
/// no length prefix).
pub const GUID_INDEX_LEN: usize = 8;

/// How a table's rows are indexed. The view and the SET planner reach rows
/// only through it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IndexScheme {
    /// The node GUID as 8 sub-identifiers (OCTET STRING (SIZE(8)), no
    /// length prefix): one row per node.
    NodeGuid,
    /// The node GUID, then the port number: one row per port.
    NodeGuidPort,
    /// The node GUID, the port number, then the virtual lane or service
    /// level: one row per VL (SL) of a port.
    NodeGuidPortLane,
    /// Scalars: the one instance `.0`.
    Scalar,
    /// pmSubnetIndex: one sub-identifier, 1..=[`MAX_SUBNETS`]
    /// (a [`crate::ib::subnet::SubnetView`]'s index plus one): one row per
    /// subnet, none per node.
    Subnet,
    /// pmPlanDiffTable: the node GUID, the port number (0: the node), the
    /// kind's MIB value and a sequence number (0 but for nodes a plan
    /// names only by name): one row per mismatch with the plan
    /// ([`crate::ib::cabling::PlanVerdict::key`]), none per node.
    PlanDiff,
}

/// The index of one row (`port` is 0 for a node's row and for scalars,
/// `lane` 0 outside the per-VL and per-SL tables, `subnet` 0 outside
/// pmSubnetTable).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowIndex {
    pub guid: Guid,
    pub port: u8,
    pub lane: u8,
    /// The pmSubnetIndex (a subnet's index plus one).
    pub subnet: u8,
    /// pmPlanDiffTable: the kind's MIB value and the sequence number.
    pub kind: u8,
    pub seq: u32,
}

impl RowIndex {
    pub fn node(guid: Guid) -> RowIndex {
        RowIndex::port(guid, 0)
    }

    pub fn port(guid: Guid, port: u8) -> RowIndex {
        RowIndex {
            guid,
            port,
            lane: 0,
            subnet: 0,
            kind: 0,
            seq: 0,
        }
    }

    /// The row of pmPlanDiffTable for a mismatch's key.
    pub fn plan(guid: Guid, port: u8, kind: u8, seq: u32) -> RowIndex {
        RowIndex {
            kind,
            seq,
            ..RowIndex::port(guid, port)
        }
    }

    /// The row of pmSubnetTable for pmSubnetIndex `index`.
    pub fn subnet(index: u8) -> RowIndex {
        RowIndex {
            subnet: index,
            ..RowIndex::node(Guid(0))
        }
    }
}

/// The index of a row, without allocation (at most GUID, port, kind and
/// sequence number).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IndexArcs {
    arcs: [u32; GUID_INDEX_LEN + 3],
    len: usize,
}

impl std::ops::Deref for IndexArcs {
    type Target = [u32];
    fn deref(&self) -> &[u32] {
        &self.arcs[..self.len]
    }
}

impl IndexScheme {
    /// The sub-identifiers of a row's index.
    pub fn encode(self, row: RowIndex) -> IndexArcs {
        let mut arcs = [0u32; GUID_INDEX_LEN + 3];
        let len = match self {
            IndexScheme::Scalar => 1,
            IndexScheme::Subnet => {
                arcs[0] = row.subnet.into();
                1
            }
            IndexScheme::NodeGuid => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                GUID_INDEX_LEN
            }
            IndexScheme::NodeGuidPort => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                arcs[GUID_INDEX_LEN] = row.port.into();
                GUID_INDEX_LEN + 1
            }
            IndexScheme::NodeGuidPortLane => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                arcs[GUID_INDEX_LEN] = row.port.into();
                arcs[GUID_INDEX_LEN + 1] = row.lane.into();
                GUID_INDEX_LEN + 2
            }
            IndexScheme::PlanDiff => {
                arcs[..GUID_INDEX_LEN].copy_from_slice(&guid_index(row.guid));
                arcs[GUID_INDEX_LEN] = row.port.into();
                arcs[GUID_INDEX_LEN + 1] = row.kind.into();
                arcs[GUID_INDEX_LEN + 2] = row.seq;
                GUID_INDEX_LEN + 3
            }
        };
        IndexArcs { arcs, len }
    }

    /// The row an index suffix names, if it is a valid index.
    pub fn parse(self, suffix: &[u32]) -> Option<RowIndex> {
        match self {
            IndexScheme::Scalar => (suffix == [0]).then_some(RowIndex::node(Guid(0))),
            IndexScheme::Subnet => match *suffix {
                [n] if (1..=MAX_SUBNETS as u32).contains(&n) => Some(RowIndex::subnet(n as u8)),
                _ => None,
            },
            IndexScheme::NodeGuid => parse_guid_index(suffix).map(RowIndex::node),
            IndexScheme::NodeGuidPort => {
                let (&port, guid) = suffix.split_last()?;
                let guid = parse_guid_index(guid)?;
                Some(RowIndex::port(guid, u8::try_from(port).ok()?))
            }
            IndexScheme::PlanDiff => {
                let (&seq, rest) = suffix.split_last()?;
                let (&kind, rest) = rest.split_last()?;
                let (&port, guid) = rest.split_last()?;
                Some(RowIndex::plan(
                    parse_guid_index(guid)?,
                    u8::try_from(port).ok()?,
                    u8::try_from(kind).ok()?,
                    seq,
                ))
            }
            IndexScheme::NodeGuidPortLane => {
                let (&lane, rest) = suffix.split_last()?;
                let (&port, guid) = rest.split_last()?;
                let lane = u8::try_from(lane).ok().filter(|&v| v < LANES)?;
                Some(RowIndex {
                    lane,
                    ..RowIndex::port(parse_guid_index(guid)?, u8::try_from(port).ok()?)
                })
            }
        }
    }

    /// The lanes of a port's rows: 1 per port, [`LANES`] in the per-VL,
    /// per-SL and per-lane tables.
    pub fn lanes(self) -> u8 {
        match self {
            IndexScheme::NodeGuidPortLane => LANES,
            _ => 1,
        }
    }

    /// The first of `nodes` (in GUID order) whose rows may sort at or
    /// after the index `after` (every index begins with the node GUID's 8
    /// octets).
    pub fn first_node(self, nodes: &[Arc<NodeRecord>], after: &[u32]) -> usize {
        match guid_lower_bound(after) {
            Some(g) => nodes.partition_point(|n| n.id.guid < g),
            None => nodes.len(),
        }
    }

    /// The first port of `node` whose rows may sort at or after the index
    /// `after`: in the node `after` names, the port it names; elsewhere
    /// the first.
    pub fn first_port(self, node: &NodeRecord, after: &[u32]) -> usize {
        if matches!(
            self,
            IndexScheme::Scalar
                | IndexScheme::NodeGuid
                | IndexScheme::Subnet
                | IndexScheme::PlanDiff
        ) {
            return 0;
        }
        match after.split_at_checked(GUID_INDEX_LEN) {
            Some((guid, &[port, ..])) if parse_guid_index(guid) == Some(node.id.guid) => node
                .ports()
                .take_while(|p| u32::from(p.num()) < port)
                .count(),
            _ => 0,
        }
    }
}

/// The 8 sub-identifiers of a node-GUID index.
pub fn guid_index(guid: Guid) -> [u32; GUID_INDEX_LEN] {
    guid.octets().map(u32::from)
}

/// The GUID an index suffix names, if it is a valid 8-octet index.
pub fn parse_guid_index(suffix: &[u32]) -> Option<Guid> {
    if suffix.len() != GUID_INDEX_LEN || suffix.iter().any(|&s| s > 255) {
        return None;
    }
    Some(Guid(
        suffix.iter().fold(0u64, |acc, &s| (acc << 8) | s as u64),
    ))
}

/// The smallest GUID whose node-GUID index does not sort before the
/// index prefix `suffix` (its first 8 sub-identifiers), or `None` when every
/// GUID's does: the nodes before it have no row at or after `suffix`.
pub fn guid_lower_bound(suffix: &[u32]) -> Option<Guid> {
    let part = &suffix[..suffix.len().min(GUID_INDEX_LEN)];
    let mut prefix: u64 = 0;
    for (i, &s) in part.iter().enumerate() {
        if s > 255 {
            // Every GUID beginning with part[..i] sorts before: the bound is
            // the next such prefix.
            let next = prefix
                .checked_add(1)
                .filter(|&n| i > 0 && n < 1u64 << (8 * i))?;
            return Some(Guid(next << (8 * (GUID_INDEX_LEN - i))));
        }
        prefix = (prefix << 8) | u64::from(s);
    }
    let shift = 8 * (GUID_INDEX_LEN - part.len());
    Some(Guid(if shift == 64 { 0 } else { prefix << shift }))
}
