//! Blocking AgentX session to the master agent, run in its own thread:
//! connect, Open, Register, answer requests from a [`MibHandler`], Ping,
//! reconnect with exponential backoff, send Notify PDUs on request.
//!
//! One thread owns the socket. It reads with a short timeout (so the
//! shutdown flag and the notification queue are looked at every
//! [`POLL_INTERVAL`]) and answers each request before reading the next;
//! handlers answer from memory, so a request never waits on the fabric.

use std::collections::VecDeque;
use std::fmt;
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::pdu::{
    self, AgentxError, ByteOrder, CloseReason, DEFAULT_MAX_PDU, FrameError, Framer, Header,
    Payload, Pdu, PduType, ResError, SearchRange,
};
use crate::mib::{ErrorStatus, MibHandler, Oid, SetTxn, Value, VarBind};

/// How often the session thread wakes up when nothing arrives.
pub const POLL_INTERVAL: Duration = Duration::from_millis(50);
/// How long the master has to answer Open, Register and Ping.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Number of recent responses kept to answer a master's resent packets.
const RESPONSE_CACHE: usize = 64;
/// During an outage, log every Nth failed attempt (the first always).
const LOG_EVERY: u64 = 20;
/// Largest number of queued notifications.
const NOTIFY_QUEUE: usize = 1024;

// ------------------------------------------------------------------ address

/// Where the master agent listens: `PATH`, `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentxAddr {
    Unix(PathBuf),
    Tcp { host: String, port: u16 },
}

impl Default for AgentxAddr {
    fn default() -> Self {
        AgentxAddr::Unix(PathBuf::from("/var/agentx/master"))
    }
}

impl fmt::Display for AgentxAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentxAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            AgentxAddr::Tcp { host, port } if host.contains(':') => {
                write!(f, "tcp:[{host}]:{port}")
            }
            AgentxAddr::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
        }
    }
}

/// Why a string is not an AgentX address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseAddrError {
    pub input: String,
    pub reason: &'static str,
}

impl fmt::Display for ParseAddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid AgentX address {:?}: {} (expected PATH, unix:PATH or tcp:HOST:PORT)",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ParseAddrError {}

impl FromStr for AgentxAddr {
    type Err = ParseAddrError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseAddrError {
            input: s.to_string(),
            reason,
        };
        let s_trim = s.trim();
        if s_trim.is_empty() {
            return Err(err("empty"));
        }
        if let Some(p) = s_trim.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(err("empty socket path"));
            }
            return Ok(AgentxAddr::Unix(PathBuf::from(p)));
        }
        if let Some(rest) = s_trim.strip_prefix("tcp:") {
            let (host, port) = rest.rsplit_once(':').ok_or_else(|| err("missing :PORT"))?;
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            if host.is_empty() {
                return Err(err("empty host"));
            }
            let port: u16 = port
                .parse()
                .map_err(|_| err("port is not a number 1..65535"))?;
            if port == 0 {
                return Err(err("port 0"));
            }
            return Ok(AgentxAddr::Tcp {
                host: host.to_string(),
                port,
            });
        }
        if let Some((scheme, _)) = s_trim.split_once(':')
            && !scheme.contains('/')
        {
            return Err(err("unsupported transport (only unix: and tcp:)"));
        }
        Ok(AgentxAddr::Unix(PathBuf::from(s_trim)))
    }
}

// ------------------------------------------------------------------ config

