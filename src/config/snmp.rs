//! `[snmp]`: the agent's own SNMP endpoint (listen address, communities,
//! `[[snmp.access]]` rules, `[[snmp.user]]` SNMPv3 users, the engine's
//! identity), its checks and its warnings.

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use serde::{Deserialize, Deserializer};

use super::limits::{self, Num};
use super::{Config, ConfigError, ValueError, listen, non_empty, path, some_from_str};
pub use crate::edge::Secret;
use crate::mib::Oid;
use crate::snmp::access::{AccessTable, Level, Network, Principal, RateGuard, Rule, Subtrees};
use crate::snmp::engine_file::{self, NO_FILE};
use crate::snmp::usm::crypto::{MIN_PASSPHRASE, parse_hex};
use crate::snmp::usm::{AuthProtocol, EngineId, PrivProtocol, User, UserError};

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct SnmpConfig {
    /// `HOST:PORT` of the built-in SNMPv2c responder; `None` (an empty
    /// string in the file) = off.
    #[serde(deserialize_with = "listen")]
    pub listen: Option<SocketAddr>,
    pub community: Secret,
    /// Community that may SET through the responder (with `set.allow`);
    /// `None` (an empty string in the file): the responder is read-only.
    #[serde(deserialize_with = "non_empty_secret")]
    pub write_community: Option<Secret>,
    /// Largest response the responder sends, in octets
    /// ([`limits::MAX_RESPONSE_OCTETS`]):
    /// GetBulk answers leave off the repetitions that do not fit.
    pub max_response_octets: usize,
    /// Default rate guard of every access rule: requests per second
    /// answered per source address (0 = none: every request is answered).
    pub rate_limit: u32,
    /// Requests one source address may send at once before `rate_limit`
    /// applies.
    pub rate_burst: u32,
    /// `[[snmp.access]]`: who may ask what, first match wins. Without any:
    /// `community` read-only and `write_community` from loopback.
    pub access: Vec<AccessEntry>,
    /// `[[snmp.user]]`: SNMPv3 users.
    pub user: Vec<UserEntry>,
    /// snmpEngineID in hex (5 to 32 octets); `None`: the one kept in
    /// `engine_file`, or a new one.
    #[serde(deserialize_with = "engine_id")]
    pub engine_id: Option<EngineId>,
    /// Where snmpEngineID and snmpEngineBoots are kept across restarts;
    /// `None`: nowhere (a new engine ID each start).
    #[serde(deserialize_with = "path")]
    pub engine_file: Option<PathBuf>,
}

/// One `[[snmp.access]]` rule (checked by [`Config::parse`], so that an
/// error names the rule's own line).
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AccessEntry {
    /// An SNMPv1/v2c community ...
    #[serde(default, deserialize_with = "non_empty_secret")]
    pub community: Option<Secret>,
    /// ... or an SNMPv3 user of `[[snmp.user]]`.
    #[serde(default, deserialize_with = "non_empty")]
    pub user: Option<String>,
    /// Source networks (CIDR); default: loopback only.
    #[serde(default = "Network::loopback", deserialize_with = "networks")]
    pub sources: Vec<Network>,
    /// Subtrees the rule sees (numeric OIDs or IB-PM-MIB table and column
    /// names); default: everything the agent serves.
    #[serde(default, deserialize_with = "subtrees")]
    pub subtrees: Vec<Oid>,
    /// May Set (with `set.allow`).
    #[serde(default)]
    pub write: bool,
    /// Largest response ([`limits::MAX_RESPONSE_OCTETS`]); default:
    /// `snmp.max_response_octets`.
    pub max_response_octets: Option<usize>,
    /// Least SNMPv3 security level; default: the strongest the user has.
    #[serde(default, deserialize_with = "some_from_str")]
    pub level: Option<Level>,
    /// Rate guard; default: `snmp.rate_limit` / `snmp.rate_burst`.
    pub rate_limit: Option<u32>,
    pub rate_burst: Option<u32>,
}

