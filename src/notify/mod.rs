//! Notifications: what the agent tells an NMS without being asked.
//!
//! - [`KINDS`]: every NOTIFICATION-TYPE under `{ pm 0 }` with its family
//!   (storm control counts per family) and the objects it carries;
//!   [`OBJECT_NAMES`]: the accessible-for-notify objects under
//!   `pmNotifyObjects` (`pmMIBObjects 15`).
//! - [`thresholds`]: the counters that have rate thresholds, walked from
//!   [`crate::fabric::hc::HC`], with rdma-core's `error_thresholds` defaults.
//! - [`eval::Evaluator`]: a pure state machine over published snapshots
//!   (no clock, no I/O): node lost/found, port state changes, RMON
//!   rising/falling hysteresis, discontinuities, sweep overruns, and the
//!   per-sweep limit of each family.
//! - [`subnets`]: the subnet notifications, from a snapshot's subnets
//!   against the ones before (pure).
//! - [`send`]: the edge that hands the notifications to snmpd (AgentX
//!   Notify) or, without snmpd, sends SNMPv2c traps to configured sinks.

pub mod eval;
pub mod log;
pub mod plan;
pub mod rules;
pub mod send;
pub mod subnets;

use crate::ib::Guid;
use crate::ib::subnet::SubnetView;
use crate::mib::schema::{Column, PM_OBJECTS, PM_ROOT, PlanCol, Source, SubnetCol};
use crate::mib::tables::COLUMNS;
use crate::mib::{Oid, Value, VarBind};

pub use crate::fabric::cache::NotifyFigures;
pub use eval::{Evaluation, Evaluator};
pub use rules::{NodeMatch, NotifyConfig, ThresholdRule, thresholds};

/// `snmpTrapOID.0` (SNMPv2-MIB): the first varbind of a notification
/// (RFC 3416 4.2.6; net-snmp's master refuses a Notify without it and adds
/// `sysUpTime.0` itself when the subagent leaves it out).
pub const SNMP_TRAP_OID: [u32; 11] = [1, 3, 6, 1, 6, 3, 1, 1, 4, 1, 0];
/// `sysUpTime.0`, first in an SNMPv2 trap this agent sends itself.
pub const SYS_UPTIME: [u32; 9] = [1, 3, 6, 1, 2, 1, 1, 3, 0];
/// `pmNotifyObjects` under `pmMIBObjects`.
pub const T_NOTIFY_OBJECTS: u32 = 20;

/// What storm control counts together: at most
/// [`NotifyConfig::limit_per_sweep`] notifications of one family per sweep.
/// `as usize` indexes per-family counters and [`Family::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Family {
    Node,
    Port,
    Threshold,
    Discontinuity,
    Sweep,
    Subnet,
}

pub const FAMILIES: usize = 6;

impl Family {
    pub const ALL: [Family; FAMILIES] = [
        Family::Node,
        Family::Port,
        Family::Threshold,
        Family::Discontinuity,
        Family::Sweep,
        Family::Subnet,
    ];

    /// The families' names in the log, in index order.
    const NAMES: [&str; FAMILIES] = [
        "node",
        "port",
        "threshold",
        "discontinuity",
        "sweep",
        "subnet",
    ];

