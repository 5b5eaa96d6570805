//! Decodes the AgentX PDUs captured from a real net-snmp snmpd
//! (tests/fixtures/agentx, see its README) with the crate's codec.

use std::path::PathBuf;

use ibpm_agentx::agentx::pdu::{self, ByteOrder, Payload, PduType, ResError};
use ibpm_agentx::mib::{Oid, Value, VarBind};

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agentx")
}

fn files() -> Vec<String> {
    let idx = std::fs::read_to_string(dir().join("index.txt")).expect("index.txt");
    idx.lines()
        .filter(|l| !l.is_empty())
        .map(String::from)
        .collect()
}

/// The file whose name starts with `NN-` (numbers are stable for one capture).
fn load(prefix: &str) -> (String, Vec<u8>) {
    let name = files()
        .into_iter()
        .find(|f| f.starts_with(prefix))
        .unwrap_or_else(|| panic!("no fixture {prefix}"));
    let b = std::fs::read(dir().join(&name)).unwrap();
    (name, b)
}

fn oid(s: &str) -> Oid {
    s.parse().unwrap()
}

#[test]
fn every_fixture_decodes_and_reencodes_identically() {
    let fs = files();
    assert!(fs.len() >= 30, "expected a full capture, got {}", fs.len());
    for name in fs {
        let bytes = std::fs::read(dir().join(&name)).unwrap();
        let p = pdu::decode(&bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
        let ty = name.trim_end_matches(".bin").rsplit('-').next().unwrap();
        assert_eq!(format!("{:?}", p.payload.pdu_type()), ty, "{name}");
        let again = pdu::encode(&p, p.byte_order()).unwrap();
        assert_eq!(again, bytes, "{name} re-encodes identically");
        if name.contains("-le-") {
            assert_eq!(p.byte_order(), ByteOrder::Little, "{name}");
        }
        if name.contains("-setup-master-") || name.contains("-setup-subagent-") {
            assert_eq!(p.byte_order(), ByteOrder::Big, "{name}");
        }
    }
}

fn response(b: &[u8]) -> (u32, ResError, u16, Vec<VarBind>) {
    match pdu::decode(b).unwrap().payload {
        Payload::Response {
            sys_uptime,
            error,
            index,
            varbinds,
        } => (sys_uptime, error, index, varbinds),
        other => panic!("not a Response: {other:?}"),
    }
}

#[test]
fn masters_answers_to_open_register_ping() {
    // Open: snmpd echoes the subagent's o.id and o.descr as one varbind.
    let (_, open) = load("01-");
    let (_, b) = load("02-");
    let resp = pdu::decode(&b).unwrap();
    let sent = pdu::decode(&open).unwrap();
    assert_eq!(resp.packet_id, sent.packet_id);
    assert_ne!(resp.session_id, 0, "master assigns a session id");
    let (_, err, idx, vbs) = response(&b);
    assert_eq!((err, idx), (ResError::NO_ERROR, 0));
    assert_eq!(
        vbs,
        vec![VarBind::new(
            oid("1.3.6.1.3.117"),
            Value::OctetString(b"capture.py".to_vec())
        )]
    );
    // Register: noError, and snmpd echoes the subtree as a Null varbind.
    for (p, subtree) in [("04-", "1.3.6.1.3.117"), ("10-", "1.3.6.1.3.117.2")] {
        let (name, b) = load(p);
        let (_, err, _, vbs) = response(&b);
        assert_eq!(err, ResError::NO_ERROR, "{name}");
        assert_eq!(vbs, vec![VarBind::new(oid(subtree), Value::Null)], "{name}");
    }
    // Ping: noError, no varbinds.
    for p in ["06-", "12-"] {
        let (name, b) = load(p);
        let (_, err, _, vbs) = response(&b);
        assert_eq!(err, ResError::NO_ERROR, "{name}");
        assert!(vbs.is_empty(), "{name}");
    }
    let (_, reg) = load("03-");
    match pdu::decode(&reg).unwrap().payload {
        Payload::Register { region, .. } => {
            assert_eq!(
                (region.priority, region.subtree),
                (127, oid("1.3.6.1.3.117"))
            )
        }
        p => panic!("{p:?}"),
    }
    // Little-endian session: the master answers in little-endian.
    let (_, b) = load("08-");
    assert_eq!(pdu::decode(&b).unwrap().byte_order(), ByteOrder::Little);
}

fn ranges(b: &[u8]) -> Vec<(String, bool, String)> {
    let p = pdu::decode(b).unwrap();
    assert!(p.context.is_none());
    let rs = match p.payload {
        Payload::Get { ranges } | Payload::GetNext { ranges } => ranges,
        other => panic!("{other:?}"),
    };
    rs.into_iter()
        .map(|r| (r.start.to_string(), r.include, r.end.to_string()))
        .collect()
}

#[test]
fn multi_varbind_get_is_one_pdu() {
    let (_, b) = load("13-");
    let s = |x: &str| x.to_string();
    assert_eq!(
        ranges(&b),
        vec![
            (s("1.3.6.1.3.117.1.1.0"), false, s("")),
            (s("1.3.6.1.3.117.1.2.0"), false, s("")),
            (s("1.3.6.1.3.117.1.3.0"), false, s("")),
        ]
    );
    let (_, _, _, vbs) = response(&load("14-").1);
    assert_eq!(vbs[1].value, Value::OctetString(vec![0, 1, 0xfe, 0xff]));
    assert_eq!(vbs[2].value, Value::Counter64((1 << 40) + 5));
}

#[test]
fn getnext_and_bulkwalk() {
    let (_, b) = load("15-");
    // The range ends where the next registration (1.3.6.1.3.117.2) begins.
    assert_eq!(
        ranges(&b),
        vec![(
            "1.3.6.1.3.117.1.1.0".to_string(),
            false,
            "1.3.6.1.3.117.2".to_string()
        )]
    );
    // snmpbulkwalk: only GetNext, repetitions share a transaction ID.
    let walk: Vec<_> = files()
        .into_iter()
        .filter(|f| f.contains("-bulkwalk-master-"))
        .map(|f| pdu::decode(&std::fs::read(dir().join(&f)).unwrap()).unwrap())
        .collect();
    assert!(walk.len() >= 5);
    assert!(
        walk.iter()
            .all(|p| p.payload.pdu_type() == PduType::GetNext)
    );
    assert_eq!(walk[0].transaction_id, walk[1].transaction_id);
    assert_ne!(walk[0].packet_id, walk[1].packet_id);
    // The walk moves into the little-endian session's subtree with include set.
    let into_le = walk
        .iter()
        .find(|p| p.byte_order() == ByteOrder::Little)
        .expect("walk reaches the LE session");
    match &into_le.payload {
        Payload::GetNext { ranges, .. } => {
            assert_eq!(ranges[0].start, oid("1.3.6.1.3.117.2"));
            assert!(ranges[0].include);
            assert_eq!(ranges[0].end, oid("1.3.6.1.3.117.3"));
        }
        p => panic!("{p:?}"),
    }
}

#[test]
fn set_sequence_carries_binary_octets_and_gauge() {
    let ts = pdu::decode(&load("31-").1).unwrap();
    assert!(ts.context.is_none());
    match &ts.payload {
        Payload::TestSet { varbinds } => {
            assert_eq!(
                varbinds,
                &vec![
                    VarBind::new(
                        oid("1.3.6.1.3.117.1.2.0"),
                        Value::OctetString(vec![0, 1, 0xfe, 0xff, 0x80])
                    ),
                    VarBind::new(oid("1.3.6.1.3.117.1.4.0"), Value::Gauge32(4_000_000_000)),
                ]
            );
        }
        p => panic!("{p:?}"),
    }
    let cs = pdu::decode(&load("33-").1).unwrap();
    let cl = pdu::decode(&load("35-").1).unwrap();
    assert_eq!(cs.payload, Payload::CommitSet);
    assert_eq!(cl.payload, Payload::CleanupSet);
    assert_eq!(cs.transaction_id, ts.transaction_id);
    assert_eq!(cl.transaction_id, ts.transaction_id);
    assert!(cl.packet_id > cs.packet_id && cs.packet_id > ts.packet_id);
}

#[test]
fn little_endian_get() {
    let (_, b) = load("36-");
    assert_eq!(pdu::decode(&b).unwrap().byte_order(), ByteOrder::Little);
    assert_eq!(ranges(&b).len(), 2);
    let (_, _, _, vbs) = response(&load("37-").1);
    assert_eq!(vbs[0].value, Value::Counter32(7));
    assert_eq!(vbs[1].value, Value::OctetString(b"abc".to_vec()));
}
