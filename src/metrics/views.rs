//! The paths of the metrics endpoint besides the metrics: the status page
//! and `/api/health`, both the report ([`super::status`]) of the latest
//! snapshot as asked by the query string ([`ready`]: made once per
//! snapshot and query, off the request path while they are read).

pub mod ready;

use std::time::Instant;

use super::plan_diff;
use super::status::{Query, Report, report};
use crate::fabric::cache::Snapshot;

/// What a path of the metrics endpoint shows besides the metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// `/`: the status page.
    Page,
    /// `/api/health`: the report as JSON.
    Json,
    /// `/api/topology/diff`: what is not as planned, as JSON.
    PlanDiff,
    /// `/api/events`: the event log as JSON.
    Events,
    /// `/api/hosts`: the hosts' links rolled up, as JSON.
    Hosts,
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
            "/api/topology/diff" => Some(View::PlanDiff),
            "/api/events" => Some(View::Events),
            "/api/hosts" => Some(View::Hosts),
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
    events: Option<&crate::events::Log>,
) -> Result<(&'static str, Vec<u8>), String> {
    match view {
        View::Topology => return super::topology::answer(query, snap),
        View::Events => {
            let f = super::events_api::parse(query, now_ms)?;
            return Ok((JSON_TYPE, super::events_api::render(events, &f, now_ms)));
        }
        View::Hosts => {
            let unhealthy = super::hosts::parse_query(query)?;
            let h = super::hosts::roll_up(snap, unhealthy);
            return Ok((JSON_TYPE, super::hosts::render(&h)));
        }
        View::Page | View::Json | View::PlanDiff => {}
    }
    let q = Query::parse(query)?;
    if view == View::PlanDiff {
        let d = plan_diff::diff_report(&snap.plan, plan_diff::MAX_ROWS);
        return Ok((JSON_TYPE, plan_diff::render_json(&d)));
    }
    let (page, json) = report_views(snap, &q, metrics, (now_ms, now), events);
    Ok(match view {
        View::Page => (PAGE_TYPE, page.into_bytes()),
        _ => (JSON_TYPE, json),
    })
}

/// The two views of one report of `snap` as `q` asks: the status page
/// and `/api/health`'s JSON (the endpoint keeps both, [`ready`]).
pub fn report_views(
    snap: &Snapshot,
    q: &Query,
    metrics: &str,
    (now_ms, now): (u64, Instant),
    events: Option<&crate::events::Log>,
) -> (String, Vec<u8>) {
    let r = report(snap, now_ms, now, q);
    let json = super::health_api::render(&r);
    (page(&r, q, snap, metrics, now_ms, events), json)
}

/// The content type of the status page.
pub const PAGE_TYPE: &str = "text/html; charset=utf-8";
/// The content type of `/api/health` (and the other JSON views).
pub const JSON_TYPE: &str = "application/json";

/// The status page of report `r` (made of `snap` as `q` asks at `now_ms`):
/// the report, what is not as planned and the last hour of `events`.
pub fn page(
    r: &Report,
    q: &Query,
    snap: &Snapshot,
    metrics: &str,
    now_ms: u64,
    events: Option<&crate::events::Log>,
) -> String {
    let d = plan_diff::diff_report(&snap.plan, q.limit);
    let last_hour = super::events_page::section(events, snap, now_ms);
    let page = super::page::render_with(r, q, metrics, |o| plan_diff::page_section(o, &d, now_ms));
    super::events_page::insert(page, &last_hour)
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
        assert_eq!(
            View::of_path("/api/topology/diff", "/metrics"),
            Some(View::PlanDiff)
        );
        assert_eq!(View::of_path("/api/events", "/metrics"), Some(View::Events));
        assert_eq!(View::of_path("/api/hosts", "/metrics"), Some(View::Hosts));
    }

    #[test]
    fn the_plan_diff_and_the_page_read_the_snapshot_verdicts() {
        use crate::ib::cabling::{Mismatch, PlanSource, PlanVerdict, PlanVerdicts};
        let plan = std::sync::Arc::new(PlanVerdicts {
            sweep: 1,
            source: Some(PlanSource::Baseline),
            verdicts: std::sync::Arc::from(vec![PlanVerdict {
                raised: 1,
                name: Some("rack3-node7".into()),
                ..PlanVerdict::new(Mismatch::AbsentNode, crate::ib::Guid(7), 0, 0)
            }]),
            ..Default::default()
        });
        let snap = Snapshot {
            plan,
            ..Default::default()
        };
        let now = (0, Instant::now());
        let (ty, body) = answer(View::PlanDiff, "", &snap, "/metrics", now, None).unwrap();
        assert_eq!(ty, "application/json");
        let d = plan_diff::parse(&body).unwrap();
        assert_eq!(d.mismatches[0].kind, "absent_node");
        let (_, page) = answer(View::Page, "", &snap, "/metrics", now, None).unwrap();
        let page = String::from_utf8(page).unwrap();
        assert!(page.contains("rack3-node7 is in the plan"), "{page}");
    }

    #[test]
    fn a_bad_query_is_an_answer_not_a_panic() {
        let snap = Snapshot::default();
        let now = (0, Instant::now());
        let e = answer(View::Json, "limit=0", &snap, "/metrics", now, None).unwrap_err();
        assert!(e.contains("limit"), "{e}");
        let (ty, body) = answer(View::Page, "", &snap, "/metrics", now, None).unwrap();
        assert_eq!(ty, "text/html; charset=utf-8");
        assert!(String::from_utf8(body).unwrap().contains("badge stale"));
        let (ty, body) = answer(View::Json, "top=0", &snap, "/metrics", now, None).unwrap();
        assert_eq!(ty, "application/json");
        assert!(body.starts_with(b"{\"schema\":1,"));
        let e = answer(View::Events, "since=99d", &snap, "/metrics", now, None).unwrap_err();
        assert!(e.contains("since"), "{e}");
        let e = answer(View::Hosts, "x=1", &snap, "/metrics", now, None).unwrap_err();
        assert!(e.contains("unhealthy"), "{e}");
        let (_, body) = answer(View::Events, "since=1h", &snap, "/metrics", now, None).unwrap();
        assert!(body.starts_with(b"{\"schema\":1,"));
    }
}
