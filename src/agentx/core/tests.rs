//! The core driven without a socket: the bytes a real snmpd sent
//! (tests/fixtures/agentx) and a virtual clock.

use std::collections::BTreeMap;
use std::sync::Mutex;

use super::*;
use crate::agentx::pdu::ByteOrder;

fn fixture(name: &str) -> Vec<u8> {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agentx")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

fn oid(s: &str) -> Oid {
    s.parse().unwrap()
}

/// A few objects, everything writable; records every SET-side call.
#[derive(Default)]
struct Mib {
    objects: crate::mib::fixed::Fixed,
    calls: Mutex<Vec<String>>,
}

impl Mib {
    fn new() -> Mib {
        let mut objects = BTreeMap::new();
        for i in 1..=3u32 {
            objects.insert(
                Oid::new(&[1, 3, 6, 1, 3, 117, 1, i, 0]),
                Value::Integer(i as i32),
            );
        }
        Mib {
            objects: objects.into(),
            calls: Mutex::new(Vec::new()),
        }
    }
    fn log(&self, s: String) {
        self.calls.lock().unwrap().push(s);
    }
    fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }
    fn count(&self, prefix: &str) -> usize {
        self.calls()
            .iter()
            .filter(|c| c.starts_with(prefix))
            .count()
    }
}

impl MibHandler for Mib {
    fn get(&self, o: &Oid) -> Value {
        self.objects.value(o)
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.objects.next(start, include, end)
    }
    fn test_set(&self, txn: SetTxn, _: &[VarBind]) -> Result<(), SetError> {
        self.log(format!("test {} {}", txn.session_id, txn.transaction_id));
        Ok(())
    }
    fn commit_set(&self, txn: SetTxn) -> Result<(), SetError> {
        self.log(format!("commit {} {}", txn.session_id, txn.transaction_id));
        Ok(())
    }
    fn undo_set(&self, txn: SetTxn) -> Result<(), SetError> {
        self.log(format!("undo {} {}", txn.session_id, txn.transaction_id));
        Ok(())
    }
    fn cleanup_set(&self, txn: SetTxn) {
        self.log(format!("cleanup {} {}", txn.session_id, txn.transaction_id));
    }
    fn session_closed(&self, session_id: u32) {
        self.log(format!("closed {session_id}"));
    }
}

/// The settings capture.py used, so the core's first PDUs are byte for byte
/// the captured ones.
fn cfg() -> SessionConfig {
    SessionConfig {
        description: "capture.py".to_string(),
        ping_interval: Duration::from_secs(15),
        backoff_min: Duration::from_millis(200),
        backoff_max: Duration::from_secs(5),
        ..SessionConfig::default()
    }
}

fn sent(actions: &[Action]) -> Vec<Pdu> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Send(b) => Some(pdu::decode(b).expect("the core sends valid PDUs")),
            Action::Lost(_) => None,
        })
        .collect()
}

fn lost(actions: &[Action]) -> Option<Lost> {
    actions.iter().find_map(|a| match a {
        Action::Lost(l) => Some(l.clone()),
        Action::Send(_) => None,
    })
}

fn response(p: &Pdu) -> (ResError, u16, Vec<VarBind>) {
    match &p.payload {
        Payload::Response {
            error,
            index,
            varbinds,
            ..
        } => (*error, *index, varbinds.clone()),
        other => panic!("expected a Response, got {other:?}"),
    }
}

/// Open, Register and Ping as captured from snmpd (session 5); returns the
/// core, registered, at `t0`.
fn open_core(mib: &Mib, t0: Instant) -> AgentxCore {
    let mut core = AgentxCore::new(cfg());
    let a = core.on_connected(t0);
    assert_eq!(a, vec![Action::Send(fixture("01-setup-subagent-Open.bin"))]);
    let a = core.on_bytes(&fixture("02-setup-master-Response.bin"), t0, mib);
    assert_eq!(
        a,
        vec![
            Action::Send(fixture("03-setup-subagent-Register.bin")),
            Action::Send(fixture("05-setup-subagent-Ping.bin")),
        ]
    );
    assert!(core.is_open() && !core.is_registered());
    assert!(
        core.on_bytes(&fixture("04-setup-master-Response.bin"), t0, mib)
            .is_empty()
    );
    assert!(
        core.on_bytes(&fixture("06-setup-master-Response.bin"), t0, mib)
            .is_empty()
    );
    assert!(core.is_registered());
    assert_eq!(core.session_id(), Some(5));
    core
}

