//! The fabric model every layer may import: GUIDs, nodes, ports, links,
//! and the topology files that describe them.

pub mod ber;
pub mod cabling;
pub mod health;
pub mod last_peer;
pub mod lines;
pub mod link;
pub mod names;
pub mod planes;
pub mod subnet;
pub mod topology;
pub mod xmit_wait;

pub use link::{
    FecMode, LinkAssessment, LinkCaps, LinkHealth, LinkSpeed, LinkSpeeds, LinkWidth, LinkWidths,
    PhysState, PortState,
};

use std::fmt;
use std::sync::Arc;

/// Text that came from the fabric or a topology file (a NodeDescription, a
/// node name), shown so that it cannot drive a terminal or forge log
/// lines: control characters, bidirectional and other invisible format
/// characters, and the backslash are written as escapes (`\n`, `\t`,
/// `\u{1b}`, `\\`); everything else is printed as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Escaped<'a>(pub &'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut rest = self.0;
        while let Some(i) = rest.find(needs_escape) {
            f.write_str(&rest[..i])?;
            let c = rest[i..].chars().next().unwrap_or_default();
            match c {
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                c => write!(f, "\\u{{{:x}}}", u32::from(c))?,
            }
            rest = &rest[i + c.len_utf8()..];
        }
        f.write_str(rest)
    }
}

/// A JSON string of outside text: quotes, backslashes, control characters
/// and the invisible characters that reorder or hide text (bidirectional
/// overrides such as U+202E, zero-width characters, line separators: the
/// set [`Escaped`] escapes) come out as escapes.
pub fn json_string(s: &str) -> String {
    use fmt::Write as _;
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o += "\\\"",
            '\\' => o += "\\\\",
            c if needs_escape(c) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(o, "\\u{u:04x}");
                }
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

/// Characters [`Escaped`] writes as escapes: C0/C1 controls, DEL, the
/// backslash, and the invisible format characters that reorder or hide
/// text (bidirectional overrides and isolates, zero-width characters, the
/// byte order mark, line and paragraph separators).
pub(crate) fn needs_escape(c: char) -> bool {
    c == '\\'
        || c.is_control()
        || matches!(
            c,
            '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{2069}'
                | '\u{feff}'
        )
}

/// A 64-bit InfiniBand GUID.
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Guid(pub u64);

impl Guid {
    /// The 8 octets in network byte order (the MIB's index encoding).
    pub fn octets(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }
}

/// A GUID as operators type it: 16 hex digits, with or without `0x`, or
/// four colon-separated groups of 4 (`0002:c903:0000:1234`, as ibstat
/// prints port GUIDs).
impl std::str::FromStr for Guid {
    type Err = String;

    fn from_str(s: &str) -> Result<Guid, String> {
        let t = s.trim();
        let hex = t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .unwrap_or(t);
        let groups: Vec<&str> = hex.split(':').collect();
        let digits = match groups.len() {
            1 => hex.to_string(),
            4 if groups.iter().all(|g| g.len() == 4) => groups.concat(),
            _ => return Err(format!("`{}` is not a GUID (16 hex digits)", Escaped(s))),
        };
        if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|b| b.is_ascii_hexdigit())
        {
            return Err(format!("`{}` is not a GUID (16 hex digits)", Escaped(s)));
        }
        u64::from_str_radix(&digits, 16)
            .map(Guid)
            .map_err(|e| format!("`{}` is not a GUID: {e}", Escaped(s)))
    }
}

impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:016x}", self.0)
    }
}

impl fmt::Debug for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Guid({self})")
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NodeType {
    /// Channel adapter (HCA/TCA): each port has its own LID and PMA.
    Ca,
    /// Switch: one PMA behind port 0's LID; PortSelect picks the port.
    Switch,
    Router,
}

impl NodeType {
    /// NodeInfo's NodeType (IBA 14.2.5.3): 1 CA, 2 switch, 3 router (also
    /// pmNodeType's value).
    pub const fn code(self) -> u8 {
        match self {
            NodeType::Ca => 1,
            NodeType::Switch => 2,
            NodeType::Router => 3,
        }
    }

