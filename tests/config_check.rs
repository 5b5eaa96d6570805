//! `ibpm-agentx check-config` and `run` on files that used to pass or
//! mislead: the binary as an operator runs it, from `/` as systemd does.

use std::path::Path;
use std::process::{Command, Stdio};

fn agent(args: &[&str]) -> (i32, String) {
    agent_env(args, &[])
}

fn agent_env(args: &[&str], env: &[(&str, &Path)]) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir("/")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn check(conf: &Path) -> (i32, String) {
    agent(&["check-config", "--config", conf.to_str().unwrap()])
}

#[test]
fn a_relative_topology_is_read_next_to_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("config/default-fabric.net"),
        dir.path().join("fabric.net"),
    )
    .unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(&conf, "[fabric]\ntopology = \"fabric.net\"\n").unwrap();
    let (code, err) = check(&conf);
    assert_eq!(code, 0, "{err}");

    std::fs::write(&conf, "[fabric]\ntopology = \"nope.net\"\n").unwrap();
    let (code, err) = check(&conf);
    assert_ne!(code, 0);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("agent.toml:2: key `fabric.topology`"), "{err}");
    assert!(
        err.contains(&dir.path().join("nope.net").display().to_string()),
        "{err}"
    );
}

#[test]
fn a_log_level_that_logs_nothing_is_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(&conf, "[log]\nlevel = \"loud\"\n").unwrap();
    let (code, err) = check(&conf);
    assert_ne!(code, 0);
    assert!(err.contains(":2: key `log.level`"), "{err}");
    let (code, err) = agent(&["run", "--no-agentx", "--config", conf.to_str().unwrap()]);
    assert_ne!(code, 0);
    assert!(err.contains("log.level"), "{err}");
}

#[test]
fn a_wrong_type_names_the_dotted_key_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(&conf, "[fabric]\nsweep_interval = \"soon\"\n").unwrap();
    let (code, err) = check(&conf);
    assert_ne!(code, 0);
    assert!(
        err.contains(":2: key `fabric.sweep_interval`: ") && err.contains("expected a number"),
        "{err}"
    );
    assert!(!err.contains("f64"), "{err}");
}

#[test]
fn a_value_out_of_range_names_its_line_and_the_range() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(&conf, "[mad]\nwindow = 64\n\nretries = 21\n").unwrap();
    let (code, err) = check(&conf);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("agent.toml:4: key `mad.retries`: 21 is out of range (0 to 20)"),
        "{err}"
    );
}

#[test]
fn a_flag_that_breaks_the_file_names_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    std::fs::write(
        &conf,
        "[fabric]\nbackend = \"umad\"\n[doca]\nenabled = true\n",
    )
    .unwrap();
    let (code, err) = agent(&[
        "run",
        "--no-agentx",
        "--backend",
        "sim",
        "--config",
        conf.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ibpm-agentx: doca.enabled: DOCA serves local adapters"),
        "{err}"
    );
}

/// Health windows that contradict the sweep, and k of n the wrong way
/// round, are refused by check-config and by run, with the line and key.
#[test]
fn contradicting_health_keys_are_refused_before_running() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    for (text, want) in [
        (
            "[fabric]\nsweep_interval = 30\n[health]\nrecovery = 20\n",
            "agent.toml:4: key `health.recovery`: 20 s is shorter than a sweep",
        ),
        (
            "[health]\nunresponsive_sweeps = 3\nunresponsive_missed = 4\n",
            "agent.toml:3: key `health.unresponsive_missed`: 4 is more than unresponsive_sweeps (3)",
        ),
    ] {
        std::fs::write(&conf, text).unwrap();
        let (code, err) = check(&conf);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "{err}");
        let (code, err) = agent(&["run", "--no-agentx", "--config", conf.to_str().unwrap()]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains(want), "{err}");
    }
}

/// The local ports `[umad]` names are checked against the host's CAs (here
/// the fixture tree standing in for /sys: mlx5_0 with one port, mlx5_1
/// with two, ...) by check-config and by run, with the line and the key: a
/// CA that does not exist, a port past the CA's ports, a port listed
/// twice, a number out of range.
#[test]
fn local_ports_the_host_does_not_have_are_refused_with_line_and_key() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs");
    let env = [("IBPM_SYSFS_ROOT", root.as_path())];
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("agent.toml");
    let umad = "[fabric]\nbackend = \"umad\"\n";
    for good in [
        "[umad]\nports = [\"mlx5_0:1\", \"mlx5_1:2\", \"mlx5_10:1\"]\n",
        "[[umad.plane]]\nname = \"plane-a\"\nports = [\"mlx5_0:1\", \"mlx5_10:1\"]\n\
         [[umad.plane]]\nname = \"plane-b\"\nports = [\"mlx5_1:1\"]\n",
        "[umad]\nca = \"mlx5_1\"\nport = 2\n",
    ] {
        std::fs::write(&conf, format!("{umad}{good}")).unwrap();
        let (code, err) = agent_env(&["check-config", "--config", conf.to_str().unwrap()], &env);
        assert_eq!(code, 0, "{good}: {err}");
    }
    for (text, want) in [
        (
            "[umad]\nports = [\"mlx5_0:1\", \"mlx5_9:1\"]\n",
            "agent.toml:4: key `umad.ports`: no CA `mlx5_9` (known: mlx5_0, mlx5_1, mlx5_2, mlx5_3, mlx5_4, mlx5_10)",
        ),
        (
            "[[umad.plane]]\nports = [\"mlx5_1:1\"]\n\n[[umad.plane]]\nname = \"b\"\nports = [\"mlx5_0:2\"]\n",
            "agent.toml:8: key `umad.plane.ports`: port 2 is out of range: mlx5_0 has 1 port",
        ),
        (
            "[umad]\nca = \"mlx5_1\"\nport = 3\n",
            "agent.toml:4: key `umad.ca`: port 3 is out of range: mlx5_1 has 2 ports",
        ),
        (
            "[umad]\nports = [\n  \"mlx5_0:1\",\n  \"mlx5_0:1\",\n]\n",
            "agent.toml:4: key `umad.ports`: port mlx5_0:1 is listed twice",
        ),
        (
            "[umad]\nports = [\"mlx5_0:300\"]\n",
            "agent.toml:4: key `umad.ports`: `mlx5_0:300`: port 300 is out of range (1 to 254)",
        ),
    ] {
        std::fs::write(&conf, format!("{umad}{text}")).unwrap();
        let (code, err) = agent_env(&["check-config", "--config", conf.to_str().unwrap()], &env);
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
        let (code, err) = agent_env(
            &["run", "--no-agentx", "--config", conf.to_str().unwrap()],
            &env,
        );
        assert_eq!(code, 2, "{text}: {err}");
        assert!(err.contains(want), "{text}: {err}");
    }
    // With the simulator the umad ports are not used, and not looked for.
    std::fs::write(&conf, "[umad]\nports = [\"mlx5_9:1\"]\n").unwrap();
    let (code, err) = agent_env(&["check-config", "--config", conf.to_str().unwrap()], &env);
    assert_eq!(code, 0, "{err}");
}
