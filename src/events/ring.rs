//! The ring itself, pure: compact records of fixed size, the strings they
//! name interned once, bounded by a count and an age. No locks, no I/O, no
//! clock: the time comes with each record.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::kinds::{KIND_COUNT, Kind};
use crate::ib::Guid;

/// The record was kept, but storm control held its notification back.
pub const SUPPRESSED: u8 = 1;
/// The fabric it is about is the built-in simulator's.
pub const SIMULATED: u8 = 2;

/// An interned string: an index into the ring's [`Interner`] (0: empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Sym(pub u32);

/// One event as the ring holds it: fixed size, its strings interned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Record {
    /// Its number since the log began (kept across restarts).
    pub seq: u64,
    /// Wall-clock milliseconds since the UNIX epoch.
    pub time_ms: u64,
    pub sweep: u64,
    pub guid: Guid,
    pub peer: Guid,
    pub before: u64,
    pub after: u64,
    pub name: Sym,
    pub peer_name: Sym,
    pub detail: Sym,
    /// The subnet's index + 1 (0: none).
    pub subnet: u16,
    pub kind: Kind,
    pub port: u8,
    pub peer_port: u8,
    /// [`SUPPRESSED`], [`SIMULATED`].
    pub flags: u8,
}

/// An event as a writer hands it in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct New<'a> {
    pub kind: Option<Kind>,
    pub time_ms: u64,
    pub sweep: u64,
    pub guid: Guid,
    pub name: &'a str,
    pub port: u8,
    pub peer: Option<(Guid, u8, &'a str)>,
    pub before: u64,
    pub after: u64,
    pub detail: &'a str,
    pub subnet: Option<u16>,
    pub suppressed: bool,
}

/// Strings held once, each with its index; index 0 is the empty string.
#[derive(Debug)]
pub struct Interner {
    strings: Vec<Arc<str>>,
    index: HashMap<Arc<str>, u32>,
}

/// The longest string kept (longer ones are cut at a character boundary).
pub const MAX_STRING: usize = 255;

impl Default for Interner {
    fn default() -> Self {
        let empty: Arc<str> = Arc::from("");
        Interner {
            strings: vec![Arc::clone(&empty)],
            index: HashMap::from([(empty, 0)]),
        }
    }
}

fn cut(s: &str) -> &str {
    let mut n = s.len().min(MAX_STRING);
    while !s.is_char_boundary(n) {
        n -= 1;
    }
    &s[..n]
}

impl Interner {
    pub fn intern(&mut self, s: &str) -> Sym {
        let s = cut(s);
        if let Some(&i) = self.index.get(s) {
            return Sym(i);
        }
        let a: Arc<str> = Arc::from(s);
        let i = self.strings.len() as u32;
        self.strings.push(Arc::clone(&a));
        self.index.insert(a, i);
        Sym(i)
    }

    pub fn get(&self, s: Sym) -> &Arc<str> {
        self.strings.get(s.0 as usize).unwrap_or(&self.strings[0])
    }

    pub fn len(&self) -> usize {
        self.strings.len()
    }

    pub fn is_empty(&self) -> bool {
        self.strings.len() <= 1
    }

    pub fn strings(&self) -> &[Arc<str>] {
        &self.strings
    }

    /// Bytes held: each string's bytes (shared by the list and the map),
    /// the pointers of both, and the map's overhead.
    pub fn bytes(&self) -> usize {
        let per = std::mem::size_of::<Arc<str>>() * 2 + 4 + 16 + 8;
        self.strings.iter().map(|s| s.len() + per).sum()
    }
}

/// The bounds of the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bounds {
    /// Events held at most.
    pub capacity: usize,
    /// Events older than this (milliseconds) go.
    pub max_age_ms: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            capacity: 10_000,
            max_age_ms: 24 * 3600 * 1000,
        }
    }
}

