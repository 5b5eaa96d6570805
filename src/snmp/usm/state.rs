//! snmpEngineID and snmpEngineBoots across restarts: a small text file in
//! the state directory, the only I/O of the USM. [`EngineState::start`]
//! loads it (or creates it) and saves boots raised by one before the engine
//! answers anything, so a restarted agent never repeats a (boots, time)
//! pair a manager has seen (RFC 3414 §2.2.2).
//!
//! The file is read only if it is a regular file (not followed through a
//! symbolic link) of at most [`MAX_FILE`] octets, and written through a
//! new temporary file beside it (`O_CREAT | O_EXCL | O_NOFOLLOW`, mode
//! 0600), synced, then renamed over it; the directory is synced after.
//! A damaged file is an error, not replaced: a new engine ID would void
//! every manager's localized keys, so the operator decides.

use std::fmt;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::{ENGINE_MAX, EngineId};

/// The file's name in the state directory.
pub const FILE_NAME: &str = "snmp-engine";

/// Largest state file read.
pub const MAX_FILE: u64 = 4096;

const HEADER: &str = "# ibpm-agentx SNMP engine. Keep it: managers' localized keys depend on the \
                      engine ID, and boots must only grow.\n";

/// The engine values for this start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineState {
    pub engine_id: EngineId,
    /// snmpEngineBoots for this start (already saved).
    pub boots: u32,
}

/// Why the engine state could not be loaded or saved.
#[derive(Debug)]
pub enum StateError {
    Io(PathBuf, std::io::Error),
    NotRegular(PathBuf),
    TooLarge(PathBuf, u64),
    Parse(PathBuf, String),
    Random(getrandom::Error),
}

impl fmt::Display for StateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StateError::Io(p, e) => write!(f, "{}: {e}", p.display()),
            StateError::NotRegular(p) => write!(
                f,
                "{}: not a regular file (a symbolic link or a special file is not used)",
                p.display()
            ),
            StateError::TooLarge(p, n) => write!(
                f,
                "{}: {n} octets, more than an engine state file has ({MAX_FILE} at most)",
                p.display()
            ),
            StateError::Parse(p, why) => write!(
                f,
                "{}: {why}; fix or remove the file (removing it gives the engine a new ID \
                 unless one is configured)",
                p.display()
            ),
            StateError::Random(e) => write!(f, "no random octets for a new engine ID: {e}"),
        }
    }
}

impl std::error::Error for StateError {}

/// The file's text for `state`.
pub fn render(state: &EngineState) -> String {
    format!(
        "{HEADER}engine_id {}\nboots {}\n",
        state.engine_id.to_hex(),
        state.boots
    )
}

/// Reads a file [`render`] wrote: `engine_id` and `boots` once each;
/// comments and blank lines ignored.
pub fn parse(text: &str) -> Result<EngineState, String> {
    let mut id = None;
    let mut boots = None;
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = line
            .split_once(char::is_whitespace)
            .ok_or_else(|| format!("line {}: expected \"key value\"", n + 1))?;
        let value = value.trim();
        match key {
            "engine_id" if id.is_none() => {
                id = Some(EngineId::from_hex(value).map_err(|e| format!("line {}: {e}", n + 1))?)
            }
            "boots" if boots.is_none() => {
                let b: u32 = value
                    .parse()
                    .ok()
                    .filter(|b| *b <= ENGINE_MAX)
                    .ok_or_else(|| format!("line {}: boots is 0..={ENGINE_MAX}", n + 1))?;
                boots = Some(b);
            }
            "engine_id" | "boots" => return Err(format!("line {}: {key} given twice", n + 1)),
            _ => return Err(format!("line {}: unknown key {key:?}", n + 1)),
        }
    }
    match (id, boots) {
        (Some(engine_id), Some(boots)) => Ok(EngineState { engine_id, boots }),
        _ => Err("engine_id and boots are both needed".into()),
    }
}

/// This start's state from the configured engine ID (if any) and the
/// stored state (if any): boots one more than stored for the same engine
/// ID (staying at 2^31-1 once there, RFC 3414 §2.2.2), 1 for a new one;
/// `generate` is asked for an ID only when neither gives one.
pub fn next_state<E>(
    configured: Option<EngineId>,
    stored: Option<EngineState>,
    generate: impl FnOnce() -> Result<EngineId, E>,
) -> Result<EngineState, E> {
    let raised = |s: EngineState| EngineState {
        boots: s.boots.saturating_add(1).min(ENGINE_MAX),
        engine_id: s.engine_id,
    };
    Ok(match (configured, stored) {
        (Some(c), Some(s)) if c == s.engine_id => raised(s),
        (Some(c), _) => EngineState {
            engine_id: c,
            boots: 1,
        },
        (None, Some(s)) => raised(s),
        (None, None) => EngineState {
            engine_id: generate()?,
            boots: 1,
        },
    })
}

impl EngineState {
    /// Loads `dir/snmp-engine` (absent: a first start), takes the
    /// configured engine ID if given, raises boots and saves the result
    /// before returning it.
    pub fn start(dir: &Path, configured: Option<EngineId>) -> Result<EngineState, StateError> {
        let path = dir.join(FILE_NAME);
        let stored = load(&path)?;
        let state =
            next_state(configured, stored, EngineId::generate).map_err(StateError::Random)?;
        save(&path, &state)?;
        Ok(state)
    }
}