/// One `[[snmp.user]]`: an SNMPv3 user with passphrases or localized keys.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UserEntry {
    pub name: String,
    /// "SHA" (HMAC-SHA-96), "SHA-224", "SHA-256", "SHA-384", "SHA-512";
    /// absent: noAuthNoPriv.
    #[serde(default, deserialize_with = "some_from_str")]
    pub auth: Option<AuthProtocol>,
    pub auth_passphrase: Option<Secret>,
    /// The key localized to this agent's engine ID, in hex (instead of the
    /// passphrase).
    #[serde(default, deserialize_with = "hex_key")]
    pub auth_key: Option<Secret>,
    /// "AES" (AES-128-CFB); absent: no privacy.
    #[serde(default, deserialize_with = "some_from_str")]
    pub privacy: Option<PrivProtocol>,
    pub privacy_passphrase: Option<Secret>,
    #[serde(default, deserialize_with = "hex_key")]
    pub privacy_key: Option<Secret>,
}

/// Why an `[[snmp.user]]` gives no user for the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UserEntryError {
    pub name: String,
    pub error: UserError,
}

impl fmt::Display for UserEntryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "snmp.user `{}`: {}",
            self.name.escape_debug(),
            self.error
        )
    }
}

impl std::error::Error for UserEntryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl UserEntry {
    /// The user with its keys localized to `engine` (from the passphrases:
    /// 1 MB of hashing each).
    pub fn user(&self, engine: &EngineId) -> Result<User, UserEntryError> {
        // The keys are copied into the user, which wipes them when it goes.
        let r = match &self.auth_key {
            Some(key) => User::from_localized_keys(
                &self.name,
                self.auth.map(|a| (a, key.expose().to_vec())),
                self.privacy
                    .zip(self.privacy_key.as_ref().map(|k| k.expose().to_vec())),
            ),
            None => User::from_passphrases(
                &self.name,
                self.auth
                    .zip(self.auth_passphrase.as_ref().map(Secret::text)),
                self.privacy
                    .zip(self.privacy_passphrase.as_ref().map(Secret::text)),
                engine,
            ),
        };
        r.map_err(|error| UserEntryError {
            name: self.name.clone(),
            error,
        })
    }

    /// The strongest level the user can use.
    pub fn level(&self) -> Level {
        match (&self.auth, &self.privacy) {
            (None, _) => Level::NoAuthNoPriv,
            (Some(_), None) => Level::AuthNoPriv,
            (Some(_), Some(_)) => Level::AuthPriv,
        }
    }

    /// What is wrong with the user.
    fn check(&self) -> Result<(), ConfigError> {
        if self.name.is_empty() || self.name.len() > 32 {
            return Err(ConfigError::at(
                "snmp.user",
                "name",
                "must be 1 to 32 characters (RFC 3414 usmUserName)",
            ));
        }
        let pair = |proto: bool, pass: &Option<Secret>, key: bool, what: &'static str| match (
            proto, pass, key,
        ) {
            (false, None, false) => Ok(()),
            (false, _, _) => Err(ConfigError::at(
                "snmp.user",
                what,
                format!("a passphrase or key is given, but no `{what}` protocol"),
            )),
            (true, None, false) => Err(ConfigError::at(
                "snmp.user",
                what,
                format!("`{what}` needs `{what}_passphrase` or `{what}_key`"),
            )),
            (true, Some(_), true) => Err(ConfigError::at(
                "snmp.user",
                what,
                format!("give `{what}_passphrase` or `{what}_key`, not both"),
            )),
            (true, Some(p), false) if p.text().chars().count() < MIN_PASSPHRASE => {
                Err(ConfigError::at(
                    "snmp.user",
                    what,
                    format!(
                        "`{what}_passphrase` must have at least {MIN_PASSPHRASE} characters (RFC 3414 2.6)"
                    ),
                ))
            }
            _ => Ok(()),
        };
        pair(
            self.auth.is_some(),
            &self.auth_passphrase,
            self.auth_key.is_some(),
            "auth",
        )?;
        pair(
            self.privacy.is_some(),
            &self.privacy_passphrase,
            self.privacy_key.is_some(),
            "privacy",
        )?;
        if self.privacy.is_some() && self.auth.is_none() {
            return Err(ConfigError::at(
                "snmp.user",
                "privacy",
                "privacy needs authentication: set `auth` too",
            ));
        }
        // A localized key has the length the engine takes (as `run` checks
        // it when it makes the user).
        if let (Some(proto), Some(key)) = (self.auth, &self.auth_key)
            && key.expose().len() != proto.key_len()
        {
            return Err(ConfigError::at(
                "snmp.user",
                "auth_key",
                format!(
                    "has {} octets; a {proto} key has {}",
                    key.expose().len(),
                    proto.key_len()
                ),
            ));
        }
        if let (Some(proto), Some(key)) = (self.privacy, &self.privacy_key)
            && key.expose().len() < proto.key_len()
        {
            return Err(ConfigError::at(
                "snmp.user",
                "privacy_key",
                format!(
                    "has {} octets; an {proto} key has at least {}",
                    key.expose().len(),
                    proto.key_len()
                ),
            ));
        }
        // Localized keys belong to one engine ID, passphrases to any: a
        // user has both of one kind.
        if self.privacy.is_some() && self.auth_key.is_some() != self.privacy_key.is_some() {
            return Err(ConfigError::at(
                "snmp.user",
                "privacy",
                "give both keys (`auth_key`, `privacy_key`) or both passphrases",
            ));
        }
        Ok(())
    }
}