/// Session settings.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub address: AgentxAddr,
    /// Subtrees registered after each Open.
    pub subtrees: Vec<Oid>,
    /// Registration priority (lower wins; RFC default 127).
    pub priority: u8,
    /// Open o.descr.
    pub description: String,
    /// Open o.id (may be empty: the null OID).
    pub id: Oid,
    /// Open o.timeout in seconds (0 = the master's default).
    pub timeout_s: u8,
    /// Ping the master this often while connected (zero disables).
    pub ping_interval: Duration,
    /// First reconnect / re-register delay.
    pub backoff_min: Duration,
    /// Largest reconnect / re-register delay.
    pub backoff_max: Duration,
    /// Byte order of the PDUs this subagent sends (the master mirrors it).
    pub byte_order: ByteOrder,
    /// Largest PDU accepted from the master.
    pub max_pdu: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            address: AgentxAddr::default(),
            subtrees: vec![Oid::new(&[1, 3, 6, 1, 3, 117])],
            priority: 127,
            description: "ibpm-agentx: IB-PM-MIB subagent".to_string(),
            id: Oid::new(&[1, 3, 6, 1, 3, 117]),
            timeout_s: 5,
            ping_interval: Duration::from_secs(15),
            backoff_min: Duration::from_millis(200),
            backoff_max: Duration::from_secs(5),
            byte_order: ByteOrder::Big,
            max_pdu: DEFAULT_MAX_PDU,
        }
    }
}

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

/// Exponential backoff between `min` and `max`.
#[derive(Debug, Clone)]
struct Backoff {
    min: Duration,
    max: Duration,
    cur: Duration,
}

impl Backoff {
    fn new(min: Duration, max: Duration) -> Self {
        let min = min.max(Duration::from_millis(1));
        let max = max.max(min);
        Backoff { min, max, cur: min }
    }
    fn next_delay(&mut self) -> Duration {
        let d = self.cur;
        self.cur = (self.cur * 2).min(self.max);
        d
    }
    fn reset(&mut self) {
        self.cur = self.min;
    }
}

#[derive(Debug)]
enum RegState {
    /// Register sent, answer awaited.
    Pending {
        packet_id: u32,
    },
    Registered,
    /// Send again at this time.
    RetryAt(Instant),
}

struct Registration {
    subtree: Oid,
    state: RegState,
    backoff: Backoff,
    failures: u64,
}

/// What an outstanding request of ours was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Outstanding {
    Open,
    Register(usize),
    Ping,
    Notify,
}

/// Why a connected session ended.
enum End {
    Shutdown,
    Lost(String),
}

struct Runner {
    cfg: SessionConfig,
    handler: Arc<dyn MibHandler>,
    shared: Arc<Shared>,
    rx: Receiver<Vec<VarBind>>,
    /// Consecutive failed connection attempts (for log throttling).
    failures: u64,
    last_error: Option<String>,
}

/// (h.sessionID, h.transactionID, h.packetID, h.type) of a request.
type RequestKey = (u32, u32, u32, u8);

/// State of one connection.
struct Conversation {
    conn: Conn,
    framer: Framer,
    session_id: Option<u32>,
    next_packet: u32,
    outstanding: Vec<(u32, Outstanding, Instant)>,
    regs: Vec<Registration>,
    next_ping: Instant,
    /// (session, transaction, packet, type) -> encoded answer (None: no
    /// answer is sent, e.g. CleanupSet).
    cache: VecDeque<(RequestKey, Option<Vec<u8>>)>,
}

