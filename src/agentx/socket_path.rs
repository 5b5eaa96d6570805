//! Whom the agent trusts to be its AgentX master over a unix socket.
//!
//! Whoever can create or replace the socket file can stand in for snmpd:
//! answer the agent's Open and Register, read every value it serves and
//! drive its SETs. So before connecting, every directory from the socket's
//! own up to `/` is checked: each must be owned by root or by the agent's
//! user, and none may be writable by anyone else. A world- (or foreign
//! group-) writable directory with the sticky bit (such as `/tmp`) is
//! accepted above the socket's own directory: there others cannot rename or
//! remove the entries they do not own. The socket's own directory is never
//! accepted writable by others, sticky or not, since another user could then
//! create the socket before snmpd does.

use std::fmt;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What the check needs to know of one directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirMeta {
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

/// Who the agent runs as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Identity {
    pub uid: u32,
    pub gid: u32,
}

/// Why a socket path is not trusted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsafePath {
    pub dir: PathBuf,
    pub reason: &'static str,
}

impl fmt::Display for UnsafePath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "refusing the AgentX socket: directory {} {}, so another user could stand in \
             for the master (fix its owner and mode, e.g. chmod 0755)",
            self.dir.display(),
            self.reason
        )
    }
}

const OTHERS_WRITE: u32 = 0o002;
const GROUP_WRITE: u32 = 0o020;
const STICKY: u32 = 0o1000;

/// Check `dirs`: the socket's own directory first, then each ancestor up to
/// `/`, with what `meta` says of each.
pub fn check(
    dirs: &[PathBuf],
    me: Identity,
    meta: impl Fn(&Path) -> io::Result<DirMeta>,
) -> Result<(), UnsafePath> {
    for (i, dir) in dirs.iter().enumerate() {
        let Ok(m) = meta(dir) else {
            // A directory that cannot be read fails the connect itself.
            continue;
        };
        let refuse = |reason| {
            Err(UnsafePath {
                dir: dir.clone(),
                reason,
            })
        };
        if m.uid != 0 && m.uid != me.uid {
            return refuse("is owned by another user");
        }
        let foreign_group = m.gid != 0 && m.gid != me.gid;
        let writable = m.mode & OTHERS_WRITE != 0 || (foreign_group && m.mode & GROUP_WRITE != 0);
        if writable {
            if i == 0 {
                return refuse("is writable by other users");
            }
            if m.mode & STICKY == 0 {
                return refuse("is writable by other users and not sticky");
            }
        }
    }
    Ok(())
}

/// The directories to check for a socket at `socket`: its own directory
/// (with symbolic links resolved) and every ancestor. Empty when the
/// directory does not exist yet (the connect fails and is retried).
pub fn dirs_of(socket: &Path) -> Vec<PathBuf> {
    let parent = match socket.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match parent.canonicalize() {
        Ok(p) => p.ancestors().map(Path::to_path_buf).collect(),
        Err(_) => Vec::new(),
    }
}

/// The process's effective user and group: the owner of `/proc/self`.
pub fn identity() -> io::Result<Identity> {
    let m = std::fs::metadata("/proc/self")?;
    Ok(Identity {
        uid: m.uid(),
        gid: m.gid(),
    })
}

/// Check the socket at `socket` against the file system.
pub fn check_socket(socket: &Path) -> io::Result<()> {
    let me = identity()?;
    check(&dirs_of(socket), me, |d| {
        let m = std::fs::metadata(d)?;
        Ok(DirMeta {
            uid: m.uid(),
            gid: m.gid(),
            mode: m.mode(),
        })
    })
    .map_err(|e| io::Error::new(io::ErrorKind::PermissionDenied, e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    const ME: Identity = Identity {
        uid: 1000,
        gid: 1000,
    };

    fn run(dirs: &[(&str, u32, u32, u32)]) -> Result<(), UnsafePath> {
        let table: HashMap<PathBuf, DirMeta> = dirs
            .iter()
            .map(|&(p, uid, gid, mode)| (PathBuf::from(p), DirMeta { uid, gid, mode }))
            .collect();
        let order: Vec<PathBuf> = dirs.iter().map(|d| PathBuf::from(d.0)).collect();
        check(&order, ME, |p| {
            table
                .get(p)
                .copied()
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        })
    }

    #[test]
    fn debian_var_agentx_is_trusted() {
        let r = run(&[
            ("/var/agentx", 0, 0, 0o40755),
            ("/var", 0, 0, 0o40755),
            ("/", 0, 0, 0o40755),
        ]);
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn a_private_directory_under_sticky_tmp_is_trusted() {
        let r = run(&[
            ("/tmp/x", 1000, 1000, 0o40700),
            ("/tmp", 0, 0, 0o41777),
            ("/", 0, 0, 0o40755),
        ]);
        assert_eq!(r, Ok(()));
    }

    #[test]
    fn the_sockets_own_directory_writable_by_others_is_refused_even_sticky() {
        for mode in [0o40777, 0o41777, 0o40757] {
            let e = run(&[("/tmp", 0, 0, mode), ("/", 0, 0, 0o40755)]).unwrap_err();
            assert_eq!(e.dir, PathBuf::from("/tmp"), "mode {mode:o}");
        }
    }

    #[test]
    fn a_writable_ancestor_without_sticky_bit_is_refused() {
        let e = run(&[
            ("/srv/agentx", 0, 0, 0o40755),
            ("/srv", 0, 0, 0o40777),
            ("/", 0, 0, 0o40755),
        ])
        .unwrap_err();
        assert_eq!(e.dir, PathBuf::from("/srv"));
        assert!(e.to_string().contains("not sticky"), "{e}");
    }

    #[test]
    fn group_write_counts_only_for_a_foreign_group() {
        // Group-writable by root's group or the agent's own group: fine.
        assert_eq!(
            run(&[("/run/a", 0, 1000, 0o40775), ("/", 0, 0, 0o40755)]),
            Ok(())
        );
        assert_eq!(
            run(&[("/run/a", 0, 0, 0o40775), ("/", 0, 0, 0o40755)]),
            Ok(())
        );
        // Group-writable by a group of other users: refused.
        assert!(run(&[("/run/a", 0, 50, 0o40775), ("/", 0, 0, 0o40755)]).is_err());
    }

    #[test]
    fn a_directory_owned_by_another_user_is_refused() {
        let e = run(&[("/home/eve", 1001, 1001, 0o40755), ("/", 0, 0, 0o40755)]).unwrap_err();
        assert!(e.to_string().contains("owned by another user"), "{e}");
    }

    #[test]
    fn the_real_tree_of_a_private_temp_dir_is_trusted() {
        let d = tempfile::tempdir().unwrap();
        check_socket(&d.path().join("master")).unwrap();
    }
}
