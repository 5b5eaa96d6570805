//! The fabric: its model (nodes, ports, GUIDs), topology files, the sweeper
//! and the snapshot cache.

pub mod cache;
pub mod discover;
pub mod engine;
pub mod model;
pub mod sweep;
pub mod topology;
