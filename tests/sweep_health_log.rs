//! The sweeper says it is healthy every `log.health_every` sweeps, in one
//! info line with the sweep's figures, and nothing of the kind in between.

mod common;

use ibpm_agentx::fabric::state::SweepConfig;
use ibpm_agentx::rig::{AgentRig, RigOptions};

#[test]
fn one_health_line_every_n_sweeps() {
    let mut rig = AgentRig::new(RigOptions {
        sweep: SweepConfig {
            health_every: 3,
            ..SweepConfig::default()
        },
        ..RigOptions::default()
    });
    let nodes = rig.fabric().nodes.len();
    let text = common::capture_log(|| {
        for _ in 0..7 {
            rig.sweep();
        }
    });
    let health: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("sweeping: healthy"))
        .collect();
    assert_eq!(health.len(), 2, "sweeps 3 and 6:\n{text}");
    assert!(
        health[0].contains("sweep=3") && health[1].contains("sweep=6"),
        "{text}"
    );
    for l in &health {
        assert!(
            l.contains(&format!("nodes={nodes}"))
                && l.contains(&format!("answered={nodes}"))
                && l.contains("timeouts=0")
                && l.contains(" ms="),
            "{l}"
        );
    }
}

#[test]
fn optional_attributes_a_node_does_not_answer_are_reported_once_per_node() {
    // The simulator's PMAs answer PortRcvErrorDetails, PortOpRcvCounters
    // and the per-VL 0x19, 0x1A and 0x1C, switches PortXmitDiscardDetails
    // too, and no other optional attribute (0x15..0x1C).
    let mut rig = AgentRig::new(RigOptions::default());
    let nodes = rig.fabric().nodes.len();
    let mut stats = Vec::new();
    let text = common::capture_log(|| {
        for _ in 0..4 {
            stats.push(rig.sweep());
        }
    });
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("optional PM attributes this node does not answer"))
        .collect();
    assert_eq!(lines.len(), nodes, "one line per node:\n{text}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("0x0015") && l.contains("0x0018") && l.contains("0x001b")),
        "{text}"
    );
    assert!(stats.iter().all(|s| s.timeouts == 0), "{stats:?}");
}