    pub fn name(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// An accessible-for-notify object: its number under `pmNotifyObjects`
/// is the discriminant.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Obj {
    NodeGuid = 1,
    NodeDescription = 2,
    PortNum = 3,
    PeerNodeGuid = 4,
    PeerPortNum = 5,
    PeerDescription = 6,
    OldPortState = 7,
    NewPortState = 8,
    Counter = 9,
    Value = 10,
    Threshold = 11,
    Window = 12,
    SweepDuration = 13,
    SweepInterval = 14,
    LinkDegraded = 15,
    LinkWidth = 16,
    LinkSpeed = 17,
    LinkWidthExpected = 18,
    LinkSpeedExpected = 19,
    HealthCondition = 20,
    HealthRaised = 21,
    OldSmGuid = 22,
    OldLocalPort = 23,
    PlanKind = 24,
    PlannedNodeGuid = 25,
    PlannedPortNum = 26,
    PlannedName = 27,
    PlanText = 28,
    PlanRaised = 29,
}

/// The MIB names of [`Obj`] 1..=29, in number order.
pub const OBJECT_NAMES: [&str; 29] = [
    "pmNotifyNodeGuid",
    "pmNotifyNodeDescription",
    "pmNotifyPortNum",
    "pmNotifyPeerNodeGuid",
    "pmNotifyPeerPortNum",
    "pmNotifyPeerDescription",
    "pmNotifyOldPortState",
    "pmNotifyNewPortState",
    "pmNotifyCounter",
    "pmNotifyValue",
    "pmNotifyThreshold",
    "pmNotifyWindow",
    "pmNotifySweepDuration",
    "pmNotifySweepInterval",
    "pmNotifyLinkDegraded",
    "pmNotifyLinkWidth",
    "pmNotifyLinkSpeed",
    "pmNotifyLinkWidthExpected",
    "pmNotifyLinkSpeedExpected",
    "pmNotifyHealthCondition",
    "pmNotifyHealthRaised",
    "pmNotifyOldSmGuid",
    "pmNotifyOldLocalPort",
    "pmNotifyPlanKind",
    "pmNotifyPlannedNodeGuid",
    "pmNotifyPlannedPortNum",
    "pmNotifyPlannedName",
    "pmNotifyPlanText",
    "pmNotifyPlanRaised",
];

impl Obj {
    pub fn name(self) -> &'static str {
        OBJECT_NAMES[self as usize - 1]
    }

    /// The varbind name: the object's OID with instance `.0`.
    pub fn oid(self) -> Oid {
        let mut v = PM_OBJECTS.to_vec();
        v.extend([T_NOTIFY_OBJECTS, self as u32, 0]);
        Oid(v)
    }
}

/// A notification the agent sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    NodeLost,
    NodeFound,
    PortStateChange,
    ThresholdRising,
    ThresholdFalling,
    Discontinuity,
    SweepOverrun,
    LinkDegraded,
    LinkRecovered,
    PortUnhealthy,
    PortHealthy,
    NodeForgotten,
    SubnetMasterChanged,
    SubnetNoMaster,
    SubnetFailover,
    LinkNotAsPlanned,
    LinkAsPlanned,
    SubnetNotSwept,
    SubnetSwept,
}

/// One NOTIFICATION-TYPE: name, number under `{ pm 0 }` (the SNMPv1
/// specific-trap number), family and the objects it carries, in order:
/// its `pmNotifyObjects`, then its columns of the subnet's row in
/// pmSubnetTable.
#[derive(Clone, Copy, Debug)]
pub struct KindDef {
    pub kind: Kind,
    pub name: &'static str,
    pub number: u32,
    pub family: Family,
    pub objects: &'static [Obj],
    pub subnet_objects: &'static [SubnetCol],
}

const PORT_OBJS: [Obj; 8] = [
    Obj::NodeGuid,
    Obj::NodeDescription,
    Obj::PortNum,
    Obj::OldPortState,
    Obj::NewPortState,
    Obj::PeerNodeGuid,
    Obj::PeerPortNum,
    Obj::PeerDescription,
];

/// A port notification's objects: the port and its peer (node GUID,
/// description, port number of each end), then its own.
macro_rules! link_end_objs {
    ($($own:ident),* $(,)?) => {
        &[
            Obj::NodeGuid,
            Obj::NodeDescription,
            Obj::PortNum,
            Obj::PeerNodeGuid,
            Obj::PeerPortNum,
            Obj::PeerDescription,
            $(Obj::$own),*
        ]
    };
}

const THRESHOLD_OBJS: &[Obj] = link_end_objs![Counter, Value, Threshold, Window];

const LINK_OBJS: &[Obj] = link_end_objs![
    LinkDegraded,
    LinkWidth,
    LinkSpeed,
    LinkWidthExpected,
    LinkSpeedExpected,
];

