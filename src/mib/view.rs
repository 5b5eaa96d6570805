//! The read side of the MIB: exact Get and ordered GetNext over the latest
//! snapshot. Nothing here touches the fabric.

use crate::time::Clock;
use std::sync::Arc;

use super::index::{IndexScheme, RowIndex};
use super::read::{self, Row};
use super::schema::{Column, Source, Table};
use super::set::Writes;
use super::tables::{COLUMNS, column_of, table};
use super::{EndpointCounters, MibHandler, Oid, SetError, SetTxn, Value, VarBind};
use crate::fabric::cache::{Cache, Snapshot};
use crate::fabric::control::Controller;
use crate::fabric::federation::Writers;
use crate::fabric::record::{NodeRecord, PortRecord};
use crate::ib::Guid;

/// The IB-PM-MIB view over the cache.
pub struct MibView {
    cache: Arc<Cache>,
    /// The agent's own write state (PortSelect per row, SET plans).
    writes: Writes,
    /// The built-in SNMP endpoint's counters (pmAgentSnmp*).
    endpoint: Arc<EndpointCounters>,
    /// The event log pmEventTable shows.
    events: Option<Arc<crate::events::Log>>,
    /// Where the reads and the SETs read the time.
    clock: Clock,
}

impl MibView {
    /// A read-only view: every SET gets notWritable.
    pub fn new(cache: Arc<Cache>) -> Self {
        MibView {
            cache,
            writes: Writes::new(None),
            endpoint: Arc::default(),
            events: None,
            clock: Clock::system(),
        }
    }

    /// A view that accepts SETs and sends them through `controller`.
    pub fn with_writes(cache: Arc<Cache>, controller: Arc<Controller>) -> Self {
        Self::with_writers(cache, Writers::one(controller))
    }

    /// A view that accepts SETs and sends each through the write path of
    /// its node's subnet.
    pub fn with_writers(cache: Arc<Cache>, writers: Writers) -> Self {
        MibView {
            cache,
            writes: Writes::new(Some(Arc::new(writers))),
            endpoint: Arc::default(),
            events: None,
            clock: Clock::system(),
        }
    }

    /// The reads and the SETs read the time from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// Shows `counters` (the built-in endpoint's) in the pmAgent scalars.
    pub fn with_endpoint_counters(mut self, counters: Arc<EndpointCounters>) -> Self {
        self.endpoint = counters;
        self
    }

    /// Shows `log` in pmEventTable.
    pub fn with_events(mut self, log: Option<Arc<crate::events::Log>>) -> Self {
        self.events = log;
        self
    }

    pub fn writes(&self) -> &Writes {
        &self.writes
    }

    pub fn writes_enabled(&self) -> bool {
        self.writes.enabled()
    }

