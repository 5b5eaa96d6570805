//! This host's local ports and the subnets they reach: which ports sweep
//! which subnet, and when the sweep moves to a standby port. Pure: the
//! ports are given as they were seen (sysfs, then the SM read through each
//! port), the time is passed in, and what happens comes back as values
//! ([`Event`]) for the caller to log and notify.
//!
//! [`group`] turns the ports seen and what the configuration asks for
//! ([`Wanted`]) into subnets: two ports with the same subnet prefix and the
//! same master SM are one subnet ([`SubnetKey`]), swept once through its
//! first active port, the others standby. Configured planes keep their
//! order, their names and their ports.
//!
//! [`FailoverMachine`] follows the subnets from then on: fed each look at the
//! ports ([`FailoverMachine::ports`]) and each SM read ([`FailoverMachine::sm`]), it says
//! at a subnet's next sweep ([`FailoverMachine::sweep`]) which port to sweep
//! through, moving to the first standby that is up once the sweeping port
//! is seen down or gone (its CA vanished from sysfs: hot-unplugged, driver
//! reloaded), and when none is left.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ib::Guid;
use crate::ib::subnet::{DEFAULT_PREFIX, LocalPort, MAX_SUBNETS, SmInfo, SmState, SubnetKey};
use crate::transport::umad::SysfsPort;

/// How long a subnet may go without a master SM before that is an event
/// ([`Change::NoMasterSm`]): a standby opensm takes over once its polls of
/// the master have failed `polling_retry_number` times
/// `sminfo_polling_timeout` (4 x 10 s by default), so a failover of the SM
/// itself is not reported as a subnet without one.
pub const NO_MASTER_GRACE: Duration = Duration::from_secs(45);

/// PortState Active (sysfs `4: ACTIVE`, PortInfo's 4).
pub const PORT_ACTIVE: u8 = 4;

/// One local port as the host showed it at one look.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    pub port: LocalPort,
    /// Logical state: 1 Down, 2 Init, 3 Armed, 4 Active (0: not known).
    pub state: u8,
    /// The subnet prefix (the port's GID 0).
    pub prefix: u64,
    /// The master SM's port GUID as read through this port (zero: none
    /// read).
    pub sm_guid: Guid,
}

impl Seen {
    /// A port as sysfs shows it, with the master SM's GUID read through
    /// it (zero: none read).
    pub fn from_sysfs(p: &SysfsPort, sm_guid: Guid) -> Seen {
        Seen {
            port: LocalPort::new(&p.ca, p.port),
            state: p.state,
            prefix: p.prefix,
            sm_guid,
        }
    }

    /// A port as read through it by directed-route SMPs
    /// ([`crate::fabric::discover::read_subnet`]): its state, prefix and
    /// master SM (zero: none answered as master).
    pub fn from_read(port: LocalPort, read: &crate::fabric::discover::SubnetRead) -> Seen {
        Seen {
            port,
            state: read.state,
            prefix: read.prefix,
            sm_guid: read.sm.map_or(Guid(0), |s| s.guid),
        }
    }

    pub fn active(&self) -> bool {
        self.state == PORT_ACTIVE
    }

    /// The subnet this port is on.
    pub fn key(&self) -> SubnetKey {
        SubnetKey {
            prefix: self.prefix,
            sm_guid: self.sm_guid,
        }
    }
}

/// A plane the configuration names: its ports, the first the one it is
/// swept through while it is up, the others standby.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plane {
    pub name: Option<Arc<str>>,
    pub ports: Vec<LocalPort>,
}

/// Which local ports the agent sweeps through (`[umad]`).
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Wanted {
    /// Nothing configured: every active local port, grouped by subnet.
    #[default]
    Every,
    /// The old `ca`/`port` keys: the first port that matches, Active
    /// first, else one with its link up (Init, Armed); a list of one.
    First {
        ca: Option<Arc<str>>,
        port: Option<u8>,
    },
    /// `ports`: these ports, grouped by subnet in their order.
    Ports(Vec<LocalPort>),
    /// `[[umad.plane]]`: each plane one subnet, in this order.
    Planes(Vec<Plane>),
}

/// One subnet and the local ports it is swept through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Group {
    pub name: Option<Arc<str>>,
    pub key: SubnetKey,
    /// None: none of its ports is active.
    pub sweeping: Option<LocalPort>,
    pub standby: Vec<LocalPort>,
}

