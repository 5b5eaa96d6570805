//! The agent's own SNMP endpoint over UDP: Get, GetNext, GetBulk and Set
//! from a [`MibHandler`], for NMSes that read a large fabric faster than
//! snmpd's AgentX path carries it (one round trip per varbind there).
//! SNMPv2c and SNMPv1 (as snmpd answers v1: Get, GetNext, Set).
//!
//! Behaviour, as snmpd has it:
//! - Access rules ([`access`]) name a community, the source networks and
//!   the subtrees it sees, and whether it may write. A datagram from a
//!   source no rule lists is dropped before it is decoded (refused as
//!   `source`); a community no rule gives to the source is dropped too
//!   (`auth`). Neither gets an answer: no address outside the
//!   listed networks draws anything. An address inside them can be spoofed;
//!   what it draws is bounded by the rule's rate guard and
//!   `max_response_octets` (docs/security.md).
//! - Undecodable datagrams are dropped, counted (`bad_request`) and logged
//!   at debug level; nothing from the network can panic the responder.
//! - GetNext/GetBulk walk the rule's view; the end of it is `endOfMibView`
//!   (v1: `noSuchName`).
//! - A request costs at most [`work::STEPS`] steps of the MIB, whatever
//!   its version (genErr past them); an SNMPv1 walk steps over a Counter64
//!   column whole ([`work`]).
//! - GetBulk follows RFC 3416 4.2.3. Responses never exceed the rule's
//!   `max_response_octets` (at most [`MAX_UDP_PAYLOAD`], the largest UDP
//!   payload): repetitions that do not fit are left off; `tooBig` only when
//!   the non-repeaters alone do not fit.
//! - A rule may carry a rate guard (requests per second per source after a
//!   first burst, [`rate`]); every answer is charged to it before it is
//!   built (SNMPv3 Reports and authorizationError included), and requests
//!   over it are dropped, counted (`rate`) and logged at most every
//!   10 s with their number. Without one, every request is answered: a
//!   poller with one request outstanding is never dropped.
//! - Every refusal is counted and logged by its kind in the one table of
//!   both edges' refusals ([`crate::edge::refusal`]). No datagram writes a
//!   log line but through the per-kind throttle ([`KindLog`], the one both
//!   edges use): one line every 10 s per kind of event, with the count.
//! - Set: through a rule that may write, the handler's `test_set` /
//!   `commit_set` (then `undo_set` on a failed commit) / `cleanup_set` run
//!   in that order, `cleanup_set` always last. Otherwise a Set is answered
//!   `noAccess` (v1: `noSuchName`), as snmpd answers a Set through a
//!   read-only community.

/// The SET phases of a [`MibHandler`] that wraps `self.inner` for reads
/// (a view, the endpoint's own objects): passed on unchanged.
macro_rules! delegate_writes {
    () => {
        fn test_set(
            &self,
            txn: crate::mib::SetTxn,
            varbinds: &[crate::mib::VarBind],
        ) -> Result<(), crate::mib::SetError> {
            self.inner.test_set(txn, varbinds)
        }
        fn commit_set(&self, txn: crate::mib::SetTxn) -> Result<(), crate::mib::SetError> {
            self.inner.commit_set(txn)
        }
        fn undo_set(&self, txn: crate::mib::SetTxn) -> Result<(), crate::mib::SetError> {
            self.inner.undo_set(txn)
        }
        fn cleanup_set(&self, txn: crate::mib::SetTxn) {
            self.inner.cleanup_set(txn)
        }
        fn session_closed(&self, session_id: u32) {
            self.inner.session_closed(session_id)
        }
    };
}

pub mod access;
pub(crate) mod ber;
pub(crate) mod codec;
mod engine;
pub mod engine_file;
mod local;
pub mod usm;
pub(crate) mod work;

