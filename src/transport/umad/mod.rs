//! MADs through the Linux umad interface (`/dev/infiniband/umadN`), which
//! also runs unchanged against ibsim under `LD_PRELOAD=libumad2sim.so`.
//!
//! The device file is driven directly (no libibumad): `open`, the
//! `IB_USER_MAD_REGISTER_AGENT` ioctl, and `read`/`write` of `struct
//! ib_user_mad` with the 56-byte header of umad ABI 5 without
//! `IB_USER_MAD_ENABLE_PKEY` (so P_Key index 0 is used for every MAD).
//! Every libc call is in `sys`, and each is one that umad2sim interposes (`open`, `read`,
//! `write`, `ioctl`, `poll`, `close`, `opendir`), which is why nothing goes
//! through `std::fs` (std opens with `open64`, which umad2sim does not see).
//!
//! One port, one file descriptor, two agents on it: PerfMgt (class 0x04,
//! version 1, QP1) and directed-route SMPs (class 0x81, version 1, QP0). A
//! dedicated reader thread waits in `poll()` (umad2sim's descriptors are
//! fake, numbered from 1024, and cannot go into epoll) with a short timeout
//! so it notices shutdown, and queues every completion on the channel of the
//! handle that sent the MAD, which [`UmadTransport::recv`] reads.
//!
//! Handles: [`UmadTransport::pm_handle`] gives further independent handles
//! on the same open port (the sweeper, the write path and the sample poller
//! each own one). Each handle has a route number (0 for the handle `open`
//! returned, 1..=255 for the others) that [`UmadTransport::send`] writes
//! into bits 24..31 of the low 32 bits of the TID (MAD byte 12) of every
//! PerfMgt MAD; the reader sends each completion to the handle its route
//! byte names. The kernel (and umad2sim) rewrite only the high 32 TID bits,
//! so the byte comes back intact in replies and in timeout records. This is
//! the TID layout of [`super::TID_MASK`]: senders allocate and match only
//! the low 24 bits. Directed-route SMP completions go to the handle from
//! [`UmadTransport::smp_handle`] once one exists.
//!
//! Sends: [`UmadTransport::send`] queues the MAD for the device's writer
//! thread and returns; no caller ever waits in `write()`. A kernel device
//! queues a MAD at once, but under umad2sim a `write()` is a send on a
//! socket to ibsim, which blocks for as long as ibsim does not read (a
//! stopped simulator). A write that has not completed within
//! [`SEND_BOUND`] (seen by the next send, or by the reader, which looks
//! every 50 ms), or a full queue, fails the device as a failed read does:
//! one log line, every handle's receive fails, every send is refused until
//! the device is reopened. The blocked writer is left where it is (it
//! holds its device open and ends once its `write()` returns).
//!
//! Timeouts: each MAD carries `timeout_ms`/`retries` from [`UmadConfig`] in
//! its umad header. The kernel needs a non-zero timeout to match a reply to
//! its request (a reply to a MAD sent with timeout 0 is dropped), so the
//! kernel timeout is used, and an expired request comes back through `recv`
//! with `status` 110 (ETIMEDOUT) and the request's header, which the
//! engine treats like its own deadline. Keep `timeout_ms` at or below the
//! engine's per-MAD timeout and `retries` at 0 when the engine retries.
//! ibsim ignores these fields and answers status 110 at once for what it
//! cannot answer.

use std::ffi::CString;
use std::io;
use std::os::fd::AsFd;
use std::os::raw::{c_int, c_ulong};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender, TrySendError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

use arc_swap::ArcSwap;
use std::thread::JoinHandle;
use std::time::Duration;

use super::{Down, Fault, IoFault, MAD_SIZE, MadAddr, MadTransport, OpenError, Received};
use crate::pm::mad::method::{GET as METHOD_GET, RESPONSE_BIT, SET as METHOD_SET};
use crate::time::{Due, Throttle};

pub mod pairs;
mod sys;
mod sysfs;

pub use pairs::ib_ports;
use pairs::select_port;
use sysfs::check_abi;
pub use sysfs::{
    LinkLayer, PortFiles, SYSFS_ROOT_ENV, SysfsCa, SysfsPort, parse_gid, parse_port, read_cas,
    sysfs_root,
};

