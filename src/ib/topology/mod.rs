//! Topology files: the format `ibnetdiscover` prints and ibsim reads.
//!
//! ```text
//! switchguid=0x200000(200000)          # optional: GUID of the next switch
//! Switch  8 "S-0000000000200000"       # "Switch1" base port 0 lid 1 lmc 0
//! [1]     "H-0000000000100000"[1](100001)   # "Hca1" lid 2 4xSDR
//! [3]     "Switch2"[3]   w=2 s=1
//!
//! Ca  2 "H-0000000000100000"           # "Hca1"
//! [1](100001)  "S-0000000000200000"[1] # lid 2 lmc 0 "Switch1" lid 1 4xSDR
//! ```
//!
//! A node record is a header line (`Switch`, `Hca`/`Ca` or `Rt`, the number
//! of ports, the quoted node name, optionally `# "description"`) followed by
//! one line per cabled port; a blank line ends the record. Every link must be
//! listed from both ends, as ibsim requires.
//!
//! GUIDs are assigned exactly as ibsim 0.10 assigns them (ibsim/sim_net.c):
//! CAs from 0x100000, each taking `ports + 1` GUIDs (node GUID, then port N's
//! GUID = node GUID + N); switches from 0x200000, one GUID each (every port
//! uses the node GUID); routers like CAs from 0xffff_ffff_ffff_ffff.
//! `caguid=`/`hcaguids=`, `switchguid=` and `rtguid=` set the next GUID of
//! their type (`+N` instead of `=N` counts from the last `=` base); a
//! `(portguid)` suffix is ignored. `sysimgguid=` sets the SystemImageGUID of
//! the next node only (otherwise it is the node GUID). Descriptions come from
//! the `# "..."` comment of the header (or its unquoted text up to ` lid `,
//! ` lmc `, ` base port `, ` enhanced port `), else the node name; at most 63
//! bytes, like ibsim's NodeDescription buffer.
//!
//! LIDs are 0 unless the file gives them (`lid N` on a switch header, the
//! first `lid N` of a CA port line); link width and speed are the active ones
//! ibsim negotiates from the ends' enabled sets (defaults 4x SDR, `width=`,
//! `speed=`, `extspeed=` lines, `w=`/`s=`/`e=` port options, or an
//! ibnetdiscover `lid N 4xQDR` comment), and a port's enabled sets are kept
//! ([`crate::ib::LinkCaps`]; the file does not say what a port supports).
//! Widths 1x, 2x, 4x, 8x, 12x; speeds SDR to XDR: `e=`/`extspeed=` are
//! rdma-core's aggregated extended speeds (1 FDR, 2 EDR, 4 HDR, 8 NDR, 32
//! XDR), comments name the speed (`2xNDR`, `4xFDR10`, `4xXDR`). A width or
//! speed in a comment that the parser does not know (`3x`, `???`) leaves
//! that link's width or speed unknown, with one warning naming the line
//! ([`parse_with_warnings`]; [`load`] and [`parse`] log them).
//!
//! `vendid=` sets the next node's NodeInfo VendorID, `devid=` the DeviceID
//! of every node after it (as ibsim does); `pdebug=` and `do ...` lines are
//! accepted and have no effect here; `include`, `module` and `@alias` lines are not supported.
//!
//! A file may hold several disconnected fabrics, the planes of
//! [`crate::ib::planes`]; a comment line `# subnetprefix=0xfe80000000000002`
//! gives the subnet prefix of the plane of the node after it ([`Topology`]).

use std::path::Path;

use crate::ib::Fabric;
use crate::ib::lines::{LineError, read_text};
use crate::ib::planes::PrefixDecl;

mod parse;
pub mod write;

pub use parse::{PlanFacts, PortFacts, parse, parse_plan, parse_topology, parse_with_warnings};
use parse::{parse_all, warn_all};

/// A topology file's fabric and the subnet prefixes it gives its planes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    pub fabric: Fabric,
    pub prefixes: Vec<PrefixDecl>,
}

/// The built-in default fabric (2 spine + 4 leaf switches, 12 HCAs).
pub const DEFAULT_FABRIC_TEXT: &str = include_str!("../../../config/default-fabric.net");

/// A topology file problem, with the line it was found on (1-based).
pub type TopologyError = LineError;

pub(super) fn err<T>(line: usize, reason: impl Into<String>) -> Result<T, TopologyError> {
    Err(LineError::new("topology", line, reason))
}

/// The largest topology file read, in bytes (a fabric of 100,000 nodes
/// of 40 ports takes about 200 MB in memory; its file about 60 MB).
pub const MAX_FILE: u64 = 64 << 20;

