//! The connection table: every connection an edge holds, what it is doing
//! and until when, counted in all and by network ([`network_of`]). Pure:
//! time is an argument; the caller closes what the table says to close.
//!
//! A connection is `Fresh` (accepted, no request yet), `Head` (a request
//! head is arriving), `Busy` (a request is being answered) or `Idle`
//! (kept alive between requests). When the table, or the network's share
//! of it, is full, the connection idle the longest makes room (a fresh one
//! before a kept-alive one): a listed peer is never refused because idle
//! peers hold the slots, only when every slot is working.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::net::network_of;
use super::refusal::Refusal;

/// What a connection is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Fresh,
    Head,
    Busy,
    Idle,
}

/// The table's bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SlotLimits {
    /// Connections at once.
    pub total: usize,
    /// Connections at once from one network.
    pub per_network: usize,
    /// Time for a request head, from accept or from its first byte.
    pub head_timeout: Duration,
    /// How long a kept-alive connection may idle between requests.
    pub idle_timeout: Duration,
    /// A connection's whole life; it ends at the first idle moment after.
    pub lifetime: Duration,
}

struct Conn<T> {
    net: IpAddr,
    accepted: Instant,
    phase: Phase,
    /// When the phase began (for `Fresh`, the accept).
    since: Instant,
    /// The end of the answer being sent (`Busy`).
    until: Instant,
    token: T,
}

/// A connection's number in the table.
pub type ConnId = u64;

/// What [`Slots::admit`] decided.
#[derive(Debug, PartialEq, Eq)]
pub enum Admit<T> {
    /// The connection holds slot `id`; `evicted` is the token of the idle
    /// connection that made room, to be closed.
    Taken { id: ConnId, evicted: Option<T> },
    /// Every slot it could take is working.
    Full,
}

/// When a connection ends, unless its phase changes first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct End {
    pub at: Instant,
    /// The refusal its end counts as (a head that never came is a
    /// timeout; an idle keep-alive that ends is not).
    pub counts: Option<Refusal>,
}

/// The table; `T` is the caller's handle to close a connection with.
pub struct Slots<T> {
    limits: SlotLimits,
    conns: HashMap<ConnId, Conn<T>>,
    by_network: HashMap<IpAddr, usize>,
    next: ConnId,
}

impl<T> Slots<T> {
    pub fn new(limits: SlotLimits) -> Slots<T> {
        Slots {
            limits: SlotLimits {
                total: limits.total.max(1),
                per_network: limits.per_network.max(1),
                ..limits
            },
            conns: HashMap::new(),
            by_network: HashMap::new(),
            next: 0,
        }
    }

    /// Connections held now.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Connections held now from `ip`'s network.
    pub fn in_network(&self, ip: IpAddr) -> usize {
        self.by_network.get(&network_of(ip)).copied().unwrap_or(0)
    }

