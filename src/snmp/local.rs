//! The endpoint's own objects, beside the agent's MIB: SNMP-FRAMEWORK-MIB's
//! snmpEngine group (RFC 3411), SNMP-MPD-MIB's snmpMPDStats (RFC 3412) and
//! SNMP-USM-MIB's usmStats (RFC 3414), as snmpd serves them for itself.
//! Answered only by the endpoint (snmpd answers its own through AgentX),
//! only while SNMPv3 is configured.

use std::sync::LazyLock;

use super::usm::Usm;
use crate::mib::{MibHandler, Oid, Value, VarBind};

/// The snmpEngine scalars (`.0` instances): ID, boots, time, max message
/// size.
static ENGINE: LazyLock<[Oid; 4]> =
    LazyLock::new(|| [1, 2, 3, 4].map(|c| Oid::new(&[1, 3, 6, 1, 6, 3, 10, 2, 1, c, 0])));

/// The objects and their values at one moment, in OID order.
pub struct LocalObjects {
    objects: Vec<(Oid, Value)>,
}

impl LocalObjects {
    /// What `usm` says at `engine_time` (snmpEngineMaxMessageSize is the
    /// msgMaxSize it announces).
    pub fn of(usm: &Usm, engine_time: u32) -> LocalObjects {
        let int = |v: u32| Value::Integer(i32::try_from(v).unwrap_or(i32::MAX));
        let engine = [
            Value::OctetString(usm.engine_id().as_bytes().to_vec()),
            int(usm.boots()),
            int(engine_time),
            int(usm.max_message_size()),
        ];
        let mut objects: Vec<(Oid, Value)> = ENGINE.iter().cloned().zip(engine).collect();
        objects.extend(
            usm.stats()
                .mib_counters()
                .iter()
                .map(|(oid, v)| (Oid::new(&oid[..]), Value::Counter32(*v))),
        );
        objects.sort_by(|a, b| a.0.cmp(&b.0));
        LocalObjects { objects }
    }
}

/// A handler that answers [`LocalObjects`] and passes everything else on.
pub struct WithLocal<'a> {
    pub inner: &'a dyn MibHandler,
    pub local: Option<&'a LocalObjects>,
}

impl WithLocal<'_> {
    fn local_get(&self, oid: &Oid) -> Option<Value> {
        let l = self.local?;
        l.objects
            .binary_search_by(|(o, _)| o.cmp(oid))
            .ok()
            .map(|i| l.objects[i].1.clone())
    }
}

impl MibHandler for WithLocal<'_> {
    fn get(&self, oid: &Oid) -> Value {
        self.local_get(oid).unwrap_or_else(|| self.inner.get(oid))
    }

    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        let mut out = self.inner.get_many(oids);
        if self.local.is_some() {
            for (v, o) in out.iter_mut().zip(oids) {
                if let Some(l) = self.local_get(o) {
                    *v = l;
                }
            }
        }
        out
    }

    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        let theirs = self.inner.get_next(start, include, end);
        let Some(l) = self.local else {
            return theirs;
        };
        let ours = l
            .objects
            .iter()
            .find(|(o, _)| if include { o >= start } else { o > start })
            .filter(|(o, _)| end.is_none_or(|e| o < e));
        match (theirs, ours) {
            (Some(t), Some((o, _))) if t.name < *o => Some(t),
            (_, Some((o, v))) => Some(VarBind::new(o.clone(), v.clone())),
            (t, None) => t,
        }
    }

    delegate_writes!();
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snmp::usm::{EngineId, Usm};

    struct Two;
    impl MibHandler for Two {
        fn get(&self, _: &Oid) -> Value {
            Value::NoSuchObject
        }
        fn get_next(&self, start: &Oid, _: bool, _: Option<&Oid>) -> Option<VarBind> {
            let a = Oid::new(&[1, 3, 6, 1, 3, 117, 1]);
            let b = Oid::new(&[1, 3, 6, 1, 9]);
            [a, b]
                .into_iter()
                .find(|o| o > start)
                .map(|o| VarBind::new(o, Value::Integer(7)))
        }
    }

    #[test]
    fn a_walk_merges_the_local_objects_in_order() {
        let usm = Usm::new(EngineId::from_hex("8000000001020304").unwrap(), 5, vec![])
            .unwrap()
            .with_max_message_size(1472);
        let local = LocalObjects::of(&usm, 42);
        let h = WithLocal {
            inner: &Two,
            local: Some(&local),
        };
        let mut seen = Vec::new();
        let mut cur = Oid::new(&[1]);
        while let Some(vb) = h.get_next(&cur, false, None) {
            seen.push(vb.name.to_string());
            cur = vb.name;
        }
        // The two objects of the inner MIB, 4 snmpEngine scalars, 3
        // snmpMPDStats and 6 usmStats counters.
        assert_eq!(seen.len(), 15);
        assert_eq!(seen[0], "1.3.6.1.3.117.1");
        assert_eq!(seen[1], "1.3.6.1.6.3.10.2.1.1.0");
        assert_eq!(seen[5], "1.3.6.1.6.3.11.2.1.1.0");
        assert_eq!(seen[8], "1.3.6.1.6.3.15.1.1.1.0");
        assert_eq!(seen[14], "1.3.6.1.9");
        assert_eq!(
            h.get(&Oid::new(&[1, 3, 6, 1, 6, 3, 10, 2, 1, 2, 0])),
            Value::Integer(5)
        );
        assert_eq!(
            h.get(&Oid::new(&[1, 3, 6, 1, 6, 3, 10, 2, 1, 3, 0])),
            Value::Integer(42)
        );
        let none = WithLocal {
            inner: &Two,
            local: None,
        };
        assert_eq!(
            none.get(&Oid::new(&[1, 3, 6, 1, 6, 3, 10, 2, 1, 2, 0])),
            Value::NoSuchObject
        );
    }
}
