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
