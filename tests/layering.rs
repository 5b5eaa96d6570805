//! No import runs back up the data path: every module of `src/` refers
//! only to modules listed before it in [`ORDER`] (the layering
//! `docs/design.md#layout` describes), test code aside. The check reads the
//! source as text: every `crate::NAME` path outside comments and outside
//! `#[cfg(test)]` modules.

use std::path::{Path, PathBuf};

/// The modules in the order of the data path, from the wire up; a module
/// may use only those before it. `time` (the process's time origin, the
/// log throttle) is a leaf below them all. `doca::sampler` (the DOCA driver, which reads the
/// configuration's `[doca]` section) sits above the configuration, apart
/// from the rest of `doca` (decoding, the local adapters, the library).
const ORDER: &[&str] = &[
    "time",
    "heap",
    "files",
    "service",
    "ib",
    "pm",
    "smp",
    "transport",
    "sim",
    "fabric",
    "events",
    "cabling",
    "doca",
    "edge",
    "mib",
    "runtime",
    "agentx",
    "snmp",
    "notify",
    "health",
    "metrics",
    "config",
    "doca::sampler",
    "app",
    "rig",
    "query",
    "checkup",
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
            let item = next.trim_start();
            let item = ["pub(crate) ", "pub(super) ", "pub "]
                .iter()
                .find_map(|v| item.strip_prefix(v))
                .unwrap_or(item);
            if item.starts_with("mod ") && next.trim_end().ends_with('{') {
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
                #[cfg(test)]\nmod tests {\n    use crate::rig;\n    fn g() { if true { } }\n}\n\
                #[cfg(test)]\npub(crate) mod shared {\n    use crate::app;\n}\n";
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

/// The sibling modules a file's code names: `super::X` (a file `X.rs` or a
/// folder `X/` beside it) and `crate::FOLDER::X` for the file's own folder,
/// `use super::{X, Y::Z}` groups included. Whole path segments only:
/// `super::session_id` does not name `session`.
fn siblings_named(text: &str, folder: &str, siblings: &[String]) -> Vec<String> {
    siblings_named_from(text, "super::", folder, siblings)
}

/// [`siblings_named`] for code that reaches the folder through `up`
/// (`super::` from a file of the folder or a subfolder's `mod.rs`,
/// `super::super::` from a file of a subfolder).
fn siblings_named_from(text: &str, up: &str, folder: &str, siblings: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut prefixes = vec![up.to_string()];
    if !folder.is_empty() {
        prefixes.push(format!("crate::{}::", folder.replace('/', "::")));
    }
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    for prefix in &prefixes {
        for (i, _) in text.match_indices(prefix.as_str()) {
            // `xsuper::` or `a::super::` is another path.
            if text[..i]
                .chars()
                .next_back()
                .is_some_and(|c| ident(c) || c == ':')
            {
                continue;
            }
            let rest = &text[i + prefix.len()..];
            let names: Vec<&str> = if let Some(group) = rest.strip_prefix('{') {
                // The first segment of each entry of the group, at any depth
                // of nesting only the group's own entries count.
                let mut depth = 0;
                let end = group
                    .char_indices()
                    .find(|&(_, c)| {
                        match c {
                            '{' => depth += 1,
                            '}' if depth == 0 => return true,
                            '}' => depth -= 1,
                            _ => {}
                        }
                        false
                    })
                    .map_or(group.len(), |(j, _)| j);
                let mut entries = Vec::new();
                let (mut depth, mut start) = (0, 0);
                for (j, c) in group[..end].char_indices() {
                    match c {
                        '{' => depth += 1,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            entries.push(&group[start..j]);
                            start = j + 1;
                        }
                        _ => {}
                    }
                }
                entries.push(&group[start..end]);
                entries
                    .into_iter()
                    .map(|e| e.trim().split("::").next().unwrap_or(""))
                    .collect()
            } else {
                let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
                vec![&rest[..end]]
            };
            for n in names {
                if siblings.iter().any(|s| s == n) {
                    out.push(n.to_string());
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// The cycles among `edges` (file -> files it names), each once, as
/// `a -> b -> a`.
fn cycles(edges: &std::collections::BTreeMap<String, Vec<String>>) -> Vec<String> {
    let mut found = Vec::new();
    // From every file, a depth-first walk for a path back to it through
    // files after it in order (so each cycle is reported from its least
    // member only).
    for start in edges.keys() {
        let mut stack = vec![(start.clone(), vec![start.clone()])];
        let mut seen = std::collections::BTreeSet::new();
        while let Some((at, path)) = stack.pop() {
            for next in edges.get(&at).into_iter().flatten() {
                if next == start {
                    let mut c = path.clone();
                    c.push(start.clone());
                    found.push(c.join(" -> "));
                } else if next > start && seen.insert(next.clone()) {
                    let mut p = path.clone();
                    p.push(next.clone());
                    stack.push((next.clone(), p));
                }
            }
        }
    }
    found
}

/// No two files in one folder of `src/` import each other, directly or
/// through others of the folder (test code and comments aside). A
/// subfolder is one of them: what its files name in the folder (its
/// `mod.rs` through `super::`, its other files through `super::super::`,
/// any of them through `crate::FOLDER::`) are its edges. A folder's own
/// `mod.rs`, which declares and re-exports its files, is not one of them.
#[test]
fn no_cycle_between_the_files_of_a_folder() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    let mut folders: std::collections::BTreeMap<PathBuf, Vec<PathBuf>> = Default::default();
    for f in files {
        folders
            .entry(f.parent().unwrap().to_path_buf())
            .or_default()
            .push(f);
    }
    let mut wrong = Vec::new();
    let mut checked = 0;
    for (dir, files) in &folders {
        let folder = dir
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let stem = |p: &Path| p.file_stem().unwrap().to_string_lossy().into_owned();
        // Modules beside each other: files, and folders with a mod.rs.
        let mut siblings: Vec<String> = files
            .iter()
            .map(|f| stem(f))
            .filter(|s| s != "mod" && s != "tests")
            .collect();
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                siblings.push(p.file_name().unwrap().to_string_lossy().into_owned());
            }
        }
        let mut edges = std::collections::BTreeMap::new();
        for f in files {
            let me = stem(f);
            if me == "mod" || me == "tests" || (folder.is_empty() && (me == "lib" || me == "main"))
            {
                continue;
            }
            checked += 1;
            let text = code(&std::fs::read_to_string(f).unwrap());
            let named: Vec<String> = siblings_named(&text, &folder, &siblings)
                .into_iter()
                .filter(|n| *n != me)
                .collect();
            edges.insert(me, named);
        }
        // Each subfolder, as one module of this folder.
        let subfolders = siblings
            .iter()
            .filter(|s| !folder.is_empty() && *s != "tests" && dir.join(s).is_dir());
        for sub in subfolders {
            let mut inner = Vec::new();
            rust_files(&dir.join(sub), &mut inner);
            let mut named = Vec::new();
            for f in &inner {
                let rel = f.strip_prefix(dir.join(sub)).unwrap();
                if rel.iter().any(|c| c == "tests" || c == "tests.rs") {
                    continue;
                }
                let depth = rel.components().count() + 1 - usize::from(stem(f) == "mod");
                let text = code(&std::fs::read_to_string(f).unwrap());
                named.extend(siblings_named_from(
                    &text,
                    &"super::".repeat(depth),
                    &folder,
                    &siblings,
                ));
            }
            // A file `X.rs` beside its folder `X/` is the same module.
            let all: &mut Vec<String> = edges.entry(sub.clone()).or_default();
            all.extend(named.into_iter().filter(|n| n != sub));
            all.sort();
            all.dedup();
        }
        for c in cycles(&edges) {
            wrong.push(format!("src/{folder}: {c}"));
        }
    }
    assert!(checked > 50, "only {checked} files checked");
    assert!(
        wrong.is_empty(),
        "files of one folder that import each other:\n{}",
        wrong.join("\n")
    );
}

/// The cycle check reads paths as the compiler does: whole segments,
/// groups, the folder's own `crate::` paths, and no comments.
#[test]
fn the_cycle_check_reads_whole_segments_groups_and_code_only() {
    let sib: Vec<String> = ["engine", "session", "sweep", "cache", "state"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let text = code(
        "//! [`super::engine::Engine`] in a doc link\n\
         /// and [`super::cache`] in another\n\
         use super::{cache::Cache, state::{A, B}};\n\
         fn f(x: u32) { let _ = super::session_id(x); crate::fabric::sweep::run(); }\n",
    );
    assert_eq!(
        siblings_named(&text, "fabric", &sib),
        vec!["cache", "state", "sweep"]
    );
    assert_eq!(
        siblings_named("use crate::agentx::session;", "fabric", &sib),
        Vec::<String>::new()
    );
    // From a subfolder's file, `super::super::` names the folder's files.
    assert_eq!(
        siblings_named_from(
            "use super::super::{engine::Usm, cache};\nuse super::wire;",
            "super::super::",
            "fabric",
            &sib
        ),
        vec!["cache", "engine"]
    );
    let mut edges = std::collections::BTreeMap::new();
    edges.insert("a".to_string(), vec!["b".to_string()]);
    edges.insert("b".to_string(), vec!["c".to_string()]);
    edges.insert("c".to_string(), vec!["a".to_string()]);
    edges.insert("d".to_string(), vec!["a".to_string()]);
    assert_eq!(cycles(&edges), vec!["a -> b -> c -> a"]);
    edges.insert("c".to_string(), vec![]);
    assert!(cycles(&edges).is_empty());
}

/// The production code of `src/fabric`, `src/mib`, `src/health` and
/// `src/metrics` reads no clock of its own: its parts are given the time,
/// its drivers a `time::Clock` (design.md, "Time").
#[test]
fn the_model_and_its_faces_read_the_clock_only_through_what_they_are_given() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    for dir in ["fabric", "mib", "health", "metrics"] {
        rust_files(&root.join(dir), &mut files);
    }
    files.sort();
    // What it counts: a read in code, not in a test module.
    let sample = code(
        "fn f() { let t = Instant::now(); }\n#[cfg(test)]\nmod tests {\n    fn g() { Instant::now(); }\n}\n",
    );
    assert_eq!(sample.matches("Instant::now()").count(), 1);
    let mut reads = Vec::new();
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap()
            .to_string_lossy()
            .into_owned();
        if layer(&rel).is_none() {
            continue;
        }
        let text = code(&std::fs::read_to_string(f).unwrap());
        for (i, line) in text.lines().enumerate() {
            for read in ["Instant::now()", "SystemTime::now()", ".elapsed()"] {
                if line.contains(read) {
                    reads.push(format!("src/{rel} (code line {}): {}", i + 1, line.trim()));
                }
            }
        }
    }
    assert!(files.len() > 10, "only {} files", files.len());
    assert!(
        reads.is_empty(),
        "clock reads in src/fabric, src/mib, src/health, src/metrics:\n{}",
        reads.join("\n")
    );
}
