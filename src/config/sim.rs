//! `[sim]`: the simulated fabric's traffic.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, de};

use super::NodeKind;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of the simulated traffic.
    pub seed: u64,
    /// Counters advance with simulated traffic (false: frozen).
    pub traffic: bool,
    /// Node types whose simulated PMAs have 64-bit error counters
    /// (ClassPortInfo CapabilityMask2 bit 1).
    #[serde(deserialize_with = "vec_from_str")]
    pub wide_error_counters: Vec<NodeKind>,
    /// Scripted faults for a demonstration: a flapping link, an erroring
    /// port and a degraded link ([`crate::sim::script`]).
    pub faults: bool,
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            traffic: true,
            wide_error_counters: vec![NodeKind::Ca],
            faults: false,
        }
    }
}

/// A list of words, each parsed with `FromStr`.
fn vec_from_str<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| s.parse().map_err(de::Error::custom))
        .collect()
}
