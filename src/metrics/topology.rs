//! `GET /api/topology`: the fabric as found in the latest snapshot, in
//! ibnetdiscover's format (`?format=ibnetdiscover`, the file `topology
//! save` writes and a plan reads) or as JSON (`?format=json`, the
//! default).

use std::fmt::Write as _;

use crate::fabric::cache::Snapshot;
use crate::ib::json_string;
use crate::ib::topology::write::{WriteNode, write};

/// The formats of `/api/topology`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Ibnetdiscover,
}

/// The format a query string asks for (`format=json|ibnetdiscover`;
/// nothing else is taken).
pub fn format(query: &str) -> Result<Format, String> {
    let mut f = Format::Json;
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("format", "json")) => f = Format::Json,
            Some(("format", "ibnetdiscover")) => f = Format::Ibnetdiscover,
            _ => {
                return Err(format!(
                    "`{}`: /api/topology takes format=json or format=ibnetdiscover",
                    crate::ib::Escaped(&pair.chars().take(60).collect::<String>())
                ));
            }
        }
    }
    Ok(f)
}

/// The snapshot's nodes, ready to write.
pub fn nodes(snap: &Snapshot) -> Vec<WriteNode<'_>> {
    snap.nodes
        .iter()
        .map(|n| (&n.id, n.ports().map(|p| &p.link).collect()))
        .collect()
}

/// The fabric as JSON: every node (GUID, type, name, NodeDescription,
/// IDs, LID) with its ports (number, GUID, LID, state, width, speed,
/// peer).
pub fn json(snap: &Snapshot) -> String {
    let mut o = format!("{{\"schema\":1,\"sweep\":{},\"nodes\":[", snap.sweep);
    for (i, n) in snap.nodes.iter().enumerate() {
        let id = &n.id;
        let _ = write!(
            o,
            "{}{{\"guid\":\"{}\",\"type\":\"{}\",\"name\":{},\"description\":{},\"system_image_guid\":\"{}\",\"vendor_id\":{},\"device_id\":{},\"lid\":{},\"ports\":[",
            if i == 0 { "" } else { "," },
            id.guid,
            match id.node_type {
                crate::ib::NodeType::Switch => "switch",
                crate::ib::NodeType::Ca => "ca",
                crate::ib::NodeType::Router => "router",
            },
            json_string(n.name()),
            json_string(&id.description),
            id.sys_guid,
            id.vendor_id,
            id.device_id,
            id.lid
        );
        for (j, p) in n.ports().map(|p| &p.link).enumerate() {
            let opt = |s: Option<String>| s.map_or("null".to_string(), |s| json_string(&s));
            let _ = write!(
                o,
                "{}{{\"port\":{},\"guid\":\"{}\",\"lid\":{},\"state\":{},\"width\":{},\"speed\":{},\"peer\":{}}}",
                if j == 0 { "" } else { "," },
                p.num,
                p.guid,
                p.lid,
                opt(p.state.map(|s| s.name().to_string())),
                opt(p.width.map(|w| w.name().to_string())),
                opt(p.speed.map(|s| s.name().to_string())),
                p.remote().map_or("null".to_string(), |(g, q)| format!(
                    "{{\"guid\":\"{g}\",\"port\":{q}}}"
                )),
            );
        }
        o.push_str("]}");
    }
    o.push_str("]}\n");
    o
}

/// The answer of `/api/topology` for `query`: its content type and body.
pub fn answer(query: &str, snap: &Snapshot) -> Result<(&'static str, Vec<u8>), String> {
    Ok(match format(query)? {
        Format::Json => ("application/json", json(snap).into_bytes()),
        Format::Ibnetdiscover => (
            "text/plain; charset=utf-8",
            write(&nodes(snap)).into_bytes(),
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rig::{AgentRig, RigOptions};

    #[test]
    fn the_topology_reads_back_as_the_fabric_swept() {
        let rig = AgentRig::swept(RigOptions::default());
        let snap = rig.cache.load();
        let (ty, body) = answer("format=ibnetdiscover", &snap).unwrap();
        assert_eq!(ty, "text/plain; charset=utf-8");
        let back = crate::ib::topology::parse(std::str::from_utf8(&body).unwrap()).unwrap();
        assert_eq!(back.nodes.len(), snap.nodes.len());
        let links = |g, num| {
            back.node(g)
                .and_then(|n| n.port(num))
                .and_then(|p| p.remote())
        };
        for n in &snap.nodes {
            for p in n.ports() {
                assert_eq!(
                    links(n.id.guid, p.num()),
                    p.link.remote(),
                    "{} {}",
                    n.name(),
                    p.num()
                );
            }
        }
        let (ty, body) = answer("", &snap).unwrap();
        assert_eq!(ty, "application/json");
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["nodes"].as_array().unwrap().len(), snap.nodes.len());
        assert!(
            answer("format=xml", &snap)
                .unwrap_err()
                .contains("format=json")
        );
    }
}
