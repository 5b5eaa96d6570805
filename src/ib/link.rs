//! Link facts of a port: logical and physical state, active width and
//! speed, and the data rate they give. Each enum carries its PortInfo
//! code, its ibnetdiscover name and its IB-PM-MIB value in one table.

use std::fmt;

/// Declares a code enum whose variants each carry a name and the value
/// IB-PM-MIB shows, with `ALL`, `name()`, `mib()` and `from_mib()`.
macro_rules! link_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident {
            $( $(#[$vm:meta])* $var:ident = $text:literal, mib $mib:literal ),+ $(,)?
        }
    ) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $( $(#[$vm])* $var ),+ }

        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$var),+];

            /// The name ibnetdiscover / ibstat print.
            pub fn name(self) -> &'static str {
                match self { $($name::$var => $text),+ }
            }

            /// The enumeration value IB-PM-MIB gives it.
            pub fn mib(self) -> u32 {
                match self { $($name::$var => $mib),+ }
            }

            pub fn from_mib(v: u32) -> Option<$name> {
                Self::ALL.iter().copied().find(|x| x.mib() == v)
            }

            /// The name as written in a MIB enumeration.
            pub fn mib_label(self) -> String {
                mib_label(self.name())
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.name())
            }
        }
    };
}

/// A label as a MIB enumeration spells it: `4x` -> `width4x`, `QDR` ->
/// `qdr`, `LinkUp` -> `linkUp`.
fn mib_label(name: &str) -> String {
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return format!("width{name}");
    }
    if name
        .chars()
        .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
    {
        return name.to_ascii_lowercase();
    }
    let mut s = String::with_capacity(name.len());
    let mut chars = name.chars();
    if let Some(c) = chars.next() {
        s.push(c.to_ascii_lowercase());
    }
    s.extend(chars);
    s
}

link_enum! {
    /// PortInfo PortState, the port's logical state. The MIB value is the
    /// IBA code.
    pub enum PortState {
        Down = "Down", mib 1,
        Init = "Init", mib 2,
        Armed = "Armed", mib 3,
        Active = "Active", mib 4,
    }
}

impl PortState {
    pub fn from_code(code: u8) -> Option<PortState> {
        PortState::from_mib(code.into())
    }
}

link_enum! {
    /// PortInfo PortPhysicalState. The MIB value is the IBA code.
    pub enum PhysState {
        Sleep = "Sleep", mib 1,
        Polling = "Polling", mib 2,
        Disabled = "Disabled", mib 3,
        Training = "PortConfigurationTraining", mib 4,
        LinkUp = "LinkUp", mib 5,
        LinkErrorRecovery = "LinkErrorRecovery", mib 6,
        PhyTest = "PhyTest", mib 7,
    }
}

impl PhysState {
    pub fn from_code(code: u8) -> Option<PhysState> {
        PhysState::from_mib(code.into())
    }
}

link_enum! {
    /// Active link width. The MIB value is the number of lanes.
    pub enum LinkWidth {
        X1 = "1x", mib 1,
        X2 = "2x", mib 2,
        X4 = "4x", mib 4,
        X8 = "8x", mib 8,
        X12 = "12x", mib 12,
    }
}

impl LinkWidth {
    /// The PortInfo LinkWidthActive / LinkWidthEnabled bit.
    pub const fn code(self) -> u8 {
        match self {
            LinkWidth::X1 => 1,
            LinkWidth::X4 => 2,
            LinkWidth::X8 => 4,
            LinkWidth::X12 => 8,
            LinkWidth::X2 => 16,
        }
    }

    pub fn from_code(code: u8) -> Option<LinkWidth> {
        LinkWidth::ALL.iter().copied().find(|w| w.code() == code)
    }

    pub fn lanes(self) -> u32 {
        self.mib()
    }
}

link_enum! {
    /// Active link speed (signalling rate per lane). The MIB value
    /// orders the speeds from the slowest.
    pub enum LinkSpeed {
        Sdr = "SDR", mib 1,
        Ddr = "DDR", mib 2,
        Qdr = "QDR", mib 3,
        Fdr10 = "FDR10", mib 4,
        Fdr = "FDR", mib 5,
        Edr = "EDR", mib 6,
        Hdr = "HDR", mib 7,
        Ndr = "NDR", mib 8,
        Xdr = "XDR", mib 9,
    }
}

impl LinkSpeed {
    /// Data rate of one lane in Mb/s, after line encoding (8b/10b up to
    /// QDR, 64b/66b for FDR10 to EDR; HDR and later as IBTA states it).
    pub fn lane_mbps(self) -> u64 {
        match self {
            LinkSpeed::Sdr => 2_000,
            LinkSpeed::Ddr => 4_000,
            LinkSpeed::Qdr => 8_000,
            LinkSpeed::Fdr10 => 10_000,
            LinkSpeed::Fdr => 13_640,
            LinkSpeed::Edr => 25_000,
            LinkSpeed::Hdr => 50_000,
            LinkSpeed::Ndr => 100_000,
            LinkSpeed::Xdr => 200_000,
        }
    }

