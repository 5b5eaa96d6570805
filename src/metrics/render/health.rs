//! The `health` collector: the evaluator's verdicts as series, read from
//! the snapshot ([`crate::fabric::cache::Snapshot::health`]). Per-port
//! series exist only for ports with a verdict entry (a verdict standing,
//! or one within `health.forget_after`), so a healthy fabric adds the
//! per-condition totals and little else.

use std::io::{self, Write};

use super::{
    HeaderKind, Out, Scrape, push_guid, push_label, push_peer_labels, push_port_labels, push_u64,
    sample_suffix,
};
use crate::ib::cabling::MISMATCHES;
use crate::ib::health::{CONDITIONS, Condition, PortVerdict};
use crate::metrics::families::{
    HEALTH_CONDITION, HEALTH_EVALUATED, HEALTH_FLAPS, HEALTH_LAST_FLAP, HEALTH_NODE_UNRESPONSIVE,
    HEALTH_RAISED, HEALTH_UNHEALTHY_PORTS, HealthFamily, Kind, PLAN_COMPARED, PLAN_MISMATCHES,
    PLAN_PORT_MISMATCH,
};

fn header_kind(f: &HealthFamily) -> HeaderKind {
    match f.kind {
        Kind::Counter => HeaderKind::Counter,
        Kind::Gauge => HeaderKind::Gauge,
    }
}

/// Starts a sample line of `f`: its name and suffix.
fn start(l: &mut Vec<u8>, f: &HealthFamily) {
    l.clear();
    l.extend_from_slice(f.name.as_bytes());
    l.extend_from_slice(sample_suffix(header_kind(f)).as_bytes());
}

/// `{node_guid="…",port="N",peer_node_guid="…",peer_port="M"` (the brace
/// left open).
fn push_link_labels(l: &mut Vec<u8>, v: &PortVerdict) {
    push_port_labels(l, v.guid, v.port);
    push_peer_labels(l, v.peer);
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
    w.header(f.name, header_kind(f), f.help)?;
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
    w.header(f.name, header_kind(f), f.help)?;
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
    w.header(f.name, header_kind(f), f.help)?;
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
    w.header(f.name, header_kind(f), f.help)?;
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
        w.header(f.name, header_kind(f), f.help)?;
        let l = &mut w.line;
        start(l, f);
        l.push(b' ');
        push_seconds(l, h.at);
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    if !h.nodes.is_empty() {
        let f = &HEALTH_NODE_UNRESPONSIVE;
        w.header(f.name, header_kind(f), f.help)?;
        for n in h.nodes.iter() {
            let l = &mut w.line;
            start(l, f);
            l.extend_from_slice(b"{node_guid=\"");
            push_guid(l, n.guid);
            l.extend_from_slice(if n.unresponsive.is_some() {
                b"\"} 1\n"
            } else {
                b"\"} 0\n"
            });
            w.out.write_all(l)?;
        }
    }
    if h.ports.is_empty() {
        return Ok(());
    }
    for f in [&HEALTH_CONDITION, &HEALTH_RAISED] {
        w.header(f.name, header_kind(f), f.help)?;
        for v in h.ports.iter() {
            for def in &CONDITIONS {
                let l = &mut w.line;
                start(l, f);
                push_link_labels(l, v);
                push_label(l, false, "condition", def.name.as_bytes());
                l.extend_from_slice(b"} ");
                let value = if f.name == HEALTH_CONDITION.name {
                    u64::from(h.shows(v, def.condition))
                } else if def.condition == Condition::Unresponsive {
                    h.node(v.guid).map_or(0, |n| n.raised.into())
                } else {
                    v.raised[def.condition as usize].into()
                };
                push_u64(l, value);
                l.push(b'\n');
                w.out.write_all(l)?;
            }
        }
    }
    let f = &HEALTH_FLAPS;
    w.header(f.name, header_kind(f), f.help)?;
    for v in h.ports.iter() {
        let l = &mut w.line;
        start(l, f);
        push_link_labels(l, v);
        l.extend_from_slice(b"} ");
        push_u64(l, v.flaps);
        l.push(b'\n');
        w.out.write_all(l)?;
    }
    let mut started = false;
    let f = &HEALTH_LAST_FLAP;
    for v in h.ports.iter() {
        let Some(t) = v.last_flap.map(|t| h.wall(t)) else {
            continue;
        };
        if !started {
            w.header(f.name, header_kind(f), f.help)?;
            started = true;
        }
        let l = &mut w.line;
        start(l, f);
        push_link_labels(l, v);
        l.extend_from_slice(b"} ");
        push_seconds(l, t);
        l.push(b'\n');
        w.out.write_all(l)?;
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

    #[test]
    fn plan_mismatches_are_counted_by_kind_and_served_per_port() {
        use crate::ib::Guid;
        use crate::ib::cabling::{Mismatch, PlanSource, PlanVerdict, PlanVerdicts};
        let rig = crate::rig::AgentRig::swept(Default::default());
        let mut snap = (*rig.cache.load()).clone();
        let v = |kind, guid, port, standing| PlanVerdict {
            kind,
            guid: Guid(guid),
            port,
            planned: None,
            found: None,
            since: 0,
            last_seen: 0,
            raised: 1,
            standing,
            seq: 0,
            name: None,
            planned_name: None,
            found_name: None,
            planned_rate: (None, None),
            found_rate: (None, None),
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
