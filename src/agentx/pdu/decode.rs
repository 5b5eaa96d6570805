//! The decoding half of the AgentX codec: bytes from the master into a
//! PDU, every length bounded before it is trusted.

use super::*;

struct Reader<'a> {
    order: ByteOrder,
    b: &'a [u8],
    pos: usize,
    header: Header,
}

impl<'a> Reader<'a> {
    fn err(&self, kind: DecodeErrorKind) -> DecodeError {
        DecodeError::new(kind, Some(self.header))
    }
    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        let have = self.b.len() - self.pos;
        if have < n {
            return Err(self.err(DecodeErrorKind::Truncated {
                what,
                need: n,
                have,
            }));
        }
        let s = &self.b[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self, what: &'static str) -> Result<u8, DecodeError> {
        Ok(self.take(1, what)?[0])
    }
    fn array<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N], DecodeError> {
        let mut a = [0u8; N];
        a.copy_from_slice(self.take(N, what)?);
        Ok(a)
    }
    fn u16(&mut self, what: &'static str) -> Result<u16, DecodeError> {
        Ok(self.order.u16_from(self.array(what)?))
    }
    fn u32(&mut self, what: &'static str) -> Result<u32, DecodeError> {
        Ok(self.order.u32_from(self.array(what)?))
    }
    fn u64(&mut self, what: &'static str) -> Result<u64, DecodeError> {
        Ok(self.order.u64_from(self.array(what)?))
    }
    fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }
    /// Returns the OID and its include flag.
    fn oid(&mut self, what: &'static str) -> Result<(Oid, bool), DecodeError> {
        let h = self.take(4, what)?;
        let (n, prefix, include) = (h[0], h[1], h[2]);
        if n as usize > MAX_SUBIDS {
            return Err(self.err(DecodeErrorKind::TooManySubids(n)));
        }
        let mut v = Vec::with_capacity(n as usize + 5);
        if prefix != 0 {
            v.extend_from_slice(&[1, 3, 6, 1, prefix as u32]);
        }
        for _ in 0..n {
            v.push(self.u32(what)?);
        }
        if include > 1 {
            return Err(self.err(DecodeErrorKind::Invalid("OID include flag (not 0 or 1)")));
        }
        Ok((Oid(v), include == 1))
    }
    fn octets(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        let len = self.u32(what)? as usize;
        let have = self.b.len() - self.pos;
        let padded = len.saturating_add((4 - len % 4) % 4);
        if padded > have {
            return Err(self.err(DecodeErrorKind::Truncated {
                what,
                need: padded,
                have,
            }));
        }
        let s = self.take(padded, what)?;
        Ok(s[..len].to_vec())
    }
    fn context(&mut self) -> Result<Option<Vec<u8>>, DecodeError> {
        if self.header.flags & flags::NON_DEFAULT_CONTEXT != 0 {
            Ok(Some(self.octets("context")?))
        } else {
            Ok(None)
        }
    }
    /// The fields of a Register or Unregister (RFC 2741 6.2.3, 6.2.4):
    /// the timeout byte and the region.
    fn region(&mut self) -> Result<(u8, Region), DecodeError> {
        let timeout = self.u8("Register timeout")?;
        let priority = self.u8("Register priority")?;
        let range_subid = self.u8("Register range_subid")?;
        self.u8("Register reserved")?;
        let (subtree, _) = self.oid("Register subtree")?;
        let upper_bound = if range_subid != 0 {
            Some(self.u32("Register upper_bound")?)
        } else {
            None
        };
        let region = Region {
            priority,
            range_subid,
            subtree,
            upper_bound,
        };
        Ok((timeout, region))
    }
    fn ranges(&mut self) -> Result<Vec<SearchRange>, DecodeError> {
        let mut out = Vec::new();
        while !self.at_end() {
            let (start, include) = self.oid("SearchRange start")?;
            let (end, _) = self.oid("SearchRange end")?;
            out.push(SearchRange {
                start,
                include,
                end,
            });
        }
        Ok(out)
    }
    fn varbinds(&mut self) -> Result<Vec<VarBind>, DecodeError> {
        let mut out = Vec::new();
        while !self.at_end() {
            let ty = self.u16("varbind type")?;
            self.u16("varbind reserved")?;
            let (name, _) = self.oid("varbind name")?;
            let value = match ty {
                2 => Value::Integer(self.u32("Integer32")? as i32),
                4 => Value::OctetString(self.octets("OCTET STRING")?),
                5 => Value::Null,
                6 => Value::ObjectIdentifier(self.oid("OBJECT IDENTIFIER value")?.0),
                64 => {
                    let b = self.octets("IpAddress")?;
                    let a: [u8; 4] = b.as_slice().try_into().map_err(|_| {
                        self.err(DecodeErrorKind::BadIpAddressLength(b.len() as u32))
                    })?;
                    Value::IpAddress(a)
                }
                65 => Value::Counter32(self.u32("Counter32")?),
                66 => Value::Gauge32(self.u32("Gauge32")?),
                67 => Value::TimeTicks(self.u32("TimeTicks")?),
                68 => Value::Opaque(self.octets("Opaque")?),
                70 => Value::Counter64(self.u64("Counter64")?),
                128 => Value::NoSuchObject,
                129 => Value::NoSuchInstance,
                130 => Value::EndOfMibView,
                t => return Err(self.err(DecodeErrorKind::UnknownValueType(t))),
            };
            out.push(VarBind { name, value });
        }
        Ok(out)
    }
}

