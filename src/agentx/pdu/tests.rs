use super::*;

fn oid(s: &str) -> Oid {
    s.parse().unwrap()
}

fn all_values() -> Vec<VarBind> {
    vec![
        VarBind::new(oid("1.3.6.1.3.117.1.1.1"), Value::Integer(-5)),
        VarBind::new(
            oid("1.3.6.1.3.117.1.1.2"),
            Value::OctetString(vec![0x00, 0xff, 0x10]),
        ),
        VarBind::new(oid("1.3.6.1.3.117.1.1.3"), Value::OctetString(vec![])),
        VarBind::new(
            oid("1.3.6.1.3.117.1.1.4"),
            Value::OctetString(vec![1, 2, 3, 4]),
        ),
        VarBind::new(oid("1.3.6.1.3.117.1.1.5"), Value::Null),
        VarBind::new(
            oid("1.3.6.1.3.117.1.1.6"),
            Value::ObjectIdentifier(oid("1.3.6.1.4.1.8072")),
        ),
        VarBind::new(oid("1.3.6.1.3.117.1.1.7"), Value::IpAddress([127, 0, 0, 1])),
        VarBind::new(oid("1.3.6.1.3.117.1.1.8"), Value::Counter32(u32::MAX)),
        VarBind::new(oid("1.3.6.1.3.117.1.1.9"), Value::Gauge32(7)),
        VarBind::new(oid("1.3.6.1.3.117.1.1.10"), Value::TimeTicks(12345)),
        VarBind::new(oid("1.3.6.1.3.117.1.1.11"), Value::Opaque(vec![9; 5])),
        VarBind::new(oid("1.3.6.1.3.117.1.1.12"), Value::Counter64(u64::MAX - 1)),
        VarBind::new(oid("1.3.6.1.3.117.1.1.13"), Value::NoSuchObject),
        VarBind::new(oid("1.3.6.1.3.117.1.1.14"), Value::NoSuchInstance),
        VarBind::new(oid("1.3.6.1.3.117.1.1.15"), Value::EndOfMibView),
        // Not compressible: first sub-identifiers differ from 1.3.6.1.
        VarBind::new(oid("1.2.840.10006.300.43"), Value::Integer(1)),
        // 1.3.6.1.0.x: prefix 0 is "no prefix", so no compression.
        VarBind::new(oid("1.3.6.1.0.5"), Value::Integer(2)),
        // 1.3.6.1.256: too big for the prefix byte.
        VarBind::new(oid("1.3.6.1.256.1"), Value::Integer(3)),
        VarBind::new(oid(""), Value::Null),
    ]
}

fn ranges() -> Vec<SearchRange> {
    vec![
        SearchRange {
            start: oid("1.3.6.1.3.117.1"),
            include: true,
            end: oid("1.3.6.1.3.118"),
        },
        SearchRange {
            start: oid("1.3.6.1.3.117.1.4.1.9"),
            include: false,
            end: Oid::default(),
        },
    ]
}

/// A Register of 1.3.6.1.3.117, priority 127, no range.
fn register_117() -> Payload {
    Payload::Register {
        timeout: 0,
        region: Region::subtree(oid("1.3.6.1.3.117"), 127),
    }
}

