//! The `[metrics]` section: the Prometheus endpoint, off while `listen` is
//! empty. Its web configuration file (TLS, basic auth) is read and checked
//! when the configuration is loaded, so `check-config` and `run` refuse
//! the same file with the same line.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Deserializer};

use super::ConfigError;
use crate::edge::{Limits, Network};
use crate::metrics::web::WebConfig;
use crate::metrics::{Collector, Collectors, MetricsSettings};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct MetricsSection {
    /// host:port of the endpoint; `None`: off.
    #[serde(deserialize_with = "super::listen")]
    pub listen: Option<SocketAddr>,
    /// Clients outside these networks are closed at accept.
    #[serde(deserialize_with = "super::snmp::networks")]
    pub sources: Vec<Network>,
    /// exporter-toolkit's web configuration file (TLS, basic auth);
    /// relative to the configuration file's directory.
    #[serde(deserialize_with = "super::path")]
    pub web_config: Option<PathBuf>,
    /// The path of the exposition.
    pub path: String,
    /// The collectors a scrape without `collect[]` gets.
    #[serde(deserialize_with = "collectors")]
    pub collectors: Collectors,
    /// Connections at once, in all and from one network (/24, /64).
    pub max_connections: usize,
    pub max_connections_per_network: usize,
    /// Requests a second per source (0: no limit), after a burst.
    pub rate_limit: u32,
    pub rate_burst: u32,
    /// Renders at once (0: the number of cores).
    pub max_renders: usize,
    /// Whole seconds: a request head; a kept-alive connection's idle time;
    /// a whole response; a connection's life.
    #[serde(deserialize_with = "super::seconds")]
    pub head_timeout: Duration,
    #[serde(deserialize_with = "super::seconds")]
    pub idle_timeout: Duration,
    #[serde(deserialize_with = "super::seconds")]
    pub response_timeout: Duration,
    #[serde(deserialize_with = "super::seconds")]
    pub connection_lifetime: Duration,
    /// Octets a second a client must take a response at (0: no minimum).
    pub min_rate: u64,
}

impl Default for MetricsSection {
    fn default() -> Self {
        let l = Limits::default();
        MetricsSection {
            listen: None,
            sources: Network::loopback(),
            web_config: None,
            path: crate::metrics::DEFAULT_PATH.into(),
            collectors: Collectors::defaults(),
            max_connections: l.connections,
            max_connections_per_network: l.per_network,
            rate_limit: l.rate,
            rate_burst: l.burst,
            max_renders: l.renders,
            head_timeout: l.head_timeout,
            idle_timeout: l.idle_timeout,
            response_timeout: l.response_timeout,
            connection_lifetime: l.lifetime,
            min_rate: l.min_rate,
        }
    }
}

fn collectors<'de, D: Deserializer<'de>>(d: D) -> Result<Collectors, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| {
            Collector::from_name(s).ok_or_else(|| {
                let known: Vec<&str> = Collector::ALL.iter().map(|c| c.name()).collect();
                serde::de::Error::custom(format!(
                    "unknown collector `{}` (known: {})",
                    s.escape_debug(),
                    known.join(", ")
                ))
            })
        })
        .collect()
}

impl MetricsSection {
    /// The checks the types alone do not make.
    pub(super) fn check(&self) -> Result<(), ConfigError> {
        let p = &self.path;
        if !p.starts_with('/')
            || p == "/"
            || p.contains(['?', '#'])
            || p.chars().any(|c| c.is_control() || c == ' ')
        {
            return Err(ConfigError::at(
                "metrics",
                "path",
                format!(
                    "`{}` is not a path below / (like /metrics)",
                    p.escape_debug()
                ),
            ));
        }
        if self.listen.is_some() && self.sources.is_empty() {
            return Err(ConfigError::at(
                "metrics",
                "sources",
                "lists no network: nobody could scrape",
            ));
        }
        Ok(())
    }

    /// Reads and checks the web configuration file, if any.
    pub fn web(&self) -> Result<Option<WebConfig>, ConfigError> {
        let Some(path) = &self.web_config else {
            return Ok(None);
        };
        WebConfig::load(path).map(Some).map_err(|e| {
            // The YAML file's key: `section.key` or a section alone.
            let (section, key) = match e.key.as_deref().map(|k| k.split_once('.')) {
                Some(Some((s, k))) => (Some(s.to_string()), Some(k.to_string())),
                Some(None) => (e.key.clone(), None),
                None => (None, None),
            };
            ConfigError {
                file: e.file.display().to_string(),
                line: e.line,
                section,
                key,
                reason: format!(
                    "{} (the web configuration file of metrics.web_config)",
                    e.reason
                ),
            }
        })
    }

    /// Makes a relative `web_config` relative to `dir`.
    pub(super) fn resolve(&mut self, dir: &Path) {
        if let Some(p) = &mut self.web_config
            && p.is_relative()
        {
            *p = dir.join(&*p);
        }
    }

    /// What the endpoint serves, when it is on.
    pub fn settings(&self) -> Option<MetricsSettings> {
        Some(MetricsSettings {
            listen: self.listen?,
            sources: self.sources.clone(),
            path: self.path.clone(),
            web_config: self.web_config.clone(),
            collectors: self.collectors,
            limits: self.limits(),
        })
    }

