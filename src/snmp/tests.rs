//! Requests built with rasn-snmp, answers decoded with it and checked against
//! a BTreeMap MIB walked independently of the responder.

use std::collections::BTreeMap;
use std::sync::Mutex;

use rasn::types::ObjectIdentifier;
use rasn_snmp::v2::{self, BulkPdu, Pdu, Pdus, VarBindValue};
use rasn_snmp::v2c::Message;

use super::codec::{from_wire_oid, from_wire_value, to_wire_value};
use super::*;
use crate::mib::fixed::Fixed;
use crate::mib::{ErrorStatus, MibHandler, Oid, SetError, SetTxn, Value, VarBind};

#[derive(Default)]
struct MapMib {
    objects: Fixed,
    /// Each SET phase as it is called: ("test", varbinds) etc.
    calls: Mutex<Vec<(String, Vec<VarBind>)>>,
    fail_test: Option<SetError>,
    fail_commit: Option<SetError>,
}

impl MibHandler for MapMib {
    fn get(&self, oid: &Oid) -> Value {
        self.objects.value(oid)
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        assert!(!include, "the responder never asks for include");
        assert!(end.is_none(), "the responder never bounds the range");
        self.objects.next(start, include, end)
    }
    fn test_set(&self, _txn: SetTxn, varbinds: &[VarBind]) -> Result<(), SetError> {
        self.log("test", varbinds.to_vec());
        match self.fail_test {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn commit_set(&self, _txn: SetTxn) -> Result<(), SetError> {
        self.log("commit", vec![]);
        match self.fail_commit {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
    fn undo_set(&self, _txn: SetTxn) -> Result<(), SetError> {
        self.log("undo", vec![]);
        Ok(())
    }
    fn cleanup_set(&self, _txn: SetTxn) {
        self.log("cleanup", vec![]);
    }
}

impl MapMib {
    fn log(&self, what: &str, vbs: Vec<VarBind>) {
        self.calls.lock().unwrap().push((what.into(), vbs));
    }
    fn phases(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|c| c.0.clone())
            .collect()
    }
}

const BASE: [u32; 7] = [1, 3, 6, 1, 4, 1, 99999];

fn oid(tail: &[u32]) -> Oid {
    Oid::new(&BASE).child(tail)
}

/// Two columns of ten rows plus a few scalars of every type.
fn mib() -> MapMib {
    let mut objects = BTreeMap::new();
    for row in 1..=10u32 {
        objects.insert(
            oid(&[2, 1, row]),
            Value::Counter64(u64::MAX - u64::from(row)),
        );
        objects.insert(oid(&[2, 2, row]), Value::Gauge32(row * 1000));
    }
    objects.insert(oid(&[1, 1]), Value::Integer(-42));
    objects.insert(oid(&[1, 2]), Value::OctetString(vec![0, 0xff, 0x80]));
    objects.insert(oid(&[1, 3]), Value::Counter32(7));
    objects.insert(oid(&[3, 4294967295, 7]), Value::TimeTicks(99));
    MapMib {
        objects: objects.into(),
        ..Default::default()
    }
}

fn wire(o: &Oid) -> ObjectIdentifier {
    ObjectIdentifier::new(o.0.clone()).unwrap()
}

fn null_vbs(names: &[Oid]) -> Vec<v2::VarBind> {
    names
        .iter()
        .map(|n| v2::VarBind {
            name: wire(n),
            value: VarBindValue::Unspecified,
        })
        .collect()
}

fn pdu(request_id: i32, vbs: Vec<v2::VarBind>) -> Pdu {
    Pdu {
        request_id,
        error_status: 0,
        error_index: 0,
        variable_bindings: vbs,
    }
}

fn message(version: i64, community: &str, data: Pdus) -> Vec<u8> {
    rasn::ber::encode(&Message {
        version: version.into(),
        community: community.as_bytes().to_vec().into(),
        data,
    })
    .unwrap()
}

/// The decoded Response: (version, request-id, status, index, varbinds).
fn response(bytes: &[u8]) -> (i64, i32, u32, u32, Vec<VarBind>) {
    let m: Message<Pdus> = rasn::ber::decode(bytes).unwrap();
    let Pdus::Response(v2::Response(p)) = m.data else {
        panic!("not a Response: {:?}", m.data)
    };
    let vbs = p
        .variable_bindings
        .iter()
        .map(|v| VarBind::new(from_wire_oid(&v.name), from_wire_value(&v.value).unwrap()))
        .collect();
    (
        i64::try_from(&m.version).unwrap(),
        p.request_id,
        p.error_status,
        p.error_index,
        vbs,
    )
}

fn cfg() -> ResponderConfig {
    ResponderConfig::new("public")
}

fn ask(bytes: &[u8], m: &MapMib) -> (i64, i32, u32, u32, Vec<VarBind>) {
    response(&reply(bytes, &cfg(), m))
}

/// The reply to `bytes` under `c`.
fn reply(bytes: &[u8], c: &ResponderConfig, m: &dyn MibHandler) -> Vec<u8> {
    match process(bytes, c, m) {
        Outcome::Reply(r) => r,
        o => panic!("no reply: {o:?}"),
    }
}

/// Independent reference: the n objects after `start`, in map order.
fn after(m: &MapMib, start: &Oid, n: usize) -> Vec<VarBind> {
    m.objects
        .iter()
        .filter(|(k, _)| *k > start)
        .take(n)
        .map(|(k, v)| VarBind::new(k.clone(), v.clone()))
        .collect()
}

#[test]
fn get_answers_values_and_exceptions_and_echoes_request_id() {
    let m = mib();
    let names = [
        oid(&[1, 2]),
        oid(&[2, 1, 3]),
        oid(&[9]),
        oid(&[3, 4294967295, 7]),
    ];
    let req = message(
        1,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(-77, null_vbs(&names)))),
    );
    let (ver, rid, st, idx, vbs) = ask(&req, &m);
    assert_eq!((ver, rid, st, idx), (1, -77, 0, 0));
    let want: Vec<VarBind> = names
        .iter()
        .map(|n| VarBind::new(n.clone(), m.get(n)))
        .collect();
    assert_eq!(vbs, want);
    assert_eq!(vbs[2].value, Value::NoSuchObject);
    // the same answer through the simple entry point
    assert_eq!(
        handle_packet(&req, "public", &m).map(|r| response(&r).4),
        Some(want)
    );
}

#[test]
fn get_next_walks_in_numeric_order_to_end_of_mib_view() {
    let m = mib();
    let mut cur = Oid::new(&[1, 3]);
    let mut walked = Vec::new();
    for rid in 0..100 {
        let req = message(
            1,
            "public",
            Pdus::GetNextRequest(v2::GetNextRequest(pdu(rid, null_vbs(&[cur.clone()])))),
        );
        let (_, r, st, _, vbs) = ask(&req, &m);
        assert_eq!((r, st, vbs.len()), (rid, 0, 1));
        let vb = vbs.into_iter().next().unwrap();
        if vb.value == Value::EndOfMibView {
            assert_eq!(vb.name, cur, "endOfMibView carries the requested name");
            break;
        }
        cur = vb.name.clone();
        walked.push(vb);
    }
    let all: Vec<VarBind> = m
        .objects
        .iter()
        .map(|(k, v)| VarBind::new(k.clone(), v.clone()))
        .collect();
    assert_eq!(walked, all);
}

fn bulk(rid: i32, non_rep: u32, max_rep: u32, names: &[Oid]) -> Vec<u8> {
    message(
        1,
        "public",
        Pdus::GetBulkRequest(v2::GetBulkRequest(BulkPdu {
            request_id: rid,
            non_repeaters: non_rep,
            max_repetitions: max_rep,
            variable_bindings: null_vbs(names),
        })),
    )
}

#[test]
fn get_bulk_interleaves_repetitions_per_rfc3416() {
    let m = mib();
    let scalar = oid(&[1, 1]);
    let (c1, c2) = (oid(&[2, 1]), oid(&[2, 2]));
    let (_, rid, st, idx, vbs) = ask(
        &bulk(5, 1, 4, &[scalar.clone(), c1.clone(), c2.clone()]),
        &m,
    );
    assert_eq!((rid, st, idx), (5, 0, 0));
    let mut want = after(&m, &scalar, 1);
    let (a, b) = (after(&m, &c1, 4), after(&m, &c2, 4));
    for r in 0..4 {
        want.push(a[r].clone());
        want.push(b[r].clone());
    }
    assert_eq!(vbs, want);
}

#[test]
fn get_bulk_past_the_end_gives_end_of_mib_view_and_stops() {
    let m = mib();
    let last_but_one = oid(&[2, 2, 10]);
    // non-repeaters larger than the list: all are non-repeaters (N = min(N, L)).
    let (_, _, st, _, vbs) = ask(&bulk(1, 9, 50, std::slice::from_ref(&last_but_one)), &m);
    assert_eq!(st, 0);
    assert_eq!(vbs, after(&m, &last_but_one, 1));

    let (_, _, st, _, vbs) = ask(&bulk(2, 0, 50, std::slice::from_ref(&last_but_one)), &m);
    assert_eq!(st, 0);
    let last = after(&m, &last_but_one, 1).pop().unwrap();
    assert_eq!(
        vbs,
        vec![
            last.clone(),
            VarBind::new(last.name.clone(), Value::EndOfMibView)
        ]
    );

    // one column ends before the other: it keeps answering endOfMibView with
    // its last name until every column has ended.
    let late = oid(&[2, 2, 9]);
    let early = oid(&[3, 4294967295, 7]);
    let (_, _, _, _, vbs) = ask(&bulk(3, 0, 50, &[late.clone(), early.clone()]), &m);
    let end = |o: &Oid| VarBind::new(o.clone(), Value::EndOfMibView);
    let n = after(&m, &late, 2);
    assert_eq!(
        vbs,
        vec![
            n[0].clone(),
            end(&early),
            n[1].clone(),
            end(&early),
            end(&n[1].name),
            end(&early)
        ]
    );

    // max-repetitions 0: only the non-repeaters
    let (_, _, st, _, vbs) = ask(&bulk(4, 1, 0, &[oid(&[1]), oid(&[2])]), &m);
    assert_eq!((st, vbs), (0, after(&m, &oid(&[1]), 1)));
}

#[test]
fn get_bulk_is_truncated_to_the_size_limit_and_too_big_only_for_non_repeaters() {
    let mut m = mib();
    for i in 0..2000u32 {
        m.objects
            .insert(oid(&[5, i]), Value::OctetString(vec![b'x'; 100]));
    }
    let start = oid(&[5]);
    let full = reply(&bulk(9, 0, 1000, std::slice::from_ref(&start)), &cfg(), &m);
    assert!(full.len() <= MAX_UDP_PAYLOAD, "{}", full.len());
    let (_, _, st, _, vbs) = response(&full);
    assert_eq!(st, 0);
    assert!(vbs.len() > 400 && vbs.len() < 1000, "{}", vbs.len());
    assert_eq!(vbs, after(&m, &start, vbs.len()));
    // one more varbind would not have fitted
    let next_vb = after(&m, &start, vbs.len() + 1).pop().unwrap();
    let extra = rasn::ber::encode(&v2::VarBind {
        name: wire(&next_vb.name),
        value: to_wire_value(&next_vb.value).unwrap(),
    })
    .unwrap()
    .len();
    assert!(full.len() + extra > MAX_UDP_PAYLOAD);

    // a smaller configured limit
    for limit in [484usize, 1000, 1500] {
        let c = cfg().with_max_message_size(limit);
        let r = reply(&bulk(9, 1, 1000, &[oid(&[1, 1]), start.clone()]), &c, &m);
        assert!(
            r.len() <= limit && r.len() > limit - 130,
            "{limit}: {}",
            r.len()
        );
        let (_, _, st, _, vbs) = response(&r);
        assert_eq!(st, 0);
        assert_eq!(vbs[0], after(&m, &oid(&[1, 1]), 1)[0]);
        assert_eq!(vbs[1..], after(&m, &start, vbs.len() - 1)[..]);
    }

    // non-repeaters alone do not fit: tooBig with no varbinds
    let c = cfg().with_max_message_size(484);
    let names: Vec<Oid> = (0..10).map(|i| oid(&[5, i])).collect();
    let (_, rid, st, idx, vbs) = response(&reply(&bulk(11, 10, 5, &names), &c, &m));
    assert_eq!(
        (rid, st, idx, vbs.len()),
        (11, ErrorStatus::TooBig as u32, 0, 0)
    );
}

#[test]
fn get_too_big_is_reported_with_empty_varbinds() {
    let mut m = mib();
    m.objects
        .insert(oid(&[6]), Value::OctetString(vec![1; 400]));
    let c = cfg().with_max_message_size(484);
    let req = message(
        1,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(3, null_vbs(&[oid(&[6]), oid(&[6])])))),
    );
    let (_, rid, st, idx, vbs) = response(&reply(&req, &c, &m));
    assert_eq!(
        (rid, st, idx, vbs.len()),
        (3, ErrorStatus::TooBig as u32, 0, 0)
    );
}

