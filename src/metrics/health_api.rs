//! `/api/health`: the status report ([`super::status::Report`]) as JSON,
//! the schema docs/health.md documents. `ibpm-agentx health` reads it back
//! with the same types.

use super::status::Report;

/// The JSON of a report: one object, compact, with a final newline.
pub fn render(r: &Report) -> Vec<u8> {
    // A report is strings, numbers, booleans and lists: serializing it
    // cannot fail.
    let mut out = serde_json::to_vec(r).unwrap_or_else(|_| b"{}".to_vec());
    out.push(b'\n');
    out
}

/// A report read back from its JSON.
pub fn parse(body: &[u8]) -> Result<Report, serde_json::Error> {
    serde_json::from_slice(body)
}

#[cfg(test)]
mod tests;
