//! `[mad]`: the PM MAD window of the sweep engine; its conversion to the
//! engine's settings.

use std::time::Duration;

use serde::Deserialize;

use super::{Config, ConfigError, milliseconds};
use crate::fabric::engine::EngineConfig;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MadConfig {
    /// MADs in flight at once (1..=256).
    pub window: usize,
    /// Per-MAD deadline (`timeout_ms` in the file).
    #[serde(rename = "timeout_ms", deserialize_with = "milliseconds")]
    pub timeout: Duration,
    /// Resends after the first attempt.
    pub retries: u32,
}

impl Default for MadConfig {
    fn default() -> Self {
        MadConfig {
            window: 64,
            timeout: Duration::from_millis(200),
            retries: 3,
        }
    }
}

impl Config {
    /// The sweep engine's MAD window.
    pub fn engine(&self) -> EngineConfig {
        EngineConfig {
            window: self.mad.window,
            timeout: self.mad.timeout,
            retries: self.mad.retries,
        }
    }
}

impl MadConfig {
    /// Check what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if !(1..=crate::fabric::engine::MAX_WINDOW).contains(&self.window) {
            return Err(ConfigError::at(
                "mad",
                "window",
                format!("{} is out of range (1 to 256)", self.window),
            ));
        }
        let minute = Duration::from_secs(60);
        if !(Duration::from_millis(1)..=minute).contains(&self.timeout) {
            return Err(ConfigError::at(
                "mad",
                "timeout_ms",
                format!("{} is out of range (1 to 60000)", self.timeout.as_millis()),
            ));
        }
        if self.retries > 20 {
            return Err(ConfigError::at(
                "mad",
                "retries",
                format!("{} is more than 20", self.retries),
            ));
        }
        Ok(())
    }
}
