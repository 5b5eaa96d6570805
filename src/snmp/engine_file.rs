//! Where the endpoint's snmpEngineID and snmpEngineBoots live across
//! restarts (RFC 3414 2.2: boots is raised at every start, so a message
//! captured before a restart is outside the time window after it). A text
//! file of two lines, read as untrusted input and written atomically:
//!
//! ```text
//! engine_id 800000000501020304a1b2c3d4
//! boots 7
//! ```

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

use super::usm::{ENGINE_MAX, EngineId, EngineIdError};
use crate::files::{read_untrusted, write_atomic};

/// The largest engine file read.
const MAX_FILE: u64 = 4096;

/// The engine's identity for this start.
#[derive(Debug)]
pub struct EngineState {
    pub engine_id: EngineId,
    pub boots: u32,
    /// Why the file could not be used, when it could not (a new engine
    /// then starts: clients discover it as they would a new agent).
    pub note: Option<EngineFileError>,
}

/// Why the engine file's state is not used (a new engine starts), or why
/// this start's engine cannot be made or kept.
#[derive(Debug)]
pub enum EngineFileError {
    /// The file cannot be read.
    Read(io::Error),
    /// It is not UTF-8 text.
    NotText,
    /// This line is neither `engine_id HEX` nor `boots N`.
    BadLine(usize),
    /// This line's engine ID is wrong.
    EngineId { line: usize, error: EngineIdError },
    /// `engine_id` or `boots` is missing.
    Incomplete,
    /// No engine ID could be generated.
    Generate(getrandom::Error),
    /// The file cannot be written.
    Write { path: PathBuf, error: io::Error },
}

impl fmt::Display for EngineFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineFileError::Read(e) => e.fmt(f),
            EngineFileError::NotText => f.write_str("not UTF-8 text"),
            EngineFileError::BadLine(n) => {
                write!(f, "line {n}: not `engine_id HEX` or `boots N`")
            }
            EngineFileError::EngineId { line, error } => write!(f, "line {line}: {error}"),
            EngineFileError::Incomplete => f.write_str("it lacks `engine_id` or `boots`"),
            EngineFileError::Generate(e) => write!(f, "cannot make an SNMPv3 engine ID: {e}"),
            EngineFileError::Write { path, error } => {
                write!(f, "cannot write {}: {error}", path.display())
            }
        }
    }
}

impl std::error::Error for EngineFileError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EngineFileError::Read(e) | EngineFileError::Write { error: e, .. } => Some(e),
            EngineFileError::EngineId { error, .. } => Some(error),
            EngineFileError::Generate(e) => Some(e),
            _ => None,
        }
    }
}

