//! The AgentX driver: one task on the I/O runtime ([`crate::runtime`]) that
//! owns the connection to the master and the clock, and feeds the protocol
//! core ([`super::core::AgentxCore`]): connect, read, write what the core
//! asks, reconnect with exponential backoff, close on shutdown, and pass
//! queued notifications to the core.
//!
//! The task waits for whichever comes first: bytes from the master, the
//! core's next deadline, a notification or shutdown. It answers each
//! request before reading the next; handlers answer from memory, so a
//! request never waits on the fabric (a SET commit, bounded by its
//! deadline, runs off the runtime's worker: see [`OnRuntime`]).

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpStream, UnixStream};
use tokio::sync::Notify;
use tokio::sync::mpsc::{self, Receiver, Sender, error::TrySendError};

pub use super::config::{AgentxAddr, ParseAddrError, SessionConfig};
use super::core::{Action, AgentxCore, Backoff, Lost};
use super::pdu::CloseReason;
use crate::mib::{MibHandler, VarBind};
use crate::runtime::{EdgeRuntime, OnRuntime};

/// How long a write to the master may take, and a TCP connect.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// When the core has no deadline, the connected task still wakes this often.
const IDLE_WAKE: Duration = Duration::from_secs(60);
/// During an outage, log every Nth failed attempt (the first always).
const LOG_EVERY: u64 = 20;
/// Notifications in the channel from the handle to the task.
const NOTIFY_CHANNEL: usize = 1024;

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
    /// Notifications dropped because no session was open for so long that
    /// the queue kept meanwhile ([`SessionConfig::notify_queue`]) was full.
    pub notifies_dropped: AtomicU64,
    /// Notify PDUs written to the master.
    pub notifies_sent: AtomicU64,
}

struct Shared {
    shutdown: AtomicBool,
    /// Wakes the task for shutdown.
    wake: Notify,
    connected: AtomicBool,
    registered: AtomicBool,
    stats: SessionStats,
    tx: Mutex<Option<Sender<Vec<VarBind>>>>,
    /// Receives nothing; disconnected when the task has ended.
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

/// Handle to a running session; clones share it.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<Shared>,
    /// Keeps the runtime the session runs on.
    _runtime: EdgeRuntime,
}

impl SessionHandle {
    /// Queues a Notify PDU with these varbinds (the caller supplies
    /// sysUpTime.0 if wanted and snmpTrapOID.0, RFC 2741 6.2.10). While no
    /// session is open, up to [`SessionConfig::notify_queue`] wait for
    /// the next one; beyond that the oldest are dropped (and counted).
    pub fn notify(&self, varbinds: Vec<VarBind>) -> Result<(), NotifyError> {
        let guard = self.shared.tx.lock().unwrap_or_else(|e| e.into_inner());
        match guard.as_ref() {
            None => Err(NotifyError::SessionStopped),
            Some(tx) => tx.try_send(varbinds).map_err(|e| match e {
                TrySendError::Full(_) => NotifyError::QueueFull,
                TrySendError::Closed(_) => NotifyError::SessionStopped,
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

    /// Sends Close(reasonShutdown) if connected, stops the task and waits
    /// for it: at most one write timeout. Call it from outside the I/O
    /// runtime.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        self.shared.wake.notify_one();
        let done = self
            .shared
            .done
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(done) = done {
            // Err(RecvError) once the task has ended and dropped its sender.
            let _ = done.recv();
        }
        self.shared
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
    }
}

/// The session's entry point.
pub struct Session;

impl Session {
    /// Starts the session on the I/O runtime; it connects (and reconnects)
    /// on its own.
    pub fn spawn(cfg: SessionConfig, handler: Arc<dyn MibHandler>) -> io::Result<SessionHandle> {
        let runtime = EdgeRuntime::acquire()?;
        let (tx, rx) = mpsc::channel(NOTIFY_CHANNEL);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let shared = Arc::new(Shared {
            shutdown: AtomicBool::new(false),
            wake: Notify::new(),
            connected: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            stats: SessionStats::default(),
            tx: Mutex::new(Some(tx)),
            done: Mutex::new(Some(done_rx)),
        });
        let runner = Runner::new(cfg, handler, shared.clone(), rx);
        runtime.handle().spawn(async move {
            // Dropped when the task ends, also by panic: shutdown() returns.
            let _done = done_tx;
            runner.run().await;
        });
        Ok(SessionHandle {
            shared,
            _runtime: runtime,
        })
    }
}

// ------------------------------------------------------------------ connection

enum Conn {
    Unix(UnixStream),
    Tcp(TcpStream),
}

impl Conn {
    async fn connect(addr: &AgentxAddr) -> io::Result<Conn> {
        match addr {
            AgentxAddr::Unix(p) => {
                super::socket_path::check_socket(p)?;
                Ok(Conn::Unix(UnixStream::connect(p).await?))
            }
            AgentxAddr::Tcp { host, port } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                let addrs = tokio::net::lookup_host((host.as_str(), *port)).await?;
                for sa in addrs {
                    match tokio::time::timeout(IO_TIMEOUT, TcpStream::connect(sa)).await {
                        Ok(Ok(s)) => {
                            let _ = s.set_nodelay(true);
                            return Ok(Conn::Tcp(s));
                        }
                        Ok(Err(e)) => last = e,
                        Err(_) => {
                            last = io::Error::new(io::ErrorKind::TimedOut, "connect timed out")
                        }
                    }
                }
                Err(last)
            }
        }
    }

    async fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Unix(s) => s.read(b).await,
            Conn::Tcp(s) => s.read(b).await,
        }
    }

