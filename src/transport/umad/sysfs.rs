//! The local port in sysfs: the umad ABI, the CAs and their ports (state,
//! LID, GUIDs), the port the configuration names or the first active one,
//! and its `umadN` device. Read through libc (`sys`), as umad2sim
//! interposes it.

use std::io;
use std::os::fd::AsFd;

use super::{DEV_IB, OpenError, SYS_IB, SYS_IB_MAD, UMAD_ABI_VERSION, UmadError, cstring, sys};

/// Read a small sysfs file through libc `open`/`read` (interposed by
/// umad2sim, unlike std's `open64`).
fn read_text(path: &str) -> Result<String, UmadError> {
    let c = cstring(path)?;
    let read_error = |e: io::Error| OpenError::Read {
        path: path.to_string(),
        error: e.into(),
    };
    let fd = sys::open(&c, libc::O_RDONLY).map_err(read_error)?;
    let mut out = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        match sys::read(fd.as_fd(), &mut buf) {
            Ok(0) => break,
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(read_error(e)),
        }
        if out.len() > 64 * 1024 {
            break;
        }
    }
    Ok(String::from_utf8_lossy(&out).trim().to_string())
}

/// Names in a directory (without `.`/`..`), sorted, through libc
/// `opendir` (interposed by umad2sim).
fn list_dir(path: &str) -> Result<Vec<String>, UmadError> {
    let c = cstring(path)?;
    let dir = sys::Dir::open(&c).map_err(|e| OpenError::List {
        path: path.to_string(),
        error: e.into(),
    })?;
    let mut names: Vec<String> = dir.filter(|n| n != "." && n != "..").collect();
    names.sort_by_key(|n| natural_key(n));
    Ok(names)
}

/// Sort `mlx5_10` after `mlx5_9` and port `10` after `9`.
fn natural_key(s: &str) -> (String, u64) {
    let digits = s.len() - s.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    let (head, tail) = s.split_at(s.len() - digits);
    (head.to_string(), tail.parse().unwrap_or(0))
}

pub(super) fn check_abi() -> Result<(), UmadError> {
    let path = format!("{SYS_IB_MAD}/abi_version");
    let text = read_text(&path).map_err(|e| OpenError::NoUmad(Box::new(e)))?;
    let Ok(version) = text.parse::<u32>() else {
        return Err(OpenError::AbiText { path, text });
    };
    if version < UMAD_ABI_VERSION {
        return Err(OpenError::AbiTooOld {
            path,
            version,
            needed: UMAD_ABI_VERSION,
        });
    }
    Ok(())
}

/// Parse `4: ACTIVE` into 4.
fn parse_state(text: &str) -> u8 {
    text.split(':')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// Parse `0x1a` (sysfs lid) into a number.
fn parse_hex_u16(text: &str) -> Option<u16> {
    u16::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()
}

/// Parse `0002:c903:0000:1234` (sysfs node_guid).
fn parse_guid(text: &str) -> Option<u64> {
    let hex: String = text.chars().filter(|c| *c != ':').collect();
    if hex.len() != 16 {
        return None;
    }
    u64::from_str_radix(&hex, 16).ok()
}

/// The umadN device whose `ibdev`/`port` match.
pub(super) fn find_device(ca: &str, port: u8) -> Result<String, UmadError> {
    for name in list_dir(SYS_IB_MAD)? {
        if !name.starts_with("umad") {
            continue;
        }
        let dir = format!("{SYS_IB_MAD}/{name}");
        let Ok(dev) = read_text(&format!("{dir}/ibdev")) else {
            continue;
        };
        let Ok(p) = read_text(&format!("{dir}/port")) else {
            continue;
        };
        if dev == ca && p.parse::<u8>().ok() == Some(port) {
            return Ok(format!("{DEV_IB}/{name}"));
        }
    }
    Err(OpenError::NoDevice {
        ca: ca.to_string(),
        port,
        under: SYS_IB_MAD,
    })
}

/// The environment variable that replaces `/sys` where local ports are
/// read ([`sysfs_root`]): a test's fixture tree, a container's bind mount.
pub const SYSFS_ROOT_ENV: &str = "IBPM_SYSFS_ROOT";

/// Where the local CAs are listed: `$IBPM_SYSFS_ROOT/class/infiniband`
/// when that variable is set, else `/sys/class/infiniband`. The umad
/// devices themselves are always found under `/sys/class/infiniband_mad`.
pub fn sysfs_root() -> String {
    match std::env::var(SYSFS_ROOT_ENV) {
        Ok(root) if !root.is_empty() => format!("{root}/class/infiniband"),
        _ => SYS_IB.to_string(),
    }
}

/// A port's link layer (`link_layer`): only InfiniBand ports are swept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkLayer {
    InfiniBand,
    /// RoCE: the CA's port is an Ethernet port.
    Ethernet,
    Other,
}

impl LinkLayer {
    /// `InfiniBand`, `Ethernet`; a missing file (older kernels) is
    /// InfiniBand.
    pub fn parse(text: Option<&str>) -> LinkLayer {
        match text.map(str::trim) {
            None | Some("InfiniBand") => LinkLayer::InfiniBand,
            Some("Ethernet") => LinkLayer::Ethernet,
            Some(_) => LinkLayer::Other,
        }
    }
}

