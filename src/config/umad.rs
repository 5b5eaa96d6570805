//! `[umad]`: the local CA and port of the umad backend.

use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::{ConfigError, milliseconds, non_empty};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UmadSection {
    /// CA name as in /sys/class/infiniband (e.g. `mlx5_0`); `None` (an
    /// empty string in the file) = the first CA with an active port.
    #[serde(deserialize_with = "non_empty")]
    pub ca: Option<String>,
    /// Port number on the CA; `None` (0 in the file) = the first active
    /// port.
    #[serde(deserialize_with = "non_zero")]
    pub port: Option<u8>,
    /// Deadline of one directed-route SMP during discovery
    /// (`discovery_timeout_ms` in the file).
    #[serde(rename = "discovery_timeout_ms", deserialize_with = "milliseconds")]
    pub discovery_timeout: Duration,
    /// How often the device's threads look at their stop flag (not in the
    /// file: the agent keeps the default, a one-shot command that closes
    /// the device at once gives a short one).
    #[serde(skip)]
    pub reader_poll: Duration,
}

impl Default for UmadSection {
    fn default() -> Self {
        UmadSection {
            ca: None,
            port: None,
            discovery_timeout: Duration::from_millis(500),
            reader_poll: crate::transport::umad::POLL,
        }
    }
}

fn non_zero<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let n = u8::deserialize(d)?;
    Ok((n != 0).then_some(n))
}

impl UmadSection {
    /// Check what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(ca) = &self.ca
            && (ca.is_empty() || ca.contains(['/', '\0']))
        {
            return Err(ConfigError::at(
                "umad",
                "ca",
                format!("`{ca}` is not a CA name (e.g. mlx5_0)"),
            ));
        }
        Ok(())
    }
}
