//! The evaluator's decisions into the event log: the acknowledgements it
//! takes in (the verdicts they clear are the notifier's to write).

use crate::events::{Kind, Log, New};
use crate::fabric::cache::Snapshot;
use crate::ib::health::Ack;

/// Write one record per acknowledgement taken in after `snap`, at wall
/// time `time_ms`.
pub fn acknowledged(log: &Log, snap: &Snapshot, acks: &[Ack], time_ms: u64) {
    let names: Vec<&str> = acks
        .iter()
        .map(|a| snap.node(a.guid).map_or("", |n| n.name()))
        .collect();
    log.write(acks.iter().zip(names).map(|(a, name)| New {
        kind: Some(Kind::VerdictAcknowledged),
        time_ms,
        sweep: snap.sweep,
        guid: a.guid,
        name,
        port: a.port,
        detail: a.condition.map_or("all", |c| c.name()),
        ..Default::default()
    }));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Bounds, Filter};
    use crate::ib::Guid;
    use crate::ib::health::Condition;

    #[test]
    fn each_acknowledgement_is_one_record() {
        let log = Log::new(Bounds::default(), None);
        let acks = [
            Ack {
                guid: Guid(1),
                port: 2,
                condition: Some(Condition::Flapping),
            },
            Ack {
                guid: Guid(1),
                port: 3,
                condition: None,
            },
        ];
        acknowledged(&log, &Snapshot::default(), &acks, 9);
        let got = log.query(&Filter::default());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kind, Kind::VerdictAcknowledged);
        assert_eq!(&*got[0].detail, "flapping");
        assert_eq!(&*got[1].detail, "all");
    }
}
