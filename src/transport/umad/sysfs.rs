//! The local port in sysfs: the umad ABI, the CAs and their ports (state,
//! LID, GUIDs), the port the configuration names or the first active one,
//! and its `umadN` device. Read through libc (`sys`), as umad2sim
//! interposes it.

use std::io;
use std::os::fd::AsFd;

use super::{
    DEV_IB, LocalPort, OpenError, SYS_IB, SYS_IB_MAD, UMAD_ABI_VERSION, UmadConfig, UmadError,
    cstring, sys,
};

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

fn port_facts(ca: &str, port: u8) -> Result<LocalPort, UmadError> {
    let base = format!("{SYS_IB}/{ca}/ports/{port}");
    let state_text = read_text(&format!("{base}/state"))?;
    let lid = read_text(&format!("{base}/lid"))
        .ok()
        .and_then(|t| parse_hex_u16(&t))
        .unwrap_or(0);
    let node_guid = read_text(&format!("{SYS_IB}/{ca}/node_guid"))
        .ok()
        .and_then(|t| parse_guid(&t))
        .unwrap_or(0);
    Ok(LocalPort {
        ca: ca.to_string(),
        port,
        state: parse_state(&state_text),
        state_text,
        lid,
        node_guid,
        device: String::new(),
    })
}

/// Every (CA, port) sysfs knows, in order.
fn all_ports() -> Result<Vec<(String, u8)>, UmadError> {
    let mut out = Vec::new();
    for ca in list_dir(SYS_IB)? {
        let Ok(ports) = list_dir(&format!("{SYS_IB}/{ca}/ports")) else {
            continue;
        };
        for p in ports {
            if let Ok(n) = p.parse::<u8>() {
                out.push((ca.clone(), n));
            }
        }
    }
    Ok(out)
}

/// Pick the port per `cfg` (see [`UmadConfig`]) and find its umad device.
pub(super) fn select_port(cfg: &UmadConfig) -> Result<LocalPort, UmadError> {
    let ports = all_ports()?;
    if ports.is_empty() {
        return Err(OpenError::NoPorts { under: SYS_IB });
    }
    let candidates: Vec<&(String, u8)> = ports
        .iter()
        .filter(|(ca, p)| {
            cfg.ca.as_deref().is_none_or(|want| want == ca)
                && cfg.port.is_none_or(|want| want == *p)
        })
        .collect();
    let what = match (&cfg.ca, cfg.port) {
        (Some(c), Some(p)) => format!("port {c}/{p}"),
        (Some(c), None) => format!("CA {c}"),
        (None, Some(p)) => format!("port number {p} on any CA"),
        (None, None) => "any CA".to_string(),
    };
    if candidates.is_empty() {
        let known = ports.iter().map(|(c, p)| format!("{c}/{p}")).collect();
        return Err(OpenError::NoSuchPort {
            wanted: what,
            known,
        });
    }
    let mut facts = Vec::new();
    for (ca, p) in candidates {
        facts.push(port_facts(ca, *p)?);
    }
    // Active first; else a port with its link up (Init/Armed: usable for
    // directed-route SMPs before an SM ran); else fail.
    let chosen = facts
        .iter()
        .find(|f| f.state == 4)
        .or_else(|| facts.iter().find(|f| (2..=3).contains(&f.state)))
        .cloned();
    let Some(mut local) = chosen else {
        let states = facts
            .iter()
            .map(|f| format!("{}/{} {}", f.ca, f.port, f.state_text))
            .collect();
        return Err(OpenError::LinkDown {
            wanted: what,
            states,
        });
    };
    local.device = find_device(&local.ca, local.port)?;
    Ok(local)
}

/// The umadN device whose `ibdev`/`port` match.
fn find_device(ca: &str, port: u8) -> Result<String, UmadError> {
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
        let mut v = vec!["mlx5_10", "mlx5_9", "mlx4_0"];
        v.sort_by_key(|n| natural_key(n));
        assert_eq!(v, ["mlx4_0", "mlx5_9", "mlx5_10"]);
    }
}
