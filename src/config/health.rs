//! The `[health]` section: the port-health evaluator's conditions, windows
//! and recovery.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::{Config, ConfigError, seconds};

/// A window in whole seconds that may be left out (then the default, or a
/// sweep when the sweep is longer).
fn window<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    Ok(Some(Duration::from_secs(u64::deserialize(d)?)))
}
use crate::health::HealthConfig;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct HealthSection {
    /// Evaluate port health at all.
    pub enabled: bool,
    /// Flaps within `flap_window` that make a link flapping.
    pub flap_count: u32,
    /// None: the default, at least a sweep.
    #[serde(deserialize_with = "window")]
    pub flap_window: Option<Duration>,
    /// Sweeps a PMA must miss of the last `unresponsive_sweeps`.
    pub unresponsive_missed: u8,
    pub unresponsive_sweeps: u8,
    /// How long a condition must stay absent before its verdict clears
    /// (None: the default, at least a sweep).
    #[serde(deserialize_with = "window")]
    pub recovery: Option<Duration>,
    /// How long a lost link is reported and a cleared verdict remembered.
    #[serde(deserialize_with = "seconds")]
    pub forget_after: Duration,
    /// The share of the time a port waits to transmit, in percent, above
    /// which (on average over `congestion_window`) its link is congested.
    pub congestion_percent: f64,
    /// None: the default, at least a sweep.
    #[serde(deserialize_with = "window")]
    pub congestion_window: Option<Duration>,
}

impl Default for HealthSection {
    fn default() -> Self {
        let h = HealthConfig::default();
        HealthSection {
            enabled: true,
            flap_count: h.flap_count,
            flap_window: None,
            unresponsive_missed: h.unresponsive_missed,
            unresponsive_sweeps: h.unresponsive_of,
            recovery: None,
            forget_after: h.forget_after,
            congestion_percent: f64::from(h.congestion_hundredths) / 100.0,
            congestion_window: None,
        }
    }
}

impl HealthSection {
    /// What the ranges of the limits table cannot say: keys that contradict
    /// each other or the sweep.
    pub(super) fn check(&self, sweep_interval: Duration) -> Result<(), ConfigError> {
        if !self.enabled {
            return Ok(());
        }
        if self.unresponsive_missed > self.unresponsive_sweeps {
            return Err(ConfigError::at(
                "health",
                "unresponsive_missed",
                format!(
                    "{} is more than unresponsive_sweeps ({})",
                    self.unresponsive_missed, self.unresponsive_sweeps
                ),
            ));
        }
        // A window the file sets must hold a sweep (one it leaves out is
        // made to).
        for (key, d) in [
            ("recovery", self.recovery),
            ("flap_window", self.flap_window),
            ("congestion_window", self.congestion_window),
        ] {
            if let Some(d) = d
                && d < sweep_interval
            {
                return Err(ConfigError::at(
                    "health",
                    key,
                    format!(
                        "{} s is shorter than a sweep (fabric.sweep_interval = {} s)",
                        d.as_secs(),
                        sweep_interval.as_secs_f64()
                    ),
                ));
            }
        }
        let recovery = self.windows(sweep_interval).1;
        if self.forget_after < recovery {
            return Err(ConfigError::at(
                "health",
                "forget_after",
                format!(
                    "{} s is shorter than recovery ({} s)",
                    self.forget_after.as_secs(),
                    recovery.as_secs()
                ),
            ));
        }
        Ok(())
    }

    /// (flap window, recovery, congestion window) as the evaluator takes
    /// them: as set, or the default and at least a sweep.
    pub fn windows(&self, sweep_interval: Duration) -> (Duration, Duration, Duration) {
        let h = HealthConfig::default();
        let or =
            |set: Option<Duration>, default: Duration| set.unwrap_or(default.max(sweep_interval));
        (
            or(self.flap_window, h.flap_window),
            or(self.recovery, h.recovery),
            or(self.congestion_window, h.congestion_window),
        )
    }
}

impl Config {
    /// The health evaluator's settings.
    pub fn health(&self) -> HealthConfig {
        let h = &self.health;
        let (flap_window, recovery, congestion_window) = h.windows(self.fabric.sweep_interval);
        HealthConfig {
            flap_count: h.flap_count,
            flap_window,
            unresponsive_missed: h.unresponsive_missed,
            unresponsive_of: h.unresponsive_sweeps,
            recovery,
            forget_after: h.forget_after,
            congestion_hundredths: (h.congestion_percent * 100.0).round() as u32,
            congestion_window,
            threshold_window: self.notify.window,
            thresholds: self.notify().rules,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_evaluators() {
        let c = Config::default();
        assert_eq!(c.health(), HealthConfig::default());
        c.validate().unwrap();
    }

    #[test]
    fn contradicting_keys_are_refused_with_their_line() {
        let e = Config::parse(
            "[health]\nunresponsive_sweeps = 4\nunresponsive_missed = 5\n",
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(3), Some("health.unresponsive_missed"))
        );
        let e = Config::parse(
            "[fabric]\nsweep_interval = 30\n[health]\nrecovery = 20\n",
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(4), Some("health.recovery"))
        );
        assert!(e.reason.contains("shorter than a sweep"), "{}", e.reason);
        let e = Config::parse("[health]\nflap_count = 0\n", "c.toml").unwrap_err();
        assert_eq!(e.reason, "0 is out of range (1 to 120)");
        let e = Config::parse("[health]\ncongestion_percent = 101\n", "c.toml").unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("health.congestion_percent"));
        let e = Config::parse("[health]\nforget_after = 60\n", "c.toml").unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("health.forget_after"));
    }

    /// Windows left out are made to hold a sweep: a long sweep interval
    /// needs no [health] keys.
    #[test]
    fn windows_left_out_hold_a_sweep() {
        let c = Config::parse("[fabric]\nsweep_interval = 3600\n", "c.toml").unwrap();
        let h = c.health();
        assert_eq!(h.recovery, Duration::from_secs(3600));
        assert_eq!(h.flap_window, Duration::from_secs(3600));
        let c = Config::parse("[health]\nrecovery = 60\n", "c.toml").unwrap();
        assert_eq!(c.health().recovery, Duration::from_secs(60));
        assert_eq!(c.health().flap_window, Duration::from_secs(600));
    }
}
