//! The ranges of the numeric keys, one table: [`Config::validate`] checks
//! every key against its row and, when a value is outside, says the row's
//! range; a test holds `config/ibpm-agentx.toml`'s comments to the same
//! ranges.

use std::fmt;
use std::time::Duration;

use super::{Config, ConfigError};
use crate::fabric::engine::MAX_WINDOW;
use crate::snmp::{MAX_UDP_PAYLOAD, MIN_MESSAGE_SIZE};

/// What a key's number counts, as the file writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Count,
    Seconds,
    Milliseconds,
    Octets,
}

impl Unit {
    /// The word messages and the example's comments say.
    pub fn word(self) -> &'static str {
        match self {
            Unit::Count => "",
            Unit::Seconds => "seconds",
            Unit::Milliseconds => "milliseconds",
            Unit::Octets => "octets",
        }
    }
}

/// A number as the file writes it: whole, or with a fraction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Num {
    Whole(u64),
    Fraction(f64),
}

impl Num {
    fn le(self, other: Num) -> bool {
        match (self, other) {
            (Num::Whole(a), Num::Whole(b)) => a <= b,
            (a, b) => a.as_f64() <= b.as_f64(),
        }
    }

    fn as_f64(self) -> f64 {
        match self {
            Num::Whole(n) => n as f64,
            Num::Fraction(x) => x,
        }
    }
}

impl fmt::Display for Num {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Num::Whole(n) => n.fmt(f),
            Num::Fraction(x) => x.fmt(f),
        }
    }
}

/// The numbers one key takes.
pub struct Limit {
    pub section: &'static str,
    pub key: &'static str,
    pub min: Num,
    /// `None`: as large as the key's type holds.
    pub max: Option<Num>,
    /// Where the key's value is in a configuration, and what it counts.
    read: Read,
}

/// Where a value is in a configuration.
type Get<T> = fn(&Config) -> T;

/// Where a key's value is in a configuration, and what it counts. A
/// period is compared in its unit, with the fraction where the key's
/// minimum has one, else in whole units (a fraction of one cut off).
#[derive(Clone, Copy)]
enum Read {
    Count(Get<u64>),
    Fraction(Get<f64>),
    Octets(Get<u64>),
    Seconds(Get<Duration>),
    Milliseconds(Get<Duration>),
}

use Read::{Count, Milliseconds, Octets, Seconds};

/// A key's section or name.
type Key = &'static str;

impl Limit {
    /// A whole number from `min` to `max`.
    const fn new(section: Key, key: Key, min: u64, max: u64, read: Read) -> Limit {
        let (min, max) = (Num::Whole(min), Some(Num::Whole(max)));
        Limit {
            section,
            key,
            min,
            max,
            read,
        }
    }

    /// A whole number of at least `min`, as large as the key's type holds.
    const fn at_least(section: Key, key: Key, min: u64, read: Read) -> Limit {
        Limit {
            max: None,
            ..Limit::new(section, key, min, 0, read)
        }
    }

    /// A number from `min`, which has a fraction, to `max`.
    const fn fine(section: Key, key: Key, min: f64, max: u64, read: Read) -> Limit {
        Limit {
            min: Num::Fraction(min),
            ..Limit::new(section, key, 0, max, read)
        }
    }

    /// A percentage from `min` to 100.
    const fn percent(section: Key, key: Key, min: f64, read: Get<f64>) -> Limit {
        Limit {
            max: Some(Num::Fraction(100.0)),
            ..Limit::fine(section, key, min, 0, Read::Fraction(read))
        }
    }

    /// What the key's number counts.
    pub fn unit(&self) -> Unit {
        match self.read {
            Count(_) | Read::Fraction(_) => Unit::Count,
            Octets(_) => Unit::Octets,
            Seconds(_) => Unit::Seconds,
            Milliseconds(_) => Unit::Milliseconds,
        }
    }

