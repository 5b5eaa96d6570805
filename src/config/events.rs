//! The `[events]` section: the event log's bounds.

use std::time::Duration;

use serde::Deserialize;

use super::{Config, seconds};
use crate::events::Bounds;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct EventsSection {
    /// Keep the event log at all.
    pub enabled: bool,
    /// Events held at most.
    pub capacity: usize,
    /// Events older than this go.
    #[serde(deserialize_with = "seconds")]
    pub max_age: Duration,
}

impl Default for EventsSection {
    fn default() -> Self {
        let b = Bounds::default();
        EventsSection {
            enabled: true,
            capacity: b.capacity,
            max_age: Duration::from_millis(b.max_age_ms),
        }
    }
}

impl Config {
    /// The event log's bounds.
    pub fn events(&self) -> Bounds {
        Bounds {
            capacity: self.events.capacity,
            max_age_ms: self.events.max_age.as_millis() as u64,
        }
    }
}
