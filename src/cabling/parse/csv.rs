//! A cabling plan as a CSV table, in the columns of the point-to-point
//! ("P2P") sheet of NVIDIA's cluster planning and UFM's Cable Validation
//! Tool: one cable per row, an A side and a Z side, each a node and a
//! port, optionally the node's type, and the link's width and speed.
//!
//! The first line that is neither blank nor a `#` comment is the header;
//! it names the columns ([`COLUMNS`]: case, blanks, `-` and `_` do not
//! matter, so `A Node`, `a_node` and `A-NODE` are one name) and sets the
//! separator (`,`, else `;`, else a tab: the first of them it holds).
//! Other columns (rack, U, cable ID, ...) are ignored. Fields may be
//! quoted (`"leaf 07"`, `""` for a quote inside). Rows whose cells are
//! all empty and `#` comment lines are skipped.
//!
//! A port is
//! - `N`, a port number (1..255): on a switch, or on a node named by its
//!   NodeDescription or map name;
//! - `C/S`, a switch's cage and port in it (`1/2`): port
//!   (C - 1) x [`PORTS_PER_CAGE`] + S, as Quantum-2 switches number the
//!   two ports of each OSFP cage;
//! - on a node whose type is an adapter (`Host`, `HCA`, `CA`, `Server`) and
//!   whose name is a host name (no blank), `N` is the host's Nth adapter:
//!   node `"<host> mlx5_<N-1>"`, port 1 (the NodeDescription rdma-core
//!   gives adapters, "%h %d").
//!
//! Refused, with the line and the reason: a row without an A or Z node
//! or port, a bad port, width, speed or type, a cable from a port to
//! itself, a port listed twice (the same cable twice, or one port cabled
//! to two peers), one node given two types.

use std::collections::HashMap;
use std::sync::Arc;

use super::{PlanError, bad, check_name, excerpt};
use crate::ib::cabling::{NodeRef, Plan, PlanEnd, PlanSource, PlannedLink, PlannedNode};
use crate::ib::{LinkSpeed, LinkWidth, NodeType};

/// The ports of one switch cage (`C/S`).
pub const PORTS_PER_CAGE: u32 = 2;

/// The most columns a row may have.
const MAX_COLUMNS: usize = 256;

/// A column the parser reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Col {
    ANode,
    APort,
    AType,
    ZNode,
    ZPort,
    ZType,
    Width,
    Speed,
}

/// Every column read, with the header names it goes by (lower case,
/// without blanks, `-` or `_`).
pub const COLUMNS: &[(Col, &[&str])] = &[
    (
        Col::ANode,
        &[
            "anode",
            "aside",
            "aname",
            "ahost",
            "ahostname",
            "adevice",
            "startdevice",
            "sourcedevice",
            "srcdevice",
            "fromnode",
            "fromdevice",
        ],
    ),
    (
        Col::APort,
        &[
            "aport",
            "asideport",
            "startport",
            "sourceport",
            "srcport",
            "fromport",
        ],
    ),
    (
        Col::AType,
        &[
            "atype",
            "asidetype",
            "startdevicetype",
            "sourcedevicetype",
            "fromtype",
        ],
    ),
    (
        Col::ZNode,
        &[
            "znode",
            "zside",
            "zname",
            "zhost",
            "zhostname",
            "zdevice",
            "enddevice",
            "destinationdevice",
            "dstdevice",
            "tonode",
            "todevice",
        ],
    ),
    (
        Col::ZPort,
        &[
            "zport",
            "zsideport",
            "endport",
            "destinationport",
            "dstport",
            "toport",
        ],
    ),
    (
        Col::ZType,
        &[
            "ztype",
            "zsidetype",
            "enddevicetype",
            "destinationdevicetype",
            "totype",
        ],
    ),
    (Col::Width, &["width", "linkwidth"]),
    (Col::Speed, &["speed", "linkspeed"]),
];

/// The type words of a node: adapters, then switches.
const ADAPTER_WORDS: &[&str] = &["host", "hca", "ca", "server", "adapter"];
const SWITCH_WORDS: &[&str] = &["switch", "sw"];

fn normalize(h: &str) -> String {
    h.chars()
        .filter(|c| !c.is_whitespace() && *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The fields of one line, split at `sep` outside quotes.
fn fields(line: usize, text: &str, sep: char) -> Result<Vec<String>, PlanError> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    cur.push('"');
                } else {
                    quoted = false;
                }
            } else {
                cur.push(c);
            }
        } else if c == '"' && cur.trim().is_empty() && !was_quoted {
            cur.clear();
            quoted = true;
            was_quoted = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur).trim().to_string());
            was_quoted = false;
            if out.len() >= MAX_COLUMNS {
                return bad(line, format!("more than {MAX_COLUMNS} columns"));
            }
        } else if was_quoted && !c.is_whitespace() {
            return bad(line, "text after a closing quote");
        } else {
            cur.push(c);
        }
    }
    if quoted {
        return bad(line, "a quote is not closed on its line");
    }
    out.push(cur.trim().to_string());
    Ok(out)
}

