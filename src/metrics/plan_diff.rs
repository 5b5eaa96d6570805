//! What is not as planned, as the faces show it: `/api/topology/diff`
//! (JSON, the schema docs/topology.md documents), the status page's "Not
//! as planned" section, and `ibpm-agentx topology check`, which reads the
//! JSON back with these types. All of it from the verdicts the snapshot
//! carries ([`crate::fabric::cache::Snapshot::plan`]); none compares.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::page::{age, escape};
use crate::ib::cabling::{MISMATCHES, NodeRef, PlanVerdict, PlanVerdicts};
use crate::ib::health::rfc3339;

/// The version of the JSON's schema: raised when a field changes meaning
/// or goes.
pub const SCHEMA: u32 = 1;
/// Mismatches the JSON lists at most (it says how many there are in all).
pub const MAX_ROWS: usize = 10_000;

/// The comparison with the plan, for people and scripts.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DiffReport {
    pub schema: u32,
    /// The sweep compared (0: none yet).
    pub sweep: u64,
    /// When (Unix milliseconds; 0: not yet).
    pub compared_ms: u64,
    /// `ibnetdiscover`, `cabling` or `baseline` (None: nothing compared
    /// yet).
    pub source: Option<String>,
    /// No mismatch stands or recovers.
    pub as_planned: bool,
    pub planned_nodes: u32,
    pub planned_links: u32,
    /// Per kind, in the MIB's order, every kind listed.
    pub counts: Vec<KindCount>,
    /// Every mismatch in all (the list may hold fewer).
    pub total: usize,
    pub mismatches: Vec<DiffRow>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KindCount {
    pub kind: String,
    pub title: String,
    pub count: usize,
}

/// One end of a link.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffEnd {
    /// `0x…` (None: a plan's node known by name only, not found).
    pub guid: Option<String>,
    pub name: Option<String>,
    pub port: u8,
}

/// One mismatch.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DiffRow {
    pub kind: String,
    /// `0x…` (`0x0000000000000000`: an absent node the plan names only).
    pub node_guid: String,
    pub node: String,
    /// 0: the node itself.
    pub port: u8,
    pub planned: Option<DiffEnd>,
    pub found: Option<DiffEnd>,
    /// Wrong rate: as `4x`, `NDR`, when the plan says / the port is up.
    pub planned_width: Option<String>,
    pub planned_speed: Option<String>,
    pub found_width: Option<String>,
    pub found_speed: Option<String>,
    pub since_ms: u64,
    pub since: String,
    pub last_seen_ms: u64,
    pub raised: u32,
    /// False once gone, until the recovery window passes.
    pub standing: bool,
    /// For the technician: "leaf07/13 should go to node0413/1; it goes to
    /// node0414/1".
    pub text: String,
}

fn row(v: &PlanVerdict) -> DiffRow {
    DiffRow {
        kind: v.kind.def().name.to_string(),
        node_guid: v.guid.to_string(),
        node: v.node_label(),
        port: v.port,
        planned: v.planned.as_ref().map(|e| {
            let (guid, name) = match &e.node {
                NodeRef::Guid(g) => (Some(g.to_string()), v.planned_name.as_deref()),
                NodeRef::Name(n) => (None, Some(v.planned_name.as_deref().unwrap_or(n))),
            };
            DiffEnd {
                guid,
                name: name.map(str::to_string),
                port: e.port,
            }
        }),
        found: v.found.map(|(g, p)| DiffEnd {
            guid: Some(g.to_string()),
            name: v.found_name.as_deref().map(str::to_string),
            port: p,
        }),
        planned_width: v.planned_rate.0.map(|w| w.name().to_string()),
        planned_speed: v.planned_rate.1.map(|s| s.name().to_string()),
        found_width: v.found_rate.0.map(|w| w.name().to_string()),
        found_speed: v.found_rate.1.map(|s| s.name().to_string()),
        since_ms: v.since,
        since: rfc3339(v.since),
        last_seen_ms: v.last_seen,
        raised: v.raised,
        standing: v.standing,
        text: v.sentence(),
    }
}

/// The report of the verdicts, with at most `limit` rows.
pub fn diff_report(v: &PlanVerdicts, limit: usize) -> DiffReport {
    DiffReport {
        schema: SCHEMA,
        sweep: v.sweep,
        compared_ms: v.at,
        source: v.source.map(|s| s.name().to_string()),
        as_planned: v.as_planned(),
        planned_nodes: v.planned_nodes,
        planned_links: v.planned_links,
        counts: MISMATCHES
            .iter()
            .map(|d| KindCount {
                kind: d.name.to_string(),
                title: d.title.to_string(),
                count: v.count(d.kind),
            })
            .collect(),
        total: v.verdicts.len(),
        mismatches: v.verdicts.iter().take(limit).map(row).collect(),
    }
}

