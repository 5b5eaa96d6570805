//! Subnets: what tells one plane of a fabric from another, and what the
//! agent knows of each subnet it sweeps.
//!
//! A subnet is keyed by its subnet prefix together with its master Subnet
//! Manager's port GUID ([`SubnetKey`]): most sites leave every plane at the
//! default prefix (fe80::/64), so the prefix alone does not tell planes
//! apart. A configured name, or else the key, is what labels, the page and
//! the MIB show ([`SubnetView::label`]).

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use super::Guid;

/// The default subnet prefix (fe80::/64).
pub const DEFAULT_PREFIX: u64 = 0xfe80_0000_0000_0000;

/// Most subnets one agent sweeps (a port record carries its subnet's index
/// in a byte; a ConnectX-8 in multi-plane mode has 12 ports, a management
/// host a few adapters).
pub const MAX_SUBNETS: usize = 64;

/// A local port of this host: a CA name as in /sys/class/infiniband and a
/// port number. Written `mlx5_0:1`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LocalPort {
    pub ca: Arc<str>,
    pub port: u8,
}

impl LocalPort {
    pub fn new(ca: &str, port: u8) -> LocalPort {
        LocalPort {
            ca: Arc::from(ca),
            port,
        }
    }
}

impl fmt::Display for LocalPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", super::Escaped(&self.ca), self.port)
    }
}

/// SMInfo's SMState (IBTA 14.2.5.13).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SmState {
    #[default]
    NotActive = 0,
    Discovering = 1,
    Standby = 2,
    Master = 3,
}

impl SmState {
    /// From SMInfo's 4-bit field; values the IBTA leaves reserved read as
    /// not active.
    pub fn from_bits(v: u8) -> SmState {
        match v & 0x0f {
            1 => SmState::Discovering,
            2 => SmState::Standby,
            3 => SmState::Master,
            _ => SmState::NotActive,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            SmState::NotActive => "notActive",
            SmState::Discovering => "discovering",
            SmState::Standby => "standby",
            SmState::Master => "master",
        }
    }
}

impl fmt::Display for SmState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A Subnet Manager as its SMInfo describes it, with the LID it was read
/// from (the local port's MasterSMLID).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct SmInfo {
    pub lid: u16,
    pub guid: Guid,
    pub priority: u8,
    pub state: SmState,
    pub act_count: u32,
}

/// What tells one subnet from another: its prefix and its master SM's
/// port GUID (zero while no master SM is known).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SubnetKey {
    pub prefix: u64,
    pub sm_guid: Guid,
}

/// The default prefix, no master SM known yet.
impl Default for SubnetKey {
    fn default() -> Self {
        SubnetKey {
            prefix: DEFAULT_PREFIX,
            sm_guid: Guid(0),
        }
    }
}

impl SubnetKey {
    /// The prefix as IPv6 text with its length: `fe80::/64`.
    pub fn prefix_text(&self) -> String {
        prefix_text(self.prefix)
    }
}

/// A subnet prefix as IPv6 text with its length: `fe80::/64`.
pub fn prefix_text(prefix: u64) -> String {
    let addr = std::net::Ipv6Addr::from(u128::from(prefix) << 64);
    format!("{addr}/64")
}

impl fmt::Display for SubnetKey {
    /// `fe80::/64@0x0002c90300a1b2c3`: the prefix and the master SM's
    /// GUID; the prefix alone while no master SM is known.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&prefix_text(self.prefix))?;
        if self.sm_guid.0 != 0 {
            write!(f, "@{}", self.sm_guid)?;
        }
        Ok(())
    }
}

/// Whether a subnet is being swept (pmSubnetSweepState). A subnet that
/// is not is the subnet's condition, not its nodes': the agent's own
/// trouble (no local port up on it, or its sweeps failing as a whole)
/// gives none of its nodes a verdict of its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SweepState {
    #[default]
    Swept,
    /// No local port on the subnet is up.
    NoLocalPort,
    /// Its sweeps fail: more than half of its nodes missed the last one.
    SweepsFailing,
}

