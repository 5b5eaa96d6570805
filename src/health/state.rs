//! The health state file: what the evaluator must not forget across a
//! restart. The ports that were Active (so a link lost while the agent was
//! down is still seen lost) with their last peers, and every verdict entry
//! (since when, last seen, how many times, the flap total and the last
//! flap). The flap buckets and the unresponsive windows start afresh.
//!
//! The codec is pure and bounded (at most [`MAX_PORTS`] ports and as many
//! entries, sizes checked before anything is allocated, an FNV-1a sum at
//! the end); the file is written atomically beside the totals
//! (`fabric.state_file` with `.health` appended).

use std::path::Path;

use super::{ACTIVE, EVER_ACTIVE, Evaluator, HAS_LINK_DOWNED, HAS_PEER, NodeMem, PortMem, SEEN};
use crate::files::{Cursor, SealError, Sealed};
use crate::ib::Guid;
use crate::ib::health::{CONDITION_COUNT, Mark, NodeVerdict, PortVerdict};
use crate::ib::last_peer::keep_peer;

pub const MAGIC: [u8; 8] = *b"IBPMHL\x00\x01";
/// Ports, entries and node entries a file holds at most (each).
pub const MAX_PORTS: usize = 1 << 18;
/// One Active port: GUID, number, flags, peer GUID and port.
const PORT_LEN: usize = 8 + 1 + 1 + 8 + 1;
/// A mark: present, holding, since, last seen.
const MARK_LEN: usize = 1 + 1 + 8 + 8;
/// One entry: GUID, port, peer (flag, GUID, port), marks, raised counts,
/// flaps, last flap (flag, time), last change.
const ENTRY_LEN: usize = 8 + 1 + 10 + CONDITION_COUNT * (MARK_LEN + 4) + 8 + 9 + 8;
/// One node entry: GUID, missed, of, mark, raised, last change.
const NODE_LEN: usize = 8 + 1 + 1 + MARK_LEN + 4 + 8;
/// The largest file.
pub const MAX_FILE: usize = MAGIC.len() + 12 + MAX_PORTS * (PORT_LEN + ENTRY_LEN + NODE_LEN) + 8;

/// The file's format.
pub const FILE: Sealed = Sealed {
    magic: MAGIC,
    max: MAX_FILE,
    what: "a health state file",
};

/// Why a health state file cannot be used: a fault of the frame every
/// state file shares (its body has no fault of its own).
pub type StateError = SealError;

/// The flags a port keeps across a restart (its LinkDowned reading does
/// not: the first one after the start is taken as it is).
const KEPT_FLAGS: u8 = SEEN | EVER_ACTIVE | ACTIVE | HAS_PEER;

fn put_mark(out: &mut Vec<u8>, m: Option<Mark>) {
    let m0 = m.unwrap_or_default();
    out.push(u8::from(m.is_some()));
    out.push(u8::from(m0.holding));
    out.extend_from_slice(&m0.since.to_le_bytes());
    out.extend_from_slice(&m0.last_seen.to_le_bytes());
}

fn get_mark(c: &mut Cursor) -> Result<Option<Mark>, StateError> {
    let present = c.u8()? != 0;
    let holding = c.u8()? != 0;
    let since = c.u64()?;
    let last_seen = c.u64()?;
    Ok(present.then_some(Mark {
        since,
        last_seen,
        holding,
    }))
}

/// Move the times of a mark by `d` milliseconds.
fn shift_mark(m: &mut Option<Mark>, d: i64) {
    if let Some(m) = m {
        m.since = m.since.saturating_add_signed(d);
        m.last_seen = m.last_seen.saturating_add_signed(d);
    }
}

/// Move the times of an entry by `d` milliseconds (between the timeline
/// and the wall clock).
fn shift_entry(e: &mut PortVerdict, d: i64) {
    e.marks.iter_mut().for_each(|m| shift_mark(m, d));
    e.last_flap = e.last_flap.map(|t| t.saturating_add_signed(d));
    e.last_change = e.last_change.saturating_add_signed(d);
}

fn shift_node(n: &mut NodeVerdict, d: i64) {
    shift_mark(&mut n.unresponsive, d);
    n.last_change = n.last_change.saturating_add_signed(d);
}

