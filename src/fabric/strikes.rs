//! Node health from answers and silence: how many sweeps in a row a node
//! left an attribute unanswered while it answered others (its strikes),
//! and what the nodes of one kind showed they do not answer (the kind's
//! verdict). Pure: the state counts with these, and logs.

use crate::pm::optional::OPTIONAL_ATTRS;

/// One bit per [`OPTIONAL_ATTRS`] entry.
pub type AttrMask = u32;

/// The attribute IDs of a mask, for a log line (`0x0018,0x001b`).
pub fn attr_list(mask: AttrMask) -> String {
    OPTIONAL_ATTRS
        .iter()
        .enumerate()
        .filter(|(k, _)| mask & (1 << k) != 0)
        .map(|(_, a)| format!("{a:#06x}"))
        .collect::<Vec<_>>()
        .join(",")
}
const _: () = assert!(OPTIONAL_ATTRS.len() <= AttrMask::BITS as usize);

/// Sweeps in a row in which a node answers other MADs but not an
/// attribute before the sweeper stops asking it for that attribute.
pub const STRIKES: u8 = 2;

/// Nodes of one kind that leave an optional attribute unanswered, while
/// no node of the kind answered it, before the sweeper stops asking the
/// other nodes of that kind for it (each is still asked itself once every
/// [`RETRY_UNANSWERED_SWEEPS`], at a sweep of its own).
pub const KIND_VERDICT: u8 = 2;

/// A kind of node: the same node type, vendor and device (most likely
/// the same firmware), which answers the same optional attributes.
pub type KindKey = (crate::ib::NodeType, u32, u16);

/// What the nodes of one kind showed of the optional attributes and the
/// sample mechanism. A node asks an attribute that neither it nor its kind
/// answered yet of one port (a probe) before all of them; an attribute
/// [`KIND_VERDICT`] nodes of the kind left unanswered, and none answered,
/// is not asked of the others but once an hour each. The sample results
/// are asked of a node once it or its kind answered PortSamplesControl
/// (the sample mechanism has no kind verdict: one request a node and sweep
/// until the node's own strikes).
#[derive(Clone, Debug, Default)]
pub(crate) struct KindState {
    /// Bit k: a node of this kind answered `OPTIONAL_ATTRS[k]`.
    pub(crate) answered: AttrMask,
    /// Per attribute: nodes of this kind that left it unanswered.
    unanswered: [u8; OPTIONAL_ATTRS.len()],
    /// Bit k: `OPTIONAL_ATTRS[k]` is not asked of nodes of this kind.
    pub(crate) unsupported: AttrMask,
    /// Bits of `unsupported` already said in the log.
    pub(crate) reported: AttrMask,
    /// A node of this kind answered PortSamplesControl.
    pub(crate) samples_answered: bool,
}

impl KindState {
    /// A node of this kind left optional attribute `k` unanswered.
    pub fn optional_unanswered(&mut self, k: usize) {
        if self.answered & (1 << k) == 0 {
            self.unanswered[k] = self.unanswered[k].saturating_add(1);
            if self.unanswered[k] >= KIND_VERDICT {
                self.unsupported |= 1 << k;
            }
        }
    }

    /// A node of this kind answered optional attribute `k`.
    pub fn optional_answered(&mut self, k: usize) {
        self.answered |= 1 << k;
        self.unsupported &= !(1 << k);
    }
}

/// Every this many sweeps, attributes a node did not answer are asked
/// again once (a firmware upgrade may add them); one hour at the default
/// interval. Nothing is logged again for a node that still does not
/// answer.
pub const RETRY_UNANSWERED_SWEEPS: u64 = 360;

/// A sweep in which the node answered other MADs but left the optional
/// attributes of `missed` unanswered: one strike each. Returns those that
/// reached [`STRIKES`] now (not to be asked any more, but rarely).
pub fn strike_missed(strikes: &mut [u8; OPTIONAL_ATTRS.len()], missed: AttrMask) -> AttrMask {
    let mut out = 0;
    for (k, n) in strikes.iter_mut().enumerate() {
        if missed & (1 << k) != 0 {
            *n = n.saturating_add(1);
            if *n >= STRIKES {
                out |= 1 << k;
            }
        }
    }
    out
}