    /// The type of a NodeType code (`None`: another value).
    pub const fn from_code(code: u8) -> Option<NodeType> {
        match code {
            1 => Some(NodeType::Ca),
            2 => Some(NodeType::Switch),
            3 => Some(NodeType::Router),
            _ => None,
        }
    }
}

/// One port of a node: a physical port, or a switch's enhanced port 0
/// (which has counters of its own; a base port 0 is not listed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Port {
    pub num: u8,
    /// Port GUID (a CA port has its own; switch ports share the node GUID).
    pub guid: Guid,
    /// LID of this port (for a switch, the node's port-0 LID). 0 = unassigned.
    pub lid: u16,
    /// The node at the far end of the link ([`Port::remote`]).
    pub remote_guid: Guid,
    /// The port at the far end of the link; 0: not connected (port 0 is a
    /// switch's management port, never cabled). Two fields rather than an
    /// `Option<(Guid, u8)>`: 8 bytes less per port.
    pub remote_port: u8,
    /// Logical and physical state (None: not known).
    pub state: Option<PortState>,
    pub phys_state: Option<PhysState>,
    /// Active link width and speed, when the link is up.
    pub width: Option<LinkWidth>,
    pub speed: Option<LinkSpeed>,
    /// The FEC the link runs (PortInfoExtended FECModeActive), when the
    /// port reports it.
    pub fec: Option<FecMode>,
    /// The widths and speeds the port supports and has enabled.
    pub caps: LinkCaps,
}

// A fabric holds millions of ports: the link sets fit in what was padding.
const _: () = assert!(size_of::<Port>() <= 32);

impl Port {
    /// The node and port at the far end of the link, when connected.
    pub fn remote(&self) -> Option<(Guid, u8)> {
        (self.remote_port != 0).then_some((self.remote_guid, self.remote_port))
    }

    /// Connect the port to `peer` (None, or a peer port 0: not connected).
    pub fn set_remote(&mut self, peer: Option<(Guid, u8)>) {
        (self.remote_guid, self.remote_port) = peer.unwrap_or((Guid(0), 0));
    }

    /// A port with no link: state Down, physical state Polling (what an
    /// uncabled IB port reports).
    pub fn unlinked(num: u8, guid: Guid, lid: u16) -> Port {
        Port {
            num,
            guid,
            lid,
            remote_guid: Guid(0),
            remote_port: 0,
            state: Some(PortState::Down),
            phys_state: Some(PhysState::Polling),
            width: None,
            speed: None,
            fec: None,
            caps: LinkCaps::default(),
        }
    }

    /// A switch's enhanced port 0: the switch's management port, always
    /// Active, with no link and no peer.
    pub fn enhanced_port0(guid: Guid, lid: u16) -> Port {
        Port {
            num: 0,
            guid,
            lid,
            remote_guid: Guid(0),
            remote_port: 0,
            state: Some(PortState::Active),
            phys_state: Some(PhysState::LinkUp),
            width: None,
            speed: None,
            fec: None,
            caps: LinkCaps::default(),
        }
    }

    /// The data rate in Mb/s when the link is up.
    pub fn rate_mbps(&self) -> Option<u64> {
        link::rate_mbps(self.width, self.speed)
    }

    /// What the link should run at, given the port at its far end.
    pub fn assess(&self, peer: Option<&Port>) -> LinkAssessment {
        link::assess(self, peer)
    }
}

/// Who a node is and where its PMA is reached: what NodeInfo and
/// NodeDescription say of it, and its LID. Made once when the node is
/// discovered (or read from a topology file); the fabric model's node and
/// the node's record in the cache both hold it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeIdentity {
    pub guid: Guid,
    pub sys_guid: Guid,
    pub node_type: NodeType,
    /// NodeInfo VendorID (24 bits) and DeviceID (0 when not known).
    pub vendor_id: u32,
    pub device_id: u16,
    /// NodeDescription (up to 64 bytes on the wire), shared with the
    /// notification evaluator.
    pub description: Arc<str>,
    /// Number of physical ports (NumPorts in NodeInfo).
    pub num_ports: u8,
    /// Port-0 LID for a switch, otherwise the LID of the first port.
    pub lid: u16,
}