/// Every payload, with the flags and the context it is sent with.
fn every_payload() -> Vec<(u8, Option<Vec<u8>>, Payload)> {
    let ctx = Some(b"ctx-a".to_vec());
    vec![
        (
            0,
            None,
            Payload::Open {
                timeout: 5,
                id: oid("1.3.6.1.3.117"),
                description: b"ibpm-agentx".to_vec(),
            },
        ),
        (
            0,
            None,
            Payload::Close {
                reason: CloseReason::Shutdown,
            },
        ),
        (
            0,
            None,
            Payload::Close {
                reason: CloseReason::Unknown(77),
            },
        ),
        (flags::INSTANCE_REGISTRATION, None, register_117()),
        (
            0,
            ctx.clone(),
            Payload::Register {
                timeout: 3,
                region: Region {
                    priority: 1,
                    range_subid: 9,
                    subtree: oid("1.3.6.1.3.117.1.4.1.1"),
                    upper_bound: Some(22),
                },
            },
        ),
        (
            0,
            ctx.clone(),
            Payload::Unregister(Region::subtree(oid("1.3.6.1.3.117"), 127)),
        ),
        (0, None, Payload::Get { ranges: ranges() }),
        (0, None, Payload::Get { ranges: vec![] }),
        (0, ctx.clone(), Payload::GetNext { ranges: ranges() }),
        (
            0,
            None,
            Payload::GetBulk {
                non_repeaters: 1,
                max_repetitions: 10,
                ranges: ranges(),
            },
        ),
        (
            0,
            None,
            Payload::TestSet {
                varbinds: all_values(),
            },
        ),
        (0, None, Payload::CommitSet),
        (0, None, Payload::UndoSet),
        (0, None, Payload::CleanupSet),
        (
            0,
            ctx.clone(),
            Payload::Notify {
                varbinds: all_values(),
            },
        ),
        (0, None, Payload::Ping),
        (0, Some(vec![]), Payload::Ping),
        (
            flags::NEW_INDEX,
            None,
            Payload::IndexAllocate {
                varbinds: vec![VarBind::new(oid("1.3.6.1.3.117.9.1"), Value::Integer(0))],
            },
        ),
        (
            flags::ANY_INDEX,
            None,
            Payload::IndexDeallocate {
                varbinds: vec![VarBind::new(oid("1.3.6.1.3.117.9.1"), Value::Integer(4))],
            },
        ),
        (
            0,
            None,
            Payload::AddAgentCaps {
                id: oid("1.3.6.1.3.117.2"),
                description: b"caps".to_vec(),
            },
        ),
        (
            0,
            ctx,
            Payload::RemoveAgentCaps {
                id: oid("1.3.6.1.3.117.2"),
            },
        ),
        (
            0,
            None,
            Payload::Response {
                sys_uptime: u32::MAX,
                error: ResError::NO_ERROR,
                index: 0,
                varbinds: all_values(),
            },
        ),
        (
            0,
            None,
            Payload::Response {
                sys_uptime: 1,
                error: ResError::Snmp(ErrorStatus::NotWritable),
                index: 2,
                varbinds: vec![],
            },
        ),
        (
            0,
            None,
            Payload::Response {
                sys_uptime: 1,
                error: ResError::Agentx(AgentxError::DuplicateRegistration),
                index: 0,
                varbinds: vec![],
            },
        ),
        (
            0,
            None,
            Payload::Response {
                sys_uptime: 1,
                error: ResError::Other(999),
                index: 0,
                varbinds: vec![],
            },
        ),
    ]
}

/// The h.type of the PDUs in which RFC 2741 6.1 (h.flags,
/// NON_DEFAULT_CONTEXT) says a non-default context may be present:
/// Register, Unregister, Get, GetNext, GetBulk, TestSet, Notify, Ping,
/// IndexAllocate, IndexDeallocate, AddAgentCaps, RemoveAgentCaps.
const RFC_2741_WITH_CONTEXT: [u8; 12] = [3, 4, 5, 6, 7, 8, 12, 13, 14, 15, 16, 17];

#[test]
fn every_pdu_type_carries_a_context_as_rfc_2741_lists() {
    assert_eq!(PduType::ALL.len(), 18);
    for (code, ty) in (1u8..).zip(PduType::ALL) {
        assert_eq!(ty as u8, code);
        let listed = RFC_2741_WITH_CONTEXT.contains(&code);
        assert_eq!(ty.has_context(), listed, "{ty:?}");
    }
    // A context is written (and read back) on those types, refused on
    // the rest.
    for (_, _, payload) in every_payload() {
        let ty = payload.pdu_type();
        let listed = RFC_2741_WITH_CONTEXT.contains(&(ty as u8));
        let pdu = Pdu {
            context: Some(b"c".to_vec()),
            ..Pdu::new(1, 1, 1, payload)
        };
        match encode(&pdu, ByteOrder::Big) {
            Ok(b) => {
                assert!(listed, "{ty:?} written with a context");
                assert_eq!(decode(&b).unwrap().context, pdu.context, "{ty:?}");
            }
            Err(e) => {
                assert!(!listed, "{ty:?} refused a context: {e:?}");
                assert!(matches!(e, EncodeError::Invalid(_)), "{ty:?}: {e:?}");
            }
        }
    }
}

