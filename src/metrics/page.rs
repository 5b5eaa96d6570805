//! The status page: the report ([`super::status`]) as one HTML document
//! with its CSS inline, no script and no external asset, so it works
//! offline, reads on a phone and refreshes itself. Every text that comes
//! from the fabric (descriptions, names) is escaped.

use std::fmt::Write as _;

use super::status::{End, LinkRow, NodeRow, PortRate, Query, Report, Section, Sort};
use crate::ib::health::{CONDITIONS, rfc3339};

/// Escapes text for HTML content and attribute values. A control
/// character shows as U+FFFD; an invisible one that reorders or hides text
/// (a bidirectional override, a zero-width character) as `\u{..}`, as the
/// command line shows it, so that no name can disguise itself.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c if c.is_control() => out.push('\u{fffd}'),
            c if c != '\\' && crate::ib::needs_escape(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

/// `3 d 4 h`, `5 m 12 s`: a duration in its two largest units.
pub fn age(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    match (d, h, m) {
        (0, 0, 0) => format!("{sec} s"),
        (0, 0, _) => format!("{m} m {sec} s"),
        (0, _, _) => format!("{h} h {m} m"),
        _ => format!("{d} d {h} h"),
    }
}

/// Seconds between page refreshes: the sweep interval, within 5 s and 60 s.
fn refresh_secs(r: &Report) -> u64 {
    (r.agent.sweep_interval_s.round() as u64).clamp(5, 60)
}

const STYLE: &str = "\
:root{color-scheme:light dark;--bad:#c62828;--warn:#ef6c00;--ok:#2e7d32;--mute:#777}\
body{font:15px/1.4 system-ui,-apple-system,'Segoe UI',sans-serif;margin:0 auto;padding:.5em 1em;max-width:72em}\
h1{font-size:1.3em;margin:.3em 0}h2{font-size:1.1em;margin:1.2em 0 .3em}\
.badge{display:inline-block;padding:.1em .6em;border-radius:.8em;color:#fff;font-weight:600}\
.healthy{background:var(--ok)}.unhealthy{background:var(--bad)}.stale{background:var(--warn)}\
.wrap{overflow-x:auto}table{border-collapse:collapse;width:100%}\
th,td{text-align:left;padding:.25em .5em;border-bottom:1px solid #8884;vertical-align:top}\
th{font-weight:600;white-space:nowrap}td.n{text-align:right;font-variant-numeric:tabular-nums}\
.c{display:inline-block;margin:0 .3em .2em 0;padding:0 .4em;border-radius:.3em;border:1px solid #8886;white-space:nowrap}\
.c.link_lost,.c.unresponsive,.c.flapping{border-color:var(--bad);color:var(--bad)}\
.c.erroring{border-color:var(--warn);color:var(--warn)}.rec{opacity:.6}\
.mute,.more{color:var(--mute)}code{font-size:.9em}form{margin:.5em 0}\
.c.zero{border-color:#8886;color:var(--mute)}select,button{font:inherit}dl{display:grid;grid-template-columns:max-content 1fr;gap:.1em 1em;margin:0}\
dt{color:var(--mute)}dd{margin:0}.sn{color:var(--mute);font-size:.85em;white-space:nowrap}\
@media (max-width:40em){body{font-size:14px;padding:.3em}th,td{padding:.2em .3em}}";

/// The page of `r`, as asked by `q`; `metrics` is the metrics' path.
pub fn render(r: &Report, q: &Query, metrics: &str) -> String {
    render_with(r, q, metrics, |_| {})
}

/// [`render`], with the sections `more` writes after the links' (what is
/// not as planned).
pub fn render_with(r: &Report, q: &Query, metrics: &str, more: impl FnOnce(&mut String)) -> String {
    let mut o = String::with_capacity(16 * 1024);
    let qs = q.to_query_string();
    let _ = write!(
        o,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <meta http-equiv=\"refresh\" content=\"{}\">\
         <link rel=\"icon\" href=\"data:,\">\
         <title>ibpm-agentx: {}</title><style>{STYLE}</style></head><body>\n",
        refresh_secs(r),
        escape(r.status.name())
    );
    let _ = write!(
        o,
        "<h1>InfiniBand fabric <span class=\"badge {0}\" id=\"status\">{0}</span></h1>\n\
         <p class=\"mute\">ibpm-agentx {1} &middot; {2} &middot; <a href=\"api/health{3}\">JSON</a> \
         &middot; <a href=\"{4}\">metrics</a></p>\n",
        escape(r.status.name()),
        escape(&r.agent.version),
        escape(&r.generated),
        if qs.is_empty() {
            String::new()
        } else {
            format!("?{}", escape(&qs))
        },
        escape(metrics)
    );
    filter_form(&mut o, q);
    agent(&mut o, r);
    subnets(&mut o, r);
    counts(&mut o, r);
    nodes(&mut o, r, &r.unreachable_nodes);
    links(
        &mut o,
        r,
        "unhealthy",
        "Unhealthy links",
        &r.unhealthy_links,
    );
    links(&mut o, r, "degraded", "Degraded links", &r.degraded_links);
    more(&mut o);
    ranking(
        &mut o,
        r,
        "errors",
        "Worst ports by error rate",
        "errors/s",
        &r.worst_error_ports,
    );
    ranking(
        &mut o,
        r,
        "congestion",
        "Worst ports by congestion",
        "% of the time waiting",
        &r.worst_congested_ports,
    );
    o.push_str("</body></html>\n");
    o
}

fn filter_form(o: &mut String, q: &Query) {
    o.push_str("<form method=\"get\" action=\"\"><label>Condition <select name=\"condition\">");
    let _ = write!(
        o,
        "<option value=\"\"{}>any</option>",
        if q.condition.is_none() {
            " selected"
        } else {
            ""
        }
    );
    for d in &CONDITIONS {
        let _ = write!(
            o,
            "<option value=\"{}\"{}>{}</option>",
            d.name,
            if q.condition == Some(d.condition) {
                " selected"
            } else {
                ""
            },
            escape(d.title)
        );
    }
    o.push_str("</select></label> <label>Sort <select name=\"sort\">");
    for s in Sort::ALL {
        let _ = write!(
            o,
            "<option{}>{}</option>",
            if q.sort == s { " selected" } else { "" },
            s.name()
        );
    }
    o.push_str("</select></label> <button>Show</button></form>\n");
}

fn agent(o: &mut String, r: &Report) {
    let a = &r.agent;
    o.push_str("<h2 id=\"agent\">The agent</h2><dl>");
    let last = match a.last_sweep_age_s {
        Some(s) => format!(
            "#{} &middot; {} ago{}",
            a.sweep,
            age((s * 1000.0) as u64),
            if a.stale {
                " &middot; <b>not sweeping</b>"
            } else {
                ""
            }
        ),
        None => "none yet".to_string(),
    };
    let rows = [
        ("Last sweep", last),
        (
            "Duration",
            format!(
                "{} ms (every {} s)",
                a.sweep_duration_ms,
                fmt_num(a.sweep_interval_s)
            ),
        ),
        ("MADs", format!("{} sent, {} timed out", a.mads, a.timeouts)),
        (
            "Nodes reachable",
            format!("{} of {} ({} ports)", a.nodes_reachable, a.nodes, a.ports),
        ),
        (
            "Health",
            if a.evaluated_sweep == 0 {
                "not evaluated yet".to_string()
            } else {
                format!(
                    "sweep #{} evaluated in {} &micro;s",
                    a.evaluated_sweep, a.evaluation_us
                )
            },
        ),
    ];
    for (k, v) in rows {
        let _ = write!(o, "<dt>{k}</dt><dd>{v}</dd>");
    }
    o.push_str("</dl>\n");
}

/// The subnets, when the report says which subnet things are in.
fn subnets(o: &mut String, r: &Report) {
    if !r.shows_subnets() {
        return;
    }
    let _ = writeln!(
        o,
        "<h2 id=\"subnets\">Subnets <span class=\"mute\">({})</span></h2>\
         <div class=\"wrap\"><table><tr><th>Subnet</th><th>Prefix</th><th>Master SM</th>\
         <th>Local port</th><th>Standby</th><th>Nodes</th><th>Ports</th><th>Last sweep</th>\
         <th>Swept</th></tr>",
        r.subnets.len()
    );
    for s in &r.subnets {
        let sm = match &s.sm {
            Some(sm) => format!(
                "<code>{}</code> LID {} priority {}{}",
                escape(&sm.guid),
                sm.lid,
                sm.priority,
                if sm.state == "master" {
                    String::new()
                } else {
                    format!(" <span class=\"c link_lost\">{}</span>", escape(&sm.state))
                }
            ),
            None => "<span class=\"c link_lost\">none</span>".to_string(),
        };
        let local = s.local_port.as_ref().map_or_else(
            || "<span class=\"c link_lost\">none up</span>".to_string(),
            |p| format!("<code>{}</code>", escape(p)),
        );
        let last = s.last_sweep_age_s.map_or_else(
            || "none yet".to_string(),
            |a| {
                format!(
                    "#{} &middot; {} ago ({} ms)",
                    s.sweep,
                    age((a * 1000.0) as u64),
                    s.sweep_duration_ms
                )
            },
        );
        // A subnet not swept is its own condition: its nodes have no
        // verdict of their own meanwhile.
        let swept = match s.not_swept.as_deref() {
            None => "yes".to_string(),
            Some(why) => format!(
                "<span class=\"c unresponsive\">not swept: {}</span>",
                match why {
                    "noLocalPort" => "no local port up",
                    "sweepsFailing" => "its sweeps fail",
                    other => other,
                }
            ),
        };
        let _ = writeln!(
            o,
            "<tr class=\"subnet\"><td>{}</td><td><code>{}</code></td><td>{sm}</td><td>{local}</td>\
             <td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td>{last}</td>\
             <td>{swept}</td></tr>",
            escape(&s.label),
            escape(&s.prefix),
            escape(&s.standby.join(", ")),
            s.nodes,
            s.ports
        );
    }
    o.push_str("</table></div>\n");
}

/// A port's name, with its subnet when the report says which subnet
/// things are in.
fn end_name(r: &Report, e: &End) -> String {
    match &e.subnet {
        Some(s) if r.shows_subnets() => {
            format!(
                "{} <span class=\"sn\">{}</span>",
                escape(&e.name),
                escape(s)
            )
        }
        _ => escape(&e.name),
    }
}

/// A number without trailing zeros (at most 3 decimals).
fn fmt_num(x: f64) -> String {
    let s = format!("{x:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn counts(o: &mut String, r: &Report) {
    o.push_str("<p id=\"conditions\">");
    for c in &r.conditions {
        let _ = write!(
            o,
            "<span class=\"c {}{}\">{} {}</span>",
            escape(c.condition.name()),
            if c.ports == 0 { " zero" } else { "" },
            escape(&c.title),
            c.ports
        );
    }
    o.push_str("<span class=\"mute\">ports per condition</span></p>\n");
}

fn heading<T>(o: &mut String, id: &str, title: &str, s: &Section<T>) {
    let _ = writeln!(
        o,
        "<h2 id=\"{id}\">{title} <span class=\"mute\">({})</span></h2>",
        s.total
    );
}

fn more<T>(o: &mut String, s: &Section<T>) {
    if s.more > 0 {
        let _ = writeln!(
            o,
            "<p class=\"more\">{} more not shown (rows are limited to {}).</p>",
            s.more,
            s.rows.len()
        );
    }
}

fn nodes(o: &mut String, r: &Report, s: &Section<NodeRow>) {
    heading(o, "nodes", "Nodes not answering", s);
    if s.rows.is_empty() {
        o.push_str("<p class=\"mute\">None: every node answers.</p>\n");
        return;
    }
    let shows = r.shows_subnets();
    let _ = writeln!(
        o,
        "<div class=\"wrap\"><table><tr><th>Node</th><th>GUID</th>{}<th>State</th><th>Since</th></tr>",
        if shows { "<th>Subnets</th>" } else { "" }
    );
    for n in &s.rows {
        let state = match (&n.unresponsive, n.reachable) {
            (Some(_), _) => format!(
                "<span class=\"c unresponsive\">unresponsive</span> {} of {} sweeps missed",
                n.missed.unwrap_or(0),
                n.of.unwrap_or(0)
            ),
            (None, false) => format!(
                "<span class=\"c link_lost\">unreachable</span> {} sweeps missed",
                n.failed_sweeps
            ),
            (None, true) => String::new(),
        };
        let since = n.unresponsive.as_ref().map_or_else(String::new, |v| {
            format!("{} ago", age(r.generated_ms.saturating_sub(v.since_ms)))
        });
        let subnets = if shows {
            format!("<td>{}</td>", escape(&n.subnets.join(", ")))
        } else {
            String::new()
        };
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td><code>{}</code></td>{subnets}<td>{state}</td><td>{since}</td></tr>",
            escape(&n.name),
            escape(&n.guid)
        );
    }
    o.push_str("</table></div>\n");
    more(o, s);
}

fn links(o: &mut String, r: &Report, id: &str, title: &str, s: &Section<LinkRow>) {
    heading(o, id, title, s);
    if s.rows.is_empty() {
        o.push_str("<p class=\"mute\">None.</p>\n");
        return;
    }
    o.push_str("<div class=\"wrap\"><table><tr><th>Link</th><th>Verdicts (since, times raised)</th><th>Flaps</th></tr>\n");
    for l in &s.rows {
        let b = l.b.as_ref().map_or_else(
            || "<span class=\"mute\">peer not known</span>".to_string(),
            |b| end_name(r, b),
        );
        let _ = write!(
            o,
            "<tr class=\"link\"><td>{} &harr; {b}</td><td>",
            end_name(r, &l.a)
        );
        for v in &l.verdicts {
            let _ = write!(
                o,
                "<span class=\"c {}{}\" title=\"since {}\">{} &middot; {} ago &middot; {}&times;{}</span>",
                escape(v.condition.name()),
                if v.holding { "" } else { " rec" },
                escape(&v.since),
                escape(&v.title),
                age(r.generated_ms.saturating_sub(v.since_ms)),
                v.raised,
                if v.holding { "" } else { " (recovering)" }
            );
        }
        let last = l.last_flap_ms.map_or_else(String::new, |t| {
            format!(
                " <span class=\"mute\" title=\"{}\">last {} ago</span>",
                rfc3339(t),
                age(r.generated_ms.saturating_sub(t))
            )
        });
        let _ = writeln!(o, "</td><td class=\"n\">{}{last}</td></tr>", l.flaps);
    }
    o.push_str("</table></div>\n");
    more(o, s);
}

fn ranking(o: &mut String, r: &Report, id: &str, title: &str, unit: &str, s: &Section<PortRate>) {
    heading(o, id, title, s);
    if s.rows.is_empty() {
        o.push_str("<p class=\"mute\">None.</p>\n");
        return;
    }
    let _ = writeln!(
        o,
        "<div class=\"wrap\"><table><tr><th>Port</th><th>Peer</th><th>{unit}</th></tr>"
    );
    for p in &s.rows {
        let _ = writeln!(
            o,
            "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td></tr>",
            end_name(r, &p.port),
            p.peer.as_ref().map_or_else(String::new, |e| end_name(r, e)),
            fmt_num(p.value)
        );
    }
    o.push_str("</table></div>\n");
    more(o, s);
}

#[cfg(test)]
mod tests;
