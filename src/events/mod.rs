//! The fabric's event log: one compact record per event the agent decides
//! (a node lost or found, a port's state, a verdict raised, cleared or
//! acknowledged, an SM change, a threshold crossed, a counter reset...),
//! written where it is decided, whether or not a notification went out,
//! in a bounded ring every face reads; and the summary of each of the last
//! sweeps.
//!
//! - [`kinds`]: the kinds, declared once (name, title, MIB value);
//! - [`ring`]: the ring, pure (records of fixed size, interned strings,
//!   count and age bounds);
//! - [`file`]: its file `<state_file>.events`, bounded and summed;
//! - [`summary`]: the last hour at a glance, per sweep.
//!
//! [`Log`] is the ring behind a lock, shared by the writers (on the
//! sweeper's thread) and the readers (HTTP, SNMP); a reader copies what it
//! shows and lets go.

pub mod file;
pub mod kinds;
pub mod ring;
pub mod summary;

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};

pub use kinds::{KIND_COUNT, KINDS, Kind, KindDef};
pub use ring::{Bounds, New, Record, Ring, SIMULATED, SUPPRESSED};
pub use summary::{SUMMARIES, Summaries, Summary};

use crate::ib::Guid;

/// How often the file is written when the log changed.
pub const SAVE_EVERY: Duration = Duration::from_secs(60);

/// One event as the faces show it: its strings resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub seq: u64,
    pub time_ms: u64,
    pub sweep: u64,
    pub kind: Kind,
    pub guid: Guid,
    pub name: Arc<str>,
    pub port: u8,
    pub peer: Option<(Guid, u8, Arc<str>)>,
    pub before: u64,
    pub after: u64,
    pub detail: Arc<str>,
    /// The subnet's index.
    pub subnet: Option<u16>,
    pub suppressed: bool,
    pub simulated: bool,
}

/// Which events a reader asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Filter {
    /// At or after this wall-clock time (milliseconds).
    pub since_ms: Option<u64>,
    /// Only these kinds (empty: all).
    pub kinds: Vec<Kind>,
    /// Only events about this node (or with it at the far end).
    pub node: Option<NodeMatch>,
    /// Only events numbered after this one.
    pub after_seq: Option<u64>,
    /// The newest this many of those.
    pub limit: usize,
}

impl Default for Filter {
    fn default() -> Self {
        Filter {
            since_ms: None,
            kinds: Vec::new(),
            node: None,
            after_seq: None,
            limit: usize::MAX,
        }
    }
}

/// A node asked for: by GUID, or by name (a node's name, or its host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeMatch {
    Guid(Guid),
    Name(String),
}

impl NodeMatch {
    fn matches(&self, guid: Guid, name: &str) -> bool {
        match self {
            NodeMatch::Guid(g) => *g == guid,
            NodeMatch::Name(n) => name == n || host_of(name) == n,
        }
    }
}

/// The host part of a node's name: its first word ("node0413" of
/// "node0413 HCA-1" and of "node0413 mlx5_0"). docs/health.md states the
/// rule.
pub fn host_of(name: &str) -> &str {
    name.split_whitespace().next().unwrap_or("")
}

/// A record with its strings resolved.
fn entry(r: &Record, s: &ring::Interner) -> Entry {
    Entry {
        seq: r.seq,
        time_ms: r.time_ms,
        sweep: r.sweep,
        kind: r.kind,
        guid: r.guid,
        name: Arc::clone(s.get(r.name)),
        port: r.port,
        peer: (r.peer != Guid(0) || r.peer_port != 0)
            .then(|| (r.peer, r.peer_port, Arc::clone(s.get(r.peer_name)))),
        before: r.before,
        after: r.after,
        detail: Arc::clone(s.get(r.detail)),
        subnet: r.subnet.checked_sub(1),
        suppressed: r.flags & SUPPRESSED != 0,
        simulated: r.flags & SIMULATED != 0,
    }
}

struct Inner {
    ring: Ring,
    summaries: Summaries,
    dirty: bool,
    saved_at: Option<Instant>,
}

/// The log: the ring and the summaries behind a lock, and the file.
pub struct Log {
    inner: Mutex<Inner>,
    path: Option<PathBuf>,
}