    pub fn controller(&self) -> Option<&Arc<Writers>> {
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

    /// The row's pmPortCountersPortSelect, looked up only for the columns
    /// that show it.
    fn port_select_for(&self, col: &Column, node: Option<&NodeRecord>) -> u8 {
        match (col.source, node) {
            (Source::PortSelect | Source::Counter(_), Some(n)) => self.port_select(n.id.guid),
            _ => 1,
        }
    }

    fn value(
        &self,
        col: &Column,
        snap: &Snapshot,
        node: Option<&NodeRecord>,
        row: RowIndex,
    ) -> Option<Value> {
        read::read(
            col,
            snap,
            &self.endpoint,
            node,
            row,
            self.port_select_for(col, node),
            self.clock.now(),
        )
    }

    fn get_in(&self, snap: &Snapshot, oid: &Oid) -> Value {
        if let Some(v) = super::events::get(self.events.as_deref(), oid.as_slice()) {
            return v;
        }
        let Some((col, table, suffix)) = column_of(oid.as_slice()) else {
            return Value::NoSuchObject;
        };
        table
            .index
            .parse(suffix)
            .and_then(|row| {
                let node = match table.index {
                    IndexScheme::Scalar | IndexScheme::Subnet | IndexScheme::PlanDiff => None,
                    _ => Some(snap.node(row.guid)?),
                };
                self.value(col, snap, node, row)
            })
            .unwrap_or(Value::NoSuchInstance)
    }

    /// pmEventTable's rows, from the event log, in OID order with
    /// `found`, the first instance of the declared columns after `start`
    /// (looked at only when the walk has reached the table).
    fn or_event(
        &self,
        found: Option<VarBind>,
        start: &Oid,
        include: bool,
        end: Option<&Oid>,
    ) -> Option<VarBind> {
        let table = super::events::entry_oid();
        if found
            .as_ref()
            .is_some_and(|vb| vb.name.as_slice() < table.as_slice())
        {
            return found;
        }
        let event = super::events::next(self.events.as_deref(), start.as_slice(), include)
            .filter(|vb| end.is_none_or(|e| e.is_empty() || vb.name < *e));
        match (found, event) {
            (Some(a), Some(b)) => Some(if b.name < a.name { b } else { a }),
            (a, b) => a.or(b),
        }
    }

    /// The first instance of the declared columns after `start` (at or
    /// after it with `include`) and before `end`. The column is found by
    /// binary search over the sorted columns, the node by binary search on
    /// its GUID; rows are then visited in index order, each node tested
    /// once per column.
    fn next_column(
        &self,
        snap: &Snapshot,
        start: &Oid,
        include: bool,
        end: Option<&Oid>,
    ) -> Option<VarBind> {
        let start = start.as_slice();
        // The columns whose instances all sort before `start`: those whose
        // OID sorts before `start`'s first arcs (not a prefix of it).
        let first = COLUMNS.partition_point(|c| {
            let base = c.oid();
            *base < start[..base.len().min(start.len())]
        });
        for col in &COLUMNS[first..] {
            let Some(table) = table(col.table) else {
                continue;
            };
            let base = col.oid();
            // The index part of `start` when it names this column.
            let after = start.starts_with(&base).then(|| &start[base.len()..]);
            let found = match table.index {
                IndexScheme::Scalar => {
                    let row = self.row(col, snap, None, None, RowIndex::node(Guid(0)));
                    self.emit(col, table, row, after, include)
                }
                IndexScheme::PlanDiff => snap.plan.verdicts.iter().find_map(|v| {
                    let row = Row {
                        plan: Some(v),
                        ..self.row(col, snap, None, None, read::plan_row(v))
                    };
                    self.emit(col, table, row, after, include)
                }),
                IndexScheme::Subnet => snap.subnets.iter().find_map(|s| {
                    let index = RowIndex::subnet(s.index.checked_add(1)?);
                    let row = Row {
                        subnet: Some(s),
                        ..self.row(col, snap, None, None, index)
                    };
                    self.emit(col, table, row, after, include)
                }),
                _ => self.next_row(col, table, snap, after, include),
            };
            if let Some(vb) = found {
                if end.is_some_and(|e| !e.is_empty() && vb.name >= *e) {
                    return None;
                }
                return Some(vb);
            }
        }
        None
    }

    /// The first row of `col` (a table's column) after the index `after`.
    fn next_row(
        &self,
        col: &Column,
        table: &Table,
        snap: &Snapshot,
        after: Option<&[u32]>,
        include: bool,
    ) -> Option<VarBind> {
        let from = after.map_or(0, |suffix| table.index.first_node(&snap.nodes, suffix));
        for node in &snap.nodes[from..] {
            if !(table.present)(node) {
                continue;
            }
            if !table.per_port() {
                let row = self.row(col, snap, Some(node), None, RowIndex::node(node.id.guid));
                if let Some(vb) = self.emit(col, table, row, after, include) {
                    return Some(vb);
                }
                continue;
            }
            let first = after.map_or(0, |suffix| table.index.first_port(node, suffix));
            for port in node.ports().skip(first) {
                for lane in 0..table.index.lanes() {
                    let index = RowIndex {
                        lane,
                        ..RowIndex::port(node.id.guid, port.num())
                    };
                    let row = self.row(col, snap, Some(node), Some(port), index);
                    if let Some(vb) = self.emit(col, table, row, after, include) {
                        return Some(vb);
                    }
                }
            }
        }
        None
    }

    /// The row `index` of a node's (or the scalars') column `col`.
    fn row<'a>(
        &'a self,
        col: &Column,
        snap: &'a Snapshot,
        node: Option<&'a NodeRecord>,
        port: Option<&'a PortRecord>,
        index: RowIndex,
    ) -> Row<'a> {
        Row {
            snap,
            endpoint: &self.endpoint,
            node,
            port,
            subnet: None,
            plan: None,
            index,
            port_select: self.port_select_for(col, node),
            now: self.clock.now(),
        }
    }

    /// The varbind of one row, unless it sorts before `after` (the index
    /// part of the start OID) or the row is absent.
    fn emit(
        &self,
        col: &Column,
        table: &Table,
        row: Row,
        after: Option<&[u32]>,
        include: bool,
    ) -> Option<VarBind> {
        let idx = table.index.encode(row.index);
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
        let value = read::read_at(col, table, &row)?;
        let base = col.oid();
        let mut name = Vec::with_capacity(base.len() + idx.len());
        name.extend_from_slice(&base);
        name.extend_from_slice(&idx);
        Some(VarBind {
            name: Oid::from(name),
            value,
        })
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
        let found = self.next_column(&self.cache.load(), start, include, end);
        self.or_event(found, start, include, end)
    }

    fn test_set(&self, txn: SetTxn, varbinds: &[VarBind]) -> Result<(), SetError> {
        self.writes
            .test(&self.cache.load(), txn, varbinds, self.clock.now())
    }

    fn commit_set(&self, txn: SetTxn) -> Result<(), SetError> {
        self.writes.commit(txn, self.clock.now())
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
    use crate::fabric::record::PortRecord;
    use crate::ib::NodeType;
    use crate::pm::{ClassPortInfo, PortCounters};

    fn node(guid: u64, ports: u8) -> NodeRecord {
        let mut rec = NodeRecord::new(&crate::ib::Node {
            id: crate::ib::NodeIdentity {
                guid: Guid(guid),
                sys_guid: Guid(guid),
                node_type: NodeType::Ca,
                vendor_id: 0,
                device_id: 0,
                description: format!("n{guid:x}").into(),
                num_ports: ports,
                lid: 1,
            },
            ports: Vec::new(),
        });
        rec.class_port_info = Some(ClassPortInfo::default().into());
        rec.with_ports(
            (1..=ports)
                .map(|num| {
                    let mut p = PortRecord::new(crate::ib::Port {
                        num,
                        ..Default::default()
                    });
                    let pc = PortCounters {
                        symbol_errors: num as u16 * 10,
                        xmit_data: 0xFFFF_FFF0,
                        ..Default::default()
                    };
                    crate::fabric::hc::fold_pc(&mut p.hc, &pc, false, 0);
                    p
                })
                .collect(),
        )
    }

    fn view(nodes: Vec<NodeRecord>) -> MibView {
        let cache = Arc::new(Cache::new());
        cache.publish(Snapshot {
            sweep: 1,
            interval: std::time::Duration::from_secs(10),
            nodes: nodes.into_iter().map(Arc::new).collect(),
            ..Default::default()
        });
        MibView::new(cache)
    }

    fn oid(s: &str) -> Oid {
        s.parse().unwrap()
    }

    /// The instances after `from` that begin with `within`, in order (each
    /// after the one before).
    pub(super) fn walk(v: &MibView, from: &Oid, within: &[u32]) -> Vec<VarBind> {
        let mut cur = from.clone();
        let mut seen = Vec::new();
        while let Some(vb) = v.get_next(&cur, false, None) {
            if !vb.name.starts_with(within) {
                break;
            }
            assert!(vb.name > cur, "{} after {}", vb.name, cur);
            cur = vb.name.clone();
            seen.push(vb);
            assert!(seen.len() < 1_000_000);
        }
        seen
    }

    #[test]
    fn walk_is_ordered_and_complete() {
        // GUIDs chosen so that string order differs from numeric order.
        let v = view(vec![
            node(0x0002_c903_0000_1234, 2),
            node(0x0002_c903_0000_12ff, 1),
        ]);
        let seen = walk(&v, &Oid::new(&crate::mib::schema::PM_ROOT), &[]);
        // Per node: ClassPortInfo (1 column), PortCounters (17) and
        // pmNodeTable (18); per port (3): pmPortTable (15) and
        // pmPortCounters64Table (the 17 totals PortCounters feeds and the
        // discontinuity time), pmPortLinkTable (7: no symbol BER
        // without a rate) and pmPortHealthTable (11: no times without a
        // verdict or a flap); the agent's 17 scalars; no subnet rows (no
        // subnet in the snapshot). One reading makes no rate.
        assert_eq!(seen.len(), 2 * (18 + 18) + 3 * (15 + 18 + 7 + 11) + 17);
        let rates = oid("1.3.6.1.3.117.1.8");
        assert!(!seen.iter().any(|vb| vb.name.starts_with(rates.as_slice())));
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

    fn text(v: Value) -> String {
        match v {
            Value::OctetString(b) => String::from_utf8(b).unwrap(),
            x => panic!("{x:?}"),
        }
    }

    /// A snapshot no sweeper of a subnet filled: pmSubnetTable has no
    /// rows, pmPortSubnet reads 0 and pmNodeSubnets is empty.
    #[test]
    fn without_subnets_the_table_is_empty_and_ports_name_none() {
        let v = view(vec![node(5, 2)]);
        let table = oid("1.3.6.1.3.117.1.24");
        assert!(walk(&v, &table, table.as_slice()).is_empty());
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.24.1.2.1")),
            Value::NoSuchInstance
        );
        assert_eq!(
            v.get(&oid("1.3.6.1.3.117.1.6.1.16.0.0.0.0.0.0.0.5.2")),
            Value::Gauge32(0)
        );
        assert_eq!(
            text(v.get(&oid("1.3.6.1.3.117.1.5.1.16.0.0.0.0.0.0.0.5"))),
            ""
        );
    }

    /// Two subnets: a row each, in index order, every column read from
    /// the subnet's view; a node with a port in each names both, a port
    /// its own.
    #[test]
    fn the_subnet_table_shows_each_subnet_and_rows_say_which() {
        use crate::ib::subnet::{LocalPort, SubnetView};
        let t0 = crate::time::origin() + std::time::Duration::from_secs(12);
        let plane_a = SubnetView {
            standby: vec![LocalPort::new("mlx5_2", 1), LocalPort::new("mlx5_3", 2)],
            nodes: 2,
            ports: 3,
            sweep: 41,
            swept: Some(t0),
            duration_ms: 250,
            ..crate::rig::subnet(0, Some("plane-a"), 0xfe80 << 48, 0x0002_c903_00a1_b2c3)
        };
        let plane_b = SubnetView {
            sm: None,
            sweeping: None,
            ..crate::rig::subnet(1, None, (0xfe80 << 48) | 2, 0)
        };
        let mut twin = node(6, 2);
        twin.ports_mut()[1].subnet = 1;
        let cache = Arc::new(Cache::new());
        cache.publish(Snapshot {
            sweep: 1,
            nodes: vec![Arc::new(node(5, 1)), Arc::new(twin)],
            subnets: vec![plane_a, plane_b].into(),
            ..Default::default()
        });
        let v = MibView::new(cache);
        let table = oid("1.3.6.1.3.117.1.24");
        let rows = walk(&v, &table, table.as_slice());
        // 15 columns, 2 rows each, column by column.
        assert_eq!(rows.len(), 30);
        assert_eq!(rows[0].name, oid("1.3.6.1.3.117.1.24.1.2.1"));
        assert_eq!(rows[1].name, oid("1.3.6.1.3.117.1.24.1.2.2"));
        let col = |c: u32, row: u32| v.get(&oid(&format!("1.3.6.1.3.117.1.24.1.{c}.{row}")));
        assert_eq!(text(col(2, 1)), "plane-a");
        assert_eq!(text(col(2, 2)), "fe80:0:0:2::/64");
        assert_eq!(
            col(3, 2),
            Value::OctetString(vec![0xfe, 0x80, 0, 0, 0, 0, 0, 2])
        );
        assert_eq!(
            col(4, 1),
            Value::OctetString(vec![0, 2, 0xc9, 3, 0, 0xa1, 0xb2, 0xc3])
        );
        assert_eq!(col(4, 2), Value::OctetString(vec![0; 8]));
        assert_eq!(col(5, 1), Value::Gauge32(1));
        assert_eq!(col(6, 1), Value::Gauge32(15));
        assert_eq!(col(7, 1), Value::Integer(3), "master");
        assert_eq!(col(7, 2), Value::Integer(4), "no SM answered");
        assert_eq!(text(col(8, 1)), "mlx5_0");
        assert_eq!(text(col(8, 2)), "");
        assert_eq!(col(9, 1), Value::Gauge32(1));
        assert_eq!(col(9, 2), Value::Gauge32(0));
        assert_eq!(text(col(10, 1)), "mlx5_2:1,mlx5_3:2");
        assert_eq!(text(col(10, 2)), "");
        assert_eq!(col(11, 1), Value::Gauge32(2));
        assert_eq!(col(12, 1), Value::Gauge32(3));
        assert_eq!(col(13, 1), Value::TimeTicks(1200));
        assert_eq!(col(13, 2), Value::TimeTicks(0));
        assert_eq!(col(14, 1), Value::Gauge32(250));
        assert_eq!(col(15, 1), Value::Counter64(41));
        for bad in ["0", "3", "65", "1.1"] {
            assert_eq!(
                v.get(&oid(&format!("1.3.6.1.3.117.1.24.1.2.{bad}"))),
                Value::NoSuchInstance,
                "{bad}"
            );
        }
        let port = |g: u32, p: u32| {
            v.get(&oid(&format!(
                "1.3.6.1.3.117.1.6.1.16.0.0.0.0.0.0.0.{g}.{p}"
            )))
        };
        assert_eq!(port(5, 1), Value::Gauge32(1));
        assert_eq!(port(6, 1), Value::Gauge32(1));
        assert_eq!(port(6, 2), Value::Gauge32(2));
        let subnets =
            |g: u32| text(v.get(&oid(&format!("1.3.6.1.3.117.1.5.1.16.0.0.0.0.0.0.0.{g}"))));
        assert_eq!(subnets(5), "plane-a");
        assert_eq!(subnets(6), "plane-a,fe80:0:0:2::/64");
        // GetNext from the table's last row leaves it.
        let last = oid("1.3.6.1.3.117.1.24.1.16.2");
        assert!(
            v.get_next(&last, false, None)
                .is_none_or(|vb| !vb.name.starts_with(table.as_slice()))
        );
    }

    /// A list column keeps to a DisplayString's 255 octets, leaving out
    /// what does not fit.
    #[test]
    fn a_long_standby_list_is_cut_at_a_port() {
        use crate::ib::subnet::{LocalPort, SubnetView};
        let standby: Vec<LocalPort> = (0..40)
            .map(|i| LocalPort::new(&format!("mlx5_{i}"), 1))
            .collect();
        let cache = Arc::new(Cache::new());
        cache.publish(Snapshot {
            subnets: vec![SubnetView {
                standby,
                ..Default::default()
            }]
            .into(),
            ..Default::default()
        });
        let v = MibView::new(cache);
        let list = text(v.get(&oid("1.3.6.1.3.117.1.24.1.10.1")));
        assert!(list.len() <= 255, "{}", list.len());
        assert!(list.ends_with(":1") && list.starts_with("mlx5_0:1,mlx5_1:1"));
        let n = list.split(',').count();
        assert!(n < 40, "{list}");
        assert!(list.len() + format!(",mlx5_{n}:1").len() > 255, "{list}");
    }

    #[test]
    fn port_names_are_unique_where_descriptions_repeat() {
        let mut twin = node(0x0002_c903_0000_0002, 1);
        twin.id.description = "MT4123 ConnectX6 Mellanox Technologies".into();
        let mut other = node(0x0002_c903_0000_0003, 1);
        other.id.description = twin.id.description.clone();
        let mut blank = node(0x0002_c903_0000_0004, 1);
        blank.id.description = "".into();
        let v = view(vec![node(0x0002_c903_0000_0001, 2), twin, other, blank]);
        let name = |guid: &str, port: u32| match v
            .get(&oid(&format!("1.3.6.1.3.117.1.6.1.15.{guid}.{port}")))
        {
            Value::OctetString(b) => String::from_utf8(b).unwrap(),
            x => panic!("{x:?}"),
        };
        assert_eq!(name("0.2.201.3.0.0.0.1", 2), "n2c90300000001/2");
        assert_eq!(
            name("0.2.201.3.0.0.0.2", 1),
            "MT4123 ConnectX6 Mellanox Technologies 0x0002c90300000002/1"
        );
        assert_eq!(
            name("0.2.201.3.0.0.0.3", 1),
            "MT4123 ConnectX6 Mellanox Technologies 0x0002c90300000003/1"
        );
        assert_eq!(name("0.2.201.3.0.0.0.4", 1), "0x0002c90300000004/1");
    }

    #[test]
    fn a_patch_that_renames_a_node_renames_its_ports() {
        let v = view(vec![node(1, 1), node(2, 1)]);
        let name = |v: &MibView, guid: &str| match v
            .get(&oid(&format!("1.3.6.1.3.117.1.6.1.15.{guid}.1")))
        {
            Value::OctetString(b) => String::from_utf8(b).unwrap(),
            x => panic!("{x:?}"),
        };
        assert_eq!(name(&v, "0.0.0.0.0.0.0.2"), "n2/1");
        let mut twin = node(2, 1);
        twin.id.description = "n1".into();
        v.cache().patch(Guid(2), Some(Arc::new(twin)));
        assert_eq!(name(&v, "0.0.0.0.0.0.0.2"), "n1 0x0000000000000002/1");
        assert_eq!(name(&v, "0.0.0.0.0.0.0.1"), "n1 0x0000000000000001/1");
        v.cache().patch(Guid(2), None);
        assert_eq!(name(&v, "0.0.0.0.0.0.0.1"), "n1/1");
    }

    #[test]
    fn get_exceptions() {
        let v = view(vec![node(5, 1)]);
        for (o, want) in [
            (
                "1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.6",
                Value::NoSuchInstance,
            ),
            ("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0", Value::NoSuchInstance),
            ("1.3.6.1.3.117.1.4.1.1.0.0.0.0.0.0.0.5", Value::NoSuchObject),
            (
                "1.3.6.1.3.117.1.4.1.99.0.0.0.0.0.0.0.5",
                Value::NoSuchObject,
            ),
            ("1.3.6.1.3.117.1.4.1.3.0.0.0.0.0.0.0.5", Value::Gauge32(10)),
        ] {
            assert_eq!(v.get(&oid(o)), want, "{o}");
        }
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

    /// pmPlanDiffTable: one row per mismatch, indexed by node GUID, port,
    /// kind and sequence number, walked in that order; GET names a row.
    #[test]
    fn plan_diff_rows_are_walked_and_read() {
        use crate::ib::cabling::{Mismatch, PlanSource, PlanVerdict, PlanVerdicts};
        let v = view(vec![node(0x10, 2)]);
        let miswired = PlanVerdict {
            port: 2,
            ..PlanVerdict::example_miswired()
        };
        let absent = PlanVerdict {
            kind: Mismatch::AbsentNode,
            guid: Guid(0),
            port: 0,
            planned: None,
            found: None,
            seq: 3,
            name: Some("rack9".into()),
            planned_name: None,
            found_name: None,
            ..miswired.clone()
        };
        let cache = v.cache().clone();
        cache.set_plan(Arc::new(PlanVerdicts {
            sweep: 1,
            source: Some(PlanSource::Cabling),
            verdicts: Arc::from(vec![absent, miswired]),
            ..Default::default()
        }));
        let table = oid("1.3.6.1.3.117.1.25");
        let seen = walk(&v, &table, table.as_slice());
        assert_eq!(seen.len(), 2 * 12, "two rows of 12 columns");
        // The first column (pmPlanDiffNodeName): the absent node first.
        assert_eq!(
            seen[0].name,
            oid("1.3.6.1.3.117.1.25.1.3.0.0.0.0.0.0.0.0.0.5.3")
        );
        assert_eq!(text(seen[0].value.clone()), "rack9");
        let row = "0.0.0.0.0.0.0.16.2.2.0";
        let get = |col: u32| v.get(&oid(&format!("1.3.6.1.3.117.1.25.1.{col}.{row}")));
        assert_eq!(get(5), Value::Gauge32(1), "pmPlanDiffPlannedPortNum");
        assert_eq!(
            get(7),
            Value::OctetString(vec![0, 0, 0, 0, 0, 0, 0, 0x30]),
            "pmPlanDiffFoundNodeGuid"
        );
        assert_eq!(
            text(get(14)),
            "leaf07/2 should go to node0413/1; it goes to node0414/1"
        );
        assert_eq!(get(13), Value::Integer(1), "pmPlanDiffStanding");
        // No row of another kind.
        let other = oid("1.3.6.1.3.117.1.25.1.3.0.0.0.0.0.0.0.16.2.1.0");
        assert_eq!(v.get(&other), Value::NoSuchInstance);
    }
}
#[cfg(test)]
mod over_a_swept_rig {
    use super::*;
    use crate::rig::{AgentRig, RigOptions};

    /// The names of the instances after `from` that begin with `within`.
    fn names(v: &MibView, from: &Oid, within: &[u32]) -> Vec<Oid> {
        super::tests::walk(v, from, within)
            .into_iter()
            .map(|vb| vb.name)
            .collect()
    }

    /// Per-port rows come in (GUID, port) order, every port of the fabric
    /// once, then the next column.
    #[test]
    fn a_port_column_walks_every_port_in_index_order() {
        let rig = AgentRig::swept(RigOptions::default());
        let col: Oid = "1.3.6.1.3.117.1.6.1.2".parse().unwrap();
        let seen = names(&rig.view(), &col, col.as_slice());
        let ports: usize = rig.fabric().nodes.iter().map(|n| n.ports.len()).sum();
        assert_eq!(seen.len(), ports);
        assert!(
            seen.iter()
                .all(|o| o.as_slice().len() == col.as_slice().len() + 9)
        );
    }

    /// GetNext from any OID (a truncated name, an index with arcs beyond
    /// 255, a name between two rows) answers the first instance of the full
    /// walk after it.
    #[test]
    fn get_next_from_any_oid_agrees_with_the_walk() {
        let v = AgentRig::swept(RigOptions::default()).view();
        let walk = names(&v, &Oid::new(&[1, 3]), &[]);
        assert!(walk.len() > 1000, "{}", walk.len());
        let expect = |p: &Oid, include: bool| {
            let i = walk.partition_point(|n| if include { n < p } else { n <= p });
            walk.get(i).cloned()
        };
        let mut probes: Vec<Oid> = Vec::new();
        for (i, name) in walk.iter().enumerate().step_by(101) {
            let a = name.as_slice();
            probes.push(name.clone());
            for cut in [7, 9, 10, 12, 14, 17, a.len() - 1] {
                probes.push(Oid::new(&a[..cut.min(a.len())]));
            }
            let mut bumped = a.to_vec();
            let k = 9 + i % (a.len() - 9);
            bumped[k] += if i % 2 == 0 { 1 } else { 300 };
            probes.push(Oid::new(&bumped));
            probes.push(name.child(&[0]));
        }
        probes.push(Oid::new(&[1, 3, 6, 1, 3, 117, 1, 4, 1, 3, 256]));
        probes.push(Oid::new(&[1, 3, 6, 1, 3, 117, 1, 6, 1, 2, 0, 256]));
        probes.push(Oid::new(&[
            1, 3, 6, 1, 3, 117, 1, 6, 1, 2, 255, 255, 255, 255, 255, 255, 255, 255, 300,
        ]));
        for p in &probes {
            for include in [false, true] {
                assert_eq!(
                    v.get_next(p, include, None).map(|vb| vb.name),
                    expect(p, include),
                    "from {p} include {include}"
                );
            }
        }
    }

    #[test]
    fn guid_lower_bound_orders_like_the_index() {
        let guids = [
            0u64,
            1,
            0xFF,
            0x100,
            0x0002_c903_0000_1234,
            u64::MAX - 1,
            u64::MAX,
        ];
        let suffixes: [&[u32]; 8] = [
            &[],
            &[0],
            &[0, 2, 201],
            &[0, 2, 256],
            &[0, 0, 0, 0, 0, 0, 1, 0, 7],
            &[255, 255, 255, 255, 255, 255, 255, 256],
            &[256],
            &[0, 2, 201, 3, 0, 0, 18, 52, 1],
        ];
        for s in suffixes {
            let part = &s[..s.len().min(8)];
            let bound = crate::mib::index::guid_lower_bound(s);
            for g in guids {
                let before = crate::mib::index::guid_index(Guid(g)).as_slice() < part;
                let below = bound.is_none_or(|b| Guid(g) < b);
                assert_eq!(before, below, "guid {g:#x} suffix {s:?}");
            }
        }
    }
}