#[test]
fn round_trip_every_pdu_both_orders() {
    let mut seen = std::collections::HashSet::new();
    for order in [ByteOrder::Big, ByteOrder::Little] {
        for (i, (fl, context, payload)) in every_payload().into_iter().enumerate() {
            seen.insert(payload.pdu_type());
            let pdu = Pdu {
                flags: fl,
                session_id: 0x0102_0304,
                transaction_id: 7 + i as u32,
                packet_id: 0xdead_beef,
                context,
                payload,
            };
            let bytes = encode(&pdu, order).unwrap();
            assert_eq!(bytes.len() % 4, 0, "{pdu:?}");
            let h = Header::parse(&bytes).unwrap();
            assert_eq!(h.payload_length as usize, bytes.len() - HEADER_LEN);
            assert_eq!(h.byte_order(), order);
            let back = decode(&bytes).unwrap_or_else(|e| panic!("{e} for {pdu:?}"));
            assert_eq!(back.payload, pdu.payload);
            assert_eq!(back.context, pdu.context);
            assert_eq!(back.session_id, pdu.session_id);
            assert_eq!(back.transaction_id, pdu.transaction_id);
            assert_eq!(back.packet_id, pdu.packet_id);
            assert_eq!(back.byte_order(), order);
            assert_eq!(
                back.flags & flags::NON_DEFAULT_CONTEXT != 0,
                pdu.context.is_some()
            );
            assert_eq!(back.flags & 0x07, fl);
            // Re-encoding the decoded PDU gives the same bytes.
            assert_eq!(encode(&back, back.byte_order()).unwrap(), bytes);
        }
    }
    assert_eq!(seen.len(), 18, "every PDU type is covered");
}

/// Bytes written out by hand from RFC 2741 5.1/6.1/6.2.3 (not produced by
/// this codec): a Register of 1.3.6.1.3.117, priority 127, network order.
#[test]
fn register_matches_rfc_layout() {
    let expected: Vec<u8> = vec![
        1, 3, 0x10, 0, // version, type Register, NETWORK_BYTE_ORDER, reserved
        0, 0, 0, 9, // session 9
        0, 0, 0, 1, // transaction 1
        0, 0, 0, 2, // packet 2
        0, 0, 0, 12, // payload length
        0, 127, 0, 0, // timeout 0, priority 127, range_subid 0, reserved
        1, 3, 0, 0, // n_subid 1, prefix 3 (1.3.6.1.3), include 0
        0, 0, 0, 117,
    ];
    let pdu = Pdu::new(9, 1, 2, register_117());
    assert_eq!(encode(&pdu, ByteOrder::Big).unwrap(), expected);
    assert_eq!(decode(&expected).unwrap(), {
        let mut p = pdu.clone();
        p.flags = 0x10;
        p
    });
}

/// A little-endian Response with an OCTET STRING of 3 bytes (padded to 4)
/// and a Counter64, written out by hand.
#[test]
fn response_little_endian_hand_written() {
    let bytes: Vec<u8> = vec![
        1, 18, 0, 0, //
        5, 0, 0, 0, //
        6, 0, 0, 0, //
        7, 0, 0, 0, //
        48, 0, 0, 0, // payload length 48
        0x10, 0x27, 0, 0, // sysUpTime 10000
        0, 0, 0, 0, // error 0, index 0
        4, 0, 0, 0, // OCTET STRING, reserved
        2, 3, 0, 0, 117, 0, 0, 0, 1, 0, 0, 0, // 1.3.6.1.3.117.1
        3, 0, 0, 0, 0xde, 0xad, 0x00, 0, // len 3, bytes, pad
        70, 0, 0, 0, // Counter64
        0, 4, 0, 0, // null-prefix... n_subid 0, prefix 4: 1.3.6.1.4
        0x01, 0, 0, 0, 0, 0, 0, 0x80,
    ];
    let pdu = decode(&bytes).unwrap();
    assert_eq!(pdu.byte_order(), ByteOrder::Little);
    assert_eq!(
        (pdu.session_id, pdu.transaction_id, pdu.packet_id),
        (5, 6, 7)
    );
    let Payload::Response {
        sys_uptime,
        error,
        index,
        varbinds,
    } = &pdu.payload
    else {
        panic!("not a response: {pdu:?}")
    };
    assert_eq!(
        (*sys_uptime, *error, *index),
        (10000, ResError::NO_ERROR, 0)
    );
    assert_eq!(
        varbinds,
        &vec![
            VarBind::new(
                oid("1.3.6.1.3.117.1"),
                Value::OctetString(vec![0xde, 0xad, 0])
            ),
            VarBind::new(oid("1.3.6.1.4"), Value::Counter64(0x8000_0000_0000_0001)),
        ]
    );
    assert_eq!(encode(&pdu, ByteOrder::Little).unwrap(), bytes);
}