pub use crate::pm::mad::MGMT_CLASS_PERF as CLASS_PERF_MGT;
pub use crate::smp::CLASS_SMP_DIRECTED;

const SYS_IB: &str = "/sys/class/infiniband";
const SYS_IB_MAD: &str = "/sys/class/infiniband_mad";
const DEV_IB: &str = "/dev/infiniband";
/// umad ABI this module speaks.
const UMAD_ABI_VERSION: u32 = 5;
/// `struct ib_user_mad_hdr_old`: the header without the P_Key index.
const HDR_SIZE: usize = 56;
/// `_IOWR(0x1b, 1, struct ib_user_mad_reg_req)` with the 28-byte request.
const IOCTL_REGISTER_AGENT: c_ulong = 0xC01C_1B01;
/// `_IOW(0x1b, 2, __u32)`.
const IOCTL_UNREGISTER_AGENT: c_ulong = 0x4004_1B02;
/// How often the reader thread looks at the shutdown flag (and at a
/// stalled writer), unless [`UmadConfig::poll`] says otherwise.
pub const POLL: Duration = Duration::from_millis(50);
/// The longest one MAD's `write()` may take before the device counts as
/// failed (a kernel device returns at once; umad2sim blocks while ibsim
/// is stopped).
pub const SEND_BOUND: Duration = Duration::from_millis(250);
/// A write that blocks again after a reopen is logged at warning level at
/// most this often (at debug level in between).
const STALL_LOG_EVERY: Duration = Duration::from_secs(60);
/// The longest a reopen, or the wait for a stopping reader, may hold its
/// caller.
const REOPEN_BOUND: Duration = Duration::from_millis(500);
/// MADs waiting for the writer thread at most (more than every window of
/// every handle holds at once).
const SEND_QUEUE: usize = 4096;
/// One `struct ib_user_mad` as written.
type Frame = [u8; HDR_SIZE + MAD_SIZE];
/// `ETIMEDOUT`, the status of a request the kernel gave up on.
pub const STATUS_TIMEOUT: i32 = libc::ETIMEDOUT;

/// Which port to use and the per-MAD timeout the kernel applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UmadConfig {
    /// CA name as in /sys/class/infiniband (e.g. `mlx5_0`); `None` = any.
    pub ca: Option<String>,
    /// Port number on that CA; `None` = the first active port.
    pub port: Option<u8>,
    /// Kernel response timeout per MAD, in ms (must not be 0: the kernel
    /// then drops the reply).
    pub timeout_ms: u32,
    /// Kernel resends per MAD (0 when the caller retries itself).
    pub retries: u32,
    /// Also receive PerfMgt Get and Set requests sent to this port (to act
    /// as a PMA; they arrive on the handle `open` returned).
    pub serve_perf_mgt: bool,
    /// How often the reader and writer threads look at the stop flag: what
    /// closing the device may wait. A one-shot command, which closes it
    /// at once, gives a short one; the agent wakes up less.
    pub poll: Duration,
}

impl Default for UmadConfig {
    fn default() -> Self {
        UmadConfig {
            ca: None,
            port: None,
            timeout_ms: 100,
            retries: 0,
            serve_perf_mgt: false,
            poll: POLL,
        }
    }
}

/// Why the umad port could not be opened.
pub type UmadError = OpenError;

/// What sysfs says about the local port the transport is bound to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocalPort {
    pub ca: String,
    pub port: u8,
    /// Logical port state: 1 Down, 2 Init, 3 Armed, 4 Active.
    pub state: u8,
    /// The state as sysfs spells it (`4: ACTIVE`).
    pub state_text: String,
    pub lid: u16,
    pub node_guid: u64,
    /// The umad device, e.g. `/dev/infiniband/umad0`.
    pub device: String,
}

/// A MAD transport on one local IB port. Cheap to call from any thread
/// that owns it; see the module documentation for the threading model.
pub struct UmadTransport {
    shared: Arc<Owner>,
    rx: Receiver<Message>,
    /// The route byte stamped into the TID of every PerfMgt MAD sent.
    route: u8,
    /// Whether this handle owns `route` (and frees it on drop); an SMP
    /// handle borrows its parent's.
    owns_route: bool,
}