/// What [`group`] made of the ports seen.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Grouping {
    /// At most [`MAX_SUBNETS`], by index.
    pub subnets: Vec<Group>,
    /// Ports asked for that are not active (or not there): their subnet is
    /// not known yet.
    pub idle: Vec<LocalPort>,
    /// Ports of a configured plane that are active on another subnet than
    /// the plane's sweeping port (they are not its standby): the port, the
    /// plane's index and the subnet the port is on.
    pub stray: Vec<(LocalPort, usize, SubnetKey)>,
    /// Subnets past [`MAX_SUBNETS`], left out.
    pub left_out: usize,
}

/// Group the ports seen into subnets as `wanted` asks.
pub fn group(wanted: &Wanted, seen: &[Seen]) -> Grouping {
    let find = |p: &LocalPort| seen.iter().find(|s| &s.port == p);
    let mut out = Grouping::default();
    match wanted {
        Wanted::Every => by_key(seen.iter(), &mut out),
        Wanted::Ports(ports) => {
            let mut listed = Vec::new();
            for p in ports {
                match find(p) {
                    Some(s) if s.active() => listed.push(s),
                    _ => out.idle.push(p.clone()),
                }
            }
            by_key(listed.into_iter(), &mut out);
        }
        Wanted::First { ca, port } => {
            let matching: Vec<&Seen> = seen
                .iter()
                .filter(|s| {
                    ca.as_ref().is_none_or(|c| *c == s.port.ca)
                        && port.is_none_or(|n| n == s.port.port)
                })
                .collect();
            let chosen = matching
                .iter()
                .find(|s| s.active())
                .or_else(|| matching.iter().find(|s| (2..=3).contains(&s.state)));
            match chosen {
                Some(s) => out.subnets.push(Group {
                    name: None,
                    key: s.key(),
                    sweeping: Some(s.port.clone()),
                    standby: Vec::new(),
                }),
                None => out.idle.extend(matching.iter().map(|s| s.port.clone())),
            }
        }
        Wanted::Planes(planes) => {
            for (i, plane) in planes.iter().enumerate() {
                let first = plane.ports.iter().filter_map(find).find(|s| s.active());
                let key = first.map_or_else(
                    || SubnetKey {
                        prefix: plane
                            .ports
                            .iter()
                            .find_map(find)
                            .map_or(DEFAULT_PREFIX, |s| s.prefix),
                        sm_guid: Guid(0),
                    },
                    Seen::key,
                );
                let mut standby = Vec::new();
                for p in &plane.ports {
                    if first.is_some_and(|f| &f.port == p) {
                        continue;
                    }
                    match find(p) {
                        Some(s) if s.active() && s.key() != key => {
                            out.stray.push((p.clone(), i, s.key()));
                        }
                        _ => standby.push(p.clone()),
                    }
                    if find(p).is_none_or(|s| !s.active()) {
                        out.idle.push(p.clone());
                    }
                }
                out.subnets.push(Group {
                    name: plane.name.clone(),
                    key,
                    sweeping: first.map(|s| s.port.clone()),
                    standby,
                });
            }
        }
    }
    if out.subnets.len() > MAX_SUBNETS {
        out.left_out = out.subnets.len() - MAX_SUBNETS;
        out.subnets.truncate(MAX_SUBNETS);
    }
    out
}

/// The active ports among `seen`, one subnet per key in the order each
/// key is first seen; the first port of each sweeps it.
fn by_key<'a>(seen: impl Iterator<Item = &'a Seen>, out: &mut Grouping) {
    for s in seen.filter(|s| s.active()) {
        match out.subnets.iter_mut().find(|g| g.key == s.key()) {
            Some(g) => g.standby.push(s.port.clone()),
            None => out.subnets.push(Group {
                name: None,
                key: s.key(),
                sweeping: Some(s.port.clone()),
                standby: Vec::new(),
            }),
        }
    }
}

/// What the failover state machine says happened, and on which subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    /// The index of the subnet it happened on.
    pub subnet: u8,
    pub change: Change,
}

