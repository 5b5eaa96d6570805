use super::*;
use crate::ib::subnet::{LocalPort, SmInfo, SubnetKey};
use crate::mib::{Oid, Value};
use crate::notify::{Obj, SNMP_TRAP_OID};

const A: Guid = Guid(0x0002_c903_00a1_b2c3);
const B: Guid = Guid(0x0002_c903_00a1_b2c4);

fn sm(guid: Guid, state: SmState) -> Option<SmInfo> {
    Some(SmInfo {
        lid: 1,
        guid,
        priority: 14,
        state,
        act_count: 0,
    })
}

/// Subnet `index` with master `master` (when given), swept through
/// `mlx5_{sweeping}:1` (when given), with `mlx5_9:1` standing by.
fn view(index: u8, master: Option<Guid>, sweeping: Option<u8>) -> SubnetView {
    SubnetView {
        index,
        name: Some(format!("plane-{index}").into()),
        key: SubnetKey {
            prefix: 0xfe80_0000_0000_0000 | u64::from(index),
            sm_guid: master.unwrap_or(Guid(0)),
        },
        sm: master.and_then(|g| sm(g, SmState::Master)),
        sweeping: sweeping.map(|n| LocalPort::new(&format!("mlx5_{n}"), 1)),
        standby: vec![LocalPort::new("mlx5_9", 1)],
        ..Default::default()
    }
}

fn kinds(e: &[Event]) -> Vec<(Kind, u8)> {
    e.iter()
        .map(|e| (e.kind, e.subnet.as_ref().unwrap().index))
        .collect()
}

#[test]
fn a_handover_is_one_master_changed_with_the_old_master() {
    let before = [view(0, Some(A), Some(0)), view(1, Some(A), Some(1))];
    let after = [view(0, Some(B), Some(0)), view(1, Some(A), Some(1))];
    let e = events(&before, &after, 0);
    assert_eq!(kinds(&e), [(Kind::SubnetMasterChanged, 0)]);
    assert_eq!(e[0].old_sm, A);
    assert_eq!(e[0].subnet.as_ref().unwrap().sm.unwrap().guid, B);
    // Once per change: the same subnets again call for nothing.
    assert!(events(&after, &after, 0).is_empty());
}

#[test]
fn no_master_once_then_master_changed_when_one_is_back() {
    let with = [view(0, Some(A), Some(0))];
    let none = [view(0, None, Some(0))];
    let e = events(&with, &none, 0);
    assert_eq!(kinds(&e), [(Kind::SubnetNoMaster, 0)]);
    assert_eq!(e[0].old_sm, A);
    assert!(events(&none, &none, 0).is_empty());
    // An SM that answers but is not master is no master.
    let mut standby = view(0, None, Some(0));
    standby.sm = sm(A, SmState::Standby);
    assert_eq!(
        kinds(&events(&with, &[standby.clone()], 0)),
        [(Kind::SubnetNoMaster, 0)]
    );
    assert!(events(&none, &[standby], 0).is_empty());
    let e = events(&none, &with, 0);
    assert_eq!(kinds(&e), [(Kind::SubnetMasterChanged, 0)]);
    assert_eq!(e[0].old_sm, Guid(0));
}

#[test]
fn a_failover_to_a_standby_or_to_none() {
    let on0 = [view(0, Some(A), Some(0))];
    let on9 = [view(0, Some(A), Some(9))];
    let down = [view(0, Some(A), None)];
    let e = events(&on0, &on9, 0);
    assert_eq!(kinds(&e), [(Kind::SubnetFailover, 0)]);
    assert_eq!(e[0].old_local_port, "mlx5_0:1");
    let e = events(&on9, &down, 0);
    assert_eq!(kinds(&e), [(Kind::SubnetFailover, 0)]);
    assert_eq!(e[0].old_local_port, "mlx5_9:1");
    // A port coming up where none was is no failover; nor is nothing.
    assert!(events(&down, &on0, 0).is_empty());
    assert!(events(&down, &down, 0).is_empty());
    // Both at once: the master and the port.
    let both = [view(0, Some(B), Some(9))];
    assert_eq!(
        kinds(&events(&on0, &both, 0)),
        [(Kind::SubnetMasterChanged, 0), (Kind::SubnetFailover, 0)]
    );
}

