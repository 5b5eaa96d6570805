//! Link and node health verdicts: what the health evaluator
//! (`crate::health`) concluded from the history of the sweeps, in the form
//! every face of the agent reads them (the MIB, the notifications, the
//! metrics, the status page, `ibpm-agentx health`). None of them computes a
//! verdict of its own.
//!
//! A verdict belongs to a link: both ends of it carry it, each with its
//! peer. It records since when it stands, when its condition was last
//! seen and how many times it was raised; it clears only after the
//! recovery window passes with the condition absent.
//!
//! The times of the verdicts are milliseconds of the evaluator's timeline:
//! the wall clock as it read when the evaluator started, moved on by the
//! monotonic clock since (so a step of the wall clock ages no window).
//! [`Verdicts::wall`] turns one into wall-clock milliseconds since the
//! UNIX epoch, the form every face shows and the state file keeps.

use std::sync::Arc;

use super::Guid;

/// The conditions a verdict may name, most severe first (the order of the
/// page and of [`PortVerdict::worst`]). `as usize` indexes
/// [`CONDITIONS`] and [`PortVerdict::marks`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Condition {
    /// A port that was Active is now Down (not disabled).
    LinkLost,
    /// The node's PMA missed k of the last n sweeps while the rest of the
    /// fabric answered: a verdict on the node ([`NodeVerdict`]), which the
    /// ports of the node show.
    Unresponsive,
    /// The link went down and came back N times within the flap window.
    Flapping,
    /// Error rates or the symbol BER above their thresholds.
    Erroring,
    /// The link runs below the width or speed both ends support.
    Degraded,
    /// XmitWait takes more than the threshold's share of the time.
    Congested,
}

/// How many conditions there are.
pub const CONDITION_COUNT: usize = 6;

/// One condition, declared once: the name the configuration, the metrics
/// (`condition` label) and the JSON use, the title the page and the
/// terminal show, and the suffix of its MIB column (`pmPortHealth<mib>`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConditionDef {
    pub condition: Condition,
    pub name: &'static str,
    pub title: &'static str,
    pub mib: &'static str,
    pub doc: &'static str,
}

/// Every condition, in [`Condition`] order.
pub const CONDITIONS: [ConditionDef; CONDITION_COUNT] = [
    ConditionDef {
        condition: Condition::LinkLost,
        name: "link_lost",
        title: "link lost",
        mib: "LinkLost",
        doc: "a port that was Active is now Down",
    },
    ConditionDef {
        condition: Condition::Unresponsive,
        name: "unresponsive",
        title: "unresponsive",
        mib: "Unresponsive",
        doc: "the node's PMA missed k of the last n sweeps while the fabric answered",
    },
    ConditionDef {
        condition: Condition::Flapping,
        name: "flapping",
        title: "flapping",
        mib: "Flapping",
        doc: "the link went down and came back N times within the flap window",
    },
    ConditionDef {
        condition: Condition::Erroring,
        name: "erroring",
        title: "erroring",
        mib: "Erroring",
        doc: "error rates or the symbol BER above their thresholds",
    },
    ConditionDef {
        condition: Condition::Degraded,
        name: "degraded",
        title: "degraded",
        mib: "Degraded",
        doc: "the link runs below the width or speed both ends support",
    },
    ConditionDef {
        condition: Condition::Congested,
        name: "congested",
        title: "congested",
        mib: "Congested",
        doc: "XmitWait takes more than the threshold's share of the time",
    },
];

impl Condition {
    pub const ALL: [Condition; CONDITION_COUNT] = [
        Condition::LinkLost,
        Condition::Unresponsive,
        Condition::Flapping,
        Condition::Erroring,
        Condition::Degraded,
        Condition::Congested,
    ];

