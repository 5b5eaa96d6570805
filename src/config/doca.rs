//! `[doca]`: DOCA telemetry diag on the local NVIDIA adapters.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use super::limits::{self, Num};
use super::{ConfigError, from_str};

word_enum! {
    /// The timestamp source of DOCA samples (`doca.timestamp_source`).
    pub enum DocaTimestamps (unknown: s => format!("`{s}` is neither `frc` nor `rtc`")) {
        /// The device's free-running counter.
        #[default]
        Frc = "frc",
        /// The device's real-time clock.
        Rtc = "rtc",
    }
}

/// `[doca]`: DOCA telemetry diag on the local NVIDIA adapters.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct DocaSection {
    /// With `fabric.backend = "umad"`: the local adapters' data, packet
    /// and discard counters come from DOCA (the backend `doca` needs no
    /// `enabled`).
    pub enabled: bool,
    /// The DOCA libraries, loaded at run time in this order (file names
    /// are looked up by the dynamic linker; paths are opened as they
    /// are). The environment variable `IBPM_DOCA_LIBRARY` (one file that
    /// exports every function) replaces them.
    pub libraries: Vec<String>,
    /// ibdev names of the devices to sample (`mlx5_0`); empty: every
    /// device DOCA lists that is PCI function 0 (the guide recommends
    /// PF0).
    pub devices: Vec<String>,
    /// The device's sample period (`sample_period_ms`, fractions allowed:
    /// 0.1 = 100 us); the agent reads the samples as often.
    #[serde(
        rename = "sample_period_ms",
        deserialize_with = "fractional_milliseconds"
    )]
    pub sample_period: Duration,
    /// Output format 0, 1 or 2 (0: data IDs and timestamps per value;
    /// 1: 64-bit values; 2: 32-bit values, which wrap quickly).
    pub output_format: u8,
    #[serde(deserialize_with = "from_str")]
    pub timestamp_source: DocaTimestamps,
    /// Log2 of the samples the device's buffer holds.
    pub log_max_samples: u8,
    /// Take the counters over from another telemetry user (a crashed
    /// process that kept them, or a running one).
    pub force_ownership: bool,
    /// Where sysfs is (`/sys`): node GUIDs, firmware versions, ports.
    pub sysfs: PathBuf,
    /// Where the fwctl device nodes are (`/dev/fwctl`).
    pub fwctl: PathBuf,
}

impl Default for DocaSection {
    fn default() -> Self {
        DocaSection {
            enabled: false,
            libraries: vec![
                "libdoca_common.so.2".into(),
                "libdoca_telemetry.so.2".into(),
            ],
            devices: Vec::new(),
            sample_period: Duration::from_millis(100),
            output_format: 1,
            timestamp_source: DocaTimestamps::Frc,
            log_max_samples: 6,
            force_ownership: false,
            sysfs: PathBuf::from("/sys"),
            fwctl: PathBuf::from("/dev/fwctl"),
        }
    }
}

impl DocaSection {
    /// The library files to load: `IBPM_DOCA_LIBRARY` when set, else
    /// `libraries`.
    pub fn library_files(&self) -> Vec<String> {
        match std::env::var("IBPM_DOCA_LIBRARY") {
            Ok(f) if !f.is_empty() => vec![f],
            _ => self.libraries.clone(),
        }
    }
}

/// Milliseconds with a fraction: a value no duration holds (negative, not
/// a number, too large) is out of the key's range.
fn fractional_milliseconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    let ms = f64::deserialize(d)?;
    Duration::try_from_secs_f64(ms / 1000.0)
        .map_err(|_| de::Error::custom(limits::SAMPLE_PERIOD.out_of_range(Num::Fraction(ms))))
}

impl DocaSection {
    /// Check what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if let Some(d) = self
            .devices
            .iter()
            .find(|d| d.is_empty() || d.contains(['/', '\0']))
        {
            return Err(ConfigError::at(
                "doca",
                "devices",
                format!("`{d}` is not a device name (e.g. mlx5_0)"),
            ));
        }
        if self.libraries.is_empty() {
            return Err(ConfigError::at("doca", "libraries", "names no library"));
        }
        Ok(())
    }
}
