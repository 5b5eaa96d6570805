//! A small built-in SNMP agent over UDP that answers Get, GetNext, GetBulk and
//! Set from a [`MibHandler`], so the program can be tried with `snmpwalk`
//! where no snmpd is installed. SNMPv2c, and SNMPv1 for Get/GetNext/Set.
//!
//! Behaviour, as a v2c agent such as snmpd has it:
//! - A request whose community is neither the read nor the write community is
//!   dropped without an answer and counted (`bad_communities`); the first one
//!   is logged at debug level.
//! - Undecodable datagrams are dropped, counted (`malformed`) and logged at
//!   debug level; nothing from the network can panic the responder.
//! - GetNext/GetBulk ask `handler.get_next(start, false, None)`; the end of
//!   the MIB is `endOfMibView` (v1: `noSuchName`).
//! - GetBulk follows RFC 3416 4.2.3. Responses never exceed
//!   [`ResponderConfig::max_message_size`] (at most 65507, the largest UDP
//!   payload): repetitions that do not fit are left off; `tooBig` only when
//!   the non-repeaters alone do not fit.
//! - Each source address gets at most [`Responder::with_rate_limit`]'s
//!   requests per second after a first burst ([`rate`]); the rest are
//!   dropped unanswered, counted (`rate_limited`) and logged at most every
//!   10 s, so spoofed requests cannot turn the responder into a reflector.
//! - Set: with a write community configured and used, the handler's
//!   `test_set` / `commit_set` (then `undo_set` on a failed commit) /
//!   `cleanup_set` run in that order, `cleanup_set` always last. Otherwise a
//!   Set is answered `noAccess` (v1: `noSuchName`), as snmpd answers a Set
//!   through a read-only community.

pub(crate) mod codec;
mod engine;
pub mod rate;
pub mod usm;

pub use engine::{
    MAX_UDP_PAYLOAD, Outcome, RESPONDER_SESSION_ID, ResponderConfig, handle_packet, process,
};

use std::io;
use std::net::{SocketAddr, UdpSocket};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::mib::MibHandler;
use crate::runtime::{EdgeRuntime, OnRuntime};
use rate::RateLimiter;

/// How often, at most, the responder logs that it drops requests over the
/// rate limit.
const RATE_LOG_EVERY: Duration = Duration::from_secs(10);

/// A bound, not yet serving, SNMP responder.
pub struct Responder {
    socket: UdpSocket,
    config: ResponderConfig,
    handler: Arc<dyn MibHandler>,
    limiter: RateLimiter,
}

