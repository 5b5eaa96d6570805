//! The baseline's file: with no plan file, the fabric as first found is
//! the plan, kept beside the health state (`fabric.state_file` with
//! `.plan` appended) so that a restart compares with the same one.
//!
//! The codec is pure and bounded (at most [`MAX_NODES`] nodes and
//! [`MAX_LINKS`] links, names of at most [`MAX_NAME`] bytes of UTF-8,
//! sizes checked before anything is allocated, an FNV-1a sum at the end);
//! the file is written atomically, never through a link.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use crate::files::{Cursor, Truncated, fnv1a};
use crate::ib::cabling::{NodeRef, Plan, PlanEnd, PlanSource, PlannedLink, PlannedNode};
use crate::ib::{Guid, LinkSpeed, LinkWidth, NodeType};

pub const MAGIC: [u8; 8] = *b"IBPMPL\x00\x01";
/// Nodes a file holds at most.
pub const MAX_NODES: usize = 1 << 18;
/// Links a file holds at most.
pub const MAX_LINKS: usize = 1 << 21;
/// A node's name, in bytes at most (NodeDescription is 64; a mapped name
/// may be longer).
pub const MAX_NAME: usize = 255;
/// A node without its name: GUID, type, name length.
const NODE_LEN: usize = 8 + 1 + 1;
/// A link: both ends' GUID and port, width and speed.
const LINK_LEN: usize = 2 * (8 + 1) + 2;
/// The largest file.
pub const MAX_FILE: usize =
    MAGIC.len() + 8 + MAX_NODES * (NODE_LEN + MAX_NAME) + MAX_LINKS * LINK_LEN + 8;

/// Why a baseline file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    Io(String),
    TooLarge(u64),
    Truncated,
    BadMagic,
    Checksum,
    TooMany(u32),
    BadName,
    NotByGuid,
    TrailingBytes,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Io(e) => write!(f, "{e}"),
            StateError::TooLarge(n) => write!(f, "{n} bytes, more than {MAX_FILE}"),
            StateError::Truncated => f.write_str("truncated"),
            StateError::BadMagic => f.write_str("not a baseline file"),
            StateError::Checksum => f.write_str("checksum mismatch"),
            StateError::TooMany(n) => write!(f, "{n} records, more than allowed"),
            StateError::BadName => f.write_str("a name that is not UTF-8"),
            StateError::NotByGuid => f.write_str("a plan by name is no baseline"),
            StateError::TrailingBytes => f.write_str("bytes after the last record"),
        }
    }
}

impl std::error::Error for StateError {}

impl From<Truncated> for StateError {
    fn from(_: Truncated) -> Self {
        StateError::Truncated
    }
}

fn type_code(t: Option<NodeType>) -> u8 {
    match t {
        None => 0,
        Some(NodeType::Ca) => 1,
        Some(NodeType::Switch) => 2,
        Some(NodeType::Router) => 3,
    }
}

fn guid_of(n: &NodeRef) -> Result<Guid, StateError> {
    match n {
        NodeRef::Guid(g) => Ok(*g),
        NodeRef::Name(_) => Err(StateError::NotByGuid),
    }
}

/// The file's bytes for a baseline (a plan by GUID).
pub fn encode(plan: &Plan) -> Result<Vec<u8>, StateError> {
    if plan.nodes.len() > MAX_NODES {
        return Err(StateError::TooMany(plan.nodes.len() as u32));
    }
    if plan.links.len() > MAX_LINKS {
        return Err(StateError::TooMany(plan.links.len() as u32));
    }
    let mut out = Vec::with_capacity(
        MAGIC.len() + 16 + plan.nodes.len() * (NODE_LEN + 16) + plan.links.len() * LINK_LEN,
    );
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&(plan.nodes.len() as u32).to_le_bytes());
    for n in &plan.nodes {
        out.extend_from_slice(&guid_of(&n.node)?.0.to_le_bytes());
        out.push(type_code(n.node_type));
        let name = n.name.as_deref().unwrap_or("");
        // Cut at a character boundary within the bound.
        let mut end = name.len().min(MAX_NAME);
        while !name.is_char_boundary(end) {
            end -= 1;
        }
        out.push(end as u8);
        out.extend_from_slice(&name.as_bytes()[..end]);
    }
    out.extend_from_slice(&(plan.links.len() as u32).to_le_bytes());
    for l in &plan.links {
        for e in [&l.a, &l.z] {
            out.extend_from_slice(&guid_of(&e.node)?.0.to_le_bytes());
            out.push(e.port);
        }
        out.push(l.width.map_or(0, |w| w.mib() as u8));
        out.push(l.speed.map_or(0, |s| s.mib() as u8));
    }
    let sum = fnv1a(&out);
    out.extend_from_slice(&sum.to_le_bytes());
    Ok(out)
}

fn count(c: &mut Cursor, max: usize, len: usize) -> Result<usize, StateError> {
    let n = c.u32()?;
    if n as usize > max {
        return Err(StateError::TooMany(n));
    }
    if (n as usize).saturating_mul(len) > c.left() {
        return Err(StateError::Truncated);
    }
    Ok(n as usize)
}

