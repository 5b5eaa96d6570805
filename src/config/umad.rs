//! `[umad]`: the local ports of the umad backend, and the deadline of
//! discovery's SMPs.
//!
//! The ports are given one of three ways, or none (every active local
//! port, grouped by subnet): the old `ca`/`port` keys (one port), `ports`
//! (a list, grouped by subnet) or `[[umad.plane]]` tables (each a named
//! subnet with its ports, the first swept through while it is up, the
//! others standby). Giving two of them is an error.

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use super::keys::Keys;
use super::limits;
use super::{ConfigError, milliseconds, non_empty};
use crate::fabric::local::{Plane, Wanted};
use crate::ib::subnet::{LocalPort, MAX_SUBNETS};
use crate::transport::umad::SysfsCa;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UmadSection {
    /// CA name as in /sys/class/infiniband (e.g. `mlx5_0`); `None` (an
    /// empty string in the file) = the first CA with an active port.
    #[serde(deserialize_with = "non_empty")]
    pub ca: Option<String>,
    /// Port number on the CA; `None` (0 in the file) = the first active
    /// port.
    #[serde(deserialize_with = "non_zero")]
    pub port: Option<u8>,
    /// The local ports to sweep through (`["mlx5_0:1", "mlx5_1:1"]`),
    /// grouped by subnet.
    #[serde(deserialize_with = "local_ports")]
    pub ports: Vec<LocalPort>,
    /// Named planes (`[[umad.plane]]`), each one subnet.
    pub plane: Vec<PlaneEntry>,
    /// Deadline of one directed-route SMP during discovery
    /// (`discovery_timeout_ms` in the file).
    #[serde(rename = "discovery_timeout_ms", deserialize_with = "milliseconds")]
    pub discovery_timeout: Duration,
    /// How often the device's threads look at their stop flag (not in the
    /// file: the agent keeps the default, a one-shot command that closes
    /// the device at once gives a short one).
    #[serde(skip)]
    pub reader_poll: Duration,
}

/// One `[[umad.plane]]`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlaneEntry {
    /// What labels, the page and the MIB show for the subnet (else its
    /// prefix and master SM).
    #[serde(default, deserialize_with = "non_empty")]
    pub name: Option<String>,
    /// Its local ports: the first swept through while it is up.
    #[serde(deserialize_with = "local_ports")]
    pub ports: Vec<LocalPort>,
}

impl Default for UmadSection {
    fn default() -> Self {
        UmadSection {
            ca: None,
            port: None,
            ports: Vec::new(),
            plane: Vec::new(),
            discovery_timeout: Duration::from_millis(500),
            reader_poll: crate::transport::umad::POLL,
        }
    }
}

fn non_zero<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u8>, D::Error> {
    let n = u8::deserialize(d)?;
    Ok((n != 0).then_some(n))
}

fn local_ports<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<LocalPort>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| parse_local_port(s).map_err(de::Error::custom))
        .collect()
}

/// `mlx5_0:1`: a CA name and a port number from 1 to
/// [`limits::MAX_LOCAL_PORT`].
pub fn parse_local_port(s: &str) -> Result<LocalPort, String> {
    let shown = s.escape_debug();
    let Some((ca, n)) = s.rsplit_once(':') else {
        return Err(format!("`{shown}` is not CA:PORT (e.g. mlx5_0:1)"));
    };
    check_ca_name(ca)?;
    let Ok(n) = n.parse::<u64>() else {
        return Err(format!("`{shown}` is not CA:PORT (e.g. mlx5_0:1)"));
    };
    match u8::try_from(n) {
        Ok(p) if (1..=limits::MAX_LOCAL_PORT).contains(&p) => Ok(LocalPort::new(ca, p)),
        _ => Err(format!(
            "`{shown}`: port {n} is out of range (1 to {})",
            limits::MAX_LOCAL_PORT
        )),
    }
}

fn check_ca_name(ca: &str) -> Result<(), String> {
    if ca.is_empty() || ca.contains(['/', '\0', ':']) || ca == "." || ca == ".." {
        return Err(format!(
            "`{}` is not a CA name (e.g. mlx5_0)",
            ca.escape_debug()
        ));
    }
    Ok(())
}

