//! The sweeper says it is healthy every `log.health_every` sweeps, in one
//! info line with the sweep's figures, and nothing of the kind in between.

mod common;

use ibpm_agentx::fabric::settings::SweepConfig;
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
fn optional_attributes_nodes_do_not_answer_are_reported_once_per_set() {
    // The simulator's PMAs answer every optional attribute but
    // PortFlowCtlCounters (0x18) and PortVLXmitFlowCtlUpdateErrors (0x1B);
    // channel adapters neither PortXmitDiscardDetails (0x16) nor
    // SwPortVLCongestion (0x30). So two kinds of node (same vendor and
    // device): one line for the switches, one for the CAs, each a
    // sentence with its count of nodes, once.
    let mut rig = AgentRig::new(RigOptions::default());
    let fabric = rig.fabric();
    let switches = fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == ibpm_agentx::ib::NodeType::Switch)
        .count();
    let cas = fabric.nodes.len() - switches;
    let mut stats = Vec::new();
    let text = common::capture_log(|| {
        for _ in 0..4 {
            stats.push(rig.sweep());
        }
    });
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("optional PM attributes"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per kind of node:\n{text}");
    assert!(
        lines
            .iter()
            .all(|l| !l.contains("0x0015") && l.contains("0x0018") && l.contains("0x001b")),
        "{text}"
    );
    let sw = format!(
        "{switches} switch node(s) of vendor 0x000000, device 0x0000: the optional PM attributes 0x0018,0x001b are not asked of them, as 2 of them left them unanswered"
    );
    let ca = format!(
        "{cas} channel adapter node(s) of vendor 0x000000, device 0x0000: the optional PM attributes 0x0016,0x0018,0x001b,0x0030 are not asked"
    );
    assert!(lines.iter().any(|l| l.contains(&sw)), "{sw}:\n{text}");
    assert!(lines.iter().any(|l| l.contains(&ca)), "{ca}:\n{text}");
    assert!(stats.iter().all(|s| s.timeouts == 0), "{stats:?}");
}
