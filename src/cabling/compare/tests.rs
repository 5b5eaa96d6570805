//! The comparison on virtual time, over the simulator's topology: every
//! kind, both ends, recovery, the baseline, plans by name.

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::*;
use crate::ib::topology;

const SEC: u64 = 1000;
const T0: u64 = 1_795_944_802_000;

/// The simulator's default fabric as records; a new discovery each time a
/// test says so.
struct Fab {
    nodes: Vec<NodeRecord>,
    sweep: u64,
    discovered: Instant,
}

impl Fab {
    fn new() -> Fab {
        let f = topology::default_fabric();
        let mut nodes: Vec<NodeRecord> = f.nodes.iter().map(NodeRecord::new).collect();
        nodes.sort_by_key(|n| n.id.guid);
        Fab {
            nodes,
            sweep: 0,
            discovered: Instant::now(),
        }
    }

    fn guid(&self, name: &str) -> Guid {
        self.nodes
            .iter()
            .find(|n| n.id.description.split(' ').next() == Some(name))
            .unwrap_or_else(|| panic!("no {name}"))
            .id
            .guid
    }

    fn port(&mut self, name: &str, port: u8) -> &mut PortRecord {
        let g = self.guid(name);
        let n = self.nodes.iter_mut().find(|n| n.id.guid == g).unwrap();
        n.ports_mut().iter_mut().find(|p| p.num() == port).unwrap()
    }

    /// A snapshot; `rediscovered`: discovery changed it.
    fn snap(&mut self, rediscovered: bool) -> Snapshot {
        self.sweep += 1;
        if rediscovered {
            self.discovered += Duration::from_secs(1);
        }
        let mut s = Snapshot {
            sweep: self.sweep,
            nodes: self.nodes.iter().cloned().map(Arc::new).collect(),
            ..Default::default()
        };
        s.stats.discovered = Some(self.discovered);
        s
    }

    fn plan(&self) -> Plan {
        Plan::from_fabric(&topology::default_fabric(), PlanSource::Ibnetdiscover)
    }

    /// Cable `a` to `b` (both ends), and leave their old peers down.
    fn cable(&mut self, a: (&str, u8), b: (&str, u8)) {
        let (ga, gb) = (self.guid(a.0), self.guid(b.0));
        for (x, peer) in [(a, (gb, b.1)), (b, (ga, a.1))] {
            let p = self.port(x.0, x.1);
            p.link.set_remote(Some(peer));
            p.link.state = Some(PortState::Active);
        }
    }

    fn down(&mut self, x: (&str, u8)) {
        let p = self.port(x.0, x.1);
        p.link.set_remote(None);
        p.link.state = Some(PortState::Down);
    }
}

fn cfg() -> CompareConfig {
    CompareConfig {
        recovery: Duration::from_secs(60),
        forget_after: Duration::from_secs(600),
    }
}

fn kinds(v: &PlanVerdicts) -> Vec<(Guid, u8, Mismatch)> {
    v.verdicts
        .iter()
        .map(|v| (v.guid, v.port, v.kind))
        .collect()
}

#[test]
fn the_fabric_as_planned_has_no_verdict() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), Some(&fab.plan()));
    let o = c.evaluate(&fab.snap(true), T0).unwrap();
    assert!(o.verdicts.as_planned(), "{:?}", kinds(&o.verdicts));
    assert!(o.changes.is_empty());
    assert_eq!(o.verdicts.source, Some(PlanSource::Ibnetdiscover));
    assert_eq!(o.verdicts.planned_nodes as usize, fab.nodes.len());
    // A sweep without rediscovery compares nothing.
    assert!(c.evaluate(&fab.snap(false), T0 + 10 * SEC).is_none());
}

