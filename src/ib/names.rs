//! The node-name-map: the names a site gives its nodes, by node GUID, in
//! the format rdma-core's tools (ibnetdiscover, iblinkinfo, ibqueryerrors,
//! opensm) read.
//!
//! ```text
//! # leaf switches, rack 7
//! 0x0008f104003f125c "leaf07"
//! 0x0008f104003f125d   leaf08      # an unquoted name ends at '#'
//! ```
//!
//! One entry per line: a GUID (`0x` and hex digits, or decimal digits),
//! whitespace, and a name. Blank lines and lines starting with `#` are
//! comments. As rdma-core reads it (`map_name` in its node_name_map.c), a
//! name is the text after the GUID up to the next `"` or `#`, its opening
//! quote skipped: `"a#b"` names the node `a`, and text after the closing
//! quote is ignored; an unquoted name loses its trailing whitespace.
//! Where rdma-core would take something strange, the agent refuses the
//! file, naming the line: a GUID not followed by whitespace, no name (or
//! an empty one, or a `#` comment right after the GUID), a name longer
//! than [`NAME_MAX`] bytes, holding a control byte or not UTF-8, and a
//! GUID named twice with different names. The file is read bounded
//! ([`MAX_FILE`]; a FIFO or a device is refused).
//!
//! [`Names`] is the live map of a running agent: re-read when its file's
//! modification time changes (looked at when a sweep publishes) or on
//! SIGHUP; a map that fails to read keeps the last good one in use.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwap;

use super::Guid;
use super::lines::{LineError, excerpt, read_text};

/// rdma-core's default map, which its diagnostics read when none is
/// given (IBDIAG_NODENAME_MAP_PATH).
pub const DEFAULT_PATH: &str = "/etc/rdma/ib-node-name-map";

/// The largest map read, in bytes (a fabric of 100,000 nodes named in 60
/// bytes each takes 6 MB).
pub const MAX_FILE: u64 = 16 << 20;

/// The longest name, in bytes (rdma-core reads lines of at most 255).
pub const NAME_MAX: usize = 255;

/// A name of the map, as a node record holds it: one pointer (a record
/// holds it as an option, and the record of every node is kept).
pub type MappedName = Arc<Arc<str>>;

/// Node names by node GUID.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NameMap {
    names: HashMap<Guid, MappedName>,
}

/// A map that cannot be read, with the line at fault (0: the whole file).
pub type NamesError = LineError;

fn bad<T>(line: usize, reason: impl Into<String>) -> Result<T, NamesError> {
    Err(LineError::new("node-name-map", line, reason))
}

/// A GUID at the start of `s`: `0x` hex or decimal digits, and the rest.
fn guid(s: &str) -> Option<(Guid, &str)> {
    let (radix, digits) = match s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        Some(h) => (16, h),
        None => (10, s),
    };
    let end = digits
        .find(|c: char| !c.is_digit(radix))
        .unwrap_or(digits.len());
    let v = u64::from_str_radix(&digits[..end], radix).ok()?;
    Some((Guid(v), &digits[end..]))
}

/// One line's entry (`None`: a comment or a blank line).
fn entry(line: usize, text: &str) -> Result<Option<(Guid, &str)>, NamesError> {
    let text = text.trim_start();
    if text.is_empty() || text.starts_with('#') {
        return Ok(None);
    }
    let Some((g, rest)) = guid(text) else {
        return bad(line, format!("`{}` is not a GUID", excerpt(text)));
    };
    if !rest.is_empty() && !rest.starts_with(char::is_whitespace) {
        return bad(line, format!("`{}` is not a GUID", excerpt(text)));
    }
    let rest = rest.trim_start();
    if rest.is_empty() || rest.starts_with('#') {
        return bad(line, format!("no name after GUID {g}"));
    }
    // As rdma-core: the first run of text that holds no '"' nor '#'.
    let rest = rest.trim_start_matches('"');
    let name = match rest.find(['"', '#']) {
        Some(end) => &rest[..end],
        None => rest,
    }
    .trim_end();
    if name.is_empty() {
        return bad(line, format!("an empty name for GUID {g}"));
    }
    if name.len() > NAME_MAX {
        return bad(
            line,
            format!(
                "the name of GUID {g} is {} bytes, longer than the {NAME_MAX} allowed",
                name.len()
            ),
        );
    }
    if name.chars().any(char::is_control) {
        return bad(
            line,
            format!("the name of GUID {g} holds a control character"),
        );
    }
    Ok(Some((g, name)))
}

impl NameMap {
    /// The name the map gives `guid`.
    pub fn get(&self, guid: Guid) -> Option<&Arc<str>> {
        self.names.get(&guid).map(|n| &**n)
    }

    /// The name the map gives `guid`, shared as a node record holds it.
    pub fn shared(&self, guid: Guid) -> Option<&MappedName> {
        self.names.get(&guid)
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    /// The names, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (Guid, &Arc<str>)> {
        self.names.iter().map(|(g, n)| (*g, &**n))
    }

