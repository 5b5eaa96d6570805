//! The subnet notifications (pure). For a subnet whose local ports a
//! failover machine follows ([`crate::fabric::local::FailoverMachine`], umad),
//! the machine decides: pmSubnetMasterChanged, pmSubnetNoMaster (only
//! once no master answered for the grace, so a handover is a change of
//! master and nothing more) and pmSubnetFailover are its events
//! ([`of_machine`]). For the others (the simulator's planes) they are
//! worked out by comparing a snapshot's subnets with the ones before; and
//! for every subnet, pmSubnetNotSwept and pmSubnetSwept, as its
//! publication judged it. A subnet is matched by its index; one seen for
//! the first time calls for none.

use crate::fabric::local;
use crate::ib::Guid;
use crate::ib::subnet::{SmState, SubnetView};

use super::{Event, Kind};

/// The port GUID of a subnet's master SM: None while none answers SMInfo
/// or the one that answers is not master.
pub(super) fn master(v: &SubnetView) -> Option<Guid> {
    v.sm.filter(|s| s.state == SmState::Master).map(|s| s.guid)
}

/// The notifications the change from `prev` to `next` calls for, in
/// `next`'s order: for each subnet in both,
/// - pmSubnetMasterChanged when its master SM's GUID differs (also when a
///   subnet that had none has one again);
/// - pmSubnetNoMaster when it had a master and has none;
/// - pmSubnetFailover when the local port it was swept through is no
///   longer the one (a standby took over, or none is left up);
/// - pmSubnetNotSwept when it stops being swept
///   ([`crate::ib::subnet::SweepState`]), pmSubnetSwept when it is again.
///
/// `decided`: the subnets a machine decides for (a bit per index), of
/// which only the sweep state is compared.
pub fn events(prev: &[SubnetView], next: &[SubnetView], decided: u64) -> Vec<Event> {
    let mut out = Vec::new();
    for n in next {
        let Some(p) = prev.iter().find(|p| p.index == n.index) else {
            continue;
        };
        let by_machine = n.index < 64 && decided & (1 << n.index) != 0;
        if by_machine {
            sweep_state(p, n, &mut out);
            continue;
        }
        let (was, now) = (master(p), master(n));
        if was != now {
            let kind = match now {
                Some(_) => Kind::SubnetMasterChanged,
                None => Kind::SubnetNoMaster,
            };
            out.push(Event::subnet(kind, p, n));
        }
        if p.sweeping.is_some() && p.sweeping != n.sweeping {
            out.push(Event::subnet(Kind::SubnetFailover, p, n));
        }
        sweep_state(p, n, &mut out);
    }
    out
}

/// pmSubnetNotSwept / pmSubnetSwept when the subnet's sweep state turned.
fn sweep_state(p: &SubnetView, n: &SubnetView, out: &mut Vec<Event>) {
    match (p.sweep_state.is_swept(), n.sweep_state.is_swept()) {
        (true, false) => out.push(Event::subnet(Kind::SubnetNotSwept, p, n)),
        (false, true) => out.push(Event::subnet(Kind::SubnetSwept, p, n)),
        _ => {}
    }
}

/// The notifications the failover machine's `emitted` events call for,
/// each with its subnet's row as `subnets` has it now: a change of
/// master (a handover, or a master again after none) is
/// pmSubnetMasterChanged, no master past the grace pmSubnetNoMaster, a
/// move to a standby port or none left pmSubnetFailover; a port gone is
/// only logged.
pub fn of_machine(emitted: &[local::Event], subnets: &[SubnetView]) -> Vec<Event> {
    let mut out = Vec::new();
    for e in emitted {
        let Some(view) = subnets.iter().find(|v| v.index == e.subnet) else {
            continue;
        };
        let mut n = match &e.change {
            local::Change::SmChanged { old, .. } => {
                let mut n = Event::subnet(Kind::SubnetMasterChanged, view, view);
                n.old_sm = old.guid;
                n
            }
            local::Change::NoMasterSm { last } => {
                let mut n = Event::subnet(Kind::SubnetNoMaster, view, view);
                n.old_sm = last.map_or(Guid(0), |s| s.guid);
                n
            }
            local::Change::FailedOver { from, .. } => {
                let mut n = Event::subnet(Kind::SubnetFailover, view, view);
                n.old_local_port = from.to_string();
                n
            }
            local::Change::NoPortLeft { last } => {
                let mut n = Event::subnet(Kind::SubnetFailover, view, view);
                n.old_local_port = last.to_string();
                n
            }
            local::Change::PortGone { .. } => continue,
        };
        // The row says what the machine decided, whatever the view
        // published since.
        if let (local::Change::SmChanged { new, .. }, Some(row)) =
            (&e.change, n.subnet.as_deref_mut())
        {
            row.sm = Some(*new);
        }
        if let (local::Change::NoMasterSm { .. }, Some(row)) = (&e.change, n.subnet.as_deref_mut())
        {
            row.sm = None;
        }
        out.push(n);
    }
    out
}

#[cfg(test)]
mod tests;