const HEALTH_OBJS: &[Obj] = link_end_objs![HealthCondition, HealthRaised];

/// What a plan notification carries: the port, what the plan has there,
/// what was found (the peer), the words and the count.
const PLAN_OBJS: [Obj; 12] = [
    Obj::NodeGuid,
    Obj::NodeDescription,
    Obj::PortNum,
    Obj::PlanKind,
    Obj::PlannedNodeGuid,
    Obj::PlannedPortNum,
    Obj::PlannedName,
    Obj::PeerNodeGuid,
    Obj::PeerPortNum,
    Obj::PeerDescription,
    Obj::PlanText,
    Obj::PlanRaised,
];

/// What a subnet notification says of the subnet's master SM.
const SM_OBJS: [SubnetCol; 6] = [
    SubnetCol::Name,
    SubnetCol::Prefix,
    SubnetCol::SmGuid,
    SubnetCol::SmLid,
    SubnetCol::SmPriority,
    SubnetCol::SmState,
];

/// Every notification, in number order.
pub const KINDS: [KindDef; 19] = [
    KindDef {
        kind: Kind::NodeLost,
        name: "pmNodeLost",
        number: 1,
        family: Family::Node,
        objects: &[Obj::NodeGuid, Obj::NodeDescription],
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::NodeFound,
        name: "pmNodeFound",
        number: 2,
        family: Family::Node,
        objects: &[Obj::NodeGuid, Obj::NodeDescription],
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::PortStateChange,
        name: "pmPortStateChange",
        number: 3,
        family: Family::Port,
        objects: &PORT_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::ThresholdRising,
        name: "pmCounterThresholdRising",
        number: 4,
        family: Family::Threshold,
        objects: THRESHOLD_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::ThresholdFalling,
        name: "pmCounterThresholdFalling",
        number: 5,
        family: Family::Threshold,
        objects: THRESHOLD_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::Discontinuity,
        name: "pmCounterDiscontinuity",
        number: 6,
        family: Family::Discontinuity,
        objects: &[Obj::NodeGuid, Obj::NodeDescription, Obj::PortNum],
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::SweepOverrun,
        name: "pmSweepOverrun",
        number: 7,
        family: Family::Sweep,
        objects: &[Obj::SweepDuration, Obj::SweepInterval],
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::LinkDegraded,
        name: "pmLinkDegraded",
        number: 8,
        family: Family::Port,
        objects: LINK_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::LinkRecovered,
        name: "pmLinkRecovered",
        number: 9,
        family: Family::Port,
        objects: LINK_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::PortUnhealthy,
        name: "pmPortUnhealthy",
        number: 10,
        family: Family::Port,
        objects: HEALTH_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::PortHealthy,
        name: "pmPortHealthy",
        number: 11,
        family: Family::Port,
        objects: HEALTH_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::NodeForgotten,
        name: "pmNodeForgotten",
        number: 12,
        family: Family::Node,
        objects: &[Obj::NodeGuid, Obj::NodeDescription],
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::SubnetMasterChanged,
        name: "pmSubnetMasterChanged",
        number: 13,
        family: Family::Subnet,
        objects: &[Obj::OldSmGuid],
        subnet_objects: &SM_OBJS,
    },
    KindDef {
        kind: Kind::SubnetNoMaster,
        name: "pmSubnetNoMaster",
        number: 14,
        family: Family::Subnet,
        objects: &[Obj::OldSmGuid],
        subnet_objects: &SM_OBJS,
    },
    KindDef {
        kind: Kind::SubnetFailover,
        name: "pmSubnetFailover",
        number: 15,
        family: Family::Subnet,
        objects: &[Obj::OldLocalPort],
        subnet_objects: &[
            SubnetCol::Name,
            SubnetCol::Prefix,
            SubnetCol::LocalCa,
            SubnetCol::LocalPort,
            SubnetCol::StandbyPorts,
        ],
    },
    KindDef {
        kind: Kind::LinkNotAsPlanned,
        name: "pmLinkNotAsPlanned",
        number: 16,
        family: Family::Port,
        objects: &PLAN_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::LinkAsPlanned,
        name: "pmLinkAsPlanned",
        number: 17,
        family: Family::Port,
        objects: &PLAN_OBJS,
        subnet_objects: &[],
    },
    KindDef {
        kind: Kind::SubnetNotSwept,
        name: "pmSubnetNotSwept",
        number: 18,
        family: Family::Subnet,
        objects: &[],
        subnet_objects: &SWEEP_OBJS,
    },
    KindDef {
        kind: Kind::SubnetSwept,
        name: "pmSubnetSwept",
        number: 19,
        family: Family::Subnet,
        objects: &[],
        subnet_objects: &SWEEP_OBJS,
    },
];

