//! The built-in responder against net-snmp's own command-line tools: snmpget,
//! snmpwalk (GetNext) and snmpbulkwalk (GetBulk) must print exactly the
//! objects of a static MIB, numerically ordered, with their types.
//!
//! These tests need the `snmp` package (net-snmp 5.9 tools). Where it is not
//! installed they fail.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use ibpm_agentx::mib::{MibHandler, Oid, Value, VarBind};
use ibpm_agentx::snmp::{Responder, ResponderConfig, ResponderHandle};

const BASE: [u32; 7] = [1, 3, 6, 1, 4, 1, 99999];

fn oid(tail: &[u32]) -> Oid {
    Oid::new(&BASE).child(tail)
}

/// A fixed set of objects served from a sorted map.
struct StaticMib(BTreeMap<Oid, Value>);

impl MibHandler for StaticMib {
    fn get(&self, oid: &Oid) -> Value {
        match self.0.get(oid) {
            Some(v) => v.clone(),
            None => Value::NoSuchObject,
        }
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        let lo = if include {
            Included(start.clone())
        } else {
            Excluded(start.clone())
        };
        let (k, v) = self.0.range((lo, Unbounded)).next()?;
        if end.is_some_and(|e| k >= e) {
            return None;
        }
        Some(VarBind::new(k.clone(), v.clone()))
    }
}

/// Scalars of every type, a 3-column table of 100 rows (its row index runs
/// past 9 so numeric and string order differ), and sub-identifiers above 2^31.
fn small_mib() -> BTreeMap<Oid, Value> {
    let mut m = BTreeMap::new();
    m.insert(oid(&[1, 1]), Value::Integer(-5));
    m.insert(oid(&[1, 2]), Value::OctetString(b"hello world".to_vec()));
    m.insert(
        oid(&[1, 3]),
        Value::OctetString(vec![0x00, 0xff, 0x10, 0x80, 0x7f]),
    );
    m.insert(oid(&[1, 4]), Value::ObjectIdentifier(oid(&[9, 4294967295])));
    m.insert(oid(&[1, 5]), Value::IpAddress([10, 1, 2, 254]));
    m.insert(oid(&[1, 6]), Value::Counter32(u32::MAX));
    m.insert(oid(&[1, 7]), Value::Gauge32(0x8000_0000));
    m.insert(oid(&[1, 8]), Value::TimeTicks(123_456_789));
    m.insert(oid(&[1, 9]), Value::Counter64(u64::MAX));
    m.insert(oid(&[1, 10]), Value::Integer(i32::MAX));
    for row in 1..=100u32 {
        m.insert(
            oid(&[2, 1, 1, row]),
            Value::Counter64((u64::from(row) << 40) | u64::from(row)),
        );
        m.insert(oid(&[2, 1, 2, row]), Value::Gauge32(row * 7));
        m.insert(
            oid(&[2, 1, 3, row]),
            Value::Counter32(row.wrapping_mul(2_654_435_761)),
        );
    }
    m.insert(oid(&[3, 2147483648, 1]), Value::Gauge32(1));
    m.insert(oid(&[3, 4294967295, 4294967295]), Value::Counter64(1 << 63));
    m
}

/// How net-snmp 5.9 prints a varbind with `-On` (numeric OIDs, type prefixes).
fn netsnmp_line(name: &Oid, v: &Value) -> String {
    let val = match v {
        Value::Integer(i) => format!("INTEGER: {i}"),
        Value::OctetString(b) if b.iter().all(|c| c.is_ascii_graphic() || *c == b' ') => {
            format!("STRING: \"{}\"", String::from_utf8_lossy(b))
        }
        Value::OctetString(b) => {
            let hex: Vec<String> = b.iter().map(|c| format!("{c:02X}")).collect();
            format!("Hex-STRING: {}", hex.join(" "))
        }
        Value::ObjectIdentifier(o) => format!("OID: .{o}"),
        Value::IpAddress(a) => format!("IpAddress: {}.{}.{}.{}", a[0], a[1], a[2], a[3]),
        Value::Counter32(c) => format!("Counter32: {c}"),
        Value::Gauge32(g) => format!("Gauge32: {g}"),
        Value::TimeTicks(t) => {
            let (cs, s) = (t % 100, t / 100);
            format!(
                "Timeticks: ({t}) {} day{}, {}:{:02}:{:02}.{:02}",
                s / 86400,
                if s / 86400 == 1 { "" } else { "s" },
                (s % 86400) / 3600,
                (s % 3600) / 60,
                s % 60,
                cs
            )
        }
        Value::Counter64(c) => format!("Counter64: {c}"),
        other => panic!("no net-snmp format for {other:?} in this test"),
    };
    format!(".{name} = {val}")
}

