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
    // Bidirectional overrides and zero-width characters show, as on the
    // command line: no name can disguise itself.
    assert_eq!(
        escape("adm\u{202e}nim\u{200b}x\u{feff}\\"),
        "adm\\u{202e}nim\\u{200b}x\\u{feff}\\"
    );
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

#[test]
fn the_page_shows_the_subnets_when_there_are_two() {
    use crate::metrics::tests::two_subnets;
    let u = unhealthy();
    let q = Query::default();
    let one = render(&report(&u.snap, u.now, Instant::now(), &q), &q, "/metrics");
    assert!(!one.contains("id=\"subnets\"") && !one.contains("class=\"sn\""));
    let r = report(&two_subnets(&u), u.now, Instant::now(), &q);
    let html = render(&r, &q, "/metrics");
    assert!(html.contains("<h2 id=\"subnets\">Subnets <span class=\"mute\">(2)</span></h2>"));
    let rows: Vec<&str> = html
        .lines()
        .filter(|l| l.starts_with("<tr class=\"subnet\">"))
        .collect();
    assert_eq!(rows.len(), 2, "{html}");
    assert!(
        rows[0].starts_with("<tr class=\"subnet\"><td>plane-a</td><td><code>fe80::/64</code></td>")
    );
    let says = [
        [
            "0x0002c90300a1b2c3</code> LID 1 priority 14",
            "mlx5_0:1",
            "mlx5_2:1",
            "#9",
        ],
        ["fe80:0:0:2::/64", ">none<", ">none up<", "none yet"],
    ];
    for (row, says) in rows.iter().zip(says) {
        for s in says {
            assert!(row.contains(s), "{s}: {row}");
        }
    }
    // Link ends and the silent node say their subnet.
    let l = &r.unhealthy_links.rows[0];
    let a = l.a.subnet.as_deref().unwrap();
    assert!(
        html.contains(&format!(
            "{} <span class=\"sn\">{}</span>",
            escape(&l.a.name),
            escape(a)
        )),
        "{html}"
    );
    assert!(html.contains("<th>Subnets</th>"));
    assert!(html.contains("<td>fe80:0:0:2::/64</td>"), "{html}");
}
