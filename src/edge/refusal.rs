//! Why an edge refused a connection, a request or a datagram: one table of
//! the kinds both network edges (the metrics endpoint and the SNMP
//! responder) refuse for, declared once. A row names the `reason` label of
//! `infiniband_agent_{metrics,snmp}_refused_total`, which edges refuse for
//! it, the HTTP status it answers with, the pmAgent column its SNMP count
//! adds to, and its log line's words and level; the counters and the
//! per-kind log throttle are arrays walked over it. The per-kind throttle
//! ([`KindLog`]) serves the SNMP responder's other events too.

use std::fmt::Display;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tracing::Level;

use crate::time::Throttle;

/// A network edge of the agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// The metrics endpoint (HTTP).
    Http,
    /// The built-in SNMP responder (UDP).
    Snmp,
}

impl Edge {
    pub const ALL: [Edge; 2] = [Edge::Http, Edge::Snmp];

    /// The word its refusal series and its log lines are named by
    /// (`infiniband_agent_{name}_refused_total`, `{name}: refused`).
    pub const fn name(self) -> &'static str {
        match self {
            Edge::Http => "metrics",
            Edge::Snmp => "snmp",
        }
    }

    /// What its refusal series counts.
    pub const fn refused_help(self) -> &'static str {
        match self {
            Edge::Http => "HTTP requests and connections the metrics endpoint refused, by reason.",
            Edge::Snmp => "Datagrams the SNMP endpoint dropped unanswered, by reason.",
        }
    }
}

/// A pmAgent column of the SNMP endpoint's refusals: the sum of the kinds
/// whose row names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Column {
    /// pmAgentSnmpRefused: no access rule allowed the datagram.
    Refused,
    /// pmAgentSnmpRateLimited: over the rate guard of the rule that matched.
    RateLimited,
}

/// A refusal's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The peer is outside `sources` (HTTP: closed at accept, before a
    /// slot or a TLS handshake) or no access rule lists it (SNMP: dropped
    /// before it is decoded).
    Source,
    /// No valid credentials: basic auth, or a community or an SNMPv3 user
    /// no rule gives to the source.
    Auth,
    /// Over its source's request rate.
    Rate,
    /// No slot, render or check free.
    Busy,
    /// A malformed or unserved request.
    BadRequest,
    /// The TLS handshake failed.
    Tls,
    /// A head, a handshake or a response that took too long.
    Timeout,
    /// Not even the smallest error answer fits the size bound.
    TooBig,
    /// An SNMPv3 message the USM dropped without a Report.
    Usm,
}

/// One row of [`KINDS`].
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    pub refusal: Refusal,
    /// The `reason` label.
    pub label: &'static str,
    /// Whether the metrics endpoint refuses for it.
    pub http: bool,
    /// Whether the SNMP responder refuses for it.
    pub snmp: bool,
    /// The HTTP status the refusal answers with, when it answers at all.
    pub status: Option<u16>,
    /// Whether the answer says `Retry-After` (the refusal passes).
    pub retry: bool,
    /// The pmAgent column the SNMP responder's count adds to.
    pub column: Option<Column>,
    /// What the log line says the refusal was.
    pub what: &'static str,
    /// The level its log line is written at.
    pub level: Level,
}

/// Every kind, in the order of [`Refusal`]'s variants.
pub const KINDS: [Kind; 9] = [
    Kind {
        refusal: Refusal::Source,
        label: "source",
        http: true,
        snmp: true,
        status: Some(403),
        retry: false,
        column: Some(Column::Refused),
        what: "source not listed",
        level: Level::INFO,
    },
    Kind {
        refusal: Refusal::Auth,
        label: "auth",
        http: true,
        snmp: true,
        status: Some(401),
        retry: false,
        column: Some(Column::Refused),
        what: "no valid credentials",
        level: Level::INFO,
    },
    Kind {
        refusal: Refusal::Rate,
        label: "rate",
        http: true,
        snmp: true,
        status: Some(429),
        retry: true,
        column: Some(Column::RateLimited),
        what: "over its source's request rate",
        level: Level::WARN,
    },
    Kind {
        refusal: Refusal::Busy,
        label: "busy",
        http: true,
        snmp: false,
        status: Some(503),
        retry: true,
        column: None,
        what: "no connection, render or check free",
        level: Level::WARN,
    },
    Kind {
        refusal: Refusal::BadRequest,
        label: "bad_request",
        http: true,
        snmp: true,
        status: Some(400),
        retry: false,
        column: None,
        what: "malformed or unserved request",
        level: Level::DEBUG,
    },
    Kind {
        refusal: Refusal::Tls,
        label: "tls",
        http: true,
        snmp: false,
        status: None,
        retry: false,
        column: None,
        what: "TLS handshake failed",
        level: Level::INFO,
    },
    Kind {
        refusal: Refusal::Timeout,
        label: "timeout",
        http: true,
        snmp: false,
        status: None,
        retry: false,
        column: None,
        what: "too slow",
        level: Level::INFO,
    },
    Kind {
        refusal: Refusal::TooBig,
        label: "too_big",
        http: false,
        snmp: true,
        status: None,
        retry: false,
        column: None,
        what: "not even an error answer fits the size bound",
        level: Level::DEBUG,
    },
    Kind {
        refusal: Refusal::Usm,
        label: "usm",
        http: false,
        snmp: true,
        status: None,
        retry: false,
        column: None,
        what: "an SNMPv3 message the USM drops without a Report",
        level: Level::DEBUG,
    },
];

