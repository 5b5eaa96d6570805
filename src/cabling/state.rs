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

use crate::files::{SealError, Sealed, Truncated};
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

/// The file's format.
pub const FILE: Sealed = Sealed {
    magic: MAGIC,
    max: MAX_FILE,
    what: "a baseline file",
};

/// Why a baseline file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StateError {
    /// A fault of the frame every state file shares.
    Frame(SealError),
    BadName,
    NotByGuid,
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Frame(e) => e.fmt(f),
            StateError::BadName => f.write_str("a name that is not UTF-8"),
            StateError::NotByGuid => f.write_str("a plan by name is no baseline"),
        }
    }
}

impl std::error::Error for StateError {}

impl From<SealError> for StateError {
    fn from(e: SealError) -> Self {
        StateError::Frame(e)
    }
}

impl From<Truncated> for StateError {
    fn from(t: Truncated) -> Self {
        StateError::Frame(t.into())
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
        return Err(too_many(plan.nodes.len(), MAX_NODES));
    }
    if plan.links.len() > MAX_LINKS {
        return Err(too_many(plan.links.len(), MAX_LINKS));
    }
    let mut out = FILE.start(8 + plan.nodes.len() * (NODE_LEN + 16) + plan.links.len() * LINK_LEN);
    out.extend_from_slice(&(plan.nodes.len() as u32).to_le_bytes());
    for n in &plan.nodes {
        out.extend_from_slice(&guid_of(&n.node)?.0.to_le_bytes());
        out.push(n.node_type.map_or(0, NodeType::code));
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
    Ok(FILE.seal(out))
}

fn too_many(n: usize, max: usize) -> StateError {
    SealError::TooMany {
        count: u32::try_from(n).unwrap_or(u32::MAX),
        max,
    }
    .into()
}

/// Decode a baseline file's bytes.
pub fn decode(bytes: &[u8]) -> Result<Plan, StateError> {
    let mut c = FILE.open(bytes)?;
    let mut plan = Plan {
        source: PlanSource::Baseline,
        nodes: Vec::new(),
        links: Vec::new(),
    };
    let nodes = c.count(MAX_NODES, NODE_LEN)?;
    plan.nodes.reserve(nodes);
    for _ in 0..nodes {
        let guid = Guid(c.u64()?);
        let node_type = NodeType::from_code(c.u8()?);
        let len = usize::from(c.u8()?);
        let name = std::str::from_utf8(c.bytes(len)?).map_err(|_| StateError::BadName)?;
        plan.nodes.push(PlannedNode {
            node: NodeRef::Guid(guid),
            node_type,
            name: (!name.is_empty()).then(|| Arc::from(name)),
            line: 0,
        });
    }
    let links = c.count(MAX_LINKS, LINK_LEN)?;
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
    c.finish()?;
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
    decode(&FILE.read(path)?)
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
        assert_eq!(decode(&flipped), Err(SealError::Checksum.into()));
        let mut other = bytes.clone();
        other[0] = b'X';
        assert_eq!(
            decode(&other).unwrap_err().to_string(),
            "not a baseline file"
        );
        // A count past the bound, with its sum made right.
        let mut big = FILE.start(4);
        big.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode(&FILE.seal(big)),
            Err(too_many(u32::MAX as usize, MAX_NODES))
        );
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
