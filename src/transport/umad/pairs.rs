//! The SMI and GSI devices of each local port, paired from sysfs as
//! libibumad pairs them (`umad_get_smi_gsi_pairs`, rdma-core PRs 1398,
//! 1529, 1794). On a planarized adapter (ConnectX-8 and later in XDR
//! fabrics) one port has two umad devices with the same port GUID: the
//! SMI device, through which SMPs go (directed route only: LID-routed SMPs
//! are not valid in planarized fabrics), and the GSI device, whose
//! PortInfo CapabilityMask has IsSMDisabled set, through which GMPs such
//! as PM MADs go. Any other port is both its own SMI and GSI device (its
//! SMI none when it has IsSMDisabled). Ethernet ports are in no pair.
//! Pure: it reads what [`super::read_cas`] read.

use super::sysfs::{LinkLayer, SysfsCa};

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
