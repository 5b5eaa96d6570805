//! The parser of topology files (ibnetdiscover's output and ibsim's
//! format; see the parent module for the format).

use std::collections::HashMap;

use super::{Topology, TopologyError, err};
use crate::ib::lines::LineError;
use crate::ib::planes::{self, PrefixDecl};
use crate::ib::{
    Fabric, Guid, LinkSpeed, LinkWidth, Node, NodeIdentity, NodeType, PhysState, Port, PortState,
};

// Enabled-set bits, as in PortInfo (and ibsim).
const W_1X: u32 = LinkWidth::X1.code() as u32;
const W_4X: u32 = LinkWidth::X4.code() as u32;
const W_8X: u32 = LinkWidth::X8.code() as u32;
const W_12X: u32 = LinkWidth::X12.code() as u32;
const W_2X: u32 = LinkWidth::X2.code() as u32;
const S_SDR: u32 = 1;
const S_DDR: u32 = 2;
const S_QDR: u32 = 4;
const S_LEGACY: u32 = S_SDR | S_DDR | S_QDR;
// Extended speeds as ibsim's `e=` and rdma-core's aggregated
// LinkSpeedExt (`ibnd_get_agg_linkspeedext`): FDR 1, EDR 2, HDR 4, NDR 8,
// XDR 32 (16 is not used).
const E_FDR: u32 = 1;
const E_EDR: u32 = 2;
const E_HDR: u32 = 4;
const E_NDR: u32 = 8;
const E_XDR: u32 = 32;
const E_ALL: u32 = E_FDR | E_EDR | E_HDR | E_NDR | E_XDR;
/// The extended speeds by bit, fastest first.
const EXT_SPEEDS: [(u32, LinkSpeed); 5] = [
    (E_XDR, LinkSpeed::Xdr),
    (E_NDR, LinkSpeed::Ndr),
    (E_HDR, LinkSpeed::Hdr),
    (E_EDR, LinkSpeed::Edr),
    (E_FDR, LinkSpeed::Fdr),
];

const NODE_NAME_MAX: usize = 64;
const NODE_DESC_MAX: usize = 63;

#[derive(Clone, Copy)]
struct Enabled {
    width: u32,
    speed: u32,
    ext: u32,
    fdr10: bool,
    /// A width or speed token the parser did not know: that link's width
    /// or speed is not known.
    width_unknown: bool,
    speed_unknown: bool,
    /// The file said the width (speed): a comment, a port option or a
    /// `width=` (`speed=`, `extspeed=`) line, not the default.
    width_stated: bool,
    speed_stated: bool,
}

impl Enabled {
    /// The enabled sets as PortInfo would state them (empty where the
    /// file gave a token the parser did not know).
    fn caps(&self) -> crate::ib::LinkCaps {
        use crate::ib::{LinkSpeeds, LinkWidths};
        let mut speeds: Vec<LinkSpeed> = [
            (S_SDR, LinkSpeed::Sdr),
            (S_DDR, LinkSpeed::Ddr),
            (S_QDR, LinkSpeed::Qdr),
        ]
        .iter()
        .chain(EXT_SPEEDS.iter())
        .filter(|(bit, s)| {
            let set = if s.mib() <= LinkSpeed::Qdr.mib() {
                self.speed
            } else {
                self.ext
            };
            set & bit != 0
        })
        .map(|(_, s)| *s)
        .collect();
        if self.fdr10 {
            speeds.push(LinkSpeed::Fdr10);
        }
        crate::ib::LinkCaps {
            width_enabled: if self.width_unknown {
                LinkWidths::default()
            } else {
                LinkWidths::from_port_info(self.width as u8)
            },
            speed_enabled: if self.speed_unknown {
                LinkSpeeds::default()
            } else {
                LinkSpeeds::of(&speeds)
            },
            ..Default::default()
        }
    }
}

