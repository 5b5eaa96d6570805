//! Every metric family the endpoint serves, declared once. A family is a
//! MIB column under a Prometheus name: its values are read through the
//! MIB's read path ([`crate::mib::read`]) from the same snapshot, so a
//! scrape and an SNMP walk of one sweep show the same numbers. The 64-bit
//! totals, the port's link and the agent's own figures are named here one
//! line each; the optional attributes' counters (VL, SL, lanes, details,
//! congestion, FEC) are named from their MIB columns by one rule
//! ([`derived_name`]).

use std::sync::LazyLock;

use crate::fabric::hc::HC;
use crate::mib::schema::{Column, Source, Table};
use crate::mib::tables::{COLUMNS, table};
use crate::pm::optional::Lane;

/// What kind of series a family is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Counter,
    Gauge,
}

/// A group of families a scrape can ask for (`collect[]=NAME`) and the
/// configuration can turn on (`metrics.collectors`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Collector {
    /// Data and packets, XmitWait.
    Traffic,
    /// The error counters of PortCounters (64-bit totals).
    Errors,
    /// PortRcvConCtrl and PortXmitConCtrl (FECN, BECN, congestion time).
    Congestion,
    /// The FEC mode and PortExtendedSpeedsCounters' totals.
    Fec,
    /// The port's state, width, speed and rate, and its info series.
    Port,
    /// The node's info series and whether it answered the last sweep.
    Node,
    /// The agent's own figures: sweeps, MADs, the SNMP and HTTP endpoints.
    Agent,
    /// PortRcvErrorDetails, PortXmitDiscardDetails, PortOpRcvCounters and
    /// PortFlowCtlCounters.
    Details,
    /// The per-VL counters (label `vl`).
    Vl,
    /// The per-SL counters (label `sl`).
    Sl,
    /// The per-physical-lane FEC counters (label `lane`).
    Lanes,
    /// The health evaluator's verdicts: per condition, for the ports and
    /// nodes that have one ([`crate::ib::health`]).
    Health,
}

impl Collector {
    pub const ALL: [Collector; 12] = [
        Collector::Traffic,
        Collector::Errors,
        Collector::Congestion,
        Collector::Fec,
        Collector::Port,
        Collector::Node,
        Collector::Agent,
        Collector::Details,
        Collector::Vl,
        Collector::Sl,
        Collector::Lanes,
        Collector::Health,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Collector::Traffic => "traffic",
            Collector::Errors => "errors",
            Collector::Congestion => "congestion",
            Collector::Fec => "fec",
            Collector::Port => "port",
            Collector::Node => "node",
            Collector::Agent => "agent",
            Collector::Details => "details",
            Collector::Vl => "vl",
            Collector::Sl => "sl",
            Collector::Lanes => "lanes",
            Collector::Health => "health",
        }
    }

    /// On unless the configuration says otherwise: everything but the
    /// optional per-lane and detail tables.
    pub const fn default_on(self) -> bool {
        !matches!(
            self,
            Collector::Details | Collector::Vl | Collector::Sl | Collector::Lanes
        )
    }

    pub fn from_name(s: &str) -> Option<Collector> {
        Collector::ALL.into_iter().find(|c| c.name() == s)
    }

    const fn bit(self) -> u16 {
        1 << self as u16
    }
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
        self.0 & c.bit() != 0
    }

    pub fn with(self, c: Collector) -> Collectors {
        Collectors(self.0 | c.bit())
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

/// How a column's value becomes the sample's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scale {
    /// As the MIB shows it.
    One,
    /// Times a factor (4-octet words to bytes: 4; Mb/s to bytes/s: 125,000).
    Times(u64),
    /// Milliseconds shown as seconds.
    MillisToSeconds,
    /// A pmPortLinkSpeedActive value shown as one lane's data rate in
    /// bytes per second (0 when unknown).
    LaneBytesPerSecond,
    /// A DisplayString that is a decimal number (`1.2E-12`), as it is.
    Decimal,
    /// 1 when the MIB's value is at least this, else 0: a yes/no family
    /// over an enumeration.
    AtLeast(u64),
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
}

