//! The kinds of event, declared once: name (the API's and the CLI's
//! word), title (the page's), and the value pmEventKind takes in the MIB.

use std::fmt;

/// A kind of event. `as usize` indexes [`KINDS`] and the counters by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum Kind {
    NodeLost,
    NodeFound,
    NodeForgotten,
    PortState,
    VerdictRaised,
    VerdictCleared,
    VerdictAcknowledged,
    NotAsPlanned,
    AsPlanned,
    SmChanged,
    SmNone,
    SmFailover,
    ThresholdRising,
    ThresholdFalling,
    CounterReset,
    LinkDegraded,
    LinkRecovered,
    SweepOverrun,
    SubnetNotSwept,
    SubnetSwept,
}

pub const KIND_COUNT: usize = 20;

/// One kind's facts.
#[derive(Clone, Copy, Debug)]
pub struct KindDef {
    pub kind: Kind,
    /// The word `?kind=` and `--kind` take, and the JSON says.
    pub name: &'static str,
    /// What the page says.
    pub title: &'static str,
    /// pmEventKind's enumeration value.
    pub mib: u32,
    /// What `before` and `after` hold for this kind.
    pub values: &'static str,
}

const fn def(
    kind: Kind,
    name: &'static str,
    title: &'static str,
    mib: u32,
    values: &'static str,
) -> KindDef {
    KindDef {
        kind,
        name,
        title,
        mib,
        values,
    }
}

/// Every kind, in [`Kind`] order.
pub const KINDS: [KindDef; KIND_COUNT] = [
    def(
        Kind::NodeLost,
        "node-lost",
        "Node lost",
        1,
        "reachable 1 -> 0",
    ),
    def(
        Kind::NodeFound,
        "node-found",
        "Node found",
        2,
        "reachable 0 -> 1",
    ),
    def(
        Kind::NodeForgotten,
        "node-forgotten",
        "Node forgotten",
        3,
        "none",
    ),
    def(
        Kind::PortState,
        "port-state",
        "Port state",
        4,
        "pmPortState before -> after",
    ),
    def(
        Kind::VerdictRaised,
        "verdict-raised",
        "Verdict raised",
        5,
        "times raised (after); detail: the condition",
    ),
    def(
        Kind::VerdictCleared,
        "verdict-cleared",
        "Verdict cleared",
        6,
        "times raised (after); detail: the condition",
    ),
    def(
        Kind::VerdictAcknowledged,
        "verdict-acknowledged",
        "Verdict acknowledged",
        7,
        "none; detail: the condition, or all",
    ),
    def(
        Kind::NotAsPlanned,
        "not-as-planned",
        "Link not as planned",
        8,
        "none; detail: the mismatch",
    ),
    def(Kind::AsPlanned, "as-planned", "Link as planned", 9, "none"),
    def(
        Kind::SmChanged,
        "sm-changed",
        "Master SM changed",
        10,
        "master SM port GUID before -> after",
    ),
    def(
        Kind::SmNone,
        "sm-none",
        "No master SM",
        11,
        "master SM port GUID before -> 0",
    ),
    def(
        Kind::SmFailover,
        "sm-failover",
        "Local port failover",
        12,
        "none; detail: old -> new local port",
    ),
    def(
        Kind::ThresholdRising,
        "threshold-rising",
        "Threshold crossed",
        13,
        "threshold (before), value (after); detail: the counter",
    ),
    def(
        Kind::ThresholdFalling,
        "threshold-falling",
        "Threshold cleared",
        14,
        "threshold (before), value (after); detail: the counter",
    ),
    def(
        Kind::CounterReset,
        "counter-reset",
        "Counter reset",
        15,
        "none",
    ),
    def(
        Kind::LinkDegraded,
        "link-degraded",
        "Link degraded",
        16,
        "pmPortLinkDegraded before -> after; detail: width and speed",
    ),
    def(
        Kind::LinkRecovered,
        "link-recovered",
        "Link recovered",
        17,
        "pmPortLinkDegraded before -> after; detail: width and speed",
    ),
    def(
        Kind::SweepOverrun,
        "sweep-overrun",
        "Sweep overran",
        18,
        "interval ms (before), duration ms (after)",
    ),
    def(
        Kind::SubnetNotSwept,
        "subnet-not-swept",
        "Subnet not swept",
        19,
        "pmSubnetSweepState before -> after",
    ),
    def(
        Kind::SubnetSwept,
        "subnet-swept",
        "Subnet swept again",
        20,
        "pmSubnetSweepState before -> after",
    ),
];

impl Kind {
    pub const ALL: [Kind; KIND_COUNT] = {
        let mut out = [Kind::NodeLost; KIND_COUNT];
        let mut i = 0;
        while i < KIND_COUNT {
            out[i] = KINDS[i].kind;
            i += 1;
        }
        out
    };

    pub fn def(self) -> &'static KindDef {
        &KINDS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// The kind named `name` (as [`KindDef::name`]).
    pub fn from_name(name: &str) -> Option<Kind> {
        KINDS.iter().find(|d| d.name == name).map(|d| d.kind)
    }

    /// The kind whose index is `i` (a file's byte).
    pub fn from_index(i: u8) -> Option<Kind> {
        Kind::ALL.get(usize::from(i)).copied()
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_kind_order_with_unique_names_and_values() {
        for (i, d) in KINDS.iter().enumerate() {
            assert_eq!(d.kind as usize, i, "{}", d.name);
            assert_eq!(Kind::from_name(d.name), Some(d.kind));
            assert_eq!(Kind::from_index(i as u8), Some(d.kind));
            assert_eq!(d.mib, i as u32 + 1, "{}", d.name);
        }
        let mut names: Vec<_> = KINDS.iter().map(|d| d.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), KIND_COUNT);
        assert_eq!(Kind::from_index(KIND_COUNT as u8), None);
        assert_eq!(Kind::from_name("node lost"), None);
    }
}
