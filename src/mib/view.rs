//! The read side of the MIB: exact Get and ordered GetNext over the latest
//! snapshot. Nothing here touches the fabric.

use std::sync::Arc;
use std::time::Instant;

use super::set::Writes;
use super::tables::{self, COLUMNS, Column, IndexScheme, RowIndex, column_of, table};
use super::{MibHandler, Oid, SetError, SetTxn, Value, VarBind};
use crate::fabric::cache::{Cache, NodeRecord, Snapshot};
use crate::fabric::control::Controller;
use crate::ib::Guid;

/// The IB-PM-MIB view over the cache.
pub struct MibView {
    cache: Arc<Cache>,
    /// The agent's own write state (PortSelect per row, SET plans).
    writes: Writes,
}

impl MibView {
    /// A read-only view: every SET gets notWritable.
    pub fn new(cache: Arc<Cache>) -> Self {
        MibView {
            cache,
            writes: Writes::new(None),
        }
    }

    /// A view that accepts SETs and sends them through `controller`.
    pub fn with_writes(cache: Arc<Cache>, controller: Arc<Controller>) -> Self {
        MibView {
            cache,
            writes: Writes::new(Some(controller)),
        }
    }

    pub fn writes(&self) -> &Writes {
        &self.writes
    }

    pub fn writes_enabled(&self) -> bool {
        self.writes.enabled()
    }

    pub fn controller(&self) -> Option<&Arc<Controller>> {
        self.writes.controller()
    }

    pub fn cache(&self) -> &Arc<Cache> {
        &self.cache
    }

    /// The row's pmPortCountersPortSelect.
    pub fn port_select(&self, guid: Guid) -> u8 {
        self.writes.port_select(guid)
    }

    /// Change the row's pmPortCountersPortSelect.
    pub fn set_port_select(&self, guid: Guid, port: u8) {
        self.writes.set_port_select(guid, port)
    }

    fn value(
        &self,
        col: &Column,
        snap: &Snapshot,
        node: Option<&NodeRecord>,
        row: RowIndex,
    ) -> Option<Value> {
        let port_select = node.map_or(1, |n| self.port_select(n.guid));
        tables::read(col, snap, node, row, port_select)
    }

    fn get_in(&self, snap: &Snapshot, oid: &Oid) -> Value {
        let Some((col, table, suffix)) = column_of(oid.as_slice()) else {
            return Value::NoSuchObject;
        };
        table
            .index
            .parse(suffix)
            .and_then(|row| {
                let node = if table.index == IndexScheme::Scalar {
                    None
                } else {
                    Some(snap.node(row.guid)?)
                };
                self.value(col, snap, node, row)
            })
            .unwrap_or(Value::NoSuchInstance)
    }

    fn next_in(
        &self,
        snap: &Snapshot,
        start: &Oid,
        include: bool,
        end: Option<&Oid>,
    ) -> Option<VarBind> {
        let start = start.as_slice();
        for col in COLUMNS.iter() {
            let Some(table) = table(col.table) else {
                continue;
            };
            let base = col.oid();
            // The index part of `start` when it names this column.
            let after = if start.starts_with(&base) {
                Some(&start[base.len()..])
            } else if start < &*base {
                None
            } else {
                continue;
            };
            let emit = |row: RowIndex, node: Option<&NodeRecord>| -> Option<Option<VarBind>> {
                let idx = table.index.encode(row);
                if let Some(suffix) = after {
                    let before = if include {
                        &*idx < suffix
                    } else {
                        &*idx <= suffix
                    };
                    if before {
                        return None;
                    }
                }
                let value = self.value(col, snap, node, row)?;
                let name = Oid::new(&base).child(&idx);
                if end.is_some_and(|e| !e.is_empty() && name >= *e) {
                    return Some(None);
                }
                Some(Some(VarBind { name, value }))
            };
            if table.index == IndexScheme::Scalar {
                if let Some(found) = emit(RowIndex::node(Guid(0)), None) {
                    return found;
                }
                continue;
            }
            // The first node whose rows may follow `start`: every index
            // begins with the node GUID.
            let from = after.map_or(0, |suffix| {
                let guid_part = &suffix[..suffix.len().min(tables::GUID_INDEX_LEN)];
                snap.nodes
                    .partition_point(|n| tables::guid_index(n.guid).as_slice() < guid_part)
            });
            for node in &snap.nodes[from..] {
                for row in table.index.rows(node) {
                    if let Some(found) = emit(row, Some(node)) {
                        return found;
                    }
                }
            }
        }
        None
    }
}