/// The Prometheus names of the 64-bit totals ([`HC`], by its names), in
/// base units, with their help. Every slot of [`HC`] has one (a test holds
/// it).
#[rustfmt::skip]
const HC_NAMES: &[(&str, &str, &str)] = &[
    ("OutOctets", "port_transmit_data_bytes", "Data octets transmitted on the port (PortXmitData, in bytes)."),
    ("InOctets", "port_receive_data_bytes", "Data octets received on the port (PortRcvData, in bytes)."),
    ("OutPkts", "port_transmit_packets", "Packets transmitted on the port (PortXmitPkts)."),
    ("InPkts", "port_receive_packets", "Packets received on the port (PortRcvPkts)."),
    ("OutUcastPkts", "port_unicast_transmit_packets", "Unicast packets transmitted (PortUnicastXmitPkts)."),
    ("InUcastPkts", "port_unicast_receive_packets", "Unicast packets received (PortUnicastRcvPkts)."),
    ("OutMulticastPkts", "port_multicast_transmit_packets", "Multicast packets transmitted (PortMulticastXmitPkts)."),
    ("InMulticastPkts", "port_multicast_receive_packets", "Multicast packets received (PortMulticastRcvPkts)."),
    ("SymbolErrors", "port_symbol_errors", "Minor link errors detected on a physical lane (SymbolErrorCounter)."),
    ("LinkErrorRecovery", "port_link_error_recovery", "Successful link error recovery processes (LinkErrorRecoveryCounter)."),
    ("LinkDowned", "port_link_downed", "Failed link error recoveries that downed the link (LinkDownedCounter)."),
    ("RcvErrors", "port_receive_errors", "Received packets with an error (PortRcvErrors)."),
    ("RcvRemotePhysErrors", "port_receive_remote_physical_errors", "Received packets marked with the EBP delimiter (PortRcvRemotePhysicalErrors)."),
    ("RcvSwitchRelayErrors", "port_receive_switch_relay_errors", "Received packets discarded because they could not be forwarded (PortRcvSwitchRelayErrors)."),
    ("XmitDiscards", "port_transmit_discards", "Outbound packets discarded (PortXmitDiscards)."),
    ("XmitConstraintErrors", "port_transmit_constraint_errors", "Packets not transmitted for outbound partition or IP version checks (PortXmitConstraintErrors)."),
    ("RcvConstraintErrors", "port_receive_constraint_errors", "Packets received and discarded for inbound partition or IP version checks (PortRcvConstraintErrors)."),
    ("LocalLinkIntegrityErrors", "port_local_link_integrity_errors", "Times the local physical errors exceeded LocalPhyErrors (LocalLinkIntegrityErrors)."),
    ("ExcessiveBufferOverrunErrors", "port_excessive_buffer_overrun_errors", "Times buffer overruns exceeded OverrunErrors (ExcessiveBufferOverrunErrors)."),
    ("VL15Dropped", "port_vl15_dropped", "Incoming VL15 packets dropped for lack of buffers (VL15Dropped)."),
    ("XmitWait", "port_transmit_wait", "Ticks during which the port had data to transmit but none was sent (PortXmitWait)."),
    ("InDiscards", "port_receive_discards", "Received packets dropped for lack of receive buffers (DOCA port_rx_discard_buf_packets)."),
];

