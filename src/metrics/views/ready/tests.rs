use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::events::{Bounds, Kind, New};
use crate::ib::Guid;
use crate::ib::health::{Ack, Condition};
use crate::metrics::health_api;
use crate::metrics::tests::{Unhealthy, unhealthy};

/// The views of the fixture's cache on its virtual clock.
fn ready(u: &Unhealthy, events: Option<Arc<Log>>) -> Ready {
    Ready::new(
        Arc::clone(&u.rig.cache),
        events,
        "/metrics",
        u.rig.time.clock(),
    )
}

/// Whether the report in `json` shows link lost on `end`.
fn lost_link_shown(json: &[u8], (guid, port): (Guid, u8)) -> bool {
    let r = health_api::parse(json).unwrap();
    let g = guid.to_string();
    r.unhealthy_links.rows.iter().any(|l| {
        let at = |e: &crate::metrics::status::End| e.guid == g && e.port == port;
        (at(&l.a) || l.b.as_ref().is_some_and(at))
            && l.verdicts
                .iter()
                .any(|v| v.condition == crate::ib::health::Condition::LinkLost)
    })
}

#[test]
fn one_report_makes_both_views_and_requests_for_the_same_snapshot_copy_them() {
    let u = unhealthy();
    let ready = ready(&u, None);
    let q = Query::default();
    assert!(ready.hit(View::Page, &q).is_none(), "nothing made yet");
    let page = ready.make(View::Page, &q);
    assert!(
        std::str::from_utf8(&page)
            .unwrap()
            .contains("<!DOCTYPE html>")
    );
    assert_eq!(ready.reports(), 1);
    let json = ready.hit(View::Json, &q).expect("made with the page");
    assert!(lost_link_shown(&json, u.lost.0));
    let again = ready.hit(View::Page, &q).expect("the same snapshot");
    assert_eq!(again.as_ptr(), page.as_ptr(), "the same bytes, not a copy");
    assert_eq!(ready.make(View::Json, &q), json, "made already");
    // A publication within the sweep (the records read so far) keeps them.
    u.rig.cache.publish((*u.rig.cache.load()).clone());
    assert!(ready.hit(View::Json, &q).is_some(), "the same sweep");
    assert_eq!(ready.reports(), 1);
    // Another query has views of its own.
    let other = Query::parse("condition=erroring").unwrap();
    assert!(ready.hit(View::Json, &other).is_none());
    let json = ready.make(View::Json, &other);
    assert!(!lost_link_shown(&json, u.lost.0), "filtered");
    assert_eq!(ready.reports(), 2);
}

#[test]
fn a_new_snapshot_an_acknowledgement_or_an_event_makes_the_views_again() {
    let mut u = unhealthy();
    let log = Arc::new(Log::new(Bounds::default(), None));
    let ready = ready(&u, Some(Arc::clone(&log)));
    let q = Query::default();
    let json = ready.make(View::Json, &q);
    assert!(lost_link_shown(&json, u.lost.0));
    // An acknowledgement of the lost link: cleared at once.
    assert!(u.rig.cache.acknowledge(Ack {
        guid: u.lost.0.0,
        port: u.lost.0.1,
        condition: Some(Condition::LinkLost),
    }));
    assert!(ready.hit(View::Json, &q).is_none(), "a new snapshot");
    let json = ready.make(View::Json, &q);
    assert!(!lost_link_shown(&json, u.lost.0), "acknowledged");
    assert_eq!(ready.reports(), 2);
    // An event: the page's last hour shows it.
    log.write([New {
        kind: Some(Kind::NodeLost),
        time_ms: crate::time::unix_ms(u.rig.time.clock().wall()),
        guid: u.silent,
        name: "silent-node",
        ..Default::default()
    }]);
    assert!(ready.hit(View::Page, &q).is_none(), "the log changed");
    let page = ready.make(View::Page, &q);
    assert!(std::str::from_utf8(&page).unwrap().contains("silent-node"));
    // A sweep publishes a new snapshot.
    u.rig.advance(Duration::from_secs(10));
    u.rig.sweep();
    assert!(ready.hit(View::Page, &q).is_none(), "swept again");
    ready.make(View::Page, &q);
    assert_eq!(ready.reports(), 4);
}

#[test]
fn views_are_served_a_sweep_interval_at_most() {
    let u = unhealthy();
    let ready = ready(&u, None);
    let q = Query::default();
    let first = health_api::parse(&ready.make(View::Json, &q)).unwrap();
    let age = u.snap.interval.clamp(MIN_AGE, MAX_AGE);
    u.rig.advance(age - Duration::from_millis(1));
    assert!(ready.hit(View::Json, &q).is_some());
    u.rig.advance(Duration::from_millis(1));
    assert!(ready.hit(View::Json, &q).is_none(), "past its age");
    let r = health_api::parse(&ready.make(View::Json, &q)).unwrap();
    assert_eq!(
        r.generated_ms - first.generated_ms,
        age.as_millis() as u64,
        "made now"
    );
}

#[test]
fn read_queries_are_made_again_once_the_snapshot_settles() {
    let mut u = unhealthy();
    let ready = ready(&u, None);
    let (q, other) = (Query::default(), Query::parse("sort=name").unwrap());
    let mut last = None;
    assert!(!ready.due(&mut last), "no query read");
    ready.make(View::Page, &q);
    ready.make(View::Page, &other);
    assert!(!ready.due(&mut last) && !ready.due(&mut last), "current");
    u.rig.advance(Duration::from_secs(10));
    u.rig.sweep();
    assert!(!ready.due(&mut last), "not settled: seen once");
    assert!(ready.due(&mut last), "settled");
    assert_eq!(ready.warm(), 2);
    assert!(!ready.due(&mut last));
    assert!(ready.hit(View::Json, &q).is_some() && ready.hit(View::Json, &other).is_some());
    // A query not asked within WATCH is not made again.
    u.rig.advance(WATCH);
    u.rig.sweep();
    ready.hit(View::Json, &q);
    assert!(!ready.due(&mut last) && ready.due(&mut last));
    assert_eq!(ready.warm(), 1, "only the query read");
    assert_eq!(ready.reports(), 5);
}

#[test]
fn the_query_asked_the_longest_ago_gives_its_slot_up() {
    let u = unhealthy();
    let ready = ready(&u, None);
    let queries: Vec<Query> = (1..=SLOTS + 1)
        .map(|n| Query::parse(&format!("limit={n}")).unwrap())
        .collect();
    for q in &queries {
        ready.make(View::Json, q);
        u.rig.advance(Duration::from_millis(1));
    }
    assert_eq!(lock(&ready.slots).len(), SLOTS);
    assert!(ready.hit(View::Json, &queries[SLOTS]).is_some());
    assert!(ready.hit(View::Json, &queries[1]).is_some());
    assert!(ready.hit(View::Json, &queries[0]).is_none(), "given up");
}
