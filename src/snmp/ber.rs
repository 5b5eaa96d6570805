//! A check of a received message's BER framing before it is decoded, and
//! the one rewrite RFC 3416 asks of a receiver. Pure.
//!
//! - The message is one TLV: octets after it are refused (a decoder that
//!   stops at the end of the first value would answer a datagram that
//!   carries more than the message).
//! - Every length is definite (RFC 3417 §8 prohibits the indefinite form);
//!   the long form may use more octets than needed (§8 permits it).
//! - A GetBulkRequest's non-repeaters and max-repetitions are INTEGERs of
//!   0..2147483647, but RFC 3416 §4.2.3 has a receiver treat a negative one
//!   as 0: such a field is rewritten to 0 before the message is decoded
//!   (the decoder's field is unsigned).

use std::borrow::Cow;

/// The smallest message size every SNMP entity must accept (RFC 3417 §3.2;
/// the least msgMaxSize RFC 3412 allows). The largest is
/// [`MAX_UDP_PAYLOAD`](crate::mib::bulk::MAX_UDP_PAYLOAD), which the AgentX
/// front end shares.
pub const MIN_MESSAGE_SIZE: usize = 484;

/// Constructed values nested deeper than this are not looked into (an SNMP
/// message nests 6 deep at most; the decoder bounds the rest).
const MAX_DEPTH: usize = 16;

const GET_BULK: u8 = 0xa5;
const INTEGER: u8 = 0x02;

/// Why a message's framing is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BerError {
    /// Not one whole TLV (too short, or a length past the end).
    Truncated,
    /// An indefinite length.
    Indefinite,
    /// Octets after the message.
    Trailing,
    /// A tag of more than one octet (no SNMP type has one).
    LongTag,
}

impl std::fmt::Display for BerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            BerError::Truncated => "a length runs past the end of the datagram",
            BerError::Indefinite => "an indefinite length (RFC 3417 §8 prohibits it)",
            BerError::Trailing => "octets after the message",
            BerError::LongTag => "a multi-octet tag",
        })
    }
}

/// One TLV at the front of `b`: (tag, content range, total length).
fn tlv(b: &[u8]) -> Result<(u8, std::ops::Range<usize>, usize), BerError> {
    let (&tag, rest) = b.split_first().ok_or(BerError::Truncated)?;
    if tag & 0x1f == 0x1f {
        return Err(BerError::LongTag);
    }
    let (&first, rest) = rest.split_first().ok_or(BerError::Truncated)?;
    let (len, head) = match first {
        0x80 => return Err(BerError::Indefinite),
        l if l < 0x80 => (usize::from(l), 2),
        l => {
            let n = usize::from(l & 0x7f);
            let octets = rest.get(..n).ok_or(BerError::Truncated)?;
            if n > 4 {
                // More than 4 octets of length: only zeros may lead.
                if octets[..n - 4].iter().any(|&o| o != 0) {
                    return Err(BerError::Truncated);
                }
            }
            let len = octets.iter().fold(0usize, |a, &o| {
                a.saturating_mul(256).saturating_add(o.into())
            });
            (len, 2 + n)
        }
    };
    let end = head.checked_add(len).ok_or(BerError::Truncated)?;
    if end > b.len() {
        return Err(BerError::Truncated);
    }
    Ok((tag, head..end, end))
}

fn push_tlv(out: &mut Vec<u8>, tag: u8, content: &[u8]) {
    out.push(tag);
    push_len(out, content.len());
    out.extend_from_slice(content);
}

/// A BER length in its minimal form: one octet below 128, else 0x80 plus
/// the count of the big-endian octets that follow.
pub(super) fn push_len(out: &mut Vec<u8>, n: usize) {
    if n < 0x80 {
        out.push(n as u8);
    } else {
        let be = (n as u64).to_be_bytes();
        let skip = be.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (8 - skip) as u8);
        out.extend_from_slice(&be[skip..]);
    }
}