    /// PortInfo LinkSpeedActive (SDR, DDR, QDR) and LinkSpeedExtActive
    /// (FDR, EDR, HDR, NDR) codes; an extended speed wins when the port
    /// reports one (`ext` is 0 when the port does not support extended
    /// speeds). FDR10 and XDR are reported through attributes discovery
    /// does not read.
    pub fn from_port_info(speed: u8, ext: u8) -> Option<LinkSpeed> {
        Some(match (ext, speed) {
            (1, _) => LinkSpeed::Fdr,
            (2, _) => LinkSpeed::Edr,
            (4, _) => LinkSpeed::Hdr,
            (8, _) => LinkSpeed::Ndr,
            (0, 1) => LinkSpeed::Sdr,
            (0, 2) => LinkSpeed::Ddr,
            (0, 4) => LinkSpeed::Qdr,
            _ => return None,
        })
    }
}

link_enum! {
    /// PortInfoExtended FECModeActive: the forward error correction the
    /// link runs. The MIB value is the IBA code plus one (0 is unknown).
    pub enum FecMode {
        NoFec = "NoFEC", mib 1,
        FireCode = "FireCode", mib 2,
        RsFec = "RSFEC", mib 3,
        LowLatencyRsFec = "LLRSFEC", mib 4,
    }
}

impl FecMode {
    pub fn from_code(code: u16) -> Option<FecMode> {
        FecMode::from_mib(u32::from(code) + 1)
    }

    /// PortExtendedSpeedsCounters has its RS-FEC layout on such a link
    /// (perfquery: FECModeActive RS-FEC or low-latency RS-FEC).
    pub fn rs_fec(self) -> bool {
        matches!(self, FecMode::RsFec | FecMode::LowLatencyRsFec)
    }

    /// The FEC the simulated fabric's links run at a speed: none up to
    /// QDR and on FDR10, FireCode on FDR, RS-FEC from EDR on.
    pub fn simulated(speed: LinkSpeed) -> FecMode {
        match speed {
            LinkSpeed::Sdr | LinkSpeed::Ddr | LinkSpeed::Qdr | LinkSpeed::Fdr10 => FecMode::NoFec,
            LinkSpeed::Fdr => FecMode::FireCode,
            _ => FecMode::RsFec,
        }
    }
}

/// The data rate of a link in Mb/s (IF-MIB ifHighSpeed semantics), when
/// both its width and speed are known.
pub fn rate_mbps(width: Option<LinkWidth>, speed: Option<LinkSpeed>) -> Option<u64> {
    Some(u64::from(width?.lanes()) * speed?.lane_mbps())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_round_trip() {
        for w in LinkWidth::ALL {
            assert_eq!(LinkWidth::from_code(w.code()), Some(*w));
            assert_eq!(LinkWidth::from_mib(w.mib()), Some(*w));
        }
        assert_eq!(LinkWidth::from_code(3), None);
        for s in PortState::ALL {
            assert_eq!(PortState::from_code(s.mib() as u8), Some(*s));
        }
        assert_eq!(PortState::from_code(0), None);
        assert_eq!(PhysState::from_code(5), Some(PhysState::LinkUp));
        assert_eq!(LinkSpeed::from_port_info(4, 0), Some(LinkSpeed::Qdr));
        assert_eq!(LinkSpeed::from_port_info(4, 1), Some(LinkSpeed::Fdr));
        assert_eq!(LinkSpeed::from_port_info(3, 0), None);
        assert_eq!(LinkWidth::X4.mib_label(), "width4x");
        assert_eq!(LinkSpeed::Fdr10.mib_label(), "fdr10");
        assert_eq!(
            PhysState::LinkErrorRecovery.mib_label(),
            "linkErrorRecovery"
        );
        assert_eq!(PhysState::Training.mib_label(), "portConfigurationTraining");
        assert_eq!(FecMode::from_code(2), Some(FecMode::RsFec));
        assert_eq!(FecMode::RsFec.mib_label(), "rsfec");
        assert_eq!(FecMode::NoFec.mib_label(), "noFEC");
        assert!(FecMode::LowLatencyRsFec.rs_fec() && !FecMode::FireCode.rs_fec());
    }

    #[test]
    fn rates_follow_ifhighspeed() {
        assert_eq!(
            rate_mbps(Some(LinkWidth::X4), Some(LinkSpeed::Qdr)),
            Some(32_000)
        );
        assert_eq!(
            rate_mbps(Some(LinkWidth::X4), Some(LinkSpeed::Ndr)),
            Some(400_000)
        );
        assert_eq!(rate_mbps(None, Some(LinkSpeed::Ndr)), None);
    }
}
