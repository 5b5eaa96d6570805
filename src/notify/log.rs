//! The notifier's decisions into the event log: every notification a
//! sweep calls for, sent or held back by storm control (marked so), as one
//! record each. The notifier's kinds map onto the log's here, once.

use super::{Evaluation, Event, Kind};
use crate::events::{self, Log, New};
use crate::fabric::cache::Snapshot;
use crate::ib::Guid;

/// The log's kind of a notification.
pub fn kind_of(k: Kind) -> events::Kind {
    match k {
        Kind::NodeLost => events::Kind::NodeLost,
        Kind::NodeFound => events::Kind::NodeFound,
        Kind::NodeForgotten => events::Kind::NodeForgotten,
        Kind::PortStateChange => events::Kind::PortState,
        Kind::ThresholdRising => events::Kind::ThresholdRising,
        Kind::ThresholdFalling => events::Kind::ThresholdFalling,
        Kind::Discontinuity => events::Kind::CounterReset,
        Kind::SweepOverrun => events::Kind::SweepOverrun,
        Kind::LinkDegraded => events::Kind::LinkDegraded,
        Kind::LinkRecovered => events::Kind::LinkRecovered,
        Kind::PortUnhealthy => events::Kind::VerdictRaised,
        Kind::PortHealthy => events::Kind::VerdictCleared,
        Kind::SubnetMasterChanged => events::Kind::SmChanged,
        Kind::SubnetNoMaster => events::Kind::SmNone,
        Kind::SubnetFailover => events::Kind::SmFailover,
        Kind::LinkNotAsPlanned => events::Kind::NotAsPlanned,
        Kind::LinkAsPlanned => events::Kind::AsPlanned,
        Kind::SubnetNotSwept => events::Kind::SubnetNotSwept,
        Kind::SubnetSwept => events::Kind::SubnetSwept,
    }
}

/// The texts a record names, made before it is written (the ring interns
/// them).
struct Texts {
    name: String,
    peer_name: String,
    detail: String,
}

fn texts(e: &Event, snap: &Snapshot) -> Texts {
    let name_of = |g: Guid, fallback: &str| {
        snap.node(g)
            .map_or_else(|| fallback.to_string(), |n| n.name().to_string())
    };
    let subnet = e.subnet.as_deref();
    let name = match subnet {
        Some(s) => s.label(),
        None => name_of(e.node, &e.description),
    };
    let peer_name = e
        .peer
        .as_ref()
        .map_or_else(String::new, |p| name_of(p.guid, &p.description));
    let detail = match e.kind {
        Kind::ThresholdRising | Kind::ThresholdFalling => e.counter.to_string(),
        Kind::PortUnhealthy | Kind::PortHealthy => e
            .condition
            .map_or_else(String::new, |c| c.name().to_string()),
        Kind::LinkDegraded | Kind::LinkRecovered => {
            use crate::ib::{LinkSpeed, LinkWidth};
            let w = |v: u32| LinkWidth::from_mib(v).map_or("?", LinkWidth::name);
            let sp = |v: u32| LinkSpeed::from_mib(v).map_or("?", LinkSpeed::name);
            format!(
                "{} {} (expected {} {})",
                w(e.link.width),
                sp(e.link.speed),
                w(e.link.width_expected),
                sp(e.link.speed_expected)
            )
        }
        Kind::SubnetFailover => {
            let now = subnet
                .and_then(|s| s.sweeping.as_ref())
                .map_or_else(|| "none".to_string(), |p| p.to_string());
            format!("{} -> {now}", e.old_local_port)
        }
        Kind::LinkNotAsPlanned | Kind::LinkAsPlanned => {
            e.plan.as_ref().map_or_else(String::new, |v| v.sentence())
        }
        _ => String::new(),
    };
    Texts {
        name,
        peer_name,
        detail,
    }
}