    /// A connection from `ip` (a listed peer), accepted at `now`.
    pub fn admit(&mut self, ip: IpAddr, now: Instant, token: T) -> Admit<T> {
        let net = network_of(ip);
        let mut evicted = None;
        let net_full = self.by_network.get(&net).copied().unwrap_or(0) >= self.limits.per_network;
        if net_full || self.conns.len() >= self.limits.total {
            let scope = net_full.then_some(net);
            match self.longest_idle(scope) {
                Some(victim) => evicted = self.remove(victim),
                None => return Admit::Full,
            }
        }
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                net,
                accepted: now,
                phase: Phase::Fresh,
                since: now,
                until: now,
                token,
            },
        );
        *self.by_network.entry(net).or_insert(0) += 1;
        Admit::Taken { id, evicted }
    }

    /// The idle connection idle the longest, in `net` or in all: a fresh
    /// one (no request yet) before one kept alive between requests, so
    /// that connections nobody used go before a scraper's.
    fn longest_idle(&self, net: Option<IpAddr>) -> Option<ConnId> {
        self.conns
            .iter()
            .filter(|(_, c)| matches!(c.phase, Phase::Fresh | Phase::Idle))
            .filter(|(_, c)| net.is_none_or(|n| c.net == n))
            .min_by_key(|(id, c)| (c.phase == Phase::Idle, c.since, **id))
            .map(|(id, _)| *id)
    }

    fn remove(&mut self, id: ConnId) -> Option<T> {
        let c = self.conns.remove(&id)?;
        if let Some(n) = self.by_network.get_mut(&c.net) {
            *n -= 1;
            if *n == 0 {
                self.by_network.remove(&c.net);
            }
        }
        Some(c.token)
    }

    /// The connection ended (closed, or evicted before): its slot is free.
    pub fn release(&mut self, id: ConnId) {
        self.remove(id);
    }

    /// What connection `id` is doing; `None` once it was evicted.
    pub fn phase(&self, id: ConnId) -> Option<Phase> {
        self.conns.get(&id).map(|c| c.phase)
    }

    /// The first bytes of a request head arrived at `now`. A fresh
    /// connection's head time still counts from its accept.
    pub fn head(&mut self, id: ConnId, now: Instant) {
        if let Some(c) = self.conns.get_mut(&id) {
            match c.phase {
                Phase::Idle => (c.phase, c.since) = (Phase::Head, now),
                Phase::Fresh => c.phase = Phase::Head,
                Phase::Head | Phase::Busy => {}
            }
        }
    }

    /// A request is being answered, until `until` at the latest.
    pub fn busy(&mut self, id: ConnId, now: Instant, until: Instant) {
        if let Some(c) = self.conns.get_mut(&id) {
            (c.phase, c.since, c.until) = (Phase::Busy, now, until);
        }
    }

    /// The answer was sent at `now`: the connection idles.
    pub fn idle(&mut self, id: ConnId, now: Instant) {
        if let Some(c) = self.conns.get_mut(&id) {
            (c.phase, c.since) = (Phase::Idle, now);
        }
    }

    /// When connection `id` ends unless its phase changes first; `None`
    /// once it was evicted (it ends now).
    pub fn end(&self, id: ConnId) -> Option<End> {
        let c = self.conns.get(&id)?;
        let l = &self.limits;
        let life = c.accepted + l.lifetime;
        Some(match c.phase {
            Phase::Fresh | Phase::Head => End {
                at: (c.since + l.head_timeout).min(life.max(c.since)),
                counts: Some(Refusal::Timeout),
            },
            Phase::Busy => End {
                at: c.until,
                counts: None,
            },
            Phase::Idle => End {
                at: (c.since + l.idle_timeout).min(life.max(c.since)),
                counts: None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits() -> SlotLimits {
        SlotLimits {
            total: 4,
            per_network: 2,
            head_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(120),
            lifetime: Duration::from_secs(3600),
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn taken<T: std::fmt::Debug>(a: Admit<T>) -> (ConnId, Option<T>) {
        match a {
            Admit::Taken { id, evicted } => (id, evicted),
            Admit::Full => panic!("refused"),
        }
    }

    #[test]
    fn a_network_shares_its_slots_and_its_longest_idle_makes_room() {
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        let mut slots = Slots::new(limits());
        // Two hosts of one /24 fill its share.
        let (a, _) = taken(slots.admit(ip("10.0.0.1"), s(0), "a"));
        let (b, _) = taken(slots.admit(ip("10.0.0.2"), s(1), "b"));
        assert_eq!(slots.in_network(ip("10.0.0.200")), 2);
        // Both working: a third from the network is refused, another
        // network is not.
        slots.busy(a, s(1), s(30));
        slots.busy(b, s(1), s(30));
        assert_eq!(slots.admit(ip("10.0.0.3"), s(2), "c"), Admit::Full);
        let (_, none) = taken(slots.admit(ip("10.0.1.1"), s(2), "d"));
        assert_eq!(none, None);
        // b idles: it makes room for the network's next peer.
        slots.idle(b, s(3));
        let (e, evicted) = taken(slots.admit(ip("10.0.0.9"), s(4), "e"));
        assert_eq!(evicted, Some("b"));
        assert_eq!(slots.phase(b), None, "b is gone");
        assert_eq!(slots.in_network(ip("10.0.0.1")), 2);
        slots.release(b);
        assert_eq!(
            slots.in_network(ip("10.0.0.1")),
            2,
            "a late release is a no-op"
        );
        slots.release(e);
        assert_eq!(slots.in_network(ip("10.0.0.1")), 1);
    }

    #[test]
    fn a_full_table_drops_the_longest_idle_of_all() {
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        let mut slots = Slots::new(limits());
        let ids: Vec<ConnId> = ["10.0.1.1", "10.0.2.1", "10.0.3.1", "10.0.4.1"]
            .iter()
            .enumerate()
            .map(|(i, a)| taken(slots.admit(ip(a), s(i as u64), i)).0)
            .collect();
        // The oldest (0) sends a head: it is no longer idle; 1 goes.
        slots.head(ids[0], s(5));
        let (_, evicted) = taken(slots.admit(ip("10.0.9.1"), s(6), 9));
        assert_eq!(evicted, Some(1));
        assert_eq!(slots.len(), 4);
        for &id in &ids {
            slots.busy(id, s(7), s(40));
        }
        // The newcomer (fresh) is now the only idle one.
        let (eight, evicted) = taken(slots.admit(ip("10.0.8.1"), s(8), 8));
        assert_eq!(evicted, Some(9));
        slots.busy(eight, s(8), s(40));
        assert_eq!(slots.admit(ip("10.0.7.1"), s(9), 7), Admit::Full);
    }

    #[test]
    fn fresh_connections_go_before_a_kept_alive_one() {
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        let mut slots = Slots::new(limits());
        // A scraper's connection, kept alive since second 1.
        let (scraper, _) = taken(slots.admit(ip("10.0.1.1"), s(0), "scraper"));
        slots.busy(scraper, s(0), s(30));
        slots.idle(scraper, s(1));
        // Fresh connections from elsewhere fill the table after it.
        for (n, a) in ["10.0.2.1", "10.0.3.1", "10.0.4.1"].iter().enumerate() {
            taken(slots.admit(ip(a), s(2 + n as u64), "fresh"));
        }
        for n in 0..5 {
            let (_, evicted) = taken(slots.admit(ip("10.0.5.1"), s(10 + n), "more"));
            assert_ne!(evicted, Some("scraper"), "round {n}");
            assert!(evicted.is_some());
        }
        assert_eq!(slots.phase(scraper), Some(Phase::Idle));
    }

    #[test]
    fn each_phase_ends_on_its_own_time() {
        let t = Instant::now();
        let s = |n| t + Duration::from_secs(n);
        let mut slots = Slots::new(limits());
        let (id, _) = taken(slots.admit(ip("::1"), t, ()));
        let timeout = Some(Refusal::Timeout);
        assert_eq!(
            slots.end(id),
            Some(End {
                at: s(5),
                counts: timeout
            })
        );
        // The head's first byte: still 5 s from the accept.
        slots.head(id, s(3));
        assert_eq!(
            slots.end(id),
            Some(End {
                at: s(5),
                counts: timeout
            })
        );
        slots.busy(id, s(4), s(34));
        assert_eq!(slots.end(id).unwrap().at, s(34));
        slots.idle(id, s(10));
        assert_eq!(
            slots.end(id),
            Some(End {
                at: s(130),
                counts: None
            })
        );
        // The next head: 5 s from its first byte.
        slots.head(id, s(100));
        assert_eq!(slots.end(id).unwrap().at, s(105));
        // The lifetime cuts the idle time short.
        slots.idle(id, s(3590));
        assert_eq!(slots.end(id).unwrap().at, s(3600));
        slots.idle(id, s(3700));
        assert_eq!(slots.end(id).unwrap().at, s(3700), "past it: at once");
    }

    #[test]
    fn ipv6_hosts_count_by_their_64() {
        let t = Instant::now();
        let mut slots = Slots::new(limits());
        for (n, a) in ["fd00::1", "fd00::2:3"].iter().enumerate() {
            let (id, _) = taken(slots.admit(ip(a), t, n));
            slots.busy(id, t, t);
        }
        assert_eq!(slots.admit(ip("fd00::ffff:1"), t, 9), Admit::Full);
        assert!(matches!(
            slots.admit(ip("fd00:0:0:1::1"), t, 9),
            Admit::Taken { .. }
        ));
    }
}