pub use crate::mib::bulk::MAX_UDP_PAYLOAD;
pub use ber::MIN_MESSAGE_SIZE;
pub use engine::{
    Outcome, Processor, RESPONDER_SESSION_ID, ResponderConfig, handle_packet, process,
};

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::edge::refusal::{Edge, KindLog, Refusal, RefusalLog};
use crate::mib::{EndpointCounters, MibHandler};
use crate::runtime::{EdgeRuntime, OnRuntime};
use usm::Usm;

/// How often, at most, the responder logs that it drops requests.
pub(crate) const DROP_LOG_EVERY: Duration = Duration::from_secs(10);

/// A bound, not yet serving, SNMP responder.
pub struct Responder {
    socket: UdpSocket,
    config: ResponderConfig,
    handler: Arc<dyn MibHandler>,
    counters: Arc<EndpointCounters>,
    usm: Option<(Usm, Instant)>,
}

impl Responder {
    /// Binds a UDP socket on `addr` that answers as `config` allows.
    pub fn bind(
        addr: SocketAddr,
        config: ResponderConfig,
        handler: Arc<dyn MibHandler>,
    ) -> io::Result<Responder> {
        let socket = UdpSocket::bind(addr).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot bind SNMP responder to {addr}: {e}"),
            )
        })?;
        socket.set_nonblocking(true)?;
        Ok(Responder {
            socket,
            config,
            handler,
            counters: Arc::default(),
            usm: None,
        })
    }

    /// Answers SNMPv3 through `usm`, whose engine booted at `booted`.
    pub fn with_usm(mut self, usm: Usm, booted: Instant) -> Responder {
        self.usm = Some((usm, booted));
        self
    }

    /// Counts into `counters` (shared with the MIB view that shows them).
    pub fn with_counters(mut self, counters: Arc<EndpointCounters>) -> Responder {
        self.counters = counters;
        self
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.socket.local_addr()
    }

    pub fn config(&self) -> &ResponderConfig {
        &self.config
    }

    /// Serves on the I/O runtime ([`crate::runtime`]) until the handle is
    /// shut down or dropped; an error when that runtime cannot be created.
    pub fn spawn(self) -> io::Result<ResponderHandle> {
        let runtime = EdgeRuntime::acquire()?;
        let stop = Arc::new(Notify::new());
        let stats = self.counters;
        let local_addr = self.socket.local_addr().ok();
        let socket = {
            let _in_runtime = runtime.handle().enter();
            tokio::net::UdpSocket::from_std(self.socket)?
        };
        let mut processor = Processor::new(self.config);
        if let Some((usm, booted)) = self.usm {
            processor = processor.with_usm(usm, booted);
        }
        let serving = Serving {
            socket,
            processor,
            handler: self.handler,
        };
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let (stop2, stats2) = (stop.clone(), stats.clone());
        runtime.handle().spawn(async move {
            // Dropped when the task ends, also by panic: shutdown returns.
            let _done = done_tx;
            serving.serve(&stop2, &stats2).await;
        });
        Ok(ResponderHandle {
            stop,
            stats,
            local_addr,
            done: Some(done_rx),
            _runtime: runtime,
        })
    }
}

/// The responder's events that are no refusal: no datagram writes a log
/// line but through their [`KindLog`] or the refusals' [`RefusalLog`], at
/// most one line every [`DROP_LOG_EVERY`] per kind, with the number of
/// events it stands for.
#[derive(Clone, Copy)]
enum Event {
    Report,
    Send,
}

impl Event {
    /// How many kinds there are (`Send` is the last).
    const COUNT: usize = Event::Send as usize + 1;
}

/// A responder on the runtime.
struct Serving {
    socket: tokio::net::UdpSocket,
    processor: Processor,
    handler: Arc<dyn MibHandler>,
}