impl AccessEntry {
    /// What is wrong with the rule.
    fn check(&self, users: &[UserEntry]) -> Result<(), ConfigError> {
        match (&self.community, &self.user) {
            (Some(_), Some(_)) => {
                return Err(ConfigError::at(
                    "snmp.access",
                    "user",
                    "a rule names a community or a user, not both",
                ));
            }
            (None, None) => {
                return Err(ConfigError::at(
                    "snmp.access",
                    "community",
                    "the rule names neither a `community` nor a `user`",
                ));
            }
            (Some(_), None) => {
                if self.level.is_some() {
                    return Err(ConfigError::at(
                        "snmp.access",
                        "level",
                        "a security level applies to a `user` rule only",
                    ));
                }
            }
            (None, Some(u)) => {
                let Some(entry) = users.iter().find(|e| &e.name == u) else {
                    return Err(ConfigError::at(
                        "snmp.access",
                        "user",
                        format!("`{}` is no [[snmp.user]]", u.escape_debug()),
                    ));
                };
                if let Some(l) = self.level
                    && l > entry.level()
                {
                    return Err(ConfigError::at(
                        "snmp.access",
                        "level",
                        format!(
                            "{l} is more than user `{}` can use ({})",
                            u.escape_debug(),
                            entry.level()
                        ),
                    ));
                }
            }
        }
        if self.sources.is_empty() {
            return Err(ConfigError::at(
                "snmp.access",
                "sources",
                "lists no network: the rule would match nothing",
            ));
        }
        if let Some(m) = self.max_response_octets {
            // The range of `snmp.max_response_octets`, in this rule.
            let limit = &limits::MAX_RESPONSE_OCTETS;
            let v = Num::Whole(m as u64);
            if !limit.contains(v) {
                return Err(ConfigError::at(
                    "snmp.access",
                    "max_response_octets",
                    limit.out_of_range(v),
                ));
            }
        }
        if self.rate_limit.is_some_and(|r| r > 0) && self.rate_burst == Some(0) {
            return Err(ConfigError::at(
                "snmp.access",
                "rate_burst",
                "must be at least 1 when rate_limit is set",
            ));
        }
        Ok(())
    }
}

impl Default for SnmpConfig {
    fn default() -> Self {
        SnmpConfig {
            listen: None,
            community: Secret::from("public"),
            write_community: None,
            max_response_octets: 1472,
            rate_limit: 0,
            rate_burst: 100,
            access: Vec::new(),
            user: Vec::new(),
            engine_id: None,
            engine_file: None,
        }
    }
}