    /// The endpoint's limits.
    pub fn limits(&self) -> Limits {
        Limits {
            connections: self.max_connections,
            per_network: self.max_connections_per_network,
            rate: self.rate_limit,
            burst: self.rate_burst,
            renders: self.max_renders,
            head_timeout: self.head_timeout,
            idle_timeout: self.idle_timeout,
            response_timeout: self.response_timeout,
            min_rate: self.min_rate,
            lifetime: self.connection_lifetime,
        }
    }

    /// Warnings: a listen beyond loopback open to sources beyond loopback
    /// without TLS or basic auth, or with basic auth over plain HTTP, from
    /// what the web configuration gives (not whether one is named).
    pub fn warnings(&self) -> Vec<String> {
        let mut w = Vec::new();
        let web = self.web();
        if let Some(a) = self.listen {
            let beyond = self.sources.iter().any(|n| !n.is_loopback());
            if !a.ip().is_loopback() && !beyond {
                w.push(format!(
                    "metrics.listen: the endpoint listens on {a}, but metrics.sources lets only \
                     loopback scrape it"
                ));
            }
            // An unreadable web configuration is an error of its own.
            if let (true, Ok(web)) = (beyond, &web) {
                let tls = web.as_ref().is_some_and(|w| w.tls.is_some());
                let users = web.as_ref().is_some_and(|w| !w.users.is_empty());
                match (tls, users) {
                    (false, false) => w.push(
                        "metrics.sources: scrapers beyond loopback read the fabric over plain \
                         HTTP without authentication (metrics.web_config sets TLS and basic auth)"
                            .into(),
                    ),
                    (false, true) => w.push(
                        "metrics.web_config: basic auth over plain HTTP: scrapers beyond \
                         loopback send their passwords in clear text (tls_server_config sets TLS)"
                            .into(),
                    ),
                    _ => {}
                }
            }
        }
        if let Ok(Some(web)) = web {
            w.extend(
                web.warnings()
                    .into_iter()
                    .map(|m| format!("metrics.web_config: {m}")),
            );
        }
        w
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    #[test]
    fn plain_http_is_warned_of_from_what_the_web_config_gives() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let hash = "$2y$04$0nW5ul3Ck6T7DqjvsbtGuOyGkdkv0u.S5yUSyUuRfd5kF9qKqyrTi";
        std::fs::write(
            d.join("headers.yml"),
            "http_server_config:\n  headers:\n    X-Frame-Options: deny\n",
        )
        .unwrap();
        std::fs::write(
            d.join("users.yml"),
            format!("basic_auth_users:\n  prom: '{hash}'\n"),
        )
        .unwrap();
        let warnings = |web: &str| {
            let text =
                format!("[metrics]\nlisten = \"0.0.0.0:9683\"\nsources = [\"10.0.0.0/8\"]\n{web}");
            let c = Config::parse(&text, &d.join("agent.toml").display().to_string()).unwrap();
            c.metrics.warnings().join("\n")
        };
        let plain = "over plain HTTP without authentication";
        assert!(warnings("").contains(plain));
        let named = |f: &str| format!("web_config = \"{}\"", d.join(f).display());
        let headers = warnings(&named("headers.yml"));
        assert!(headers.contains(plain), "headers alone: {headers}");
        let users = warnings(&named("users.yml"));
        assert!(users.contains("basic auth over plain HTTP"), "{users}");
        assert!(!users.contains(plain), "{users}");
    }

    #[test]
    fn the_section_is_typed_and_checked() {
        let c = Config::parse(
            "[metrics]\nlisten = \"127.0.0.1:9683\"\nsources = [\"10.0.0.0/8\", \"fd00::/8\"]\ncollectors = [\"errors\", \"vl\"]\n",
            "t.toml",
        )
        .unwrap();
        let s = c.metrics.settings().unwrap();
        assert_eq!(s.listen.port(), 9683);
        assert_eq!(s.sources.len(), 2);
        assert_eq!(s.collectors.names().collect::<Vec<_>>(), ["errors", "vl"]);
        assert_eq!(s.path, "/metrics");
        assert!(
            Config::parse("", "t.toml")
                .unwrap()
                .metrics
                .settings()
                .is_none()
        );
        let e = Config::parse("[metrics]\n\ncollectors = [\"cpu\"]\n", "t.toml").unwrap_err();
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(3), Some("metrics.collectors"))
        );
        assert!(e.reason.contains("unknown collector `cpu`"), "{e}");
        let e = Config::parse("[metrics]\npath = \"metrics\"\n", "t.toml").unwrap_err();
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(2), Some("metrics.path"))
        );
        let e = Config::parse("[metrics]\nsources = [\"10.0.0.0/33\"]\n", "t.toml").unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("metrics.sources"));
    }

    #[test]
    fn a_bad_web_config_names_its_file_line_and_key() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("web.yml"),
            "basic_auth_users:\n  alice: x\n",
        )
        .unwrap();
        let cfg = dir.path().join("agent.toml");
        std::fs::write(
            &cfg,
            "[metrics]\nlisten = \"127.0.0.1:0\"\nweb_config = \"web.yml\"\n",
        )
        .unwrap();
        let e = Config::load(&cfg).unwrap_err();
        assert!(e.file.ends_with("web.yml"), "{e}");
        assert_eq!(
            (e.line, e.key_path().as_deref()),
            (Some(2), Some("basic_auth_users.alice"))
        );
    }
}