impl MibHandler for MibView {
    fn get(&self, oid: &Oid) -> Value {
        self.get_in(&self.cache.load(), oid)
    }

    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        let snap = self.cache.load();
        oids.iter().map(|o| self.get_in(&snap, o)).collect()
    }

    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.next_in(&self.cache.load(), start, include, end)
    }

    fn test_set(&self, txn: SetTxn, varbinds: &[VarBind]) -> Result<(), SetError> {
        self.writes
            .test(&self.cache.load(), txn, varbinds, Instant::now())
    }

    fn commit_set(&self, txn: SetTxn) -> Result<(), SetError> {
        self.writes.commit(txn, Instant::now())
    }

    fn undo_set(&self, txn: SetTxn) -> Result<(), SetError> {
        self.writes.undo(txn)
    }

    fn cleanup_set(&self, txn: SetTxn) {
        self.writes.cleanup(txn)
    }

    fn session_closed(&self, session_id: u32) {
        self.writes.session_closed(session_id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::cache::PortRecord;
    use crate::ib::NodeType;
    use crate::pm::{ClassPortInfo, PortCounters};

    fn node(guid: u64, ports: u8) -> NodeRecord {
        NodeRecord {
            guid: Guid(guid),
            sys_guid: Guid(guid),
            node_type: NodeType::Ca,
            vendor_id: 0,
            device_id: 0,
            description: format!("n{guid:x}"),
            num_ports: ports,
            lid: 1,
            reachable: true,
            failed_sweeps: 0,
            class_port_info: Some(ClassPortInfo::default()),
            ports: (1..=ports)
                .map(|num| PortRecord {
                    num,
                    counters: Some(PortCounters {
                        symbol_errors: num as u16 * 10,
                        xmit_data: 0xFFFF_FFF0,
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect(),
            samples_control: None,
            samples_result: None,
            samples_result_ext: None,
            source: Default::default(),
        }
    }

    fn view(nodes: Vec<NodeRecord>) -> MibView {
        let cache = Arc::new(Cache::new());
        cache.publish(Snapshot {
            sweep: 1,
            taken: None,
            interval: std::time::Duration::from_secs(10),
            nodes: nodes.into_iter().map(Arc::new).collect(),
            stats: Default::default(),
            reachable: 0,
            notify: Default::default(),
        });
        MibView::new(cache)
    }

    fn oid(s: &str) -> Oid {
        s.parse().unwrap()
    }

    #[test]
    fn walk_is_ordered_and_complete() {
        // GUIDs chosen so that string order differs from numeric order.
        let v = view(vec![
            node(0x0002_c903_0000_1234, 2),
            node(0x0002_c903_0000_12ff, 1),
        ]);
        let mut cur = Oid::new(&tables::PM_ROOT);
        let mut seen = Vec::new();
        while let Some(vb) = v.get_next(&cur, false, None) {
            assert!(vb.name > cur, "{} after {}", vb.name, cur);
            cur = vb.name.clone();
            seen.push(vb);
            assert!(seen.len() < 1000);
        }
        // Per node: ClassPortInfo (1 column), PortCounters (17) and
        // pmNodeTable (12); per port (3): pmPortTable (13); the agent's 13
        // scalars. No port has 64-bit totals or rates yet.
        assert_eq!(seen.len(), 2 * (18 + 12) + 3 * 13 + 13);
        let hc = oid("1.3.6.1.3.117.1.7");
        assert!(!seen.iter().any(|vb| vb.name.starts_with(hc.as_slice())));
        assert_eq!(
            seen[0].name,
            oid("1.3.6.1.3.117.1.1.1.2.0.2.201.3.0.0.18.52")
        );
        assert_eq!(seen[0].value, Value::Integer(2));
        let sym = oid("1.3.6.1.3.117.1.4.1.3.0.2.201.3.0.0.18.52");
        assert_eq!(v.get(&sym), Value::Gauge32(10));
        v.set_port_select(Guid(0x0002_c903_0000_1234), 2);
        assert_eq!(v.get(&sym), Value::Gauge32(20));
        v.set_port_select(Guid(0x0002_c903_0000_1234), 9);
        assert_eq!(v.get(&sym), Value::Gauge32(0), "absent port reads zero");
    }

    #[test]
    fn get_exceptions() {
        let v = view(vec![node(5, 1)]);
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.6")),
            Value::NoSuchInstance
        );
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0")),
            Value::NoSuchInstance
        );
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.4.1.1.0.0.0.0.0.0.0.5")),
            Value::NoSuchObject
        );
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.4.1.99.0.0.0.0.0.0.0.5")),
            Value::NoSuchObject
        );
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.5")),
            Value::Gauge32(10)
        );
    }

    #[test]
    fn include_and_end() {
        let v = view(vec![node(5, 1), node(6, 1)]);
        let first = oid("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.5");
        assert_eq!(v.get_next(&first, true, None).unwrap().name, first);
        let next = v.get_next(&first, false, None).unwrap();
        assert_eq!(next.name, oid("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.6"));
        // end is exclusive
        assert!(v.get_next(&first, false, Some(&next.name)).is_none());
        // an OID below an instance sorts after it
        let below = first.child(&[7]);
        assert_eq!(v.get_next(&below, false, None).unwrap().name, next.name);
        // sub-identifiers beyond 255 in the index part
        let big = oid("1.3.6.1.3.117.1.4.1.3.4294967295");
        assert_eq!(
            v.get_next(&big, false, None).unwrap().name,
            oid("1.3.6.1.3.117.1.4.1.4.0.0.0.0.0.0.0.5")
        );
        // past the last object
        assert!(v.get_next(&oid("1.3.6.1.3.117.2"), false, None).is_none());
    }
}
#[cfg(test)]
mod port_rows {
    use super::*;

    /// Per-port rows come in (GUID, port) order, every port of the fabric
    /// once, then the next column.
    #[test]
    fn a_port_column_walks_every_port_in_index_order() {
        let rig = crate::rig::AgentRig::swept(crate::rig::RigOptions::default());
        let v = rig.view();
        let col: Oid = "1.3.6.1.3.117.1.6.1.2".parse().unwrap();
        let mut cur = col.clone();
        let mut seen = Vec::new();
        while let Some(vb) = v.get_next(&cur, false, None) {
            if !vb.name.starts_with(col.as_slice()) {
                break;
            }
            assert!(vb.name > cur);
            cur = vb.name.clone();
            seen.push(vb.name);
        }
        let ports: usize = rig.fabric().nodes.iter().map(|n| n.ports.len()).sum();
        assert_eq!(seen.len(), ports);
        assert!(
            seen.iter()
                .all(|o| o.as_slice().len() == col.as_slice().len() + 9)
        );
    }
}
