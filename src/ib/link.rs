//! Link facts of a port: logical and physical state, active width and
//! speed, and the data rate they give. Each enum carries its PortInfo
//! code, its ibnetdiscover name and its IB-PM-MIB value in one table.

use std::fmt;

/// Declares a code enum whose variants each carry a name and the value
/// IB-PM-MIB shows, with `ALL`, `name()`, `mib()` and `from_mib()`; with
/// `code u8 = mib` after the name (the IBA code is the MIB value), also
/// `from_code()`.
macro_rules! link_enum {
    (
        $(#[$m:meta])*
        pub enum $name:ident $(: code $code:ty = mib)? {
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

            $(
                /// The variant an IBA code names.
                pub fn from_code(code: $code) -> Option<$name> {
                    Self::from_mib(code.into())
                }
            )?

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
    /// PortInfo PortState, the port's logical state.
    pub enum PortState: code u8 = mib {
        Down = "Down", mib 1,
        Init = "Init", mib 2,
        Armed = "Armed", mib 3,
        Active = "Active", mib 4,
    }
}

link_enum! {
    /// PortInfo PortPhysicalState.
    pub enum PhysState: code u8 = mib {
        Sleep = "Sleep", mib 1,
        Polling = "Polling", mib 2,
        Disabled = "Disabled", mib 3,
        Training = "PortConfigurationTraining", mib 4,
        LinkUp = "LinkUp", mib 5,
        LinkErrorRecovery = "LinkErrorRecovery", mib 6,
        PhyTest = "PhyTest", mib 7,
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

    /// The active speed from PortInfo's active-speed fields
    /// ([`SpeedCodes`]): an extended speed wins over LinkSpeedActive,
    /// LinkSpeedExtActive2 (XDR) over LinkSpeedExtActive, and FDR10 (from
    /// Mellanox ExtendedPortInfo) over QDR. None when a field holds a code
    /// IBTA does not define or nothing is active.
    pub fn active(c: SpeedCodes) -> Option<LinkSpeed> {
        let one = |code: u8, table: &[(u8, LinkSpeed)]| -> Result<Option<LinkSpeed>, ()> {
            match code {
                0 => Ok(None),
                c => table
                    .iter()
                    .find(|(b, _)| *b == c)
                    .map(|(_, s)| Some(*s))
                    .ok_or(()),
            }
        };
        let ext2 = one(c.ext2, EXT2_BITS).ok()?;
        let ext = one(c.ext, EXT_BITS).ok()?;
        let fdr10 = one(c.mlnx & 1, MLNX_BITS).ok()?;
        let legacy = one(c.legacy, LEGACY_BITS).ok()?;
        ext2.or(ext).or(fdr10).or(legacy)
    }

    /// PortInfo LinkSpeedActive and LinkSpeedExtActive alone (`ext` is 0
    /// when the port does not support extended speeds).
    pub fn from_port_info(speed: u8, ext: u8) -> Option<LinkSpeed> {
        LinkSpeed::active(SpeedCodes {
            legacy: speed,
            ext,
            ..SpeedCodes::default()
        })
    }
}

/// PortInfo LinkSpeed{Active,Supported,Enabled} bits (IBTA 14.2.5.6).
const LEGACY_BITS: &[(u8, LinkSpeed)] = &[
    (1, LinkSpeed::Sdr),
    (2, LinkSpeed::Ddr),
    (4, LinkSpeed::Qdr),
];
/// LinkSpeedExt{Active,Supported,Enabled} bits (rdma-core libibmad
/// `mad_dump_linkspeedext`: 14.0625, 25.78125, 53.125, 106.25 Gb/s).
const EXT_BITS: &[(u8, LinkSpeed)] = &[
    (1, LinkSpeed::Fdr),
    (2, LinkSpeed::Edr),
    (4, LinkSpeed::Hdr),
    (8, LinkSpeed::Ndr),
];
/// LinkSpeedExt{Active,Supported,Enabled}2 bits, valid where
/// CapabilityMask2 has IsExtendedSpeeds2Supported (IBTA 1.7; rdma-core
/// `mad_dump_linkspeedext2`: 212.5 Gb/s).
const EXT2_BITS: &[(u8, LinkSpeed)] = &[(1, LinkSpeed::Xdr)];
/// Mellanox ExtendedPortInfo (0xFF90) LinkSpeed{Active,Supported,Enabled}
/// bit 0: FDR10 (what iblinkinfo and ibstat read it from).
const MLNX_BITS: &[(u8, LinkSpeed)] = &[(1, LinkSpeed::Fdr10)];

/// The speed fields of one of PortInfo's Active/Supported/Enabled
/// triples, each 0 where the port has no such field: LinkSpeed*,
/// LinkSpeedExt* (where CapabilityMask has IsExtendedSpeedsSupported),
/// LinkSpeedExt*2 (where CapabilityMask2 has IsExtendedSpeeds2Supported)
/// and the Mellanox ExtendedPortInfo LinkSpeed* (FDR10).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpeedCodes {
    pub legacy: u8,
    pub ext: u8,
    pub ext2: u8,
    pub mlnx: u8,
}

/// What a [`LinkSet`] can hold: a link enum with one bit each.
pub trait Member: Copy + fmt::Display + 'static {
    /// The bits a set of them takes (as small as the members allow: a
    /// port holds four sets).
    type Bits: Copy
        + Default
        + Eq
        + fmt::Debug
        + std::hash::Hash
        + std::ops::BitAnd<Output = Self::Bits>
        + std::ops::BitOr<Output = Self::Bits>;
    /// Every member, in the set's order (narrowest or slowest first).
    const ALL: &'static [Self];
    /// The member's bit.
    fn bit(self) -> Self::Bits;
}

impl Member for LinkWidth {
    type Bits = u8;
    const ALL: &'static [LinkWidth] = LinkWidth::ALL;
    /// The PortInfo LinkWidth* bit.
    fn bit(self) -> u8 {
        self.code()
    }
}

impl Member for LinkSpeed {
    type Bits = u16;
    const ALL: &'static [LinkSpeed] = LinkSpeed::ALL;
    /// Bit n: the speed whose MIB value is n + 1.
    fn bit(self) -> u16 {
        1 << (self as u16)
    }
}

/// A set of link widths or speeds. Empty: not known.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LinkSet<T: Member>(T::Bits);

impl<T: Member> Default for LinkSet<T> {
    fn default() -> Self {
        LinkSet(T::Bits::default())
    }
}

/// A set of link widths (PortInfo LinkWidthSupported / LinkWidthEnabled
/// bits, [`LinkWidth::code`]).
pub type LinkWidths = LinkSet<LinkWidth>;

/// A set of link speeds.
pub type LinkSpeeds = LinkSet<LinkSpeed>;

impl<T: Member> LinkSet<T> {
    pub fn of(members: &[T]) -> Self {
        LinkSet(members.iter().fold(T::Bits::default(), |m, x| m | x.bit()))
    }

    pub fn is_known(self) -> bool {
        self.0 != T::Bits::default()
    }

    pub fn contains(self, x: T) -> bool {
        self.0 & x.bit() != T::Bits::default()
    }

    /// The members in the set, narrowest or slowest first.
    pub fn iter(self) -> impl Iterator<Item = T> {
        T::ALL.iter().copied().filter(move |x| self.contains(*x))
    }

    /// The widest or fastest.
    pub fn best(self) -> Option<T> {
        self.iter().last()
    }

    pub fn and(self, o: Self) -> Self {
        LinkSet(self.0 & o.0)
    }

    /// This (enabled) set within `supported`, where that is known.
    pub fn within(self, supported: Self) -> Self {
        if supported.is_known() {
            self.and(supported)
        } else {
            self
        }
    }

    /// The best member both sets hold; None where either is not known.
    pub fn best_in_common(self, o: Self) -> Option<T> {
        (self.is_known() && o.is_known())
            .then(|| self.and(o).best())
            .flatten()
    }
}

impl LinkWidths {
    /// From a PortInfo width field (bits IBTA does not define dropped;
    /// 255, "set to LinkWidthSupported", is only written, never read).
    pub fn from_port_info(code: u8) -> LinkWidths {
        let all = LinkWidths::of(LinkWidth::ALL).0;
        LinkSet(if code == 255 { 0 } else { code & all })
    }
}

impl LinkSpeeds {
    /// From PortInfo's Supported or Enabled speed fields. A
    /// LinkSpeedExtEnabled of 30 (extended speeds disabled) or 31 (set to
    /// supported, only ever written) adds nothing; bits IBTA does not
    /// define are dropped.
    pub fn from_port_info(c: SpeedCodes) -> LinkSpeeds {
        let ext = if c.ext >= 30 { 0 } else { c.ext };
        let mut s = 0;
        for (code, table) in [
            (c.legacy, LEGACY_BITS),
            (ext, EXT_BITS),
            (c.ext2, EXT2_BITS),
            (c.mlnx, MLNX_BITS),
        ] {
            for (bit, speed) in table {
                if code & bit != 0 {
                    s |= speed.bit();
                }
            }
        }
        LinkSet(s)
    }

    /// Every speed from `lo` to `hi`, FDR10 only when `fdr10`.
    pub fn range(lo: LinkSpeed, hi: LinkSpeed, fdr10: bool) -> LinkSpeeds {
        LinkSpeeds::of(
            &LinkSpeed::ALL
                .iter()
                .copied()
                .filter(|s| (lo..=hi).contains(s) && (fdr10 || *s != LinkSpeed::Fdr10))
                .collect::<Vec<_>>(),
        )
    }
}

/// `1x,4x` or `SDR,DDR,QDR` (empty when not known).
impl<T: Member> fmt::Display for LinkSet<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, x) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{x}")?;
        }
        Ok(())
    }
}

