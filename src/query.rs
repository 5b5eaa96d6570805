//! `ibpm-agentx query`: one perfquery-like read of a node's port from the
//! fabric, outside the agent (no cache, no snmpd): PortCounters and, where
//! the node answers it, PortCountersExtended, every counter named as IBTA
//! names it (the names come from the attribute declarations in `pm`), data
//! counters in octets, GUIDs in hex.

use std::fmt::{self, Write as _};

use crate::fabric::engine::{Engine, EngineConfig, MadOutcome};
use crate::fabric::mads::get;
use crate::ib::names::NameMap;
use crate::ib::xmit_wait::TickRule;
use crate::ib::{Fabric, Guid, Node};
use crate::pm::mad::attr;
use crate::pm::port_counters::PortCountersField as F;
use crate::pm::port_counters_ext::PortCountersExtendedField as X;
use crate::pm::{PortCounters, PortCountersExtended, PortSamplesControl};
use crate::transport::{MadAddr, MadTransport, TransportError};

/// Why a query found no port or read nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryError {
    /// Nothing has this GUID, LID or NodeDescription.
    NotFound(String),
    /// More than one node has this NodeDescription.
    Ambiguous { name: String, count: usize },
    /// A port GUID or LID names port `num` of a channel adapter, and
    /// another port `asked` was asked for.
    OtherPort {
        named: Named,
        num: u8,
        node: Guid,
        asked: u8,
    },
    /// The node has no such port.
    NoPort { node: Guid, port: u8 },
    /// The port has no LID to send to.
    NoLid { node: Guid, port: u8 },
    /// PortCounters was not read: why each request failed.
    Unanswered {
        node: Guid,
        port: u8,
        lid: u16,
        failures: Vec<Unanswered>,
    },
}

/// What named a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Named {
    PortGuid(Guid),
    Lid(u16),
}

/// Why one read got no reading.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Unanswered {
    Status(u16),
    Timeout,
    Transport(TransportError),
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Named::PortGuid(g) => write!(f, "port GUID {g}"),
            Named::Lid(l) => write!(f, "LID {l}"),
        }
    }
}

impl fmt::Display for Unanswered {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unanswered::Status(s) => write!(f, "MAD status {s:#06x}"),
            Unanswered::Timeout => f.write_str("no answer"),
            Unanswered::Transport(e) => e.fmt(f),
        }
    }
}

impl fmt::Display for QueryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use crate::ib::Escaped;
        match self {
            QueryError::NotFound(what) => write!(
                f,
                "no node or port with GUID, LID or description `{}`",
                Escaped(what)
            ),
            QueryError::Ambiguous { name, count } => write!(
                f,
                "{count} nodes are named `{}`: give a GUID or LID",
                Escaped(name)
            ),
            QueryError::OtherPort {
                named,
                num,
                node,
                asked,
            } => write!(
                f,
                "{named} is port {num} of node {node}: port {asked} is read through its own GUID or LID"
            ),
            QueryError::NoPort { node, port } => write!(f, "node {node} has no port {port}"),
            QueryError::NoLid { node, port } => write!(f, "node {node} port {port} has no LID"),
            QueryError::Unanswered {
                node,
                port,
                lid,
                failures,
            } => {
                write!(f, "PortCounters of node {node} port {port} (LID {lid}): ")?;
                for (i, e) in failures.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    e.fmt(f)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for QueryError {}

/// The node and port a query names: a node GUID (hex), a port GUID (as
/// perfquery's `-G` takes one: a channel adapter's port has a GUID of its
/// own), a LID (decimal) or a NodeDescription. `port`: the port asked for;
/// `None` takes the port a port GUID or a channel adapter port's LID
/// names, else port 1.
pub fn find_port<'a>(
    fabric: &'a Fabric,
    what: &str,
    port: Option<u8>,
) -> Result<(&'a Node, u8), QueryError> {
    find_port_named(fabric, &NameMap::default(), what, port)
}

/// [`find_port`], where a node is also named by its name in `names` (the
/// node-name-map).
pub fn find_port_named<'a>(
    fabric: &'a Fabric,
    names: &NameMap,
    what: &str,
    port: Option<u8>,
) -> Result<(&'a Node, u8), QueryError> {
    let by_guid = what
        .parse::<Guid>()
        .ok()
        .filter(|_| what.len() > 6 || what.starts_with("0x") || what.contains(':'));
    if let Some(g) = by_guid {
        if let Some(n) = fabric.node(g) {
            return Ok((n, port.unwrap_or(1)));
        }
        let by_port = fabric
            .nodes
            .iter()
            .find_map(|n| Some((n, n.ports.iter().find(|p| p.guid == g)?)));
        if let Some((n, p)) = by_port {
            return named_port(n, p.num, port, Named::PortGuid(g));
        }
    }
    if let Ok(lid) = what.parse::<u16>() {
        if let Some(n) = fabric.nodes.iter().find(|n| n.id.lid == lid) {
            return Ok((n, port.unwrap_or(1)));
        }
        let by_port = fabric
            .nodes
            .iter()
            .find_map(|n| Some((n, n.ports.iter().find(|p| p.lid == lid)?)));
        if let Some((n, p)) = by_port {
            return named_port(n, p.num, port, Named::Lid(lid));
        }
    }
    find_node(fabric, names, what).map(|n| (n, port.unwrap_or(1)))
}

