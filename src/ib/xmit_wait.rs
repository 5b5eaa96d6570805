//! How long one tick of PortXmitWait lasts on a port: the one conversion
//! every face of waiting time uses (the `congested` verdict, the ranking
//! of congested ports, pmPortRateCongestion, the threshold traps, the
//! congestion metrics).
//!
//! The IBA counts XmitWait in ticks of (Tick + 1) symbol times of the
//! port's active lane speed (a symbol time is one byte on one lane: 4 ns
//! at SDR), Tick being PortSamplesControl's field. NVIDIA's ASICs count
//! otherwise (ibdiagnet manual v2.13, "Congestion Assessment on
//! InfiniBand Links"): the Quantum family one tick per (Tick + 1) = 8
//! bytes of the whole port whatever its width, the SwitchX and Switch-IB
//! families one tick per (Tick + 1) = 32 bytes of each lane.
//!
//! A node takes its rule in this order: its family by NodeInfo VendorID
//! and DeviceID ([`ASIC_FAMILIES`]) sets the unit, else the IBA's lane
//! symbols; the Tick its PMA answered in PortSamplesControl sets the
//! multiple, else its family's declared Tick, else the IBA's 0x00.

use super::{LinkSpeed, LinkWidth};

/// What one (Tick + 1) counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickUnit {
    /// Bytes of the whole port, whatever its width.
    PortBytes,
    /// Symbol times of one lane at the port's active speed (the IBA's).
    LaneSymbols,
}

/// A family of ASICs that counts XmitWait its own way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AsicFamily {
    pub name: &'static str,
    /// NodeInfo VendorID (IEEE OUI).
    pub vendor_id: u32,
    /// NodeInfo DeviceIDs, as inclusive ranges.
    pub device_ids: &'static [(u16, u16)],
    pub unit: TickUnit,
    /// The Tick its PMA reports.
    pub tick: u8,
    /// Where the DeviceIDs come from.
    pub source: &'static str,
}

/// Mellanox's (NVIDIA networking's) IEEE OUI.
pub const MELLANOX: u32 = 0x0002c9;
/// Bull's, as rdma-core's diags match it.
pub const BULL: u32 = 0x00119f;

const RDMA_CORE: &str =
    "rdma-core infiniband-diags ibdiag_common.c is_mlnx_ext_port_info_supported";
const PCI_IDS: &str = "pci.ids (vendor 15b3)";

const fn family(
    name: &'static str,
    vendor_id: u32,
    device_ids: &'static [(u16, u16)],
    unit: TickUnit,
    source: &'static str,
) -> AsicFamily {
    AsicFamily {
        name,
        vendor_id,
        device_ids,
        unit,
        tick: match unit {
            TickUnit::PortBytes => 7,
            TickUnit::LaneSymbols => 31,
        },
        source,
    }
}

/// The families whose XmitWait tick is known, declared once. IDs only
/// from public sources: rdma-core's diags for SwitchX to Quantum, the PCI
/// ID database for Quantum-2 and Quantum-3 (rdma-core lists none yet).
#[rustfmt::skip]
pub const ASIC_FAMILIES: &[AsicFamily] = &[
    family("SwitchX", MELLANOX, &[(0xc738, 0xc73b), (0xc839, 0xc839)], TickUnit::LaneSymbols, RDMA_CORE),
    family("Switch-IB", MELLANOX, &[(0xcb20, 0xcb20)], TickUnit::LaneSymbols, RDMA_CORE),
    family("Switch-IB 2", MELLANOX, &[(0xcf08, 0xcf09)], TickUnit::LaneSymbols, RDMA_CORE),
    family("Quantum", MELLANOX, &[(0xd2f0, 0xd2f0)], TickUnit::PortBytes, RDMA_CORE),
    family("Quantum-2", MELLANOX, &[(0xd2f2, 0xd2f2)], TickUnit::PortBytes, PCI_IDS),
    family("Quantum-3", MELLANOX, &[(0xd2f4, 0xd2f4)], TickUnit::PortBytes, PCI_IDS),
    family("SwitchX (Bull)", BULL, &[(0x1b02, 0x1b02), (0x1b50, 0x1b50)], TickUnit::LaneSymbols, RDMA_CORE),
    family("Switch-IB (Bull)", BULL, &[(0x1ba0, 0x1ba0), (0x1bd0, 0x1bd5)], TickUnit::LaneSymbols, RDMA_CORE),
    family("Quantum (Bull)", BULL, &[(0x1bf0, 0x1bf0)], TickUnit::PortBytes, RDMA_CORE),
];

