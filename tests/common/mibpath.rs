//! Where the MIB tools (smilint, snmptranslate, snmpd) find the modules the
//! tests need: this repository's `mibs/` directory and a directory holding the
//! IETF base modules (SNMPv2-SMI, SNMPv2-TC, SNMPv2-CONF).
//!
//! The IETF directory is `$IBPM_IETF_MIBS` when that variable is set, else
//! Debian's `/usr/share/snmp/mibs/ietf`, which the `snmp-mibs-downloader`
//! package fills (`scripts/install-deps` installs it). When the directory does
//! not hold the modules the calling test fails with a message saying where it
//! looked.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Environment variable that points at a directory holding the IETF base MIB
/// modules.
pub const IETF_MIBS_ENV: &str = "IBPM_IETF_MIBS";

/// Where Debian's snmp-mibs-downloader puts the IETF modules.
pub const DEBIAN_IETF_MIBS: &str = "/usr/share/snmp/mibs/ietf";

/// The modules `IB-PM-MIB` imports from.
const REQUIRED_MODULES: [&str; 3] = ["SNMPv2-SMI", "SNMPv2-TC", "SNMPv2-CONF"];

/// The repository root (the directory holding `Cargo.toml`).
pub fn repo_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The repository's `mibs/` directory.
pub fn repo_mib_dir() -> PathBuf {
    repo_dir().join("mibs")
}

/// Directory holding the IETF base MIB modules. Panics with a clear message
/// when it cannot be found.
pub fn ietf_mib_dir() -> PathBuf {
    let (dir, origin) = match std::env::var_os(IETF_MIBS_ENV) {
        Some(v) if !v.is_empty() => (PathBuf::from(v), format!("${IETF_MIBS_ENV}")),
        _ => (
            PathBuf::from(DEBIAN_IETF_MIBS),
            format!(
                "Debian's location (install snmp-mibs-downloader: scripts/install-deps; \
                 or set ${IETF_MIBS_ENV})"
            ),
        ),
    };
    if let Err(msg) = check_ietf_dir(&dir) {
        panic!(
            "IETF MIB modules not found: {msg}; looked in {} from {origin}. \
             The MIB tests need SNMPv2-SMI, SNMPv2-TC and SNMPv2-CONF \
             (net-snmp's copies of RFC 2578/2579/2580).",
            dir.display()
        );
    }
    dir.canonicalize().unwrap_or(dir)
}

/// Search path for the MIB tools: `<repo>/mibs:<ietf dir>` (the form used by
/// `SMIPATH`, `snmptranslate -M` and `snmpd -M`).
pub fn mib_search_path() -> String {
    format!("{}:{}", repo_mib_dir().display(), ietf_mib_dir().display())
}

fn check_ietf_dir(dir: &Path) -> Result<(), String> {
    let entries = std::fs::read_dir(dir).map_err(|e| format!("cannot read the directory: {e}"))?;
    let names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let missing: Vec<&str> = REQUIRED_MODULES
        .iter()
        .copied()
        .filter(|m| {
            !names
                .iter()
                .any(|n| n == m || n.strip_prefix(m).is_some_and(|rest| rest.starts_with('.')))
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!("missing {}", missing.join(", ")))
    }
}
