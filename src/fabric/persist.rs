//! The 64-bit totals across agent restarts: a small binary state file, so
//! an NMS does not see pmPortCounters64Table start again from zero on every
//! upgrade.
//!
//! Per port it holds each total and the raw reading that fed it last: the
//! first reading after a restart then adds what the counter moved in
//! between, exactly as between two sweeps (a counter that went down is a
//! discontinuity, as always). Ports are matched by node GUID and port
//! number, so entries of another fabric match nothing.
//!
//! Layout (little-endian): magic, port count (u32), then per port: node
//! GUID (u64), port number (u8), source flag (u8: 1 = data and packets
//! from PortCountersExtended), valid-slot mask (u32), then for each valid
//! slot in order its total and its last raw reading (u64 each); last an
//! FNV-1a 64 checksum of everything before it. [`decode`] is pure and
//! bounded: it never panics and refuses more than [`MAX_PORTS`] ports.

use std::path::Path;

use crate::fabric::hc::HC_SLOTS;
use crate::files::{SealError, Sealed, Truncated};
use crate::ib::Guid;

/// "IBPMHC", format version 1.
pub const MAGIC: [u8; 8] = *b"IBPMHC\x00\x01";
/// Most ports a state file may hold: more than a full subnet's ~170,000.
pub const MAX_PORTS: usize = 1 << 18;
const PORT_FIXED: usize = 8 + 1 + 1 + 4;
/// Largest state file read.
pub const MAX_FILE: usize = MAGIC.len() + 4 + MAX_PORTS * (PORT_FIXED + HC_SLOTS * 16) + 8;
/// Bits of the valid mask that name a slot.
const SLOT_MASK: u32 = if HC_SLOTS >= 32 {
    u32::MAX
} else {
    (1 << HC_SLOTS) - 1
};

/// One port's totals as saved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SavedPort {
    pub guid: Guid,
    pub port: u8,
    /// Data and packet totals were fed by PortCountersExtended.
    pub from_pcx: bool,
    /// Bit k: slot k is saved.
    pub valid: u32,
    pub totals: [u64; HC_SLOTS],
    /// The raw reading that last fed each slot.
    pub raw: [u64; HC_SLOTS],
}

/// The file's format.
pub const FILE: Sealed = Sealed {
    magic: MAGIC,
    max: MAX_FILE,
    what: "an ibpm-agentx totals file",
};

/// Why a state file was not used.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PersistError {
    /// A fault of the frame every state file shares.
    Frame(SealError),
    BadSlots(u32),
    BadFlag(u8),
}

impl std::fmt::Display for PersistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PersistError::Frame(e) => e.fmt(f),
            PersistError::BadSlots(m) => write!(f, "slot mask {m:#x} names unknown slots"),
            PersistError::BadFlag(b) => write!(f, "source flag {b} is neither 0 nor 1"),
        }
    }
}

impl std::error::Error for PersistError {}

impl From<SealError> for PersistError {
    fn from(e: SealError) -> Self {
        PersistError::Frame(e)
    }
}

impl From<Truncated> for PersistError {
    fn from(t: Truncated) -> Self {
        PersistError::Frame(t.into())
    }
}

/// The state file's bytes for `ports` (at most [`MAX_PORTS`] of them: the
/// rest are left out).
pub fn encode(ports: &[SavedPort]) -> Vec<u8> {
    let ports = &ports[..ports.len().min(MAX_PORTS)];
    let mut out = FILE.start(4 + ports.len() * (PORT_FIXED + 8 * 16));
    out.extend_from_slice(&(ports.len() as u32).to_le_bytes());
    for p in ports {
        let valid = p.valid & SLOT_MASK;
        out.extend_from_slice(&p.guid.0.to_le_bytes());
        out.push(p.port);
        out.push(u8::from(p.from_pcx));
        out.extend_from_slice(&valid.to_le_bytes());
        for k in (0..HC_SLOTS).filter(|k| valid & (1 << k) != 0) {
            out.extend_from_slice(&p.totals[k].to_le_bytes());
            out.extend_from_slice(&p.raw[k].to_le_bytes());
        }
    }
    FILE.seal(out)
}