/// A handler and a core open with it at a time of the test's own.
fn opened() -> (Mib, AgentxCore, Instant) {
    let mib = Mib::new();
    let t0 = Instant::now();
    let core = open_core(&mib, t0);
    (mib, core, t0)
}

fn encode(p: &Pdu) -> Vec<u8> {
    pdu::encode(p, ByteOrder::Big).unwrap()
}

fn request(core: &mut AgentxCore, mib: &Mib, p: Pdu, now: Instant) -> Option<Pdu> {
    let a = core.on_bytes(&encode(&p), now, mib);
    assert_eq!(lost(&a), None);
    let mut s = sent(&a);
    assert!(s.len() <= 1, "{s:?}");
    s.pop()
}

fn test_set(sid: u32, tid: u32, pid: u32) -> Pdu {
    Pdu::new(
        sid,
        tid,
        pid,
        Payload::TestSet {
            varbinds: vec![VarBind::new(oid("1.3.6.1.3.117.1.1.0"), Value::Integer(0))],
        },
    )
}

fn get(sid: u32, pid: u32, context: Option<Vec<u8>>) -> Pdu {
    let pdu = Pdu::new(
        sid,
        pid,
        pid,
        Payload::Get {
            ranges: vec![SearchRange {
                start: oid("1.3.6.1.3.117.1.2.0"),
                include: false,
                end: Oid::default(),
            }],
        },
    );
    Pdu { context, ..pdu }
}

#[test]
fn serves_the_captured_requests() {
    let (mib, mut core, t0) = opened();
    let a = core.on_bytes(&fixture("13-get-master-Get.bin"), t0, &mib);
    let r = sent(&a);
    assert_eq!(r.len(), 1);
    let (err, _, vbs) = response(&r[0]);
    assert_eq!(err, ResError::NO_ERROR);
    assert_eq!(vbs[0].value, Value::Integer(1));
    // TestSet, CommitSet, CleanupSet of one transaction, in one read.
    let mut set = fixture("31-set-master-TestSet.bin");
    set.extend(fixture("33-set-master-CommitSet.bin"));
    set.extend(fixture("35-set-master-CleanupSet.bin"));
    let r = sent(&core.on_bytes(&set, t0, &mib));
    assert_eq!(r.len(), 2, "CleanupSet is not answered");
    assert!(r.iter().all(|p| response(p).0 == ResError::NO_ERROR));
    assert_eq!(
        mib.calls(),
        vec!["test 5 14", "commit 5 14", "cleanup 5 14"]
    );
}

#[test]
fn register_refused_is_retried_with_backoff() {
    let mib = Mib::new();
    let t0 = Instant::now();
    let mut core = AgentxCore::new(cfg());
    let _ = core.on_connected(t0);
    let a = core.on_bytes(&fixture("02-setup-master-Response.bin"), t0, &mib);
    let mut reg = sent(&a)[0].clone();
    assert!(matches!(reg.payload, Payload::Register { .. }));
    let _ = core.on_bytes(&fixture("06-setup-master-Response.bin"), t0, &mib);
    let answer = |reg: &Pdu, error: ResError| {
        encode(&Pdu::new(
            5,
            reg.transaction_id,
            reg.packet_id,
            Payload::Response {
                sys_uptime: 0,
                error,
                index: 0,
                varbinds: vec![],
            },
        ))
    };
    let duplicate = ResError::Agentx(AgentxError::DuplicateRegistration);
    let registers = |a: &[Action]| -> Vec<Pdu> {
        sent(a)
            .into_iter()
            .filter(|p| matches!(p.payload, Payload::Register { .. }))
            .collect()
    };
    let mut now = t0;
    for delay_ms in [200u64, 400, 800, 1600] {
        assert!(
            core.on_bytes(&answer(&reg, duplicate), now, &mib)
                .is_empty()
        );
        assert!(!core.is_registered());
        let due = now + Duration::from_millis(delay_ms);
        assert_eq!(core.next_deadline(), Some(due));
        // An early wake-up does nothing...
        assert!(registers(&core.on_timeout(due - Duration::from_millis(1))).is_empty());
        // ...then the Register goes out again.
        let again = registers(&core.on_timeout(due));
        assert_eq!(again.len(), 1, "one Register after {delay_ms} ms");
        reg = again[0].clone();
        now = due;
    }
    assert!(
        core.on_bytes(&answer(&reg, ResError::NO_ERROR), now, &mib)
            .is_empty()
    );
    assert!(core.is_registered());
    assert_eq!(core.stats().duplicate_registrations, 4);
}

