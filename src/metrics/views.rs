//! The paths of the metrics endpoint besides the metrics: the status page
//! and `/api/health`, both the report ([`super::status`]) of the latest
//! snapshot as asked by the query string.

use std::time::Instant;

use super::status::{Query, report};
use crate::fabric::cache::Snapshot;

/// What a path of the metrics endpoint shows besides the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `/`: the status page.
    Page,
    /// `/api/health`: the report as JSON.
    Json,
    /// `/api/topology`: the fabric as found ([`super::topology`]).
    Topology,
}

impl View {
    /// The view at `path`, unless the metrics are there.
    pub fn of_path(path: &str, metrics: &str) -> Option<View> {
        match path {
            _ if path == metrics => None,
            "/" => Some(View::Page),
            "/api/health" => Some(View::Json),
            "/api/topology" => Some(View::Topology),
            _ => None,
        }
    }
}

/// The answer of `view` for the query string `query`: its content type
/// and body, or why the query is refused (a 400).
pub fn answer(
    view: View,
    query: &str,
    snap: &Snapshot,
    metrics: &str,
    (now_ms, now): (u64, Instant),
) -> Result<(&'static str, Vec<u8>), String> {
    let page = match view {
        View::Topology => return super::topology::answer(query, snap),
        View::Page => true,
        View::Json => false,
    };
    let q = Query::parse(query)?;
    let r = report(snap, now_ms, now, &q);
    Ok(if page {
        (
            "text/html; charset=utf-8",
            super::page::render(&r, &q, metrics).into_bytes(),
        )
    } else {
        ("application/json", super::health_api::render(&r))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_leave_the_metrics_path_to_the_metrics() {
        assert_eq!(View::of_path("/", "/metrics"), Some(View::Page));
        assert_eq!(View::of_path("/api/health", "/metrics"), Some(View::Json));
        assert_eq!(
            View::of_path("/api/topology", "/metrics"),
            Some(View::Topology)
        );
        assert_eq!(View::of_path("/", "/"), None);
        assert_eq!(View::of_path("/api/health", "/api/health"), None);
        assert_eq!(View::of_path("/metrics", "/metrics"), None);
        assert_eq!(View::of_path("/other", "/metrics"), None);
    }

    #[test]
    fn a_bad_query_is_an_answer_not_a_panic() {
        let snap = Snapshot::default();
        let now = (0, Instant::now());
        let e = answer(View::Json, "limit=0", &snap, "/metrics", now).unwrap_err();
        assert!(e.contains("limit"), "{e}");
        let (ty, body) = answer(View::Page, "", &snap, "/metrics", now).unwrap();
        assert_eq!(ty, "text/html; charset=utf-8");
        assert!(String::from_utf8(body).unwrap().contains("badge stale"));
        let (ty, body) = answer(View::Json, "top=0", &snap, "/metrics", now).unwrap();
        assert_eq!(ty, "application/json");
        assert!(body.starts_with(b"{\"schema\":1,"));
    }
}