impl SweepState {
    /// The subnet's state from whether it lost its last local port (its
    /// probe says so: [`SweepState::NoLocalPort`] in the view it makes),
    /// and how many of its `nodes` missed the last sweep.
    pub fn judge(no_local_port: bool, nodes: usize, missed: usize) -> SweepState {
        if no_local_port {
            SweepState::NoLocalPort
        } else if missed * 2 > nodes {
            SweepState::SweepsFailing
        } else {
            SweepState::Swept
        }
    }

    pub fn is_swept(self) -> bool {
        self == SweepState::Swept
    }

    /// The pmSubnetSweepState value.
    pub fn mib(self) -> i32 {
        match self {
            SweepState::Swept => 1,
            SweepState::NoLocalPort => 2,
            SweepState::SweepsFailing => 3,
        }
    }

    /// The MIB's label.
    pub fn label(self) -> &'static str {
        match self {
            SweepState::Swept => "swept",
            SweepState::NoLocalPort => "noLocalPort",
            SweepState::SweepsFailing => "sweepsFailing",
        }
    }

    /// Why, in words (the page, the log).
    pub fn reason(self) -> &'static str {
        match self {
            SweepState::Swept => "swept",
            SweepState::NoLocalPort => "not swept: no local port on it is up",
            SweepState::SweepsFailing => {
                "not swept: its sweeps fail (most of its nodes missed the last one)"
            }
        }
    }
}

/// What a published snapshot says of one subnet the agent sweeps.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct SubnetView {
    /// Its position among the agent's subnets, from 0 (a port record's
    /// `subnet`; the MIB's index is this plus one).
    pub index: u8,
    /// The configured name (`[[umad.ports]] name`), if any.
    pub name: Option<Arc<str>>,
    pub key: SubnetKey,
    /// The master SM as last read (None: none answered).
    pub sm: Option<SmInfo>,
    /// The local port it is swept through (None: none is up).
    pub sweeping: Option<LocalPort>,
    /// The other local ports on the subnet, taken when the sweeping one
    /// goes down.
    pub standby: Vec<LocalPort>,
    pub nodes: u32,
    pub ports: u32,
    /// The subnet's own sweep count and when its last sweep ended.
    pub sweep: u64,
    pub swept: Option<Instant>,
    pub duration_ms: u64,
    /// Whether it is being swept, as of its last publication.
    pub sweep_state: SweepState,
}

impl SubnetView {
    /// The configured name, or else the key.
    pub fn label(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for SubnetView {
    /// Its label: the configured name, or else the key.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) => f.write_str(n),
            None => self.key.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_reads_as_prefix_and_sm() {
        let k = SubnetKey {
            prefix: DEFAULT_PREFIX,
            sm_guid: Guid(0x0002_c903_00a1_b2c3),
        };
        assert_eq!(k.to_string(), "fe80::/64@0x0002c90300a1b2c3");
        assert_eq!(SubnetKey::default().to_string(), "fe80::/64", "no SM known");
        let k2 = SubnetKey {
            prefix: 0xfe80_0000_0000_0002,
            ..k
        };
        assert_eq!(k2.prefix_text(), "fe80:0:0:2::/64");
        let v = SubnetView {
            key: k,
            ..Default::default()
        };
        assert_eq!(v.label(), k.to_string());
        let named = SubnetView {
            name: Some("plane-a".into()),
            ..v
        };
        assert_eq!(named.label(), "plane-a");
    }

    #[test]
    fn sm_state_reads_its_four_bits() {
        assert_eq!(SmState::from_bits(3), SmState::Master);
        assert_eq!(SmState::from_bits(0x13), SmState::Master);
        assert_eq!(SmState::from_bits(9), SmState::NotActive);
        assert_eq!(SmState::Standby.to_string(), "standby");
    }
}
