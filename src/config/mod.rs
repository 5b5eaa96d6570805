//! The configuration file (TOML), typed once: every key has a default and is
//! parsed and checked here into the type the agent uses (enums, socket
//! addresses, durations, paths); unknown keys and bad values are errors
//! that name the file, the line and the `section.key`.
//! `config/ibpm-agentx.toml` documents every key. Each section is a file
//! of its own: its struct, its defaults, its checks and its conversion to
//! the settings of the part that uses it.

use std::fmt;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Deserializer, de};

use crate::ib::{Escaped, Fabric, NodeType, topology};

/// A key whose value is one of a few words: the enum, its parse from the
/// word (with the key's own message for any other word) and its display as
/// the word.
macro_rules! word_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident (unknown: $s:ident => $unknown:expr) {
            $($(#[$vmeta:meta])* $variant:ident = $word:literal,)+
        }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub enum $name {
            $($(#[$vmeta])* $variant,)+
        }

        impl ::std::str::FromStr for $name {
            type Err = String;
            fn from_str($s: &str) -> Result<Self, String> {
                match $s {
                    $($word => Ok($name::$variant),)+
                    _ => Err($unknown),
                }
            }
        }

        impl ::std::fmt::Display for $name {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(match self {
                    $($name::$variant => $word,)+
                })
            }
        }
    };
}

mod agentx;
mod cabling;
mod doca;
mod events;
mod fabric;
mod health;
mod keys;
pub mod limits;
mod log;
mod mad;
mod metrics;
mod notify;
mod set;
mod sim;
mod snmp;
mod umad;

pub use agentx::AgentxConfig;
pub use cabling::TopologySection;
pub use doca::{DocaSection, DocaTimestamps};
pub use events::EventsSection;
pub use fabric::{
    FabricBackend, FabricConfig, UnreachableRows, parse_sweep_interval, sweep_interval_arg,
};
pub use health::HealthSection;
use keys::Keys;
pub use log::{LogConfig, check_log_level, log_filter};
pub use mad::MadConfig;
pub use metrics::MetricsSection;
pub use notify::{NotifySection, ThresholdEntry};
pub use set::SetConfig;
pub use sim::SimConfig;
pub use snmp::{AccessEntry, Secret, SnmpConfig, UserEntry, UserEntryError, parse_subtree};
pub use umad::{PlaneEntry, UmadSection, parse_local_port};

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
    pub doca: DocaSection,
    pub set: SetConfig,
    pub log: LogConfig,
    pub notify: NotifySection,
    pub health: HealthSection,
    pub events: EventsSection,
    pub metrics: MetricsSection,
    pub topology: TopologySection,
    /// The file it was loaded from may be read by users other than its
    /// owner and group (`check-config` warns when it holds secrets).
    #[serde(skip)]
    pub secrets_readable_by_others: bool,
    /// The node-name-map `fabric.node_name_map` names (or rdma-core's
    /// default one), read by [`Config::load`].
    #[serde(skip)]
    pub names: std::sync::Arc<crate::ib::names::Names>,
}

word_enum! {
    /// A kind of node (a threshold rule's `node_type`, `sim.wide_error_counters`).
    pub enum NodeKind (unknown: s => format!("`{s}` is none of `switch`, `ca`, `router`")) {
        #[default]
        Switch = "switch",
        Ca = "ca",
        Router = "router",
    }
}

impl From<NodeKind> for NodeType {
    fn from(k: NodeKind) -> NodeType {
        match k {
            NodeKind::Switch => NodeType::Switch,
            NodeKind::Ca => NodeType::Ca,
            NodeKind::Router => NodeType::Router,
        }
    }
}

/// The largest configuration file read, in bytes.
pub const MAX_CONFIG_FILE: u64 = 1 << 20;