/// The subnet's columns the sweep-state notifications carry.
const SWEEP_OBJS: [SubnetCol; 6] = [
    SubnetCol::Name,
    SubnetCol::Prefix,
    SubnetCol::SweepState,
    SubnetCol::LocalCa,
    SubnetCol::LocalPort,
    SubnetCol::Nodes,
];

/// The pmSubnetTable column of `c`.
pub fn subnet_column(c: SubnetCol) -> Option<&'static Column> {
    COLUMNS.iter().find(|k| k.source == Source::Subnet(c))
}

impl Kind {
    pub fn def(self) -> &'static KindDef {
        KINDS
            .iter()
            .find(|d| d.kind == self)
            .expect("every kind is declared in KINDS")
    }

    /// The notification's OID: `pm.0.N`.
    pub fn oid(self) -> Oid {
        let mut v = PM_ROOT.to_vec();
        v.extend([0, self.def().number]);
        Oid(v)
    }
}

/// The far end of a port's link.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Peer {
    pub guid: Guid,
    pub port: u8,
    pub description: String,
}

/// One notification with everything its objects show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub kind: Kind,
    pub node: Guid,
    pub description: String,
    pub port: u8,
    pub peer: Option<Peer>,
    /// pmPortState values before and after (0: unknown).
    pub old_state: u32,
    pub new_state: u32,
    /// The threshold's counter name ([`rules::ThresholdDef::name`]).
    pub counter: &'static str,
    pub value: u64,
    pub threshold: u64,
    pub window_s: u32,
    pub sweep_ms: u64,
    pub interval_ms: u64,
    /// pmPortLinkDegraded, the active and the expected width and speed
    /// (MIB values, 0: unknown).
    pub link: LinkFacts,
    /// A health verdict's condition.
    pub condition: Option<crate::ib::health::Condition>,
    /// The subnet a subnet notification is about, as the snapshot shows it.
    pub subnet: Option<Box<SubnetView>>,
    /// Before the change: the subnet's master SM (0: none) and the local
    /// port it was swept through (`mlx5_0:1`).
    pub old_sm: Guid,
    pub old_local_port: String,
    /// The mismatch with the plan a plan notification is about.
    pub plan: Option<Box<crate::ib::cabling::PlanVerdict>>,
}

/// What a link notification says of the link, as MIB values (0: unknown).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LinkFacts {
    pub health: u32,
    pub width: u32,
    pub speed: u32,
    pub width_expected: u32,
    pub speed_expected: u32,
}

impl Event {
    /// An event about a node (other fields empty).
    pub fn node(kind: Kind, node: Guid, description: &str) -> Event {
        Event {
            kind,
            node,
            description: description.to_string(),
            port: 0,
            peer: None,
            old_state: 0,
            new_state: 0,
            counter: "",
            value: 0,
            threshold: 0,
            window_s: 0,
            sweep_ms: 0,
            interval_ms: 0,
            link: LinkFacts::default(),
            condition: None,
            subnet: None,
            old_sm: Guid(0),
            old_local_port: String::new(),
            plan: None,
        }
    }

