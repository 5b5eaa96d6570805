//! The devices the simulator knows by kind, declared once: what their
//! ports support. A node is recognised by its NodeInfo VendorID and
//! DeviceID (a switch by its ASIC family, [`ASIC_FAMILIES`], whose name is
//! the kind's; an adapter by the PCI device IDs of vendor 0x15b3 in the
//! pci.ids database) or, failing that, by a word of its NodeDescription. Every port of a recognised device
//! supports, and has enabled, the widths and speeds of its kind (as a
//! port out of the box does), so a topology that lists a link below them
//! is a link that trained low. A node of no known kind keeps what its
//! topology lines enabled, with supported not known.

#[cfg(doc)]
use crate::ib::xmit_wait::ASIC_FAMILIES;
use crate::ib::xmit_wait::AsicFamily;
use crate::ib::{LinkCaps, LinkSpeed, LinkSpeeds, LinkWidth, LinkWidths, Node, NodeType};

/// One kind of device.
#[derive(Clone, Copy, Debug)]
pub struct DeviceKind {
    pub name: &'static str,
    pub node_type: NodeType,
    /// NodeInfo DeviceIDs of an adapter (a switch's are its ASIC
    /// family's, the family of the kind's name).
    pub device_ids: &'static [u16],
    /// Words of a NodeDescription that name it (case-insensitive).
    pub words: &'static [&'static str],
    /// Widths of a port.
    pub widths: &'static [LinkWidth],
    /// Widths of a split port, and the port count from which a switch
    /// of this kind has its ports split (a Quantum-2 MQM9700 in split
    /// mode is "Switch 129": 128 ports of 2 lanes).
    pub split: Option<(&'static [LinkWidth], u8)>,
    /// The fastest speed; every slower one is supported too.
    pub fastest: LinkSpeed,
    /// FDR10, a Mellanox speed between QDR and FDR (the devices rdma-core
    /// asks Mellanox ExtendedPortInfo of).
    pub fdr10: bool,
    /// Its PMA sets ClassPortInfo CapabilityMask2 bit 1
    /// (IsAdditionalPortCountersExtendedSupported) and fills the 64-bit
    /// error counters of PortCountersExtended (ConnectX-4 and later,
    /// Quantum and later), whatever `SimOptions::wide_error_counters`
    /// says of its node type.
    pub wide_errors: bool,
}

const W14: &[LinkWidth] = &[LinkWidth::X1, LinkWidth::X4];
const W124: &[LinkWidth] = &[LinkWidth::X1, LinkWidth::X2, LinkWidth::X4];
const W12: &[LinkWidth] = &[LinkWidth::X1, LinkWidth::X2];

const fn kind(
    name: &'static str,
    node_type: NodeType,
    device_ids: &'static [u16],
    words: &'static [&'static str],
    widths: &'static [LinkWidth],
    fastest: LinkSpeed,
    fdr10: bool,
) -> DeviceKind {
    DeviceKind {
        name,
        node_type,
        device_ids,
        words,
        widths,
        split: None,
        fastest,
        fdr10,
        wide_errors: false,
    }
}

/// The same, with the 64-bit error counters.
const fn wide(k: DeviceKind) -> DeviceKind {
    DeviceKind {
        wide_errors: true,
        ..k
    }
}

/// Every kind, the more specific words first (Quantum-2 before Quantum).
#[rustfmt::skip]
pub const KINDS: &[DeviceKind] = &[
    kind("SwitchX", NodeType::Switch, &[], &["SwitchX"], W14, LinkSpeed::Fdr, true),
    kind("Switch-IB", NodeType::Switch, &[], &["SwitchIB", "Switch-IB", "MSB7700", "MSB7800"], W14, LinkSpeed::Edr, true),
    kind("Switch-IB 2", NodeType::Switch, &[], &["Switch-IB2", "SwitchIB-2", "MSB7790", "MSB7890"], W14, LinkSpeed::Edr, true),
    wide(DeviceKind {
        split: Some((W12, 129)),
        ..kind("Quantum-2", NodeType::Switch, &[], &["Quantum-2", "Quantum2", "MQM9700", "MQM9790"], W124, LinkSpeed::Ndr, false)
    }),
    wide(kind("Quantum-3", NodeType::Switch, &[], &["Quantum-3", "Quantum3", "X800", "Q3400", "Q3200"], W124, LinkSpeed::Xdr, false)),
    wide(DeviceKind {
        split: Some((W12, 80)),
        ..kind("Quantum", NodeType::Switch, &[], &["Quantum", "MQM8700", "MQM8790"], W124, LinkSpeed::Hdr, true)
    }),
    kind("ConnectX-3", NodeType::Ca, &[0x1003, 0x1007], &["ConnectX-3", "ConnectX3", "MT4099", "MT4103"], W14, LinkSpeed::Fdr, true),
    kind("Connect-IB", NodeType::Ca, &[0x1011], &["Connect-IB", "MT4113"], W14, LinkSpeed::Fdr, true),
    wide(kind("ConnectX-4", NodeType::Ca, &[0x1013], &["ConnectX-4", "ConnectX4", "MT4115"], W14, LinkSpeed::Edr, true)),
    wide(kind("ConnectX-5", NodeType::Ca, &[0x1017], &["ConnectX-5", "ConnectX5", "MT4119"], W14, LinkSpeed::Edr, true)),
    wide(kind("ConnectX-6", NodeType::Ca, &[0x101b], &["ConnectX-6", "ConnectX6", "MT4123"], W124, LinkSpeed::Hdr, true)),
    wide(kind("ConnectX-7", NodeType::Ca, &[0x1021], &["ConnectX-7", "ConnectX7", "MT4129"], W124, LinkSpeed::Ndr, false)),
    wide(kind("ConnectX-8", NodeType::Ca, &[0x1023], &["ConnectX-8", "ConnectX8", "MT4131"], W124, LinkSpeed::Xdr, false)),
];