    pub fn def(self) -> &'static ConditionDef {
        &CONDITIONS[self as usize]
    }

    pub fn name(self) -> &'static str {
        self.def().name
    }

    /// Its bit in a mask of conditions.
    pub const fn bit(self) -> u8 {
        1 << self as u8
    }

    /// The condition named `name` ([`ConditionDef::name`]).
    pub fn from_name(name: &str) -> Option<Condition> {
        CONDITIONS
            .iter()
            .find(|d| d.name == name)
            .map(|d| d.condition)
    }

    /// The names of every condition, for an error that lists them.
    pub fn names() -> String {
        CONDITIONS.map(|d| d.name).join(", ")
    }

    /// The conditions of a mask, most severe first.
    pub fn of_mask(mask: u8) -> impl Iterator<Item = Condition> {
        Condition::ALL
            .into_iter()
            .filter(move |c| mask & c.bit() != 0)
    }
}

/// In JSON a condition is its name.
impl serde::Serialize for Condition {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// A name that is no condition's is refused, naming the known ones.
impl<'de> serde::Deserialize<'de> for Condition {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Condition, D::Error> {
        let name = String::deserialize(d)?;
        Condition::from_name(&name).ok_or_else(|| {
            serde::de::Error::custom(format!(
                "unknown condition `{}`; known: {}",
                name.escape_debug(),
                Condition::names()
            ))
        })
    }
}

/// One standing verdict of one condition on one port.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Mark {
    /// When the verdict was raised.
    pub since: u64,
    /// The last evaluation that saw the condition.
    pub last_seen: u64,
    /// The condition holds at the latest evaluation (false: the verdict
    /// stands in its recovery window).
    pub holding: bool,
}

impl Mark {
    /// A verdict raised at `since` whose condition still held at
    /// `last_seen`.
    pub fn holding(since: u64, last_seen: u64) -> Mark {
        Mark {
            since,
            last_seen,
            holding: true,
        }
    }
}

/// What the evaluator says of one port: its standing verdicts and its
/// flaps. A port has an entry while a verdict stands on it or while it
/// flapped or had a verdict within `forget_after`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PortVerdict {
    pub guid: Guid,
    pub port: u8,
    /// The port at the far end of the link, as last seen up.
    pub peer: Option<(Guid, u8)>,
    /// The standing verdict of each condition ([`Condition`] order;
    /// [`Condition::Unresponsive`] is the node's, in [`NodeVerdict`]).
    pub marks: [Option<Mark>; CONDITION_COUNT],
    /// How many times each condition was raised on the port (a verdict
    /// that cleared and came back counts again), since the agent started
    /// or the state file says.
    pub raised: [u32; CONDITION_COUNT],
    /// Flaps counted on the port in all.
    pub flaps: u64,
    /// When the last flap was counted.
    pub last_flap: Option<u64>,
    /// The last time a verdict was raised, held or cleared, or a flap
    /// counted: the entry is forgotten `forget_after` past it.
    pub last_change: u64,
}

impl PortVerdict {
    /// The conditions with a standing verdict, as a mask.
    pub fn mask(&self) -> u8 {
        Condition::ALL
            .iter()
            .filter(|c| self.marks[**c as usize].is_some())
            .fold(0, |m, c| m | c.bit())
    }

    pub fn mark(&self, c: Condition) -> Option<&Mark> {
        self.marks[c as usize].as_ref()
    }

    /// A verdict stands on the port.
    pub fn is_unhealthy(&self) -> bool {
        self.marks.iter().any(Option::is_some)
    }

    /// The most severe standing condition.
    pub fn worst(&self) -> Option<Condition> {
        Condition::of_mask(self.mask()).next()
    }

    /// The earliest `since` of the standing verdicts.
    pub fn since(&self) -> Option<u64> {
        self.marks.iter().flatten().map(|m| m.since).min()
    }
}

