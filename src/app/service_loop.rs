//! The service loop of `run`: start, tell systemd when the agent is
//! ready and alive, stop on SIGINT/SIGTERM within the stop budget, read
//! the node-name-map again on SIGHUP.

use std::time::{Duration, Instant};

use tracing::{info, warn};

use crate::config::Config;
use crate::service::{self, SystemdNotifier};

use super::open::open_backend;
use super::{AppError, Shutdown, start_with};

/// Run until SIGINT/SIGTERM.
pub fn run(mut cfg: Config) -> Result<(), AppError> {
    let shutdown = Shutdown::on_signals()?;
    // SIGHUP reads the node-name-map again (at the next sweep).
    cfg.names.reload_on_sighup().map_err(AppError::Signals)?;
    let backend = match open_backend(&cfg, &shutdown) {
        Err(_) if shutdown.is_triggered() => {
            info!("shutting down during start-up");
            return Ok(());
        }
        r => r?,
    };
    let running = start_with(&cfg, backend, shutdown.clone())?;
    // The users' keys are localized and the access rules made: the
    // passphrases, keys and communities of the file go.
    cfg.snmp.forget_secrets();
    let notifier = match SystemdNotifier::from_env() {
        Some(Ok(n)) => Some(n),
        Some(Err(e)) => {
            warn!("cannot notify systemd: {e}");
            None
        }
        None => None,
    };
    let ping_every = service::watchdog_ping_interval();
    let (mut ready, mut last_ping) = (false, None::<Instant>);
    let mut watch = service::SweeperWatch::new(0, Instant::now());
    while !shutdown.is_triggered() {
        if let Some(n) = &notifier {
            let snap = running.cache().load();
            let registered = running.session().is_none_or(|s| s.registered());
            if !ready && snap.sweep > 0 && registered {
                let status = format!("READY=1\nSTATUS=serving {} nodes", snap.nodes.len());
                match n.send(&status) {
                    Ok(()) => info!("told systemd the agent is ready"),
                    Err(e) => warn!("cannot notify systemd: {e}"),
                }
                ready = true;
            }
            if ready
                && let Some(every) = ping_every
                && last_ping.is_none_or(|t| t.elapsed() >= every)
                && watch.alive(snap.sweep, snap.interval, Instant::now())
            {
                let _ = n.send("WATCHDOG=1");
                last_ping = Some(Instant::now());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    info!("shutting down");
    if let Some(n) = &notifier {
        let _ = n.send("STOPPING=1");
    }
    if !running.stop_within(STOP_BUDGET) {
        warn!(
            budget_ms = STOP_BUDGET.as_millis() as u64,
            "some threads did not stop in time (blocked in a transport call); exiting without them"
        );
    }
    info!("stopped");
    Ok(())
}

/// How long the agent's stop may take before it exits anyway: with the
/// exit handlers' own bound (in `main`), a SIGTERM ends the process within
/// 3 s whatever a thread is blocked in.
pub const STOP_BUDGET: Duration = Duration::from_millis(1800);
