//! The AgentX driver: one thread that owns the connection to the master and
//! the clock, and feeds the protocol core ([`super::core::AgentxCore`]):
//! connect, read, write what the core asks, reconnect with exponential
//! backoff, close on shutdown, and pass queued notifications to the core.
//!
//! The thread reads with a short timeout (so the shutdown flag and the
//! notification queue are looked at every [`POLL_INTERVAL`]) and answers
//! each request before reading the next; handlers answer from memory, so a
//! request never waits on the fabric.

use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

pub use super::config::{AgentxAddr, ParseAddrError, SessionConfig};
use super::core::{Action, AgentxCore, Backoff, Lost};
use super::pdu::CloseReason;
use crate::mib::{MibHandler, VarBind};

/// How often the session thread wakes up when nothing arrives.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// During an outage, log every Nth failed attempt (the first always).
const LOG_EVERY: u64 = 20;
/// Largest number of queued notifications.
const NOTIFY_QUEUE: usize = 1024;

// ------------------------------------------------------------------ handle

/// Why a notification was not queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotifyError {
    QueueFull,
    SessionStopped,
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotifyError::QueueFull => write!(f, "AgentX notification queue is full"),
            NotifyError::SessionStopped => write!(f, "AgentX session has stopped"),
        }
    }
}

impl std::error::Error for NotifyError {}

/// Counters a caller (or a test) can read.
#[derive(Debug, Default)]
pub struct SessionStats {
    /// Successful Opens (1 + number of reconnects).
    pub opens: AtomicU64,
    /// Requests answered from the resend cache instead of re-executed.
    pub resends_answered: AtomicU64,
    /// Received PDUs answered with parseError or processingError.
    pub parse_errors: AtomicU64,
    /// Requests refused for the session, context or SET transaction they
    /// name (notOpen, unsupportedContext, a SET phase out of order).
    pub refused: AtomicU64,
    /// Registrations refused with duplicateRegistration.
    pub duplicate_registrations: AtomicU64,
    /// Notifications dropped because no session was open.
    pub notifies_dropped: AtomicU64,
}

struct Shared {
    shutdown: AtomicBool,
    connected: AtomicBool,
    registered: AtomicBool,
    stats: SessionStats,
    tx: Mutex<Option<SyncSender<Vec<VarBind>>>>,
    join: Mutex<Option<JoinHandle<()>>>,
}

/// Handle to a running session; clones share it.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<Shared>,
}

impl SessionHandle {
    /// Queues a Notify PDU with these varbinds (the caller supplies
    /// sysUpTime.0 if wanted and snmpTrapOID.0, RFC 2741 6.2.10). Dropped
    /// (and counted) when no session is open when the thread gets to it.
    pub fn notify(&self, varbinds: Vec<VarBind>) -> Result<(), NotifyError> {
        let guard = self.shared.tx.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            None => Err(NotifyError::SessionStopped),
            Some(tx) => tx.try_send(varbinds).map_err(|e| match e {
                TrySendError::Full(_) => NotifyError::QueueFull,
                TrySendError::Disconnected(_) => NotifyError::SessionStopped,
            }),
        }
    }

    /// True while a session with the master is open.
    pub fn connected(&self) -> bool {
        self.shared.connected.load(Ordering::SeqCst)
    }

    /// True while open and every configured subtree is registered.
    pub fn registered(&self) -> bool {
        self.shared.registered.load(Ordering::SeqCst)
    }

    pub fn stats(&self) -> &SessionStats {
        &self.shared.stats
    }

    /// Sends Close(reasonShutdown) if connected, stops the thread and joins
    /// it. Returns within about [`POLL_INTERVAL`] plus one write timeout.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        let h = self
            .shared
            .join
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(h) = h
            && h.join().is_err()
        {
            tracing::error!("AgentX session thread panicked");
        }
        self.shared
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// The session thread's entry point.
pub struct Session;

