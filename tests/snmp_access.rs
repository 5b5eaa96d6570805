//! Access rules of the agent's own SNMP endpoint, through the real binary
//! (simulated fabric) and net-snmp's snmpget, snmpbulkwalk and snmpset:
//! sources decide who gets an answer at all (others get none, and are
//! counted), a rule's subtrees limit what its requests see, and only a
//! rule with `write` may set. Sources other than 127.0.0.1 are loopback
//! addresses net-snmp's `--clientaddr` sends from.

mod common;

use std::process::Output;
use std::time::Duration;

use common::{ChildGuard, SnmpTool, free_udp_port, run_agent, wait_sweeps};

struct Agent {
    guard: ChildGuard,
    target: String,
    dir: tempfile::TempDir,
}

impl Agent {
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }
}

/// The agent with `[snmp] listen` on `host` and the given rules; waits for
/// the first sweep through `probe` (a community the rules let 127.0.0.1 use
/// for everything).
fn agent(host: &str, rules: &str) -> Agent {
    let dir = tempfile::tempdir().unwrap();
    let port = free_udp_port();
    let listen = format!("{host}:{port}");
    let target = if host.starts_with('[') {
        format!("udp6:{listen}")
    } else {
        listen.clone()
    };
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        format!(
            "[agentx]\nenabled = false\n[set]\nallow = true\n[log]\nlevel = \"info\"\n\
             [snmp]\nlisten = \"{listen}\"\n{rules}\n"
        ),
    )
    .unwrap();
    let mut guard = run_agent(&conf, &dir.path().join("agent.log"));
    let log_path = dir.path().join("agent.log");
    wait_sweeps(&target, 1, Duration::from_secs(30), &mut guard, || {
        std::fs::read_to_string(&log_path).unwrap_or_default()
    });
    Agent { guard, target, dir }
}

fn tool(name: &str, community: &str, from: Option<&str>, target: &str, args: &[&str]) -> Output {
    let mut t = SnmpTool::new(name)
        .args(["-v2c", "-c", community, "-On", "-t", "1", "-r", "0"])
        .timeout(Duration::from_secs(20));
    if let Some(f) = from {
        t = t.arg(&format!("--clientaddr={f}"));
    }
    t.arg(target).args(args).run()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn counter(target: &str, column: u32) -> u64 {
    let o = tool(
        "snmpget",
        "public",
        None,
        target,
        &["-Oqv", &format!("1.3.6.1.3.117.1.9.{column}.0")],
    );
    text(&o)
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("{}", text(&o)))
}

const SWEEPS: &str = "1.3.6.1.3.117.1.9.3.0";

const RULES: &str = r#"
[[snmp.access]]
community = "public"
sources = ["127.0.0.1"]

[[snmp.access]]
community = "ports"
sources = ["127.0.0.2/32"]
subtrees = ["pmPortTable"]

[[snmp.access]]
community = "rw"
sources = ["127.0.0.1"]
subtrees = ["pmPortTable"]
write = true
"#;

#[test]
fn a_source_no_rule_lists_gets_no_answer_and_is_counted() {
    let a = agent("127.0.0.1", RULES);
    let refused = counter(&a.target, 16);
    // "ports" from 127.0.0.2: answered (pmPortTable only).
    let o = tool(
        "snmpbulkwalk",
        "ports",
        Some("127.0.0.2"),
        &a.target,
        &["-Cr25", "1.3.6.1.3.117"],
    );
    let walk = text(&o);
    assert!(o.status.success(), "{walk}");
    let lines: Vec<&str> = walk.lines().filter(|l| l.starts_with('.')).collect();
    assert!(lines.len() > 20, "{walk}");
    assert!(
        lines.iter().all(|l| l.starts_with(".1.3.6.1.3.117.1.6.1.")),
        "only pmPortTable: {walk}"
    );
    // "ports" from 127.0.0.1, which only lists "public" and "rw": nothing.
    let o = tool("snmpget", "ports", None, &a.target, &[SWEEPS]);
    assert!(text(&o).contains("Timeout"), "{}", text(&o));
    // Any community from 127.0.0.3, which no rule lists: nothing.
    let o = tool("snmpget", "public", Some("127.0.0.3"), &a.target, &[SWEEPS]);
    assert!(text(&o).contains("Timeout"), "{}", text(&o));
    assert_eq!(counter(&a.target, 16), refused + 2);
    assert!(
        a.log().lines().any(|l| l.contains("snmp: refused")
            && l.contains("source not listed; the last from 127.0.0.3")),
        "{}",
        a.log()
    );
    // Counted in and out: the refused ones went in and not out.
    let (inp, out) = (counter(&a.target, 14), counter(&a.target, 15));
    assert!(inp >= out + 2, "in {inp} out {out}");
}

