//! pmEventTable ({ pmMIBObjects 26 }): the event log as a table an NMS
//! walks, one row per event the log holds, indexed by its number
//! (pmEventIndex, the `seq` of `/api/events`). Its rows come from the log,
//! not the snapshot: the view asks here for the instances under the
//! table's OID and merges them into its walk in OID order. Nothing here
//! waits on the fabric; a read copies one event out of the log.

use super::schema::PM_OBJECTS;
use super::{Oid, Value, VarBind};
use crate::events::{Entry, Log};

/// The table's number under pmMIBObjects.
pub const TABLE: u32 = 26;

/// The columns (pmEventEntry N), in order; 1 is the index
/// (not-accessible).
pub const COLUMNS: [(u32, &str); 14] = [
    (2, "pmEventTime"),
    (3, "pmEventSweep"),
    (4, "pmEventKind"),
    (5, "pmEventNodeGuid"),
    (6, "pmEventNodeName"),
    (7, "pmEventPort"),
    (8, "pmEventPeerGuid"),
    (9, "pmEventPeerPort"),
    (10, "pmEventPeerName"),
    (11, "pmEventBefore"),
    (12, "pmEventAfter"),
    (13, "pmEventDetail"),
    (14, "pmEventSuppressed"),
    (15, "pmEventSimulated"),
];

const FIRST: u32 = 2;
const LAST: u32 = 15;

/// pmEventEntry's OID: pmMIBObjects.26.1.
pub fn entry_oid() -> Vec<u32> {
    let mut v = PM_OBJECTS.to_vec();
    v.extend([TABLE, 1]);
    v
}

fn gauge(v: u64) -> Value {
    Value::Gauge32(u32::try_from(v).unwrap_or(u32::MAX))
}

fn text(s: &str) -> Value {
    Value::OctetString(s.as_bytes()[..s.len().min(255)].to_vec())
}

fn truth(b: bool) -> Value {
    Value::Integer(if b { 1 } else { 2 })
}

/// Column `col` of event `e`.
pub fn value(col: u32, e: &Entry) -> Option<Value> {
    let peer = e.peer.as_ref();
    Some(match col {
        2 => super::read::date_and_time(e.time_ms),
        3 => gauge(e.sweep),
        4 => Value::Integer(e.kind.def().mib as i32),
        5 => Value::OctetString(e.guid.octets().to_vec()),
        6 => text(&e.name),
        7 => gauge(e.port.into()),
        8 => Value::OctetString(peer.map_or([0; 8], |p| p.0.octets()).to_vec()),
        9 => gauge(peer.map_or(0, |p| p.1).into()),
        10 => text(peer.map_or("", |p| &*p.2)),
        11 => gauge(e.before),
        12 => gauge(e.after),
        13 => text(&e.detail),
        14 => truth(e.suppressed),
        15 => truth(e.simulated),
        _ => return None,
    })
}

/// The index of an event: its number (at most 2^32 - 1 in the MIB).
fn index(seq: u64) -> Option<u32> {
    u32::try_from(seq).ok().filter(|&i| i > 0)
}

/// Get of `oid`: None when it is not under pmEventEntry (the view answers
/// it), else the instance's value or noSuchInstance/noSuchObject.
pub fn get(log: Option<&Log>, oid: &[u32]) -> Option<Value> {
    let base = entry_oid();
    let rest = oid.strip_prefix(base.as_slice())?;
    let Some((&col, suffix)) = rest.split_first() else {
        return Some(Value::NoSuchObject);
    };
    if !(FIRST..=LAST).contains(&col) {
        return Some(Value::NoSuchObject);
    }
    let found = match (suffix, log) {
        (&[i], Some(log)) if i > 0 => log.get(i.into()).and_then(|e| value(col, &e)),
        _ => None,
    };
    Some(found.unwrap_or(Value::NoSuchInstance))
}

