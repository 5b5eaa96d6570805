//! SET varbinds (TestSet/CommitSet/UndoSet/CleanupSet) on a writable MIB
//! view of the simulated fabric, with OIDs and values from the fuzz input.
//! Never a panic; a failed TestSet changes nothing and leaves no plan; a
//! successful TestSet changes nothing until CommitSet; a second CommitSet
//! and a CommitSet after the session closed are refused; an UndoSet that
//! succeeds restores every PortSelect.
#![no_main]

use ibpm_agentx::ib::Guid;
use ibpm_agentx::mib::index::{GUID_INDEX_LEN, guid_index};
use ibpm_agentx::mib::schema::PM_OBJECTS;
use ibpm_agentx::mib::{MibHandler, Oid, SetTxn, Value, VarBind};
use ibpm_agentx_fuzz::{Bytes, with_sim_view};
use libfuzzer_sys::fuzz_target;

fn oid(b: &mut Bytes, guids: &[Guid]) -> Oid {
    let mode = b.u8();
    let mut o = PM_OBJECTS.to_vec();
    match mode % 5 {
        // A column of a known node.
        0 | 1 => {
            o.extend([u32::from(b.u8() % 6), 1, u32::from(b.u8() % 40)]);
            let g = guids[usize::from(b.u8()) % guids.len()];
            o.extend(guid_index(g));
            if mode & 0x80 != 0 {
                o.push(b.u32());
            }
        }
        // A column with an arbitrary index of arbitrary length.
        2 => {
            o.extend([u32::from(b.u8() % 6), 1, u32::from(b.u8() % 40)]);
            let n = usize::from(b.u8()) % (GUID_INDEX_LEN + 3);
            for _ in 0..n {
                let x = b.u8();
                o.push(if x & 0x80 != 0 { b.u32() } else { u32::from(x) });
            }
        }
        // Anything under the MIB's objects, or anything at all.
        k => {
            if k == 4 {
                o.clear();
            }
            let n = usize::from(b.u8()) % 20;
            for _ in 0..n {
                let x = b.u8();
                o.push(if x & 0x80 != 0 { b.u32() } else { u32::from(x) });
            }
        }
    }
    Oid(o)
}

fn small(b: &mut Bytes) -> u32 {
    let x = b.u8();
    if x & 0x80 != 0 {
        b.u32()
    } else {
        u32::from(x & 0x7F)
    }
}

fn value(b: &mut Bytes) -> Value {
    match b.u8() % 13 {
        0 => Value::Integer(small(b) as i32),
        1 => {
            let n = usize::from(b.u8() % 16);
            Value::OctetString(b.take(n).to_vec())
        }
        2 => Value::Null,
        3 => Value::ObjectIdentifier(Oid(vec![1, 3, small(b)])),
        4 => Value::IpAddress([b.u8(), b.u8(), b.u8(), b.u8()]),
        5 => Value::Counter32(small(b)),
        6 | 7 => Value::Gauge32(small(b)),
        8 => Value::TimeTicks(small(b)),
        9 => Value::Opaque(vec![b.u8()]),
        10 => Value::Counter64(b.u64()),
        11 => Value::Integer((small(b) as i32).wrapping_neg()),
        _ => [
            Value::NoSuchObject,
            Value::NoSuchInstance,
            Value::EndOfMibView,
        ][usize::from(b.u8() % 3)]
        .clone(),
    }
}

fuzz_target!(|data: &[u8]| {
    with_sim_view(|s| {
        let guids: Vec<Guid> = s.sim.fabric().nodes.iter().map(|n| n.id.guid).collect();
        let selects = || -> Vec<u8> { guids.iter().map(|&g| s.view.port_select(g)).collect() };
        let mut b = Bytes(data);
        let flags = b.u8();
        let txn = SetTxn {
            session_id: u32::from(b.u8()),
            transaction_id: u32::from(b.u8()),
        };
        let mut vbs = Vec::new();
        while !b.is_empty() && vbs.len() < 64 {
            let name = oid(&mut b, &guids);
            vbs.push(VarBind::new(name, value(&mut b)));
        }
        let before = selects();
        match s.view.test_set(txn, &vbs) {
            Err(e) => {
                assert!(
                    usize::from(e.index) <= vbs.len(),
                    "error index {} past {} varbinds",
                    e.index,
                    vbs.len()
                );
                assert_eq!(selects(), before, "a failed TestSet changed PortSelects");
                assert!(
                    s.view.commit_set(txn).is_err(),
                    "a failed TestSet left a plan"
                );
                s.view.cleanup_set(txn);
            }
            Ok(()) => {
                assert_eq!(selects(), before, "TestSet changed PortSelects");
                if flags & 2 != 0 {
                    s.view.session_closed(txn.session_id);
                    assert!(
                        s.view.commit_set(txn).is_err(),
                        "a closed session's plan was applied"
                    );
                    assert_eq!(
                        selects(),
                        before,
                        "a closed session's plan changed PortSelects"
                    );
                } else if flags & 1 != 0 && s.view.commit_set(txn).is_ok() {
                    assert!(
                        s.view.commit_set(txn).is_err(),
                        "a second CommitSet was accepted"
                    );
                    if s.view.undo_set(txn).is_ok() {
                        assert_eq!(selects(), before, "UndoSet did not restore PortSelects");
                    }
                }
                s.view.cleanup_set(txn);
                // Leave the view as it was for the next input.
                for (&g, &p) in guids.iter().zip(&before) {
                    s.view.set_port_select(g, p);
                }
            }
        }
    });
});
