//! The DOCA stand-in library (tests/doca-standin/standin.c, compiled here
//! with the C compiler Rust links with) and a fake host for it: a sysfs
//! tree with two InfiniBand devices of one dual-port adapter and an fwctl
//! directory.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The stand-in, compiled once per test process into the test target's
/// temporary directory (written under a unique name, then renamed: test
/// processes running at once never load a half-written file).
pub fn standin_library() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        let src = super::mibpath::repo_dir().join("tests/doca-standin/standin.c");
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("doca-standin");
        std::fs::create_dir_all(&dir).expect("stand-in directory");
        let out = dir.join("libdoca_standin.so");
        let tmp = dir.join(format!("libdoca_standin.so.{}", std::process::id()));
        let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
        let st = Command::new(&cc)
            .args(["-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o"])
            .arg(&tmp)
            .arg(&src)
            .status()
            .unwrap_or_else(|e| panic!("cannot run {cc} to build the DOCA stand-in: {e}"));
        assert!(st.success(), "{cc} failed to build {}", src.display());
        std::fs::rename(&tmp, &out).expect("install the stand-in");
        out
    })
    .clone()
}

/// The node GUIDs of the fake adapter's two PFs.
pub const PF0_GUID: u64 = 0xe8eb_d303_0012_3400;
pub const PF1_GUID: u64 = 0xe8eb_d303_0012_3401;

/// A fake host: `sysfs` with mlx5_0 (PCI 0000:08:00.0) and mlx5_1
/// (0000:08:00.1), one active 4x NDR port each, firmware `fw`; `fwctl`
/// with fwctl0 and fwctl1.
pub struct FakeHost {
    pub dir: tempfile::TempDir,
}

impl FakeHost {
    pub fn new(fw: &str) -> FakeHost {
        FakeHost::with_devices(
            fw,
            &[
                ("mlx5_0", PF0_GUID, "0000:08:00.0", 7),
                ("mlx5_1", PF1_GUID, "0000:08:00.1", 8),
            ],
        )
    }

    /// A fake host with the devices (name, node GUID, PCI address, LID).
    pub fn with_devices(fw: &str, devices: &[(&str, u64, &str, u16)]) -> FakeHost {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        for &(name, guid, pci, lid) in devices {
            let pci_dir = root.join("sys/devices/pci0000:00").join(pci);
            std::fs::create_dir_all(&pci_dir).unwrap();
            let d = root.join("sys/class/infiniband").join(name);
            std::fs::create_dir_all(d.join("ports/1")).unwrap();
            std::os::unix::fs::symlink(&pci_dir, d.join("device")).unwrap();
            let g = format!(
                "{:04x}:{:04x}:{:04x}:{:04x}",
                guid >> 48,
                (guid >> 32) & 0xffff,
                (guid >> 16) & 0xffff,
                guid & 0xffff
            );
            for (f, v) in [
                ("node_guid", g.as_str()),
                ("sys_image_guid", "e8eb:d303:0012:3400"),
                ("fw_ver", fw),
                ("node_desc", &format!("testhost {name}")),
                ("ports/1/state", "4: ACTIVE"),
                ("ports/1/phys_state", "5: LinkUp"),
                ("ports/1/lid", &format!("0x{lid:x}")),
                ("ports/1/rate", "400 Gb/sec (4X NDR)"),
            ] {
                std::fs::write(d.join(f), format!("{v}\n")).unwrap();
            }
        }
        std::fs::create_dir_all(root.join("dev/fwctl")).unwrap();
        for f in ["fwctl0", "fwctl1"] {
            std::fs::write(root.join("dev/fwctl").join(f), "").unwrap();
        }
        FakeHost { dir }
    }

    pub fn sysfs(&self) -> PathBuf {
        self.dir.path().join("sys")
    }

    pub fn fwctl(&self) -> PathBuf {
        self.dir.path().join("dev/fwctl")
    }

    /// A `[doca]` section loading `library`, on this host, with `extra`
    /// lines.
    pub fn doca_section(&self, library: &Path, extra: &str) -> String {
        format!(
            "[doca]\nlibraries = [\"{}\"]\nsysfs = \"{}\"\nfwctl = \"{}\"\n{extra}\n",
            library.display(),
            self.sysfs().display(),
            self.fwctl().display()
        )
    }
}
