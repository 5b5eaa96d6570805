//! The AgentX driver: threads of its own that own the connection to the
//! master and the clock, and feed the protocol core
//! ([`super::core::AgentxCore`]): connect, read, write what the core asks,
//! reconnect with exponential backoff, close on shutdown, and pass queued
//! notifications to the core.
//!
//! The socket is blocking, as a minimal subagent's is: the reader thread
//! answers each request with one `recv` and one `send`, with nothing in
//! between (no readiness wait, no read timeout: snmpd sends a walk's next
//! GetNext only after this answer, so the reader would wait for it in any
//! case). While a connection is open, a second thread, the ticker, keeps
//! the clock: it sends queued notifications, Pings and Register retries
//! when they are due, and on shutdown (or a connection the core gives up
//! on) writes what is left and shuts the socket down, which wakes the
//! reader. The core sits behind one mutex, taken by whichever thread acts,
//! so their writes never interleave. Handlers answer from memory, so a
//! request never waits on the fabric (a SET commit, bounded by its
//! deadline, holds the core: snmpd waits for its answer anyway, and the
//! built-in responder runs elsewhere).

use std::collections::VecDeque;
use std::fmt;
use std::io;
use std::net::{TcpStream, ToSocketAddrs};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

pub use super::config::{AgentxAddr, ParseAddrError, SessionConfig};
use super::core::{Action, AgentxCore, Backoff, LOG_EVERY, Lost};
use super::pdu::CloseReason;
use crate::mib::{MibHandler, VarBind};
use crate::time::{Clock, Due, Throttle};

/// How long a write to the master may take, and a TCP connect.
const IO_TIMEOUT: Duration = Duration::from_secs(2);
/// The longest the ticker sleeps before it looks at the core's deadlines
/// and shutdown (notifications and a stop wake it at once).
const WAKE: Duration = Duration::from_millis(100);
/// A unix-socket master is tried again this often, whatever the backoff:
/// a connect to a missing socket costs microseconds, and the session is
/// back within this of snmpd's return. TCP masters keep the backoff.
const UNIX_RETRY: Duration = Duration::from_millis(200);
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

/// What the handle sends the session's thread.
enum Msg {
    Notify(Vec<VarBind>),
    /// Look at the shutdown flag now.
    Wake,
}

