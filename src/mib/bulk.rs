//! GetBulk over a MIB view, for both protocol front ends: the AgentX core
//! (RFC 2741 7.2.3.3) and the built-in responder (RFC 3416 4.2.3) walk
//! with [`bulk`], each measuring a varbind in its own encoding. Also the
//! one GetNext step both use ([`next`]).
//!
//! The first `non_repeaters` ranges are answered once, the others up to
//! `max_repetitions` times, each repetition starting after the previous
//! answer of its range; a range past its end answers endOfMibView with the
//! last name it had, and the walk stops after the repetition in which every
//! repeating range had ended. One [`Budget`] (varbinds and octets) bounds
//! the non-repeaters and the repetitions alike: the answer ends before the
//! first varbind that does not fit, and [`Bulk::cut`] says where.

use super::{MibHandler, Oid, Value, VarBind};

/// Where a walk of one request varbind stands: the next instance after
/// `start` (at `start` too when `include`), before `end` when there is one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub start: Oid,
    pub include: bool,
    pub end: Option<Oid>,
}

impl Range {
    /// The instances after `start`, to the end of the view (an SNMP
    /// GetNext or GetBulk varbind).
    pub fn after(start: Oid) -> Self {
        Range {
            start,
            include: false,
            end: None,
        }
    }
}

/// The largest SNMP message over UDP: 65535 octets less the 8 of the UDP
/// header and the 20 of the IPv4 header. No answer of either front end is
/// larger (an AgentX master puts the varbinds into one such message).
pub const MAX_UDP_PAYLOAD: usize = 65_507;

/// What one answer may hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Budget {
    pub varbinds: usize,
    /// The sum of the varbinds' encoded sizes, as the caller's encoding
    /// measures them.
    pub octets: usize,
}

/// Where a walk ended for want of room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cut {
    /// Among the non-repeaters (the answer holds only some of them).
    NonRepeaters,
    /// Among the repetitions (every non-repeater is in the answer).
    Repetitions,
}

/// The answer to a GetBulk: the encoded varbinds that fit, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bulk<T> {
    pub varbinds: Vec<T>,
    /// `None` when the walk ended as RFC 3416 says, not for want of room.
    pub cut: Option<Cut>,
}

/// A varbind the caller's encoding refused: the 1-based position of its
/// request varbind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unencodable {
    pub index: usize,
}

/// The first instance in `range` whose value `keep` accepts, skipping
/// exception values (a view answers GetNext with instances). `None`:
/// endOfMibView for this range, also when the view answers a name that is
/// not after `start` or not before `end` (a view in error ends its walk
/// rather than loop).
pub fn next(
    view: &dyn MibHandler,
    range: &Range,
    keep: impl Fn(&Value) -> bool,
) -> Option<VarBind> {
    let end = range.end.as_ref();
    let vb = view.get_next(&range.start, range.include, end)?;
    let mut vb = within(vb, &range.start, range.include, end)?;
    loop {
        if !vb.value.is_exception() && keep(&vb.value) {
            return Some(vb);
        }
        let after = vb.name;
        vb = within(view.get_next(&after, false, end)?, &after, false, end)?;
    }
}

/// `vb` when its name is after `start` (or at it, when `include`) and
/// before `end`.
fn within(vb: VarBind, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
    let forward = vb.name > *start || (include && vb.name == *start);
    if forward && end.is_none_or(|e| vb.name < *e) {
        return Some(vb);
    }
    tracing::warn!(%start, got = %vb.name, ?end, "MIB get_next answered outside its range; ending the walk");
    None
}

