//! `ibpm-agentx query`: one perfquery-like read of a node's port from the
//! fabric, outside the agent (no cache, no snmpd): PortCounters and, where
//! the node answers it, PortCountersExtended, every counter named as IBTA
//! names it (the names come from the attribute declarations in `pm`), data
//! counters in octets, GUIDs in hex.

use std::fmt::Write as _;

use crate::fabric::engine::{Engine, EngineConfig, MadOutcome};
use crate::fabric::sweep::get;
use crate::ib::{Fabric, Guid, Node};
use crate::pm::mad::attr;
use crate::pm::port_counters::PortCountersField as F;
use crate::pm::port_counters_ext::PortCountersExtendedField as X;
use crate::pm::{PortCounters, PortCountersExtended};
use crate::transport::{MadAddr, MadTransport};

/// The node a query names: a GUID (hex), a LID (decimal) or a
/// NodeDescription.
pub fn find_node<'a>(fabric: &'a Fabric, what: &str) -> Result<&'a Node, String> {
    let by_guid = what
        .parse::<Guid>()
        .ok()
        .filter(|_| what.len() > 6 || what.starts_with("0x") || what.contains(':'));
    if let Some(g) = by_guid
        && let Some(n) = fabric.node(g)
    {
        return Ok(n);
    }
    if let Ok(lid) = what.parse::<u16>()
        && let Some(n) = fabric
            .nodes
            .iter()
            .find(|n| n.lid == lid || n.ports.iter().any(|p| p.lid == lid))
    {
        return Ok(n);
    }
    let named: Vec<&Node> = fabric
        .nodes
        .iter()
        .filter(|n| &*n.description == what)
        .collect();
    match named.as_slice() {
        [n] => Ok(n),
        [] => Err(format!(
            "no node with GUID, LID or description `{}`",
            crate::ib::Escaped(what)
        )),
        _ => Err(format!(
            "{} nodes are named `{}`: give a GUID or LID",
            named.len(),
            crate::ib::Escaped(what)
        )),
    }
}

/// What one query read.
#[derive(Clone, Debug)]
pub struct Reading {
    pub guid: Guid,
    pub description: String,
    pub port: u8,
    pub lid: u16,
    pub counters: PortCounters,
    pub extended: Option<PortCountersExtended>,
}

/// Reads `port` of `node` through `transport`.
pub fn read(
    transport: Box<dyn MadTransport>,
    cfg: EngineConfig,
    node: &Node,
    port: u8,
) -> Result<Reading, String> {
    if node.port(port).is_none() {
        return Err(format!("node {} has no port {port}", node.guid));
    }
    let lid = node.pma_lid(port);
    if lid == 0 {
        return Err(format!("node {} port {port} has no LID", node.guid));
    }
    let to = MadAddr::gsi(lid);
    let mut pc = [0u8; 192];
    PortCounters::select(port, 0, 0).encode(&mut pc);
    let mut pcx = [0u8; 192];
    PortCountersExtended::select(port, 0, 0).encode(&mut pcx);
    let reqs = [
        get(to, attr::PORT_COUNTERS, pc),
        get(to, attr::PORT_COUNTERS_EXTENDED, pcx),
    ];
    let mut answers: [Option<Box<[u8; 192]>>; 2] = [None, None];
    let mut failures = Vec::new();
    Engine::new(transport, cfg).run(&reqs, |i, outcome| match outcome {
        MadOutcome::Reply { data, .. } => answers[i] = Some(data),
        MadOutcome::Status(s) => failures.push(format!("MAD status {s:#06x}")),
        MadOutcome::Timeout => failures.push("no answer".to_string()),
        MadOutcome::Failed(e) => failures.push(e),
    });
    let [counters, extended] = answers;
    let Some(counters) = counters else {
        return Err(format!(
            "PortCounters of node {} port {port} (LID {lid}): {}",
            node.guid,
            failures.join("; ")
        ));
    };
    Ok(Reading {
        guid: node.guid,
        description: node.description.to_string(),
        port,
        lid,
        counters: PortCounters::decode(&counters),
        extended: extended.map(|d| PortCountersExtended::decode(&d)),
    })
}

