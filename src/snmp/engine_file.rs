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
}

/// Why this start's engine cannot be made or kept. The endpoint does not
/// start then: an engine file it cannot read would lose snmpEngineBoots, and
/// the same engine ID at the same boots again accepts what was captured in
/// an earlier run.
#[derive(Debug)]
pub enum EngineFileError {
    /// The file cannot be used (`why`).
    Unusable { path: PathBuf, why: FileProblem },
    /// `snmp.engine_id` is set, but no `snmp.engine_file` keeps its boots.
    NoFile,
    /// No engine ID could be generated.
    Generate(getrandom::Error),
    /// The file cannot be written.
    Write { path: PathBuf, error: io::Error },
}

/// What is wrong with an engine file.
#[derive(Debug)]
pub enum FileProblem {
    /// It cannot be read (a FIFO, a directory, over 4096 bytes, no
    /// permission ...).
    Read(io::Error),
    /// It is not UTF-8 text.
    NotText,
    /// This line is neither `engine_id HEX` nor `boots N`.
    BadLine(usize),
    /// This line's engine ID is wrong.
    EngineId { line: usize, error: EngineIdError },
    /// `engine_id` or `boots` is missing.
    Incomplete,
    /// It keeps another engine ID than `snmp.engine_id`.
    OtherEngine { held: EngineId },
}

impl fmt::Display for FileProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileProblem::Read(e) => write!(f, "cannot read it: {e}"),
            FileProblem::NotText => f.write_str("not UTF-8 text"),
            FileProblem::BadLine(n) => {
                write!(f, "line {n}: not `engine_id HEX` or `boots N`")
            }
            FileProblem::EngineId { line, error } => write!(f, "line {line}: {error}"),
            FileProblem::Incomplete => f.write_str("it lacks `engine_id` or `boots`"),
            FileProblem::OtherEngine { held } => write!(
                f,
                "it keeps engine ID {held}, not the configured snmp.engine_id"
            ),
        }
    }
}

/// Why `snmp.engine_id` needs `snmp.engine_file` (the configuration check
/// and the start say it alike).
pub const NO_FILE: &str = "is set without snmp.engine_file: snmpEngineBoots would start at 1 \
     at every start, and a request captured in an earlier run would be accepted again; set \
     snmp.engine_file, or leave snmp.engine_id empty for a new random engine ID at every start";

/// What the operator may do about an unusable file.
const REMEDY: &str = "the SNMPv3 engine does not start without its boots (a request captured \
     before would be accepted again); repair the file, or remove it to start a new engine at \
     boots 1 (managers discover it again)";

impl fmt::Display for EngineFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EngineFileError::Unusable { path, why } => {
                write!(f, "{}: {why}: {REMEDY}", path.display())
            }
            EngineFileError::NoFile => f.write_str(NO_FILE),
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
            EngineFileError::Unusable {
                why: FileProblem::Read(e),
                ..
            }
            | EngineFileError::Write { error: e, .. } => Some(e),
            EngineFileError::Unusable {
                why: FileProblem::EngineId { error, .. },
                ..
            } => Some(error),
            EngineFileError::Generate(e) => Some(e),
            _ => None,
        }
    }
}

/// The state the file held, parsed.
fn parse(text: &str) -> Result<(EngineId, u32), FileProblem> {
    let (mut id, mut boots) = (None, None);
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = || FileProblem::BadLine(n + 1);
        match line.split_once(' ') {
            Some(("engine_id", v)) => {
                let parsed = EngineId::from_hex(v.trim());
                id = Some(parsed.map_err(|error| FileProblem::EngineId { line: n + 1, error })?)
            }
            Some(("boots", v)) => boots = Some(v.trim().parse::<u32>().map_err(|_| bad())?),
            _ => return Err(bad()),
        }
    }
    match (id, boots) {
        (Some(i), Some(b)) => Ok((i, b)),
        _ => Err(FileProblem::Incomplete),
    }
}