/// What happened on a subnet.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// The sweep moves from `from` (down or gone) to the standby `to`;
    /// after [`Change::NoPortLeft`], `from` is the port last swept through
    /// (and may be `to` itself, come back).
    FailedOver { from: LocalPort, to: LocalPort },
    /// None of the subnet's ports is up: it is not swept until one is.
    NoPortLeft { last: LocalPort },
    /// A port of the subnet vanished from sysfs (its CA hot-unplugged, the
    /// driver reloaded).
    PortGone { port: LocalPort },
    /// The subnet's master SM is another than before.
    SmChanged { old: SmInfo, new: SmInfo },
    /// No master SM answered on the subnet for the grace period; `last`
    /// the master known before.
    NoMasterSm { last: Option<SmInfo> },
}

/// The events the subnets' machines emitted that the notifier has not
/// taken yet, shared by the drivers that feed the machines and the
/// notifier that acts on them (at most [`Emitted::MAX`] are kept: the
/// oldest go first), and which subnets a machine decides for.
#[derive(Debug, Default)]
pub struct Emitted {
    inner: std::sync::Mutex<(u64, std::collections::VecDeque<Event>)>,
}

impl Emitted {
    pub const MAX: usize = 1024;

    fn lock(&self) -> std::sync::MutexGuard<'_, (u64, std::collections::VecDeque<Event>)> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A machine decides what happens to subnet `index` (its master SM,
    /// its local ports): no one else works it out.
    pub fn decides(&self, index: usize) {
        if index < 64 {
            self.lock().0 |= 1 << index;
        }
    }

    /// The subnets a machine decides for, a bit per index.
    pub fn decided(&self) -> u64 {
        self.lock().0
    }

    pub fn push(&self, e: Event) {
        let mut g = self.lock();
        if g.1.len() >= Self::MAX {
            g.1.pop_front();
        }
        g.1.push_back(e);
    }

    /// Every event emitted since the last take, in order.
    pub fn take(&self) -> Vec<Event> {
        self.lock().1.drain(..).collect()
    }
}

/// How a port was last seen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Look {
    Up,
    Down,
    Gone,
}

#[derive(Clone, Debug)]
struct Subnet {
    name: Option<Arc<str>>,
    /// Its prefix, and its master SM's GUID as last known.
    key: SubnetKey,
    sweeping: Option<LocalPort>,
    /// The port last swept through, while none is.
    last: Option<LocalPort>,
    standby: Vec<LocalPort>,
    /// The master SM last known: kept through a handover (the grace),
    /// let go once [`Change::NoMasterSm`] is said.
    master: Option<SmInfo>,
    /// Since when no master SM answered, and whether that was said.
    no_master: Option<(Instant, bool)>,
}

/// The subnets' local ports and master SMs over time.
#[derive(Clone, Debug)]
pub struct FailoverMachine {
    subnets: Vec<Subnet>,
    looks: HashMap<LocalPort, Look>,
    /// How long a subnet may have no master SM before [`Change::NoMasterSm`]
    /// (an SM handover takes a few seconds).
    grace: Duration,
}

/// What [`FailoverMachine::view`] says of a subnet now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Now {
    pub name: Option<Arc<str>>,
    pub key: SubnetKey,
    pub sm: Option<SmInfo>,
    pub sweeping: Option<LocalPort>,
    pub standby: Vec<LocalPort>,
}

impl FailoverMachine {
    /// Start from a grouping: every sweeping port counts as up, every
    /// standby as down until a look says otherwise.
    pub fn new(groups: &[Group], grace: Duration) -> FailoverMachine {
        let mut looks = HashMap::new();
        let subnets = groups
            .iter()
            .take(MAX_SUBNETS)
            .map(|g| {
                if let Some(p) = &g.sweeping {
                    looks.insert(p.clone(), Look::Up);
                }
                for p in &g.standby {
                    looks.entry(p.clone()).or_insert(Look::Down);
                }
                Subnet {
                    name: g.name.clone(),
                    key: g.key,
                    sweeping: g.sweeping.clone(),
                    last: None,
                    standby: g.standby.clone(),
                    master: None,
                    no_master: None,
                }
            })
            .collect();
        FailoverMachine {
            subnets,
            looks,
            grace,
        }
    }

    pub fn len(&self) -> usize {
        self.subnets.len()
    }

    pub fn is_empty(&self) -> bool {
        self.subnets.is_empty()
    }

