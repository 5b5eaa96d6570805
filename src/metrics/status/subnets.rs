//! The subnets of the report: each subnet the agent sweeps as its
//! snapshot describes it ([`crate::ib::subnet::SubnetView`]), and which
//! subnet a port or a node is in (by its label: the configured name, else
//! the prefix and master SM's GUID).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::fabric::cache::Snapshot;
use crate::fabric::record::NodeRecord;
use crate::ib::Guid;
use crate::ib::subnet::{SmInfo, SubnetView, prefix_text};

/// A subnet the agent sweeps.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SubnetRow {
    /// Its position among the agent's subnets, from 1 (pmSubnetIndex).
    pub index: u32,
    /// What the report names it by: the configured name, else the key
    /// (`fe80::/64@0x0002c90300a1b2c3`).
    pub label: String,
    /// The configured name (`[[umad.ports]] name`).
    pub name: Option<String>,
    /// The subnet prefix (`fe80::/64`).
    pub prefix: String,
    /// The master SM as last read (None: none answered).
    pub sm: Option<SmRow>,
    /// The local port it is swept through (`mlx5_0:1`; None: none is up).
    pub local_port: Option<String>,
    /// The other local ports on it, taken when the sweeping one goes down.
    pub standby: Vec<String>,
    pub nodes: u32,
    pub ports: u32,
    /// Its own sweeps, the seconds since its last ended (None before
    /// one), and how long that one took.
    pub sweep: u64,
    pub last_sweep_age_s: Option<f64>,
    pub sweep_duration_ms: u64,
    /// Why it is not being swept (pmSubnetSweepState's label:
    /// noLocalPort, sweepsFailing); None while it is. Its nodes get no
    /// verdict of their own meanwhile.
    #[serde(default)]
    pub not_swept: Option<String>,
}

/// A Subnet Manager as SMInfo describes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SmRow {
    pub guid: String,
    pub lid: u16,
    pub priority: u8,
    /// SMInfo's SMState: notActive, discovering, standby or master.
    pub state: String,
}

impl SmRow {
    fn of(sm: &SmInfo) -> SmRow {
        SmRow {
            guid: sm.guid.to_string(),
            lid: sm.lid,
            priority: sm.priority,
            state: sm.state.name().to_string(),
        }
    }
}

/// Whether a report of these subnets says which subnet things are in:
/// when there is more than one, or any has a name.
pub fn worth_showing(subnets: &[SubnetRow]) -> bool {
    subnets.len() > 1 || subnets.iter().any(|s| s.name.is_some())
}

/// Every subnet of `snap`, at `now` (the clock its times are on).
pub fn rows(snap: &Snapshot, now: Instant) -> Vec<SubnetRow> {
    snap.subnets.iter().map(|v| row(v, now)).collect()
}

fn row(v: &SubnetView, now: Instant) -> SubnetRow {
    SubnetRow {
        index: u32::from(v.index) + 1,
        label: v.label(),
        name: v.name.as_deref().map(str::to_string),
        prefix: prefix_text(v.key.prefix),
        sm: v.sm.as_ref().map(SmRow::of),
        local_port: v.sweeping.as_ref().map(|p| p.to_string()),
        standby: v.standby.iter().map(|p| p.to_string()).collect(),
        nodes: v.nodes,
        ports: v.ports,
        sweep: v.sweep,
        last_sweep_age_s: v
            .swept
            .map(|t| now.saturating_duration_since(t).as_millis() as f64 / 1000.0),
        sweep_duration_ms: v.duration_ms,
        not_swept: (!v.sweep_state.is_swept()).then(|| v.sweep_state.label().to_string()),
    }
}

/// The label of subnet `index` of `snap` (None: the snapshot has no such
/// subnet, e.g. before its sweeper said which it sweeps).
fn label(snap: &Snapshot, index: u8) -> Option<String> {
    snap.subnets.get(usize::from(index)).map(SubnetView::label)
}

/// The subnet port `port` of node `guid` is swept in.
pub fn of_port(snap: &Snapshot, guid: Guid, port: u8) -> Option<String> {
    let p = snap.node(guid)?.port(port)?;
    label(snap, p.subnet)
}

/// The subnets a node's ports are swept in, each once, in their order: a
/// node seen in two subnets is in both.
pub fn of_node(snap: &Snapshot, n: &NodeRecord) -> Vec<String> {
    let mut seen: Vec<u8> = n.ports().map(|p| p.subnet).collect();
    seen.sort_unstable();
    seen.dedup();
    seen.into_iter().filter_map(|i| label(snap, i)).collect()
}
