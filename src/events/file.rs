//! The log's file, `<state_file>.events`: the ring's strings and records,
//! bounded, with an FNV-1a sum at the end, written atomically (never
//! through a link). The codec is pure; sizes are checked before anything
//! is allocated.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use super::kinds::Kind;
use super::ring::{MAX_STRING, Record, Ring, Sym};
use crate::files::{SealError, Sealed, Truncated};
use crate::ib::Guid;

pub const MAGIC: [u8; 8] = *b"IBPMEV\x00\x01";
/// Records a file holds at most (the largest `events.capacity`).
pub const MAX_RECORDS: usize = 100_000;
/// Strings a file holds at most (three per record, and the ring's slack).
pub const MAX_STRINGS: usize = 3 * MAX_RECORDS + 1025;
/// One record's bytes.
const RECORD_LEN: usize = 7 * 8 + 3 * 4 + 2 + 4;
/// The largest file.
pub const MAX_FILE: usize =
    MAGIC.len() + 4 + MAX_STRINGS * (1 + MAX_STRING) + 4 + MAX_RECORDS * RECORD_LEN + 8;

/// The file's format.
pub const FILE: Sealed = Sealed {
    magic: MAGIC,
    max: MAX_FILE,
    what: "an event log file",
};

/// Why a log file cannot be used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileError {
    /// A fault of the frame every state file shares.
    Frame(SealError),
    BadString,
    BadKind(u8),
    /// Event numbers that do not increase.
    OutOfOrder,
}

impl fmt::Display for FileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FileError::Frame(e) => e.fmt(f),
            FileError::BadString => f.write_str("a string that is not UTF-8"),
            FileError::BadKind(k) => write!(f, "an event of unknown kind {k}"),
            FileError::OutOfOrder => f.write_str("event numbers out of order"),
        }
    }
}

impl std::error::Error for FileError {}

impl From<SealError> for FileError {
    fn from(e: SealError) -> Self {
        FileError::Frame(e)
    }
}

impl From<Truncated> for FileError {
    fn from(t: Truncated) -> Self {
        FileError::Frame(t.into())
    }
}

