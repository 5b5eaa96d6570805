//! `/api/events`: the event log as JSON, the schema docs/events.md
//! documents; `ibpm-agentx events` reads it back with the same types.
//! The query (`since`, `kind`, `node`, `after`, `limit`) is checked
//! whole: anything out of range is refused with the reason (a 400).

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

use crate::events::{Entry, Filter, KINDS, Kind, Log, NodeMatch, host_of};
use crate::ib::Guid;
use crate::ib::health::rfc3339;

/// The schema's version.
pub const SCHEMA: u32 = 1;
/// Events one answer holds at most.
pub const MAX_LIMIT: usize = crate::events::file::MAX_RECORDS;
/// Events an answer holds when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 1000;
/// The furthest back `since` reaches: the longest `events.max_age`.
pub const MAX_SINCE_S: u64 = 30 * 86_400;
/// The longest query string (the status report's bound).
pub use super::status::MAX_QUERY;

/// The query's keys and what each takes.
pub const QUERY_KEYS: [(&str, &str); 5] = [
    (
        "since",
        "a duration back from now (90s, 30m, 1h, 2d; at most 30d)",
    ),
    ("kind", "kind names, comma-separated"),
    ("node", "a node's GUID (0x and 16 hex digits), name or host"),
    ("after", "an event number (the events after it)"),
    ("limit", "events at most, 1 to 100000"),
];

/// `90s`, `30m`, `1h`, `2d` or plain seconds, in seconds.
pub fn parse_duration(v: &str) -> Option<u64> {
    let (num, unit) = match v.find(|c: char| !c.is_ascii_digit()) {
        Some(i) => v.split_at(i),
        None => (v, "s"),
    };
    if num.is_empty() || num.len() > 9 {
        return None;
    }
    let n: u64 = num.parse().ok()?;
    let mul = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return None,
    };
    Some(n * mul)
}

/// `%XX` and `+` decoded; None when the result is not UTF-8 or an escape
/// is cut.
fn decode(v: &str) -> Option<String> {
    let b = v.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let h = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(h, 16).ok()?);
                i += 2;
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8(out).ok()
}

/// A node as asked: a GUID when it says so (`0x`, or 16 hex digits, or
/// the colon form), else a name or a host.
pub fn node_match(v: &str) -> NodeMatch {
    let looks_guid = v.starts_with("0x")
        || v.starts_with("0X")
        || (v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit()))
        || v.matches(':').count() == 3;
    match v.parse::<Guid>() {
        Ok(g) if looks_guid => NodeMatch::Guid(g),
        _ => NodeMatch::Name(v.to_string()),
    }
}

/// The filter of a query string at wall time `now_ms`, or why it is
/// refused.
pub fn parse(q: &str, now_ms: u64) -> Result<Filter, String> {
    let mut f = Filter {
        limit: DEFAULT_LIMIT,
        ..Default::default()
    };
    for (i, k, raw) in super::status::query_pairs(q, &QUERY_KEYS)? {
        let bad = || super::status::bad_value(&QUERY_KEYS, i, raw);
        let v = decode(raw).ok_or_else(bad)?;
        match k {
            "since" => {
                let s = parse_duration(&v)
                    .filter(|s| *s <= MAX_SINCE_S)
                    .ok_or_else(bad)?;
                f.since_ms = Some(now_ms.saturating_sub(s * 1000));
            }
            "kind" => {
                for name in v.split(',') {
                    let kind = Kind::from_name(name).ok_or_else(|| {
                        let known: Vec<&str> = KINDS.iter().map(|d| d.name).collect();
                        format!(
                            "kind: `{}` is no kind; known: {}",
                            name.escape_debug(),
                            known.join(", ")
                        )
                    })?;
                    f.kinds.push(kind);
                }
            }
            "node" => {
                if v.is_empty() || v.len() > 255 {
                    return Err(bad());
                }
                f.node = Some(node_match(&v));
            }
            "after" => f.after_seq = Some(v.parse().map_err(|_| bad())?),
            _ => {
                f.limit = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=MAX_LIMIT).contains(n))
                    .ok_or_else(bad)?
            }
        }
    }
    Ok(f)
}

/// The far end of an event's link.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PeerJson<'a> {
    pub guid: String,
    pub port: u8,
    pub name: Cow<'a, str>,
}

/// One event as the JSON says it (its texts borrowed from the log's
/// entries when rendered, owned when read back).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventJson<'a> {
    pub seq: u64,
    pub time: String,
    pub time_ms: u64,
    pub sweep: u64,
    pub kind: Cow<'a, str>,
    pub title: Cow<'a, str>,
    pub node_guid: String,
    pub node: Cow<'a, str>,
    pub host: Cow<'a, str>,
    pub port: u8,
    pub peer: Option<PeerJson<'a>>,
    pub before: u64,
    pub after: u64,
    pub detail: Cow<'a, str>,
    pub subnet: Option<u16>,
    pub suppressed: bool,
    pub simulated: bool,
}

