//! What each node answers and what is asked of it: the strikes of a sweep
//! counted with strikes.rs (per node and per kind of node), reachability
//! at the end of a sweep, and the sweep's questions that follow from
//! them (ClassPortInfo, the sample results, the probes).

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use tracing::{debug, info, warn};

use super::{FabricState, Flag, Slot, answered_secs};
use crate::fabric::strikes::{
    AttrMask, KIND_VERDICT, KindKey, KindState, NodeAnswers, RETRY_UNANSWERED_SWEEPS, attr_list,
};
use crate::ib::Guid;
use crate::pm::optional::OPTIONAL_ATTRS;

impl FabricState {
    /// Give every node the index of its kind (kinds already known keep
    /// what they learned).
    pub(super) fn assign_kinds(&mut self) {
        let mut index: HashMap<KindKey, u32> = self
            .kinds
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (*k, i as u32))
            .collect();
        for s in &mut self.nodes {
            let id = &s.rec.id;
            let key = (id.node_type, id.vendor_id, id.device_id);
            s.kind = *index.entry(key).or_insert_with(|| {
                self.kinds.push((key, KindState::default()));
                (self.kinds.len() - 1) as u32
            });
        }
    }

    /// What node `ni`'s kind showed.
    pub(crate) fn kind(&self, ni: usize) -> &KindState {
        &self.kinds[self.nodes[ni].kind as usize].1
    }

    /// The current sweep is node `ni`'s own, once every
    /// [`RETRY_UNANSWERED_SWEEPS`] (spread over the nodes by index): it is
    /// asked what its kind does not answer, as a node may differ from its
    /// kind (another firmware).
    pub(crate) fn self_check(&self, ni: usize) -> bool {
        (self.sweep_no + ni as u64).is_multiple_of(RETRY_UNANSWERED_SWEEPS)
    }

    /// The optional attributes not to ask of node `ni` (bit k:
    /// `OPTIONAL_ATTRS[k]`): what it does not answer, and what its kind
    /// does not, except what it answered itself and on its own sweep.
    pub(crate) fn optional_skipped(&self, ni: usize) -> AttrMask {
        let s = &self.nodes[ni];
        let kind = if self.self_check(ni) {
            0
        } else {
            self.kind(ni).unsupported & !s.answers.optional_answered
        };
        s.answers.optional_unsupported | kind
    }

    /// The request of `slot` asks whether the node has something it has
    /// not shown it has: an optional attribute, PortSamplesResultExtended,
    /// or the sample mechanism of a node that has not answered it yet (ibsim
    /// and some PMAs never do). Its timeout is no sign of a node in
    /// trouble: counted apart from the others.
    pub fn is_probe(&self, slot: Slot) -> bool {
        match slot {
            Slot::Optional(..) | Slot::SamplesResultExt(_) => true,
            Slot::SamplesControl(ni) | Slot::SamplesResult(ni) => self
                .nodes
                .get(ni)
                .is_some_and(|s| !s.answers.samples_answered),
            _ => false,
        }
    }

    /// Start a sweep: its number (every [`RETRY_UNANSWERED_SWEEPS`]th
    /// asks again what went unanswered) and the number of nodes.
    pub fn begin_sweep(&mut self) -> (u64, usize) {
        self.sweep_no += 1;
        if self.sweep_no.is_multiple_of(RETRY_UNANSWERED_SWEEPS) {
            self.retry_unanswered();
        }
        (self.sweep_no, self.nodes.len())
    }

    /// Ask every node again, once, for the optional attributes and the
    /// sample mechanism it did not answer ([`RETRY_UNANSWERED_SWEEPS`]).
    pub fn retry_unanswered(&mut self) {
        for s in &mut self.nodes {
            s.answers.retry();
        }
    }

    /// The sample result attributes to read of node `ni`, with their
    /// slots: PortSamplesResult, and PortSamplesResultExtended where the
    /// PMA says IsExtendedWidthSupported and has not shown it does not
    /// answer it.
    pub fn sample_results(&self, ni: usize) -> impl Iterator<Item = (u16, Slot)> {
        let ext = self.nodes.get(ni).is_some_and(|s| {
            !s.answers.no_result_ext
                && s.cpi().is_some_and(|c| {
                    c.capability_mask & crate::pm::class_port_info::CAP_EXT_WIDTH != 0
                })
        });
        std::iter::once(Slot::SamplesResult(ni))
            .chain(ext.then_some(Slot::SamplesResultExt(ni)))
            .filter_map(|slot| Some((slot.attr_id()?, slot)))
    }

    /// Node `ni`'s ClassPortInfo is to be read (again) this sweep: MADs
    /// are sent, it has not answered it (or its PMA moved), and its PMA
    /// has an address.
    pub fn class_port_info_due(&self, ni: usize) -> bool {
        self.cfg.mads && self.nodes[ni].has(Flag::CpiStale) && self.pma(ni, None).is_some()
    }

    /// The MAD transport itself failed: every node counts as unreachable at
    /// once (no line per node), and is asked ClassPortInfo again when it
    /// answers.
    pub fn mark_all_unreachable(&mut self) {
        let after = self.cfg.unreachable_after.max(1);
        for s in &mut self.nodes {
            s.failed_sweeps = s.failed_sweeps.max(after);
            s.set(Flag::Dirty, true);
            s.set(Flag::CpiStale, true);
            s.redirect = None;
        }
    }

    /// End of a sweep at `now`: count failures, mark nodes unreachable or
    /// back.
    pub fn end_sweep(&mut self, answered: &[bool], now: Instant) {
        // Nodes that newly left optional attributes unanswered, by the set
        // of attributes: (count, first node's GUID and index). One log line
        // per set, not per node: a fabric of one device type logs once.
        let mut unanswered: BTreeMap<AttrMask, (usize, Guid, usize)> = BTreeMap::new();
        for (ni, answered) in answered.iter().enumerate() {
            let s = &mut self.nodes[ni];
            let guid = s.rec.id.guid;
            let fresh = s.take(Flag::DocaFresh);
            let ok = &(*answered || fresh);
            let (samples_out, out) = s.answers.end_sweep(*ok);
            if samples_out {
                debug!(node = %guid, "no answer to PortSamplesControl: asking again rarely");
            }
            for (k, attr) in OPTIONAL_ATTRS.iter().enumerate() {
                if out & (1 << k) != 0 {
                    debug!(node = %guid, attr, "no answer to an optional attribute: asking again rarely");
                }
            }
            // What the node's kind left unanswered is said once for the kind.
            let kind_unsupported = self.kinds[s.kind as usize].1.unsupported;
            let unsupported = s.answers.optional_unsupported;
            s.optional_reported |= unsupported & kind_unsupported;
            let new_unsupported = unsupported & !s.optional_reported;
            if new_unsupported != 0 {
                debug!(
                    node = %guid,
                    attrs = %attr_list(new_unsupported),
                    "optional PM attributes this node does not answer"
                );
                let e = unanswered.entry(new_unsupported).or_insert((0, guid, ni));
                e.0 += 1;
                s.optional_reported |= new_unsupported;
            }
            if *ok {
                if s.failed_sweeps >= self.cfg.unreachable_after {
                    info!(
                        "node answers again: {} \"{}\"",
                        guid,
                        crate::ib::Escaped(&s.rec.id.description)
                    );
                }
                if s.failed_sweeps != 0 || !s.has(Flag::Seen) {
                    s.set(Flag::Dirty, true);
                }
                s.failed_sweeps = 0;
                s.set(Flag::Seen, true);
                s.answered_s = answered_secs(now);
            } else {
                s.set(Flag::Dirty, true);
                s.failed_sweeps = s.failed_sweeps.saturating_add(1);
                if s.failed_sweeps == self.cfg.unreachable_after {
                    warn!(
                        "node unreachable: {} \"{}\" did not answer in {} sweeps in a row",
                        guid,
                        crate::ib::Escaped(&s.rec.id.description),
                        s.failed_sweeps
                    );
                    // Ask ClassPortInfo again when it comes back.
                    s.set(Flag::CpiStale, true);
                    s.redirect = None;
                    s.answers = NodeAnswers::default();
                    s.optional_reported = 0;
                }
            }
        }
        for (mask, (nodes, guid, ni)) in unanswered {
            info!(
                "{nodes} node(s) do not answer the optional PM attributes {attrs} (the first: {guid}, \"{desc}\"); they are asked again once every {RETRY_UNANSWERED_SWEEPS} sweeps",
                attrs = attr_list(mask),
                desc = crate::ib::Escaped(&self.nodes[ni].rec.id.description),
            );
        }
        self.report_kinds();
    }

    /// One log line per kind of node for what its nodes newly showed they
    /// do not answer (and so is not asked of the kind's other nodes).
    fn report_kinds(&mut self) {
        let mut counts = vec![0usize; self.kinds.len()];
        for s in &self.nodes {
            counts[s.kind as usize] += 1;
        }
        for ((key, k), count) in self.kinds.iter_mut().zip(counts) {
            let (node_type, vendor, device) = *key;
            let kind = format!(
                "{count} {} node(s) of vendor {vendor:#08x}, device {device:#06x}",
                match node_type {
                    crate::ib::NodeType::Ca => "channel adapter",
                    crate::ib::NodeType::Switch => "switch",
                    crate::ib::NodeType::Router => "router",
                }
            );
            let new = k.unsupported & !k.reported;
            if new != 0 {
                k.reported |= new;
                info!(
                    "{kind}: the optional PM attributes {} are not asked of them, as {KIND_VERDICT} of them left them unanswered and none answered (each node is asked again once every {RETRY_UNANSWERED_SWEEPS} sweeps)",
                    attr_list(new)
                );
            }
        }
    }
}
