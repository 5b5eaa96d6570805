//! The `health` collector: the evaluator's verdicts as series, read from
//! the snapshot ([`crate::fabric::cache::Snapshot::health`]). Per-port
//! series exist only for ports with a verdict entry (a verdict standing,
//! or one within `health.forget_after`), so a healthy fabric adds the
//! per-condition totals and little else.

use std::io::{self, Write};

use super::{
    Out, Scrape, header_kind, push_info_labels, push_label, push_port_labels, push_u64, push_value,
    row, sample_suffix,
};
use crate::ib::cabling::MISMATCHES;
use crate::ib::health::{CONDITIONS, Verdicts};
use crate::metrics::families::{
    FAMILIES, Family, HEALTH_EVALUATED, HEALTH_RAISED, HEALTH_UNHEALTHY_PORTS, HealthFamily,
    PEER_LABELS, PLAN_COMPARED, PLAN_MISMATCHES, PLAN_PORT_MISMATCH, Part,
};
use crate::mib::index::IndexScheme;
use crate::mib::read::Row;

/// Starts a sample line of `f`: its name and suffix.
fn start(l: &mut Vec<u8>, f: &HealthFamily) {
    l.clear();
    l.extend_from_slice(f.name.as_bytes());
    l.extend_from_slice(sample_suffix(header_kind(f.kind)).as_bytes());
}