#[test]
fn unanswered_ping_ends_the_connection() {
    let (mib, mut core, t0) = opened();
    // The next Ping is due one interval after the first.
    let t1 = t0 + Duration::from_secs(15);
    assert_eq!(core.next_deadline(), Some(t1));
    let p = sent(&core.on_timeout(t1));
    assert_eq!(p.len(), 1);
    assert_eq!(p[0].payload, Payload::Ping);
    // Unanswered: nothing happens up to the request timeout...
    assert_eq!(core.next_deadline(), Some(t1 + REQUEST_TIMEOUT));
    assert!(core.on_timeout(t1 + REQUEST_TIMEOUT).is_empty());
    // ...and the connection is over right after it.
    let a = core.on_timeout(t1 + REQUEST_TIMEOUT + Duration::from_millis(1));
    assert_eq!(
        lost(&a),
        Some(Lost::NoAnswer {
            to: Outstanding::Ping,
            after: REQUEST_TIMEOUT
        })
    );
    // Nothing more comes out of a lost connection until the next one.
    assert_eq!(core.next_deadline(), None);
    assert!(
        core.on_bytes(&encode(&get(5, 9, None)), t1, &mib)
            .is_empty()
    );
    core.on_disconnected(&mib);
    assert_eq!(mib.calls(), vec!["closed 5"]);
    assert!(!core.is_open());
}

/// Regression: a header announcing a payload past the maximum used to be
/// answered parseError while the framer kept skipping the announced bytes,
/// so the session heard nothing more until its own Ping timed out.
#[test]
fn oversized_pdu_ends_the_connection_at_once() {
    let (mib, mut core, t0) = opened();
    let mut b = encode(&get(5, 40, None));
    b[16..20].copy_from_slice(&0xffff_fff0u32.to_be_bytes());
    let a = core.on_bytes(&b, t0, &mib);
    let s = sent(&a);
    assert_eq!(s.len(), 2, "{a:?}");
    assert_eq!(s[0].packet_id, 40);
    assert_eq!(response(&s[0]).0, ResError::Agentx(AgentxError::ParseError));
    assert_eq!(
        s[1].payload,
        Payload::Close {
            reason: CloseReason::ParseError
        }
    );
    assert!(matches!(lost(&a), Some(Lost::Oversized { .. })));
    // The next connection starts clean: Open again, requests served.
    core.on_disconnected(&mib);
    let a = core.on_connected(t0);
    assert_eq!(a, vec![Action::Send(fixture("01-setup-subagent-Open.bin"))]);
    let _ = core.on_bytes(&fixture("02-setup-master-Response.bin"), t0, &mib);
    let r = request(&mut core, &mib, get(5, 41, None), t0).unwrap();
    assert_eq!(response(&r).0, ResError::NO_ERROR);
}