/// Where the reader sends completions; with the line of a stalled device,
/// which outlives each device a reopen replaces.
struct Routes {
    /// PerfMgt (and other non-SMP) completions by route byte.
    pm: Vec<Option<Sender<Message>>>,
    /// Directed-route SMP completions once split off; else route 0.
    smp: Option<Sender<Message>>,
    /// Each reopen of a device whose writes still block would say it
    /// again: once a minute, with a count.
    stalls: Throttle,
}

impl Default for Routes {
    fn default() -> Routes {
        Routes {
            pm: Vec::new(),
            smp: None,
            stalls: Throttle::every(STALL_LOG_EVERY),
        }
    }
}

impl Routes {
    fn for_completion(&self, class: u8, route: u8) -> Option<&Sender<Message>> {
        if class == CLASS_SMP_DIRECTED
            && let Some(s) = &self.smp
        {
            return Some(s);
        }
        let r = if class == CLASS_SMP_DIRECTED {
            0
        } else {
            route
        };
        self.pm.get(r as usize).and_then(Option::as_ref)
    }
}

/// MAD byte that carries a handle's route: bits 24..31 of the TID's low
/// 32 bits.
pub const ROUTE_BYTE: usize = 12;
/// Most handles one open port can have at once.
pub const MAX_HANDLES: usize = 256;

enum Message {
    Done(Received),
    /// The device failed; sends are refused until it is reopened.
    Fatal(Down),
}

/// The open device: closed (after unregistering the agents) when the last
/// user — transport handles and the reader thread — lets go.
struct Device {
    fd: sys::Fd,
    pm_agent: u32,
    smp_agent: u32,
    timeout_ms: u32,
    retries: u32,
    /// [`UmadConfig::poll`], in milliseconds.
    poll_ms: c_int,
    /// Set when the device failed (a failed read, a stalled write): sends
    /// fail from then on.
    failed: AtomicBool,
    /// The writer thread's queue, once it runs.
    queue: OnceLock<SyncSender<Box<Frame>>>,
    /// When the writer's current `write()` began, in ms after the
    /// process's time origin ([`crate::time::origin`]) plus one; 0 while it
    /// is not in one (an atomic: every send reads it).
    busy_since: AtomicU64,
    /// Opened by a reopen: the reader says so once replies arrive again.
    reopened: AtomicBool,
}

/// Milliseconds after the process's time origin, plus one (never 0).
fn now_ms() -> u64 {
    u64::try_from(crate::time::origin().elapsed().as_millis()).unwrap_or(u64::MAX - 1) + 1
}

impl Device {
    /// Milliseconds the writer has been in its current `write()` (0: not in one).
    fn busy_ms(&self) -> u64 {
        match self.busy_since.load(Ordering::Relaxed) {
            0 => 0,
            since => now_ms().saturating_sub(since),
        }
    }

    /// The writer has been in one `write()` for longer than [`SEND_BOUND`].
    fn stalled(&self) -> bool {
        self.busy_ms() > SEND_BOUND.as_millis() as u64
    }
}

/// Owned by the transport handles: stops and joins the reader on drop.
struct Owner {
    /// The open device; replaced by [`Owner::reopen`].
    device: ArcSwap<Device>,
    cfg: UmadConfig,
    local: LocalPort,
    /// The reader thread of the current device and its stop flag.
    reader: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
    routes: Arc<Mutex<Routes>>,
    /// A reopen runs (see [`UmadTransport::reopen`]).
    reopening: AtomicBool,
}

impl UmadTransport {
    /// Open the configured port (default: the first active port of any CA)
    /// and register the PerfMgt and directed-route SMP agents.
    pub fn open(cfg: &UmadConfig) -> Result<UmadTransport, UmadError> {
        if cfg.timeout_ms == 0 {
            return Err(OpenError::ZeroTimeout);
        }
        check_abi()?;
        let local = select_port(cfg)?;
        let device = Arc::new(open_agents(cfg, &local.device)?);
        let (tx, rx) = mpsc::channel();
        let routes = Arc::new(Mutex::new(Routes {
            pm: vec![Some(tx)],
            ..Routes::default()
        }));
        let reader = spawn_reader(&device, &routes, &local)?;
        tracing::info!(
            ca = %local.ca,
            port = local.port,
            lid = local.lid,
            state = %local.state_text,
            device = %local.device,
            "umad port open"
        );
        Ok(UmadTransport {
            shared: Arc::new(Owner {
                device: ArcSwap::new(device),
                cfg: cfg.clone(),
                local,
                reader: Mutex::new(Some(reader)),
                routes,
                reopening: AtomicBool::new(false),
            }),
            rx,
            route: 0,
            owns_route: true,
        })
    }

