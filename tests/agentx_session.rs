//! The AgentX session against a real private snmpd and against a fake master.

mod common;

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use common::{PrivateSnmpd, SnmpTool, WalkLine, parse_walk, snmp_tool};
use ibpm_agentx::agentx::pdu::{
    self, AgentxError, ByteOrder, CloseReason, Framer, Payload, Pdu, Region, ResError, SearchRange,
};
use ibpm_agentx::agentx::{AgentxAddr, Session, SessionConfig, SessionHandle};
use ibpm_agentx::mib::{ErrorStatus, MibHandler, Oid, SetError, SetTxn, Value, VarBind};

fn init_log() {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("ibpm_agentx=debug")
        .try_init();
}

fn oid(s: &str) -> Oid {
    s.parse().unwrap()
}

/// A few rows under 1.3.6.1.3.117, with call counters.
struct TestMib {
    objects: BTreeMap<Oid, Value>,
    writable: bool,
    test_sets: AtomicUsize,
    commits: AtomicUsize,
    cleanups: AtomicUsize,
    gets: AtomicUsize,
}

impl TestMib {
    fn new(writable: bool) -> Arc<TestMib> {
        let mut objects = BTreeMap::new();
        let rows: [(&str, Value); 8] = [
            ("1.3.6.1.3.117.1.1.1.1", Value::Counter64((1 << 40) + 1)),
            ("1.3.6.1.3.117.1.1.1.2", Value::Counter64(7)),
            ("1.3.6.1.3.117.1.1.2.1", Value::Gauge32(4_000_000_000)),
            ("1.3.6.1.3.117.1.1.2.2", Value::Gauge32(5)),
            (
                "1.3.6.1.3.117.1.1.3.1",
                Value::OctetString(vec![0x00, 0x01, 0xfe, 0xff]),
            ),
            (
                "1.3.6.1.3.117.1.1.3.2",
                Value::OctetString(b"port2".to_vec()),
            ),
            ("1.3.6.1.3.117.1.1.9.1", Value::Integer(9)),
            ("1.3.6.1.3.117.1.1.10.1", Value::Integer(10)),
        ];
        for (o, v) in rows {
            objects.insert(oid(o), v);
        }
        Arc::new(TestMib {
            objects,
            writable,
            test_sets: AtomicUsize::new(0),
            commits: AtomicUsize::new(0),
            cleanups: AtomicUsize::new(0),
            gets: AtomicUsize::new(0),
        })
    }
}