/// Milliseconds as seconds with three decimals.
fn push_seconds(l: &mut Vec<u8>, ms: u64) {
    push_u64(l, ms / 1000);
    l.push(b'.');
    let frac = ms % 1000;
    l.extend_from_slice(&[
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

/// The comparison with the plan: the counts by kind, when it was made,
/// and a 0/1 series per port and kind not as planned.
fn plan_families<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    let v = &*s.snap.plan;
    let Some(source) = v.source else {
        return Ok(());
    };
    let f = &PLAN_MISMATCHES;
    w.header(f.name, header_kind(f.kind), f.help)?;
    for d in &MISMATCHES {
        let l = &mut w.line;
        start(l, f);
        l.push(b'{');
        push_label(l, true, "kind", d.name.as_bytes());
        l.extend_from_slice(b"} ");
        push_u64(l, v.count(d.kind) as u64);
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    let f = &PLAN_COMPARED;
    w.header(f.name, header_kind(f.kind), f.help)?;
    let l = &mut w.line;
    start(l, f);
    l.push(b'{');
    push_label(l, true, "source", source.name().as_bytes());
    l.extend_from_slice(b"} ");
    push_seconds(l, v.at);
    l.push(b'\n');
    w.out.write_all(l)?;
    if v.verdicts.is_empty() {
        return Ok(());
    }
    let f = &PLAN_PORT_MISMATCH;
    w.header(f.name, header_kind(f.kind), f.help)?;
    // A node the plan names only, never found, has no GUID to label it by:
    // it is in the counts alone.
    for m in v.verdicts.iter().filter(|m| m.guid.0 != 0) {
        let l = &mut w.line;
        start(l, f);
        push_port_labels(l, m.guid, m.port);
        push_label(l, false, "kind", m.kind.def().name.as_bytes());
        l.extend_from_slice(if m.standing { b"} 1\n" } else { b"} 0\n" });
        w.out.write_all(l)?;
    }
    Ok(())
}

pub(super) fn health_families<W: Write>(s: &Scrape, w: &mut Out<W>) -> io::Result<()> {
    plan_families(s, w)?;
    let h = &*s.snap.health;
    let f = &HEALTH_UNHEALTHY_PORTS;
    w.header(f.name, header_kind(f.kind), f.help)?;
    for (def, n) in CONDITIONS.iter().zip(h.counts()) {
        let l = &mut w.line;
        start(l, f);
        l.push(b'{');
        push_label(l, true, "condition", def.name.as_bytes());
        l.extend_from_slice(b"} ");
        push_u64(l, n as u64);
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    if h.sweep > 0 {
        let f = &HEALTH_EVALUATED;
        w.header(f.name, header_kind(f.kind), f.help)?;
        let l = &mut w.line;
        start(l, f);
        l.push(b' ');
        push_seconds(l, h.at);
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    // The verdicts' MIB columns, a family at a time (the columns of a
    // family several share, row by row).
    let faced: Vec<&Family> = FAMILIES.iter().filter(|f| f.part == Part::Health).collect();
    for members in faced.chunk_by(|a, b| a.name == b.name) {
        verdict_family(s, members, w)?;
    }
    raised_family(s, h, w)
}

/// The rows of the verdict entries of table `index`'s kind: a node's
/// (pmNodeTable) or a port's (pmPortHealthTable), those of the nodes in
/// the snapshot (the MIB's rows).
fn verdict_rows<'a>(s: &'a Scrape, index: IndexScheme) -> Vec<Row<'a>> {
    let h = &*s.snap.health;
    if index == IndexScheme::NodeGuid {
        h.nodes
            .iter()
            .filter_map(|v| Some(row(s, s.snap.node(v.guid)?, None)))
            .collect()
    } else {
        h.ports
            .iter()
            .filter_map(|v| {
                let node = s.snap.node(v.guid)?;
                Some(row(s, node, Some(node.port(v.port)?)))
            })
            .collect()
    }
}

/// A family of the verdicts' MIB columns (`members`: the columns it is
/// the face of, one when it is not shared), read through the MIB's read
/// path for each row with a verdict entry.
fn verdict_family<W: Write>(s: &Scrape, members: &[&Family], w: &mut Out<W>) -> io::Result<()> {
    let Some(f) = members.first() else {
        return Ok(());
    };
    let kind = header_kind(f.kind);
    let mut started = false;
    for r in verdict_rows(s, f.table.index) {
        for m in members {
            let Some(v) = crate::mib::read::read_at(m.column, m.table, &r) else {
                continue;
            };
            w.sample(f, kind, &mut started)?;
            let l = &mut w.line;
            if f.table.per_port() {
                push_port_labels(l, r.index.guid, r.index.port);
                push_info_labels(l, &PEER_LABELS[..], &r, false);
            } else {
                l.extend_from_slice(b"{node_guid=\"");
                super::push_guid(l, r.index.guid);
                l.push(b'"');
            }
            if let Some((name, value)) = m.label {
                push_label(l, false, name, value.as_bytes());
            }
            l.extend_from_slice(b"} ");
            if push_value(l, &v, m.scale) {
                l.push(b'\n');
                w.out.write_all(l)?;
            }
        }
    }
    Ok(())
}

/// How many times each condition was raised on each port with a verdict
/// entry ([`Verdicts::raised`]): no MIB column holds it per condition.
fn raised_family<W: Write>(s: &Scrape, h: &Verdicts, w: &mut Out<W>) -> io::Result<()> {
    let f = &HEALTH_RAISED;
    let mut started = false;
    for r in verdict_rows(s, IndexScheme::NodeGuidPort) {
        let Some(v) = h.port(r.index.guid, r.index.port) else {
            continue;
        };
        if !std::mem::replace(&mut started, true) {
            w.header(f.name, header_kind(f.kind), f.help)?;
        }
        for def in &CONDITIONS {
            let l = &mut w.line;
            start(l, f);
            push_port_labels(l, v.guid, v.port);
            push_info_labels(l, &PEER_LABELS[..], &r, false);
            push_label(l, false, "condition", def.name.as_bytes());
            l.extend_from_slice(b"} ");
            push_u64(l, h.raised(v, def.condition).into());
            l.push(b'\n');
            w.out.write_all(l)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Format, Scrape, render};
    use crate::ib::health::Condition;
    use crate::metrics::families::{Collector, Collectors};
    use crate::metrics::tests::unhealthy;
    use crate::metrics::{HttpCounters, families::HEALTH_FAMILIES};
    use crate::mib::EndpointCounters;

    fn scrape(snap: &crate::fabric::cache::Snapshot, format: Format) -> String {
        let (endpoint, http) = (EndpointCounters::default(), HttpCounters::default());
        let s = Scrape {
            snap,
            endpoint: &endpoint,
            http: &http,
            format,
            collectors: Collectors::NONE.with(Collector::Health),
            taken_unix: None,
            events: None,
            now: std::time::Instant::now(),
        };
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn verdicts_become_series_only_for_ports_that_have_one() {
        let u = unhealthy();
        let h = &*u.snap.health;
        let text = scrape(&u.snap, Format::Text);
        let ((ga, pa), (gb, pb)) = u.lost;
        for (g, p, peer) in [(ga, pa, (gb, pb)), (gb, pb, (ga, pa))] {
            let line = format!(
                "infiniband_port_health_condition{{node_guid=\"{g}\",port=\"{p}\",peer_node_guid=\"{}\",peer_port=\"{}\",condition=\"link_lost\"}} 1",
                peer.0, peer.1
            );
            assert!(text.contains(&line), "{line}\n{text}");
        }
        // One series per port and condition, for the ports with an entry.
        let series = |name: &str| {
            text.lines()
                .filter(|l| l.starts_with(&format!("{name}{{")))
                .count()
        };
        assert!(!h.ports.is_empty());
        assert_eq!(
            series("infiniband_port_health_condition"),
            h.ports.len() * Condition::ALL.len()
        );
        assert_eq!(
            series("infiniband_port_health_condition_raised_total"),
            h.ports.len() * Condition::ALL.len()
        );
        assert_eq!(series("infiniband_port_health_flaps_total"), h.ports.len());
        let ports: usize = u.snap.nodes.iter().map(|n| n.port_count()).sum();
        assert!(h.ports.len() * 4 < ports, "a few ports, not all");
        // The silent node: unresponsive, its verdict on its node series.
        assert!(text.contains(&format!(
            "infiniband_node_health_unresponsive{{node_guid=\"{}\"}} 1",
            u.silent
        )));
        let lost = h.counts()[Condition::LinkLost as usize];
        assert!(text.contains(&format!(
            "infiniband_health_unhealthy_ports{{condition=\"link_lost\"}} {lost}"
        )));
        assert!(lost >= 2);
        // A flap was counted on the lost link's ends (LinkDowned rose).
        let v = h.port(ga, pa).unwrap();
        assert!(v.flaps >= 1 && v.last_flap.is_some(), "{v:?}");
        let secs = h.wall(v.last_flap.unwrap()) / 1000;
        assert!(text.contains(&format!(
            "infiniband_port_health_last_flap_timestamp_seconds{{node_guid=\"{ga}\",port=\"{pa}\""
        )) && text.contains(&format!("}} {secs}.")));
        // The noisy port's link is erroring; the time of the evaluation.
        let noisy = h.port(u.noisy.0, u.noisy.1).expect("an entry");
        assert!(noisy.mark(Condition::Erroring).is_some(), "{noisy:?}");
        assert_eq!(h.at, u.now);
        assert!(std::sync::Arc::ptr_eq(&u.rig.cache.load(), &u.snap));
        assert!(text.contains(&format!(
            "infiniband_health_last_evaluation_timestamp_seconds {}.{:03}\n",
            u.now / 1000,
            u.now % 1000
        )));
        // Every family is declared once with HELP and TYPE; OpenMetrics
        // names the counters without `_total`.
        // (The plan's families: once the fabric was compared, their own
        // test.)
        for f in HEALTH_FAMILIES.iter().filter(|f| !f.name.contains("plan")) {
            assert!(text.contains(&format!("# HELP {}", f.name)), "{}", f.name);
        }
        let om = scrape(&u.snap, Format::OpenMetrics);
        assert!(om.contains("# TYPE infiniband_port_health_flaps counter\n"));
        assert!(om.ends_with("# EOF\n"));
    }

    /// The verdicts' families are their MIB columns' faces: each sample is
    /// the column's value in the row of the same snapshot, a row each
    /// verdict entry; the raised counts are the entries' own.
    #[test]
    fn each_verdict_sample_is_its_mib_columns_value() {
        use super::super::push_value;
        use crate::metrics::families::{FAMILIES, Kind, Part};
        use crate::mib::index::RowIndex;
        use crate::mib::read::read;
        let u = unhealthy();
        let (snap, h) = (&u.snap, &*u.snap.health);
        let text = scrape(snap, Format::Text);
        let endpoint = EndpointCounters::default();
        let now = std::time::Instant::now();
        let mut checked = 0;
        for f in FAMILIES.iter().filter(|f| f.part == Part::Health) {
            let name = match f.kind {
                Kind::Counter => format!("{}_total", f.name),
                Kind::Gauge => f.name.clone(),
            };
            let rows: Vec<(crate::ib::Guid, Option<u8>)> = if f.table.per_port() {
                h.ports.iter().map(|v| (v.guid, Some(v.port))).collect()
            } else {
                h.nodes.iter().map(|n| (n.guid, None)).collect()
            };
            assert!(!rows.is_empty(), "{name}");
            for (guid, port) in rows {
                let node = snap.node(guid).unwrap();
                let index = RowIndex::port(guid, port.unwrap_or(0));
                let want = read(f.column, snap, &endpoint, Some(node), index, 0, now);
                let mut value = Vec::new();
                let want = want.filter(|v| push_value(&mut value, v, f.scale));
                let head = match (port, f.label) {
                    (None, _) => format!("{name}{{node_guid=\"{guid}\"}} "),
                    (Some(p), label) => {
                        let peer = h.port(guid, p).unwrap().peer;
                        let (pg, pp) = peer.map_or((String::new(), String::new()), |(g, n)| {
                            (g.to_string(), n.to_string())
                        });
                        let label = label.map_or(String::new(), |(k, v)| format!(",{k}=\"{v}\""));
                        format!(
                            "{name}{{node_guid=\"{guid}\",port=\"{p}\",peer_node_guid=\"{pg}\",peer_port=\"{pp}\"{label}}} "
                        )
                    }
                };
                let got = text.lines().find_map(|l| l.strip_prefix(&head));
                let want = want.map(|_| String::from_utf8(value).unwrap());
                assert_eq!(got, want.as_deref(), "{head}");
                checked += 1;
            }
        }
        assert!(checked > 20, "{checked}");
        // The raised counts: the entry's own, the node's for unresponsive;
        // they add up to the MIB's pmPortHealthRaised.
        let total = crate::mib::tables::COLUMNS
            .iter()
            .find(|c| c.name == "pmPortHealthRaised")
            .unwrap();
        for v in h.ports.iter() {
            let node = snap.node(v.guid).unwrap();
            let sum: u64 = Condition::ALL
                .map(|c| u64::from(h.raised(v, c)))
                .iter()
                .sum();
            assert_eq!(
                read(
                    total,
                    snap,
                    &endpoint,
                    Some(node),
                    RowIndex::port(v.guid, v.port),
                    0,
                    now
                ),
                Some(crate::mib::Value::Counter64(sum)),
                "{v:?}"
            );
            for c in Condition::ALL {
                let line = format!("{{node_guid=\"{}\",port=\"{}\",", v.guid, v.port);
                let n = h.raised(v, c);
                assert!(
                    text.lines().any(|l| l
                        .starts_with("infiniband_port_health_condition_raised_total")
                        && l.contains(&line)
                        && l.ends_with(&format!("condition=\"{}\"}} {n}", c.name()))),
                    "{line} {c:?}"
                );
            }
        }
    }

    #[test]
    fn plan_mismatches_are_counted_by_kind_and_served_per_port() {
        use crate::ib::Guid;
        use crate::ib::cabling::{Mismatch, PlanSource, PlanVerdict, PlanVerdicts};
        let rig = crate::rig::AgentRig::swept(Default::default());
        let mut snap = (*rig.cache.load()).clone();
        let v = |kind, guid, port, standing| PlanVerdict {
            raised: 1,
            standing,
            ..PlanVerdict::new(kind, Guid(guid), port, 0)
        };
        snap.plan = std::sync::Arc::new(PlanVerdicts {
            sweep: 1,
            source: Some(PlanSource::Baseline),
            verdicts: std::sync::Arc::from(vec![
                v(Mismatch::AbsentNode, 0, 0, true),
                v(Mismatch::Miswired, 0x10, 3, true),
                v(Mismatch::Miswired, 0x11, 4, false),
            ]),
            at: 1_700_000_000_123,
            planned_nodes: 3,
            planned_links: 2,
        });
        let text = scrape(&snap, Format::Text);
        assert!(
            text.contains("infiniband_plan_mismatches{kind=\"miswired\"} 2\n"),
            "{text}"
        );
        assert!(text.contains("infiniband_plan_mismatches{kind=\"absent_node\"} 1\n"));
        assert!(text.contains("infiniband_plan_mismatches{kind=\"missing\"} 0\n"));
        assert!(text.contains(
            "infiniband_port_not_as_planned{node_guid=\"0x0000000000000010\",port=\"3\",kind=\"miswired\"} 1\n"
        ));
        assert!(text.contains(
            "infiniband_port_not_as_planned{node_guid=\"0x0000000000000011\",port=\"4\",kind=\"miswired\"} 0\n"
        ));
        assert!(!text.contains("node_guid=\"0x0000000000000000\""));
        assert!(text.contains(
            "infiniband_plan_last_comparison_timestamp_seconds{source=\"baseline\"} 1700000000.123\n"
        ));
    }

    #[test]
    fn a_fabric_without_verdicts_serves_the_totals_only() {
        let rig = crate::rig::AgentRig::swept(Default::default());
        let text = scrape(&rig.cache.load(), Format::Text);
        let samples: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(samples.len(), Condition::ALL.len(), "{text}");
        assert!(samples.iter().all(|l| l.ends_with(" 0")), "{text}");
    }
}
