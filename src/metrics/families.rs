//! Every metric family the endpoint serves. A family is a MIB column
//! under a Prometheus name, declared on the column's own row
//! ([`crate::mib::face`]): its values are read through the MIB's read
//! path ([`crate::mib::read`]) from the same snapshot, so a scrape and an
//! SNMP walk of one sweep show the same numbers. The optional attributes'
//! counters (VL, SL, lanes, details, congestion, FEC) are named from their
//! MIB columns by one rule ([`derived_name`]). What is here has no MIB
//! column: the set of collectors, the info series' names, the health
//! families that count all verdicts or per condition, and the rule.

use std::sync::LazyLock;

use crate::mib::face::Face;
pub use crate::mib::face::{Collector, Info, Kind, Part, Scale, Shown};
use crate::mib::schema::{Column, Source, Table};
use crate::mib::tables::{COLUMNS, table};
use crate::pm::optional::{Lane, OPTIONAL};

const fn bit(c: Collector) -> u16 {
    1 << c as u16
}

/// A set of collectors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Collectors(u16);

impl Collectors {
    pub const NONE: Collectors = Collectors(0);

    /// The collectors on by default.
    pub fn defaults() -> Collectors {
        Collector::ALL
            .into_iter()
            .filter(|c| c.default_on())
            .collect()
    }

    pub fn has(self, c: Collector) -> bool {
        self.0 & bit(c) != 0
    }

    pub fn with(self, c: Collector) -> Collectors {
        Collectors(self.0 | bit(c))
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn names(self) -> impl Iterator<Item = &'static str> {
        Collector::ALL
            .into_iter()
            .filter(move |c| self.has(*c))
            .map(Collector::name)
    }
}

impl FromIterator<Collector> for Collectors {
    fn from_iter<I: IntoIterator<Item = Collector>>(it: I) -> Collectors {
        it.into_iter().fold(Collectors::NONE, Collectors::with)
    }
}

/// The label a per-lane table adds after `node_guid` and `port`.
pub fn lane_label(lane: Lane) -> &'static str {
    match lane {
        Lane::Vl => "vl",
        Lane::Sl => "sl",
        Lane::Phys => "lane",
    }
}

/// One metric family: a MIB column under a Prometheus name.
#[derive(Clone, Debug)]
pub struct Family {
    /// The name without `_total` (OpenMetrics' family name).
    pub name: String,
    pub help: String,
    pub kind: Kind,
    pub collector: Collector,
    pub column: &'static Column,
    pub table: &'static Table,
    pub scale: Scale,
    /// The lane label of a per-lane table.
    pub lane: Option<&'static str>,
    /// The label this column's samples carry in a family several columns
    /// share ([`crate::mib::face::Face::labelled`]).
    pub label: Option<(&'static str, &'static str)>,
    /// Where it comes in a scrape.
    pub part: Part,
}

/// A family of the `health` collector with no MIB column: a figure of
/// all the verdicts, or one the MIB does not hold per condition. The
/// per-row verdicts are MIB columns' faces (pmPortHealthTable,
/// pmNodeUnresponsive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthFamily {
    /// The name without `_total`.
    pub name: &'static str,
    pub kind: Kind,
    /// Its labels, as docs/metrics.md lists them.
    pub labels: &'static str,
    pub help: &'static str,
}

/// How many times each condition was raised on the port (the MIB holds
/// their sum, pmPortHealthRaised).
pub const HEALTH_RAISED: HealthFamily = HealthFamily {
    name: "infiniband_port_health_condition_raised",
    kind: Kind::Counter,
    labels: "`peer_node_guid`, `peer_port`, `condition`",
    help: "Times a verdict of the condition was raised on the port's link (a verdict that cleared and came back counts again).",
};
/// Ports with a standing verdict, per condition: served on a healthy
/// fabric too.
pub const HEALTH_UNHEALTHY_PORTS: HealthFamily = HealthFamily {
    name: "infiniband_health_unhealthy_ports",
    kind: Kind::Gauge,
    labels: "`condition`",
    help: "Ports on which a verdict of the condition stands.",
};
/// When the verdicts were made.
pub const HEALTH_EVALUATED: HealthFamily = HealthFamily {
    name: "infiniband_health_last_evaluation_timestamp_seconds",
    kind: Kind::Gauge,
    labels: "",
    help: "When the health evaluator last looked at a sweep (Unix time).",
};