#[test]
fn wrong_community_is_dropped() {
    let m = mib();
    let req = message(
        1,
        "private",
        Pdus::GetRequest(v2::GetRequest(pdu(1, null_vbs(&[oid(&[1, 1])])))),
    );
    assert_eq!(process(&req, &cfg(), &m), Outcome::BadCommunity);
    assert_eq!(handle_packet(&req, "public", &m), None);
    assert!(handle_packet(&req, "private", &m).is_some());
}

#[test]
fn garbage_and_non_requests_are_dropped() {
    let m = mib();
    for g in [
        &b""[..],
        b"\x30",
        b"\x30\x03\x02\x01\x01",
        b"\x30\x84\xff\xff\xff\xff",
        b"hello world",
        &[0u8; 64],
    ] {
        assert!(
            matches!(process(g, &cfg(), &m), Outcome::Malformed(_)),
            "{g:?}"
        );
    }
    // deep nesting, indefinite lengths, a datagram of maximum size
    let nested: Vec<u8> = [0x30u8, 0x80]
        .iter()
        .copied()
        .cycle()
        .take(MAX_UDP_PAYLOAD)
        .collect();
    let mut prefixed = message(
        1,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(1, vec![]))),
    );
    prefixed.truncate(prefixed.len() - 2);
    prefixed.extend_from_slice(&[0x30, 0x80]);
    prefixed.extend_from_slice(&nested[..60_000]);
    let mut x: u32 = 12345;
    let noise: Vec<u8> = (0..MAX_UDP_PAYLOAD)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12345);
            (x >> 16) as u8
        })
        .collect();
    for g in [&nested[..], &prefixed[..], &noise[..]] {
        assert!(!matches!(process(g, &cfg(), &m), Outcome::Reply(_)));
    }
    let resp = message(1, "public", Pdus::Response(v2::Response(pdu(1, vec![]))));
    assert_eq!(
        process(&resp, &cfg(), &m),
        Outcome::Ignored("not a request PDU")
    );
    let v3ish = message(
        3,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(1, vec![]))),
    );
    assert!(matches!(process(&v3ish, &cfg(), &m), Outcome::Ignored(_)));
}