impl AsicFamily {
    /// The family of a node of NodeInfo `vendor_id` and `device_id`.
    pub fn of(vendor_id: u32, device_id: u16) -> Option<&'static AsicFamily> {
        ASIC_FAMILIES.iter().find(|f| {
            f.vendor_id == vendor_id
                && f.device_ids
                    .iter()
                    .any(|&(lo, hi)| (lo..=hi).contains(&device_id))
        })
    }
}

/// Where a node's Tick came from (pmNodeXmitWaitTickSource).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TickSource {
    /// Its PMA answered PortSamplesControl.
    SamplesControl,
    /// Its ASIC family's declared Tick.
    AsicFamily,
    /// Neither: the IBA's Tick 0x00.
    IbaDefault,
}

impl TickSource {
    pub fn mib(self) -> i32 {
        match self {
            TickSource::SamplesControl => 1,
            TickSource::AsicFamily => 2,
            TickSource::IbaDefault => 3,
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            TickSource::SamplesControl => "samplesControl",
            TickSource::AsicFamily => "asicFamily",
            TickSource::IbaDefault => "ibaDefault",
        }
    }
}

/// The rule one node's XmitWait ticks follow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickRule {
    pub family: Option<&'static AsicFamily>,
    pub unit: TickUnit,
    pub tick: u8,
    pub source: TickSource,
}

/// One symbol time (a byte on one lane) in seconds at `speed`.
fn symbol_secs(speed: LinkSpeed) -> f64 {
    8.0 / (speed.lane_mbps() as f64 * 1e6)
}

impl TickRule {
    /// The rule of a node of NodeInfo `vendor_id`/`device_id` whose PMA
    /// answered PortSamplesControl with `samples_tick` (None: it did not).
    pub fn of(vendor_id: u32, device_id: u16, samples_tick: Option<u8>) -> TickRule {
        let family = AsicFamily::of(vendor_id, device_id);
        let (tick, source) = match (samples_tick, family) {
            (Some(t), _) => (t, TickSource::SamplesControl),
            (None, Some(f)) => (f.tick, TickSource::AsicFamily),
            (None, None) => (0, TickSource::IbaDefault),
        };
        TickRule {
            family,
            unit: family.map_or(TickUnit::LaneSymbols, |f| f.unit),
            tick,
            source,
        }
    }

    /// How long one tick lasts on a port of active `width` and `speed`,
    /// in seconds; None when either is not known.
    pub fn tick_secs(&self, width: Option<LinkWidth>, speed: Option<LinkSpeed>) -> Option<f64> {
        let n = f64::from(self.tick) + 1.0;
        let symbol = symbol_secs(speed?);
        Some(match self.unit {
            TickUnit::LaneSymbols => n * symbol,
            TickUnit::PortBytes => n * symbol / f64::from(width?.lanes()),
        })
    }

    /// Ticks per second that mean "waiting all the time" on such a port.
    pub fn ticks_per_sec(&self, width: Option<LinkWidth>, speed: Option<LinkSpeed>) -> Option<f64> {
        self.tick_secs(width, speed).map(|s| 1.0 / s)
    }

    /// The share of the time (0..=1) a port waited to transmit, from its
    /// XmitWait ticks per second.
    pub fn share(
        &self,
        xmit_wait_per_s: f64,
        width: Option<LinkWidth>,
        speed: Option<LinkSpeed>,
    ) -> Option<f64> {
        let s = self.tick_secs(width, speed)?;
        Some((xmit_wait_per_s * s).clamp(0.0, 1.0))
    }

