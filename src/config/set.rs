//! `[set]`: SNMP SETs; the write path's settings.

use serde::Deserialize;

use super::Config;
use crate::fabric::control::ControlConfig;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[derive(Default)]
pub struct SetConfig {
    /// Accept SNMP SETs (clear counters, select ports, run samples).
    pub allow: bool,
}

impl Config {
    /// The write path's settings (SETs and the sample poller): not
    /// configurable; their deadline stays well under snmpd's 1 s timeout.
    pub fn control(&self) -> ControlConfig {
        ControlConfig::default()
    }
}