/// The state for this start, from what the file held (`None`: no file yet)
/// and the configured engine ID: the file's ID with its boots raised by one
/// (latched at 2147483647, RFC 3414 2.2.2), or, without a file, the
/// configured ID at boots 1; `None`: a new engine ID is to be made. A file
/// that keeps another ID than the configured one is refused.
pub fn next_state(
    held: Option<(EngineId, u32)>,
    configured: Option<&EngineId>,
) -> Result<Option<EngineState>, FileProblem> {
    match (held, configured) {
        (Some((id, boots)), c) if c.is_none_or(|c| *c == id) => Ok(Some(EngineState {
            engine_id: id,
            boots: boots.saturating_add(1).min(ENGINE_MAX),
        })),
        (Some((held, _)), _) => Err(FileProblem::OtherEngine { held }),
        (None, Some(c)) => Ok(Some(EngineState {
            engine_id: c.clone(),
            boots: 1,
        })),
        (None, None) => Ok(None),
    }
}

/// A new engine ID from the operating system's random source.
fn generate() -> Result<EngineId, EngineFileError> {
    EngineId::generate().map_err(EngineFileError::Generate)
}

/// This start's state without a file: a new random engine ID at boots 1
/// (no earlier run had it, so nothing captured before is accepted). A
/// configured ID without a file is refused ([`EngineFileError::NoFile`]).
pub fn without_file(configured: Option<&EngineId>) -> Result<EngineState, EngineFileError> {
    if configured.is_some() {
        return Err(EngineFileError::NoFile);
    }
    Ok(EngineState {
        engine_id: generate()?,
        boots: 1,
    })
}

/// What the engine file at `path` holds (`None`: there is none yet),
/// checked against the configured engine ID; nothing is written (what
/// `check-config` reads).
pub fn check(
    path: &Path,
    configured: Option<&EngineId>,
) -> Result<Option<(EngineId, u32)>, EngineFileError> {
    let unusable = |why| EngineFileError::Unusable {
        path: path.to_path_buf(),
        why,
    };
    let held = match read_untrusted(path, MAX_FILE) {
        Ok(bytes) => String::from_utf8(bytes)
            .map_err(|_| FileProblem::NotText)
            .and_then(|t| parse(&t))
            .map(Some),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(FileProblem::Read(e)),
    }
    .map_err(unusable)?;
    if let (Some((id, _)), Some(c)) = (&held, configured)
        && id != c
    {
        return Err(unusable(FileProblem::OtherEngine { held: id.clone() }));
    }
    // The file is written beside itself: its directory must be there.
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(EngineFileError::Write {
                path: path.to_path_buf(),
                error: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
            });
        }
        Err(error) => {
            return Err(EngineFileError::Write {
                path: path.to_path_buf(),
                error,
            });
        }
    }
    Ok(held)
}