/// What the evaluator says of one node's PMA.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeVerdict {
    pub guid: Guid,
    /// Sweeps the PMA missed of the last `of` counted.
    pub missed: u8,
    pub of: u8,
    /// The standing unresponsive verdict.
    pub unresponsive: Option<Mark>,
    /// How many times it was raised.
    pub raised: u32,
    /// The last time it was raised, held or cleared, or a sweep was
    /// missed: the entry is forgotten `forget_after` past it.
    pub last_change: u64,
}

/// Every verdict of one evaluation, sorted by (GUID, port) and by GUID:
/// published beside the snapshot it was made from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Verdicts {
    /// The sweep evaluated (0: none yet).
    pub sweep: u64,
    /// When it was evaluated (wall-clock milliseconds).
    pub at: u64,
    /// The wall clock minus the timeline when it was evaluated, in
    /// milliseconds ([`Verdicts::wall`]).
    pub wall_offset_ms: i64,
    /// How long the evaluation took, in microseconds.
    pub took_us: u64,
    /// Shared with the evaluator: publishing copies no entry.
    pub ports: Arc<[PortVerdict]>,
    pub nodes: Arc<[NodeVerdict]>,
}

impl Verdicts {
    /// A time of the timeline (a mark's, a flap's, a change's) as
    /// wall-clock milliseconds since the UNIX epoch.
    pub fn wall(&self, t: u64) -> u64 {
        t.saturating_add_signed(self.wall_offset_ms)
    }

    pub fn port(&self, guid: Guid, port: u8) -> Option<&PortVerdict> {
        self.ports
            .binary_search_by(|v| (v.guid, v.port).cmp(&(guid, port)))
            .ok()
            .map(|i| &self.ports[i])
    }

    pub fn node(&self, guid: Guid) -> Option<&NodeVerdict> {
        self.nodes
            .binary_search_by_key(&guid, |v| v.guid)
            .ok()
            .map(|i| &self.nodes[i])
    }

    /// The node's standing unresponsive verdict.
    pub fn unresponsive(&self, guid: Guid) -> Option<Mark> {
        self.node(guid)?.unresponsive
    }

    /// The verdict of `c` standing on port `port` of node `guid`: the
    /// port's own mark (`v`, its entry), or, for
    /// [`Condition::Unresponsive`], its node's: a node's verdict shows on
    /// its ports. The one rule every face reads.
    fn standing_on(&self, guid: Guid, v: Option<&PortVerdict>, c: Condition) -> Option<Mark> {
        match c {
            Condition::Unresponsive => self.unresponsive(guid),
            _ => v?.mark(c).copied(),
        }
    }

    /// The verdict of `c` standing on the port of entry `v`
    /// ([`Verdicts::standing_on`]).
    pub fn standing(&self, v: &PortVerdict, c: Condition) -> Option<Mark> {
        self.standing_on(v.guid, Some(v), c)
    }

    /// The verdict of `c` standing on a port with or without an entry (an
    /// unresponsive node's port without one shows the node's).
    pub fn standing_at(&self, guid: Guid, port: u8, c: Condition) -> Option<Mark> {
        self.standing_on(guid, self.port(guid, port), c)
    }

    /// Whether `c` stands on the port of entry `v`.
    pub fn shows(&self, v: &PortVerdict, c: Condition) -> bool {
        self.standing(v, c).is_some()
    }

    /// How many times `c` was raised on the port of entry `v`: the
    /// port's own count, or, for [`Condition::Unresponsive`], its
    /// node's.
    pub fn raised(&self, v: &PortVerdict, c: Condition) -> u32 {
        self.raised_on(v.guid, Some(v), c)
    }

    /// How many times `c` was raised on a port with or without an entry.
    pub fn raised_at(&self, guid: Guid, port: u8, c: Condition) -> u32 {
        self.raised_on(guid, self.port(guid, port), c)
    }

    fn raised_on(&self, guid: Guid, v: Option<&PortVerdict>, c: Condition) -> u32 {
        match c {
            Condition::Unresponsive => self.node(guid).map_or(0, |n| n.raised),
            _ => v.map_or(0, |v| v.raised[c as usize]),
        }
    }

