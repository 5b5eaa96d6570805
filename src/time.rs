//! Time the whole process shares: its one origin, and the one throttle of
//! repeated log lines.
//!
//! - [`origin`]: the clocks the agent shows count from it: the TimeStamp
//!   columns and pmAgentUpTime (`mib::read::timestamp`), snmpEngineTime
//!   (the SNMPv3 engine boots at the agent's start), and the records'
//!   8-byte stamps (`fabric::record::Stamp`) are kept relative to it. The
//!   agent fixes it when it starts ([`start`]); whatever reads it first
//!   fixes it otherwise (a test).
//! - [`Clock`]: where a driver reads the time, the one shape a clock is
//!   passed in, with both readings (monotonic for every window, wall for
//!   the times shown and saved): [`Clock::system`] (the system's clocks,
//!   read here only) in the agent, a virtual clock in tests.
//! - [`Throttle`]: every log line that an event can repeat (a flood of
//!   datagrams, a master that keeps refusing, a device whose writes keep
//!   stalling) is written through one, which decides whether this event
//!   gets its line and counts what it left out, so the next line can say
//!   how many it stands for. It is pure: the caller passes the time.

use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant, SystemTime};

static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Fixes the process's time origin now, unless it is fixed already (the
/// agent calls it as it starts).
pub fn start() {
    LazyLock::force(&ORIGIN);
}

/// The process's time origin: the agent's start.
pub fn origin() -> Instant {
    *ORIGIN
}

/// Where a driver reads the time: the monotonic clock (every window,
/// deadline and interval) and the wall clock (only the times shown and
/// saved), read together. Clones read the same clocks. The parts a driver
/// drives take the time as an argument; the drivers (the MAD engines, the
/// sweeper, the health watch, the write path, discovery, the AgentX
/// session) are given a `Clock`, owned or as `&Clock`.
#[derive(Clone)]
pub struct Clock {
    mono: Arc<dyn Fn() -> Instant + Send + Sync>,
    wall: Arc<dyn Fn() -> SystemTime + Send + Sync>,
}

impl Clock {
    /// The system's clocks: the agent's.
    pub fn system() -> Clock {
        Clock {
            mono: Arc::new(Instant::now),
            wall: Arc::new(SystemTime::now),
        }
    }

    /// A clock whose monotonic reading is `now` (a virtual clock of a
    /// test), and whose wall clock is the system's as it read when made,
    /// moved on by `now` since.
    pub fn new(now: impl Fn() -> Instant + Send + Sync + 'static) -> Clock {
        let (mono0, wall0) = (now(), SystemTime::now());
        let now = Arc::new(now);
        let read = Arc::clone(&now);
        Clock {
            mono: now,
            wall: Arc::new(move || wall0 + read().saturating_duration_since(mono0)),
        }
    }

    /// A clock of two readings given apart (a test that steps the wall
    /// clock).
    pub fn with_wall(
        now: impl Fn() -> Instant + Send + Sync + 'static,
        wall: impl Fn() -> SystemTime + Send + Sync + 'static,
    ) -> Clock {
        Clock {
            mono: Arc::new(now),
            wall: Arc::new(wall),
        }
    }

    /// The monotonic time now.
    pub fn now(&self) -> Instant {
        (self.mono)()
    }

    /// The wall-clock time now.
    pub fn wall(&self) -> SystemTime {
        (self.wall)()
    }

    /// Both readings, the monotonic one first.
    pub fn both(&self) -> (Instant, SystemTime) {
        (self.now(), self.wall())
    }
}

/// Milliseconds since the UNIX epoch of a wall-clock time (0 before it).
pub fn unix_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Default for Clock {
    fn default() -> Clock {
        Clock::system()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// Which events of a [`Throttle`] get a line. The first always does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pace {
    /// At most one line a period.
    Every(Duration),
    /// The 1st event, then every nth (the nth, the 2nth ...).
    Nth(u64),
    /// The 1st, 2nd, 4th ... event up to the cap, then every cap-th.
    Doubling(u64),
    /// The first event only, until a [`Throttle::reset`].
    Once,
}

/// What a line that is due stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Due {
    /// Events since the last line, this one included.
    pub since: u64,
    /// Events since the throttle was made or last reset.
    pub total: u64,
}

