//! The fabric as designed: the plan files' parsers and the comparison of
//! the fabric as found with its plan ([`compare`]), whose verdicts every
//! face reads from the snapshot ([`crate::fabric::cache::Snapshot::plan`]).

pub mod compare;
pub mod state;
pub mod watch;

use std::path::Path;

use crate::ib::cabling::{Plan, PlanSource};

/// Why a plan file cannot be used: its file, line and reason.
pub type PlanError = crate::ib::topology::TopologyError;

/// Read a plan file (ibnetdiscover's format).
pub fn load_plan(path: &Path) -> Result<Plan, PlanError> {
    let fabric = crate::ib::topology::load(path)?;
    Ok(Plan::from_fabric(&fabric, PlanSource::Ibnetdiscover))
}