/// The ports a state file holds, or why it cannot be used.
pub fn decode(bytes: &[u8]) -> Result<Vec<SavedPort>, PersistError> {
    let mut c = FILE.open(bytes)?;
    let n = c.count(MAX_PORTS, PORT_FIXED)?;
    let mut ports = Vec::with_capacity(n);
    for _ in 0..n {
        let guid = Guid(c.u64()?);
        let port = c.u8()?;
        let from_pcx = match c.u8()? {
            0 => false,
            1 => true,
            b => return Err(PersistError::BadFlag(b)),
        };
        let valid = c.u32()?;
        if valid & !SLOT_MASK != 0 {
            return Err(PersistError::BadSlots(valid));
        }
        let mut p = SavedPort {
            guid,
            port,
            from_pcx,
            valid,
            totals: [0; HC_SLOTS],
            raw: [0; HC_SLOTS],
        };
        for k in (0..HC_SLOTS).filter(|k| valid & (1 << k) != 0) {
            p.totals[k] = c.u64()?;
            p.raw[k] = c.u64()?;
        }
        ports.push(p);
    }
    c.finish()?;
    Ok(ports)
}

/// Write `ports` to `path` atomically: a temporary file beside it, synced,
/// then renamed over it.
pub fn save(path: &Path, ports: &[SavedPort]) -> std::io::Result<()> {
    let bytes = encode(ports);
    crate::files::write_atomic(path, &bytes)
}

/// Read and decode the state file at `path`: a regular file of at most
/// [`MAX_FILE`] bytes, its size checked before it is read.
pub fn load(path: &Path) -> Result<Vec<SavedPort>, PersistError> {
    decode(&FILE.read(path)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(guid: u64, valid: u32) -> SavedPort {
        let mut p = SavedPort {
            guid: Guid(guid),
            port: 3,
            from_pcx: true,
            valid,
            totals: [0; HC_SLOTS],
            raw: [0; HC_SLOTS],
        };
        for k in 0..HC_SLOTS {
            if valid & (1 << k) != 0 {
                p.totals[k] = u64::MAX - k as u64;
                p.raw[k] = 1000 + k as u64;
            }
        }
        p
    }

    #[test]
    fn round_trip() {
        let ports = vec![
            port(1, SLOT_MASK),
            port(0x0002_c903_0000_1234, 0b1011),
            port(7, 0),
        ];
        assert_eq!(decode(&encode(&ports)), Ok(ports));
        assert_eq!(decode(&encode(&[])), Ok(vec![]));
    }

    #[test]
    fn damaged_files_are_refused_without_panic() {
        let good = encode(&[port(1, SLOT_MASK), port(2, 0b101)]);
        for cut in 0..good.len() {
            assert!(decode(&good[..cut]).is_err(), "cut at {cut}");
        }
        for i in 0..good.len() {
            let mut bad = good.clone();
            bad[i] ^= 0x40;
            assert!(decode(&bad).is_err(), "byte {i} flipped");
        }
        // A consistent checksum over a lying count or mask.
        let reseal = |mut body: Vec<u8>| {
            let sum = crate::files::fnv1a(&body);
            body.extend_from_slice(&sum.to_le_bytes());
            body
        };
        let mut body = good[..good.len() - 8].to_vec();
        body[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            decode(&reseal(body)),
            Err(SealError::TooMany {
                count: u32::MAX,
                max: MAX_PORTS
            }
            .into())
        );
        let mut body = good[..good.len() - 8].to_vec();
        body[8..12].copy_from_slice(&3u32.to_le_bytes());
        assert_eq!(decode(&reseal(body)), Err(SealError::Truncated.into()));
        let mut body = good[..good.len() - 8].to_vec();
        body[22..26].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&reseal(body)), Err(PersistError::BadSlots(u32::MAX)));
        assert_eq!(
            decode(&vec![0; MAX_FILE + 1]),
            Err(SealError::TooLarge {
                size: MAX_FILE as u64 + 1,
                max: MAX_FILE
            }
            .into())
        );
    }

    #[test]
    fn save_replaces_the_file_and_load_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("totals");
        save(&path, &[port(1, 0b11)]).unwrap();
        save(&path, &[port(2, 0b111)]).unwrap();
        assert_eq!(load(&path), Ok(vec![port(2, 0b111)]));
        assert!(!dir.path().join("totals.tmp").exists());
        std::fs::write(&path, b"garbage").unwrap();
        assert!(load(&path).is_err());
    }

    /// A link planted where the temporary file goes: its target is left
    /// alone, and the state file is written all the same.
    #[test]
    fn save_never_writes_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("totals");
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("totals.tmp")).unwrap();
        save(&path, &[port(1, 0b11)]).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        assert_eq!(load(&path), Ok(vec![port(1, 0b11)]));
        assert!(!std::fs::symlink_metadata(&path).unwrap().is_symlink());
    }

    /// A FIFO, a device or an oversized file as the state file is refused
    /// at once, without waiting for a writer or reading it.
    #[test]
    fn load_takes_regular_files_of_the_cap_only() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success());
        for p in [fifo.as_path(), Path::new("/dev/zero"), dir.path()] {
            let e = load(p).unwrap_err();
            assert!(e.to_string().contains("not a regular file"), "{e}");
        }
        let big = dir.path().join("big");
        std::fs::File::create(&big)
            .unwrap()
            .set_len(MAX_FILE as u64 + 1)
            .unwrap();
        let e = load(&big).unwrap_err();
        assert!(e.to_string().contains("more than"), "{e}");
    }
}

