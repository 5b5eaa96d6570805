//! The `[notify]` section and its `[[notify.threshold]]` rules: what the
//! notifier sends, where, and the thresholds it watches.

use std::net::SocketAddr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use super::{Config, ConfigError, NodeKind, Secret, from_str, non_empty, seconds, some_from_str};
use crate::ib::NodeType;
use crate::notify::NotifyConfig;
use crate::notify::rules::{CounterName, NodeMatch, ThresholdRule};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct NotifySection {
    /// Send notifications at all.
    pub enabled: bool,
    /// The window counter rates are sampled over (whole seconds in the
    /// file).
    #[serde(deserialize_with = "seconds")]
    pub window: Duration,
    /// Notifications of one family (node, port, threshold, discontinuity,
    /// sweep, subnet) per sweep; the rest are counted as suppressed. 0 = no limit.
    pub limit_per_sweep: u32,
    /// Notifications kept while snmpd is away; beyond that the oldest are
    /// dropped and counted.
    pub queue: usize,
    /// Without AgentX (`--no-agentx`, `agentx.enabled = false`): SNMPv2c
    /// trap receivers, `IP:PORT` each.
    #[serde(deserialize_with = "sinks")]
    pub sinks: Vec<SocketAddr>,
    /// The community of those traps (a secret: never printed).
    pub community: Secret,
    /// Send them as SNMPv3 traps of this `[[snmp.user]]` instead (at the
    /// strongest level its keys allow; this agent is the authoritative
    /// engine); `None` (an empty string): SNMPv2c.
    #[serde(deserialize_with = "non_empty")]
    pub user: Option<String>,
    /// `[[notify.threshold]]` rules, later ones win.
    pub threshold: Vec<ThresholdEntry>,
}

impl Default for NotifySection {
    fn default() -> Self {
        let n = NotifyConfig::default();
        NotifySection {
            enabled: true,
            window: n.window,
            limit_per_sweep: n.limit_per_sweep,
            queue: crate::agentx::SessionConfig::default().notify_queue,
            sinks: Vec::new(),
            community: Secret::from("public"),
            user: None,
            threshold: Vec::new(),
        }
    }
}

impl Config {
    /// The notification evaluator's settings.
    pub fn notify(&self) -> NotifyConfig {
        NotifyConfig {
            window: self.notify.window,
            limit_per_sweep: self.notify.limit_per_sweep,
            rules: self
                .notify
                .threshold
                .iter()
                .map(ThresholdEntry::rule)
                .collect(),
        }
    }
}

/// `notify.sinks`: a list of `IP:PORT`.
fn sinks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<SocketAddr>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| {
            s.parse::<SocketAddr>()
                .map_err(|_| de::Error::custom(format!("`{s}` is not IP:PORT")))
        })
        .collect()
}

/// One `[[notify.threshold]]` (checked with the others by
/// [`Config::parse`], so that an error names the rule's own line).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ThresholdEntry {
    #[serde(deserialize_with = "from_str")]
    pub counter: CounterName,
    pub rising: Option<u64>,
    pub falling: Option<u64>,
    #[serde(default, deserialize_with = "some_from_str")]
    pub node_type: Option<NodeKind>,
    #[serde(default, deserialize_with = "some_from_str")]
    pub node: Option<NodeMatch>,
    #[serde(default)]
    pub ports: Vec<u8>,
}

impl ThresholdEntry {
    /// What is wrong with the rule.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        let err = |key, reason: String| Err(ConfigError::at("notify.threshold", key, reason));
        let name = crate::notify::thresholds()[self.counter.0].name;
        if self.rising.is_none() && self.falling.is_none() {
            return err(
                "counter",
                format!("the rule for {name} sets neither `rising` nor `falling`"),
            );
        }
        if let (Some(r), Some(f)) = (self.rising, self.falling)
            && r > 0
            && f > r
        {
            return err(
                "falling",
                format!("{f} is above the rule's rising threshold {r}"),
            );
        }
        if self.ports.iter().any(|&p| p == 0 || p == 255) {
            return err("ports", "port numbers are 1 to 254".into());
        }
        Ok(())
    }

    fn rule(&self) -> ThresholdRule {
        ThresholdRule {
            counter: self.counter,
            rising: self.rising,
            falling: self.falling,
            node_type: self.node_type.map(NodeType::from),
            node: self.node.clone(),
            ports: self.ports.clone(),
        }
    }
}
