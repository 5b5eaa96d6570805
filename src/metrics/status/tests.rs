use std::time::Instant;

use super::*;
use crate::metrics::tests::unhealthy;

#[test]
fn the_report_names_what_is_wrong_most_severe_first() {
    let u = unhealthy();
    let r = report(&u.snap, u.now, Instant::now(), &Query::default());
    assert_eq!(r.status, Status::Unhealthy);
    assert_eq!(r.schema, SCHEMA);
    assert!(!r.agent.stale && r.agent.sweep == u.snap.sweep);
    assert_eq!(r.agent.evaluated_sweep, u.snap.health.sweep);
    // The silent node: unreachable and unresponsive.
    let n = &r.unreachable_nodes.rows[0];
    assert_eq!(n.guid, u.silent.to_string());
    assert!(!n.reachable && n.unresponsive.is_some(), "{n:?}");
    // The lost link once, both ends named, link lost first.
    let ((ga, pa), (gb, pb)) = u.lost;
    let lost: Vec<&LinkRow> = r
        .unhealthy_links
        .rows
        .iter()
        .filter(|l| {
            let ends = [
                Some((&l.a.guid, l.a.port)),
                l.b.as_ref().map(|b| (&b.guid, b.port)),
            ];
            ends.contains(&Some((&ga.to_string(), pa)))
                && ends.contains(&Some((&gb.to_string(), pb)))
        })
        .collect();
    assert_eq!(lost.len(), 1, "{:#?}", r.unhealthy_links);
    let l = lost[0];
    assert_eq!(l.verdicts[0].condition, Condition::LinkLost);
    assert!(l.flaps >= 1);
    let a = u.snap.node(ga).unwrap();
    assert!(
        l.a.name.starts_with(a.id.description.trim())
            || l.b
                .as_ref()
                .unwrap()
                .name
                .starts_with(a.id.description.trim())
    );
    assert_eq!(
        r.unhealthy_links.rows[0].verdicts[0].condition,
        Condition::LinkLost,
        "most severe first"
    );
    // Each section's count is the count of rows it could show.
    assert_eq!(r.unhealthy_links.total, r.unhealthy_links.rows.len());
    let lost_ports = r
        .conditions
        .iter()
        .find(|c| c.condition == Condition::LinkLost)
        .unwrap()
        .ports;
    assert_eq!(
        lost_ports,
        u.snap.health.counts()[Condition::LinkLost as usize]
    );
    // The noisy port leads the error ranking; rankings hold 20.
    let top = &r.worst_error_ports.rows[0];
    assert!(
        (top.port.guid == u.noisy.0.to_string() && top.port.port == u.noisy.1)
            || top
                .peer
                .as_ref()
                .is_some_and(|p| p.guid == u.noisy.0.to_string()),
        "{top:?}"
    );
    assert!(r.worst_error_ports.rows.len() <= DEFAULT_TOP);
    assert!(r.worst_congested_ports.total > 0);
    let v: Vec<f64> = r
        .worst_congested_ports
        .rows
        .iter()
        .map(|p| p.value)
        .collect();
    assert!(v.windows(2).all(|w| w[0] >= w[1]), "{v:?}");
}

#[test]
fn filters_limits_and_sorts_are_applied() {
    let u = unhealthy();
    let now = Instant::now();
    let all = report(&u.snap, u.now, now, &Query::default());
    assert!(all.unhealthy_links.total >= 2, "{:#?}", all.unhealthy_links);
    let q = Query::parse("condition=link_lost&limit=1&top=3&sort=name").unwrap();
    let r = report(&u.snap, u.now, now, &q);
    assert!(r.unhealthy_links.rows.iter().all(|l| {
        l.verdicts
            .iter()
            .any(|v| v.condition == Condition::LinkLost)
    }));
    assert_eq!(r.unhealthy_links.rows.len(), 1);
    assert_eq!(r.unhealthy_links.more, r.unhealthy_links.total - 1);
    assert!(r.worst_error_ports.rows.len() <= 3);
    assert_eq!(r.worst_error_ports.total, all.worst_error_ports.total);
    let none = report(&u.snap, u.now, now, &Query::parse("top=0").unwrap());
    assert!(none.worst_error_ports.rows.is_empty() && none.worst_error_ports.more > 0);
    let by_name = report(&u.snap, u.now, now, &Query::parse("sort=name").unwrap());
    let names: Vec<&str> = by_name
        .unhealthy_links
        .rows
        .iter()
        .map(|l| l.a.name.as_str())
        .collect();
    assert!(names.windows(2).all(|w| w[0] <= w[1]), "{names:?}");
    assert_eq!(
        q.to_query_string(),
        "condition=link_lost&sort=name&limit=1&top=3"
    );
    assert_eq!(Query::parse(&q.to_query_string()).unwrap(), q);
}

#[test]
fn bad_queries_are_refused_with_a_reason() {
    assert_eq!(Query::parse("").unwrap(), Query::default());
    for (q, says) in [
        ("limit=0", "limit"),
        ("limit=201", "limit"),
        ("limit=99999999999999999999", "limit"),
        ("limit=-1", "limit"),
        ("top=201", "top"),
        ("sort=random", "sort"),
        ("condition=broken", "condition"),
        ("condition=%6c", "condition"),
        ("colour=red", "unknown parameter"),
        ("limit", "no value"),
        ("limit=5&limit=6", "twice"),
    ] {
        let e = Query::parse(q).unwrap_err();
        assert!(e.contains(says), "{q}: {e}");
    }
    let long = "limit=1&".repeat(100);
    assert!(Query::parse(&long).unwrap_err().contains("at most"));
    // Not a panic on anything: bytes that are no UTF-8 never get here
    // (the URI is text), every other string is an answer.
    for q in ["&&&", "=", "==", "a=b=c", "top=\u{0}", "limit=１"] {
        let _ = Query::parse(q);
    }
}