/// [`find_port`] over the fabrics of several subnets (planes): the first
/// subnet where the node has the port with a LID to read it at, so that
/// port 2 of an adapter whose port 2 is on the second plane is found
/// there. Returns the subnet's position too; the first error when none
/// has it.
pub fn find_port_in<'a>(
    fabrics: impl IntoIterator<Item = &'a Fabric>,
    names: &NameMap,
    what: &str,
    port: Option<u8>,
) -> Result<(usize, &'a Node, u8), QueryError> {
    let mut first_error = None;
    for (i, fabric) in fabrics.into_iter().enumerate() {
        match find_port_named(fabric, names, what, port) {
            Ok((n, num)) if n.port(num).is_some() && n.pma_lid(num) != 0 => {
                return Ok((i, n, num));
            }
            Ok((n, num)) => {
                first_error.get_or_insert(QueryError::NoPort {
                    node: n.id.guid,
                    port: num,
                });
            }
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    Err(first_error.unwrap_or_else(|| QueryError::NotFound(what.to_string())))
}

/// Port `num` of `n`, named by `what`, where `port` was asked for: a
/// channel adapter's PMA behind that port's LID reads only that port.
fn named_port(
    n: &Node,
    num: u8,
    port: Option<u8>,
    named: Named,
) -> Result<(&Node, u8), QueryError> {
    match port {
        Some(asked) if asked != num && n.id.node_type != crate::ib::NodeType::Switch => {
            Err(QueryError::OtherPort {
                named,
                num,
                node: n.id.guid,
                asked,
            })
        }
        Some(p) => Ok((n, p)),
        None => Ok((n, num)),
    }
}

/// The node a name names: its node-name-map name, else its
/// NodeDescription.
fn find_node<'a>(fabric: &'a Fabric, names: &NameMap, what: &str) -> Result<&'a Node, QueryError> {
    let mapped = |n: &&Node| names.get(n.id.guid).is_some_and(|m| &**m == what);
    let mut named: Vec<&Node> = fabric.nodes.iter().filter(mapped).collect();
    if named.is_empty() {
        named = fabric
            .nodes
            .iter()
            .filter(|n| &*n.id.description == what)
            .collect();
    }
    match named.as_slice() {
        [n] => Ok(n),
        [] => Err(QueryError::NotFound(what.to_string())),
        _ => Err(QueryError::Ambiguous {
            name: what.to_string(),
            count: named.len(),
        }),
    }
}

/// What one query read.
#[derive(Clone, Debug)]
pub struct Reading {
    pub guid: Guid,
    /// The name the node goes by (its node-name-map name, else its
    /// NodeDescription).
    pub name: String,
    pub description: String,
    pub port: u8,
    pub lid: u16,
    pub counters: PortCounters,
    pub extended: Option<PortCountersExtended>,
    /// The port's link as the fabric knows it.
    pub link: LinkReport,
    /// The label of the subnet the port was read in (None: not known).
    pub subnet: Option<String>,
    /// The rule the node's XmitWait ticks follow (its NodeInfo, and the
    /// Tick of its PortSamplesControl where it answered).
    pub tick: TickRule,
}

/// A port's link: what it runs at, what it supports and enables, what it
/// should run at given the far end, and whether it is degraded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LinkReport {
    pub port: crate::ib::Port,
    pub assessment: crate::ib::LinkAssessment,
}

impl LinkReport {
    /// Port `port` of `node`, against the port at its far end in `fabric`.
    pub fn of(fabric: &Fabric, node: &Node, port: u8) -> LinkReport {
        let Some(p) = node.port(port) else {
            return LinkReport::default();
        };
        let peer = p.remote().and_then(|(g, n)| fabric.node(g)?.port(n));
        LinkReport {
            port: *p,
            assessment: p.assess(peer),
        }
    }

