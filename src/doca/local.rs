//! The local adapters as sysfs describes them
//! (`/sys/class/infiniband/<dev>/...`): node GUID, firmware version, PCI
//! address and ports, and which local port of a DOCA device is which
//! (node GUID, port). The root is configurable so tests can build a tree.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::ib::{
    Guid, LinkSpeed, LinkWidth, Node, NodeIdentity, NodeType, PhysState, Port, PortState,
};

/// One InfiniBand device (`mlx5_0`) of this host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IbDev {
    pub name: String,
    pub node_guid: Guid,
    pub sys_guid: Guid,
    pub description: String,
    pub fw_ver: String,
    /// PCI address of the function (`0000:08:00.1`), when sysfs links it.
    pub pci: Option<String>,
    pub ports: Vec<Port>,
}

fn class_dir(sysfs: &Path) -> PathBuf {
    sysfs.join("class/infiniband")
}

/// Why a device's sysfs entry cannot be used.
#[derive(Debug)]
pub enum DevError {
    /// A file cannot be read.
    Read {
        path: PathBuf,
        error: std::io::Error,
    },
    /// `node_guid` holds no GUID (why, as the GUID parser says).
    NodeGuid { dev: String, reason: String },
}

impl fmt::Display for DevError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DevError::Read { path, error } => write!(f, "cannot read {}: {error}", path.display()),
            DevError::NodeGuid { dev, reason } => write!(f, "{dev}: node_guid: {reason}"),
        }
    }
}

impl std::error::Error for DevError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DevError::Read { error, .. } => Some(error),
            DevError::NodeGuid { .. } => None,
        }
    }
}

/// Why a device's firmware cannot run DOCA telemetry diag.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FirmwareError {
    /// The version is not `MAJOR.MINOR.SUB`.
    NotAVersion(String),
    /// The family (the first number) is none of the devices that can.
    Family(String),
    /// The family can, from `family.43.1000` on.
    TooOld { fw: String, family: u32 },
}

impl fmt::Display for FirmwareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FirmwareError::NotAVersion(fw) => {
                write!(f, "firmware version `{fw}` is not MAJOR.MINOR.SUB")
            }
            FirmwareError::Family(fw) => write!(
                f,
                "firmware {fw} is not a ConnectX-7, BlueField-3 or ConnectX-8 (or later) device's \
                 (DOCA telemetry diag needs one of those)"
            ),
            FirmwareError::TooOld { fw, family } => write!(
                f,
                "firmware {fw} is too old for DOCA telemetry diag: it needs {family}.43.1000 or newer"
            ),
        }
    }
}

impl std::error::Error for FirmwareError {}

fn read(p: &Path) -> Result<String, DevError> {
    std::fs::read_to_string(p)
        .map(|s| s.trim().to_string())
        .map_err(|error| DevError::Read {
            path: p.to_path_buf(),
            error,
        })
}

