//! The `[log]` section: the tracing filter (checked here, so a filter
//! that sets no level is refused) and the health line's period.

use serde::Deserialize;

use super::ValueError;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// tracing filter (`info`, `debug`, `ibpm_agentx=debug`...); RUST_LOG wins.
    pub level: String,
    /// One info line every this many sweeps saying the sweeps are healthy
    /// (sweep time, nodes, timeouts); 0 = never.
    pub health_every: u32,
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            level: "info".into(),
            health_every: 60,
        }
    }
}

/// Checks a `log.level`: a filter tracing-subscriber parses (see
/// [`log_filter`]) in which every directive sets a level. A bare word that
/// is not a level (`loud`) parses as "everything from target `loud`",
/// which logs nothing the agent writes.
pub fn check_log_level(directives: &str) -> Result<(), ValueError> {
    if log_filter(directives).is_none() {
        return Err(ValueError::NotALogFilter(directives.to_string()));
    }
    for d in split_directives(directives) {
        let d = d.trim();
        if d.is_empty() || is_level(d) || has_level(d) {
            continue;
        }
        return Err(ValueError::NoLevel(d.to_string()));
    }
    Ok(())
}

fn is_level(s: &str) -> bool {
    ["off", "error", "warn", "info", "debug", "trace"]
        .iter()
        .any(|l| s.eq_ignore_ascii_case(l))
        || matches!(s, "0" | "1" | "2" | "3" | "4" | "5")
}

/// `target[span{field=value}]=level`: an `=` outside brackets and braces.
fn has_level(d: &str) -> bool {
    let mut depth = 0i32;
    for c in d.chars() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            '=' if depth == 0 => return true,
            _ => {}
        }
    }
    false
}

/// Directives separated by commas outside brackets and braces.
fn split_directives(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The log filter of `directives` (tracing-subscriber's `EnvFilter` syntax),
/// or `None` when they do not parse. Only ASCII is accepted: the directive
/// parser of tracing-subscriber 0.3 panics on some multi-byte characters
/// (it slices inside them). Field values (`span{field=value}`) match
/// literally, not as regular expressions: compiling one can take minutes.
pub fn log_filter(directives: &str) -> Option<tracing_subscriber::EnvFilter> {
    if !directives.is_ascii() {
        return None;
    }
    tracing_subscriber::EnvFilter::builder()
        .with_regex(false)
        .parse(directives)
        .ok()
}
