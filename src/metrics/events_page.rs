//! The status page's "Last hour" section: the last sweeps' summaries as
//! small inline SVG charts (no script, no external asset), the hour's
//! events newest first, and the hosts behind each switch with a verdict.
//! Bounded whatever the log holds: a flood shows as counts, not rows.

use std::fmt::Write as _;

use super::hosts::roll_up;
use super::page::escape;
use crate::events::{KIND_COUNT, KINDS, Log, SUMMARIES, Summary, host_of};
use crate::fabric::cache::Snapshot;
use crate::ib::health::{CONDITIONS, rfc3339};

/// Event rows the section shows at most.
pub const MAX_ROWS: usize = 50;
/// Switches and hosts per switch the section names at most.
pub const MAX_SWITCHES: usize = 50;
pub const MAX_HOSTS: usize = 40;

const W: f64 = 180.0;
const H: f64 = 36.0;

const STYLE: &str = "<style>.charts{display:flex;flex-wrap:wrap;gap:.4em 1.2em}\
.chart figcaption{font-size:.85em;color:var(--mute)}.chart svg{display:block;border-bottom:1px solid #8886}\
.chart polyline{fill:none;stroke:currentColor;stroke-width:1.2}.chart .bad{color:var(--bad)}\
.sim{background:var(--warn)}</style>";

/// One chart: `value` of each summary, the newest at the right edge.
fn chart(o: &mut String, id: &str, title: &str, s: &[Summary], value: impl Fn(&Summary) -> u64) {
    let vals: Vec<u64> = s.iter().map(&value).collect();
    let max = vals.iter().copied().max().unwrap_or(0);
    let now = vals.last().copied().unwrap_or(0);
    let step = W / (SUMMARIES - 1) as f64;
    let n = vals.len();
    let mut pts = String::with_capacity(n * 12);
    for (i, v) in vals.iter().enumerate() {
        let x = W - (n - 1 - i) as f64 * step;
        let y = H - 1.0 - (*v as f64 / max.max(1) as f64) * (H - 2.0);
        let _ = write!(pts, "{x:.1},{y:.1} ");
    }
    let _ = write!(
        o,
        "<figure class=\"chart\" id=\"chart-{id}\"><svg viewBox=\"0 0 {W} {H}\" width=\"{W}\" height=\"{H}\" \
         role=\"img\" aria-label=\"{title}: now {now}, at most {max}\"><polyline class=\"{}\" points=\"{}\"/></svg>\
         <figcaption>{title}: {now} <span class=\"mute\">(max {max})</span></figcaption></figure>",
        if now > 0 { "bad" } else { "" },
        pts.trim_end()
    );
}