impl SnmpConfig {
    /// Checks every `[[snmp.user]]` and `[[snmp.access]]`: the error, and
    /// the index of its entry in its table.
    pub(super) fn check_entries(&self) -> Result<(), (usize, ConfigError)> {
        for (i, u) in self.user.iter().enumerate() {
            let dup = self.user[..i].iter().any(|o| o.name == u.name);
            let r = if dup {
                Err(ConfigError::at(
                    "snmp.user",
                    "name",
                    format!("user `{}` is declared twice", u.name.escape_debug()),
                ))
            } else {
                u.check().and_then(|()| {
                    // Without the file, each start makes a new engine ID, to
                    // which no key given in advance is localized.
                    if u.auth_key.is_some() && self.engine_file.is_none() {
                        return Err(ConfigError::at(
                            "snmp.user",
                            "auth_key",
                            "a localized key belongs to one engine ID, but without \
                             snmp.engine_file each start makes a new one: set \
                             snmp.engine_file (and snmp.engine_id)",
                        ));
                    }
                    Ok(())
                })
            };
            r.map_err(|e| (i, e))?;
        }
        for (i, a) in self.access.iter().enumerate() {
            a.check(&self.user).map_err(|e| (i, e))?;
        }
        Ok(())
    }

    /// Checks what the types alone do not.
    pub(super) fn validate(&self) -> Result<(), ConfigError> {
        if self.rate_limit > 0 && self.rate_burst == 0 {
            return Err(ConfigError::at(
                "snmp",
                "rate_burst",
                "must be at least 1 when snmp.rate_limit is set",
            ));
        }
        if !self.access.is_empty()
            && let Some(key) = [
                ("community", self.community != Secret::from("public")),
                ("write_community", self.write_community.is_some()),
            ]
            .into_iter()
            .find_map(|(k, set)| set.then_some(k))
        {
            return Err(ConfigError::at(
                "snmp",
                key,
                "is ignored where [[snmp.access]] rules are given: name the community in a rule",
            ));
        }
        if self.write_community.as_ref() == Some(&self.community) {
            return Err(ConfigError::at(
                "snmp",
                "write_community",
                "is the same as snmp.community: every reader could write",
            ));
        }
        if self.engine_id.is_some() && self.engine_file.is_none() {
            return Err(ConfigError::at("snmp", "engine_id", NO_FILE));
        }
        Ok(())
    }
}

