//! The status report: what is wrong now, from one snapshot and the
//! verdicts it carries ([`crate::ib::health`]), pure (the times are passed
//! in). The status page ([`super::page`]), `/api/health`
//! ([`super::health_api`]) and `ibpm-agentx health` show this one report;
//! none of them computes a verdict.
//!
//! Most severe first: the agent itself, the nodes that do not answer, the
//! unhealthy links (both ends, each condition with since when and how
//! many times), the degraded links, and the worst ports by error rate and
//! by congestion. Every section holds at most [`MAX_ROWS`] rows and says
//! how many there are in all. The subnets the agent sweeps
//! ([`subnets`]) come with it, and every node and link end says which
//! subnet it is in.

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::fabric::cache::Snapshot;
use crate::fabric::hc::HC;
use crate::fabric::record::NodeRecord;
use crate::ib::Guid;
use crate::ib::health::{CONDITIONS, Condition, Mark, PortVerdict, Verdicts, rfc3339};
use crate::mib::rate::congestion_hundredths;
use crate::mib::read::port_name;

pub mod subnets;

pub use subnets::{SmRow, SubnetRow};

/// Rows a section shows at most.
pub const MAX_ROWS: usize = 200;
/// The worst ports a ranking shows unless asked otherwise.
pub const DEFAULT_TOP: usize = 20;
/// The version of the report's JSON schema (docs/health.md): raised when a
/// field changes meaning or goes.
pub const SCHEMA: u32 = 1;
/// The longest query string accepted.
pub const MAX_QUERY: usize = 512;

/// The order of the link sections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Sort {
    /// The most severe condition first, then the newest verdict.
    #[default]
    Severity,
    /// The newest verdict first.
    Since,
    /// The most flaps first.
    Flaps,
    /// By the first end's name.
    Name,
}

impl Sort {
    pub const ALL: [Sort; 4] = [Sort::Severity, Sort::Since, Sort::Flaps, Sort::Name];

    pub fn name(self) -> &'static str {
        match self {
            Sort::Severity => "severity",
            Sort::Since => "since",
            Sort::Flaps => "flaps",
            Sort::Name => "name",
        }
    }

    pub fn from_name(s: &str) -> Option<Sort> {
        Sort::ALL.into_iter().find(|x| x.name() == s)
    }
}

/// What a reader asked for: `condition`, `sort`, `limit` and `top`, each
/// at most once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Query {
    /// Only the links with this condition.
    pub condition: Option<Condition>,
    pub sort: Sort,
    /// Rows per section (1 to [`MAX_ROWS`]).
    pub limit: usize,
    /// Ports per ranking (0 to [`MAX_ROWS`]).
    pub top: usize,
}

impl Default for Query {
    fn default() -> Query {
        Query {
            condition: None,
            sort: Sort::Severity,
            limit: MAX_ROWS,
            top: DEFAULT_TOP,
        }
    }
}

/// The query's keys and what each takes.
pub const QUERY_KEYS: [(&str, &str); 4] = [
    ("condition", "a condition's name"),
    ("sort", "severity, since, flaps or name"),
    ("limit", "rows per section, 1 to 200"),
    ("top", "ports per ranking, 0 to 200"),
];

impl Query {
    /// Parses a query string. Every key, value and bound is checked: an
    /// error is a sentence for a 400.
    pub fn parse(q: &str) -> Result<Query, String> {
        let mut out = Query::default();
        for (i, k, v) in query_pairs(q, &QUERY_KEYS)? {
            let bad = || bad_value(&QUERY_KEYS, i, v);
            match k {
                "condition" => out.condition = Some(Condition::from_name(v).ok_or_else(bad)?),
                "sort" => out.sort = Sort::from_name(v).ok_or_else(bad)?,
                "limit" => {
                    out.limit = number(v)
                        .filter(|n| (1..=MAX_ROWS).contains(n))
                        .ok_or_else(bad)?
                }
                _ => out.top = number(v).filter(|n| *n <= MAX_ROWS).ok_or_else(bad)?,
            }
        }
        Ok(out)
    }

