//! The fabric as designed: a cabling plan, and the verdicts of comparing
//! the fabric as found against it, in the form every face reads them (the
//! MIB, the notifications, the metrics, the status page, the JSON API and
//! `ibpm-agentx topology check`). The parsers (`crate::cabling`) make a
//! [`Plan`]; the comparison (`crate::cabling`) makes [`PlanVerdicts`],
//! published beside the snapshot it was made from. No face compares on its
//! own.

use std::sync::Arc;

use super::{Guid, LinkSpeed, LinkWidth, NodeType};

/// How a plan names a node: by GUID (ibnetdiscover's form, the baseline
/// kept in the state file) or by name (a cabling table, matched through
/// the node-name-map, then NodeDescription).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeRef {
    Guid(Guid),
    Name(Arc<str>),
}

/// A node the plan has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedNode {
    pub node: NodeRef,
    /// When the plan says.
    pub node_type: Option<NodeType>,
    /// The name the plan gives it (ibnetdiscover's quoted description),
    /// for the faces when the node is absent.
    pub name: Option<Arc<str>>,
    /// The plan file's line, 1-based (0: not from a file).
    pub line: u32,
}

/// One end of a planned link.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PlanEnd {
    pub node: NodeRef,
    /// The physical port number.
    pub port: u8,
}

/// A cable the plan has, with the width and speed it should run at when
/// the plan says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedLink {
    pub a: PlanEnd,
    pub z: PlanEnd,
    pub width: Option<LinkWidth>,
    pub speed: Option<LinkSpeed>,
    /// The plan file's line, 1-based (0: not from a file).
    pub line: u32,
}

/// Where a plan came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanSource {
    /// `[topology] plan`, in ibnetdiscover's format.
    Ibnetdiscover,
    /// `[topology] plan`, a cabling table (CSV).
    Cabling,
    /// No plan file: the fabric as first found, kept in the state file.
    Baseline,
}

impl PlanSource {
    /// The JSON's and the metrics' name.
    pub fn name(self) -> &'static str {
        match self {
            PlanSource::Ibnetdiscover => "ibnetdiscover",
            PlanSource::Cabling => "cabling",
            PlanSource::Baseline => "baseline",
        }
    }
}

/// A cabling plan: every node and every link, each link once.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    pub source: PlanSource,
    pub nodes: Vec<PlannedNode>,
    pub links: Vec<PlannedLink>,
}

/// What is not as planned.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mismatch {
    /// A planned link that is not up: an end is absent or the port down.
    Missing,
    /// Up, but to another node or port than planned.
    Miswired,
    /// Up, at a width or speed other than planned.
    WrongRate,
    /// A link found that the plan does not have.
    UnplannedLink,
    /// A planned node never found.
    AbsentNode,
    /// A node found that the plan does not have.
    UnplannedNode,
}

/// What the faces say of each [`Mismatch`]: declared once, walked by the
/// MIB's enumeration, the metrics' `kind` label, the JSON and the page.
pub struct MismatchDef {
    pub kind: Mismatch,
    /// The `kind` label and the JSON's name.
    pub name: &'static str,
    /// For people (the page, the CLI).
    pub title: &'static str,
    /// pmPlanDiffKind's value.
    pub mib: u32,
}

/// Every [`Mismatch`], in MIB order.
pub const MISMATCHES: [MismatchDef; 6] = [
    MismatchDef {
        kind: Mismatch::Missing,
        name: "missing",
        title: "missing",
        mib: 1,
    },
    MismatchDef {
        kind: Mismatch::Miswired,
        name: "miswired",
        title: "miswired",
        mib: 2,
    },
    MismatchDef {
        kind: Mismatch::WrongRate,
        name: "wrong_rate",
        title: "wrong rate",
        mib: 3,
    },
    MismatchDef {
        kind: Mismatch::UnplannedLink,
        name: "unplanned_link",
        title: "unplanned link",
        mib: 4,
    },
    MismatchDef {
        kind: Mismatch::AbsentNode,
        name: "absent_node",
        title: "absent node",
        mib: 5,
    },
    MismatchDef {
        kind: Mismatch::UnplannedNode,
        name: "unplanned_node",
        title: "unplanned node",
        mib: 6,
    },
];

impl Mismatch {
    pub const ALL: [Mismatch; 6] = [
        Mismatch::Missing,
        Mismatch::Miswired,
        Mismatch::WrongRate,
        Mismatch::UnplannedLink,
        Mismatch::AbsentNode,
        Mismatch::UnplannedNode,
    ];

    pub fn def(self) -> &'static MismatchDef {
        &MISMATCHES[self as usize]
    }

    /// A verdict of a node (port 0), not of a link.
    pub fn of_node(self) -> bool {
        matches!(self, Mismatch::AbsentNode | Mismatch::UnplannedNode)
    }

    pub fn from_mib(v: u32) -> Option<Mismatch> {
        MISMATCHES.iter().find(|d| d.mib == v).map(|d| d.kind)
    }
}

