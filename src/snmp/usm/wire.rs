//! The few BER facts the USM needs beyond `rasn`: where msgAuthenticationParameters
//! lie in an encoded message (the HMAC covers the message with those octets
//! zeroed).

use std::ops::Range;

/// Tag, content range of the TLV at `pos` in `buf` (definite lengths only;
/// the whole TLV inside `buf`).
fn tlv(buf: &[u8], pos: usize) -> Option<(u8, Range<usize>)> {
    let tag = *buf.get(pos)?;
    if tag & 0x1f == 0x1f {
        return None; // multi-octet tags never occur in an SNMP message header
    }
    let first = *buf.get(pos + 1)?;
    let (len, start) = if first < 0x80 {
        (first as usize, pos + 2)
    } else {
        let n = (first & 0x7f) as usize;
        if n == 0 || n > 4 {
            return None; // indefinite length, or more than 4 GB
        }
        let octets = buf.get(pos + 2..pos + 2 + n)?;
        let len = octets
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | *b as usize);
        (len, pos + 2 + n)
    };
    let end = start.checked_add(len)?;
    if end > buf.len() {
        return None;
    }
    Some((tag, start..end))
}

/// The range of msgAuthenticationParameters' content in an encoded SNMPv3
/// message, or `None` when `msg` is not one whole definite-length
/// message with USM security parameters in the place RFC 3412 §6 gives them.
pub fn auth_params_range(msg: &[u8]) -> Option<Range<usize>> {
    let (tag, body) = tlv(msg, 0)?;
    if tag != 0x30 || body.end != msg.len() {
        return None;
    }
    let (t, version) = tlv(msg, body.start)?; // msgVersion
    if t != 0x02 {
        return None;
    }
    let (t, header) = tlv(msg, version.end)?; // msgGlobalData
    if t != 0x30 {
        return None;
    }
    let (t, sec) = tlv(msg, header.end)?; // msgSecurityParameters
    if t != 0x04 {
        return None;
    }
    let (t, usm) = tlv(msg, sec.start)?; // UsmSecurityParameters
    if t != 0x30 || usm.end != sec.end {
        return None;
    }
    let mut pos = usm.start;
    // engine ID, boots, time, user name
    for want in [0x04, 0x02, 0x02, 0x04] {
        let (t, r) = tlv(msg, pos)?;
        if t != want {
            return None;
        }
        pos = r.end;
    }
    let (t, auth) = tlv(msg, pos)?;
    if t != 0x04 || auth.end > usm.end {
        return None;
    }
    Some(auth)
}