/// `/api/topology/diff`: one object, compact, with a final newline.
pub fn render_json(d: &DiffReport) -> Vec<u8> {
    // Strings, numbers, booleans and lists: serializing cannot fail.
    let mut out = serde_json::to_vec(d).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// A report read back from its JSON.
pub fn parse(body: &[u8]) -> Result<DiffReport, serde_json::Error> {
    serde_json::from_slice(body)
}

/// The status page's "Not as planned" section: one sentence per mismatch
/// for the technician, every text escaped.
pub fn page_section(o: &mut String, d: &DiffReport, now_ms: u64) {
    let _ = writeln!(
        o,
        "<h2 id=\"plan\">Not as planned <span class=\"mute\">({})</span></h2>",
        d.total
    );
    let Some(source) = &d.source else {
        o.push_str("<p class=\"mute\">Not compared yet.</p>\n");
        return;
    };
    let against = match source.as_str() {
        "baseline" => "the fabric as first found",
        _ => "the plan",
    };
    if d.as_planned {
        let _ = writeln!(
            o,
            "<p class=\"mute\">Every cable as in {against} ({} nodes, {} cables).</p>",
            d.planned_nodes, d.planned_links
        );
        return;
    }
    let counts: Vec<String> = d
        .counts
        .iter()
        .filter(|c| c.count > 0)
        .map(|c| format!("{} {}", c.count, escape(&c.title)))
        .collect();
    let _ = writeln!(
        o,
        "<p class=\"mute\">Compared with {against}: {}.</p>",
        counts.join(", ")
    );
    o.push_str(
        "<div class=\"wrap\"><table id=\"plan-diff\"><thead><tr><th>What</th><th>To do</th>\
         <th>Since</th><th>Times</th></tr></thead><tbody>\n",
    );
    for r in &d.mismatches {
        let _ = writeln!(
            o,
            "<tr class=\"{}{}\"><td><span class=\"c\">{}</span></td><td>{}</td>\
             <td title=\"{}\">{} ago</td><td class=\"n\">{}</td></tr>",
            escape(&r.kind),
            if r.standing { "" } else { " rec" },
            escape(&r.kind.replace('_', " ")),
            escape(&r.text),
            escape(&r.since),
            age(now_ms.saturating_sub(r.since_ms)),
            r.raised
        );
    }
    o.push_str("</tbody></table></div>\n");
    if d.mismatches.len() < d.total {
        let _ = writeln!(
            o,
            "<p class=\"more\">{} more</p>",
            d.total - d.mismatches.len()
        );
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ib::LinkWidth;
    use crate::ib::cabling::PlanSource;

    fn miswired() -> PlanVerdict {
        PlanVerdict {
            since: 1000,
            last_seen: 2000,
            found_name: Some("<node0414>".into()),
            found_rate: (Some(LinkWidth::X4), None),
            ..PlanVerdict::example_miswired()
        }
    }

    fn verdicts(v: Vec<PlanVerdict>) -> PlanVerdicts {
        PlanVerdicts {
            sweep: 3,
            source: Some(PlanSource::Ibnetdiscover),
            verdicts: Arc::from(v),
            at: 5000,
            planned_nodes: 2,
            planned_links: 1,
        }
    }

    #[test]
    fn a_miswired_link_names_both_peers_for_the_technician() {
        let d = diff_report(&verdicts(vec![miswired()]), MAX_ROWS);
        assert!(!d.as_planned);
        let r = &d.mismatches[0];
        assert_eq!(
            r.text,
            "leaf07/13 should go to node0413/1; it goes to <node0414>/1"
        );
        assert_eq!(
            r.planned.as_ref().unwrap().guid.as_deref(),
            Some("0x0000000000000020")
        );
        assert_eq!(r.found.as_ref().unwrap().port, 1);
        assert_eq!(d.counts[1].count, 1);
        assert_eq!(d.counts.len(), 6);
        // The JSON comes back as it was.
        assert_eq!(parse(&render_json(&d)).unwrap(), d);
    }

    #[test]
    fn the_page_section_escapes_every_text() {
        let d = diff_report(&verdicts(vec![miswired()]), MAX_ROWS);
        let mut o = String::new();
        page_section(&mut o, &d, 10_000);
        assert!(o.contains("it goes to &lt;node0414&gt;/1"), "{o}");
        assert!(!o.contains("<node0414>"));
        assert!(o.contains("Not as planned"));
        let mut o = String::new();
        page_section(&mut o, &diff_report(&verdicts(vec![]), MAX_ROWS), 0);
        assert!(o.contains("Every cable as in the plan"), "{o}");
    }

    #[test]
    fn the_rows_are_bounded_and_the_total_said() {
        let many: Vec<PlanVerdict> = (0..5)
            .map(|i| PlanVerdict {
                port: i,
                ..miswired()
            })
            .collect();
        let d = diff_report(&verdicts(many), 2);
        assert_eq!((d.mismatches.len(), d.total), (2, 5));
    }
}