impl Session {
    /// Starts the session thread; it connects (and reconnects) on its own.
    pub fn spawn(cfg: SessionConfig, handler: Arc<dyn MibHandler>) -> io::Result<SessionHandle> {
        let (tx, rx) = mpsc::sync_channel(NOTIFY_QUEUE);
        let shared = Arc::new(Shared {
            shutdown: AtomicBool::new(false),
            connected: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            stats: SessionStats::default(),
            tx: Mutex::new(Some(tx)),
            join: Mutex::new(None),
        });
        let s2 = shared.clone();
        let h = std::thread::Builder::new()
            .name("agentx-session".into())
            .spawn(move || Runner::new(cfg, handler, s2, rx).run())?;
        *shared.join.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
        Ok(SessionHandle { shared })
    }
}

// ------------------------------------------------------------------ connection

enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    fn connect(addr: &AgentxAddr) -> io::Result<Conn> {
        let c = match addr {
            AgentxAddr::Unix(p) => Conn::Unix(UnixStream::connect(p)?),
            AgentxAddr::Tcp { host, port } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                let mut conn = None;
                for sa in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&sa, Duration::from_secs(2)) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            conn = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                Conn::Tcp(conn.ok_or(last)?)
            }
        };
        c.set_timeouts(Some(POLL_INTERVAL), Some(Duration::from_secs(2)))?;
        Ok(c)
    }
    fn set_timeouts(&self, r: Option<Duration>, w: Option<Duration>) -> io::Result<()> {
        match self {
            Conn::Unix(s) => {
                s.set_read_timeout(r)?;
                s.set_write_timeout(w)
            }
            Conn::Tcp(s) => {
                s.set_read_timeout(r)?;
                s.set_write_timeout(w)
            }
        }
    }
}

impl Read for Conn {
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b),
            Conn::Tcp(s) => s.read(b),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.write(b),
            Conn::Tcp(s) => s.write(b),
        }
    }
    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Unix(s) => s.flush(),
            Conn::Tcp(s) => s.flush(),
        }
    }
}

// ------------------------------------------------------------------ runner

/// Why a connected session ended.
enum End {
    Shutdown,
    Lost(Lost),
}

struct Runner {
    core: AgentxCore,
    handler: Arc<dyn MibHandler>,
    shared: Arc<Shared>,
    rx: Receiver<Vec<VarBind>>,
    /// Consecutive failed connection attempts (for log throttling).
    failures: u64,
    last_error: Option<String>,
}

impl Runner {
    fn new(
        cfg: SessionConfig,
        handler: Arc<dyn MibHandler>,
        shared: Arc<Shared>,
        rx: Receiver<Vec<VarBind>>,
    ) -> Self {
        Runner {
            core: AgentxCore::new(cfg),
            handler,
            shared,
            rx,
            failures: 0,
            last_error: None,
        }
    }

    fn stopping(&self) -> bool {
        self.shared.shutdown.load(Ordering::SeqCst)
    }

    /// Sleeps up to `d`, waking for shutdown; drops queued notifications.
    fn idle(&self, d: Duration) {
        let until = Instant::now() + d;
        while !self.stopping() {
            self.drop_notifies();
            let now = Instant::now();
            if now >= until {
                break;
            }
            std::thread::sleep((until - now).min(POLL_INTERVAL));
        }
    }

    fn drop_notifies(&self) {
        while self.rx.try_recv().is_ok() {
            self.count_dropped_notify();
        }
    }

    fn count_dropped_notify(&self) {
        let n = self
            .shared
            .stats
            .notifies_dropped
            .fetch_add(1, Ordering::Relaxed);
        if n.is_multiple_of(LOG_EVERY) {
            tracing::warn!(
                dropped = n + 1,
                "AgentX notification dropped: no session open with the master"
            );
        }
    }