/// Decodes one complete PDU: exactly header + h.payload_length bytes (as a
/// [`Framer`] yields them).
pub fn decode(bytes: &[u8]) -> Result<Pdu, DecodeError> {
    let header = Header::parse(bytes)?;
    let avail = bytes.len() - HEADER_LEN;
    if header.payload_length as usize != avail {
        return Err(DecodeError::new(
            DecodeErrorKind::LengthMismatch {
                payload_length: header.payload_length,
                available: avail,
            },
            Some(header),
        ));
    }
    let Some(ty) = PduType::from_u8(header.pdu_type) else {
        return Err(DecodeError::new(
            DecodeErrorKind::UnknownType(header.pdu_type),
            Some(header),
        ));
    };
    let mut r = Reader {
        order: header.byte_order(),
        b: &bytes[HEADER_LEN..],
        pos: 0,
        header,
    };
    if !ty.has_context() && header.flags & flags::NON_DEFAULT_CONTEXT != 0 {
        return Err(r.err(DecodeErrorKind::Invalid(
            "NON_DEFAULT_CONTEXT flag on a PDU type without context",
        )));
    }
    let context = r.context()?;
    let payload = match ty {
        PduType::Open => {
            let timeout = r.u8("Open timeout")?;
            r.take(3, "Open reserved")?;
            let (id, _) = r.oid("Open id")?;
            let description = r.octets("Open description")?;
            Payload::Open {
                timeout,
                id,
                description,
            }
        }
        PduType::Close => {
            let reason = CloseReason::from_u8(r.u8("Close reason")?);
            r.take(3, "Close reserved")?;
            Payload::Close { reason }
        }
        PduType::Register => {
            let (timeout, region) = r.region()?;
            Payload::Register { timeout, region }
        }
        // The same fields; h.timeout is reserved.
        PduType::Unregister => Payload::Unregister(r.region()?.1),
        PduType::Get => Payload::Get {
            ranges: r.ranges()?,
        },
        PduType::GetNext => Payload::GetNext {
            ranges: r.ranges()?,
        },
        PduType::GetBulk => {
            let non_repeaters = r.u16("GetBulk non_repeaters")?;
            let max_repetitions = r.u16("GetBulk max_repetitions")?;
            Payload::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges: r.ranges()?,
            }
        }
        PduType::TestSet | PduType::Notify | PduType::IndexAllocate | PduType::IndexDeallocate => {
            let varbinds = r.varbinds()?;
            match ty {
                PduType::TestSet => Payload::TestSet { varbinds },
                PduType::Notify => Payload::Notify { varbinds },
                PduType::IndexAllocate => Payload::IndexAllocate { varbinds },
                _ => Payload::IndexDeallocate { varbinds },
            }
        }
        PduType::CommitSet => Payload::CommitSet,
        PduType::UndoSet => Payload::UndoSet,
        PduType::CleanupSet => Payload::CleanupSet,
        PduType::Ping => Payload::Ping,
        PduType::AddAgentCaps => {
            let (id, _) = r.oid("AddAgentCaps id")?;
            let description = r.octets("AddAgentCaps description")?;
            Payload::AddAgentCaps { id, description }
        }
        PduType::RemoveAgentCaps => Payload::RemoveAgentCaps {
            id: r.oid("RemoveAgentCaps id")?.0,
        },
        PduType::Response => {
            let sys_uptime = r.u32("Response sysUpTime")?;
            let error = ResError::from_u16(r.u16("Response error")?);
            let index = r.u16("Response index")?;
            Payload::Response {
                sys_uptime,
                error,
                index,
                varbinds: r.varbinds()?,
            }
        }
    };
    if !r.at_end() {
        return Err(r.err(DecodeErrorKind::TrailingBytes(r.b.len() - r.pos)));
    }
    Ok(Pdu {
        flags: header.flags,
        session_id: header.session_id,
        transaction_id: header.transaction_id,
        packet_id: header.packet_id,
        context,
        payload,
    })
}
