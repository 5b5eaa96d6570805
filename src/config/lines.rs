//! Where a key is written in a TOML text: the line an error points at.

pub(super) fn line_of_offset(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The `section.key` a `key = value` line names (or the section a
/// `[section]` line names).
pub(super) fn key_on_line(text: &str, line: usize) -> Option<String> {
    let mut section = String::new();
    for (i, raw) in text.lines().enumerate().take(line) {
        let l = raw.trim();
        if let Some(s) = header(l) {
            section = s.to_string();
            if i + 1 == line {
                return Some(section);
            }
            continue;
        }
        if i + 1 == line {
            let (k, _) = l.split_once('=')?;
            let k = k.trim();
            return Some(if section.is_empty() {
                k.to_string()
            } else {
                format!("{section}.{k}")
            });
        }
    }
    None
}

/// The name a `[section]` or `[[section]]` header line gives.
pub(super) fn header(line: &str) -> Option<&str> {
    line.starts_with('[')
        .then(|| line.trim_start_matches('[').trim_end_matches(']').trim())
}

/// The line of `key` in the `n`th (from 0) `[[section]]` table, or of that
/// table's header when the key is not in it.
pub(super) fn nth_table_key_line(text: &str, section: &str, n: usize, key: &str) -> Option<usize> {
    let mut seen = 0;
    let mut head = None;
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(h) = header(l) {
            if head.is_some() {
                break;
            }
            if l.starts_with("[[") && h == section {
                if seen == n {
                    head = Some(i + 1);
                }
                seen += 1;
            }
            continue;
        }
        if head.is_some()
            && let Some((k, _)) = l.split_once('=')
            && k.trim() == key
        {
            return Some(i + 1);
        }
    }
    head
}

/// The line on which `key` is set inside `[section]`.
pub(super) fn find_key_line(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(s) = header(l) {
            current = s.to_string();
            continue;
        }
        if let Some((k, _)) = l.split_once('=')
            && current == section
            && k.trim() == key
        {
            return Some(i + 1);
        }
    }
    None
}
