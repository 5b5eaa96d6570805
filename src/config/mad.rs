//! `[mad]`: the PM MAD window of the sweep engine; its conversion to the
//! engine's settings.

use std::time::Duration;

use serde::Deserialize;

use super::{Config, milliseconds};
use crate::fabric::engine::EngineConfig;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MadConfig {
    /// MADs in flight at once.
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