/// Reads the engine file at `path`, works out this start's state and
/// writes it back (synced, with its directory) before the endpoint answers
/// anything. A file that cannot be read or parsed is refused, never
/// overwritten.
pub fn load_and_advance(
    path: &Path,
    configured: Option<&EngineId>,
) -> Result<EngineState, EngineFileError> {
    let held = check(path, configured)?;
    let next = next_state(held, configured).map_err(|why| EngineFileError::Unusable {
        path: path.to_path_buf(),
        why,
    })?;
    let state = match next {
        Some(s) => s,
        None => EngineState {
            engine_id: generate()?,
            boots: 1,
        },
    };
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
        let next = |held, c: Option<&EngineId>| next_state(held, c).unwrap().unwrap();
        let s = next(Some((a.clone(), 7)), None);
        assert_eq!((s.engine_id.clone(), s.boots), (a.clone(), 8));
        let s = next(Some((a.clone(), 7)), Some(&a));
        assert_eq!(s.boots, 8);
        let s = next(Some((a.clone(), ENGINE_MAX)), None);
        assert_eq!(s.boots, ENGINE_MAX);
        // No file yet: the configured ID at boots 1, or a new one.
        let s = next(None, Some(&a));
        assert_eq!((s.engine_id, s.boots), (a.clone(), 1));
        assert!(next_state(None, None).unwrap().is_none());
        // Another configured ID than the file keeps: refused, not a new
        // engine at boots 1 (its ID may have run before).
        let b = id("80000000050f0f0f0f");
        let e = next_state(Some((a.clone(), 7)), Some(&b)).unwrap_err();
        assert!(matches!(e, FileProblem::OtherEngine { held } if held == a));
    }

    #[test]
    fn a_configured_id_without_a_file_is_refused() {
        let a = id("800000000501020304");
        let e = without_file(Some(&a)).unwrap_err();
        assert!(matches!(e, EngineFileError::NoFile), "{e}");
        let s1 = without_file(None).unwrap();
        let s2 = without_file(None).unwrap();
        assert_eq!((s1.boots, s2.boots), (1, 1));
        assert_ne!(s1.engine_id, s2.engine_id, "a new random ID each start");
    }

    #[test]
    fn the_file_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("engine");
        let a = id("800000000501020304");
        let s1 = load_and_advance(&p, Some(&a)).unwrap();
        assert_eq!((s1.engine_id.clone(), s1.boots), (a.clone(), 1));
        let s2 = load_and_advance(&p, None).unwrap();
        assert_eq!((s2.engine_id.clone(), s2.boots), (a.clone(), 2));
        let s3 = load_and_advance(&p, Some(&a)).unwrap();
        assert_eq!(s3.boots, 3);
        assert_eq!(check(&p, Some(&a)).unwrap(), Some((a.clone(), 3)));
        // A directory that is not there: refused before anything is written.
        let e = load_and_advance(&dir.path().join("no/engine"), None).unwrap_err();
        assert!(matches!(e, EngineFileError::Write { .. }), "{e}");
        assert!(e.to_string().contains("No such file"), "{e}");
        // Without a configured ID, a new one is kept from the first start.
        let q = dir.path().join("generated");
        let g1 = load_and_advance(&q, None).unwrap();
        let g2 = load_and_advance(&q, None).unwrap();
        assert_eq!((g1.engine_id, g1.boots + 1), (g2.engine_id, g2.boots));
    }

    /// Every kind of damage refuses the start, with the file and what is
    /// wrong, and leaves the file as it was.
    #[test]
    fn a_damaged_or_unreadable_file_refuses_the_start() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("engine");
        let a = id("800000000501020304");
        let big = format!(
            "engine_id 800000000501020304\nboots 1\n#{}\n",
            "x".repeat(5000)
        );
        let cases: Vec<(&[u8], &str)> = vec![
            (
                b"engine_id zz\nboots 1\n",
                "line 1: engine ID \"zz\": not a hex string",
            ),
            (
                b"engine_id 800000000501020304\n",
                "it lacks `engine_id` or `boots`",
            ),
            (
                b"engine_id 800000000501020304\nboots\n",
                "line 2: not `engine_id HEX` or `boots N`",
            ),
            (
                b"boots -1\nengine_id 800000000501020304\n",
                "line 1: not `engine_id HEX` or `boots N`",
            ),
            (
                b"engine_id 800000000501020304\nboots 99999999999\n",
                "line 2:",
            ),
            (b"garbage", "line 1: not `engine_id HEX` or `boots N`"),
            (b"", "it lacks `engine_id` or `boots`"),
            (b"engine_id 80000000050102\xff\nboots 1\n", "not UTF-8 text"),
            (big.as_bytes(), "more than the 4096 allowed"),
            (
                b"engine_id 80000000050f0f0f0f\nboots 3\n",
                "it keeps engine ID 0x80000000050f0f0f0f",
            ),
        ];
        for (bytes, why) in cases {
            std::fs::write(&p, bytes).unwrap();
            for configured in [Some(&a), None] {
                if why.contains("keeps engine ID") && configured.is_none() {
                    continue;
                }
                let e = load_and_advance(&p, configured).unwrap_err();
                let shown = e.to_string();
                assert!(matches!(e, EngineFileError::Unusable { .. }), "{shown}");
                assert!(shown.starts_with(&format!("{}: ", p.display())), "{shown}");
                assert!(shown.contains(why), "{shown} / {why}");
                assert!(shown.contains("remove it"), "{shown}");
                assert_eq!(std::fs::read(&p).unwrap(), bytes, "the file is left alone");
            }
        }
        // A FIFO or a directory is refused at once, never waited on.
        let d = dir.path().join("dir");
        std::fs::create_dir(&d).unwrap();
        let e = load_and_advance(&d, Some(&a)).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = load_and_advance(&fifo, Some(&a)).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        // A file the agent may not read (unless it runs as root, which
        // reads anything).
        std::fs::write(&p, "engine_id 800000000501020304\nboots 1\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
        if std::fs::read(&p).is_err() {
            let e = load_and_advance(&p, Some(&a)).unwrap_err();
            assert!(e.to_string().contains("cannot read it"), "{e}");
        }
    }
}