/// The records, oldest first, and their strings.
#[derive(Debug)]
pub struct Ring {
    bounds: Bounds,
    records: VecDeque<Record>,
    strings: Interner,
    next_seq: u64,
    /// Events written since the start, by kind (not those taken up from a
    /// file).
    counts: [u64; KIND_COUNT],
    /// Flags every record gets.
    flags: u8,
}

impl Ring {
    pub fn new(bounds: Bounds) -> Ring {
        Ring {
            bounds,
            // Grown as it fills ([`Ring::insert`]): an agent whose log
            // stays short holds none of the slots its bound allows.
            records: VecDeque::new(),
            strings: Interner::default(),
            next_seq: 1,
            counts: [0; KIND_COUNT],
            flags: 0,
        }
    }

    /// Every record written from now on is marked simulated.
    pub fn set_simulated(&mut self, on: bool) {
        if on {
            self.flags |= SIMULATED;
        } else {
            self.flags &= !SIMULATED;
        }
    }

    pub fn is_simulated(&self) -> bool {
        self.flags & SIMULATED != 0
    }

    pub fn bounds(&self) -> Bounds {
        self.bounds
    }

    /// Write one event; the oldest ones go past the bounds.
    pub fn push(&mut self, e: &New<'_>) {
        let Some(kind) = e.kind else {
            return;
        };
        let (peer, peer_port, peer_name) = e.peer.unwrap_or((Guid(0), 0, ""));
        let r = Record {
            seq: self.next_seq,
            time_ms: e.time_ms,
            sweep: e.sweep,
            guid: e.guid,
            peer,
            before: e.before,
            after: e.after,
            name: self.strings.intern(e.name),
            peer_name: self.strings.intern(peer_name),
            detail: self.strings.intern(e.detail),
            subnet: e.subnet.map_or(0, |s| s.saturating_add(1)),
            kind,
            port: e.port,
            peer_port,
            flags: self.flags | if e.suppressed { SUPPRESSED } else { 0 },
        };
        self.next_seq += 1;
        self.counts[kind as usize] += 1;
        self.insert(r);
        self.trim(e.time_ms);
    }

    /// Take a record up as it is (from a file): its strings are `strings`'.
    pub fn restore(&mut self, mut r: Record, strings: &[Arc<str>]) {
        let s = |x: Sym| strings.get(x.0 as usize).map_or("", |s| &**s);
        let (name, peer_name, detail) = (s(r.name), s(r.peer_name), s(r.detail));
        r.name = self.strings.intern(name);
        r.peer_name = self.strings.intern(peer_name);
        r.detail = self.strings.intern(detail);
        self.next_seq = self.next_seq.max(r.seq + 1);
        self.insert(r);
    }

    fn insert(&mut self, r: Record) {
        // Room first: a full ring never grows past its capacity.
        let bound = self.bounds.capacity.max(1);
        while self.records.len() >= bound {
            self.records.pop_front();
        }
        // Twice the slots as it fills (at least 16), never past the bound.
        let len = self.records.len();
        if len == self.records.capacity() {
            self.records.reserve_exact(len.max(16).min(bound - len));
        }
        self.records.push_back(r);
    }

    /// Let go of the records older than the age bound at `now_ms`, and of
    /// strings no record names any more once they are many.
    pub fn trim(&mut self, now_ms: u64) {
        let oldest = now_ms.saturating_sub(self.bounds.max_age_ms);
        while self.records.front().is_some_and(|r| r.time_ms < oldest) {
            self.records.pop_front();
        }
        // At most three strings per record are live: past that (and a
        // floor), the strings are rebuilt from the records.
        if self.strings.len() > 3 * self.records.len() + 1024 {
            self.compact();
        }
    }

    fn compact(&mut self) {
        let old = std::mem::take(&mut self.strings);
        for r in &mut self.records {
            r.name = self.strings.intern(old.get(r.name));
            r.peer_name = self.strings.intern(old.get(r.peer_name));
            r.detail = self.strings.intern(old.get(r.detail));
        }
    }