/// `e=` / `extspeed=`: the bits of [`EXT_SPEEDS`] only.
fn check_ext(line: usize, v: u64) -> Result<u32, TopologyError> {
    if v & !u64::from(E_ALL) != 0 {
        return err(
            line,
            format!("bad extended link speed {v}: bits 1 FDR, 2 EDR, 4 HDR, 8 NDR, 32 XDR"),
        );
    }
    Ok(v as u32)
}

struct RawPort {
    line: usize,
    remote_name: String,
    remote_port: u8,
    enabled: Enabled,
    lid: u16,
}

struct RawNode {
    /// The header's line.
    line: usize,
    name: String,
    node: Node,
    ports: HashMap<u8, RawPort>,
    enabled_default: Enabled,
}

struct State {
    // Index 0: CA, 1: switch, 2: router.
    abs_base: [u64; 3],
    next: [u64; 3],
    sysimgguid: u64,
    /// NodeInfo VendorID of the next node, DeviceID of every next one.
    vendid: u32,
    devid: u16,
    enabled: Enabled,
    nodes: Vec<RawNode>,
    by_name: HashMap<String, usize>,
    /// Tokens the parser did not know, one per line.
    warnings: Vec<TopologyError>,
    /// A `# subnetprefix=` line waiting for its node: (line, prefix).
    prefix: Option<(usize, u64)>,
    prefixes: Vec<PrefixDecl>,
}

fn type_index(t: NodeType) -> usize {
    match t {
        NodeType::Ca => 0,
        NodeType::Switch => 1,
        NodeType::Router => 2,
    }
}

/// Parses topology text; each token it did not know is one warning in
/// the log.
pub fn parse(text: &str) -> Result<Fabric, TopologyError> {
    parse_topology(text).map(|t| t.fabric)
}

/// Parses topology text with its planes' prefixes; each token it did not
/// know is one warning in the log.
pub fn parse_topology(text: &str) -> Result<Topology, TopologyError> {
    let (topology, warnings) = parse_all(text)?;
    warn_all(&warnings);
    Ok(topology)
}

pub(super) fn warn_all(warnings: &[TopologyError]) {
    for w in warnings {
        tracing::warn!("{w}");
    }
}

/// Parses topology text, returning the tokens it did not know beside the
/// fabric (the links they are on have that width or speed unknown).
pub fn parse_with_warnings(text: &str) -> Result<(Fabric, Vec<TopologyError>), TopologyError> {
    parse_all(text).map(|(t, w)| (t.fabric, w))
}

pub(super) fn parse_all(text: &str) -> Result<(Topology, Vec<TopologyError>), TopologyError> {
    parse_inner(text, false).map(|(t, w, _)| (t, w))
}

/// Where a plan's facts are in its file, and what it said of each link:
/// what [`crate::ib::topology::parse_plan`] gives beside the fabric.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlanFacts {
    /// Each node's header line.
    pub nodes: HashMap<Guid, u32>,
    /// Each cabled port's line, and whether both ends of its link state
    /// the width and the speed (a comment, an option, a `width=` line).
    pub ports: HashMap<(Guid, u8), PortFacts>,
}

/// What a file said of one port's link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortFacts {
    pub line: u32,
    pub width_stated: bool,
    pub speed_stated: bool,
}

/// Parses topology text as a plan: the fabric, the tokens not known,
/// and where each node and port is and what was stated of each link.
pub fn parse_plan(text: &str) -> Result<(Fabric, Vec<TopologyError>, PlanFacts), TopologyError> {
    parse_inner(text, true).map(|(t, w, f)| (t.fabric, w, f.unwrap_or_default()))
}

type Parsed = (Topology, Vec<TopologyError>, Option<PlanFacts>);

