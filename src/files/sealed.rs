//! The frame every state file of the agent's own shares: an 8-byte magic,
//! the body, and an FNV-1a sum of both, the whole bounded in size. One
//! declaration per file format ([`Sealed`]) names its magic, its largest
//! size and what it is called in an error; the frame's faults are one type
//! ([`SealError`]) that each format's own error wraps.
//!
//! Counts in a body are checked against a bound and against the bytes left
//! before anything is allocated ([`Cursor::count`]).

use std::fmt;
use std::io::ErrorKind;
use std::path::Path;

use super::{Cursor, Truncated, fnv1a};

/// A file format: its magic, its largest size, and its name in an error
/// ("not a health state file").
#[derive(Clone, Copy, Debug)]
pub struct Sealed {
    pub magic: [u8; 8],
    pub max: usize,
    /// What the file is, with its article: "a health state file".
    pub what: &'static str,
}

/// Why a sealed file cannot be used, whatever its format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SealError {
    /// The file could not be read: the error's kind (a missing file is
    /// `NotFound`) and what it said.
    Io {
        kind: ErrorKind,
        message: String,
    },
    TooLarge {
        size: u64,
        max: usize,
    },
    Truncated,
    /// Another format's magic, or none: what the file should have been.
    BadMagic(&'static str),
    Checksum,
    /// A count past its bound.
    TooMany {
        count: u32,
        max: usize,
    },
    TrailingBytes,
}

impl SealError {
    /// The file is not there (the first start): not a fault.
    pub fn is_missing(&self) -> bool {
        matches!(
            self,
            SealError::Io {
                kind: ErrorKind::NotFound,
                ..
            }
        )
    }
}

impl fmt::Display for SealError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SealError::Io { message, .. } => f.write_str(message),
            SealError::TooLarge { size, max } => write!(f, "{size} bytes, more than {max}"),
            SealError::Truncated => f.write_str("truncated"),
            SealError::BadMagic(what) => write!(f, "not {what}"),
            SealError::Checksum => f.write_str("checksum mismatch"),
            SealError::TooMany { count, max } => write!(f, "{count} records, more than {max}"),
            SealError::TrailingBytes => f.write_str("bytes after the last record"),
        }
    }
}

impl std::error::Error for SealError {}

impl From<Truncated> for SealError {
    fn from(_: Truncated) -> Self {
        SealError::Truncated
    }
}

impl Sealed {
    /// A body under way: the magic, room for `capacity` more bytes.
    pub fn start(&self, capacity: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.magic.len() + capacity + 8);
        out.extend_from_slice(&self.magic);
        out
    }

    /// The file's bytes: the body begun by [`Sealed::start`], its sum
    /// appended.
    pub fn seal(&self, mut out: Vec<u8>) -> Vec<u8> {
        let sum = fnv1a(&out);
        out.extend_from_slice(&sum.to_le_bytes());
        out
    }

    /// The body of a file's bytes, after its magic, once its size, magic
    /// and sum are checked.
    pub fn open<'a>(&self, bytes: &'a [u8]) -> Result<Cursor<'a>, SealError> {
        if bytes.len() > self.max {
            return Err(SealError::TooLarge {
                size: bytes.len() as u64,
                max: self.max,
            });
        }
        let body_len = bytes.len().checked_sub(8).ok_or(SealError::Truncated)?;
        let (body, sum) = bytes.split_at(body_len);
        let mut c = Cursor(body);
        if c.take::<8>()? != self.magic {
            return Err(SealError::BadMagic(self.what));
        }
        if fnv1a(body) != u64::from_le_bytes(Cursor(sum).take()?) {
            return Err(SealError::Checksum);
        }
        Ok(c)
    }

    /// Read the file at `path`: a regular file of at most `max` bytes
    /// (checked before it is read), not yet opened.
    pub fn read(&self, path: &Path) -> Result<Vec<u8>, SealError> {
        super::read_untrusted(path, self.max as u64).map_err(|e| SealError::Io {
            kind: e.kind(),
            message: e.to_string(),
        })
    }
}

impl<'a> Cursor<'a> {
    /// A count of records of at least `len` bytes each: at most `max`, and
    /// no more than the bytes left could hold.
    pub fn count(&mut self, max: usize, len: usize) -> Result<usize, SealError> {
        let n = self.u32()?;
        if n as usize > max {
            return Err(SealError::TooMany { count: n, max });
        }
        if (n as usize).saturating_mul(len) > self.left() {
            return Err(SealError::Truncated);
        }
        Ok(n as usize)
    }

    /// The next `n` bytes.
    pub fn bytes(&mut self, n: usize) -> Result<&'a [u8], Truncated> {
        let (head, rest) = self.0.split_at_checked(n).ok_or(Truncated)?;
        self.0 = rest;
        Ok(head)
    }

    /// The body is read: nothing may follow its last record.
    pub fn finish(&self) -> Result<(), SealError> {
        if self.left() != 0 {
            return Err(SealError::TrailingBytes);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const T: Sealed = Sealed {
        magic: *b"IBPMTT\x00\x01",
        max: 64,
        what: "a test file",
    };

    fn file(body: &[u8]) -> Vec<u8> {
        let mut out = T.start(body.len());
        out.extend_from_slice(body);
        T.seal(out)
    }

    #[test]
    fn a_sealed_body_opens_again() {
        let bytes = file(&[2, 0, 0, 0, 7, 9]);
        let mut c = T.open(&bytes).unwrap();
        assert_eq!(c.count(2, 1), Ok(2));
        assert_eq!(c.bytes(2), Ok(&[7u8, 9][..]));
        assert_eq!(c.finish(), Ok(()));
    }

    #[test]
    fn each_fault_of_the_frame_is_named() {
        let bytes = file(&[1, 0, 0, 0, 5]);
        let open = |b: &[u8]| T.open(b).map(|_| ()).unwrap_err();
        for cut in [0, 7, 8, 15] {
            assert_eq!(open(&bytes[..cut]), SealError::Truncated, "{cut}");
        }
        let mut flipped = bytes.clone();
        flipped[9] ^= 1;
        assert_eq!(open(&flipped), SealError::Checksum);
        let mut other = bytes.clone();
        other[0] = b'X';
        assert_eq!(open(&other), SealError::BadMagic("a test file"));
        assert_eq!(open(&other).to_string(), "not a test file");
        assert_eq!(open(&[0; 65]), SealError::TooLarge { size: 65, max: 64 });
        let mut c = T.open(&bytes).unwrap();
        assert_eq!(c.count(0, 1), Err(SealError::TooMany { count: 1, max: 0 }));
        let mut c = T.open(&bytes).unwrap();
        assert_eq!(c.count(9, 2), Err(SealError::Truncated), "no room for it");
        let mut c = T.open(&bytes).unwrap();
        c.count(9, 1).unwrap();
        assert_eq!(c.finish(), Err(SealError::TrailingBytes));
    }

    #[test]
    fn a_missing_file_is_told_from_a_bad_one() {
        let dir = tempfile::tempdir().unwrap();
        let missing = T.read(&dir.path().join("none")).unwrap_err();
        assert!(missing.is_missing());
        std::fs::write(dir.path().join("big"), [0u8; 65]).unwrap();
        let big = T.read(&dir.path().join("big")).unwrap_err();
        assert!(!big.is_missing());
        assert!(
            T.read(dir.path()).is_err_and(|e| !e.is_missing()),
            "a directory"
        );
    }
}
