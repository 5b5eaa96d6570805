//! DOCA telemetry diag: the diagnostic counters of a local ConnectX-7 /
//! BlueField-3 (and later) adapter, sampled by the device itself.
//!
//! `decode` reads sample buffers (pure); [`DATA_IDS`] is the one table of
//! the data IDs the agent asks for and the 64-bit counter each feeds (it
//! lives with the counters, in `fabric::doca_ids`, which the sweeper's
//! state reads too).

pub mod decode;
pub mod local;
pub mod sampler;
pub mod sys;

pub use crate::fabric::doca_ids::{DATA_IDS, DOCA_SLOTS, DataId, describe, lookup};