fn parse_inner(text: &str, facts: bool) -> Result<Parsed, TopologyError> {
    let mut st = State {
        abs_base: [0x100000, 0x200000, u64::MAX],
        next: [0x100000, 0x200000, u64::MAX],
        sysimgguid: 0,
        vendid: 0,
        devid: 0,
        enabled: Enabled {
            width: W_4X,
            speed: S_SDR,
            ext: 0,
            fdr10: false,
            width_unknown: false,
            speed_unknown: false,
            width_stated: false,
            speed_stated: false,
        },
        nodes: Vec::new(),
        warnings: Vec::new(),
        by_name: HashMap::new(),
        prefix: None,
        prefixes: Vec::new(),
    };
    let mut in_record = false;
    for (idx, raw) in text.lines().enumerate() {
        let lineno = idx + 1;
        let line = raw.trim_end_matches('\r');
        if line.trim().is_empty() {
            in_record = false;
            continue;
        }
        if line.starts_with('#') {
            match planes::prefix_comment(line) {
                Some(Ok(v)) => st.prefix = Some((lineno, v)),
                Some(Err(v)) => return err(lineno, format!("bad subnet prefix {}", excerpt(&v))),
                None => {}
            }
            continue;
        }
        if line.starts_with('[') {
            if !in_record {
                return err(lineno, "port line outside a node record");
            }
            parse_port_line(&mut st, lineno, line)?;
            continue;
        }
        if line.starts_with('@') {
            return err(lineno, "port aliases ('@') are not supported");
        }
        in_record = false;
        let word: String = line
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        match word.as_str() {
            "Switch" => {
                parse_header(&mut st, lineno, line, "Switch".len(), NodeType::Switch)?;
                in_record = true;
            }
            "Hca" | "Ca" => {
                parse_header(&mut st, lineno, line, word.len(), NodeType::Ca)?;
                in_record = true;
            }
            "Rt" => {
                parse_header(&mut st, lineno, line, 2, NodeType::Router)?;
                in_record = true;
            }
            "switchguid" => guid_base(&mut st, lineno, line, NodeType::Switch)?,
            "caguid" | "hcaguids" => guid_base(&mut st, lineno, line, NodeType::Ca)?,
            "rtguid" => guid_base(&mut st, lineno, line, NodeType::Router)?,
            "sysimgguid" => st.sysimgguid = assignment(lineno, line)?,
            // As ibsim: vendid is the next node's, devid every next one's.
            "vendid" => st.vendid = assignment(lineno, line)? as u32 & 0xFF_FFFF,
            "devid" => st.devid = assignment(lineno, line)? as u16,
            "pdebug" => {
                assignment(lineno, line)?;
            }
            "width" => {
                let v = assignment(lineno, line)?;
                st.enabled.width = check_range(lineno, "link width", v, 1, 31)?;
                st.enabled.width_stated = true;
            }
            "speed" => {
                let v = assignment(lineno, line)?;
                st.enabled.speed = check_range(lineno, "link speed", v, 1, 7)?;
                st.enabled.speed_stated = true;
            }
            "extspeed" => {
                let v = assignment(lineno, line)?;
                st.enabled.ext = check_ext(lineno, v)?;
                st.enabled.speed_stated = true;
            }
            "do" => {}
            "include" | "module" => {
                return err(lineno, format!("'{word}' lines are not supported"));
            }
            "" => return err(lineno, format!("unexpected text: {}", excerpt(line))),
            _ => return err(lineno, format!("unknown keyword {}", excerpt(&word))),
        }
    }
    if st.nodes.is_empty() {
        return err(0, "no nodes: the topology describes no Switch, Hca or Rt");
    }
    if let Some((line, _)) = st.prefix {
        return err(line, "a subnet prefix with no node after it");
    }
    let warnings = std::mem::take(&mut st.warnings);
    let prefixes = std::mem::take(&mut st.prefixes);
    let (fabric, facts) = link(st, facts)?;
    if let Some((line, message)) = planes::prefix_conflict(&fabric, &prefixes) {
        return err(line, message);
    }
    Ok((Topology { fabric, prefixes }, warnings, facts))
}

/// At most 40 characters of `s`, quoted.
fn excerpt(s: &str) -> String {
    format!("'{}'", crate::ib::lines::excerpt(s))
}