#[test]
fn a_swap_is_miswired_at_both_ends_naming_both_peers() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), Some(&fab.plan()));
    c.evaluate(&fab.snap(true), T0);
    // leaf1/1 went to node01/1 and leaf2/2 to node02/1: swapped.
    fab.cable(("leaf1", 1), ("node02", 1));
    fab.cable(("leaf2", 2), ("node01", 1));
    let o = c.evaluate(&fab.snap(true), T0 + 10 * SEC).unwrap();
    let leaf1 = fab.guid("leaf1");
    let v = o
        .verdicts
        .get((leaf1, 1, Mismatch::Miswired, 0))
        .expect("leaf1/1 miswired");
    assert_eq!(
        v.planned,
        Some(PlanEnd {
            node: NodeRef::Guid(fab.guid("node01")),
            port: 1
        })
    );
    assert_eq!(v.found, Some((fab.guid("node02"), 1)));
    assert_eq!(v.planned_name.as_deref(), Some("node01 HCA-1"));
    assert_eq!(v.found_name.as_deref(), Some("node02 HCA-1"));
    assert_eq!(v.name.as_deref(), Some("leaf1 IB switch"));
    let miswired: Vec<_> = kinds(&o.verdicts)
        .into_iter()
        .filter(|k| k.2 == Mismatch::Miswired)
        .collect();
    // Every end of the two cables.
    assert_eq!(miswired.len(), 4, "{miswired:?}");
    assert_eq!(o.changes.len(), 4);
    assert!(
        o.changes
            .iter()
            .all(|c| matches!(c, PlanChange::Raised(v) if v.raised == 1))
    );
}

#[test]
fn a_plan_that_differs_in_every_kind() {
    let mut fab = Fab::new();
    let mut plan = fab.plan();
    let names = Fab::new();
    let g = |n: &str| names.guid(n);
    let end = |n: &str, port| PlanEnd {
        node: NodeRef::Guid(g(n)),
        port,
    };
    let link = |plan: &Plan, a: &PlanEnd| {
        plan.links
            .iter()
            .position(|l| l.a == *a || l.z == *a)
            .unwrap()
    };
    // Wrong rate: spine1/1 planned at 8x.
    let i = link(&plan, &end("spine1", 1));
    plan.links[i].width = Some(LinkWidth::X8);
    // Miswired: leaf3/2 planned to node03/2 instead of node03/1.
    let i = link(&plan, &end("leaf3", 2));
    let l = &mut plan.links[i];
    if l.a == end("leaf3", 2) {
        l.z.port = 2
    } else {
        l.a.port = 2
    }
    // leaf4/1 was node03/2: drop it, so node03/2 is not planned twice
    // (leaf4/1 is then an unplanned link).
    let i = link(&plan, &end("leaf4", 1));
    plan.links.remove(i);
    // Unplanned node: node12 (and its cable to leaf4/4) not in the plan.
    let n12 = g("node12");
    plan.nodes.retain(|n| n.node != NodeRef::Guid(n12));
    plan.links
        .retain(|l| l.a.node != NodeRef::Guid(n12) && l.z.node != NodeRef::Guid(n12));
    // Absent node: one the fabric never shows, cabled to leaf1/5.
    plan.nodes.push(PlannedNode {
        node: NodeRef::Guid(Guid(0xdead)),
        node_type: Some(NodeType::Ca),
        name: Some("node99".into()),
        line: 7,
    });
    plan.links.push(PlannedLink {
        a: end("leaf1", 5),
        z: PlanEnd {
            node: NodeRef::Guid(Guid(0xdead)),
            port: 1,
        },
        width: None,
        speed: None,
        line: 8,
    });
    // Missing: node05/1 - leaf1/3 is down.
    fab.down(("node05", 1));
    fab.down(("leaf1", 3));
    let mut c = Comparison::new(cfg(), Some(&plan));
    let o = c.evaluate(&fab.snap(true), T0).unwrap();
    let k = kinds(&o.verdicts);
    let has = |x: (Guid, u8, Mismatch)| assert!(k.contains(&x), "{x:?} not in {k:?}");
    has((g("spine1"), 1, Mismatch::WrongRate));
    has((g("leaf1"), 13, Mismatch::WrongRate));
    has((g("leaf3"), 2, Mismatch::Miswired));
    has((g("leaf4"), 1, Mismatch::UnplannedLink));
    has((g("node03"), 1, Mismatch::UnplannedLink));
    has((g("node03"), 2, Mismatch::Miswired));
    has((n12, 0, Mismatch::UnplannedNode));
    has((n12, 1, Mismatch::UnplannedLink));
    has((g("leaf4"), 4, Mismatch::UnplannedLink));
    has((Guid(0xdead), 0, Mismatch::AbsentNode));
    has((Guid(0xdead), 1, Mismatch::Missing));
    has((g("leaf1"), 5, Mismatch::Missing));
    has((g("leaf1"), 3, Mismatch::Missing));
    has((g("node05"), 1, Mismatch::Missing));
    assert_eq!(k.len(), 14, "{k:?}");
    for m in Mismatch::ALL {
        assert!(o.verdicts.count(m) > 0, "{m:?}");
    }
    let absent = o.verdicts.get((Guid(0xdead), 0, Mismatch::AbsentNode, 0));
    assert_eq!(absent.unwrap().name.as_deref(), Some("node99"));
    let w = o
        .verdicts
        .get((g("spine1"), 1, Mismatch::WrongRate, 0))
        .unwrap();
    assert_eq!(w.planned_rate.0, Some(LinkWidth::X8));
    assert_eq!(w.found_rate.0, Some(LinkWidth::X4));
}