    async fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        // Most answers fit in the socket buffer at once: no timer for them.
        let done = match self {
            Conn::Unix(s) => s.try_write(b),
            Conn::Tcp(s) => s.try_write(b),
        };
        let rest = match done {
            Ok(n) => &b[n..],
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => b,
            Err(e) => return Err(e),
        };
        if rest.is_empty() {
            return Ok(());
        }
        let write = async {
            match self {
                Conn::Unix(s) => s.write_all(rest).await,
                Conn::Tcp(s) => s.write_all(rest).await,
            }
        };
        tokio::time::timeout(IO_TIMEOUT, write)
            .await
            .unwrap_or_else(|_| Err(io::Error::new(io::ErrorKind::TimedOut, "write timed out")))
    }
}

// ------------------------------------------------------------------ runner

/// Why a connected session ended.
enum End {
    Shutdown,
    Lost(Lost),
}

/// What the connected task woke up for.
enum Event {
    Read(io::Result<usize>),
    Deadline,
    Notify(Option<Vec<VarBind>>),
    Wake,
}

struct Runner {
    core: AgentxCore,
    handler: Arc<dyn MibHandler>,
    shared: Arc<Shared>,
    rx: Receiver<Vec<VarBind>>,
    /// Notifications waiting for a session, oldest first.
    pending: VecDeque<Vec<VarBind>>,
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
            pending: VecDeque::new(),
            failures: 0,
            last_error: None,
        }
    }

    fn stopping(&self) -> bool {
        self.shared.shutdown.load(Ordering::SeqCst)
    }

    /// Waits `d`, waking for shutdown; keeps notifications for the next
    /// session.
    async fn idle(&mut self, d: Duration) {
        let until = tokio::time::Instant::now() + d;
        while !self.stopping() {
            tokio::select! {
                _ = tokio::time::sleep_until(until) => break,
                _ = self.shared.wake.notified() => {}
                n = self.rx.recv() => match n {
                    Some(v) => self.hold(v),
                    None => {
                        tokio::time::sleep_until(until).await;
                        break;
                    }
                },
            }
        }
    }

    /// Keeps a notification for the next session; the oldest goes when
    /// the queue is full.
    fn hold(&mut self, v: Vec<VarBind>) {
        let cap = self.core.config().notify_queue.max(1);
        if self.pending.len() >= cap {
            self.pending.pop_front();
            self.count_dropped_notify(cap);
        }
        self.pending.push_back(v);
    }

    fn count_dropped_notify(&self, cap: usize) {
        let n = self
            .shared
            .stats
            .notifies_dropped
            .fetch_add(1, Ordering::Relaxed);
        if n.is_multiple_of(LOG_EVERY) {
            tracing::warn!(
                dropped = n + 1,
                queue = cap,
                "AgentX notification dropped: no session with the master and the queue is full"
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

    async fn run(mut self) {
        let address = self.core.config().address.clone();
        let (min, max) = (
            self.core.config().backoff_min,
            self.core.config().backoff_max,
        );
        let mut backoff = Backoff::new(min, max);
        tracing::info!(address = %address, "AgentX session starting");
        while !self.stopping() {
            match Conn::connect(&address).await {
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
                    match self.converse(conn, &mut backoff).await {
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
            self.idle(backoff.next_delay()).await;
        }
        tracing::info!("AgentX session stopped");
    }

    /// One connection: from Open to its end. `backoff` starts over once the
    /// session is open and registered.
    async fn converse(&mut self, mut conn: Conn, backoff: &mut Backoff) -> End {
        let actions = self.core.on_connected(Instant::now());
        let end = self.converse_inner(&mut conn, actions, backoff).await;
        if let End::Shutdown = end
            && let Some(close) = self.core.close(CloseReason::Shutdown)
        {
            match conn.write_all(&close).await {
                Ok(()) => tracing::info!("AgentX session closed (reasonShutdown)"),
                Err(e) => tracing::warn!("AgentX Close not sent: {e}"),
            }
        }
        self.core.on_disconnected(&OnRuntime(self.handler.as_ref()));
        self.publish();
        end
    }

    async fn converse_inner(
        &mut self,
        conn: &mut Conn,
        mut actions: Vec<Action>,
        backoff: &mut Backoff,
    ) -> End {
        let mut buf = vec![0u8; 64 * 1024];
        // One timer for the core's deadline, moved only when that changes.
        let mut armed = tokio::time::Instant::now() + IDLE_WAKE;
        let mut timer = std::pin::pin!(tokio::time::sleep_until(armed));
        loop {
            if self.core.is_registered() {
                backoff.reset();
                // What waited for a session goes first, in order.
                while let Some(v) = self.pending.pop_front() {
                    match self.core.notify(v, Instant::now()) {
                        Some(a) => {
                            actions.extend(a);
                            self.shared
                                .stats
                                .notifies_sent
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        None => break,
                    }
                }
            }
            self.publish();
            for a in actions.drain(..) {
                match a {
                    Action::Send(bytes) => {
                        if let Err(e) = conn.write_all(&bytes).await {
                            return End::Lost(Lost::Io(e.kind()));
                        }
                    }
                    Action::Lost(why) => return End::Lost(why),
                }
            }
            if self.stopping() {
                return End::Shutdown;
            }
            let deadline = match self.core.next_deadline() {
                Some(d) => tokio::time::Instant::from_std(d),
                None => tokio::time::Instant::now() + IDLE_WAKE,
            };
            if deadline != armed || timer.is_elapsed() {
                armed = deadline;
                timer.as_mut().reset(deadline);
            }
            let event = tokio::select! {
                r = conn.read(&mut buf) => Event::Read(r),
                _ = &mut timer => Event::Deadline,
                n = self.rx.recv() => Event::Notify(n),
                _ = self.shared.wake.notified() => Event::Wake,
            };
            let now = Instant::now();
            match event {
                Event::Read(Ok(0)) => return End::Lost(Lost::Eof),
                Event::Read(Ok(n)) => {
                    let handler = OnRuntime(self.handler.as_ref());
                    actions = self.core.on_bytes(&buf[..n], now, &handler);
                }
                Event::Read(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Event::Read(Err(e)) => return End::Lost(Lost::Io(e.kind())),
                // Sent at the top of the loop once registered.
                Event::Notify(Some(vbs)) => self.hold(vbs),
                Event::Deadline | Event::Notify(None) | Event::Wake => {}
            }
            if self.core.next_deadline().is_some_and(|d| d <= now) {
                actions.extend(self.core.on_timeout(now));
            }
        }
    }
}
