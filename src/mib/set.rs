//! Two-phase SET: TestSet checks every varbind and reserves a plan;
//! CommitSet applies it (agent state first, then one PerformanceSet per node
//! and attribute, all in parallel, within the write deadline); UndoSet
//! restores what can be restored; CleanupSet releases the plan.
//!
//! Checks, in RFC 3416 4.2.5's order: writes disabled, no such writable
//! column, or a read-only one -> notWritable; wrong ASN.1 type -> wrongType;
//! wrong OCTET STRING size -> wrongLength; out of range (or a counter written
//! with anything but 0) -> wrongValue; no such row -> noCreation; a port the
//! node does not have, 0xFF without AllPortSelect, a sample-control write
//! while a sample runs (IBA ignores it), or a SampleStart/SampleInterval
//! wider than the node's CounterWidth -> inconsistentValue.

use std::collections::BTreeMap;

use super::tables::{self, Column, CtlField, Source, Syntax, row_present};
use super::view::{MibView, column_of, parse_guid_index};
use super::{ErrorStatus, SetError, SetTxn, Value, VarBind};
use crate::fabric::cache::NodeRecord;
use crate::fabric::control::WriteOp;
use crate::ib::{Guid, NodeType};
use crate::pm::PortSamplesControl;
use crate::pm::class_port_info::CAP_ALL_PORT_SELECT;
use crate::pm::samples::{STATUS_DONE, counter_width_bits};

/// What a checked SET PDU will do.
#[derive(Debug, Default)]
pub struct Plan {
    /// (node, new PortSelect, PortSelect before the commit)
    port_selects: Vec<(Guid, u8, u8)>,
    /// Writes to the fabric, each with the 1-based index of its first varbind.
    ops: Vec<(WriteOp, u16)>,
    /// Some write reached the fabric (clears and sample starts cannot be
    /// undone).
    applied: bool,
    committed: bool,
}

#[derive(Default)]
struct NodePlan {
    port_select: Option<u8>,
    clear: u16,
    clear2: u8,
    clear_index: u16,
    control: Option<PortSamplesControl>,
    control_index: u16,
}

fn err(status: ErrorStatus, index: usize) -> SetError {
    SetError {
        status,
        index: u16::try_from(index).unwrap_or(u16::MAX),
    }
}

fn all_port_select(node: &NodeRecord) -> bool {
    node.class_port_info
        .is_some_and(|c| c.capability_mask & CAP_ALL_PORT_SELECT != 0)
}

/// Ports a PortSelect may name on this node.
fn port_ok(node: &NodeRecord, port: u8) -> bool {
    match port {
        0xFF => all_port_select(node),
        0 => node.node_type == NodeType::Switch,
        p => node.port(p).is_some(),
    }
}

/// Check a value against a column's syntax (type, size, range).
fn check_value(col: &Column, v: &Value, index: usize) -> Result<(), SetError> {
    match (col.syntax, v) {
        (Syntax::Unsigned32 { max } | Syntax::Gauge32 { max }, Value::Gauge32(x)) => {
            if *x > max {
                return Err(err(ErrorStatus::WrongValue, index));
            }
            if matches!(col.source, Source::Counter(_)) && *x != 0 {
                // Writing a counter means clearing it.
                return Err(err(ErrorStatus::WrongValue, index));
            }
            Ok(())
        }
        (Syntax::OctetString { size }, Value::OctetString(b)) => {
            if b.len() != size {
                Err(err(ErrorStatus::WrongLength, index))
            } else {
                Ok(())
            }
        }
        (Syntax::TruthValue | Syntax::Enum { .. }, Value::Integer(_)) => Ok(()),
        _ => Err(err(ErrorStatus::WrongType, index)),
    }
}

fn set_ctl(c: &mut PortSamplesControl, f: CtlField, v: &Value) {
    let n = match v {
        Value::Gauge32(x) => *x,
        _ => 0,
    };
    match f {
        CtlField::OpCode => c.op_code = n as u8,
        CtlField::PortSelect => c.port_select = n as u8,
        CtlField::SampleStart => c.sample_start = n,
        CtlField::SampleInterval => c.sample_interval = n,
        CtlField::Tag => {
            if let Value::OctetString(b) = v
                && b.len() == 2
            {
                c.tag = u16::from_be_bytes([b[0], b[1]]);
            }
        }
        CtlField::CounterSelect(i) => {
            if let Some(s) = c.counter_select.get_mut(i) {
                *s = n as u16;
            }
        }
        // Read-only fields never reach here (their columns are read-only).
        _ => {}
    }
}

