//! Text from a topology file (or the fabric) never reaches the log or an
//! error line raw: a NodeDescription with terminal escape sequences is
//! logged escaped when the node becomes unreachable and when it answers
//! again, and a topology error quoting such text prints it escaped.

mod common;

use std::time::Duration;

use ibpm_agentx::fabric::engine::EngineConfig;
use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::ib::topology;
use ibpm_agentx::rig::{AgentRig, RigOptions};

/// A description that clears the screen, sets the window title, rings the
/// bell, and returns the cursor to forge the rest of a log line.
const HOSTILE: &str = "h1\u{1b}[2J\u{1b}]0;owned\u{7}\rINFO forged\u{202e}";

fn topology_text() -> String {
    format!(
        "Switch 2 \"s1\" # \"switch one\"\n[1] \"h1\"[1]\n\n\
         Hca 1 \"h1\" # \"{HOSTILE}\"\n[1] \"s1\"[1]\n"
    )
}

#[test]
fn a_hostile_node_description_is_logged_escaped() {
    let fabric = topology::parse(&topology_text()).unwrap();
    let mut rig = AgentRig::new(RigOptions {
        fabric,
        sweep: SweepConfig {
            unreachable_after: 1,
            ..SweepConfig::default()
        },
        engine: EngineConfig {
            timeout: Duration::from_millis(5),
            retries: 0,
            ..EngineConfig::default()
        },
        ..RigOptions::default()
    });
    let host = rig
        .fabric()
        .nodes
        .into_iter()
        .find(|n| &*n.id.description == HOSTILE)
        .expect("the description is kept as the file gives it");

    let text = common::capture_log(|| {
        rig.sweep();
        rig.sim.set_reachable(host.id.guid, false);
        rig.sweep();
        rig.sim.set_reachable(host.id.guid, true);
        rig.sweep();
    });
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("h1")).collect();
    let events = lines
        .iter()
        .filter(|l| l.contains("node unreachable") || l.contains("node answers again"))
        .count();
    assert_eq!(events, 2, "unreachable, then answers again:\n{text}");
    for l in &lines {
        assert!(
            l.contains(r"h1\u{1b}[2J\u{1b}]0;owned\u{7}\rINFO forged\u{202e}"),
            "{l}"
        );
    }
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\r', '\u{202e}']),
        "raw control text in the log: {text:?}"
    );
}

#[test]
fn a_topology_error_quoting_the_file_prints_it_escaped() {
    let text = "Switch 2 \"s1\u{1b}[2J\"\n[1] \"h1\"[1]\n\nHca 1 \"s1\u{1b}[2J\"\n";
    let e = topology::parse(text).unwrap_err();
    let shown = e.to_string();
    assert!(shown.contains(r"s1\u{1b}[2J"), "{shown}");
    assert!(!shown.contains('\u{1b}'), "{shown:?}");
}