/// `before` and `after` of a notification.
fn values(e: &Event) -> (u64, u64) {
    match e.kind {
        Kind::NodeLost => (1, 0),
        Kind::NodeFound => (0, 1),
        Kind::PortStateChange => (e.old_state.into(), e.new_state.into()),
        Kind::ThresholdRising | Kind::ThresholdFalling => (e.threshold, e.value),
        Kind::SweepOverrun => (e.interval_ms, e.sweep_ms),
        Kind::PortUnhealthy | Kind::PortHealthy => (0, e.value),
        Kind::LinkDegraded | Kind::LinkRecovered => (0, e.link.health.into()),
        Kind::SubnetMasterChanged | Kind::SubnetNoMaster => {
            let now = e
                .subnet
                .as_deref()
                .and_then(super::subnets::master)
                .unwrap_or(Guid(0));
            (e.old_sm.0, now.0)
        }
        _ => (0, 0),
    }
}

/// Write what `out` decided for `snap` at wall time `time_ms`.
pub fn record(log: &Log, snap: &Snapshot, out: &Evaluation, time_ms: u64) {
    let all = out
        .events
        .iter()
        .map(|e| (e, false))
        .chain(out.held.iter().map(|e| (e, true)));
    let made: Vec<(&Event, bool, Texts)> = all.map(|(e, s)| (e, s, texts(e, snap))).collect();
    log.write(made.iter().map(|(e, suppressed, t)| {
        let (before, after) = values(e);
        New {
            kind: Some(kind_of(e.kind)),
            time_ms,
            sweep: snap.sweep,
            guid: e.node,
            name: &t.name,
            port: e.port,
            peer: e
                .peer
                .as_ref()
                .map(|p| (p.guid, p.port, t.peer_name.as_str())),
            before,
            after,
            detail: &t.detail,
            subnet: e.subnet.as_deref().map(|s| u16::from(s.index)),
            suppressed: *suppressed,
        }
    }));
}

/// Wall-clock milliseconds since the UNIX epoch, now.
pub fn wall_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Bounds, Filter};
    use crate::notify::{Evaluation, KINDS, Peer};

    #[test]
    fn every_notification_has_a_kind_in_the_log() {
        let mut seen: Vec<events::Kind> = KINDS.iter().map(|d| kind_of(d.kind)).collect();
        seen.sort();
        seen.dedup();
        assert_eq!(seen.len(), KINDS.len(), "one kind each");
    }

    #[test]
    fn sent_and_held_back_notifications_are_both_recorded() {
        let mut a = Event::node(Kind::PortStateChange, Guid(0x10), "leaf07");
        a.port = 3;
        a.old_state = 4;
        a.new_state = 1;
        a.peer = Some(Peer {
            guid: Guid(0x20),
            port: 1,
            description: "node0413 HCA-1".into(),
        });
        let b = Event::node(Kind::NodeLost, Guid(0x30), "node0414 HCA-1");
        let out = Evaluation {
            events: vec![a],
            held: vec![b],
            ..Default::default()
        };
        let log = Log::new(Bounds::default(), None);
        let snap = Snapshot::default();
        record(&log, &snap, &out, 1234);
        let got = log.query(&Filter::default());
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].kind, events::Kind::PortState);
        assert_eq!((got[0].before, got[0].after, got[0].port), (4, 1, 3));
        assert_eq!(&*got[0].peer.as_ref().unwrap().2, "node0413 HCA-1");
        assert!(!got[0].suppressed);
        assert_eq!(got[1].kind, events::Kind::NodeLost);
        assert!(got[1].suppressed);
        assert_eq!(got[1].time_ms, 1234);
    }

    #[test]
    fn a_degraded_link_says_its_width_and_speed_by_name() {
        use crate::ib::{LinkSpeed, LinkWidth};
        let mut e = Event::node(Kind::LinkDegraded, Guid(0x10), "node03 HCA-1");
        e.link.width = LinkWidth::X1.mib();
        e.link.speed = LinkSpeed::Hdr.mib();
        e.link.width_expected = LinkWidth::X4.mib();
        e.link.speed_expected = LinkSpeed::Hdr.mib();
        assert_eq!(
            texts(&e, &Snapshot::default()).detail,
            "1x HDR (expected 4x HDR)"
        );
    }
}