impl MibView {
    /// Phase 1: check everything, reserve a plan.
    pub(crate) fn plan_set(&self, varbinds: &[VarBind]) -> Result<Plan, SetError> {
        if !self.writes_enabled() {
            return Err(err(ErrorStatus::NotWritable, 1));
        }
        let snap = self.cache().load();
        // Per-varbind syntax checks first, for every varbind.
        let mut cols = Vec::with_capacity(varbinds.len());
        for (i, vb) in varbinds.iter().enumerate() {
            let index = i + 1;
            let col = match column_of(vb.name.as_slice()) {
                Some((c, suffix)) if c.access == tables::Access::ReadWrite => (c, suffix),
                _ => return Err(err(ErrorStatus::NotWritable, index)),
            };
            check_value(col.0, &vb.value, index)?;
            cols.push(col);
        }
        let mut nodes: BTreeMap<Guid, NodePlan> = BTreeMap::new();
        for (i, ((col, suffix), vb)) in cols.into_iter().zip(varbinds).enumerate() {
            let index = i + 1;
            let node = parse_guid_index(suffix)
                .and_then(|g| snap.node(g))
                .filter(|n| row_present(col.table, n))
                .ok_or(err(ErrorStatus::NoCreation, index))?;
            let np = nodes.entry(node.guid).or_default();
            match col.source {
                Source::PortSelect => {
                    let Value::Gauge32(p) = vb.value else {
                        return Err(err(ErrorStatus::WrongType, index));
                    };
                    let p = p as u8;
                    if !port_ok(node, p) {
                        return Err(err(ErrorStatus::InconsistentValue, index));
                    }
                    np.port_select = Some(p);
                }
                Source::Counter(ci) => {
                    let def = &tables::COUNTERS[ci];
                    np.clear |= def.select;
                    np.clear2 |= def.select2;
                    if np.clear_index == 0 {
                        np.clear_index = index as u16;
                    }
                }
                Source::Ctl(f) => {
                    let current = node.samples_control.unwrap_or_default();
                    let c = np.control.get_or_insert(current);
                    if f == CtlField::PortSelect {
                        let Value::Gauge32(p) = vb.value else {
                            return Err(err(ErrorStatus::WrongType, index));
                        };
                        let p = p as u8;
                        let ok = match node.node_type {
                            NodeType::Switch => port_ok(node, p),
                            _ => node.ports.first().is_some_and(|fp| fp.num == p),
                        };
                        if !ok {
                            return Err(err(ErrorStatus::InconsistentValue, index));
                        }
                    }
                    set_ctl(c, f, &vb.value);
                    if np.control_index == 0 {
                        np.control_index = index as u16;
                    }
                }
                _ => return Err(err(ErrorStatus::NotWritable, index)),
            }
        }

        let mut plan = Plan::default();
        for (guid, np) in nodes {
            let node = snap.node(guid).expect("checked above");
            let current = self.port_select(guid);
            if let Some(p) = np.port_select {
                plan.port_selects.push((guid, p, current));
            }
            if np.clear != 0 || np.clear2 != 0 {
                let port = np.port_select.unwrap_or(current);
                if !port_ok(node, port) {
                    return Err(err(ErrorStatus::InconsistentValue, np.clear_index as usize));
                }
                plan.ops.push((
                    WriteOp::ClearCounters {
                        guid,
                        port,
                        select: np.clear,
                        select2: np.clear2,
                    },
                    np.clear_index,
                ));
            }
            if let Some(mut control) = np.control {
                let index = np.control_index as usize;
                if let Some(running) = node.samples_control
                    && running.sample_status != STATUS_DONE
                {
                    // IBA: the node ignores a PortSamplesControl Set while a
                    // sample is pending or running (its reply echoes the
                    // running sample's Tag: the collision check, which
                    // cannot work through SNMP since a SET response echoes
                    // the request). Refuse it here, whatever the Tag.
                    return Err(err(ErrorStatus::InconsistentValue, index));
                }
                // SampleStart/SampleInterval count in CounterWidth bits; a
                // wider value would be cut silently by the node.
                let width = counter_width_bits(control.counter_width).unwrap_or(32);
                let max = if width >= 32 {
                    u32::MAX
                } else {
                    (1u32 << width) - 1
                };
                if control.sample_start > max || control.sample_interval > max {
                    return Err(err(ErrorStatus::InconsistentValue, index));
                }
                control.sample_status = 0;
                plan.ops
                    .push((WriteOp::SamplesControl { guid, control }, np.control_index));
            }
        }
        Ok(plan)
    }

    /// Phase 2: apply a plan.
    pub(crate) fn apply_plan(&self, plan: &mut Plan) -> Result<(), SetError> {
        for &(guid, new, _) in &plan.port_selects {
            self.set_port_select(guid, new);
        }
        plan.committed = true;
        if plan.ops.is_empty() {
            return Ok(());
        }
        let Some(ctl) = self.controller() else {
            return Err(err(ErrorStatus::CommitFailed, plan.ops[0].1 as usize));
        };
        let ops: Vec<WriteOp> = plan.ops.iter().map(|(o, _)| o.clone()).collect();
        let results = ctl.write(&ops);
        plan.applied = results.iter().any(|r| r.is_ok());
        for ((op, index), r) in plan.ops.iter().zip(&results) {
            if let Err(e) = r {
                tracing::warn!(node = %op.guid(), error = %e, "SET not confirmed by the fabric");
                return Err(err(ErrorStatus::CommitFailed, *index as usize));
            }
        }
        Ok(())
    }

