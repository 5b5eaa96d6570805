//! The evaluator's driver, on the sweeper's thread after each publication:
//! it reads the time from its [`Clock`] (the sweeper's: monotonic for the
//! windows, wall for the times shown), takes the acknowledgements in, stores the
//! verdicts in the snapshot, says in the log what changed, and keeps the
//! state file (every [`SAVE_EVERY`] and when it is dropped, as the sweeper
//! stops).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::time::Clock;

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
    clock: Clock,
}

/// Wall-clock milliseconds since the UNIX epoch.
pub fn wall_ms(t: SystemTime) -> u64 {
    crate::time::unix_ms(t)
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
                    eval.restore(saved.clamped(wall_ms(Clock::system().wall())));
                }
                Err(e) if e.is_missing() => {
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
            clock: Clock::system(),
        }
    }

    /// Write the acknowledgements taken in into `log`.
    pub fn with_events(mut self, log: Arc<crate::events::Log>) -> Watch {
        self.events = Some(log);
        self
    }

    /// The watch reads the time from `clock` (the sweeper's).
    pub fn with_clock(mut self, clock: Clock) -> Watch {
        self.clock = clock;
        self
    }

    /// Evaluate the snapshot just published and store the verdicts in it.
    pub fn after_sweep(&mut self, cache: &Cache) {
        let snap = cache.load();
        let acks = cache.take_acks();
        let (started, wall) = self.clock.both();
        let now = super::At {
            mono_ms: started
                .saturating_duration_since(crate::time::origin())
                .as_millis() as u64,
            wall_ms: wall_ms(wall),
        };
        let Some(mut v) = self.eval.evaluate(&snap, now, &acks) else {
            return;
        };
        v.took_us = self
            .clock
            .now()
            .saturating_duration_since(started)
            .as_micros() as u64;
        if let Some(log) = &self.events {
            super::events::acknowledged(log, &snap, &acks, now.wall_ms);
        }
        log_changes(&snap.health, &v);
        cache.store_verdicts(v);
        if self
            .saved_at
            .is_none_or(|t| started.saturating_duration_since(t) >= SAVE_EVERY)
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    use super::*;
    use crate::fabric::cache::Snapshot;
    use crate::fabric::record::NodeRecord;
    use crate::ib::health::Ack;
    use crate::ib::{Guid, LinkHealth};

    /// Two switches cabled port to port, the link degraded or not.
    fn snap(sweep: u64, degraded: bool) -> Snapshot {
        let nodes = (0..2)
            .map(|i| {
                let mut r = NodeRecord::test_switch(i, 1, |q| (Guid(0x100 + (i ^ 1)), q));
                if degraded {
                    r.ports_mut()[0].assessment.health = Some(LinkHealth::SpeedDegraded);
                }
                Arc::new(r)
            })
            .collect();
        Snapshot {
            sweep,
            interval: Duration::from_secs(10),
            nodes,
            ..Default::default()
        }
    }

    /// The agent's driver on virtual time: it evaluates each publication,
    /// takes acknowledgements in, keeps the state file every
    /// [`SAVE_EVERY`] and when dropped, and runs its windows on the
    /// monotonic clock whatever the wall clock does.
    #[test]
    fn the_watch_on_virtual_time() {
        let mono = Arc::new(AtomicU64::new(0));
        let step = Arc::new(AtomicI64::new(0));
        let t0 = Instant::now();
        let w0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_944_802);
        let (m1, m2, s2) = (Arc::clone(&mono), Arc::clone(&mono), Arc::clone(&step));
        let clock = Clock::with_wall(
            move || t0 + Duration::from_millis(m1.load(Ordering::SeqCst)),
            move || {
                let t = w0 + Duration::from_millis(m2.load(Ordering::SeqCst));
                let d = s2.load(Ordering::SeqCst);
                let by = Duration::from_millis(d.unsigned_abs());
                if d >= 0 { t + by } else { t - by }
            },
        );
        let advance = |ms: u64| mono.fetch_add(ms, Ordering::SeqCst);
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.health");
        let cache = Cache::new();
        let mut w = Watch::new(HealthConfig::default(), Some(path.clone())).with_clock(clock);
        let degraded = |c: &Cache| {
            c.load()
                .health
                .port(Guid(0x100), 1)
                .is_some_and(|v| v.mask() != 0)
        };
        let mut sweep = 0;
        let mut sweep_once = |c: &Cache, w: &mut Watch, bad: bool| {
            sweep += 1;
            advance(10_000);
            c.publish(snap(sweep, bad));
            w.after_sweep(c);
        };
        sweep_once(&cache, &mut w, true);
        assert!(degraded(&cache));
        assert_eq!(
            cache.load().health.at,
            wall_ms(w0) + 10_000,
            "the wall reading"
        );
        assert!(path.exists(), "saved at the first evaluation");
        // An acknowledgement: seen at once, taken in at the next sweep.
        let ack = Ack {
            guid: Guid(0x100),
            port: 1,
            condition: None,
        };
        assert!(cache.acknowledge(ack));
        assert!(!degraded(&cache));
        sweep_once(&cache, &mut w, false);
        assert!(!degraded(&cache), "taken in");
        assert!(cache.take_acks().is_empty());
        // Raised again, then absent: its recovery (15 min) runs on the
        // monotonic clock; the wall clock stepped an hour on ages nothing.
        sweep_once(&cache, &mut w, true);
        assert!(degraded(&cache));
        std::fs::remove_file(&path).unwrap();
        step.store(3_600_000, Ordering::SeqCst);
        for _ in 0..80 {
            sweep_once(&cache, &mut w, false);
            assert!(degraded(&cache), "in its recovery window");
        }
        // Shown on the wall clock, stepped.
        let h = Arc::clone(&cache.load().health);
        let since = h.port(Guid(0x100), 1).unwrap().since().unwrap();
        assert_eq!(h.wall(since), wall_ms(w0) + 30_000 + 3_600_000);
        assert!(
            path.exists(),
            "saved again after SAVE_EVERY of virtual time"
        );
        for _ in 0..20 {
            sweep_once(&cache, &mut w, false);
        }
        assert!(!degraded(&cache), "recovered after 15 minutes");
        std::fs::remove_file(&path).unwrap();
        drop(w);
        let saved = state::load(&path).unwrap();
        assert_eq!(saved.ports.len(), 2, "saved when dropped");
    }
}
