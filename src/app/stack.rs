//! The first step of the wiring, shared by the agent and the commands that
//! sweep on their own (`health --sweep`, `topology check --sweep`): a
//! sweeping stack per subnet, publishing into the cache every face reads.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use tracing::{info, warn};

use super::{AppError, FabricSource, Running, Shutdown, SubnetBackend};
use crate::config::Config;
use crate::fabric::cache::Cache;
use crate::fabric::control::Controller;
use crate::fabric::engine::Engine;
use crate::fabric::federation::Federation;
use crate::fabric::state::SharedState;
use crate::fabric::sweep::{AfterPublish, Sweeper};
use crate::ib::subnet::SubnetView;
use crate::time::Clock;

/// One subnet's sweeping stack: its state and sweeper, its write path,
/// where its fabric is discovered again, and the cache it publishes into.
pub(super) struct Stack {
    pub(super) sweeper: Sweeper,
    pub(super) controller: Arc<Controller>,
    pub(super) source: Option<Box<dyn FabricSource>>,
    pub(super) cache: Arc<Cache>,
}

/// Every subnet's stack. With one subnet it publishes into the public
/// cache; with several each publishes into a cache of its own and the
/// federation merges them into the public one.
pub struct Stacks {
    pub(super) list: Vec<Stack>,
    federation: Option<Arc<Federation>>,
}

impl Stacks {
    /// A stack per subnet, publishing into `public`, each subnet's 64-bit
    /// totals restored from and saved to a file beside `totals` (none when
    /// not given).
    pub fn new(
        cfg: &Config,
        subnets: Vec<SubnetBackend>,
        public: &Arc<Cache>,
        totals: Option<&Path>,
        shutdown: &Shutdown,
        discovered: Instant,
    ) -> Stacks {
        let federation = (subnets.len() > 1).then(|| Federation::new(Arc::clone(public)));
        let list = subnets
            .into_iter()
            .enumerate()
            .map(|(index, subnet)| {
                let member = match &federation {
                    Some(f) => f.add_member(),
                    None => Arc::clone(public),
                };
                let totals = totals.map(|p| subnet_file(p, index));
                let stack = Stack::new(cfg, subnet, index, member, totals, shutdown, discovered);
                // A member's drivers merge the subnets after they publish.
                if let Some(f) = &federation {
                    stack.sweeper.state().join(f);
                }
                stack
            })
            .collect();
        Stacks { list, federation }
    }

    /// The first subnet's sweeper clock: the evaluators run on its thread.
    pub fn clock(&self) -> Option<&Clock> {
        self.list.first().map(|s| s.sweeper.clock())
    }

    /// Run `evaluate` with the public cache after each publication: with
    /// one subnet after its sweeps, with several after each round of the
    /// federation, the members' sweeps spread over the interval.
    pub fn after_publish(&mut self, cfg: &Config, evaluate: AfterPublish) {
        let Some(f) = &self.federation else {
            if let Some(s) = self.list.first_mut() {
                s.sweeper.set_after_publish(evaluate);
            }
            return;
        };
        f.set_after_round(evaluate);
        let n = self.list.len() as u32;
        for (i, s) in self.list.iter_mut().enumerate() {
            let f = Arc::clone(f);
            s.sweeper
                .set_after_publish(Box::new(move |_| f.member_swept()));
            s.sweeper.trim_after_sweeps_only();
            s.sweeper
                .set_phase(cfg.fabric.sweep_interval * i as u32 / n);
        }
    }

    /// Sweep every subnet once, one after the other, on this thread.
    pub fn sweep_once(&mut self) {
        for s in &mut self.list {
            s.sweeper.sweep_once();
        }
    }

    /// Start each subnet's sweeper on a thread of its own.
    pub(super) fn spawn(self, running: &mut Running) -> Result<(), AppError> {
        for s in self.list {
            let t = s
                .sweeper
                .spawn(running.shutdown.flag())
                .map_err(AppError::start("the sweeper"))?;
            running.threads.push(("sweeper", t));
        }
        Ok(())
    }
}

