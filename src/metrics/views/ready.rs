//! The status page and `/api/health` ready to send: made once for each
//! sweep, evaluation, acknowledgement and change of the event log
//! ([`Key`]), per query, so that a request for them copies bytes instead
//! of making the report of every port again.
//!
//! - A request whose query was made for the current [`Key`], not longer
//!   ago than the snapshot's sweep interval (within 1 s and 60 s), is
//!   answered from its slot ([`Ready::hit`]); otherwise it makes
//!   the views ([`Ready::make`]), one making per query at a time: a
//!   request that finds one under way waits for it and takes what it made
//!   if that is current.
//! - One report makes both views of a query: the page and the JSON.
//! - While a query is read (asked within [`WATCH`]), its views are made
//!   again off the request path as soon as the snapshot and the log have
//!   settled ([`Ready::due`], then [`Ready::warm`]): the HTTP edge polls
//!   every [`POLL`].
//!
//! What the views show of time stays true: the report says when it was
//! made, and every age on it is counted to then; a report is at most a
//! sweep interval old, so "not sweeping" shows at most that late.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::View;
use crate::events::{Log, Summary};
use crate::fabric::cache::{Cache, Snapshot};
use crate::ib::cabling::PlanVerdicts;
use crate::ib::health::Verdicts;
use crate::metrics::status::Query;
use crate::time::Clock;

/// Queries kept at most; past it the one asked the longest ago goes.
pub const SLOTS: usize = 16;
/// A query asked within this long is read: its views are made again as
/// each snapshot settles.
pub const WATCH: Duration = Duration::from_secs(600);
/// How often the edge looks for a new snapshot to make views of; the
/// snapshot (and the log) must be the same at two looks in a row, so that
/// the stores after a sweep (its verdicts, the plan's, the notification
/// figures) make one set of views, not one each.
pub const POLL: Duration = Duration::from_millis(100);
/// The age of views within which they are served, whatever the sweep
/// interval: at least [`MIN_AGE`], at most [`MAX_AGE`].
pub const MIN_AGE: Duration = Duration::from_secs(1);
pub const MAX_AGE: Duration = Duration::from_secs(60);

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The event log as far as the page shows it: events written, and the
/// last sweep summarized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LogMark {
    written: u64,
    last: Option<Summary>,
}

impl LogMark {
    fn of(log: Option<&Log>) -> LogMark {
        log.map_or_else(LogMark::default, |l| LogMark {
            written: l.counts().iter().sum(),
            last: l.last_summary(),
        })
    }
}

/// What the views show of a snapshot: the sweep it is of, the nodes in
/// it and those reachable, its verdicts (an evaluation or an
/// acknowledgement stores new ones) and the plan's, held weakly (the
/// allocation stays while the key does, so its address names it, without
/// keeping what it holds); and the event log's mark. A publication within
/// a sweep (the records read so far: the rates move on) keeps the key:
/// its rates show once the views are past their age.
#[derive(Clone, Debug)]
pub struct Key {
    sweep: u64,
    nodes: usize,
    reachable: usize,
    health: Weak<Verdicts>,
    plan: Weak<PlanVerdicts>,
    log: LogMark,
}

impl Key {
    fn of(snap: &Snapshot, log: Option<&Log>) -> Key {
        Key {
            sweep: snap.sweep,
            nodes: snap.nodes.len(),
            reachable: snap.reachable,
            health: Arc::downgrade(&snap.health),
            plan: Arc::downgrade(&snap.plan),
            log: LogMark::of(log),
        }
    }

    fn is(&self, other: &Key) -> bool {
        (self.sweep, self.nodes, self.reachable, self.log)
            == (other.sweep, other.nodes, other.reachable, other.log)
            && Weak::ptr_eq(&self.health, &other.health)
            && Weak::ptr_eq(&self.plan, &other.plan)
    }
}

/// A query's views, made of `key`.
struct Made {
    key: Key,
    /// Served until then.
    until: Instant,
    page: Bytes,
    json: Bytes,
}

impl Made {
    fn of(&self, view: View) -> Bytes {
        match view {
            View::Page => self.page.clone(),
            _ => self.json.clone(),
        }
    }
}

/// One query's views.
struct Slot {
    query: Query,
    asked: Mutex<Instant>,
    made: Mutex<Option<Arc<Made>>>,
    /// Held while its views are made.
    making: Mutex<()>,
}

impl Slot {
    /// Its views, when made of `key` and served still at `now`.
    fn fresh(&self, key: &Key, now: Instant) -> Option<Arc<Made>> {
        lock(&self.made)
            .as_ref()
            .filter(|m| m.key.is(key) && now < m.until)
            .map(Arc::clone)
    }