    /// The query string of this query, with only what differs from the
    /// default.
    pub fn to_query_string(&self) -> String {
        let d = Query::default();
        let mut parts = Vec::new();
        if let Some(c) = self.condition {
            parts.push(format!("condition={}", c.name()));
        }
        if self.sort != d.sort {
            parts.push(format!("sort={}", self.sort.name()));
        }
        if self.limit != d.limit {
            parts.push(format!("limit={}", self.limit));
        }
        if self.top != d.top {
            parts.push(format!("top={}", self.top));
        }
        parts.join("&")
    }
}

/// The pairs of a query string (at most [`MAX_QUERY`] bytes), each key
/// one of `keys` (its name, what it takes) given at most once: the key's
/// index in `keys`, the key and its value as written. Every error is a
/// sentence for a 400.
pub fn query_pairs<'q>(
    q: &'q str,
    keys: &[(&str, &str)],
) -> Result<Vec<(usize, &'q str, &'q str)>, String> {
    if q.len() > MAX_QUERY {
        return Err(format!(
            "the query is {} bytes long; at most {MAX_QUERY}",
            q.len()
        ));
    }
    let mut seen = vec![false; keys.len()];
    let mut out = Vec::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!("`{}` has no value", pair.escape_debug()));
        };
        let Some(i) = keys.iter().position(|(n, _)| *n == k) else {
            let known: Vec<&str> = keys.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "unknown parameter `{}`; known: {}",
                k.escape_debug(),
                known.join(", ")
            ));
        };
        if std::mem::replace(&mut seen[i], true) {
            return Err(format!("`{k}` is given twice"));
        }
        out.push((i, k, v));
    }
    Ok(out)
}

/// The error of a value `v` of key `keys[i]` that is not what the key
/// takes.
pub fn bad_value(keys: &[(&str, &str)], i: usize, v: &str) -> String {
    let (k, takes) = keys[i];
    format!("{k}: `{}` is not {takes}", v.escape_debug())
}

/// A decimal number of at most 4 digits.
fn number(v: &str) -> Option<usize> {
    (!v.is_empty() && v.len() <= 4 && v.bytes().all(|b| b.is_ascii_digit()))
        .then(|| v.parse().ok())
        .flatten()
}

/// The whole report.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Report {
    /// The version of this schema ([`SCHEMA`]).
    pub schema: u32,
    /// `healthy`, `unhealthy` (a verdict stands or a node does not
    /// answer) or `stale` (the agent is not sweeping).
    pub status: Status,
    /// When the report was made (Unix milliseconds, and RFC 3339).
    pub generated_ms: u64,
    pub generated: String,
    pub agent: Agent,
    /// Ports per condition with a verdict, most severe first.
    pub conditions: Vec<ConditionCount>,
    pub unreachable_nodes: Section<NodeRow>,
    pub unhealthy_links: Section<LinkRow>,
    pub degraded_links: Section<LinkRow>,
    pub worst_error_ports: Section<PortRate>,
    pub worst_congested_ports: Section<PortRate>,
    /// The subnets the agent sweeps, by index (empty while its sweeper has
    /// not said which it sweeps).
    #[serde(default)]
    pub subnets: Vec<SubnetRow>,
}

impl Report {
    /// Whether the views say which subnet things are in: with more than
    /// one subnet, or a named one.
    pub fn shows_subnets(&self) -> bool {
        subnets::worth_showing(&self.subnets)
    }
}

/// What the report says of the fabric as a whole; in JSON its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// No verdict stands and every node answers.
    Healthy,
    /// A verdict stands or a node does not answer.
    Unhealthy,
    /// The agent is not sweeping: no sweep yet, or the last one too old.
    Stale,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Healthy => "healthy",
            Status::Unhealthy => "unhealthy",
            Status::Stale => "stale",
        }
    }
}

/// The agent itself.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Agent {
    pub version: String,
    /// The last sweep published (0: none yet).
    pub sweep: u64,
    /// Seconds since it was published (None before the first).
    pub last_sweep_age_s: Option<f64>,
    pub sweep_interval_s: f64,
    pub sweep_duration_ms: u64,
    pub mads: u64,
    pub timeouts: u64,
    pub nodes: usize,
    pub nodes_reachable: usize,
    pub ports: usize,
    /// The sweep the verdicts are of (0: none yet), and how long the
    /// evaluation took.
    pub evaluated_sweep: u64,
    pub evaluation_us: u64,
    /// No sweep yet, or the last older than three intervals and a minute
    /// ([`crate::service::stale`]).
    pub stale: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConditionCount {
    pub condition: Condition,
    pub title: String,
    pub ports: usize,
}

