//! The fabric as found, written in ibnetdiscover's format: what
//! `ibpm-agentx topology save` and `GET /api/topology?format=ibnetdiscover`
//! give, and what ibnetdiscover's readers, ibsim, this parser (as a
//! topology or a plan) read back.
//!
//! Each node is a record as ibnetdiscover prints it: `vendid=`, `devid=`,
//! `sysimgguid=`, `switchguid=`/`caguid=`/`rtguid=` (so that the GUIDs read
//! back are the node GUIDs found), the header (`Switch 36 "S-<guid>" #
//! "<description>" base port 0 lid 1 lmc 0`), and one line per cabled
//! port with the peer, its description, LID and the link's width and
//! speed (`[1] "H-<guid>"[1](<port guid>) # "node01 HCA-1" lid 2 4xNDR`).
//! A link is written only when both its ends are in the fabric and name
//! each other, and not while its port is Down; a rate not known is left
//! out of the comment. A `"` or a control character in a description is
//! written as `?` (the format has no escape: a newline would start a
//! line).

use std::collections::HashMap;
use std::fmt::Write as _;

use crate::ib::{Guid, NodeIdentity, NodeType, Port, PortState};

/// One node to write: its identity and its ports.
pub type WriteNode<'a> = (&'a NodeIdentity, Vec<&'a Port>);

fn id(t: NodeType, g: Guid) -> String {
    let p = match t {
        NodeType::Switch => 'S',
        NodeType::Ca => 'H',
        NodeType::Router => 'R',
    };
    format!("{p}-{:016x}", g.0)
}

/// A description as the format can hold it.
fn desc(s: &str) -> String {
    s.chars()
        .map(|c| if c == '"' || c.is_control() { '?' } else { c })
        .collect()
}

fn rate(p: &Port) -> String {
    match (p.width, p.speed) {
        (Some(w), Some(s)) => format!(" {w}{s}"),
        _ => String::new(),
    }
}

/// The nodes, in ibnetdiscover's format.
pub fn write(nodes: &[WriteNode<'_>]) -> String {
    let by_guid: HashMap<Guid, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, (n, _))| (n.guid, i))
        .collect();
    let port_of = |g: Guid, num: u8| -> Option<(&NodeIdentity, &Port)> {
        let (n, ports) = &nodes[*by_guid.get(&g)?];
        Some((n, *ports.iter().find(|p| p.num == num)?))
    };
    let linked = |n: &NodeIdentity, p: &Port| -> Option<(&NodeIdentity, &Port)> {
        if p.num == 0 || p.state == Some(PortState::Down) {
            return None;
        }
        let (g, num) = p.remote()?;
        let (peer, pp) = port_of(g, num)?;
        (pp.remote() == Some((n.guid, p.num)) && pp.state != Some(PortState::Down))
            .then_some((peer, pp))
    };
    let mut out = String::with_capacity(nodes.len() * 512);
    out.push_str(
        "#\n# Topology file: the fabric as ibpm-agentx found it, in ibnetdiscover's format\n#\n\n",
    );
    for (n, ports) in nodes {
        let name = id(n.node_type, n.guid);
        let _ = write!(
            out,
            "vendid=0x{:x}\ndevid=0x{:x}\nsysimgguid=0x{:x}\n",
            n.vendor_id, n.device_id, n.sys_guid.0
        );
        let desc_n = desc(&n.description);
        match n.node_type {
            NodeType::Switch => {
                let port0 = if ports.iter().any(|p| p.num == 0) {
                    "enhanced port 0"
                } else {
                    "base port 0"
                };
                let _ = write!(
                    out,
                    "switchguid=0x{:x}({:x})\nSwitch\t{} \"{name}\"\t\t# \"{desc_n}\" {port0} lid {} lmc 0\n",
                    n.guid.0, n.guid.0, n.num_ports, n.lid
                );
            }
            t => {
                let kw = if t == NodeType::Ca {
                    ("caguid", "Ca")
                } else {
                    ("rtguid", "Rt")
                };
                let _ = write!(
                    out,
                    "{}=0x{:x}\n{}\t{} \"{name}\"\t\t# \"{desc_n}\"\n",
                    kw.0, n.guid.0, kw.1, n.num_ports
                );
            }
        }
        for p in ports {
            let Some((peer, pp)) = linked(n, p) else {
                continue;
            };
            let peer_name = id(peer.node_type, peer.guid);
            let peer_guid = if peer.node_type == NodeType::Switch {
                String::new()
            } else {
                format!("({:x})", pp.guid.0)
            };
            let peer_lid = if peer.node_type == NodeType::Switch {
                peer.lid
            } else {
                pp.lid
            };
            let rate = rate(p);
            let pd = desc(&peer.description);
            if n.node_type == NodeType::Switch {
                let _ = writeln!(
                    out,
                    "[{}]\t\"{peer_name}\"[{}]{peer_guid}\t\t# \"{pd}\" lid {peer_lid}{rate}",
                    p.num, pp.num
                );
            } else {
                let _ = writeln!(
                    out,
                    "[{}]({:x}) \t\"{peer_name}\"[{}]{peer_guid}\t\t# lid {} lmc 0 \"{pd}\" lid {peer_lid}{rate}",
                    p.num, p.guid.0, pp.num, p.lid
                );
            }
        }
        out.push('\n');
    }
    out
}

