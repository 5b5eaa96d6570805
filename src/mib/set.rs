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
//! wider than the node's CounterWidth -> inconsistentValue; a write that
//! would reach a node marked unreachable, or a node whose last write failed
//! less than one sweep interval ago -> resourceUnavailable (at once, without
//! a MAD: the master holds every other request while a SET is in progress).
//!
//! [`Writes`] owns the agent's own write state: PortSelect per row, the
//! plans of transactions between TestSet and CleanupSet (keyed by session
//! and transaction, bounded in number and age, dropped with their session)
//! and the time of each node's last failed write.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::read::unwrap;
use super::schema::{Access, Column, SetRule, Source, Syntax, clear_selects};
use super::tables::column_of;
use super::{ErrorStatus, SetError, SetTxn, Value, VarBind};
use crate::fabric::cache::Snapshot;
use crate::fabric::control::{WriteError, WriteOp};
use crate::fabric::federation::Writers;
use crate::fabric::record::NodeRecord;
use crate::ib::health::{Ack, CONDITION_COUNT, Condition};
use crate::ib::{Guid, NodeType};
use crate::pm::PortSamplesControl;
use crate::pm::class_port_info::CAP_ALL_PORT_SELECT;
use crate::pm::port_counters::{cs, cs2};
use crate::pm::samples::{STATUS_DONE, counter_width_bits};

/// pmPortCountersPortSelect of a row that was never written.
pub const DEFAULT_PORT_SELECT: u8 = 1;

/// Most plans held at once; a TestSet past it evicts the oldest plan.
pub const MAX_PENDING: usize = 64;

/// A plan older than this is dropped (its CleanupSet never came). The
/// master finishes a SET within its own timeout (1 s per PDU, 5 retries).
pub const PLAN_TTL: Duration = Duration::from_secs(60);

/// Every error the SET path answers, in the order of its checks, with when
/// it is given. The SET table of docs/mib.md is this list (a test holds them
/// equal).
pub const SET_ERRORS: &[(ErrorStatus, &str)] = &[
    (
        ErrorStatus::NotWritable,
        "writes disabled, a read-only or not-accessible column, no such column",
    ),
    (
        ErrorStatus::WrongType,
        "wrong ASN.1 type (e.g. `i` where Unsigned32 `u` is needed)",
    ),
    (ErrorStatus::WrongLength, "Tag not 2 octets"),
    (
        ErrorStatus::WrongValue,
        "out of range (PortSelect > 255, an acknowledgement other than 1 to 7), a counter \
         written with anything but 0",
    ),
    (ErrorStatus::NoCreation, "a GUID with no row"),
    (
        ErrorStatus::InconsistentValue,
        "a port the node does not have, 0xFF without AllPortSelect, a sample write while one \
         runs, timers wider than CounterWidth, an acknowledgement of a verdict that does not \
         stand",
    ),
    (
        ErrorStatus::ResourceUnavailable,
        "a clear or sample write to a node the sweeper marked unreachable, or whose last write \
         failed less than one sweep interval ago (answered at TestSet at once, without a MAD: \
         snmpd holds every other request while a SET is in progress; PortSelect alone stays \
         writable)",
    ),
    (
        ErrorStatus::CommitFailed,
        "the node did not confirm within the deadline (at most 600 ms: 150 ms x 2 tries, x 2 \
         rounds)",
    ),
    (
        ErrorStatus::UndoFailed,
        "UndoSet after a clear or sample start reached the node (they cannot be undone)",
    ),
];

/// What a checked SET PDU will do.
#[derive(Debug, Default)]
pub struct Plan {
    /// (node, new PortSelect, PortSelect before the commit)
    port_selects: Vec<(Guid, u8, u8)>,
    /// Writes to the fabric, each with the 1-based index of its first varbind.
    ops: Vec<(WriteOp, u16)>,
    /// Acknowledgements of health verdicts.
    acks: Vec<Ack>,
    /// Some write reached the fabric (clears and sample starts cannot be
    /// undone).
    applied: bool,
    committed: bool,
}