/// An error in the `n`th `[[umad.plane]]` (None: in `[umad]` itself).
pub(super) type AtPlane = (Option<u8>, ConfigError);

impl UmadSection {
    /// Check what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        self.check_ports().map_err(|(_, e)| e)
    }

    /// Check the ports the section names, each error at its plane: one
    /// form only, no port twice, no name twice, at most [`MAX_SUBNETS`]
    /// planes.
    pub(super) fn check_ports(&self) -> Result<(), AtPlane> {
        let top = |key: &str, reason: String| (None, ConfigError::at("umad", key, reason));
        if let Some(ca) = &self.ca {
            check_ca_name(ca).map_err(|r| top("ca", r))?;
        }
        if !self.ports.is_empty() || !self.plane.is_empty() {
            for (key, set) in [("ca", self.ca.is_some()), ("port", self.port.is_some())] {
                if set {
                    return Err(top(
                        key,
                        "`ca` and `port` name one port: with `ports` or [[umad.plane]], \
                         list it there instead"
                            .into(),
                    ));
                }
            }
        }
        if !self.ports.is_empty() && !self.plane.is_empty() {
            return Err(top(
                "ports",
                "give either `ports` or [[umad.plane]] tables, not both".into(),
            ));
        }
        twice(&self.ports).map_err(|r| top("ports", r))?;
        if self.plane.len() > MAX_SUBNETS {
            return Err((
                Some(MAX_SUBNETS as u8),
                plane_error("name", format!("more than {MAX_SUBNETS} planes")),
            ));
        }
        let mut seen: Vec<&LocalPort> = Vec::new();
        for (i, p) in self.plane.iter().enumerate() {
            // At most MAX_SUBNETS planes: the index is a byte.
            let at = |key: &str, r: String| (Some(i as u8), plane_error(key, r));
            if p.ports.is_empty() {
                return Err(at("ports", "a plane needs at least one port".into()));
            }
            for port in &p.ports {
                if seen.contains(&port) {
                    return Err(at("ports", format!("port {port} is listed twice")));
                }
                seen.push(port);
            }
            if let Some(name) = &p.name
                && self.plane[..i]
                    .iter()
                    .any(|q| q.name.as_ref() == Some(name))
            {
                return Err(at(
                    "name",
                    format!("the name `{}` is given twice", name.escape_debug()),
                ));
            }
        }
        Ok(())
    }

    /// Check the named CAs and port numbers against the host's CAs (as
    /// [`crate::transport::umad::read_cas`] reads them from `root`): a CA
    /// that does not exist, a port past the CA's port count.
    pub(super) fn check_host(&self, cas: &[SysfsCa], root: &str) -> Result<(), AtPlane> {
        let known = || {
            let names: Vec<&str> = cas.iter().map(|c| c.name.as_str()).collect();
            if names.is_empty() {
                format!("none under {root}")
            } else {
                format!("known: {}", names.join(", "))
            }
        };
        let check = |ca: &str, port: Option<u8>| -> Result<(), String> {
            let Some(c) = cas.iter().find(|c| c.name == ca) else {
                return Err(format!("no CA `{}` ({})", ca.escape_debug(), known()));
            };
            match port {
                Some(n) if n > c.port_count => Err(format!(
                    "port {n} is out of range: {} has {} port{}",
                    ca.escape_debug(),
                    c.port_count,
                    if c.port_count == 1 { "" } else { "s" }
                )),
                _ => Ok(()),
            }
        };
        if let Some(ca) = &self.ca {
            check(ca, self.port).map_err(|r| (None, ConfigError::at("umad", "ca", r)))?;
        }
        for p in &self.ports {
            check(&p.ca, Some(p.port)).map_err(|r| (None, ConfigError::at("umad", "ports", r)))?;
        }
        for (i, plane) in self.plane.iter().take(MAX_SUBNETS).enumerate() {
            for p in &plane.ports {
                check(&p.ca, Some(p.port)).map_err(|r| (Some(i as u8), plane_error("ports", r)))?;
            }
        }
        Ok(())
    }

    /// Whether the section names any port (else every active one is used).
    pub fn names_ports(&self) -> bool {
        self.ca.is_some() || self.port.is_some() || !self.ports.is_empty() || !self.plane.is_empty()
    }

    /// Which local ports the agent sweeps through.
    pub fn wanted(&self) -> Wanted {
        if !self.plane.is_empty() {
            return Wanted::Planes(
                self.plane
                    .iter()
                    .map(|p| Plane {
                        name: p.name.as_deref().map(Arc::from),
                        ports: p.ports.clone(),
                    })
                    .collect(),
            );
        }
        if !self.ports.is_empty() {
            return Wanted::Ports(self.ports.clone());
        }
        if self.ca.is_some() || self.port.is_some() {
            return Wanted::First {
                ca: self.ca.as_deref().map(Arc::from),
                port: self.port,
            };
        }
        Wanted::Every
    }
}