/// Decode a baseline file's bytes.
pub fn decode(bytes: &[u8]) -> Result<Plan, StateError> {
    if bytes.len() > MAX_FILE {
        return Err(StateError::TooLarge(bytes.len() as u64));
    }
    let body_len = bytes.len().checked_sub(8).ok_or(StateError::Truncated)?;
    let (body, sum) = bytes.split_at(body_len);
    let mut c = Cursor(body);
    if c.take::<8>()? != MAGIC {
        return Err(StateError::BadMagic);
    }
    if fnv1a(body) != u64::from_le_bytes(Cursor(sum).take()?) {
        return Err(StateError::Checksum);
    }
    let mut plan = Plan {
        source: PlanSource::Baseline,
        nodes: Vec::new(),
        links: Vec::new(),
    };
    let nodes = count(&mut c, MAX_NODES, NODE_LEN)?;
    plan.nodes.reserve(nodes);
    for _ in 0..nodes {
        let guid = Guid(c.u64()?);
        let node_type = match c.u8()? {
            1 => Some(NodeType::Ca),
            2 => Some(NodeType::Switch),
            3 => Some(NodeType::Router),
            _ => None,
        };
        let len = usize::from(c.u8()?);
        let (name, rest) = c.0.split_at_checked(len).ok_or(StateError::Truncated)?;
        c.0 = rest;
        let name = std::str::from_utf8(name).map_err(|_| StateError::BadName)?;
        plan.nodes.push(PlannedNode {
            node: NodeRef::Guid(guid),
            node_type,
            name: (!name.is_empty()).then(|| Arc::from(name)),
            line: 0,
        });
    }
    let links = count(&mut c, MAX_LINKS, LINK_LEN)?;
    plan.links.reserve(links);
    for _ in 0..links {
        let mut end = || -> Result<PlanEnd, StateError> {
            Ok(PlanEnd {
                node: NodeRef::Guid(Guid(c.u64()?)),
                port: c.u8()?,
            })
        };
        let (a, z) = (end()?, end()?);
        plan.links.push(PlannedLink {
            a,
            z,
            width: LinkWidth::from_mib(c.u8()?.into()),
            speed: LinkSpeed::from_mib(c.u8()?.into()),
            line: 0,
        });
    }
    if c.left() != 0 {
        return Err(StateError::TrailingBytes);
    }
    Ok(plan)
}

/// The baseline's file: `fabric.state_file` with `.plan` appended.
pub fn baseline_path(state_file: &Path) -> std::path::PathBuf {
    let mut s = state_file.as_os_str().to_owned();
    s.push(".plan");
    std::path::PathBuf::from(s)
}

/// Save a baseline to `path` (atomically, never through a link).
pub fn save(path: &Path, plan: &Plan) -> std::io::Result<()> {
    let bytes =
        encode(plan).map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    crate::files::write_atomic(path, &bytes)
}

/// Read and decode the baseline file at `path`: a regular file of at most
/// [`MAX_FILE`] bytes.
pub fn load(path: &Path) -> Result<Plan, StateError> {
    let bytes = crate::files::read_untrusted(path, MAX_FILE as u64)
        .map_err(|e| StateError::Io(e.to_string()))?;
    decode(&bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;

    fn base() -> Plan {
        let mut p = Plan::from_fabric(&topology::default_fabric(), PlanSource::Baseline);
        p.nodes[0].name = Some("é".repeat(200).into());
        p
    }

    #[test]
    fn a_baseline_comes_back_as_it_was_saved() {
        let p = base();
        let back = decode(&encode(&p).unwrap()).unwrap();
        assert_eq!(back.links, p.links);
        assert_eq!(back.nodes.len(), p.nodes.len());
        assert_eq!(back.nodes[1], p.nodes[1]);
        // A name past the bound is cut at a character.
        assert_eq!(back.nodes[0].name.as_deref().unwrap().len(), 254);
    }

    #[test]
    fn a_damaged_file_is_refused() {
        let bytes = encode(&base()).unwrap();
        for cut in [0, 7, 12, bytes.len() - 1] {
            assert!(decode(&bytes[..cut]).is_err(), "{cut}");
        }
        let mut flipped = bytes.clone();
        flipped[20] ^= 1;
        assert_eq!(decode(&flipped), Err(StateError::Checksum));
        let mut other = bytes.clone();
        other[0] = b'X';
        assert_eq!(decode(&other), Err(StateError::BadMagic));
        // A count past the bound, with its sum made right.
        let mut big = MAGIC.to_vec();
        big.extend_from_slice(&u32::MAX.to_le_bytes());
        let sum = fnv1a(&big);
        big.extend_from_slice(&sum.to_le_bytes());
        assert_eq!(decode(&big), Err(StateError::TooMany(u32::MAX)));
    }

    #[test]
    fn a_plan_by_name_is_not_saved_as_a_baseline() {
        let mut p = base();
        p.nodes[0].node = NodeRef::Name("x".into());
        assert_eq!(encode(&p), Err(StateError::NotByGuid));
    }

    #[test]
    fn the_file_is_not_written_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let path = dir.path().join("state.plan");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        save(&path, &base()).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(load(&path).unwrap().links, base().links);
    }
}