/// One mismatch standing (or recovering), with the health evaluator's
/// rules: since when, last seen, how often raised; cleared only after the
/// recovery window without it. Times are wall-clock milliseconds since
/// the UNIX epoch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlanVerdict {
    pub kind: Mismatch,
    /// The found node (or, for an absent node, the planned one, by GUID
    /// when the plan gives it, else 0) and port (0 for a node verdict).
    pub guid: Guid,
    pub port: u8,
    /// The planned peer, when the plan has one.
    pub planned: Option<PlanEnd>,
    /// The peer found, when the port is up.
    pub found: Option<(Guid, u8)>,
    pub since: u64,
    pub last_seen: u64,
    pub raised: u32,
    /// False once the condition is gone, until the recovery window passes.
    pub standing: bool,
    /// Tells apart the verdicts of nodes the fabric never showed that a
    /// plan names only by name (GUID 0): the plan's line; 0 otherwise.
    pub seq: u32,
    /// The node's name as the faces show it ([`crate::fabric`]'s
    /// `NodeRecord::name`, or the plan's name for an absent node).
    pub name: Option<Arc<str>>,
    /// The planned peer's name (the found node's when the peer is found,
    /// else the plan's).
    pub planned_name: Option<Arc<str>>,
    /// The found peer's name.
    pub found_name: Option<Arc<str>>,
    /// The width and speed planned (wrong rate), when the plan says.
    pub planned_rate: (Option<LinkWidth>, Option<LinkSpeed>),
    /// The width and speed found, when the port is up.
    pub found_rate: (Option<LinkWidth>, Option<LinkSpeed>),
}

impl PlanVerdict {
    /// A verdict of `kind` on `guid`'s `port`, standing since `now`, not
    /// yet raised, with nothing known of the peers, names or rates.
    pub fn new(kind: Mismatch, guid: Guid, port: u8, now: u64) -> PlanVerdict {
        PlanVerdict {
            kind,
            guid,
            port,
            planned: None,
            found: None,
            since: now,
            last_seen: now,
            raised: 0,
            standing: true,
            seq: 0,
            name: None,
            planned_name: None,
            found_name: None,
            planned_rate: (None, None),
            found_rate: (None, None),
        }
    }

    /// The miswired cable the faces' tests show: leaf07 (0x10) port 13
    /// should go to node0413 (0x20) port 1; it goes to node0414 (0x30)
    /// port 1. Raised once, at time 0.
    #[cfg(test)]
    pub fn example_miswired() -> PlanVerdict {
        PlanVerdict {
            planned: Some(PlanEnd {
                node: NodeRef::Guid(Guid(0x20)),
                port: 1,
            }),
            found: Some((Guid(0x30), 1)),
            raised: 1,
            name: Some("leaf07".into()),
            planned_name: Some("node0413".into()),
            found_name: Some("node0414".into()),
            ..PlanVerdict::new(Mismatch::Miswired, Guid(0x10), 13, 0)
        }
    }

    /// The key the verdicts are sorted and indexed by (the MIB's index).
    pub fn key(&self) -> (Guid, u8, Mismatch, u32) {
        (self.guid, self.port, self.kind, self.seq)
    }
}

/// `leaf07` (a name), else the GUID.
fn label(name: Option<&str>, guid: Option<Guid>) -> String {
    match (name, guid) {
        (Some(n), _) if !n.is_empty() => n.to_string(),
        (_, Some(g)) => g.to_string(),
        _ => "?".to_string(),
    }
}

/// `4x QDR`, `4x`, `QDR`: a rate as far as it is known.
pub fn rate_text(rate: (Option<LinkWidth>, Option<LinkSpeed>)) -> String {
    match rate {
        (Some(w), Some(s)) => format!("{} {}", w.name(), s.name()),
        (Some(w), None) => w.name().to_string(),
        (None, Some(s)) => s.name().to_string(),
        (None, None) => "an unknown rate".to_string(),
    }
}

impl PlanVerdict {
    /// The node, by its name (else its GUID).
    pub fn node_label(&self) -> String {
        label(
            self.name.as_deref(),
            (self.guid != Guid(0)).then_some(self.guid),
        )
    }

    /// The planned peer as `name/port`.
    pub fn planned_label(&self) -> Option<String> {
        let e = self.planned.as_ref()?;
        let guid = match &e.node {
            NodeRef::Guid(g) => Some(*g),
            NodeRef::Name(_) => None,
        };
        let name = self.planned_name.as_deref().or(match &e.node {
            NodeRef::Name(n) => Some(&**n),
            NodeRef::Guid(_) => None,
        });
        Some(format!("{}/{}", label(name, guid), e.port))
    }