    /// (key, value) pairs, values as ibstat and iblinkinfo print them
    /// (`4x`, `NDR`, `1x,2x,4x`); `?` where not known.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let p = &self.port;
        let a = &self.assessment;
        let known = |s: String| if s.is_empty() { "?".to_string() } else { s };
        let opt = |s: Option<String>| s.unwrap_or_else(|| "?".to_string());
        vec![
            ("LinkWidthActive", opt(p.width.map(|w| w.to_string()))),
            ("LinkSpeedActive", opt(p.speed.map(|s| s.to_string()))),
            ("RateMbps", opt(p.rate_mbps().map(|r| r.to_string()))),
            (
                "LinkWidthSupported",
                known(p.caps.width_supported.to_string()),
            ),
            ("LinkWidthEnabled", known(p.caps.width_enabled.to_string())),
            (
                "LinkSpeedSupported",
                known(p.caps.speed_supported.to_string()),
            ),
            ("LinkSpeedEnabled", known(p.caps.speed_enabled.to_string())),
            (
                "LinkWidthExpected",
                opt(a.expected_width.map(|w| w.to_string())),
            ),
            (
                "LinkSpeedExpected",
                opt(a.expected_speed.map(|s| s.to_string())),
            ),
            ("LinkDegraded", opt(a.health.map(|h| h.mib_label()))),
        ]
    }
}

/// Reads `port` of `node` (a node of `fabric`) through `transport`.
pub fn read(
    transport: Box<dyn MadTransport>,
    cfg: EngineConfig,
    fabric: &Fabric,
    node: &Node,
    port: u8,
) -> Result<Reading, QueryError> {
    if node.port(port).is_none() {
        return Err(QueryError::NoPort {
            node: node.id.guid,
            port,
        });
    }
    let lid = node.pma_lid(port);
    if lid == 0 {
        return Err(QueryError::NoLid {
            node: node.id.guid,
            port,
        });
    }
    let to = MadAddr::gsi(lid);
    let mut pc = [0u8; 192];
    PortCounters::select(port, 0, 0).encode(&mut pc);
    let mut pcx = [0u8; 192];
    PortCountersExtended::select(port, 0, 0).encode(&mut pcx);
    let mut psc = [0u8; 192];
    PortSamplesControl {
        port_select: port,
        ..Default::default()
    }
    .encode(&mut psc);
    let reqs = [
        get(to, attr::PORT_COUNTERS, pc),
        get(to, attr::PORT_COUNTERS_EXTENDED, pcx),
        get(to, attr::PORT_SAMPLES_CONTROL, psc),
    ];
    let mut answers: [Option<Box<[u8; 192]>>; 3] = [None, None, None];
    let mut failures = Vec::new();
    Engine::new(transport, cfg).run(&reqs, |i, outcome| match outcome {
        MadOutcome::Reply { data, .. } => answers[i] = Some(data),
        // Only PortCounters' failures make the query fail.
        _ if i > 0 => {}
        MadOutcome::Status(s) => failures.push(Unanswered::Status(s)),
        MadOutcome::Timeout => failures.push(Unanswered::Timeout),
        MadOutcome::Failed(e) => failures.push(Unanswered::Transport(e)),
    });
    let [counters, extended, control] = answers;
    let tick = TickRule::of(
        node.id.vendor_id,
        node.id.device_id,
        control.map(|d| PortSamplesControl::decode(&d).tick),
    );
    let Some(counters) = counters else {
        return Err(QueryError::Unanswered {
            node: node.id.guid,
            port,
            lid,
            failures,
        });
    };
    Ok(Reading {
        guid: node.id.guid,
        name: node.id.description.to_string(),
        description: node.id.description.to_string(),
        port,
        lid,
        counters: PortCounters::decode(&counters),
        extended: extended.map(|d| PortCountersExtended::decode(&d)),
        link: LinkReport::of(fabric, node, port),
        subnet: None,
        tick,
    })
}

/// One counter of a reading.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counter {
    /// The IBTA name of its field (an identifier: `PortXmitData`).
    pub name: &'static str,
    /// A data counter, shown in octets (the wire counts octets / 4).
    pub octets: bool,
    /// Read from PortCountersExtended.
    pub extended: bool,
    pub value: u64,
}

impl Counter {
    /// Its name as perfquery-like text shows it (`PortXmitData (octets)`,
    /// `Extended PortRcvPkts`).
    pub fn label(&self) -> String {
        format!(
            "{}{}{}",
            if self.extended { "Extended " } else { "" },
            self.name,
            if self.octets { " (octets)" } else { "" }
        )
    }

