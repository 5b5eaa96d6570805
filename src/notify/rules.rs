//! Which counters have thresholds, their defaults, and the rules of the
//! configuration file that change them for some nodes and ports.

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;
use std::time::Duration;

use crate::fabric::hc::{self, HC};
use crate::ib::{Guid, NodeType};

/// What a threshold compares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// The increase of a 64-bit total ([`HC`] slot) over the window.
    Increase(usize),
    /// UFM's normalized XmitData: average transmit utilisation over the
    /// window, hundredths of a percent (as pmPortRateOutUtilization).
    Utilization,
    /// UFM's congested bandwidth: the share of the window the port waited
    /// to transmit, hundredths of a percent (as pmPortRateCongestion).
    Congestion,
    /// The symbol bit error rate over the window, in errors per 10^15
    /// bits (as pmPortSymbolBerPer1e15; [`crate::ib::ber`]).
    SymbolBer,
    /// The effective (post-FEC) bit error rate between the port's last two
    /// PortExtendedSpeedsCounters readings, in errors per 10^15 bits (as
    /// pmPortEffectiveBerPer1e15): the FEC totals are not sampled over the
    /// window.
    EffectiveBer,
}

/// One counter with a threshold: the name the configuration and the
/// notification (pmNotifyCounter) use, and its default thresholds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThresholdDef {
    pub name: &'static str,
    pub measure: Measure,
    /// Default rising threshold; 0 = off.
    pub rising: u64,
    pub falling: u64,
}

/// Default rising thresholds, per window: rdma-core's
/// `infiniband-diags/etc/error_thresholds` (the values ibqueryerrors
/// ships), by the 64-bit counter they apply to.
pub const ERROR_THRESHOLDS: [(usize, u64); 13] = [
    (hc::Total::SymbolErrors.k(), 10),
    (hc::Total::LinkErrorRecovery.k(), 10),
    (hc::Total::LinkDowned.k(), 10),
    (hc::Total::RcvErrors.k(), 10),
    (hc::Total::RcvRemotePhysErrors.k(), 100),
    (hc::Total::RcvSwitchRelayErrors.k(), 100),
    (hc::Total::XmitDiscards.k(), 100),
    (hc::Total::XmitConstraintErrors.k(), 100),
    (hc::Total::RcvConstraintErrors.k(), 100),
    (hc::Total::LocalLinkIntegrityErrors.k(), 10),
    (hc::Total::ExcessiveBufferOverrunErrors.k(), 10),
    (hc::Total::VL15Dropped.k(), 100),
    (hc::XMIT_WAIT, 1000),
];

/// How many counters have thresholds: [`ERROR_THRESHOLDS`] and the four
/// calculated ones.
pub const THRESHOLD_COUNT: usize = ERROR_THRESHOLDS.len() + 4;

static THRESHOLDS: LazyLock<Vec<ThresholdDef>> = LazyLock::new(|| {
    let mut v: Vec<ThresholdDef> = HC
        .iter()
        .enumerate()
        .filter(|(k, c)| c.error || *k == hc::XMIT_WAIT)
        .map(|(k, c)| ThresholdDef {
            name: c.name,
            measure: Measure::Increase(k),
            rising: ERROR_THRESHOLDS
                .iter()
                .find(|(s, _)| *s == k)
                .map_or(0, |(_, r)| *r),
            falling: 0,
        })
        .collect();
    // UFM's calculated counters: off until configured.
    v.push(ThresholdDef {
        name: "Utilization",
        measure: Measure::Utilization,
        rising: 0,
        falling: 0,
    });
    v.push(ThresholdDef {
        name: "CongestedBandwidth",
        measure: Measure::Congestion,
        rising: 0,
        falling: 0,
    });
    // The usual symbol BER threshold, 10^-12; falling a decade below.
    let rising = u64::from(crate::ib::ber::SYMBOL_BER_THRESHOLD.per_1e15());
    v.push(ThresholdDef {
        name: "SymbolBER",
        measure: Measure::SymbolBer,
        rising,
        falling: rising / 10,
    });
    // UFM's post-FEC isolation level, 10^-14; falling a decade below.
    let rising = u64::from(crate::ib::ber::EFFECTIVE_BER_THRESHOLD.per_1e15());
    v.push(ThresholdDef {
        name: "EffectiveBER",
        measure: Measure::EffectiveBer,
        rising,
        falling: rising / 10,
    });
    assert_eq!(
        v.len(),
        THRESHOLD_COUNT,
        "every watched counter has a default"
    );
    v
});

