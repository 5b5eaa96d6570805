//! AgentX (RFC 2741): a sans-IO PDU codec ([`pdu`]), the subagent's protocol
//! core without I/O ([`core`]) and the driver that connects it to the master
//! ([`session`]).

pub mod config;
pub mod core;
pub mod pdu;
pub mod session;
pub mod socket_path;

pub use config::{AgentxAddr, SessionConfig};
pub use session::{NotifyError, Session, SessionHandle};

/// Check an AgentX master address (`PATH`, `unix:PATH` or `tcp:HOST:PORT`).
pub fn validate_address(s: &str) -> Result<(), String> {
    s.parse::<AgentxAddr>()
        .map(|_| ())
        .map_err(|e| e.to_string())
}
