//! Conversions between the crate's `Oid`/`Value`/`VarBind` and the BER types
//! of `rasn-snmp`, plus exact BER size arithmetic for bounding responses.

use rasn::types::{Integer, ObjectIdentifier, OctetString};
use rasn_smi::v1::{Counter, Gauge, IpAddress, TimeTicks};
use rasn_smi::v2::{ApplicationSyntax, Counter64, ObjectSyntax, Opaque, SimpleSyntax};
use rasn_snmp::v2::{self, VarBindValue};

use super::ber::push_len;
use crate::mib::{Oid, Value, VarBind};

/// A wire OID for `oid`, or `None` when BER cannot carry it: fewer than two
/// sub-identifiers, a first arc above 2, a second arc above 39 under arcs 0
/// and 1, or a second arc under arc 2 so large that `2*40 + second` overflows
/// the 32-bit first sub-identifier.
pub fn wire_oid(oid: &Oid) -> Option<ObjectIdentifier> {
    let s = oid.as_slice();
    if s.len() < 2 {
        return None;
    }
    let ok = match s[0] {
        0 | 1 => s[1] <= 39,
        2 => s[1] <= u32::MAX - 80,
        _ => false,
    };
    if !ok {
        return None;
    }
    ObjectIdentifier::new(s.to_vec())
}

/// The crate's `Oid` for a decoded wire OID.
pub fn from_wire_oid(oid: &ObjectIdentifier) -> Oid {
    Oid(oid.to_vec())
}

/// An `Opaque` holding exactly `bytes`. `rasn-smi` keeps the field private and
/// its only constructor BER-encodes its argument first, so the value is
/// built by decoding a `[APPLICATION 4]` primitive around the bytes.
fn opaque(bytes: &[u8]) -> Option<Opaque> {
    let mut enc = Vec::with_capacity(bytes.len() + 6);
    enc.push(0x44);
    push_len(&mut enc, bytes.len());
    enc.extend_from_slice(bytes);
    rasn::ber::decode::<Opaque>(&enc).ok()
}

/// The BER value for `value`, or `None` when it cannot be carried (an OID
/// value that BER cannot encode).
pub fn to_wire_value(value: &Value) -> Option<VarBindValue> {
    let syn = |s: ObjectSyntax| Some(VarBindValue::Value(s));
    match value {
        Value::Integer(i) => syn(ObjectSyntax::Simple(SimpleSyntax::Integer(Integer::from(
            *i,
        )))),
        Value::OctetString(b) => syn(ObjectSyntax::Simple(SimpleSyntax::String(
            OctetString::from(b.clone()),
        ))),
        Value::Null => Some(VarBindValue::Unspecified),
        Value::ObjectIdentifier(o) => {
            syn(ObjectSyntax::Simple(SimpleSyntax::ObjectId(wire_oid(o)?)))
        }
        Value::IpAddress(a) => syn(ObjectSyntax::ApplicationWide(ApplicationSyntax::Address(
            IpAddress((*a).into()),
        ))),
        Value::Counter32(c) => syn(ObjectSyntax::ApplicationWide(ApplicationSyntax::Counter(
            Counter(*c),
        ))),
        Value::Gauge32(g) => syn(ObjectSyntax::ApplicationWide(ApplicationSyntax::Unsigned(
            Gauge(*g),
        ))),
        Value::TimeTicks(t) => syn(ObjectSyntax::ApplicationWide(ApplicationSyntax::Ticks(
            TimeTicks(*t),
        ))),
        Value::Opaque(b) => syn(ObjectSyntax::ApplicationWide(ApplicationSyntax::Arbitrary(
            opaque(b)?,
        ))),
        Value::Counter64(c) => syn(ObjectSyntax::ApplicationWide(
            ApplicationSyntax::BigCounter(Counter64(*c)),
        )),
        Value::NoSuchObject => Some(VarBindValue::NoSuchObject),
        Value::NoSuchInstance => Some(VarBindValue::NoSuchInstance),
        Value::EndOfMibView => Some(VarBindValue::EndOfMibView),
    }
}

/// Why a received value could not become a `Value`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ValueError {
    /// An INTEGER outside the Integer32 range.
    IntegerRange,
}

/// The crate's `Value` for a decoded BER value.
pub fn from_wire_value(v: &VarBindValue) -> Result<Value, ValueError> {
    Ok(match v {
        VarBindValue::Unspecified => Value::Null,
        VarBindValue::NoSuchObject => Value::NoSuchObject,
        VarBindValue::NoSuchInstance => Value::NoSuchInstance,
        VarBindValue::EndOfMibView => Value::EndOfMibView,
        VarBindValue::Value(ObjectSyntax::Simple(s)) => match s {
            SimpleSyntax::Integer(i) => {
                Value::Integer(i32::try_from(i).map_err(|_| ValueError::IntegerRange)?)
            }
            SimpleSyntax::String(b) => Value::OctetString(b.to_vec()),
            SimpleSyntax::ObjectId(o) => Value::ObjectIdentifier(from_wire_oid(o)),
        },
        VarBindValue::Value(ObjectSyntax::ApplicationWide(a)) => match a {
            ApplicationSyntax::Address(ip) => {
                let mut b = [0u8; 4];
                b.copy_from_slice(&ip.0[..]);
                Value::IpAddress(b)
            }
            ApplicationSyntax::Counter(c) => Value::Counter32(c.0),
            ApplicationSyntax::Ticks(t) => Value::TimeTicks(t.0),
            ApplicationSyntax::Arbitrary(o) => Value::Opaque(o.as_ref().to_vec()),
            ApplicationSyntax::BigCounter(c) => Value::Counter64(c.0),
            ApplicationSyntax::Unsigned(g) => Value::Gauge32(g.0),
        },
    })
}