/// The InfiniBand devices sysfs lists, by name.
pub fn list(sysfs: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(class_dir(sysfs))
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Read device `name` from sysfs.
pub fn read_dev(sysfs: &Path, name: &str) -> Result<IbDev, DevError> {
    let dir = class_dir(sysfs).join(name);
    let node_guid: Guid =
        read(&dir.join("node_guid"))?
            .parse()
            .map_err(|reason| DevError::NodeGuid {
                dev: name.to_string(),
                reason,
            })?;
    let sys_guid = read(&dir.join("sys_image_guid"))
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(node_guid);
    let description = read(&dir.join("node_desc")).unwrap_or_else(|_| name.to_string());
    let fw_ver = read(&dir.join("fw_ver")).unwrap_or_default();
    let pci = std::fs::read_link(dir.join("device"))
        .ok()
        .and_then(|l| l.file_name().and_then(|f| f.to_str()).map(String::from));
    let mut ports = Vec::new();
    if let Ok(d) = std::fs::read_dir(dir.join("ports")) {
        for e in d.filter_map(|e| e.ok()) {
            let Some(num) = e.file_name().to_str().and_then(|n| n.parse::<u8>().ok()) else {
                continue;
            };
            let p = e.path();
            let code = |f: &str| -> Option<u8> {
                read(&p.join(f))
                    .ok()?
                    .split(':')
                    .next()?
                    .trim()
                    .parse()
                    .ok()
            };
            let lid = read(&p.join("lid"))
                .ok()
                .and_then(|s| u16::from_str_radix(s.trim_start_matches("0x"), 16).ok())
                .unwrap_or(0);
            let (width, speed) = read(&p.join("rate"))
                .map(|r| parse_rate(&r))
                .unwrap_or((None, None));
            let state = code("state").and_then(PortState::from_code);
            let up = state.is_some_and(|s| s != PortState::Down);
            ports.push(Port {
                num,
                // A CA port's GUID: the node GUID for port 1 is how mlx5
                // reports it; sysfs has no per-port GUID file.
                guid: node_guid,
                lid,
                remote_guid: Guid(0),
                remote_port: 0,
                state,
                phys_state: code("phys_state").and_then(PhysState::from_code),
                width: width.filter(|_| up),
                speed: speed.filter(|_| up),
                fec: None,
                caps: Default::default(),
            });
        }
    }
    ports.sort_by_key(|p| p.num);
    Ok(IbDev {
        name: name.to_string(),
        node_guid,
        sys_guid,
        description,
        fw_ver,
        pci,
        ports,
    })
}

/// Width and speed of a sysfs `rate` line (`400 Gb/sec (4X NDR)`).
pub fn parse_rate(rate: &str) -> (Option<LinkWidth>, Option<LinkSpeed>) {
    let Some(inner) = rate.split('(').nth(1).and_then(|s| s.split(')').next()) else {
        return (None, None);
    };
    let mut words = inner.split_whitespace();
    let width = words.next().and_then(|w| {
        LinkWidth::ALL
            .iter()
            .copied()
            .find(|x| x.name().eq_ignore_ascii_case(w))
    });
    let speed = words.next().and_then(|w| {
        LinkSpeed::ALL
            .iter()
            .copied()
            .find(|x| x.name().eq_ignore_ascii_case(w))
    });
    (width, speed)
}

/// The PCI slot (`0000:08:00`) and function of a PCI address.
pub fn pci_slot(pci: &str) -> Option<(&str, u8)> {
    let (slot, f) = pci.rsplit_once('.')?;
    Some((slot, f.parse().ok()?))
}

/// Whether the firmware version (`28.43.1000`) can run telemetry diag:
/// the guide asks for 28/32/40.43.1000 or newer on ConnectX-7,
/// BlueField-3 and ConnectX-8 (the first number names the family).
pub fn check_firmware(fw: &str) -> Result<(), FirmwareError> {
    let parts: Vec<u32> = fw.split('.').filter_map(|p| p.parse().ok()).collect();
    let [family, minor, sub] = parts[..] else {
        return Err(FirmwareError::NotAVersion(fw.to_string()));
    };
    if family < 28 || matches!(family, 29..=31 | 33..=39) {
        return Err(FirmwareError::Family(fw.to_string()));
    }
    if matches!(family, 28 | 32 | 40) && (minor, sub) < (43, 1000) {
        return Err(FirmwareError::TooOld {
            fw: fw.to_string(),
            family,
        });
    }
    Ok(())
}

/// The fabric node of a local device.
pub fn node(d: &IbDev) -> Node {
    Node {
        id: NodeIdentity {
            guid: d.node_guid,
            sys_guid: d.sys_guid,
            node_type: NodeType::Ca,
            vendor_id: 0x02c9,
            device_id: 0,
            description: d.description.as_str().into(),
            num_ports: d.ports.iter().map(|p| p.num).max().unwrap_or(0),
            lid: d.ports.first().map_or(0, |p| p.lid),
        },
        ports: d.ports.clone(),
    }
}

/// The local ports a telemetry diag context opened on `opened` samples,
/// numbered as the data IDs number them (1, 2, ...): the ports of every
/// device in the same PCI slot, in PCI function order (PF0's ports, then
/// PF1's, ...). A device without a PCI address counts alone. Returns
/// (local port, node GUID, port number).
pub fn local_ports(opened: &IbDev, all: &[IbDev]) -> Vec<(u8, Guid, u8)> {
    let slot = opened.pci.as_deref().and_then(pci_slot).map(|(s, _)| s);
    let mut siblings: Vec<(u8, &IbDev)> = match slot {
        Some(slot) => all
            .iter()
            .filter_map(|d| {
                let (s, f) = pci_slot(d.pci.as_deref()?)?;
                (s == slot).then_some((f, d))
            })
            .collect(),
        None => vec![(0, opened)],
    };
    siblings.sort_by_key(|(f, _)| *f);
    siblings
        .iter()
        .flat_map(|(_, d)| d.ports.iter().map(move |p| (d.node_guid, p.num)))
        .enumerate()
        .filter_map(|(i, (g, p))| Some((u8::try_from(i + 1).ok()?, g, p)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn firmware_versions_from_the_guide() {
        for ok in [
            "28.43.1000",
            "32.43.1010",
            "40.44.0100",
            "28.45.0001",
            "42.1.1",
        ] {
            assert_eq!(check_firmware(ok), Ok(()), "{ok}");
        }
        let e = check_firmware("28.42.1000").unwrap_err();
        assert_eq!(
            e.to_string(),
            "firmware 28.42.1000 is too old for DOCA telemetry diag: it needs 28.43.1000 or newer"
        );
        assert!(matches!(
            check_firmware("32.43.0999"),
            Err(FirmwareError::TooOld { family: 32, .. })
        ));
        let e = check_firmware("22.39.1002").unwrap_err();
        assert_eq!(e, FirmwareError::Family("22.39.1002".into()));
        assert!(e.to_string().contains("ConnectX-7"), "{e}");
        assert_eq!(
            check_firmware(""),
            Err(FirmwareError::NotAVersion(String::new()))
        );
    }

    #[test]
    fn sysfs_rates_parse() {
        assert_eq!(
            parse_rate("400 Gb/sec (4X NDR)"),
            (Some(LinkWidth::X4), Some(LinkSpeed::Ndr))
        );
        assert_eq!(
            parse_rate("200 Gb/sec (2X NDR)"),
            (Some(LinkWidth::X2), Some(LinkSpeed::Ndr))
        );
        assert_eq!(parse_rate("10 Gb/sec"), (None, None));
    }

    #[test]
    fn local_ports_follow_the_pci_functions() {
        let dev = |name: &str, guid, pci: &str| IbDev {
            name: name.into(),
            node_guid: Guid(guid),
            sys_guid: Guid(1),
            description: name.into(),
            fw_ver: String::new(),
            pci: Some(pci.into()),
            ports: vec![Port {
                num: 1,
                ..Default::default()
            }],
        };
        let all = vec![
            dev("mlx5_1", 0xb, "0000:08:00.1"),
            dev("mlx5_0", 0xa, "0000:08:00.0"),
            dev("mlx5_2", 0xc, "0000:09:00.0"),
        ];
        assert_eq!(
            local_ports(&all[1], &all),
            vec![(1, Guid(0xa), 1), (2, Guid(0xb), 1)]
        );
        assert_eq!(local_ports(&all[2], &all), vec![(1, Guid(0xc), 1)]);
    }
}