impl Kind {
    /// Whether `edge` refuses for it.
    pub const fn on(&self, edge: Edge) -> bool {
        match edge {
            Edge::Http => self.http,
            Edge::Snmp => self.snmp,
        }
    }
}

impl Refusal {
    /// Its row of [`KINDS`].
    pub const fn kind(self) -> &'static Kind {
        &KINDS[self as usize]
    }

    pub const fn label(self) -> &'static str {
        self.kind().label
    }
}

/// Refusals counted by kind.
#[derive(Debug, Default)]
pub struct RefusalCounts([AtomicU64; KINDS.len()]);

impl RefusalCounts {
    pub fn bump(&self, r: Refusal) {
        self.0[r as usize].fetch_add(1, Ordering::Relaxed);
    }

    pub fn get(&self, r: Refusal) -> u64 {
        self.0[r as usize].load(Ordering::Relaxed)
    }

    /// Every count (each read on its own).
    pub fn figures(&self) -> RefusalFigures {
        RefusalFigures(std::array::from_fn(|i| self.0[i].load(Ordering::Relaxed)))
    }
}

/// A reading of [`RefusalCounts`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RefusalFigures([u64; KINDS.len()]);

impl RefusalFigures {
    pub fn get(&self, r: Refusal) -> u64 {
        self.0[r as usize]
    }

    /// The label and count of every kind `edge` refuses for, in the
    /// table's order.
    pub fn by_label(&self, edge: Edge) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        KINDS
            .iter()
            .zip(self.0)
            .filter(move |(k, _)| k.on(edge))
            .map(|(k, n)| (k.label, n))
    }

    /// The sum of the kinds whose row names `column`.
    pub fn column(&self, column: Column) -> u64 {
        KINDS
            .iter()
            .zip(self.0)
            .filter(|(k, _)| k.column == Some(column))
            .map(|(_, n)| n)
            .sum()
    }
}

/// Throttled log lines by kind of event, for either edge: one line per
/// kind (a number below the count given) at most every `period`, with the
/// number of events it stands for.
#[derive(Debug)]
pub struct KindLog(Vec<Throttle>);

impl KindLog {
    pub fn every(kinds: usize, period: Duration) -> KindLog {
        KindLog(vec![Throttle::every(period); kinds])
    }

    /// One event of kind `k` at `now`: the number its line stands for,
    /// when one is due (never for a kind beyond the count).
    pub fn due(&mut self, k: usize, now: Instant) -> Option<u64> {
        self.0.get_mut(k)?.at(now).map(|d| d.since)
    }
}

/// An edge's refusals: each counted into the edge's [`RefusalCounts`] and
/// logged through a [`KindLog`] over [`KINDS`], at most one line per kind
/// every period, at the kind's level.
#[derive(Debug)]
pub struct RefusalLog {
    edge: Edge,
    period: Duration,
    log: KindLog,
}

impl RefusalLog {
    pub fn every(edge: Edge, period: Duration) -> RefusalLog {
        RefusalLog {
            edge,
            period,
            log: KindLog::every(KINDS.len(), period),
        }
    }

    /// One refusal of kind `r` at `now`: the number its line stands for,
    /// when one is due.
    pub fn due(&mut self, r: Refusal, now: Instant) -> Option<u64> {
        self.log.due(r as usize, now)
    }