#[test]
fn error_codes() {
    for v in 0..=18u16 {
        assert!(matches!(ResError::from_u16(v), ResError::Snmp(_)));
        assert_eq!(ResError::from_u16(v).to_u16(), v);
    }
    for v in 256..=268u16 {
        assert!(matches!(ResError::from_u16(v), ResError::Agentx(_)));
        assert_eq!(ResError::from_u16(v).to_u16(), v);
    }
    assert_eq!(
        ResError::from_u16(263),
        ResError::Agentx(AgentxError::DuplicateRegistration)
    );
    assert_eq!(
        ResError::from_u16(266).to_string(),
        "parseError (266)".to_string()
    );
    assert_eq!(ResError::from_u16(5).to_string(), "genErr (5)");
    assert_eq!(ResError::from_u16(19), ResError::Other(19));
    assert_eq!(ResError::from_u16(255), ResError::Other(255));
    assert_eq!(ResError::from_u16(269), ResError::Other(269));
}

/// Each AgentX error's name is the one RFC 2741 6.2.16 gives it.
#[test]
fn agentx_error_names_are_rfc_2741s() {
    let rfc = "openFailed(256) notOpen(257) indexWrongType(258) indexAlreadyAllocated(259) \
               indexNoneAvailable(260) indexNotAllocated(261) unsupportedContext(262) \
               duplicateRegistration(263) unknownRegistration(264) unknownAgentCaps(265) \
               parseError(266) requestDenied(267) processingError(268)";
    let named: Vec<String> = (0..=u16::MAX)
        .filter_map(AgentxError::from_u16)
        .map(|e| format!("{}({})", e.name(), e as u16))
        .collect();
    assert_eq!(named.join(" "), rfc);
}

fn sample_bytes() -> Vec<u8> {
    let pdu = Pdu::new(
        1,
        2,
        3,
        Payload::TestSet {
            varbinds: all_values(),
        },
    );
    let in_context = Pdu {
        context: Some(b"c".to_vec()),
        ..pdu
    };
    encode(&in_context, ByteOrder::Big).unwrap()
}

#[test]
fn truncated_inputs_fail_cleanly() {
    let bytes = sample_bytes();
    for n in 0..bytes.len() {
        let cut = &bytes[..n];
        let e = decode(cut).unwrap_err();
        if n >= HEADER_LEN {
            assert!(e.header.is_some(), "header parsed at {n}");
            assert_eq!(e.header.unwrap().packet_id, 3);
        } else {
            assert!(e.header.is_none());
        }
        assert!(!e.to_string().is_empty());
    }
    // Truncated inside the payload with a payload_length that matches the
    // shorter payload: the field decoders report the truncation.
    for n in HEADER_LEN..bytes.len() {
        let mut cut = bytes[..n].to_vec();
        let len = (n - HEADER_LEN) as u32;
        cut[16..20].copy_from_slice(&len.to_be_bytes());
        if let Err(e) = decode(&cut) {
            assert!(e.header.is_some());
        }
    }
}

