//! The fabric at run time: discovery, the MAD engine, the sweeper, the write
//! path and the snapshot cache.

pub mod cache;
pub mod control;
pub mod discover;
pub mod doca_ids;
pub mod engine;
pub mod federation;
pub mod fold;
pub mod hc;
pub mod local;
pub mod mads;
pub mod persist;
pub mod plan;
pub mod record;
pub mod settings;
pub mod state;
pub mod strikes;
pub mod sweep;
#[cfg(test)]
mod tests;
pub mod window;
