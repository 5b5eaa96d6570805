//! Checks `mibs/IB-PM-MIB.txt` with the tools operators use: libsmi's
//! `smilint` at level 6 and net-snmp's `snmptranslate`.
//!
//! The expected tables, columns, types and OIDs are listed here from the
//! 2001 draft's names and numbers and the project's documented syntax
//! decisions; they are not derived from the MIB file.

#[path = "common/mibpath.rs"]
mod mibpath;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const TOOL_TIMEOUT: Duration = Duration::from_secs(60);

fn mib_file() -> PathBuf {
    mibpath::repo_mib_dir().join("IB-PM-MIB.txt")
}

/// Output of a finished tool run.
struct Run {
    success: bool,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` with stdin closed; kills it and fails the test if it does not
/// finish within `TOOL_TIMEOUT`.
fn run(cmd: &mut Command) -> Run {
    let what = format!("{cmd:?}");
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| {
        panic!("cannot start {what}: {e} (scripts/install-deps installs smitools and snmp)")
    });
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = out.read_to_end(&mut buf);
        buf
    });
    let err_reader = std::thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = err.read_to_end(&mut buf);
        buf
    });
    let deadline = Instant::now() + TOOL_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() >= deadline => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("{what} did not finish within {TOOL_TIMEOUT:?}");
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("waiting for {what}: {e}");
            }
        }
    };
    let stdout = out_reader.join().expect("stdout reader thread");
    let stderr = err_reader.join().expect("stderr reader thread");
    Run {
        success: status.success(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// A private directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("ibpm-mib-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `smilint -m -s -l 6` on `file`, with `SMIPATH` = `search_path`; returns
/// every diagnostic line (smilint writes them to both streams depending on
/// version).
fn smilint(file: &Path, search_path: &str) -> Vec<String> {
    let r = run(Command::new("smilint")
        .env("SMIPATH", search_path)
        .args(["-m", "-s", "-l", "6"])
        .arg(file));
    assert!(r.success, "smilint failed:\n{}{}", r.stdout, r.stderr);
    r.stdout
        .lines()
        .chain(r.stderr.lines())
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// `snmptranslate -M <search path> -m IB-PM-MIB <args>`, isolated from any
/// user or system net-snmp configuration. Fails the test on a non-empty
/// stderr, since snmptranslate exits 0 even when it cannot load the module.
fn snmptranslate(args: &[&str]) -> String {
    let tmp = TempDir::new("snmptranslate");
    let r = run(Command::new("snmptranslate")
        .env_remove("MIBS")
        .env_remove("MIBDIRS")
        .env("SNMPCONFPATH", &tmp.0)
        .env("SNMP_PERSISTENT_DIR", &tmp.0)
        .arg("-M")
        .arg(mibpath::mib_search_path())
        .args(["-m", "IB-PM-MIB"])
        .args(args));
    // net-snmp announces the creation of its state directory on first use;
    // that directory is our private one, so the notice is not a problem.
    let created = format!("Created directory: {}", tmp.0.display());
    let problems: Vec<&str> = r
        .stderr
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(&created))
        .collect();
    assert!(
        r.success && problems.is_empty(),
        "snmptranslate {args:?} reported problems (success={}):\n{}",
        r.success,
        problems.join("\n")
    );
    r.stdout
}

#[test]
fn mib_file_is_plain_ascii() {
    let path = mib_file();
    let bytes =
        std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    assert!(!bytes.is_empty(), "{} is empty", path.display());
    for (n, line) in bytes.split(|&b| b == b'\n').enumerate() {
        if let Some(col) = line.iter().position(|&b| !(b' '..=b'~').contains(&b)) {
            panic!(
                "{}:{}:{}: byte 0x{:02x} is not printable ASCII",
                path.display(),
                n + 1,
                col + 1,
                line[col]
            );
        }
    }
}

/// The only level-6 diagnostic accepted: the draft's row name
/// `pmPortCountersoEntry` (sic) is kept for compatibility.
fn is_known_row_name_warning(line: &str) -> bool {
    line.contains("{row-name-table-name}") && line.contains("`pmPortCountersoEntry'")
}