    /// Mirrors the core's state into what the handle reads.
    fn publish(&self) {
        let st = self.core.stats();
        let s = &self.shared.stats;
        s.opens.store(st.opens, Ordering::Relaxed);
        s.resends_answered
            .store(st.resends_answered, Ordering::Relaxed);
        s.parse_errors.store(st.parse_errors, Ordering::Relaxed);
        s.refused.store(st.refused, Ordering::Relaxed);
        s.duplicate_registrations
            .store(st.duplicate_registrations, Ordering::Relaxed);
        self.shared
            .connected
            .store(self.core.is_open(), Ordering::SeqCst);
        self.shared
            .registered
            .store(self.core.is_registered(), Ordering::SeqCst);
    }

    fn run(mut self) {
        let address = self.core.config().address.clone();
        let (min, max) = (
            self.core.config().backoff_min,
            self.core.config().backoff_max,
        );
        let mut backoff = Backoff::new(min, max);
        tracing::info!(address = %address, "AgentX session starting");
        while !self.stopping() {
            match Conn::connect(&address) {
                Ok(conn) => {
                    if self.failures > 0 {
                        tracing::info!(
                            address = %address,
                            failed_attempts = self.failures,
                            "AgentX master reachable again"
                        );
                    }
                    self.failures = 0;
                    self.last_error = None;
                    match self.converse(conn, &mut backoff) {
                        End::Shutdown => break,
                        End::Lost(why) => {
                            tracing::warn!(address = %address, "AgentX session lost: {why}; reconnecting");
                        }
                    }
                }
                Err(e) => {
                    self.failures += 1;
                    let msg = format!("{} ({:?})", e, e.kind());
                    let changed = self.last_error.as_deref() != Some(msg.as_str());
                    if self.failures == 1 || changed || self.failures.is_multiple_of(LOG_EVERY) {
                        tracing::warn!(
                            address = %address,
                            attempt = self.failures,
                            "cannot connect to AgentX master: {msg}; retrying with backoff up to {max:?}"
                        );
                    }
                    self.last_error = Some(msg);
                }
            }
            self.idle(backoff.next_delay());
        }
        tracing::info!("AgentX session stopped");
    }

    /// One connection: from Open to its end. `backoff` starts over once the
    /// session is open and registered.
    fn converse(&mut self, mut conn: Conn, backoff: &mut Backoff) -> End {
        let actions = self.core.on_connected(Instant::now());
        let end = self.converse_inner(&mut conn, actions, backoff);
        if let End::Shutdown = end
            && let Some(close) = self.core.close(CloseReason::Shutdown)
        {
            match conn.write_all(&close) {
                Ok(()) => tracing::info!("AgentX session closed (reasonShutdown)"),
                Err(e) => tracing::warn!("AgentX Close not sent: {e}"),
            }
        }
        self.core.on_disconnected(self.handler.as_ref());
        self.publish();
        end
    }

    fn converse_inner(
        &mut self,
        conn: &mut Conn,
        mut actions: Vec<Action>,
        backoff: &mut Backoff,
    ) -> End {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if self.core.is_registered() {
                backoff.reset();
            }
            self.publish();
            for a in actions.drain(..) {
                match a {
                    Action::Send(bytes) => {
                        if let Err(e) = conn.write_all(&bytes) {
                            return End::Lost(Lost::Io(e.kind()));
                        }
                    }
                    Action::Lost(why) => return End::Lost(why),
                }
            }
            if self.stopping() {
                return End::Shutdown;
            }
            match conn.read(&mut buf) {
                Ok(0) => return End::Lost(Lost::Eof),
                Ok(n) => {
                    actions = self
                        .core
                        .on_bytes(&buf[..n], Instant::now(), self.handler.as_ref());
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return End::Lost(Lost::Io(e.kind())),
            }
            let now = Instant::now();
            if self.core.next_deadline().is_some_and(|d| d <= now) {
                actions.extend(self.core.on_timeout(now));
            }
            while let Ok(vbs) = self.rx.try_recv() {
                match self.core.notify(vbs, now) {
                    Some(a) => actions.extend(a),
                    None => self.count_dropped_notify(),
                }
            }
        }
    }
}