    pub fn records(&self) -> &VecDeque<Record> {
        &self.records
    }

    pub fn strings(&self) -> &Interner {
        &self.strings
    }

    pub fn counts(&self) -> [u64; KIND_COUNT] {
        self.counts
    }

    pub fn len(&self) -> usize {
        self.records.len()
    }

    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// Bytes the ring holds: its records' slots and its strings.
    pub fn bytes(&self) -> usize {
        self.records.capacity() * std::mem::size_of::<Record>() + self.strings.bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(kind: Kind, t: u64, name: &str) -> New<'_> {
        New {
            kind: Some(kind),
            time_ms: t,
            sweep: t / 1000,
            guid: Guid(t),
            name,
            ..Default::default()
        }
    }

    #[test]
    fn a_record_is_small() {
        assert!(std::mem::size_of::<Record>() <= 80);
    }

    #[test]
    fn the_ring_takes_slots_as_it_fills_never_past_its_bound() {
        let mut r = Ring::new(Bounds::default());
        assert_eq!(r.records().capacity(), 0, "no slot before the first event");
        assert!(r.bytes() < 1024, "{}", r.bytes());
        r.push(&ev(Kind::PortState, 1, "sw"));
        assert!(r.records().capacity() <= 16, "{}", r.records().capacity());
        let mut r = Ring::new(Bounds {
            capacity: 1000,
            max_age_ms: u64::MAX,
        });
        for t in 0..5000u64 {
            r.push(&ev(Kind::PortState, t, "sw"));
            assert!(r.records().capacity() <= 1000, "{}", r.records().capacity());
        }
        assert_eq!(r.len(), 1000);
    }

    #[test]
    fn the_ring_keeps_its_count_and_age_bounds() {
        let mut r = Ring::new(Bounds {
            capacity: 100,
            max_age_ms: 50_000,
        });
        for t in 0..1000u64 {
            r.push(&ev(Kind::PortState, t * 10, "sw"));
        }
        assert_eq!(r.len(), 100);
        assert!(r.records().capacity() < 200, "{}", r.records().capacity());
        assert_eq!(r.records().front().unwrap().seq, 901);
        assert_eq!(r.counts()[Kind::PortState as usize], 1000);
        r.push(&ev(Kind::NodeLost, 100_000, "n"));
        assert_eq!(r.len(), 1, "the others are older than the age bound");
        assert_eq!(r.records()[0].seq, 1001);
    }

    #[test]
    fn a_flood_of_names_keeps_the_strings_bounded() {
        let mut r = Ring::new(Bounds {
            capacity: 10,
            max_age_ms: u64::MAX,
        });
        for i in 0..100_000u64 {
            r.push(&ev(Kind::NodeFound, i, &format!("node{i:06} HCA-1")));
        }
        assert_eq!(r.len(), 10);
        assert!(r.strings().len() <= 3 * 10 + 1025, "{}", r.strings().len());
        let last = r.records().back().unwrap();
        assert_eq!(&**r.strings().get(last.name), "node099999 HCA-1");
    }

    #[test]
    fn long_strings_are_cut_at_a_character_boundary() {
        let mut r = Ring::new(Bounds::default());
        let long = "é".repeat(200);
        r.push(&ev(Kind::NodeFound, 1, &long));
        let s = r.strings().get(r.records()[0].name);
        assert!(s.len() <= MAX_STRING && s.len() >= MAX_STRING - 1);
        assert!(long.starts_with(&**s));
    }

    #[test]
    fn suppressed_and_simulated_are_marked() {
        let mut r = Ring::new(Bounds::default());
        r.set_simulated(true);
        let mut e = ev(Kind::PortState, 1, "a");
        e.suppressed = true;
        r.push(&e);
        assert_eq!(r.records()[0].flags, SUPPRESSED | SIMULATED);
        r.push(&New { kind: None, ..e });
        assert_eq!(r.len(), 1, "no kind, no record");
    }
}