/// Every counter with a threshold: the PortCounters error counters and
/// XmitWait (in [`HC`] order), then Utilization, CongestedBandwidth,
/// SymbolBER and EffectiveBER.
pub fn thresholds() -> &'static [ThresholdDef] {
    &THRESHOLDS
}

/// A counter named in the configuration (an index into [`thresholds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CounterName(pub usize);

/// A word of a notification rule that names nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleWordError {
    /// No counter has this name.
    UnknownCounter(String),
    /// An empty node pattern.
    EmptyPattern,
    /// `0x...` that is no GUID.
    NotAGuid(String),
}

impl fmt::Display for RuleWordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleWordError::UnknownCounter(s) => {
                write!(f, "unknown counter `{s}` (known: ")?;
                for (i, d) in thresholds().iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(d.name)?;
                }
                f.write_str(")")
            }
            RuleWordError::EmptyPattern => f.write_str("empty node pattern"),
            RuleWordError::NotAGuid(s) => {
                write!(f, "`{s}` is not a GUID (0x and up to 16 hex digits)")
            }
        }
    }
}

impl std::error::Error for RuleWordError {}

impl FromStr for CounterName {
    type Err = RuleWordError;
    fn from_str(s: &str) -> Result<Self, RuleWordError> {
        thresholds()
            .iter()
            .position(|d| d.name == s)
            .map(CounterName)
            .ok_or_else(|| RuleWordError::UnknownCounter(s.to_string()))
    }
}

/// Which nodes a rule applies to: one GUID, or NodeDescriptions matching a
/// pattern (`*` any run of characters, `?` one character).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NodeMatch {
    Guid(Guid),
    Pattern(String),
}

impl FromStr for NodeMatch {
    type Err = RuleWordError;
    fn from_str(s: &str) -> Result<Self, RuleWordError> {
        if s.is_empty() {
            return Err(RuleWordError::EmptyPattern);
        }
        if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
            return u64::from_str_radix(hex, 16)
                .map(|g| NodeMatch::Guid(Guid(g)))
                .map_err(|_| RuleWordError::NotAGuid(s.to_string()));
        }
        Ok(NodeMatch::Pattern(s.to_string()))
    }
}

impl fmt::Display for NodeMatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NodeMatch::Guid(g) => write!(f, "{:#018x}", g.0),
            NodeMatch::Pattern(p) => f.write_str(p),
        }
    }
}

impl NodeMatch {
    pub fn matches(&self, guid: Guid, description: &str) -> bool {
        match self {
            NodeMatch::Guid(g) => *g == guid,
            NodeMatch::Pattern(p) => glob(p.as_bytes(), description.as_bytes()),
        }
    }
}

/// `*` and `?` matching without recursion (linear backtracking on the
/// last `*`): no pattern makes it slow.
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// One `[[notify.threshold]]` of the configuration: new thresholds for a
/// counter on the nodes and ports it selects. Later rules win.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThresholdRule {
    pub counter: CounterName,
    pub rising: Option<u64>,
    pub falling: Option<u64>,
    pub node_type: Option<NodeType>,
    pub node: Option<NodeMatch>,
    /// Port numbers (empty: every port).
    pub ports: Vec<u8>,
}

impl ThresholdRule {
    fn applies(&self, guid: Guid, description: &str, node_type: NodeType, port: u8) -> bool {
        self.node_type.is_none_or(|t| t == node_type)
            && self
                .node
                .as_ref()
                .is_none_or(|m| m.matches(guid, description))
            && (self.ports.is_empty() || self.ports.contains(&port))
    }
}

/// What the evaluator needs to know, typed once by the configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotifyConfig {
    /// The window counter rates are sampled over.
    pub window: Duration,
    /// Notifications of one family per sweep; 0 = no limit.
    pub limit_per_sweep: u32,
    pub rules: Vec<ThresholdRule>,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        NotifyConfig {
            window: Duration::from_secs(60),
            limit_per_sweep: 50,
            rules: Vec::new(),
        }
    }
}

impl NotifyConfig {
    /// (rising, falling) of every counter of [`thresholds`] for one port;
    /// rising 0 means the counter is not watched there.
    pub fn resolve(
        &self,
        guid: Guid,
        description: &str,
        node_type: NodeType,
        port: u8,
    ) -> Vec<(u64, u64)> {
        resolve(&self.rules, guid, description, node_type, port)
    }
}

