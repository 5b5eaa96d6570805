//! The subnet notifications, decided by comparing a snapshot's subnets
//! with the ones before (pure): pmSubnetMasterChanged, pmSubnetNoMaster and
//! pmSubnetFailover, each once per change. A subnet is matched by its
//! index; one seen for the first time calls for none.

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
pub fn events(prev: &[SubnetView], next: &[SubnetView]) -> Vec<Event> {
    let mut out = Vec::new();
    for n in next {
        let Some(p) = prev.iter().find(|p| p.index == n.index) else {
            continue;
        };
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
        match (p.sweep_state.is_swept(), n.sweep_state.is_swept()) {
            (true, false) => out.push(Event::subnet(Kind::SubnetNotSwept, p, n)),
            (false, true) => out.push(Event::subnet(Kind::SubnetSwept, p, n)),
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests;