/// The file's bytes for what `ring` holds.
pub fn encode(ring: &Ring) -> Vec<u8> {
    let strings = ring.strings().strings();
    let records = ring.records();
    let n = records.len().min(MAX_RECORDS);
    let skip = records.len() - n;
    let ns = strings.len().min(MAX_STRINGS);
    let mut out = FILE.start(8 + ns * 16 + n * RECORD_LEN);
    out.extend_from_slice(&(ns as u32).to_le_bytes());
    for s in &strings[..ns] {
        out.push(s.len() as u8);
        out.extend_from_slice(s.as_bytes());
    }
    out.extend_from_slice(&(n as u32).to_le_bytes());
    for r in records.iter().skip(skip) {
        for v in [
            r.seq, r.time_ms, r.sweep, r.guid.0, r.peer.0, r.before, r.after,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for s in [r.name, r.peer_name, r.detail] {
            let s = if (s.0 as usize) < ns { s.0 } else { 0 };
            out.extend_from_slice(&s.to_le_bytes());
        }
        out.extend_from_slice(&r.subnet.to_le_bytes());
        out.extend_from_slice(&[r.kind as u8, r.port, r.peer_port, r.flags]);
    }
    FILE.seal(out)
}

/// What a file holds: its strings and records (their symbols index the
/// strings).
#[derive(Debug, Default)]
pub struct Saved {
    pub strings: Vec<Arc<str>>,
    pub records: Vec<Record>,
}

/// Decode a file's bytes.
pub fn decode(bytes: &[u8]) -> Result<Saved, FileError> {
    let mut c = FILE.open(bytes)?;
    let mut saved = Saved::default();
    for _ in 0..c.count(MAX_STRINGS, 1)? {
        let len = usize::from(c.u8()?);
        let s = std::str::from_utf8(c.bytes(len)?).map_err(|_| FileError::BadString)?;
        saved.strings.push(Arc::from(s));
    }
    let ns = saved.strings.len() as u32;
    let sym = |v: u32| Sym(if v < ns { v } else { 0 });
    for _ in 0..c.count(MAX_RECORDS, RECORD_LEN)? {
        let mut v = [0u64; 7];
        for x in &mut v {
            *x = c.u64()?;
        }
        let (name, peer_name, detail) = (sym(c.u32()?), sym(c.u32()?), sym(c.u32()?));
        let subnet = u16::from_le_bytes(c.take()?);
        let [kind, port, peer_port, flags] = c.take::<4>()?;
        let kind = Kind::from_index(kind).ok_or(FileError::BadKind(kind))?;
        if saved.records.last().is_some_and(|r: &Record| r.seq >= v[0]) {
            return Err(FileError::OutOfOrder);
        }
        saved.records.push(Record {
            seq: v[0],
            time_ms: v[1],
            sweep: v[2],
            guid: Guid(v[3]),
            peer: Guid(v[4]),
            before: v[5],
            after: v[6],
            name,
            peer_name,
            detail,
            subnet,
            kind,
            port,
            peer_port,
            flags,
        });
    }
    c.finish()?;
    Ok(saved)
}

/// Read and decode the file at `path`: a regular file of at most
/// [`MAX_FILE`] bytes.
pub fn load(path: &Path) -> Result<Saved, FileError> {
    decode(&FILE.read(path)?)
}

/// Write what `ring` holds to `path`, atomically.
pub fn save(ring: &Ring, path: &Path) -> std::io::Result<()> {
    crate::files::write_atomic(path, &encode(ring))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::ring::{Bounds, New};

    fn ring() -> Ring {
        let mut r = Ring::new(Bounds::default());
        for (i, k) in [Kind::PortState, Kind::VerdictRaised, Kind::NodeLost]
            .into_iter()
            .enumerate()
        {
            r.push(&New {
                kind: Some(k),
                time_ms: 1_000 + i as u64,
                sweep: 7,
                guid: Guid(0x10 + i as u64),
                name: "leaf07",
                port: 3,
                peer: Some((Guid(0x99), 1, "node0413 HCA-1")),
                before: 4,
                after: 1,
                detail: if i == 1 { "flapping" } else { "" },
                subnet: Some(0),
                suppressed: i == 2,
            });
        }
        r
    }

    #[test]
    fn a_ring_comes_back_from_its_file() {
        let r = ring();
        let saved = decode(&encode(&r)).unwrap();
        let mut back = Ring::new(Bounds::default());
        for rec in saved.records {
            back.restore(rec, &saved.strings);
        }
        assert_eq!(back.len(), 3);
        for (a, b) in r.records().iter().zip(back.records()) {
            assert_eq!(
                (a.seq, a.kind, a.guid, a.flags),
                (b.seq, b.kind, b.guid, b.flags)
            );
            assert_eq!(
                r.strings().get(a.peer_name),
                back.strings().get(b.peer_name)
            );
            assert_eq!(r.strings().get(a.detail), back.strings().get(b.detail));
        }
    }

    #[test]
    fn a_truncated_or_corrupted_file_is_refused() {
        let bytes = encode(&ring());
        for n in [0, 7, 8, 20, bytes.len() - 1] {
            assert!(decode(&bytes[..n]).is_err(), "{n} bytes");
        }
        let mut bad = bytes.clone();
        bad[30] ^= 1;
        assert_eq!(decode(&bad).unwrap_err(), SealError::Checksum.into());
        // Numbers that do not increase: refused (a walk searches them).
        let mut r = ring();
        let saved = decode(&encode(&r)).unwrap();
        r = Ring::new(Bounds::default());
        for mut rec in saved.records {
            rec.seq = 5;
            r.restore(rec, &saved.strings);
        }
        assert_eq!(decode(&encode(&r)).unwrap_err(), FileError::OutOfOrder);
        let mut foreign = bytes.clone();
        foreign[0] = b'X';
        assert_eq!(
            decode(&foreign).unwrap_err().to_string(),
            "not an event log file"
        );
    }

    #[test]
    fn counts_past_the_bounds_are_refused_before_allocating() {
        let mut b = FILE.start(4);
        b.extend_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode(&FILE.seal(b)).unwrap_err(),
            SealError::TooMany {
                count: u32::MAX,
                max: MAX_STRINGS
            }
            .into()
        );
    }

    #[test]
    fn a_link_in_place_of_the_file_is_replaced_not_followed() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"keep").unwrap();
        let path = dir.path().join("state.events");
        std::os::unix::fs::symlink(&target, &path).unwrap();
        save(&ring(), &path).unwrap();
        assert_eq!(std::fs::read(&target).unwrap(), b"keep");
        assert_eq!(load(&path).unwrap().records.len(), 3);
    }
}
