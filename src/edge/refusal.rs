//! Why an edge refused a connection or a request: one table of the kinds,
//! declared once. It names the `reason` label of `…_refused_total`, the
//! HTTP status a refusal answers with, and the log line's words; the
//! counters and the per-kind log throttle are arrays walked over it. The
//! per-kind throttle ([`KindLog`]) serves the SNMP responder's events too.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::time::Throttle;

/// A refusal's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Refusal {
    /// The peer is outside `sources`: closed at accept, before a slot or a
    /// TLS handshake.
    Source,
    /// No valid credentials.
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
}

/// One row of [`KINDS`].
#[derive(Clone, Copy, Debug)]
pub struct Kind {
    pub refusal: Refusal,
    /// The `reason` label.
    pub label: &'static str,
    /// The HTTP status the refusal answers with, when it answers at all.
    pub status: Option<u16>,
    /// Whether the answer says `Retry-After` (the refusal passes).
    pub retry: bool,
    /// What the log line says the refusal was.
    pub what: &'static str,
}

/// Every kind, in the order of [`Refusal`]'s variants.
pub const KINDS: [Kind; 7] = [
    Kind {
        refusal: Refusal::Source,
        label: "source",
        status: Some(403),
        retry: false,
        what: "source not in sources",
    },
    Kind {
        refusal: Refusal::Auth,
        label: "auth",
        status: Some(401),
        retry: false,
        what: "no valid credentials",
    },
    Kind {
        refusal: Refusal::Rate,
        label: "rate",
        status: Some(429),
        retry: true,
        what: "over its source's request rate",
    },
    Kind {
        refusal: Refusal::Busy,
        label: "busy",
        status: Some(503),
        retry: true,
        what: "no connection, render or check free",
    },
    Kind {
        refusal: Refusal::BadRequest,
        label: "bad_request",
        status: Some(400),
        retry: false,
        what: "malformed or unserved request",
    },
    Kind {
        refusal: Refusal::Tls,
        label: "tls",
        status: None,
        retry: false,
        what: "TLS handshake failed",
    },
    Kind {
        refusal: Refusal::Timeout,
        label: "timeout",
        status: None,
        retry: false,
        what: "too slow",
    },
];

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

    /// Every kind's label and count, in the table's order.
    pub fn by_label(&self) -> [(&'static str, u64); KINDS.len()] {
        std::array::from_fn(|i| (KINDS[i].label, self.0[i].load(Ordering::Relaxed)))
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

/// The refusals' log: a [`KindLog`] over [`KINDS`].
#[derive(Debug)]
pub struct RefusalLog(KindLog);

impl RefusalLog {
    pub fn every(period: Duration) -> RefusalLog {
        RefusalLog(KindLog::every(KINDS.len(), period))
    }

    /// One refusal of kind `r` at `now`: the number its line stands for,
    /// when one is due.
    pub fn due(&mut self, r: Refusal, now: Instant) -> Option<u64> {
        self.0.due(r as usize, now)
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
        }
        let mut labels: Vec<&str> = KINDS.iter().map(|k| k.label).collect();
        labels.sort_unstable();
        labels.dedup();
        assert_eq!(labels.len(), KINDS.len(), "labels are distinct");
    }

    #[test]
    fn counts_and_log_lines_by_kind() {
        let c = RefusalCounts::default();
        c.bump(Refusal::Rate);
        c.bump(Refusal::Rate);
        assert_eq!(c.get(Refusal::Rate), 2);
        assert!(c.by_label().contains(&("rate", 2)));
        assert!(c.by_label().contains(&("source", 0)));
        let mut log = RefusalLog::every(Duration::from_secs(10));
        let t = Instant::now();
        assert_eq!(log.due(Refusal::Source, t), Some(1));
        assert_eq!(log.due(Refusal::Source, t + Duration::from_secs(1)), None);
        assert_eq!(log.due(Refusal::Auth, t), Some(1));
        assert_eq!(log.due(Refusal::Timeout, t), Some(1));
        assert_eq!(
            log.due(Refusal::Source, t + Duration::from_secs(11)),
            Some(2)
        );
        let mut kinds = KindLog::every(2, Duration::from_secs(10));
        assert_eq!(kinds.due(1, t), Some(1));
        assert_eq!(kinds.due(1, t), None);
        assert_eq!(kinds.due(2, t), None, "beyond the count");
    }
}
