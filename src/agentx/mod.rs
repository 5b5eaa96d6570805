//! AgentX (RFC 2741).

/// Check an AgentX master address: `PATH`, `unix:PATH` or `tcp:HOST:PORT`.
pub fn validate_address(s: &str) -> Result<(), String> {
    if s.is_empty() {
        return Err("empty address".into());
    }
    Ok(())
}
