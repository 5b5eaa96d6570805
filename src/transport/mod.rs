//! MAD transports: the interface the sweeper drives, and umad (the Linux
//! kernel's MAD interface). The simulated fabric (`crate::sim`) implements the
//! same trait.

pub mod umad;

use std::io;
use std::time::Duration;

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

/// A datagram MAD transport. `send` never waits for the reply; replies (and
/// failed sends) come back through `recv`, matched by the caller on the low 32
/// bits of the transaction ID.
pub trait MadTransport: Send {
    fn send(&mut self, to: &MadAddr, mad: &[u8; MAD_SIZE]) -> io::Result<()>;
    /// Wait up to `timeout` for one completion; `Ok(None)` on timeout.
    fn recv(&mut self, timeout: Duration) -> io::Result<Option<Received>>;
}