/// RFC 3416 4.2.3 over `view` within `budget`: `encode` gives each
/// varbind's encoding and its size in octets, `None` when it cannot be
/// encoded (the walk stops with that varbind's request position).
pub fn bulk<T>(
    view: &dyn MibHandler,
    mut ranges: Vec<Range>,
    non_repeaters: usize,
    max_repetitions: usize,
    budget: Budget,
    mut encode: impl FnMut(VarBind) -> Option<(T, usize)>,
) -> Result<Bulk<T>, Unencodable> {
    let n = non_repeaters.min(ranges.len());
    let mut out: Vec<T> = Vec::with_capacity(n.min(budget.varbinds));
    let mut octets = 0usize;
    // Adds one varbind if it fits; `Ok(false)` when it does not.
    let mut push = |vb: VarBind, index: usize, out: &mut Vec<T>| {
        if out.len() >= budget.varbinds {
            return Ok(false);
        }
        let (t, size) = encode(vb).ok_or(Unencodable { index })?;
        octets = octets.saturating_add(size);
        if octets > budget.octets {
            return Ok(false);
        }
        out.push(t);
        Ok(true)
    };
    for (i, r) in ranges[..n].iter().enumerate() {
        let vb = next(view, r, |_| true)
            .unwrap_or_else(|| VarBind::new(r.start.clone(), Value::EndOfMibView));
        if !push(vb, i + 1, &mut out)? {
            return Ok(Bulk {
                varbinds: out,
                cut: Some(Cut::NonRepeaters),
            });
        }
    }
    let repeaters = &mut ranges[n..];
    if repeaters.is_empty() {
        return Ok(Bulk {
            varbinds: out,
            cut: None,
        });
    }
    let mut ended = vec![false; repeaters.len()];
    for _ in 0..max_repetitions {
        for (j, (r, done)) in repeaters.iter_mut().zip(ended.iter_mut()).enumerate() {
            let found = if *done { None } else { next(view, r, |_| true) };
            let vb = match found {
                Some(vb) => {
                    r.start = vb.name.clone();
                    r.include = false;
                    vb
                }
                None => {
                    *done = true;
                    VarBind::new(r.start.clone(), Value::EndOfMibView)
                }
            };
            if !push(vb, n + j + 1, &mut out)? {
                return Ok(Bulk {
                    varbinds: out,
                    cut: Some(Cut::Repetitions),
                });
            }
        }
        if ended.iter().all(|d| *d) {
            break;
        }
    }
    Ok(Bulk {
        varbinds: out,
        cut: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A view over a sorted list of integers.
    struct List(Vec<VarBind>);

    impl List {
        fn of(names: &[&[u32]]) -> Self {
            List(
                names
                    .iter()
                    .zip(1..)
                    .map(|(n, i)| VarBind::new(Oid::new(n), Value::Integer(i)))
                    .collect(),
            )
        }
    }

    impl MibHandler for List {
        fn get(&self, _: &Oid) -> Value {
            Value::NoSuchObject
        }
        fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
            self.0
                .iter()
                .find(|v| v.name > *start || (include && v.name == *start))
                .filter(|v| end.is_none_or(|e| v.name < *e))
                .cloned()
        }
    }

    /// Each varbind as itself, one octet each.
    fn one(vb: VarBind) -> Option<(VarBind, usize)> {
        Some((vb, 1))
    }

    const ANY: Budget = Budget {
        varbinds: usize::MAX,
        octets: usize::MAX,
    };

    fn after(s: &[u32]) -> Range {
        Range::after(Oid::new(s))
    }

    fn shown(b: &Bulk<VarBind>) -> Vec<String> {
        b.varbinds
            .iter()
            .map(|v| match v.value {
                Value::Integer(i) => format!("{}={i}", v.name),
                _ => format!("{}=end", v.name),
            })
            .collect()
    }

    fn table() -> List {
        List::of(&[&[1, 1], &[2, 1], &[2, 2], &[2, 3], &[3, 1], &[3, 2]])
    }

    #[test]
    fn repetitions_interleave_after_the_non_repeaters() {
        let b = bulk(
            &table(),
            vec![after(&[1]), after(&[2]), after(&[3])],
            1,
            2,
            ANY,
            one,
        )
        .unwrap();
        assert_eq!(b.cut, None);
        assert_eq!(shown(&b), ["1.1=1", "2.1=2", "3.1=5", "2.2=3", "3.2=6"]);
    }

    #[test]
    fn an_ended_range_repeats_its_last_name_until_every_range_has_ended() {
        let b = bulk(
            &table(),
            vec![after(&[2, 2]), after(&[3, 1])],
            0,
            50,
            ANY,
            one,
        )
        .unwrap();
        assert_eq!(
            shown(&b),
            [
                "2.3=4", "3.2=6", "3.1=5", "3.2=end", "3.2=6", "3.2=end", "3.2=end", "3.2=end"
            ]
        );
        assert_eq!(b.cut, None);
    }

    #[test]
    fn non_repeaters_beyond_the_list_and_zero_repetitions() {
        let b = bulk(&table(), vec![after(&[3, 2])], 9, 5, ANY, one).unwrap();
        assert_eq!(shown(&b), ["3.2=end"]);
        let b = bulk(&table(), vec![after(&[1]), after(&[2])], 1, 0, ANY, one).unwrap();
        assert_eq!(shown(&b), ["1.1=1"]);
        let b = bulk(&table(), vec![], 0, 5, ANY, one).unwrap();
        assert!(b.varbinds.is_empty());
    }

    #[test]
    fn a_range_end_bounds_every_repetition() {
        let r = Range {
            start: Oid::new(&[2]),
            include: false,
            end: Some(Oid::new(&[2, 3])),
        };
        let b = bulk(&table(), vec![r], 0, 10, ANY, one).unwrap();
        assert_eq!(shown(&b), ["2.1=2", "2.2=3", "2.2=end"]);
        // Included start: the start itself is the first answer.
        let r = Range {
            start: Oid::new(&[2, 2]),
            include: true,
            end: None,
        };
        let b = bulk(&table(), vec![r], 1, 0, ANY, one).unwrap();
        assert_eq!(shown(&b), ["2.2=3"]);
    }

    #[test]
    fn one_budget_bounds_non_repeaters_and_repetitions_alike() {
        let ranges = || vec![after(&[1]), after(&[2]), after(&[3])];
        let all = bulk(&table(), ranges(), 1, 10, ANY, one).unwrap();
        assert_eq!(all.varbinds.len(), 13);
        for k in 0..all.varbinds.len() {
            let by_count = Budget {
                varbinds: k,
                octets: usize::MAX,
            };
            let by_octets = Budget {
                varbinds: usize::MAX,
                octets: 3 * k,
            };
            let three = |vb| Some((vb, 3));
            for b in [
                bulk(&table(), ranges(), 1, 10, by_count, one).unwrap(),
                bulk(&table(), ranges(), 1, 10, by_octets, three).unwrap(),
            ] {
                assert_eq!(b.varbinds, all.varbinds[..k]);
                let want = if k < 1 {
                    Cut::NonRepeaters
                } else {
                    Cut::Repetitions
                };
                assert_eq!(b.cut, Some(want), "{k}");
            }
        }
        // Many non-repeaters: the budget ends them too.
        let b = bulk(
            &table(),
            ranges(),
            3,
            10,
            Budget {
                varbinds: 2,
                octets: usize::MAX,
            },
            one,
        )
        .unwrap();
        assert_eq!((b.varbinds.len(), b.cut), (2, Some(Cut::NonRepeaters)));
    }

    #[test]
    fn an_unencodable_varbind_names_its_request_position() {
        let refuse_3_1 = |vb: VarBind| (vb.name != Oid::new(&[3, 1])).then_some((vb, 1));
        let e = bulk(
            &table(),
            vec![after(&[1]), after(&[2]), after(&[3])],
            1,
            3,
            ANY,
            refuse_3_1,
        );
        assert_eq!(e, Err(Unencodable { index: 3 }));
        let e = bulk(
            &table(),
            vec![after(&[3]), after(&[1])],
            1,
            3,
            ANY,
            refuse_3_1,
        );
        assert_eq!(e, Err(Unencodable { index: 1 }));
    }

    /// A view that answers exceptions, or names behind the start.
    struct Odd;
    impl MibHandler for Odd {
        fn get(&self, _: &Oid) -> Value {
            Value::NoSuchObject
        }
        fn get_next(&self, start: &Oid, _: bool, _: Option<&Oid>) -> Option<VarBind> {
            let s = start.as_slice();
            match s.first() {
                Some(1) if s.len() < 3 => {
                    let mut n = s.to_vec();
                    n.push(0);
                    Some(VarBind::new(Oid::new(&n), Value::NoSuchInstance))
                }
                Some(1) => Some(VarBind::new(Oid::new(&[2]), Value::Integer(7))),
                _ => Some(VarBind::new(Oid::new(&[1]), Value::Integer(0))),
            }
        }
    }

    #[test]
    fn next_skips_exceptions_and_ends_a_view_that_goes_back() {
        let vb = next(&Odd, &after(&[1]), |_| true).unwrap();
        assert_eq!((vb.name, vb.value), (Oid::new(&[2]), Value::Integer(7)));
        assert_eq!(next(&Odd, &after(&[2]), |_| true), None);
        assert_eq!(next(&Odd, &after(&[1]), |v| *v != Value::Integer(7)), None);
        let bounded = Range {
            start: Oid::new(&[1]),
            include: false,
            end: Some(Oid::new(&[1, 5])),
        };
        assert_eq!(next(&Odd, &bounded, |_| true), None);
    }
}