impl Runner {
    fn new(
        cfg: SessionConfig,
        handler: Arc<dyn MibHandler>,
        shared: Arc<Shared>,
        rx: Receiver<Vec<VarBind>>,
    ) -> Self {
        Runner {
            cfg,
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
    }

    fn run(mut self) {
        let mut backoff = Backoff::new(self.cfg.backoff_min, self.cfg.backoff_max);
        tracing::info!(address = %self.cfg.address, "AgentX session starting");
        while !self.stopping() {
            match Conn::connect(&self.cfg.address) {
                Ok(conn) => {
                    if self.failures > 0 {
                        tracing::info!(
                            address = %self.cfg.address,
                            failed_attempts = self.failures,
                            "AgentX master reachable again"
                        );
                    }
                    self.failures = 0;
                    self.last_error = None;
                    let started = Instant::now();
                    match self.converse(conn) {
                        End::Shutdown => break,
                        End::Lost(why) => {
                            tracing::warn!(address = %self.cfg.address, "AgentX session lost: {why}; reconnecting");
                            // A session that lived a while starts over at the
                            // shortest delay.
                            if started.elapsed() > self.cfg.backoff_max {
                                backoff.reset();
                            }
                        }
                    }
                }
                Err(e) => {
                    self.failures += 1;
                    let msg = format!("{} ({:?})", e, e.kind());
                    let changed = self.last_error.as_deref() != Some(msg.as_str());
                    if self.failures == 1 || changed || self.failures.is_multiple_of(LOG_EVERY) {
                        tracing::warn!(
                            address = %self.cfg.address,
                            attempt = self.failures,
                            "cannot connect to AgentX master: {msg}; retrying with backoff up to {:?}",
                            self.cfg.backoff_max
                        );
                    }
                    self.last_error = Some(msg);
                }
            }
            self.idle(backoff.next_delay());
        }
        tracing::info!("AgentX session stopped");
    }

    fn converse(&mut self, conn: Conn) -> End {
        let now = Instant::now();
        let mut c = Conversation {
            conn,
            framer: Framer::new(self.cfg.max_pdu),
            session_id: None,
            next_packet: 1,
            outstanding: Vec::new(),
            regs: self
                .cfg
                .subtrees
                .iter()
                .map(|s| Registration {
                    subtree: s.clone(),
                    state: RegState::RetryAt(now),
                    backoff: Backoff::new(self.cfg.backoff_min, self.cfg.backoff_max),
                    failures: 0,
                })
                .collect(),
            next_ping: now,
            cache: VecDeque::new(),
        };
        let end = self.converse_inner(&mut c);
        self.shared.connected.store(false, Ordering::SeqCst);
        self.shared.registered.store(false, Ordering::SeqCst);
        if let End::Shutdown = end
            && let Some(sid) = c.session_id
        {
            let id = c.next_packet;
            let close = Pdu::new(
                sid,
                0,
                id,
                Payload::Close {
                    reason: CloseReason::Shutdown,
                },
            );
            match self.send(&mut c, &close) {
                Ok(()) => tracing::info!("AgentX session closed (reasonShutdown)"),
                Err(e) => tracing::warn!("AgentX Close not sent: {e}"),
            }
        }
        end
    }

    fn send(&self, c: &mut Conversation, pdu: &Pdu) -> Result<(), String> {
        let bytes = pdu::encode(pdu, self.cfg.byte_order)
            .map_err(|e| format!("cannot encode {:?}: {e}", pdu.payload.pdu_type()))?;
        c.conn
            .write_all(&bytes)
            .map_err(|e| format!("write failed: {e} ({:?})", e.kind()))
    }

    fn send_request(
        &self,
        c: &mut Conversation,
        kind: Outstanding,
        payload: Payload,
    ) -> Result<u32, String> {
        let id = c.next_packet;
        c.next_packet = c.next_packet.wrapping_add(1).max(1);
        let pdu = Pdu {
            flags: 0,
            session_id: c.session_id.unwrap_or(0),
            transaction_id: id,
            packet_id: id,
            payload,
        };
        self.send(c, &pdu)?;
        c.outstanding.push((id, kind, Instant::now()));
        Ok(id)
    }

    fn converse_inner(&mut self, c: &mut Conversation) -> End {
        let open = Payload::Open {
            timeout: self.cfg.timeout_s,
            id: self.cfg.id.clone(),
            description: self.cfg.description.as_bytes().to_vec(),
        };
        if let Err(e) = self.send_request(c, Outstanding::Open, open) {
            return End::Lost(e);
        }
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            if self.stopping() {
                return End::Shutdown;
            }
            match c.conn.read(&mut buf) {
                Ok(0) => return End::Lost("master closed the connection (EOF)".into()),
                Ok(n) => c.framer.push(&buf[..n]),
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock
                            | io::ErrorKind::TimedOut
                            | io::ErrorKind::Interrupted
                    ) => {}
                Err(e) => return End::Lost(format!("read failed: {e} ({:?})", e.kind())),
            }
            while let Some(frame) = c.framer.next_frame() {
                if let Some(end) = self.on_frame(c, frame) {
                    return end;
                }
            }
            if let Some(end) = self.timers(c) {
                return end;
            }
        }
    }

    /// Registrations, pings, timeouts and queued notifications.
    fn timers(&mut self, c: &mut Conversation) -> Option<End> {
        let now = Instant::now();
        if let Some((_, kind, _)) = c
            .outstanding
            .iter()
            .find(|(_, k, t)| *k != Outstanding::Notify && now.duration_since(*t) > REQUEST_TIMEOUT)
        {
            return Some(End::Lost(format!(
                "no answer from the master to {kind:?} within {REQUEST_TIMEOUT:?}"
            )));
        }
        c.outstanding
            .retain(|(_, _, t)| now.duration_since(*t) <= REQUEST_TIMEOUT);
        c.session_id?;
        for i in 0..c.regs.len() {
            if let RegState::RetryAt(t) = c.regs[i].state
                && now >= t
            {
                let payload = Payload::Register {
                    context: None,
                    timeout: 0,
                    priority: self.cfg.priority,
                    range_subid: 0,
                    subtree: c.regs[i].subtree.clone(),
                    upper_bound: None,
                };
                match self.send_request(c, Outstanding::Register(i), payload) {
                    Ok(id) => c.regs[i].state = RegState::Pending { packet_id: id },
                    Err(e) => return Some(End::Lost(e)),
                }
            }
        }
        if !self.cfg.ping_interval.is_zero() && now >= c.next_ping {
            c.next_ping = now + self.cfg.ping_interval;
            if !c
                .outstanding
                .iter()
                .any(|(_, k, _)| *k == Outstanding::Ping)
                && let Err(e) =
                    self.send_request(c, Outstanding::Ping, Payload::Ping { context: None })
            {
                return Some(End::Lost(e));
            }
        }
        while let Ok(vbs) = self.rx.try_recv() {
            if let Err(e) = self.send_request(
                c,
                Outstanding::Notify,
                Payload::Notify {
                    context: None,
                    varbinds: vbs,
                },
            ) {
                return Some(End::Lost(e));
            }
        }
        None
    }

    fn on_frame(
        &mut self,
        c: &mut Conversation,
        frame: Result<Vec<u8>, FrameError>,
    ) -> Option<End> {
        let bytes = match frame {
            Ok(b) => b,
            Err(FrameError::Oversized { header, max }) => {
                tracing::warn!(
                    "AgentX PDU from master too large ({} bytes, max {max}): answering parseError",
                    header.payload_length as u64 + 20
                );
                return self.answer_error(c, &header, AgentxError::ParseError);
            }
            Err(FrameError::Desync(e)) => {
                // No header to answer: the stream cannot be resynchronised.
                let sid = c.session_id.unwrap_or(0);
                let close = Pdu::new(
                    sid,
                    0,
                    0,
                    Payload::Close {
                        reason: CloseReason::ParseError,
                    },
                );
                let _ = self.send(c, &close);
                return Some(End::Lost(format!(
                    "unparsable AgentX header from master: {e}"
                )));
            }
        };
        let pdu = match pdu::decode(&bytes) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!("malformed AgentX PDU from master: {e}; answering parseError");
                return match e.header {
                    Some(h) => self.answer_error(c, &h, AgentxError::ParseError),
                    None => Some(End::Lost(format!("unparsable AgentX PDU: {e}"))),
                };
            }
        };
        let header = Header {
            version: 1,
            pdu_type: pdu.payload.pdu_type() as u8,
            flags: pdu.flags,
            session_id: pdu.session_id,
            transaction_id: pdu.transaction_id,
            packet_id: pdu.packet_id,
            payload_length: (bytes.len() - pdu::HEADER_LEN) as u32,
        };
        match &pdu.payload {
            Payload::Response { .. } => self.on_response(c, pdu),
            Payload::Close { reason } => Some(End::Lost(format!("master sent Close ({reason:?})"))),
            Payload::Get { .. }
            | Payload::GetNext { .. }
            | Payload::GetBulk { .. }
            | Payload::TestSet { .. }
            | Payload::CommitSet
            | Payload::UndoSet
            | Payload::CleanupSet => self.on_request(c, &header, pdu),
            _ => {
                tracing::warn!(
                    "AgentX {:?} from master is not a request a subagent serves; answering processingError",
                    pdu.payload.pdu_type()
                );
                self.answer_error(c, &header, AgentxError::ProcessingError)
            }
        }
    }

    fn answer_error(&self, c: &mut Conversation, h: &Header, err: AgentxError) -> Option<End> {
        self.shared
            .stats
            .parse_errors
            .fetch_add(1, Ordering::Relaxed);
        if h.pdu_type == PduType::Response as u8 || h.pdu_type == PduType::CleanupSet as u8 {
            // Responses and CleanupSet are never answered.
            return None;
        }
        let resp = Pdu::response_to(h, ResError::Agentx(err), 0, vec![]);
        let bytes = match pdu::encode(&resp, h.byte_order()) {
            Ok(b) => b,
            Err(e) => return Some(End::Lost(format!("cannot encode error response: {e}"))),
        };
        c.conn
            .write_all(&bytes)
            .err()
            .map(|e| End::Lost(format!("write failed: {e} ({:?})", e.kind())))
    }

    fn on_response(&mut self, c: &mut Conversation, pdu: Pdu) -> Option<End> {
        let Payload::Response { error, .. } = pdu.payload else {
            return None;
        };
        let Some(pos) = c
            .outstanding
            .iter()
            .position(|(id, _, _)| *id == pdu.packet_id)
        else {
            tracing::debug!(packet = pdu.packet_id, "unexpected AgentX Response ignored");
            return None;
        };
        let (_, kind, _) = c.outstanding.remove(pos);
        match kind {
            Outstanding::Open => {
                if !error.is_ok() {
                    return Some(End::Lost(format!("master refused Open: {error}")));
                }
                c.session_id = Some(pdu.session_id);
                self.shared.connected.store(true, Ordering::SeqCst);
                self.shared.stats.opens.fetch_add(1, Ordering::Relaxed);
                tracing::info!(
                    address = %self.cfg.address,
                    session = pdu.session_id,
                    "AgentX session open"
                );
                if c.regs.is_empty() {
                    self.shared.registered.store(true, Ordering::SeqCst);
                }
            }
            Outstanding::Register(i) => {
                let prio = self.cfg.priority;
                let reg = c.regs.get_mut(i)?;
                if !matches!(reg.state, RegState::Pending { packet_id } if packet_id == pdu.packet_id)
                {
                    return None;
                }
                if error.is_ok() {
                    tracing::info!(subtree = %reg.subtree, priority = prio, "AgentX subtree registered");
                    reg.state = RegState::Registered;
                    reg.failures = 0;
                    reg.backoff.reset();
                } else {
                    reg.failures += 1;
                    let delay = reg.backoff.next_delay();
                    reg.state = RegState::RetryAt(Instant::now() + delay);
                    if error == ResError::Agentx(AgentxError::DuplicateRegistration) {
                        self.shared
                            .stats
                            .duplicate_registrations
                            .fetch_add(1, Ordering::Relaxed);
                    }
                    if reg.failures == 1 || reg.failures.is_multiple_of(LOG_EVERY) {
                        tracing::error!(
                            subtree = %reg.subtree,
                            priority = prio,
                            attempt = reg.failures,
                            "AgentX Register of {} at priority {} refused: {}{}; retrying with backoff",
                            reg.subtree,
                            prio,
                            error,
                            if error == ResError::Agentx(AgentxError::DuplicateRegistration) {
                                " (another subagent holds this subtree at the same priority)"
                            } else {
                                ""
                            }
                        );
                    }
                }
                let all = c
                    .regs
                    .iter()
                    .all(|r| matches!(r.state, RegState::Registered));
                self.shared.registered.store(all, Ordering::SeqCst);
            }
            Outstanding::Ping => {
                if !error.is_ok() {
                    return Some(End::Lost(format!("master answered Ping with {error}")));
                }
            }
            Outstanding::Notify => {
                if !error.is_ok() {
                    tracing::warn!("master refused Notify: {error}");
                }
            }
        }
        None
    }

    fn on_request(&mut self, c: &mut Conversation, h: &Header, pdu: Pdu) -> Option<End> {
        let key = (h.session_id, h.transaction_id, h.packet_id, h.pdu_type);
        if let Some((_, cached)) = c.cache.iter().find(|(k, _)| *k == key) {
            self.shared
                .stats
                .resends_answered
                .fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                packet = h.packet_id,
                "resent AgentX request answered from cache"
            );
            if let Some(bytes) = cached.clone()
                && let Err(e) = c.conn.write_all(&bytes)
            {
                return Some(End::Lost(format!("write failed: {e} ({:?})", e.kind())));
            }
            return None;
        }
        let txn = SetTxn {
            session_id: h.session_id,
            transaction_id: h.transaction_id,
        };
        let answer: Option<Pdu> = match pdu.payload {
            Payload::Get { ranges, .. } => {
                let names: Vec<Oid> = ranges.iter().map(|r| r.start.clone()).collect();
                let values = self.handler.get_many(&names);
                let vbs = names
                    .into_iter()
                    .zip(values)
                    .map(|(n, v)| VarBind::new(n, v))
                    .collect();
                Some(Pdu::response_to(h, ResError::NO_ERROR, 0, vbs))
            }
            Payload::GetNext { ranges, .. } => {
                let vbs = ranges.iter().map(|r| self.next(r)).collect();
                Some(Pdu::response_to(h, ResError::NO_ERROR, 0, vbs))
            }
            Payload::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges,
                ..
            } => {
                let vbs = get_bulk(
                    self.handler.as_ref(),
                    non_repeaters,
                    max_repetitions,
                    &ranges,
                );
                Some(Pdu::response_to(h, ResError::NO_ERROR, 0, vbs))
            }
            Payload::TestSet { varbinds, .. } => {
                let r = self.handler.test_set(txn, &varbinds);
                Some(set_answer(h, r))
            }
            Payload::CommitSet => Some(set_answer(h, self.handler.commit_set(txn))),
            Payload::UndoSet => Some(set_answer(h, self.handler.undo_set(txn))),
            Payload::CleanupSet => {
                self.handler.cleanup_set(txn);
                None
            }
            _ => None,
        };
        let bytes = match answer {
            Some(p) => match pdu::encode(&p, h.byte_order()) {
                Ok(b) => Some(b),
                Err(e) => {
                    tracing::error!("cannot encode AgentX Response: {e}; answering genErr");
                    let p = Pdu::response_to(h, ResError::Snmp(ErrorStatus::GenErr), 1, vec![]);
                    pdu::encode(&p, h.byte_order()).ok()
                }
            },
            None => None,
        };
        if c.cache.len() >= RESPONSE_CACHE {
            c.cache.pop_front();
        }
        c.cache.push_back((key, bytes.clone()));
        if let Some(b) = bytes
            && let Err(e) = c.conn.write_all(&b)
        {
            return Some(End::Lost(format!("write failed: {e} ({:?})", e.kind())));
        }
        None
    }

    fn next(&self, r: &SearchRange) -> VarBind {
        next_in_range(self.handler.as_ref(), r)
    }
}

