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

/// The `[package.metadata]` tables of Cargo.toml.
fn package_metadata() -> toml::Table {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("Cargo.toml");
    let manifest: toml::Table = toml::from_str(&text).expect("Cargo.toml parses");
    manifest["package"]["metadata"]
        .as_table()
        .expect("[package.metadata]")
        .clone()
}

/// The .deb and the RPM carry the same files: every source the Debian
/// package ships is in the RPM (the binary as the stripped copy the RPM
/// build makes, the snmpd drop-in as EL's), and the conffiles of one are
/// the %config(noreplace) files of the other. The licence is declared once.
#[test]
fn the_rpm_ships_what_the_deb_ships_with_the_same_conffiles() {
    let meta = package_metadata();
    let deb = meta["deb"].as_table().unwrap();
    let rpm = meta["generate-rpm"].as_table().unwrap();
    let rpm_assets = rpm["assets"].as_array().unwrap();
    let rpm_sources: Vec<&str> = rpm_assets
        .iter()
        .map(|a| a["source"].as_str().unwrap())
        .collect();
    for a in deb["assets"].as_array().unwrap() {
        let source = a[0].as_str().unwrap();
        let want = match source {
            "target/release/ibpm-agentx" => "target/package/rpm/ibpm-agentx",
            "packaging/snmpd-ibpm-agentx.conf" => "packaging/rpm/snmpd-ibpm-agentx.conf",
            s => s,
        };
        assert!(rpm_sources.contains(&want), "{source} is not in the RPM");
    }
    // The unit: cargo-deb takes it from unit-scripts, the RPM as an asset.
    assert!(rpm_sources.contains(&"target/package/ibpm-agentx.service"));
    let mut deb_conf: Vec<&str> = deb["conf-files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut rpm_conf: Vec<&str> = rpm_assets
        .iter()
        .filter(|a| a.get("config").and_then(|c| c.as_str()) == Some("noreplace"))
        .map(|a| a["dest"].as_str().unwrap())
        .collect();
    deb_conf.sort_unstable();
    rpm_conf.sort_unstable();
    assert_eq!(deb_conf, rpm_conf);
    assert_eq!(env!("CARGO_PKG_LICENSE"), "MIT OR Apache-2.0");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ["LICENSE-MIT", "LICENSE-APACHE"] {
        assert!(root.join(f).is_file(), "{f}");
    }
}

/// Both snmpd drop-ins open the same socket to the agent's group and add
/// the subtree to the view their distribution's stock snmpd.conf grants
/// (Debian: systemonly; RHEL, Rocky, Alma: systemview, and EL's needs the
/// one includeDir line, which the file says).
#[test]
fn both_snmpd_drop_ins_grant_the_subtree_in_their_distributions_view() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("packaging");
    for (file, view) in [
        ("snmpd-ibpm-agentx.conf", "systemonly"),
        ("rpm/snmpd-ibpm-agentx.conf", "systemview"),
    ] {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for want in [
            "agentXSocket /var/agentx/master".to_string(),
            "agentXPerms 0660 0755 root ibpm-agentx".to_string(),
            format!("view {view} included .1.3.6.1.3.117"),
        ] {
            assert!(lines.contains(&want.as_str()), "{file}: {want}");
        }
    }
    let el = std::fs::read_to_string(root.join("rpm/snmpd-ibpm-agentx.conf")).unwrap();
    assert!(el.contains("#   includeDir /etc/snmp/snmpd.conf.d\n"));
    assert!(el.lines().any(|l| l == "master agentx"));
}
