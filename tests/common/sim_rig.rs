//! The simulator's tests drive the simulated PMAs through encoded MADs with
//! the library's test-support rig. Include with
//! `#[path = "common/sim_rig.rs"] mod sim_rig;`.
#![allow(dead_code)]

pub use ibpm_agentx::rig::PmaRig as Rig;