fn next_in_range(handler: &dyn MibHandler, r: &SearchRange) -> VarBind {
    match handler.get_next(&r.start, r.include, r.end_bound()) {
        Some(vb) if r.end_bound().is_none_or(|e| vb.name < *e) => vb,
        _ => VarBind::new(r.start.clone(), Value::EndOfMibView),
    }
}

/// RFC 2741 7.2.3.3: the first `non_repeaters` ranges once, the others up
/// to `max_repetitions` times, each repetition starting after the previous
/// answer; stops early once every repeater reached endOfMibView.
pub fn get_bulk(
    handler: &dyn MibHandler,
    non_repeaters: u16,
    max_repetitions: u16,
    ranges: &[SearchRange],
) -> Vec<VarBind> {
    let n = (non_repeaters as usize).min(ranges.len());
    let mut out: Vec<VarBind> = ranges[..n]
        .iter()
        .map(|r| next_in_range(handler, r))
        .collect();
    let mut cursors: Vec<(SearchRange, bool)> =
        ranges[n..].iter().map(|r| (r.clone(), false)).collect();
    if cursors.is_empty() {
        return out;
    }
    for _ in 0..max_repetitions {
        for (r, done) in cursors.iter_mut() {
            if *done {
                out.push(VarBind::new(r.start.clone(), Value::EndOfMibView));
                continue;
            }
            let vb = next_in_range(handler, r);
            if vb.value == Value::EndOfMibView {
                *done = true;
            } else {
                r.start = vb.name.clone();
                r.include = false;
            }
            out.push(vb);
        }
        if cursors.iter().all(|(_, d)| *d) {
            break;
        }
    }
    out
}

