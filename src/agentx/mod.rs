//! AgentX (RFC 2741): a sans-IO PDU codec ([`pdu`]) and a blocking session
//! to the master agent ([`session`]).

pub mod pdu;
pub mod session;

pub use session::{AgentxAddr, Session, SessionConfig, SessionHandle};