/// What a port's PortInfo says it supports and has enabled. A set that
/// is empty is not known.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkCaps {
    pub width_supported: LinkWidths,
    pub width_enabled: LinkWidths,
    pub speed_supported: LinkSpeeds,
    pub speed_enabled: LinkSpeeds,
}

impl LinkCaps {
    /// The widths the port may train at: enabled and supported (enabled
    /// alone where supported is not known: IBTA has enabled within
    /// supported); not known without the enabled set.
    pub fn widths(&self) -> LinkWidths {
        self.width_enabled.within(self.width_supported)
    }

    /// The speeds the port may train at, as [`LinkCaps::widths`].
    pub fn speeds(&self) -> LinkSpeeds {
        self.speed_enabled.within(self.speed_supported)
    }
}

link_enum! {
    /// Whether a link runs at what both its ends support and enable
    /// (pmPortLinkDegraded; 0 is unknown).
    pub enum LinkHealth {
        Normal = "Normal", mib 1,
        WidthDegraded = "WidthDegraded", mib 2,
        SpeedDegraded = "SpeedDegraded", mib 3,
        WidthAndSpeedDegraded = "WidthAndSpeedDegraded", mib 4,
    }
}

impl LinkHealth {
    pub fn is_degraded(self) -> bool {
        self != LinkHealth::Normal
    }
}