    /// A look at the local ports (every port sysfs lists): a subnet's port
    /// missing from `seen` is gone. Says which ports are newly gone; the
    /// sweep moves at the subnet's next [`FailoverMachine::sweep`].
    pub fn ports(&mut self, seen: &[Seen]) -> Vec<Event> {
        let mut events = Vec::new();
        for (i, s) in self.subnets.iter().enumerate() {
            for p in s.sweeping.iter().chain(&s.standby) {
                let look = match seen.iter().find(|x| &x.port == p) {
                    None => Look::Gone,
                    Some(x) if x.active() => Look::Up,
                    Some(_) => Look::Down,
                };
                let before = self.looks.insert(p.clone(), look);
                if look == Look::Gone && before != Some(Look::Gone) {
                    events.push(Event {
                        subnet: i as u8,
                        change: Change::PortGone { port: p.clone() },
                    });
                }
            }
        }
        events
    }

    fn up(&self, p: &LocalPort) -> bool {
        self.looks.get(p) == Some(&Look::Up)
    }

    /// The start of `subnet`'s sweep: the port to sweep it through (None:
    /// none is up, skip this sweep), and the failover it took.
    pub fn sweep(&mut self, subnet: usize) -> (Option<LocalPort>, Vec<Event>) {
        let Some(s) = self.subnets.get(subnet) else {
            return (None, Vec::new());
        };
        if let Some(p) = &s.sweeping
            && self.up(p)
        {
            return (Some(p.clone()), Vec::new());
        }
        let to = s.standby.iter().position(|p| self.up(p));
        let s = &mut self.subnets[subnet];
        let index = subnet as u8;
        let mut events = Vec::new();
        match (to, s.sweeping.take()) {
            (Some(i), from) => {
                let to = s.standby.remove(i);
                // The port swept through until now waits at the end of the
                // line; one last swept before none was left is in it.
                if let Some(old) = &from {
                    s.standby.push(old.clone());
                }
                if let Some(old) = from.or_else(|| s.last.take()) {
                    events.push(Event {
                        subnet: index,
                        change: Change::FailedOver {
                            from: old,
                            to: to.clone(),
                        },
                    });
                }
                s.last = None;
                s.sweeping = Some(to);
            }
            (None, Some(from)) => {
                // The port last swept through is first in line again: it
                // is the one it comes back to while the others stay down.
                events.push(Event {
                    subnet: index,
                    change: Change::NoPortLeft { last: from.clone() },
                });
                s.standby.insert(0, from.clone());
                s.last = Some(from);
            }
            (None, None) => {}
        }
        (s.sweeping.clone(), events)
    }

    /// The master SM read on `subnet` at `now` (None: none answered, or the
    /// SM that answered is not master).
    pub fn sm(&mut self, subnet: usize, now: Instant, read: Option<SmInfo>) -> Vec<Event> {
        let grace = self.grace;
        let Some(s) = self.subnets.get_mut(subnet) else {
            return Vec::new();
        };
        let index = subnet as u8;
        match read.filter(|r| r.state == SmState::Master) {
            Some(new) => {
                let told = s.no_master.take().is_some_and(|(_, told)| told);
                // The subnet keeps the key it was first known by: a
                // handover changes its master SM, not what labels it.
                if s.key.sm_guid.0 == 0 {
                    s.key.sm_guid = new.guid;
                }
                let old = s.master.replace(new);
                match old {
                    // Another master, or one again after none was said.
                    Some(old) if old.guid != new.guid || told => vec![Event {
                        subnet: index,
                        change: Change::SmChanged { old, new },
                    }],
                    _ => Vec::new(),
                }
            }
            None => {
                let (since, told) = s.no_master.get_or_insert((now, false));
                if !*told && now.saturating_duration_since(*since) >= grace {
                    *told = true;
                    return vec![Event {
                        subnet: index,
                        change: Change::NoMasterSm { last: s.master },
                    }];
                }
                Vec::new()
            }
        }
    }

    /// What is known of `subnet` now: its first key; its master SM until
    /// none answered for the grace (a handover shows the old master until
    /// the new one answers).
    pub fn view(&self, subnet: usize) -> Option<Now> {
        let s = self.subnets.get(subnet)?;
        Some(Now {
            name: s.name.clone(),
            key: s.key,
            sm: s
                .master
                .filter(|_| !s.no_master.is_some_and(|(_, told)| told)),
            sweeping: s.sweeping.clone(),
            standby: s.standby.clone(),
        })
    }
}

#[cfg(test)]
mod tests;
