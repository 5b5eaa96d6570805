//! The comparison's driver, on the sweeper's thread after each publication
//! (beside the health evaluator's): it reads the wall clock, stores the
//! verdicts in the snapshot, says in the log what was raised and cleared,
//! keeps the baseline's file, and hands the changes back to its caller
//! (the place an event log takes them from).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use tracing::{debug, info, warn};

use super::compare::{CompareConfig, Comparison, PlanChange};
use super::state;
use crate::fabric::cache::Cache;
use crate::ib::cabling::{Plan, PlanVerdict};

pub struct Watch {
    cmp: Comparison,
    /// Where the baseline is kept (None: a plan file is given, or no
    /// state file).
    baseline: Option<PathBuf>,
}

fn wall_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Watch {
    /// A comparison with `plan` (from `[topology] plan`), or else with the
    /// baseline kept at `baseline` (taken up when it can be; a file that
    /// cannot be used is said in the log and replaced by the fabric as
    /// found).
    pub fn new(cfg: CompareConfig, plan: Option<Plan>, baseline: Option<PathBuf>) -> Watch {
        if let Some(p) = &plan {
            info!(
                nodes = p.nodes.len(),
                links = p.links.len(),
                "the fabric is compared with its plan ({})",
                p.source.name()
            );
            return Watch {
                cmp: Comparison::new(cfg, Some(p)),
                baseline: None,
            };
        }
        let mut saved = None;
        if let Some(path) = &baseline {
            match state::load(path) {
                Ok(p) => {
                    info!(
                        nodes = p.nodes.len(),
                        links = p.links.len(),
                        "the fabric is compared with its baseline from {}",
                        path.display()
                    );
                    saved = Some(p);
                }
                Err(state::StateError::Frame(e)) if e.is_missing() => {
                    debug!("no baseline at {}: {e}", path.display());
                }
                Err(e) => warn!(
                    "baseline file {} ignored (the fabric as found is the baseline): {e}",
                    path.display()
                ),
            }
        }
        if saved.is_none() {
            info!("no plan: the fabric as first found is the baseline it is compared with");
        }
        Watch {
            cmp: Comparison::new(cfg, saved.as_ref()),
            baseline,
        }
    }

    /// Compare the snapshot just published (when discovery changed it),
    /// store the verdicts in it, and give what was raised and cleared.
    pub fn after_sweep(&mut self, cache: &Cache) -> Vec<PlanChange> {
        let snap = cache.load();
        let started = Instant::now();
        let Some(o) = self.cmp.evaluate(&snap, wall_ms(SystemTime::now())) else {
            return Vec::new();
        };
        debug!(
            us = started.elapsed().as_micros() as u64,
            verdicts = o.verdicts.verdicts.len(),
            "fabric compared with its plan"
        );
        log_changes(&o.changes);
        cache.set_plan(Arc::new(o.verdicts));
        if self.cmp.take_baseline_changed()
            && let (Some(path), Some(plan)) = (&self.baseline, self.cmp.plan())
        {
            match state::save(path, &plan) {
                Ok(()) => debug!(
                    nodes = plan.nodes.len(),
                    links = plan.links.len(),
                    "baseline saved to {}",
                    path.display()
                ),
                Err(e) => warn!("cannot save the baseline to {}: {e}", path.display()),
            }
        }
        o.changes
    }
}

/// One line per verdict raised or cleared (the first 20, then a count).
fn log_changes(changes: &[PlanChange]) {
    let end = |v: &PlanVerdict| crate::ib::Escaped(v.name.as_deref().unwrap_or("")).to_string();
    for c in changes.iter().take(20) {
        match c {
            PlanChange::Raised(v) => info!(
                node = %v.guid,
                port = v.port,
                name = %end(v),
                planned = ?v.planned.as_ref().map(|e| e.port),
                found = ?v.found.map(|(g, p)| format!("{g}/{p}")),
                "not as planned: {}",
                v.kind.def().title
            ),
            PlanChange::Cleared(v) => info!(
                node = %v.guid,
                port = v.port,
                name = %end(v),
                "as planned again: {}",
                v.kind.def().title
            ),
        }
    }
    if changes.len() > 20 {
        info!(
            "{} more plan verdicts raised or cleared",
            changes.len() - 20
        );
    }
}
