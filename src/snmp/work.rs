//! The work one request may cost the responder, whatever its version: the
//! MIB's GetNext steps it takes ([`Metered`]), at most [`STEPS`] a
//! datagram, and a walk SNMPv1 cannot carry steps over a whole Counter64
//! column at once ([`next_instance`]), not cell by cell. A request that
//! would take more is answered genErr; the responder answers the next
//! datagram after at most that much work.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use crate::mib::bulk::{self, Range};
use crate::mib::tables::counter64_column_end;
use crate::mib::{MibHandler, Oid, Value, VarBind};

/// SNMPv1 or a later version (v2c and v3 share the PDU semantics).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Version {
    V1,
    V2,
}

/// The MIB GetNext steps one datagram may take. A GetBulk that fills the
/// largest UDP answer takes one step a varbind (about 2,700 of a port
/// column); a GetNext one step a varbind, up to 21 in SNMPv1 where its
/// walk steps over a run of Counter64 columns.
pub const STEPS: usize = 10_000;

/// A MIB handler that answers at most `steps` GetNexts, then none
/// (the end of the view), and says whether it ran out.
pub struct Metered<'a> {
    pub inner: &'a dyn MibHandler,
    left: AtomicUsize,
    out: AtomicBool,
}

impl<'a> Metered<'a> {
    pub fn new(inner: &'a dyn MibHandler, steps: usize) -> Metered<'a> {
        Metered {
            inner,
            left: AtomicUsize::new(steps),
            out: AtomicBool::new(false),
        }
    }

    /// Whether a GetNext was refused for want of steps.
    pub fn exhausted(&self) -> bool {
        self.out.load(Ordering::Relaxed)
    }
}

impl MibHandler for Metered<'_> {
    fn get(&self, oid: &Oid) -> Value {
        self.inner.get(oid)
    }

    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        self.inner.get_many(oids)
    }

    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        let left = self.left.load(Ordering::Relaxed);
        if left == 0 {
            self.out.store(true, Ordering::Relaxed);
            return None;
        }
        self.left.store(left - 1, Ordering::Relaxed);
        self.inner.get_next(start, include, end)
    }

    delegate_writes!();
}

/// The next instance after `start` an SNMP GetNext answers. SNMPv1 has
/// no Counter64: its walk steps over a Counter64 column of IB-PM-MIB
/// (every instance of which is a Counter64) in one step, and over any
/// other Counter64 instance one at a time.
pub(crate) fn next_instance(
    version: Version,
    start: &Range,
    mib: &dyn MibHandler,
) -> Option<VarBind> {
    let mut range = start.clone();
    loop {
        let vb = bulk::next(mib, &range, |_| true)?;
        if version != Version::V1 || !matches!(vb.value, Value::Counter64(_)) {
            return Some(vb);
        }
        let past = counter64_column_end(vb.name.as_slice()).unwrap_or(vb.name);
        range = Range {
            start: past,
            include: false,
            end: range.end,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mib::schema::Syntax;
    use crate::mib::tables::COLUMNS;

    /// Every Counter64 column of IB-PM-MIB with `rows` rows, and after
    /// them one Integer: a MIB whose GetNext steps are counted.
    struct Columns {
        objects: crate::mib::fixed::Fixed,
        steps: AtomicUsize,
    }

    impl MibHandler for Columns {
        fn get(&self, oid: &Oid) -> Value {
            self.objects.value(oid)
        }
        fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
            self.steps.fetch_add(1, Ordering::Relaxed);
            self.objects.next(start, include, end)
        }
    }

    fn counter64_columns(rows: u32) -> (Columns, Oid, Oid) {
        let mut objects = std::collections::BTreeMap::new();
        let cols: Vec<_> = COLUMNS
            .iter()
            .filter(|c| matches!(c.syntax, Syntax::Counter64))
            .collect();
        assert!(cols.len() > 4, "IB-PM-MIB has Counter64 columns");
        for c in &cols {
            for r in 0..rows {
                let mut name = c.oid().to_vec();
                name.extend([r, 1]);
                objects.insert(Oid::from(name), Value::Counter64(u64::from(r)));
            }
        }
        let first = Oid::from(cols[0].oid().to_vec());
        let beyond = Oid::new(&[2, 7]);
        objects.insert(beyond.clone(), Value::Integer(7));
        let mib = Columns {
            objects: objects.into(),
            steps: AtomicUsize::new(0),
        };
        (mib, first, beyond)
    }

    #[test]
    fn a_v1_walk_steps_over_counter64_columns_whole() {
        let (mib, first, beyond) = counter64_columns(2_000);
        let vb = next_instance(Version::V1, &Range::after(first.clone()), &mib).unwrap();
        assert_eq!(vb.name, beyond);
        let steps = mib.steps.load(Ordering::Relaxed);
        println!(
            "a v1 GetNext over {} cells took {steps} steps",
            mib.objects.len()
        );
        assert!(steps <= 2 * COLUMNS.len(), "{steps} steps");
        // v2c answers the first cell.
        let vb = next_instance(Version::V2, &Range::after(first), &mib).unwrap();
        assert_eq!(vb.value, Value::Counter64(0));
    }

    #[test]
    fn a_request_runs_out_of_steps() {
        let (mib, first, _) = counter64_columns(100);
        let metered = Metered::new(&mib, 3);
        for _ in 0..3 {
            assert!(metered.get_next(&first, false, None).is_some());
        }
        assert!(!metered.exhausted());
        assert_eq!(metered.get_next(&first, false, None), None);
        assert!(metered.exhausted());
        assert_eq!(mib.steps.load(Ordering::Relaxed), 3);
    }
}
