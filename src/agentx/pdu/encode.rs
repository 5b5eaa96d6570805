//! The encoding half of the AgentX codec: a PDU into its bytes, in the
//! byte order the session negotiated.

use super::*;

struct Writer {
    order: ByteOrder,
    buf: Vec<u8>,
}

impl Writer {
    fn u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    fn u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&self.order.u16_bytes(v));
    }
    fn u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&self.order.u32_bytes(v));
    }
    fn u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&self.order.u64_bytes(v));
    }
    /// RFC 2741 5.1, with the 1.3.6.1.x prefix compression.
    fn oid(&mut self, oid: &Oid, include: bool) -> Result<(), EncodeError> {
        let s = oid.as_slice();
        let (prefix, rest) = if s.len() >= 5 && s[..4] == [1, 3, 6, 1] && (1..=255).contains(&s[4])
        {
            (s[4] as u8, &s[5..])
        } else {
            (0u8, s)
        };
        if rest.len() > MAX_SUBIDS {
            return Err(EncodeError::OidTooLong(s.len()));
        }
        self.u8(rest.len() as u8);
        self.u8(prefix);
        self.u8(include as u8);
        self.u8(0);
        for &x in rest {
            self.u32(x);
        }
        Ok(())
    }
    /// RFC 2741 5.3: length, octets, zero padding to a multiple of 4.
    fn octets(&mut self, b: &[u8]) -> Result<(), EncodeError> {
        let len = u32::try_from(b.len()).map_err(|_| EncodeError::StringTooLong(b.len()))?;
        self.u32(len);
        self.buf.extend_from_slice(b);
        let pad = (4 - b.len() % 4) % 4;
        self.buf.extend(std::iter::repeat_n(0u8, pad));
        Ok(())
    }
    /// The fields of a Register or Unregister (RFC 2741 6.2.3, 6.2.4).
    fn region(&mut self, timeout: u8, region: &Region) -> Result<(), EncodeError> {
        self.u8(timeout);
        self.u8(region.priority);
        self.u8(region.range_subid);
        self.u8(0);
        self.oid(&region.subtree, false)?;
        match (region.range_subid, region.upper_bound) {
            (0, None) => Ok(()),
            (0, Some(_)) => Err(EncodeError::Invalid("upper_bound without range_subid")),
            (_, Some(b)) => {
                self.u32(b);
                Ok(())
            }
            (_, None) => Err(EncodeError::Invalid("range_subid without upper_bound")),
        }
    }
    fn ranges(&mut self, ranges: &[SearchRange]) -> Result<(), EncodeError> {
        for r in ranges {
            self.oid(&r.start, r.include)?;
            self.oid(&r.end, false)?;
        }
        Ok(())
    }
    fn varbinds(&mut self, vbs: &[VarBind]) -> Result<(), EncodeError> {
        for vb in vbs {
            self.u16(value_type(&vb.value));
            self.u16(0);
            self.oid(&vb.name, false)?;
            match &vb.value {
                Value::Integer(v) => self.u32(*v as u32),
                Value::OctetString(b) | Value::Opaque(b) => self.octets(b)?,
                Value::IpAddress(a) => self.octets(a)?,
                Value::ObjectIdentifier(o) => self.oid(o, false)?,
                Value::Counter32(v) | Value::Gauge32(v) | Value::TimeTicks(v) => self.u32(*v),
                Value::Counter64(v) => self.u64(*v),
                Value::Null | Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => {
                }
            }
        }
        Ok(())
    }
}

/// Encoded length of an OID (RFC 2741 5.1), with the 1.3.6.1.x prefix
/// compression `encode` applies.
fn oid_len(oid: &Oid) -> usize {
    let s = oid.as_slice();
    let rest = if s.len() >= 5 && s[..4] == [1, 3, 6, 1] && (1..=255).contains(&s[4]) {
        s.len() - 5
    } else {
        s.len()
    };
    4 + 4 * rest
}