/// Deterministic mutation fuzzing of valid requests: never a panic, and every
/// answer is a decodable Response within the size limit.
#[test]
fn mutated_requests_never_panic() {
    let m = mib();
    let seeds = [
        bulk(7, 1, 20, &[oid(&[1]), oid(&[2, 1]), oid(&[2, 2])]),
        message(
            1,
            "public",
            Pdus::GetRequest(v2::GetRequest(pdu(1, null_vbs(&[oid(&[1, 2])])))),
        ),
        message(
            0,
            "public",
            Pdus::GetNextRequest(v2::GetNextRequest(pdu(1, null_vbs(&[oid(&[2])])))),
        ),
        message(
            1,
            "rw",
            Pdus::SetRequest(v2::SetRequest(pdu(
                2,
                vec![v2::VarBind {
                    name: wire(&oid(&[1, 1])),
                    value: to_wire_value(&Value::Integer(5)).unwrap(),
                }],
            ))),
        ),
    ];
    let c = cfg().with_write_community("rw");
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut rnd = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut replies = 0;
    for i in 0..40_000 {
        let mut p = seeds[i % seeds.len()].clone();
        for _ in 0..(1 + rnd() % 4) {
            let pos = (rnd() as usize) % p.len();
            match rnd() % 4 {
                0 => p[pos] = rnd() as u8,
                1 => p[pos] ^= 1 << (rnd() % 8),
                2 => {
                    p.truncate(pos);
                    if p.is_empty() {
                        p.push(0x30);
                    }
                }
                _ => p.insert(pos, rnd() as u8),
            }
        }
        if let Outcome::Reply(r) = process(&p, &c, &m) {
            replies += 1;
            assert!(r.len() <= MAX_UDP_PAYLOAD);
            let d: Message<Pdus> = rasn::ber::decode(&r).expect("our reply decodes");
            assert!(matches!(d.data, Pdus::Response(_)));
        }
    }
    assert!(
        replies > 100,
        "mutations too destructive to test much: {replies}"
    );
}

