//! The plan comparison's place in the agent: the plan file the
//! configuration names, else the baseline kept beside the state file.

use std::path::{Path, PathBuf};

pub use crate::cabling::state::baseline_path;

use super::AppError;
use crate::cabling::compare::CompareConfig;
use crate::cabling::watch::Watch;
use crate::config::Config;

/// The plan file the configuration names (`[topology] plan`, resolved
/// against the configuration file's directory when it was read).
pub fn plan_file(cfg: &Config) -> Option<PathBuf> {
    cfg.topology.plan.clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_configured_plan_is_the_one_compared_and_a_bad_one_stops_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = Config::default();
        assert_eq!(plan_file(&cfg), None);
        let plan = dir.path().join("plan.csv");
        cfg.topology.plan = Some(plan.clone());
        assert_eq!(plan_file(&cfg), Some(plan.clone()));
        // A plan file that is not there: the start is refused, naming it.
        let Err(AppError::Plan(e)) = watch(&cfg, None) else {
            panic!("a missing plan file must stop the start");
        };
        assert!(e.to_string().contains("plan.csv"), "{e}");
        // A readable one is taken.
        std::fs::write(
            &plan,
            "A Node,A Port,Z Node,Z Port\nleaf07,13,node0413 mlx5_0,1\n",
        )
        .unwrap();
        assert!(watch(&cfg, None).is_ok());
    }
}
