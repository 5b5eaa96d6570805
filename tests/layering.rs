//! No import runs back up the data path: every module of `src/` refers
//! only to modules listed before it in [`ORDER`] (the layering
//! `docs/design.md#layout` describes), test code aside. The check reads the
//! source as text: every `crate::NAME` path outside comments and outside
//! `#[cfg(test)]` modules.

use std::path::{Path, PathBuf};

/// The modules in the order of the data path, from the wire up; a module
/// may use only those before it. `doca::sampler` (the DOCA driver, which
/// reads the configuration's `[doca]` section) sits above the configuration,
/// apart from the rest of `doca` (decoding, the local adapters, the
/// library).
const ORDER: &[&str] = &[
    "heap",
    "files",
    "service",
    "ib",
    "pm",
    "smp",
    "transport",
    "sim",
    "fabric",
    "doca",
    "mib",
    "runtime",
    "agentx",
    "snmp",
    "notify",
    "config",
    "doca::sampler",
    "app",
    "rig",
    "query",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// The layer of a file (`src/doca/sampler.rs` -> `doca::sampler`), or
/// `None` for the crate root, the binary and test-only files.
fn layer(rel: &str) -> Option<String> {
    let parts: Vec<&str> = rel.trim_end_matches(".rs").split('/').collect();
    if parts.contains(&"tests") || parts.last() == Some(&"tests") {
        return None;
    }
    match parts[0] {
        "lib" | "main" => None,
        top => {
            let sub = format!("{top}::{}", parts.get(1).copied().unwrap_or("mod"));
            Some(if ORDER.contains(&sub.as_str()) {
                sub
            } else {
                top.to_string()
            })
        }
    }
}

/// The text with line comments and `#[cfg(test)] mod NAME { ... }` blocks
/// removed.
fn code(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            // The next item: a test module with a body is skipped whole.
            let Some(next) = lines.peek() else { break };
            if next.trim_start().starts_with("mod ") && next.trim_end().ends_with('{') {
                let mut depth = 0i32;
                for l in lines.by_ref() {
                    depth += l.matches('{').count() as i32 - l.matches('}').count() as i32;
                    if depth <= 0 {
                        break;
                    }
                }
            }
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// The layer a path `crate::a::b...` names.
fn named(path: &str) -> Option<&'static str> {
    let mut it = path.split("::");
    let top = it.next()?;
    let sub = it.next().map(|s| format!("{top}::{s}"));
    ORDER
        .iter()
        .find(|l| sub.as_deref() == Some(**l))
        .or_else(|| ORDER.iter().find(|l| **l == top))
        .copied()
}

#[test]
fn no_module_uses_one_listed_after_it() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    let rank = |l: &str| ORDER.iter().position(|o| *o == l);
    let mut wrong = Vec::new();
    let mut checked = 0;
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let Some(me) = layer(&rel) else { continue };
        let mine = rank(&me).unwrap_or_else(|| panic!("{rel}: module `{me}` is not in ORDER"));
        checked += 1;
        let text = code(&std::fs::read_to_string(f).unwrap());
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + "crate::".len()..];
            let path: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            let Some(used) = named(&path) else { continue };
            if rank(used).is_some_and(|r| r > mine) {
                wrong.push(format!("{rel} ({me}) uses crate::{path} ({used})"));
            }
        }
    }
    assert!(checked > 50, "only {checked} files checked");
    wrong.sort();
    wrong.dedup();
    assert!(
        wrong.is_empty(),
        "imports against the layering:\n{}",
        wrong.join("\n")
    );
}

/// The check finds what it is for: an upward path in code, not one in a
/// comment or a test module.
#[test]
fn the_check_sees_code_and_skips_comments_and_tests() {
    let text = "use crate::ib::Guid;\n// crate::app in a comment\nfn f() { crate::snmp::x(); }\n\
                #[cfg(test)]\nmod tests {\n    use crate::rig;\n    fn g() { if true { } }\n}\n";
    let c = code(text);
    assert!(c.contains("crate::snmp::x"));
    assert!(!c.contains("crate::app"));
    assert!(!c.contains("crate::rig"));
    assert_eq!(named("doca::sampler::Opened"), Some("doca::sampler"));
    assert_eq!(named("doca::DATA_IDS"), Some("doca"));
    assert_eq!(layer("doca/sampler.rs").as_deref(), Some("doca::sampler"));
    assert_eq!(layer("fabric/sweep.rs").as_deref(), Some("fabric"));
    assert_eq!(layer("snmp/usm/tests.rs"), None);
}
