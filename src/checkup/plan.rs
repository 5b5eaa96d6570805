//! `ibpm-agentx topology check`: what is not as planned, in a terminal and
//! in an exit status for a bring-up script (0 as planned, 3 not). It reads
//! a running agent's `/api/topology/diff`, or with `--sweep` sweeps the
//! fabric itself once and compares it with the plan (`--plan FILE`, else
//! the configured one, else the baseline an agent keeps beside its state
//! file).

use std::fmt::Write as _;
use std::path::Path;

use super::{Remote, get};
use crate::cabling::compare::{CompareConfig, Comparison};
use crate::config::Config;
use crate::health::watch::wall_ms;
use crate::ib::Escaped;
use crate::ib::cabling::Plan;
use crate::metrics::page::age;
use crate::metrics::plan_diff::{self, DiffReport};

/// The exit status of a comparison: 0 as planned, 3 not, 4 nothing
/// compared yet (1 is a report that could not be had, 2 a wrong command
/// line).
pub fn code(d: &DiffReport) -> u8 {
    match (&d.source, d.as_planned) {
        (None, _) => 4,
        (Some(_), true) => 0,
        (Some(_), false) => 3,
    }
}

/// What a running agent says.
pub fn fetch(remote: &Remote) -> Result<DiffReport, String> {
    let body = get(remote, "/api/topology/diff")?;
    plan_diff::parse(&body).map_err(|e| format!("the agent's answer is no comparison: {e}"))
}

/// One sweep of the fabric through the configured backend (its discovery
/// is what is compared), compared with `plan`.
pub fn sweep(cfg: &Config, plan: &Plan, compare: CompareConfig) -> Result<DiffReport, String> {
    let mut off = super::Offline::open(cfg, None)?;
    off.sweep_once();
    let cache = &off.cache;
    let mut cmp = Comparison::new(compare, Some(plan));
    let o = cmp
        .evaluate(&cache.load(), wall_ms(off.clock().wall()))
        .ok_or("the sweep published nothing to compare")?;
    Ok(plan_diff::diff_report(&o.verdicts, plan_diff::MAX_ROWS))
}

/// The plan `--sweep` compares with when no `--plan` is given: the
/// baseline an agent keeps beside `state_file`.
pub fn baseline(state_file: &Path) -> Result<Plan, String> {
    let path = crate::cabling::state::baseline_path(state_file);
    crate::cabling::state::load(&path)
        .map_err(|e| format!("no plan given, and no baseline at {}: {e}", path.display()))
}

/// The comparison as a terminal table, every text escaped.
pub fn text(d: &DiffReport, now_ms: u64) -> String {
    let mut o = String::new();
    let Some(source) = &d.source else {
        o.push_str("NOT COMPARED · the agent has not compared the fabric with a plan yet\n");
        return o;
    };
    let against = if source == "baseline" {
        "the fabric as first found"
    } else {
        "the plan"
    };
    let _ = writeln!(
        o,
        "{} · compared with {against} ({}, {} nodes, {} cables) at sweep #{}",
        if d.as_planned {
            "AS PLANNED"
        } else {
            "NOT AS PLANNED"
        },
        Escaped(source),
        d.planned_nodes,
        d.planned_links,
        d.sweep
    );
    super::counts(
        &mut o,
        "mismatches per kind",
        d.counts.iter().map(|c| (c.title.as_str(), c.count)),
    );
    if d.mismatches.is_empty() {
        return o;
    }
    let rows: Vec<Vec<String>> = d
        .mismatches
        .iter()
        .map(|m| {
            vec![
                Escaped(&m.kind).to_string(),
                Escaped(&m.text).to_string(),
                format!(
                    "{}{}",
                    age(now_ms.saturating_sub(m.since_ms)),
                    if m.standing { "" } else { " (gone)" }
                ),
                m.raised.to_string(),
            ]
        })
        .collect();
    let shown = d.mismatches.len();
    super::rows_table(
        &mut o,
        "NOT AS PLANNED",
        (d.total, d.total.saturating_sub(shown)),
        &["KIND", "WHAT TO DO", "SINCE", "TIMES"],
        rows,
    );
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::plan_diff::{DiffRow, KindCount};

    #[test]
    fn the_table_says_what_to_do_and_the_status_whether_as_planned() {
        let mut d = DiffReport {
            source: Some("ibnetdiscover".into()),
            as_planned: false,
            total: 1,
            counts: vec![KindCount {
                kind: "miswired".into(),
                title: "miswired".into(),
                count: 1,
            }],
            mismatches: vec![DiffRow {
                kind: "miswired".into(),
                text: "leaf07/13 should go to node0413/1; it goes to node\u{1b}0414/1".into(),
                since_ms: 1000,
                raised: 1,
                standing: true,
                ..Default::default()
            }],
            ..Default::default()
        };
        let t = text(&d, 61_000);
        assert!(t.starts_with("NOT AS PLANNED · "), "{t}");
        assert!(
            t.contains("leaf07/13 should go to node0413/1; it goes to node\\u{1b}0414/1"),
            "{t}"
        );
        assert!(t.contains("1 m 0 s"), "{t}");
        assert_eq!(code(&d), 3);
        d.as_planned = true;
        d.mismatches.clear();
        assert_eq!(code(&d), 0);
        assert!(text(&d, 0).starts_with("AS PLANNED"));
        assert_eq!(code(&DiffReport::default()), 4);
    }
}