impl MibHandler for TestMib {
    fn get(&self, o: &Oid) -> Value {
        self.gets.fetch_add(1, Ordering::SeqCst);
        match self.objects.get(o) {
            Some(v) => v.clone(),
            None if o.starts_with(&[1, 3, 6, 1, 3, 117, 1, 1]) && o.len() == 10 => {
                Value::NoSuchInstance
            }
            None => Value::NoSuchObject,
        }
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.objects
            .iter()
            .find(|(k, _)| (*k > start || (include && *k == start)) && end.is_none_or(|e| *k < e))
            .map(|(k, v)| VarBind::new(k.clone(), v.clone()))
    }
    fn test_set(&self, _txn: SetTxn, vbs: &[VarBind]) -> Result<(), SetError> {
        self.test_sets.fetch_add(1, Ordering::SeqCst);
        if self.writable && !vbs.is_empty() {
            Ok(())
        } else {
            Err(SetError {
                status: ErrorStatus::NotWritable,
                index: 1,
            })
        }
    }
    fn commit_set(&self, _txn: SetTxn) -> Result<(), SetError> {
        self.commits.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    fn cleanup_set(&self, _txn: SetTxn) {
        self.cleanups.fetch_add(1, Ordering::SeqCst);
    }
}

fn config(addr: &str) -> SessionConfig {
    SessionConfig {
        address: addr.parse::<AgentxAddr>().unwrap(),
        ping_interval: Duration::from_secs(1),
        backoff_min: Duration::from_millis(50),
        backoff_max: Duration::from_millis(500),
        ..SessionConfig::default()
    }
}

fn wait_for(what: &str, timeout: Duration, f: impl FnMut() -> bool) {
    common::wait_until(what, timeout, Duration::from_millis(20), f);
}

/// Stops the session when the test ends, also on panic.
struct Stop(SessionHandle);
impl Drop for Stop {
    fn drop(&mut self) {
        self.0.shutdown();
    }
}

fn expected_walk() -> Vec<(&'static str, &'static str, &'static str)> {
    vec![
        (".1.3.6.1.3.117.1.1.1.1", "Counter64", "1099511627777"),
        (".1.3.6.1.3.117.1.1.1.2", "Counter64", "7"),
        (".1.3.6.1.3.117.1.1.2.1", "Gauge32", "4000000000"),
        (".1.3.6.1.3.117.1.1.2.2", "Gauge32", "5"),
        (".1.3.6.1.3.117.1.1.3.1", "Hex-STRING", "00 01 FE FF"),
        (".1.3.6.1.3.117.1.1.3.2", "STRING", "\"port2\""),
        (".1.3.6.1.3.117.1.1.9.1", "INTEGER", "9"),
        (".1.3.6.1.3.117.1.1.10.1", "INTEGER", "10"),
    ]
}

fn as_tuples(lines: &[WalkLine]) -> Vec<(String, String, String)> {
    lines
        .iter()
        .map(|l| (format!(".{}", l.oid), l.ty.clone(), l.value.clone()))
        .collect()
}

fn expected_tuples() -> Vec<(String, String, String)> {
    expected_walk()
        .into_iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

fn walk(snmpd: &PrivateSnmpd, tool: &str) -> (bool, Vec<WalkLine>, String) {
    let out = SnmpTool::new(tool)
        .args(["-v2c", "-c", "public", "-On", "-Oe", "-t", "1", "-r", "1"])
        .arg(&snmpd.target())
        .arg("1.3.6.1.3.117")
        .timeout(Duration::from_secs(20))
        .run();
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    (
        out.status.success(),
        parse_walk(&text),
        format!("{text}{err}"),
    )
}

macro_rules! need_snmpd {
    () => {
        assert!(
            PrivateSnmpd::available(),
            "snmpd and the net-snmp tools are needed: run scripts/install-deps"
        );
    };
}

#[test]
fn serves_get_getnext_walk_and_bulkwalk_through_snmpd() {
    need_snmpd!();
    init_log();
    let snmpd = PrivateSnmpd::start().expect("start snmpd");
    let mib = TestMib::new(false);
    let h = Stop(Session::spawn(config(&snmpd.agentx_addr()), mib.clone()).unwrap());
    wait_for("registration", Duration::from_secs(10), || h.0.registered());
    assert!(h.0.connected());

    let out = snmp_tool(
        "snmpget",
        &[
            "-v2c",
            "-c",
            "public",
            "-On",
            &snmpd.target(),
            "1.3.6.1.3.117.1.1.1.1",
            "1.3.6.1.3.117.1.1.2.1",
            "1.3.6.1.3.117.1.1.3.1",
            "1.3.6.1.3.117.1.1.3.99",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let lines = parse_walk(&text);
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        (lines[0].ty.as_str(), lines[0].value.as_str()),
        ("Counter64", "1099511627777")
    );
    assert_eq!(
        (lines[1].ty.as_str(), lines[1].value.as_str()),
        ("Gauge32", "4000000000")
    );
    assert_eq!(
        (lines[2].ty.as_str(), lines[2].value.as_str()),
        ("Hex-STRING", "00 01 FE FF")
    );
    assert!(lines[3].value.contains("No Such Instance"), "{text}");

    let out = snmp_tool(
        "snmpgetnext",
        &[
            "-v2c",
            "-c",
            "public",
            "-On",
            &snmpd.target(),
            "1.3.6.1.3.117.1.1.9.1",
        ],
    );
    let lines = parse_walk(&String::from_utf8_lossy(&out.stdout));
    assert_eq!(lines.len(), 1);
    assert_eq!(
        lines[0].oid,
        oid("1.3.6.1.3.117.1.1.10.1"),
        "numeric order: 10 after 9"
    );

    for tool in ["snmpwalk", "snmpbulkwalk"] {
        let (ok, lines, text) = walk(&snmpd, tool);
        assert!(ok, "{tool}: {text}");
        assert_eq!(as_tuples(&lines), expected_tuples(), "{tool}: {text}");
    }

    // The default MibHandler::test_set refuses: notWritable reaches the manager.
    let out = snmp_tool(
        "snmpset",
        &[
            "-v2c",
            "-c",
            "private",
            "-On",
            &snmpd.target(),
            "1.3.6.1.3.117.1.1.2.1",
            "u",
            "1",
        ],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!out.status.success());
    assert!(all.contains("notWritable"), "{all}");
    assert_eq!(mib.test_sets.load(Ordering::SeqCst), 1);
    assert_eq!(mib.commits.load(Ordering::SeqCst), 0);
}

#[test]
fn default_handler_set_is_not_writable() {
    need_snmpd!();
    init_log();
    struct ReadOnly;
    impl MibHandler for ReadOnly {
        fn get(&self, _: &Oid) -> Value {
            Value::Integer(1)
        }
        fn get_next(&self, _: &Oid, _: bool, _: Option<&Oid>) -> Option<VarBind> {
            None
        }
    }
    let snmpd = PrivateSnmpd::start().expect("start snmpd");
    let h = Stop(Session::spawn(config(&snmpd.agentx_addr()), Arc::new(ReadOnly)).unwrap());
    wait_for("registration", Duration::from_secs(10), || h.0.registered());
    let out = snmp_tool(
        "snmpset",
        &[
            "-v2c",
            "-c",
            "private",
            &snmpd.target(),
            "1.3.6.1.3.117.1.0",
            "i",
            "5",
        ],
    );
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(all.contains("notWritable"), "{all}");
}

#[test]
fn walks_work_again_after_snmpd_restart() {
    need_snmpd!();
    init_log();
    let mut snmpd = PrivateSnmpd::start().expect("start snmpd");
    let mib = TestMib::new(false);
    let h = Stop(Session::spawn(config(&snmpd.agentx_addr()), mib).unwrap());
    wait_for("registration", Duration::from_secs(10), || h.0.registered());
    assert_eq!(as_tuples(&walk(&snmpd, "snmpwalk").1), expected_tuples());

    for round in 0..2 {
        snmpd.restart().expect("restart snmpd");
        let t0 = Instant::now();
        let mut last = String::new();
        let ok = loop {
            let (_, lines, text) = walk(&snmpd, "snmpbulkwalk");
            if as_tuples(&lines) == expected_tuples() {
                break true;
            }
            last = text;
            if t0.elapsed() > Duration::from_secs(5) {
                break false;
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(ok, "round {round}: walk not back within 5 s; last: {last}");
        eprintln!("round {round}: walk back after {:?}", t0.elapsed());
    }
    assert!(h.0.stats().opens.load(Ordering::SeqCst) >= 3);
}

/// Regression: the reconnect backoff started over only after a session that
/// had lived longer than `backoff_max`, so each snmpd restart that followed
/// a short session waited longer (doubling up to `backoff_max`) before the
/// subtree was back. It starts over once Open and Register succeed.
#[test]
fn reconnect_backoff_starts_over_once_registered() {
    need_snmpd!();
    init_log();
    let mut snmpd = PrivateSnmpd::start().expect("start snmpd");
    let mut cfg = config(&snmpd.agentx_addr());
    cfg.backoff_min = Duration::from_millis(50);
    cfg.backoff_max = Duration::from_secs(30);
    let h = Stop(Session::spawn(cfg, TestMib::new(false)).unwrap());
    wait_for("registration", Duration::from_secs(10), || h.0.registered());
    let mut back_after = Vec::new();
    for round in 0..8 {
        let opens = h.0.stats().opens.load(Ordering::SeqCst);
        // Returns once the new snmpd answers SNMP requests.
        snmpd.restart().expect("restart snmpd");
        let t0 = Instant::now();
        wait_for(
            "registration after restart",
            Duration::from_secs(60),
            || h.0.stats().opens.load(Ordering::SeqCst) > opens && h.0.registered(),
        );
        back_after.push(t0.elapsed());
        eprintln!(
            "round {round}: registered {:?} after snmpd answered",
            t0.elapsed()
        );
    }
    // With the delay doubling from 50 ms at each round, the last rounds
    // waited 3.2 s and 6.4 s after the connection was lost.
    assert!(
        back_after.iter().all(|d| *d < Duration::from_secs(2)),
        "{back_after:?}"
    );
    assert_eq!(as_tuples(&walk(&snmpd, "snmpwalk").1), expected_tuples());
}

#[test]
fn duplicate_registration_is_retried_not_fatal() {
    need_snmpd!();
    init_log();
    let snmpd = PrivateSnmpd::start().expect("start snmpd");
    let first = Session::spawn(config(&snmpd.agentx_addr()), TestMib::new(false)).unwrap();
    let first = Stop(first);
    wait_for("first registration", Duration::from_secs(10), || {
        first.0.registered()
    });

    let second = Stop(Session::spawn(config(&snmpd.agentx_addr()), TestMib::new(false)).unwrap());
    wait_for(
        "two duplicateRegistration answers",
        Duration::from_secs(10),
        || {
            second
                .0
                .stats()
                .duplicate_registrations
                .load(Ordering::SeqCst)
                >= 2
        },
    );
    assert!(second.0.connected(), "session stays open");
    assert!(!second.0.registered());
    // The first one keeps serving.
    assert_eq!(as_tuples(&walk(&snmpd, "snmpwalk").1), expected_tuples());

    // When the holder goes away, the retry succeeds.
    first.0.shutdown();
    wait_for(
        "second registration after the first left",
        Duration::from_secs(10),
        || second.0.registered(),
    );
    assert_eq!(as_tuples(&walk(&snmpd, "snmpwalk").1), expected_tuples());
}

// ------------------------------------------------------------ fake master

struct FakeMaster {
    stream: UnixStream,
    framer: Framer,
    pings: usize,
}

impl FakeMaster {
    fn accept(l: &UnixListener) -> FakeMaster {
        l.set_nonblocking(true).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let stream = loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    assert!(Instant::now() < deadline, "no connection from the session");
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => panic!("accept: {e}"),
            }
        };
        stream.set_nonblocking(false).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        FakeMaster {
            stream,
            framer: Framer::new(1 << 20),
            pings: 0,
        }
    }

    /// Next PDU from the subagent; Pings are answered and skipped.
    fn recv(&mut self) -> Pdu {
        self.try_recv(Duration::from_secs(5))
            .expect("no PDU from the subagent within 5 s")
    }

    fn try_recv(&mut self, timeout: Duration) -> Option<Pdu> {
        let deadline = Instant::now() + timeout;
        let mut buf = [0u8; 4096];
        loop {
            while let Some(f) = self.framer.next_frame() {
                let p = pdu::decode(&f.expect("frame")).expect("subagent sent a valid PDU");
                if let Payload::Ping = p.payload {
                    self.pings += 1;
                    let r = Pdu::new(p.session_id, p.transaction_id, p.packet_id, ok_response());
                    // The subagent may have hung up meanwhile (a test that
                    // ends the connection reads on for its last PDUs).
                    let b = pdu::encode(&r, ByteOrder::Big).unwrap();
                    let _ = self.stream.write_all(&b);
                    continue;
                }
                return Some(p);
            }
            if Instant::now() > deadline {
                return None;
            }
            match self.stream.read(&mut buf) {
                Ok(0) => return None,
                Ok(n) => self.framer.push(&buf[..n]),
                Err(_) => {}
            }
        }
    }

    fn send(&mut self, b: &[u8]) {
        self.stream.write_all(b).unwrap();
    }

    fn send_pdu(&mut self, p: &Pdu) {
        let b = pdu::encode(p, ByteOrder::Big).unwrap();
        self.send(&b);
    }

    /// Answers Open and Register; returns the session id given.
    fn handshake(&mut self, sid: u32) {
        let open = self.recv();
        assert!(matches!(open.payload, Payload::Open { .. }), "{open:?}");
        self.send_pdu(&Pdu::new(
            sid,
            open.transaction_id,
            open.packet_id,
            ok_response(),
        ));
        let reg = self.recv();
        match &reg.payload {
            Payload::Register { region, .. } => {
                assert_eq!(region.subtree, oid("1.3.6.1.3.117"));
                assert_eq!(region.priority, 127);
            }
            p => panic!("expected Register, got {p:?}"),
        }
        assert_eq!(reg.session_id, sid);
        self.send_pdu(&Pdu::new(
            sid,
            reg.transaction_id,
            reg.packet_id,
            ok_response(),
        ));
    }
}

fn ok_response() -> Payload {
    Payload::Response {
        sys_uptime: 100,
        error: ResError::NO_ERROR,
        index: 0,
        varbinds: vec![],
    }
}

fn response_of(p: &Pdu) -> (ResError, Vec<VarBind>) {
    match &p.payload {
        Payload::Response {
            error, varbinds, ..
        } => (*error, varbinds.clone()),
        other => panic!("expected a Response, got {other:?}"),
    }
}

fn get_pdu(sid: u32, packet: u32) -> Vec<u8> {
    pdu::encode(
        &Pdu::new(
            sid,
            packet,
            packet,
            Payload::Get {
                ranges: vec![SearchRange {
                    start: oid("1.3.6.1.3.117.1.1.2.1"),
                    include: false,
                    end: Oid::default(),
                }],
            },
        ),
        ByteOrder::Big,
    )
    .unwrap()
}

fn fake_master_session(mib: Arc<TestMib>) -> (tempfile::TempDir, UnixListener, Stop) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("master");
    let l = UnixListener::bind(&path).unwrap();
    let mut cfg = config(&format!("unix:{}", path.display()));
    cfg.ping_interval = Duration::from_secs(30);
    let h = Stop(Session::spawn(cfg, mib).unwrap());
    (dir, l, h)
}

/// A session registered with a fake master (session ID 9), over a fresh
/// read-only test MIB.
fn registered_fake_master() -> (tempfile::TempDir, UnixListener, Stop, FakeMaster) {
    init_log();
    let mib = TestMib::new(false);
    let (dir, l, h) = fake_master_session(mib);
    let mut m = FakeMaster::accept(&l);
    m.handshake(9);
    wait_for("registered", Duration::from_secs(5), || h.0.registered());
    (dir, l, h, m)
}

#[test]
fn bad_pdus_get_the_rfc_answer_and_the_session_keeps_working() {
    let (_dir, l, h, mut m) = registered_fake_master();

    // A valid Get first.
    m.send(&get_pdu(9, 100));
    let r = m.recv();
    assert_eq!(r.packet_id, 100);
    assert_eq!(
        response_of(&r).1,
        vec![VarBind::new(
            oid("1.3.6.1.3.117.1.1.2.1"),
            Value::Gauge32(4_000_000_000)
        )]
    );

    // Truncated payload: the OID claims 5 sub-identifiers, 1 is present.
    let mut b = get_pdu(9, 101);
    b[20] = 5;
    b.truncate(20 + 4 + 4);
    b[16..20].copy_from_slice(&8u32.to_be_bytes());
    m.send(&b);
    let r = m.recv();
    assert_eq!((r.packet_id, r.transaction_id), (101, 101));
    assert_eq!(response_of(&r).0, ResError::Agentx(AgentxError::ParseError));

    // Unknown PDU type 99.
    let mut b = get_pdu(9, 102);
    b[1] = 99;
    m.send(&b);
    let r = m.recv();
    assert_eq!(r.packet_id, 102);
    assert_eq!(response_of(&r).0, ResError::Agentx(AgentxError::ParseError));

    // Little-endian request: answered in little-endian.
    let le = pdu::encode(&pdu::decode(&get_pdu(9, 103)).unwrap(), ByteOrder::Little).unwrap();
    m.send(&le);
    let mut raw = [0u8; 20];
    // Read the raw header to see the byte order of the answer.
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut got = 0;
    while got < 20 && Instant::now() < deadline {
        if let Ok(n) = m.stream.read(&mut raw[got..]) {
            got += n;
        }
    }
    assert_eq!(got, 20);
    let hdr = pdu::Header::parse(&raw).unwrap();
    assert_eq!(hdr.byte_order(), ByteOrder::Little);
    assert_eq!(hdr.packet_id, 103);
    let mut rest = vec![0u8; hdr.payload_length as usize];
    m.stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    m.stream.read_exact(&mut rest).unwrap();
    m.stream
        .set_read_timeout(Some(Duration::from_millis(100)))
        .unwrap();

    // A PDU only subagents send (Register): processingError.
    let reg = Pdu::new(
        9,
        105,
        105,
        Payload::Register {
            timeout: 0,
            region: Region::subtree(oid("1.3.6.1.3.117"), 1),
        },
    );
    m.send_pdu(&reg);
    let r = m.recv();
    assert_eq!(r.packet_id, 105);
    assert_eq!(
        response_of(&r).0,
        ResError::Agentx(AgentxError::ProcessingError)
    );

    // Still serving, same connection.
    m.send(&get_pdu(9, 106));
    let r = m.recv();
    assert_eq!(r.packet_id, 106);
    assert_eq!(response_of(&r).0, ResError::NO_ERROR);

    // Oversized PDU (2 MiB payload, max 1 MiB): parseError, then the
    // session starts over at once (a master that announced more than it
    // sends would otherwise leave the session deaf).
    let mut big = get_pdu(9, 104);
    let len: u32 = 2 << 20;
    big[16..20].copy_from_slice(&len.to_be_bytes());
    big.resize(20 + len as usize, 0);
    // The session hangs up before it has read all of it.
    let _ = m.stream.write_all(&big);
    let r = m.recv();
    assert_eq!(r.packet_id, 104);
    assert_eq!(response_of(&r).0, ResError::Agentx(AgentxError::ParseError));
    assert!(h.0.stats().parse_errors.load(Ordering::SeqCst) >= 4);
    let c = m.recv();
    assert_eq!(
        c.payload,
        Payload::Close {
            reason: CloseReason::ParseError
        }
    );
    let mut m = FakeMaster::accept(&l);
    m.handshake(11);
    m.send(&get_pdu(11, 1));
    let r = m.recv();
    assert_eq!((r.session_id, response_of(&r).0), (11, ResError::NO_ERROR));

    // A header that does not parse (version 7): the stream cannot be
    // resynchronised, so the session sends Close(parseError) and reconnects.
    m.send(&[7u8; 40]);
    let c = m.recv();
    assert_eq!(
        c.payload,
        Payload::Close {
            reason: CloseReason::ParseError
        }
    );
    let mut m2 = FakeMaster::accept(&l);
    m2.handshake(10);
    m2.send(&get_pdu(10, 1));
    let r = m2.recv();
    assert_eq!(r.session_id, 10);
    assert_eq!(response_of(&r).0, ResError::NO_ERROR);
    assert_eq!(h.0.stats().opens.load(Ordering::SeqCst), 3);
}

/// Regression: a header announcing a payload past the maximum that never
/// comes left the session deaf (every later byte was skipped as payload)
/// until its own Ping went unanswered; now it reconnects at once.
#[test]
fn oversized_header_reconnects_at_once() {
    init_log();
    let mib = TestMib::new(false);
    let (_dir, l, h) = fake_master_session(mib);
    let mut m = FakeMaster::accept(&l);
    m.handshake(12);
    wait_for("registered", Duration::from_secs(5), || h.0.registered());
    let mut b = get_pdu(12, 200);
    b[16..20].copy_from_slice(&u32::MAX.to_be_bytes());
    m.send(&b);
    let r = m.recv();
    assert_eq!(response_of(&r).0, ResError::Agentx(AgentxError::ParseError));
    // The session pings every 30 s here: a new connection within a few
    // seconds comes from the oversized header, not from a Ping timeout.
    let t0 = Instant::now();
    let mut m2 = FakeMaster::accept(&l);
    assert!(t0.elapsed() < Duration::from_secs(5), "{:?}", t0.elapsed());
    m2.handshake(13);
    m2.send(&get_pdu(13, 1));
    assert_eq!(response_of(&m2.recv()).0, ResError::NO_ERROR);
}

#[test]
fn resent_packets_are_answered_from_cache() {
    init_log();
    let mib = TestMib::new(true);
    let (_dir, l, h) = fake_master_session(mib.clone());
    let mut m = FakeMaster::accept(&l);
    m.handshake(3);
    wait_for("registered", Duration::from_secs(5), || h.0.registered());

    let test_set = pdu::encode(
        &Pdu::new(
            3,
            50,
            7,
            Payload::TestSet {
                varbinds: vec![VarBind::new(
                    oid("1.3.6.1.3.117.1.1.3.1"),
                    Value::OctetString(vec![0, 0xff]),
                )],
            },
        ),
        ByteOrder::Big,
    )
    .unwrap();
    let commit = pdu::encode(&Pdu::new(3, 50, 8, Payload::CommitSet), ByteOrder::Big).unwrap();
    let cleanup = pdu::encode(&Pdu::new(3, 50, 9, Payload::CleanupSet), ByteOrder::Big).unwrap();

    // Master resends each packet (same session/transaction/packet IDs).
    m.send(&test_set);
    m.send(&test_set);
    let a = m.recv();
    let b = m.recv();
    assert_eq!(a, b);
    assert_eq!((a.packet_id, response_of(&a).0), (7, ResError::NO_ERROR));
    m.send(&commit);
    m.send(&commit);
    let a = m.recv();
    let b = m.recv();
    assert_eq!(a, b);
    assert_eq!(a.packet_id, 8);
    m.send(&cleanup);
    m.send(&cleanup);
    // CleanupSet is never answered; the next Get's answer comes first.
    m.send(&get_pdu(3, 60));
    let r = m.recv();
    assert_eq!(r.packet_id, 60);
    assert_eq!(
        mib.test_sets.load(Ordering::SeqCst),
        1,
        "TestSet executed once"
    );
    assert_eq!(
        mib.commits.load(Ordering::SeqCst),
        1,
        "CommitSet executed once"
    );
    assert_eq!(
        mib.cleanups.load(Ordering::SeqCst),
        1,
        "CleanupSet executed once"
    );
    assert_eq!(h.0.stats().resends_answered.load(Ordering::SeqCst), 3);

    // Same packet ID in a new transaction is a new request.
    let gets_before = mib.gets.load(Ordering::SeqCst);
    m.send(&get_pdu(3, 61));
    m.recv();
    let mut again = get_pdu(3, 61);
    again[8..12].copy_from_slice(&62u32.to_be_bytes());
    m.send(&again);
    m.recv();
    assert_eq!(mib.gets.load(Ordering::SeqCst), gets_before + 2);
}

#[test]
fn notify_is_sent_and_shutdown_closes() {
    init_log();
    let mib = TestMib::new(false);
    let (_dir, l, h) = fake_master_session(mib);
    let mut m = FakeMaster::accept(&l);
    m.handshake(4);
    wait_for("registered", Duration::from_secs(5), || h.0.registered());
    let vbs = vec![
        VarBind::new(oid("1.3.6.1.2.1.1.3.0"), Value::TimeTicks(5)),
        VarBind::new(
            oid("1.3.6.1.6.3.1.1.4.1.0"),
            Value::ObjectIdentifier(oid("1.3.6.1.3.117.0.1")),
        ),
    ];
    h.0.notify(vbs.clone()).unwrap();
    let n = m.recv();
    assert_eq!(n.session_id, 4);
    assert_eq!(n.payload, Payload::Notify { varbinds: vbs });
    m.send_pdu(&Pdu::new(4, n.transaction_id, n.packet_id, ok_response()));
    let t0 = Instant::now();
    h.0.shutdown();
    assert!(t0.elapsed() < Duration::from_secs(2), "shutdown is prompt");
    let c = m.recv();
    assert_eq!(
        c.payload,
        Payload::Close {
            reason: CloseReason::Shutdown
        }
    );
    assert!(!h.0.connected());
    assert!(h.0.notify(vec![]).is_err());
}

#[test]
fn reconnects_when_master_stops_answering_pings() {
    init_log();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("master");
    let l = UnixListener::bind(&path).unwrap();
    let mut cfg = config(&format!("unix:{}", path.display()));
    cfg.ping_interval = Duration::from_millis(200);
    let h = Stop(Session::spawn(cfg, TestMib::new(false)).unwrap());
    let mut m = FakeMaster::accept(&l);
    m.handshake(5);
    // Read the next Ping without answering it (raw read, bypassing recv()).
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut buf = [0u8; 1024];
    let mut saw_ping = false;
    while !saw_ping && Instant::now() < deadline {
        if let Ok(n) = m.stream.read(&mut buf) {
            m.framer.push(&buf[..n]);
        }
        while let Some(Ok(f)) = m.framer.next_frame() {
            if matches!(pdu::decode(&f).unwrap().payload, Payload::Ping) {
                saw_ping = true;
            }
        }
    }
    assert!(saw_ping);
    // Unanswered for the request timeout (5 s): the session reconnects.
    let t0 = Instant::now();
    let mut m2 = FakeMaster::accept(&l);
    assert!(t0.elapsed() < Duration::from_secs(8));
    m2.handshake(6);
    wait_for("registered again", Duration::from_secs(5), || {
        h.0.registered()
    });
}

/// The AgentX driver and the built-in responder share one runtime: while an
/// AgentX CommitSet waits (on the fabric, here on the test's word), the
/// responder still answers.
#[test]
fn responder_answers_while_an_agentx_commit_waits() {
    need_snmpd!();
    init_log();
    /// A commit that waits until the test lets it go (at most 10 s).
    struct SlowCommit {
        mib: Arc<TestMib>,
        waiting: AtomicBool,
        go: Mutex<mpsc::Receiver<()>>,
    }
    impl MibHandler for SlowCommit {
        fn get(&self, o: &Oid) -> Value {
            self.mib.get(o)
        }
        fn get_next(&self, s: &Oid, i: bool, e: Option<&Oid>) -> Option<VarBind> {
            self.mib.get_next(s, i, e)
        }
        fn test_set(&self, txn: SetTxn, vbs: &[VarBind]) -> Result<(), SetError> {
            self.mib.test_set(txn, vbs)
        }
        fn commit_set(&self, txn: SetTxn) -> Result<(), SetError> {
            self.waiting.store(true, Ordering::SeqCst);
            let _ = self
                .go
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10));
            self.waiting.store(false, Ordering::SeqCst);
            self.mib.commit_set(txn)
        }
    }
    let (go, gate) = mpsc::channel();
    let mib = Arc::new(SlowCommit {
        mib: TestMib::new(true),
        waiting: AtomicBool::new(false),
        go: Mutex::new(gate),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("master");
    let l = UnixListener::bind(&path).unwrap();
    let mut cfg = config(&format!("unix:{}", path.display()));
    cfg.ping_interval = Duration::from_secs(30);
    let h = Stop(Session::spawn(cfg, mib.clone()).unwrap());
    let responder = ibpm_agentx::snmp::Responder::bind(
        "127.0.0.1:0".parse().unwrap(),
        ibpm_agentx::snmp::ResponderConfig::new("public"),
        mib.clone(),
    )
    .unwrap()
    .spawn()
    .unwrap();
    let target = responder.local_addr().unwrap().to_string();
    let mut m = FakeMaster::accept(&l);
    m.handshake(21);
    wait_for("registered", Duration::from_secs(5), || h.0.registered());
    let set = Pdu::new(
        21,
        70,
        1,
        Payload::TestSet {
            varbinds: vec![VarBind::new(
                oid("1.3.6.1.3.117.1.1.2.1"),
                Value::Gauge32(0),
            )],
        },
    );
    m.send_pdu(&set);
    assert_eq!(response_of(&m.recv()).0, ResError::NO_ERROR);
    m.send_pdu(&Pdu::new(21, 70, 2, Payload::CommitSet));
    wait_for("the commit under way", Duration::from_secs(5), || {
        mib.waiting.load(Ordering::SeqCst)
    });
    // The commit waits; the responder answers meanwhile (one try of 2 s).
    let out = snmp_tool(
        "snmpget",
        &[
            "-v2c",
            "-c",
            "public",
            "-On",
            "-t",
            "2",
            "-r",
            "0",
            &target,
            "1.3.6.1.3.117.1.1.2.1",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains("Gauge32: 4000000000"), "{text}");
    assert!(
        mib.waiting.load(Ordering::SeqCst),
        "the commit ended before the responder answered"
    );
    // The commit's answer comes once it is let go.
    go.send(()).unwrap();
    let r = m.recv();
    assert_eq!((r.packet_id, response_of(&r).0), (2, ResError::NO_ERROR));
    responder.shutdown();
}

/// A rogue master's GetBulk with 5,000 non-repeaters over 5,000 ranges:
/// the Response fits the octet bound (what fits is answered, in order),
/// and the session keeps working.
#[test]
fn a_bulk_of_5000_non_repeaters_gets_a_bounded_response() {
    let (_dir, _l, _h, mut m) = registered_fake_master();
    let range = SearchRange {
        start: oid("1.3.6.1.3.117"),
        include: false,
        end: Oid::default(),
    };
    m.send_pdu(&Pdu::new(
        9,
        200,
        200,
        Payload::GetBulk {
            non_repeaters: 5000,
            max_repetitions: 10,
            ranges: vec![range; 5000],
        },
    ));
    let r = m.recv();
    assert_eq!(r.packet_id, 200);
    let octets = pdu::encode(&r, ByteOrder::Big).unwrap().len();
    let (err, vbs) = response_of(&r);
    assert_eq!(err, ResError::NO_ERROR);
    eprintln!(
        "5,000 non-repeaters: {} varbinds, {octets} octets",
        vbs.len()
    );
    assert!(
        octets <= ibpm_agentx::agentx::core::MAX_RESPONSE_OCTETS + 64,
        "{octets} octets"
    );
    assert!(!vbs.is_empty() && vbs.len() < 5000, "{}", vbs.len());
    m.send(&get_pdu(9, 201));
    assert_eq!(m.recv().packet_id, 201);
}
