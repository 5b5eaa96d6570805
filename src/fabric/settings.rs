//! The sweep's settings (the configuration's `[fabric]` keys that shape
//! a sweep), apart from the parts that follow them.

use std::sync::Arc;
use std::time::Duration;

use crate::ib::names::Names;

/// How long a node may stay silent before it is forgotten, unless
/// configured (`fabric.forget_after`): 7 days.
pub const FORGET_AFTER: Duration = Duration::from_secs(7 * 86_400);

#[derive(Clone, Debug)]
pub struct SweepConfig {
    /// Time from the start of one sweep to the start of the next.
    pub interval: Duration,
    /// Consecutive failed sweeps after which a node is marked unreachable.
    pub unreachable_after: u32,
    /// Keep an unreachable node's rows (with their last values) or drop them.
    pub keep_unreachable: bool,
    /// Read the optional attributes [`crate::pm::optional::OPTIONAL_ATTRS`]
    /// where nodes answer.
    pub optional_attributes: bool,
    /// Read them on every this many sweeps (the first sweep, then every
    /// `optional_every`-th); their readings are kept in between.
    pub optional_every: u32,
    /// Clear PortCounters fields past 75% of their range.
    pub clear_near_overflow: bool,
    /// Log one line every this many sweeps saying the sweeps are healthy
    /// (0: never).
    pub health_every: u32,
    /// Send PM MADs (false: the doca backend alone, which has no MAD
    /// transport; sweeps then only count and publish).
    pub mads: bool,
    /// A node whose PMA has not answered for this long is forgotten: its
    /// state, record and rows go (None: never).
    pub forget_after: Option<Duration>,
    /// The node-name-map: the names the published records carry, read
    /// again (when its file changed) as the sweep publishes.
    pub names: Arc<Names>,
}

impl Default for SweepConfig {
    fn default() -> Self {
        SweepConfig {
            interval: Duration::from_secs(10),
            unreachable_after: 3,
            keep_unreachable: true,
            optional_attributes: true,
            optional_every: 1,
            clear_near_overflow: false,
            health_every: 60,
            mads: true,
            forget_after: Some(FORGET_AFTER),
            names: Arc::default(),
        }
    }
}
