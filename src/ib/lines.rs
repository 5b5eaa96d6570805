//! The errors of the text files an operator writes (a topology, a plan, a
//! node-name-map): which file, which line, and why, on one line however
//! long the line at fault was.

use std::fmt;
use std::path::{Path, PathBuf};

use super::Escaped;

/// The longest reason, in bytes: a reason quoting a huge line ends there.
const REASON_MAX: usize = 240;

/// A text file that cannot be read: its kind, the file, the line (0: the
/// whole file) and the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// What the file is: "topology", "plan", "node-name-map".
    pub what: &'static str,
    /// The file, when the text came from one.
    pub file: Option<PathBuf>,
    pub line: usize,
    pub reason: String,
}

impl LineError {
    /// An error at `line`, its reason cut at a character within the bound.
    pub fn new(what: &'static str, line: usize, reason: impl Into<String>) -> LineError {
        let mut reason = reason.into();
        if reason.len() > REASON_MAX {
            let mut end = REASON_MAX;
            while !reason.is_char_boundary(end) {
                end -= 1;
            }
            reason.truncate(end);
            reason.push_str("...");
        }
        LineError {
            what,
            file: None,
            line,
            reason,
        }
    }

    /// The same error, naming the file it was found in.
    pub fn in_file(self, path: &Path) -> LineError {
        LineError {
            file: Some(path.to_path_buf()),
            ..self
        }
    }
}

impl fmt::Display for LineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let file = self
            .file
            .as_ref()
            .map_or_else(|| "<text>".to_string(), |p| p.display().to_string());
        write!(
            f,
            "{} {}:{}: {}",
            self.what,
            Escaped(&file),
            self.line,
            Escaped(&self.reason)
        )
    }
}

impl std::error::Error for LineError {}

/// The bytes of the text file `path` (a regular file of at most `max`
/// bytes), or the error that names it.
pub fn read_text(what: &'static str, path: &Path, max: u64) -> Result<Vec<u8>, LineError> {
    crate::files::read_untrusted(path, max)
        .map_err(|e| LineError::new(what, 0, format!("cannot read: {e}")).in_file(path))
}

/// At most 40 characters of `s`, for a reason to quote.
pub fn excerpt(s: &str) -> String {
    let t: String = s.chars().take(40).collect();
    if t.len() < s.len() {
        format!("{t}...")
    } else {
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_error_is_one_short_line_naming_the_file() {
        let e = LineError::new("plan", 3, format!("bad \"{}\"", "x\n".repeat(500)));
        assert!(e.reason.len() <= REASON_MAX + 3);
        let shown = e.in_file(Path::new("/etc/plan.csv")).to_string();
        assert!(shown.starts_with("plan /etc/plan.csv:3: bad"), "{shown}");
        assert!(!shown.contains('\n'), "{shown}");
        assert_eq!(
            LineError::new("topology", 0, "é".repeat(200)).reason.len(),
            240 + 3,
            "cut at a character"
        );
    }

    #[test]
    fn a_file_that_cannot_be_read_is_named_at_line_0() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_text("node-name-map", &dir.path().join("none"), 10).unwrap_err();
        assert_eq!((e.what, e.line), ("node-name-map", 0));
        assert!(e.to_string().contains("none:0: cannot read"), "{e}");
        assert_eq!(excerpt(&"a".repeat(41)), format!("{}...", "a".repeat(40)));
    }
}