impl Serving {
    async fn serve(mut self, stop: &Notify, stats: &EndpointCounters) {
        if let Ok(a) = self.socket.local_addr() {
            info!(addr = %a, "SNMP responder listening");
        }
        let mut buf = vec![0u8; 65536];
        let mut logs = KindLog::every(Event::COUNT, DROP_LOG_EVERY);
        let mut refusals = RefusalLog::every(Edge::Snmp, DROP_LOG_EVERY);
        loop {
            let received = tokio::select! {
                r = self.socket.recv_from(&mut buf) => r,
                _ = stop.notified() => break,
            };
            let (len, peer) = match received {
                Ok(r) => r,
                Err(e) => {
                    // e.g. ECONNREFUSED left over from an earlier send: not fatal.
                    if let Some(n) = logs.due(Event::Send as usize, Instant::now()) {
                        debug!(error = %e, "snmp: {n} receive error(s) (logged at most every 10 s)");
                    }
                    continue;
                }
            };
            EndpointCounters::bump(&stats.in_packets);
            let now = Instant::now();
            let handler = OnRuntime(&*self.handler);
            let outcome = self
                .processor
                .process(&buf[..len], peer.ip(), now, &handler);
            let ip = peer.ip();
            let is_report = matches!(outcome, Outcome::Report(..));
            let mut refuse = |r: Refusal, detail: &dyn std::fmt::Display| {
                refusals.refuse(&stats.refused, r, ip, detail, now);
            };
            match outcome {
                Outcome::Reply(bytes) | Outcome::Report(_, bytes) => {
                    if is_report && let Some(n) = logs.due(Event::Report as usize, now) {
                        debug!(
                            "snmp: {n} SNMPv3 Report(s) sent (the last to {ip}; logged at most every 10 s)"
                        );
                    }
                    match self.socket.send_to(&bytes, peer).await {
                        Ok(_) => EndpointCounters::bump(&stats.out_packets),
                        Err(e) => {
                            EndpointCounters::bump(&stats.send_errors);
                            if let Some(n) = logs.due(Event::Send as usize, now) {
                                warn!(
                                    "snmp: {n} answer(s) could not be sent (the last, of {} \
                                     octets to {ip}: {e}; logged at most every 10 s)",
                                    bytes.len()
                                );
                            }
                        }
                    }
                }
                Outcome::Unlisted => refuse(Refusal::Source, &"no access rule lists it"),
                Outcome::RateLimited => refuse(Refusal::Rate, &"the rule's rate guard"),
                Outcome::BadCommunity => {
                    refuse(Refusal::Auth, &"a community no rule gives to the source")
                }
                Outcome::UnknownUser => refuse(
                    Refusal::Auth,
                    &"an SNMPv3 user no rule lets ask from the source",
                ),
                Outcome::Malformed(why) => refuse(
                    Refusal::BadRequest,
                    &format_args!("undecodable, {len} octets: {why}"),
                ),
                Outcome::Ignored(why) => refuse(Refusal::BadRequest, &why),
                Outcome::TooBig => refuse(Refusal::TooBig, &"the answer"),
                Outcome::UsmDrop(why) => refuse(Refusal::Usm, &format_args!("{why:?}")),
            }
        }
        debug!("SNMP responder stopped");
    }
}

/// Counts since the responder started (after the snmpInPkts etc. of SNMPv2-MIB).
pub type ResponderStats = crate::mib::EndpointFigures;

/// A running responder; shuts it down when dropped.
pub struct ResponderHandle {
    stop: Arc<Notify>,
    stats: Arc<EndpointCounters>,
    local_addr: Option<SocketAddr>,
    /// Receives nothing; disconnected when the task has ended.
    done: Option<std::sync::mpsc::Receiver<()>>,
    /// Keeps the runtime the responder runs on (dropped after the task ended).
    _runtime: EdgeRuntime,
}

impl ResponderHandle {
    /// The bound address (`None` only if the OS would not say).
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.local_addr
    }

    pub fn stats(&self) -> ResponderStats {
        self.stats.snapshot()
    }

    /// Stops serving (after the request in hand, if any) and waits for it.
    /// Call it from outside the I/O runtime.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        self.stop.notify_one();
        if let Some(done) = self.done.take() {
            // Err(RecvError) once the task has ended and dropped its sender.
            let _ = done.recv();
        }
    }
}

impl Drop for ResponderHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

#[cfg(test)]
mod tests;
