//! The plan of a sweep: which MADs go to which ports (pure: what the
//! state shows of each node decides it; nothing is sent here). A sweep's
//! counter Gets are counted per node first and made node by node as the
//! MAD window reaches them ([`SlotStream`]); each Get is made from its
//! slot when it is sent ([`PmGet`]). Which counters a sweep clears
//! ([`clears`]).

use super::engine::{MadRequest, Request};
use super::mads::port_counters_data;
use super::state::{FabricState, PackedSlot, Slot};
use crate::pm::class_port_info::WideCounters;
use crate::pm::mad::{attr, method};
use crate::pm::optional::OPTIONAL_ATTRS;
use crate::pm::port_counters::COUNTERS;
use crate::pm::{PortCounters, PortCountersExtended};
use crate::transport::MadAddr;

/// The CounterSelect and CounterSelect2 bits of the fields of `pc` past 75%
/// of their range.
pub fn near_overflow(pc: &PortCounters) -> (u16, u8) {
    let (mut select, mut select2) = (0u16, 0u8);
    for def in &COUNTERS {
        let max = u64::from(def.max());
        if u64::from(def.get(pc)) * 4 > max * 3 {
            select |= def.select;
            select2 |= def.select2;
        }
    }
    (select, select2)
}

/// A sweep's Get, made from its slot when it is sent (`SlotRequests` in the sweeper).
#[derive(Clone, Copy, Debug)]
pub struct PmGet {
    pub to: MadAddr,
    pub attr_id: u16,
    /// PortSelect for the per-port attributes.
    pub port: u8,
}

impl PmGet {
    /// The Get a sweep's slot stands for: the slot's attribute, the port
    /// it selects (port 0 for the per-node attributes) and the node's PMA;
    /// `None` when the node has no PMA address.
    pub(super) fn of(st: &FabricState, slot: Slot) -> Option<PmGet> {
        let attr_id = slot.attr_id()?;
        let (to, port) = match slot {
            Slot::Cpi(ni) => (st.pma(ni, None)?, 0),
            Slot::Counters(ni, pi) | Slot::Extended(ni, pi) | Slot::Optional(ni, pi, _) => {
                (st.pma(ni, Some(pi))?, st.node(ni).ports().nth(pi)?.num())
            }
            Slot::SamplesControl(ni) | Slot::SamplesResult(ni) | Slot::SamplesResultExt(ni) => {
                (st.pma(ni, Some(0))?, 0)
            }
        };
        Some(PmGet { to, attr_id, port })
    }

    fn data(&self) -> [u8; 192] {
        match self.attr_id {
            attr::PORT_COUNTERS => port_counters_data(self.port, 0, 0),
            attr::PORT_COUNTERS_EXTENDED => {
                let mut data = [0u8; 192];
                PortCountersExtended {
                    port_select: self.port,
                    ..Default::default()
                }
                .encode(&mut data);
                data
            }
            a if OPTIONAL_ATTRS.contains(&a) => crate::pm::optional::request_data(a, self.port),
            _ => [0; 192],
        }
    }
}

impl Request for PmGet {
    fn to(&self) -> MadAddr {
        self.to
    }
    fn mad(&self, tid: u64) -> [u8; crate::transport::MAD_SIZE] {
        crate::pm::mad::request(method::GET, self.attr_id, 0, tid, &self.data())
    }
}

/// A batch's slots by request index: a slice of them (ClassPortInfo,
/// clears), or a [`SlotStream`] that makes a sweep's counter Gets node by
/// node as the window reaches them.
pub(super) trait Slots {
    /// How many requests the batch has.
    fn count(&self) -> usize;
    /// The slot of request `i`; `None` for an index that stands for no
    /// request any more (see [`SlotStream`]).
    fn slot(&self, st: &FabricState, i: usize) -> Option<PackedSlot>;
    /// Request `i` has ended: its slot is no longer needed.
    fn ended(&self, _i: usize) {}
}

impl Slots for [PackedSlot] {
    fn count(&self) -> usize {
        self.len()
    }

    fn slot(&self, _st: &FabricState, i: usize) -> Option<PackedSlot> {
        self.get(i).copied()
    }
}

/// A sweep's counter Gets, node by node: PortCounters (and
/// PortCountersExtended where the node has it) of every port, the optional
/// attributes the node answers when they are due, and the node's samples.
///
/// The batch is planned by counting each node's slots; a node's slots are
/// made when the window reaches its first request and let go once every
/// request before them has ended. So a batch holds the slots of the
/// requests not yet ended (a window's worth, and those held up behind a
/// retry), not 8 bytes for each of a sweep's MADs (millions with the
/// optional attributes). A node whose slots changed between the plan and
/// the making (a SET took its samples away meanwhile) keeps the planned
/// number: extra slots wait for the next sweep, missing ones stand for no
/// request (it fails unsent, and its end changes nothing).
pub(super) struct SlotStream {
    /// Each node of the batch, in order, with the number of its slots.
    plan: Vec<(u32, u32)>,
    total: usize,
    optional: bool,
    held: std::cell::RefCell<Held>,
}

