//! The last hour at a glance: one small summary per sweep, the last
//! [`SUMMARIES`] of them.

use std::collections::VecDeque;

use crate::fabric::cache::Snapshot;
use crate::ib::health::CONDITION_COUNT;

/// Sweeps summarized (an hour of 10 s sweeps).
pub const SUMMARIES: usize = 360;

/// One sweep, in figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub sweep: u64,
    /// Wall-clock milliseconds when it was summarized.
    pub time_ms: u64,
    /// Ports with a standing verdict, per condition (in
    /// [`crate::ib::health::Condition`] order).
    pub verdicts: [u32; CONDITION_COUNT],
    /// Nodes not answering (marked unreachable).
    pub unanswering: u32,
    /// MADs that timed out in the sweep.
    pub timeouts: u32,
    pub duration_ms: u32,
    /// Ports with a standing mismatch of their link with the plan (0
    /// until a plan is compared).
    pub not_as_planned: u32,
}

fn clamp(v: u64) -> u32 {
    u32::try_from(v).unwrap_or(u32::MAX)
}

impl Summary {
    /// The summary of `snap` at `time_ms`.
    pub fn of(snap: &Snapshot, time_ms: u64) -> Summary {
        let verdicts = snap.health.counts().map(|n| clamp(n as u64));
        Summary {
            sweep: snap.sweep,
            time_ms,
            verdicts,
            unanswering: clamp(snap.nodes.len().saturating_sub(snap.reachable) as u64),
            timeouts: clamp(snap.stats.timeouts),
            duration_ms: clamp(snap.stats.duration_ms),
            not_as_planned: clamp(snap.plan.ports_standing() as u64),
        }
    }
}

/// The last [`SUMMARIES`] summaries, oldest first; one per sweep.
#[derive(Clone, Debug, Default)]
pub struct Summaries(VecDeque<Summary>);

impl Summaries {
    /// Keep `s`, unless its sweep is already summarized.
    pub fn push(&mut self, s: Summary) {
        if self.0.back().is_some_and(|b| b.sweep == s.sweep) {
            return;
        }
        if self.0.len() == SUMMARIES {
            self.0.pop_front();
        }
        self.0.push_back(s);
    }

    pub fn iter(&self) -> impl Iterator<Item = &Summary> {
        self.0.iter()
    }

    /// The latest sweep's.
    pub fn last(&self) -> Option<&Summary> {
        self.0.back()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_keep_the_last_hour_once_per_sweep() {
        let mut s = Summaries::default();
        for i in 0..1000u64 {
            let x = Summary {
                sweep: i,
                ..Default::default()
            };
            s.push(x);
            s.push(x);
        }
        assert_eq!(s.len(), SUMMARIES);
        assert_eq!(s.iter().next().unwrap().sweep, 1000 - SUMMARIES as u64);
    }

    #[test]
    fn a_snapshot_is_summarized() {
        let mut snap = Snapshot {
            sweep: 4,
            ..Default::default()
        };
        snap.stats.timeouts = 9;
        snap.stats.duration_ms = 120;
        let s = Summary::of(&snap, 5);
        assert_eq!(
            (s.sweep, s.time_ms, s.timeouts, s.duration_ms),
            (4, 5, 9, 120)
        );
        assert_eq!(s.unanswering, 0);
        assert_eq!(s.not_as_planned, 0);
    }

    #[test]
    fn the_ports_not_as_planned_are_counted_from_the_plan_verdicts() {
        use crate::ib::Guid;
        use crate::ib::cabling::{Mismatch, PlanVerdict, PlanVerdicts};
        let v = |kind, guid, standing| PlanVerdict {
            raised: 1,
            standing,
            ..PlanVerdict::new(kind, Guid(guid), 1, 0)
        };
        let snap = Snapshot {
            plan: std::sync::Arc::new(PlanVerdicts {
                verdicts: std::sync::Arc::from(vec![
                    // Both ends of a miswired cable, a recovering one, and
                    // a node verdict: two ports stand.
                    v(Mismatch::Miswired, 1, true),
                    v(Mismatch::Miswired, 2, true),
                    v(Mismatch::Missing, 3, false),
                    v(Mismatch::UnplannedNode, 4, true),
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(Summary::of(&snap, 0).not_as_planned, 2);
    }
}
