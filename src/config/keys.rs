//! Where each key of a configuration file is written: the line an error
//! names, from the spans toml's parser gives every key, value and header.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

/// The keys and headers of one text, each with where it is written.
pub(super) struct Keys {
    places: Vec<Place>,
    /// The offset of every line's first byte.
    line_starts: Vec<usize>,
}

/// One key (its name and value) or one table header.
struct Place {
    /// The dotted name of the table the key is in (`snmp.access`; empty at
    /// the top).
    table: String,
    /// The entry of an array of tables (`[[snmp.access]]`) it is in.
    nth: Option<usize>,
    /// `None`: the table's header.
    key: Option<String>,
    span: Range<usize>,
}

/// The key an error is at: its table and the key in it (`None`: the
/// table's header).
pub(super) type At = (String, Option<String>);

impl Keys {
    /// The keys of `text`, as far as it is TOML.
    pub(super) fn parse(text: &str) -> Keys {
        Keys::of(text, DeTable::parse_recoverable(text).0.get_ref())
    }

    /// The keys of `root`, parsed from `text`.
    pub(super) fn of(text: &str, root: &DeTable<'_>) -> Keys {
        let mut keys = Keys {
            places: Vec::new(),
            line_starts: std::iter::once(0)
                .chain(text.match_indices('\n').map(|(i, _)| i + 1))
                .collect(),
        };
        keys.table("", None, root);
        keys
    }

    fn table(&mut self, table: &str, nth: Option<usize>, t: &DeTable<'_>) {
        for (k, v) in t {
            let key = k.get_ref().to_string();
            let path = if table.is_empty() {
                key.clone()
            } else {
                format!("{table}.{key}")
            };
            match v.get_ref() {
                // A `[header]`: its span is the header's; or a dotted
                // key's or an inline table's.
                DeValue::Table(inner) => {
                    self.places.push(Place {
                        table: path.clone(),
                        nth: None,
                        key: None,
                        span: v.span(),
                    });
                    self.table(&path, None, inner);
                    continue;
                }
                // `[[header]]`s (or an array of inline tables): each
                // entry spans its header.
                DeValue::Array(items) if items.iter().any(|i| i.get_ref().is_table()) => {
                    self.entries(&path, items);
                }
                _ => {}
            }
            self.places.push(Place {
                table: table.to_string(),
                nth,
                key: Some(key),
                span: k.span().start..v.span().end.max(k.span().end),
            });
        }
    }

    fn entries(&mut self, table: &str, items: &[Spanned<DeValue<'_>>]) {
        for (i, item) in items.iter().enumerate() {
            if let DeValue::Table(t) = item.get_ref() {
                self.places.push(Place {
                    table: table.to_string(),
                    nth: Some(i),
                    key: None,
                    span: item.span(),
                });
                self.table(table, Some(i), t);
            }
        }
    }

    /// The line (from 1) of a byte offset.
    pub(super) fn line_of(&self, offset: usize) -> usize {
        self.line_starts.partition_point(|&s| s <= offset)
    }

    /// The line on which `key` is set in `[section]`.
    pub(super) fn line(&self, section: &str, key: &str) -> Option<usize> {
        self.places
            .iter()
            .find(|p| p.table == section && p.key.as_deref() == Some(key))
            .map(|p| self.line_of(p.span.start))
    }

    /// The line of `key` in the `n`th (from 0) entry of the array of
    /// tables `table`, or of that entry's header when the key is not in it.
    pub(super) fn nth_line(&self, table: &str, n: usize, key: &str) -> Option<usize> {
        let entry = |key: Option<&str>| {
            self.places
                .iter()
                .find(|p| p.table == table && p.nth == Some(n) && p.key.as_deref() == key)
        };
        entry(Some(key))
            .or_else(|| entry(None))
            .map(|p| self.line_of(p.span.start))
    }

    /// The innermost key or header written where `offset` is; else (a
    /// value that is not TOML) the last one begun before it on its line.
    pub(super) fn at(&self, offset: usize) -> Option<At> {
        let line = self.line_of(offset);
        self.places
            .iter()
            .filter(|p| p.span.contains(&offset))
            .min_by_key(|p| p.span.len())
            .or_else(|| {
                self.places
                    .iter()
                    .filter(|p| p.span.start <= offset && self.line_of(p.span.start) == line)
                    .max_by_key(|p| p.span.start)
            })
            .map(|p| match &p.key {
                // A key at the top of the file: named as a section.
                Some(k) if p.table.is_empty() => (k.clone(), None),
                _ => (p.table.clone(), p.key.clone()),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "top = 1\n\
        [snmp]\n\
        listen = \"\"\n\
        \n\
        [[snmp.access]]\n\
        community = \"a\"\n\
        sources = [\"10.0.0.0/8\",\n  \"fd00::/8\"]\n\
        [[snmp.access]]\n\
        user = \"u\"\n\
        [mad]\n\
        window = 3\n";

    #[test]
    fn keys_are_found_at_their_lines() {
        let k = Keys::parse(TEXT);
        assert_eq!(k.line("snmp", "listen"), Some(3));
        assert_eq!(k.line("mad", "window"), Some(12));
        assert_eq!(k.line("mad", "retries"), None);
        assert_eq!(k.line("snmp", "community"), None, "only in a rule");
        assert_eq!(k.nth_line("snmp.access", 0, "sources"), Some(7));
        assert_eq!(k.nth_line("snmp.access", 1, "user"), Some(10));
        // A key the entry does not have: its header.
        assert_eq!(k.nth_line("snmp.access", 1, "community"), Some(9));
        assert_eq!(k.nth_line("snmp.access", 2, "user"), None);
    }

    #[test]
    fn an_offset_names_the_innermost_key() {
        let k = Keys::parse(TEXT);
        let at = |s: &str| k.at(TEXT.find(s).unwrap());
        let key = |t: &str, k: &str| Some((t.to_string(), Some(k.to_string())));
        assert_eq!(at("\"fd00"), key("snmp.access", "sources"));
        assert_eq!(at("3\n"), key("mad", "window"));
        assert_eq!(at("[mad]"), Some(("mad".to_string(), None)));
        assert_eq!(
            at("[[snmp.access]]\nuser"),
            Some(("snmp.access".into(), None))
        );
        assert_eq!(at("top"), Some(("top".to_string(), None)));
        assert_eq!(k.line_of(TEXT.find("user").unwrap()), 10);
    }

    #[test]
    fn a_text_that_is_not_toml_gives_the_keys_before_the_error() {
        let text = "[mad]\nwindow = 3\nretries = \n";
        let k = Keys::parse(text);
        assert_eq!(k.line("mad", "window"), Some(2));
        let e = toml::de::DeTable::parse(text).unwrap_err();
        let at = k.at(e.span().unwrap().start);
        assert_eq!(at, Some(("mad".into(), Some("retries".into()))), "{e}");
    }
}