/// The state file's bytes for what `eval` holds (its times as wall-clock
/// milliseconds).
pub fn encode(eval: &Evaluator) -> Vec<u8> {
    // Each part read where it is (nothing copied beside the file's
    // bytes), the buffer taken once at the file's size.
    let ports = || {
        eval.spans()
            .flat_map(|(n, ports)| ports.iter().map(move |p| (n.guid, p)))
            .filter(|(_, p)| p.flags & EVER_ACTIVE != 0)
            .take(MAX_PORTS)
    };
    let port_count = ports().count();
    let entries = &eval.entries[..eval.entries.len().min(MAX_PORTS)];
    let nodes = &eval.node_entries[..eval.node_entries.len().min(MAX_PORTS)];
    let mut out =
        FILE.start(12 + port_count * PORT_LEN + entries.len() * ENTRY_LEN + nodes.len() * NODE_LEN);
    out.extend_from_slice(&(port_count as u32).to_le_bytes());
    for (guid, p) in ports() {
        out.extend_from_slice(&guid.0.to_le_bytes());
        out.push(p.num);
        out.push(p.flags & KEPT_FLAGS | if p.peer.is_some() { HAS_PEER } else { 0 });
        let (peer, port) = eval.peer((guid, p.num), p).unwrap_or((Guid(0), 0));
        out.extend_from_slice(&peer.0.to_le_bytes());
        out.push(port);
    }
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for e in entries {
        let mut e = e.clone();
        shift_entry(&mut e, eval.offset);
        out.extend_from_slice(&e.guid.0.to_le_bytes());
        out.push(e.port);
        let (pg, pp) = e.peer.unwrap_or((Guid(0), 0));
        out.push(u8::from(e.peer.is_some()));
        out.extend_from_slice(&pg.0.to_le_bytes());
        out.push(pp);
        for m in e.marks {
            put_mark(&mut out, m);
        }
        for r in e.raised {
            out.extend_from_slice(&r.to_le_bytes());
        }
        out.extend_from_slice(&e.flaps.to_le_bytes());
        out.push(u8::from(e.last_flap.is_some()));
        out.extend_from_slice(&e.last_flap.unwrap_or(0).to_le_bytes());
        out.extend_from_slice(&e.last_change.to_le_bytes());
    }
    out.extend_from_slice(&(nodes.len() as u32).to_le_bytes());
    for n in nodes {
        let mut n = *n;
        shift_node(&mut n, eval.offset);
        out.extend_from_slice(&n.guid.0.to_le_bytes());
        out.push(n.missed);
        out.push(n.of);
        put_mark(&mut out, n.unresponsive);
        out.extend_from_slice(&n.raised.to_le_bytes());
        out.extend_from_slice(&n.last_change.to_le_bytes());
    }
    FILE.seal(out)
}

/// What a state file holds, decoded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Saved {
    /// (node GUID, port, flags, peer GUID, peer port) of the ports that
    /// were Active.
    pub ports: Vec<(Guid, u8, u8, Guid, u8)>,
    pub entries: Vec<PortVerdict>,
    pub nodes: Vec<NodeVerdict>,
}

impl Saved {
    /// What was saved, no time of it later than `now_ms` (wall-clock
    /// milliseconds): a file written by a clock that ran ahead, or made
    /// up, dates no verdict in the future, where it would never recover
    /// or be forgotten.
    pub fn clamped(mut self, now_ms: u64) -> Saved {
        let clamp = |t: &mut u64| *t = (*t).min(now_ms);
        let mark = |m: &mut Option<Mark>| {
            if let Some(m) = m {
                clamp(&mut m.since);
                clamp(&mut m.last_seen);
                m.since = m.since.min(m.last_seen);
            }
        };
        for e in &mut self.entries {
            e.marks.iter_mut().for_each(mark);
            if let Some(t) = &mut e.last_flap {
                clamp(t);
            }
            clamp(&mut e.last_change);
        }
        for n in &mut self.nodes {
            mark(&mut n.unresponsive);
            clamp(&mut n.last_change);
        }
        self
    }
}

/// Decode a state file's bytes.
pub fn decode(bytes: &[u8]) -> Result<Saved, StateError> {
    let mut c = FILE.open(bytes)?;
    let mut saved = Saved::default();
    for _ in 0..c.count(MAX_PORTS, PORT_LEN)? {
        saved.ports.push((
            Guid(c.u64()?),
            c.u8()?,
            c.u8()? & KEPT_FLAGS,
            Guid(c.u64()?),
            c.u8()?,
        ));
    }
    for _ in 0..c.count(MAX_PORTS, ENTRY_LEN)? {
        let guid = Guid(c.u64()?);
        let port = c.u8()?;
        let has_peer = c.u8()? != 0;
        let peer = (Guid(c.u64()?), c.u8()?);
        let mut e = PortVerdict {
            guid,
            port,
            peer: has_peer.then_some(peer),
            ..Default::default()
        };
        for m in &mut e.marks {
            *m = get_mark(&mut c)?;
        }
        for r in &mut e.raised {
            *r = c.u32()?;
        }
        e.flaps = c.u64()?;
        let has_flap = c.u8()? != 0;
        let last_flap = c.u64()?;
        e.last_flap = has_flap.then_some(last_flap);
        e.last_change = c.u64()?;
        saved.entries.push(e);
    }
    for _ in 0..c.count(MAX_PORTS, NODE_LEN)? {
        let guid = Guid(c.u64()?);
        let missed = c.u8()?;
        let of = c.u8()?;
        let unresponsive = get_mark(&mut c)?;
        saved.nodes.push(NodeVerdict {
            guid,
            missed,
            of,
            unresponsive,
            raised: c.u32()?,
            last_change: c.u64()?,
        });
    }
    c.finish()?;
    Ok(saved)
}