    /// The ports with a verdict entry on which some condition stands
    /// ([`Verdicts::shows`]).
    pub fn unhealthy(&self) -> impl Iterator<Item = &PortVerdict> {
        self.ports
            .iter()
            .filter(|v| Condition::ALL.into_iter().any(|c| self.shows(v, c)))
    }

    /// Ports with a verdict entry on which each condition stands
    /// ([`Verdicts::shows`]): the one count of unhealthy ports (the page,
    /// `/api/health`, the metrics, the event log's summaries).
    pub fn counts(&self) -> [usize; CONDITION_COUNT] {
        let mut n = [0; CONDITION_COUNT];
        for v in self.ports.iter() {
            for c in Condition::ALL {
                n[c as usize] += usize::from(self.shows(v, c));
            }
        }
        n
    }
}

/// An operator's acknowledgement (an SNMP SET): clear the standing verdicts
/// of a port's link, all of them or one condition's. A condition that
/// still holds is raised again by the next evaluation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ack {
    pub guid: Guid,
    pub port: u8,
    pub condition: Option<Condition>,
}

impl Ack {
    /// The conditions it clears, as a mask.
    pub fn mask(self) -> u8 {
        self.condition.map_or(u8::MAX, Condition::bit)
    }

    /// Applies it to the entries of the ports and the nodes: the marks it
    /// names go from both ends of the port's link, and, when it names
    /// unresponsive, from the node. The one rule of an acknowledgement:
    /// what a reader sees at once ([`Verdicts::acknowledged`]) and what
    /// the evaluator takes in.
    pub fn apply(self, ports: &mut Arc<[PortVerdict]>, nodes: &mut Arc<[NodeVerdict]>) {
        let mask = self.mask();
        let at = (self.guid, self.port);
        let peer = ports
            .iter()
            .find(|e| (e.guid, e.port) == at)
            .and_then(|e| e.peer);
        let mut out = ports.to_vec();
        for e in &mut out {
            if (e.guid, e.port) == at || Some((e.guid, e.port)) == peer {
                clear(e, mask);
            }
        }
        *ports = out.into();
        if mask & Condition::Unresponsive.bit() != 0 {
            let mut out = nodes.to_vec();
            for n in out.iter_mut().filter(|n| n.guid == self.guid) {
                n.unresponsive = None;
            }
            *nodes = out.into();
        }
    }
}

impl Verdicts {
    /// The verdicts with `ack` applied ([`Ack::apply`]): what a reader
    /// sees until the evaluator takes the acknowledgement in. None when no
    /// verdict it names stands on its port (or, for unresponsive, its
    /// node).
    pub fn acknowledged(&self, ack: Ack) -> Option<Verdicts> {
        let mask = ack.mask();
        let on_port = self
            .port(ack.guid, ack.port)
            .is_some_and(|v| v.mask() & mask != 0);
        let on_node =
            mask & Condition::Unresponsive.bit() != 0 && self.unresponsive(ack.guid).is_some();
        if !on_port && !on_node {
            return None;
        }
        let mut out = self.clone();
        ack.apply(&mut out.ports, &mut out.nodes);
        Some(out)
    }
}

/// Remove the marks of `mask` from an entry.
fn clear(e: &mut PortVerdict, mask: u8) {
    for c in Condition::of_mask(mask) {
        e.marks[c as usize] = None;
    }
}

/// Civil date and time (UTC) of a wall-clock time in milliseconds since the
/// UNIX epoch: (year, month, day, hour, minute, second, deciseconds), for
/// the MIB's DateAndTime and the page.
pub fn civil(ms: u64) -> (i64, u8, u8, u8, u8, u8, u8) {
    let secs = (ms / 1000) as i64;
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    // Days to a civil date (the proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (
        year,
        month,
        day,
        (rem / 3600) as u8,
        (rem % 3600 / 60) as u8,
        (rem % 60) as u8,
        ((ms % 1000) / 100) as u8,
    )
}