impl Responder {
    /// Binds a UDP socket on `addr` (use a loopback address unless the agent
    /// is meant to be reachable) that answers requests carrying `community`.
    pub fn bind(
        addr: SocketAddr,
        community: String,
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
            config: ResponderConfig::new(community),
            handler,
            limiter: RateLimiter::new(0, 1),
        })
    }

    /// Enables Set through `community` (which may also read).
    pub fn with_write_community(mut self, community: String) -> Responder {
        self.config.write_community = Some(community);
        self
    }

    /// Caps responses at `octets` (clamped to 484..=65507; 484 is the
    /// smallest message size every SNMP entity must accept).
    pub fn with_max_message_size(mut self, octets: usize) -> Responder {
        self.config.max_message_size = octets.clamp(484, MAX_UDP_PAYLOAD);
        self
    }

    /// Answers at most `rate` requests per second per source address, after
    /// a first `burst` (0: no limit); the others are dropped unanswered.
    pub fn with_rate_limit(mut self, rate: u32, burst: u32) -> Responder {
        self.limiter = RateLimiter::new(rate, burst);
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
        let stats = Arc::new(Counters::default());
        let local_addr = self.socket.local_addr().ok();
        let socket = {
            let _in_runtime = runtime.handle().enter();
            tokio::net::UdpSocket::from_std(self.socket)?
        };
        let serving = Serving {
            socket,
            config: self.config,
            handler: self.handler,
            limiter: self.limiter,
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

/// A responder on the runtime.
struct Serving {
    socket: tokio::net::UdpSocket,
    config: ResponderConfig,
    handler: Arc<dyn MibHandler>,
    limiter: RateLimiter,
}

impl Serving {
    async fn serve(mut self, stop: &Notify, stats: &Counters) {
        if let Ok(a) = self.socket.local_addr() {
            info!(addr = %a, "SNMP responder listening");
        }
        let mut buf = vec![0u8; 65536];
        let mut limited_since_log = 0u64;
        let mut last_rate_log: Option<Instant> = None;
        loop {
            let received = tokio::select! {
                r = self.socket.recv_from(&mut buf) => r,
                _ = stop.notified() => break,
            };
            let (len, peer) = match received {
                Ok(r) => r,
                Err(e) => {
                    // e.g. ECONNREFUSED left over from an earlier send: not fatal.
                    debug!(error = %e, "snmp: recv failed");
                    continue;
                }
            };
            stats.in_packets.fetch_add(1, Ordering::Relaxed);
            let now = Instant::now();
            if !self.limiter.allow(peer.ip(), now) {
                stats.rate_limited.fetch_add(1, Ordering::Relaxed);
                limited_since_log += 1;
                if last_rate_log.is_none_or(|t| now.duration_since(t) >= RATE_LOG_EVERY) {
                    warn!(
                        %peer,
                        dropped = limited_since_log,
                        "snmp: dropping requests over the per-source rate limit (logged at most every 10 s)"
                    );
                    last_rate_log = Some(now);
                    limited_since_log = 0;
                }
                continue;
            }
            let handler = OnRuntime(&*self.handler);
            let outcome = process(&buf[..len], &self.config, &handler);
            match outcome {
                Outcome::Reply(bytes) => match self.socket.send_to(&bytes, peer).await {
                    Ok(_) => {
                        stats.out_packets.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        stats.send_errors.fetch_add(1, Ordering::Relaxed);
                        warn!(%peer, error = %e, len = bytes.len(), "snmp: cannot send response");
                    }
                },
                Outcome::BadCommunity => {
                    if stats.bad_communities.fetch_add(1, Ordering::Relaxed) == 0 {
                        debug!(%peer, "snmp: dropping request with unknown community (logged once)");
                    }
                }
                Outcome::Malformed(_) => {
                    stats.malformed.fetch_add(1, Ordering::Relaxed);
                }
                Outcome::Ignored(why) => {
                    stats.ignored.fetch_add(1, Ordering::Relaxed);
                    debug!(%peer, why, "snmp: ignoring message");
                }
                Outcome::TooBig => {
                    stats.silent_drops.fetch_add(1, Ordering::Relaxed);
                    debug!(%peer, "snmp: response too big even as tooBig; dropped");
                }
            }
        }
        debug!("SNMP responder stopped");
    }
}

#[derive(Default)]
struct Counters {
    in_packets: AtomicU64,
    out_packets: AtomicU64,
    bad_communities: AtomicU64,
    malformed: AtomicU64,
    ignored: AtomicU64,
    silent_drops: AtomicU64,
    send_errors: AtomicU64,
    rate_limited: AtomicU64,
}

/// Counts since the responder started (after the snmpInPkts etc. of SNMPv2-MIB).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResponderStats {
    pub in_packets: u64,
    pub out_packets: u64,
    pub bad_communities: u64,
    pub malformed: u64,
    pub ignored: u64,
    pub silent_drops: u64,
    pub send_errors: u64,
    /// Requests dropped over the per-source rate limit.
    pub rate_limited: u64,
}

/// A running responder; shuts it down when dropped.
pub struct ResponderHandle {
    stop: Arc<Notify>,
    stats: Arc<Counters>,
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
        let c = &self.stats;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        ResponderStats {
            in_packets: l(&c.in_packets),
            out_packets: l(&c.out_packets),
            bad_communities: l(&c.bad_communities),
            malformed: l(&c.malformed),
            ignored: l(&c.ignored),
            silent_drops: l(&c.silent_drops),
            send_errors: l(&c.send_errors),
            rate_limited: l(&c.rate_limited),
        }
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
