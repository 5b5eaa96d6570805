//! A MIB of fixed objects, for tests: GET and GETNEXT over a sorted map,
//! with the range of RFC 2741 7.2.3.1 (`include`: the start itself may
//! answer; `end`: instances at or past it do not).

use std::collections::BTreeMap;
use std::ops::Bound::{Excluded, Included, Unbounded};

use super::{MibHandler, Oid, Value, VarBind};

#[derive(Clone, Debug, Default)]
pub struct Fixed(pub BTreeMap<Oid, Value>);

impl Fixed {
    /// The object at `oid`, else noSuchObject.
    pub fn value(&self, oid: &Oid) -> Value {
        self.0.get(oid).cloned().unwrap_or(Value::NoSuchObject)
    }

    /// The first object in the range.
    pub fn next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        let from = if include {
            Included(start)
        } else {
            Excluded(start)
        };
        self.0
            .range::<Oid, _>((from, Unbounded))
            .next()
            .filter(|(k, _)| end.is_none_or(|e| *k < e))
            .map(|(k, v)| VarBind::new(k.clone(), v.clone()))
    }
}

impl From<BTreeMap<Oid, Value>> for Fixed {
    fn from(m: BTreeMap<Oid, Value>) -> Self {
        Fixed(m)
    }
}

impl std::ops::Deref for Fixed {
    type Target = BTreeMap<Oid, Value>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl std::ops::DerefMut for Fixed {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl MibHandler for Fixed {
    fn get(&self, oid: &Oid) -> Value {
        self.value(oid)
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.next(start, include, end)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_range_takes_include_and_end() {
        let o = |n: u32| Oid::new(&[1, 3, n]);
        let m = Fixed(BTreeMap::from([
            (o(1), Value::Integer(1)),
            (o(2), Value::Integer(2)),
        ]));
        assert_eq!(m.next(&o(1), false, None).unwrap().name, o(2));
        assert_eq!(m.next(&o(1), true, None).unwrap().name, o(1));
        assert!(m.next(&o(1), false, Some(&o(2))).is_none());
        assert_eq!(m.value(&o(3)), Value::NoSuchObject);
    }
}