    /// Counts a refusal of kind `r` of `peer` into `counts` and writes its
    /// line when one is due (`detail`, of the last refusal, is formatted
    /// then only).
    pub fn refuse(
        &mut self,
        counts: &RefusalCounts,
        r: Refusal,
        peer: impl Display,
        detail: impl Display,
        now: Instant,
    ) {
        counts.bump(r);
        let Some(n) = self.due(r, now) else {
            return;
        };
        let k = r.kind();
        let (edge, every) = (self.edge.name(), self.period.as_secs());
        macro_rules! line {
            ($level:expr) => {
                tracing::event!(
                    $level,
                    reason = k.label,
                    count = n,
                    "{edge}: refused {n} ({}; the last from {peer}: {detail}); at most one line \
                     per reason every {every} s",
                    k.what
                )
            };
        }
        match k.level {
            Level::ERROR | Level::WARN => line!(Level::WARN),
            Level::INFO => line!(Level::INFO),
            _ => line!(Level::DEBUG),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_order_of_the_kinds() {
        for (i, k) in KINDS.iter().enumerate() {
            assert_eq!(k.refusal as usize, i, "{}", k.label);
            assert_eq!(k.refusal.label(), k.label);
            assert!(k.http || k.snmp, "{} is refused by an edge", k.label);
            assert!(
                k.column.is_none() || k.snmp,
                "{} adds to an SNMP column",
                k.label
            );
            assert!(k.status.is_none() || k.http, "{} answers HTTP", k.label);
        }
        let mut labels: Vec<&str> = KINDS.iter().map(|k| k.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), KINDS.len(), "labels are distinct");
    }

    #[test]
    fn each_edge_counts_its_own_kinds_under_one_naming() {
        let c = RefusalCounts::default();
        for k in &KINDS {
            c.bump(k.refusal);
        }
        let f = c.figures();
        let http: Vec<&str> = f.by_label(Edge::Http).map(|(l, _)| l).collect();
        let snmp: Vec<&str> = f.by_label(Edge::Snmp).map(|(l, _)| l).collect();
        assert_eq!(
            http,
            [
                "source",
                "auth",
                "rate",
                "busy",
                "bad_request",
                "tls",
                "timeout"
            ]
        );
        assert_eq!(
            snmp,
            ["source", "auth", "rate", "bad_request", "too_big", "usm"]
        );
        assert_eq!(Edge::Http.name(), "metrics");
        assert_eq!(Edge::Snmp.name(), "snmp");
    }

    #[test]
    fn the_mib_columns_are_sums_of_the_kinds_that_name_them() {
        let c = RefusalCounts::default();
        let bumps = [
            (Refusal::Source, 3),
            (Refusal::Auth, 5),
            (Refusal::Rate, 7),
            (Refusal::BadRequest, 11),
            (Refusal::TooBig, 13),
            (Refusal::Usm, 17),
        ];
        for (r, n) in bumps {
            for _ in 0..n {
                c.bump(r);
            }
        }
        let f = c.figures();
        assert_eq!(f.column(Column::Refused), 3 + 5, "source and auth");
        assert_eq!(f.column(Column::RateLimited), 7);
        assert_eq!(f.get(Refusal::Usm), 17);
        assert_eq!(c.get(Refusal::TooBig), 13);
    }

    #[test]
    fn counts_and_log_lines_by_kind() {
        let c = RefusalCounts::default();
        let mut log = RefusalLog::every(Edge::Snmp, Duration::from_secs(10));
        let t = Instant::now();
        log.refuse(&c, Refusal::Rate, "10.0.0.1", "", t);
        log.refuse(&c, Refusal::Rate, "10.0.0.1", "", t);
        assert_eq!(c.get(Refusal::Rate), 2, "every refusal is counted");
        assert_eq!(c.get(Refusal::Source), 0);
        // The two above: the first wrote its line, the second waits.
        assert_eq!(log.due(Refusal::Rate, t + Duration::from_secs(1)), None);
        assert_eq!(log.due(Refusal::Rate, t + Duration::from_secs(11)), Some(3));
        assert_eq!(log.due(Refusal::Source, t), Some(1));
        assert_eq!(log.due(Refusal::Source, t + Duration::from_secs(1)), None);
        assert_eq!(log.due(Refusal::Auth, t), Some(1));
        assert_eq!(log.due(Refusal::Usm, t), Some(1));
        let mut kinds = KindLog::every(2, Duration::from_secs(10));
        assert_eq!(kinds.due(1, t), Some(1));
        assert_eq!(kinds.due(1, t), None);
        assert_eq!(kinds.due(2, t), None, "beyond the count");
    }
}