#[test]
fn a_verdict_clears_only_after_the_recovery_window() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), Some(&fab.plan()));
    c.evaluate(&fab.snap(true), T0);
    fab.down(("node05", 1));
    fab.down(("leaf1", 3));
    let o = c.evaluate(&fab.snap(true), T0 + 10 * SEC).unwrap();
    assert_eq!(o.verdicts.verdicts.len(), 2);
    let key = (fab.guid("leaf1"), 3, Mismatch::Missing, 0);
    // Back up: the verdict stays, no longer standing.
    fab.cable(("node05", 1), ("leaf1", 3));
    let o = c.evaluate(&fab.snap(true), T0 + 20 * SEC).unwrap();
    let v = o.verdicts.get(key).unwrap();
    assert!(!v.standing);
    assert_eq!((v.since, v.last_seen), (T0 + 10 * SEC, T0 + 10 * SEC));
    assert!(o.changes.is_empty());
    // Within the window (sweeps without rediscovery): kept.
    let o = c.evaluate(&fab.snap(false), T0 + 69 * SEC);
    assert!(o.is_none());
    // Past it: cleared, one change per end.
    let o = c.evaluate(&fab.snap(false), T0 + 70 * SEC).unwrap();
    assert!(o.verdicts.as_planned());
    assert_eq!(o.changes.len(), 2);
    assert!(
        o.changes
            .iter()
            .all(|c| matches!(c, PlanChange::Cleared(v) if !v.standing))
    );
    // Down again: raised a second time.
    fab.down(("node05", 1));
    fab.down(("leaf1", 3));
    let o = c.evaluate(&fab.snap(true), T0 + 80 * SEC).unwrap();
    let v = o.verdicts.get(key).unwrap();
    assert_eq!((v.raised, v.since, v.standing), (2, T0 + 80 * SEC, true));
}

#[test]
fn a_mismatch_back_within_the_window_is_the_same_verdict() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), Some(&fab.plan()));
    c.evaluate(&fab.snap(true), T0);
    fab.down(("leaf1", 3));
    c.evaluate(&fab.snap(true), T0 + 10 * SEC).unwrap();
    fab.cable(("node05", 1), ("leaf1", 3));
    c.evaluate(&fab.snap(true), T0 + 20 * SEC).unwrap();
    fab.down(("leaf1", 3));
    let o = c.evaluate(&fab.snap(true), T0 + 30 * SEC).unwrap();
    let v = o
        .verdicts
        .get((fab.guid("leaf1"), 3, Mismatch::Missing, 0))
        .unwrap();
    assert_eq!((v.raised, v.since, v.standing), (1, T0 + 10 * SEC, true));
    assert_eq!(v.last_seen, T0 + 30 * SEC);
    assert!(o.changes.is_empty());
}