fn expected(m: &BTreeMap<Oid, Value>) -> Vec<String> {
    m.iter().map(|(k, v)| netsnmp_line(k, v)).collect()
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static SEQ: AtomicU32 = AtomicU32::new(0);
        let p = std::env::temp_dir().join(format!(
            "ibpm-snmp-{tag}-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        // net-snmp creates cert_indexes in its persistent directory and says
        // so on stderr; creating it first keeps stderr for real errors.
        std::fs::create_dir_all(p.join("cert_indexes")).unwrap();
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child process killed (by its PID) and reaped on drop.
struct ChildGuard(Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn tools_present() -> bool {
    let ok = Command::new("snmpbulkwalk")
        .arg("-V")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    assert!(
        ok,
        "net-snmp tools (snmpget, snmpwalk, snmpbulkwalk) are needed; install the `snmp` package \
         (scripts/install-deps does)"
    );
    true
}

/// Runs one net-snmp tool against `addr` with a deadline; returns stdout
/// lines, failing the test on a non-zero exit, anything on stderr or timeout.
fn run_tool(tool: &str, addr: SocketAddr, extra: &[&str], deadline: Duration) -> Vec<String> {
    let dir = TempDir::new(tool);
    let target = format!("udp:{addr}");
    let mut cmd = Command::new(tool);
    cmd.args(["-v2c", "-c", "public", "-On", "-t", "2", "-r", "1"])
        .args(extra.iter().take_while(|a| **a != "--"))
        .arg(&target)
        .args(extra.iter().skip_while(|a| **a != "--").skip(1))
        .env("SNMP_PERSISTENT_DIR", &dir.0)
        .env("SNMPCONFPATH", &dir.0)
        .env("MIBS", "")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = ChildGuard(
        cmd.spawn()
            .unwrap_or_else(|e| panic!("cannot run {tool}: {e}")),
    );
    let mut out_pipe = child.0.stdout.take().unwrap();
    let mut err_pipe = child.0.stderr.take().unwrap();
    let out_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_t = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.0.try_wait().unwrap() {
            break st;
        }
        assert!(
            start.elapsed() < deadline,
            "{tool} {extra:?} did not finish within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(5));
    };
    let out = out_t.join().unwrap();
    let err = err_t.join().unwrap();
    assert!(
        status.success() && err.trim().is_empty(),
        "{tool} {extra:?} failed: {status}\nstderr: {err}\nstdout: {out}"
    );
    out.lines().map(|l| l.trim_end().to_string()).collect()
}

fn serve(m: BTreeMap<Oid, Value>) -> (ResponderHandle, SocketAddr) {
    let r = Responder::bind(
        "127.0.0.1:0".parse().unwrap(),
        ResponderConfig::new("public"),
        Arc::new(StaticMib(m)),
    )
    .unwrap();
    let addr = r.local_addr().unwrap();
    (r.spawn().unwrap(), addr)
}

/// Compares line by line so a failure names the first difference.
fn assert_lines(tool: &str, got: &[String], want: &[String]) {
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert_eq!(g, w, "{tool}: line {i} differs");
    }
    assert_eq!(
        got.len(),
        want.len(),
        "{tool}: line count; tail: {:?}",
        got.last()
    );
}

#[test]
fn snmpwalk_and_snmpbulkwalk_print_every_object_in_order() {
    if !tools_present() {
        return;
    }
    let m = small_mib();
    let mut want = expected(&m);
    // The walked objects are the last of the MIB: both tools then see
    // endOfMibView and say so.
    want.push(end_of_view(m.keys().next_back().unwrap()));
    let table = oid(&[2]);
    let want_table: Vec<String> = m
        .iter()
        .filter(|(k, _)| k.starts_with(table.as_slice()))
        .map(|(k, v)| netsnmp_line(k, v))
        .collect();
    let (h, addr) = serve(m);
    let t = Duration::from_secs(20);

    let root = format!(".{}", Oid::new(&BASE));
    assert_lines(
        "snmpwalk",
        &run_tool("snmpwalk", addr, &["--", &root], t),
        &want,
    );
    let bulk = run_tool("snmpbulkwalk", addr, &["-Cr50", "--", &root], t);
    assert_lines("snmpbulkwalk", &bulk, &want);
    // From the very top: the same.
    let all = run_tool("snmpbulkwalk", addr, &["-Cr50", "--", ".1"], t);
    assert_lines("snmpbulkwalk .1", &all, &want);
    // A subtree followed by other objects: the tools stop at its end.
    let root = format!(".{table}");
    let walk = run_tool("snmpwalk", addr, &["--", &root], t);
    assert_lines("snmpwalk table", &walk, &want_table);
    let bulk = run_tool("snmpbulkwalk", addr, &["-Cr7", "--", &root], t);
    assert_lines("snmpbulkwalk table", &bulk, &want_table);

    let s = h.stats();
    assert_eq!(s.refused, Default::default(), "nothing refused");
    assert_eq!(s.in_packets, s.out_packets);
    h.shutdown();
}

fn end_of_view(last: &Oid) -> String {
    format!(
        ".{last} = No more variables left in this MIB View (It is past the end of the MIB tree)"
    )
}

#[test]
fn snmpget_prints_values_and_exceptions() {
    if !tools_present() {
        return;
    }
    let m = small_mib();
    let names = [
        oid(&[1, 3]),
        oid(&[1, 9]),
        oid(&[3, 4294967295, 4294967295]),
        oid(&[2, 1, 2, 100]),
    ];
    let mut want: Vec<String> = names.iter().map(|n| netsnmp_line(n, &m[n])).collect();
    let missing_obj = oid(&[4]);
    let (h, addr) = serve(m);
    let mut args: Vec<String> = vec!["--".into()];
    args.extend(names.iter().map(|n| format!(".{n}")));
    args.push(format!(".{missing_obj}"));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    want.push(format!(
        ".{missing_obj} = No Such Object available on this agent at this OID"
    ));
    let got = run_tool("snmpget", addr, &args, Duration::from_secs(10));
    assert_lines("snmpget", &got, &want);
    h.shutdown();
}

/// 10,000 varbinds through snmpbulkwalk -Cr50 (GetBulk) and through snmpwalk
/// (GetNext, the baseline); prints both times and their ratio.
#[test]
fn bulkwalk_of_ten_thousand_varbinds() {
    if !tools_present() {
        return;
    }
    let mut m = BTreeMap::new();
    for port in 1..=250u32 {
        for col in 1..=40u32 {
            m.insert(
                oid(&[5, 1, col, 0x1000_0000 + port]),
                Value::Counter64(u64::from(port) * 1_000_003 + u64::from(col)),
            );
        }
    }
    assert_eq!(m.len(), 10_000);
    let mut want = expected(&m);
    want.push(end_of_view(m.keys().next_back().unwrap()));
    let (h, addr) = serve(m);
    let root = format!(".{}", oid(&[5]));

    let t = Instant::now();
    let bulk = run_tool(
        "snmpbulkwalk",
        addr,
        &["-Cr50", "--", &root],
        Duration::from_secs(60),
    );
    let bulk_time = t.elapsed();
    assert_lines("snmpbulkwalk", &bulk, &want);
    let bulk_requests = h.stats().in_packets;

    let t = Instant::now();
    let walk = run_tool("snmpwalk", addr, &["--", &root], Duration::from_secs(120));
    let walk_time = t.elapsed();
    assert_lines("snmpwalk", &walk, &want);

    eprintln!(
        "10000 varbinds: snmpbulkwalk -Cr50 {bulk_time:?} ({bulk_requests} requests), \
         snmpwalk {walk_time:?}; GetNext/GetBulk time ratio {:.1}",
        walk_time.as_secs_f64() / bulk_time.as_secs_f64()
    );
    h.shutdown();
}
