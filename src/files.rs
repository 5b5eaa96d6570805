//! Files from outside the process, read and written safely: a leaf every
//! layer may use (configuration, topology, state files).

use std::io::Write;
use std::path::Path;

pub mod sealed;

pub use sealed::{SealError, Sealed};

/// Read a file that comes from outside (configuration, topology, state
/// file): a regular file only (a FIFO, a device or a directory is refused
/// without being waited on), of at most `max` bytes, its size checked
/// before anything is read.
pub fn read_untrusted(path: &Path, max: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    use std::os::unix::fs::OpenOptionsExt;
    // O_NONBLOCK: opening a FIFO does not wait for a writer.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    let meta = f.metadata()?;
    if !meta.file_type().is_file() {
        return Err(Error::new(ErrorKind::InvalidInput, "not a regular file"));
    }
    let too_big = |n: u64| {
        Error::new(
            ErrorKind::InvalidData,
            format!("{n} bytes, more than the {max} allowed"),
        )
    };
    if meta.len() > max {
        return Err(too_big(meta.len()));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    f.take(max + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max {
        return Err(too_big(bytes.len() as u64));
    }
    Ok(bytes)
}

/// Write `bytes` to `path` atomically and durably: a temporary file beside
/// it (mode 0600), synced, renamed over it, then its directory synced (the
/// rename is in the directory: without that, a power loss may bring back
/// the old file).
pub fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    {
        use std::os::unix::fs::OpenOptionsExt;
        // A leftover temporary file (or a link planted in its place) goes
        // first: removing a link leaves its target alone. The new file is
        // created exclusively and never through a link: one planted again
        // in between makes the write fail, it does not redirect it.
        match std::fs::remove_file(&tmp) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    sync_dir(path)
}

/// fsync of the directory that holds `path`.
fn sync_dir(path: &Path) -> std::io::Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    std::fs::File::open(dir)?.sync_all()
}

/// FNV-1a over `bytes`: the checksum the state files end with (against a
/// torn or foreign file, not an attacker: the files are the agent's own).
pub fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The bytes ran out before a value of a state file's did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Truncated;

/// A reader of a state file's little-endian values, bounded by its bytes.
pub struct Cursor<'a>(pub &'a [u8]);

impl Cursor<'_> {
    pub fn take<const N: usize>(&mut self) -> Result<[u8; N], Truncated> {
        let (head, rest) = self.0.split_at_checked(N).ok_or(Truncated)?;
        self.0 = rest;
        head.try_into().map_err(|_| Truncated)
    }
    pub fn u8(&mut self) -> Result<u8, Truncated> {
        Ok(self.take::<1>()?[0])
    }
    pub fn u32(&mut self) -> Result<u32, Truncated> {
        Ok(u32::from_le_bytes(self.take()?))
    }
    pub fn u64(&mut self) -> Result<u64, Truncated> {
        Ok(u64::from_le_bytes(self.take()?))
    }
    /// Bytes left.
    pub fn left(&self) -> usize {
        self.0.len()
    }
}
