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

/// The most a report holds, as its schema has it: rows a section (and any
/// other list), octets a string (a DisplayString's), nesting.
pub const MAX_LIST: usize = super::status::MAX_ROWS;
pub const MAX_STRING: usize = 255;
const MAX_DEPTH: usize = 8;

/// A report read back from its JSON, refused when it holds more than its
/// schema allows ([`MAX_LIST`], [`MAX_STRING`]), so that what a hostile
/// server sends costs the reader no more than a report can.
pub fn parse(body: &[u8]) -> Result<Report, String> {
    let v: serde_json::Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    within_schema(&v, "", 0)?;
    serde_json::from_value(v).map_err(|e| e.to_string())
}

/// Whether `v` (at `path`, nested `depth`) holds no list longer than
/// [`MAX_LIST`], no string longer than [`MAX_STRING`] octets, and is
/// nested no deeper than a report is.
fn within_schema(v: &serde_json::Value, path: &str, depth: usize) -> Result<(), String> {
    use serde_json::Value as V;
    if depth > MAX_DEPTH {
        return Err(format!("{path}: nested deeper than a report is"));
    }
    match v {
        V::String(s) if s.len() > MAX_STRING => Err(format!(
            "{path}: a string of {} octets; at most {MAX_STRING}",
            s.len()
        )),
        V::Array(a) if a.len() > MAX_LIST => {
            Err(format!("{path}: {} entries; at most {MAX_LIST}", a.len()))
        }
        V::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, x)| within_schema(x, &format!("{path}[{i}]"), depth + 1)),
        V::Object(o) => o.iter().try_for_each(|(k, x)| {
            if k.len() > MAX_STRING {
                return Err(format!("{path}: a key of {} octets", k.len()));
            }
            within_schema(x, &format!("{path}.{}", k.escape_debug()), depth + 1)
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests;
