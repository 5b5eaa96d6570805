use super::*;
use crate::metrics::tests::unhealthy;

#[test]
fn hosts_roll_up_their_adapter_ports_and_switches_list_the_hosts_behind_them() {
    let u = unhealthy();
    let snap = &u.snap;
    let host = |g: Guid| host_of(snap.node(g).unwrap().name()).to_string();
    let all = roll_up(snap, false);
    let bad = roll_up(snap, true);
    assert!(all.hosts.len() > bad.hosts.len(), "healthy hosts too");
    let silent = bad.hosts.iter().find(|h| h.host == host(u.silent)).unwrap();
    assert_eq!(silent.worst.as_deref(), Some("unresponsive"));
    let noisy = bad
        .hosts
        .iter()
        .find(|h| h.host == host(u.noisy.0))
        .unwrap();
    assert_eq!(noisy.worst.as_deref(), Some("erroring"));
    let port = noisy.ports.iter().find(|p| p.port == u.noisy.1).unwrap();
    let sw = port.switch.as_ref().expect("cabled to a switch");
    // The switch end carries the link's verdict: the host is behind it.
    let behind = bad.switches.iter().find(|s| s.guid == sw.guid).unwrap();
    assert!(behind.hosts.contains(&noisy.host), "{behind:?}");
    assert!(behind.ports_with_verdict.contains(&sw.port));
    // One line per unhealthy host, the host alone.
    let text = lines(&bad);
    assert_eq!(text.lines().count(), bad.hosts.len());
    assert!(text.lines().any(|l| l == noisy.host));
    assert_eq!(parse(&render(&all)).unwrap(), all);
}

#[test]
fn the_query_takes_unhealthy_alone() {
    assert_eq!(parse_query(""), Ok(false));
    assert_eq!(parse_query("unhealthy=1"), Ok(true));
    assert!(
        parse_query("unhealthy=2")
            .unwrap_err()
            .contains("unhealthy=1")
    );
    assert!(parse_query("host=x").is_err());
}
