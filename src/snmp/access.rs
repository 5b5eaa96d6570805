//! Who may ask the built-in responder what: access rules as snmpd's
//! `rocommunity` / `rouser` lines have them (a community or a user, the
//! source networks, the subtrees, read or write), and the view a rule
//! grants. Pure: the responder asks, nothing here does I/O.
//!
//! A request is checked in two steps. First its source address: a datagram
//! from an address no rule lists is dropped before it is decoded, so nobody
//! outside can draw an answer (not even an SNMPv3 discovery Report) and
//! the responder cannot be used as a reflector. Then the rule that matches
//! the request's community (SNMPv1/v2c) or authenticated user (SNMPv3) and
//! source, the first in the file's order: it gives the subtrees the request
//! sees, whether it may write, the largest response and an optional rate
//! guard.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use crate::mib::{MibHandler, Oid, Value, VarBind};

pub use crate::edge::Network;

/// The subtrees a rule lets a request see. Empty: every object the agent
/// serves.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subtrees {
    /// Sorted; none lies below another.
    roots: Vec<Oid>,
}

impl Subtrees {
    /// Every object.
    pub fn all() -> Subtrees {
        Subtrees::default()
    }

    pub fn new(mut roots: Vec<Oid>) -> Subtrees {
        roots.sort();
        roots.dedup();
        let mut kept: Vec<Oid> = Vec::with_capacity(roots.len());
        for r in roots {
            if !kept.last().is_some_and(|k| r.starts_with(k.as_slice())) {
                kept.push(r);
            }
        }
        // A root of no sub-identifiers is every object.
        if kept.first().is_some_and(Oid::is_empty) {
            kept.clear();
        }
        Subtrees { roots: kept }
    }

    pub fn is_all(&self) -> bool {
        self.roots.is_empty()
    }

    pub fn roots(&self) -> &[Oid] {
        &self.roots
    }

    pub fn contains(&self, oid: &Oid) -> bool {
        self.is_all() || self.roots.iter().any(|r| oid.starts_with(r.as_slice()))
    }
}

/// The first OID after every OID that starts with `prefix` (`None`: there is
/// none, the subtree runs to the end of the OID space).
fn subtree_end(prefix: &Oid) -> Option<Oid> {
    let mut v = prefix.as_slice().to_vec();
    while let Some(last) = v.pop() {
        if let Some(next) = last.checked_add(1) {
            v.push(next);
            return Some(Oid(v));
        }
    }
    None
}

/// SNMPv3 security levels, in order of strength (the USM's own type).
pub use super::usm::SecurityLevel as Level;

impl FromStr for Level {
    type Err = String;
    fn from_str(s: &str) -> Result<Level, String> {
        match s {
            "noAuthNoPriv" => Ok(Level::NoAuthNoPriv),
            "authNoPriv" => Ok(Level::AuthNoPriv),
            "authPriv" => Ok(Level::AuthPriv),
            _ => Err(format!(
                "unknown security level `{}` (known: noAuthNoPriv, authNoPriv, authPriv)",
                s.escape_debug()
            )),
        }
    }
}

/// Whom a rule names.
#[derive(Clone, PartialEq, Eq)]
pub enum Principal {
    /// An SNMPv1/v2c community.
    Community(Vec<u8>),
    /// An SNMPv3 user, at this security level or a stronger one.
    User { name: Vec<u8>, level: Level },
}

/// Names the user; never prints a community.
impl fmt::Debug for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Principal::Community(_) => f.write_str("Community(..)"),
            Principal::User { name, level } => f
                .debug_struct("User")
                .field("name", &String::from_utf8_lossy(name))
                .field("level", level)
                .finish(),
        }
    }
}

/// A rate guard: at most `rate` requests a second from one source address,
/// after a first `burst`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateGuard {
    pub rate: u32,
    pub burst: u32,
}

/// One access rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rule {
    pub principal: Principal,
    pub sources: Vec<Network>,
    pub view: Subtrees,
    pub write: bool,
    /// The largest response message for requests under this rule
    /// ([`MIN_MESSAGE_SIZE`](super::MIN_MESSAGE_SIZE) to
    /// [`MAX_UDP_PAYLOAD`](super::MAX_UDP_PAYLOAD) octets; an SNMPv3
    /// request's own msgMaxSize may lower it).
    pub max_response_octets: usize,
    pub rate: Option<RateGuard>,
}

