//! Requests per source address: a token bucket each, in a table of bounded
//! size, so that a burst of spoofed requests can neither make the responder
//! a traffic reflector nor grow its memory. Time is an argument.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::Instant;

/// Most source addresses tracked at once; when full, idle (refilled)
/// buckets go first, then the least recently seen.
pub const MAX_SOURCES: usize = 4096;

#[derive(Clone, Copy, Debug)]
struct Bucket {
    tokens: f64,
    last: Instant,
}

/// The limiter: `rate` requests per second per address, up to `burst` at
/// once. A rate of 0 lets everything through.
#[derive(Debug)]
pub struct RateLimiter {
    rate: f64,
    burst: f64,
    buckets: HashMap<IpAddr, Bucket>,
    max_sources: usize,
}

impl RateLimiter {
    pub fn new(rate: u32, burst: u32) -> RateLimiter {
        RateLimiter::with_capacity(rate, burst, MAX_SOURCES)
    }

    pub fn with_capacity(rate: u32, burst: u32, max_sources: usize) -> RateLimiter {
        RateLimiter {
            rate: f64::from(rate),
            burst: f64::from(burst.max(1)),
            buckets: HashMap::new(),
            max_sources: max_sources.max(1),
        }
    }

    /// Whether a request from `ip` at `now` is answered (and takes a token).
    pub fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        if self.rate <= 0.0 {
            return true;
        }
        if !self.buckets.contains_key(&ip) && self.buckets.len() >= self.max_sources {
            self.make_room(now);
        }
        let (rate, burst) = (self.rate, self.burst);
        let b = self.buckets.entry(ip).or_insert(Bucket {
            tokens: burst,
            last: now,
        });
        let elapsed = now.saturating_duration_since(b.last).as_secs_f64();
        b.tokens = (b.tokens + elapsed * rate).min(burst);
        b.last = now;
        if b.tokens >= 1.0 {
            b.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    /// Addresses tracked now.
    pub fn sources(&self) -> usize {
        self.buckets.len()
    }

    /// Frees at least half the table, so that a flood of new (spoofed)
    /// sources costs O(1) per request amortised: refilled buckets go first
    /// (they hold nothing a new one would not), then the least recently
    /// seen half.
    fn make_room(&mut self, now: Instant) {
        let (rate, burst) = (self.rate, self.burst);
        self.buckets.retain(|_, b| {
            b.tokens + now.saturating_duration_since(b.last).as_secs_f64() * rate < burst
        });
        let keep = self.max_sources / 2;
        if self.buckets.len() > keep {
            let mut seen: Vec<Instant> = self.buckets.values().map(|b| b.last).collect();
            let cut = seen.len() - keep;
            let (_, newest_dropped, _) = seen.select_nth_unstable(cut.saturating_sub(1));
            let newest_dropped = *newest_dropped;
            self.buckets.retain(|_, b| b.last > newest_dropped);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use std::time::Duration;

    fn ip(n: u32) -> IpAddr {
        IpAddr::V4(Ipv4Addr::from(0x0a00_0000 + n))
    }

    #[test]
    fn a_burst_then_the_rate() {
        let t0 = Instant::now();
        let mut l = RateLimiter::new(10, 5);
        let first: usize = (0..20).filter(|_| l.allow(ip(1), t0)).count();
        assert_eq!(first, 5, "the burst");
        // One second later: 10 more tokens, capped at the burst of 5.
        let t1 = t0 + Duration::from_secs(1);
        assert_eq!((0..20).filter(|_| l.allow(ip(1), t1)).count(), 5);
        // 100 ms later: one token.
        let t2 = t1 + Duration::from_millis(100);
        assert_eq!((0..20).filter(|_| l.allow(ip(1), t2)).count(), 1);
        // Another address has its own bucket.
        assert!(l.allow(ip(2), t2));
    }

    #[test]
    fn zero_rate_is_off() {
        let mut l = RateLimiter::new(0, 1);
        let t = Instant::now();
        assert!((0..10_000).all(|_| l.allow(ip(1), t)));
        assert_eq!(l.sources(), 0);
    }

    #[test]
    fn a_full_table_drops_the_least_recently_seen_half() {
        let t0 = Instant::now();
        let ms = |n| t0 + Duration::from_millis(n);
        // Rate 1/s, burst 1: a source that sent once has an empty bucket.
        let mut l = RateLimiter::with_capacity(1, 1, 4);
        for n in 0..4 {
            assert!(l.allow(ip(n), ms(u64::from(n))));
        }
        assert!(l.allow(ip(9), ms(10)), "a new source gets in");
        assert!(l.sources() <= 3, "{}", l.sources());
        // The most recent source keeps its empty bucket; the oldest is gone.
        assert!(
            !l.allow(ip(3), ms(11)),
            "ip 3 is remembered: its bucket is empty"
        );
        assert!(l.allow(ip(0), ms(11)), "ip 0 was forgotten: a fresh bucket");
    }

    #[test]
    fn spoofed_sources_do_not_grow_the_table() {
        let t = Instant::now();
        let mut l = RateLimiter::with_capacity(100, 10, 64);
        for n in 0..100_000 {
            assert!(l.allow(ip(n), t), "a new source gets its burst");
        }
        assert!(l.sources() <= 64, "{}", l.sources());
        // A source seen before keeps its (emptied) bucket while it is recent.
        let mut l = RateLimiter::with_capacity(100, 2, 64);
        assert!(l.allow(ip(7), t) && l.allow(ip(7), t));
        assert!(!l.allow(ip(7), t));
    }
}