impl DeviceKind {
    /// The kind of `node`: by DeviceID, else by a word of its
    /// description; a kind is only ever a node of its own type.
    pub fn of(node: &Node) -> Option<&'static DeviceKind> {
        let mine = || KINDS.iter().filter(|k| k.node_type == node.id.node_type);
        if node.id.device_id != 0 {
            let family = AsicFamily::of(node.id.vendor_id, node.id.device_id).map(|f| f.name);
            if let Some(k) =
                mine().find(|k| k.device_ids.contains(&node.id.device_id) || family == Some(k.name))
            {
                return Some(k);
            }
        }
        let desc = node.id.description.to_ascii_lowercase();
        mine().find(|k| {
            k.words
                .iter()
                .any(|w| desc.contains(&w.to_ascii_lowercase()))
        })
    }

    /// What every port of a node of this kind with `num_ports` ports
    /// supports and enables.
    pub fn caps(&self, num_ports: u8) -> LinkCaps {
        let widths = match self.split {
            Some((split, from)) if num_ports >= from => split,
            _ => self.widths,
        };
        let widths = LinkWidths::of(widths);
        let speeds = LinkSpeeds::range(LinkSpeed::Sdr, self.fastest, self.fdr10);
        LinkCaps {
            width_supported: widths,
            width_enabled: widths,
            speed_supported: speeds,
            speed_enabled: speeds,
        }
    }
}

/// Give the ports of every node of a known kind its kind's widths and
/// speeds; per node, whether its kind has 64-bit error counters.
pub fn apply(nodes: &mut [Node]) -> Vec<bool> {
    nodes
        .iter_mut()
        .map(|n| {
            let Some(k) = DeviceKind::of(n) else {
                return false;
            };
            let caps = k.caps(n.id.num_ports);
            for p in n.ports.iter_mut().filter(|p| p.num != 0) {
                p.caps = caps;
            }
            k.wide_errors
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ib::topology;

    #[test]
    fn kinds_by_device_id_and_description() {
        let f = topology::parse(include_str!(
            "../../tests/fixtures/topology/generations.net"
        ))
        .unwrap();
        let kind = |desc: &str| {
            let n = f.nodes.iter().find(|n| &*n.id.description == desc).unwrap();
            DeviceKind::of(n).map(|k| k.name)
        };
        assert_eq!(kind("MF0;gpu-sw-01:MQM9700/U1"), Some("Quantum-2"));
        assert_eq!(kind("gpu01 mlx5_0"), Some("ConnectX-7"), "devid=0x1021");
        assert_eq!(kind("SwitchIB Mellanox Technologies"), Some("Switch-IB"));
        assert_eq!(
            kind("Quantum-3 X800 Mellanox Technologies"),
            Some("Quantum-3")
        );
        assert_eq!(kind("xdr01 ConnectX-8"), Some("ConnectX-8"));
        assert_eq!(kind("qdr-12x"), None);
        // Each kind is known by a DeviceID: an adapter's own, a switch's
        // through its ASIC family.
        for k in KINDS {
            let ids = match k.node_type {
                NodeType::Switch => {
                    let f = crate::ib::xmit_wait::ASIC_FAMILIES
                        .iter()
                        .find(|f| f.name == k.name);
                    f.map_or(0, |f| f.device_ids.len())
                }
                _ => k.device_ids.len(),
            };
            assert!(!k.words.is_empty() && ids > 0, "{}", k.name);
        }
    }

    #[test]
    fn split_ports_have_two_lanes() {
        let q2 = KINDS.iter().find(|k| k.name == "Quantum-2").unwrap();
        assert_eq!(q2.caps(65).width_supported.to_string(), "1x,2x,4x");
        assert_eq!(q2.caps(129).width_supported.to_string(), "1x,2x");
        assert_eq!(
            q2.caps(65).speed_supported.to_string(),
            "SDR,DDR,QDR,FDR,EDR,HDR,NDR"
        );
        let sib = KINDS.iter().find(|k| k.name == "Switch-IB").unwrap();
        assert_eq!(sib.caps(36).speed_enabled.best(), Some(LinkSpeed::Edr));
        assert!(sib.caps(36).speed_enabled.contains(LinkSpeed::Fdr10));
        assert!(q2.wide_errors && !sib.wide_errors);
    }
}