impl Rule {
    /// Whether the rule lists `ip` among its sources.
    pub fn allows_source(&self, ip: IpAddr) -> bool {
        self.sources.iter().any(|n| n.contains(ip))
    }
}

/// A rule as a log line shows it (a community is named, never its text).
impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.principal {
            Principal::Community(_) => f.write_str("a community")?,
            Principal::User { name, level } => {
                write!(f, "user {} at {level}", String::from_utf8_lossy(name))?
            }
        }
        let sources: Vec<String> = self.sources.iter().map(|n| n.to_string()).collect();
        write!(f, " from {}", sources.join(", "))?;
        if self.view.is_all() {
            f.write_str(", everything")?;
        } else {
            let roots: Vec<String> = self.view.roots().iter().map(|o| o.to_string()).collect();
            write!(f, ", subtrees {}", roots.join(", "))?;
        }
        f.write_str(if self.write {
            ", read-write"
        } else {
            ", read-only"
        })?;
        write!(f, ", responses up to {} octets", self.max_response_octets)?;
        if let Some(g) = self.rate {
            write!(f, ", at most {}/s after {}", g.rate, g.burst)?;
        }
        Ok(())
    }
}

/// The rules, in the configuration's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessTable {
    rules: Vec<Rule>,
}

impl AccessTable {
    pub fn new(rules: Vec<Rule>) -> AccessTable {
        AccessTable { rules }
    }

    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    /// Whether any rule lets `ip` ask at all (checked before decoding).
    pub fn source_allowed(&self, ip: IpAddr) -> bool {
        self.rules.iter().any(|r| r.allows_source(ip))
    }

    /// Whether any user rule lets `ip` ask (checked before an SNMPv3
    /// message goes to the USM: a discovery probe names no user, and its
    /// Report is larger than the probe).
    pub fn users_allowed(&self, ip: IpAddr) -> bool {
        self.rules
            .iter()
            .any(|r| matches!(r.principal, Principal::User { .. }) && r.allows_source(ip))
    }

    /// The first rule for `community` from `ip`, with its position.
    pub fn for_community(&self, ip: IpAddr, community: &[u8]) -> Option<(usize, &Rule)> {
        self.rules.iter().enumerate().find(|(_, r)| {
            matches!(&r.principal, Principal::Community(c) if c == community) && r.allows_source(ip)
        })
    }

    /// The first rule for the authenticated `user` at `level` from `ip`.
    pub fn for_user(&self, ip: IpAddr, user: &[u8], level: Level) -> Option<(usize, &Rule)> {
        self.rules.iter().enumerate().find(|(_, r)| {
            matches!(&r.principal, Principal::User { name, level: min } if name == user && level >= *min)
                && r.allows_source(ip)
        })
    }

    /// Whether some rule names `user` from `ip`, at any level (to tell an
    /// unsupported security level from an unknown user).
    pub fn names_user(&self, ip: IpAddr, user: &[u8]) -> bool {
        self.rules.iter().any(|r| {
            matches!(&r.principal, Principal::User { name, .. } if name == user)
                && r.allows_source(ip)
        })
    }
}

/// A MIB handler seen through a rule's subtrees: objects outside them do not
/// exist for the request (Get: noSuchObject; GetNext skips them).
pub struct Viewed<'a> {
    pub inner: &'a dyn MibHandler,
    pub view: &'a Subtrees,
}