/// What one node showed of the sample mechanism and the optional
/// attributes: what it answers, what it does not (by an error status, or
/// by silence while it answers other MADs, counted in strikes over
/// sweeps).
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeAnswers {
    /// The node does not answer PortSamplesControl/Result: stop asking.
    pub(crate) no_samples: bool,
    /// Sweeps in a row in which the node answered but not PortSamplesControl.
    samples_strikes: u8,
    /// PortSamplesControl went unanswered in the current sweep.
    samples_missed: bool,
    /// The node does not answer PortSamplesResultExtended: stop asking
    /// (until the rare retry).
    pub(crate) no_result_ext: bool,
    /// Bit k: the node does not answer `OPTIONAL_ATTRS[k]`; stop asking.
    pub(crate) optional_unsupported: AttrMask,
    /// Bit k: `OPTIONAL_ATTRS[k]` went unanswered in the current sweep.
    optional_missed: AttrMask,
    optional_strikes: [u8; OPTIONAL_ATTRS.len()],
    /// Bit k: the node answered `OPTIONAL_ATTRS[k]` (asked of every port
    /// from then on; before, of one port).
    pub(crate) optional_answered: AttrMask,
    /// The node answered PortSamplesControl (its sample results are
    /// asked from then on; before, PortSamplesControl alone).
    pub(crate) samples_answered: bool,
}

impl NodeAnswers {
    /// The node left PortSamplesControl unanswered in a sweep (and has
    /// not answered it since).
    pub fn samples_silent(&self) -> bool {
        self.samples_strikes > 0 && !self.samples_answered
    }

    /// An error status to PortSamplesControl or PortSamplesResult; true
    /// when it is news.
    pub fn samples_unsupported(&mut self) -> bool {
        !std::mem::replace(&mut self.no_samples, true)
    }

    /// An error status to optional attribute `k` (evidence for the
    /// node's `kind` unless the node answered it before); true when it is
    /// news.
    pub fn optional_unsupported(&mut self, k: usize, kind: &mut KindState) -> bool {
        if self.optional_unsupported & (1 << k) != 0 {
            return false;
        }
        self.optional_unsupported |= 1 << k;
        if self.optional_answered & (1 << k) == 0 {
            kind.optional_unanswered(k);
        }
        true
    }

    /// PortSamplesControl went unanswered.
    pub fn samples_missed(&mut self) {
        self.samples_missed = true;
    }

    /// Optional attribute `k` went unanswered; the node answered other
    /// MADs in this sweep so far when `alive`: then the first silence of
    /// the sweep is evidence for its `kind`, unless the node answered the
    /// attribute before.
    pub fn optional_missed(&mut self, k: usize, alive: bool, kind: &mut KindState) {
        let first = self.optional_missed & (1 << k) == 0;
        self.optional_missed |= 1 << k;
        if alive && first && self.optional_answered & (1 << k) == 0 {
            kind.optional_unanswered(k);
        }
    }

    /// The node answered PortSamplesControl.
    pub fn samples_answer(&mut self, kind: &mut KindState) {
        self.samples_strikes = 0;
        self.samples_answered = true;
        kind.samples_answered = true;
    }

    /// The node answered optional attribute `k`.
    pub fn optional_answer(&mut self, k: usize, kind: &mut KindState) {
        self.optional_strikes[k] = 0;
        self.optional_answered |= 1 << k;
        kind.optional_answered(k);
    }