/// Mismatches with the plan, per kind: served once the fabric was
/// compared, every kind.
pub const PLAN_MISMATCHES: HealthFamily = HealthFamily {
    name: "infiniband_plan_mismatches",
    kind: Kind::Gauge,
    labels: "`kind`",
    help: "Ports (and, for absent_node and unplanned_node, nodes) not as planned, per kind: missing, miswired, wrong_rate, unplanned_link, absent_node, unplanned_node; verdicts standing or within their recovery window.",
};
/// One 0/1 series per port (port 0: the node) and kind not as planned.
pub const PLAN_PORT_MISMATCH: HealthFamily = HealthFamily {
    name: "infiniband_port_not_as_planned",
    kind: Kind::Gauge,
    labels: "`kind`",
    help: "1 while the port (port 0: the node) is not as planned in the kind's way, 0 once it is again until its recovery window passes; only ports with such a verdict.",
};
/// When the fabric was last compared with its plan.
pub const PLAN_COMPARED: HealthFamily = HealthFamily {
    name: "infiniband_plan_last_comparison_timestamp_seconds",
    kind: Kind::Gauge,
    labels: "`source`",
    help: "When the fabric was last compared with its plan (Unix time); source: ibnetdiscover, cabling or baseline (the fabric as first found).",
};

/// Every family of the `health` collector with no MIB column.
pub const HEALTH_FAMILIES: [HealthFamily; 6] = [
    HEALTH_UNHEALTHY_PORTS,
    HEALTH_EVALUATED,
    HEALTH_RAISED,
    PLAN_MISMATCHES,
    PLAN_COMPARED,
    PLAN_PORT_MISMATCH,
];

/// The Prometheus name of an optional attribute's MIB column: the name
/// after `pmPort` (or `pm`) in snake_case, `port_` in front, `_bytes` for
/// a counter of words.
pub fn derived_name(mib_name: &str, words: bool) -> String {
    let stem = mib_name
        .strip_prefix("pmPort")
        .or_else(|| mib_name.strip_prefix("pm"))
        .unwrap_or(mib_name);
    let stem = stem
        .strip_prefix("Port")
        .filter(|s| !s.is_empty())
        .unwrap_or(stem);
    let mut s = String::from("port_");
    s.push_str(&snake_case(stem));
    if words {
        s.push_str("_bytes");
    }
    s
}

/// `FECCorrectableBlocks` -> `fec_correctable_blocks`, `VL15Dropped` ->
/// `vl15_dropped`, `SLRcvFECN` -> `sl_rcv_fecn`.
pub fn snake_case(camel: &str) -> String {
    let c: Vec<char> = camel.chars().collect();
    let mut out = String::with_capacity(c.len() + 4);
    for (i, &ch) in c.iter().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            let prev = c[i - 1];
            let next_lower = c.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase()
                || prev.is_ascii_digit()
                || (prev.is_ascii_uppercase() && next_lower)
            {
                out.push('_');
            }
        }
        out.push(ch.to_ascii_lowercase());
    }
    out
}

fn family(
    column: &'static Column,
    name: String,
    kind: Kind,
    collector: Collector,
    scale: Scale,
    help: String,
) -> Family {
    let table = table(column.table).expect("every column has its table");
    let lane = match column.source {
        Source::Lane(a) => Some(lane_label(a.counter.lane)),
        _ => None,
    };
    Family {
        name: format!("infiniband_{name}"),
        help,
        kind,
        collector,
        column,
        table,
        scale,
        lane,
        label: None,
        part: if collector == Collector::Health {
            Part::Health
        } else {
            table.part
        },
    }
}

