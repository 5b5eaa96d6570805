//! The Prometheus face of a MIB column, declared on the column's own row
//! in [`super::tables`] (as mib2c keeps one list per table): the families
//! it is shown as (name, kind, collector, scale, help) and the labels of
//! the info series it fills. A face cannot name a column that does not
//! exist: it is part of the column's declaration. The metrics endpoint
//! (`metrics::families`) reads every series through the MIB's read path.

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
    /// The subnets the agent sweeps: their info series (prefix, master
    /// SM, local ports) and their own sweeps (label `subnet`).
    Subnet,
}

impl Collector {
    pub const ALL: [Collector; 13] = [
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
        Collector::Subnet,
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
            Collector::Subnet => "subnet",
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
    /// 1 when the MIB's value is below this, else 0.
    Below(u64),
    /// A TimeStamp shown as Unix time in seconds (from the wall-clock time
    /// of the snapshot's publication); no sample for 0 (never).
    UnixSeconds,
    /// A DateAndTime (UTC) shown as Unix time in seconds, to its
    /// deciseconds.
    DateSeconds,
}

/// Where a table's own families come in a scrape. A scrape writes the
/// node's families with its info series, then the parts in this order,
/// each in OID order; the families named from an optional attribute's
/// columns by one rule (a table's `collector`) come last.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    Node,
    Totals,
    Port,
    Link,
    Fec,
    Agent,
    /// Per subnet (label `subnet`).
    Subnet,
    Derived,
    /// The `health` collector's families: after the agent's own figures,
    /// a row each verdict entry ([`crate::ib::health::Verdicts`]) has,
    /// not every row of the table.
    Health,
}

/// An info series (value 1) whose labels come from columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Info {
    /// `infiniband_node_info`: every node.
    Node,
    /// `infiniband_port_info`: every port of the nodes that answer.
    Port,
    /// `infiniband_subnet_info`: every subnet the agent sweeps; its first
    /// label (`subnet`) labels the subnet's own families.
    Subnet,
    /// `infiniband_agent_build_info`: the agent's version.
    Build,
    /// No series of its own: the far end of a port's link
    /// (`peer_node_guid`, `peer_port`), the labels every per-port family
    /// of the `health` collector carries after `node_guid` and `port`.
    Peer,
}

/// How a label shows its column's value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shown {
    /// A DisplayString as it is.
    Text,
    /// A DisplayString, the label left out when it is empty (a label
    /// added to a series that had none: an empty value is no label).
    TextOrOmit,
    /// A pmSubnetIndex as the subnet's name (pmSubnetName), the label left
    /// out when there is no such subnet.
    SubnetOrOmit,
    /// A subnet prefix (8 octets) as IPv6 text: `fe80::/64`.
    Prefix,
    /// pmSubnetSmState as SMInfo's state name (`master`), `none` when no
    /// SM answered.
    SmState,
    /// A decimal number.
    Number,
    /// A decimal number, empty for 0 (a peer's port: none known).
    NumberOrEmpty,
    /// `0x` and this many lower-case hexadecimal digits.
    Hex(usize),
    /// A GUID: `0x` and 16 lower-case hexadecimal digits.
    Guid,
    /// A GUID, empty for 0 (a peer: none known).
    GuidOrEmpty,
    /// pmNodeType as `ca`, `switch`, `router`.
    NodeType,
    /// An enumeration of [`crate::ib`]'s link enums as its name (empty
    /// when unknown).
    Width,
    Speed,
    PortState,
}

/// One face of a column.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Face {
    /// A family: the column's value per row, as `infiniband_NAME`.
    Family {
        /// The name after `infiniband_`, without `_total`.
        name: &'static str,
        kind: Kind,
        collector: Collector,
        scale: Scale,
        help: &'static str,
        /// A family several columns share: this column's samples carry
        /// the label `.0` valued `.1` (the pmPortHealth columns, one
        /// `condition` each).
        label: Option<(&'static str, &'static str)>,
    },
    /// A label of an info series, the `at`-th (from 1).
    Label {
        info: Info,
        at: u8,
        name: &'static str,
        shown: Shown,
    },
}

/// A gauge family.
pub const fn gauge(n: &'static str, c: Collector, s: Scale, help: &'static str) -> Face {
    family(Kind::Gauge, n, c, s, help)
}

/// A counter family.
pub const fn counter(n: &'static str, c: Collector, s: Scale, help: &'static str) -> Face {
    family(Kind::Counter, n, c, s, help)
}

const fn family(
    kind: Kind,
    name: &'static str,
    collector: Collector,
    scale: Scale,
    help: &'static str,
) -> Face {
    Face::Family {
        name,
        kind,
        collector,
        scale,
        help,
        label: None,
    }
}

impl Face {
    /// The family's samples of this column labelled `name="value"`.
    pub const fn labelled(self, name: &'static str, value: &'static str) -> Face {
        match self {
            Face::Family {
                name: n,
                kind,
                collector,
                scale,
                help,
                ..
            } => Face::Family {
                name: n,
                kind,
                collector,
                scale,
                help,
                label: Some((name, value)),
            },
            Face::Label { .. } => panic!("only a family is labelled"),
        }
    }
}

/// A label of an info series.
pub const fn label(info: Info, at: u8, name: &'static str, shown: Shown) -> Face {
    Face::Label {
        info,
        at,
        name,
        shown,
    }
}