/// One port of a local CA as sysfs shows it
/// (`<root>/<ca>/ports/<n>/{state,phys_state,lid,sm_lid,sm_sl,gids/0,link_layer,rate}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsPort {
    pub ca: String,
    pub port: u8,
    /// Logical state: 1 Down, 2 Init, 3 Armed, 4 Active (0: unreadable).
    pub state: u8,
    /// The state as sysfs spells it (`4: ACTIVE`).
    pub state_text: String,
    /// Physical state: 5 LinkUp, 3 Disabled, 2 Polling, ...
    pub phys_state: u8,
    pub lid: u16,
    /// The master SM's LID as the port last heard it (0: none).
    pub sm_lid: u16,
    pub sm_sl: u8,
    /// GID 0: the subnet prefix and the port GUID.
    pub prefix: u64,
    pub port_guid: u64,
    pub link_layer: LinkLayer,
    /// As sysfs writes it (`100 Gb/sec (4X EDR)`).
    pub rate: String,
    /// PortInfo's CapabilityMask (`cap_mask`; 0: unreadable).
    pub cap_mask: u32,
}

/// The text of a port's sysfs files, by name (`gids/0` for GID 0); None:
/// the file could not be read.
pub trait PortFiles {
    fn file(&self, name: &str) -> Option<String>;
}

impl<F: Fn(&str) -> Option<String>> PortFiles for F {
    fn file(&self, name: &str) -> Option<String> {
        self(name)
    }
}

/// A port from its files; None when it has no state file (it vanished
/// while read, or it is no port).
pub fn parse_port(ca: &str, port: u8, files: &dyn PortFiles) -> Option<SysfsPort> {
    let state_text = files.file("state")?;
    let hex = |name: &str| files.file(name).and_then(|t| parse_hex_u16(&t));
    let (prefix, port_guid) = files
        .file("gids/0")
        .and_then(|t| parse_gid(&t))
        .unwrap_or_default();
    Some(SysfsPort {
        ca: ca.to_string(),
        port,
        state: parse_state(&state_text),
        state_text,
        phys_state: files.file("phys_state").map_or(0, |t| parse_state(&t)),
        lid: hex("lid").unwrap_or(0),
        sm_lid: hex("sm_lid").unwrap_or(0),
        sm_sl: files
            .file("sm_sl")
            .and_then(|t| t.trim().parse().ok())
            .unwrap_or(0),
        prefix,
        port_guid,
        link_layer: LinkLayer::parse(files.file("link_layer").as_deref()),
        rate: files.file("rate").unwrap_or_default(),
        cap_mask: files
            .file("cap_mask")
            .and_then(|t| u32::from_str_radix(t.trim().trim_start_matches("0x"), 16).ok())
            .unwrap_or(0),
    })
}

/// `fe80:0000:0000:0000:0002:c903:00a1:b2c3` (sysfs gids/N) into its
/// prefix and GUID halves.
pub fn parse_gid(text: &str) -> Option<(u64, u64)> {
    let addr: std::net::Ipv6Addr = text.trim().parse().ok()?;
    let v = u128::from(addr);
    Some(((v >> 64) as u64, v as u64))
}

/// A local CA: its name, how many ports it has (the highest port number
/// sysfs lists) and the ports that could be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysfsCa {
    pub name: String,
    /// `node_guid` (0: unreadable).
    pub node_guid: u64,
    pub port_count: u8,
    pub ports: Vec<SysfsPort>,
}

/// Every CA under `root` (see [`sysfs_root`]) with its ports, in natural
/// order. A CA or port that vanishes while it is read (hot-unplugged, the
/// driver reloaded) is left out; `root` that cannot be listed is an
/// error.
pub fn read_cas(root: &str) -> Result<Vec<SysfsCa>, UmadError> {
    let mut out = Vec::new();
    for ca in list_dir(root)? {
        let Ok(numbers) = list_dir(&format!("{root}/{ca}/ports")) else {
            continue;
        };
        let numbers: Vec<u8> = numbers.iter().filter_map(|n| n.parse().ok()).collect();
        let ports = numbers
            .iter()
            .filter_map(|&n| {
                let base = format!("{root}/{ca}/ports/{n}");
                let files = |name: &str| read_text(&format!("{base}/{name}")).ok();
                parse_port(&ca, n, &files)
            })
            .collect();
        out.push(SysfsCa {
            node_guid: read_text(&format!("{root}/{ca}/node_guid"))
                .ok()
                .and_then(|t| parse_guid(&t))
                .unwrap_or(0),
            port_count: numbers.iter().copied().max().unwrap_or(0),
            name: ca,
            ports,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sysfs_text_parsers() {
        assert_eq!(parse_state("4: ACTIVE"), 4);
        assert_eq!(parse_state("1: DOWN\n"), 1);
        assert_eq!(parse_state("garbage"), 0);
        assert_eq!(parse_hex_u16("0x1a"), Some(0x1a));
        assert_eq!(
            parse_guid("0002:c903:0000:1234"),
            Some(0x0002_c903_0000_1234)
        );
        assert_eq!(parse_guid("0002:c903"), None);
        assert_eq!(
            parse_gid("fe80:0000:0000:0002:0002:c903:00a1:b2c3"),
            Some((0xfe80_0000_0000_0002, 0x0002_c903_00a1_b2c3))
        );
        assert_eq!(parse_gid("fe80::1"), Some((0xfe80_0000_0000_0000, 1)));
        assert_eq!(parse_gid("not a gid"), None);
        assert_eq!(LinkLayer::parse(None), LinkLayer::InfiniBand);
        assert_eq!(LinkLayer::parse(Some("Ethernet\n")), LinkLayer::Ethernet);
        let mut v = vec!["mlx5_10", "mlx5_9", "mlx4_0"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, ["mlx4_0", "mlx5_9", "mlx5_10"]);
    }
}