/// The family named from an optional attribute's column by the rule
/// ([`derived_name`]), for a column of a table with a `collector` and no
/// face of its own.
fn derived(col: &'static Column, collector: Collector) -> Family {
    let (words, units) = match col.source {
        Source::Lane(a) => (a.counter.units == "octets/4", a.counter.units),
        Source::Optional { attr_id, field } => {
            let words = OPTIONAL
                .iter()
                .any(|a| a.id == attr_id && a.words.contains(&field));
            (words, if words { "octets/4" } else { "" })
        }
        _ => (false, ""),
    };
    let what = col.name.strip_prefix("pm").unwrap_or(col.name);
    let help = match (words, units) {
        (true, _) => {
            format!("{what} of the port's latest reading, in bytes (the PMA counts 4-octet words).")
        }
        (false, "") => format!("{what} of the port's latest reading."),
        (false, u) => format!("{what} of the port's latest reading, in {u}."),
    };
    let scale = if words { Scale::Times(4) } else { Scale::One };
    Family {
        part: Part::Derived,
        ..family(
            col,
            derived_name(col.name, words),
            Kind::Counter,
            collector,
            scale,
            help,
        )
    }
}

/// Every family, in the order a scrape writes them: by [`Part`], then in
/// OID order, a column's faces in their order.
pub static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| {
    let mut v = Vec::new();
    for col in COLUMNS.iter() {
        let Some(t) = table(col.table) else { continue };
        let mut own = false;
        for face in col.faces {
            if let Face::Family {
                name,
                kind,
                collector,
                scale,
                help,
                label,
            } = *face
            {
                own = true;
                v.push(Family {
                    label,
                    ..family(
                        col,
                        name.to_string(),
                        kind,
                        collector,
                        scale,
                        help.to_string(),
                    )
                });
            }
        }
        if let (false, Some(collector)) = (own, t.collector) {
            v.push(derived(col, collector));
        }
    }
    v.sort_by_key(|f| f.part);
    v
});

