//! The plan comparison's place in the agent: the plan file the
//! configuration names, else the baseline kept beside the state file.

use std::path::{Path, PathBuf};

pub use crate::cabling::state::baseline_path;

use super::AppError;
use crate::cabling::compare::CompareConfig;
use crate::cabling::watch::Watch;
use crate::config::Config;

/// The plan file the configuration names (`[topology] plan`; none until
/// the configuration has the key).
pub fn plan_file(_cfg: &Config) -> Option<PathBuf> {
    None
}

/// What the comparison is told: the health evaluator's recovery and
/// forget_after (a mismatch is a verdict like a link's health).
pub fn compare_config(cfg: &Config) -> CompareConfig {
    let h = cfg.health();
    CompareConfig {
        recovery: h.recovery,
        forget_after: h.forget_after,
    }
}

/// The comparison's driver: with the plan file, or with the baseline kept
/// beside `state_file`. A plan file that cannot be read is a start-up
/// error (its file, line and reason).
pub fn watch(cfg: &Config, state_file: Option<&Path>) -> Result<Watch, AppError> {
    let plan = match plan_file(cfg) {
        Some(p) => Some(crate::cabling::load_plan(&p).map_err(AppError::Plan)?),
        None => None,
    };
    Ok(Watch::new(
        compare_config(cfg),
        plan,
        state_file.map(crate::cabling::state::baseline_path),
    ))
}
