use super::*;

fn parse(text: &str) -> Result<NameMap, NamesError> {
    NameMap::parse(text.as_bytes())
}

fn name(m: &NameMap, g: u64) -> Option<&str> {
    m.get(Guid(g)).map(|n| &**n)
}

#[test]
fn names_are_read_as_rdma_core_reads_them() {
    let m = parse(
        "# a comment\n\
         \n\
         0x0008f104003f125c \"IB1 (Rack 11 slot 1   ) ISR9288\"\n\
         \t0x10   leaf08   # an unquoted name ends at '#'\r\n\
         0x11 \"a#b\" trailing text\n\
         0x12 \"unclosed\n\
         19 \"decimal\"\n",
    )
    .unwrap();
    assert_eq!(m.len(), 5);
    assert_eq!(
        name(&m, 0x0008_f104_003f_125c),
        Some("IB1 (Rack 11 slot 1   ) ISR9288")
    );
    assert_eq!(name(&m, 0x10), Some("leaf08"));
    assert_eq!(name(&m, 0x11), Some("a"));
    assert_eq!(name(&m, 0x12), Some("unclosed"));
    assert_eq!(name(&m, 19), Some("decimal"));
    assert_eq!(name(&m, 0x14), None);
}

#[test]
fn bad_lines_are_refused_with_their_line() {
    let long = "n".repeat(NAME_MAX + 1);
    for (text, line, reason) in [
        ("0x1 \"a\"\nzz \"b\"\n", 2, "is not a GUID"),
        ("0x1g \"a\"\n", 1, "is not a GUID"),
        ("\n\n0x1\n", 3, "no name after GUID"),
        ("0x1 # comment only\n", 1, "no name after GUID"),
        ("0x1 \"\"\n", 1, "an empty name"),
        (
            &format!("0x1 \"{long}\"\n"),
            1,
            "longer than the 255 allowed",
        ),
        ("0x1 \"a\u{7}b\"\n", 1, "control character"),
        ("0x1 \"a\tb\"\n", 1, "control character"),
        ("0x1 \"a\"\n0x2 \"b\"\n0x1 \"c\"\n", 3, "on line 1"),
        ("0x99999999999999999 \"a\"\n", 1, "is not a GUID"),
    ] {
        let e = parse(text).expect_err(text);
        assert_eq!(e.line, line, "{text:?}: {e}");
        assert!(e.reason.contains(reason), "{text:?}: {e}");
    }
    let e = NameMap::parse(b"0x1 \"ok\"\n0x2 \"caf\xe9\"\n").unwrap_err();
    assert_eq!((e.line, e.reason.as_str()), (2, "not UTF-8 text"));
    // The same name twice is one entry.
    assert_eq!(parse("0x1 \"a\"\n0x1 a\n").unwrap().len(), 1);
}

#[test]
fn an_error_is_one_line_naming_the_file() {
    let e = NameMap::parse(b"0x1 \"a\nb\"\nbad\n").unwrap_err();
    let e = e.in_file(std::path::Path::new("/etc/map"));
    assert_eq!(
        e.to_string(),
        "node-name-map /etc/map:2: `b\"` is not a GUID"
    );
}

#[test]
fn files_are_read_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'#'; MAX_FILE as usize + 1]).unwrap();
    let e = NameMap::load(&big).unwrap_err();
    assert!(e.reason.contains("more than the"), "{e}");
    assert!(e.to_string().contains("/big:0:"), "{e}");
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    assert!(
        NameMap::load(&fifo)
            .unwrap_err()
            .reason
            .contains("not a regular file")
    );
    let zero = NameMap::load(Path::new("/dev/zero")).unwrap_err();
    assert!(zero.reason.contains("not a regular file"), "{zero}");
}

#[test]
fn the_default_map_is_read_when_it_exists_and_none_is_set() {
    let dir = tempfile::tempdir().unwrap();
    let default = dir.path().join("ib-node-name-map");
    let none = Names::open_or(None, &default).unwrap();
    assert_eq!((none.path(), none.current().len()), (None, 0));
    std::fs::write(&default, "0x1 \"leaf01\"\n").unwrap();
    let found = Names::open_or(None, &default).unwrap();
    assert_eq!(found.path(), Some(default.as_path()));
    assert_eq!(name(&found.current(), 1), Some("leaf01"));
    // A bad default map is left out, not fatal; a bad configured one is.
    std::fs::write(&default, "bad\n").unwrap();
    assert!(Names::open_or(None, &default).unwrap().current().is_empty());
    assert_eq!(
        Names::open_or(Some(&default), &default).unwrap_err().line,
        1
    );
}

#[test]
fn a_changed_map_is_read_again_and_a_bad_one_keeps_the_last_good() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("map");
    std::fs::write(&file, "0x1 \"leaf01\"\n").unwrap();
    let names = Names::open(Some(&file)).unwrap();
    let g0 = names.generation();
    assert!(!names.refresh(), "nothing changed");
    // A longer file is a change whatever the clock's resolution.
    std::fs::write(&file, "0x1 \"leaf-one\"\n").unwrap();
    assert!(names.refresh());
    assert_eq!(name(&names.current(), 1), Some("leaf-one"));
    assert!(names.generation() > g0);
    let g1 = names.generation();
    std::fs::write(&file, "0x1 \"leaf-one\"\nbroken line\n").unwrap();
    assert!(!names.refresh());
    assert_eq!(name(&names.current(), 1), Some("leaf-one"));
    assert_eq!(names.generation(), g1);
    // The file mended is read again.
    std::fs::write(&file, "0x1 \"leaf-2\"\n").unwrap();
    assert!(names.refresh());
    // SIGHUP reads it again even when its size and time say nothing
    // (a change within the clock's resolution).
    let before = stamp(&file);
    std::fs::write(&file, "0x1 \"leaf-3\"\n").unwrap();
    if stamp(&file) == before {
        assert!(!names.refresh());
    }
    names.request_reload();
    assert!(names.refresh());
    assert_eq!(name(&names.current(), 1), Some("leaf-3"));
}