/// A log line an event may repeat: whether this event gets its line, and
/// how many the line stands for. Keyed lines (one per kind of event) are
/// one throttle per key.
#[derive(Clone, Debug)]
pub struct Throttle {
    pace: Pace,
    /// Events since the last line.
    unsaid: u64,
    /// Events in all (since the last reset).
    total: u64,
    /// When the last line was written ([`Pace::Every`]).
    said_at: Option<Instant>,
}

impl Throttle {
    const fn new(pace: Pace) -> Throttle {
        Throttle {
            pace,
            unsaid: 0,
            total: 0,
            said_at: None,
        }
    }

    /// The first event, then at most one line every `period`.
    pub const fn every(period: Duration) -> Throttle {
        Throttle::new(Pace::Every(period))
    }

    /// The 1st event, then the nth, the 2nth ... (`n` at least 1).
    pub const fn nth(n: u64) -> Throttle {
        Throttle::new(Pace::Nth(if n == 0 { 1 } else { n }))
    }

    /// The 1st, 2nd, 4th ... event up to `cap`, then every `cap`th
    /// (`u64::MAX`: doubling for ever).
    pub const fn doubling(cap: u64) -> Throttle {
        Throttle::new(Pace::Doubling(if cap == 0 { 1 } else { cap }))
    }

    /// The first event only, until [`Throttle::reset`].
    pub const fn once() -> Throttle {
        Throttle::new(Pace::Once)
    }

    /// One more event, at `now`: `Some` when its line is due.
    pub fn at(&mut self, now: Instant) -> Option<Due> {
        self.event(Some(now))
    }

    /// One more event of a throttle that counts events (any but
    /// [`Throttle::every`], which, given no time, lets only its first
    /// event through): `Some` when its line is due.
    pub fn count(&mut self) -> Option<Due> {
        self.event(None)
    }

    fn event(&mut self, now: Option<Instant>) -> Option<Due> {
        self.unsaid = self.unsaid.saturating_add(1);
        self.total = self.total.saturating_add(1);
        let n = self.total;
        let due = match self.pace {
            Pace::Every(period) => match now {
                Some(now) => self
                    .said_at
                    .is_none_or(|at| now.saturating_duration_since(at) >= period),
                None => n == 1,
            },
            Pace::Nth(every) => n == 1 || n.is_multiple_of(every),
            Pace::Doubling(cap) => (n.is_power_of_two() && n <= cap) || n.is_multiple_of(cap),
            Pace::Once => n == 1,
        };
        if !due {
            return None;
        }
        if now.is_some() {
            self.said_at = now;
        }
        Some(Due {
            since: std::mem::take(&mut self.unsaid),
            total: n,
        })
    }