/// The first instance of the table after `start` (at it with `include`),
/// in OID order: column by column, rows by number.
pub fn next(log: Option<&Log>, start: &[u32], include: bool) -> Option<VarBind> {
    let log = log?;
    let base = entry_oid();
    // Where `start` is: before the table, in a column, or past it.
    let (mut col, mut from, mut incl) = if start < base.as_slice() && !start.starts_with(&base) {
        (FIRST, 0u64, true)
    } else if let Some(rest) = start.strip_prefix(base.as_slice()) {
        match rest {
            [] => (FIRST, 0, true),
            [c, ..] if *c < FIRST => (FIRST, 0, true),
            [c, ..] if *c > LAST => return None,
            [c] => (*c, 0, true),
            [c, i, more @ ..] => (*c, u64::from(*i), include && more.is_empty()),
        }
    } else {
        return None;
    };
    while col <= LAST {
        if let Some(e) = log.first_from(from, incl)
            && let (Some(i), Some(v)) = (index(e.seq), value(col, &e))
        {
            let mut name = base.clone();
            name.extend([col, i]);
            return Some(VarBind {
                name: Oid(name),
                value: v,
            });
        }
        col += 1;
        (from, incl) = (0, true);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::events::{Bounds, Kind, New};
    use crate::ib::Guid;

    fn log() -> Log {
        let log = Log::new(Bounds::default(), None);
        for (i, k) in [Kind::PortState, Kind::VerdictRaised]
            .into_iter()
            .enumerate()
        {
            log.write([New {
                kind: Some(k),
                time_ms: 1_700_000_000_000 + i as u64,
                guid: Guid(0x10),
                name: "leaf07",
                port: 3,
                before: 4,
                after: 1,
                detail: "flapping",
                ..Default::default()
            }]);
        }
        log
    }

    fn oid(col: u32, i: u32) -> Vec<u32> {
        let mut v = entry_oid();
        v.extend([col, i]);
        v
    }

    #[test]
    fn rows_are_read_by_number() {
        let log = log();
        assert_eq!(get(Some(&log), &oid(4, 1)), Some(Value::Integer(4)));
        assert_eq!(get(Some(&log), &oid(4, 2)), Some(Value::Integer(5)));
        assert_eq!(
            get(Some(&log), &oid(6, 2)),
            Some(Value::OctetString(b"leaf07".to_vec()))
        );
        assert_eq!(get(Some(&log), &oid(4, 3)), Some(Value::NoSuchInstance));
        assert_eq!(get(Some(&log), &oid(1, 1)), Some(Value::NoSuchObject));
        assert_eq!(get(None, &oid(4, 1)), Some(Value::NoSuchInstance));
        assert_eq!(get(Some(&log), &PM_OBJECTS), None, "not the table's");
    }

    #[test]
    fn a_walk_goes_column_by_column_and_row_by_row() {
        let log = log();
        let mut at = PM_OBJECTS.to_vec();
        let mut names = Vec::new();
        while let Some(vb) = next(Some(&log), &at, false) {
            names.push(vb.name.0.clone());
            at = vb.name.0;
            assert!(names.len() <= 100);
        }
        assert_eq!(names.len(), 2 * COLUMNS.len());
        assert_eq!(names[0], oid(2, 1));
        assert_eq!(names[1], oid(2, 2));
        assert_eq!(names[2], oid(3, 1));
        assert_eq!(names.last().unwrap(), &oid(15, 2));
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names, "in OID order");
        // From an instance, with and without it.
        assert_eq!(
            next(Some(&log), &oid(4, 1), true).unwrap().name.0,
            oid(4, 1)
        );
        assert_eq!(
            next(Some(&log), &oid(4, 1), false).unwrap().name.0,
            oid(4, 2)
        );
        // Past the table, and with no log.
        let mut past = PM_OBJECTS.to_vec();
        past.push(27);
        assert!(next(Some(&log), &past, false).is_none());
        assert!(next(None, &PM_OBJECTS, false).is_none());
    }
}

#[cfg(test)]
mod mib_file {
    use super::*;
    use crate::events::KINDS;

    fn mib() -> &'static str {
        include_str!("../../mibs/IB-PM-MIB.txt")
    }

    fn body(name: &str) -> &'static str {
        let at = mib()
            .find(&format!("\n{name} OBJECT-TYPE"))
            .unwrap_or_else(|| panic!("{name} not in the MIB"));
        let b = &mib()[at..];
        &b[..b.find("::=").unwrap() + 40]
    }

    fn camel(name: &str) -> String {
        let mut out = String::new();
        for (i, w) in name.split('-').enumerate() {
            let mut c = w.chars();
            if i > 0
                && let Some(f) = c.next()
            {
                out.extend(f.to_uppercase());
            }
            out.extend(c);
        }
        out
    }

    #[test]
    fn the_table_and_its_columns_are_in_the_mib_file() {
        assert!(mib().contains(&format!("::= {{ pmMIBObjects {TABLE} }}")));
        for (n, name) in COLUMNS {
            let b = body(name);
            assert!(b.contains("MAX-ACCESS  read-only"), "{name}");
            assert!(b.contains(&format!("::= {{ pmEventEntry {n} }}")), "{name}");
        }
    }

    #[test]
    fn the_kinds_are_the_enumeration_of_pm_event_kind() {
        let b = body("pmEventKind");
        let syntax = &b[b.find("INTEGER {").unwrap()..b.find('}').unwrap()];
        let listed = syntax.matches('(').count();
        assert_eq!(listed, KINDS.len());
        for d in &KINDS {
            let want = format!("{}({})", camel(d.name), d.mib);
            assert!(syntax.contains(&want), "{want} in {syntax}");
        }
    }
}