#[test]
fn close_from_the_master_ends_the_session() {
    let (mib, mut core, t0) = opened();
    let close = Pdu::new(
        5,
        0,
        77,
        Payload::Close {
            reason: CloseReason::ByManager,
        },
    );
    let a = core.on_bytes(&encode(&close), t0, &mib);
    assert_eq!(
        a,
        vec![Action::Lost(Lost::ClosedByMaster(CloseReason::ByManager))]
    );
    core.on_disconnected(&mib);
    assert_eq!(mib.calls(), vec!["closed 5"]);
    // Our own Close on shutdown: only while a session is open.
    assert_eq!(core.close(CloseReason::Shutdown), None);
    let mut core = open_core(&mib, t0);
    let c = pdu::decode(&core.close(CloseReason::Shutdown).unwrap()).unwrap();
    assert_eq!(
        (c.session_id, c.payload),
        (
            5,
            Payload::Close {
                reason: CloseReason::Shutdown
            }
        )
    );
}

/// Regression: requests naming another session were served as if open.
#[test]
fn wrong_session_id_gets_not_open() {
    let (mib, mut core, t0) = opened();
    let r = request(&mut core, &mib, get(6, 10, None), t0).unwrap();
    assert_eq!((r.session_id, r.packet_id), (6, 10));
    assert_eq!(response(&r).0, ResError::Agentx(AgentxError::NotOpen));
    let r = request(&mut core, &mib, test_set(6, 11, 11), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Agentx(AgentxError::NotOpen));
    assert!(mib.calls().is_empty(), "{:?}", mib.calls());
    // The open session is served.
    let r = request(&mut core, &mib, get(5, 12, None), t0).unwrap();
    assert_eq!(response(&r).0, ResError::NO_ERROR);
    assert_eq!(core.stats().refused, 2);
}

/// Regression: a non-default context was answered from the default one.
#[test]
fn non_default_context_gets_unsupported_context() {
    let (mib, mut core, t0) = opened();
    let r = request(&mut core, &mib, get(5, 10, Some(b"vlan1".to_vec())), t0).unwrap();
    assert_eq!(
        response(&r).0,
        ResError::Agentx(AgentxError::UnsupportedContext)
    );
    let mut ts = test_set(5, 11, 11);
    ts.context = Some(b"vlan1".to_vec());
    let r = request(&mut core, &mib, ts, t0).unwrap();
    assert_eq!(
        response(&r).0,
        ResError::Agentx(AgentxError::UnsupportedContext)
    );
    assert!(mib.calls().is_empty());
}

/// Regression: CommitSet and UndoSet ran the handler for transactions that
/// never had a TestSet.
#[test]
fn commit_and_undo_without_test_set_are_refused() {
    let (mib, mut core, t0) = opened();
    let r = request(&mut core, &mib, Pdu::new(5, 20, 1, Payload::CommitSet), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Snmp(ErrorStatus::CommitFailed));
    let r = request(&mut core, &mib, Pdu::new(5, 21, 2, Payload::UndoSet), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Snmp(ErrorStatus::UndoFailed));
    assert!(request(&mut core, &mib, Pdu::new(5, 22, 3, Payload::CleanupSet), t0).is_none());
    assert!(mib.calls().is_empty(), "{:?}", mib.calls());
}

/// Regression: a second CommitSet of one transaction (a new packet ID, so
/// not a resend) applied the writes again.
#[test]
fn second_commit_set_does_not_apply_twice() {
    let (mib, mut core, t0) = opened();
    let r = request(&mut core, &mib, test_set(5, 30, 1), t0).unwrap();
    assert_eq!(response(&r).0, ResError::NO_ERROR);
    for pid in [2, 3] {
        let r = request(
            &mut core,
            &mib,
            Pdu::new(5, 30, pid, Payload::CommitSet),
            t0,
        )
        .unwrap();
        assert_eq!(response(&r).0, ResError::NO_ERROR);
    }
    for pid in [4, 5] {
        let r = request(&mut core, &mib, Pdu::new(5, 30, pid, Payload::UndoSet), t0).unwrap();
        assert_eq!(response(&r).0, ResError::NO_ERROR);
    }
    // Undone: no commit any more.
    let r = request(&mut core, &mib, Pdu::new(5, 30, 6, Payload::CommitSet), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Snmp(ErrorStatus::CommitFailed));
    assert!(request(&mut core, &mib, Pdu::new(5, 30, 7, Payload::CleanupSet), t0).is_none());
    assert_eq!(
        mib.calls(),
        vec!["test 5 30", "commit 5 30", "undo 5 30", "cleanup 5 30"]
    );
}

