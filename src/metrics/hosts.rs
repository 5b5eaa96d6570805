//! Hosts: the host part of a node's name ([`crate::events::host_of`]:
//! the first word of the node-name-map's name, else of NodeDescription, as
//! adapters name themselves "node0413 HCA-1", "node0413 mlx5_0"), and
//! each host's adapter ports rolled up: their verdicts, the worst of them,
//! and the switch ports they are cabled to. For each switch with a
//! verdict, the hosts cabled to it ("hosts behind leaf07"). Pure: a
//! snapshot and its verdicts in, the rows out; `/api/hosts` is their
//! JSON, `ibpm-agentx health --hosts` lists the unhealthy hosts.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::events::host_of;
use crate::fabric::cache::Snapshot;
use crate::ib::health::{Condition, Verdicts};
use crate::ib::{Guid, NodeType};

pub const SCHEMA: u32 = 1;

/// A switch port an adapter port is cabled to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchEnd {
    pub guid: String,
    pub name: String,
    pub port: u8,
}

/// One adapter port of a host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostPort {
    pub node_guid: String,
    pub node: String,
    pub port: u8,
    /// The conditions standing on its link, worst first.
    pub conditions: Vec<String>,
    pub switch: Option<SwitchEnd>,
}

/// One host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Host {
    pub host: String,
    /// The worst condition on any of its links (None: healthy).
    pub worst: Option<String>,
    pub ports: Vec<HostPort>,
}

/// A switch with a verdict and the hosts behind it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SwitchHosts {
    pub guid: String,
    pub name: String,
    /// Its ports with a verdict.
    pub ports_with_verdict: Vec<u8>,
    pub worst: Option<String>,
    /// The hosts cabled to any of its ports.
    pub hosts: Vec<String>,
}

/// The roll-up.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hosts {
    pub schema: u32,
    pub hosts: Vec<Host>,
    pub switches: Vec<SwitchHosts>,
}

/// The conditions standing on a port ([`Verdicts::standing_at`]: its
/// node's unresponsive verdict too), most severe first.
fn conditions(v: &Verdicts, guid: Guid, port: u8) -> Vec<Condition> {
    Condition::ALL
        .into_iter()
        .filter(|&c| v.standing_at(guid, port, c).is_some())
        .collect()
}

fn names(c: &[Condition]) -> Vec<String> {
    c.iter().map(|c| c.name().to_string()).collect()
}

/// The hosts of `snap` (only those with a verdict when `unhealthy`), and
/// the switches with a verdict with the hosts behind them.
pub fn roll_up(snap: &Snapshot, unhealthy: bool) -> Hosts {
    let v = &snap.health;
    let mut hosts: BTreeMap<&str, Host> = BTreeMap::new();
    // Per switch GUID: the hosts cabled to it.
    let mut behind: BTreeMap<Guid, Vec<&str>> = BTreeMap::new();
    for n in snap.nodes.iter().filter(|n| n.id.node_type == NodeType::Ca) {
        let host = host_of(n.name());
        if host.is_empty() {
            continue;
        }
        for p in n.ports() {
            let c = conditions(v, n.id.guid, p.num());
            let switch = p.link.remote().and_then(|(g, port)| {
                let s = snap
                    .node(g)
                    .filter(|s| s.id.node_type == NodeType::Switch)?;
                behind.entry(g).or_default().push(host);
                Some(SwitchEnd {
                    guid: g.to_string(),
                    name: s.name().to_string(),
                    port,
                })
            });
            if switch.is_none() && c.is_empty() && p.link.remote().is_none() {
                // A port cabled to nothing and without a verdict: not
                // one of the host's links.
                continue;
            }
            let h = hosts.entry(host).or_insert_with(|| Host {
                host: host.to_string(),
                worst: None,
                ports: Vec::new(),
            });
            if let Some(w) = c.first() {
                let worse = h
                    .worst
                    .as_deref()
                    .and_then(Condition::from_name)
                    .is_none_or(|old| *w < old);
                if worse {
                    h.worst = Some(w.name().to_string());
                }
            }
            h.ports.push(HostPort {
                node_guid: n.id.guid.to_string(),
                node: n.name().to_string(),
                port: p.num(),
                conditions: names(&c),
                switch,
            });
        }
    }
    let mut switches = Vec::new();
    for (g, mut hs) in behind {
        let Some(s) = snap.node(g) else { continue };
        let mut bad: Vec<(u8, Condition)> = s
            .ports()
            .filter_map(|p| conditions(v, g, p.num()).first().map(|c| (p.num(), *c)))
            .collect();
        if bad.is_empty() {
            continue;
        }
        hs.sort_unstable();
        hs.dedup();
        let worst = bad
            .iter()
            .map(|(_, c)| *c)
            .min()
            .map(|c| c.name().to_string());
        bad.sort_unstable();
        switches.push(SwitchHosts {
            guid: g.to_string(),
            name: s.name().to_string(),
            ports_with_verdict: bad.iter().map(|(p, _)| *p).collect(),
            worst,
            hosts: hs.into_iter().map(str::to_string).collect(),
        });
    }
    Hosts {
        schema: SCHEMA,
        hosts: hosts
            .into_values()
            .filter(|h| !unhealthy || h.worst.is_some())
            .collect(),
        switches,
    }
}

/// `unhealthy=1` (only the hosts with a verdict), or nothing.
pub fn parse_query(q: &str) -> Result<bool, String> {
    match q {
        "" => Ok(false),
        "unhealthy=1" | "unhealthy=true" => Ok(true),
        "unhealthy=0" | "unhealthy=false" => Ok(false),
        _ => Err(format!(
            "`{}`: the only parameter is unhealthy=1",
            q.escape_debug()
        )),
    }
}

/// The JSON of `h`.
pub fn render(h: &Hosts) -> Vec<u8> {
    let mut out = serde_json::to_vec(h).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

pub fn parse(body: &[u8]) -> Result<Hosts, serde_json::Error> {
    serde_json::from_slice(body)
}

/// One line per host with a standing verdict on its own links: the host
/// alone, for a scheduler's drain command.
pub fn lines(h: &Hosts) -> String {
    let mut o = String::new();
    for x in h.hosts.iter().filter(|x| x.worst.is_some()) {
        o += &crate::ib::Escaped(&x.host).to_string();
        o.push('\n');
    }
    o
}

#[cfg(test)]
mod tests;
