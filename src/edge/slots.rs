//! The connection table: every connection an edge holds, what it is doing
//! and until when, counted in all and by network ([`network_of`]). Pure:
//! time is an argument; the caller closes what the table says to close.
//!
//! A connection is `Fresh` (accepted, no request yet), `Head` (a request
//! head is arriving), `Busy` (a request is being answered) or `Idle`
//! (kept alive between requests). A connection that has not sent a whole
//! request head (`Fresh`, `Head`) is *pending*; a source holds at most
//! [`SlotLimits::pending_per_source`] pending connections, its oldest
//! making room for its next. When the table, or the network's share of
//! it, is full, a pending connection makes room first (of the network that
//! holds the most connections, the oldest), then the connection idle the
//! longest: a listed peer is never refused because idle peers, or peers
//! that send a head byte by byte, hold the slots, only when every slot is
//! answering a request.

use std::collections::HashMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use super::net::{network_of, source_of};
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
    /// Connections of one source (`source_of`) that have not sent a whole
    /// request head, at once.
    pub pending_per_source: usize,
}

struct Conn<T> {
    source: IpAddr,
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
                pending_per_source: limits.pending_per_source.max(1),
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
        let (source, net) = (source_of(ip), network_of(ip));
        let mut evicted = None;
        // The source's own oldest pending connection makes room for its
        // next, past its share.
        let pending = |c: &Conn<T>| matches!(c.phase, Phase::Fresh | Phase::Head);
        let own: Vec<(Instant, ConnId)> = self
            .conns
            .iter()
            .filter(|(_, c)| c.source == source && pending(c))
            .map(|(id, c)| (c.since, *id))
            .collect();
        if own.len() >= self.limits.pending_per_source
            && let Some(&(_, oldest)) = own.iter().min()
        {
            evicted = self.remove(oldest);
        }
        let net_full = self.by_network.get(&net).copied().unwrap_or(0) >= self.limits.per_network;
        if evicted.is_none() && (net_full || self.conns.len() >= self.limits.total) {
            let scope = net_full.then_some(net);
            match self.victim(scope) {
                Some(victim) => evicted = self.remove(victim),
                None => return Admit::Full,
            }
        }
        let id = self.next;
        self.next += 1;
        self.conns.insert(
            id,
            Conn {
                source,
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

    /// The connection that makes room, in `net` or in all: a pending one
    /// (no whole head yet) before one kept alive between requests; of the
    /// pending, one of the network holding the most connections, the
    /// oldest; of the kept alive, the one idle the longest. So connections
    /// nobody used, and heads that dribble in, go before a scraper's, and
    /// a network flooding the table pays before a quiet one.
    fn victim(&self, net: Option<IpAddr>) -> Option<ConnId> {
        let held = |n: &IpAddr| self.by_network.get(n).copied().unwrap_or(0);
        self.conns
            .iter()
            .filter(|(_, c)| c.phase != Phase::Busy)
            .filter(|(_, c)| net.is_none_or(|n| c.net == n))
            .min_by_key(|(id, c)| {
                let idle = c.phase == Phase::Idle;
                let crowd = if idle { 0 } else { held(&c.net) };
                (idle, std::cmp::Reverse(crowd), c.since, **id)
            })
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
            pending_per_source: 4,
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
        // The oldest (0) sends a whole request: it is no longer idle; 1
        // goes.
        slots.busy(ids[0], s(5), s(40));
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
    fn a_source_holds_few_connections_without_a_whole_head() {
        let t = Instant::now();
        let s = |n| t + Duration::from_millis(n);
        let mut slots = Slots::new(SlotLimits {
            total: 64,
            per_network: 16,
            ..limits()
        });
        // Sixteen connections from one address, each sending `G`: the
        // fifth takes the place of the first, and so on.
        let mut evicted = Vec::new();
        for n in 0..16 {
            let (id, gone) = taken(slots.admit(ip("10.0.0.2"), s(n), n));
            slots.head(id, s(n));
            evicted.extend(gone);
        }
        assert_eq!(evicted, (0..12).collect::<Vec<_>>());
        assert_eq!(slots.in_network(ip("10.0.0.2")), 4);
        // A whole request frees the place: a busy connection is not
        // pending.
        let (id, _) = taken(slots.admit(ip("10.0.0.3"), s(20), 100));
        slots.busy(id, s(20), s(50));
        for n in 0..4 {
            taken(slots.admit(ip("10.0.0.3"), s(21 + n), 101 + n));
        }
        assert_eq!(slots.phase(id), Some(Phase::Busy));
        // IPv6: the source is the /64.
        for n in 0..6 {
            taken(slots.admit(ip(&format!("fd00::{n}")), s(30), 200 + n));
        }
        assert_eq!(slots.in_network(ip("fd00::9")), 4);
    }

    /// The attack of a byte of head: four networks of sixteen hosts fill
    /// the table with connections that each sent `G` and reopen whenever
    /// closed, and a host of the scraper's network holds its share of
    /// them; the scraper's kept-alive connection stays, and each new one it
    /// opens gets in and is answered.
    #[test]
    fn heads_that_never_end_make_room_for_the_scraper() {
        let t = Instant::now();
        let ms = |n: u64| t + Duration::from_millis(n);
        let mut slots = Slots::new(SlotLimits {
            total: 64,
            per_network: 16,
            ..limits()
        });
        let scraper_ip = ip("10.9.0.1");
        let (kept, _) = taken(slots.admit(scraper_ip, ms(0), "scraper"));
        slots.busy(kept, ms(0), ms(30_000));
        slots.idle(kept, ms(10));
        let attackers: Vec<String> = (1..=4)
            .flat_map(|net| (1..=16).map(move |h| format!("10.{net}.0.{h}")))
            .chain((0..16).map(|_| "10.9.0.2".to_string()))
            .collect();
        let mut now = 20;
        for round in 0..50 {
            // Every attacker reopens what was closed and sends a byte.
            for a in &attackers {
                now += 1;
                match slots.admit(ip(a), ms(now), "attacker") {
                    Admit::Taken { id, evicted } => {
                        assert_ne!(evicted, Some("scraper"), "round {round}");
                        slots.head(id, ms(now));
                    }
                    Admit::Full => {}
                }
            }
            assert_eq!(slots.phase(kept), Some(Phase::Idle), "round {round}");
            // A fresh scrape from the scraper gets a slot, is answered.
            now += 1;
            let (fresh, gone) = taken(slots.admit(scraper_ip, ms(now), "scraper"));
            assert_ne!(gone, Some("scraper"));
            slots.head(fresh, ms(now));
            slots.busy(fresh, ms(now), ms(now + 100));
            slots.release(fresh);
            // So is the kept-alive one.
            slots.head(kept, ms(now));
            slots.busy(kept, ms(now), ms(now + 100));
            slots.idle(kept, ms(now + 1));
        }
        assert!(slots.len() <= 64);
        assert!(slots.in_network(ip("10.9.0.2")) <= 5, "the source's share");
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