impl Config {
    /// The engine file `run` reads, checked as `run` checks it (without
    /// writing it): the message `run` refuses it with.
    pub(super) fn check_engine_file(&self) -> Result<(), String> {
        match &self.snmp.engine_file {
            Some(p) if !self.snmp.user.is_empty() => {
                engine_file::check(p, self.snmp.engine_id.as_ref())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            _ => Ok(()),
        }
    }

    /// What is valid in `[snmp]` but probably not meant.
    pub(super) fn snmp_warnings(&self, w: &mut Vec<String>) {
        if let Some(a) = self.snmp.listen {
            let rules = self.snmp_access();
            let beyond = rules
                .rules()
                .iter()
                .any(|r| r.sources.iter().any(|n| !n.is_loopback()));
            if !a.ip().is_loopback() && !beyond {
                w.push(format!(
                    "snmp.listen: the built-in responder listens on {a}, but no [[snmp.access]] \
                     rule lets a source beyond loopback ask: it answers this host only"
                ));
            }
            // A rule that lets sources beyond loopback in without a guard:
            // a source that spoofs an address of its networks draws answers
            // (a GetBulk's up to max_response_octets, a Report) without bound.
            if !a.ip().is_loopback() {
                for (i, r) in rules.rules().iter().enumerate() {
                    if r.rate.is_none() && r.sources.iter().any(|n| !n.is_loopback()) {
                        w.push(format!(
                            "snmp.access: [[snmp.access]] rule {} lets sources beyond loopback \
                             ask without a rate guard: a spoofed source of its networks draws \
                             answers of up to {} octets without bound (set rate_limit and \
                             rate_burst)",
                            i + 1,
                            r.max_response_octets
                        ));
                    }
                }
            }
            if beyond
                && let Some((i, r)) = rules.rules().iter().enumerate().find(|(_, r)| {
                    matches!(r.principal, Principal::Community(_))
                        && r.sources.iter().any(|n| !n.is_loopback())
                })
            {
                // The community itself is never printed.
                let which = if self.snmp.access.is_empty() {
                    "snmp.community".to_string()
                } else {
                    format!("[[snmp.access]] rule {}", i + 1)
                };
                w.push(format!(
                    "snmp.access: the community of {which} is accepted from {}: SNMPv1/v2c \
                     sends it in clear text (an SNMPv3 user with authPriv does not)",
                    r.sources
                        .iter()
                        .map(|n| n.to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        if !self.snmp.user.is_empty() && self.snmp.engine_file.is_none() {
            w.push(
                "snmp.engine_file is not set: a new random SNMPv3 engine ID at every start \
                 (managers discover it again each time, and keys localized to it must be \
                 localized again)"
                    .into(),
            );
        }
        if self.secrets_readable_by_others
            && self.snmp.user.iter().any(|u| {
                u.auth_passphrase.is_some()
                    || u.privacy_passphrase.is_some()
                    || u.auth_key.is_some()
                    || u.privacy_key.is_some()
            })
        {
            w.push(
                "snmp.user: the file holds SNMPv3 passphrases or keys and other users may read it \
                 (chmod 640 or 600)"
                    .into(),
            );
        }
    }

    /// The built-in responder's access rules: `[[snmp.access]]` in the
    /// file's order, or, without any, `snmp.community` read-only (and
    /// `snmp.write_community` with write) from loopback.
    pub fn snmp_access(&self) -> AccessTable {
        let snmp = &self.snmp;
        let guard = |rate: Option<u32>, burst: Option<u32>| {
            let rate = rate.unwrap_or(snmp.rate_limit);
            (rate > 0).then(|| RateGuard {
                rate,
                burst: burst.unwrap_or(snmp.rate_burst).max(1),
            })
        };
        let rule = |principal, sources, view, write, max: Option<usize>, rate| Rule {
            principal,
            sources,
            view,
            write,
            max_response_octets: max.unwrap_or(snmp.max_response_octets),
            rate,
        };
        if snmp.access.is_empty() {
            let mut rules = Vec::new();
            if let Some(w) = &snmp.write_community {
                rules.push(rule(
                    Principal::Community(w.expose().to_vec()),
                    Network::loopback(),
                    Subtrees::all(),
                    true,
                    None,
                    guard(None, None),
                ));
            }
            rules.push(rule(
                Principal::Community(snmp.community.expose().to_vec()),
                Network::loopback(),
                Subtrees::all(),
                false,
                None,
                guard(None, None),
            ));
            return AccessTable::new(rules);
        }
        let rules = snmp
            .access
            .iter()
            .map(|a| {
                let principal = match (&a.community, &a.user) {
                    (Some(c), _) => Principal::Community(c.expose().to_vec()),
                    (None, u) => {
                        let name = u.clone().unwrap_or_default();
                        let level = a.level.unwrap_or_else(|| {
                            snmp.user
                                .iter()
                                .find(|e| e.name == name)
                                .map_or(Level::AuthPriv, UserEntry::level)
                        });
                        Principal::User {
                            name: name.into_bytes(),
                            level,
                        }
                    }
                };
                rule(
                    principal,
                    a.sources.clone(),
                    Subtrees::new(a.subtrees.clone()),
                    a.write,
                    a.max_response_octets,
                    guard(a.rate_limit, a.rate_burst),
                )
            })
            .collect();
        AccessTable::new(rules)
    }
}

/// A key in hex (`0x` optional), as `[[snmp.user]]` takes localized keys.
fn hex_key<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    let s = Secret::deserialize(d)?;
    parse_hex(s.text())
        .map(|k| Some(Secret::from(k)))
        .map_err(serde::de::Error::custom)
}

/// A secret of `[snmp]`, or `None` for an empty string.
fn non_empty_secret<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Secret>, D::Error> {
    let s = Secret::deserialize(d)?;
    Ok((!s.expose().is_empty()).then_some(s))
}

impl SnmpConfig {
    /// Drops (and wipes) the passphrases, keys and communities: once the
    /// users' keys are localized and the access rules made, the agent
    /// keeps no other copy.
    pub fn forget_secrets(&mut self) {
        self.community = Secret::default();
        self.write_community = None;
        for a in &mut self.access {
            a.community = None;
        }
        for u in &mut self.user {
            u.auth_passphrase = None;
            u.privacy_passphrase = None;
            u.auth_key = None;
            u.privacy_key = None;
        }
    }
}

fn engine_id<'de, D: Deserializer<'de>>(d: D) -> Result<Option<EngineId>, D::Error> {
    let s = String::deserialize(d)?;
    if s.is_empty() {
        return Ok(None);
    }
    EngineId::from_hex(&s)
        .map(Some)
        .map_err(serde::de::Error::custom)
}

pub(super) fn networks<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Network>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| s.parse().map_err(serde::de::Error::custom))
        .collect()
}

fn subtrees<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Oid>, D::Error> {
    Vec::<String>::deserialize(d)?
        .iter()
        .map(|s| parse_subtree(s).map_err(serde::de::Error::custom))
        .collect()
}

/// A subtree of an access rule: a numeric OID (`1.3.6.1.3.117.1.7`, a
/// leading dot allowed) or the name of an IB-PM-MIB table, column or scalar
/// (`pmPortCounters64Table`).
pub fn parse_subtree(s: &str) -> Result<Oid, ValueError> {
    let t = s.strip_prefix('.').unwrap_or(s);
    if let Ok(o) = t.parse::<Oid>() {
        return Ok(o);
    }
    let name = t.rsplit("::").next().unwrap_or(t);
    if name == "ibPmMIB" {
        return Ok(Oid::new(&crate::mib::schema::PM_ROOT));
    }
    if let Some(tb) = crate::mib::tables::TABLES.iter().find(|tb| tb.name == name) {
        return Ok(Oid::new(&crate::mib::schema::PM_OBJECTS).child(&[tb.number]));
    }
    if let Some(c) = crate::mib::tables::COLUMNS.iter().find(|c| c.name == name) {
        return Ok(Oid::new(&c.oid()));
    }
    Err(ValueError::NoSuchObject(s.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_community_equal_to_the_read_community_is_refused() {
        let e = Config::parse(
            "[snmp]\ncommunity = \"x\"\nwrite_community = \"x\"\n",
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("snmp.write_community"));
        assert_eq!(e.line, Some(3));
        Config::parse("[snmp]\nwrite_community = \"private\"\n", "c.toml").unwrap();
    }

    #[test]
    fn a_responder_beyond_loopback_is_a_warning() {
        let c = Config::parse("[snmp]\nlisten = \"0.0.0.0:1161\"\n", "c.toml").unwrap();
        assert_eq!(c.warnings().len(), 1, "{:?}", c.warnings());
        assert!(c.warnings()[0].starts_with("snmp.listen: "));
        let c = Config::parse("[snmp]\nlisten = \"[::1]:1161\"\n", "c.toml").unwrap();
        assert!(c.warnings().is_empty());
        assert!(Config::default().warnings().is_empty());
    }

    #[test]
    fn without_access_rules_the_communities_answer_loopback_only() {
        let c = Config::parse("[snmp]\nwrite_community = \"rw\"\n", "c.toml").unwrap();
        let t = c.snmp_access();
        let lo: std::net::IpAddr = "127.0.0.1".parse().unwrap();
        let far: std::net::IpAddr = "10.0.0.1".parse().unwrap();
        assert!(!t.for_community(lo, b"public").unwrap().1.write);
        assert!(t.for_community(lo, b"rw").unwrap().1.write);
        assert!(t.for_community(far, b"public").is_none());
        assert!(!t.source_allowed(far));
        assert!(
            t.rules()
                .iter()
                .all(|r| r.rate.is_none() && r.max_response_octets == 1472)
        );
    }

    #[test]
    fn access_rules_parse_in_order_with_their_defaults() {
        let text = "[snmp]\nmax_response_octets = 1400\nrate_limit = 50\n\
            [[snmp.user]]\nname = \"nms\"\nauth = \"SHA-256\"\nauth_passphrase = \"maplesyrup\"\n\
            privacy = \"AES\"\nprivacy_passphrase = \"maplesyrup\"\n\
            [[snmp.access]]\nuser = \"nms\"\nsources = [\"10.0.0.0/8\", \"fd00::/8\"]\n\
            subtrees = [\"pmPortCounters64Table\", \".1.3.6.1.3.117.1.6\", \"IB-PM-MIB::pmAgentSweeps\"]\n\
            max_response_octets = 65507\nrate_limit = 0\n\
            [[snmp.access]]\ncommunity = \"ro\"\n";
        let c = Config::parse(text, "c.toml").unwrap();
        let t = c.snmp_access();
        let r = &t.rules()[0];
        assert_eq!(
            r.principal,
            Principal::User {
                name: b"nms".to_vec(),
                level: Level::AuthPriv
            }
        );
        assert_eq!(r.sources.len(), 2);
        assert_eq!(r.max_response_octets, 65507);
        assert_eq!(r.rate, None);
        let roots: Vec<String> = r.view.roots().iter().map(|o| o.to_string()).collect();
        assert_eq!(
            roots,
            [
                "1.3.6.1.3.117.1.6",
                "1.3.6.1.3.117.1.7",
                "1.3.6.1.3.117.1.9.3"
            ]
        );
        let r = &t.rules()[1];
        assert_eq!(r.principal, Principal::Community(b"ro".to_vec()));
        assert!(r.sources.iter().all(Network::is_loopback));
        assert_eq!(r.max_response_octets, 1400);
        assert_eq!(
            r.rate,
            Some(RateGuard {
                rate: 50,
                burst: 100
            })
        );
        assert!(r.view.is_all());
    }

    #[test]
    fn bad_access_rules_and_users_name_their_line() {
        for (text, key, line, why) in [
            (
                "[[snmp.access]]\ncommunity = \"a\"\nuser = \"b\"\n",
                "snmp.access.user",
                3,
                "not both",
            ),
            (
                "[[snmp.access]]\nwrite = true\n",
                "snmp.access.community",
                1,
                "neither",
            ),
            (
                "[[snmp.access]]\nuser = \"ghost\"\n",
                "snmp.access.user",
                2,
                "no [[snmp.user]]",
            ),
            (
                "[[snmp.access]]\ncommunity = \"a\"\nsources = [\"10.0.0.1/8\"]\n",
                "snmp.access.sources",
                3,
                "beyond its /8",
            ),
            (
                "[[snmp.access]]\ncommunity = \"a\"\nsources = []\n",
                "snmp.access.sources",
                3,
                "lists no network",
            ),
            (
                "[[snmp.access]]\ncommunity = \"a\"\nsubtrees = [\"ifTable\"]\n",
                "snmp.access.subtrees",
                3,
                "neither a numeric OID",
            ),
            (
                "[[snmp.access]]\ncommunity = \"a\"\nlevel = \"authPriv\"\n",
                "snmp.access.level",
                3,
                "`user` rule only",
            ),
            (
                "[[snmp.access]]\ncommunity = \"a\"\nmax_response_octets = 70000\n",
                "snmp.access.max_response_octets",
                3,
                "484 to 65507",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_passphrase = \"short\"\n",
                "snmp.user.auth",
                3,
                "at least 8",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"MD5\"\nauth_passphrase = \"12345678\"\n",
                "snmp.user.auth",
                3,
                "MD5 is not supported",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_key = \"0xabc\"\n",
                "snmp.user.auth_key",
                4,
                "hex",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_key = \"00112233445566778899aabbccddeeff00112233\"\n\
                 privacy = \"AES\"\nprivacy_passphrase = \"12345678\"\n",
                "snmp.user.privacy",
                5,
                "both keys",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\n",
                "snmp.user.auth",
                3,
                "needs `auth_passphrase`",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nprivacy = \"AES\"\nprivacy_passphrase = \"12345678\"\n",
                "snmp.user.privacy",
                3,
                "needs authentication",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\n[[snmp.user]]\nname = \"u\"\n",
                "snmp.user.name",
                4,
                "declared twice",
            ),
            (
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_passphrase = \"12345678\"\n[[snmp.access]]\nuser = \"u\"\nlevel = \"authPriv\"\n",
                "snmp.access.level",
                7,
                "more than user",
            ),
            (
                "[snmp]\ncommunity = \"c\"\n[[snmp.access]]\ncommunity = \"a\"\n",
                "snmp.community",
                2,
                "is ignored",
            ),
        ] {
            let (text, line) = if text.starts_with("[snmp]") {
                (text.to_string(), line)
            } else {
                (format!("[snmp]\n{text}"), line + 1)
            };
            let e = Config::parse(&text, "c.toml").unwrap_err();
            assert_eq!(e.key_path().as_deref(), Some(key), "{text}: {e}");
            assert!(e.reason.contains(why), "{text}: {e}");
            assert_eq!(e.line, Some(line), "{text}: {e}");
        }
    }

    #[test]
    fn a_community_from_beyond_loopback_is_a_warning() {
        let c = Config::parse(
            "[snmp]\nlisten = \"0.0.0.0:1161\"\n[[snmp.access]]\ncommunity = \"x\"\nsources = [\"10.0.0.0/8\"]\n",
            "c.toml",
        )
        .unwrap();
        let w = c.warnings();
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(
            w[0].contains("rule 1 lets sources beyond loopback"),
            "{w:?}"
        );
        assert!(w[0].contains("without a rate guard"), "{w:?}");
        assert!(w[1].contains("clear text"), "{w:?}");
        // With a guard, only the clear text is said.
        let c = Config::parse(
            "[snmp]\nlisten = \"0.0.0.0:1161\"\n[[snmp.access]]\ncommunity = \"x\"\n\
             sources = [\"10.0.0.0/8\"]\nrate_limit = 50\nrate_burst = 10\n",
            "c.toml",
        )
        .unwrap();
        let w = c.warnings();
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(w[0].contains("clear text"), "{w:?}");
        // Listening on loopback only, no source beyond it can ask.
        let c = Config::parse(
            "[snmp]\nlisten = \"127.0.0.1:1161\"\n[[snmp.access]]\ncommunity = \"x\"\n\
             sources = [\"10.0.0.0/8\"]\n",
            "c.toml",
        )
        .unwrap();
        assert!(!c.warnings().iter().any(|l| l.contains("rate guard")));
    }

    #[test]
    fn secrets_are_dropped_and_never_printed() {
        let mut c = Config::parse(
            "[snmp]\ncommunity = \"c-secret-1\"\nwrite_community = \"c-secret-2\"\n\
             engine_file = \"e\"\n\
             [[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_passphrase = \"p-secret-3\"\n\
             privacy = \"AES\"\nprivacy_passphrase = \"p-secret-4\"\n",
            "c.toml",
        )
        .unwrap();
        let shown = format!("{c:?}");
        assert!(!shown.contains("-secret-"), "{shown}");
        assert!(shown.contains("Secret(..)"), "{shown}");
        assert_eq!(
            c.snmp.user[0].auth_passphrase,
            Some(Secret::from("p-secret-3"))
        );
        c.snmp.forget_secrets();
        let u = &c.snmp.user[0];
        assert!(u.auth_passphrase.is_none() && u.privacy_passphrase.is_none());
        assert!(c.snmp.community.expose().is_empty() && c.snmp.write_community.is_none());
    }

    #[test]
    fn a_localized_key_of_the_wrong_length_is_refused() {
        let e = Config::parse(
            &format!(
                "[snmp]\nengine_file = \"e\"\n\
                 [[snmp.user]]\nname = \"u\"\nauth = \"SHA-256\"\nauth_key = \"{}\"\n",
                "ab".repeat(31)
            ),
            "c.toml",
        )
        .unwrap_err();
        assert_eq!(e.key_path().as_deref(), Some("snmp.user.auth_key"), "{e}");
        assert!(e.reason.contains("has 31 octets"), "{e}");
        assert!(!e.to_string().contains("abab"), "{e}");
        // Without an engine file, no key localized in advance can match.
        let e = Config::parse(
            &format!(
                "[[snmp.user]]\nname = \"u\"\nauth = \"SHA-256\"\nauth_key = \"{}\"\n",
                "ab".repeat(32)
            ),
            "c.toml",
        )
        .unwrap_err();
        assert!(e.reason.contains("without snmp.engine_file"), "{e}");
    }

    #[test]
    fn passphrases_in_a_file_others_may_read_are_a_warning() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[snmp]\nengine_file = \"engine\"\n\
             [[snmp.user]]\nname = \"u\"\nauth = \"SHA\"\nauth_passphrase = \"12345678\"\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        let w = Config::load(&p).unwrap().warnings();
        assert!(w.iter().any(|l| l.contains("chmod 640")), "{w:?}");
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o640)).unwrap();
        let c = Config::load(&p).unwrap();
        assert!(c.warnings().is_empty(), "{:?}", c.warnings());
        assert_eq!(c.snmp.engine_file, Some(dir.path().join("engine")));
    }
}
