//! The fabric: its model (nodes, ports, GUIDs), topology files, the sweeper
//! and the snapshot cache.

pub mod model;
pub mod topology;
