//! AgentX (RFC 2741): a sans-IO PDU codec ([`pdu`]) and a blocking session
//! to the master agent ([`session`]).

pub mod pdu;
pub mod session;

pub use session::{AgentxAddr, Session, SessionConfig, SessionHandle};

/// Check an AgentX master address (`PATH`, `unix:PATH` or `tcp:HOST:PORT`).
pub fn validate_address(s: &str) -> Result<(), String> {
    s.parse::<AgentxAddr>()
        .map(|_| ())
        .map_err(|e| e.to_string())
}