    /// An event about subnet `now`, which was `before`.
    pub fn subnet(kind: Kind, before: &SubnetView, now: &SubnetView) -> Event {
        let mut e = Event::node(kind, Guid(0), "");
        e.old_sm = subnets::master(before).unwrap_or(Guid(0));
        e.old_local_port = before
            .sweeping
            .as_ref()
            .map_or_else(String::new, |p| p.to_string());
        e.subnet = Some(Box::new(now.clone()));
        e
    }

    pub fn family(&self) -> Family {
        self.kind.def().family
    }

    fn value_of(&self, o: Obj) -> Value {
        self.value_or_none(o).unwrap_or(Value::Gauge32(0))
    }

    fn value_or_none(&self, o: Obj) -> Option<Value> {
        let text = |s: &str| Value::OctetString(s.as_bytes()[..s.len().min(64)].to_vec());
        let u32v = |v: u64| Value::Gauge32(u32::try_from(v).unwrap_or(u32::MAX));
        let peer = self.peer.as_ref();
        let plan = self.plan.as_deref();
        Some(match o {
            Obj::NodeGuid => Value::OctetString(self.node.octets().to_vec()),
            Obj::NodeDescription => text(&self.description),
            Obj::PortNum => u32v(self.port.into()),
            Obj::PeerNodeGuid => {
                Value::OctetString(peer.map_or(Guid(0), |p| p.guid).octets().to_vec())
            }
            Obj::PeerPortNum => u32v(peer.map_or(0, |p| p.port).into()),
            Obj::PeerDescription => text(peer.map_or("", |p| p.description.as_str())),
            Obj::OldPortState => Value::Integer(self.old_state as i32),
            Obj::NewPortState => Value::Integer(self.new_state as i32),
            Obj::Counter => text(self.counter),
            Obj::Value => u32v(self.value),
            Obj::Threshold => u32v(self.threshold),
            Obj::Window => u32v(self.window_s.into()),
            Obj::SweepDuration => u32v(self.sweep_ms),
            Obj::SweepInterval => u32v(self.interval_ms),
            Obj::LinkDegraded => Value::Integer(self.link.health as i32),
            Obj::LinkWidth => Value::Integer(self.link.width as i32),
            Obj::LinkSpeed => Value::Integer(self.link.speed as i32),
            Obj::LinkWidthExpected => Value::Integer(self.link.width_expected as i32),
            Obj::LinkSpeedExpected => Value::Integer(self.link.speed_expected as i32),
            Obj::HealthCondition => Value::Integer(self.condition.map_or(0, |c| c as i32 + 1)),
            Obj::HealthRaised => u32v(self.value),
            Obj::OldSmGuid => Value::OctetString(self.old_sm.octets().to_vec()),
            Obj::OldLocalPort => text(&self.old_local_port),
            Obj::PlanKind => Value::Integer(plan.map_or(0, |v| v.kind.def().mib as i32)),
            Obj::PlannedNodeGuid => crate::mib::read::plan_value(PlanCol::PlannedNodeGuid, plan?),
            Obj::PlannedPortNum => crate::mib::read::plan_value(PlanCol::PlannedPortNum, plan?),
            Obj::PlannedName => crate::mib::read::plan_value(PlanCol::PlannedName, plan?),
            Obj::PlanText => crate::mib::read::plan_value(PlanCol::Text, plan?),
            Obj::PlanRaised => u32v(plan.map_or(0, |v| v.raised.into())),
        })
    }

