//! `[agentx]`: the connection to snmpd's AgentX master.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use super::{from_str, seconds};
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