#[derive(Default)]
struct NodePlan {
    port_select: Option<u8>,
    /// pmPortClearCounters writes: (port, CounterSelect, CounterSelect2,
    /// varbind index).
    port_clears: Vec<(u8, u16, u8, u16)>,
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
        .as_deref()
        .is_some_and(|c| c.capability_mask & CAP_ALL_PORT_SELECT != 0)
}

/// Ports a PortSelect may name on this node.
fn port_ok(node: &NodeRecord, port: u8) -> bool {
    match port {
        0xFF => all_port_select(node),
        0 => node.id.node_type == NodeType::Switch,
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
            if col.access == Access::ReadWrite(SetRule::ClearCounter) && *x != 0 {
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

/// Writes a checked value into the sample-control fields a column shows.
fn set_ctl(c: &mut PortSamplesControl, source: Source, v: &Value) {
    let n = unwrap(v);
    match source {
        Source::Ctl(f) => c.set(f, n),
        Source::CtlSelect(i) => {
            if let Some(s) = c.counter_select.get_mut(i) {
                *s = n as u16;
            }
        }
        // Read-only columns (the masks) never reach here.
        _ => {}
    }
}

/// The agent's own write state and the SET pipeline over it.
pub struct Writes {
    /// The write paths, when SETs are allowed.
    controller: Option<Arc<Writers>>,
    /// pmPortCountersPortSelect per node: agent state shared by all managers.
    port_select: Mutex<HashMap<Guid, u8>>,
    pending: Mutex<Pending>,
    /// When each node's last write failed (cleared by a write that works).
    failed: Mutex<HashMap<Guid, Instant>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every update under these locks is a plain store: a poisoned lock
    // still holds consistent data.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Writes {
    /// `None`: every SET gets notWritable.
    pub fn new(controller: Option<Arc<Writers>>) -> Self {
        Writes {
            controller,
            port_select: Mutex::new(HashMap::new()),
            pending: Mutex::new(Pending::default()),
            failed: Mutex::new(HashMap::new()),
        }
    }

    pub fn enabled(&self) -> bool {
        self.controller.is_some()
    }

    pub fn controller(&self) -> Option<&Arc<Writers>> {
        self.controller.as_ref()
    }

    /// The row's pmPortCountersPortSelect.
    pub fn port_select(&self, guid: Guid) -> u8 {
        lock(&self.port_select)
            .get(&guid)
            .copied()
            .unwrap_or(DEFAULT_PORT_SELECT)
    }

    /// Change the row's pmPortCountersPortSelect.
    pub fn set_port_select(&self, guid: Guid, port: u8) {
        let mut m = lock(&self.port_select);
        if port == DEFAULT_PORT_SELECT {
            m.remove(&guid);
        } else {
            m.insert(guid, port);
        }
    }

    /// Number of plans held (between TestSet and CleanupSet).
    pub fn pending(&self) -> usize {
        lock(&self.pending).plans.len()
    }

    /// A write to `node` that would go to the fabric is refused at once when
    /// the sweeper marked the node unreachable or its last write failed less
    /// than one sweep interval ago.
    fn check_reachable(
        &self,
        snap: &Snapshot,
        node: &NodeRecord,
        now: Instant,
        index: u16,
    ) -> Result<(), SetError> {
        let recent_failure = lock(&self.failed)
            .get(&node.id.guid)
            .is_some_and(|&t| now.saturating_duration_since(t) < snap.interval);
        if !node.reachable || recent_failure {
            return Err(err(ErrorStatus::ResourceUnavailable, index.into()));
        }
        Ok(())
    }

    /// Phase 1: check everything, reserve a plan.
    pub fn plan(
        &self,
        snap: &Snapshot,
        varbinds: &[VarBind],
        now: Instant,
    ) -> Result<Plan, SetError> {
        if !self.enabled() {
            return Err(err(ErrorStatus::NotWritable, 1));
        }
        // Per-varbind syntax checks first, for every varbind.
        let mut cols = Vec::with_capacity(varbinds.len());
        for (i, vb) in varbinds.iter().enumerate() {
            let index = i + 1;
            let col = match column_of(vb.name.as_slice()) {
                Some((c, t, suffix)) if c.writable() => (c, t, suffix),
                _ => return Err(err(ErrorStatus::NotWritable, index)),
            };
            check_value(col.0, &vb.value, index)?;
            cols.push(col);
        }
        let mut nodes: BTreeMap<Guid, NodePlan> = BTreeMap::new();
        let mut plan = Plan::default();
        for (i, ((col, table, suffix), vb)) in cols.into_iter().zip(varbinds).enumerate() {
            let index = i + 1;
            let row = table
                .index
                .parse(suffix)
                .ok_or(err(ErrorStatus::NoCreation, index))?;
            let node = snap
                .node(row.guid)
                .filter(|n| (table.present)(n))
                .ok_or(err(ErrorStatus::NoCreation, index))?;
            let np = nodes.entry(node.id.guid).or_default();
            let Access::ReadWrite(rule) = col.access else {
                return Err(err(ErrorStatus::NotWritable, index));
            };
            match rule {
                SetRule::PortSelect => {
                    let Value::Gauge32(p) = vb.value else {
                        return Err(err(ErrorStatus::WrongType, index));
                    };
                    let p = p as u8;
                    if !port_ok(node, p) {
                        return Err(err(ErrorStatus::InconsistentValue, index));
                    }
                    np.port_select = Some(p);
                }
                SetRule::ClearMask => {
                    if node.port(row.port).is_none() {
                        return Err(err(ErrorStatus::NoCreation, index));
                    }
                    let Value::Gauge32(mask) = vb.value else {
                        return Err(err(ErrorStatus::WrongType, index));
                    };
                    let (select, select2) = clear_selects(mask);
                    if select != 0 || select2 != 0 {
                        np.port_clears
                            .push((row.port, select, select2, index as u16));
                    }
                }
                SetRule::ClearCounter => {
                    let Source::Counter(f) = col.source else {
                        return Err(err(ErrorStatus::NotWritable, index));
                    };
                    np.clear |= cs(f);
                    np.clear2 |= cs2(f);
                    if np.clear_index == 0 {
                        np.clear_index = index as u16;
                    }
                }
                SetRule::Acknowledge => {
                    let Value::Integer(v) = vb.value else {
                        return Err(err(ErrorStatus::WrongType, index));
                    };
                    let ack = acknowledgement(row.guid, row.port, v)
                        .ok_or(err(ErrorStatus::WrongValue, index))?;
                    if snap.health.acknowledged(ack).is_none() {
                        return Err(err(ErrorStatus::InconsistentValue, index));
                    }
                    plan.acks.push(ack);
                }
                SetRule::SampleControl | SetRule::SamplePortSelect => {
                    let current = node.samples_control.as_deref().copied().unwrap_or_default();
                    let c = np.control.get_or_insert(current);
                    if rule == SetRule::SamplePortSelect {
                        let Value::Gauge32(p) = vb.value else {
                            return Err(err(ErrorStatus::WrongType, index));
                        };
                        let p = p as u8;
                        let ok = match node.id.node_type {
                            NodeType::Switch => port_ok(node, p),
                            _ => node.ports().next().is_some_and(|fp| fp.num() == p),
                        };
                        if !ok {
                            return Err(err(ErrorStatus::InconsistentValue, index));
                        }
                    }
                    set_ctl(c, col.source, &vb.value);
                    if np.control_index == 0 {
                        np.control_index = index as u16;
                    }
                }
            }
        }

        for (guid, np) in nodes {
            let Some(node) = snap.node(guid) else {
                continue;
            };
            let current = self.port_select(guid);
            if let Some(p) = np.port_select {
                plan.port_selects.push((guid, p, current));
            }
            if np.clear != 0 || np.clear2 != 0 {
                let port = np.port_select.unwrap_or(current);
                if !port_ok(node, port) {
                    return Err(err(ErrorStatus::InconsistentValue, np.clear_index as usize));
                }
                self.check_reachable(snap, node, now, np.clear_index)?;
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
            for &(port, select, select2, index) in &np.port_clears {
                self.check_reachable(snap, node, now, index)?;
                plan.ops.push((
                    WriteOp::ClearCounters {
                        guid,
                        port,
                        select,
                        select2,
                    },
                    index,
                ));
            }
            if let Some(mut control) = np.control {
                let index = np.control_index as usize;
                if let Some(running) = node.samples_control.as_deref()
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
                self.check_reachable(snap, node, now, np.control_index)?;
                control.sample_status = 0;
                plan.ops
                    .push((WriteOp::SamplesControl { guid, control }, np.control_index));
            }
        }
        Ok(plan)
    }

    /// TestSet: check, plan and hold the plan for `txn`.
    pub fn test(
        &self,
        snap: &Snapshot,
        txn: SetTxn,
        varbinds: &[VarBind],
        now: Instant,
    ) -> Result<(), SetError> {
        let plan = self.plan(snap, varbinds, now)?;
        lock(&self.pending).insert(txn, plan, now);
        Ok(())
    }

    /// CommitSet: apply the plan `txn` holds, once. The plan stays (for
    /// UndoSet) until CleanupSet; a second CommitSet is refused and sends
    /// nothing.
    pub fn commit(&self, txn: SetTxn, now: Instant) -> Result<(), SetError> {
        let refused = err(ErrorStatus::CommitFailed, 0);
        let mut plan = {
            let mut p = lock(&self.pending);
            match p.plans.get_mut(&txn) {
                Some(e) if !e.plan.committed => std::mem::take(&mut e.plan),
                _ => return Err(refused),
            }
        };
        let r = self.apply(&mut plan, now);
        if let Some(e) = lock(&self.pending).plans.get_mut(&txn) {
            e.plan = plan;
        }
        r
    }

    /// UndoSet: PortSelects go back; fabric writes cannot.
    pub fn undo(&self, txn: SetTxn) -> Result<(), SetError> {
        let p = lock(&self.pending);
        let Some(e) = p.plans.get(&txn) else {
            return Ok(());
        };
        let plan = &e.plan;
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

    /// CleanupSet: release the plan.
    pub fn cleanup(&self, txn: SetTxn) {
        lock(&self.pending).plans.remove(&txn);
    }

    /// Drop every plan of a closed session.
    pub fn session_closed(&self, session_id: u32) {
        lock(&self.pending)
            .plans
            .retain(|t, _| t.session_id != session_id);
    }

    /// Apply a plan: agent state first, then the fabric writes.
    fn apply(&self, plan: &mut Plan, now: Instant) -> Result<(), SetError> {
        for &(guid, new, _) in &plan.port_selects {
            self.set_port_select(guid, new);
        }
        plan.committed = true;
        if !plan.acks.is_empty()
            && let Some(ctl) = self.controller()
        {
            for a in &plan.acks {
                ctl.cache().acknowledge(*a);
            }
            // A verdict cleared cannot be put back.
            plan.applied = true;
        }
        if plan.ops.is_empty() {
            return Ok(());
        }
        let Some(ctl) = self.controller() else {
            return Err(err(ErrorStatus::CommitFailed, plan.ops[0].1 as usize));
        };
        let ops: Vec<WriteOp> = plan.ops.iter().map(|(o, _)| o.clone()).collect();
        let results = ctl.write(&ops);
        plan.applied = results.iter().any(|r| r.is_ok());
        let mut first_error = None;
        let mut failed = lock(&self.failed);
        for ((op, index), r) in plan.ops.iter().zip(&results) {
            match r {
                Ok(()) => {
                    failed.remove(&op.guid());
                }
                Err(e) => {
                    tracing::warn!(node = %op.guid(), error = %e, "SET not confirmed by the fabric");
                    failed.insert(op.guid(), now);
                    first_error.get_or_insert(err(commit_status(e), *index as usize));
                }
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// The acknowledgement pmPortHealthAcknowledge's value `v` asks of a row:
/// 1..=6 a condition ([`crate::ib::health::CONDITIONS`] order), 7 all.
fn acknowledgement(guid: Guid, port: u8, v: i32) -> Option<Ack> {
    let v = usize::try_from(v).ok()?;
    let condition = match v {
        1..=CONDITION_COUNT => Some(Condition::ALL[v - 1]),
        _ if v == CONDITION_COUNT + 1 => None,
        _ => return None,
    };
    Some(Ack {
        guid,
        port,
        condition,
    })
}

/// The answer to a CommitSet whose fabric write failed: commitFailed for
/// every reason (after TestSet passed, RFC 3416 4.2.5 leaves no other);
/// the UndoSet that follows answers undoFailed when another write of the
/// plan reached its node.
fn commit_status(e: &WriteError) -> ErrorStatus {
    match e {
        WriteError::UnknownNode
        | WriteError::NoAddress
        | WriteError::Timeout
        | WriteError::Status(_)
        | WriteError::Busy { .. }
        | WriteError::Failed(_) => ErrorStatus::CommitFailed,
    }
}

struct Held {
    plan: Plan,
    created: Instant,
}

/// The plans of the SET transactions in progress.
#[derive(Default)]
struct Pending {
    plans: HashMap<SetTxn, Held>,
}

impl Pending {
    /// Hold `plan` for `txn`, dropping plans past [`PLAN_TTL`] and, when
    /// [`MAX_PENDING`] are held, the oldest.
    fn insert(&mut self, txn: SetTxn, plan: Plan, now: Instant) {
        self.plans
            .retain(|_, h| now.saturating_duration_since(h.created) < PLAN_TTL);
        while self.plans.len() >= MAX_PENDING && !self.plans.contains_key(&txn) {
            let Some(oldest) = self
                .plans
                .iter()
                .min_by_key(|(_, h)| h.created)
                .map(|(t, _)| *t)
            else {
                break;
            };
            self.plans.remove(&oldest);
        }
        self.plans.insert(txn, Held { plan, created: now });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mib::Oid;
    use crate::mib::index::guid_index;
    use crate::mib::schema::PM_OBJECTS;
    use crate::mib::view::MibView;
    use crate::rig::{AgentRig, RigOptions};
    use crate::sim::SimFabric;

    fn view() -> (MibView, SimFabric) {
        let rig = AgentRig::swept(RigOptions {
            seed: 3,
            ..RigOptions::default()
        });
        (rig.view(), rig.sim)
    }

    fn vb(table: u32, column: u32, guid: Guid, value: Value) -> VarBind {
        let mut o = PM_OBJECTS.to_vec();
        o.extend([table, 1, column]);
        o.extend(guid_index(guid));
        VarBind::new(Oid(o), value)
    }

    #[test]
    fn counter_columns_of_one_node_make_one_write_with_bits_ored() {
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let plan = v
            .writes()
            .plan(
                &v.cache().load(),
                &[
                    vb(4, 3, ca, Value::Gauge32(0)),
                    vb(4, 2, ca, Value::Gauge32(2)),
                    vb(4, 15, ca, Value::Gauge32(0)),
                    vb(4, 6, ca, Value::Gauge32(0)),
                ],
                Instant::now(),
            )
            .unwrap();
        assert_eq!(plan.port_selects, vec![(ca, 2, 1)]);
        assert_eq!(
            plan.ops,
            vec![(
                WriteOp::ClearCounters {
                    guid: ca,
                    port: 2,
                    select: (1 << 0) | (1 << 12) | (1 << 3),
                    select2: 0,
                },
                1
            )]
        );
        // Planning changed nothing yet.
        assert_eq!(v.port_select(ca), 1);
    }

    #[test]
    fn commit_undo_cleanup() {
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let txn = txn(1, 9);
        use crate::mib::MibHandler;
        v.test_set(txn, &[vb(4, 2, ca, Value::Gauge32(2))]).unwrap();
        v.commit_set(txn).unwrap();
        assert_eq!(v.port_select(ca), 2);
        // Only agent state changed: undo restores it fully.
        v.undo_set(txn).unwrap();
        assert_eq!(v.port_select(ca), 1);
        v.cleanup_set(txn);
        // A clear reached the fabric: undo says it cannot be undone.
        v.test_set(txn, &[vb(4, 3, ca, Value::Gauge32(0))]).unwrap();
        v.commit_set(txn).unwrap();
        assert_eq!(v.undo_set(txn).unwrap_err().status, ErrorStatus::UndoFailed);
        v.cleanup_set(txn);
        assert!(v.commit_set(txn).is_err(), "no plan after cleanup");
    }

    fn dual_port_ca(sim: &SimFabric) -> Guid {
        sim.fabric()
            .nodes
            .into_iter()
            .find(|n| n.ports.len() == 2)
            .unwrap()
            .id
            .guid
    }

    fn txn(session_id: u32, transaction_id: u32) -> SetTxn {
        SetTxn {
            session_id,
            transaction_id,
        }
    }

    #[test]
    fn a_closed_sessions_plans_are_dropped() {
        use crate::mib::MibHandler;
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        v.test_set(txn(1, 9), &[vb(4, 2, ca, Value::Gauge32(2))])
            .unwrap();
        v.test_set(txn(2, 9), &[vb(4, 2, ca, Value::Gauge32(2))])
            .unwrap();
        v.session_closed(1);
        assert_eq!(v.writes().pending(), 1, "session 2 keeps its plan");
        assert!(v.commit_set(txn(1, 9)).is_err(), "session 1's plan is gone");
        assert_eq!(v.port_select(ca), 1, "nothing applied");
    }

    #[test]
    fn test_sets_never_cleaned_up_stay_bounded() {
        use crate::mib::MibHandler;
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        for t in 0..100_000 {
            v.test_set(txn(7, t), &[vb(4, 2, ca, Value::Gauge32(2))])
                .unwrap();
            assert!(v.writes().pending() <= MAX_PENDING);
        }
        // The newest plan is still there and commits.
        v.commit_set(txn(7, 99_999)).unwrap();
        assert_eq!(v.port_select(ca), 2);
    }

    #[test]
    fn every_failed_fabric_write_is_a_commit_failure() {
        use crate::transport::{Down, Fault, TransportError};
        for e in [
            WriteError::UnknownNode,
            WriteError::NoAddress,
            WriteError::Timeout,
            WriteError::Status(0x1c),
            WriteError::Busy { tag: 7 },
            WriteError::Failed(TransportError::Send {
                lid: 3,
                fault: Fault::Down(Down::AwaitingReopen),
            }),
            WriteError::Failed(TransportError::Recv(Fault::Down(Down::ReaderStopped))),
        ] {
            assert_eq!(commit_status(&e), ErrorStatus::CommitFailed, "{e}");
        }
    }

    #[test]
    fn plans_expire_by_age() {
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let snap = v.cache().load();
        let w = v.writes();
        let t0 = Instant::now();
        let ps = [vb(4, 2, ca, Value::Gauge32(2))];
        w.test(&snap, txn(1, 1), &ps, t0).unwrap();
        w.test(&snap, txn(1, 2), &ps, t0 + PLAN_TTL / 2).unwrap();
        assert_eq!(w.pending(), 2);
        w.test(&snap, txn(1, 3), &ps, t0 + PLAN_TTL).unwrap();
        assert_eq!(w.pending(), 2, "the plan of t0 expired");
        assert!(w.commit(txn(1, 1), t0 + PLAN_TTL).is_err());
        assert!(w.commit(txn(1, 2), t0 + PLAN_TTL).is_ok());
    }

    #[test]
    fn a_second_commit_applies_nothing() {
        use crate::mib::MibHandler;
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let t = txn(1, 5);
        v.test_set(t, &[vb(4, 2, ca, Value::Gauge32(2))]).unwrap();
        v.commit_set(t).unwrap();
        assert_eq!(v.port_select(ca), 2);
        // Another manager changes the row; a repeated CommitSet of the
        // first transaction must not write it again.
        v.set_port_select(ca, 1);
        assert_eq!(
            v.commit_set(t).unwrap_err().status,
            ErrorStatus::CommitFailed
        );
        assert_eq!(v.port_select(ca), 1);
    }

    #[test]
    fn writes_to_an_unreachable_node_are_refused_at_test_set() {
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let mut rec = v.cache().load().node(ca).unwrap().clone();
        rec.reachable = false;
        v.cache().patch(ca, Some(std::sync::Arc::new(rec)));
        let snap = v.cache().load();
        let w = v.writes();
        let now = Instant::now();
        let clear = [vb(4, 3, ca, Value::Gauge32(0))];
        let e = w.plan(&snap, &clear, now).unwrap_err();
        assert_eq!(e, err(ErrorStatus::ResourceUnavailable, 1));
        let start = [vb(2, 26, ca, Value::Gauge32(1000))];
        let e = w.plan(&snap, &start, now).unwrap_err();
        assert_eq!(e.status, ErrorStatus::ResourceUnavailable);
        // PortSelect is agent state: no MAD, no refusal.
        w.plan(&snap, &[vb(4, 2, ca, Value::Gauge32(2))], now)
            .unwrap();
    }

    #[test]
    fn a_failed_write_refuses_writes_for_one_sweep_interval() {
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let snap = v.cache().load();
        let w = v.writes();
        let clear = [
            vb(4, 2, ca, Value::Gauge32(1)),
            vb(4, 3, ca, Value::Gauge32(0)),
        ];
        let t0 = Instant::now();
        sim.set_reachable(ca, false);
        w.test(&snap, txn(1, 1), &clear, t0).unwrap();
        assert_eq!(
            w.commit(txn(1, 1), t0).unwrap_err(),
            err(ErrorStatus::CommitFailed, 2)
        );
        w.cleanup(txn(1, 1));
        // The node answers again, but the agent cannot know before the
        // next sweep: refused without a MAD until one interval has passed.
        sim.set_reachable(ca, true);
        let later = t0 + snap.interval - Duration::from_millis(1);
        let e = w.plan(&snap, &clear, later).unwrap_err();
        assert_eq!(e, err(ErrorStatus::ResourceUnavailable, 2));
        let after = t0 + snap.interval;
        w.test(&snap, txn(1, 2), &clear, after).unwrap();
        w.commit(txn(1, 2), after).unwrap();
        // A write that works forgets the failure.
        w.plan(&snap, &clear, after).unwrap();
    }

    /// The SET table of docs/mib.md is [`SET_ERRORS`], row for row.
    #[test]
    fn readme_set_table_is_the_declared_list() {
        let readme = include_str!("../../docs/mib.md");
        let at = readme.find("| what | error |").expect("the SET table");
        let rows: Vec<&str> = readme[at..]
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with("| "))
            .collect();
        let want: Vec<String> = SET_ERRORS
            .iter()
            .map(|(s, what)| format!("| {what} | `{}` |", s.name()))
            .collect();
        assert_eq!(rows, want);
    }

    #[test]
    fn an_acknowledgement_clears_a_standing_verdict_on_both_ends() {
        use crate::ib::health::{Mark, PortVerdict, Verdicts};
        use crate::mib::MibHandler;
        let (v, sim) = view();
        let ca = dual_port_ca(&sim);
        let peer = (Guid(0xabc), 7);
        let mark = Some(Mark::holding(1, 2));
        let mut own = PortVerdict {
            guid: ca,
            port: 1,
            peer: Some(peer),
            ..Default::default()
        };
        own.marks[Condition::Flapping as usize] = mark;
        let mut far = own.clone();
        (far.guid, far.port, far.peer) = (peer.0, peer.1, Some((ca, 1)));
        let mut ports = vec![own, far];
        ports.sort_by_key(|e| (e.guid, e.port));
        v.cache().set_health(Arc::new(Verdicts {
            sweep: 1,
            ports: ports.into(),
            ..Default::default()
        }));
        let ack = |port: u8, value: Value| {
            let mut o = PM_OBJECTS.to_vec();
            o.extend([23, 1, 14]);
            o.extend(guid_index(ca));
            o.push(port.into());
            VarBind::new(Oid(o), value)
        };
        let cell = |column: u32, port: u8| {
            let mut o = PM_OBJECTS.to_vec();
            o.extend([23, 1, column]);
            o.extend(guid_index(ca));
            o.push(port.into());
            v.get(&Oid(o))
        };
        assert_eq!(cell(3, 1), Value::Integer(1), "pmPortHealthFlapping");
        assert_eq!(cell(4, 1), Value::Integer(2), "pmPortHealthErroring");
        assert_eq!(cell(3, 2), Value::Integer(2), "a port without a verdict");
        assert_eq!(
            cell(9, 1),
            Value::OctetString(vec![0x07, 0xb2, 1, 1, 0, 0, 0, 0, b'+', 0, 0]),
            "pmPortHealthSince: 1 ms after the epoch"
        );
        assert_eq!(cell(12, 1), Value::OctetString(peer.0.octets().to_vec()));
        assert!(
            matches!(cell(8, 1), Value::NoSuchInstance),
            "no flap: no pmPortHealthLastFlap"
        );
        let status = |r: Result<(), SetError>| r.map_err(|e| e.status);
        let erroring = Value::Integer(Condition::Erroring as i32 + 1);
        let flapping = Value::Integer(Condition::Flapping as i32 + 1);
        assert_eq!(
            status(v.test_set(txn(1, 1), &[ack(1, erroring)])),
            Err(ErrorStatus::InconsistentValue),
            "no such verdict"
        );
        assert_eq!(
            status(v.test_set(txn(1, 2), &[ack(2, flapping.clone())])),
            Err(ErrorStatus::InconsistentValue),
            "another port"
        );
        assert_eq!(
            status(v.test_set(txn(1, 3), &[ack(1, Value::Integer(8))])),
            Err(ErrorStatus::WrongValue)
        );
        assert_eq!(
            status(v.test_set(txn(1, 4), &[ack(1, Value::Gauge32(3))])),
            Err(ErrorStatus::WrongType)
        );
        v.test_set(txn(1, 5), &[ack(1, flapping)]).unwrap();
        assert!(v.cache().load().health.unhealthy().next().is_some());
        v.commit_set(txn(1, 5)).unwrap();
        let h = v.cache().load().health.clone();
        assert!(h.unhealthy().next().is_none(), "both ends cleared: {h:?}");
        assert_eq!(v.cache().take_acks().len(), 1, "for the evaluator");
        assert!(v.undo_set(txn(1, 5)).is_err(), "cannot be put back");
        assert_eq!(
            status(v.test_set(txn(1, 6), &[ack(1, Value::Integer(7))])),
            Err(ErrorStatus::InconsistentValue),
            "nothing left"
        );
    }
}
