//! Plan files: `[topology] plan` in either of two forms, told apart by
//! their first line that is neither blank nor a `#` comment:
//! - ibnetdiscover's output (`ibnetdiscover > plan.topo`, or `ibpm-agentx
//!   topology save`): a first line that is one of its keywords
//!   (`vendid=`, `devid=`, `sysimgguid=`, `switchguid=`, `caguid=`,
//!   `Switch`, `Ca`, `Hca`, `Rt`, ...), read by the topology parser
//!   ([`ibnetdiscover`]);
//! - otherwise a cabling table as CSV ([`csv`]).
//!
//! Both are read bounded ([`MAX_FILE`]; a FIFO or a device is refused),
//! as UTF-8 text, and every name in them is at most [`NAME_MAX`] bytes
//! without control characters. A plan's error names the file, the line
//! and the reason, on one line.

use std::path::Path;

use crate::ib::cabling::Plan;
pub(crate) use crate::ib::lines::excerpt;
use crate::ib::lines::{LineError, read_text};

pub mod csv;
pub mod ibnetdiscover;

#[cfg(test)]
mod tests;

/// The largest plan file read, in bytes (the topology files' bound: a
/// fabric of 100,000 nodes of 40 ports in ibnetdiscover's format takes
/// about 60 MB; its cabling table far less).
pub const MAX_FILE: u64 = crate::ib::topology::MAX_FILE;

/// The longest node name a plan may hold, in bytes (a node-name-map's
/// longest name: a plan names nodes as the map or their NodeDescription
/// do).
pub const NAME_MAX: usize = crate::ib::names::NAME_MAX;

/// A plan that cannot be read: the file, the line (0: the whole file)
/// and the reason.
pub type PlanError = LineError;

pub(crate) fn bad<T>(line: usize, reason: impl Into<String>) -> Result<T, PlanError> {
    Err(LineError::new("plan", line, reason))
}

/// A name a plan gives a node: not empty, at most [`NAME_MAX`] bytes, no
/// control characters.
pub(crate) fn check_name(line: usize, name: &str) -> Result<(), PlanError> {
    if name.is_empty() {
        return bad(line, "an empty node name");
    }
    if name.len() > NAME_MAX {
        return bad(
            line,
            format!(
                "the node name \"{}\" is {} bytes, longer than the {NAME_MAX} allowed",
                excerpt(name),
                name.len()
            ),
        );
    }
    if name.chars().any(char::is_control) {
        return bad(
            line,
            format!(
                "the node name \"{}\" holds a control character",
                excerpt(name).escape_debug()
            ),
        );
    }
    Ok(())
}

/// The first words ibnetdiscover's (and ibsim's) files start with.
const IBNETDISCOVER_WORDS: &[&str] = &[
    "vendid",
    "devid",
    "sysimgguid",
    "switchguid",
    "caguid",
    "hcaguids",
    "rtguid",
    "Switch",
    "Ca",
    "Hca",
    "Rt",
    "width",
    "speed",
    "extspeed",
    "pdebug",
];

/// Whether `text` is in ibnetdiscover's format (else a cabling table).
pub fn is_ibnetdiscover(text: &str) -> bool {
    let Some(first) = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#'))
    else {
        return false;
    };
    let word: String = first
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    IBNETDISCOVER_WORDS.contains(&word.as_str())
}

/// Parse a plan's bytes, in either form.
pub fn parse_plan(bytes: &[u8]) -> Result<Plan, PlanError> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let line = 1 + bytes[..e.valid_up_to()]
                .iter()
                .filter(|&&b| b == b'\n')
                .count();
            return bad(line, "not UTF-8 text");
        }
    };
    if is_ibnetdiscover(text) {
        ibnetdiscover::parse(text)
    } else {
        csv::parse(text)
    }
}

/// Read and parse the plan file `path` (what `[topology] plan` names).
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    let bytes = read_text("plan", path, MAX_FILE)?;
    parse_plan(&bytes).map_err(|e| e.in_file(path))
}