/// The section for `log` and `snap` at `now_ms`.
pub fn section(log: Option<&Log>, snap: &Snapshot, now_ms: u64) -> String {
    let mut o = String::with_capacity(8 * 1024);
    o.push_str(STYLE);
    let Some(log) = log else {
        o.push_str("<h2 id=\"last-hour\">Last hour</h2><p class=\"mute\">The event log is off (<code>[events] enabled = false</code>).</p>\n");
        return o;
    };
    let hour = crate::events::Filter {
        since_ms: Some(now_ms.saturating_sub(3_600_000)),
        ..Default::default()
    };
    let events = log.query(&hour);
    let _ = writeln!(
        o,
        "<h2 id=\"last-hour\">Last hour <span class=\"mute\">({} events)</span>{}</h2>",
        events.len(),
        if log.is_simulated() {
            " <span class=\"badge sim\" id=\"simulated\">simulated fabric</span>"
        } else {
            ""
        }
    );
    // The charts.
    let s = log.summaries();
    let from = s.len().saturating_sub(SUMMARIES);
    let s = &s[from..];
    o.push_str("<div class=\"charts\">");
    for (i, c) in CONDITIONS.iter().enumerate() {
        chart(
            &mut o,
            c.name,
            &format!("Ports {}", c.title.to_lowercase()),
            s,
            |x| x.verdicts[i].into(),
        );
    }
    chart(&mut o, "unanswering", "Nodes not answering", s, |x| {
        x.unanswering.into()
    });
    chart(&mut o, "timeouts", "MAD timeouts", s, |x| x.timeouts.into());
    chart(&mut o, "duration", "Sweep duration (ms)", s, |x| {
        x.duration_ms.into()
    });
    chart(&mut o, "not-as-planned", "Links not as planned", s, |x| {
        x.not_as_planned.into()
    });
    o.push_str("</div>\n");
    // The hour's events by kind, then the newest rows.
    let mut by = [0usize; KIND_COUNT];
    for e in &events {
        by[e.kind as usize] += 1;
    }
    let counts: Vec<String> = KINDS
        .iter()
        .filter(|d| by[d.kind as usize] > 0)
        .map(|d| {
            format!(
                "<span class=\"c\">{} {}</span>",
                escape(d.title),
                by[d.kind as usize]
            )
        })
        .collect();
    if events.is_empty() {
        o.push_str("<p class=\"mute\" id=\"events\">No events in the last hour.</p>\n");
    } else {
        let _ = write!(o, "<p id=\"event-counts\">{}</p>", counts.join(""));
        o.push_str(
            "<div class=\"wrap\"><table id=\"events\"><tr><th>When</th><th>Event</th><th>Node</th>\
             <th>Port</th><th>Far end</th><th>Detail</th><th>Before → after</th></tr>\n",
        );
        for e in events.iter().rev().take(MAX_ROWS) {
            let peer = e
                .peer
                .as_ref()
                .map_or(String::new(), |(_, p, n)| format!("{} port {p}", escape(n)));
            let mut marks = String::new();
            if e.suppressed {
                marks += " <span class=\"mute\">(trap suppressed)</span>";
            }
            if e.simulated {
                marks += " <span class=\"mute\">(simulated)</span>";
            }
            let _ = writeln!(
                o,
                "<tr class=\"ev {}\"><td>{}</td><td>{}{marks}</td><td>{}</td><td class=\"n\">{}</td>\
                 <td>{peer}</td><td>{}</td><td class=\"n\">{} → {}</td></tr>",
                e.kind.name(),
                rfc3339(e.time_ms),
                escape(e.kind.def().title),
                escape(&e.name),
                e.port,
                escape(&e.detail),
                e.before,
                e.after
            );
        }
        o.push_str("</table></div>");
        if events.len() > MAX_ROWS {
            let _ = write!(
                o,
                "<p class=\"more\">{} more: <a href=\"api/events?since=1h\">api/events?since=1h</a></p>",
                events.len() - MAX_ROWS
            );
        }
        o.push('\n');
    }
    // The hosts behind each switch with a verdict.
    let hosts = roll_up(snap, true);
    if !hosts.switches.is_empty() {
        o.push_str("<h2 id=\"hosts-behind\">Hosts behind switches with a verdict</h2><dl>");
        for sw in hosts.switches.iter().take(MAX_SWITCHES) {
            let shown: Vec<String> = sw
                .hosts
                .iter()
                .take(MAX_HOSTS)
                .map(|h| escape(host_of(h)))
                .collect();
            let more = sw.hosts.len().saturating_sub(MAX_HOSTS);
            let _ = write!(
                o,
                "<dt>hosts behind {} <span class=\"mute\">({}; ports {})</span></dt><dd>{}{}</dd>",
                escape(&sw.name),
                escape(sw.worst.as_deref().unwrap_or("")),
                sw.ports_with_verdict
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                shown.join(", "),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        o.push_str("</dl>\n");
        if hosts.switches.len() > MAX_SWITCHES {
            let _ = writeln!(
                o,
                "<p class=\"more\">{} more switches: <a href=\"api/hosts?unhealthy=1\">api/hosts</a></p>",
                hosts.switches.len() - MAX_SWITCHES
            );
        }
    }
    o
}

/// `page` with the section put in before its end.
pub fn insert(page: String, section: &str) -> String {
    let mut page = page;
    match page.rfind("</body>") {
        Some(i) => page.insert_str(i, section),
        None => page.push_str(section),
    }
    page
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Bounds, Kind, New};
    use crate::ib::Guid;

    #[test]
    fn the_section_draws_charts_and_bounds_a_flood() {
        let log = Log::new(Bounds::default(), None);
        log.set_simulated(true);
        for i in 0..5000u64 {
            log.write([New {
                kind: Some(Kind::PortState),
                time_ms: 1_000_000 + i,
                guid: Guid(i),
                name: "<leaf07>",
                port: 1,
                ..Default::default()
            }]);
        }
        for i in 0..400u64 {
            let mut s = Summary {
                sweep: i + 1,
                duration_ms: i as u32,
                ..Default::default()
            };
            s.verdicts[2] = (i % 7) as u32;
            log.summarize(s);
        }
        let html = section(Some(&log), &Snapshot::default(), 1_000_000 + 5000);
        assert!(html.contains("id=\"simulated\""));
        assert_eq!(html.matches("<svg").count(), CONDITIONS.len() + 4);
        assert!(!html.contains("<script"));
        assert_eq!(html.matches("<tr class=\"ev").count(), MAX_ROWS);
        assert!(html.contains("4950 more"));
        assert!(html.contains("&lt;leaf07&gt;") && !html.contains("<leaf07>"));
        assert!(html.len() < 64 * 1024, "{}", html.len());
        let page = insert("<html><body><p>x</p></body></html>".into(), "<h2>L</h2>");
        assert_eq!(page, "<html><body><p>x</p><h2>L</h2></body></html>");
    }
}