    /// Undo a committed plan: PortSelects go back; fabric writes cannot.
    pub(crate) fn undo_plan(&self, plan: &Plan) -> Result<(), SetError> {
        if plan.committed {
            for &(guid, _, old) in &plan.port_selects {
                self.set_port_select(guid, old);
            }
        }
        if plan.applied {
            return Err(err(ErrorStatus::UndoFailed, 0));
        }
        Ok(())
    }
}

/// The SET transactions in progress.
#[derive(Default)]
pub struct Pending(std::sync::Mutex<std::collections::HashMap<SetTxn, Plan>>);

impl Pending {
    pub fn insert(&self, txn: SetTxn, plan: Plan) {
        self.lock().insert(txn, plan);
    }
    pub fn remove(&self, txn: SetTxn) -> Option<Plan> {
        self.lock().remove(&txn)
    }
    pub fn with<R>(&self, txn: SetTxn, f: impl FnOnce(Option<&mut Plan>) -> R) -> R {
        f(self.lock().get_mut(&txn))
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<SetTxn, Plan>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fabric::cache::Cache;
    use crate::fabric::control::{ControlConfig, Controller};
    use crate::fabric::engine::{Engine, EngineConfig};
    use crate::fabric::state::{SharedState, SweepConfig};
    use crate::fabric::sweep::Sweeper;
    use crate::ib::topology;
    use crate::mib::Oid;
    use crate::mib::view::guid_index;
    use crate::sim::{ManualClock, SimClock, SimFabric, SimOptions};
    use std::sync::Arc;

    fn view() -> (MibView, SimFabric) {
        let clock = ManualClock::new();
        clock.advance(std::time::Duration::from_secs(600));
        let sim = SimFabric::new(
            topology::default_fabric(),
            SimOptions {
                seed: 3,
                traffic: true,
                clock: SimClock::Manual(clock),
            },
        );
        let cache = Arc::new(Cache::new());
        let state = SharedState::new(sim.fabric(), SweepConfig::default());
        let engine = Engine::new(Box::new(sim.transport()), EngineConfig::default());
        Sweeper::new(state.clone(), engine, Arc::clone(&cache)).sweep_once();
        let ctl = Controller::new(
            state,
            Arc::clone(&cache),
            Box::new(sim.transport()),
            Box::new(sim.transport()),
            ControlConfig::default(),
        );
        (MibView::with_writes(cache, Arc::new(ctl)), sim)
    }

    fn vb(table: u32, column: u32, guid: Guid, value: Value) -> VarBind {
        let mut o = tables::PM_OBJECTS.to_vec();
        o.extend([table, 1, column]);
        o.extend(guid_index(guid));
        VarBind::new(Oid(o), value)
    }

    #[test]
    fn counter_columns_of_one_node_make_one_write_with_bits_ored() {
        let (v, sim) = view();
        let ca = sim
            .fabric()
            .nodes
            .into_iter()
            .find(|n| n.ports.len() == 2)
            .unwrap();
        let plan = v
            .plan_set(&[
                vb(4, 3, ca.guid, Value::Gauge32(0)),
                vb(4, 2, ca.guid, Value::Gauge32(2)),
                vb(4, 15, ca.guid, Value::Gauge32(0)),
                vb(4, 6, ca.guid, Value::Gauge32(0)),
            ])
            .unwrap();
        assert_eq!(plan.port_selects, vec![(ca.guid, 2, 1)]);
        assert_eq!(
            plan.ops,
            vec![(
                WriteOp::ClearCounters {
                    guid: ca.guid,
                    port: 2,
                    select: (1 << 0) | (1 << 12) | (1 << 3),
                    select2: 0,
                },
                1
            )]
        );
        // Planning changed nothing yet.
        assert_eq!(v.port_select(ca.guid), 1);
    }

    #[test]
    fn commit_undo_cleanup() {
        let (v, sim) = view();
        let ca = sim
            .fabric()
            .nodes
            .into_iter()
            .find(|n| n.ports.len() == 2)
            .unwrap();
        let txn = SetTxn {
            session_id: 1,
            transaction_id: 9,
        };
        use crate::mib::MibHandler;
        v.test_set(txn, &[vb(4, 2, ca.guid, Value::Gauge32(2))])
            .unwrap();
        v.commit_set(txn).unwrap();
        assert_eq!(v.port_select(ca.guid), 2);
        // Only agent state changed: undo restores it fully.
        v.undo_set(txn).unwrap();
        assert_eq!(v.port_select(ca.guid), 1);
        v.cleanup_set(txn);
        // A clear reached the fabric: undo says it cannot be undone.
        v.test_set(txn, &[vb(4, 3, ca.guid, Value::Gauge32(0))])
            .unwrap();
        v.commit_set(txn).unwrap();
        assert_eq!(v.undo_set(txn).unwrap_err().status, ErrorStatus::UndoFailed);
        v.cleanup_set(txn);
        assert!(v.commit_set(txn).is_err(), "no plan after cleanup");
    }
}