/// Whether `path` can be read as a topology: it opens, as a regular file
/// of at most [`MAX_FILE`] bytes (nothing is read).
pub fn check_readable(path: &Path) -> std::io::Result<()> {
    let meta = std::fs::metadata(path)?;
    if !meta.file_type().is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    if meta.len() > MAX_FILE {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{} bytes, more than the {MAX_FILE} allowed", meta.len()),
        ));
    }
    std::fs::File::open(path).map(drop)
}

/// Reads and parses a topology file.
pub fn load(path: &Path) -> Result<Fabric, TopologyError> {
    load_topology(path).map(|t| t.fabric)
}

/// Reads and parses a topology file, with its planes' prefixes.
pub fn load_topology(path: &Path) -> Result<Topology, TopologyError> {
    let text = read_text("topology", path, MAX_FILE)?;
    let text = String::from_utf8_lossy(&text);
    let in_file = |e: TopologyError| e.in_file(path);
    let (topology, warnings) = parse_all(&text).map_err(in_file)?;
    warn_all(&warnings.into_iter().map(in_file).collect::<Vec<_>>());
    Ok(topology)
}

/// The built-in default fabric.
pub fn default_fabric() -> Fabric {
    // The text is part of the program and covered by tests.
    parse(DEFAULT_FABRIC_TEXT).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::{NodeType, PortState};

    #[test]
    fn default_fabric_parses() {
        let f = parse(DEFAULT_FABRIC_TEXT).expect("built-in fabric");
        assert_eq!(f, default_fabric());
        let sw = f
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Switch)
            .count();
        let ca = f
            .nodes
            .iter()
            .filter(|n| n.id.node_type == NodeType::Ca)
            .count();
        assert_eq!((sw, ca), (6, 12));
    }

    #[test]
    fn an_enhanced_port_0_is_a_port_of_its_own() {
        let text = "Switch 4 \"S-1\" # \"sw one\" enhanced port 0 lid 7 lmc 0\n\
                    [1] \"H-1\"[1]\n\n\
                    Switch 4 \"S-2\" # \"sw two\" base port 0 lid 8 lmc 0\n\n\
                    Hca 1 \"H-1\"\n[1] \"S-1\"[1]\n";
        let f = parse(text).expect("topology");
        let by = |d: &str| f.nodes.iter().find(|n| &*n.id.description == d).unwrap();
        let nums = |d: &str| by(d).ports.iter().map(|p| p.num).collect::<Vec<_>>();
        assert_eq!(nums("sw one"), [0, 1, 2, 3, 4]);
        assert_eq!(nums("sw two"), [1, 2, 3, 4]);
        let p0 = by("sw one").port(0).unwrap();
        assert_eq!(
            (p0.lid, p0.remote(), p0.state),
            (7, None, Some(PortState::Active))
        );
        assert_eq!(by("sw one").id.num_ports, 4);
    }
}

#[cfg(test)]
mod degenerate {
    use super::*;

    #[test]
    fn a_topology_without_nodes_is_refused() {
        for text in ["", "# nothing\n\n", "switchguid=0x10\nwidth=1\n"] {
            let e = parse(text).expect_err(text);
            assert!(e.reason.contains("no nodes"), "{e}");
        }
    }

    #[test]
    fn guids_that_wrap_to_0_are_refused() {
        let sw = "switchguid=0\nSwitch 2 \"S\"\n[1] \"H\"[1]\n";
        assert!(parse(sw).unwrap_err().reason.contains("wrap around to 0"));
        let ca = "caguid=0xffffffffffffffff\nHca 2 \"H\"\n[1] \"S\"[1]\n";
        assert!(parse(ca).unwrap_err().reason.contains("wrap around to 0"));
    }

    /// A huge line gives an error line of bounded length, whatever part
    /// of it is wrong.
    #[test]
    fn huge_lines_give_short_errors() {
        let big = "x".repeat(10 << 20);
        for text in [
            big.clone(),
            format!("{big}=1"),
            format!("width={big}"),
            format!("Switch 2 \"{big}\"\n"),
            format!("Switch 2 \"S\" {big}\n[1] \"H\"[1]\n"),
            format!("Switch 2 \"S\"\n[1] \"{big}\"[1]\n"),
            format!("Switch 2 \"S\"\n[1] \"H\"[1] {big}\n"),
            format!("Switch 2 \"S\"\n[1{big}] \"H\"[1]\n"),
        ] {
            let e = parse(&text).expect_err("refused").to_string();
            assert!(e.len() < 400, "{} bytes: {}...", e.len(), &e[..200]);
        }
    }
}