/// A label of an info series: its name, how it is shown, its column and
/// table.
pub type Label = (&'static str, Shown, &'static Column, &'static Table);
/// The labels of an info series, in order.
pub type Labels = Vec<Label>;

/// The labels the columns' faces give the info series `info`.
pub fn info_labels(info: Info) -> Labels {
    let mut v: Vec<(u8, &'static str, Shown, &'static Column, &'static Table)> = Vec::new();
    for col in COLUMNS.iter() {
        let Some(t) = table(col.table) else { continue };
        for face in col.faces {
            if let Face::Label {
                info: i,
                at,
                name,
                shown,
            } = *face
                && i == info
            {
                v.push((at, name, shown, col, t));
            }
        }
    }
    v.sort_by_key(|l| l.0);
    v.into_iter().map(|(_, n, s, c, t)| (n, s, c, t)).collect()
}

/// The node info series (name, help): its labels are [`NODE_LABELS`].
pub const NODE_INFO: (&str, &str) = (
    "infiniband_node",
    "A node of the fabric: its name (node-name-map, else description), description, type, vendor and device IDs and LID.",
);
/// The port info series (name, help): its labels are [`PORT_LABELS`].
pub const PORT_INFO: (&str, &str) = (
    "infiniband_port",
    "A port: its name, GUID, link peer, width, speed and state.",
);

/// The subnet info series (name, help): its labels are
/// [`SUBNET_LABELS`], the first (`subnet`) also the label of every
/// family of the `subnet` collector.
pub const SUBNET_INFO: (&str, &str) = (
    "infiniband_subnet",
    "A subnet the agent sweeps: its prefix, its master Subnet Manager (GUID, LID, priority, state), the local port it is swept through and the standby ports.",
);

/// The node info series' labels after `node_guid`.
pub static NODE_LABELS: LazyLock<Labels> = LazyLock::new(|| info_labels(Info::Node));
/// The port info series' labels after `node_guid` and `port`.
pub static PORT_LABELS: LazyLock<Labels> = LazyLock::new(|| info_labels(Info::Port));
/// The agent's build info series (name, help): its label is
/// [`BUILD_LABELS`].
pub const BUILD_INFO: (&str, &str) = ("infiniband_agent_build", "The agent's version.");
/// The build info series' labels.
pub static BUILD_LABELS: LazyLock<Labels> = LazyLock::new(|| info_labels(Info::Build));
/// The subnet info series' labels.
pub static SUBNET_LABELS: LazyLock<Labels> = LazyLock::new(|| info_labels(Info::Subnet));
/// The labels of a port's link peer, on the `health` collector's per-port
/// families.
pub static PEER_LABELS: LazyLock<Labels> = LazyLock::new(|| info_labels(Info::Peer));

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_total_has_a_family_and_names_are_unique() {
        use crate::fabric::hc::HC;
        for (k, _) in HC.iter().enumerate() {
            let f = FAMILIES.iter().filter(|f| f.column.source == Source::Hc(k));
            assert_eq!(f.count(), 1, "slot {k}");
        }
        // A family several columns share labels each column's samples
        // apart.
        let names: Vec<_> = FAMILIES
            .iter()
            .map(|f| (f.name.as_str(), f.label))
            .collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len(), "family names are unique");
        for f in FAMILIES.iter() {
            assert!(
                f.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                f.name
            );
            assert!(!f.name.ends_with("_total"), "{}", f.name);
        }
        // A scrape writes the parts in order.
        for w in FAMILIES.windows(2) {
            assert!(w[0].part <= w[1].part, "{} {}", w[0].name, w[1].name);
        }
    }

    /// An info series' labels are numbered 1, 2, ... once each, and are
    /// all read from one row (node or port).
    #[test]
    fn info_labels_are_numbered_once_each() {
        use crate::mib::index::IndexScheme;
        for (info, n, index) in [
            (Info::Node, 7, IndexScheme::NodeGuid),
            (Info::Port, 8, IndexScheme::NodeGuidPort),
            (Info::Subnet, 9, IndexScheme::Subnet),
            (Info::Build, 1, IndexScheme::Scalar),
            (Info::Peer, 2, IndexScheme::NodeGuidPort),
        ] {
            let labels = info_labels(info);
            assert_eq!(labels.len(), n, "{info:?}");
            for (i, (name, _, col, t)) in labels.iter().enumerate() {
                assert_eq!(t.index, index, "{name}");
                let at = col.faces.iter().find_map(|f| match *f {
                    Face::Label { at, name: n, .. } if n == *name => Some(at),
                    _ => None,
                });
                assert_eq!(at, Some(i as u8 + 1), "{name}");
            }
        }
    }

    #[test]
    fn names_are_snake_case_in_base_units() {
        assert_eq!(snake_case("FECCorrectableBlocks"), "fec_correctable_blocks");
        assert_eq!(snake_case("VL15Dropped"), "vl15_dropped");
        assert_eq!(snake_case("SLRcvFECN"), "sl_rcv_fecn");
        assert_eq!(snake_case("SwHOQLimitDiscards"), "sw_hoq_limit_discards");
        assert_eq!(
            derived_name("pmPortVLOpData", true),
            "port_vl_op_data_bytes"
        );
        assert_eq!(
            derived_name("pmSwPortVLCongestion", false),
            "port_sw_port_vl_congestion"
        );
        assert_eq!(derived_name("pmPortPktRcvFECN", false), "port_pkt_rcv_fecn");
        let f = |n: &str| FAMILIES.iter().find(|f| f.name == n).cloned();
        let vl = f("infiniband_port_vl_op_data_bytes").unwrap();
        assert_eq!(
            (vl.scale, vl.lane, vl.collector),
            (Scale::Times(4), Some("vl"), Collector::Vl)
        );
        let tx = f("infiniband_port_transmit_data_bytes").unwrap();
        assert_eq!(tx.column.name, "pmPortHCOutOctets");
        assert_eq!((tx.kind, tx.collector), (Kind::Counter, Collector::Traffic));
        assert_eq!(
            f("infiniband_port_symbol_errors").unwrap().collector,
            Collector::Errors
        );
        assert_eq!(
            f("infiniband_port_fec_corrected_symbols")
                .unwrap()
                .collector,
            Collector::Fec
        );
        assert_eq!(
            f("infiniband_port_xmit_time_cong").unwrap().collector,
            Collector::Congestion
        );
    }

    #[test]
    fn collectors_by_name_and_default() {
        for c in Collector::ALL {
            assert_eq!(Collector::from_name(c.name()), Some(c));
        }
        let d = Collectors::defaults();
        assert!(d.has(Collector::Errors) && !d.has(Collector::Vl));
        assert!(d.has(Collector::Health));
        assert_eq!(d.names().count(), 9);
    }
}