/// Where each column read is in the header's fields.
struct Header {
    sep: char,
    at: HashMap<Col, usize>,
}

fn header(line: usize, text: &str) -> Result<Header, PlanError> {
    let sep = [',', ';', '\t']
        .into_iter()
        .find(|s| text.contains(*s))
        .unwrap_or(',');
    let mut at = HashMap::new();
    for (i, f) in fields(line, text, sep)?.iter().enumerate() {
        let name = normalize(f);
        let col = COLUMNS
            .iter()
            .find(|(_, names)| names.contains(&name.as_str()));
        if let Some((col, _)) = col
            && at.insert(*col, i).is_some()
        {
            return bad(line, format!("the header names column `{f}` twice"));
        }
    }
    for need in [Col::ANode, Col::APort, Col::ZNode, Col::ZPort] {
        if !at.contains_key(&need) {
            let names = COLUMNS
                .iter()
                .find(|(c, _)| *c == need)
                .map_or(&[][..], |(_, n)| n);
            return bad(
                line,
                format!(
                    "the header has no {} column (one of: {}); a cabling table's first line names its columns",
                    side_word(need),
                    names.join(", ")
                ),
            );
        }
    }
    Ok(Header { sep, at })
}

fn side_word(c: Col) -> &'static str {
    match c {
        Col::ANode => "A-side node",
        Col::APort => "A-side port",
        Col::AType => "A-side type",
        Col::ZNode => "Z-side node",
        Col::ZPort => "Z-side port",
        Col::ZType => "Z-side type",
        Col::Width => "width",
        Col::Speed => "speed",
    }
}

fn node_type(line: usize, side: &str, t: &str) -> Result<Option<NodeType>, PlanError> {
    let w = normalize(t);
    if w.is_empty() {
        Ok(None)
    } else if ADAPTER_WORDS.contains(&w.as_str()) {
        Ok(Some(NodeType::Ca))
    } else if SWITCH_WORDS.contains(&w.as_str()) {
        Ok(Some(NodeType::Switch))
    } else {
        bad(
            line,
            format!(
                "unknown {side}-side type `{}` (known: {}, {})",
                excerpt(t),
                ADAPTER_WORDS.join(", "),
                SWITCH_WORDS.join(", ")
            ),
        )
    }
}