impl<'a> EventJson<'a> {
    pub fn of(e: &'a Entry) -> EventJson<'a> {
        EventJson {
            seq: e.seq,
            time: rfc3339(e.time_ms),
            time_ms: e.time_ms,
            sweep: e.sweep,
            kind: Cow::Borrowed(e.kind.name()),
            title: Cow::Borrowed(e.kind.def().title),
            node_guid: e.guid.to_string(),
            node: Cow::Borrowed(&e.name),
            host: Cow::Borrowed(host_of(&e.name)),
            port: e.port,
            peer: e.peer.as_ref().map(|(g, p, n)| PeerJson {
                guid: g.to_string(),
                port: *p,
                name: Cow::Borrowed(n),
            }),
            before: e.before,
            after: e.after,
            detail: Cow::Borrowed(&e.detail),
            subnet: e.subnet,
            suppressed: e.suppressed,
            simulated: e.simulated,
        }
    }
}

/// The answer: the events asked for, oldest first, and how many the log
/// holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventsJson<'a> {
    pub schema: u32,
    pub generated: String,
    /// Events the log holds now.
    pub held: usize,
    /// The number of the newest event answered (to ask `after=` next).
    pub last_seq: u64,
    pub events: Vec<EventJson<'a>>,
}

/// The JSON of `log`'s events `f` asks for, at `now_ms`.
pub fn render(log: Option<&Log>, f: &Filter, now_ms: u64) -> Vec<u8> {
    let (events, held) = match log {
        Some(l) => (l.query(f), l.len()),
        None => (Vec::new(), 0),
    };
    let doc = EventsJson {
        schema: SCHEMA,
        generated: rfc3339(now_ms),
        held,
        last_seq: events.last().map_or(f.after_seq.unwrap_or(0), |e| e.seq),
        events: events.iter().map(EventJson::of).collect(),
    };
    let mut out = serde_json::to_vec(&doc).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// An answer read back.
pub fn parse_answer(body: &[u8]) -> Result<EventsJson<'static>, serde_json::Error> {
    serde_json::from_slice(body)
}

/// One line per event for a terminal.
pub fn line(e: &EventJson<'_>) -> String {
    let mut s = format!("{}  {:<20} {}", e.time, e.kind, e.node);
    if e.port > 0 {
        s += &format!(" port {}", e.port);
    }
    if let Some(p) = &e.peer {
        s += &format!(" <-> {} port {}", p.name, p.port);
    }
    if !e.detail.is_empty() {
        s += &format!("  {}", e.detail);
    }
    if e.before != 0 || e.after != 0 {
        s += &format!("  ({} -> {})", e.before, e.after);
    }
    if e.suppressed {
        s += "  [trap suppressed]";
    }
    if e.simulated {
        s += "  [simulated]";
    }
    crate::ib::Escaped(&s).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Bounds, New};

    #[test]
    fn queries_are_checked_whole() {
        let f = parse(
            "since=1h&kind=port-state,node-lost&node=leaf07&limit=5",
            10_000_000,
        )
        .unwrap();
        assert_eq!(f.since_ms, Some(10_000_000 - 3_600_000));
        assert_eq!(f.kinds, [Kind::PortState, Kind::NodeLost]);
        assert_eq!(f.node, Some(NodeMatch::Name("leaf07".into())));
        assert_eq!(f.limit, 5);
        let f = parse("node=0x0002c90300001234&after=7", 0).unwrap();
        assert_eq!(f.node, Some(NodeMatch::Guid(Guid(0x0002_c903_0000_1234))));
        assert_eq!(f.after_seq, Some(7));
        let f = parse("node=node0413%20HCA-1", 0).unwrap();
        assert_eq!(f.node, Some(NodeMatch::Name("node0413 HCA-1".into())));
        for (q, says) in [
            ("since=31d", "since"),
            ("since=1y", "since"),
            ("since=", "since"),
            ("kind=nope", "no kind"),
            ("limit=0", "limit"),
            ("limit=100001", "limit"),
            ("limit=-1", "limit"),
            ("after=x", "after"),
            ("node=", "node"),
            ("node=%zz", "node"),
            ("other=1", "unknown"),
            ("limit=1&limit=2", "twice"),
            ("since", "no value"),
        ] {
            let e = parse(q, 0).unwrap_err();
            assert!(e.contains(says), "{q}: {e}");
        }
        assert!(parse(&"a".repeat(600), 0).unwrap_err().contains("512"));
    }

    #[test]
    fn the_json_reads_back() {
        let log = Log::new(Bounds::default(), None);
        log.write([New {
            kind: Some(Kind::VerdictRaised),
            time_ms: 1_700_000_000_000,
            sweep: 3,
            guid: Guid(0x10),
            name: "node0413 HCA-1",
            port: 1,
            peer: Some((Guid(0x20), 7, "leaf07")),
            after: 1,
            detail: "flapping",
            ..Default::default()
        }]);
        let body = render(Some(&log), &Filter::default(), 1_700_000_001_000);
        let back = parse_answer(&body).unwrap();
        assert_eq!(back.schema, SCHEMA);
        assert_eq!(back.held, 1);
        assert_eq!(back.last_seq, 1);
        let e = &back.events[0];
        assert_eq!((&*e.kind, &*e.host), ("verdict-raised", "node0413"));
        assert_eq!(e.peer.as_ref().unwrap().name, "leaf07");
        assert_eq!(e.time, "2023-11-14T22:13:20Z");
        assert!(line(e).contains("node0413 HCA-1 port 1 <-> leaf07 port 7  flapping"));
    }
}
