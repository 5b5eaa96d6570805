//! The answers the core builds: a Response's header, a SET's answer, a
//! GetNext within its range, a GetBulk bounded in varbinds and octets.

use super::*;

/// The header of a decoded PDU, for its Response.
pub(super) fn header_of(pdu: &Pdu) -> Header {
    Header {
        version: 1,
        pdu_type: pdu.payload.pdu_type() as u8,
        flags: pdu.flags,
        session_id: pdu.session_id,
        transaction_id: pdu.transaction_id,
        packet_id: pdu.packet_id,
        payload_length: 0,
    }
}

pub(super) fn set_answer(h: &Header, r: Result<(), SetError>) -> Pdu {
    match r {
        Ok(()) => Pdu::response_to(h, ResError::NO_ERROR, 0, vec![]),
        Err(e) => Pdu::response_to(h, ResError::Snmp(e.status), e.index, vec![]),
    }
}

/// The answer to a Get or GetNext: every varbind, or tooBig with none when
/// they exceed [`MAX_RESPONSE_OCTETS`].
pub(super) fn whole_or_too_big(h: &Header, vbs: Vec<VarBind>) -> Pdu {
    let octets = vbs
        .iter()
        .map(pdu::varbind_len)
        .fold(0usize, usize::saturating_add);
    if octets > MAX_RESPONSE_OCTETS {
        tracing::debug!(
            varbinds = vbs.len(),
            octets,
            "AgentX answer too big; answering tooBig"
        );
        return Pdu::response_to(h, ResError::Snmp(ErrorStatus::TooBig), 0, vec![]);
    }
    Pdu::response_to(h, ResError::NO_ERROR, 0, vbs)
}

/// RFC 2741 7.2.3.2: the first instance in the range, or endOfMibView.
pub(super) fn next_in_range(handler: &dyn MibHandler, r: SearchRange) -> VarBind {
    let r = Range::from(r);
    bulk::next(handler, &r, |_| true).unwrap_or_else(|| VarBind::new(r.start, Value::EndOfMibView))
}

/// RFC 2741 7.2.3.3 ([`bulk::bulk`]): the first `non_repeaters` ranges
/// once, the others up to `max_repetitions` times, each range within its
/// end; the answer ends before the first varbind past
/// [`MAX_BULK_VARBINDS`] varbinds or [`MAX_RESPONSE_OCTETS`] octets of
/// them, non-repeaters included.
pub fn get_bulk(
    handler: &dyn MibHandler,
    non_repeaters: u16,
    max_repetitions: u16,
    ranges: &[SearchRange],
) -> Vec<VarBind> {
    let budget = Budget {
        varbinds: MAX_BULK_VARBINDS,
        octets: MAX_RESPONSE_OCTETS,
    };
    let ranges = ranges.iter().cloned().map(Range::from).collect();
    let sized = |vb: VarBind| {
        let n = pdu::varbind_len(&vb);
        Some((vb, n))
    };
    match bulk::bulk(
        handler,
        ranges,
        non_repeaters.into(),
        max_repetitions.into(),
        budget,
        sized,
    ) {
        Ok(b) => b.varbinds,
        // Every varbind has an AgentX encoding.
        Err(_) => Vec::new(),
    }
}