/// The state the file held, parsed.
fn parse(text: &str) -> Result<(EngineId, u32), EngineFileError> {
    let (mut id, mut boots) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || EngineFileError::BadLine(n + 1);
        match line.split_once(' ') {
            Some(("engine_id", v)) => {
                let parsed = EngineId::from_hex(v.trim());
                id = Some(parsed.map_err(|error| EngineFileError::EngineId { line: n + 1, error })?)
            }
            Some(("boots", v)) => boots = Some(v.trim().parse::<u32>().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    match (id, boots) {
        (Some(i), Some(b)) => Ok((i, b)),
        _ => Err(EngineFileError::Incomplete),
    }
}

/// The state for this start, from what the file held (`None`: no file) and
/// the configured engine ID: the file's ID with its boots raised by one
/// (latched at 2147483647, RFC 3414 2.2.2), or a new engine at boots 1
/// when the configured ID differs or there was none. `generate` makes a new
/// engine ID.
pub fn next_state(
    held: Option<Result<(EngineId, u32), EngineFileError>>,
    configured: Option<&EngineId>,
    generate: impl FnOnce() -> Result<EngineId, EngineFileError>,
) -> Result<EngineState, EngineFileError> {
    let (prev, note) = match held {
        None => (None, None),
        Some(Ok(p)) => (Some(p), None),
        Some(Err(e)) => (None, Some(e)),
    };
    match (prev, configured) {
        (Some((id, boots)), c) if c.is_none_or(|c| *c == id) => Ok(EngineState {
            engine_id: id,
            boots: boots.saturating_add(1).min(ENGINE_MAX),
            note,
        }),
        (_, Some(c)) => Ok(EngineState {
            engine_id: c.clone(),
            boots: 1,
            note,
        }),
        (_, None) => Ok(EngineState {
            engine_id: generate()?,
            boots: 1,
            note,
        }),
    }
}

/// A new engine ID from the operating system's random source.
fn generate() -> Result<EngineId, EngineFileError> {
    EngineId::generate().map_err(EngineFileError::Generate)
}

/// This start's state without a file: the configured engine ID or a new
/// one, at boots 1.
pub fn without_file(configured: Option<&EngineId>) -> Result<EngineState, EngineFileError> {
    next_state(None, configured, generate)
}

/// Reads the engine file at `path`, works out this start's state and
/// writes it back before the endpoint answers anything.
pub fn load_and_advance(
    path: &Path,
    configured: Option<&EngineId>,
) -> Result<EngineState, EngineFileError> {
    let held = match read_untrusted(path, MAX_FILE) {
        Ok(bytes) => Some(
            String::from_utf8(bytes)
                .map_err(|_| EngineFileError::NotText)
                .and_then(|t| parse(&t)),
        ),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => Some(Err(EngineFileError::Read(e))),
    };
    let state = next_state(held, configured, generate)?;
    let text = format!(
        "# ibpm-agentx SNMPv3 engine: snmpEngineID and snmpEngineBoots (RFC 3414 2.2)\n\
         engine_id {}\nboots {}\n",
        state.engine_id.to_hex(),
        state.boots
    );
    write_atomic(path, text.as_bytes()).map_err(|error| EngineFileError::Write {
        path: path.to_path_buf(),
        error,
    })?;
    Ok(state)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(h: &str) -> EngineId {
        EngineId::from_hex(h).unwrap()
    }

    #[test]
    fn boots_go_up_by_one_and_latch() {
        let a = id("800000000501020304");
        let next = |held, c: Option<&EngineId>| {
            next_state(held, c, || Ok(id("80000000050a0b0c0d"))).unwrap()
        };
        let s = next(Some(Ok((a.clone(), 7))), None);
        assert_eq!((s.engine_id.clone(), s.boots), (a.clone(), 8));
        let s = next(Some(Ok((a.clone(), 7))), Some(&a));
        assert_eq!(s.boots, 8);
        let s = next(Some(Ok((a.clone(), ENGINE_MAX))), None);
        assert_eq!(s.boots, ENGINE_MAX);
        // Another configured ID: a new engine.
        let b = id("80000000050f0f0f0f");
        let s = next(Some(Ok((a.clone(), 7))), Some(&b));
        assert_eq!((s.engine_id, s.boots), (b, 1));
        // No file: a generated one.
        let s = next(None, None);
        assert_eq!((s.engine_id, s.boots), (id("80000000050a0b0c0d"), 1));
        assert!(s.note.is_none());
        // A damaged file: a new engine, and why.
        let s = next(Some(Err(EngineFileError::BadLine(1))), None);
        assert_eq!(s.boots, 1);
        assert!(matches!(s.note, Some(EngineFileError::BadLine(1))));
    }

    #[test]
    fn the_file_round_trips_and_refuses_what_it_cannot_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("engine");
        let a = id("800000000501020304");
        let s1 = load_and_advance(&p, Some(&a)).unwrap();
        assert_eq!((s1.engine_id.clone(), s1.boots), (a.clone(), 1));
        let s2 = load_and_advance(&p, None).unwrap();
        assert_eq!((s2.engine_id.clone(), s2.boots), (a.clone(), 2));
        let s3 = load_and_advance(&p, Some(&a)).unwrap();
        assert_eq!(s3.boots, 3);
        for (text, why) in [
            (
                "engine_id zz\nboots 1\n",
                "line 1: engine ID \"zz\": not a hex string",
            ),
            (
                "engine_id 800000000501020304\n",
                "it lacks `engine_id` or `boots`",
            ),
            (
                "boots -1\nengine_id 800000000501020304\n",
                "line 1: not `engine_id HEX` or `boots N`",
            ),
            ("garbage", "line 1: not `engine_id HEX` or `boots N`"),
        ] {
            std::fs::write(&p, text).unwrap();
            assert_eq!(parse(text).unwrap_err().to_string(), why, "{text}");
            let s = load_and_advance(&p, None).unwrap();
            assert_eq!(s.boots, 1, "{text}");
            assert!(s.note.is_some());
        }
        // A FIFO or a directory is refused at once, never waited on.
        let d = dir.path().join("dir");
        std::fs::create_dir(&d).unwrap();
        let s = next_state(
            Some(
                read_untrusted(&d, MAX_FILE)
                    .map(|_| (a.clone(), 1))
                    .map_err(EngineFileError::Read),
            ),
            None,
            || Ok(a.clone()),
        )
        .unwrap();
        assert!(s.note.is_some());
    }
}