/// (rising, falling) of every counter of [`thresholds`] for one port under
/// `rules` (later rules win); rising 0 means the counter is not watched
/// there. The one resolution the notifications and the health verdicts
/// read.
pub fn resolve(
    rules: &[ThresholdRule],
    guid: Guid,
    description: &str,
    node_type: NodeType,
    port: u8,
) -> Vec<(u64, u64)> {
    let mut v: Vec<(u64, u64)> = thresholds().iter().map(|d| (d.rising, d.falling)).collect();
    for r in rules {
        if r.applies(guid, description, node_type, port) {
            let t = &mut v[r.counter.0];
            if let Some(x) = r.rising {
                t.0 = x;
            }
            if let Some(x) = r.falling {
                t.1 = x;
            }
        }
    }
    v
}

/// The index in [`thresholds`] of the threshold on the 64-bit total `k`
/// ([`HC`] slot), if it has one.
pub fn threshold_of(k: usize) -> Option<usize> {
    thresholds()
        .iter()
        .position(|d| d.measure == Measure::Increase(k))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every PortCounters error counter and XmitWait has a threshold, and
    /// each has rdma-core's default.
    #[test]
    fn every_error_counter_and_xmit_wait_has_a_default() {
        let t = thresholds();
        for (k, c) in HC.iter().enumerate() {
            let watched = t.iter().find(|d| d.measure == Measure::Increase(k));
            if c.error || k == hc::XMIT_WAIT {
                let d = watched.unwrap_or_else(|| panic!("{} has no threshold", c.name));
                assert!(d.rising > 0, "{}", c.name);
            } else {
                assert!(watched.is_none(), "{}", c.name);
            }
        }
        assert_eq!(t.len(), ERROR_THRESHOLDS.len() + 4);
        let sym = "SymbolErrors".parse::<CounterName>().unwrap();
        assert_eq!(t[sym.0].rising, 10);
        // The symbol BER: 10^-12 as errors per 10^15 bits.
        let ber = "SymbolBER".parse::<CounterName>().unwrap();
        assert_eq!((t[ber.0].rising, t[ber.0].falling), (1000, 100));
        // The effective BER: UFM's 10^-14.
        let eff = "EffectiveBER".parse::<CounterName>().unwrap();
        assert_eq!((t[eff.0].rising, t[eff.0].falling), (10, 1));
        let e = "Bogus".parse::<CounterName>().unwrap_err();
        assert_eq!(e, RuleWordError::UnknownCounter("Bogus".into()));
        assert!(
            e.to_string()
                .starts_with("unknown counter `Bogus` (known: SymbolErrors, "),
            "{e}"
        );
        assert!(e.to_string().contains("XmitWait"), "{e}");
    }

    #[test]
    fn glob_patterns() {
        for (p, s, m) in [
            ("leaf*", "leaf1 IB switch", true),
            ("*switch", "leaf1 IB switch", true),
            ("sp?ne*", "spine2", true),
            ("spine", "spine2", false),
            ("*a*b*c", "xxaxxbxxc", true),
            ("*a*b*c", "xxaxxbxx", false),
            ("", "", true),
        ] {
            assert_eq!(glob(p.as_bytes(), s.as_bytes()), m, "{p} {s}");
        }
        assert_eq!(
            "0x200000".parse::<NodeMatch>(),
            Ok(NodeMatch::Guid(Guid(0x200000)))
        );
        assert_eq!(
            "0xzz".parse::<NodeMatch>(),
            Err(RuleWordError::NotAGuid("0xzz".into()))
        );
        assert_eq!("".parse::<NodeMatch>(), Err(RuleWordError::EmptyPattern));
    }

    #[test]
    fn later_rules_win_and_filters_apply() {
        let sym = "SymbolErrors".parse::<CounterName>().unwrap();
        let cfg = NotifyConfig {
            rules: vec![
                ThresholdRule {
                    counter: sym,
                    rising: Some(5),
                    falling: Some(1),
                    node_type: Some(NodeType::Switch),
                    node: None,
                    ports: vec![],
                },
                ThresholdRule {
                    counter: sym,
                    rising: Some(2),
                    falling: None,
                    node_type: None,
                    node: Some("leaf*".parse().unwrap()),
                    ports: vec![3],
                },
            ],
            ..Default::default()
        };
        let r = |g, d, t, p| cfg.resolve(Guid(g), d, t, p)[sym.0];
        assert_eq!(r(1, "spine1", NodeType::Switch, 3), (5, 1));
        assert_eq!(r(2, "leaf1", NodeType::Switch, 3), (2, 1));
        assert_eq!(r(2, "leaf1", NodeType::Switch, 4), (5, 1));
        assert_eq!(r(3, "leafy HCA", NodeType::Ca, 3), (2, 0));
        assert_eq!(r(3, "node01", NodeType::Ca, 3), (10, 0));
    }
}