/// [`read_untrusted`] of a text file.
fn read_untrusted_text(path: &Path, max: u64) -> std::io::Result<String> {
    String::from_utf8(crate::files::read_untrusted(path, max)?)
        .map_err(|_| std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"))
}

/// A value of the configuration (or of a flag) that is not what its key
/// takes: the text given, shown in the message.
#[derive(Clone, Debug, PartialEq)]
pub enum ValueError {
    /// Not `HOST:PORT`.
    NotAnAddress(String),
    /// Not a number of seconds.
    NotSeconds(String),
    /// A sweep interval out of its range ([`limits::SWEEP_INTERVAL`]).
    IntervalRange(f64),
    /// Neither a numeric OID nor an IB-PM-MIB name.
    NoSuchObject(String),
    /// Not a log filter.
    NotALogFilter(String),
    /// A directive of a log filter that sets no level.
    NoLevel(String),
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ValueError::NotAnAddress(s) => {
                write!(f, "`{s}` is not HOST:PORT (an IP address and a port)")
            }
            ValueError::NotSeconds(s) => write!(f, "`{s}` is not a number of seconds"),
            ValueError::IntervalRange(secs) => {
                f.write_str(&limits::SWEEP_INTERVAL.out_of_range(limits::Num::Fraction(*secs)))
            }
            ValueError::NoSuchObject(s) => write!(
                f,
                "`{}` is neither a numeric OID nor the name of an IB-PM-MIB table, column or scalar",
                s.escape_debug()
            ),
            ValueError::NotALogFilter(s) => {
                write!(f, "`{s}` is not a log filter (try info, debug, warn)")
            }
            ValueError::NoLevel(d) => write!(
                f,
                "`{d}` sets no level: use error, warn, info, debug, trace or off, or TARGET=LEVEL"
            ),
        }
    }
}

impl std::error::Error for ValueError {}

/// `snmp.listen`: empty = off, else an IP address and a port.
pub fn parse_listen(s: &str) -> Result<Option<SocketAddr>, ValueError> {
    if s.is_empty() {
        return Ok(None);
    }
    s.parse()
        .map(Some)
        .map_err(|_| ValueError::NotAnAddress(s.to_string()))
}

fn from_str<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    let s = String::deserialize(d)?;
    s.parse().map_err(de::Error::custom)
}

fn some_from_str<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: FromStr,
    T::Err: fmt::Display,
{
    from_str(d).map(Some)
}

fn listen<'de, D: Deserializer<'de>>(d: D) -> Result<Option<SocketAddr>, D::Error> {
    parse_listen(&String::deserialize(d)?).map_err(de::Error::custom)
}

fn path<'de, D: Deserializer<'de>>(d: D) -> Result<Option<PathBuf>, D::Error> {
    let s = String::deserialize(d)?;
    Ok((!s.is_empty()).then(|| PathBuf::from(s)))
}

fn non_empty<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    let s = String::deserialize(d)?;
    Ok((!s.is_empty()).then_some(s))
}

fn seconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_secs(u64::deserialize(d)?))
}

fn milliseconds<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
    Ok(Duration::from_millis(u64::deserialize(d)?))
}

/// A configuration error: the file, the line and the key it names, and
/// why. Its text is one line, shown escaped ([`Escaped`]): the reason may
/// quote the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file; empty for a configuration made without one (the command
    /// line's flags over the defaults) and until [`Config::parse`] names it.
    pub file: String,
    pub line: Option<usize>,
    /// The table the key is in (`mad`, `snmp.access`); `None` when the
    /// error names no key.
    pub section: Option<String>,
    /// The key in `section`; `None` for an error in the section's header.
    pub key: Option<String>,
    pub reason: String,
}

impl ConfigError {
    /// An error in `section.key`, its file and line not known yet.
    pub fn at(section: &str, key: &str, reason: impl Into<String>) -> ConfigError {
        ConfigError {
            file: String::new(),
            line: None,
            section: Some(section.to_string()),
            key: Some(key.to_string()),
            reason: reason.into(),
        }
    }

