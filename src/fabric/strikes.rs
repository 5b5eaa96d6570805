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
}