    /// The key's value in `c`, in its unit.
    fn value(&self, c: &Config) -> Num {
        let fine = matches!(self.min, Num::Fraction(_));
        match self.read {
            Count(read) | Octets(read) => Num::Whole(read(c)),
            Read::Fraction(read) => Num::Fraction(read(c)),
            Seconds(read) if fine => fractional_seconds(read(c)),
            Seconds(read) => seconds(read(c)),
            Milliseconds(read) if fine => Num::Fraction(read(c).as_secs_f64() * 1000.0),
            Milliseconds(read) => milliseconds(read(c)),
        }
    }

    pub fn contains(&self, v: Num) -> bool {
        self.min.le(v) && self.max.is_none_or(|max| v.le(max))
    }

    /// The numbers it takes, as the example's comment writes them: `1 to
    /// 256`, `at least 1`.
    pub fn bounds(&self) -> String {
        match self.max {
            Some(max) => format!("{} to {max}", self.min),
            None => format!("at least {}", self.min),
        }
    }

    /// Why `v` is refused.
    pub fn out_of_range(&self, v: Num) -> String {
        let unit = match self.unit() {
            Unit::Count => String::new(),
            u => format!(" {}", u.word()),
        };
        format!("{v} is out of range ({}{unit})", self.bounds())
    }

    /// `v` as the key's value: refused with the range when outside it.
    pub fn check(&self, v: Num) -> Result<(), ConfigError> {
        if self.contains(v) {
            return Ok(());
        }
        Err(ConfigError::at(
            self.section,
            self.key,
            self.out_of_range(v),
        ))
    }
}

/// Timers add these periods to `Instant::now()`: a day at most keeps that
/// addition in range.
const DAY: u64 = 86_400;

/// `fabric.sweep_interval` (also `--sweep-interval`).
pub const SWEEP_INTERVAL: Limit = Limit::fine(
    "fabric",
    "sweep_interval",
    0.1,
    DAY,
    Seconds(|c| c.fabric.sweep_interval),
);

/// `doca.sample_period_ms`.
pub const SAMPLE_PERIOD: Limit = Limit::fine(
    "doca",
    "sample_period_ms",
    0.001,
    10_000,
    Milliseconds(|c| c.doca.sample_period),
);

/// `snmp.max_response_octets` (also an `[[snmp.access]]` rule's): one
/// SNMP message over UDP.
pub const MAX_RESPONSE_OCTETS: Limit = Limit::new(
    "snmp",
    "max_response_octets",
    MIN_MESSAGE_SIZE as u64,
    MAX_UDP_PAYLOAD as u64,
    Octets(|c| c.snmp.max_response_octets as u64),
);

/// The highest number a local port may have (a CA's ports are numbered
/// from 1; 255 is no port). Every port of `umad.ports` and
/// `[[umad.plane]] ports` is in 1 to this, `umad.port` in 0 (the first
/// active port) to this.
pub const MAX_LOCAL_PORT: u8 = 254;

