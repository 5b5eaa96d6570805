//! The fabric as Prometheus metrics: the snapshot the SNMP view reads,
//! rendered as the Prometheus text format or OpenMetrics over HTTP(S). A
//! scrape renders the latest snapshot; it never waits on the fabric and
//! never holds the sweeper.
//!
//! - [`auth`]: basic authentication against bcrypt hashes, bounded;
//! - [`decide`]: what a request is answered, from its head alone, pure;
//! - [`families`]: every metric family, declared once over the MIB's
//!   columns, and the collectors that group them;
//! - [`render`]: the exposition, pure (a snapshot in, bytes out);
//! - [`web`]: the web configuration file exporter-toolkit reads (TLS,
//!   basic auth, headers);
//! - [`status`]: the status report (what is wrong now) of a snapshot and
//!   its verdicts, pure; [`page`] shows it as HTML (the page at `/`),
//!   [`health_api`] as JSON (`/api/health`); [`views`] answers their
//!   paths, from views made once per sweep and query;
//! - [`http`]: the HTTP edge (hyper on the edge runtime) over the
//!   admission core [`crate::edge`]: authentication, gzip, a body streamed
//!   as it is rendered.

pub mod auth;
pub mod decide;
pub mod events_api;
pub mod events_page;
pub mod families;
pub mod health_api;
pub mod hosts;
pub mod http;
pub mod page;
pub mod plan_diff;
pub mod render;
pub mod status;
pub mod stream;
#[cfg(test)]
pub(crate) mod tests;
pub mod topology;
pub mod views;
pub mod web;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

pub use families::{Collector, Collectors};
pub use http::{MetricsHandle, serve};

use crate::edge::refusal::{RefusalCounts, RefusalFigures};
use crate::edge::{Limits, Network};

/// What the endpoint serves and to whom (the `[metrics]` section, typed).
#[derive(Clone, Debug)]
pub struct MetricsSettings {
    pub listen: SocketAddr,
    /// Clients outside these networks are closed at accept.
    pub sources: Vec<Network>,
    /// The path of the exposition (`/metrics`).
    pub path: String,
    /// The web configuration file (TLS, basic auth), if any.
    pub web_config: Option<PathBuf>,
    /// The collectors a scrape without `collect[]` gets.
    pub collectors: Collectors,
    /// Connections, rates, renders and times.
    pub limits: Limits,
}

impl MetricsSettings {
    /// The endpoint on `listen` for `sources`, the rest as the `[metrics]`
    /// section's defaults have it (the exposition at `/metrics`, no web
    /// configuration, the default collectors and limits).
    pub fn on(listen: SocketAddr, sources: Vec<Network>) -> MetricsSettings {
        MetricsSettings {
            listen,
            sources,
            path: DEFAULT_PATH.into(),
            web_config: None,
            collectors: Collectors::defaults(),
            limits: Limits::default(),
        }
    }
}

/// Where the exposition is served unless `[metrics] path` says otherwise.
pub const DEFAULT_PATH: &str = "/metrics";

/// The endpoint's own counters, shown in the `agent` collector.
#[derive(Debug, Default)]
pub struct HttpCounters {
    pub scrapes: AtomicU64,
    /// Refused connections and requests, by kind.
    pub refused: RefusalCounts,
}

/// A reading of [`HttpCounters`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HttpFigures {
    pub scrapes: u64,
    pub refused: RefusalFigures,
}

impl HttpCounters {
    pub fn figures(&self) -> HttpFigures {
        HttpFigures {
            scrapes: self.scrapes.load(Ordering::Relaxed),
            refused: self.refused.figures(),
        }
    }

    pub fn bump(a: &AtomicU64) {
        a.fetch_add(1, Ordering::Relaxed);
    }
}