/// A fabric model's nodes, ready to write.
pub fn of_fabric(f: &crate::ib::Fabric) -> Vec<WriteNode<'_>> {
    f.nodes
        .iter()
        .map(|n| (&n.id, n.ports.iter().collect()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology::{self, DEFAULT_FABRIC_TEXT};

    /// What is written reads back as the same fabric: nodes (GUIDs, types,
    /// descriptions, vendor and device IDs), ports, links, widths, speeds.
    #[test]
    fn a_written_fabric_reads_back_the_same() {
        let fabric = topology::parse(DEFAULT_FABRIC_TEXT).unwrap();
        let written = write(&of_fabric(&fabric));
        let back = topology::parse(&written).expect(&written);
        assert_eq!(back.nodes.len(), fabric.nodes.len());
        for (a, b) in fabric.nodes.iter().zip(&back.nodes) {
            assert_eq!(a.id.guid, b.id.guid);
            assert_eq!(a.id.node_type, b.id.node_type);
            assert_eq!(a.id.description, b.id.description);
            assert_eq!(
                (a.id.vendor_id, a.id.device_id, a.id.sys_guid),
                (b.id.vendor_id, b.id.device_id, b.id.sys_guid)
            );
            let links = |n: &crate::ib::Node| {
                n.ports
                    .iter()
                    .map(|p| (p.num, p.remote(), p.width, p.speed))
                    .collect::<Vec<_>>()
            };
            assert_eq!(links(a), links(b), "{}", a.id.description);
        }
        // Written again, the same text.
        assert_eq!(write(&of_fabric(&back)), written);
    }

    #[test]
    fn rates_of_every_kind_and_odd_descriptions_survive() {
        let text = "Switch 4 \"S-1\" # \"sw \\\"one\\\"\" enhanced port 0 lid 7 lmc 0\n\
                    [1] \"H-1\"[1] # lid 9 4xNDR\n[2] \"H-2\"[2] # lid 9 2xXDR\n[3] \"H-2\"[1] # lid 9 1xFDR10\n\n\
                    Hca 2 \"H-1\" # \"a\u{7}b\"\n[1] \"S-1\"[1] # lid 7 4xNDR\n\n\
                    Hca 2 \"H-2\"\n[2] \"S-1\"[2] # lid 7 2xXDR\n[1] \"S-1\"[3] # lid 7 1xFDR10\n";
        let fabric = topology::parse(text).unwrap();
        let written = write(&of_fabric(&fabric));
        assert!(!written.contains('\u{7}'));
        let back = topology::parse(&written).expect(&written);
        let rates = |f: &crate::ib::Fabric| {
            f.nodes
                .iter()
                .flat_map(|n| {
                    n.ports
                        .iter()
                        .map(move |p| (n.id.guid, p.num, p.remote(), p.width, p.speed))
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(rates(&back), rates(&fabric));
    }
}