#[derive(Default)]
struct Held {
    /// The next node of the plan to make slots for.
    next: usize,
    /// Request index of `slots[0]`.
    base: usize,
    /// Slots from the oldest request not yet ended on, each with whether
    /// its request has ended.
    slots: std::collections::VecDeque<(Option<PackedSlot>, bool)>,
    scratch: Vec<PackedSlot>,
    /// The most slots held at once.
    peak: usize,
}

impl SlotStream {
    pub(super) fn new(st: &FabricState) -> SlotStream {
        let optional = st.optional_due();
        let mut scratch = Vec::new();
        let mut plan = Vec::new();
        let mut total = 0;
        for ni in 0..st.node_count() {
            scratch.clear();
            node_slots(st, ni, optional, true, &mut scratch);
            if !scratch.is_empty() {
                plan.push((ni as u32, scratch.len() as u32));
                total += scratch.len();
            }
        }
        SlotStream {
            plan,
            total,
            optional,
            held: std::cell::RefCell::new(Held {
                scratch,
                ..Held::default()
            }),
        }
    }

    /// The most slots the stream held at once so far.
    #[cfg(test)]
    fn peak(&self) -> usize {
        self.held.borrow().peak
    }
}

impl Slots for SlotStream {
    fn count(&self) -> usize {
        self.total
    }

    fn slot(&self, st: &FabricState, i: usize) -> Option<PackedSlot> {
        let mut h = self.held.borrow_mut();
        let h = &mut *h;
        while i >= h.base + h.slots.len() {
            let &(ni, n) = self.plan.get(h.next)?;
            h.next += 1;
            h.scratch.clear();
            node_slots(st, ni as usize, self.optional, false, &mut h.scratch);
            let n = n as usize;
            let made = h.scratch.iter().take(n).map(|&s| (Some(s), false));
            let missing = n.saturating_sub(h.scratch.len());
            h.slots
                .extend(made.chain(std::iter::repeat_n((None, false), missing)));
            h.peak = h.peak.max(h.slots.len());
        }
        h.slots.get(i.checked_sub(h.base)?)?.0
    }

    fn ended(&self, i: usize) {
        let mut h = self.held.borrow_mut();
        if let Some(e) = i.checked_sub(h.base).and_then(|k| h.slots.get_mut(k)) {
            e.1 = true;
        }
        while h.slots.front().is_some_and(|e| e.1) {
            h.slots.pop_front();
            h.base += 1;
        }
    }
}

/// The slots of node `ni`'s counter Gets in a sweep (see [`SlotStream`]);
/// none for a node that has not answered ClassPortInfo.
///
/// An optional attribute that neither the node nor its kind of node
/// answered yet is asked of the node's first port alone (a probe), and the
/// sample results of a node that left PortSamplesControl unanswered only
/// once it or its kind answered it; what the node's kind showed it does not answer is
/// not asked ([`FabricState::optional_skipped`]). The plan
/// of a sweep (`plan`) counts every port for the probes: by the time the
/// node's requests are made, its kind may have answered.
fn node_slots(st: &FabricState, ni: usize, optional: bool, plan: bool, out: &mut Vec<PackedSlot>) {
    let Some(cpi) = st.cpi(ni) else {
        return;
    };
    let (kind, health) = (st.kind(ni), st.answers(ni));
    let node = st.node(ni);
    let ext = cpi.wide_counters() != WideCounters::None;
    let ports = || (0..node.port_count()).filter(|&pi| st.pma(ni, Some(pi)).is_some());
    for pi in ports() {
        out.push(Slot::Counters(ni, pi).into());
        if ext {
            out.push(Slot::Extended(ni, pi).into());
        }
    }
    if optional {
        let unsupported = st.optional_skipped(ni);
        let every_port = if plan {
            !0
        } else {
            health.optional_answered | kind.answered
        };
        for (i, pi) in ports().enumerate() {
            for k in (0..OPTIONAL_ATTRS.len())
                .filter(|k| unsupported & (1 << k) == 0 && (i == 0 || every_port & (1 << k) != 0))
            {
                out.push(Slot::Optional(ni, pi, k).into());
            }
        }
    }
    if !health.no_samples && st.pma(ni, Some(0)).is_some() {
        out.push(Slot::SamplesControl(ni).into());
        if plan || health.samples_answered || kind.samples_answered || !health.samples_silent() {
            out.extend(
                st.sample_results(ni)
                    .map(|(_, slot)| PackedSlot::from(slot)),
            );
        }
    }
}

