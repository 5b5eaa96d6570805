//! The shipped systemd unit stays hardened: `systemd-analyze security` (run
//! offline on the unit file, as it needs no running systemd) rates its
//! overall exposure at 2.0 or less.

use std::path::Path;
use std::process::Command;

#[test]
fn the_unit_is_rated_exposure_2_or_less_by_systemd_analyze() {
    let unit = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging/ibpm-agentx.service");
    let out = Command::new("systemd-analyze")
        .args(["security", "--offline=true", "--no-pager"])
        .arg(&unit)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("systemd-analyze (package systemd; scripts/install-deps installs it)");
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("Overall exposure level for ibpm-agentx.service:"))
        .unwrap_or_else(|| {
            panic!(
                "no overall rating:\n{text}\n{}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let figure: f64 = line
        .rsplit(':')
        .next()
        .and_then(|r| r.split_whitespace().next())
        .and_then(|f| f.parse().ok())
        .unwrap_or_else(|| panic!("cannot read the figure in {line:?}"));
    println!("{line}");
    assert!(figure <= 2.0, "{line}");
}