#[test]
fn a_snapshot_before_the_first_sweep_is_stale_not_healthy() {
    let snap = Snapshot::default();
    let r = report(&snap, 0, Instant::now(), &Query::default());
    assert_eq!(r.status, Status::Stale);
    assert!(r.agent.stale && r.agent.last_sweep_age_s.is_none());
    let rig = crate::rig::AgentRig::swept(Default::default());
    let r = report(&rig.cache.load(), 0, Instant::now(), &Query::default());
    assert_eq!(r.status, Status::Healthy, "{r:#?}");
    assert_eq!(
        r.unhealthy_links.total + r.degraded_links.total + r.unreachable_nodes.total,
        0
    );
}

#[test]
fn two_subnets_say_which_subnet_each_node_and_end_is_in() {
    use crate::metrics::tests::two_subnets;
    let u = unhealthy();
    let now = Instant::now();
    // A sweeper's own snapshot says its one subnet, unnamed: the views
    // do not show it, the API carries it.
    let one = report(&u.snap, u.now, now, &Query::default());
    assert!(one.subnets.len() <= 1 && !one.shows_subnets());
    let label = one.subnets.first().map(|s| s.label.clone());
    assert!(one.unhealthy_links.rows.iter().all(|l| l.a.subnet == label));
    let snap = two_subnets(&u);
    let r = report(&snap, u.now, now, &Query::default());
    assert!(r.shows_subnets());
    let plane_b = "fe80:0:0:2::/64";
    let (a, b) = (&r.subnets[0], &r.subnets[1]);
    assert_eq!(
        (
            a.index,
            a.label.as_str(),
            a.name.as_deref(),
            a.prefix.as_str()
        ),
        (1, "plane-a", Some("plane-a"), "fe80::/64")
    );
    let sm = a.sm.as_ref().unwrap();
    assert_eq!(
        (sm.guid.as_str(), sm.lid, sm.priority, sm.state.as_str()),
        ("0x0002c90300a1b2c3", 1, 14, "master")
    );
    assert_eq!(a.local_port.as_deref(), Some("mlx5_0:1"));
    assert_eq!(a.standby, ["mlx5_2:1"]);
    assert_eq!(
        (a.nodes, a.ports, a.sweep, a.sweep_duration_ms),
        (10, 40, 9, 12)
    );
    assert!(a.last_sweep_age_s.is_some_and(|s| s >= 0.0));
    assert_eq!(
        (b.index, b.label.as_str(), b.name.as_deref()),
        (2, plane_b, None)
    );
    assert!(b.sm.is_none() && b.local_port.is_none() && b.last_sweep_age_s.is_none());
    // The silent adapter is in the second subnet.
    let silent = r
        .unreachable_nodes
        .rows
        .iter()
        .find(|n| n.guid == u.silent.to_string())
        .unwrap();
    assert_eq!(silent.subnets, [plane_b]);
    // The lost link's first end is in the second, its far end in the first.
    let ((ga, pa), (gb, pb)) = u.lost;
    let end = |g: Guid, p: u8| {
        r.unhealthy_links
            .rows
            .iter()
            .flat_map(|l| [Some(&l.a), l.b.as_ref()])
            .flatten()
            .find(|e| e.guid == g.to_string() && e.port == p)
            .unwrap_or_else(|| panic!("{g}/{p} in {:#?}", r.unhealthy_links))
            .clone()
    };
    assert_eq!(end(ga, pa).subnet.as_deref(), Some(plane_b));
    assert_eq!(end(gb, pb).subnet.as_deref(), Some("plane-a"));
    // A node with ports in both subnets is in both.
    let node = snap.node(ga).unwrap();
    assert_eq!(
        subnets::of_node(&snap, node),
        ["plane-a".to_string(), plane_b.to_string()]
    );
    // One subnet is worth showing when it has a name.
    assert!(!subnets::worth_showing(&r.subnets[1..]));
    assert!(subnets::worth_showing(&r.subnets[..1]));
}

#[test]
fn the_json_carries_the_subnets_and_reads_without_them() {
    use crate::metrics::health_api::{parse, render};
    use crate::metrics::tests::two_subnets;
    let u = unhealthy();
    let r = report(&two_subnets(&u), u.now, Instant::now(), &Query::default());
    let json = render(&r);
    assert_eq!(parse(&json).unwrap(), r);
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["subnets"][0]["label"], "plane-a");
    assert_eq!(v["subnets"][1]["sm"], serde_json::Value::Null);
    // A report of an agent from before subnets: none, and no end says one.
    let mut old = v.clone();
    old.as_object_mut().unwrap().remove("subnets");
    for l in old["unhealthy_links"]["rows"].as_array_mut().unwrap() {
        l["a"].as_object_mut().unwrap().remove("subnet");
    }
    let back = parse(&serde_json::to_vec(&old).unwrap()).unwrap();
    assert!(back.subnets.is_empty() && !back.shows_subnets());
    assert!(
        back.unhealthy_links
            .rows
            .iter()
            .all(|l| l.a.subnet.is_none())
    );
}