    /// An error of the whole file (it cannot be read, it is not TOML).
    fn of_file(file: &str, line: Option<usize>, reason: String) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line,
            section: None,
            key: None,
            reason,
        }
    }

    /// The error in `file`, at `line`.
    fn in_file(self, file: &str, line: Option<usize>) -> ConfigError {
        ConfigError {
            file: file.to_string(),
            line,
            ..self
        }
    }

    /// `section.key` (the section alone for an error in its header).
    pub fn key_path(&self) -> Option<String> {
        let section = self.section.as_deref()?;
        Some(match &self.key {
            Some(k) => format!("{section}.{k}"),
            None => section.to_string(),
        })
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", Escaped(&self.file))?;
        if let Some(l) = self.line {
            write!(f, ":{l}")?;
        }
        if let Some(k) = self.key_path() {
            write!(f, ": key `{}`", Escaped(&k))?;
        }
        write!(f, ": {}", Escaped(&self.reason))
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Read and validate a file. A relative `fabric.topology` is resolved
    /// against the file's directory, and with the simulated backend the
    /// topology file must be readable.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Config::load_text(path).map(|(cfg, _)| cfg)
    }

    /// [`Config::load`], and the text it read (wiped when dropped: it
    /// holds the file's secrets), for errors that point into it.
    fn load_text(path: &Path) -> Result<(Config, zeroize::Zeroizing<String>), ConfigError> {
        let file = path.display().to_string();
        // The text holds the file's secrets: wiped when dropped.
        let text = read_untrusted_text(path, MAX_CONFIG_FILE)
            .map(zeroize::Zeroizing::new)
            .map_err(|e| ConfigError::of_file(&file, None, format!("cannot read: {e}")))?;
        let mut cfg = Config::parse(&text, &file)?;
        {
            use std::os::unix::fs::PermissionsExt;
            cfg.secrets_readable_by_others =
                std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o004 != 0);
        }
        let dir = path.parent().unwrap_or(Path::new(""));
        for p in [
            &mut cfg.fabric.topology,
            &mut cfg.snmp.engine_file,
            &mut cfg.fabric.node_name_map,
            &mut cfg.topology.plan,
        ]
        .into_iter()
        .flatten()
        {
            if p.is_relative() {
                *p = dir.join(&*p);
            }
        }
        cfg.check_local_ports()
            .map_err(|e| umad::placed(&Keys::parse(&text), &file, e))?;
        cfg.metrics.resolve(dir);
        cfg.metrics.web()?;
        if let (FabricBackend::Sim, Some(t)) = (cfg.fabric.backend, &cfg.fabric.topology)
            && let Err(e) = topology::check_readable(t)
        {
            return Err(ConfigError::at(
                "fabric",
                "topology",
                format!("cannot read {}: {e}", t.display()),
            )
            .in_file(&file, Keys::parse(&text).line("fabric", "topology")));
        }
        cfg.names = crate::ib::names::Names::open(cfg.fabric.node_name_map.as_deref())
            .map(std::sync::Arc::new)
            .map_err(|e| {
                ConfigError::at("fabric", "node_name_map", e.to_string())
                    .in_file(&file, Keys::parse(&text).line("fabric", "node_name_map"))
            })?;
        Ok((cfg, text))
    }

    /// With the umad backend, the CAs and ports `[umad]` names must be
    /// this host's (read where [`crate::transport::umad::sysfs_root`]
    /// says).
    fn check_local_ports(&self) -> Result<(), umad::AtPlane> {
        if self.fabric.backend != FabricBackend::Umad || !self.umad.names_ports() {
            return Ok(());
        }
        let root = crate::transport::umad::sysfs_root();
        let cas = crate::transport::umad::read_cas(&root).unwrap_or_default();
        self.umad.check_host(&cas, &root)
    }

    /// [`Config::load`], then parse the topology file it names (what
    /// `check-config` checks): a topology error names the configuration
    /// file, its `fabric.topology` line and the topology file and line.
    pub fn check_file(path: &Path) -> Result<(Config, Option<Fabric>), ConfigError> {
        let (cfg, text) = Config::load_text(path)?;
        // An error of a file the configuration names, at the key naming it.
        let at = |section: &str, key: &str, reason: String| {
            ConfigError::at(section, key, reason).in_file(
                &path.display().to_string(),
                Keys::parse(&text).line(section, key),
            )
        };
        let fabric = match (cfg.fabric.backend, &cfg.fabric.topology) {
            (FabricBackend::Sim, Some(t)) => {
                Some(topology::load(t).map_err(|e| at("fabric", "topology", e.to_string()))?)
            }
            _ => None,
        };
        cfg.check_engine_file()
            .map_err(|reason| at("snmp", "engine_file", reason))?;
        if let Some(p) = &cfg.topology.plan {
            crate::cabling::load_plan(p).map_err(|e| at("topology", "plan", e.to_string()))?;
        }
        Ok((cfg, fabric))
    }

    /// Parse and validate TOML text; `file` names it in errors. Paths stay
    /// as the text gives them.
    pub fn parse(text: &str, file: &str) -> Result<Config, ConfigError> {
        let (root, errors) = toml::de::DeTable::parse_recoverable(text);
        let keys = Keys::of(text, root.get_ref());
        // An error of toml's, at the key its span is in.
        let toml_error = |e: &toml::de::Error| {
            let start = e.span().map(|s| s.start);
            let reason = plain_words(e.message().trim()).replace('\n', " ");
            let (section, key) = start.and_then(|s| keys.at(s)).unzip();
            ConfigError {
                section,
                key: key.flatten(),
                ..ConfigError::of_file(file, start.map(|s| keys.line_of(s)), reason)
            }
        };
        if let Some(e) = errors.first() {
            return Err(toml_error(e));
        }
        let cfg =
            Config::deserialize(toml::de::Deserializer::from(root)).map_err(|e| toml_error(&e))?;
        // An error in the `i`th `[[table]]`, at its key's line.
        let in_table = |(i, e): (usize, ConfigError)| {
            let line = match (&e.section, &e.key) {
                (Some(table), Some(key)) => keys.nth_line(table, i, key),
                _ => None,
            };
            e.in_file(file, line)
        };
        for (i, t) in cfg.notify.threshold.iter().enumerate() {
            t.check().map_err(|e| in_table((i, e)))?;
        }
        cfg.snmp.check_entries().map_err(in_table)?;
        cfg.umad
            .check_ports()
            .map_err(|e| umad::placed(&keys, file, e))?;
        cfg.validate().map_err(|e| {
            let line = match (&e.section, &e.key) {
                (Some(section), Some(key)) => keys.line(section, key),
                _ => None,
            };
            e.in_file(file, line)
        })?;
        Ok(cfg)
    }

    /// Check what the types alone do not: the ranges, and keys that
    /// depend on each other.
    pub fn validate(&self) -> Result<(), ConfigError> {
        limits::check(self)?;
        self.metrics.check()?;
        self.umad.validate()?;
        check_log_level(&self.log.level)
            .map_err(|m| ConfigError::at("log", "level", m.to_string()))?;
        self.doca.validate()?;
        if self.doca.enabled && self.fabric.backend == FabricBackend::Sim {
            return Err(ConfigError::at(
                "doca",
                "enabled",
                "DOCA serves local adapters: use it with backend \"umad\" or \"doca\", not the simulator",
            ));
        }
        self.snmp.validate()?;
        self.health.check(self.fabric.sweep_interval)?;
        if let Some(u) = &self.notify.user
            && !self.snmp.user.iter().any(|e| &e.name == u)
        {
            return Err(ConfigError::at(
                "notify",
                "user",
                format!("`{}` is no [[snmp.user]]", u.escape_debug()),
            ));
        }
        Ok(())
    }

    /// What is valid but probably not meant (`check-config` prints these).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = self.metrics.warnings();
        self.snmp_warnings(&mut w);
        w
    }
}