#[test]
fn v1_hides_counter64_and_reports_no_such_name() {
    let m = mib();
    // Get of a Counter64 column: noSuchName at index 2, request varbinds echoed.
    let names = [oid(&[1, 1]), oid(&[2, 1, 1])];
    let req = message(
        0,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(4, null_vbs(&names)))),
    );
    let (ver, rid, st, idx, vbs) = ask(&req, &m);
    assert_eq!(
        (ver, rid, st, idx),
        (0, 4, ErrorStatus::NoSuchName as u32, 2)
    );
    assert_eq!(
        vbs,
        names
            .iter()
            .map(|n| VarBind::new(n.clone(), Value::Null))
            .collect::<Vec<_>>()
    );

    // GetNext passes over the Counter64 column
    let req = message(
        0,
        "public",
        Pdus::GetNextRequest(v2::GetNextRequest(pdu(5, null_vbs(&[oid(&[1, 3])])))),
    );
    let (_, _, st, _, vbs) = ask(&req, &m);
    assert_eq!(st, 0);
    assert_eq!(
        vbs,
        vec![VarBind::new(oid(&[2, 2, 1]), Value::Gauge32(1000))]
    );

    // end of the MIB
    let req = message(
        0,
        "public",
        Pdus::GetNextRequest(v2::GetNextRequest(pdu(6, null_vbs(&[oid(&[4])])))),
    );
    let (_, _, st, idx, _) = ask(&req, &m);
    assert_eq!((st, idx), (ErrorStatus::NoSuchName as u32, 1));

    // GetBulk is not SNMPv1
    let mut b = bulk(7, 0, 5, &[oid(&[1])]);
    b[4] = 0; // version octet: 02 01 01 -> 02 01 00
    assert!(matches!(process(&b, &cfg(), &m), Outcome::Ignored(_)));
}

