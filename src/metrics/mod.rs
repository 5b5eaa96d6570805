//! The fabric as Prometheus metrics: the snapshot the SNMP view reads,
//! rendered as the Prometheus text format or OpenMetrics over HTTP(S). A
//! scrape renders the latest snapshot; it never waits on the fabric and
//! never holds the sweeper.
//!
//! - [`families`]: every metric family, declared once over the MIB's
//!   columns, and the collectors that group them;
//! - [`render`]: the exposition, pure (a snapshot in, bytes out);
//! - [`web`]: the web configuration file exporter-toolkit reads (TLS,
//!   basic auth, headers);
//! - [`status`]: the status report (what is wrong now) of a snapshot and
//!   its verdicts, pure; [`page`] shows it as HTML (the page at `/`),
//!   [`health_api`] as JSON (`/api/health`); [`views`] answers their
//!   paths;
//! - [`http`]: the HTTP edge (hyper on the edge runtime): sources, limits,
//!   authentication, gzip, a body streamed as it is rendered.

pub mod families;
pub mod health_api;
pub mod http;
pub mod page;
pub mod render;
pub mod status;
#[cfg(test)]
pub(crate) mod tests;
pub mod views;
pub mod web;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub use families::{Collector, Collectors};
pub use http::{MetricsHandle, serve};

use crate::snmp::access::Network;

/// What the endpoint serves and to whom (the `[metrics]` section, typed).
#[derive(Clone, Debug)]
pub struct MetricsSettings {
    pub listen: SocketAddr,
    /// Clients outside these networks get 403.
    pub sources: Vec<Network>,
    /// The path of the exposition (`/metrics`).
    pub path: String,
    /// The web configuration file (TLS, basic auth), if any.
    pub web_config: Option<PathBuf>,
    /// The collectors a scrape without `collect[]` gets.
    pub collectors: Collectors,
}

/// The endpoint's own counters, shown in the `agent` collector.
#[derive(Debug, Default)]
pub struct HttpCounters {
    pub scrapes: AtomicU64,
    pub source: AtomicU64,
    pub auth: AtomicU64,
    pub rate: AtomicU64,
    pub busy: AtomicU64,
    pub bad_request: AtomicU64,
    pub tls: AtomicU64,
    pub timeout: AtomicU64,
}

/// A reading of [`HttpCounters`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HttpFigures {
    pub scrapes: u64,
    pub source: u64,
    pub auth: u64,
    pub rate: u64,
    pub busy: u64,
    pub bad_request: u64,
    pub tls: u64,
    pub timeout: u64,
}

impl HttpFigures {
    /// The refusals by reason, as the `reason` label names them.
    pub fn refusals(&self) -> [(&'static str, u64); 7] {
        [
            ("source", self.source),
            ("auth", self.auth),
            ("rate", self.rate),
            ("busy", self.busy),
            ("bad_request", self.bad_request),
            ("tls", self.tls),
            ("timeout", self.timeout),
        ]
    }
}

impl HttpCounters {
    pub fn figures(&self) -> HttpFigures {
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        HttpFigures {
            scrapes: l(&self.scrapes),
            source: l(&self.source),
            auth: l(&self.auth),
            rate: l(&self.rate),
            busy: l(&self.busy),
            bad_request: l(&self.bad_request),
            tls: l(&self.tls),
            timeout: l(&self.timeout),
        }
    }

    pub fn bump(a: &AtomicU64) {
        a.fetch_add(1, Ordering::Relaxed);
    }
}
