//! The configuration file (TOML). Every key has a default; unknown keys and
//! bad values are errors that name the key and its line.
//! `config/ibpm-agentx.toml` documents every key.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[derive(Default)]
pub struct Config {
    pub agentx: AgentxConfig,
    pub snmp: SnmpConfig,
    pub fabric: FabricConfig,
    pub mad: MadConfig,
    pub sim: SimConfig,
    pub umad: UmadSection,
    pub set: SetConfig,
    pub log: LogConfig,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct AgentxConfig {
    /// Connect to snmpd at all.
    pub enabled: bool,
    /// `PATH`, `unix:PATH` or `tcp:HOST:PORT`.
    pub socket: String,
    /// Registration priority (lower wins; RFC 2741 default 127).
    pub priority: u8,
    /// Seconds between Pings to the master.
    pub ping_interval: u64,
    /// Upper bound of the reconnect backoff, in seconds.
    pub reconnect_max: u64,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SnmpConfig {
    /// `HOST:PORT` of the built-in SNMPv2c responder; empty = off.
    pub listen: String,
    pub community: String,
    /// Community that may SET through the responder (with `set.allow`);
    /// empty: the responder is read-only.
    pub write_community: String,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct FabricConfig {
    /// `sim` (the built-in simulated fabric) or `umad` (a real fabric
    /// through /dev/infiniband/umadN, or ibsim under umad2sim).
    pub backend: String,
    /// Topology file (ibnetdiscover/ibsim format) for the simulator; empty =
    /// the built-in default fabric.
    pub topology: String,
    /// Seconds from the start of one sweep to the start of the next.
    pub sweep_interval: f64,
    /// Failed sweeps in a row after which a node is unreachable.
    pub unreachable_after: u32,
    /// `keep` an unreachable node's rows with their last values, or `drop` them.
    pub unreachable_rows: String,
    /// Read the optional PM attributes 0x15..0x1C (error details, per-VL
    /// counters) from nodes that answer them.
    pub optional_attributes: bool,
    /// Clear a PortCounters field once it passes 75% of its range (as
    /// opensm's PerfMgr does). Off by default: other tools read the same
    /// counters.
    pub clear_near_overflow: bool,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct UmadSection {
    /// CA name as in /sys/class/infiniband (e.g. `mlx5_0`); empty = the
    /// first CA with an active port.
    pub ca: String,
    /// Port number on the CA; 0 = the first active port.
    pub port: u8,
    /// Deadline of one directed-route SMP during discovery, in ms.
    pub discovery_timeout_ms: u64,
}

impl Default for UmadSection {
    fn default() -> Self {
        UmadSection {
            ca: String::new(),
            port: 0,
            discovery_timeout_ms: 500,
        }
    }
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MadConfig {
    /// MADs in flight at once (1..=256).
    pub window: usize,
    /// Per-MAD deadline in milliseconds.
    pub timeout_ms: u64,
    /// Resends after the first attempt.
    pub retries: u32,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of the simulated traffic.
    pub seed: u64,
    /// Counters advance with simulated traffic (false: frozen).
    pub traffic: bool,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
#[derive(Default)]
pub struct SetConfig {
    /// Accept SNMP SETs (clear counters, select ports, run samples).
    pub allow: bool,
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// tracing filter (`info`, `debug`, `ibpm_agentx=debug`...); RUST_LOG wins.
    pub level: String,
}

impl Default for AgentxConfig {
    fn default() -> Self {
        AgentxConfig {
            enabled: true,
            socket: "/var/agentx/master".into(),
            priority: 127,
            ping_interval: 15,
            reconnect_max: 5,
        }
    }
}

impl Default for SnmpConfig {
    fn default() -> Self {
        SnmpConfig {
            listen: String::new(),
            community: "public".into(),
            write_community: String::new(),
        }
    }
}

impl Default for FabricConfig {
    fn default() -> Self {
        FabricConfig {
            backend: "sim".into(),
            topology: String::new(),
            sweep_interval: 10.0,
            unreachable_after: 3,
            unreachable_rows: "keep".into(),
            optional_attributes: true,
            clear_near_overflow: false,
        }
    }
}

impl Default for MadConfig {
    fn default() -> Self {
        MadConfig {
            window: 64,
            timeout_ms: 200,
            retries: 3,
        }
    }
}

impl Default for SimConfig {
    fn default() -> Self {
        SimConfig {
            seed: 1,
            traffic: true,
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        LogConfig {
            level: "info".into(),
        }
    }
}

/// A configuration error: one line naming the file, line and key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: Option<usize>,
    pub key: Option<String>,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file)?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = &self.key {
            write!(f, ": key `{k}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Read and validate a file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.display().to_string(),
            line: None,
            key: None,
            message: format!("cannot read: {e}"),
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// Parse and validate TOML text; `file` names it in errors.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let cfg: Config = toml::from_str(text).map_err(|e| {
            let line = e.span().map(|s| line_of_offset(text, s.start));
            let key = line.and_then(|l| key_on_line(text, l));
            ConfigError {
                file: file.to_string(),
                line,
                key,
                message: e.message().trim().replace('\n', " "),
            }
        })?;
        cfg.validate()
            .map_err(|(section, key, message)| ConfigError {
                file: file.to_string(),
                line: find_key_line(text, section, key),
                key: Some(format!("{section}.{key}")),
                message,
            })?;
        Ok(cfg)
    }

    /// Check values the types alone do not: (section, key, message).
    pub fn validate(&self) -> Result<(), (&'static str, &'static str, String)> {
        if self.agentx.enabled {
            crate::agentx::validate_address(&self.agentx.socket)
                .map_err(|m| ("agentx", "socket", m))?;
        }
        // Timers add these to `Instant::now()`: a day at most keeps that
        // addition in range.
        if !(1..=86_400).contains(&self.agentx.ping_interval) {
            return Err((
                "agentx",
                "ping_interval",
                format!(
                    "{} is out of range (1 to 86400 seconds)",
                    self.agentx.ping_interval
                ),
            ));
        }
        if !(1..=86_400).contains(&self.agentx.reconnect_max) {
            return Err((
                "agentx",
                "reconnect_max",
                format!(
                    "{} is out of range (1 to 86400 seconds)",
                    self.agentx.reconnect_max
                ),
            ));
        }
        if !self.snmp.listen.is_empty() && self.snmp.listen.parse::<SocketAddr>().is_err() {
            return Err((
                "snmp",
                "listen",
                format!(
                    "`{}` is not HOST:PORT (an IP address and a port)",
                    self.snmp.listen
                ),
            ));
        }
        if !matches!(self.fabric.backend.as_str(), "sim" | "umad") {
            return Err((
                "fabric",
                "backend",
                format!(
                    "unknown backend `{}` (known: sim, umad)",
                    self.fabric.backend
                ),
            ));
        }
        if self.umad.ca.contains(['/', '\0']) {
            return Err((
                "umad",
                "ca",
                format!("`{}` is not a CA name (e.g. mlx5_0)", self.umad.ca),
            ));
        }
        if !(1..=60_000).contains(&self.umad.discovery_timeout_ms) {
            return Err((
                "umad",
                "discovery_timeout_ms",
                format!(
                    "{} is out of range (1 to 60000)",
                    self.umad.discovery_timeout_ms
                ),
            ));
        }
        let si = self.fabric.sweep_interval;
        if !si.is_finite() || !(0.1..=86_400.0).contains(&si) {
            return Err((
                "fabric",
                "sweep_interval",
                format!("{si} is out of range (0.1 to 86400 seconds)"),
            ));
        }
        if self.fabric.unreachable_after == 0 {
            return Err(("fabric", "unreachable_after", "must be at least 1".into()));
        }
        if !matches!(self.fabric.unreachable_rows.as_str(), "keep" | "drop") {
            return Err((
                "fabric",
                "unreachable_rows",
                format!(
                    "`{}` is neither `keep` nor `drop`",
                    self.fabric.unreachable_rows
                ),
            ));
        }
        if !(1..=crate::fabric::engine::MAX_WINDOW).contains(&self.mad.window) {
            return Err((
                "mad",
                "window",
                format!("{} is out of range (1 to 256)", self.mad.window),
            ));
        }
        if !(1..=60_000).contains(&self.mad.timeout_ms) {
            return Err((
                "mad",
                "timeout_ms",
                format!("{} is out of range (1 to 60000)", self.mad.timeout_ms),
            ));
        }
        if self.mad.retries > 20 {
            return Err((
                "mad",
                "retries",
                format!("{} is more than 20", self.mad.retries),
            ));
        }
        if log_filter(&self.log.level).is_none() {
            return Err((
                "log",
                "level",
                format!(
                    "`{}` is not a log filter (try info, debug, warn)",
                    self.log.level
                ),
            ));
        }
        Ok(())
    }

    pub fn sweep_interval(&self) -> Duration {
        Duration::from_secs_f64(self.fabric.sweep_interval)
    }

    pub fn topology_path(&self) -> Option<PathBuf> {
        (!self.fabric.topology.is_empty()).then(|| PathBuf::from(&self.fabric.topology))
    }
}

/// The log filter of `directives` (tracing-subscriber's `EnvFilter` syntax),
/// or `None` when they do not parse. Only ASCII is accepted: the directive
/// parser of tracing-subscriber 0.3 panics on some multi-byte characters
/// (it slices inside them). Field values (`span{field=value}`) match
/// literally, not as regular expressions: compiling one can take minutes.
pub fn log_filter(directives: &str) -> Option<tracing_subscriber::EnvFilter> {
    if !directives.is_ascii() {
        return None;
    }
    tracing_subscriber::EnvFilter::builder()
        .with_regex(false)
        .parse(directives)
        .ok()
}

fn line_of_offset(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

/// The key a `key = value` line (or `[section]` line) names.
fn key_on_line(text: &str, line: usize) -> Option<String> {
    let l = text.lines().nth(line.checked_sub(1)?)?.trim();
    if let Some(s) = l.strip_prefix('[') {
        return Some(s.trim_end_matches(']').trim().to_string());
    }
    let (k, _) = l.split_once('=')?;
    Some(k.trim().to_string())
}

/// The line on which `key` is set inside `[section]`.
fn find_key_line(text: &str, section: &str, key: &str) -> Option<usize> {
    let mut current = String::new();
    for (i, raw) in text.lines().enumerate() {
        let l = raw.trim();
        if let Some(s) = l.strip_prefix('[') {
            current = s.trim_end_matches(']').trim().to_string();
            continue;
        }
        if let Some((k, _)) = l.split_once('=')
            && current == section
            && k.trim() == key
        {
            return Some(i + 1);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate() {
        Config::default().validate().unwrap();
        assert_eq!(Config::parse("", "x.toml").unwrap(), Config::default());
    }

    #[test]
    fn shipped_example_is_the_defaults() {
        let text = include_str!("../config/ibpm-agentx.toml");
        assert_eq!(
            Config::parse(text, "ibpm-agentx.toml").unwrap(),
            Config::default()
        );
    }

    #[test]
    fn errors_name_key_and_line() {
        let e = Config::parse("[fabric]\nsweep_interval = \"often\"\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(e.key.as_deref(), Some("sweep_interval"));
        let e = Config::parse("[fabric]\n\nbogus = 1\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.message.contains("bogus"), "{e}");
        let e = Config::parse("[mad]\nwindow = 1024\n", "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:2: key `mad.window`: 1024 is out of range (1 to 256)"
        );
        let e = Config::parse("[fabric]\nunreachable_rows = \"hide\"\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        let e = Config::parse("[fabric]\nbackend = \"verbs\"\n", "c.toml").unwrap_err();
        assert_eq!(
            e.to_string(),
            "c.toml:2: key `fabric.backend`: unknown backend `verbs` (known: sim, umad)"
        );
        let e =
            Config::parse("[umad]\nca = \"x\"\ndiscovery_timeout_ms = 0\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key.as_deref(), Some("umad.discovery_timeout_ms"));
        let e = Config::parse("[umad]\nport = 300\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        let ok = Config::parse(
            "[fabric]\nbackend = \"umad\"\n[umad]\nca = \"mlx5_0\"\nport = 1\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!((ok.umad.ca.as_str(), ok.umad.port), ("mlx5_0", 1));
        let e = Config::parse("[snmp\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(!e.to_string().contains('\n'));
    }

    /// Found by fuzzing: a period this long overflowed `Instant` when the
    /// session armed its Ping timer (a panic instead of a config error).
    #[test]
    fn huge_agentx_periods_are_rejected() {
        for key in ["ping_interval", "reconnect_max"] {
            let text = format!("[agentx]\n{key} = 9223372036854775807\n");
            let e = Config::parse(&text, "c.toml").unwrap_err();
            assert_eq!(e.key.as_deref(), Some(format!("agentx.{key}").as_str()));
            assert_eq!(e.line, Some(2));
            assert!(e.message.contains("out of range"), "{e}");
            let ok = format!("[agentx]\n{key} = 86400\n");
            Config::parse(&ok, "c.toml").unwrap();
        }
    }

    /// Found by fuzzing: a no-break space in the log filter made
    /// tracing-subscriber's parser panic (slicing inside the character).
    #[test]
    fn non_ascii_log_filter_is_an_error() {
        let text = "[log]\nlevel = \"rp,\u{a0}\u{a0}p\u{a0}>_=c\u{a0}/n\"\n";
        let e = Config::parse(text, "c.toml").unwrap_err();
        assert_eq!(e.key.as_deref(), Some("log.level"));
        assert_eq!(e.line, Some(2));
        assert!(log_filter("ibpm_agentx=debug,warn").is_some());
        assert!(log_filter("d\u{e9}bug").is_none());
    }

    /// Found by fuzzing: a field value in the log filter was compiled as a
    /// regular expression, which took over a minute for this one.
    #[test]
    fn log_filter_field_values_are_not_regexes() {
        let dirs = concat!(
            "i-[[[[ppqpppp         m{lppppPpppp tp p   =54   CCCCCCCCCCCCCCCCyyyyyyyyyyyyyyyy",
            "yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyCCC4444444444444444444444",
            "4444444444444444444CCCCCCCCCCCCCCCCCCCCCCCCCCCCCC\t\t\tCCCCCCCCCCCCCCCCCCCCCCCCC",
            "CCCCCCCCCCCCCCCCCCCCCCCCCCKCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCC.....................",
            ".......................................................*........................",
            "......1.........KCCCCCCCCCCCCCCCCCCC    }CCCCppppppppppppppppppppppppppppppppp,p",
            "ppp",
        );
        let started = std::time::Instant::now();
        let _ = log_filter(dirs);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "took {:?}",
            started.elapsed()
        );
        assert!(log_filter("ibpm_agentx[sweep{node=0x1}]=debug").is_some());
    }
}