/// At most [`Query::limit`] rows of `total`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Section<T> {
    pub total: usize,
    /// Rows not shown.
    pub more: usize,
    pub rows: Vec<T>,
}

impl<T> Section<T> {
    fn of(mut all: Vec<T>, limit: usize) -> Section<T> {
        let total = all.len();
        all.truncate(limit);
        Section {
            total,
            more: total - all.len(),
            rows: all,
        }
    }
}

/// A node that does not answer: unreachable now, or held unresponsive.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct NodeRow {
    pub guid: String,
    pub name: String,
    pub reachable: bool,
    /// Sweeps in a row it did not answer.
    pub failed_sweeps: u32,
    /// The unresponsive verdict, with the sweeps missed of the last
    /// counted.
    pub unresponsive: Option<Verdict>,
    pub missed: Option<u8>,
    pub of: Option<u8>,
    /// The labels of the subnets its ports are swept in (a node seen in
    /// two subnets is in both).
    #[serde(default)]
    pub subnets: Vec<String>,
}

/// One end of a link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct End {
    pub guid: String,
    pub port: u8,
    /// pmPortName: `DESCRIPTION/PORT`.
    pub name: String,
    /// The label of the subnet the port is swept in.
    #[serde(default)]
    pub subnet: Option<String>,
}

/// One standing verdict.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub condition: Condition,
    pub title: String,
    pub since_ms: u64,
    pub since: String,
    pub last_seen_ms: u64,
    /// The condition holds at the latest evaluation (false: the verdict
    /// stands in its recovery window).
    pub holding: bool,
    /// Times it was raised.
    pub raised: u32,
}

/// A link with standing verdicts: both ends (the second when known).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRow {
    pub a: End,
    pub b: Option<End>,
    /// Most severe first.
    pub verdicts: Vec<Verdict>,
    /// Flaps counted on the link (the larger of its ends' totals).
    pub flaps: u64,
    pub last_flap_ms: Option<u64>,
}

/// A port in a ranking.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PortRate {
    pub port: End,
    pub peer: Option<End>,
    /// Errors per second (every error counter), or the share of the time
    /// spent waiting to transmit, in percent.
    pub value: f64,
}

/// The end `(guid, port)` as the snapshot names it.
fn end(snap: &Snapshot, guid: Guid, port: u8) -> End {
    End {
        guid: guid.to_string(),
        port,
        name: snap
            .node(guid)
            .map_or_else(|| format!("{guid}/{port}"), |n| port_name(n, port, snap)),
        subnet: subnets::of_port(snap, guid, port),
    }
}

fn node_name(n: &NodeRecord) -> String {
    let d = n.name().trim();
    if d.is_empty() {
        n.id.guid.to_string()
    } else {
        d.to_string()
    }
}

/// The verdicts standing on a port ([`Verdicts::standing`]: its marks,
/// and its node's unresponsive one), with the times each was raised.
fn marks(h: &Verdicts, v: &PortVerdict) -> Vec<(Condition, Mark, u32)> {
    Condition::ALL
        .into_iter()
        .filter_map(|c| {
            let m = h.standing(v, c)?;
            // Shown on the wall clock.
            let m = Mark {
                since: h.wall(m.since),
                last_seen: h.wall(m.last_seen),
                ..m
            };
            Some((c, m, h.raised(v, c)))
        })
        .collect()
}

fn verdict(c: Condition, m: Mark, raised: u32) -> Verdict {
    Verdict {
        condition: c,
        title: c.def().title.to_string(),
        since_ms: m.since,
        since: rfc3339(m.since),
        last_seen_ms: m.last_seen,
        holding: m.holding,
        raised,
    }
}

