//! Which reading a reply is: a sweep's batch, the write path and the
//! sample poller name each request by its slot (node and port indexes,
//! which a merge keeps).

use crate::pm::optional::OPTIONAL_ATTRS;

/// Which reading a reply is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    Cpi(usize),
    /// (node index, index into the node's ports)
    Counters(usize, usize),
    Extended(usize, usize),
    SamplesControl(usize),
    SamplesResult(usize),
    SamplesResultExt(usize),
    /// (node, port index, index into [`OPTIONAL_ATTRS`])
    Optional(usize, usize, usize),
}

/// A [`Slot`] in 8 bytes (a sweep's batch holds one per MAD, millions
/// with the optional attributes): node index, port index, attribute index
/// and the kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackedSlot {
    node: u32,
    port: u8,
    attr: u8,
    kind: u8,
}

impl From<Slot> for PackedSlot {
    fn from(s: Slot) -> PackedSlot {
        // Node indices fit 32 bits (a subnet has at most 49,151 LIDs),
        // port indices 8 (at most 255 ports and port 0), attribute
        // indices 8 (OPTIONAL_ATTRS).
        let (kind, node, port, attr) = match s {
            Slot::Cpi(n) => (0, n, 0, 0),
            Slot::Counters(n, p) => (1, n, p, 0),
            Slot::Extended(n, p) => (2, n, p, 0),
            Slot::SamplesControl(n) => (3, n, 0, 0),
            Slot::SamplesResult(n) => (4, n, 0, 0),
            Slot::SamplesResultExt(n) => (5, n, 0, 0),
            Slot::Optional(n, p, k) => (6, n, p, k),
        };
        PackedSlot {
            node: node as u32,
            port: port as u8,
            attr: attr as u8,
            kind,
        }
    }
}

impl From<PackedSlot> for Slot {
    fn from(p: PackedSlot) -> Slot {
        let (n, pi, k) = (p.node as usize, usize::from(p.port), usize::from(p.attr));
        match p.kind {
            0 => Slot::Cpi(n),
            1 => Slot::Counters(n, pi),
            2 => Slot::Extended(n, pi),
            3 => Slot::SamplesControl(n),
            4 => Slot::SamplesResult(n),
            5 => Slot::SamplesResultExt(n),
            _ => Slot::Optional(n, pi, k),
        }
    }
}

const _: () = assert!(size_of::<PackedSlot>() == 8);
const _: () = assert!(OPTIONAL_ATTRS.len() <= 256);

impl Slot {
    pub fn node(self) -> usize {
        match self {
            Slot::Cpi(n)
            | Slot::Counters(n, _)
            | Slot::Extended(n, _)
            | Slot::SamplesControl(n)
            | Slot::SamplesResult(n)
            | Slot::SamplesResultExt(n)
            | Slot::Optional(n, _, _) => n,
        }
    }

    /// The PM attribute the slot's request reads (`None` for an optional
    /// attribute index past [`OPTIONAL_ATTRS`]).
    pub fn attr_id(self) -> Option<u16> {
        use crate::pm::mad::attr;
        Some(match self {
            Slot::Cpi(_) => attr::CLASS_PORT_INFO,
            Slot::Counters(..) => attr::PORT_COUNTERS,
            Slot::Extended(..) => attr::PORT_COUNTERS_EXTENDED,
            Slot::SamplesControl(_) => attr::PORT_SAMPLES_CONTROL,
            Slot::SamplesResult(_) => attr::PORT_SAMPLES_RESULT,
            Slot::SamplesResultExt(_) => attr::PORT_SAMPLES_RESULT_EXTENDED,
            Slot::Optional(_, _, k) => *OPTIONAL_ATTRS.get(k)?,
        })
    }
}