/// The Rust type names serde puts in its messages, in words.
fn plain_words(message: &str) -> String {
    let mut m = message.to_string();
    for (rust, words) in [
        ("expected f64", "expected a number"),
        ("expected u8", "expected a whole number from 0 to 255"),
        (
            "expected u32",
            "expected a whole number from 0 to 4294967295",
        ),
        ("expected u64", "expected a whole number, not negative"),
        ("expected usize", "expected a whole number, not negative"),
    ] {
        if let Some(rest) = m.strip_suffix(rust) {
            m = format!("{rest}{words}");
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agentx::AgentxAddr;
    use crate::fabric::control::ControlConfig;

    #[test]
    fn defaults_validate() {
        Config::default().validate().unwrap();
        assert_eq!(Config::parse("", "x.toml").unwrap(), Config::default());
    }

    /// A configuration made without a file (flags over the defaults) is
    /// refused with the section and key alone; parse adds file and line.
    #[test]
    fn validate_names_the_section_and_key() {
        let mut c = Config::default();
        c.mad.window = 0;
        let e = c.validate().unwrap_err();
        assert_eq!(
            (
                e.file.as_str(),
                e.line,
                e.section.as_deref(),
                e.key.as_deref()
            ),
            ("", None, Some("mad"), Some("window"))
        );
        assert_eq!(e.reason, "0 is out of range (1 to 256)");
        let e = Config::parse("[mad]\n\nwindow = 0\n", "c.toml").unwrap_err();
        assert_eq!((e.file.as_str(), e.line), ("c.toml", Some(3)));
        assert_eq!(e.key_path().as_deref(), Some("mad.window"));
        let e = Config::parse("[[notify.threshold]]\nrising = 1\n", "c.toml").unwrap_err();
        assert_eq!(
            (e.section.as_deref(), e.key.as_deref(), e.line),
            (Some("notify.threshold"), None, Some(1)),
            "{e}"
        );
    }

    #[test]
    fn optional_interval_is_whole_sweeps() {
        let every = |text: &str| {
            Config::parse(text, "c.toml")
                .unwrap()
                .sweep()
                .optional_every
        };
        assert_eq!(every(""), 1);
        assert_eq!(every("[fabric]\noptional_interval = 60\n"), 6);
        assert_eq!(
            every("[fabric]\nsweep_interval = 4\noptional_interval = 10\n"),
            3
        );
        assert_eq!(every("[fabric]\noptional_interval = 1\n"), 1);
        assert_eq!(every("[fabric]\noptional_interval = 0\n"), 1);
        let e = Config::parse("[fabric]\noptional_interval = -1\n", "c.toml").unwrap_err();
        assert_eq!(
            e.key_path().as_deref(),
            Some("fabric.optional_interval"),
            "{e}"
        );
    }

    #[test]
    fn doca_keys_are_checked() {
        let c = Config::parse(
            "[fabric]\nbackend = \"umad\"\n[doca]\nenabled = true\nsample_period_ms = 0.5\n\
             devices = [\"mlx5_0\"]\ntimestamp_source = \"rtc\"\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(c.doca.sample_period, Duration::from_micros(500));
        assert_eq!(c.doca.timestamp_source, DocaTimestamps::Rtc);
        assert!(!c.doca.force_ownership, "off by default");
        assert!(Config::default().doca.sample_period < Duration::from_secs(1));
        for (text, key) in [
            ("[doca]\noutput_format = 3\n", "doca.output_format"),
            ("[doca]\nlog_max_samples = 0\n", "doca.log_max_samples"),
            ("[doca]\nsample_period_ms = 0\n", "doca.sample_period_ms"),
            ("[doca]\ndevices = [\"../x\"]\n", "doca.devices"),
            ("[doca]\nenabled = true\n", "doca.enabled"),
        ] {
            let e = Config::parse(text, "c.toml").unwrap_err();
            assert_eq!(e.key_path().as_deref(), Some(key), "{e}");
            assert_eq!(e.line, Some(2), "{e}");
        }
    }

    #[test]
    fn shipped_example_is_the_defaults() {
        let text = include_str!("../../config/ibpm-agentx.toml");
        let mut c = Config::parse(text, "ibpm-agentx.toml").unwrap();
        // The example writes out the health windows the defaults leave to
        // be at least a sweep: the same at its sweep interval.
        assert_eq!(c.health(), Config::default().health());
        assert!(c.health.recovery.is_some());
        c.health = HealthSection::default();
        assert_eq!(c, Config::default());
    }

    #[test]
    fn errors_name_key_and_line() {
        let e = Config::parse("[fabric]\nsweep_interval = \"often\"\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        assert_eq!(e.key_path().as_deref(), Some("fabric.sweep_interval"));
        let e = Config::parse("[fabric]\n\nbogus = 1\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert!(e.reason.contains("bogus"), "{e}");
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
            "c.toml:2: key `fabric.backend`: unknown backend `verbs` (known: sim, umad, doca)"
        );
        let e =
            Config::parse("[umad]\nca = \"x\"\ndiscovery_timeout_ms = 0\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(3));
        assert_eq!(e.key_path().as_deref(), Some("umad.discovery_timeout_ms"));
        let e = Config::parse("[umad]\nport = 300\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(2));
        let ok = Config::parse(
            "[fabric]\nbackend = \"umad\"\n[umad]\nca = \"mlx5_0\"\nport = 1\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(
            (ok.umad.ca.as_deref(), ok.umad.port),
            (Some("mlx5_0"), Some(1))
        );
        let e = Config::parse("[snmp\n", "c.toml").unwrap_err();
        assert_eq!(e.line, Some(1));
        assert!(!e.to_string().contains('\n'));
    }

    /// Found by fuzzing: a period this long overflowed `Instant` when the
    /// session armed its Ping timer (a panic instead of a config error).
    #[test]
    fn threshold_rules_are_typed_and_their_errors_name_the_line() {
        let text = "[notify]\nwindow = 30\nlimit_per_sweep = 5\n\
                    [[notify.threshold]]\ncounter = \"SymbolErrors\"\nrising = 3\n\
                    node_type = \"switch\"\nnode = \"leaf*\"\nports = [1, 2]\n\
                    [[notify.threshold]]\ncounter = \"Utilization\"\nrising = 9000\nfalling = 8000\n";
        let c = Config::parse(text, "c.toml").unwrap();
        let n = c.notify();
        assert_eq!(n.window, Duration::from_secs(30));
        assert_eq!(n.limit_per_sweep, 5);
        assert_eq!(n.rules.len(), 2);
        assert_eq!(n.rules[0].node_type, Some(NodeType::Switch));
        assert_eq!(n.rules[0].ports, vec![1, 2]);
        assert_eq!(n.rules[1].falling, Some(8000));

        let e = Config::parse(
            "[notify]\n[[notify.threshold]]\ncounter = \"SymbolErors\"\nrising = 3\n",
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(e.line, Some(3), "{e}");
        assert!(
            e.to_string().contains("unknown counter `SymbolErors`"),
            "{e}"
        );
        let e = Config::parse(
            "[[notify.threshold]]\ncounter = \"LinkDowned\"\nrising = 3\n\n\
             [[notify.threshold]]\ncounter = \"LinkDowned\"\nrising = 3\nfalling = 4\n",
            "c.toml",
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("4 is above the rule's rising threshold 3"),
            "{e}"
        );
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(8), Some("notify.threshold.falling")),
            "{e}"
        );
        let e = Config::parse("[notify]\nwindow = 0\n", "c.toml").unwrap_err();
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(2), Some("notify.window")),
            "{e}"
        );
        let e = Config::parse("[notify]\nsinks = [\"localhost\"]\n", "c.toml").unwrap_err();
        assert!(e.to_string().contains("`localhost` is not IP:PORT"), "{e}");
    }

    #[test]
    fn huge_agentx_periods_are_rejected() {
        for key in ["ping_interval", "reconnect_max"] {
            let text = format!("[agentx]\n{key} = 9223372036854775807\n");
            let e = Config::parse(&text, "c.toml").unwrap_err();
            assert_eq!(
                e.key_path().as_deref(),
                Some(format!("agentx.{key}").as_str())
            );
            assert_eq!(e.line, Some(2));
            assert!(e.reason.contains("out of range"), "{e}");
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
        assert_eq!(e.key_path().as_deref(), Some("log.level"));
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

    /// Every value the agent uses is typed when the file is read: nothing
    /// downstream compares or parses a string again.
    #[test]
    fn values_are_typed_when_read() {
        let c = Config::parse(
            "[agentx]\nsocket = \"tcp:127.0.0.1:705\"\nping_interval = 2\n\
             [snmp]\nlisten = \"127.0.0.1:1161\"\n\
             [fabric]\nbackend = \"umad\"\nunreachable_rows = \"drop\"\n\
             sweep_interval = 0.25\ntopology = \"/x/f.net\"\n\
             [mad]\ntimeout_ms = 30\n[umad]\ndiscovery_timeout_ms = 70\n",
            "c.toml",
        )
        .unwrap();
        assert_eq!(
            c.agentx.socket,
            AgentxAddr::Tcp {
                host: "127.0.0.1".into(),
                port: 705
            }
        );
        assert_eq!(c.agentx.ping_interval, Duration::from_secs(2));
        assert_eq!(c.snmp.listen, Some("127.0.0.1:1161".parse().unwrap()));
        assert_eq!(c.fabric.backend, FabricBackend::Umad);
        assert_eq!(c.fabric.unreachable_rows, UnreachableRows::Drop);
        assert_eq!(c.fabric.sweep_interval, Duration::from_millis(250));
        assert_eq!(c.fabric.topology, Some(PathBuf::from("/x/f.net")));
        assert_eq!(c.mad.timeout, Duration::from_millis(30));
        assert_eq!(c.umad.discovery_timeout, Duration::from_millis(70));
        assert!(!c.sweep().keep_unreachable);
        assert_eq!(c.engine().timeout, Duration::from_millis(30));
        assert_eq!(c.control().deadline(), ControlConfig::default().deadline());
        let d = Config::default();
        assert_eq!((d.snmp.listen, &d.fabric.topology), (None, &None));
        assert!(d.sweep().keep_unreachable);
        for bad in ["-1", "NaN", "1e300", "0.01", "often"] {
            assert!(sweep_interval_arg(bad).is_err(), "{bad}");
        }
        assert_eq!(
            sweep_interval_arg("x"),
            Err(ValueError::NotSeconds("x".into()))
        );
        assert_eq!(
            sweep_interval_arg("0.01").unwrap_err().to_string(),
            "0.01 is out of range (0.1 to 86400 seconds)"
        );
        assert_eq!(
            check_log_level("agent").unwrap_err(),
            ValueError::NoLevel("agent".into())
        );
        assert_eq!(sweep_interval_arg("0.5"), Ok(Duration::from_millis(500)));
        // Whole seconds may be written as an integer.
        let c = Config::parse("[fabric]\nsweep_interval = 2\n", "c.toml").unwrap();
        assert_eq!(c.fabric.sweep_interval, Duration::from_secs(2));
    }

    /// A bare word that is not a level parsed as a target filter: the
    /// agent then logged nothing at all.
    #[test]
    fn a_log_level_that_sets_no_level_is_an_error() {
        let e = Config::parse("[log]\nlevel = \"loud\"\n", "c.toml").unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("log.level"));
        assert_eq!(e.line, Some(2));
        assert!(e.reason.contains("sets no level"), "{e}");
        for bad in ["loud", "info,chatty", "ibpm_agentx", "x[s{a=1}]"] {
            assert!(check_log_level(bad).is_err(), "{bad}");
        }
        for good in [
            "info",
            "DEBUG",
            "off",
            "warn,ibpm_agentx=debug",
            "ibpm_agentx::fabric=trace",
            "ibpm_agentx[sweep{node=0x1}]=debug",
            "[sweep]=info",
        ] {
            check_log_level(good).unwrap_or_else(|e| panic!("{good}: {e}"));
        }
    }

    /// A wrong type names the whole `section.key` and says what is
    /// expected in words, not as a Rust type.
    #[test]
    fn type_errors_name_the_dotted_key_in_plain_words() {
        for (text, key, words) in [
            (
                "[fabric]\nsweep_interval = \"often\"\n",
                "fabric.sweep_interval",
                "expected a number",
            ),
            (
                "[agentx]\npriority = 300\n",
                "agentx.priority",
                "expected a whole number from 0 to 255",
            ),
            (
                "[mad]\n\nwindow = -2\n",
                "mad.window",
                "expected a whole number, not negative",
            ),
        ] {
            let e = Config::parse(text, "c.toml").unwrap_err();
            assert_eq!(e.key_path().as_deref(), Some(key), "{e}");
            assert!(e.reason.contains(words), "{e}");
            for rust in ["f64", "u8", "usize", "u64"] {
                assert!(!e.reason.contains(rust), "{e}");
            }
        }
    }

    fn config_dir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let etc = dir.path().join("etc");
        std::fs::create_dir(&etc).unwrap();
        (dir, etc)
    }

    /// Under systemd the working directory is `/`: a relative topology
    /// path means the one next to the configuration file.
    #[test]
    fn a_relative_topology_is_found_next_to_the_config_file() {
        let (_dir, etc) = config_dir();
        std::fs::write(etc.join("fab.net"), topology::DEFAULT_FABRIC_TEXT).unwrap();
        let conf = etc.join("c.toml");
        std::fs::write(&conf, "[fabric]\ntopology = \"fab.net\"\n").unwrap();
        let c = Config::load(&conf).unwrap();
        assert_eq!(c.fabric.topology, Some(etc.join("fab.net")));
        let (_, fabric) = Config::check_file(&conf).unwrap();
        assert_eq!(fabric.unwrap(), topology::default_fabric());
    }

    /// A missing topology file is reported against the configuration
    /// file's key, not as `nope.net:0`.
    /// check-config reads the plan `[topology] plan` names (relative to
    /// the configuration) and reports its error with both places.
    #[test]
    fn a_bad_plan_is_reported_with_its_line() {
        let (_dir, etc) = config_dir();
        let conf = etc.join("c.toml");
        std::fs::write(&conf, "[topology]\nplan = \"pod1.csv\"\n").unwrap();
        let plan = etc.join("pod1.csv");
        std::fs::write(
            &plan,
            "A Node,A Port,Z Node,Z Port\nleaf07,1/1,node0413,1\n",
        )
        .unwrap();
        let (c, _) = Config::check_file(&conf).unwrap();
        assert_eq!(c.topology.plan, Some(plan.clone()));
        std::fs::write(
            &plan,
            "A Node,A Port,Z Node,Z Port\nleaf07,1/1,node0413,1\nleaf07,1/1,node0414,1\n",
        )
        .unwrap();
        let e = Config::check_file(&conf).unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("topology.plan"));
        assert_eq!(e.line, Some(2));
        let shown = e.to_string();
        assert!(
            shown.contains(&format!(
                "plan {}:3: port leaf07/1 is listed twice",
                plan.display()
            )),
            "{shown}"
        );
    }

    /// A node-name-map beside the configuration is read with it; its bad
    /// line is reported with both places (check-config prints this).
    #[test]
    fn a_node_name_map_is_read_and_its_bad_line_named() {
        let (_dir, etc) = config_dir();
        let conf = etc.join("c.toml");
        std::fs::write(&conf, "[fabric]\nnode_name_map = \"names\"\n").unwrap();
        std::fs::write(etc.join("names"), "0x100 \"leaf01\"\n").unwrap();
        let c = Config::load(&conf).unwrap();
        assert_eq!(c.fabric.node_name_map, Some(etc.join("names")));
        assert_eq!(c.names.path(), Some(etc.join("names").as_path()));
        assert_eq!(c.sweep().names.current().len(), 1);
        std::fs::write(
            etc.join("names"),
            "0x100 \"leaf01\"\n0x101 \"bad\u{1b}[2J\"\n",
        )
        .unwrap();
        let e = Config::check_file(&conf).unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("fabric.node_name_map"));
        assert_eq!(e.line, Some(2));
        let shown = e.to_string();
        let map = etc.join("names").display().to_string();
        assert!(
            shown.contains(&format!("node-name-map {map}:2: ")),
            "{shown}"
        );
        assert!(shown.contains("control character"), "{shown}");
    }

    #[test]
    fn a_missing_topology_names_the_config_key() {
        let (_dir, etc) = config_dir();
        let conf = etc.join("c.toml");
        std::fs::write(
            &conf,
            "[sim]\nseed = 2\n[fabric]\ntopology = \"nope.net\"\n",
        )
        .unwrap();
        let e = Config::load(&conf).unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("fabric.topology"));
        assert_eq!(e.line, Some(4));
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!(
                "{}:4: key `fabric.topology`: cannot read ",
                conf.display()
            )),
            "{shown}"
        );
        assert!(
            shown.contains(&etc.join("nope.net").display().to_string()),
            "{shown}"
        );
        assert!(!shown.contains("nope.net:0"), "{shown}");
        // The umad backend reads no topology file.
        std::fs::write(
            &conf,
            "[fabric]\nbackend = \"umad\"\ntopology = \"nope.net\"\n",
        )
        .unwrap();
        Config::load(&conf).unwrap();
    }

    /// A broken topology file is reported with both places: the
    /// configuration key and the topology file's line.
    #[test]
    fn a_broken_topology_names_the_config_key_and_its_line() {
        let (_dir, etc) = config_dir();
        std::fs::write(etc.join("bad.net"), "Switch 4 \"s1\"\n[1] \"h1\"[1]\n").unwrap();
        let conf = etc.join("c.toml");
        std::fs::write(&conf, "[fabric]\ntopology = \"bad.net\"\n").unwrap();
        let e = Config::check_file(&conf).unwrap_err().to_string();
        assert!(
            e.contains("c.toml:2: key `fabric.topology`: topology "),
            "{e}"
        );
        assert!(e.contains("bad.net:"), "{e}");
    }

    /// Text from the file is shown escaped in the error line.
    #[test]
    fn config_errors_print_file_text_escaped() {
        let e = Config::parse("[fabric]\nbackend = \"\\u001b[2Jx\"\n", "c.toml").unwrap_err();
        let shown = e.to_string();
        assert!(shown.contains(r"unknown backend `\u{1b}[2Jx`"), "{shown}");
        assert!(!shown.contains('\u{1b}'), "{shown:?}");
    }
}