/// The families named one by one: MIB column, name, kind, collector,
/// scale, help.
#[rustfmt::skip]
const NAMED: &[(&str, &str, Kind, Collector, Scale, &str)] = {
    use Collector::{Agent, Fec, Port};
    use Kind::{Counter, Gauge};
    use Scale::{AtLeast, Decimal, LaneBytesPerSecond, MillisToSeconds, One, Times};
    &[
        ("pmPortState", "port_state", Gauge, Port, One, "PortInfo PortState: 1 down, 2 init, 3 armed, 4 active, 0 unknown."),
        ("pmPortPhysState", "port_physical_state", Gauge, Port, One, "PortInfo PortPhysicalState: 1 sleep, 2 polling, 3 disabled, 4 training, 5 link up, 6 link error recovery, 7 phy test, 0 unknown."),
        ("pmPortLinkWidthActive", "port_link_width_lanes", Gauge, Port, One, "Lanes of the active link width (0 unknown)."),
        ("pmPortLinkSpeedActive", "port_link_speed_bytes_per_second", Gauge, Port, LaneBytesPerSecond, "Data rate of one lane at the active link speed, in bytes per second (0 unknown)."),
        ("pmPortRateMbps", "port_rate_bytes_per_second", Gauge, Port, Times(125_000), "Data rate of the link (width times lane speed), in bytes per second."),
        ("pmPortLinkWidthExpected", "port_link_width_expected_lanes", Gauge, Port, One, "Lanes of the widest width both ends of the link support and enable (0 unknown)."),
        ("pmPortLinkSpeedExpected", "port_link_speed_expected_bytes_per_second", Gauge, Port, LaneBytesPerSecond, "Data rate of one lane at the fastest speed both ends support and enable, in bytes per second (0 unknown)."),
        ("pmPortLinkDegraded", "port_link_degraded", Gauge, Port, AtLeast(2), "1 while the link runs below the width or speed both ends support and enable, else 0 (also while it is down or a fact is not known); infiniband_port_link_health says which."),
        ("pmPortLinkDegraded", "port_link_health", Gauge, Port, One, "How the link runs against what both ends support and enable: 1 normal, 2 width degraded, 3 speed degraded, 4 both, 0 unknown (down, or a fact not known)."),
        ("pmPortSymbolBer", "port_symbol_bit_error_ratio", Gauge, Port, Decimal, "Symbol errors over the bits received at the active width and speed between the port's last two readings."),
        ("pmPortRawBer", "port_raw_bit_error_ratio", Gauge, Fec, Decimal, "Bit error ratio before FEC (corrected symbols over bits received) between the last two readings."),
        ("pmPortEffectiveBer", "port_effective_bit_error_ratio", Gauge, Fec, Decimal, "Bit error ratio after FEC (uncorrectable blocks over bits received) between the last two readings."),
        ("pmPortFecMode", "port_fec_mode", Gauge, Fec, One, "FEC the link runs: 1 none, 2 FireCode, 3 RS-FEC, 4 low-latency RS-FEC, 0 unknown."),
        ("pmAgentSweeps", "agent_sweeps", Counter, Agent, One, "Sweeps of the fabric published."),
        ("pmAgentLastSweepDuration", "agent_last_sweep_duration_seconds", Gauge, Agent, MillisToSeconds, "Duration of the last sweep."),
        ("pmAgentLastSweepMads", "agent_last_sweep_mads", Gauge, Agent, One, "PM MADs the last sweep sent."),
        ("pmAgentLastSweepTimeouts", "agent_last_sweep_timeouts", Gauge, Agent, One, "PM MADs of the last sweep that timed out."),
        ("pmAgentNodesReachable", "agent_nodes_reachable", Gauge, Agent, One, "Nodes that answered within the configured sweeps."),
        ("pmAgentNodesUnreachable", "agent_nodes_unreachable", Gauge, Agent, One, "Nodes marked unreachable."),
        ("pmAgentNotificationsSent", "agent_notifications_sent", Counter, Agent, One, "Notifications sent."),
        ("pmAgentNotificationsSuppressed", "agent_notifications_suppressed", Counter, Agent, One, "Notifications held back by the per-sweep limit."),
        ("pmAgentNotificationsDropped", "agent_notifications_dropped", Counter, Agent, One, "Notifications lost while snmpd was away."),
        ("pmAgentSnmpInPkts", "agent_snmp_in_packets", Counter, Agent, One, "Datagrams received by the agent's SNMP endpoint."),
        ("pmAgentSnmpOutPkts", "agent_snmp_out_packets", Counter, Agent, One, "Responses and Reports the SNMP endpoint sent."),
    ]
};

/// A family of the `health` collector: no MIB column, it reads the
/// verdicts of the snapshot ([`crate::ib::health::Verdicts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HealthFamily {
    /// The name without `_total`.
    pub name: &'static str,
    pub kind: Kind,
    /// Its labels, as docs/metrics.md lists them.
    pub labels: &'static str,
    pub help: &'static str,
}

/// One 0/1 series per port with a verdict entry and condition.
pub const HEALTH_CONDITION: HealthFamily = HealthFamily {
    name: "infiniband_port_health_condition",
    kind: Kind::Gauge,
    labels: "`peer_node_guid`, `peer_port`, `condition`",
    help: "1 while a verdict of the condition stands on the port's link (until its recovery window passes without it), else 0; only ports with a verdict or one within health.forget_after. unresponsive is the node's verdict.",
};
/// How many times each condition was raised on the port.
pub const HEALTH_RAISED: HealthFamily = HealthFamily {
    name: "infiniband_port_health_condition_raised",
    kind: Kind::Counter,
    labels: "`peer_node_guid`, `peer_port`, `condition`",
    help: "Times a verdict of the condition was raised on the port's link (a verdict that cleared and came back counts again).",
};
/// The flaps counted on the port.
pub const HEALTH_FLAPS: HealthFamily = HealthFamily {
    name: "infiniband_port_health_flaps",
    kind: Kind::Counter,
    labels: "`peer_node_guid`, `peer_port`",
    help: "Flaps counted on the port: LinkDownedCounter rising, or the port seen leaving Active and coming back.",
};
/// When the last flap was counted.
pub const HEALTH_LAST_FLAP: HealthFamily = HealthFamily {
    name: "infiniband_port_health_last_flap_timestamp_seconds",
    kind: Kind::Gauge,
    labels: "`peer_node_guid`, `peer_port`",
    help: "When the last flap of the port was counted (Unix time).",
};
/// A node's unresponsive verdict.
pub const HEALTH_NODE_UNRESPONSIVE: HealthFamily = HealthFamily {
    name: "infiniband_node_health_unresponsive",
    kind: Kind::Gauge,
    labels: "",
    help: "1 while the node's PMA is held unresponsive (it missed k of the last n sweeps while the fabric answered), else 0; only nodes that missed a sweep within health.forget_after.",
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

/// Every family of the `health` collector, in the order a scrape writes
/// them.
pub const HEALTH_FAMILIES: [HealthFamily; 7] = [
    HEALTH_UNHEALTHY_PORTS,
    HEALTH_EVALUATED,
    HEALTH_NODE_UNRESPONSIVE,
    HEALTH_CONDITION,
    HEALTH_RAISED,
    HEALTH_FLAPS,
    HEALTH_LAST_FLAP,
];

/// Optional counters counted in 4-octet words that their MIB column does
/// not say (a lane counter's units do): shown in bytes.
const WORD_COUNTERS: &[&str] = &["pmPortOpRcvData"];

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
    }
}

