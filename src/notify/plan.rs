//! pmLinkNotAsPlanned and pmLinkAsPlanned: the mismatches with the plan
//! raised and cleared between two comparisons (pure), one per port and
//! kind, so that each end of a miswired cable says what it has and what
//! it should have. They come from the verdicts the snapshot carries
//! ([`crate::fabric::cache::Snapshot::plan`]); the notifier compares
//! nothing with the plan itself.

use super::{Event, Kind, Peer};
use crate::ib::cabling::{PlanVerdict, PlanVerdicts};

fn event(kind: Kind, v: &PlanVerdict) -> Event {
    let mut e = Event::node(kind, v.guid, v.name.as_deref().unwrap_or(""));
    e.port = v.port;
    e.peer = v.found.map(|(guid, port)| Peer {
        guid,
        port,
        description: v.found_name.as_deref().unwrap_or("").to_string(),
    });
    e.plan = Some(Box::new(v.clone()));
    e
}

/// The notifications of the change from `old` to `new`: the cleared
/// first, then the raised (a verdict standing in both with another
/// `since` cleared and was raised again in between).
pub fn events(old: &PlanVerdicts, new: &PlanVerdicts) -> Vec<Event> {
    let same =
        |a: &PlanVerdict, other: Option<&PlanVerdict>| other.is_some_and(|b| b.since == a.since);
    let mut out = Vec::new();
    for o in old.verdicts.iter() {
        if !same(o, new.get(o.key())) {
            out.push(event(Kind::LinkAsPlanned, o));
        }
    }
    for n in new.verdicts.iter() {
        if !same(n, old.get(n.key())) {
            out.push(event(Kind::LinkNotAsPlanned, n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ib::Guid;
    use crate::ib::cabling::PlanSource;
    use crate::mib::{Value, VarBind};
    use crate::notify::Obj;

    fn miswired(since: u64) -> PlanVerdict {
        PlanVerdict {
            since,
            last_seen: since,
            raised: 2,
            ..PlanVerdict::example_miswired()
        }
    }

    fn verdicts(v: Vec<PlanVerdict>) -> PlanVerdicts {
        PlanVerdicts {
            sweep: 1,
            source: Some(PlanSource::Ibnetdiscover),
            verdicts: Arc::from(v),
            ..Default::default()
        }
    }

    fn value(vbs: &[VarBind], o: Obj) -> Value {
        vbs.iter()
            .find(|vb| vb.name == o.oid())
            .unwrap()
            .value
            .clone()
    }

    #[test]
    fn a_raised_mismatch_names_both_peers_and_its_clearing_follows() {
        let none = verdicts(vec![]);
        let one = verdicts(vec![miswired(5)]);
        let raised = events(&none, &one);
        assert_eq!(raised.len(), 1);
        assert_eq!(raised[0].kind, Kind::LinkNotAsPlanned);
        let vbs = raised[0].varbinds();
        assert_eq!(vbs.len(), 13);
        assert_eq!(value(&vbs, Obj::PlanKind), Value::Integer(2));
        assert_eq!(
            value(&vbs, Obj::PlannedNodeGuid),
            Value::OctetString(vec![0, 0, 0, 0, 0, 0, 0, 0x20])
        );
        assert_eq!(value(&vbs, Obj::PlannedPortNum), Value::Gauge32(1));
        assert_eq!(
            value(&vbs, Obj::PlannedName),
            Value::OctetString(b"node0413".to_vec())
        );
        assert_eq!(
            value(&vbs, Obj::PeerNodeGuid),
            Value::OctetString(vec![0, 0, 0, 0, 0, 0, 0, 0x30])
        );
        assert_eq!(
            value(&vbs, Obj::PeerDescription),
            Value::OctetString(b"node0414".to_vec())
        );
        assert_eq!(value(&vbs, Obj::PlanRaised), Value::Gauge32(2));
        assert_eq!(
            value(&vbs, Obj::PlanText),
            Value::OctetString(
                b"leaf07/13 should go to node0413/1; it goes to node0414/1".to_vec()
            )
        );
        // Standing on: nothing new. Gone: pmLinkAsPlanned.
        assert!(events(&one, &verdicts(vec![miswired(5)])).is_empty());
        let cleared = events(&one, &none);
        assert_eq!(cleared.len(), 1);
        assert_eq!(cleared[0].kind, Kind::LinkAsPlanned);
        assert_eq!((cleared[0].node, cleared[0].port), (Guid(0x10), 13));
        // Cleared and raised again in between: both.
        let again = events(&one, &verdicts(vec![miswired(9)]));
        let kinds: Vec<Kind> = again.iter().map(|e| e.kind).collect();
        assert_eq!(kinds, [Kind::LinkAsPlanned, Kind::LinkNotAsPlanned]);
    }
}