/// The links with standing verdicts, each once: both ends' verdicts
/// joined (the earliest since, the latest seen).
fn links(snap: &Snapshot, h: &Verdicts) -> Vec<LinkRow> {
    let mut out = Vec::new();
    for v in h.ports.iter() {
        let mine = marks(h, v);
        if mine.is_empty() {
            continue;
        }
        let other = v.peer.and_then(|(g, p)| h.port(g, p));
        let theirs = other.map(|o| marks(h, o)).unwrap_or_default();
        // The end that sorts first writes the row when both have verdicts.
        if let Some(o) = other
            && !theirs.is_empty()
            && o.peer == Some((v.guid, v.port))
            && (o.guid, o.port) < (v.guid, v.port)
        {
            continue;
        }
        let mut joined: Vec<(Condition, Mark, u32)> = Vec::new();
        for (c, m, n) in mine.into_iter().chain(theirs) {
            match joined.iter_mut().find(|(d, _, _)| *d == c) {
                Some((_, j, k)) => {
                    j.since = j.since.min(m.since);
                    j.last_seen = j.last_seen.max(m.last_seen);
                    j.holding |= m.holding;
                    *k = (*k).max(n);
                }
                None => joined.push((c, m, n)),
            }
        }
        joined.sort_by_key(|(c, _, _)| *c);
        out.push(LinkRow {
            a: end(snap, v.guid, v.port),
            b: v.peer.map(|(g, p)| end(snap, g, p)),
            verdicts: joined
                .into_iter()
                .map(|(c, m, n)| verdict(c, m, n))
                .collect(),
            flaps: v.flaps.max(other.map_or(0, |o| o.flaps)),
            last_flap_ms: v
                .last_flap
                .max(other.and_then(|o| o.last_flap))
                .map(|t| h.wall(t)),
        });
    }
    out
}

fn has(l: &LinkRow, c: Condition) -> bool {
    l.verdicts.iter().any(|v| v.condition == c)
}

/// The most severe condition of the link (none: after every one).
fn worst(l: &LinkRow) -> Option<Condition> {
    l.verdicts.iter().map(|v| v.condition).min()
}

fn newest(l: &LinkRow) -> u64 {
    l.verdicts.iter().map(|v| v.since_ms).max().unwrap_or(0)
}

fn sort_links(rows: &mut [LinkRow], sort: Sort) {
    let key = |l: &LinkRow| (l.a.guid.clone(), l.a.port);
    match sort {
        Sort::Severity => rows.sort_by(|x, y| {
            (
                worst(x).is_none(),
                worst(x),
                std::cmp::Reverse(newest(x)),
                key(x),
            )
                .cmp(&(
                    worst(y).is_none(),
                    worst(y),
                    std::cmp::Reverse(newest(y)),
                    key(y),
                ))
        }),
        Sort::Since => rows.sort_by(|x, y| (newest(y), key(x)).cmp(&(newest(x), key(y)))),
        Sort::Flaps => rows.sort_by(|x, y| (y.flaps, key(x)).cmp(&(x.flaps, key(y)))),
        Sort::Name => rows.sort_by(|x, y| (&x.a.name, x.a.port).cmp(&(&y.a.name, y.a.port))),
    }
}

/// A ranked port: its value and where it is.
type Ranked = (f64, Guid, u8);

/// The two rankings of the reachable nodes' ports, in one pass: by error
/// rate (every error counter, per second) and by congestion (the share of
/// the time spent waiting, in percent). A port whose value is 0 or unknown
/// is not ranked.
fn rankings(snap: &Snapshot, top: usize) -> (Section<PortRate>, Section<PortRate>) {
    let error_slots: Vec<usize> = (0..HC.len()).filter(|&k| HC[k].error).collect();
    let (mut errors, mut congested): (Vec<Ranked>, Vec<Ranked>) = (Vec::new(), Vec::new());
    for n in snap.nodes.iter().filter(|n| n.reachable) {
        let rule = n.tick_rule();
        for p in n.ports().filter(|p| p.rates.valid != 0) {
            let e: f64 = error_slots.iter().filter_map(|&k| p.rates.get(k)).sum();
            if e > 0.0 && e.is_finite() {
                errors.push((e, n.id.guid, p.num()));
            }
            if let Some(w) = p.congestion(&rule) {
                let c = f64::from(congestion_hundredths(w)) / 100.0;
                if c > 0.0 {
                    congested.push((c, n.id.guid, p.num()));
                }
            }
        }
    }
    (ranked(snap, errors, top), ranked(snap, congested, top))
}

