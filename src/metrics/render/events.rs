//! The event log's counters by kind (collector `agent`): how many events
//! of each kind the agent decided since it started. The events themselves
//! are not metrics: `/api/events` has them.

use std::io::{self, Write};

use super::{HeaderKind, Out};
use crate::events::{KIND_COUNT, KINDS};

pub const EVENTS: &str = "infiniband_agent_events";
const HELP: &str =
    "Events the agent decided since it started, by kind (the event log has them: /api/events).";

pub(super) fn events_family<W: Write>(
    counts: &[u64; KIND_COUNT],
    w: &mut Out<W>,
) -> io::Result<()> {
    w.header(EVENTS, HeaderKind::Counter, HELP)?;
    for d in &KINDS {
        writeln!(
            w.out,
            "{EVENTS}_total{{kind=\"{}\"}} {}",
            d.name, counts[d.kind as usize]
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{Format, Scrape, render};
    use super::*;
    use crate::events::Kind;
    use crate::metrics::HttpCounters;
    use crate::metrics::families::{Collector, Collectors};
    use crate::mib::EndpointCounters;

    #[test]
    fn counts_by_kind_are_one_counter_family() {
        let snap = crate::fabric::cache::Snapshot::default();
        let (endpoint, http) = (EndpointCounters::default(), HttpCounters::default());
        let mut counts = [0u64; KIND_COUNT];
        counts[Kind::PortState as usize] = 7;
        let mut s = Scrape {
            snap: &snap,
            endpoint: &endpoint,
            http: &http,
            format: Format::Text,
            collectors: Collectors::NONE.with(Collector::Agent),
            taken_unix: None,
            events: Some(counts),
            now: std::time::Instant::now(),
        };
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.contains("# TYPE infiniband_agent_events_total counter\n"),
            "{text}"
        );
        assert!(text.contains("infiniband_agent_events_total{kind=\"port-state\"} 7\n"));
        assert_eq!(
            text.matches("infiniband_agent_events_total{").count(),
            KIND_COUNT
        );
        s.events = None;
        let mut out = Vec::new();
        render(&s, &mut out).unwrap();
        assert!(!String::from_utf8(out).unwrap().contains("events_total"));
    }
}
