use std::time::Instant;

use super::*;
use crate::metrics::status::{Query, report};
use crate::metrics::tests::unhealthy;

#[test]
fn the_json_reads_back_as_the_same_report() {
    let u = unhealthy();
    let r = report(&u.snap, u.now, Instant::now(), &Query::default());
    let body = render(&r);
    assert!(body.ends_with(b"}\n"));
    let back = parse(&body).unwrap();
    assert_eq!(back, r);
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["status"], "unhealthy");
    assert_eq!(v["schema"], 1);
    let l = &v["unhealthy_links"]["rows"][0];
    assert_eq!(l["verdicts"][0]["condition"], "link_lost");
    assert!(l["a"]["guid"].as_str().unwrap().starts_with("0x"));
    for k in [
        "agent",
        "conditions",
        "unreachable_nodes",
        "unhealthy_links",
        "degraded_links",
        "worst_error_ports",
        "worst_congested_ports",
    ] {
        assert!(!v[k].is_null(), "{k}");
    }
}

#[test]
fn text_from_the_fabric_is_escaped_in_json() {
    let u = unhealthy();
    let mut r = report(&u.snap, u.now, Instant::now(), &Query::default());
    r.unhealthy_links.rows[0].a.name = "a\"b\\c\n\u{1}</script>".into();
    let body = render(&r);
    let text = String::from_utf8(body.clone()).unwrap();
    assert!(text.contains(r#""a\"b\\c\n\u0001</script>""#), "{text}");
    assert_eq!(parse(&body).unwrap(), r);
}

/// A condition or status the reader does not know is no report: refused,
/// naming what it read and what it knows, not taken for another.
#[test]
fn a_report_naming_an_unknown_condition_is_refused() {
    let u = unhealthy();
    let r = report(&u.snap, u.now, Instant::now(), &Query::default());
    let v: serde_json::Value = serde_json::from_slice(&render(&r)).unwrap();
    assert_eq!(v["conditions"][0]["condition"], "link_lost");
    let with = |path: &[&str], to: &str| {
        let mut v = v.clone();
        let mut at = &mut v;
        for k in path {
            at = match k.parse::<usize>() {
                Ok(i) => &mut at[i],
                Err(_) => &mut at[*k],
            };
        }
        *at = serde_json::Value::from(to);
        parse(&serde_json::to_vec(&v).unwrap())
    };
    let e = with(
        &["unhealthy_links", "rows", "0", "verdicts", "0", "condition"],
        "shaky",
    )
    .unwrap_err();
    assert!(
        e.contains("unknown condition `shaky`") && e.contains("link_lost, unresponsive"),
        "{e}"
    );
    let e = with(&["conditions", "2", "condition"], "LinkLost").unwrap_err();
    assert!(e.contains("unknown condition `LinkLost`"), "{e}");
    let e = with(&["status"], "degraded").unwrap_err();
    assert!(e.contains("unknown variant `degraded`"), "{e}");
    assert!(with(&["status"], "stale").is_ok());
}