/// The stored state, `None` when there is no file.
pub fn load(path: &Path) -> Result<Option<EngineState>, StateError> {
    let io = |e| StateError::Io(path.to_path_buf(), e);
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(StateError::NotRegular(path.to_path_buf()));
        }
        Err(e) => return Err(io(e)),
    };
    let meta = file.metadata().map_err(io)?;
    if !meta.is_file() {
        return Err(StateError::NotRegular(path.to_path_buf()));
    }
    if meta.len() > MAX_FILE {
        return Err(StateError::TooLarge(path.to_path_buf(), meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE + 1)
        .read_to_end(&mut bytes)
        .map_err(io)?;
    if bytes.len() as u64 > MAX_FILE {
        return Err(StateError::TooLarge(path.to_path_buf(), bytes.len() as u64));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| StateError::Parse(path.to_path_buf(), "not UTF-8 text".into()))?;
    parse(&text)
        .map(Some)
        .map_err(|why| StateError::Parse(path.to_path_buf(), why))
}

/// Writes `state` to `path` through a new temporary file beside it.
pub fn save(path: &Path, state: &EngineState) -> Result<(), StateError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut random = [0u8; 8];
    getrandom::fill(&mut random).map_err(StateError::Random)?;
    let tmp = dir.join(format!(
        ".{FILE_NAME}.{}.tmp",
        random
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    ));
    let write = || -> std::io::Result<()> {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&tmp)?;
        f.write_all(render(state).as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    };
    write().map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        StateError::Io(path.to_path_buf(), e)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(hex: &str) -> EngineId {
        EngineId::from_hex(hex).unwrap()
    }

    #[test]
    fn first_start_generates_and_later_starts_raise_boots() {
        let dir = tempfile::tempdir().unwrap();
        let first = EngineState::start(dir.path(), None).unwrap();
        assert_eq!(first.boots, 1);
        let second = EngineState::start(dir.path(), None).unwrap();
        assert_eq!(second.engine_id, first.engine_id);
        assert_eq!(second.boots, 2);
        assert_eq!(load(&dir.path().join(FILE_NAME)).unwrap(), Some(second));
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(dir.path().join(FILE_NAME))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        // Only the state file is left in the directory.
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
    }

    #[test]
    fn configured_engine_id_wins_and_restarts_boots_when_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let a = id("8000000005aaaaaaaa");
        let b = id("8000000005bbbbbbbb");
        assert_eq!(
            EngineState::start(dir.path(), Some(a.clone()))
                .unwrap()
                .boots,
            1
        );
        assert_eq!(
            EngineState::start(dir.path(), Some(a.clone()))
                .unwrap()
                .boots,
            2
        );
        assert_eq!(EngineState::start(dir.path(), None).unwrap().boots, 3);
        let s = EngineState::start(dir.path(), Some(b.clone())).unwrap();
        assert_eq!((s.engine_id, s.boots), (b, 1));
    }

    #[test]
    fn boots_latch_at_the_maximum() {
        let s = EngineState {
            engine_id: id("0102030405"),
            boots: ENGINE_MAX,
        };
        let n = next_state(None, Some(s.clone()), || Err::<EngineId, ()>(())).unwrap();
        assert_eq!(n, s);
        let r = next_state(None, None, || Err::<EngineId, &str>("no random"));
        assert_eq!(r, Err("no random"));
    }

    #[test]
    fn text_round_trips_and_damage_is_refused() {
        let s = EngineState {
            engine_id: id("80000000050102030405060708"),
            boots: 42,
        };
        assert_eq!(parse(&render(&s)), Ok(s));
        for bad in [
            "",
            "engine_id 0102030405\n",
            "boots 3\n",
            "engine_id 01020304\nboots 1\n",
            "engine_id 0102030405\nboots -1\n",
            "engine_id 0102030405\nboots 2147483648\n",
            "engine_id 0102030405\nboots 1\nboots 2\n",
            "engine_id 0102030405\nboots 1\ncolour blue\n",
            "engine_id\nboots 1\n",
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn links_special_and_large_files_are_not_used() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let target = dir.path().join("elsewhere");
        std::fs::write(
            &target,
            render(&EngineState {
                engine_id: id("0102030405"),
                boots: 1,
            }),
        )
        .unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let e = EngineState::start(dir.path(), None).unwrap_err();
        assert!(matches!(e, StateError::NotRegular(_)), "{e}");
        std::fs::remove_file(&path).unwrap();

        std::fs::create_dir(&path).unwrap();
        let e = EngineState::start(dir.path(), None).unwrap_err();
        assert!(matches!(e, StateError::NotRegular(_)), "{e}");
        std::fs::remove_dir(&path).unwrap();

        std::fs::write(&path, "#".repeat(MAX_FILE as usize + 1)).unwrap();
        let e = EngineState::start(dir.path(), None).unwrap_err();
        assert!(matches!(e, StateError::TooLarge(..)), "{e}");

        std::fs::write(&path, "engine_id 0102\nboots 1\n").unwrap();
        let e = EngineState::start(dir.path(), None).unwrap_err();
        assert!(matches!(e, StateError::Parse(..)), "{e}");
        assert!(e.to_string().contains("fix or remove"), "{e}");
        // The damaged file is left as it was.
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "engine_id 0102\nboots 1\n"
        );
    }

    /// Saving over a symbolic link replaces the link (rename) and never
    /// writes through it.
    #[test]
    fn save_replaces_a_link_at_the_path_instead_of_writing_through_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        let target = dir.path().join("victim");
        std::fs::write(&target, "keep").unwrap();
        std::os::unix::fs::symlink(&target, &path).unwrap();
        let s = EngineState {
            engine_id: id("0102030405"),
            boots: 7,
        };
        save(&path, &s).unwrap();
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "keep");
        assert_eq!(load(&path).unwrap(), Some(s));
    }
}
