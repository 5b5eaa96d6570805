use std::sync::Arc;

use super::*;
use crate::mib::read::read;
use crate::mib::tables::COLUMNS;
use crate::rig::{AgentRig, RigOptions};

/// The one time every render and read of these tests is made at.
static NOW: std::sync::LazyLock<std::time::Instant> =
    std::sync::LazyLock::new(std::time::Instant::now);

fn scrape_of(snap: &Snapshot, format: Format, collectors: Collectors) -> String {
    let endpoint = EndpointCounters::default();
    let http = HttpCounters::default();
    let s = Scrape {
        snap,
        endpoint: &endpoint,
        http: &http,
        format,
        collectors,
        taken_unix: Some(1_700_000_000.25),
        events: None,
        now: *NOW,
    };
    let mut out = Vec::new();
    render(&s, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

/// The value of `name{node_guid="…",port="N"}` in an exposition.
fn sample(text: &str, name: &str, guid: Guid, port: u8) -> Option<String> {
    let head = format!("{name}{{node_guid=\"0x{:016x}\",port=\"{port}\"}} ", guid.0);
    text.lines()
        .find_map(|l| l.strip_prefix(&head))
        .map(str::to_string)
}

#[test]
fn each_sample_is_the_mib_value_of_the_same_snapshot() {
    let rig = AgentRig::swept(RigOptions::default());
    let snap = rig.cache.load();
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    let endpoint = EndpointCounters::default();
    let mut checked = 0;
    // (The health collector's rows are the verdict entries': their own
    // test.)
    for f in FAMILIES
        .iter()
        .filter(|f| f.lane.is_none() && f.table.per_port() && f.part != Part::Health)
    {
        let col = COLUMNS.iter().find(|c| std::ptr::eq(*c, f.column)).unwrap();
        let name = match f.kind {
            Kind::Counter => format!("{}_total", f.name),
            Kind::Gauge => f.name.clone(),
        };
        for node in snap.nodes.iter() {
            for p in node.ports() {
                let want = read(
                    col,
                    &snap,
                    &endpoint,
                    Some(node),
                    RowIndex::port(node.id.guid, p.num()),
                    0,
                    *NOW,
                );
                let got = sample(&text, &name, node.id.guid, p.num());
                let mut shown = Vec::new();
                let want = want.filter(|v| push_value(&mut shown, v, f.scale));
                // Counters only of ports whose link was ever up.
                let want = want.filter(|_| f.collector == Collector::Port || p.ever_linked());
                match (want, got, Collectors::defaults().has(f.collector)) {
                    (Some(_), Some(g), true) => {
                        assert_eq!(String::from_utf8(shown).unwrap(), g, "{name}");
                        checked += 1;
                    }
                    (None, None, _) | (_, None, false) => {}
                    (w, g, on) => panic!(
                        "{name} {:?}/{}: MIB {w:?}, scrape {g:?} (collector on: {on})",
                        node.id.guid,
                        p.num()
                    ),
                }
            }
        }
    }
    assert!(checked > 1000, "{checked}");
    // Data in bytes: the 64-bit total is already in octets.
    let n = &snap.nodes[0];
    let p = n.ports().next().unwrap();
    assert_eq!(
        sample(
            &text,
            "infiniband_port_transmit_data_bytes_total",
            n.id.guid,
            p.num()
        ),
        p.hc.shown(crate::fabric::hc::OUT_OCTETS)
            .map(|v| v.to_string())
    );
}

#[test]
fn an_unreachable_nodes_counters_leave_and_its_info_stays() {
    let rig = AgentRig::swept(RigOptions::default());
    let mut snap = Snapshot::clone(&rig.cache.load());
    let gone = snap.nodes[0].id.guid;
    Arc::make_mut(&mut snap.nodes[0]).reachable = false;
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    let g = format!("node_guid=\"0x{:016x}\"", gone.0);
    let own = format!("{{{g}");
    let lines: Vec<&str> = text.lines().filter(|l| l.contains(&own)).collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(lines[0].starts_with("infiniband_node_info{"));
    assert_eq!(lines[1], format!("infiniband_node_up{{{g}}} 0"));
    let other = snap.nodes[1].id.guid;
    assert!(text.contains(&format!(
        "infiniband_node_up{{node_guid=\"0x{:016x}\"}} 1",
        other.0
    )));
}

#[test]
fn openmetrics_names_counters_and_infos_and_ends_with_eof() {
    let rig = AgentRig::swept(RigOptions::default());
    let snap = rig.cache.load();
    let om = scrape_of(&snap, Format::OpenMetrics, Collectors::defaults());
    assert!(om.ends_with("# EOF\n"));
    assert_eq!(om.matches("# EOF").count(), 1);
    assert!(om.contains("# TYPE infiniband_port_receive_data_bytes counter\n"));
    assert!(om.contains("# TYPE infiniband_node info\n"));
    assert!(om.contains("# TYPE infiniband_agent_sweeps counter\n"));
    assert!(om.contains("\ninfiniband_agent_sweeps_total 1\n"));
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    assert!(text.contains("# TYPE infiniband_port_receive_data_bytes_total counter\n"));
    assert!(text.contains("# TYPE infiniband_node_info gauge\n"));
    assert!(!text.contains("# EOF"));
    assert!(text.contains("infiniband_agent_last_publication_timestamp_seconds 1700000000.250\n"));
    // The same samples in both.
    let samples = |t: &str| t.lines().filter(|l| !l.starts_with('#')).count();
    assert_eq!(samples(&om), samples(&text));
    // Every family's samples follow its header, once.
    for t in [&om, &text] {
        let mut seen = std::collections::HashSet::new();
        let mut current = String::new();
        for l in t.lines() {
            if let Some(rest) = l.strip_prefix("# TYPE ") {
                current = rest.split(' ').next().unwrap().to_string();
                assert!(seen.insert(current.clone()), "{current} twice");
            } else if !l.starts_with('#') {
                assert!(l.starts_with(&current), "{l} after # TYPE {current}");
            }
        }
    }
}

#[test]
fn collectors_choose_the_families_and_labels_are_escaped() {
    let rig = AgentRig::swept(RigOptions::default());
    let mut snap = Snapshot::clone(&rig.cache.load());
    Arc::make_mut(&mut snap.nodes[0]).id.description =
        "a \"quoted\" \\ name\nwith a newline".into();
    let only_errors = Collectors::NONE.with(Collector::Errors);
    let errors = scrape_of(&snap, Format::Text, only_errors);
    assert!(errors.contains("infiniband_port_symbol_errors_total{"));
    assert!(!errors.contains("transmit_data_bytes"));
    assert!(!errors.contains("infiniband_node_info"));
    assert!(!errors.contains("infiniband_agent_"));
    let nodes = scrape_of(&snap, Format::Text, Collectors::NONE.with(Collector::Node));
    assert!(
        nodes.contains(r#"node_desc="a \"quoted\" \\ name\nwith a newline""#),
        "{nodes}"
    );
    assert!(scrape_of(&snap, Format::Text, Collectors::NONE).is_empty());
    let vl = scrape_of(&snap, Format::Text, Collectors::NONE.with(Collector::Vl));
    assert!(vl.contains(",vl=\"0\"} "), "{}", &vl[..vl.len().min(2000)]);
}

#[test]
fn accept_headers_choose_the_format() {
    let prometheus_2_42 = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
    assert_eq!(
        Format::negotiate(Some(prometheus_2_42)),
        Format::OpenMetrics
    );
    assert_eq!(Format::negotiate(None), Format::Text);
    assert_eq!(Format::negotiate(Some("*/*")), Format::Text);
    assert_eq!(
        Format::negotiate(Some("text/plain;version=0.0.4")),
        Format::Text
    );
    assert_eq!(
        Format::negotiate(Some("text/plain;q=1,application/openmetrics-text;q=0.5")),
        Format::Text
    );
    assert_eq!(
        Format::negotiate(Some("application/openmetrics-text;version=2.0.0")),
        Format::Text
    );
    assert_eq!(
        Format::negotiate(Some("application/openmetrics-text;q=nan")),
        Format::Text
    );
}

/// A yes/no name is 0 or 1: infiniband_port_link_degraded is 1 exactly
/// where pmPortLinkDegraded says a degraded value, which
/// infiniband_port_link_health serves as it is.
#[test]
fn link_degraded_is_zero_or_one_and_link_health_the_enumeration() {
    let rig = AgentRig::swept(RigOptions::default());
    let snap = rig.cache.load();
    let node = &snap.nodes[0];
    let mut rec = (**node).clone();
    rec.ports_mut()[0].assessment.health = Some(crate::ib::LinkHealth::SpeedDegraded);
    rig.cache.patch(rec.id.guid, Some(Arc::new(rec)));
    let snap = rig.cache.load();
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    let mut degraded = 0;
    for n in snap.nodes.iter() {
        for p in n.ports() {
            let flag = sample(&text, "infiniband_port_link_degraded", n.id.guid, p.num());
            let code = sample(&text, "infiniband_port_link_health", n.id.guid, p.num());
            let (Some(flag), Some(code)) = (flag, code) else {
                panic!("{:?}/{}: both served", n.id.guid, p.num());
            };
            let code: u64 = code.parse().unwrap();
            assert_eq!(code, u64::from(p.assessment.health.map_or(0, |h| h.mib())));
            assert_eq!(flag, if code >= 2 { "1" } else { "0" });
            degraded += usize::from(code >= 2);
        }
    }
    assert!(degraded >= 1);
}

/// A port never linked since the start serves its state and info only; a
/// port once linked keeps its counters after its link goes down.
#[test]
fn counters_only_of_ports_that_were_ever_linked() {
    let rig = AgentRig::swept(RigOptions::default());
    let snap = rig.cache.load();
    let (mut never, mut ever) = (0, 0);
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    for n in snap.nodes.iter() {
        for p in n.ports() {
            let state = sample(&text, "infiniband_port_state", n.id.guid, p.num());
            let errors = sample(
                &text,
                "infiniband_port_symbol_errors_total",
                n.id.guid,
                p.num(),
            );
            assert!(state.is_some());
            assert_eq!(errors.is_some(), p.ever_linked() && p.hc.valid != 0);
            if p.ever_linked() {
                ever += 1;
            } else {
                never += 1;
            }
        }
    }
    assert!(never > 0 && ever > 0, "{never} never linked, {ever} linked");
    // A linked port that goes down keeps its counter series.
    let node = snap
        .nodes
        .iter()
        .find(|n| n.ports().any(|p| p.ever_linked() && p.hc.valid != 0))
        .unwrap();
    let mut rec = (**node).clone();
    let i = rec
        .ports()
        .position(|p| p.ever_linked() && p.hc.valid != 0)
        .unwrap();
    let mut down = rec.to_node();
    down.ports[i].state = Some(crate::ib::PortState::Down);
    rec.relink(&down);
    let num = rec.ports().nth(i).unwrap().num();
    rig.cache.patch(rec.id.guid, Some(Arc::new(rec)));
    let text = scrape_of(&rig.cache.load(), Format::Text, Collectors::defaults());
    assert!(
        sample(
            &text,
            "infiniband_port_symbol_errors_total",
            node.id.guid,
            num
        )
        .is_some()
    );
}

/// The exposition of the simulator's default fabric, every collector on,
/// after two sweeps ten seconds apart, in both formats, but for the
/// samples of the bit error ratios: the rig's virtual clock starts at the
/// real time, and a record keeps its readings' times in microseconds, so
/// the time between two readings (and a ratio's last digit) may differ
/// by a microsecond from run to run.
fn golden_exposition() -> String {
    let mut rig = AgentRig::swept(RigOptions::default());
    rig.advance(std::time::Duration::from_secs(10));
    rig.sweep();
    let snap = rig.cache.load();
    let all: Collectors = Collector::ALL.into_iter().collect();
    let mut text = scrape_of(&snap, Format::Text, all);
    text.push_str(&scrape_of(&snap, Format::OpenMetrics, all));
    text.lines()
        .filter(|l| !l.contains("_bit_error_ratio{"))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// The checked-in exposition [`golden_exposition`] must render: the
/// families as declared on their MIB columns, the SNMP endpoint's refusals
/// by reason, the sweeper's subnet on the info series and the subnet
/// collector's series. A change to the exposition shows as a diff of this
/// file; `UPDATE_GOLDEN=1` writes it anew.
const GOLDEN: &str = "tests/fixtures/golden-exposition.txt";

/// The lines of `want` and `got` that differ, in order, `-` for a line
/// only `want` has and `+` for one only `got` has (the first 40).
fn line_diff(want: &str, got: &str) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (want.lines().collect(), got.lines().collect());
    // The common head and tail go first, so the table below is of the
    // lines that changed only (bounded: past 2,000 a side, listed whole).
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let (a, b) = (&a[head..a.len() - tail], &b[head..b.len() - tail]);
    if a.len() > 2000 || b.len() > 2000 {
        let mut out: Vec<String> = a.iter().take(20).map(|l| format!("-{l}")).collect();
        out.extend(b.iter().take(20).map(|l| format!("+{l}")));
        return out.join("\n");
    }
    // The longest common subsequence, by the lines' positions.
    let mut l = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            l[i][j] = if a[i] == b[j] {
                l[i + 1][j + 1] + 1
            } else {
                l[i + 1][j].max(l[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            (i, j) = (i + 1, j + 1);
        } else if j < b.len() && (i == a.len() || l[i][j + 1] >= l[i + 1][j]) {
            out.push(format!("+{}", b[j]));
            j += 1;
        } else {
            out.push(format!("-{}", a[i]));
            i += 1;
        }
    }
    let more = out.len().saturating_sub(40);
    out.truncate(40);
    if more > 0 {
        out.push(format!("... {more} more"));
    }
    out.join("\n")
}

/// Declaring a family on its MIB column, and reading the info series
/// through the MIB's read path, changes no byte of the exposition.
#[test]
fn the_simulators_exposition_keeps_every_byte() {
    let text = golden_exposition();
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(GOLDEN);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::write(&path, &text).unwrap();
    }
    let want = std::fs::read_to_string(&path).unwrap();
    assert!(
        text == want,
        "the exposition differs from {GOLDEN} (UPDATE_GOLDEN=1 writes it):\n{}",
        line_diff(&want, &text)
    );
}

#[test]
fn a_line_diff_names_the_lines_each_side_has_alone() {
    assert_eq!(line_diff("a\nb\nc\n", "a\nx\nc\n"), "+x\n-b");
    assert_eq!(line_diff("a\n", "a\nb\n"), "+b");
    assert_eq!(line_diff("a\nb\n", "a\nb\n"), "");
}

/// Two subnets in the snapshot: an info series each with the SM's fields
/// and the local ports, the `subnet` label on the port and node info
/// series (a node with a port in each names both), and each subnet's sweep
/// figures.
#[test]
fn subnets_have_an_info_series_their_figures_and_label_ports_and_nodes() {
    use crate::ib::subnet::{LocalPort, SubnetView};
    let rig = AgentRig::swept(RigOptions::default());
    let mut snap = Snapshot::clone(&rig.cache.load());
    let taken = snap.taken.unwrap();
    let plane_a = SubnetView {
        standby: vec![LocalPort::new("mlx5_2", 1)],
        nodes: 20,
        ports: 80,
        sweep: 7,
        swept: taken.checked_sub(std::time::Duration::from_millis(2_500)),
        duration_ms: 1_250,
        ..crate::rig::subnet(0, Some("plane-a"), 0xfe80 << 48, 0x0002_c903_00a1_b2c3)
    };
    let plane_b = SubnetView {
        sm: None,
        sweeping: None,
        ..crate::rig::subnet(1, None, (0xfe80 << 48) | 2, 0)
    };
    snap.subnets = vec![plane_a, plane_b].into();
    let twin = Arc::make_mut(&mut snap.nodes[0]);
    twin.ports_mut().last_mut().unwrap().subnet = 1;
    let (g, last) = (twin.id.guid, twin.ports().next_back().unwrap().num());
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    let info: Vec<&str> = text
        .lines()
        .filter(|l| l.starts_with("infiniband_subnet_info{"))
        .collect();
    assert_eq!(
        info,
        [
            "infiniband_subnet_info{subnet=\"plane-a\",prefix=\"fe80::/64\",sm_guid=\"0x0002c90300a1b2c3\",sm_lid=\"1\",sm_priority=\"15\",sm_state=\"master\",local_ca=\"mlx5_0\",local_port=\"1\",standby=\"mlx5_2:1\"} 1",
            "infiniband_subnet_info{subnet=\"fe80:0:0:2::/64\",prefix=\"fe80:0:0:2::/64\",sm_guid=\"0x0000000000000000\",sm_lid=\"0\",sm_priority=\"0\",sm_state=\"none\",local_ca=\"\",local_port=\"\",standby=\"\"} 1",
        ]
    );
    let port_info = |port: u8| {
        let head = format!(
            "infiniband_port_info{{node_guid=\"0x{:016x}\",port=\"{port}\",",
            g.0
        );
        text.lines()
            .find(|l| l.starts_with(&head))
            .unwrap()
            .to_string()
    };
    assert!(
        port_info(1).ends_with(",subnet=\"plane-a\"} 1"),
        "{}",
        port_info(1)
    );
    assert!(
        port_info(last).ends_with(",subnet=\"fe80:0:0:2::/64\"} 1"),
        "{}",
        port_info(last)
    );
    let node_info = text
        .lines()
        .find(|l| {
            l.starts_with(&format!(
                "infiniband_node_info{{node_guid=\"0x{:016x}\"",
                g.0
            ))
        })
        .unwrap();
    assert!(
        node_info.ends_with(",subnet=\"plane-a,fe80:0:0:2::/64\",node_name=\"node01 HCA-1\"} 1"),
        "{node_info}"
    );
    let sample = |name: &str, subnet: &str| {
        let head = format!("{name}{{subnet=\"{subnet}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&head))
            .map(str::to_string)
    };
    assert_eq!(
        sample("infiniband_subnet_nodes", "plane-a").as_deref(),
        Some("20")
    );
    assert_eq!(
        sample("infiniband_subnet_ports", "plane-a").as_deref(),
        Some("80")
    );
    assert_eq!(
        sample("infiniband_subnet_sweep_duration_seconds", "plane-a").as_deref(),
        Some("1.250")
    );
    assert_eq!(
        sample("infiniband_subnet_sweeps_total", "plane-a").as_deref(),
        Some("7")
    );
    // Published at 1,700,000,000.25 (the scrape's), the sweep ended 2.5 s
    // before.
    assert_eq!(
        sample("infiniband_subnet_last_sweep_timestamp_seconds", "plane-a").as_deref(),
        Some("1699999997.750")
    );
    // Never swept: no timestamp.
    let b = "fe80:0:0:2::/64";
    assert_eq!(
        sample("infiniband_subnet_last_sweep_timestamp_seconds", b),
        None
    );
    assert_eq!(
        sample("infiniband_subnet_sweeps_total", b).as_deref(),
        Some("0")
    );
    // Without the collector: none of it, and the other labels unchanged.
    let without = Collectors::NONE.with(Collector::Port);
    let no_subnets = scrape_of(&snap, Format::Text, without);
    assert!(!no_subnets.contains("infiniband_subnet_"));
}

/// A configured subnet name is a label value like any other: escaped.
#[test]
fn a_subnet_name_is_escaped_in_its_labels() {
    let rig = AgentRig::swept(RigOptions::default());
    let mut snap = Snapshot::clone(&rig.cache.load());
    snap.subnets = vec![crate::rig::subnet(0, Some("a\"b\\c"), 0xfe80 << 48, 1)].into();
    let text = scrape_of(&snap, Format::Text, Collectors::defaults());
    let escaped = "subnet=\"a\\\"b\\\\c\"";
    let port_info = text
        .lines()
        .find(|l| l.starts_with("infiniband_port_info{"))
        .unwrap();
    assert!(
        port_info.ends_with(&format!(",{escaped}}} 1")),
        "{port_info}"
    );
    assert!(text.contains(&format!("infiniband_subnet_info{{{escaped},")));
    assert!(text.contains(&format!("infiniband_subnet_sweeps_total{{{escaped}}} 0")));
}