fn check_range(line: usize, what: &str, v: u64, lo: u64, hi: u64) -> Result<u32, TopologyError> {
    if v < lo || v > hi {
        return err(line, format!("bad {what} {v}: must be {lo}..{hi}"));
    }
    Ok(v as u32)
}

/// C `strtoull(s, NULL, 0)` on the start of `s`: `0x` hex, leading `0`
/// octal, else decimal; `None` when no digit is there or it overflows.
fn c_number(s: &str) -> Option<(u64, &str)> {
    let s = s.trim_start();
    let (radix, digits) = if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        (16, h)
    } else if s.starts_with('0') {
        (8, s)
    } else {
        (10, s)
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    if end == 0 {
        return None;
    }
    let v = u64::from_str_radix(&digits[..end], radix).ok()?;
    Some((v, &digits[end..]))
}

fn assignment(line: usize, text: &str) -> Result<u64, TopologyError> {
    let Some((_, rhs)) = text.split_once('=') else {
        return err(line, "bad assignment: missing '='");
    };
    match c_number(rhs) {
        Some((v, _)) => Ok(v),
        None => err(line, format!("bad number {}", excerpt(rhs.trim()))),
    }
}

fn guid_base(st: &mut State, line: usize, text: &str, t: NodeType) -> Result<(), TopologyError> {
    let Some(pos) = text.find(['=', '+']) else {
        return err(line, "bad assignment: missing '=' or '+'");
    };
    let relative = text[pos..].starts_with('+');
    let Some((v, _)) = c_number(&text[pos + 1..]) else {
        return err(line, format!("bad GUID {}", excerpt(&text[pos + 1..])));
    };
    let i = type_index(t);
    if relative {
        st.next[i] = st.abs_base[i].wrapping_add(v);
    } else {
        st.abs_base[i] = v;
        st.next[i] = v;
    }
    Ok(())
}

/// The first `"..."` of `s`: (content, rest after the closing quote).
fn quoted(line: usize, s: &str) -> Result<Option<(&str, &str)>, TopologyError> {
    let Some(open) = s.find('"') else {
        return Ok(None);
    };
    let after = &s[open + 1..];
    match after.find('"') {
        Some(close) => Ok(Some((&after[..close], &after[close + 1..]))),
        None => err(line, "malformed quotes: no closing '\"'"),
    }
}

fn check_name(line: usize, name: &str) -> Result<(), TopologyError> {
    if name.is_empty() {
        return err(line, "empty node name");
    }
    if name.len() > NODE_NAME_MAX {
        return err(line, format!("node name longer than {NODE_NAME_MAX} bytes"));
    }
    if name.contains(['#', '@']) {
        return err(
            line,
            format!("bad node name \"{name}\": '#' and '@' are reserved"),
        );
    }
    Ok(())
}