    /// The found peer as `name/port`.
    pub fn found_label(&self) -> Option<String> {
        let (g, p) = self.found?;
        Some(format!(
            "{}/{p}",
            label(self.found_name.as_deref(), Some(g))
        ))
    }

    /// What is not as planned, in the words a technician at the rack
    /// reads: "leaf07/13 should go to node0413/1; it goes to node0414/1".
    /// Plain text: each face escapes it.
    pub fn sentence(&self) -> String {
        let here = format!("{}/{}", self.node_label(), self.port);
        let planned = self.planned_label().unwrap_or_else(|| "?".into());
        let found = self.found_label().unwrap_or_else(|| "?".into());
        match self.kind {
            Mismatch::Missing => format!("{here} should go to {planned}; it is not up"),
            Mismatch::Miswired => format!("{here} should go to {planned}; it goes to {found}"),
            Mismatch::WrongRate => format!(
                "{here} to {found} should run at {}; it runs at {}",
                rate_text(self.planned_rate),
                rate_text(self.found_rate)
            ),
            Mismatch::UnplannedLink => {
                format!("{here} goes to {found}; the plan has no cable there")
            }
            Mismatch::AbsentNode => format!(
                "{} is in the plan; the fabric does not show it",
                self.node_label()
            ),
            Mismatch::UnplannedNode => format!(
                "{} is in the fabric; the plan does not have it",
                self.node_label()
            ),
        }
    }
}

impl PlanVerdicts {
    /// The verdicts standing or recovering of one kind.
    pub fn count(&self, kind: Mismatch) -> usize {
        self.verdicts.iter().filter(|v| v.kind == kind).count()
    }

    /// The verdict of a key.
    pub fn get(&self, key: (Guid, u8, Mismatch, u32)) -> Option<&PlanVerdict> {
        self.verdicts
            .binary_search_by(|v| v.key().cmp(&key))
            .ok()
            .map(|i| &self.verdicts[i])
    }

    /// The ports with a standing mismatch of a link (not of a node): each
    /// end of a cable counts.
    pub fn ports_standing(&self) -> usize {
        self.verdicts
            .iter()
            .filter(|v| v.standing && !v.kind.of_node())
            .count()
    }

    /// Whether the fabric is as planned: no verdict at all.
    pub fn as_planned(&self) -> bool {
        self.verdicts.is_empty()
    }
}

/// Every mismatch of one comparison, sorted by [`PlanVerdict::key`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanVerdicts {
    /// The sweep compared (0: none yet).
    pub sweep: u64,
    /// Where the plan came from (None: no plan and no baseline yet).
    pub source: Option<PlanSource>,
    pub verdicts: Arc<[PlanVerdict]>,
    /// When the comparison was made (wall-clock ms; 0: none yet).
    pub at: u64,
    /// The plan's nodes and links (each link once).
    pub planned_nodes: u32,
    pub planned_links: u32,
}

impl Plan {
    /// The fabric as found, as a plan by GUID: every node, and every link
    /// once (from its lower end by (GUID, port)), at the width and speed it
    /// runs at. The baseline when no plan file is given, and the plan an
    /// ibnetdiscover file makes.
    pub fn from_fabric(fabric: &super::Fabric, source: PlanSource) -> Plan {
        let mut nodes = Vec::with_capacity(fabric.nodes.len());
        let mut links = Vec::new();
        for n in &fabric.nodes {
            nodes.push(PlannedNode {
                node: NodeRef::Guid(n.id.guid),
                node_type: Some(n.id.node_type),
                name: Some(n.id.description.clone()),
                line: 0,
            });
            for p in &n.ports {
                let Some((peer, peer_port)) = p.remote() else {
                    continue;
                };
                if (n.id.guid, p.num) > (peer, peer_port) {
                    continue;
                }
                links.push(PlannedLink {
                    a: PlanEnd {
                        node: NodeRef::Guid(n.id.guid),
                        port: p.num,
                    },
                    z: PlanEnd {
                        node: NodeRef::Guid(peer),
                        port: peer_port,
                    },
                    width: p.width,
                    speed: p.speed,
                    line: 0,
                });
            }
        }
        Plan {
            source,
            nodes,
            links,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;

    #[test]
    fn a_fabric_as_found_lists_each_link_once() {
        let fabric = topology::default_fabric();
        let plan = Plan::from_fabric(&fabric, PlanSource::Baseline);
        assert_eq!(plan.nodes.len(), fabric.nodes.len());
        let cabled: usize = fabric
            .nodes
            .iter()
            .flat_map(|n| &n.ports)
            .filter(|p| p.remote().is_some())
            .count();
        assert_eq!(plan.links.len() * 2, cabled);
        assert!(plan.links.iter().all(|l| l.a < l.z));
    }
}