impl Log {
    /// An empty log of `bounds`, kept in `path` when there is one.
    pub fn new(bounds: Bounds, path: Option<PathBuf>) -> Log {
        Log {
            inner: Mutex::new(Inner {
                ring: Ring::new(bounds),
                summaries: Summaries::default(),
                dirty: false,
                saved_at: None,
            }),
            path,
        }
    }

    /// A log of `bounds` taking up the file at `path`: a file that cannot
    /// be used (truncated, corrupted, not a regular file) is refused with
    /// one line in the log and the log starts empty (the file is replaced
    /// at the next save).
    pub fn open(bounds: Bounds, path: Option<PathBuf>, now_ms: u64) -> Log {
        let log = Log::new(bounds, path);
        if let Some(p) = &log.path {
            match file::load(p) {
                Ok(saved) => {
                    let mut g = log.lock();
                    for r in saved.records {
                        g.ring.restore(r, &saved.strings);
                    }
                    g.ring.trim(now_ms);
                    info!(
                        events = g.ring.len(),
                        "event log taken up from {}",
                        p.display()
                    );
                }
                Err(file::FileError::Frame(e)) if e.is_missing() => {
                    debug!("no event log file at {}: {e}", p.display());
                }
                Err(e) => warn!(
                    "event log file {} refused ({e}): the log starts empty",
                    p.display()
                ),
            }
        }
        log
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Every record written from now on is marked as the simulator's.
    pub fn set_simulated(&self, on: bool) {
        self.lock().ring.set_simulated(on);
    }

    /// Whether the records written are marked as the simulator's.
    pub fn is_simulated(&self) -> bool {
        self.lock().ring.is_simulated()
    }

    /// Write events.
    pub fn write<'a>(&self, events: impl IntoIterator<Item = New<'a>>) {
        let mut g = self.lock();
        for e in events {
            g.ring.push(&e);
            g.dirty = true;
        }
    }

    /// Keep the summary of a sweep.
    pub fn summarize(&self, s: Summary) {
        self.lock().summaries.push(s);
    }

    /// The summaries, oldest first.
    pub fn summaries(&self) -> Vec<Summary> {
        self.lock().summaries.iter().copied().collect()
    }

    /// The last sweep summarized, without copying the others.
    pub fn last_summary(&self) -> Option<Summary> {
        self.lock().summaries.last().copied()
    }

    /// Events written since the start, by kind.
    pub fn counts(&self) -> [u64; KIND_COUNT] {
        self.lock().ring.counts()
    }