/// A wire varbind for `vb`, or `None` when its name or value cannot be encoded.
pub fn to_wire_varbind(vb: &VarBind) -> Option<v2::VarBind> {
    Some(v2::VarBind {
        name: wire_oid(&vb.name)?,
        value: to_wire_value(&vb.value)?,
    })
}

/// Number of octets of a BER definite length field for content of `n` octets.
pub fn len_len(n: usize) -> usize {
    if n < 0x80 {
        1
    } else {
        1 + (usize::BITS as usize / 8 - n.leading_zeros() as usize / 8)
    }
}

/// Octets of a TLV with a one-octet tag and `n` content octets.
pub fn tlv(n: usize) -> usize {
    1 + len_len(n) + n
}

/// Octets of a BER INTEGER holding `v`.
pub fn int_size(v: i64) -> usize {
    let mut n = 1;
    let mut x = v;
    while !(-128..=127).contains(&x) {
        x >>= 8;
        n += 1;
    }
    tlv(n)
}

/// Octets of the BER encoding of one varbind.
pub fn varbind_size(vb: &v2::VarBind) -> Option<usize> {
    rasn::ber::encode(vb).ok().map(|v| v.len())
}

/// Octets of a Response PDU (its whole TLV) whose varbinds' encodings
/// total `vbs`.
pub fn pdu_size(request_id: i32, status: u32, index: u32, vbs: usize) -> usize {
    tlv(int_size(request_id.into()) + int_size(status.into()) + int_size(index.into()) + tlv(vbs))
}

/// The largest total of varbind encodings a Response PDU with no error
/// (`request_id`, status and index 0) holds within `max_pdu` octets: a
/// total `t` fits when `t <=` this, as `pdu_size(request_id, 0, 0, t) <=
/// max_pdu` says.
pub fn varbinds_within(max_pdu: usize, request_id: i32) -> usize {
    let fixed = int_size(request_id.into()) + 2 * int_size(0);
    max_pdu_within(max_pdu_within(max_pdu, fixed), 0)
}

/// Octets of an SNMPv1/v2c message around a PDU of `pdu` octets.
#[cfg(test)]
pub fn community_message_size(version: i64, community_len: usize, pdu: usize) -> usize {
    tlv(int_size(version) + tlv(community_len) + pdu)
}