#[test]
fn malformed_inputs_name_the_problem() {
    let mut b = sample_bytes();
    b[0] = 2;
    assert_eq!(decode(&b).unwrap_err().kind, DecodeErrorKind::BadVersion(2));

    let mut b = sample_bytes();
    b[1] = 99;
    let e = decode(&b).unwrap_err();
    assert_eq!(e.kind, DecodeErrorKind::UnknownType(99));
    assert_eq!(e.header.unwrap().transaction_id, 2);

    // Trailing bytes after a Close.
    let close = Payload::Close {
        reason: CloseReason::Other,
    };
    let trailing = |b: &mut Vec<u8>| {
        b.extend_from_slice(&[0, 0, 0, 0]);
        b[19] += 4;
    };
    assert_eq!(patched(close, trailing), DecodeErrorKind::TrailingBytes(4));

    // Unknown varbind type 3.
    let set = Payload::TestSet {
        varbinds: vec![VarBind::new(oid("1.3"), Value::Null)],
    };
    assert_eq!(
        patched(set, |b| b[21] = 3),
        DecodeErrorKind::UnknownValueType(3)
    );

    // OID with 200 sub-identifiers.
    let get = Payload::Get { ranges: ranges() };
    assert_eq!(
        patched(get, |b| b[20] = 200),
        DecodeErrorKind::TooManySubids(200)
    );

    // Context flag on a Response.
    let commit = |b: &mut Vec<u8>| b[2] |= flags::NON_DEFAULT_CONTEXT;
    assert!(matches!(
        patched(Payload::CommitSet, commit),
        DecodeErrorKind::Invalid(_)
    ));

    // Octet string length near u32::MAX must not overflow.
    let ping = Pdu {
        context: Some(vec![1]),
        ..Pdu::new(1, 1, 1, Payload::Ping)
    };
    let mut b = encode(&ping, ByteOrder::Big).unwrap();
    b[20..24].copy_from_slice(&u32::MAX.to_be_bytes());
    assert!(matches!(
        decode(&b).unwrap_err().kind,
        DecodeErrorKind::Truncated { .. }
    ));
}

/// What decoding says of `payload` (IDs 1, 1, 1, big-endian) once `patch`
/// has changed its bytes.
fn patched(payload: Payload, patch: impl FnOnce(&mut Vec<u8>)) -> DecodeErrorKind {
    let mut b = encode(&Pdu::new(1, 1, 1, payload), ByteOrder::Big).unwrap();
    patch(&mut b);
    decode(&b).unwrap_err().kind
}

#[test]
fn encode_rejects_what_cannot_be_carried() {
    // A context on a type without one (RFC 2741 6.1.1): not written
    // where the master would read it as the payload.
    let open = Payload::Open {
        timeout: 0,
        id: oid("1.3.6.1.3.117"),
        description: vec![],
    };
    let in_context = Pdu {
        context: Some(b"c".to_vec()),
        ..Pdu::new(1, 1, 1, open)
    };
    assert!(matches!(
        encode(&in_context, ByteOrder::Big),
        Err(EncodeError::Invalid(_))
    ));
    let long = Oid((0..200).collect());
    let pdu = Pdu::new(
        1,
        1,
        1,
        Payload::Get {
            ranges: vec![SearchRange {
                start: long,
                include: false,
                end: Oid::default(),
            }],
        },
    );
    assert!(matches!(
        encode(&pdu, ByteOrder::Big),
        Err(EncodeError::OidTooLong(200))
    ));
    let pdu = Pdu::new(
        1,
        1,
        1,
        Payload::Register {
            timeout: 0,
            region: Region {
                range_subid: 2,
                ..Region::subtree(oid("1.3"), 1)
            },
        },
    );
    assert!(encode(&pdu, ByteOrder::Big).is_err());
}

/// Deterministic xorshift PRNG: the same inputs on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let base = sample_bytes();
    for i in 0..20_000 {
        let mut b: Vec<u8> = if i % 2 == 0 {
            // Mutate a valid PDU: keeps the header mostly intact.
            let mut b = base.clone();
            for _ in 0..(1 + rng.next() % 4) {
                let p = (rng.next() as usize) % b.len();
                b[p] = rng.next() as u8;
            }
            b
        } else {
            let n = (rng.next() % 96) as usize;
            (0..n).map(|_| rng.next() as u8).collect()
        };
        if i % 3 == 0 && b.len() >= HEADER_LEN {
            b[0] = 1;
            let len = (b.len() - HEADER_LEN) as u32;
            b[16..20].copy_from_slice(&len.to_be_bytes());
            b[2] |= flags::NETWORK_BYTE_ORDER;
        }
        let _ = decode(&b);
        let mut f = Framer::new(256);
        f.push(&b);
        for _ in 0..8 {
            match f.next_frame() {
                Some(Ok(frame)) => {
                    let _ = decode(&frame);
                }
                Some(Err(FrameError::Desync(_))) | None => break,
                Some(Err(FrameError::Oversized { .. })) => {}
            }
        }
    }
}