/// Regression: a TestSet's reservation outlived its session, and the next
/// session (after a reconnect) could commit it.
#[test]
fn set_plans_end_with_their_session() {
    let (mib, mut core, t0) = opened();
    let _ = request(&mut core, &mib, test_set(5, 40, 1), t0).unwrap();
    // The connection is lost between TestSet and CommitSet.
    core.on_disconnected(&mib);
    assert_eq!(mib.calls(), vec!["test 5 40", "cleanup 5 40", "closed 5"]);
    // The next connection gets session 6 from the master.
    let _ = core.on_connected(t0);
    let mut open = pdu::decode(&fixture("02-setup-master-Response.bin")).unwrap();
    open.session_id = 6;
    let _ = core.on_bytes(&encode(&open), t0, &mib);
    assert_eq!(core.session_id(), Some(6));
    // Neither the old session's IDs nor the new session's reach commit_set.
    let r = request(&mut core, &mib, Pdu::new(5, 40, 2, Payload::CommitSet), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Agentx(AgentxError::NotOpen));
    let r = request(&mut core, &mib, Pdu::new(6, 40, 3, Payload::CommitSet), t0).unwrap();
    assert_eq!(response(&r).0, ResError::Snmp(ErrorStatus::CommitFailed));
    assert_eq!(mib.count("commit"), 0);
}

/// A master that never sends CleanupSet holds at most MAX_TRANSACTIONS.
#[test]
fn transactions_without_cleanup_are_bounded() {
    let (mib, mut core, t0) = opened();
    let n = MAX_TRANSACTIONS as u32 + 36;
    for tid in 1..=n {
        let r = request(&mut core, &mib, test_set(5, tid, tid), t0).unwrap();
        assert_eq!(response(&r).0, ResError::NO_ERROR);
    }
    assert_eq!(mib.count("cleanup"), 36);
    assert!(mib.calls().contains(&"cleanup 5 1".to_string()));
    // The oldest ones are gone, the newest can still commit.
    let r = request(
        &mut core,
        &mib,
        Pdu::new(5, 1, n + 1, Payload::CommitSet),
        t0,
    )
    .unwrap();
    assert_eq!(response(&r).0, ResError::Snmp(ErrorStatus::CommitFailed));
    let r = request(
        &mut core,
        &mib,
        Pdu::new(5, n, n + 2, Payload::CommitSet),
        t0,
    )
    .unwrap();
    assert_eq!(response(&r).0, ResError::NO_ERROR);
    core.on_disconnected(&mib);
    assert_eq!(mib.count("cleanup"), 36 + MAX_TRANSACTIONS);
}

/// Every OID has a successor: an endless MIB.
struct Endless;
impl MibHandler for Endless {
    fn get(&self, _: &Oid) -> Value {
        Value::Integer(0)
    }
    fn get_next(&self, start: &Oid, _: bool, _: Option<&Oid>) -> Option<VarBind> {
        let mut s = start.as_slice().to_vec();
        s.truncate(20);
        s.push(1);
        Some(VarBind::new(Oid::new(&s), Value::OctetString(vec![7; 8])))
    }
}

/// A core past its Open and Register (the master's Response from snmpd's
/// own bytes), and the time it got there.
fn registered_core(mib: &dyn MibHandler) -> (AgentxCore, Instant) {
    let t0 = Instant::now();
    let mut core = AgentxCore::new(cfg());
    let _ = core.on_connected(t0);
    let _ = core.on_bytes(&fixture("02-setup-master-Response.bin"), t0, mib);
    (core, t0)
}

/// `n` copies of a range from 1.3.6.1.3.117 to the end: a rogue master's
/// request.
fn rogue_ranges(n: usize) -> Vec<SearchRange> {
    let range = SearchRange {
        start: oid("1.3.6.1.3.117"),
        include: false,
        end: Oid::default(),
    };
    vec![range; n]
}