#[cfg(test)]
mod restart {
    use super::*;
    use crate::fabric::hc::HC;
    use crate::rig::{AgentRig, RigOptions};
    use std::time::Duration;

    fn rig() -> AgentRig {
        AgentRig::new(RigOptions {
            seed: 11,
            traffic: true,
            ..Default::default()
        })
    }

    /// Every port's 64-bit totals, by (GUID, port).
    fn totals(r: &AgentRig) -> Vec<(Guid, u8, [Option<u64>; HC_SLOTS])> {
        let snap = r.cache.load();
        snap.nodes
            .iter()
            .flat_map(|n| {
                n.ports().map(move |p| {
                    let t = std::array::from_fn(|k| p.hc.shown(k));
                    (n.id.guid, p.num(), t)
                })
            })
            .collect()
    }

    /// An agent restarted from the state file shows the totals of an agent
    /// that never stopped, with no discontinuity; a file of another fabric
    /// matches nothing.
    #[test]
    fn totals_continue_across_a_restart() {
        // Two identical simulated fabrics: `a` runs throughout, `b` is the
        // agent started again from `a`'s state file.
        let mut a = rig();
        let mut b = rig();
        a.sweep();
        for r in [&a, &b] {
            r.advance(Duration::from_secs(30));
        }
        a.sweep();
        let bytes = encode(&a.state.lock().export_totals());
        let mut saved = decode(&bytes).unwrap();
        let ports: usize = a.fabric().nodes.iter().map(|n| n.ports.len()).sum();
        assert_eq!(saved.len(), ports);
        // Totals that are not the raw counters (as after a clear): the
        // restarted agent must take them from the file.
        const OFFSET: u64 = 1 << 40;
        for p in &mut saved {
            for t in &mut p.totals {
                *t += OFFSET;
            }
        }
        assert_eq!(b.state.lock().restore_totals(&saved), ports);
        for r in [&a, &b] {
            r.advance(Duration::from_secs(30));
        }
        a.sweep();
        b.sweep();
        let (ta, tb) = (totals(&a), totals(&b));
        let data = HC.iter().position(|c| c.name == "OutOctets").unwrap();
        assert!(ta.iter().any(|(_, _, t)| t[data].unwrap_or(0) > 0));
        assert_eq!(ta.len(), tb.len());
        for ((ga, pa, a), (gb, pb, b)) in ta.iter().zip(&tb) {
            assert_eq!((ga, pa), (gb, pb));
            for k in 0..HC_SLOTS {
                // Data totals are shown in octets: 4 per word.
                let scale = if HC[k].words { 4 } else { 1 };
                assert_eq!(
                    a[k].map(|v| v.wrapping_add(OFFSET * scale)),
                    b[k],
                    "{ga} port {pa} {}",
                    HC[k].name
                );
            }
        }
        let no_discontinuity = |r: &AgentRig| {
            r.cache
                .load()
                .nodes
                .iter()
                .flat_map(|n| n.ports())
                .all(|p| p.discontinuity.is_none())
        };
        assert!(no_discontinuity(&b));
        // Without the file, every total starts at the first reading.
        assert!(!no_discontinuity(&a));
        // Another fabric's file: no GUID matches.
        let other: Vec<SavedPort> = saved
            .iter()
            .map(|p| SavedPort {
                guid: Guid(p.guid.0 ^ 0xFFFF_0000_0000_0000),
                ..p.clone()
            })
            .collect();
        assert_eq!(rig().state.lock().restore_totals(&other), 0);
    }
}