fn column_named(name: &str) -> Option<&'static Column> {
    COLUMNS.iter().find(|c| c.name == name)
}

/// The collector of an optional attribute's table.
fn optional_collector(t: &Table) -> Option<Collector> {
    Some(match t.name {
        "pmPortVLTable" => Collector::Vl,
        "pmPortSLTable" => Collector::Sl,
        "pmPortLaneTable" => Collector::Lanes,
        "pmPortFecTable" => Collector::Fec,
        "pmPortRcvConCtrlTable" | "pmPortXmitConCtrlTable" => Collector::Congestion,
        "pmPortRcvErrorDetailsTable"
        | "pmPortXmitDiscardDetailsTable"
        | "pmPortOpRcvCountersTable"
        | "pmPortFlowCtlCountersTable" => Collector::Details,
        _ => return None,
    })
}

/// Every family, in the order a scrape writes them.
pub static FAMILIES: LazyLock<Vec<Family>> = LazyLock::new(|| {
    let mut v = Vec::new();
    for (k, h) in HC.iter().enumerate() {
        let (_, name, help) = HC_NAMES
            .iter()
            .find(|(n, _, _)| *n == h.name)
            .copied()
            .unwrap_or(("", "", ""));
        let Some(col) = COLUMNS.iter().find(|c| c.source == Source::Hc(k)) else {
            continue;
        };
        let collector = if h.error || h.name == "InDiscards" {
            Collector::Errors
        } else {
            Collector::Traffic
        };
        v.push(family(
            col,
            name.to_string(),
            Kind::Counter,
            collector,
            Scale::One,
            help.to_string(),
        ));
    }
    for &(col, name, kind, collector, scale, help) in NAMED {
        if let Some(col) = column_named(col) {
            v.push(family(
                col,
                name.to_string(),
                kind,
                collector,
                scale,
                help.to_string(),
            ));
        }
    }
    for col in COLUMNS.iter() {
        let Some(t) = table(col.table) else { continue };
        let Some(collector) = optional_collector(t) else {
            continue;
        };
        if NAMED.iter().any(|n| n.0 == col.name) {
            continue;
        }
        let (words, units) = match col.source {
            Source::Lane(a) => (a.counter.units == "octets/4", a.counter.units),
            _ if WORD_COUNTERS.contains(&col.name) => (true, "octets/4"),
            _ => (false, ""),
        };
        let what = col.name.strip_prefix("pm").unwrap_or(col.name);
        let help = match (words, units) {
            (true, _) => format!(
                "{what} of the port's latest reading, in bytes (the PMA counts 4-octet words)."
            ),
            (false, "") => format!("{what} of the port's latest reading."),
            (false, u) => format!("{what} of the port's latest reading, in {u}."),
        };
        let scale = if words { Scale::Times(4) } else { Scale::One };
        v.push(family(
            col,
            derived_name(col.name, words),
            Kind::Counter,
            collector,
            scale,
            help,
        ));
    }
    v
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_total_and_named_column_has_a_family() {
        for h in HC.iter() {
            assert!(HC_NAMES.iter().any(|n| n.0 == h.name), "{}", h.name);
        }
        assert_eq!(HC_NAMES.len(), HC.len());
        for n in NAMED {
            assert!(column_named(n.0).is_some(), "{}", n.0);
        }
        let names: Vec<&str> = FAMILIES.iter().map(|f| f.name.as_str()).collect();
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
        assert_eq!(d.names().count(), 8);
    }
}