    /// The end of a sweep in which the node answered (`ok`) or not: what
    /// it left unanswered while answering is one strike. Returns whether
    /// the sample mechanism is struck out and the optional attributes
    /// struck out now.
    pub fn end_sweep(&mut self, ok: bool) -> (bool, AttrMask) {
        let mut samples_out = false;
        if std::mem::take(&mut self.samples_missed) && ok {
            self.samples_strikes = self.samples_strikes.saturating_add(1);
            if self.samples_strikes >= STRIKES {
                self.no_samples = true;
                samples_out = true;
            }
        }
        let missed = std::mem::take(&mut self.optional_missed);
        let mut out = 0;
        if ok && missed != 0 {
            out = strike_missed(&mut self.optional_strikes, missed);
            self.optional_unsupported |= out;
        }
        (samples_out, out)
    }

    /// Ask again, once, what the node did not answer
    /// ([`RETRY_UNANSWERED_SWEEPS`]); what it answered stays known.
    pub fn retry(&mut self) {
        *self = NodeAnswers {
            optional_answered: self.optional_answered,
            samples_answered: self.samples_answered,
            samples_missed: self.samples_missed,
            optional_missed: self.optional_missed,
            ..NodeAnswers::default()
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_gives_up_on_an_attribute_after_its_verdict_unless_one_answered() {
        let mut kind = KindState::default();
        for _ in 1..KIND_VERDICT {
            kind.optional_unanswered(3);
        }
        assert_eq!(kind.unsupported, 0, "not before the verdict");
        kind.optional_unanswered(3);
        assert_eq!(kind.unsupported, 1 << 3);
        // One node answers after all: asked of the kind again.
        kind.optional_answered(3);
        assert_eq!((kind.unsupported, kind.answered), (0, 1 << 3));
        // Once answered by a node of the kind, silence is no verdict.
        for _ in 0..2 * KIND_VERDICT {
            kind.optional_unanswered(3);
        }
        assert_eq!(kind.unsupported, 0);
    }

    #[test]
    fn an_attribute_missed_in_two_sweeps_is_struck_out() {
        let mut strikes = [0; OPTIONAL_ATTRS.len()];
        assert_eq!(strike_missed(&mut strikes, 0b101), 0, "one strike");
        assert_eq!(strike_missed(&mut strikes, 0b100), 0b100);
        assert_eq!(strike_missed(&mut strikes, 0), 0);
        assert_eq!(strikes[..3], [1, 0, 2]);
        assert_eq!(
            attr_list(0b101),
            format!("{:#06x},{:#06x}", OPTIONAL_ATTRS[0], OPTIONAL_ATTRS[2])
        );
    }

    /// A node's silence strikes only in sweeps it answered; an answer
    /// takes the strikes back; the retry forgets what it does not answer
    /// and keeps what it answered.
    #[test]
    fn a_node_strikes_out_in_sweeps_it_answered_and_an_answer_starts_again() {
        let mut kind = KindState::default();
        let mut h = NodeAnswers::default();
        h.samples_missed();
        h.optional_missed(4, true, &mut kind);
        assert_eq!(h.end_sweep(false), (false, 0), "a silent node: no strike");
        for sweep in 1..=STRIKES {
            h.samples_missed();
            h.optional_missed(4, true, &mut kind);
            let out = sweep == STRIKES;
            assert_eq!(
                h.end_sweep(true),
                (out, u32::from(out) << 4),
                "sweep {sweep}"
            );
        }
        assert!(h.no_samples && h.samples_silent());
        assert_eq!(h.optional_unsupported, 1 << 4);

        h.retry();
        assert!(!h.no_samples && h.optional_unsupported == 0);
        h.samples_missed();
        h.optional_missed(4, true, &mut kind);
        h.end_sweep(true);
        h.samples_answer(&mut kind);
        h.optional_answer(4, &mut kind);
        for _ in 1..STRIKES {
            h.samples_missed();
            h.optional_missed(4, true, &mut kind);
            assert_eq!(h.end_sweep(true), (false, 0));
        }
        h.retry();
        assert!(h.samples_answered && kind.samples_answered);
        assert_eq!((h.optional_answered, kind.answered), (1 << 4, 1 << 4));
    }
}
