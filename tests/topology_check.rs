//! `ibpm-agentx topology check --sweep` on the built-in simulator: with
//! the simulator's own topology as the plan, as planned (exit 0); with a
//! plan that differs from it in every kind (tests/fixtures/plan/
//! every-kind.net), each kind is reported, in the technician's words,
//! and the exit status is 3.

use std::path::Path;
use std::process::Command;

use ibpm_agentx::metrics::plan_diff::{self, DiffReport};

fn check(dir: &Path, plan: &Path, json: bool) -> (i32, String, String) {
    let cfg = dir.join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agentx]\nenabled = false\n[fabric]\nstate_file = \"{}\"\n",
            dir.join("state").display()
        ),
    )
    .unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"));
    c.args(["topology", "check", "--sweep", "--config"])
        .arg(&cfg)
        .arg("--plan")
        .arg(plan);
    if json {
        c.arg("--json");
    }
    let out = c.output().expect("run ibpm-agentx topology check");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).to_string(),
        String::from_utf8_lossy(&out.stderr).to_string(),
    )
}

fn repo(p: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

#[test]
fn the_simulator_as_planned_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = check(dir.path(), &repo("config/default-fabric.net"), false);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.starts_with("AS PLANNED · "), "{out}");
}

#[test]
fn a_plan_that_differs_in_every_kind_names_each_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let plan = repo("tests/fixtures/plan/every-kind.net");
    let (code, out, err) = check(dir.path(), &plan, true);
    assert_eq!(code, 3, "{out}{err}");
    let d: DiffReport = plan_diff::parse(out.as_bytes()).unwrap();
    let count = |k: &str| d.counts.iter().find(|c| c.kind == k).unwrap().count;
    // Both ends of each cable, each node once.
    assert_eq!(count("miswired"), 4, "{d:#?}");
    assert_eq!(count("wrong_rate"), 2);
    assert_eq!(count("missing"), 2);
    assert_eq!(count("unplanned_link"), 2);
    assert_eq!(count("absent_node"), 1);
    assert_eq!(count("unplanned_node"), 1);
    let texts: Vec<&str> = d.mismatches.iter().map(|m| m.text.as_str()).collect();
    for want in [
        "leaf1 IB switch/1 should go to node04 HCA-1/2; it goes to node01 HCA-1/1",
        "spine2 IB switch/4 to leaf4 IB switch/14 should run at 4x DDR; it runs at 4x QDR",
        "leaf1 IB switch/5 should go to node99 HCA-1/1; it is not up",
        "leaf4 IB switch/4 goes to node12 HCA-1/1; the plan has no cable there",
        "node99 HCA-1 is in the plan; the fabric does not show it",
        "node12 HCA-1 is in the fabric; the plan does not have it",
    ] {
        assert!(texts.contains(&want), "{want} not in {texts:#?}");
    }
    // The table says the same.
    let (code, out, _) = check(dir.path(), &plan, false);
    assert_eq!(code, 3);
    assert!(out.starts_with("NOT AS PLANNED · "), "{out}");
    assert!(out.contains("node99 HCA-1 is in the plan"), "{out}");
}

#[test]
fn a_sweep_without_a_plan_or_baseline_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("agent.toml");
    std::fs::write(
        &cfg,
        format!(
            "[agentx]\nenabled = false\n[fabric]\nstate_file = \"{}\"\n",
            dir.path().join("state").display()
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(["topology", "check", "--sweep", "--config"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no plan given, and no baseline at"), "{err}");
}
