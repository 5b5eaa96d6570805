//! The SMI and GSI devices of each local port, paired from sysfs as
//! libibumad pairs them (`umad_get_smi_gsi_pairs`, rdma-core PRs 1398,
//! 1529, 1794). On a planarized adapter (ConnectX-8 and later in XDR
//! fabrics) one port has two umad devices with the same port GUID: the
//! SMI device, through which SMPs go (directed route only: LID-routed SMPs
//! are not valid in planarized fabrics), and the GSI device, whose
//! PortInfo CapabilityMask has IsSMDisabled set, through which GMPs such
//! as PM MADs go. Any other port is both its own SMI and GSI device (its
//! SMI none when it has IsSMDisabled). Ethernet ports are in no pair.
//! The pairing is pure (it reads what [`super::read_cas`] read); the port
//! the transport opens is picked here from the pairs ([`select_port`]) and
//! the ports the agent lists ([`ib_ports`]).

use super::sysfs::{LinkLayer, SysfsCa, SysfsPort, find_device, read_cas, sysfs_root};
use super::{LocalPort, OpenError, UmadConfig, UmadError};

/// PortInfo CapabilityMask IsSMDisabled (libibumad's
/// `CAPMASK_IS_SM_DISABLED`).
pub const CAP_IS_SM_DISABLED: u32 = 0x400;

/// A CA name and port number.
pub type Device = (String, u8);

/// One local port's devices.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SmiGsiPair {
    pub port_guid: u64,
    /// Where SMPs go (None: the port has none, SM disabled).
    pub smi: Option<Device>,
    /// Where GMPs (PM MADs) go.
    pub gsi: Option<Device>,
    /// Two devices share the port GUID: a planarized port.
    pub planarized: bool,
}

/// Every local port's SMI and GSI devices, in the order their CAs are
/// listed.
pub fn smi_gsi_pairs(cas: &[SysfsCa]) -> Vec<SmiGsiPair> {
    let ports = || {
        cas.iter()
            .flat_map(|c| &c.ports)
            .filter(|p| p.link_layer == LinkLayer::InfiniBand && p.port_guid != 0)
    };
    let count = |guid: u64| ports().filter(|p| p.port_guid == guid).count();
    let mut out: Vec<SmiGsiPair> = Vec::new();
    for p in ports() {
        let i = match out.iter().position(|x| x.port_guid == p.port_guid) {
            Some(i) => i,
            None => {
                out.push(SmiGsiPair {
                    port_guid: p.port_guid,
                    smi: None,
                    gsi: None,
                    planarized: count(p.port_guid) > 1,
                });
                out.len() - 1
            }
        };
        let pair = &mut out[i];
        let dev = (p.ca.clone(), p.port);
        let sm_disabled = p.cap_mask & CAP_IS_SM_DISABLED != 0;
        if pair.planarized {
            if sm_disabled {
                pair.gsi.get_or_insert(dev);
            } else {
                pair.smi.get_or_insert(dev);
            }
        } else {
            if !sm_disabled {
                pair.smi = Some(dev.clone());
            }
            pair.gsi = Some(dev);
        }
    }
    out
}

/// The devices that are only the SMI half of a planarized port (its GSI
/// device is the port the agent lists and sweeps through).
pub fn smi_halves(cas: &[SysfsCa]) -> Vec<Device> {
    smi_gsi_pairs(cas)
        .into_iter()
        .filter(|p| p.planarized && p.gsi.is_some())
        .filter_map(|p| p.smi)
        .collect()
}

/// The SMI device of the port whose GSI device is `gsi`, when it is
/// another device (a planarized port): SMPs of that port go there.
pub fn smi_of(cas: &[SysfsCa], gsi: &Device) -> Option<Device> {
    smi_gsi_pairs(cas)
        .into_iter()
        .find(|p| p.gsi.as_ref() == Some(gsi))
        .and_then(|p| p.smi)
        .filter(|smi| smi != gsi)
}

/// Pick the port per `cfg` (see [`UmadConfig`]) among the ports
/// [`read_cas`] finds under [`sysfs_root`], and find its umad device.
pub(super) fn select_port(cfg: &UmadConfig) -> Result<LocalPort, UmadError> {
    let root = sysfs_root();
    let cas = read_cas(&root)?;
    let ports: Vec<(&SysfsCa, &SysfsPort)> = cas
        .iter()
        .flat_map(|c| c.ports.iter().map(move |p| (c, p)))
        .collect();
    if ports.is_empty() {
        return Err(OpenError::NoPorts { under: root });
    }
    // The SMI half of a planarized port is never picked for PM MADs.
    let smi_only = smi_halves(&cas);
    let facts: Vec<LocalPort> = ports
        .iter()
        .filter(|(c, p)| {
            cfg.ca.as_deref().is_none_or(|want| want == c.name)
                && cfg.port.is_none_or(|want| want == p.port)
                && (cfg.ca.is_some() || !smi_only.contains(&(c.name.clone(), p.port)))
        })
        .map(|(c, p)| LocalPort {
            ca: c.name.clone(),
            port: p.port,
            state: p.state,
            state_text: p.state_text.clone(),
            lid: p.lid,
            node_guid: c.node_guid,
            device: String::new(),
        })
        .collect();
    let what = match (&cfg.ca, cfg.port) {
        (Some(c), Some(p)) => format!("port {c}/{p}"),
        (Some(c), None) => format!("CA {c}"),
        (None, Some(p)) => format!("port number {p} on any CA"),
        (None, None) => "any CA".to_string(),
    };
    if facts.is_empty() {
        let known = ports
            .iter()
            .map(|(c, p)| format!("{}/{}", c.name, p.port))
            .collect();
        return Err(OpenError::NoSuchPort {
            wanted: what,
            known,
        });
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

/// The InfiniBand ports of `cas` (an Ethernet port of a RoCE CA is none),
/// each port once: the SMI device of a planarized port
/// ([`smi_gsi_pairs`]) is its GSI device's, not a port of
/// its own.
pub fn ib_ports(cas: &[SysfsCa]) -> impl Iterator<Item = &SysfsPort> {
    let smi_only = smi_halves(cas);
    cas.iter()
        .flat_map(|c| &c.ports)
        .filter(|p| p.link_layer == LinkLayer::InfiniBand)
        .filter(move |p| !smi_only.contains(&(p.ca.clone(), p.port)))
}