struct Shared {
    shutdown: AtomicBool,
    connected: AtomicBool,
    registered: AtomicBool,
    stats: SessionStats,
    tx: Mutex<Option<SyncSender<Msg>>>,
    /// Receives nothing; disconnected when the task has ended.
    done: Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

/// Handle to a running session; clones share it.
#[derive(Clone)]
pub struct SessionHandle {
    shared: Arc<Shared>,
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
            Some(tx) => tx.try_send(Msg::Notify(varbinds)).map_err(|e| match e {
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

    /// Sends Close(reasonShutdown) if connected, stops the task and waits
    /// for it: at most one write timeout. Call it from outside the I/O
    /// runtime.
    pub fn shutdown(&self) {
        self.shared.shutdown.store(true, Ordering::SeqCst);
        if let Some(tx) = self
            .shared
            .tx
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
        {
            // A full queue wakes the thread as well; else it looks within
            // WAKE.
            let _ = tx.try_send(Msg::Wake);
        }
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
    /// Starts the session on a thread of its own; it connects (and
    /// reconnects) on its own.
    pub fn spawn(cfg: SessionConfig, handler: Arc<dyn MibHandler>) -> io::Result<SessionHandle> {
        let (tx, rx) = mpsc::sync_channel(NOTIFY_CHANNEL);
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let shared = Arc::new(Shared {
            shutdown: AtomicBool::new(false),
            connected: AtomicBool::new(false),
            registered: AtomicBool::new(false),
            stats: SessionStats::default(),
            tx: Mutex::new(Some(tx)),
            done: Mutex::new(Some(done_rx)),
        });
        let runner = Runner::new(cfg, handler, shared.clone(), rx);
        std::thread::Builder::new()
            .name("agentx".into())
            .spawn(move || {
                // Dropped when the session ends, also by panic: shutdown()
                // returns.
                let _done = done_tx;
                runner.run();
            })?;
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
        let conn = match addr {
            AgentxAddr::Unix(p) => {
                super::socket_path::check_socket(p)?;
                Conn::Unix(UnixStream::connect(p)?)
            }
            AgentxAddr::Tcp { host, port } => {
                let mut last = io::Error::new(io::ErrorKind::NotFound, "no address");
                let mut found = None;
                for sa in (host.as_str(), *port).to_socket_addrs()? {
                    match TcpStream::connect_timeout(&sa, IO_TIMEOUT) {
                        Ok(s) => {
                            let _ = s.set_nodelay(true);
                            found = Some(s);
                            break;
                        }
                        Err(e) => last = e,
                    }
                }
                Conn::Tcp(found.ok_or(last)?)
            }
        };
        match &conn {
            Conn::Unix(s) => s.set_write_timeout(Some(IO_TIMEOUT))?,
            Conn::Tcp(s) => s.set_write_timeout(Some(IO_TIMEOUT))?,
        }
        Ok(conn)
    }

    /// A second handle on the same connection (the ticker's).
    fn try_clone(&self) -> io::Result<Conn> {
        Ok(match self {
            Conn::Unix(s) => Conn::Unix(s.try_clone()?),
            Conn::Tcp(s) => Conn::Tcp(s.try_clone()?),
        })
    }

    /// Ends the connection both ways: a read blocked on it returns.
    fn shut(&self) {
        let _ = match self {
            Conn::Unix(s) => s.shutdown(std::net::Shutdown::Both),
            Conn::Tcp(s) => s.shutdown(std::net::Shutdown::Both),
        };
    }

    fn fd(&self) -> RawFd {
        match self {
            Conn::Unix(s) => s.as_raw_fd(),
            Conn::Tcp(s) => s.as_raw_fd(),
        }
    }

    /// Bytes from the master, waiting for them.
    fn read(&mut self, b: &mut [u8]) -> io::Result<usize> {
        sys::recv(self.fd(), b)
    }

    /// The whole PDU, or an error once the write has waited [`IO_TIMEOUT`]
    /// (the master stopped reading).
    fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
        while !b.is_empty() {
            match sys::send(self.fd(), b) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => b = &b[n.min(b.len())..],
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(io::ErrorKind::TimedOut, "write timed out"));
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// `recv` and `send` on the connection as plain system calls. glibc's
/// wrappers are cancellation points: in a process with more than one
/// thread each call goes through two more to turn asynchronous
/// cancellation on and off (`perf` on a walk: 1% of the reader's CPU,
/// which a single-threaded subagent does not pay). Nothing here cancels
/// threads.
mod sys {
    use std::io;
    use std::os::fd::RawFd;

    pub fn recv(fd: RawFd, buf: &mut [u8]) -> io::Result<usize> {
        transfer(libc::SYS_recvfrom, fd, buf.as_mut_ptr(), buf.len(), 0)
    }

    /// MSG_NOSIGNAL: a closed peer is an error (EPIPE), not a signal.
    pub fn send(fd: RawFd, buf: &[u8]) -> io::Result<usize> {
        // sendto only reads the buffer.
        let ptr = buf.as_ptr().cast_mut();
        transfer(libc::SYS_sendto, fd, ptr, buf.len(), libc::MSG_NOSIGNAL)
    }

    /// recvfrom or sendto on `fd` with no peer address.
    fn transfer(
        nr: libc::c_long,
        fd: RawFd,
        ptr: *mut u8,
        len: usize,
        flags: libc::c_int,
    ) -> io::Result<usize> {
        // SAFETY: `ptr` and `len` describe a buffer the caller borrows for
        // the call (mutably for recvfrom, the only call that writes it);
        // `fd` is the connection's socket, open while the connection is;
        // the null address and zero length ask for no peer address. Every
        // argument is passed as the long the system call takes.
        let n = unsafe {
            libc::syscall(
                nr,
                libc::c_long::from(fd),
                ptr,
                len,
                libc::c_long::from(flags),
                std::ptr::null_mut::<libc::sockaddr>(),
                0 as libc::c_long,
            )
        };
        usize::try_from(n).map_err(|_| io::Error::last_os_error())
    }
}

// ------------------------------------------------------------------ runner

/// Why a connected session ended.
#[derive(Debug)]
enum End {
    Shutdown,
    Lost(Lost),
}

/// What the reader and the ticker share, behind one mutex.
struct Inner {
    core: AgentxCore,
    /// Notifications waiting for a session, oldest first.
    pending: VecDeque<Vec<VarBind>>,
    /// Notifications dropped from the full queue, logged through this.
    dropped: Throttle,
}

/// What both threads of a connection reach.
struct Link {
    inner: Mutex<Inner>,
    handler: Arc<dyn MibHandler>,
    shared: Arc<Shared>,
    /// The time, for both threads.
    clock: Clock,
}

struct Runner {
    link: Link,
    rx: Receiver<Msg>,
    /// Consecutive failed connection attempts, logged through this.
    failures: Throttle,
    last_error: Option<String>,
}

impl Link {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn stopping(&self) -> bool {
        self.shared.shutdown.load(Ordering::SeqCst)
    }

    /// Keeps a notification for the next session; the oldest goes when
    /// the queue is full.
    fn hold(&self, inner: &mut Inner, v: Vec<VarBind>) {
        let cap = inner.core.config().notify_queue.max(1);
        if inner.pending.len() >= cap {
            inner.pending.pop_front();
            self.count_dropped_notify(inner, cap);
        }
        inner.pending.push_back(v);
    }

    fn count_dropped_notify(&self, inner: &mut Inner, cap: usize) {
        self.shared
            .stats
            .notifies_dropped
            .fetch_add(1, Ordering::Relaxed);
        if let Some(Due { total: dropped, .. }) = inner.dropped.count() {
            tracing::warn!(
                dropped,
                queue = cap,
                "AgentX notification dropped: no session with the master and the queue is full"
            );
        }
    }

    /// Mirrors the core's state into what the handle reads.
    fn publish(&self, core: &AgentxCore) {
        let st = core.stats();
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
            .store(core.is_open(), Ordering::Release);
        self.shared
            .registered
            .store(core.is_registered(), Ordering::Release);
    }

    /// Writes what the core asked; the reason the connection is over, if
    /// it is. The handle's counters are published first: whoever reads an
    /// answer then reads counters that include its request.
    fn act(
        &self,
        core: &AgentxCore,
        conn: &mut Conn,
        actions: impl IntoIterator<Item = Action>,
    ) -> Option<End> {
        self.publish(core);
        for a in actions {
            match a {
                Action::Send(bytes) => {
                    if let Err(e) = conn.write_all(&bytes) {
                        return Some(End::Lost(Lost::Io(e.kind())));
                    }
                }
                Action::Lost(why) => return Some(End::Lost(why)),
            }
        }
        None
    }

    /// The reader: answers the master until the connection ends, or the
    /// ticker ends it (then `ended` says why).
    fn read(&self, conn: &mut Conn, ended: &OnceLock<End>, backoff: &mut Backoff) -> End {
        let mut buf = vec![0u8; 64 * 1024];
        let mut actions = Vec::new();
        loop {
            let read = conn.read(&mut buf);
            let mut inner = self.lock();
            if ended.get().is_some() {
                return End::Shutdown; // replaced by what `ended` holds
            }
            match read {
                Ok(0) => return End::Lost(Lost::Eof),
                Ok(n) => inner.core.on_bytes_into(
                    &buf[..n],
                    &self.clock,
                    self.handler.as_ref(),
                    &mut actions,
                ),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return End::Lost(Lost::Io(e.kind())),
            }
            let end = self.act(&inner.core, conn, actions.drain(..));
            if inner.core.is_registered() {
                backoff.reset();
            }
            if let Some(end) = end {
                return end;
            }
        }
    }

    /// The ticker: notifications, deadlines and shutdown while the
    /// connection is open. Returns once `ended` is set (by the reader, or
    /// here, then after shutting the socket down so the reader returns).
    fn tick(&self, mut conn: Conn, rx: &mut Receiver<Msg>, ended: &OnceLock<End>) {
        loop {
            let wait = {
                let inner = self.lock();
                let now = self.clock.now();
                inner
                    .core
                    .next_deadline()
                    .map_or(WAKE, |d| d.saturating_duration_since(now).min(WAKE))
            };
            let mut got = Vec::new();
            match rx.recv_timeout(wait) {
                Ok(Msg::Notify(v)) => got.push(v),
                Ok(Msg::Wake) | Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => std::thread::sleep(wait),
            }
            while let Ok(m) = rx.try_recv() {
                if let Msg::Notify(v) = m {
                    got.push(v);
                }
            }
            let mut inner = self.lock();
            for v in got {
                self.hold(&mut inner, v);
            }
            // The reader ended the connection: what came is kept for the
            // next one.
            if ended.get().is_some() {
                return;
            }
            if self.stopping() {
                if let Some(close) = inner.core.close(CloseReason::Shutdown) {
                    match conn.write_all(&close) {
                        Ok(()) => tracing::info!("AgentX session closed (reasonShutdown)"),
                        Err(e) => tracing::warn!("AgentX Close not sent: {e}"),
                    }
                }
                let _ = ended.set(End::Shutdown);
                conn.shut();
                return;
            }
            let now = self.clock.now();
            let mut actions = Vec::new();
            if inner.core.is_registered() {
                // What waited for a session goes first, in order.
                while let Some(v) = inner.pending.pop_front() {
                    match inner.core.notify(v, now) {
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
            if inner.core.next_deadline().is_some_and(|d| d <= now) {
                actions.extend(inner.core.on_timeout(now));
            }
            let end = self.act(&inner.core, &mut conn, actions);
            if let Some(end) = end {
                let _ = ended.set(end);
                conn.shut();
                return;
            }
        }
    }
}

impl Runner {
    fn new(
        cfg: SessionConfig,
        handler: Arc<dyn MibHandler>,
        shared: Arc<Shared>,
        rx: Receiver<Msg>,
    ) -> Self {
        Runner {
            link: Link {
                inner: Mutex::new(Inner {
                    core: AgentxCore::new(cfg),
                    pending: VecDeque::new(),
                    dropped: Throttle::nth(LOG_EVERY),
                }),
                handler,
                shared,
                clock: Clock::system(),
            },
            rx,
            failures: Throttle::nth(LOG_EVERY),
            last_error: None,
        }
    }

    /// Waits `d`, waking for shutdown; keeps notifications for the next
    /// session.
    fn idle(&mut self, d: Duration) {
        let until = self.link.clock.now() + d;
        while !self.link.stopping() {
            let left = until.saturating_duration_since(self.link.clock.now());
            if left.is_zero() {
                break;
            }
            match self.rx.recv_timeout(left) {
                Ok(Msg::Notify(v)) => {
                    let mut inner = self.link.lock();
                    self.link.hold(&mut inner, v);
                }
                Ok(Msg::Wake) => {}
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => std::thread::sleep(left.min(WAKE)),
            }
        }
    }

    fn run(mut self) {
        let (address, min, max) = {
            let inner = self.link.lock();
            let cfg = inner.core.config();
            (cfg.address.clone(), cfg.backoff_min, cfg.backoff_max)
        };
        let mut backoff = Backoff::new(min, max);
        tracing::info!(address = %address, "AgentX session starting");
        while !self.link.stopping() {
            match Conn::connect(&address) {
                Ok(conn) => {
                    if self.failures.total() > 0 {
                        tracing::info!(
                            address = %address,
                            failed_attempts = self.failures.total(),
                            "AgentX master reachable again"
                        );
                    }
                    self.failures.reset();
                    self.last_error = None;
                    match self.converse(conn, &mut backoff) {
                        End::Shutdown => break,
                        End::Lost(why) => {
                            tracing::warn!(address = %address, "AgentX session lost: {why}; reconnecting");
                        }
                    }
                }
                Err(e) => {
                    let due = self.failures.count().is_some();
                    let msg = format!("{} ({:?})", e, e.kind());
                    let changed = self.last_error.as_deref() != Some(msg.as_str());
                    if due || changed {
                        let every = match address {
                            AgentxAddr::Unix(_) => format!("every {UNIX_RETRY:?}"),
                            AgentxAddr::Tcp { .. } => format!("with backoff up to {max:?}"),
                        };
                        tracing::warn!(
                            address = %address,
                            attempt = self.failures.total(),
                            "cannot connect to AgentX master: {msg}; retrying {every}"
                        );
                    }
                    self.last_error = Some(msg);
                }
            }
            let delay = backoff.next_delay();
            self.idle(match address {
                AgentxAddr::Unix(_) => delay.min(UNIX_RETRY),
                AgentxAddr::Tcp { .. } => delay,
            });
        }
        tracing::info!("AgentX session stopped");
    }

    /// One connection: from Open to its end. `backoff` starts over once the
    /// session is open and registered.
    fn converse(&mut self, mut conn: Conn, backoff: &mut Backoff) -> End {
        let link = &self.link;
        let opened = {
            let mut inner = link.lock();
            let actions = inner.core.on_connected(self.link.clock.now());
            link.act(&inner.core, &mut conn, actions)
        };
        let end = match (opened, conn.try_clone()) {
            (Some(end), _) => end,
            (None, Err(e)) => End::Lost(Lost::Io(e.kind())),
            (None, Ok(ticker_conn)) => {
                let ended = OnceLock::new();
                let rx = &mut self.rx;
                std::thread::scope(|s| {
                    let ticker = std::thread::Builder::new()
                        .name("agentx-tick".into())
                        .spawn_scoped(s, || link.tick(ticker_conn, rx, &ended));
                    let end = match ticker {
                        Ok(_) => link.read(&mut conn, &ended, backoff),
                        Err(e) => End::Lost(Lost::Io(e.kind())),
                    };
                    if ended.set(end).is_err() {
                        // The ticker ended it first; it returns by itself.
                    } else {
                        // Wake the ticker: it returns within WAKE anyway.
                        let tx = link.shared.tx.lock().unwrap_or_else(|e| e.into_inner());
                        if let Some(tx) = tx.as_ref() {
                            let _ = tx.try_send(Msg::Wake);
                        }
                    }
                });
                ended.into_inner().unwrap_or(End::Shutdown)
            }
        };
        conn.shut();
        let mut inner = link.lock();
        inner.core.on_disconnected(link.handler.as_ref());
        link.publish(&inner.core);
        end
    }
}