/// (name, value) of every counter of a reading; data counters in octets
/// (the wire counts octets divided by 4).
pub fn counters(r: &Reading) -> Vec<(String, u64)> {
    let mut v = Vec::new();
    for &f in F::ALL {
        if f.clear().is_none() && f != F::Qp1Dropped {
            continue; // PortSelect, CounterSelect, CounterSelect2
        }
        let octets = matches!(f, F::XmitData | F::RcvData);
        let raw = r.counters.get(f);
        v.push(name_value(f.name(), raw, octets));
    }
    if let Some(x) = &r.extended {
        for &f in X::ALL {
            if f.clear().is_none() {
                continue;
            }
            let octets = matches!(f, X::XmitData | X::RcvData);
            let (n, val) = name_value(f.name(), x.get(f), octets);
            v.push((format!("Extended {n}"), val));
        }
    }
    v
}

fn name_value(name: &str, raw: u64, octets: bool) -> (String, u64) {
    if octets {
        (format!("{name} (octets)"), raw.saturating_mul(4))
    } else {
        (name.to_string(), raw)
    }
}

/// perfquery's layout: `Name:.....value`.
pub fn text(r: &Reading) -> String {
    let mut out = format!(
        "# Port counters: node {} \"{}\" port {} LID {}\n",
        r.guid,
        crate::ib::Escaped(&r.description),
        r.port,
        r.lid
    );
    for (name, value) in counters(r) {
        let label = format!("{name}:");
        let _ = writeln!(out, "{label:.<44}{value}");
    }
    out
}

/// One JSON object.
pub fn json(r: &Reading) -> String {
    let mut out = format!(
        "{{\"guid\":\"{}\",\"description\":{},\"port\":{},\"lid\":{},\"counters\":{{",
        r.guid,
        json_string(&r.description),
        r.port,
        r.lid
    );
    let fields: Vec<String> = counters(r)
        .into_iter()
        .map(|(n, v)| format!("{}:{v}", json_string(&n)))
        .collect();
    out += &fields.join(",");
    out += "}}\n";
    out
}

fn json_string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o += "\\\"",
            '\\' => o += "\\\\",
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;
    use crate::sim::{SimClock, SimFabric, SimOptions};

    fn sim() -> SimFabric {
        SimFabric::new(
            topology::default_fabric(),
            SimOptions {
                seed: 3,
                traffic: true,
                clock: SimClock::Manual(crate::sim::ManualClock::new()),
                ..Default::default()
            },
        )
    }

    #[test]
    fn a_query_reads_what_the_pma_holds() {
        let sim = sim();
        let fabric = sim.fabric();
        let sw = fabric
            .nodes
            .iter()
            .find(|n| n.node_type == crate::ib::NodeType::Switch)
            .unwrap();
        let r = read(Box::new(sim.transport()), EngineConfig::default(), sw, 2).unwrap();
        let want = crate::rig::port_counters(&sim, sw.lid, 2);
        assert_eq!(r.counters, want);
        let c = counters(&r);
        let get = |n: &str| c.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
        assert_eq!(
            get("PortXmitData (octets)"),
            Some(u64::from(want.xmit_data) * 4)
        );
        assert_eq!(
            get("SymbolErrorCounter"),
            Some(u64::from(want.symbol_errors))
        );
        assert!(r.extended.is_some());
        assert!(text(&r).contains("PortRcvPkts:"));
        let j = json(&r);
        assert!(
            j.starts_with("{\"guid\":\"0x") && j.ends_with("}}\n"),
            "{j}"
        );
    }

    #[test]
    fn nodes_are_found_by_guid_lid_or_name() {
        let fabric = sim().fabric();
        let n = &fabric.nodes[3];
        assert_eq!(
            find_node(&fabric, &n.guid.to_string()).unwrap().guid,
            n.guid
        );
        let lid = n.ports[0].lid.max(n.lid);
        assert_eq!(find_node(&fabric, &lid.to_string()).unwrap().guid, n.guid);
        assert_eq!(find_node(&fabric, &n.description).unwrap().guid, n.guid);
        assert!(find_node(&fabric, "no such node").is_err());
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\u{1b}"), "\"a\\\"b\\\\c\\u001b\"");
    }
}