fn truncate(s: &str, max: usize) -> String {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The description in a header's `# ...` comment and the text after it.
fn header_description(line: usize, rest: &str) -> Result<(Option<String>, String), TopologyError> {
    let Some(hash) = rest.find('#') else {
        return Ok((None, String::new()));
    };
    let c = rest[hash + 1..].trim_start();
    if let Some(q) = c.strip_prefix('"') {
        return match q.find('"') {
            Some(end) => Ok((Some(q[..end].to_string()), q[end + 1..].to_string())),
            None => err(line, "malformed quotes in the node description"),
        };
    }
    for stop in [" enhanced port ", " base port ", " lid ", " lmc "] {
        if let Some(p) = c.find(stop) {
            return Ok((Some(c[..p].to_string()), c[p..].to_string()));
        }
    }
    Ok((Some(c.to_string()), String::new()))
}

/// `lid N` (and nothing else) from a comment.
fn lid_in(s: &str) -> Option<u16> {
    let p = s.find("lid ")?;
    let (v, _) = c_number(&s[p + 4..])?;
    u16::try_from(v).ok()
}

fn parse_header(
    st: &mut State,
    lineno: usize,
    line: &str,
    kw_len: usize,
    t: NodeType,
) -> Result<(), TopologyError> {
    let after_kw = &line[kw_len..];
    let count_text = after_kw.trim_start();
    let digits_end = count_text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(count_text.len());
    let num_ports: u8 = match count_text[..digits_end].parse::<u32>() {
        Ok(n) if (1..=255).contains(&n) => n as u8,
        Ok(n) => return err(lineno, format!("bad port count {n}: must be 1..255")),
        Err(_) => return err(lineno, "missing port count after the node type"),
    };
    let Some((name, rest)) = quoted(lineno, &count_text[digits_end..])? else {
        return err(lineno, "missing quoted node name");
    };
    check_name(lineno, name)?;
    if st.by_name.contains_key(name) {
        return err(lineno, format!("duplicate node name \"{name}\""));
    }
    let (desc, tail) = header_description(lineno, rest)?;
    let description = match desc {
        Some(d) if !d.is_empty() => truncate(&d, NODE_DESC_MAX),
        _ => truncate(name, NODE_DESC_MAX),
    };

    let i = type_index(t);
    let guid = st.next[i];
    // GUID 0 is no GUID (IBA), and a CA's port GUIDs follow its node GUID.
    let last = match t {
        NodeType::Switch => Some(guid),
        _ => guid.checked_add(u64::from(num_ports)),
    };
    if guid == 0 || last.is_none() {
        return err(
            lineno,
            format!(
                "the GUIDs of \"{}\" wrap around to 0 (set switchguid/caguid/rtguid lower)",
                excerpt(name)
            ),
        );
    }
    // ibsim checks node GUIDs only.
    if let Some(other) = st.nodes.iter().find(|n| n.node.id.guid.0 == guid) {
        return err(
            lineno,
            format!(
                "GUID {} of \"{name}\" is already used by \"{}\"",
                Guid(guid),
                other.name
            ),
        );
    }
    st.next[i] = match t {
        NodeType::Switch => guid.wrapping_add(1),
        _ => guid.wrapping_add(u64::from(num_ports) + 1),
    };
    let sys_guid = if st.sysimgguid != 0 {
        st.sysimgguid
    } else {
        guid
    };
    st.sysimgguid = 0;
    let vendor_id = std::mem::take(&mut st.vendid);

    let lid = if t == NodeType::Switch {
        lid_in(&tail).unwrap_or(0)
    } else {
        0
    };
    // ibnetdiscover (and ibsim) say "enhanced port 0" of a switch whose
    // port 0 has counters of its own.
    let enhanced = t == NodeType::Switch && tail.contains("enhanced port 0");
    let port0 = enhanced.then(|| Port::enhanced_port0(Guid(guid), lid));
    let ports = port0
        .into_iter()
        .chain((1..=num_ports).map(|n| {
            let port_guid = if t == NodeType::Switch {
                guid
            } else {
                guid.wrapping_add(u64::from(n))
            };
            Port::unlinked(n, Guid(port_guid), lid)
        }))
        .collect();
    if let Some((line, prefix)) = st.prefix.take() {
        st.prefixes.push(PrefixDecl {
            line,
            node: Guid(guid),
            prefix,
        });
    }
    st.by_name.insert(name.to_string(), st.nodes.len());
    st.nodes.push(RawNode {
        line: lineno,
        name: name.to_string(),
        node: Node {
            id: NodeIdentity {
                vendor_id,
                device_id: st.devid,
                guid: Guid(guid),
                sys_guid: Guid(sys_guid),
                node_type: t,
                description: description.into(),
                num_ports,
                lid,
            },
            ports,
        },
        ports: HashMap::new(),
        enabled_default: st.enabled,
    });
    Ok(())
}

/// ibnetdiscover's `lid N <width>x<speed>` (the last `lid` after the last
/// quote) updates the enabled sets the way ibsim does: the width and
/// those below it that ibsim enables with it, the speed and every slower
/// one. A width or speed it does not know (`3x`, `???`) leaves that part
/// of the link unknown; the message says which.
fn connection_data(s: &str, en: &mut Enabled) -> Option<String> {
    let from = s.rfind('"').map_or(0, |q| q + 1);
    let tail = &s[from..];
    let p = tail.find("lid")?;
    let mut words = tail[p..].split_whitespace();
    if words.next() != Some("lid") {
        return None;
    }
    words.next().and_then(|w| w.parse::<i64>().ok())?;
    let ws = words.next()?;
    let Some((w, speed)) = ws.split_once(['x', 'X']) else {
        en.width_unknown = true;
        en.speed_unknown = true;
        en.width_stated = false;
        en.speed_stated = false;
        return Some(format!("unknown link width and speed {}", excerpt(ws)));
    };
    let mut unknown = Vec::new();
    en.width_stated = true;
    en.speed_stated = true;
    match w.parse::<u32>() {
        Ok(12) => en.width = W_1X | W_4X | W_12X,
        Ok(8) => en.width = W_8X,
        Ok(4) => en.width = W_1X | W_4X,
        Ok(2) => en.width = W_2X,
        Ok(1) => en.width = W_1X,
        _ => {
            en.width_unknown = true;
            en.width_stated = false;
            unknown.push(format!("link width {}", excerpt(&format!("{w}x"))));
        }
    }
    // ibsim compares the text as a prefix of each name, in this order
    // (FDR10 after FDR: `FDR10` is no prefix of `FDR`).
    let is = |name: &str| !speed.is_empty() && name.starts_with(speed);
    let all_ext_to = |top: u32| E_ALL & ((top << 1) - 1);
    if is("SDR") {
        en.speed = S_SDR;
    } else if is("DDR") {
        en.speed = S_SDR | S_DDR;
    } else if is("QDR") {
        en.speed = S_LEGACY;
    } else if let Some(top) = [
        ("FDR", E_FDR),
        ("EDR", E_EDR),
        ("HDR", E_HDR),
        ("NDR", E_NDR),
        ("XDR", E_XDR),
    ]
    .iter()
    .find(|(name, _)| is(name))
    .map(|(_, bit)| *bit)
    {
        en.ext = all_ext_to(top);
        en.speed = S_LEGACY;
        en.fdr10 = true;
    } else if is("FDR10") {
        en.speed = S_LEGACY;
        en.fdr10 = true;
    } else {
        en.speed_unknown = true;
        en.speed_stated = false;
        unknown.push(format!("link speed {}", excerpt(speed)));
    }
    (!unknown.is_empty()).then(|| format!("unknown {}", unknown.join(" and ")))
}

fn parse_port_line(st: &mut State, lineno: usize, line: &str) -> Result<(), TopologyError> {
    let Some(cur) = st.nodes.last_mut() else {
        return err(lineno, "port line outside a node record");
    };
    let body = &line[1..];
    let Some(close) = body.find(']') else {
        return err(lineno, "bad port: missing ']'");
    };
    let num = match body[..close].trim().parse::<u32>() {
        Ok(n) => n,
        Err(_) => {
            return err(
                lineno,
                format!("bad port number {}", excerpt(&body[..close])),
            );
        }
    };
    if num == 0 || num > u32::from(cur.node.id.num_ports) {
        return err(
            lineno,
            format!(
                "port {num} is beyond \"{}\"'s ports 1..{}",
                cur.name, cur.node.id.num_ports
            ),
        );
    }
    let num = num as u8;
    if cur.ports.contains_key(&num) {
        return err(
            lineno,
            format!("port {num} of \"{}\" is listed twice", cur.name),
        );
    }
    let after = &body[close + 1..];
    let Some((remote_name, rest)) = quoted(lineno, after)? else {
        return err(lineno, "missing quoted remote node name");
    };
    check_name(lineno, remote_name)?;
    let (remote_port, rest) = if let Some(r) = rest.strip_prefix('[') {
        match c_number(r) {
            Some((n, tail)) if (1..=255).contains(&n) => (n as u8, tail),
            _ => {
                return err(lineno, format!("bad remote port number in {}", excerpt(r)));
            }
        }
    } else {
        (1, rest) // ibsim's default when no [port] follows the name
    };
    let mut enabled = cur.enabled_default;
    // Port options (w=, s=, e=) before any comment.
    let opts = rest.split('#').next().unwrap_or("");
    for tok in opts.split_whitespace() {
        if let Some((k, v)) = tok.split_once('=') {
            let key = k.chars().rev().find(|c| c.is_ascii_alphabetic());
            let val = c_number(v).map(|(n, _)| n).unwrap_or(0);
            match key {
                Some('w') => {
                    enabled.width = check_range(lineno, "link width", val, 1, 31)?;
                    enabled.width_stated = true;
                }
                Some('s') => {
                    enabled.speed = check_range(lineno, "link speed", val, 1, 7)?;
                    enabled.speed_stated = true;
                }
                Some('e') => {
                    enabled.ext = check_ext(lineno, val)?;
                    enabled.speed_stated = true;
                }
                _ => {}
            }
        }
    }
    let mut lid = 0;
    if matches!(cur.node.id.node_type, NodeType::Switch | NodeType::Ca) {
        if let Some(w) = connection_data(rest, &mut enabled) {
            st.warnings.push(LineError::new(
                "topology",
                lineno,
                format!("{w}: left unknown for this link"),
            ));
        }
        if cur.node.id.node_type == NodeType::Ca {
            lid = lid_in(rest).unwrap_or(0);
        }
    }
    cur.ports.insert(
        num,
        RawPort {
            line: lineno,
            remote_name: remote_name.to_string(),
            remote_port,
            enabled,
            lid,
        },
    );
    Ok(())
}

/// The width and speed ibsim trains a link at from its ends' enabled
/// sets (None: an end's token was not known); Err when the known sets
/// have nothing in common.
type Trained = (Option<LinkWidth>, Option<LinkSpeed>);

fn active(a: &Enabled, b: &Enabled) -> Result<Trained, ()> {
    let width = if a.width_unknown || b.width_unknown {
        None
    } else {
        let w = a.width & b.width;
        let best = [
            (W_12X, LinkWidth::X12),
            (W_8X, LinkWidth::X8),
            (W_4X, LinkWidth::X4),
            (W_2X, LinkWidth::X2),
            (W_1X, LinkWidth::X1),
        ]
        .iter()
        .find(|(bit, _)| w & bit != 0)
        .ok_or(())?;
        Some(best.1)
    };
    let speed = if a.speed_unknown || b.speed_unknown {
        None
    } else {
        let s = a.speed & b.speed;
        let legacy = [
            (S_QDR, LinkSpeed::Qdr),
            (S_DDR, LinkSpeed::Ddr),
            (S_SDR, LinkSpeed::Sdr),
        ]
        .iter()
        .find(|(bit, _)| s & bit != 0)
        .ok_or(())?
        .1;
        let e = a.ext & b.ext;
        Some(match EXT_SPEEDS.iter().find(|(bit, _)| e & bit != 0) {
            Some((_, ext)) => *ext,
            None if a.fdr10 && b.fdr10 => LinkSpeed::Fdr10,
            None => legacy,
        })
    };
    Ok((width, speed))
}

fn link(st: State, want_facts: bool) -> Result<(Fabric, Option<PlanFacts>), TopologyError> {
    // Check every listed link, in file order.
    let mut all: Vec<(usize, usize, u8)> = Vec::new(); // (line, node idx, port)
    for (ni, n) in st.nodes.iter().enumerate() {
        for (&p, rp) in &n.ports {
            all.push((rp.line, ni, p));
        }
    }
    all.sort_unstable();
    let mut facts = want_facts.then(|| PlanFacts {
        nodes: st
            .nodes
            .iter()
            .map(|n| (n.node.id.guid, n.line as u32))
            .collect(),
        ports: HashMap::new(),
    });
    let mut resolved: Vec<(usize, u8, usize, u8, Trained)> = Vec::new();
    for &(line, ni, p) in &all {
        let n = &st.nodes[ni];
        let rp = &n.ports[&p];
        let Some(&ri) = st.by_name.get(&rp.remote_name) else {
            return err(
                line,
                format!(
                    "\"{}\"[{p}] links to undefined node \"{}\"",
                    n.name, rp.remote_name
                ),
            );
        };
        let r = &st.nodes[ri];
        if rp.remote_port > r.node.id.num_ports {
            return err(
                line,
                format!(
                    "\"{}\"[{p}] links to port {} beyond \"{}\"'s ports 1..{}",
                    n.name, rp.remote_port, r.name, r.node.id.num_ports
                ),
            );
        }
        if ri == ni && rp.remote_port == p {
            return err(line, format!("\"{}\"[{p}] is linked to itself", n.name));
        }
        match r.ports.get(&rp.remote_port) {
            None => {
                return err(
                    line,
                    format!(
                        "inconsistent link: \"{}\"[{p}] -> \"{}\"[{}], but \"{}\"[{}] is not listed",
                        n.name, r.name, rp.remote_port, r.name, rp.remote_port
                    ),
                );
            }
            Some(back) if back.remote_name != n.name || back.remote_port != p => {
                return err(
                    line,
                    format!(
                        "inconsistent link: \"{}\"[{p}] -> \"{}\"[{}], but \"{}\"[{}] -> \"{}\"[{}] (line {})",
                        n.name,
                        r.name,
                        rp.remote_port,
                        r.name,
                        rp.remote_port,
                        back.remote_name,
                        back.remote_port,
                        back.line
                    ),
                );
            }
            Some(back) => {
                let Ok((w, s)) = active(&rp.enabled, &back.enabled) else {
                    return err(
                        line,
                        format!(
                            "\"{}\"[{p}] and \"{}\"[{}] share no enabled link width or speed",
                            n.name, r.name, rp.remote_port
                        ),
                    );
                };
                resolved.push((ni, p, ri, rp.remote_port, (w, s)));
                if let Some(f) = facts.as_mut() {
                    f.ports.insert(
                        (n.node.id.guid, p),
                        PortFacts {
                            line: line as u32,
                            width_stated: rp.enabled.width_stated && back.enabled.width_stated,
                            speed_stated: rp.enabled.speed_stated && back.enabled.speed_stated,
                        },
                    );
                }
            }
        }
    }
    let guids: Vec<Guid> = st.nodes.iter().map(|n| n.node.id.guid).collect();
    let mut nodes: Vec<RawNode> = st.nodes;
    for (ni, p, ri, rport, (w, s)) in resolved {
        let n = &mut nodes[ni];
        let lid = n.ports.get(&p).map_or(0, |rp| rp.lid);
        let caps = n
            .ports
            .get(&p)
            .map(|rp| rp.enabled.caps())
            .unwrap_or_default();
        if let Some(port) = n.node.ports.iter_mut().find(|x| x.num == p) {
            port.set_remote(Some((guids[ri], rport)));
            port.state = Some(PortState::Active);
            port.phys_state = Some(PhysState::LinkUp);
            port.width = w;
            port.speed = s;
            port.caps = caps;
            if n.node.id.node_type != NodeType::Switch && lid != 0 {
                port.lid = lid;
            }
        }
    }
    let mut fabric = Fabric {
        nodes: nodes
            .into_iter()
            .map(|mut rn| {
                if rn.node.id.node_type != NodeType::Switch {
                    rn.node.id.lid = rn.node.ports.first().map_or(0, |p| p.lid);
                }
                rn.node
            })
            .collect(),
    };
    fabric.sort();
    Ok((fabric, facts))
}