impl MibHandler for Viewed<'_> {
    fn get(&self, oid: &Oid) -> Value {
        if self.view.contains(oid) {
            self.inner.get(oid)
        } else {
            Value::NoSuchObject
        }
    }

    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        if self.view.is_all() {
            return self.inner.get_many(oids);
        }
        let mut out = self.inner.get_many(oids);
        for (v, o) in out.iter_mut().zip(oids) {
            if !self.view.contains(o) {
                *v = Value::NoSuchObject;
            }
        }
        out
    }

    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        if self.view.is_all() {
            return self.inner.get_next(start, include, end);
        }
        for root in self.view.roots() {
            let root_end = subtree_end(root);
            if root_end.as_ref().is_some_and(|e| e <= start) {
                continue;
            }
            let (from, incl) = if start < root {
                (root, true)
            } else {
                (start, include)
            };
            if end.is_some_and(|e| from >= e) {
                return None;
            }
            let until = match (end, root_end.as_ref()) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            if let Some(vb) = self.inner.get_next(from, incl, until) {
                return Some(vb);
            }
        }
        None
    }

    delegate_writes!();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> Network {
        s.parse().unwrap()
    }
    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn networks_parse_and_contain() {
        assert!(net("10.0.0.0/8").contains(ip("10.200.1.2")));
        assert!(!net("10.0.0.0/8").contains(ip("11.0.0.1")));
        assert!(net("10.0.0.0/8").contains(ip("::ffff:10.1.2.3")));
        assert!(!net("10.0.0.0/8").contains(ip("fd00::1")));
        assert!(net("fd00::/8").contains(ip("fd12::1")));
        assert!(!net("fd00::/8").contains(ip("fe80::1")));
        assert!(net("0.0.0.0/0").contains(ip("192.0.2.1")));
        assert!(!net("0.0.0.0/0").contains(ip("2001:db8::1")));
        assert!(net("::/0").contains(ip("2001:db8::1")));
        assert!(net("192.0.2.7").contains(ip("192.0.2.7")));
        assert!(!net("192.0.2.7").contains(ip("192.0.2.8")));
        assert!(net("::1").contains(ip("::1")));
        assert_eq!(net("fd00::/8").to_string(), "fd00::/8");
        // An IPv4-mapped network is its IPv4 network, whichever way the
        // datagram arrives.
        let mapped = net("::ffff:10.0.0.0/104");
        assert_eq!(mapped, net("10.0.0.0/8"));
        assert!(mapped.contains(ip("10.1.2.3")));
        assert!(mapped.contains(ip("::ffff:10.1.2.3")));
        assert!(!mapped.contains(ip("11.1.2.3")));
        assert_eq!(net("::ffff:127.0.0.1"), net("127.0.0.1"));
        assert!(net("::ffff:127.0.0.0/104").is_loopback());
    }

    #[test]
    fn bad_networks_say_why() {
        for (s, why) in [
            ("10.0.0.1/8", "bits set beyond"),
            ("10.0.0.0/33", "0 to 32"),
            ("fd00::/129", "0 to 128"),
            ("fd00::/x", "0 to 128"),
            ("example.org", "not an IP network"),
            ("", "not an IP network"),
            ("10.0.0.0/", "0 to 32"),
        ] {
            let e = s.parse::<Network>().unwrap_err();
            assert!(e.contains(why), "{s}: {e}");
        }
    }

    #[test]
    fn loopback_is_loopback_only() {
        let lo = Network::loopback();
        assert!(lo.iter().any(|n| n.contains(ip("127.0.0.1"))));
        assert!(lo.iter().any(|n| n.contains(ip("::1"))));
        assert!(!lo.iter().any(|n| n.contains(ip("10.0.0.1"))));
        assert!(lo.iter().all(Network::is_loopback));
        assert!(!net("0.0.0.0/0").is_loopback());
        assert!(!net("::/0").is_loopback());
    }

    fn rule(p: Principal, sources: &[&str]) -> Rule {
        Rule {
            principal: p,
            sources: sources.iter().map(|s| net(s)).collect(),
            view: Subtrees::all(),
            write: false,
            max_response_octets: 1472,
            rate: None,
        }
    }

    #[test]
    fn the_first_rule_for_community_and_source_wins() {
        let t = AccessTable::new(vec![
            rule(Principal::Community(b"public".to_vec()), &["127.0.0.0/8"]),
            rule(Principal::Community(b"nms".to_vec()), &["10.0.0.0/8"]),
            rule(Principal::Community(b"public".to_vec()), &["10.1.0.0/16"]),
        ]);
        assert_eq!(
            t.for_community(ip("127.0.0.1"), b"public").map(|r| r.0),
            Some(0)
        );
        assert_eq!(
            t.for_community(ip("10.1.2.3"), b"public").map(|r| r.0),
            Some(2)
        );
        assert_eq!(t.for_community(ip("10.2.2.3"), b"public"), None);
        assert_eq!(
            t.for_community(ip("10.2.2.3"), b"nms").map(|r| r.0),
            Some(1)
        );
        assert!(t.source_allowed(ip("10.2.2.3")));
        assert!(!t.source_allowed(ip("192.0.2.1")));
    }

    #[test]
    fn users_need_their_level() {
        let t = AccessTable::new(vec![rule(
            Principal::User {
                name: b"nms".to_vec(),
                level: Level::AuthPriv,
            },
            &["::1"],
        )]);
        assert!(t.for_user(ip("::1"), b"nms", Level::AuthPriv).is_some());
        assert!(t.for_user(ip("::1"), b"nms", Level::AuthNoPriv).is_none());
        assert!(t.names_user(ip("::1"), b"nms"));
        assert!(!t.names_user(ip("::1"), b"other"));
        assert!(
            t.for_user(ip("127.0.0.1"), b"nms", Level::AuthPriv)
                .is_none()
        );
    }

    #[test]
    fn subtrees_drop_roots_below_others() {
        let s = Subtrees::new(vec![
            "1.3.6.1.3.117.1.7".parse().unwrap(),
            "1.3.6.1.3.117".parse().unwrap(),
            "1.3.6.1.2.1.1".parse().unwrap(),
        ]);
        assert_eq!(s.roots().len(), 2);
        assert!(s.contains(&"1.3.6.1.3.117.1.7.1.2".parse().unwrap()));
        assert!(!s.contains(&"1.3.6.1.3.118".parse().unwrap()));
        assert!(Subtrees::new(vec![Oid(vec![])]).is_all());
    }

    #[test]
    fn subtree_end_carries() {
        assert_eq!(subtree_end(&Oid(vec![1, 3, 6])), Some(Oid(vec![1, 3, 7])));
        assert_eq!(subtree_end(&Oid(vec![1, u32::MAX])), Some(Oid(vec![2])));
        assert_eq!(subtree_end(&Oid(vec![u32::MAX])), None);
    }

    /// A handler over a fixed sorted list.
    struct List(Vec<Oid>);
    impl MibHandler for List {
        fn get(&self, oid: &Oid) -> Value {
            if self.0.contains(oid) {
                Value::Integer(1)
            } else {
                Value::NoSuchObject
            }
        }
        fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
            self.0
                .iter()
                .find(|o| if include { *o >= start } else { *o > start })
                .filter(|o| end.is_none_or(|e| *o < e))
                .map(|o| VarBind::new(o.clone(), Value::Integer(1)))
        }
    }

    #[test]
    fn a_view_walks_only_its_subtrees() {
        let list = List(
            [
                "1.1.1", "1.2.1", "1.2.2", "1.3.1", "1.4.1", "1.4.2.1", "1.5",
            ]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect(),
        );
        let view = Subtrees::new(vec!["1.2".parse().unwrap(), "1.4.2".parse().unwrap()]);
        let v = Viewed {
            inner: &list,
            view: &view,
        };
        let mut walked = Vec::new();
        let mut cur = Oid(vec![]);
        while let Some(vb) = v.get_next(&cur, false, None) {
            walked.push(vb.name.to_string());
            cur = vb.name;
        }
        assert_eq!(walked, ["1.2.1", "1.2.2", "1.4.2.1"]);
        assert_eq!(v.get(&"1.1.1".parse().unwrap()), Value::NoSuchObject);
        assert_eq!(v.get(&"1.2.1".parse().unwrap()), Value::Integer(1));
        // A bound before the next subtree ends the range.
        assert_eq!(
            v.get_next(
                &"1.2.2".parse().unwrap(),
                false,
                Some(&"1.4".parse().unwrap())
            ),
            None
        );
        assert_eq!(
            v.get_many(&["1.1.1".parse().unwrap(), "1.2.2".parse().unwrap()]),
            vec![Value::NoSuchObject, Value::Integer(1)]
        );
    }
}