    /// The rule in words, as `query` and pmNodeXmitWaitTickRule show it.
    pub fn describe(&self) -> String {
        let unit = match self.unit {
            TickUnit::PortBytes => format!("{} bytes of the port", u32::from(self.tick) + 1),
            TickUnit::LaneSymbols => format!(
                "{} symbol times of a lane at its active speed",
                u32::from(self.tick) + 1
            ),
        };
        let family = self
            .family
            .map_or("IBA rule".to_string(), |f| format!("{} family", f.name));
        let from = match self.source {
            TickSource::SamplesControl => "from PortSamplesControl",
            TickSource::AsicFamily => "as the family reports",
            TickSource::IbaDefault => "IBA default, no PortSamplesControl",
        };
        format!("{family}: Tick {} ({from}), one tick = {unit}", self.tick)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= b * 1e-9
    }

    #[test]
    fn families_by_id() {
        assert_eq!(AsicFamily::of(MELLANOX, 0xd2f2).unwrap().name, "Quantum-2");
        assert_eq!(AsicFamily::of(MELLANOX, 0xc73a).unwrap().name, "SwitchX");
        assert_eq!(
            AsicFamily::of(MELLANOX, 0xcf09).unwrap().name,
            "Switch-IB 2"
        );
        assert_eq!(
            AsicFamily::of(BULL, 0x1bd3).unwrap().name,
            "Switch-IB (Bull)"
        );
        // An adapter, another vendor's ID: no family.
        assert!(AsicFamily::of(MELLANOX, 0x1021).is_none());
        assert!(AsicFamily::of(0x001175, 0xd2f0).is_none());
        for f in ASIC_FAMILIES {
            assert!(f.device_ids.iter().all(|(lo, hi)| lo <= hi), "{}", f.name);
        }
    }

    #[test]
    fn the_rule_a_node_takes() {
        let q2 = TickRule::of(MELLANOX, 0xd2f2, None);
        assert_eq!(
            (q2.unit, q2.tick, q2.source),
            (TickUnit::PortBytes, 7, TickSource::AsicFamily)
        );
        let q2 = TickRule::of(MELLANOX, 0xd2f2, Some(7));
        assert_eq!(q2.source, TickSource::SamplesControl);
        let other = TickRule::of(0, 0, Some(0xff));
        assert_eq!((other.unit, other.tick), (TickUnit::LaneSymbols, 0xff));
        assert!(other.family.is_none());
        let bare = TickRule::of(0, 0, None);
        assert_eq!((bare.tick, bare.source), (0, TickSource::IbaDefault));
        assert!(
            q2.describe().contains("Quantum-2 family: Tick 7"),
            "{}",
            q2.describe()
        );
    }

    #[test]
    fn tick_lengths() {
        use LinkSpeed::*;
        use LinkWidth::*;
        // The IBA's Tick 0 at SDR: 4 ns, whatever the width.
        let iba = TickRule::of(0, 0, None);
        assert!(close(iba.tick_secs(Some(X4), Some(Sdr)).unwrap(), 4e-9));
        assert!(close(iba.tick_secs(Some(X1), Some(Sdr)).unwrap(), 4e-9));
        // Quantum-2 at NDR 4x: 8 bytes of a 400 Gb/s port, 0.16 ns.
        let q2 = TickRule::of(MELLANOX, 0xd2f2, Some(7));
        assert!(close(q2.tick_secs(Some(X4), Some(Ndr)).unwrap(), 0.16e-9));
        assert!(close(q2.tick_secs(Some(X2), Some(Ndr)).unwrap(), 0.32e-9));
        // Switch-IB at EDR: 32 bytes of a 25 Gb/s lane, 10.24 ns.
        let sib = TickRule::of(MELLANOX, 0xcb20, None);
        assert!(close(sib.tick_secs(Some(X4), Some(Edr)).unwrap(), 10.24e-9));
        assert!(q2.tick_secs(None, Some(Ndr)).is_none());
        assert!(iba.tick_secs(Some(X4), None).is_none());
    }
}