/// The largest PDU (its whole TLV) that fits in a message of `max_message`
/// octets whose other content totals `fixed` octets (`tlv(fixed + pdu)`).
pub fn max_pdu_within(max_message: usize, fixed: usize) -> usize {
    // tlv(fixed + p) = 1 + len_len(fixed + p) + fixed + p
    (1..=5)
        .filter_map(|ll| {
            let p = max_message.checked_sub(1 + ll + fixed)?;
            (len_len(fixed + p) <= ll).then_some(p)
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rasn_snmp::{v2::Pdu, v2::Response, v2c::Message};

    fn all_values() -> Vec<Value> {
        vec![
            Value::Integer(i32::MIN),
            Value::Integer(-1),
            Value::Integer(0),
            Value::Integer(i32::MAX),
            Value::OctetString(vec![]),
            Value::OctetString(vec![0, 0xff, 0x80, b'a']),
            Value::Null,
            Value::ObjectIdentifier(Oid::new(&[1, 3, 6, 1, 4294967295])),
            Value::IpAddress([10, 0, 0, 255]),
            Value::Counter32(u32::MAX),
            Value::Gauge32(0x8000_0000),
            Value::TimeTicks(123456),
            Value::Opaque(vec![0x9f, 0x78, 0x04, 0x42, 0xf6, 0x00, 0x00]),
            Value::Counter64(u64::MAX),
            Value::Counter64(0),
            Value::NoSuchObject,
            Value::NoSuchInstance,
            Value::EndOfMibView,
        ]
    }

    #[test]
    fn every_value_round_trips_through_ber() {
        for v in all_values() {
            let wire = to_wire_value(&v).unwrap();
            let bytes = rasn::ber::encode(&wire).unwrap();
            let back: VarBindValue = rasn::ber::decode(&bytes).unwrap();
            assert_eq!(from_wire_value(&back).unwrap(), v, "{v:?} -> {bytes:02x?}");
        }
    }

    #[test]
    fn unsigned_types_use_their_application_tags_and_sign_octet() {
        let enc = |v: Value| rasn::ber::encode(&to_wire_value(&v).unwrap()).unwrap();
        // X.690: an unsigned value with the top bit set needs a leading zero octet.
        assert_eq!(
            enc(Value::Counter64(u64::MAX)),
            [0x46, 9, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(
            enc(Value::Counter32(u32::MAX)),
            [0x41, 5, 0, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(enc(Value::Gauge32(1)), [0x42, 1, 1]);
        assert_eq!(enc(Value::TimeTicks(0)), [0x43, 1, 0]);
        assert_eq!(enc(Value::IpAddress([1, 2, 3, 4])), [0x40, 4, 1, 2, 3, 4]);
        assert_eq!(enc(Value::Opaque(vec![7])), [0x44, 1, 7]);
        assert_eq!(enc(Value::EndOfMibView), [0x82, 0]);
        assert_eq!(enc(Value::Null), [0x05, 0]);
    }

    #[test]
    fn unencodable_oids_are_refused() {
        assert!(wire_oid(&Oid::new(&[])).is_none());
        assert!(wire_oid(&Oid::new(&[1])).is_none());
        assert!(wire_oid(&Oid::new(&[3, 1])).is_none());
        assert!(wire_oid(&Oid::new(&[1, 40])).is_none());
        assert!(wire_oid(&Oid::new(&[2, u32::MAX])).is_none());
        assert!(wire_oid(&Oid::new(&[2, 999, 4294967295])).is_some());
    }

    #[test]
    fn integer_out_of_range_is_an_error() {
        let v = VarBindValue::Value(ObjectSyntax::Simple(SimpleSyntax::Integer(Integer::from(
            1i64 << 40,
        ))));
        assert_eq!(from_wire_value(&v), Err(ValueError::IntegerRange));
    }

    #[test]
    fn int_size_matches_ber() {
        for v in [
            0i64,
            1,
            -1,
            127,
            128,
            -128,
            -129,
            255,
            256,
            32767,
            32768,
            i32::MAX as i64,
            i32::MIN as i64,
            u32::MAX as i64,
        ] {
            assert_eq!(
                int_size(v),
                rasn::ber::encode(&Integer::from(v)).unwrap().len(),
                "{v}"
            );
        }
    }

    /// The computed message size equals the encoder's output across the
    /// length-of-length boundaries (127/128, 255/256, 65535/65536 octets).
    #[test]
    fn message_size_is_exact() {
        let name = ObjectIdentifier::new(vec![1, 3, 6, 1, 4, 1, 99999, 1]).unwrap();
        for (community, rid) in [
            ("public", 0i32),
            ("x", -5),
            ("a-longer-community", i32::MAX),
        ] {
            for len in [
                0usize, 1, 90, 100, 110, 120, 200, 240, 260, 1000, 65400, 65530, 70000,
            ] {
                let vb = v2::VarBind {
                    name: name.clone(),
                    value: to_wire_value(&Value::OctetString(vec![0x5a; len])).unwrap(),
                };
                for count in [0usize, 1, 2, 3] {
                    let vbs = vec![vb.clone(); count];
                    let sum: usize = vbs.iter().map(|v| varbind_size(v).unwrap()).sum();
                    let msg = Message {
                        version: 1.into(),
                        community: community.as_bytes().to_vec().into(),
                        data: v2::Pdus::Response(Response(Pdu {
                            request_id: rid,
                            error_status: 0,
                            error_index: 0,
                            variable_bindings: vbs,
                        })),
                    };
                    let real = rasn::ber::encode(&msg).unwrap().len();
                    let pdu = pdu_size(rid, 0, 0, sum);
                    assert_eq!(
                        community_message_size(1, community.len(), pdu),
                        real,
                        "len {len} count {count}"
                    );
                }
            }
        }
    }

    /// The largest PDU that fits is exact: one octet more does not fit.
    #[test]
    fn max_pdu_within_is_the_largest_that_fits() {
        for community in [0usize, 6, 120, 300] {
            let fixed = int_size(1) + tlv(community);
            for max in [484usize, 1472, 1500, 4096, 65507, 130, 131, 132, 260, 65540] {
                let p = max_pdu_within(max, fixed);
                if community_message_size(1, community, 0) > max {
                    assert_eq!(p, 0);
                    continue;
                }
                assert!(
                    community_message_size(1, community, p) <= max,
                    "{community} {max}"
                );
                assert!(
                    community_message_size(1, community, p + 1) > max,
                    "{community} {max}"
                );
            }
        }
        assert_eq!(max_pdu_within(3, 10), 0);
    }

    #[test]
    fn varbinds_within_is_the_largest_total_that_fits() {
        for rid in [0, 1, -1, 300, i32::MAX, i32::MIN] {
            for max in [13usize, 14, 20, 130, 131, 140, 484, 1472, 65507, 70000] {
                let t = varbinds_within(max, rid);
                if pdu_size(rid, 0, 0, 0) > max {
                    assert_eq!(t, 0);
                    continue;
                }
                assert!(pdu_size(rid, 0, 0, t) <= max, "{rid} {max}");
                assert!(pdu_size(rid, 0, 0, t + 1) > max, "{rid} {max}");
            }
        }
    }
}