impl NodeIdentity {
    /// The LID of the PMA that answers for `port`: a switch's single PMA
    /// behind its port-0 LID, a channel adapter port's own LID. 0 when
    /// unassigned or when there is no such port.
    pub fn pma_lid(&self, port: Option<&Port>) -> u16 {
        match self.node_type {
            NodeType::Switch => self.lid,
            _ => port.map_or(0, |p| p.lid),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub id: NodeIdentity,
    /// Physical ports, ordered by number.
    pub ports: Vec<Port>,
}

impl Node {
    pub fn port(&self, num: u8) -> Option<&Port> {
        self.ports.iter().find(|p| p.num == num)
    }

    /// Takes from `old` (the same node as known before) what a discovery
    /// of it did not read: a port whose PortInfo went unanswered (no
    /// state) keeps its old facts, a port or the node without a LID its
    /// old LID, a node whose NodeDescription went unanswered (empty) its
    /// old description.
    pub fn keep_unread(&mut self, old: &Node) {
        if self.id.lid == 0 {
            self.id.lid = old.id.lid;
        }
        if self.id.description.is_empty() {
            self.id.description = old.id.description.clone();
        }
        for p in &mut self.ports {
            let Some(o) = old.port(p.num) else {
                continue;
            };
            if p.state.is_none() {
                *p = *o;
            } else if p.lid == 0 {
                p.lid = o.lid;
            }
        }
    }

    /// The LID of the PMA that answers for port `num`: a switch's single
    /// PMA behind its port-0 LID, a channel adapter port's own LID. 0 when
    /// unassigned or when the node has no such port.
    pub fn pma_lid(&self, num: u8) -> u16 {
        self.id.pma_lid(self.port(num))
    }
}

/// A discovered fabric: nodes ordered by GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fabric {
    pub nodes: Vec<Node>,
}

impl Fabric {
    pub fn node(&self, guid: Guid) -> Option<&Node> {
        self.nodes
            .binary_search_by_key(&guid, |n| n.id.guid)
            .ok()
            .map(|i| &self.nodes[i])
    }
    /// Sort nodes by GUID (call after building).
    pub fn sort(&mut self) {
        self.nodes.sort_by_key(|n| n.id.guid);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_text_cannot_reach_a_terminal_raw() {
        let raw = "sw\u{1b}[2J\u{1b}]0;pwned\u{7}\r\nWARN forged\t\\x\u{202e}cba\u{9b}31m";
        let shown = Escaped(raw).to_string();
        assert!(!shown.chars().any(|c| c.is_control()), "{shown}");
        assert_eq!(
            shown,
            "sw\\u{1b}[2J\\u{1b}]0;pwned\\u{7}\\r\\nWARN forged\\t\\\\x\\u{202e}cba\\u{9b}31m"
        );
        // Ordinary descriptions, UTF-8 included, are unchanged.
        for plain in [
            "",
            "MT4123 ConnectX6 Mellanox Technologies",
            "h\u{e9}te 1 HCA-1",
        ] {
            assert_eq!(Escaped(plain).to_string(), plain);
        }
    }
}

#[cfg(test)]
mod guid_tests {
    use super::Guid;

    #[test]
    fn guids_parse_as_operators_type_them() {
        let g = Guid(0x0002_c903_0000_1234);
        for s in [
            "0x0002c90300001234",
            "0002c90300001234",
            "0X0002C90300001234",
            "0002:c903:0000:1234",
            " 0x2c90300001234 ",
        ] {
            assert_eq!(s.parse::<Guid>(), Ok(g), "{s}");
        }
        for s in [
            "",
            "0x",
            "xyz",
            "0x10000000000000000",
            "0002:c903:1234",
            "1:2:3:4",
            "-1",
        ] {
            assert!(s.parse::<Guid>().is_err(), "{s:?} parsed");
        }
    }
}
