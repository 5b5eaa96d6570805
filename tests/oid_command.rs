//! `ibpm-agentx oid GUID`: the index operators need for snmpget, from the
//! hex GUID they have, checked against snmptranslate's reading of the MIB.

mod common;

use std::process::Command;

use common::mibpath;

fn oid(arg: &str) -> std::process::Output {
    oid_args(&[arg])
}

fn oid_args(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ibpm-agentx"))
        .arg("oid")
        .args(args)
        .output()
        .unwrap()
}

/// The numeric OID `oid` printed for `column`, and the one snmptranslate
/// reads from the MIB file for `name` (`IB-PM-MIB::column.index`).
fn printed_and_translated(text: &str, column: &str, name: &str) -> (String, String) {
    let line = text
        .lines()
        .find(|l| l.starts_with(&format!("{column} ")))
        .unwrap_or_else(|| panic!("no {column} line:\n{text}"));
    let numeric = line.split_whitespace().nth(1).unwrap();
    let t = Command::new("snmptranslate")
        .env("MIBS", "")
        .arg("-M")
        .arg(mibpath::mib_search_path())
        .args(["-m", "IB-PM-MIB", "-On", name])
        .output()
        .unwrap();
    (
        format!(".{numeric}"),
        String::from_utf8_lossy(&t.stdout).trim().to_string(),
    )
}

#[test]
fn a_hex_guid_gives_the_index_and_the_oids_snmptranslate_agrees_with() {
    for arg in ["0x0002c90300001234", "0002:c903:0000:1234"] {
        let out = oid(arg);
        assert!(out.status.success(), "{out:?}");
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.contains("index     0.2.201.3.0.0.18.52\n"), "{text}");
        let (printed, want) = printed_and_translated(
            &text,
            "pmPortCountersPortSelect",
            "IB-PM-MIB::pmPortCountersPortSelect.0.2.201.3.0.0.18.52",
        );
        assert_eq!(printed, want, "{text}");
    }
}

#[test]
fn a_bad_guid_is_one_line_and_exit_2() {
    let out = oid("0x12345678901234567");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("is not a GUID"), "{err}");
}

#[test]
fn a_port_gives_the_per_port_tables_oids_snmptranslate_agrees_with() {
    let out = oid_args(&["0x0002c90300001234", "5"]);
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (printed, want) = printed_and_translated(
        &text,
        "pmPortHCOutOctets",
        "IB-PM-MIB::pmPortHCOutOctets.0.2.201.3.0.0.18.52.5",
    );
    assert_eq!(printed, want, "{text}");
}