    /// The local port this transport is bound to.
    pub fn local_port(&self) -> &LocalPort {
        &self.shared.local
    }

    /// A second handle on the same port that receives the directed-route
    /// SMP completions from now on (no other handle gets them), so discovery
    /// can run while the sweeper owns a PerfMgt handle. PerfMgt MADs it
    /// sends complete on the handle it was split from.
    pub fn smp_handle(&self) -> UmadTransport {
        let (tx, rx) = mpsc::channel();
        self.routes().smp = Some(tx);
        UmadTransport {
            shared: Arc::clone(&self.shared),
            rx,
            route: self.route,
            owns_route: false,
        }
    }

    /// Another independent PerfMgt handle on the same port: it receives the
    /// completions of exactly the MADs it sent (see the module
    /// documentation for the routing), so several engines can share one
    /// port without seeing each other's replies. Fails when
    /// [`MAX_HANDLES`] handles are open.
    pub fn pm_handle(&self) -> Result<UmadTransport, UmadError> {
        let (tx, rx) = mpsc::channel();
        let mut routes = self.routes();
        let free = routes.pm.iter().position(Option::is_none);
        let route = match free {
            Some(i) => i,
            None if routes.pm.len() < MAX_HANDLES => {
                routes.pm.push(None);
                routes.pm.len() - 1
            }
            None => {
                return Err(OpenError::NoFreeHandle {
                    device: self.shared.local.device.clone(),
                    max: MAX_HANDLES,
                });
            }
        };
        routes.pm[route] = Some(tx);
        Ok(UmadTransport {
            shared: Arc::clone(&self.shared),
            rx,
            route: route as u8,
            owns_route: true,
        })
    }

