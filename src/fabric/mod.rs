//! The fabric: its model (nodes, ports, GUIDs), topology files, the sweeper
//! and the snapshot cache.

pub mod cache;
pub mod control;
pub mod engine;
pub mod model;
pub mod state;
pub mod sweep;
pub mod topology;