#[test]
fn smilint_level6_reports_only_the_kept_row_name() {
    let diags = smilint(&mib_file(), &mibpath::mib_search_path());
    let unexpected: Vec<&String> = diags
        .iter()
        .filter(|l| !is_known_row_name_warning(l))
        .collect();
    assert!(
        unexpected.is_empty(),
        "smilint -l 6 reported:\n{}",
        unexpected
            .iter()
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // The known warning (level 5) shows that smilint parsed the module at a
    // level that includes it.
    assert_eq!(
        diags.len(),
        1,
        "expected exactly the pmPortCountersoEntry row-name warning, got: {diags:?}"
    );
}

#[test]
fn smilint_catches_a_readable_index_column() {
    // The same module with one GUID index made read-only again, as in the
    // draft: the lint run must flag it (shows the check above can fail).
    let text = std::fs::read_to_string(mib_file()).expect("read IB-PM-MIB.txt");
    let needle =
        "pmPortCountersGUID OBJECT-TYPE\n    SYNTAX      PmGuid\n    MAX-ACCESS  not-accessible";
    assert!(
        text.contains(needle),
        "pmPortCountersGUID definition not in the expected layout"
    );
    let broken = text.replacen(needle, &needle.replace("not-accessible", "read-only"), 1);
    let tmp = TempDir::new("smilint");
    let file = tmp.0.join("IB-PM-MIB.txt");
    std::fs::write(&file, broken).expect("write modified module");
    let search = format!("{}:{}", tmp.0.display(), mibpath::ietf_mib_dir().display());
    let diags = smilint(&file, &search);
    assert!(
        diags
            .iter()
            .any(|l| l.contains("`pmPortCountersGUID'") && l.contains("not-accessible")),
        "smilint did not flag the read-only index column: {diags:?}"
    );
}

/// One node of `snmptranslate -Tp` output.
#[derive(Debug, Default)]
struct TreeNode {
    oid: String,
    /// `----`, `-R--`, `-RW-` ... for leaves; empty for interior nodes.
    access: String,
    /// `String`, `Unsigned`, `Gauge`, `EnumVal` ... for leaves.
    ty: String,
    /// Detail lines printed under the node (`Size: 8`, `Range: 0..255`,
    /// `Index: ...`, `Values: ...`, `Textual Convention: ...`).
    details: Vec<String>,
}

/// Parses the tree that `snmptranslate -Tp` prints into name -> node, with
/// full numeric OIDs computed from the nesting.
fn parse_tree(text: &str) -> BTreeMap<String, TreeNode> {
    let mut nodes: BTreeMap<String, TreeNode> = BTreeMap::new();
    // (column of "+--", name, sub-identifier)
    let mut stack: Vec<(usize, String, String)> = Vec::new();
    let mut last: Option<String> = None;
    for line in text.lines() {
        if let Some(pos) = line.find("+--") {
            let rest = &line[pos + 3..];
            let (access, ty, label) = if let Some(leaf) = rest.strip_prefix(' ') {
                let mut parts = leaf.split_whitespace();
                let access = parts.next().unwrap_or_default();
                let ty = parts.next().unwrap_or_default();
                let label = parts.next().unwrap_or_default();
                (access, ty, label)
            } else {
                ("", "", rest.trim())
            };
            let (name, sub) = label
                .strip_suffix(')')
                .and_then(|l| l.split_once('('))
                .unwrap_or_else(|| panic!("unexpected tree line: {line:?}"));
            while stack.last().is_some_and(|(p, _, _)| *p >= pos) {
                stack.pop();
            }
            stack.push((pos, name.to_owned(), sub.to_owned()));
            let oid = stack
                .iter()
                .map(|(_, _, s)| s.as_str())
                .collect::<Vec<_>>()
                .join(".");
            nodes.insert(
                name.to_owned(),
                TreeNode {
                    oid,
                    access: access.to_owned(),
                    ty: ty.to_owned(),
                    details: Vec::new(),
                },
            );
            last = Some(name.to_owned());
        } else {
            let detail = line.trim_matches(|c: char| c == '|' || c.is_whitespace());
            if !detail.is_empty()
                && let Some(node) = last.as_ref().and_then(|n| nodes.get_mut(n))
            {
                node.details.push(detail.to_owned());
            }
        }
    }
    nodes
}

/// An expected column: name, MAX-ACCESS marker, net-snmp type word, and the
/// detail line net-snmp prints for its size/range/enumeration (if any).
struct Col {
    name: String,
    access: &'static str,
    ty: &'static str,
    detail: Option<String>,
}

fn col(name: &str, access: &'static str, ty: &'static str, detail: Option<&str>) -> Col {
    Col {
        name: name.to_owned(),
        access,
        ty,
        detail: detail.map(str::to_owned),
    }
}

const NA: &str = "----";
const RO: &str = "-R--";
const RW: &str = "-RW-";
const GUID: Option<&str> = Some("Size: 8");
const U8: Option<&str> = Some("Range: 0..255");
const SAMPLE_STATUS: Option<&str> = Some(
    "Values: samplingComplete(0), sampleStartTimerRunning(1), samplingUnderway(2), reserved(3)",
);

/// An expected table: name, sub-identifier under pmMIBObjects, row name,
/// and its columns in column-number order (column i+1 is `cols[i]`).
struct Table {
    name: &'static str,
    sub: u32,
    entry: &'static str,
    cols: Vec<Col>,
}

fn expected_tables() -> Vec<Table> {
    let class_port_info = vec![
        col("pmClassPortInfoGUID", NA, "String", GUID),
        col(
            "pmClassPortInfoAllPortSelect",
            RO,
            "EnumVal",
            Some("Values: true(1), false(2)"),
        ),
    ];

    let mut cntrl = vec![
        col("pmPortSampleCntrlGUID", NA, "String", GUID),
        col("pmPortSampleCntrlOpCode", RW, "Unsigned", U8),
        col("pmPortSampleCntrlPortSelect", RW, "Unsigned", U8),
        col("pmPortSampleCntrlTick", RO, "Unsigned", U8),
        col(
            "pmPortSampleCntrlCounterWidth",
            RO,
            "EnumVal",
            Some(
                "Values: width16Bits(0), width20Bits(1), width24Bits(2), width28Bits(3), width32Bits(4)",
            ),
        ),
    ];
    for i in 0..15 {
        cntrl.push(col(
            &format!("pmPortSampleCntrlCounter{i}Mask"),
            RO,
            "Unsigned",
            Some("Range: 0..7"),
        ));
    }
    cntrl.extend([
        col("pmPortSampleCntrlSampleMechanisms", RO, "Unsigned", U8),
        col(
            "pmPortSampleCntrlSampleStatus",
            RO,
            "EnumVal",
            SAMPLE_STATUS,
        ),
        col("pmPortSampleCntrlOptionMask", RO, "String", Some("Size: 8")),
        col("pmPortSampleCntrlVendorMask", RO, "String", Some("Size: 8")),
        col("pmPortSampleCntrlSampleStart", RW, "Unsigned", None),
        col("pmPortSampleCntrlSampleInterval", RW, "Unsigned", None),
        col("pmPortSampleCntrlTag", RW, "String", Some("Size: 2")),
    ]);
    for i in 0..15 {
        cntrl.push(col(
            &format!("pmPortSampleCntrlCounterSelect{i}"),
            RW,
            "Unsigned",
            Some("Range: 0..65535"),
        ));
    }

    let mut result = vec![
        col("pmPortSampleResultGUID", NA, "String", GUID),
        col("pmPortSampleResultTag", RO, "String", Some("Size: 2")),
        col("pmResultSampleStatus", RO, "EnumVal", SAMPLE_STATUS),
    ];
    for i in 0..15 {
        result.push(col(
            &format!("pmPortSampleResultCounter{i}"),
            RO,
            "Gauge",
            None,
        ));
    }

    // PortCounters: Gauge32 ranged to the IBA field width.
    let r16 = Some("Range: 0..65535");
    let r8 = Some("Range: 0..255");
    let r4 = Some("Range: 0..15");
    let r32 = Some("Range: 0..4294967295");
    let counters = vec![
        col("pmPortCountersGUID", NA, "String", GUID),
        col("pmPortCountersPortSelect", RW, "Unsigned", U8),
        col("pmPortCountersSymbolErrors", RW, "Gauge", r16),
        col("pmPortCountersLinkErrorRecovery", RW, "Gauge", r8),
        col("pmPortCountersLinkDown", RW, "Gauge", r8),
        col("pmPortCountersRcvErrors", RW, "Gauge", r16),
        col("pmPortCountersRcvRemoteErrors", RW, "Gauge", r16),
        col("pmPortCountersRcvSwRelayErrors", RW, "Gauge", r16),
        col("pmPortCountersXmitDiscards", RW, "Gauge", r16),
        col("pmPortCountersXmitConstraintErrors", RW, "Gauge", r8),
        col("pmPortCountersRcvConstraintErrors", RW, "Gauge", r8),
        col("pmPortCountersLocalLinkIntegrityErrors", RW, "Gauge", r4),
        col("pmPortCountersExcessiveBufferOverrun", RW, "Gauge", r4),
        col("pmPortCountersVL15Dropped", RW, "Gauge", r16),
        col("pmPortCountersXmitData", RW, "Gauge", r32),
        col("pmPortCountersRcvData", RW, "Gauge", r32),
        col("pmPortCountersXmitPkts", RW, "Gauge", r32),
        col("pmPortCountersRcvPkts", RW, "Gauge", r32),
    ];

    vec![
        Table {
            name: "pmClassPortInfoTable",
            sub: 1,
            entry: "pmClassPortInfoEntry",
            cols: class_port_info,
        },
        Table {
            name: "pmPortSampleCntrlTable",
            sub: 2,
            entry: "pmPortSampleCntrlEntry",
            cols: cntrl,
        },
        Table {
            name: "pmPortSampleResultTable",
            sub: 3,
            entry: "pmPortSampleResultEntry",
            cols: result,
        },
        Table {
            name: "pmPortCountersTable",
            sub: 4,
            entry: "pmPortCountersoEntry",
            cols: counters,
        },
    ]
}

const PM: &str = "1.3.6.1.3.117";

#[test]
fn snmptranslate_tree_has_the_four_tables_and_all_columns() {
    let text = snmptranslate(&["-Tp"]);
    let tree = parse_tree(&text);
    let node = |name: &str| {
        tree.get(name)
            .unwrap_or_else(|| panic!("{name} missing from snmptranslate -Tp output:\n{text}"))
    };
    assert_eq!(node("pm").oid, PM);
    assert_eq!(node("pmMIBObjects").oid, format!("{PM}.1"));

    let mut expected_leaves = 0;
    for t in expected_tables() {
        let table_oid = format!("{PM}.1.{}", t.sub);
        assert_eq!(node(t.name).oid, table_oid, "OID of {}", t.name);
        let entry = node(t.entry);
        assert_eq!(entry.oid, format!("{table_oid}.1"), "OID of {}", t.entry);
        let index = format!("Index: {}", t.cols[0].name);
        assert!(
            entry.details.contains(&index),
            "{}: expected {index:?}, got {:?}",
            t.entry,
            entry.details
        );
        for (i, c) in t.cols.iter().enumerate() {
            let n = node(&c.name);
            let want_oid = format!("{table_oid}.1.{}", i + 1);
            assert_eq!(n.oid, want_oid, "OID of {}", c.name);
            assert_eq!(n.access, c.access, "access of {}", c.name);
            assert_eq!(n.ty, c.ty, "type of {}", c.name);
            match &c.detail {
                Some(d) => assert!(
                    n.details.contains(d),
                    "{}: expected {d:?} in {:?}",
                    c.name,
                    n.details
                ),
                None => assert!(
                    !n.details
                        .iter()
                        .any(|x| x.starts_with("Range:") || x.starts_with("Size:")),
                    "{}: unexpected restriction {:?}",
                    c.name,
                    n.details
                ),
            }
            expected_leaves += 1;
        }
    }

    // Nothing else under the module's object subtree (for example, no
    // invented PortXmitWait column).
    // (The extension tables, pmMIBObjects 5 and up, are checked against
    // the agent's column table by the unit tests of `mib::tables`.)
    let draft_tables: Vec<String> = (1..=4).map(|t| format!("{PM}.1.{t}.")).collect();
    let leaves: Vec<(&String, &TreeNode)> = tree
        .iter()
        .filter(|(_, n)| !n.access.is_empty() && draft_tables.iter().any(|p| n.oid.starts_with(p)))
        .collect();
    assert_eq!(
        leaves.len(),
        expected_leaves,
        "unexpected columns under pmMIBObjects: {:?}",
        leaves.iter().map(|(k, _)| k).collect::<Vec<_>>()
    );
    assert!(!tree.contains_key("pmPortCountersXmitWait"));

    // Conformance section.
    for (name, oid) in [
        ("pmMIBConformance", format!("{PM}.7")),
        ("pmMIBCompliances", format!("{PM}.7.1")),
        ("pmMIBCompliance", format!("{PM}.7.1.1")),
        ("pmMIBGroups", format!("{PM}.7.2")),
        ("pmClassPortInfoGroup", format!("{PM}.7.2.1")),
        ("pmPortSampleCntrlGroup", format!("{PM}.7.2.2")),
        ("pmPortSampleResultGroup", format!("{PM}.7.2.3")),
        ("pmPortCountersGroup", format!("{PM}.7.2.4")),
    ] {
        assert_eq!(node(name).oid, oid, "OID of {name}");
    }
}

#[test]
fn snmptranslate_names_to_numeric_oids() {
    for (name, want) in [
        (
            "IB-PM-MIB::pmPortCountersSymbolErrors",
            ".1.3.6.1.3.117.1.4.1.3",
        ),
        (
            "IB-PM-MIB::pmPortCountersRcvPkts",
            ".1.3.6.1.3.117.1.4.1.18",
        ),
        (
            "IB-PM-MIB::pmClassPortInfoAllPortSelect",
            ".1.3.6.1.3.117.1.1.1.2",
        ),
        ("IB-PM-MIB::pmPortSampleCntrlTag", ".1.3.6.1.3.117.1.2.1.27"),
        (
            "IB-PM-MIB::pmPortSampleCntrlCounterSelect14",
            ".1.3.6.1.3.117.1.2.1.42",
        ),
        ("IB-PM-MIB::pmResultSampleStatus", ".1.3.6.1.3.117.1.3.1.3"),
        (
            "IB-PM-MIB::pmPortSampleResultCounter14",
            ".1.3.6.1.3.117.1.3.1.18",
        ),
        ("IB-PM-MIB::pmMIBCompliance", ".1.3.6.1.3.117.7.1.1"),
        ("IB-PM-MIB::pmPortHCOutOctets", ".1.3.6.1.3.117.1.7.1.1"),
        ("IB-PM-MIB::pmAgentSweeps", ".1.3.6.1.3.117.1.9.3"),
        // Notifications under { pm 0 }: SNMPv1 enterprise pm, specific N.
        ("IB-PM-MIB::pmNodeLost", ".1.3.6.1.3.117.0.1"),
        ("IB-PM-MIB::pmNodeFound", ".1.3.6.1.3.117.0.2"),
        ("IB-PM-MIB::pmPortStateChange", ".1.3.6.1.3.117.0.3"),
        ("IB-PM-MIB::pmCounterThresholdRising", ".1.3.6.1.3.117.0.4"),
        ("IB-PM-MIB::pmCounterThresholdFalling", ".1.3.6.1.3.117.0.5"),
        ("IB-PM-MIB::pmCounterDiscontinuity", ".1.3.6.1.3.117.0.6"),
        ("IB-PM-MIB::pmSweepOverrun", ".1.3.6.1.3.117.0.7"),
        ("IB-PM-MIB::pmNotifyNodeGuid", ".1.3.6.1.3.117.1.20.1"),
        ("IB-PM-MIB::pmNotifySweepInterval", ".1.3.6.1.3.117.1.20.14"),
        (
            "IB-PM-MIB::pmAgentNotificationsDropped",
            ".1.3.6.1.3.117.1.9.13",
        ),
        ("IB-PM-MIB::pmNotificationsGroup", ".1.3.6.1.3.117.7.2.20"),
    ] {
        let out = snmptranslate(&["-On", name]);
        assert_eq!(out.trim(), want, "snmptranslate -On {name}");
    }
}

#[test]
fn snmptranslate_reads_the_guid_index_as_eight_subidentifiers() {
    // GUID 0x0002c90300001234: a fixed-size OCTET STRING index is 8
    // sub-identifiers with no length prefix (RFC 2578 section 7.7).
    let out = snmptranslate(&[".1.3.6.1.3.117.1.4.1.3.0.2.201.3.0.0.18.52"]);
    assert_eq!(
        out.trim(),
        "IB-PM-MIB::pmPortCountersSymbolErrors.'.......4'"
    );
}
