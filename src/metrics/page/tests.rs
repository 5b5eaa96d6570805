use std::time::Instant;

use super::*;
use crate::metrics::status::{Query, report};
use crate::metrics::tests::unhealthy;

#[test]
fn fabric_text_is_escaped() {
    assert_eq!(
        escape("<script>alert(\"x\")</script> & 'y'"),
        "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
    );
    assert_eq!(escape("a\u{0}b\nc"), "a\u{fffd}b\u{fffd}c");
}

#[test]
fn ages_read_in_two_units() {
    assert_eq!(age(0), "0 s");
    assert_eq!(age(61_500), "1 m 1 s");
    assert_eq!(age(3_600_000 * 5 + 60_000 * 3), "5 h 3 m");
    assert_eq!(age(86_400_000 * 2 + 3_600_000), "2 d 1 h");
}

#[test]
fn the_page_shows_the_unhealthy_link_and_refreshes_itself() {
    let u = unhealthy();
    let q = Query::default();
    let r = report(&u.snap, u.now, Instant::now(), &q);
    let html = render(&r, &q, "/metrics");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<meta http-equiv=\"refresh\" content=\"10\">"));
    assert!(html.contains("name=\"viewport\""));
    assert!(!html.contains("<script") && !html.contains("http://") && !html.contains("https://"));
    let l = &r.unhealthy_links.rows[0];
    let row = format!(
        "<tr class=\"link\"><td>{} &harr; {}</td>",
        escape(&l.a.name),
        escape(&l.b.as_ref().unwrap().name)
    );
    assert!(html.contains(&row), "{row}\n{html}");
    assert!(html.contains("<span class=\"c link_lost\""));
    assert!(html.contains(&escape(&r.unreachable_nodes.rows[0].name)));
    assert!(html.contains("<span class=\"badge unhealthy\" id=\"status\">unhealthy</span>"));
    assert!(html.contains("<a href=\"/metrics\">metrics</a>"));
    // Sections in order of severity.
    let at = |id: &str| html.find(&format!("<h2 id=\"{id}\"")).unwrap();
    assert!(at("agent") < at("nodes") && at("nodes") < at("unhealthy"));
    assert!(at("unhealthy") < at("degraded") && at("degraded") < at("errors"));
    assert!(at("errors") < at("congestion"));
}

#[test]
fn a_section_says_how_many_more_there_are() {
    let u = unhealthy();
    let q = Query::parse("limit=1&top=1&condition=link_lost").unwrap();
    let r = report(&u.snap, u.now, Instant::now(), &q);
    let html = render(&r, &q, "/metrics");
    let more = r.worst_error_ports.total - 1;
    assert!(more > 0, "{:?}", r.worst_error_ports);
    assert!(
        html.contains(&format!("<p class=\"more\">{more} more not shown")),
        "{html}"
    );
    assert!(html.contains("<option value=\"link_lost\" selected>"));
    assert!(html.contains("href=\"api/health?condition=link_lost&amp;limit=1&amp;top=1\""));
}

#[test]
fn descriptions_from_the_fabric_cannot_inject_markup() {
    let u = unhealthy();
    let q = Query::default();
    let mut r = report(&u.snap, u.now, Instant::now(), &q);
    r.unhealthy_links.rows[0].a.name = "<img src=x onerror=alert(1)>/1".into();
    r.unreachable_nodes.rows[0].name = "\"><b>n</b>".into();
    let html = render(&r, &q, "/m\"etrics");
    assert!(!html.contains("<img") && !html.contains("<b>n</b>"));
    assert!(html.contains("&lt;img src=x onerror=alert(1)&gt;/1"));
    assert!(html.contains("<a href=\"/m&quot;etrics\">"));
}
