//! Telling systemd how the agent is (`Type=notify`, `WatchdogSec=`): READY=1
//! once the first snapshot is published and, with AgentX enabled, the
//! subtree is registered with snmpd; WATCHDOG=1 while the sweeper keeps
//! publishing snapshots; STOPPING=1 on the way out. Without `NOTIFY_SOCKET`
//! in the environment (not started by systemd) nothing is sent.

use std::io;
use std::os::unix::net::{SocketAddr, UnixDatagram};
use std::time::{Duration, Instant};

/// Sweep intervals a sweeper may go without a new sweep (and
/// [`LATE_GRACE`] more) before it is taken for not sweeping.
pub const STALE_INTERVALS: u32 = 3;
/// The minute a sweeper is given on top of [`STALE_INTERVALS`].
pub const LATE_GRACE: Duration = Duration::from_secs(60);

/// Whether a sweeper whose last sweep is `age` old, with `interval`
/// between sweeps, is not sweeping: the last sweep is older than three
/// intervals and a minute. The one rule of the watchdog
/// ([`SweeperWatch`]) and the status report's `stale`.
pub fn stale(age: Duration, interval: Duration) -> bool {
    age > interval
        .saturating_mul(STALE_INTERVALS)
        .saturating_add(LATE_GRACE)
}

/// The notification socket systemd named in `NOTIFY_SOCKET`.
pub struct SystemdNotifier {
    socket: UnixDatagram,
    to: SocketAddr,
}

impl SystemdNotifier {
    /// The notifier of this process, when systemd gave it a socket.
    pub fn from_env() -> Option<io::Result<SystemdNotifier>> {
        let name = std::env::var_os("NOTIFY_SOCKET")?;
        Some(SystemdNotifier::new(name.to_str().unwrap_or_default()))
    }

    /// A notifier sending to `name`: a path, or `@name` in the abstract
    /// namespace.
    pub fn new(name: &str) -> io::Result<SystemdNotifier> {
        let to = match name.strip_prefix('@') {
            Some(abs) => {
                use std::os::linux::net::SocketAddrExt;
                SocketAddr::from_abstract_name(abs.as_bytes())?
            }
            None if name.starts_with('/') => SocketAddr::from_pathname(name)?,
            None => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "NOTIFY_SOCKET `{}` is neither a path nor @name",
                        name.escape_debug()
                    ),
                ));
            }
        };
        Ok(SystemdNotifier {
            socket: UnixDatagram::unbound()?,
            to,
        })
    }

    /// Sends one notification (`READY=1`, `WATCHDOG=1`, `STATUS=...`).
    pub fn send(&self, state: &str) -> io::Result<()> {
        self.socket
            .send_to_addr(state.as_bytes(), &self.to)
            .map(|_| ())
    }
}

/// Half the watchdog period systemd asked for (`WATCHDOG_USEC`), the usual
/// ping interval; `None` when there is no watchdog or it is not for us
/// (`WATCHDOG_PID` names another process).
pub fn watchdog_ping_interval() -> Option<Duration> {
    if let Some(pid) = std::env::var_os("WATCHDOG_PID")
        && pid.to_str().and_then(|p| p.parse::<u32>().ok()) != Some(std::process::id())
    {
        return None;
    }
    let usec: u64 = std::env::var("WATCHDOG_USEC").ok()?.parse().ok()?;
    (usec > 0).then(|| Duration::from_micros(usec / 2))
}

/// Whether the sweeper is alive, judged on the monotonic clock (a step of
/// the wall clock neither withholds nor fakes a watchdog ping): the sweep
/// number has moved within three sweep intervals and a minute (a sweep of a
/// large fabric, a transport being reopened).
#[derive(Debug)]
pub struct SweeperWatch {
    sweep: u64,
    since: Instant,
}

impl SweeperWatch {
    /// Watching from `now`, the sweeper at sweep `sweep`.
    pub fn new(sweep: u64, now: Instant) -> SweeperWatch {
        SweeperWatch { sweep, since: now }
    }

    /// Whether the sweeper, now at sweep `sweep` with `interval` between
    /// sweeps, is alive at `now`.
    pub fn alive(&mut self, sweep: u64, interval: Duration, now: Instant) -> bool {
        if sweep != self.sweep {
            self.sweep = sweep;
            self.since = now;
        }
        !stale(now.saturating_duration_since(self.since), interval)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sweep_three_intervals_and_a_minute_old_is_not_yet_stale() {
        let i = Duration::from_secs(10);
        assert!(!stale(Duration::from_secs(90), i));
        assert!(stale(Duration::from_millis(90_001), i));
        // No overflow: an interval too long to add a minute to.
        assert!(!stale(Duration::MAX, Duration::MAX));
        assert!(stale(Duration::from_secs(61), Duration::ZERO));
    }

    #[test]
    fn the_sweeper_is_alive_while_its_sweeps_move() {
        let t0 = Instant::now();
        let i = Duration::from_secs(10);
        let mut w = SweeperWatch::new(1, t0);
        assert!(w.alive(1, i, t0 + Duration::from_secs(89)));
        assert!(w.alive(1, i, t0 + Duration::from_secs(90)));
        assert!(!w.alive(1, i, t0 + Duration::from_secs(91)));
        // A new sweep: alive again, for as long.
        assert!(w.alive(2, i, t0 + Duration::from_secs(100)));
        assert!(w.alive(2, i, t0 + Duration::from_secs(190)));
        assert!(!w.alive(2, i, t0 + Duration::from_secs(191)));
        // Time is only ever the monotonic clock's: a `now` before the last
        // change (no such clock goes back) is not a dead sweeper.
        assert!(w.alive(2, i, t0));
    }

    #[test]
    fn notifications_arrive_on_a_path_socket() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("notify");
        let rx = UnixDatagram::bind(&path).unwrap();
        let n = SystemdNotifier::new(path.to_str().unwrap()).unwrap();
        n.send("READY=1").unwrap();
        let mut buf = [0u8; 64];
        let len = rx.recv(&mut buf).unwrap();
        assert_eq!(&buf[..len], b"READY=1");
        assert!(SystemdNotifier::new("relative/name").is_err());
    }
}