/// What a linked port should run at and whether it does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkAssessment {
    /// The widest width and fastest speed both ends support and enable
    /// (ibdiagnet's "operational speed should be"; iblinkinfo's "Could
    /// be" compares the supported sets alone). None where an end's sets
    /// are not known or have nothing in common.
    pub expected_width: Option<LinkWidth>,
    pub expected_speed: Option<LinkSpeed>,
    /// None while the link is down or a fact it needs is not known.
    pub health: Option<LinkHealth>,
}

/// Assess the link of `port` against `peer`, the port at its far end
/// (None: not cabled or not known). Pure: the fabric state asks it when
/// link facts change (the MIB and the notifications read what it kept),
/// and `query` for the port it reads.
pub fn assess(port: &super::Port, peer: Option<&super::Port>) -> LinkAssessment {
    let Some(peer) = peer.filter(|_| port.remote().is_some()) else {
        return LinkAssessment::default();
    };
    let (a, b) = (port.caps, peer.caps);
    let expected_width = a.widths().best_in_common(b.widths());
    let expected_speed = a.speeds().best_in_common(b.speeds());
    let below_w = match (port.width, expected_width) {
        (Some(w), Some(e)) => Some(w.lanes() < e.lanes()),
        _ => None,
    };
    let below_s = match (port.speed, expected_speed) {
        (Some(s), Some(e)) => Some(s < e),
        _ => None,
    };
    let health = match (below_w, below_s) {
        (Some(true), Some(true)) => Some(LinkHealth::WidthAndSpeedDegraded),
        (Some(true), _) => Some(LinkHealth::WidthDegraded),
        (_, Some(true)) => Some(LinkHealth::SpeedDegraded),
        (Some(false), Some(false)) => Some(LinkHealth::Normal),
        _ => None,
    };
    LinkAssessment {
        expected_width,
        expected_speed,
        health,
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

    /// PortInfo PortState and PortPhysicalState by their IBA codes, and
    /// nothing past them.
    #[test]
    fn port_and_phys_states_from_their_iba_codes() {
        use PhysState::*;
        use PortState::*;
        let states = (0u8..=5).map(PortState::from_code);
        let want = [
            None,
            Some(Down),
            Some(Init),
            Some(Armed),
            Some(Active),
            None,
        ];
        assert!(states.eq(want));
        let phys = (0u8..=8).map(PhysState::from_code);
        let want = [
            Sleep,
            Polling,
            Disabled,
            Training,
            LinkUp,
            LinkErrorRecovery,
            PhyTest,
        ];
        let want = [None].into_iter().chain(want.map(Some)).chain([None]);
        assert!(phys.eq(want));
    }

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

    /// Every width and speed against IBTA's data rates (lanes x the lane's
    /// data rate after 8b/10b, 64b/66b or, from HDR, as IBTA 1.4-1.7
    /// state them: 50, 100 and 200 Gb/s a lane).
    #[test]
    fn rates_for_every_width_and_speed() {
        let lane = [
            (LinkSpeed::Sdr, 2_000),
            (LinkSpeed::Ddr, 4_000),
            (LinkSpeed::Qdr, 8_000),
            (LinkSpeed::Fdr10, 10_000),
            (LinkSpeed::Fdr, 13_640),
            (LinkSpeed::Edr, 25_000),
            (LinkSpeed::Hdr, 50_000),
            (LinkSpeed::Ndr, 100_000),
            (LinkSpeed::Xdr, 200_000),
        ];
        assert_eq!(lane.len(), LinkSpeed::ALL.len());
        for (s, per_lane) in lane {
            for (w, lanes) in [
                (LinkWidth::X1, 1),
                (LinkWidth::X2, 2),
                (LinkWidth::X4, 4),
                (LinkWidth::X8, 8),
                (LinkWidth::X12, 12),
            ] {
                assert_eq!(
                    rate_mbps(Some(w), Some(s)),
                    Some(lanes * per_lane),
                    "{w}{s}"
                );
            }
        }
        // The ones operators quote: 2x NDR (NDR200), 4x XDR, 12x QDR.
        assert_eq!(
            rate_mbps(Some(LinkWidth::X2), Some(LinkSpeed::Ndr)),
            Some(200_000)
        );
        assert_eq!(
            rate_mbps(Some(LinkWidth::X4), Some(LinkSpeed::Xdr)),
            Some(800_000)
        );
        assert_eq!(
            rate_mbps(Some(LinkWidth::X12), Some(LinkSpeed::Qdr)),
            Some(96_000)
        );
    }

    #[test]
    fn speed_sets_and_active_speeds() {
        use LinkSpeed as S;
        let c = |legacy, ext, ext2, mlnx| SpeedCodes {
            legacy,
            ext,
            ext2,
            mlnx,
        };
        assert_eq!(LinkSpeed::active(c(4, 0, 0, 0)), Some(S::Qdr));
        assert_eq!(LinkSpeed::active(c(4, 0, 0, 1)), Some(S::Fdr10));
        assert_eq!(LinkSpeed::active(c(4, 2, 0, 0)), Some(S::Edr));
        assert_eq!(LinkSpeed::active(c(4, 8, 1, 0)), Some(S::Xdr));
        assert_eq!(LinkSpeed::active(c(4, 16, 0, 0)), None, "undefined code");
        assert_eq!(LinkSpeed::active(c(0, 0, 0, 0)), None);
        let all = LinkSpeeds::from_port_info(c(7, 15, 1, 1));
        assert_eq!(all.iter().count(), 9);
        assert_eq!(all.best(), Some(S::Xdr));
        assert_eq!(
            LinkSpeeds::range(S::Sdr, S::Edr, false).to_string(),
            "SDR,DDR,QDR,FDR,EDR"
        );
        assert_eq!(LinkSpeeds::range(S::Sdr, S::Edr, true).best(), Some(S::Edr));
        assert_eq!(LinkWidths::from_port_info(255), LinkWidths::default());
        assert_eq!(
            LinkWidths::from_port_info(0x3F).to_string(),
            "1x,2x,4x,8x,12x"
        );
        assert_eq!(
            LinkWidths::of(&[LinkWidth::X1, LinkWidth::X4]).best(),
            Some(LinkWidth::X4)
        );
    }

    fn linked(width: LinkWidth, speed: LinkSpeed, caps: LinkCaps) -> crate::ib::Port {
        let mut p = crate::ib::Port::unlinked(1, crate::ib::Guid(1), 1);
        p.set_remote(Some((crate::ib::Guid(2), 1)));
        p.state = Some(PortState::Active);
        (p.width, p.speed, p.caps) = (Some(width), Some(speed), caps);
        p
    }

    #[test]
    fn a_link_below_what_both_ends_support_and_enable_is_degraded() {
        use LinkSpeed as S;
        use LinkWidth as W;
        let edr = LinkCaps {
            width_supported: LinkWidths::of(&[W::X1, W::X4]),
            width_enabled: LinkWidths::of(&[W::X1, W::X4]),
            speed_supported: LinkSpeeds::range(S::Sdr, S::Edr, true),
            speed_enabled: LinkSpeeds::range(S::Sdr, S::Edr, true),
        };
        let hdr = LinkCaps {
            width_supported: LinkWidths::of(&[W::X1, W::X2, W::X4]),
            speed_supported: LinkSpeeds::range(S::Sdr, S::Hdr, false),
            ..edr
        };
        let a = |w, s, caps, peer: &crate::ib::Port| assess(&linked(w, s, caps), Some(peer));
        let peer = linked(W::X4, S::Edr, edr);
        let ok = a(W::X4, S::Edr, edr, &peer);
        assert_eq!(
            (ok.expected_width, ok.expected_speed, ok.health),
            (Some(W::X4), Some(S::Edr), Some(LinkHealth::Normal))
        );
        assert_eq!(
            a(W::X4, S::Ddr, edr, &peer).health,
            Some(LinkHealth::SpeedDegraded)
        );
        assert_eq!(
            a(W::X1, S::Edr, edr, &peer).health,
            Some(LinkHealth::WidthDegraded)
        );
        assert_eq!(
            a(W::X1, S::Qdr, edr, &peer).health,
            Some(LinkHealth::WidthAndSpeedDegraded)
        );
        // The best both ends have: an HDR port on an EDR peer should run
        // EDR (enabled within supported: HDR is not enabled here).
        assert_eq!(
            a(W::X4, S::Edr, hdr, &peer).health,
            Some(LinkHealth::Normal)
        );
        // Enabled restricts: a port enabled for SDR only is fine at SDR.
        let sdr_only = LinkCaps {
            speed_enabled: LinkSpeeds::of(&[S::Sdr]),
            ..edr
        };
        assert_eq!(
            a(W::X4, S::Sdr, sdr_only, &peer).expected_speed,
            Some(S::Sdr)
        );
        assert_eq!(
            a(W::X4, S::Sdr, sdr_only, &peer).health,
            Some(LinkHealth::Normal)
        );
        // Supported not known (ibsim's topology ports): enabled alone.
        let enabled_only = LinkCaps {
            width_supported: LinkWidths::default(),
            speed_supported: LinkSpeeds::default(),
            ..edr
        };
        assert_eq!(
            a(W::X4, S::Edr, enabled_only, &peer).health,
            Some(LinkHealth::Normal)
        );
        // Unknown sets give no verdict on what they decide...
        let unknown = LinkCaps::default();
        let u = a(W::X1, S::Ddr, unknown, &peer);
        assert_eq!((u.expected_width, u.health), (None, None));
        // ...but a width known to be degraded is, whatever the speed.
        let widths_only = LinkCaps {
            speed_enabled: LinkSpeeds::default(),
            speed_supported: LinkSpeeds::default(),
            ..edr
        };
        assert_eq!(
            a(W::X1, S::Edr, widths_only, &peer).health,
            Some(LinkHealth::WidthDegraded)
        );
        assert_eq!(a(W::X4, S::Edr, widths_only, &peer).health, None);
        // No peer, or down: nothing to say.
        assert_eq!(
            assess(&linked(W::X4, S::Edr, edr), None),
            LinkAssessment::default()
        );
        let mut down = linked(W::X4, S::Edr, edr);
        (down.width, down.speed) = (None, None);
        assert_eq!(assess(&down, Some(&peer)).health, None);
        assert_eq!(assess(&down, Some(&peer)).expected_width, Some(W::X4));
        assert_eq!(
            LinkHealth::WidthAndSpeedDegraded.mib_label(),
            "widthAndSpeedDegraded"
        );
    }
}