/// The wall-clock time in milliseconds since the UNIX epoch of a civil
/// date and time (UTC) as [`civil`] gives it: its inverse.
pub fn from_civil(y: i64, month: u8, day: u8, h: u8, mi: u8, s: u8, ds: u8) -> u64 {
    let (m, d) = (i64::from(month), i64::from(day));
    let y = y - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + i64::from(h) * 3600 + i64::from(mi) * 60 + i64::from(s);
    u64::try_from(secs).unwrap_or(0) * 1000 + u64::from(ds) * 100
}

/// `YYYY-MM-DDTHH:MM:SSZ` of a wall-clock time in milliseconds.
pub fn rfc3339(ms: u64) -> String {
    let (y, mo, d, h, mi, s, _) = civil(ms);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_declared_in_their_order() {
        for (i, d) in CONDITIONS.iter().enumerate() {
            assert_eq!(d.condition as usize, i);
            assert_eq!(Condition::from_name(d.name), Some(d.condition));
        }
        assert_eq!(Condition::from_name("nope"), None);
        let m = Condition::Congested.bit() | Condition::LinkLost.bit();
        let v: Vec<_> = Condition::of_mask(m).collect();
        assert_eq!(v, [Condition::LinkLost, Condition::Congested]);
    }

    #[test]
    fn civil_dates_match_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        // 2000-02-29 (a leap day of a year divisible by 400).
        assert_eq!(rfc3339(951_782_400_000), "2000-02-29T00:00:00Z");
        // 2026-11-29T09:33:22Z, 1_795_944_802 s.
        assert_eq!(rfc3339(1_795_944_802_500), "2026-11-29T09:33:22Z");
        assert_eq!(civil(1_795_944_802_500).6, 5);
        // Back again, to the decisecond.
        for ms in [0, 951_782_400_000, 1_795_944_802_500, 1_700_000_000_123] {
            let (y, mo, d, h, mi, s, ds) = civil(ms);
            assert_eq!(from_civil(y, mo, d, h, mi, s, ds), ms / 100 * 100, "{ms}");
        }
    }

    #[test]
    fn an_acknowledgement_clears_both_ends_and_only_a_standing_verdict() {
        let mark = Mark::holding(1, 2);
        let mut a = PortVerdict {
            guid: Guid(1),
            port: 1,
            peer: Some((Guid(2), 3)),
            ..Default::default()
        };
        a.marks[Condition::Flapping as usize] = Some(mark);
        a.marks[Condition::Erroring as usize] = Some(mark);
        let mut b = a.clone();
        (b.guid, b.port, b.peer) = (Guid(2), 3, Some((Guid(1), 1)));
        let v = Verdicts {
            ports: vec![a, b].into(),
            ..Default::default()
        };
        let ack = Ack {
            guid: Guid(2),
            port: 3,
            condition: Some(Condition::Flapping),
        };
        let out = v.acknowledged(ack).unwrap();
        for e in out.ports.iter() {
            assert_eq!(e.mask(), Condition::Erroring.bit());
        }
        assert!(out.acknowledged(ack).is_none(), "nothing left to clear");
        let all = Ack {
            condition: None,
            ..ack
        };
        assert!(out.acknowledged(all).unwrap().unhealthy().next().is_none());
        assert!(v.acknowledged(Ack { port: 9, ..ack }).is_none());
    }

    /// An acknowledgement clears the marks it names from both ends of the
    /// link, and the node's unresponsive verdict when it names it; other
    /// nodes and ports keep theirs.
    #[test]
    fn an_acknowledgement_applies_to_the_link_and_the_node() {
        let mark = Some(Mark::default());
        let end = |g: u64, p: u8, peer: (u64, u8)| {
            let mut v = PortVerdict {
                guid: Guid(g),
                port: p,
                peer: Some((Guid(peer.0), peer.1)),
                ..Default::default()
            };
            v.marks[Condition::Flapping as usize] = mark;
            v.marks[Condition::Degraded as usize] = mark;
            v
        };
        let mut ports: Arc<[PortVerdict]> =
            Arc::new([end(1, 1, (2, 3)), end(1, 2, (3, 1)), end(2, 3, (1, 1))]);
        let node = |g: u64| NodeVerdict {
            guid: Guid(g),
            unresponsive: mark,
            ..Default::default()
        };
        let mut nodes: Arc<[NodeVerdict]> = Arc::new([node(1), node(2)]);
        let ack = Ack {
            guid: Guid(1),
            port: 1,
            condition: Some(Condition::Flapping),
        };
        ack.apply(&mut ports, &mut nodes);
        let masks: Vec<u8> = ports.iter().map(PortVerdict::mask).collect();
        let (f, d) = (Condition::Flapping.bit(), Condition::Degraded.bit());
        assert_eq!(masks, [d, f | d, d], "both ends of 1/1's link, not 1/2");
        assert!(nodes.iter().all(|n| n.unresponsive.is_some()));
        let all = Ack {
            condition: None,
            ..ack
        };
        all.apply(&mut ports, &mut nodes);
        assert_eq!(ports[0].mask(), 0);
        assert!(nodes[0].unresponsive.is_none() && nodes[1].unresponsive.is_some());
    }

    /// Which ports are unhealthy has one answer: [`Verdicts::counts`] and
    /// [`Verdicts::unhealthy`] both count a port whose only verdict is its
    /// node's unresponsive one. The rule that won is what every face shows
    /// ([`Verdicts::shows`]: the MIB's pmPortHealthUnresponsive, the
    /// metrics' condition series, the report's links all show the node's
    /// verdict on its ports), so a count agrees with the rows it counts;
    /// counting a port's own marks only left such a port out.
    #[test]
    fn an_unresponsive_nodes_port_is_unhealthy_in_every_count() {
        let quiet = PortVerdict {
            guid: Guid(1),
            port: 1,
            ..Default::default()
        };
        let v = Verdicts {
            ports: Arc::new([quiet]),
            nodes: Arc::new([NodeVerdict {
                guid: Guid(1),
                unresponsive: Some(Mark::default()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        let counted: usize = v.counts().iter().sum();
        assert_eq!(counted, 1);
        assert_eq!(v.unhealthy().count(), 1);
        assert_eq!(
            v.standing_at(Guid(1), 9, Condition::Unresponsive),
            Some(Mark::default()),
            "a port without an entry shows its node's verdict"
        );
    }

    /// A node's unresponsive verdict shows on its ports, and is counted
    /// on them, with the ports' own verdicts.
    #[test]
    fn a_nodes_verdict_shows_and_counts_on_its_ports() {
        let mut lost = PortVerdict {
            guid: Guid(1),
            port: 2,
            ..Default::default()
        };
        lost.marks[Condition::LinkLost as usize] = Some(Mark::default());
        let quiet = PortVerdict {
            guid: Guid(1),
            port: 1,
            ..Default::default()
        };
        let v = Verdicts {
            ports: Arc::new([quiet.clone(), lost.clone()]),
            nodes: Arc::new([NodeVerdict {
                guid: Guid(1),
                unresponsive: Some(Mark::default()),
                ..Default::default()
            }]),
            ..Default::default()
        };
        assert!(v.shows(&quiet, Condition::Unresponsive));
        assert!(!v.shows(&quiet, Condition::LinkLost));
        assert!(v.shows(&lost, Condition::Unresponsive) && v.shows(&lost, Condition::LinkLost));
        assert_eq!(v.raised(&quiet, Condition::Unresponsive), 0);
        let n = v.counts();
        assert_eq!(n[Condition::Unresponsive as usize], 2);
        assert_eq!(n[Condition::LinkLost as usize], 1);
    }
}