/// Every numeric key with a range.
#[rustfmt::skip]
pub static LIMITS: &[Limit] = &[
    Limit::new("agentx", "ping_interval", 1, DAY, Seconds(|c| c.agentx.ping_interval)),
    Limit::new("agentx", "reconnect_max", 1, DAY, Seconds(|c| c.agentx.reconnect_max)),
    MAX_RESPONSE_OCTETS,
    SWEEP_INTERVAL,
    Limit::at_least("fabric", "unreachable_after", 1, Count(|c| c.fabric.unreachable_after.into())),
    Limit::new("fabric", "optional_interval", 0, DAY, Seconds(|c| c.fabric.optional_interval.unwrap_or_default())),
    Limit::new("fabric", "rediscover_interval", 0, DAY, Seconds(|c| c.fabric.rediscover_interval.unwrap_or_default())),
    Limit::new("fabric", "portinfo_interval", 0, DAY, Seconds(|c| c.fabric.portinfo_interval.unwrap_or_default())),
    Limit::new("fabric", "forget_after", 0, 365 * DAY, Seconds(|c| c.fabric.forget_after.unwrap_or_default())),
    Limit::new("mad", "window", 1, MAX_WINDOW as u64, Count(|c| c.mad.window as u64)),
    Limit::new("mad", "timeout_ms", 1, 60_000, Milliseconds(|c| c.mad.timeout)),
    Limit::new("mad", "retries", 0, 20, Count(|c| c.mad.retries.into())),
    Limit::new("umad", "port", 0, MAX_LOCAL_PORT as u64, Count(|c| c.umad.port.map_or(0, u64::from))),
    Limit::new("umad", "discovery_timeout_ms", 1, 60_000, Milliseconds(|c| c.umad.discovery_timeout)),
    SAMPLE_PERIOD,
    Limit::new("doca", "output_format", 0, 2, Count(|c| c.doca.output_format.into())),
    Limit::new("doca", "log_max_samples", 1, 16, Count(|c| c.doca.log_max_samples.into())),
    Limit::new("notify", "window", 1, DAY, Seconds(|c| c.notify.window)),
    Limit::new("notify", "queue", 1, 100_000, Count(|c| c.notify.queue as u64)),
    Limit::new("events", "capacity", 100, crate::events::file::MAX_RECORDS as u64, Count(|c| c.events.capacity as u64)),
    Limit::new("events", "max_age", 60, 30 * DAY, Seconds(|c| c.events.max_age)),
    Limit::new("health", "flap_count", 1, crate::health::MAX_FLAP_COUNT as u64, Count(|c| c.health.flap_count.into())),
    Limit::new("health", "flap_window", 1, DAY, Seconds(|c| c.health.windows(c.fabric.sweep_interval).0)),
    Limit::new("health", "unresponsive_missed", 1, crate::health::MAX_UNRESPONSIVE_OF as u64, Count(|c| c.health.unresponsive_missed.into())),
    Limit::new("health", "unresponsive_sweeps", 1, crate::health::MAX_UNRESPONSIVE_OF as u64, Count(|c| c.health.unresponsive_sweeps.into())),
    Limit::new("health", "recovery", 1, DAY, Seconds(|c| c.health.windows(c.fabric.sweep_interval).1)),
    Limit::new("health", "forget_after", 1, 365 * DAY, Seconds(|c| c.health.forget_after)),
    Limit::percent("health", "congestion_percent", 0.01, |c| c.health.congestion_percent),
    Limit::new("health", "congestion_window", 1, DAY, Seconds(|c| c.health.windows(c.fabric.sweep_interval).2)),
    Limit::new("metrics", "max_connections", 1, 4096, Count(|c| c.metrics.max_connections as u64)),
    Limit::new("metrics", "max_connections_per_network", 1, 4096, Count(|c| c.metrics.max_connections_per_network as u64)),
    Limit::new("metrics", "rate_limit", 0, 100_000, Count(|c| c.metrics.rate_limit.into())),
    Limit::new("metrics", "rate_burst", 1, 100_000, Count(|c| c.metrics.rate_burst.into())),
    Limit::new("metrics", "max_renders", 0, 256, Count(|c| c.metrics.max_renders as u64)),
    Limit::new("metrics", "head_timeout", 1, 60, Seconds(|c| c.metrics.head_timeout)),
    Limit::new("metrics", "idle_timeout", 1, DAY, Seconds(|c| c.metrics.idle_timeout)),
    Limit::new("metrics", "response_timeout", 1, 3600, Seconds(|c| c.metrics.response_timeout)),
    Limit::new("metrics", "connection_lifetime", 1, DAY, Seconds(|c| c.metrics.connection_lifetime)),
    Limit::new("metrics", "min_rate", 0, 1 << 30, Octets(|c| c.metrics.min_rate)),
];

/// Checks every key of the table in `c`.
pub(super) fn check(c: &Config) -> Result<(), ConfigError> {
    LIMITS.iter().try_for_each(|l| l.check(l.value(c)))
}

fn seconds(d: Duration) -> Num {
    Num::Whole(d.as_secs())
}