#[test]
fn a_subnet_seen_first_calls_for_nothing() {
    assert!(events(&[], &[view(0, None, None)], 0).is_empty());
    let before = [view(0, Some(A), Some(0))];
    let after = [view(0, Some(A), Some(0)), view(1, None, None)];
    assert!(events(&before, &after, 0).is_empty());
}

#[test]
fn the_varbinds_carry_the_subnets_row_as_the_table_shows_it() {
    let e = events(
        &[view(1, Some(A), Some(0))],
        &[view(1, Some(B), Some(9))],
        0,
    );
    let changed = e[0].varbinds();
    let names: Vec<Oid> = changed.iter().map(|v| v.name.clone()).collect();
    let col = |c: u32| Oid(vec![1, 3, 6, 1, 3, 117, 1, 24, 1, c, 2]);
    assert_eq!(
        names,
        [
            Oid(SNMP_TRAP_OID.to_vec()),
            Obj::OldSmGuid.oid(),
            col(2),
            col(3),
            col(4),
            col(5),
            col(6),
            col(7),
        ]
    );
    assert_eq!(
        changed[0].value,
        Value::ObjectIdentifier(Oid(vec![1, 3, 6, 1, 3, 117, 0, 13]))
    );
    assert_eq!(changed[1].value, Value::OctetString(A.octets().to_vec()));
    assert_eq!(changed[2].value, Value::OctetString(b"plane-1".to_vec()));
    assert_eq!(changed[4].value, Value::OctetString(B.octets().to_vec()));
    assert_eq!(changed[7].value, Value::Integer(SmState::Master as i32));
    let failover = e[1].varbinds();
    assert_eq!(
        failover[0].value,
        Value::ObjectIdentifier(Kind::SubnetFailover.oid())
    );
    assert_eq!(failover[1].value, Value::OctetString(b"mlx5_0:1".to_vec()));
    assert_eq!(
        failover[2..]
            .iter()
            .map(|v| v.name.clone())
            .collect::<Vec<_>>(),
        [col(2), col(3), col(8), col(9), col(10)]
    );
    assert_eq!(failover[4].value, Value::OctetString(b"mlx5_9".to_vec()));
    assert_eq!(failover[5].value, Value::Gauge32(1));
}

#[test]
fn the_evaluator_sends_them_once_counted_by_storm_control() {
    use crate::fabric::cache::Snapshot;
    use crate::notify::{Evaluator, Family, NotifyConfig};
    use std::sync::Arc;
    let snap = |sweep: u64, v: Vec<SubnetView>| Snapshot {
        sweep,
        subnets: Arc::from(v),
        ..Default::default()
    };
    let mut ev = Evaluator::new(NotifyConfig {
        limit_per_sweep: 1,
        ..NotifyConfig::default()
    });
    let up = || vec![view(0, Some(A), Some(0)), view(1, Some(A), Some(1))];
    assert!(ev.evaluate(&snap(1, up())).events.is_empty(), "first sight");
    let down = || vec![view(0, Some(A), Some(9)), view(1, Some(A), None)];
    let o = ev.evaluate(&snap(2, down()));
    assert_eq!(kinds(&o.events), [(Kind::SubnetFailover, 0)]);
    assert_eq!(o.suppressed[Family::Subnet as usize], 1);
    assert_eq!(o.suppressed_total(), 1);
    // The change was seen: the same subnets again call for nothing.
    let o = ev.evaluate(&snap(3, down()));
    assert!(o.events.is_empty() && o.suppressed_total() == 0);
}