    /// Its key in the JSON object of its attribute: an identifier
    /// (`PortXmitDataOctets`).
    pub fn key(&self) -> String {
        format!("{}{}", self.name, if self.octets { "Octets" } else { "" })
    }
}

/// Every counter of a reading: PortCounters, then PortCountersExtended;
/// data counters in octets.
pub fn counters(r: &Reading) -> Vec<Counter> {
    let mut v = Vec::new();
    for &f in F::ALL {
        if f.clear().is_none() && f != F::Qp1Dropped {
            continue; // PortSelect, CounterSelect, CounterSelect2
        }
        let octets = matches!(f, F::XmitData | F::RcvData);
        v.push(counter(f.name(), r.counters.get(f), octets, false));
    }
    if let Some(x) = &r.extended {
        for &f in X::ALL {
            if f.clear().is_none() {
                continue;
            }
            let octets = matches!(f, X::XmitData | X::RcvData);
            v.push(counter(f.name(), x.get(f), octets, true));
        }
    }
    v
}

fn counter(name: &'static str, raw: u64, octets: bool, extended: bool) -> Counter {
    Counter {
        name,
        octets,
        extended,
        value: if octets { raw.saturating_mul(4) } else { raw },
    }
}

/// perfquery's layout: `Name:.....value`.
pub fn text(r: &Reading) -> String {
    let mut out = format!(
        "# Port counters: node {} \"{}\" port {} LID {}\n",
        r.guid,
        crate::ib::Escaped(&r.name),
        r.port,
        r.lid
    );
    if r.name != r.description {
        let _ = writeln!(
            out,
            "# NodeDescription: \"{}\"",
            crate::ib::Escaped(&r.description)
        );
    }
    if let Some(s) = &r.subnet {
        let _ = writeln!(out, "# Subnet: {}", crate::ib::Escaped(s));
    }
    for c in counters(r) {
        let label = format!("{}:", c.label());
        let _ = writeln!(out, "{label:.<44}{}", c.value);
    }
    out += "# Link:\n";
    for (k, v) in r.link.fields() {
        let _ = writeln!(out, "{:.<44}{v}", format!("{k}:"));
    }
    let _ = writeln!(out, "# XmitWait tick: {}", r.tick.describe());
    let _ = writeln!(
        out,
        "{:.<44}{}",
        "XmitWaitTickSource:",
        r.tick.source.label()
    );
    out
}

/// One JSON object: the port, `counters` (PortCounters) and, where the
/// node answered it, `extended` (PortCountersExtended), each keyed by
/// identifiers.
pub fn json(r: &Reading) -> String {
    let mut out = format!(
        "{{\"guid\":{},\"name\":{},\"description\":{},\"port\":{},\"lid\":{}",
        json_string(&r.guid.to_string()),
        json_string(&r.name),
        json_string(&r.description),
        r.port,
        r.lid
    );
    if let Some(s) = &r.subnet {
        let _ = write!(out, ",\"subnet\":{}", json_string(s));
    }
    let all = counters(r);
    for (key, extended) in [("counters", false), ("extended", true)] {
        if extended && r.extended.is_none() {
            continue;
        }
        let fields: Vec<String> = all
            .iter()
            .filter(|c| c.extended == extended)
            .map(|c| format!("{}:{}", json_string(&c.key()), c.value))
            .collect();
        let _ = write!(out, ",\"{key}\":{{{}}}", fields.join(","));
    }
    let link: Vec<String> = r
        .link
        .fields()
        .iter()
        .map(|(k, v)| format!("{}:{}", json_string(k), json_string(v)))
        .collect();
    let _ = write!(out, ",\"link\":{{{}}}", link.join(","));
    let _ = write!(
        out,
        ",\"XmitWaitTick\":{{\"Source\":{},\"Tick\":{},\"Rule\":{}}}",
        json_string(r.tick.source.label()),
        r.tick.tick,
        json_string(&r.tick.describe())
    );
    out += "}\n";
    out
}

