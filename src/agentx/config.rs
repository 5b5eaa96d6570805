//! Where the master listens and how a session behaves: the settings the
//! protocol core and its driver share.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use super::pdu::{ByteOrder, DEFAULT_MAX_PDU};
use crate::mib::Oid;

// ------------------------------------------------------------------ address

/// Where the master agent listens: `PATH`, `unix:PATH` or `tcp:HOST:PORT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AgentxAddr {
    Unix(PathBuf),
    Tcp { host: String, port: u16 },
}

impl Default for AgentxAddr {
    fn default() -> Self {
        AgentxAddr::Unix(PathBuf::from("/var/agentx/master"))
    }
}

impl fmt::Display for AgentxAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentxAddr::Unix(p) => write!(f, "unix:{}", p.display()),
            AgentxAddr::Tcp { host, port } if host.contains(':') => {
                write!(f, "tcp:[{host}]:{port}")
            }
            AgentxAddr::Tcp { host, port } => write!(f, "tcp:{host}:{port}"),
        }
    }
}

/// Why a string is not an AgentX address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseAddrError {
    pub input: String,
    pub reason: &'static str,
}

impl fmt::Display for ParseAddrError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid AgentX address {:?}: {} (expected PATH, unix:PATH or tcp:HOST:PORT)",
            self.input, self.reason
        )
    }
}

impl std::error::Error for ParseAddrError {}

impl FromStr for AgentxAddr {
    type Err = ParseAddrError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = |reason| ParseAddrError {
            input: s.to_string(),
            reason,
        };
        let s_trim = s.trim();
        if s_trim.is_empty() {
            return Err(err("empty"));
        }
        // A control character (a newline) in a path or host name is a
        // mistake, and would break the log lines that name the address.
        if s_trim.chars().any(char::is_control) {
            return Err(err("control character (such as a newline) in the address"));
        }
        if let Some(p) = s_trim.strip_prefix("unix:") {
            if p.is_empty() {
                return Err(err("empty socket path"));
            }
            return Ok(AgentxAddr::Unix(PathBuf::from(p)));
        }
        if let Some(rest) = s_trim.strip_prefix("tcp:") {
            let (host, port) = rest.rsplit_once(':').ok_or_else(|| err("missing :PORT"))?;
            let host = host
                .strip_prefix('[')
                .and_then(|h| h.strip_suffix(']'))
                .unwrap_or(host);
            if host.is_empty() {
                return Err(err("empty host"));
            }
            let port: u16 = port
                .parse()
                .map_err(|_| err("port is not a number 1..65535"))?;
            if port == 0 {
                return Err(err("port 0"));
            }
            return Ok(AgentxAddr::Tcp {
                host: host.to_string(),
                port,
            });
        }
        if let Some((scheme, _)) = s_trim.split_once(':')
            && !scheme.contains('/')
        {
            return Err(err("unsupported transport (only unix: and tcp:)"));
        }
        Ok(AgentxAddr::Unix(PathBuf::from(s_trim)))
    }
}

// ------------------------------------------------------------------ config

/// Session settings.
#[derive(Clone, Debug)]
pub struct SessionConfig {
    pub address: AgentxAddr,
    /// Subtrees registered after each Open.
    pub subtrees: Vec<Oid>,
    /// Registration priority (lower wins; RFC default 127).
    pub priority: u8,
    /// Open o.descr.
    pub description: String,
    /// Open o.id (may be empty: the null OID).
    pub id: Oid,
    /// Open o.timeout in seconds (0 = the master's default).
    pub timeout_s: u8,
    /// Ping the master this often while connected (zero disables).
    pub ping_interval: Duration,
    /// First reconnect / re-register delay.
    pub backoff_min: Duration,
    /// Largest reconnect / re-register delay.
    pub backoff_max: Duration,
    /// Byte order of the PDUs this subagent sends (the master mirrors it).
    pub byte_order: ByteOrder,
    /// Largest PDU accepted from the master.
    pub max_pdu: usize,
    /// Notifications kept while no session is open; beyond that the
    /// oldest are dropped (and counted).
    pub notify_queue: usize,
}

impl Default for SessionConfig {
    fn default() -> Self {
        SessionConfig {
            address: AgentxAddr::default(),
            subtrees: vec![Oid::new(&[1, 3, 6, 1, 3, 117])],
            priority: 127,
            description: "ibpm-agentx: IB-PM-MIB subagent".to_string(),
            id: Oid::new(&[1, 3, 6, 1, 3, 117]),
            timeout_s: 5,
            ping_interval: Duration::from_secs(15),
            backoff_min: Duration::from_millis(200),
            backoff_max: Duration::from_secs(5),
            byte_order: ByteOrder::Big,
            max_pdu: DEFAULT_MAX_PDU,
            notify_queue: 1000,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_addresses() {
        assert_eq!(
            "/var/agentx/master".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Unix("/var/agentx/master".into())
        );
        assert_eq!(
            "unix:/tmp/x".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Unix("/tmp/x".into())
        );
        assert_eq!(
            "tcp:127.0.0.1:705".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 705
            }
        );
        assert_eq!(
            "tcp:[::1]:705".parse::<AgentxAddr>().unwrap(),
            AgentxAddr::Tcp {
                host: "::1".into(),
                port: 705
            }
        );
        assert_eq!(
            "tcp:[::1]:705".parse::<AgentxAddr>().unwrap().to_string(),
            "tcp:[::1]:705"
        );
        for bad in [
            "",
            "unix:",
            "tcp:host",
            "tcp::705",
            "tcp:h:0",
            "tcp:h:99999",
            "udp:h:1",
        ] {
            let e = bad.parse::<AgentxAddr>().unwrap_err();
            assert!(
                e.to_string().contains("invalid AgentX address"),
                "{bad}: {e}"
            );
        }
        assert_eq!(AgentxAddr::default().to_string(), "unix:/var/agentx/master");
    }
}