/// The `top` highest of `all`, with their ends named, and how many there
/// were.
fn ranked(snap: &Snapshot, mut all: Vec<Ranked>, top: usize) -> Section<PortRate> {
    let total = all.len();
    let order = |a: &Ranked, b: &Ranked| b.0.total_cmp(&a.0).then((a.1, a.2).cmp(&(b.1, b.2)));
    if top < all.len() && top > 0 {
        all.select_nth_unstable_by(top - 1, order);
    }
    all.truncate(top);
    all.sort_by(order);
    let rows = all
        .into_iter()
        .map(|(x, g, p)| PortRate {
            port: end(snap, g, p),
            peer: snap
                .node(g)
                .and_then(|n| n.port(p))
                .and_then(|r| r.link.remote())
                .map(|(rg, rp)| end(snap, rg, rp)),
            value: x,
        })
        .collect::<Vec<_>>();
    Section {
        total,
        more: total - rows.len(),
        rows,
    }
}

/// The report of `snap` at `now_ms` (wall clock) and `now` (the
/// monotonic clock the snapshot's times are on).
pub fn report(snap: &Snapshot, now_ms: u64, now: Instant, q: &Query) -> Report {
    let h = &*snap.health;
    let age = snap.taken.map(|t| now.saturating_duration_since(t));
    let stale = age.is_none_or(|a| crate::service::stale(a, snap.interval));
    let agent = Agent {
        version: env!("CARGO_PKG_VERSION").to_string(),
        sweep: snap.sweep,
        last_sweep_age_s: age.map(|a| (a.as_millis() as f64) / 1000.0),
        sweep_interval_s: snap.interval.as_secs_f64(),
        sweep_duration_ms: snap.stats.duration_ms,
        mads: snap.stats.mads,
        timeouts: snap.stats.timeouts,
        nodes: snap.nodes.len(),
        nodes_reachable: snap.reachable,
        ports: snap.nodes.iter().map(|n| n.port_count()).sum(),
        evaluated_sweep: h.sweep,
        evaluation_us: h.took_us,
        stale,
    };
    let counts = h.counts();
    let conditions = CONDITIONS
        .iter()
        .zip(counts)
        .map(|(d, n)| ConditionCount {
            condition: d.condition,
            title: d.title.to_string(),
            ports: n,
        })
        .collect();
    let mut nodes: Vec<NodeRow> = snap
        .nodes
        .iter()
        .filter_map(|n| {
            let v = h.node(n.id.guid);
            let unresponsive = h.unresponsive(n.id.guid);
            if n.reachable && unresponsive.is_none() {
                return None;
            }
            Some(NodeRow {
                guid: n.id.guid.to_string(),
                name: node_name(n),
                reachable: n.reachable,
                failed_sweeps: n.failed_sweeps,
                unresponsive: unresponsive
                    .map(|m| verdict(Condition::Unresponsive, m, v.map_or(0, |v| v.raised))),
                missed: v.map(|v| v.missed),
                of: v.map(|v| v.of),
                subnets: subnets::of_node(snap, n),
            })
        })
        .collect();
    nodes.sort_by(|x, y| {
        (x.reachable, std::cmp::Reverse(x.failed_sweeps), &x.name).cmp(&(
            y.reachable,
            std::cmp::Reverse(y.failed_sweeps),
            &y.name,
        ))
    });
    let mut all = links(snap, h);
    if let Some(c) = q.condition {
        all.retain(|l| has(l, c));
    }
    sort_links(&mut all, q.sort);
    let (mut unhealthy, mut degraded) = (Vec::new(), Vec::new());
    for l in all {
        if has(&l, Condition::Degraded) {
            degraded.push(l.clone());
        }
        if l.verdicts
            .iter()
            .any(|v| v.condition != Condition::Degraded)
        {
            unhealthy.push(l);
        }
    }
    let (errors, congested) = rankings(snap, q.top);
    let any_verdict = !unhealthy.is_empty() || !degraded.is_empty();
    let status = if stale {
        Status::Stale
    } else if any_verdict || !nodes.is_empty() {
        Status::Unhealthy
    } else {
        Status::Healthy
    };
    Report {
        schema: SCHEMA,
        status,
        generated_ms: now_ms,
        generated: rfc3339(now_ms),
        agent,
        conditions,
        unreachable_nodes: Section::of(nodes, q.limit),
        unhealthy_links: Section::of(unhealthy, q.limit),
        degraded_links: Section::of(degraded, q.limit),
        worst_error_ports: errors,
        worst_congested_ports: congested,
        subnets: subnets::rows(snap, now),
    }
}

#[cfg(test)]
mod tests;