/// The size of a GetBulk (packet `packet_id`) over `ranges`, and the one
/// answer of a core past its Register to it, from an endless MIB.
fn bulk_answer(
    packet_id: u32,
    non_repeaters: u16,
    max_repetitions: u16,
    ranges: Vec<SearchRange>,
) -> (usize, Pdu) {
    let mib = Endless;
    let (mut core, t0) = registered_core(&mib);
    let bulk = Payload::GetBulk {
        non_repeaters,
        max_repetitions,
        ranges,
    };
    let req = encode(&Pdu::new(5, 9, packet_id, bulk));
    let mut r = sent(&core.on_bytes(&req, t0, &mib));
    assert_eq!(r.len(), 1);
    (req.len(), r.remove(0))
}

/// Regression: a 24 KB GetBulk from a rogue master built millions of
/// varbinds; the response is bounded by count and encoded size.
#[test]
fn get_bulk_response_is_bounded() {
    let (asked, r) = bulk_answer(9, 2, u16::MAX, rogue_ranges(1000));
    assert!(asked < 32 * 1024);
    let (err, _, vbs) = response(&r);
    assert_eq!(err, ResError::NO_ERROR);
    assert!(
        vbs.len() <= MAX_BULK_VARBINDS && vbs.len() > 998,
        "{}",
        vbs.len()
    );
    let octets: usize = vbs.iter().map(pdu::varbind_len).sum();
    assert!(octets <= MAX_RESPONSE_OCTETS, "{octets}");
    // What fits: the non-repeaters, then repetitions in order.
    assert_eq!(vbs[0].name, oid("1.3.6.1.3.117.1"));
    assert_eq!(vbs[2].name, oid("1.3.6.1.3.117.1"));
    // Smaller bounds follow the same rule: `mib::bulk`'s tests.
}

/// A rogue master's GetBulk with 5,000 non-repeaters, and a GetNext with
/// as many ranges: each answer fits the bound (the GetBulk with what fits,
/// the GetNext with tooBig and no varbinds).
#[test]
fn every_response_fits_the_octet_bound() {
    let (_, r) = bulk_answer(10, 5000, 10, rogue_ranges(5000));
    let octets = encode(&r).len();
    assert!(octets <= MAX_RESPONSE_OCTETS + 64, "{octets} octets");
    let (err, _, vbs) = response(&r);
    assert_eq!(err, ResError::NO_ERROR);
    assert!(!vbs.is_empty() && vbs.len() < 5000, "{}", vbs.len());
    let mib = Endless;
    let (mut core, t0) = registered_core(&mib);
    let next = Payload::GetNext {
        ranges: rogue_ranges(5000),
    };
    let r = sent(&core.on_bytes(&encode(&Pdu::new(5, 9, 11, next)), t0, &mib));
    assert_eq!(r.len(), 1);
    let (err, index, vbs) = response(&r[0]);
    assert_eq!(err, ResError::Snmp(ErrorStatus::TooBig));
    assert_eq!((index, vbs.len()), (0, 0));
}

#[test]
fn backoff_doubles_to_cap() {
    let mut b = Backoff::new(Duration::from_millis(200), Duration::from_secs(1));
    let d: Vec<_> = (0..5).map(|_| b.next_delay().as_millis()).collect();
    assert_eq!(d, vec![200, 400, 800, 1000, 1000]);
    b.reset();
    assert_eq!(b.next_delay().as_millis(), 200);
}

struct Table(Vec<VarBind>);
impl MibHandler for Table {
    fn get(&self, oid: &Oid) -> Value {
        self.0
            .iter()
            .find(|v| v.name == *oid)
            .map(|v| v.value.clone())
            .unwrap_or(Value::NoSuchObject)
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.0
            .iter()
            .find(|v| {
                (v.name > *start || (include && v.name == *start))
                    && end.is_none_or(|e| v.name < *e)
            })
            .cloned()
    }
}