fn set_req(version: i64, community: &str, vbs: &[(Oid, Value)]) -> Vec<u8> {
    let vbs = vbs
        .iter()
        .map(|(n, v)| v2::VarBind {
            name: wire(n),
            value: to_wire_value(v).unwrap(),
        })
        .collect();
    message(
        version,
        community,
        Pdus::SetRequest(v2::SetRequest(pdu(31, vbs))),
    )
}

#[test]
fn set_without_write_community_is_no_access() {
    let m = mib();
    let req = set_req(1, "public", &[(oid(&[1, 1]), Value::Integer(1))]);
    let (_, rid, st, idx, vbs) = ask(&req, &m);
    assert_eq!((rid, st, idx), (31, ErrorStatus::NoAccess as u32, 1));
    assert_eq!(vbs, vec![VarBind::new(oid(&[1, 1]), Value::Integer(1))]);
    assert!(m.phases().is_empty());
    let req = set_req(0, "public", &[(oid(&[1, 1]), Value::Integer(1))]);
    assert_eq!(ask(&req, &m).2, ErrorStatus::NoSuchName as u32);
}

#[test]
fn set_runs_the_two_phase_protocol() {
    let c = cfg().with_write_community("rw");
    let sent = vec![
        (oid(&[1, 1]), Value::Integer(9)),
        (oid(&[1, 2]), Value::OctetString(b"abc".to_vec())),
        (oid(&[2, 1, 1]), Value::Counter64(1 << 40)),
    ];
    let req = set_req(1, "rw", &sent);
    let run = |m: &MapMib| response(&reply(&req, &c, m));
    let echoed: Vec<VarBind> = sent
        .iter()
        .map(|(n, v)| VarBind::new(n.clone(), v.clone()))
        .collect();

    let m = mib();
    let (_, _, st, idx, vbs) = run(&m);
    assert_eq!((st, idx), (0, 0));
    assert_eq!(vbs, echoed);
    assert_eq!(m.phases(), ["test", "commit", "cleanup"]);
    assert_eq!(m.calls.lock().unwrap()[0].1, echoed);

    // A failed test is cleaned up; a failed commit undone, then cleaned up.
    let err = |status, index| Some(SetError { status, index });
    let failing = [
        (
            err(ErrorStatus::WrongType, 3),
            None,
            &["test", "cleanup"][..],
        ),
        (
            None,
            err(ErrorStatus::CommitFailed, 2),
            &["test", "commit", "undo", "cleanup"],
        ),
    ];
    for (fail_test, fail_commit, phases) in failing {
        let m = MapMib {
            fail_test,
            fail_commit,
            ..mib()
        };
        let (_, _, st, idx, _) = run(&m);
        let e = fail_test.or(fail_commit).unwrap();
        assert_eq!((st, idx), (e.status as u32, u32::from(e.index)));
        assert_eq!(m.phases(), phases);
    }

    // v1 sees the v1 code for a v2 error
    let m = MapMib {
        fail_test: Some(SetError {
            status: ErrorStatus::NotWritable,
            index: 1,
        }),
        ..mib()
    };
    let r = reply(&set_req(0, "rw", &sent[..1]), &c, &m);
    assert_eq!(response(&r).2, ErrorStatus::NoSuchName as u32);
}