/// With `clear_near_overflow`: one PerformanceSet(PortCounters) per port
/// with a field past 75% of its range, clearing those fields (none
/// without). The Set's reply shows the port after the clear and is folded
/// in as a reading.
pub fn clears(st: &FabricState) -> (Vec<MadRequest>, Vec<PackedSlot>) {
    let mut reqs = Vec::new();
    let mut slots = Vec::new();
    if !st.config().clear_near_overflow {
        return (reqs, slots);
    }
    for ni in 0..st.node_count() {
        let node = st.node(ni);
        // A node with 64-bit error counters is never cleared: its
        // totals come from PortCountersExtended, which does not
        // saturate.
        let wide = st.cpi(ni).map(|c| c.wide_counters());
        if wide == Some(WideCounters::All) {
            continue;
        }
        for (pi, port) in node.ports().enumerate() {
            let Some(pc) = st.counters(ni, pi) else {
                continue;
            };
            let (select, select2) = near_overflow(pc);
            if select == 0 && select2 == 0 {
                continue;
            }
            let Some(to) = st.pma(ni, Some(pi)) else {
                continue;
            };
            reqs.push(MadRequest {
                to,
                method: method::SET,
                attr_id: attr::PORT_COUNTERS,
                attr_mod: 0,
                data: port_counters_data(port.num(), select, select2),
            });
            slots.push(Slot::Counters(ni, pi).into());
        }
    }
    (reqs, slots)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::rig::{AgentRig, RigOptions};

    /// 160 switches of 64 ports, cabled in pairs by port 1.
    pub(crate) fn switch_pairs() -> crate::ib::Fabric {
        let mut text = String::new();
        for i in 0..160 {
            let peer = i ^ 1;
            text.push_str(&format!("Switch\t64 \"sw{i}\"\n[1]\t\"sw{peer}\"[1]\n\n"));
        }
        crate::ib::topology::parse(&text).unwrap()
    }

    fn switch_pairs_rig() -> AgentRig {
        AgentRig::new(RigOptions {
            fabric: switch_pairs(),
            ..Default::default()
        })
    }

    #[test]
    fn a_sweeps_stream_makes_every_nodes_slots_in_order_and_holds_about_a_window_of_them() {
        let mut rig = switch_pairs_rig();
        rig.sweep();
        let st = rig.state.lock();
        let mut want = Vec::new();
        let mut largest = 0;
        for ni in 0..st.node_count() {
            let before = want.len();
            node_slots(&st, ni, true, false, &mut want);
            largest = largest.max(want.len() - before);
        }
        let stream = SlotStream::new(&st);
        assert!(stream.optional, "the optional attributes are due");
        assert_eq!(stream.count(), want.len());
        // Every switch: counters, extended and the optional attributes of
        // 65 ports (more than 100,000 requests).
        assert!(want.len() > 100_000, "{}", want.len());
        // A window of 256 that ends its requests a little out of order.
        const W: usize = 256;
        for (i, &slot) in want.iter().enumerate() {
            assert_eq!(stream.slot(&st, i), Some(slot), "request {i}");
            if i >= W {
                // Pairs end in reverse order: k + 1 before k.
                stream.ended((i - W) ^ 1);
            }
        }
        // The first of the last window's requests are ended, then the rest.
        for k in want.len().saturating_sub(W)..want.len() {
            stream.ended(k);
        }
        let h = stream.held.borrow();
        assert!(h.slots.is_empty(), "{} slots still held", h.slots.len());
        assert!(
            stream.peak() <= W + 1 + largest,
            "held {} slots at once (window {W}, largest node {largest})",
            stream.peak()
        );
    }

    #[test]
    fn a_node_whose_slots_changed_after_the_plan_keeps_the_planned_number() {
        let mut rig = switch_pairs_rig();
        rig.sweep();
        let mut st = rig.state.lock();
        let stream = SlotStream::new(&st);
        let (first, n) = (stream.plan[0].0 as usize, stream.plan[0].1 as usize);
        let (second, m) = (stream.plan[1].0 as usize, stream.plan[1].1 as usize);
        // Between the plan and the making, the first node's samples go
        // (as a SET may do) and the second node's come back.
        assert!(!st.answers(first).no_samples);
        st.answers_mut(first).no_samples = true;
        let mut fewer = Vec::new();
        node_slots(&st, first, true, false, &mut fewer);
        assert!(fewer.len() < n);
        let got: Vec<_> = (0..n).map(|i| stream.slot(&st, i)).collect();
        assert_eq!(
            got[..fewer.len()],
            fewer.iter().map(|&s| Some(s)).collect::<Vec<_>>()
        );
        assert!(got[fewer.len()..].iter().all(Option::is_none));
        // The next node starts where the plan put it.
        let mut next = Vec::new();
        node_slots(&st, second, true, false, &mut next);
        assert_eq!(next.len(), m);
        assert_eq!(stream.slot(&st, n), Some(next[0]));
        // Past the plan: no slot.
        assert_eq!(stream.slot(&st, stream.count()), None);
    }
}
