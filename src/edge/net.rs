//! Where a request comes from: the networks a `sources` list names, and
//! the keys the edges count by (a source, a network of sources).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// An IPv4 or IPv6 network, written `10.0.0.0/8`, `fd00::/8`, or a single
/// address (`127.0.0.1`, `::1`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Network {
    addr: IpAddr,
    prefix: u8,
}

impl Network {
    /// The loopback networks, `127.0.0.0/8` and `::1/128`: the default
    /// sources of a rule.
    pub fn loopback() -> Vec<Network> {
        vec![
            Network {
                addr: IpAddr::from([127, 0, 0, 0]),
                prefix: 8,
            },
            Network {
                addr: IpAddr::from([0u16, 0, 0, 0, 0, 0, 0, 1]),
                prefix: 128,
            },
        ]
    }

    /// Whether `ip` lies in this network. An IPv4 address that reaches an
    /// IPv6 socket as `::ffff:a.b.c.d` counts as the IPv4 address.
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.addr, ip.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(a)) => prefix_eq(
                u128::from(u32::from(net)) << 96,
                u128::from(u32::from(a)) << 96,
                self.prefix,
            ),
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                prefix_eq(u128::from(net), u128::from(a), self.prefix)
            }
            _ => false,
        }
    }

    /// Whether every address of the network is a loopback address.
    pub fn is_loopback(&self) -> bool {
        match self.addr {
            IpAddr::V4(a) => a.is_loopback() && self.prefix >= 8,
            IpAddr::V6(a) => a.is_loopback() && self.prefix == 128,
        }
    }
}

fn prefix_eq(a: u128, b: u128, prefix: u8) -> bool {
    let mask = if prefix == 0 {
        0
    } else {
        u128::MAX << (128 - u32::from(prefix))
    };
    a & mask == b & mask
}

impl FromStr for Network {
    type Err = String;
    fn from_str(s: &str) -> Result<Network, String> {
        let (addr, prefix) = match s.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (s, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| {
            format!(
                "`{}` is not an IP network (like 10.0.0.0/8 or fd00::/8)",
                s.escape_debug()
            )
        })?;
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => match p.parse::<u8>() {
                Ok(p) if p <= max => p,
                _ => {
                    return Err(format!(
                        "`{}`: the prefix length must be 0 to {max}",
                        s.escape_debug()
                    ));
                }
            },
        };
        let bits = match addr {
            IpAddr::V4(a) => u128::from(u32::from(a)) << 96,
            IpAddr::V6(a) => u128::from(a),
        };
        if prefix < 128 && bits << prefix != 0 {
            return Err(format!(
                "`{}` has bits set beyond its /{prefix} prefix (the network is written with its first address)",
                s.escape_debug()
            ));
        }
        // An IPv4-mapped network (`::ffff:10.0.0.0/104`) is the IPv4
        // network: a datagram from 10.1.2.3 reaches an IPv6 socket as
        // ::ffff:10.1.2.3 and is matched as 10.1.2.3. (Its prefix is 96 or
        // more: a shorter one has the ffff bits beyond it, refused above.)
        if let IpAddr::V6(a) = addr
            && let Some(v4) = a.to_ipv4_mapped()
            && prefix >= 96
        {
            return Ok(Network {
                addr: IpAddr::V4(v4),
                prefix: prefix - 96,
            });
        }
        Ok(Network { addr, prefix })
    }
}

impl fmt::Display for Network {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// The source a request is charged to (its rate, its render): the
/// address, or for IPv6 its /64 (one host commonly holds a whole /64).
pub fn source_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(a) => IpAddr::V4(a),
        IpAddr::V6(a) => IpAddr::V6((u128::from(a) & (u128::MAX << 64)).into()),
    }
}

/// The network a connection's slot is counted in: the /24 of an IPv4
/// address, the /64 of an IPv6 one, so that one host cannot take every
/// slot by holding many addresses.
pub fn network_of(ip: IpAddr) -> IpAddr {
    match ip.to_canonical() {
        IpAddr::V4(a) => IpAddr::V4((u32::from(a) & 0xffff_ff00).into()),
        IpAddr::V6(a) => IpAddr::V6((u128::from(a) & (u128::MAX << 64)).into()),
    }
}
