//! What an answer may take: scrapes at once (one per source, a bound in
//! all) and each answer's time (a deadline for the whole response and a
//! minimum rate). Pure: time is an argument.

use std::collections::HashSet;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::net::source_of;
use super::refusal::Refusal;

/// Scrapes rendering or waiting to: at most one per source, at most `max`
/// in all. How many render at once is the edge's FIFO of render places
/// (the number of cores): the others wait their turn in order, so every
/// source is served in its turn however often the others ask.
#[derive(Debug)]
pub struct Renders {
    max: usize,
    sources: HashSet<IpAddr>,
}

impl Renders {
    pub fn new(max: usize) -> Renders {
        Renders {
            max: max.max(1),
            sources: HashSet::new(),
        }
    }

    /// A scrape for `ip`; refused while its source has one, or `max` are
    /// rendering or waiting.
    pub fn take(&mut self, ip: IpAddr) -> Result<(), Refusal> {
        let s = source_of(ip);
        if self.sources.len() >= self.max || self.sources.contains(&s) {
            return Err(Refusal::Busy);
        }
        self.sources.insert(s);
        Ok(())
    }

    /// `ip`'s scrape ended.
    pub fn give_back(&mut self, ip: IpAddr) {
        self.sources.remove(&source_of(ip));
    }

    pub fn in_use(&self) -> usize {
        self.sources.len()
    }
}

/// The time the first octets of a response have before the minimum rate
/// applies.
pub const GRACE: Duration = Duration::from_secs(2);

/// One response's time: it ends at `deadline`, and its octets must be
/// taken at `min_rate` octets a second after [`GRACE`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    start: Instant,
    deadline: Instant,
    min_rate: u64,
}

impl Budget {
    /// A response started at `start`: `limit` at most, shorter when the
    /// client asked for less (`asked`, Prometheus'
    /// `X-Prometheus-Scrape-Timeout-Seconds`; unreadable values are
    /// ignored).
    pub fn new(start: Instant, limit: Duration, asked: Option<&str>, min_rate: u64) -> Budget {
        let asked = asked
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map(|s| Duration::from_secs_f64(s.min(limit.as_secs_f64())));
        Budget {
            start,
            deadline: start + asked.unwrap_or(limit).min(limit),
            min_rate,
        }
    }

    pub fn deadline(&self) -> Instant {
        self.deadline
    }

    /// By when the client must have taken `sent` octets (those being sent
    /// included): the deadline, or sooner at the minimum rate.
    pub fn send_by(&self, sent: u64) -> Instant {
        if self.min_rate == 0 {
            return self.deadline;
        }
        let at_rate = Duration::from_secs_f64(sent as f64 / self.min_rate as f64);
        (self.start + GRACE + at_rate).min(self.deadline)
    }

    /// By when the client must have taken a chunk of `len` octets offered
    /// at `offered`, `sent` octets in all with it: at the minimum rate in
    /// all ([`Budget::send_by`]) and for this chunk alone, so that the
    /// octets the socket buffers took at once give no credit to a reader
    /// that then stops: it holds its render for one chunk's time.
    pub fn chunk_by(&self, sent: u64, len: u64, offered: Instant) -> Instant {
        let whole = self.send_by(sent);
        if self.min_rate == 0 {
            return whole;
        }
        let this = Duration::from_secs_f64(len as f64 / self.min_rate as f64);
        whole.min(offered.max(self.start + GRACE) + this)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_render_per_source_and_a_bound_in_all() {
        let mut r = Renders::new(2);
        let (a, a2, b, c) = (
            "10.0.0.1".parse().unwrap(),
            "::ffff:10.0.0.1".parse().unwrap(),
            "10.0.0.2".parse().unwrap(),
            "10.0.0.3".parse().unwrap(),
        );
        assert_eq!(r.take(a), Ok(()));
        assert_eq!(r.take(a2), Err(Refusal::Busy), "the same source");
        assert_eq!(r.take(b), Ok(()));
        assert_eq!(r.take(c), Err(Refusal::Busy), "two in all");
        r.give_back(a);
        assert_eq!(r.take(c), Ok(()));
        assert_eq!(r.in_use(), 2);
    }

    #[test]
    fn the_deadline_is_the_limit_or_what_the_scraper_asked() {
        let t = Instant::now();
        let limit = Duration::from_secs(30);
        let d = |asked| Budget::new(t, limit, asked, 0).deadline() - t;
        assert_eq!(d(None), limit);
        assert_eq!(d(Some("10")), Duration::from_secs(10));
        assert_eq!(d(Some(" 9.5 ")), Duration::from_millis(9500));
        assert_eq!(d(Some("600")), limit, "never past the limit");
        for bad in ["", "x", "-1", "0", "NaN", "inf"] {
            assert_eq!(d(Some(bad)), limit, "{bad:?}");
        }
    }

    #[test]
    fn a_slow_reader_is_held_to_the_minimum_rate() {
        let t = Instant::now();
        let b = Budget::new(t, Duration::from_secs(30), None, 64 * 1024);
        assert_eq!(b.send_by(64 * 1024), t + GRACE + Duration::from_secs(1));
        assert_eq!(b.send_by(640 * 1024), t + GRACE + Duration::from_secs(10));
        assert_eq!(b.send_by(1 << 40), t + Duration::from_secs(30));
        let off = Budget::new(t, Duration::from_secs(30), None, 0);
        assert_eq!(off.send_by(1), t + Duration::from_secs(30));
    }

    #[test]
    fn a_reader_that_stops_gets_no_credit_from_the_buffers() {
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        let b = Budget::new(t, Duration::from_secs(30), None, 16 * 1024);
        let chunk = 64 * 1024;
        // The socket buffers took 4 MiB in the first second: the whole
        // rate would give it until the deadline.
        let sent = 4 << 20;
        assert_eq!(b.send_by(sent), s(30));
        // Its next chunk is due one chunk's time after it was offered.
        assert_eq!(b.chunk_by(sent, chunk, s(1)), s(2) + Duration::from_secs(4));
        assert_eq!(b.chunk_by(sent, chunk, s(10)), s(14));
        // Never past the deadline, nor later than the whole rate says.
        assert_eq!(b.chunk_by(sent, chunk, s(29)), s(30));
        assert_eq!(b.chunk_by(chunk, chunk, s(0)), b.send_by(chunk));
        let off = Budget::new(t, Duration::from_secs(30), None, 0);
        assert_eq!(off.chunk_by(sent, chunk, s(10)), s(30));
    }
}