/// An [`AtPlane`] error at its line of `keys`, in `file`.
pub(super) fn placed(keys: &Keys, file: &str, (plane, e): AtPlane) -> ConfigError {
    let line = match (plane, &e.section, &e.key) {
        (Some(i), Some(table), Some(key)) => keys.nth_line(table, i.into(), key),
        (None, Some(section), Some(key)) => keys.line(section, key),
        _ => None,
    };
    e.in_file(file, line)
}

fn plane_error(key: &str, reason: String) -> ConfigError {
    ConfigError::at("umad.plane", key, reason)
}

/// The first port listed twice.
fn twice(ports: &[LocalPort]) -> Result<(), String> {
    for (i, p) in ports.iter().enumerate() {
        if ports[..i].contains(p) {
            return Err(format!("port {p} is listed twice"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::Config;
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(text, "c.toml")
    }

    fn err(text: &str) -> (Option<usize>, String, String) {
        let e = parse(text).unwrap_err();
        (e.line, e.key_path().unwrap_or_default(), e.reason)
    }

    #[test]
    fn the_three_forms_and_none() {
        assert_eq!(parse("").unwrap().umad.wanted(), Wanted::Every);
        assert_eq!(
            parse("[umad]\nca = \"mlx5_0\"\n").unwrap().umad.wanted(),
            Wanted::First {
                ca: Some("mlx5_0".into()),
                port: None
            }
        );
        let c = parse("[umad]\nports = [\"mlx5_0:1\", \"mlx5_1:2\"]\n").unwrap();
        assert_eq!(
            c.umad.wanted(),
            Wanted::Ports(vec![
                LocalPort::new("mlx5_0", 1),
                LocalPort::new("mlx5_1", 2)
            ])
        );
        let c = parse(
            "[[umad.plane]]\nname = \"plane-a\"\nports = [\"mlx5_0:1\", \"mlx5_2:1\"]\n\
             [[umad.plane]]\nports = [\"mlx5_1:1\"]\n",
        )
        .unwrap();
        assert_eq!(
            c.umad.wanted(),
            Wanted::Planes(vec![
                Plane {
                    name: Some("plane-a".into()),
                    ports: vec![LocalPort::new("mlx5_0", 1), LocalPort::new("mlx5_2", 1)],
                },
                Plane {
                    name: None,
                    ports: vec![LocalPort::new("mlx5_1", 1)],
                },
            ])
        );
        assert!(c.umad.names_ports() && !Config::default().umad.names_ports());
    }

    #[test]
    fn bad_ports_are_refused_at_their_line_and_key() {
        for (text, line, key, words) in [
            (
                "[umad]\nports = [\"mlx5_0:1\",\n  \"mlx5_0:1\"]\n",
                2,
                "umad.ports",
                "port mlx5_0:1 is listed twice",
            ),
            (
                "[umad]\n\nports = [\"mlx5_0:0\"]\n",
                3,
                "umad.ports",
                "port 0 is out of range (1 to 254)",
            ),
            (
                "[umad]\nports = [\"mlx5_0:255\"]\n",
                2,
                "umad.ports",
                "port 255 is out of range (1 to 254)",
            ),
            (
                "[umad]\nports = [\"mlx5_0\"]\n",
                2,
                "umad.ports",
                "is not CA:PORT",
            ),
            (
                "[umad]\nports = [\"../x:1\"]\n",
                2,
                "umad.ports",
                "is not a CA name",
            ),
            (
                "[umad]\nport = 255\n",
                2,
                "umad.port",
                "255 is out of range (0 to 254)",
            ),
            (
                "[umad]\nca = \"mlx5_0\"\nports = [\"mlx5_1:1\"]\n",
                2,
                "umad.ca",
                "list it there instead",
            ),
            (
                "[umad]\nports = [\"mlx5_1:1\"]\n[[umad.plane]]\nports = [\"mlx5_0:1\"]\n",
                2,
                "umad.ports",
                "not both",
            ),
            (
                "[[umad.plane]]\nports = [\"mlx5_0:1\"]\n[[umad.plane]]\nname = \"b\"\n\
                 ports = [\"mlx5_1:1\", \"mlx5_0:1\"]\n",
                5,
                "umad.plane.ports",
                "port mlx5_0:1 is listed twice",
            ),
            (
                "[[umad.plane]]\nname = \"a\"\nports = [\"mlx5_0:1\"]\n[[umad.plane]]\n\
                 name = \"a\"\nports = [\"mlx5_1:1\"]\n",
                5,
                "umad.plane.name",
                "the name `a` is given twice",
            ),
            (
                "[[umad.plane]]\nname = \"a\"\nports = []\n",
                3,
                "umad.plane.ports",
                "at least one port",
            ),
        ] {
            let (l, k, r) = err(text);
            assert_eq!((l, k.as_str()), (Some(line), key), "{text}: {r}");
            assert!(r.contains(words), "{text}: {r}");
        }
    }

    /// The example says the port numbers `ports` takes, as the parser
    /// checks them.
    #[test]
    fn the_example_states_the_port_numbers() {
        let text = include_str!("../../config/ibpm-agentx.toml");
        let at = text.find("\nports = ").expect("ports in the example");
        let comment = &text[text[..at].rfind("\n# 2.").expect("its comment")..at];
        let range = format!("1 to {}", limits::MAX_LOCAL_PORT);
        assert!(comment.contains(&range), "{comment}");
        let e = parse(&format!(
            "[umad]\nports = [\"mlx5_0:{}\"]\n",
            u16::from(limits::MAX_LOCAL_PORT) + 1
        ))
        .unwrap_err();
        assert!(e.reason.contains(&range), "{e}");
        parse(&format!(
            "[umad]\nports = [\"mlx5_0:{}\"]\n",
            limits::MAX_LOCAL_PORT
        ))
        .unwrap();
    }

    fn ca(name: &str, port_count: u8) -> SysfsCa {
        SysfsCa {
            name: name.into(),
            node_guid: 0,
            port_count,
            ports: Vec::new(),
        }
    }

    #[test]
    fn the_host_must_have_the_cas_and_ports_named() {
        let cas = [ca("mlx5_0", 1), ca("mlx5_1", 2)];
        let check = |text: &str| {
            parse(text)
                .unwrap()
                .umad
                .check_host(&cas, "/sys/class/infiniband")
        };
        check("[umad]\nports = [\"mlx5_0:1\", \"mlx5_1:2\"]\n").unwrap();
        check("[umad]\nca = \"mlx5_1\"\n").unwrap();
        let (at, e) = check("[umad]\nports = [\"mlx5_0:1\", \"mlx5_9:1\"]\n").unwrap_err();
        assert_eq!((at, e.key_path().as_deref()), (None, Some("umad.ports")));
        assert_eq!(e.reason, "no CA `mlx5_9` (known: mlx5_0, mlx5_1)");
        let (at, e) = check(
            "[[umad.plane]]\nports = [\"mlx5_1:1\"]\n[[umad.plane]]\nports = [\"mlx5_0:2\"]\n",
        )
        .unwrap_err();
        assert_eq!(
            (at, e.key_path().as_deref()),
            (Some(1), Some("umad.plane.ports"))
        );
        assert_eq!(e.reason, "port 2 is out of range: mlx5_0 has 1 port");
        let (_, e) = check("[umad]\nca = \"mlx5_1\"\nport = 3\n").unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("umad.ca"));
        assert_eq!(e.reason, "port 3 is out of range: mlx5_1 has 2 ports");
        let (_, e) = parse("[umad]\nca = \"x\"\n")
            .unwrap()
            .umad
            .check_host(&[], "/r")
            .unwrap_err();
        assert_eq!(e.reason, "no CA `x` (none under /r)");
    }
}