/// Encoded length of one varbind (RFC 2741 5.4), as `encode` writes it:
/// what a response of bounded size can still take.
pub fn varbind_len(vb: &VarBind) -> usize {
    let octets = |n: usize| 4 + n.div_ceil(4) * 4;
    let value = match &vb.value {
        Value::Integer(_) | Value::Counter32(_) | Value::Gauge32(_) | Value::TimeTicks(_) => 4,
        Value::Counter64(_) => 8,
        Value::OctetString(b) | Value::Opaque(b) => octets(b.len()),
        Value::IpAddress(a) => octets(a.len()),
        Value::ObjectIdentifier(o) => oid_len(o),
        Value::Null | Value::NoSuchObject | Value::NoSuchInstance | Value::EndOfMibView => 0,
    };
    4 + oid_len(&vb.name) + value
}

/// AgentX varbind type code (RFC 2741 5.4).
pub fn value_type(v: &Value) -> u16 {
    match v {
        Value::Integer(_) => 2,
        Value::OctetString(_) => 4,
        Value::Null => 5,
        Value::ObjectIdentifier(_) => 6,
        Value::IpAddress(_) => 64,
        Value::Counter32(_) => 65,
        Value::Gauge32(_) => 66,
        Value::TimeTicks(_) => 67,
        Value::Opaque(_) => 68,
        Value::Counter64(_) => 70,
        Value::NoSuchObject => 128,
        Value::NoSuchInstance => 129,
        Value::EndOfMibView => 130,
    }
}

/// Encodes `pdu` in byte order `order`.
pub fn encode(pdu: &Pdu, order: ByteOrder) -> Result<Vec<u8>, EncodeError> {
    let mut w = Writer {
        order,
        buf: Vec::with_capacity(64),
    };
    let ty = pdu.payload.pdu_type();
    let mut fl = pdu.flags & !(flags::NETWORK_BYTE_ORDER | flags::NON_DEFAULT_CONTEXT);
    if order == ByteOrder::Big {
        fl |= flags::NETWORK_BYTE_ORDER;
    }
    match (&pdu.context, ty.has_context()) {
        (None, _) => {}
        (Some(_), true) => fl |= flags::NON_DEFAULT_CONTEXT,
        (Some(_), false) => {
            return Err(EncodeError::Invalid("a context on a PDU type without one"));
        }
    }
    w.u8(1);
    w.u8(ty as u8);
    w.u8(fl);
    w.u8(0);
    w.u32(pdu.session_id);
    w.u32(pdu.transaction_id);
    w.u32(pdu.packet_id);
    w.u32(0); // payload_length, patched below
    if let Some(context) = &pdu.context {
        w.octets(context)?;
    }
    match &pdu.payload {
        Payload::Open {
            timeout,
            id,
            description,
        } => {
            w.u8(*timeout);
            w.u8(0);
            w.u8(0);
            w.u8(0);
            w.oid(id, false)?;
            w.octets(description)?;
        }
        Payload::Close { reason } => {
            w.u8(reason.to_u8());
            w.u8(0);
            w.u8(0);
            w.u8(0);
        }
        Payload::Register { timeout, region } => w.region(*timeout, region)?,
        // The same fields; h.timeout is reserved (0).
        Payload::Unregister(region) => w.region(0, region)?,
        Payload::Get { ranges } | Payload::GetNext { ranges } => w.ranges(ranges)?,
        Payload::GetBulk {
            non_repeaters,
            max_repetitions,
            ranges,
        } => {
            w.u16(*non_repeaters);
            w.u16(*max_repetitions);
            w.ranges(ranges)?;
        }
        Payload::TestSet { varbinds }
        | Payload::Notify { varbinds }
        | Payload::IndexAllocate { varbinds }
        | Payload::IndexDeallocate { varbinds } => w.varbinds(varbinds)?,
        Payload::CommitSet | Payload::UndoSet | Payload::CleanupSet | Payload::Ping => {}
        Payload::AddAgentCaps { id, description } => {
            w.oid(id, false)?;
            w.octets(description)?;
        }
        Payload::RemoveAgentCaps { id } => w.oid(id, false)?,
        Payload::Response {
            sys_uptime,
            error,
            index,
            varbinds,
        } => {
            w.u32(*sys_uptime);
            w.u16(error.to_u16());
            w.u16(*index);
            w.varbinds(varbinds)?;
        }
    }
    let len = w.buf.len() - HEADER_LEN;
    let len = u32::try_from(len).map_err(|_| EncodeError::StringTooLong(len))?;
    w.buf[16..20].copy_from_slice(&order.u32_bytes(len));
    Ok(w.buf)
}