    /// This handle's route byte (0 for the handle `open` returned).
    pub fn route(&self) -> u8 {
        self.route
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        // The routing table holds plain senders: a poisoned lock still
        // holds consistent data.
        self.shared.routes.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for UmadTransport {
    fn drop(&mut self) {
        if self.owns_route {
            let mut routes = self.routes();
            if let Some(slot) = routes.pm.get_mut(self.route as usize) {
                *slot = None;
            }
        }
    }
}

impl MadTransport for UmadTransport {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault> {
        let dev = self.shared.device.load();
        if dev.failed.load(Ordering::Relaxed) {
            return Err(Fault::Down(Down::AwaitingReopen));
        }
        let agent = match mad[1] {
            CLASS_PERF_MGT => dev.pm_agent,
            CLASS_SMP_DIRECTED => dev.smp_agent,
            class => return Err(Fault::NoAgent { class }),
        };
        if to.pkey_index != 0 {
            return Err(Fault::PkeyIndex(to.pkey_index));
        }
        let mut buf: Frame = [0u8; HDR_SIZE + MAD_SIZE];
        // A response (e.g. a PMA answering a forwarded request) expects no
        // reply: no kernel timeout for it.
        let (timeout_ms, retries) = if mad[3] & RESPONSE_BIT != 0 {
            (0, 0)
        } else {
            (dev.timeout_ms, dev.retries)
        };
        encode_header(&mut buf[..HDR_SIZE], agent, timeout_ms, retries, to);
        buf[HDR_SIZE..].copy_from_slice(mad);
        if mad[1] != CLASS_SMP_DIRECTED && mad[3] & RESPONSE_BIT == 0 {
            buf[HDR_SIZE + ROUTE_BYTE] = self.route;
        }
        if dev.stalled() {
            let down = stalled(&dev);
            fatal(&dev, &self.shared.routes, down);
            return Err(Fault::Down(down));
        }
        let Some(queue) = dev.queue.get() else {
            return Err(Fault::Down(Down::WriterStopped));
        };
        match queue.try_send(Box::new(buf)) {
            Ok(()) => Ok(()),
            Err(TrySendError::Full(_)) => {
                let down = Down::QueueFull {
                    queued: SEND_QUEUE,
                    lid: to.lid,
                };
                fatal(&dev, &self.shared.routes, down);
                Err(Fault::Down(down))
            }
            Err(TrySendError::Disconnected(_)) => Err(Fault::Down(Down::WriterStopped)),
        }
    }

    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault> {
        match self.rx.recv_timeout(timeout) {
            Ok(Message::Done(r)) => Ok(Some(r)),
            Ok(Message::Fatal(down)) => Err(Fault::Down(down)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            Err(RecvTimeoutError::Disconnected) => Err(Fault::Down(Down::ReaderStopped)),
        }
    }

    /// Open the device again (for every handle on this port).
    /// Runs on a thread of its own, waited for at most [`REOPEN_BOUND`]:
    /// under umad2sim an open can wait on a simulator that does not
    /// answer. One that takes longer ends (or not) on its own; the next
    /// call until then says a reopen is in progress.
    fn reopen(&mut self) -> Result<(), Fault> {
        if self.shared.reopening.swap(true, Ordering::AcqRel) {
            return Err(Fault::ReopenInProgress);
        }
        let owner = Arc::clone(&self.shared);
        let (tx, rx) = mpsc::channel();
        std::thread::Builder::new()
            .name("umad-reopen".into())
            .spawn(move || {
                let r = owner.reopen();
                owner.reopening.store(false, Ordering::Release);
                let _ = tx.send(r);
            })?;
        match rx.recv_timeout(REOPEN_BOUND) {
            Ok(r) => r.map_err(|e| Fault::Reopen(Box::new(e))),
            Err(_) => Err(Fault::ReopenTimedOut {
                ms: REOPEN_BOUND.as_millis() as u64,
            }),
        }
    }
}

impl Drop for Owner {
    fn drop(&mut self) {
        self.stop_reader();
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        for id in [self.pm_agent, self.smp_agent] {
            if id != u32::MAX {
                let mut arg = id.to_ne_bytes();
                let _ = sys::ioctl(self.fd.as_fd(), IOCTL_UNREGISTER_AGENT, &mut arg);
            }
        }
        // `fd` closes when its `sys::Fd` drops, after this.
    }
}

/// Open `path` and register the PerfMgt and directed-route SMP agents.
fn open_agents(cfg: &UmadConfig, path: &str) -> Result<Device, UmadError> {
    let mut device = Device {
        fd: open_device(path)?,
        pm_agent: u32::MAX,
        smp_agent: u32::MAX,
        timeout_ms: cfg.timeout_ms,
        retries: cfg.retries,
        poll_ms: cfg.poll.as_millis().clamp(1, 1000) as c_int,
        failed: AtomicBool::new(false),
        queue: OnceLock::new(),
        busy_since: AtomicU64::new(0),
        reopened: AtomicBool::new(false),
    };
    // From here on, dropping `device` unregisters and closes.
    let methods: &[u8] = if cfg.serve_perf_mgt {
        &[METHOD_GET, METHOD_SET]
    } else {
        &[]
    };
    let register = |qpn, class, methods, what| {
        register_agent(&device.fd, qpn, class, 1, methods).map_err(|e| OpenError::Register {
            path: path.to_string(),
            what,
            error: e.into(),
        })
    };
    let pm_agent = register(1, CLASS_PERF_MGT, methods, "PerfMgt (class 0x04)");
    device.pm_agent = pm_agent?;
    let smp_agent = register(
        0,
        CLASS_SMP_DIRECTED,
        &[],
        "directed-route SMP (class 0x81)",
    );
    device.smp_agent = smp_agent?;
    Ok(device)
}

/// Start the thread that reads `device`'s completions into `routes`, and
/// its writer thread. The stop flag ends both; only the reader is joined
/// (a writer blocked in `write()` ends when the call returns).
fn spawn_reader(
    device: &Arc<Device>,
    routes: &Arc<Mutex<Routes>>,
    local: &LocalPort,
) -> Result<(Arc<AtomicBool>, JoinHandle<()>), UmadError> {
    let stop = Arc::new(AtomicBool::new(false));
    {
        let (tx, rx) = mpsc::sync_channel(SEND_QUEUE);
        let _ = device.queue.set(tx);
        let device = Arc::clone(device);
        let stop = Arc::clone(&stop);
        let routes = Arc::clone(routes);
        std::thread::Builder::new()
            .name(format!("umad-w-{}-{}", local.ca, local.port))
            .spawn(move || writer(&device, &stop, &rx, &routes))
            .map_err(|e| spawn_error("umad writer", e))?;
    }
    let thread = {
        let device = Arc::clone(device);
        let stop = Arc::clone(&stop);
        let routes = Arc::clone(routes);
        std::thread::Builder::new()
            .name(format!("umad-{}-{}", local.ca, local.port))
            .spawn(move || reader(&device, &stop, &routes))
            .map_err(|e| spawn_error("umad reader", e))?
    };
    Ok((stop, thread))
}

impl Owner {
    /// Stop the reader (and the writer) and wait for the reader for at
    /// most [`REOPEN_BOUND`]: a reader held by a blocked umad2sim call is
    /// left to end on its own (it keeps its device open until then).
    fn stop_reader(&self) {
        let reader = self.reader.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some((stop, thread)) = reader {
            stop.store(true, Ordering::Relaxed);
            let until = Instant::now() + REOPEN_BOUND;
            while !thread.is_finished() && Instant::now() < until {
                std::thread::sleep(Duration::from_millis(5));
            }
            if thread.is_finished() {
                let _ = thread.join();
            } else {
                tracing::debug!("umad reader did not stop in time; left behind");
            }
        }
    }

    /// Close the device and open the same port's device again (its path
    /// is looked up again: a reset HCA may come back under another umadN),
    /// with a new reader; every handle and route carries over.
    fn reopen(&self) -> Result<(), UmadError> {
        self.stop_reader();
        let mut local = self.local.clone();
        let cfg = UmadConfig {
            ca: Some(local.ca.clone()),
            port: Some(local.port),
            ..self.cfg.clone()
        };
        local.device = select_port(&cfg)?.device;
        let device = Arc::new(open_agents(&cfg, &local.device)?);
        device.reopened.store(true, Ordering::Relaxed);
        let reader = spawn_reader(&device, &self.routes, &local)?;
        // The old device closes when its last user lets go.
        self.device.store(device);
        *self.reader.lock().unwrap_or_else(|e| e.into_inner()) = Some(reader);
        // "Reopened" is said by the reader when a reply arrives: under
        // umad2sim the open works while the simulator is still away.
        tracing::debug!(device = %local.device, "umad device opened again");
        Ok(())
    }
}

/// Write the 56-byte umad header (host-endian bookkeeping, network-order
/// address fields).
fn encode_header(h: &mut [u8], agent: u32, timeout_ms: u32, retries: u32, to: &MadAddr) {
    h.fill(0);
    h[0..4].copy_from_slice(&agent.to_ne_bytes());
    // status [4..8] = 0
    h[8..12].copy_from_slice(&timeout_ms.to_ne_bytes());
    h[12..16].copy_from_slice(&retries.to_ne_bytes());
    h[16..20].copy_from_slice(&((HDR_SIZE + MAD_SIZE) as u32).to_ne_bytes());
    h[20..24].copy_from_slice(&to.qpn.to_be_bytes());
    h[24..28].copy_from_slice(&to.qkey.to_be_bytes());
    h[28..30].copy_from_slice(&to.lid.to_be_bytes());
    h[30] = to.sl;
    // path_bits, grh_present, gid_index, hop_limit, traffic_class, gid,
    // flow_label: 0 (no GRH).
}

/// Parse what `read()` returned: header plus up to 256 bytes of MAD (a
/// kernel timeout carries only the 24-byte MAD header).
fn decode_completion(buf: &[u8]) -> Option<Received> {
    if buf.len() < HDR_SIZE + 24 {
        return None;
    }
    let u32_ne = |o: usize| u32::from_ne_bytes([buf[o], buf[o + 1], buf[o + 2], buf[o + 3]]);
    let status = u32_ne(4) as i32;
    let qpn = u32::from_be_bytes([buf[20], buf[21], buf[22], buf[23]]);
    let qkey = u32::from_be_bytes([buf[24], buf[25], buf[26], buf[27]]);
    let lid = u16::from_be_bytes([buf[28], buf[29]]);
    let sl = buf[30];
    let mut mad = Box::new([0u8; MAD_SIZE]);
    let body = &buf[HDR_SIZE..];
    let n = body.len().min(MAD_SIZE);
    mad[..n].copy_from_slice(&body[..n]);
    Some(Received {
        from: MadAddr {
            lid,
            qpn: qpn & 0x00FF_FFFF,
            qkey,
            pkey_index: 0,
            sl,
        },
        status,
        mad,
    })
}

fn spawn_error(what: &'static str, e: io::Error) -> OpenError {
    OpenError::Spawn {
        what,
        error: e.into(),
    }
}

fn reader(dev: &Device, stop: &AtomicBool, routes: &Mutex<Routes>) {
    let mut buf = vec![0u8; HDR_SIZE + MAD_SIZE];
    while !stop.load(Ordering::Relaxed) {
        if dev.stalled() && !dev.failed.load(Ordering::Relaxed) {
            fatal(dev, routes, stalled(dev));
        }
        let revents = match sys::poll_in(dev.fd.as_fd(), dev.poll_ms) {
            Ok(Some(r)) => r,
            Ok(None) => continue,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                fatal(dev, routes, Down::Poll(e.into()));
                return;
            }
        };
        if revents & (libc::POLLERR | libc::POLLHUP | libc::POLLNVAL) != 0
            && revents & libc::POLLIN == 0
        {
            fatal(dev, routes, Down::PollEvents(revents));
            return;
        }
        // Drain everything queued.
        loop {
            let n = match sys::read(dev.fd.as_fd(), &mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => match e.kind() {
                    io::ErrorKind::WouldBlock => break,
                    io::ErrorKind::Interrupted => continue,
                    _ => {
                        fatal(dev, routes, Down::Read(e.into()));
                        return;
                    }
                },
            };
            let Some(rx) = decode_completion(&buf[..n]) else {
                tracing::debug!(bytes = n, "short umad completion ignored");
                continue;
            };
            if rx.status == 0 && dev.reopened.swap(false, Ordering::Relaxed) {
                tracing::info!("umad port reopened: replies arrive again");
            }
            deliver(routes, rx);
        }
    }
}

/// Hand a completion to the handle it belongs to.
fn deliver(routes: &Mutex<Routes>, rx: Received) {
    let class = rx.mad[1];
    // A request that arrived (a PMA's work, see
    // `UmadConfig::serve_perf_mgt`) carries the requester's TID: it goes to
    // the first handle. Replies and timeout records of our own requests
    // carry a route byte.
    let incoming = rx.status == 0 && rx.mad[3] & RESPONSE_BIT == 0;
    let route = if incoming { 0 } else { rx.mad[ROUTE_BYTE] };
    let to = routes
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .for_completion(class, route)
        .cloned();
    let sent = to.is_some_and(|t| t.send(Message::Done(rx)).is_ok());
    if !sent {
        tracing::trace!(class, route, "umad completion dropped: no such handle");
    }
}

/// The writer thread: writes queued MADs until `stop`. A write that fails
/// comes back to its handle as a completion with the error as its status
/// (the engine retries it or lets it time out); unless the MAD itself was
/// refused (EINVAL), the device counts as failed.
fn writer(dev: &Device, stop: &AtomicBool, rx: &Receiver<Box<Frame>>, routes: &Mutex<Routes>) {
    while !stop.load(Ordering::Relaxed) {
        let frame = match rx.recv_timeout(Duration::from_millis(dev.poll_ms as u64)) {
            Ok(f) => f,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => return,
        };
        dev.busy_since.store(now_ms(), Ordering::Relaxed);
        let r = sys::write(dev.fd.as_fd(), &frame[..]);
        dev.busy_since.store(0, Ordering::Relaxed);
        let errno = match r {
            Ok(n) if n == frame.len() => continue,
            Ok(_) => libc::EIO,
            Err(e) => e.raw_os_error().unwrap_or(libc::EIO),
        };
        tracing::debug!(errno, "umad write failed");
        if let Some(mut done) = decode_completion(&frame[..]) {
            done.status = errno;
            deliver(routes, done);
        }
        // EINVAL is about the MAD itself; anything else about the device.
        if errno != libc::EINVAL {
            fatal(dev, routes, Down::Write(IoFault::Os(errno)));
        }
    }
}

fn stalled(dev: &Device) -> Down {
    Down::WriteBlocked {
        ms: dev.busy_ms(),
        bound_ms: SEND_BOUND.as_millis() as u64,
    }
}

/// Tell every receiver that the device failed (once per device: the first
/// caller logs it).
fn fatal(dev: &Device, routes: &Mutex<Routes>, down: Down) {
    if dev.failed.swap(true, Ordering::Relaxed) {
        return;
    }
    let mut routes = routes.lock().unwrap_or_else(|e| e.into_inner());
    if dev.stalled() {
        let log = &mut routes.stalls;
        match log.at(Instant::now()) {
            Some(Due { total: n, .. }) => tracing::warn!(stalls = n, "{down}"),
            None => tracing::debug!(stalls = log.total(), "{down}"),
        }
    } else {
        tracing::warn!("{down}");
    }
    for tx in routes.pm.iter().flatten().chain(routes.smp.iter()) {
        let _ = tx.send(Message::Fatal(down));
    }
}

fn cstring(s: &str) -> Result<CString, UmadError> {
    CString::new(s).map_err(|_| OpenError::NulInPath(s.to_string()))
}

fn open_device(path: &str) -> Result<sys::Fd, UmadError> {
    let c = cstring(path)?;
    sys::open(&c, libc::O_RDWR | libc::O_NONBLOCK).map_err(|e| OpenError::OpenDevice {
        path: path.to_string(),
        error: e.into(),
    })
}

/// `struct ib_user_mad_reg_req`: id, method_mask[4 x u32], qpn, class,
/// class version, oui[3], rmpp version — 27 bytes, padded to 28. With an
/// empty `methods` the agent only sends requests and gets their replies;
/// each method listed is also received unsolicited.
fn register_agent(
    fd: &sys::Fd,
    qpn: u8,
    class: u8,
    version: u8,
    methods: &[u8],
) -> io::Result<u32> {
    let mut req = [0u8; 28];
    for &m in methods {
        // method_mask is a 128-bit bitmap of host-endian u32 words.
        let word = 4 + 4 * usize::from(m / 32);
        let mut w = u32::from_ne_bytes([req[word], req[word + 1], req[word + 2], req[word + 3]]);
        w |= 1 << (m % 32);
        req[word..word + 4].copy_from_slice(&w.to_ne_bytes());
    }
    req[20] = qpn;
    req[21] = class;
    req[22] = version;
    sys::ioctl(fd.as_fd(), IOCTL_REGISTER_AGENT, &mut req)?;
    Ok(u32::from_ne_bytes([req[0], req[1], req[2], req[3]]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout_matches_ib_user_mad_hdr_old() {
        let mut h = [0xAAu8; HDR_SIZE];
        let to = MadAddr {
            lid: 0x1234,
            qpn: 1,
            qkey: 0x8001_0000,
            pkey_index: 0,
            sl: 3,
        };
        encode_header(&mut h, 7, 100, 2, &to);
        assert_eq!(u32::from_ne_bytes(h[0..4].try_into().unwrap()), 7);
        assert_eq!(u32::from_ne_bytes(h[8..12].try_into().unwrap()), 100);
        assert_eq!(u32::from_ne_bytes(h[12..16].try_into().unwrap()), 2);
        assert_eq!(&h[20..24], &[0, 0, 0, 1]);
        assert_eq!(&h[24..28], &[0x80, 0x01, 0, 0]);
        assert_eq!(&h[28..30], &[0x12, 0x34]);
        assert_eq!(h[30], 3);
        assert!(h[31..].iter().all(|&b| b == 0));
    }

    #[test]
    fn completion_roundtrip_and_short_timeout_record() {
        let mut buf = vec![0u8; HDR_SIZE + 24];
        buf[4..8].copy_from_slice(&110u32.to_ne_bytes());
        buf[28..30].copy_from_slice(&9u16.to_be_bytes());
        buf[HDR_SIZE + 1] = CLASS_PERF_MGT;
        buf[HDR_SIZE + 15] = 0x42;
        let r = decode_completion(&buf).unwrap();
        assert_eq!(r.status, STATUS_TIMEOUT);
        assert_eq!(r.from.lid, 9);
        assert_eq!(r.mad[1], CLASS_PERF_MGT);
        assert_eq!(r.mad[15], 0x42);
        assert!(r.mad[24..].iter().all(|&b| b == 0));
        assert!(decode_completion(&buf[..HDR_SIZE + 10]).is_none());
    }
}
