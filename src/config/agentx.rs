//! `[agentx]`: the connection to snmpd's AgentX master.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{ConfigError, from_str, seconds};
use crate::agentx::AgentxAddr;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AgentxConfig {
    /// Connect to snmpd at all.
    pub enabled: bool,
    /// `PATH`, `unix:PATH` or `tcp:HOST:PORT`.
    #[serde(deserialize_with = "from_str")]
    pub socket: AgentxAddr,
    /// Registration priority (lower wins; RFC 2741 default 127).
    pub priority: u8,
    /// Time between Pings to the master (whole seconds in the file).
    #[serde(deserialize_with = "seconds")]
    pub ping_interval: Duration,
    /// Upper bound of the reconnect backoff (whole seconds in the file).
    #[serde(deserialize_with = "seconds")]
    pub reconnect_max: Duration,
}

impl Default for AgentxConfig {
    fn default() -> Self {
        AgentxConfig {
            enabled: true,
            socket: AgentxAddr::Unix(PathBuf::from("/var/agentx/master")),
            priority: 127,
            ping_interval: Duration::from_secs(15),
            reconnect_max: Duration::from_secs(5),
        }
    }
}

impl AgentxConfig {
    /// Check what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        // Timers add these to `Instant::now()`: a day at most keeps that
        // addition in range.
        let day = Duration::from_secs(86_400);
        for (key, d) in [
            ("ping_interval", self.ping_interval),
            ("reconnect_max", self.reconnect_max),
        ] {
            if !(Duration::from_secs(1)..=day).contains(&d) {
                return Err(ConfigError::at(
                    "agentx",
                    key,
                    format!("{} is out of range (1 to 86400 seconds)", d.as_secs()),
                ));
            }
        }
        Ok(())
    }
}