#[test]
fn responder_serves_over_udp_and_shutdown_frees_its_socket() {
    use std::net::UdpSocket;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    let r = Responder::bind(
        "127.0.0.1:0".parse().unwrap(),
        ResponderConfig::new("public"),
        Arc::new(mib()),
    )
    .unwrap();
    let addr = r.local_addr().unwrap();
    let h = r.spawn().unwrap();
    assert_eq!(h.local_addr(), Some(addr));
    let client = UdpSocket::bind("127.0.0.1:0").unwrap();
    client
        .set_read_timeout(Some(Duration::from_secs(2)))
        .unwrap();
    client.send_to(b"junk", addr).unwrap();
    client
        .send_to(
            &message(1, "nope", Pdus::GetRequest(v2::GetRequest(pdu(1, vec![])))),
            addr,
        )
        .unwrap();
    let req = message(
        1,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(77, null_vbs(&[oid(&[1, 3])])))),
    );
    client.send_to(&req, addr).unwrap();
    let mut buf = [0u8; 2000];
    let (n, _) = client.recv_from(&mut buf).unwrap();
    let (_, rid, _, _, vbs) = response(&buf[..n]);
    assert_eq!(
        (rid, vbs),
        (77, vec![VarBind::new(oid(&[1, 3]), Value::Counter32(7))])
    );
    // the counter of sent answers moves just after the send
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut s = h.stats();
    while s.out_packets == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
        s = h.stats();
    }
    assert_eq!(
        (
            s.in_packets,
            s.refused.get(Refusal::BadRequest),
            s.refused.get(Refusal::Auth),
            s.out_packets
        ),
        (3, 1, 1, 1)
    );
    // Shutdown wakes the task at once (no poll interval to wait out) and
    // returns once it has ended: its socket is closed, the address free.
    h.shutdown();
    UdpSocket::bind(addr).expect("the responder's address is free after shutdown");
}

/// An SNMPv3 discovery probe names no user, and its Report is larger than
/// it: only a source some user rule lists gets one.
#[test]
fn discovery_reports_go_only_to_sources_a_user_rule_lists() {
    use super::access::{AccessTable, Level, Principal, Rule, Subtrees};
    use super::usm::{EngineId, Usm};
    use std::net::IpAddr;
    use std::time::Instant;

    let probe = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/usm/discovery.bin"
    ))
    .unwrap();
    let rule = |principal, source: &str| Rule {
        principal,
        sources: vec![source.parse().unwrap()],
        view: Subtrees::all(),
        write: false,
        max_response_octets: 1472,
        rate: None,
    };
    let config = ResponderConfig {
        access: AccessTable::new(vec![
            rule(Principal::Community(b"public".to_vec()), "10.0.0.0/8"),
            rule(
                Principal::User {
                    name: b"nms".to_vec(),
                    level: Level::AuthPriv,
                },
                "127.0.0.1",
            ),
        ]),
    };
    let usm = Usm::new(EngineId::from_hex("8000000005a1a2a3a4").unwrap(), 1, vec![]).unwrap();
    let now = Instant::now();
    let mut p = Processor::new(config).with_usm(usm, now);
    let m = mib();
    let from = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(
        p.process(&probe, from("10.0.0.1"), now, &m),
        Outcome::Unlisted
    );
    assert!(matches!(
        p.process(&probe, from("127.0.0.1"), now, &m),
        Outcome::Report(super::usm::ReportKind::UnknownEngineId, _)
    ));
}

/// A noAuthNoPriv SNMPv3 GetRequest of `user` to `engine` (reportable).
fn v3_plain_get(engine: &[u8], user: &str, varbinds: Vec<v2::VarBind>) -> Vec<u8> {
    v3_plain(
        engine,
        user,
        Pdus::GetRequest(v2::GetRequest(pdu(9, varbinds))),
    )
}

fn v3_plain(engine: &[u8], user: &str, data: Pdus) -> Vec<u8> {
    crate::rig::plain_v3_message(engine, user, 77, data)
}

/// A processor with user `nms` (authPriv keys) whose one rule, from
/// loopback, asks for authPriv and carries `guard`.
fn v3_processor(guard: Option<super::access::RateGuard>, now: std::time::Instant) -> Processor {
    use super::access::{AccessTable, Level, Principal, Rule, Subtrees};
    use super::usm::{AuthProtocol, EngineId, PrivProtocol, User, Usm};
    let engine = EngineId::from_hex("8000000005a1a2a3a4").unwrap();
    let pass = "processor-test-passphrase";
    let user = User::from_passphrases(
        "nms",
        Some((AuthProtocol::Sha256, pass)),
        Some((PrivProtocol::Aes128, pass)),
        &engine,
    )
    .unwrap();
    let config = ResponderConfig {
        access: AccessTable::new(vec![Rule {
            principal: Principal::User {
                name: b"nms".to_vec(),
                level: Level::AuthPriv,
            },
            sources: vec!["127.0.0.1".parse().unwrap()],
            view: Subtrees::all(),
            write: false,
            max_response_octets: 1472,
            rate: guard,
        }]),
    };
    let usm = Usm::new(engine, 1, vec![user]).unwrap();
    Processor::new(config).with_usm(usm, now)
}