#[test]
fn a_rules_subtrees_hide_the_rest_and_only_a_write_rule_sets() {
    let mut a = agent("127.0.0.1", RULES);
    // Outside the "ports" view, even a scalar does not exist.
    let o = tool("snmpget", "ports", Some("127.0.0.2"), &a.target, &[SWEEPS]);
    assert!(text(&o).contains("No Such Object"), "{}", text(&o));
    // The first port of the first node, from pmPortTable's first column.
    let o = tool(
        "snmpgetnext",
        "public",
        None,
        &a.target,
        &["1.3.6.1.3.117.1.6.1.14"],
    );
    let first = text(&o);
    let name = first.split_whitespace().next().unwrap().to_string();
    assert!(name.starts_with(".1.3.6.1.3.117.1.6.1.14."), "{first}");
    // A read-only rule: noAccess, as snmpd answers through rocommunity.
    let o = tool("snmpset", "public", None, &a.target, &[&name, "u", "1"]);
    assert!(text(&o).contains("noAccess"), "{}", text(&o));
    // The write rule clears the port's SymbolErrorCounter.
    let o = tool("snmpset", "rw", None, &a.target, &[&name, "u", "1"]);
    assert!(o.status.success(), "{}", text(&o));
    // ... but only inside its subtrees: pmPortCountersPortSelect is not.
    let o = tool(
        "snmpgetnext",
        "public",
        None,
        &a.target,
        &["1.3.6.1.3.117.1.4.1.2"],
    );
    let select = text(&o).split_whitespace().next().unwrap().to_string();
    let o = tool("snmpset", "rw", None, &a.target, &[&select, "u", "1"]);
    assert!(text(&o).contains("noAccess"), "{}", text(&o));
    assert!(a.guard.running());
}

#[test]
fn ipv6_sources_are_rules_too() {
    let a = agent(
        "[::1]",
        "[[snmp.access]]\ncommunity = \"public\"\nsources = [\"::1\"]\n\
         [[snmp.access]]\ncommunity = \"v4\"\nsources = [\"127.0.0.0/8\"]\n",
    );
    let o = tool("snmpget", "public", None, &a.target, &["-Oqv", SWEEPS]);
    assert!(o.status.success(), "{}", text(&o));
    // A rule for IPv4 sources does not let ::1 use its community.
    let o = tool("snmpget", "v4", None, &a.target, &[SWEEPS]);
    assert!(text(&o).contains("Timeout"), "{}", text(&o));
    assert_eq!(counter(&a.target, 16), 1);
}

/// A v2c GetRequest of pmAgentSweeps.0 with `community`, request-id `id`.
fn get_request(community: &str, id: u8) -> Vec<u8> {
    let vbs = [
        0x30, 0x0f, 0x30, 0x0d, 0x06, 0x09, 0x2b, 6, 1, 3, 0x75, 1, 9, 3, 0, 0x05, 0x00,
    ];
    let mut pdu = vec![0x02, 0x01, id, 0x02, 0x01, 0x00, 0x02, 0x01, 0x00];
    pdu.extend_from_slice(&vbs);
    let mut inner = vec![0x02, 0x01, 0x01, 0x04, community.len() as u8];
    inner.extend_from_slice(community.as_bytes());
    inner.push(0xa0);
    inner.push(pdu.len() as u8);
    inner.extend_from_slice(&pdu);
    let mut m = vec![0x30, inner.len() as u8];
    m.extend_from_slice(&inner);
    m
}

