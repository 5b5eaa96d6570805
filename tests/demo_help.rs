//! `scripts/demo --help` answers before it touches the system: with no
//! cargo on the PATH and the install step skipped, it still prints its
//! usage and succeeds (without the answer it would go on to build).

use std::path::Path;
use std::process::Command;

#[test]
fn the_demo_answers_help_before_touching_the_system() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo");
    for flag in ["--help", "-h"] {
        let out = Command::new("bash")
            .arg(&demo)
            .arg(flag)
            .env("PATH", "/usr/bin:/bin")
            .env("SKIP_INSTALL", "1")
            .output()
            .expect("run scripts/demo");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{flag}: {out:?}");
        assert!(text.starts_with("usage: scripts/demo"), "{flag}: {text}");
    }
}