#[test]
fn framer_handles_partial_and_joined_reads() {
    let a = sample_bytes();
    let b = encode(&Pdu::new(4, 5, 6, Payload::CommitSet), ByteOrder::Little).unwrap();
    let mut stream = a.clone();
    stream.extend_from_slice(&b);
    stream.extend_from_slice(&a);
    for chunk in [1usize, 3, 7, 20, 64, stream.len()] {
        let mut f = Framer::new(DEFAULT_MAX_PDU);
        let mut out = Vec::new();
        for c in stream.chunks(chunk) {
            f.push(c);
            while let Some(r) = f.next_frame() {
                out.push(r.unwrap());
            }
        }
        assert_eq!(out, vec![a.clone(), b.clone(), a.clone()], "chunk {chunk}");
        assert_eq!(f.buffered(), 0);
    }
}

#[test]
fn framer_skips_oversized_and_stays_in_sync() {
    let small = encode(&Pdu::new(1, 1, 1, Payload::CommitSet), ByteOrder::Big).unwrap();
    let big = encode(
        &Pdu::new(
            2,
            3,
            4,
            Payload::TestSet {
                varbinds: vec![VarBind::new(
                    oid("1.3.6.1.3.117.1"),
                    Value::OctetString(vec![0xaa; 1000]),
                )],
            },
        ),
        ByteOrder::Big,
    )
    .unwrap();
    let mut stream = big.clone();
    stream.extend_from_slice(&small);
    for chunk in [1usize, 13, 500, stream.len()] {
        let mut f = Framer::new(256);
        let mut frames = Vec::new();
        let mut oversized = Vec::new();
        for c in stream.chunks(chunk) {
            f.push(c);
            while let Some(r) = f.next_frame() {
                match r {
                    Ok(fr) => frames.push(fr),
                    Err(FrameError::Oversized { header, max }) => {
                        assert_eq!(max, 256);
                        oversized.push(header)
                    }
                    Err(e) => panic!("{e}"),
                }
            }
        }
        assert_eq!(oversized.len(), 1, "chunk {chunk}");
        assert_eq!(oversized[0].packet_id, 4);
        assert_eq!(oversized[0].pdu_type, PduType::TestSet as u8);
        assert_eq!(frames, vec![small.clone()], "chunk {chunk}");
    }
}

#[test]
fn framer_desync_is_sticky_until_reset() {
    let mut f = Framer::new(DEFAULT_MAX_PDU);
    f.push(&[7u8; 40]);
    assert!(matches!(f.next_frame(), Some(Err(FrameError::Desync(_)))));
    f.push(&sample_bytes());
    assert!(matches!(f.next_frame(), Some(Err(FrameError::Desync(_)))));
    f.reset();
    f.push(&sample_bytes());
    assert_eq!(f.next_frame(), Some(Ok(sample_bytes())));
}

#[test]
fn varbind_len_is_the_encoded_length() {
    let mut vbs = all_values();
    vbs.push(VarBind::new(
        oid("1.3.6.1.3.117.1.2"),
        Value::OctetString(vec![1; 5]),
    ));
    vbs.push(VarBind::new(oid("1.2.3"), Value::Null));
    vbs.push(VarBind::new(Oid::default(), Value::Counter64(1)));
    for vb in vbs {
        let one = |v: Vec<VarBind>| {
            let p = Pdu::new(1, 2, 3, Payload::Notify { varbinds: v });
            encode(&p, ByteOrder::Big).unwrap().len()
        };
        assert_eq!(
            one(vec![vb.clone()]) - one(vec![]),
            varbind_len(&vb),
            "{vb:?}"
        );
    }
}
