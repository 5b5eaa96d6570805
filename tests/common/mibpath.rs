//! Where the MIB files for the net-snmp tools are.

use std::path::PathBuf;

/// Directory of the IETF MIB modules IB-PM-MIB imports (env IBPM_IETF_MIBS
/// overrides).
pub fn ietf_mib_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("IBPM_IETF_MIBS") {
        return PathBuf::from(d);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/reference/ietf-mibs")
}

/// `-M` argument for the net-snmp tools: the repository's mibs/ and the IETF
/// modules.
pub fn mib_search_path() -> String {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("mibs");
    format!("{}:{}", repo.display(), ietf_mib_dir().display())
}