#[test]
fn the_baseline_is_the_fabric_as_first_found_and_a_moved_cable_is_miswired() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), None);
    let o = c.evaluate(&fab.snap(true), T0).unwrap();
    assert!(o.verdicts.as_planned());
    assert_eq!(o.verdicts.source, Some(PlanSource::Baseline));
    assert!(c.take_baseline_changed());
    // A cable where there was none is taken in.
    fab.cable(("leaf1", 5), ("leaf2", 6));
    let o = c.evaluate(&fab.snap(true), T0 + 10 * SEC).unwrap();
    assert!(o.verdicts.as_planned(), "{:?}", kinds(&o.verdicts));
    assert!(c.take_baseline_changed());
    // Moved: leaf1/5 now goes to leaf2/7.
    fab.down(("leaf2", 6));
    fab.cable(("leaf1", 5), ("leaf2", 7));
    let o = c.evaluate(&fab.snap(true), T0 + 20 * SEC).unwrap();
    let v = o
        .verdicts
        .get((fab.guid("leaf1"), 5, Mismatch::Miswired, 0))
        .expect("moved");
    assert_eq!(v.found, Some((fab.guid("leaf2"), 7)));
    assert_eq!(
        v.planned,
        Some(PlanEnd {
            node: NodeRef::Guid(fab.guid("leaf2")),
            port: 6
        })
    );
    assert!(!c.take_baseline_changed());
    // The baseline as a plan keeps what it took in.
    let plan = c.plan().unwrap();
    assert_eq!(plan.nodes.len(), fab.nodes.len());
}

#[test]
fn a_plan_by_name_is_matched_through_the_names() {
    let mut fab = Fab::new();
    let byname = |g: Guid, fab: &Fab| {
        let n = fab.nodes.iter().find(|n| n.id.guid == g).unwrap();
        NodeRef::Name(Arc::clone(&n.id.description))
    };
    let mut plan = fab.plan();
    for n in &mut plan.nodes {
        if let NodeRef::Guid(g) = n.node {
            n.node = byname(g, &fab);
        }
    }
    for l in &mut plan.links {
        for e in [&mut l.a, &mut l.z] {
            if let NodeRef::Guid(g) = e.node {
                e.node = byname(g, &fab);
            }
        }
    }
    plan.source = PlanSource::Cabling;
    plan.nodes.push(PlannedNode {
        node: NodeRef::Name("node77".into()),
        node_type: None,
        name: None,
        line: 40,
    });
    let mut c = Comparison::new(cfg(), Some(&plan));
    fab.cable(("leaf1", 1), ("node02", 1));
    fab.cable(("leaf2", 2), ("node01", 1));
    let o = c.evaluate(&fab.snap(true), T0).unwrap();
    let v = o
        .verdicts
        .get((fab.guid("leaf1"), 1, Mismatch::Miswired, 0))
        .unwrap();
    assert_eq!(
        v.planned.as_ref().map(|e| &e.node),
        Some(&NodeRef::Name("node01 HCA-1".into()))
    );
    let absent: Vec<_> = o
        .verdicts
        .verdicts
        .iter()
        .filter(|v| v.kind == Mismatch::AbsentNode)
        .collect();
    assert_eq!(absent.len(), 1);
    assert_eq!(absent[0].guid, Guid(0));
    assert_eq!(absent[0].name.as_deref(), Some("node77"));
    assert_ne!(absent[0].seq, 0);
}

#[test]
fn a_plan_port_costs_its_bytes() {
    let fab = Fab::new();
    let plan = fab.plan();
    let c = Comparison::new(cfg(), Some(&plan));
    assert_eq!(c.planned_ports(), plan.links.len() * 2);
    let names: usize = plan
        .nodes
        .iter()
        .map(|n| n.name.as_ref().map_or(0, |s| s.len()))
        .sum();
    assert!(
        c.plan_bytes() <= c.planned_ports() * PORT_BYTES + plan.nodes.len() * NODE_BYTES + names
    );
    // The plan comes back from its compiled form.
    let back = c.plan().unwrap();
    assert_eq!(back.links.len(), plan.links.len());
    assert_eq!(back.nodes.len(), plan.nodes.len());
    assert_eq!(back.nodes[3].name, plan.nodes[3].name);
    assert_eq!(back.nodes[3].node_type, plan.nodes[3].node_type);
}