/// Reports are charged to the rate guard before they are built: a flood of
/// discovery probes, requests of unknown users and requests for another
/// engine from a listed source draws at most burst + rate x time answers.
#[test]
fn reports_are_charged_to_the_rate_guard() {
    use super::access::RateGuard;
    use std::time::{Duration, Instant};
    let t0 = Instant::now();
    let mut p = v3_processor(Some(RateGuard { rate: 10, burst: 5 }), t0);
    let m = mib();
    let fixture = |name: &str| {
        std::fs::read(format!(
            "{}/tests/fixtures/usm/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap()
    };
    let engine = super::usm::EngineId::from_hex("8000000005a1a2a3a4")
        .unwrap()
        .as_bytes()
        .to_vec();
    let probes = [
        fixture("discovery.bin"),
        fixture("sha256-authpriv.bin"),
        v3_plain_get(&engine, "nobody", Vec::new()),
    ];
    let from: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    // 3,000 datagrams over 2 s.
    let (mut answered, mut limited) = (0, 0);
    for i in 0..3000u64 {
        let now = t0 + Duration::from_micros(i * 2_000_000 / 3000);
        match p.process(&probes[i as usize % 3], from, now, &m) {
            Outcome::Report(..) => answered += 1,
            Outcome::RateLimited => limited += 1,
            o => panic!("{o:?}"),
        }
    }
    assert!(answered <= 5 + 10 * 2, "{answered} answered");
    assert!(answered >= 5 + 10 * 2 - 1, "{answered} answered");
    assert_eq!(answered + limited, 3000);
    // The USM counted every one.
    let stats = p.usm_stats().unwrap();
    assert_eq!(
        stats.unknown_engine_ids as u64 + stats.unknown_user_names as u64,
        3000
    );
}

/// The authorizationError answer (a known user below its rule's level)
/// fits the rule's max_response_octets, whatever the request carries, and
/// is charged to the guard.
#[test]
fn authorization_errors_fit_the_rule_and_are_charged() {
    use super::access::RateGuard;
    use std::time::Instant;
    let t0 = Instant::now();
    let m = mib();
    let engine = super::usm::EngineId::from_hex("8000000005a1a2a3a4")
        .unwrap()
        .as_bytes()
        .to_vec();
    let from: std::net::IpAddr = "127.0.0.1".parse().unwrap();
    // 3,000 varbinds: about 60,000 octets in.
    let names: Vec<Oid> = (0..3000u32)
        .map(|i| oid(&[1, 3, 6, 1, 4, 1, 99999, 1, 2, 3, 4, 5, i]))
        .collect();
    let big = v3_plain_get(&engine, "nms", null_vbs(&names));
    assert!(big.len() > 50_000, "{}", big.len());
    let small = v3_plain_get(&engine, "nms", null_vbs(&names[..1]));
    let mut p = v3_processor(None, t0);
    for (req, want_vbs) in [(&big, 0), (&small, 1)] {
        let Outcome::Reply(r) = p.process(req, from, t0, &m) else {
            panic!("no answer")
        };
        assert!(r.len() <= 1472, "{} octets", r.len());
        let msg: rasn_snmp::v3::Message = rasn::ber::decode(&r).unwrap();
        let rasn_snmp::v3::ScopedPduData::CleartextPdu(s) = msg.scoped_data else {
            panic!("encrypted")
        };
        let Pdus::Response(v2::Response(pdu)) = s.data else {
            panic!("{:?}", s.data)
        };
        let status = if want_vbs == 0 {
            ErrorStatus::TooBig
        } else {
            ErrorStatus::AuthorizationError
        };
        assert_eq!(pdu.error_status, status as u32);
        assert_eq!(pdu.variable_bindings.len(), want_vbs);
    }
    let mut p = v3_processor(Some(RateGuard { rate: 1, burst: 3 }), t0);
    let answers = (0..100)
        .filter(|_| matches!(p.process(&small, from, t0, &m), Outcome::Reply(_)))
        .count();
    assert_eq!(answers, 3);
}

/// RFC 3416 4.2.3: a negative non-repeaters or max-repetitions is treated
/// as 0 (the request is answered, not dropped as undecodable).
#[test]
fn negative_get_bulk_fields_count_as_zero() {
    let m = mib();
    let (c1, c2) = (oid(&[2, 1]), oid(&[2, 2]));
    // Encoded with one-octet markers, then made negative in place.
    let patch = |mut b: Vec<u8>, from: u8, to: u8| {
        let at = b
            .windows(3)
            .position(|w| w == [0x02, 0x01, from])
            .expect("the marker");
        b[at + 2] = to;
        b
    };
    let req = patch(bulk(5, 0x55, 3, &[c1.clone(), c2.clone()]), 0x55, 0xff);
    let (_, rid, st, _, vbs) = ask(&req, &m);
    assert_eq!((rid, st), (5, 0));
    let mut want = Vec::new();
    let (a, b) = (after(&m, &c1, 3), after(&m, &c2, 3));
    for r in 0..3 {
        want.push(a[r].clone());
        want.push(b[r].clone());
    }
    assert_eq!(vbs, want, "non-repeaters -1 reads as 0");
    let req = patch(bulk(6, 1, 0x66, &[c1.clone(), c2.clone()]), 0x66, 0x80);
    let (_, rid, st, _, vbs) = ask(&req, &m);
    assert_eq!((rid, st), (6, 0));
    assert_eq!(vbs, after(&m, &c1, 1), "max-repetitions -128 reads as 0");
}

/// A datagram that carries more than the message is not answered; nor is
/// one with an indefinite length.
#[test]
fn trailing_octets_and_indefinite_lengths_are_refused() {
    let m = mib();
    let mut req = message(
        1,
        "public",
        Pdus::GetRequest(v2::GetRequest(pdu(3, null_vbs(&[oid(&[1, 1])])))),
    );
    assert!(matches!(process(&req, &cfg(), &m), Outcome::Reply(_)));
    req.push(0);
    assert!(matches!(process(&req, &cfg(), &m), Outcome::Malformed(_)));
    // The same message with the outer length indefinite (and its end-of-
    // contents octets).
    let mut indefinite = req[..req.len() - 1].to_vec();
    indefinite[1] = 0x80;
    indefinite.extend_from_slice(&[0, 0]);
    assert!(matches!(
        process(&indefinite, &cfg(), &m),
        Outcome::Malformed(_)
    ));
}

/// Over SNMPv3 too, a GetBulk's negative fields read as 0: the request is
/// answered, not refused as undecodable (or reported as a decryption
/// error).
#[test]
fn negative_get_bulk_fields_count_as_zero_over_v3() {
    use super::access::{AccessTable, Level, Principal, Rule, Subtrees};
    use super::usm::{EngineId, User, Usm};
    use rasn_snmp::v3::ScopedPduData;
    let engine = EngineId::from_hex("8000000005a1a2a3a4").unwrap();
    let anon = User::from_passphrases("anon", None, None, &engine).unwrap();
    let config = ResponderConfig {
        access: AccessTable::new(vec![Rule {
            principal: Principal::User {
                name: b"anon".to_vec(),
                level: Level::NoAuthNoPriv,
            },
            sources: vec!["127.0.0.1".parse().unwrap()],
            view: Subtrees::all(),
            write: false,
            max_response_octets: 1472,
            rate: None,
        }]),
    };
    let now = std::time::Instant::now();
    let mut p =
        Processor::new(config).with_usm(Usm::new(engine.clone(), 1, vec![anon]).unwrap(), now);
    let c1 = oid(&[2, 1]);
    let mut bytes = v3_plain(
        engine.as_bytes(),
        "anon",
        Pdus::GetBulkRequest(v2::GetBulkRequest(BulkPdu {
            request_id: 9,
            non_repeaters: 0x55,
            max_repetitions: 2,
            variable_bindings: null_vbs(std::slice::from_ref(&c1)),
        })),
    );
    let at = bytes
        .windows(3)
        .position(|w| w == [0x02, 0x01, 0x55])
        .unwrap();
    bytes[at + 2] = 0xff;
    let m = mib();
    let Outcome::Reply(r) = p.process(&bytes, "127.0.0.1".parse().unwrap(), now, &m) else {
        panic!("not answered")
    };
    let msg: rasn_snmp::v3::Message = rasn::ber::decode(&r).unwrap();
    let ScopedPduData::CleartextPdu(s) = msg.scoped_data else {
        panic!()
    };
    let Pdus::Response(v2::Response(pdu)) = s.data else {
        panic!("{:?}", s.data)
    };
    assert_eq!(pdu.error_status, 0);
    assert_eq!(
        pdu.variable_bindings.len(),
        2,
        "two repetitions of one column"
    );
}