    /// Events since the throttle was made or last reset.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// Starts over: the next event is a first one again.
    pub fn reset(&mut self) {
        *self = Throttle::new(self.pace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The events of `t` at `times` (seconds after `t0`) whose lines are
    /// due, as (event number, since, total).
    fn timed(t: &mut Throttle, t0: Instant, times: &[u64]) -> Vec<(usize, u64, u64)> {
        times
            .iter()
            .enumerate()
            .filter_map(|(i, s)| {
                t.at(t0 + Duration::from_secs(*s))
                    .map(|d| (i + 1, d.since, d.total))
            })
            .collect()
    }

    #[test]
    fn every_says_the_first_then_one_line_a_period_with_what_it_left_out() {
        let mut t = Throttle::every(Duration::from_secs(10));
        let t0 = Instant::now();
        let said = timed(&mut t, t0, &[0, 1, 2, 9, 10, 11, 19, 40]);
        assert_eq!(said, [(1, 1, 1), (5, 4, 5), (8, 3, 8)]);
        // A period counts from the last line, not from the first event.
        assert!(t.at(t0 + Duration::from_secs(49)).is_none());
        assert_eq!(
            t.at(t0 + Duration::from_secs(50)),
            Some(Due {
                since: 2,
                total: 10
            })
        );
    }

    #[test]
    fn every_is_pure_the_time_is_the_callers() {
        // Times far apart, given out of order: nothing reads the clock.
        let mut t = Throttle::every(Duration::from_secs(60));
        let t0 = Instant::now() + Duration::from_secs(86_400);
        assert!(t.at(t0).is_some());
        assert!(t.at(t0 - Duration::from_secs(3600)).is_none(), "earlier");
        assert!(t.at(t0 + Duration::from_secs(59)).is_none());
        assert!(t.at(t0 + Duration::from_secs(60)).is_some());
    }

    #[test]
    fn every_without_a_time_says_only_its_first() {
        let mut t = Throttle::every(Duration::from_secs(10));
        assert_eq!(t.count().map(|d| d.total), Some(1));
        assert!((0..100).all(|_| t.count().is_none()));
        assert_eq!(t.total(), 101);
    }

    #[test]
    fn nth_says_the_first_and_every_nth() {
        let mut t = Throttle::nth(20);
        let said: Vec<u64> = (0..100)
            .filter_map(|_| t.count())
            .map(|d| d.total)
            .collect();
        assert_eq!(said, [1, 20, 40, 60, 80, 100]);
        let mut t = Throttle::nth(20);
        let since: Vec<u64> = (0..45).filter_map(|_| t.count()).map(|d| d.since).collect();
        assert_eq!(since, [1, 19, 20]);
        // The time changes nothing.
        let mut t = Throttle::nth(2);
        let t0 = Instant::now();
        assert!(t.at(t0).is_some());
        assert!(t.at(t0 + Duration::from_secs(3600)).is_some());
        assert!(t.at(t0 + Duration::from_secs(7200)).is_none());
    }

    #[test]
    fn doubling_says_powers_of_two_up_to_the_cap_then_every_cap() {
        let mut t = Throttle::doubling(1024);
        let said: Vec<u64> = (0..100_000)
            .filter_map(|_| t.count())
            .map(|d| d.total)
            .collect();
        assert_eq!(&said[..4], &[1, 2, 4, 8]);
        assert_eq!(said.len(), 11 + 100_000 / 1024 - 1);
        assert!(said.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(*said.last().unwrap(), 100_000 / 1024 * 1024);
        let mut t = Throttle::doubling(u64::MAX);
        let said: Vec<u64> = (0..5000)
            .filter_map(|_| t.count())
            .map(|d| d.total)
            .collect();
        assert_eq!(
            said,
            [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096]
        );
    }

    #[test]
    fn once_says_the_first_until_reset() {
        let mut t = Throttle::once();
        assert_eq!(t.count(), Some(Due { since: 1, total: 1 }));
        assert!((0..10).all(|_| t.count().is_none()));
        assert_eq!(t.total(), 11);
        t.reset();
        assert_eq!(t.total(), 0);
        assert_eq!(t.count().map(|d| d.since), Some(1));
    }

    #[test]
    fn reset_starts_every_pace_over() {
        let t0 = Instant::now();
        let mut every = Throttle::every(Duration::from_secs(10));
        let mut nth = Throttle::nth(20);
        for _ in 0..5 {
            every.at(t0);
            nth.count();
        }
        every.reset();
        nth.reset();
        assert!(every.at(t0).is_some(), "a first event again");
        assert_eq!(nth.count().map(|d| d.total), Some(1));
    }

    #[test]
    fn the_origin_is_fixed_once() {
        start();
        let o = origin();
        start();
        assert_eq!(origin(), o);
        assert!(o <= Instant::now());
    }
}