    pub fn len(&self) -> usize {
        self.lock().ring.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes the ring holds.
    pub fn bytes(&self) -> usize {
        self.lock().ring.bytes()
    }

    /// The first event numbered `seq` or after (`seq` itself only when
    /// `include`): what a walk of the MIB table reads next.
    pub fn first_from(&self, seq: u64, include: bool) -> Option<Entry> {
        let g = self.lock();
        let r = g.ring.records();
        let i = r.partition_point(|x| if include { x.seq < seq } else { x.seq <= seq });
        r.get(i).map(|x| entry(x, g.ring.strings()))
    }

    /// The event numbered `seq`, while the log holds it.
    pub fn get(&self, seq: u64) -> Option<Entry> {
        self.first_from(seq, true).filter(|e| e.seq == seq)
    }

    /// The events `f` asks for, oldest first.
    pub fn query(&self, f: &Filter) -> Vec<Entry> {
        let g = self.lock();
        let s = g.ring.strings();
        let matching = |r: &&Record| {
            f.since_ms.is_none_or(|t| r.time_ms >= t)
                && f.after_seq.is_none_or(|q| r.seq > q)
                && (f.kinds.is_empty() || f.kinds.contains(&r.kind))
                && f.node.as_ref().is_none_or(|n| {
                    n.matches(r.guid, s.get(r.name))
                        || (r.peer != Guid(0) && n.matches(r.peer, s.get(r.peer_name)))
                })
        };
        let mut out: Vec<Entry> = g
            .ring
            .records()
            .iter()
            .rev()
            .filter(matching)
            .take(f.limit)
            .map(|r| entry(r, s))
            .collect();
        out.reverse();
        out
    }

    /// Let the records past the age bound go at `now_ms`, and write the
    /// file when it changed and [`SAVE_EVERY`] has passed since the last
    /// write (or never was).
    pub fn tend(&self, now_ms: u64, now: Instant) {
        let bytes = {
            let mut g = self.lock();
            g.ring.trim(now_ms);
            let due = g
                .saved_at
                .is_none_or(|t| now.duration_since(t) >= SAVE_EVERY);
            if self.path.is_none() || !g.dirty || !due {
                return;
            }
            g.saved_at = Some(now);
            g.dirty = false;
            file::encode(&g.ring)
        };
        self.write_file(&bytes);
    }

    /// After each publication (the evaluators having written theirs):
    /// the sweep's summary, the age bound, the file when due.
    pub fn after_sweep(&self, cache: &crate::fabric::cache::Cache) {
        let snap = cache.load();
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if snap.sweep > 0 {
            self.summarize(Summary::of(&snap, now_ms));
        }
        self.tend(now_ms, Instant::now());
    }

    /// Write the file now (as the agent stops).
    pub fn save(&self) {
        if self.path.is_none() {
            return;
        }
        let bytes = {
            let mut g = self.lock();
            g.dirty = false;
            file::encode(&g.ring)
        };
        self.write_file(&bytes);
    }

    /// Write `bytes` to the file, outside the lock: readers never wait on
    /// the disk. A write that fails is said and tried again later.
    fn write_file(&self, bytes: &[u8]) {
        let Some(p) = &self.path else {
            return;
        };
        if let Err(e) = crate::files::write_atomic(p, bytes) {
            warn!("cannot save the event log to {}: {e}", p.display());
            self.lock().dirty = true;
        }
    }
}

impl Drop for Log {
    /// The last word: the file, when the log changed since it was written.
    fn drop(&mut self) {
        if self.path.is_some() && self.lock().dirty {
            self.save();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn new(kind: Kind, t: u64, guid: u64, name: &str) -> New<'_> {
        New {
            kind: Some(kind),
            time_ms: t,
            guid: Guid(guid),
            name,
            ..Default::default()
        }
    }

    #[test]
    fn a_query_filters_and_keeps_the_newest() {
        let log = Log::new(Bounds::default(), None);
        log.write([
            new(Kind::PortState, 10, 1, "node0001 HCA-1"),
            new(Kind::NodeLost, 20, 2, "leaf07"),
            new(Kind::PortState, 30, 1, "node0001 HCA-1"),
            new(Kind::VerdictRaised, 40, 3, "node0002 mlx5_0"),
        ]);
        let all = log.query(&Filter::default());
        assert_eq!(all.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2, 3, 4]);
        let f = Filter {
            kinds: vec![Kind::PortState],
            ..Default::default()
        };
        assert_eq!(log.query(&f).len(), 2);
        let f = Filter {
            since_ms: Some(20),
            limit: 2,
            ..Default::default()
        };
        let got: Vec<u64> = log.query(&f).iter().map(|e| e.time_ms).collect();
        assert_eq!(got, [30, 40]);
        let f = Filter {
            node: Some(NodeMatch::Name("node0001".into())),
            ..Default::default()
        };
        assert_eq!(log.query(&f).len(), 2, "by host");
        let f = Filter {
            node: Some(NodeMatch::Guid(Guid(2))),
            after_seq: Some(1),
            ..Default::default()
        };
        assert_eq!(log.query(&f)[0].kind, Kind::NodeLost);
        assert_eq!(log.counts()[Kind::PortState as usize], 2);
    }

    #[test]
    fn the_log_survives_a_restart_and_refuses_a_bad_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.events");
        let log = Log::open(Bounds::default(), Some(path.clone()), 0);
        log.write([new(Kind::NodeLost, 5, 9, "leaf07")]);
        log.tend(5, Instant::now());
        drop(log);
        let log = Log::open(Bounds::default(), Some(path.clone()), 6);
        let got = log.query(&Filter::default());
        assert_eq!(got.len(), 1);
        assert_eq!(&*got[0].name, "leaf07");
        log.write([new(Kind::NodeFound, 7, 9, "leaf07")]);
        assert_eq!(log.query(&Filter::default())[1].seq, 2, "numbers go on");
        // Cut short: refused, the log starts empty.
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 3]).unwrap();
        assert!(Log::open(Bounds::default(), Some(path), 8).is_empty());
    }

    #[test]
    fn hosts_are_the_first_word_of_a_name() {
        assert_eq!(host_of("node0413 HCA-1"), "node0413");
        assert_eq!(host_of("node0413 mlx5_0"), "node0413");
        assert_eq!(host_of("leaf07"), "leaf07");
        assert_eq!(host_of(""), "");
    }
}