impl Evaluator {
    /// Take up what a state file saved: the ports that were Active, and the
    /// verdict entries (the first of two for one port wins), their
    /// wall-clock times put on the timeline (before the first evaluation
    /// the two are the same).
    pub fn restore(&mut self, saved: Saved) {
        let mut ports = saved.ports;
        ports.sort_by_key(|p| (p.0, p.1));
        ports.dedup_by_key(|p| (p.0, p.1));
        self.nodes.clear();
        self.ports.clear();
        self.far.clear();
        let runs = || ports.chunk_by(|a, b| a.0 == b.0);
        for run in runs() {
            let len = run.len().min(usize::from(u8::MAX));
            self.nodes.push(NodeMem {
                guid: run[0].0,
                len: len as u8,
                ..Default::default()
            });
        }
        // The peers once every node is there to be pointed at.
        for run in runs() {
            let len = run.len().min(usize::from(u8::MAX));
            for &(guid, num, flags, peer_guid, peer_port) in &run[..len] {
                let mut m = PortMem::new(num);
                if flags & HAS_PEER != 0 {
                    let own = (guid, num);
                    keep_peer(
                        &self.nodes,
                        &mut self.far,
                        own,
                        &mut m.peer,
                        (peer_guid, peer_port),
                    );
                }
                m.flags = flags & !(HAS_LINK_DOWNED | HAS_PEER);
                self.ports.push(m);
            }
        }
        let mut entries = saved.entries;
        entries
            .iter_mut()
            .for_each(|e| shift_entry(e, -self.offset));
        entries.sort_by_key(|e| (e.guid, e.port));
        entries.dedup_by_key(|e| (e.guid, e.port));
        self.entries = entries.into();
        let mut nodes = saved.nodes;
        nodes.iter_mut().for_each(|n| shift_node(n, -self.offset));
        nodes.sort_by_key(|n| n.guid);
        nodes.dedup_by_key(|n| n.guid);
        self.node_entries = nodes.into();
    }

    /// Save what the evaluator must not forget to `path` (atomically).
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        crate::files::write_atomic(path, &encode(self))
    }
}

/// Read and decode the health state file at `path`: a regular file of at
/// most [`MAX_FILE`] bytes.
pub fn load(path: &Path) -> Result<Saved, StateError> {
    decode(&FILE.read(path)?)
}

#[cfg(test)]
mod clamp_tests {
    use super::*;

    #[test]
    fn times_after_now_are_taken_as_now() {
        let future = Mark::holding(9_000, 9_500);
        let mut e = PortVerdict {
            guid: Guid(1),
            port: 1,
            last_flap: Some(8_000),
            last_change: 9_500,
            ..Default::default()
        };
        e.marks[0] = Some(future);
        e.marks[1] = Some(Mark {
            since: 100,
            last_seen: 200,
            holding: false,
        });
        let saved = Saved {
            ports: Vec::new(),
            entries: vec![e],
            nodes: vec![NodeVerdict {
                guid: Guid(2),
                missed: 1,
                of: 3,
                unresponsive: Some(future),
                raised: 1,
                last_change: 9_999,
            }],
        }
        .clamped(1_000);
        let e = &saved.entries[0];
        let m = e.marks[0].unwrap();
        assert_eq!((m.since, m.last_seen, m.holding), (1_000, 1_000, true));
        let past = e.marks[1].unwrap();
        assert_eq!((past.since, past.last_seen), (100, 200), "the past stays");
        assert_eq!((e.last_flap, e.last_change), (Some(1_000), 1_000));
        let n = &saved.nodes[0];
        assert_eq!(n.unresponsive.unwrap().since, 1_000);
        assert_eq!(n.last_change, 1_000);
    }
}
