//! The gate: who may connect and how often, decided at accept, before a
//! connection takes a slot or a TLS handshake starts. Pure: time is an
//! argument.

use std::net::IpAddr;
use std::time::Instant;

use super::net::{Network, source_of};
use super::rate::RateLimiter;
use super::refusal::Refusal;

/// The sources an edge serves and the request rate each may use (a token
/// bucket per source, [`source_of`]).
#[derive(Debug)]
pub struct Gate {
    sources: Vec<Network>,
    rate: RateLimiter,
}

impl Gate {
    /// `rate` requests a second per source after a burst of `burst`; a
    /// rate of 0 is no limit.
    pub fn new(sources: Vec<Network>, rate: u32, burst: u32) -> Gate {
        Gate {
            sources,
            rate: RateLimiter::new(rate, burst),
        }
    }

    /// Whether `ip` is in the sources.
    pub fn listed(&self, ip: IpAddr) -> bool {
        self.sources.iter().any(|n| n.contains(ip))
    }

    /// A connection from `ip` at `now`: its source must be listed and
    /// within its rate (the connection's first request is paid by it).
    pub fn accept(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        if !self.listed(ip) {
            return Err(Refusal::Source);
        }
        self.request(ip, now)
    }

    /// A further request on a connection from `ip` at `now`.
    pub fn request(&mut self, ip: IpAddr, now: Instant) -> Result<(), Refusal> {
        if self.rate.allow(source_of(ip), now) {
            Ok(())
        } else {
            Err(Refusal::Rate)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn unlisted_peers_are_refused_before_their_rate_is_charged() {
        let t = Instant::now();
        let mut g = Gate::new(vec!["127.0.0.2".parse().unwrap()], 1, 2);
        let (listed, other) = ("127.0.0.2".parse().unwrap(), "127.0.0.3".parse().unwrap());
        for _ in 0..10 {
            assert_eq!(g.accept(other, t), Err(Refusal::Source));
        }
        assert_eq!(g.accept(listed, t), Ok(()));
        assert_eq!(g.request(listed, t), Ok(()));
        assert_eq!(g.request(listed, t), Err(Refusal::Rate));
        assert_eq!(g.accept(listed, t), Err(Refusal::Rate));
        assert_eq!(g.request(listed, t + Duration::from_secs(1)), Ok(()));
    }

    #[test]
    fn an_ipv6_host_has_one_bucket_for_its_64() {
        let t = Instant::now();
        let mut g = Gate::new(vec!["fd00::/16".parse().unwrap()], 1, 1);
        assert_eq!(g.accept("fd00::1".parse().unwrap(), t), Ok(()));
        assert_eq!(
            g.accept("fd00::2".parse().unwrap(), t),
            Err(Refusal::Rate),
            "same /64"
        );
        assert_eq!(g.accept("fd00:0:0:1::1".parse().unwrap(), t), Ok(()));
    }
}
