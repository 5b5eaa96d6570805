//! `[fabric]`: where the counters come from and how the sweeper reads
//! them; its conversion to the sweeper's settings.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use super::{Config, ValueError, from_str, limits, path};
use crate::fabric::settings::SweepConfig;

word_enum! {
    /// Where counters come from (`fabric.backend`).
    pub enum FabricBackend (unknown: s => format!("unknown backend `{s}` (known: sim, umad, doca)")) {
        /// The built-in simulated fabric.
        #[default]
        Sim = "sim",
        /// A real fabric through /dev/infiniband/umadN (or ibsim under
        /// umad2sim).
        Umad = "umad",
        /// The local adapters' ports alone, from DOCA telemetry diag.
        Doca = "doca",
    }
}

word_enum! {
    /// What happens to an unreachable node's rows (`fabric.unreachable_rows`).
    pub enum UnreachableRows (unknown: s => format!("`{s}` is neither `keep` nor `drop`")) {
        /// Keep them with their last values.
        #[default]
        Keep = "keep",
        /// Drop them until the node answers again.
        Drop = "drop",
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FabricConfig {
    #[serde(deserialize_with = "from_str")]
    pub backend: FabricBackend,
    /// Topology file (ibnetdiscover/ibsim format) for the simulator; `None`
    /// (an empty string in the file) = the built-in default fabric. A
    /// relative path in a file is relative to that file's directory.
    #[serde(deserialize_with = "path")]
    pub topology: Option<PathBuf>,
    /// From the start of one sweep to the start of the next (seconds in
    /// the file).
    #[serde(deserialize_with = "fractional_seconds")]
    pub sweep_interval: Duration,
    /// Failed sweeps in a row after which a node is unreachable.
    pub unreachable_after: u32,
    #[serde(deserialize_with = "from_str")]
    pub unreachable_rows: UnreachableRows,
    /// Read the optional PM attributes 0x15..0x1C, 0x1F and 0x30..0x37
    /// (error details, per-VL counters, FEC, congestion control) from
    /// nodes that answer them.
    pub optional_attributes: bool,
    /// Read the optional attributes this often (seconds in the file,
    /// rounded to whole sweeps; 0 = every sweep).
    #[serde(deserialize_with = "optional_seconds")]
    pub optional_interval: Option<Duration>,
    /// Clear a PortCounters field once it passes 75% of its range (as
    /// opensm's PerfMgr does). Off by default: other tools read the same
    /// counters.
    pub clear_near_overflow: bool,
    /// Discover the fabric again this often (seconds in the file, 0 =
    /// never): new and moved links, port state, width and speed (every
    /// PortInfo is read again), nodes that appeared.
    #[serde(deserialize_with = "optional_seconds")]
    pub rediscover_interval: Option<Duration>,
    /// Where the 64-bit totals are kept across restarts; `None` (an empty
    /// string in the file) = `$STATE_DIRECTORY/totals` when the service
    /// manager sets STATE_DIRECTORY (systemd's StateDirectory=), else no
    /// state file. "off" = none.
    #[serde(deserialize_with = "path")]
    pub state_file: Option<PathBuf>,
    /// Read every port's PortInfo again this often, along the known links
    /// (seconds in the file, 0 = never): port state, width and speed
    /// between rediscoveries.
    #[serde(deserialize_with = "optional_seconds")]
    pub portinfo_interval: Option<Duration>,
    /// A node whose PMA has not answered for this long (seconds in the
    /// file, 0 = never) leaves the tables, the metrics and the state file.
    #[serde(deserialize_with = "optional_seconds")]
    pub forget_after: Option<Duration>,
    /// The node-name-map (rdma-core's format, [`crate::ib::names`]) that
    /// names nodes in every face; `None` (an empty string in the file) =
    /// rdma-core's default map when that file exists. A relative path is
    /// relative to the configuration file's directory.
    #[serde(deserialize_with = "path")]
    pub node_name_map: Option<PathBuf>,
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            backend: FabricBackend::Sim,
            topology: None,
            sweep_interval: Duration::from_secs(10),
            unreachable_after: 3,
            unreachable_rows: UnreachableRows::Keep,
            optional_attributes: true,
            optional_interval: None,
            clear_near_overflow: false,
            rediscover_interval: Some(Duration::from_secs(60)),
            state_file: None,
            portinfo_interval: Some(Duration::from_secs(10)),
            forget_after: Some(crate::fabric::settings::FORGET_AFTER),
            node_name_map: None,
        }
    }
}

/// `fabric.sweep_interval`: seconds, in the range of
/// [`limits::SWEEP_INTERVAL`].
pub fn parse_sweep_interval(secs: f64) -> Result<Duration, ValueError> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|&d| limits::SWEEP_INTERVAL.contains(limits::fractional_seconds(d)))
        .ok_or(ValueError::IntervalRange(secs))
}

/// `--sweep-interval SECONDS` on the command line.
pub fn sweep_interval_arg(s: &str) -> Result<Duration, ValueError> {
    let secs: f64 = s
        .parse()
        .map_err(|_| ValueError::NotSeconds(s.to_string()))?;
    parse_sweep_interval(secs)
}

/// Whole seconds, 0 for `None` ([`limits::LIMITS`] holds their range).
fn optional_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Duration>, D::Error> {
    let s = u64::deserialize(d)?;
    Ok((s != 0).then(|| Duration::from_secs(s)))
}

/// Seconds with a fraction: a value no duration holds (negative, not a
/// number, too large) is out of the key's range.
fn fractional_seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let secs = f64::deserialize(d)?;
    Duration::try_from_secs_f64(secs)
        .map_err(|_| de::Error::custom(ValueError::IntervalRange(secs)))
}

impl Config {
    pub fn sweep_interval(&self) -> Duration {
        self.fabric.sweep_interval
    }

    pub fn topology_path(&self) -> Option<PathBuf> {
        self.fabric.topology.clone()
    }

    /// Sweeps per read of the optional attributes: `optional_interval`
    /// over `sweep_interval`, rounded, at least 1.
    fn optional_every(&self) -> u32 {
        let sweep = self.fabric.sweep_interval.as_secs_f64();
        match self.fabric.optional_interval {
            Some(d) if sweep > 0.0 => (d.as_secs_f64() / sweep).round().clamp(1.0, 1e6) as u32,
            _ => 1,
        }
    }

    /// The sweeper's settings.
    pub fn sweep(&self) -> SweepConfig {
        SweepConfig {
            interval: self.fabric.sweep_interval,
            unreachable_after: self.fabric.unreachable_after,
            keep_unreachable: self.fabric.unreachable_rows == UnreachableRows::Keep,
            optional_attributes: self.fabric.optional_attributes,
            optional_every: self.optional_every(),
            clear_near_overflow: self.fabric.clear_near_overflow,
            health_every: self.log.health_every,
            mads: self.fabric.backend != FabricBackend::Doca,
            forget_after: self.fabric.forget_after,
            names: std::sync::Arc::clone(&self.names),
        }
    }
}