    fn watched(&self, now: Instant) -> bool {
        now.saturating_duration_since(*lock(&self.asked)) < WATCH
    }
}

/// How long views of `snap` are served: its sweep interval, within
/// [`MIN_AGE`] and [`MAX_AGE`].
fn max_age(snap: &Snapshot) -> Duration {
    snap.interval.clamp(MIN_AGE, MAX_AGE)
}

/// The views of the latest snapshot, by query.
pub struct Ready {
    cache: Arc<Cache>,
    events: Option<Arc<Log>>,
    /// The metrics' path, which the page links to.
    metrics: String,
    clock: Clock,
    slots: Mutex<Vec<Arc<Slot>>>,
    /// Reports made.
    reports: AtomicU64,
}

impl Ready {
    pub fn new(cache: Arc<Cache>, events: Option<Arc<Log>>, metrics: &str, clock: Clock) -> Ready {
        Ready {
            cache,
            events,
            metrics: metrics.to_string(),
            clock,
            slots: Mutex::new(Vec::new()),
            reports: AtomicU64::new(0),
        }
    }

    /// Reports made so far (one per query and snapshot read).
    pub fn reports(&self) -> u64 {
        self.reports.load(Ordering::Relaxed)
    }

    fn key(&self) -> Key {
        Key::of(&self.cache.load(), self.events.as_deref())
    }

    /// The slot of `q`, asked now: a new one in place of the one asked
    /// the longest ago when all [`SLOTS`] are taken.
    fn slot(&self, q: &Query, now: Instant) -> Arc<Slot> {
        let mut slots = lock(&self.slots);
        if let Some(s) = slots.iter().find(|s| s.query == *q) {
            *lock(&s.asked) = now;
            return Arc::clone(s);
        }
        let s = Arc::new(Slot {
            query: *q,
            asked: Mutex::new(now),
            made: Mutex::new(None),
            making: Mutex::new(()),
        });
        if slots.len() >= SLOTS
            && let Some(i) = (0..slots.len()).min_by_key(|&i| *lock(&slots[i].asked))
        {
            slots.remove(i);
        }
        slots.push(Arc::clone(&s));
        s
    }

    /// `view` (the page or the JSON) for `q`, when its views are made of
    /// the current snapshot and log and are served still: a copy of a
    /// pointer.
    pub fn hit(&self, view: View, q: &Query) -> Option<Bytes> {
        let now = self.clock.now();
        let slot = self.slot(q, now);
        slot.fresh(&self.key(), now).map(|m| m.of(view))
    }

    /// `view` for `q`: made now unless made meanwhile (it waits for a
    /// making of `q` under way). Blocks for a report's time: call it where
    /// a render may run.
    pub fn make(&self, view: View, q: &Query) -> Bytes {
        let slot = self.slot(q, self.clock.now());
        self.make_slot(&slot).0.of(view)
    }

    /// The slot's views, current; and whether they were made by this call.
    fn make_slot(&self, slot: &Slot) -> (Arc<Made>, bool) {
        let _making = lock(&slot.making);
        let snap = self.cache.load();
        let key = Key::of(&snap, self.events.as_deref());
        let now = self.clock.now();
        if let Some(m) = slot.fresh(&key, now) {
            return (m, false);
        }
        let now_ms = crate::time::unix_ms(self.clock.wall());
        let events = self.events.as_deref();
        let (page, json) =
            super::report_views(&snap, &slot.query, &self.metrics, (now_ms, now), events);
        let made = Arc::new(Made {
            key,
            until: now + max_age(&snap),
            page: Bytes::from(page),
            json: Bytes::from(json),
        });
        self.reports.fetch_add(1, Ordering::Relaxed);
        *lock(&slot.made) = Some(Arc::clone(&made));
        (made, true)
    }

    /// Whether a read query's views are to be made again now: the
    /// snapshot and the log are the same as at the last look (`last`,
    /// which this updates), and its views are not of them or are past
    /// their age.
    pub fn due(&self, last: &mut Option<Key>) -> bool {
        let key = self.key();
        let settled = last.as_ref().is_some_and(|k| k.is(&key));
        *last = Some(key.clone());
        if !settled {
            return false;
        }
        let now = self.clock.now();
        lock(&self.slots)
            .iter()
            .any(|s| s.watched(now) && s.fresh(&key, now).is_none())
    }

    /// Makes the views of every read query that are not current (what
    /// [`Ready::due`] found due); the number of queries made.
    pub fn warm(&self) -> usize {
        let now = self.clock.now();
        let watched: Vec<Arc<Slot>> = lock(&self.slots)
            .iter()
            .filter(|s| s.watched(now))
            .map(Arc::clone)
            .collect();
        watched.iter().filter(|s| self.make_slot(s).1).count()
    }
}

#[cfg(test)]
mod tests;
