//! The evaluator's driver, on the sweeper's thread after each publication:
//! it reads the wall clock, takes the acknowledgements in, stores the
//! verdicts in the snapshot, says in the log what changed, and keeps the
//! state file (every [`SAVE_EVERY`] and when it is dropped, as the sweeper
//! stops).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use tracing::{debug, info, warn};

use super::{Evaluator, HealthConfig, state};
use crate::fabric::cache::Cache;
use crate::ib::health::{Condition, Verdicts};

/// How often the state file is written.
pub const SAVE_EVERY: Duration = Duration::from_secs(300);

pub struct Watch {
    eval: Evaluator,
    path: Option<PathBuf>,
    saved_at: Option<Instant>,
    /// Where the acknowledgements taken in are written.
    events: Option<Arc<crate::events::Log>>,
}

/// Wall-clock milliseconds since the UNIX epoch.
pub fn wall_ms(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Watch {
    /// An evaluator taking up the state file at `path`, if there is one
    /// (a file that cannot be used is said in the log and left to be
    /// overwritten).
    pub fn new(cfg: HealthConfig, path: Option<PathBuf>) -> Watch {
        let mut eval = Evaluator::new(cfg);
        if let Some(p) = &path {
            match state::load(p) {
                Ok(saved) => {
                    info!(
                        ports = saved.ports.len(),
                        verdicts = saved.entries.len(),
                        "health state taken up from {}",
                        p.display()
                    );
                    // Its times are the file's word: none after now.
                    eval.restore(saved.clamped(wall_ms(std::time::SystemTime::now())));
                }
                Err(state::StateError::Io(e)) if !p.exists() => {
                    debug!("no health state file at {}: {e}", p.display());
                }
                Err(e) => warn!("health state file {} ignored: {e}", p.display()),
            }
        }
        Watch {
            eval,
            path,
            saved_at: None,
            events: None,
        }
    }

    /// Write the acknowledgements taken in into `log`.
    pub fn with_events(mut self, log: Arc<crate::events::Log>) -> Watch {
        self.events = Some(log);
        self
    }

    /// Evaluate the snapshot just published and store the verdicts in it.
    pub fn after_sweep(&mut self, cache: &Cache) {
        let snap = cache.load();
        let acks = cache.take_acks();
        let started = Instant::now();
        let now = super::At {
            mono_ms: started
                .saturating_duration_since(crate::time::origin())
                .as_millis() as u64,
            wall_ms: wall_ms(SystemTime::now()),
        };
        let Some(mut v) = self.eval.evaluate(&snap, now, &acks) else {
            return;
        };
        v.took_us = started.elapsed().as_micros() as u64;
        if let Some(log) = &self.events {
            super::events::acknowledged(log, &snap, &acks, now.wall_ms);
        }
        log_changes(&snap.health, &v);
        cache.store_verdicts(v);
        if self
            .saved_at
            .is_none_or(|t| started.duration_since(t) >= SAVE_EVERY)
        {
            self.save();
            self.saved_at = Some(started);
        }
    }

    fn save(&self) {
        let Some(p) = &self.path else {
            return;
        };
        if let Err(e) = self.eval.save(p) {
            warn!("cannot save the health state to {}: {e}", p.display());
        }
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.save();
    }
}

/// One line per verdict raised or cleared (the first 20 of a sweep, then a
/// count).
fn log_changes(old: &Verdicts, new: &Verdicts) {
    let mut said = 0;
    let mut more = 0;
    for e in new.ports.iter() {
        let before = old.port(e.guid, e.port).map_or(0, |o| o.mask());
        let raised = e.mask() & !before;
        for c in Condition::of_mask(raised) {
            if said < 20 {
                info!(
                    node = %e.guid,
                    port = e.port,
                    peer = ?e.peer.map(|(g, p)| format!("{g}/{p}")),
                    "link unhealthy: {}",
                    c.def().title
                );
                said += 1;
            } else {
                more += 1;
            }
        }
    }
    for o in old.ports.iter() {
        let after = new.port(o.guid, o.port).map_or(0, |e| e.mask());
        for c in Condition::of_mask(o.mask() & !after) {
            if said < 20 {
                info!(node = %o.guid, port = o.port, "link healthy again: {}", c.def().title);
                said += 1;
            } else {
                more += 1;
            }
        }
    }
    if more > 0 {
        info!(
            "{more} more health verdicts raised or cleared in sweep {}",
            new.sweep
        );
    }
}