    /// Parse a map's bytes; the first bad line refuses it.
    pub fn parse(bytes: &[u8]) -> Result<NameMap, NamesError> {
        let mut names: HashMap<Guid, (Arc<str>, usize)> = HashMap::new();
        for (i, raw) in bytes.split(|&b| b == b'\n').enumerate() {
            let line = i + 1;
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let Ok(text) = std::str::from_utf8(raw) else {
                return bad(line, "not UTF-8 text");
            };
            let Some((g, name)) = entry(line, text)? else {
                continue;
            };
            match names.get(&g) {
                Some((first, _)) if **first == *name => {}
                Some((first, at)) => {
                    return bad(
                        line,
                        format!(
                            "GUID {g} is named \"{}\" here and \"{}\" on line {at}",
                            excerpt(name),
                            excerpt(first)
                        ),
                    );
                }
                None => {
                    names.insert(g, (name.into(), line));
                }
            }
        }
        Ok(NameMap {
            names: names
                .into_iter()
                .map(|(g, (n, _))| (g, Arc::new(n)))
                .collect(),
        })
    }

    /// Read and parse a map file, bounded ([`MAX_FILE`]).
    pub fn load(path: &Path) -> Result<NameMap, NamesError> {
        let bytes = read_text("node-name-map", path, MAX_FILE)?;
        NameMap::parse(&bytes).map_err(|e| e.in_file(path))
    }
}

/// The map file's identity as last read: its modification time and size.
type Stamp = Option<(SystemTime, u64)>;

fn stamp(path: &Path) -> Stamp {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

/// What a reload found wrong (the last said in the log, said once).
#[derive(Default)]
struct Watch {
    stamp: Stamp,
    /// The error last logged, not logged again until it changes or a
    /// map reads well.
    failing: Option<String>,
}

/// The live node-name-map of an agent: the map in use, where it comes
/// from, and when it is read again.
pub struct Names {
    /// The file (None: no map).
    path: Option<PathBuf>,
    map: ArcSwap<NameMap>,
    /// Raised by each map put in use (0: none ever).
    generation: AtomicU64,
    /// Set by SIGHUP: read the file again at the next look.
    hup: Arc<AtomicBool>,
    watch: Mutex<Watch>,
}

impl fmt::Debug for Names {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Names")
            .field("path", &self.path)
            .field("names", &self.map.load().len())
            .finish()
    }
}

impl Default for Names {
    fn default() -> Self {
        Names::with(None, NameMap::default())
    }
}

/// Two handles are the same configuration when they read the same file.
impl PartialEq for Names {
    fn eq(&self, other: &Self) -> bool {
        self.path == other.path
    }
}

impl Names {
    fn with(path: Option<PathBuf>, map: NameMap) -> Names {
        let stamp = path.as_deref().and_then(stamp);
        Names {
            path,
            map: ArcSwap::from_pointee(map),
            generation: AtomicU64::new(1),
            hup: Arc::new(AtomicBool::new(false)),
            watch: Mutex::new(Watch {
                stamp,
                failing: None,
            }),
        }
    }

    /// A fixed map, read from no file.
    pub fn fixed(map: NameMap) -> Names {
        Names::with(None, map)
    }

    /// The map `configured` names (an error refuses it); when none is
    /// configured, rdma-core's default map when that file exists (one
    /// that cannot be read is logged and left out).
    pub fn open(configured: Option<&Path>) -> Result<Names, NamesError> {
        Names::open_or(configured, Path::new(DEFAULT_PATH))
    }

    fn open_or(configured: Option<&Path>, default: &Path) -> Result<Names, NamesError> {
        if let Some(p) = configured {
            let map = NameMap::load(p)?;
            tracing::info!(file = %p.display(), names = map.len(), "node-name-map read");
            return Ok(Names::with(Some(p.to_path_buf()), map));
        }
        if !default.exists() {
            return Ok(Names::default());
        }
        match NameMap::load(default) {
            Ok(map) => {
                tracing::info!(
                    file = %default.display(),
                    names = map.len(),
                    "node-name-map read from rdma-core's default path (fabric.node_name_map is not set)"
                );
                Ok(Names::with(Some(default.to_path_buf()), map))
            }
            Err(e) => {
                tracing::warn!("{e}; nodes are named by their NodeDescription");
                Ok(Names::with(Some(default.to_path_buf()), NameMap::default()))
            }
        }
    }

    /// The file the names come from.
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// The map in use.
    pub fn current(&self) -> Arc<NameMap> {
        self.map.load_full()
    }

    /// Raised each time another map is put in use.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Read the file again at the next [`Names::refresh`] (what SIGHUP
    /// does).
    pub fn request_reload(&self) {
        self.hup.store(true, Ordering::Release);
    }

    /// Make SIGHUP request a reload.
    pub fn reload_on_sighup(&self) -> std::io::Result<()> {
        signal_hook::flag::register(signal_hook::consts::SIGHUP, Arc::clone(&self.hup)).map(drop)
    }

    /// Read the file again when SIGHUP asked or its modification time or
    /// size changed; true when another map was put in use. A file that
    /// fails keeps the map in use (logged once until it changes).
    pub fn refresh(&self) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let mut w = self.watch.lock().unwrap_or_else(|e| e.into_inner());
        let now = stamp(path);
        let hup = self.hup.swap(false, Ordering::AcqRel);
        if !hup && now == w.stamp {
            return false;
        }
        w.stamp = now;
        match NameMap::load(path) {
            Ok(map) => {
                w.failing = None;
                if *self.map.load_full() == map {
                    return false;
                }
                tracing::info!(file = %path.display(), names = map.len(), "node-name-map read again");
                self.map.store(Arc::new(map));
                self.generation.fetch_add(1, Ordering::AcqRel);
                true
            }
            Err(e) => {
                let e = e.to_string();
                if w.failing.as_deref() != Some(&e) {
                    tracing::warn!("{e}; the names read before stay in use");
                    w.failing = Some(e);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests;