fn milliseconds(d: Duration) -> Num {
    Num::Whole(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn fractional_seconds(d: Duration) -> Num {
    Num::Fraction(d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::super::keys::Keys;
    use super::*;

    const EXAMPLE: &str = include_str!("../../config/ibpm-agentx.toml");

    /// The comment lines right above `key` in `[section]` of the example,
    /// joined.
    fn example_comment(section: &str, key: &str) -> String {
        let line = Keys::parse(EXAMPLE)
            .line(section, key)
            .unwrap_or_else(|| panic!("{section}.{key} is not in the example"));
        let lines: Vec<&str> = EXAMPLE.lines().take(line - 1).collect();
        let above: Vec<&str> = lines
            .iter()
            .rev()
            .take_while(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim())
            .collect();
        above.into_iter().rev().collect::<Vec<_>>().join(" ")
    }

    /// The documented example and the checks cannot drift apart: every
    /// key of the table is in the example, and its comment says the range
    /// and the unit the table holds.
    #[test]
    fn the_example_states_every_range_of_the_table() {
        for l in LIMITS {
            let comment = example_comment(l.section, l.key);
            assert!(
                comment.contains(&l.bounds()),
                "{}.{}: the example does not say \"{}\": {comment}",
                l.section,
                l.key,
                l.bounds()
            );
            assert!(
                comment.to_lowercase().contains(l.unit().word()),
                "{}.{}: the example does not say {}: {comment}",
                l.section,
                l.key,
                l.unit().word()
            );
        }
    }

    /// Each row checks its own key: its bounds are taken, a value past
    /// either is refused with the row's range, at the key's line.
    #[test]
    fn every_row_checks_its_key_at_its_bounds() {
        // The keys a row's bounds contradict, set out of their way (the
        // health windows and their sweep, recovery and forget_after, k
        // of n), but for the row's own.
        let parse = |l: &Limit, v: String| {
            let mut text = format!("[{}]\n{} = {v}\n", l.section, l.key);
            if l.section == "health" {
                for (k, x) in [
                    ("recovery", "1"),
                    ("unresponsive_missed", "1"),
                    ("unresponsive_sweeps", "32"),
                ] {
                    if k != l.key {
                        text += &format!("{k} = {x}\n");
                    }
                }
                text += "[fabric]\nsweep_interval = 1\n";
            } else {
                text += "[health]\nenabled = false\n";
            }
            Config::parse(&text, "c.toml")
        };
        for l in LIMITS {
            let mut refused = Vec::new();
            let mut taken = vec![l.min.to_string()];
            match l.min {
                Num::Whole(0) => {}
                Num::Whole(n) => refused.push((n - 1).to_string()),
                Num::Fraction(x) => refused.push((x / 2.0).to_string()),
            }
            if let Some(max) = l.max {
                taken.push(max.to_string());
                refused.push(match max {
                    Num::Whole(n) => (n + 1).to_string(),
                    Num::Fraction(x) => (x * 2.0).to_string(),
                });
            }
            for v in taken {
                parse(l, v.clone())
                    .unwrap_or_else(|e| panic!("{}.{} = {v}: {e}", l.section, l.key));
            }
            for v in refused {
                let e = parse(l, v.clone()).unwrap_err();
                let key = format!("{}.{}", l.section, l.key);
                assert_eq!(e.key_path(), Some(key.clone()), "{key} = {v}: {e}");
                assert_eq!(e.line, Some(2), "{key} = {v}: {e}");
                assert!(e.reason.contains(&l.bounds()), "{key} = {v}: {e}");
            }
        }
    }

    #[test]
    fn messages_say_the_value_the_range_and_the_unit() {
        let l = &MAX_RESPONSE_OCTETS;
        assert_eq!(
            l.out_of_range(Num::Whole(70_000)),
            "70000 is out of range (484 to 65507 octets)"
        );
        assert_eq!(
            SWEEP_INTERVAL.out_of_range(Num::Fraction(0.01)),
            "0.01 is out of range (0.1 to 86400 seconds)"
        );
        let e = Config::parse("[fabric]\nunreachable_after = 0\n", "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:2: key `fabric.unreachable_after`: 0 is out of range (at least 1)"
        );
        assert!(!SWEEP_INTERVAL.contains(Num::Fraction(f64::NAN)));
        assert!(SWEEP_INTERVAL.contains(Num::Whole(86_400)));
        assert!(!SWEEP_INTERVAL.contains(Num::Fraction(86_400.5)));
    }
}