#[test]
fn get_bulk_per_rfc() {
    let t = Table(
        (1..=3)
            .map(|i| {
                VarBind::new(
                    Oid::new(&[1, 3, 6, 1, 3, 117, 1, i]),
                    Value::Integer(i as i32),
                )
            })
            .collect(),
    );
    let r = |s: &[u32]| SearchRange {
        start: Oid::new(s),
        include: false,
        end: Oid::new(&[1, 3, 6, 1, 3, 118]),
    };
    // one non-repeater, one repeater, 5 repetitions: 1 + 3 values + 1 end.
    let out = get_bulk(
        &t,
        1,
        5,
        &[r(&[1, 3, 6, 1, 3, 117, 1, 2]), r(&[1, 3, 6, 1, 3, 117])],
    );
    let names: Vec<String> = out
        .iter()
        .map(|v| format!("{}={:?}", v.name, v.value))
        .collect();
    assert_eq!(
        names,
        vec![
            "1.3.6.1.3.117.1.3=Integer(3)",
            "1.3.6.1.3.117.1.1=Integer(1)",
            "1.3.6.1.3.117.1.2=Integer(2)",
            "1.3.6.1.3.117.1.3=Integer(3)",
            "1.3.6.1.3.117.1.3=EndOfMibView",
        ]
    );
    // max_repetitions 0: only non-repeaters.
    assert_eq!(get_bulk(&t, 1, 0, &[r(&[1]), r(&[1])]).len(), 1);
    // non_repeaters larger than the list.
    assert_eq!(get_bulk(&t, 9, 3, &[r(&[1])]).len(), 1);
}

/// The resend cache: a resend of any of the last answers is answered from
/// it, also behind newer requests; requests numbered below earlier ones
/// (a master that numbers otherwise) are new requests, executed.
#[test]
fn resends_are_answered_from_the_cache_whatever_the_numbering() {
    let (mib, mut core, t0) = opened();
    let sid = core.session_id().unwrap();
    let mut answers = Vec::new();
    for pid in [100, 101, 102, 50, 7, 103] {
        let a = request(&mut core, &mib, test_set(sid, pid, pid), t0).expect("an answer");
        assert_eq!(a.packet_id, pid);
        answers.push(a);
    }
    assert_eq!(mib.count("test "), 6, "each new request executed once");
    assert_eq!(core.stats().resends_answered, 0);
    for (i, pid) in [102u32, 7, 100].into_iter().enumerate() {
        let a = request(&mut core, &mib, test_set(sid, pid, pid), t0).expect("an answer");
        let first = answers.iter().find(|p| p.packet_id == pid).unwrap();
        assert_eq!(&a, first);
        assert_eq!(core.stats().resends_answered, i as u64 + 1);
    }
    assert_eq!(mib.count("test "), 6, "resends are not executed");
    // The cache's buffers are reused once it is full: still the answers.
    for pid in 200..200 + 2 * RESPONSE_CACHE as u32 {
        request(&mut core, &mib, get(sid, pid, None), t0).expect("an answer");
    }
    let last = 200 + 2 * RESPONSE_CACHE as u32 - 1;
    let again = request(&mut core, &mib, get(sid, last, None), t0).unwrap();
    assert_eq!(again.packet_id, last);
    assert_eq!(core.stats().resends_answered, 4);
}

/// A master's 100,000 abandoned TestSets make about a hundred log lines,
/// each with the count so far, not 100,000.
#[test]
fn repeated_misbehaviour_is_logged_with_a_count() {
    let mut r = PeerRepeats::default().abandoned;
    let logged: Vec<u64> = (0..100_000)
        .filter_map(|_| r.count())
        .map(|d| d.total)
        .collect();
    assert_eq!(&logged[..4], &[1, 2, 4, 8]);
    assert_eq!(logged.len(), 11 + 100_000 / 1024 - 1);
    assert!(logged.windows(2).all(|w| w[0] < w[1]));
    assert_eq!(*logged.last().unwrap(), 100_000 / 1024 * 1024);
}