impl Stack {
    /// The stack of subnet `index`, publishing into `cache`, its 64-bit
    /// totals restored from and saved to `totals`.
    fn new(
        cfg: &Config,
        subnet: SubnetBackend,
        index: usize,
        cache: Arc<Cache>,
        totals: Option<PathBuf>,
        shutdown: &Shutdown,
        discovered: Instant,
    ) -> Stack {
        let view = SubnetView {
            index: index as u8,
            ..subnet.view
        };
        // A sweep in progress ends at the shutdown signal: the stop does
        // not wait for a sweep of a fabric that stopped answering.
        let engine = Engine::new(subnet.sweep, cfg.engine()).with_cancel(shutdown.flag());
        let state = SharedState::new(subnet.fabric, cfg.sweep(), discovered).in_subnet(view);
        let controller = Arc::new(Controller::new(
            state.clone(),
            Arc::clone(&cache),
            subnet.write,
            subnet.poll,
            cfg.control(),
        ));
        let mut sweeper = Sweeper::new(state.clone(), engine, Arc::clone(&cache));
        if let Some(probe) = subnet.probe {
            sweeper.set_before_sweep(super::subnets::before_sweep(probe));
        }
        if let Some(path) = totals {
            restore_totals(&state, &path);
            sweeper = sweeper.with_state_file(path);
        }
        Stack {
            sweeper,
            controller,
            source: subnet.source,
            cache,
        }
    }
}

/// The state file of subnet `index`: the first subnet's is `path`, the
/// others' `path.2`, `path.3`, ...
fn subnet_file(path: &Path, index: usize) -> PathBuf {
    if index == 0 {
        return path.to_path_buf();
    }
    let mut s = path.as_os_str().to_owned();
    s.push(format!(".{}", index + 1));
    PathBuf::from(s)
}

/// A file beside the totals' state file: `path` with `suffix` added
/// (".health", ".events").
pub(super) fn beside(path: &Path, suffix: &str) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// The state file of the 64-bit totals: the configured path, none for
/// "off", else `totals` in the service manager's state directory (the
/// first of STATE_DIRECTORY's colon-separated entries), if it sets one.
pub fn state_file_path(
    configured: Option<&Path>,
    state_directory: Option<std::ffi::OsString>,
) -> Option<PathBuf> {
    match configured {
        Some(p) if p.as_os_str() == "off" => None,
        Some(p) => Some(p.to_path_buf()),
        None => {
            let dirs = state_directory?;
            let first = std::env::split_paths(&dirs).next()?;
            (!first.as_os_str().is_empty()).then(|| first.join("totals"))
        }
    }
}

/// Take up the totals saved by the agent's last run, saying in the log
/// what became of the file.
fn restore_totals(state: &SharedState, path: &Path) {
    use crate::fabric::persist::{self, PersistError};
    match persist::load(path) {
        Ok(saved) => {
            let matched = state.lock().restore_totals(&saved);
            if matched == 0 && !saved.is_empty() {
                warn!(
                    path = %path.display(),
                    saved = saved.len(),
                    "state file of another fabric (no port matches): ignored; 64-bit totals start afresh"
                );
            } else {
                info!(path = %path.display(), saved = saved.len(), matched, "64-bit totals restored from the state file");
            }
        }
        Err(PersistError::Frame(e)) if e.is_missing() => {
            info!(path = %path.display(), "no state file yet ({e}): 64-bit totals start afresh");
        }
        Err(e) => {
            warn!(path = %path.display(), error = %e, "state file ignored: 64-bit totals start afresh")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_subnet_keeps_its_totals_in_a_file_of_its_own() {
        let p = Path::new("/var/lib/ibpm/totals");
        assert_eq!(subnet_file(p, 0), p);
        assert_eq!(subnet_file(p, 1), Path::new("/var/lib/ibpm/totals.2"));
        assert_eq!(
            beside(p, ".health"),
            Path::new("/var/lib/ibpm/totals.health")
        );
    }
}