/// The `reason`s and values of the series `name` in `body`.
fn by_reason(body: &str, name: &str) -> std::collections::BTreeMap<String, u64> {
    let prefix = format!("{name}{{reason=\"");
    body.lines()
        .filter_map(|l| l.strip_prefix(&prefix))
        .map(|l| {
            let (reason, value) = l.split_once("\"} ").unwrap();
            (reason.to_string(), value.parse().unwrap())
        })
        .collect()
}

#[test]
fn snmp_refusals_are_served_by_reason_beside_the_metrics_endpoints() {
    use std::net::UdpSocket;
    let dir = tempfile::tempdir().unwrap();
    // "public" answers the sweep probe; "slow" is guarded: one answer, then
    // one a second.
    let rules = "[[snmp.access]]\ncommunity = \"public\"\nsources = [\"127.0.0.1\"]\n\
                 [[snmp.access]]\ncommunity = \"slow\"\nsources = [\"127.0.0.1\"]\n\
                 rate_limit = 1\nrate_burst = 1\n";
    let mut a = common::MetricsAgent::start(dir.path(), "[log]\nlevel = \"info\"", rules, 1);
    let sock = UdpSocket::bind("127.0.0.1:0").unwrap();
    sock.connect(&a.snmp).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    // A source no rule lists, a community no rule gives, an undecodable
    // datagram: one each.
    let other = UdpSocket::bind("127.0.0.3:0").unwrap();
    other.send_to(&get_request("public", 1), &a.snmp).unwrap();
    sock.send(&get_request("nope", 2)).unwrap();
    sock.send(b"\x30\x03\x02\x01").unwrap();
    // Twenty at once through the guarded rule: the burst is answered.
    const SENT: u64 = 20;
    for i in 0..SENT {
        sock.send(&get_request("slow", 10 + i as u8)).unwrap();
    }
    let mut answered = 0u64;
    let mut buf = [0u8; 1500];
    while sock.recv(&mut buf).is_ok() {
        answered += 1;
    }
    assert!((1..SENT).contains(&answered), "{answered} answered");
    let want = [
        ("source", 1),
        ("auth", 1),
        ("rate", SENT - answered),
        ("bad_request", 1),
        ("too_big", 0),
        ("usm", 0),
    ];
    let want: std::collections::BTreeMap<String, u64> =
        want.iter().map(|(r, n)| (r.to_string(), *n)).collect();
    // The responder counts as it reads; the scrape shows it at once after.
    let mut body = String::new();
    let seen = common::poll(Duration::from_secs(10), Duration::from_millis(100), || {
        let (status, _, b) = common::http::get(a.port, "/metrics?collect[]=agent", "");
        assert_eq!(status, 200);
        body = String::from_utf8_lossy(&b).to_string();
        let got = by_reason(&body, "infiniband_agent_snmp_refused_total");
        (got == want).then_some(())
    });
    assert!(seen.is_some(), "want {want:?}:\n{body}");
    // Named as the metrics endpoint's, each edge with its own kinds.
    let http = by_reason(&body, "infiniband_agent_metrics_refused_total");
    assert!(
        http.contains_key("busy") && !http.contains_key("usm"),
        "{body}"
    );
    assert!(
        body.contains("# TYPE infiniband_agent_snmp_refused_total counter"),
        "{body}"
    );
    // The MIB's columns are the same counts: pmAgentSnmpRefused (source and
    // auth) and pmAgentSnmpRateLimited.
    assert_eq!(counter(&a.snmp, 16), 2);
    assert_eq!(counter(&a.snmp, 17), SENT - answered);
    // Each kind logged in a line of its own.
    let log = std::fs::read_to_string(&a.log).unwrap();
    for what in [
        "source not listed",
        "no valid credentials",
        "over its source's request rate",
    ] {
        assert!(
            log.lines()
                .any(|l| l.contains("snmp: refused") && l.contains(what)),
            "{what}:\n{log}"
        );
    }
    assert!(a.agent.stop().unwrap().success());
}