use crate::ib::json_string;

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
            .find(|n| n.id.node_type == crate::ib::NodeType::Switch)
            .unwrap();
        let r = read(
            Box::new(sim.transport()),
            EngineConfig::default(),
            &fabric,
            sw,
            2,
        )
        .unwrap();
        let want = crate::rig::port_counters(&sim, sw.id.lid, 2);
        assert_eq!(r.counters, want);
        let c = counters(&r);
        let get = |n: &str| c.iter().find(|k| k.label() == n).map(|k| k.value);
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
        // The link: the default fabric's spine links at 4x QDR, enabled
        // as the topology says (supported is not in a topology file).
        let t = text(&r);
        for want in [
            "LinkWidthActive:............................4x\n",
            "LinkSpeedActive:............................QDR\n",
            "LinkSpeedEnabled:...........................SDR,DDR,QDR\n",
            "LinkWidthSupported:.........................?\n",
            "LinkSpeedExpected:..........................QDR\n",
            "LinkDegraded:...............................normal\n",
            // A switch of no known family whose PMA answers Tick 0xFF.
            "# XmitWait tick: IBA rule: Tick 255 (from PortSamplesControl), one tick = 256 symbol times of a lane at its active speed\n",
            "XmitWaitTickSource:.........................samplesControl\n",
        ] {
            assert!(t.contains(want), "{want} in {t}");
        }
        assert!(
            json(&r).contains(",\"XmitWaitTick\":{\"Source\":\"samplesControl\",\"Tick\":255,")
        );
        assert!(json(&r).contains("\"link\":{\"LinkWidthActive\":\"4x\""));
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
        let node = |what: &str| find_port(&fabric, what, None).map(|(n, _)| n.id.guid);
        assert_eq!(node(&n.id.guid.to_string()), Ok(n.id.guid));
        let lid = n.ports[0].lid.max(n.id.lid);
        assert_eq!(node(&lid.to_string()), Ok(n.id.guid));
        assert_eq!(node(&n.id.description), Ok(n.id.guid));
        assert!(node("no such node").is_err());
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string("a\"b\\c\u{1b}"), "\"a\\\"b\\\\c\\u001b\"");
        // Bidi overrides, C1 controls, zero-width and non-BMP text.
        assert_eq!(
            json_string("x\u{202e}y\u{85}\u{200b}\u{2028}é😀"),
            "\"x\\u202ey\\u0085\\u200b\\u2028é😀\""
        );
    }

    #[test]
    fn json_keys_are_identifiers_and_outside_text_is_escaped() {
        let sim = sim();
        let fabric = sim.fabric();
        let ca = fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == crate::ib::NodeType::Ca)
            .unwrap();
        let mut r = read(
            Box::new(sim.transport()),
            EngineConfig::default(),
            &fabric,
            ca,
            ca.ports[0].num,
        )
        .unwrap();
        r.description = "evil\u{202e}txt.exe\n\"".into();
        let j = json(&r);
        assert!(
            j.contains("\"description\":\"evil\\u202etxt.exe\\u000a\\\"\""),
            "{j}"
        );
        assert!(!j.contains('\u{202e}'));
        // Every key is an identifier.
        let mut keys = Vec::new();
        let mut rest = j.as_str();
        while let Some(i) = rest.find("\":") {
            let start = rest[..i].rfind('"').unwrap();
            keys.push(rest[start + 1..i].to_string());
            rest = &rest[i + 2..];
        }
        assert!(keys.len() > 40, "{keys:?}");
        for k in &keys {
            assert!(k.chars().all(|c| c.is_ascii_alphanumeric()), "key {k:?}");
        }
        assert!(j.contains(&format!(
            "\"PortXmitDataOctets\":{}",
            u64::from(r.counters.xmit_data) * 4
        )));
        let x = r.extended.unwrap();
        assert!(
            j.contains(&format!(
                "\"extended\":{{\"PortXmitDataOctets\":{}",
                x.xmit_data * 4
            )),
            "{j}"
        );
    }

    #[test]
    fn a_port_guid_names_its_node_and_port() {
        let fabric = sim().fabric();
        let ca = fabric
            .nodes
            .iter()
            .find(|n| n.id.node_type == crate::ib::NodeType::Ca && n.ports.len() > 1)
            .unwrap();
        let p2 = ca.ports[1];
        assert_ne!(p2.guid, ca.id.guid);
        let (n, port) = find_port(&fabric, &p2.guid.to_string(), None).unwrap();
        assert_eq!((n.id.guid, port), (ca.id.guid, p2.num));
        assert_eq!(
            find_port(&fabric, &p2.guid.to_string(), Some(p2.num))
                .unwrap()
                .1,
            p2.num
        );
        let e = find_port(&fabric, &p2.guid.to_string(), Some(ca.ports[0].num)).unwrap_err();
        assert!(
            e.to_string()
                .contains(&format!("is port {} of node {}", p2.num, ca.id.guid)),
            "{e}"
        );
        // A CA port's LID names that port too; the node GUID port 1.
        assert_eq!(
            find_port(&fabric, &p2.lid.to_string(), None).unwrap().1,
            p2.num
        );
        assert_eq!(
            find_port(&fabric, &ca.id.guid.to_string(), None).unwrap().1,
            1
        );
    }
}