fn number(s: &str) -> Option<u32> {
    if s.is_empty() || s.len() > 9 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// One end of a row: its node's name and port.
fn end(
    line: usize,
    side: &str,
    node: &str,
    port: &str,
    ty: Option<NodeType>,
) -> Result<(Arc<str>, u8), PlanError> {
    if node.is_empty() {
        return bad(line, format!("no {side}-side node"));
    }
    check_name(line, node)?;
    if port.is_empty() {
        return bad(
            line,
            format!("no {side}-side port of \"{}\"", excerpt(node)),
        );
    }
    let bad_port = || {
        bad(
            line,
            format!(
                "bad {side}-side port `{}` of \"{}\": a number 1..255, or a switch's cage/port (1/2)",
                excerpt(port),
                excerpt(node)
            ),
        )
    };
    if let Some((c, s)) = port.split_once('/') {
        if ty == Some(NodeType::Ca) {
            return bad(
                line,
                format!(
                    "{side}-side port `{}` of \"{}\": a cage/port on an adapter",
                    excerpt(port),
                    excerpt(node)
                ),
            );
        }
        let (Some(c), Some(s)) = (number(c), number(s)) else {
            return bad_port();
        };
        if c == 0 || s == 0 || s > PORTS_PER_CAGE {
            return bad(
                line,
                format!(
                    "bad {side}-side port `{port}` of \"{}\": cages count from 1, and a cage has ports 1..{PORTS_PER_CAGE}",
                    excerpt(node)
                ),
            );
        }
        let n = (c - 1) * PORTS_PER_CAGE + s;
        return match u8::try_from(n) {
            Ok(p) => Ok((node.into(), p)),
            Err(_) => bad(
                line,
                format!("{side}-side port `{port}` is port {n}, beyond 255"),
            ),
        };
    }
    let n = match number(port) {
        Some(n) if (1..=255).contains(&n) => n as u8,
        _ => return bad_port(),
    };
    if ty == Some(NodeType::Ca) && !node.contains(char::is_whitespace) {
        let device = format!("{node} mlx5_{}", n - 1);
        check_name(line, &device)?;
        return Ok((device.into(), 1));
    }
    Ok((node.into(), n))
}

fn width(line: usize, s: &str) -> Result<Option<LinkWidth>, PlanError> {
    if s.is_empty() {
        return Ok(None);
    }
    let t = s.trim_end_matches(['x', 'X']);
    LinkWidth::ALL
        .iter()
        .copied()
        .find(|w| w.name().trim_end_matches('x') == t)
        .map(Some)
        .map_or_else(
            || {
                bad(
                    line,
                    format!("bad width `{}` (1x, 2x, 4x, 8x or 12x)", excerpt(s)),
                )
            },
            Ok,
        )
}

fn speed(line: usize, s: &str) -> Result<Option<LinkSpeed>, PlanError> {
    if s.is_empty() {
        return Ok(None);
    }
    LinkSpeed::ALL
        .iter()
        .copied()
        .find(|v| v.name().eq_ignore_ascii_case(s))
        .map(Some)
        .map_or_else(
            || {
                let known: Vec<&str> = LinkSpeed::ALL.iter().map(|v| v.name()).collect();
                bad(
                    line,
                    format!("bad speed `{}` (one of {})", excerpt(s), known.join(", ")),
                )
            },
            Ok,
        )
}

/// A node's name and a port of it.
type End = (Arc<str>, u8);

/// What the table has so far.
#[derive(Default)]
struct Table {
    nodes: Vec<PlannedNode>,
    by_name: HashMap<Arc<str>, usize>,
    /// Each cabled port: its row's line and its peer.
    ports: HashMap<End, (u32, End)>,
    links: Vec<PlannedLink>,
}

impl Table {
    fn node(
        &mut self,
        line: usize,
        name: &Arc<str>,
        ty: Option<NodeType>,
    ) -> Result<(), PlanError> {
        match self.by_name.get(name) {
            Some(&i) => {
                let n = &mut self.nodes[i];
                match (n.node_type, ty) {
                    (Some(a), Some(b)) if a != b => {
                        let word = |t: NodeType| {
                            if t == NodeType::Switch {
                                "a switch"
                            } else {
                                "an adapter"
                            }
                        };
                        return bad(
                            line,
                            format!(
                                "\"{}\" is {} on line {} and {} here",
                                excerpt(name),
                                word(a),
                                n.line,
                                word(b)
                            ),
                        );
                    }
                    (None, Some(b)) => n.node_type = Some(b),
                    _ => {}
                }
            }
            None => {
                self.by_name.insert(Arc::clone(name), self.nodes.len());
                self.nodes.push(PlannedNode {
                    node: NodeRef::Name(Arc::clone(name)),
                    node_type: ty,
                    name: Some(Arc::clone(name)),
                    line: line as u32,
                });
            }
        }
        Ok(())
    }

    fn cable(
        &mut self,
        line: usize,
        a: (Arc<str>, u8),
        z: (Arc<str>, u8),
    ) -> Result<(), PlanError> {
        if a == z {
            return bad(
                line,
                format!("{}/{} is cabled to itself", excerpt(&a.0), a.1),
            );
        }
        for (this, peer) in [(&a, &z), (&z, &a)] {
            if let Some((at, (pn, pp))) = self.ports.get(this) {
                return if (pn, *pp) == (&peer.0, peer.1) {
                    bad(
                        line,
                        format!(
                            "the cable {}/{} - {}/{} is listed twice (line {at})",
                            excerpt(&a.0),
                            a.1,
                            excerpt(&z.0),
                            z.1
                        ),
                    )
                } else {
                    bad(
                        line,
                        format!(
                            "port {}/{} is listed twice: cabled to {}/{} on line {at} and to {}/{} here",
                            excerpt(&this.0),
                            this.1,
                            excerpt(pn),
                            pp,
                            excerpt(&peer.0),
                            peer.1
                        ),
                    )
                };
            }
        }
        self.ports.insert(a.clone(), (line as u32, z.clone()));
        self.ports.insert(z.clone(), (line as u32, a.clone()));
        Ok(())
    }
}

/// Parse a cabling table.
pub fn parse(text: &str) -> Result<Plan, PlanError> {
    let mut head: Option<Header> = None;
    let mut t = Table::default();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let raw = raw.trim_end_matches('\r');
        let trimmed = raw.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let Some(h) = &head else {
            head = Some(header(line, raw)?);
            continue;
        };
        let f = fields(line, raw, h.sep)?;
        if f.iter().all(String::is_empty) {
            continue;
        }
        let cell = |c: Col| {
            h.at.get(&c)
                .and_then(|&i| f.get(i))
                .map_or("", String::as_str)
        };
        let a_type = node_type(line, "A", cell(Col::AType))?;
        let z_type = node_type(line, "Z", cell(Col::ZType))?;
        let a = end(line, "A", cell(Col::ANode), cell(Col::APort), a_type)?;
        let z = end(line, "Z", cell(Col::ZNode), cell(Col::ZPort), z_type)?;
        let width = width(line, cell(Col::Width))?;
        let speed = speed(line, cell(Col::Speed))?;
        t.node(line, &a.0, a_type)?;
        t.node(line, &z.0, z_type)?;
        t.cable(line, a.clone(), z.clone())?;
        let (a, z) = if a <= z { (a, z) } else { (z, a) };
        t.links.push(PlannedLink {
            a: PlanEnd {
                node: NodeRef::Name(a.0),
                port: a.1,
            },
            z: PlanEnd {
                node: NodeRef::Name(z.0),
                port: z.1,
            },
            width,
            speed,
            line: line as u32,
        });
    }
    if head.is_none() {
        return bad(0, "no header and no cables: an empty plan");
    }
    Ok(Plan {
        source: PlanSource::Cabling,
        nodes: t.nodes,
        links: t.links,
    })
}