/// Checks the framing of the constructed content `b` (its children, to the
/// end) and returns it rewritten when a GetBulk field was negative.
fn children(b: &[u8], bulk: bool, depth: usize) -> Result<Option<Vec<u8>>, BerError> {
    let mut pos = 0;
    let mut index = 0;
    let mut out: Option<Vec<u8>> = None;
    while pos < b.len() {
        let (tag, content, len) = tlv(&b[pos..])?;
        let whole = &b[pos..pos + len];
        let body = &whole[content];
        let rewritten = if bulk && (index == 1 || index == 2) && tag == INTEGER {
            // RFC 3416 4.2.3: a negative field counts as 0.
            body.first()
                .is_some_and(|o| o & 0x80 != 0)
                .then(|| vec![INTEGER, 1, 0])
        } else if tag & 0x20 != 0 && depth < MAX_DEPTH {
            children(body, tag == GET_BULK, depth + 1)?.map(|c| {
                let mut v = Vec::with_capacity(c.len() + 6);
                push_tlv(&mut v, tag, &c);
                v
            })
        } else {
            None
        };
        match (rewritten, &mut out) {
            (Some(r), Some(o)) => o.extend_from_slice(&r),
            (Some(r), None) => {
                let mut o = Vec::with_capacity(b.len());
                o.extend_from_slice(&b[..pos]);
                o.extend_from_slice(&r);
                out = Some(o);
            }
            (None, Some(o)) => o.extend_from_slice(whole),
            (None, None) => {}
        }
        pos += len;
        index += 1;
    }
    Ok(out)
}

/// `msg` checked (one TLV, definite lengths; octets after it refused unless
/// `trailing_ok`), with a GetBulk's negative non-repeaters and
/// max-repetitions rewritten to 0; borrowed when nothing was rewritten.
pub fn normalize(msg: &[u8], trailing_ok: bool) -> Result<Cow<'_, [u8]>, BerError> {
    let (tag, content, len) = tlv(msg)?;
    if len != msg.len() && !trailing_ok {
        return Err(BerError::Trailing);
    }
    if tag & 0x20 == 0 {
        return Ok(Cow::Borrowed(&msg[..len]));
    }
    match children(&msg[content.clone()], tag == GET_BULK, 1)? {
        None => Ok(Cow::Borrowed(&msg[..len])),
        Some(c) => {
            let mut v = Vec::with_capacity(c.len() + 6);
            push_tlv(&mut v, tag, &c);
            Ok(Cow::Owned(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bulk(non_rep: &[u8], max_rep: &[u8]) -> Vec<u8> {
        let mut pdu = vec![0x02, 0x01, 0x07];
        push_tlv(&mut pdu, INTEGER, non_rep);
        push_tlv(&mut pdu, INTEGER, max_rep);
        pdu.extend_from_slice(&[0x30, 0x00]);
        let mut inner = vec![0x02, 0x01, 0x01, 0x04, 0x01, b'p'];
        push_tlv(&mut inner, GET_BULK, &pdu);
        let mut msg = Vec::new();
        push_tlv(&mut msg, 0x30, &inner);
        msg
    }

    #[test]
    fn negative_bulk_fields_become_zero() {
        let m = bulk(&[0xff], &[0x80, 0x00, 0x00, 0x00]);
        let n = normalize(&m, false).unwrap();
        assert_eq!(n.as_ref(), bulk(&[0x00], &[0x00]).as_slice());
        // Non-negative ones are left alone, and nothing is copied.
        let m = bulk(&[0x00], &[0x7f, 0xff]);
        assert!(matches!(normalize(&m, false).unwrap(), Cow::Borrowed(_)));
        let m = bulk(&[0x05], &[0xfe]);
        assert_eq!(
            normalize(&m, false).unwrap().as_ref(),
            bulk(&[0x05], &[0x00]).as_slice()
        );
    }

    #[test]
    fn trailing_octets_and_indefinite_lengths_are_refused() {
        let mut m = bulk(&[0x00], &[0x0a]);
        assert!(normalize(&m, false).is_ok());
        m.push(0);
        assert_eq!(normalize(&m, false), Err(BerError::Trailing));
        assert!(normalize(&m, true).is_ok());
        // 30 80 ... 00 00
        let indefinite = [0x30, 0x80, 0x02, 0x01, 0x01, 0x00, 0x00];
        assert_eq!(normalize(&indefinite, false), Err(BerError::Indefinite));
        // A long-form length with more octets than needed is legal BER.
        let long = [0x30, 0x82, 0x00, 0x03, 0x02, 0x01, 0x01];
        assert!(normalize(&long, false).is_ok());
        for cut in 0..m.len() - 1 {
            assert!(normalize(&m[..cut], false).is_err(), "{cut}");
        }
        assert_eq!(normalize(&[0x3f, 0x00], false), Err(BerError::LongTag));
        assert_eq!(
            normalize(&[0x30, 0x89, 1, 0, 0, 0, 0, 0, 0, 0, 0], false),
            Err(BerError::Truncated)
        );
    }
}