    /// The varbinds of an AgentX Notify: `snmpTrapOID.0` first, then the
    /// notification's objects (snmpd puts its `sysUpTime.0` in front).
    pub fn varbinds(&self) -> Vec<VarBind> {
        let def = self.kind.def();
        let mut v = Vec::with_capacity(def.objects.len() + 1);
        v.push(VarBind {
            name: Oid(SNMP_TRAP_OID.to_vec()),
            value: Value::ObjectIdentifier(self.kind.oid()),
        });
        for o in def.objects {
            v.push(VarBind {
                name: o.oid(),
                value: self.value_of(*o),
            });
        }
        // The subnet's row: each column with the subnet's index
        // (pmSubnetIndex), as the table shows it.
        if let Some(s) = &self.subnet {
            for &c in def.subnet_objects {
                let Some(col) = subnet_column(c) else {
                    continue;
                };
                let mut name = col.oid().to_vec();
                name.push(u32::from(s.index) + 1);
                v.push(VarBind {
                    name: Oid(name),
                    value: crate::mib::read::subnet_value(c, s),
                });
            }
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mib() -> &'static str {
        include_str!("../../mibs/IB-PM-MIB.txt")
    }

    /// The body of `name`'s definition of `what` (`NOTIFICATION-TYPE`,
    /// `OBJECT-TYPE`) up to its `::=` line.
    fn body(name: &str, what: &str) -> String {
        let head = format!("\n{name} {what}");
        let at = mib()
            .find(&head)
            .unwrap_or_else(|| panic!("{name} {what} not in the MIB"));
        let b = &mib()[at..];
        let end = b.find("::=").unwrap();
        b[..end + b[end..].find('\n').unwrap()].to_string()
    }

    #[test]
    fn kinds_match_the_mib_file() {
        // In order of their numbers, each once (a number may be taken by
        // a notification declared elsewhere).
        for (i, d) in KINDS.iter().enumerate() {
            assert!(i == 0 && d.number == 1 || i > 0 && d.number > KINDS[i - 1].number);
            let b = body(d.name, "NOTIFICATION-TYPE");
            assert!(
                b.ends_with(&format!("{{ pmNotifications {} }}", d.number)),
                "{b}"
            );
            let objs = &b[b.find('{').unwrap() + 1..b.find('}').unwrap()];
            let names: Vec<&str> = objs
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            let want: Vec<&str> = d
                .objects
                .iter()
                .map(|o| o.name())
                .chain(
                    d.subnet_objects
                        .iter()
                        .map(|c| subnet_column(*c).expect("a pmSubnetTable column").name),
                )
                .collect();
            assert_eq!(names, want, "OBJECTS of {}", d.name);
            assert_eq!(d.kind.def().name, d.name);
        }
        assert!(mib().contains("\npmNotifications      OBJECT IDENTIFIER ::= { pm 0 }"));
        assert_eq!(
            Kind::ThresholdRising.oid(),
            Oid(vec![1, 3, 6, 1, 3, 117, 0, 4])
        );
    }

    #[test]
    fn objects_match_the_mib_file() {
        for (i, name) in OBJECT_NAMES.iter().enumerate() {
            let b = body(name, "OBJECT-TYPE");
            assert!(b.contains("MAX-ACCESS  accessible-for-notify"), "{b}");
            assert!(
                b.ends_with(&format!("{{ pmNotifyObjects {} }}", i + 1)),
                "{b}"
            );
        }
        assert!(mib().contains(&format!(
            "\npmNotifyObjects      OBJECT IDENTIFIER ::= {{ pmMIBObjects {T_NOTIFY_OBJECTS} }}"
        )));
        assert_eq!(Obj::Window.name(), "pmNotifyWindow");
        assert_eq!(
            Obj::PortNum.oid(),
            Oid(vec![1, 3, 6, 1, 3, 117, 1, 20, 3, 0])
        );
    }

    #[test]
    fn varbinds_start_with_the_trap_oid() {
        let mut e = Event::node(Kind::NodeLost, Guid(0x0002_c903_0000_1234), "sw1");
        e.port = 3;
        let v = e.varbinds();
        assert_eq!(v[0].name, Oid(SNMP_TRAP_OID.to_vec()));
        assert_eq!(v[0].value, Value::ObjectIdentifier(Kind::NodeLost.oid()));
        assert_eq!(v.len(), 3);
        assert_eq!(
            v[1].value,
            Value::OctetString(vec![0, 2, 0xc9, 3, 0, 0, 0x12, 0x34])
        );
        assert_eq!(v[2].value, Value::OctetString(b"sw1".to_vec()));
    }
}
