//! MAD transports: the interface the sweeper drives, and umad (the Linux
//! kernel's MAD interface). The simulated fabric (`crate::sim`) implements the
//! same trait.

mod error;
pub mod failover;
pub mod umad;

use std::time::Duration;

pub use error::{Down, Fault, IoFault, OpenError, TransportError};

pub use crate::pm::mad::MAD_SIZE;

/// Where a GSI MAD goes (PM MADs: QP1, Q_Key 0x80010000, P_Key index 0,
/// unless ClassPortInfo redirects).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct MadAddr {
    pub lid: u16,
    pub qpn: u32,
    pub qkey: u32,
    pub pkey_index: u16,
    pub sl: u8,
}

impl MadAddr {
    pub const GSI_QKEY: u32 = 0x8001_0000;

    /// The default GSI address of a LID.
    pub fn gsi(lid: u16) -> Self {
        MadAddr {
            lid,
            qpn: 1,
            qkey: Self::GSI_QKEY,
            pkey_index: 0,
            sl: 0,
        }
    }
}

/// A MAD that came back: a reply, or a send that failed (status != 0, e.g.
/// 110 = ETIMEDOUT as umad reports it). `mad` holds at least the request's
/// header when status != 0 so the TID can be matched.
#[derive(Clone, Debug)]
pub struct Received {
    pub from: MadAddr,
    pub status: i32,
    pub mad: Box<[u8; MAD_SIZE]>,
}

/// The transaction-ID bits a MAD's sender allocates and matches replies on:
/// the low 24. Bits 24..31 belong to the transport (the umad transport
/// routes replies to one of several handles by them) and the high 32 to the
/// kernel, which rewrites them.
pub const TID_MASK: u32 = 0x00FF_FFFF;

/// The sender's part ([`TID_MASK`]) of a MAD's transaction ID.
pub fn tid_of(mad: &[u8; MAD_SIZE]) -> u32 {
    u32::from_be_bytes([mad[12], mad[13], mad[14], mad[15]]) & TID_MASK
}

/// The 64-bit transaction ID to send for the sender's `tid`: the process ID
/// in the high 32 bits (the kernel may rewrite them), route byte 0 (the
/// transport fills it in), the sender's bits below.
pub fn wire_tid(tid: u32) -> u64 {
    static HIGH: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let high = *HIGH.get_or_init(|| u64::from(std::process::id() & 0xFFFF) << 32);
    high | u64::from(tid & TID_MASK)
}

/// A datagram MAD transport. `send` never waits for the reply; replies (and
/// failed sends) come back through `recv`, matched by the caller on the
/// [`TID_MASK`] bits of the transaction ID.
pub trait MadTransport: Send {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> Result<(), Fault>;
    /// Wait up to `timeout` for one completion; `Ok(None)` on timeout.
    fn recv(&mut self, timeout: Duration) -> Result<Option<Received>, Fault>;
    /// After the transport failed as a whole (every send refused, or
    /// `recv` failed): open the underlying device again. The default has
    /// nothing to reopen.
    fn reopen(&mut self) -> Result<(), Fault> {
        Ok(())
    }
}