#[test]
fn a_cleared_verdict_is_forgotten_after_forget_after() {
    let mut fab = Fab::new();
    let mut c = Comparison::new(cfg(), Some(&fab.plan()));
    c.evaluate(&fab.snap(true), T0);
    fab.down(("leaf1", 3));
    c.evaluate(&fab.snap(true), T0 + 10 * SEC);
    fab.cable(("node05", 1), ("leaf1", 3));
    c.evaluate(&fab.snap(true), T0 + 20 * SEC);
    c.evaluate(&fab.snap(false), T0 + 100 * SEC).unwrap();
    assert_eq!(c.entries.len(), 1, "remembered for its raised count");
    assert!(c.evaluate(&fab.snap(false), T0 + 700 * SEC).is_none());
    assert!(c.entries.is_empty());
}

/// Every node's reference, type and name and every link come back from the
/// compiled plan (16 bytes a node: each node's ports and name end where
/// the next node's begin), whatever the node: named by GUID or by name,
/// of each type or none, with or without a name, with or without ports,
/// first or last.
#[test]
fn a_compiled_plan_gives_back_every_node_and_link() {
    let node = |node: NodeRef, node_type: Option<NodeType>, name: Option<&str>| PlannedNode {
        node,
        node_type,
        name: name.map(Arc::from),
        line: 0,
    };
    let by_name = |s: &str| NodeRef::Name(Arc::from(s));
    let nodes = vec![
        node(
            NodeRef::Guid(Guid(0x10)),
            Some(NodeType::Switch),
            Some("spine é1"),
        ),
        node(NodeRef::Guid(Guid(0x11)), None, None),
        node(by_name("host-a"), Some(NodeType::Ca), None),
        node(NodeRef::Guid(Guid(0x12)), Some(NodeType::Router), Some("")),
        node(by_name("lonely"), Some(NodeType::Ca), None),
        node(
            NodeRef::Guid(Guid(0x13)),
            Some(NodeType::Switch),
            Some("leaf-last"),
        ),
    ];
    let end = |node: NodeRef, port: u8| PlanEnd { node, port };
    let link = |a: PlanEnd, z: PlanEnd| PlannedLink {
        a,
        z,
        width: Some(LinkWidth::X4),
        speed: None,
        line: 0,
    };
    let links = vec![
        link(end(NodeRef::Guid(Guid(0x10)), 1), end(by_name("host-a"), 1)),
        link(
            end(NodeRef::Guid(Guid(0x10)), 2),
            end(NodeRef::Guid(Guid(0x13)), 36),
        ),
        link(
            end(NodeRef::Guid(Guid(0x12)), 1),
            end(NodeRef::Guid(Guid(0x13)), 1),
        ),
    ];
    let plan = Plan {
        source: PlanSource::Cabling,
        nodes,
        links,
    };
    let back = Compiled::new(&plan).to_plan();
    assert_eq!(back.source, plan.source);
    let seen = |n: &PlannedNode| {
        let named = matches!(n.node, NodeRef::Name(_));
        // A node named by name has no other name; an empty one is none.
        let name = n.name.clone().filter(|s| !s.is_empty() && !named);
        (n.node.clone(), n.node_type, name)
    };
    let want: Vec<_> = plan.nodes.iter().map(seen).collect();
    let got: Vec<_> = back.nodes.iter().map(seen).collect();
    assert_eq!(got, want);
    let key = |l: &PlannedLink| {
        let mut ends = [
            (format!("{:?}", l.a.node), l.a.port),
            (format!("{:?}", l.z.node), l.z.port),
        ];
        ends.sort();
        (ends, l.width, l.speed)
    };
    let mut want: Vec<_> = plan.links.iter().map(key).collect();
    let mut got: Vec<_> = back.links.iter().map(key).collect();
    want.sort();
    got.sort();
    assert_eq!(got, want);
}
