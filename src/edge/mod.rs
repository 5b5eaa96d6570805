//! The admission core below both network edges (the SNMP responder and
//! the metrics endpoint), pure: time is an argument and the edges do the
//! I/O.
//!
//! - [`net`]: the `sources` networks, and the keys the edges count by (a
//!   source: an address, an IPv6 /64; a network: an IPv4 /24, an IPv6 /64);
//! - [`rate`]: requests per source, a token bucket each;
//! - [`head`]: what an HTTP edge reads from a request head;
//! - [`gate`]: who may connect, decided at accept (listed, within its rate);
//! - [`slots`]: the connection table, in all and by network, each
//!   connection's phase and when it ends; a connection without a whole
//!   head, else the longest idle, makes room;
//! - [`render`]: renders at once and each response's time;
//! - [`secret`]: a secret either edge holds, wiped, never printed;
//! - [`refusal`]: the one table of the refusal kinds of both edges, their
//!   counters and their throttled log lines.

pub mod gate;
pub mod head;
pub mod net;
pub mod rate;
pub mod refusal;
pub mod render;
pub mod secret;
pub mod slots;

use std::time::Duration;

pub use gate::Gate;
pub use net::Network;
pub use refusal::{Edge, Refusal, RefusalCounts, RefusalLog};
pub use secret::Secret;
pub use slots::SlotLimits;

/// Connections of one source that have not sent a whole request head, at
/// once (a client sends its head at once; more are an attack's).
pub const PENDING_PER_SOURCE: usize = 4;

/// An HTTP edge's bounds (the `[metrics]` limits).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Connections at once.
    pub connections: usize,
    /// Connections at once from one network (/24, /64).
    pub per_network: usize,
    /// Requests a second per source (0: no limit), after `burst`.
    pub rate: u32,
    pub burst: u32,
    /// Renders at once in all (0: the number of cores).
    pub renders: usize,
    /// Time for a request head.
    pub head_timeout: Duration,
    /// How long a kept-alive connection may idle between requests.
    pub idle_timeout: Duration,
    /// Time for a whole response (less when the scraper asks for less).
    pub response_timeout: Duration,
    /// Octets a second a client must take a response at (0: no minimum).
    pub min_rate: u64,
    /// A connection's whole life.
    pub lifetime: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            connections: 64,
            per_network: 16,
            rate: 10,
            burst: 20,
            renders: 0,
            head_timeout: Duration::from_secs(5),
            idle_timeout: Duration::from_secs(120),
            response_timeout: Duration::from_secs(30),
            min_rate: 16 * 1024,
            lifetime: Duration::from_secs(3600),
        }
    }
}

impl Limits {
    /// The connection table's part.
    pub fn slots(&self) -> SlotLimits {
        SlotLimits {
            total: self.connections,
            per_network: self.per_network,
            head_timeout: self.head_timeout,
            idle_timeout: self.idle_timeout,
            lifetime: self.lifetime,
            pending_per_source: PENDING_PER_SOURCE,
        }
    }

    /// Renders at once: as configured, or the number of cores.
    pub fn renders(&self) -> usize {
        match self.renders {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}