fn set_answer(h: &Header, r: Result<(), crate::mib::SetError>) -> Pdu {
    match r {
        Ok(()) => Pdu::response_to(h, ResError::NO_ERROR, 0, vec![]),
        Err(e) => Pdu::response_to(h, ResError::Snmp(e.status), e.index, vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses() {
        assert_eq!(
            "/var/agentx/master".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Unix("/var/agentx/master".into())
        );
        assert_eq!(
            "unix:/tmp/x".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Unix("/tmp/x".into())
        );
        assert_eq!(
            "tcp:127.0.0.1:705".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 705
            }
        );
        assert_eq!(
            "tcp:[::1]:705".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Tcp {
                host: "::1".into(),
                port: 705
            }
        );
        assert_eq!(
            "tcp:[::1]:705".parse::<AgentxAddr>().unwrap().to_string(),
            "tcp:[::1]:705"
        );
        for bad in [
            "",
            "unix:",
            "tcp:host",
            "tcp::705",
            "tcp:h:0",
            "tcp:h:99999",
            "udp:h:1",
        ] {
            let e = bad.parse::<AgentxAddr>().unwrap_err();
            assert!(
                e.to_string().contains("invalid AgentX address"),
                "{bad}: {e}"
            );
        }
        assert_eq!(AgentxAddr::default().to_string(), "unix:/var/agentx/master");
    }

    #[test]
    fn backoff_doubles_to_cap() {
        let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(1));
        let d: Vec<_> = (0..5).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(d, vec![200, 400, 800, 1000, 1000]);
        b.reset();
        assert_eq!(b.next_delay().as_millis(), 200);
    }

    struct Table(Vec<VarBind>);
    impl MibHandler for Table {
        fn get(&self, oid: &Oid) -> Value {
            self.0
                .iter()
                .find(|v| v.name == *oid)
                .map(|v| v.value.clone())
                .unwrap_or(Value::NoSuchObject)
        }
        fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
            self.0
                .iter()
                .find(|v| {
                    (v.name > *start || (include && v.name == *start))
                        && end.is_none_or(|e| v.name < *e)
                })
                .cloned()
        }
    }

    #[test]
    fn get_bulk_per_rfc() {
        let t = Table(
            (1..=3)
                .map(|i| {
                    VarBind::new(
                        Oid::new(&[1, 3, 6, 1, 3, 117, 1, i]),
                        Value::Integer(i as i32),
                    )
                })
                .collect(),
        );
        let r = |s: &[u32]| SearchRange {
            start: Oid::new(s),
            include: false,
            end: Oid::new(&[1, 3, 6, 1, 3, 118]),
        };
        // one non-repeater, one repeater, 5 repetitions: 1 + 3 values + 1 end.
        let out = get_bulk(
            &t,
            1,
            5,
            &[r(&[1, 3, 6, 1, 3, 117, 1, 2]), r(&[1, 3, 6, 1, 3, 117])],
        );
        let names: Vec<String> = out
            .iter()
            .map(|v| format!("{}={:?}", v.name, v.value))
            .collect();
        assert_eq!(
            names,
            vec![
                "1.3.6.1.3.117.1.3=Integer(3)",
                "1.3.6.1.3.117.1.1=Integer(1)",
                "1.3.6.1.3.117.1.2=Integer(2)",
                "1.3.6.1.3.117.1.3=Integer(3)",
                "1.3.6.1.3.117.1.3=EndOfMibView",
            ]
        );
        // max_repetitions 0: only non-repeaters.
        assert_eq!(get_bulk(&t, 1, 0, &[r(&[1]), r(&[1])]).len(), 1);
        // non_repeaters larger than the list.
        assert_eq!(get_bulk(&t, 9, 3, &[r(&[1])]).len(), 1);
    }
}
