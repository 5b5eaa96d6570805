//! The subnet notifications over a real socket: the notifier fed
//! snapshots whose subnets change (an SM handover with a failover to the
//! standby local port, then no master) sends SNMPv2c traps to a private
//! snmptrapd, which logs them with IB-PM-MIB's names, each once.

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{PrivateSnmptrapd, v2_traps};
use ibpm_agentx::fabric::cache::{Cache, Snapshot};
use ibpm_agentx::ib::Guid;
use ibpm_agentx::ib::subnet::{LocalPort, SmInfo, SmState, SubnetKey, SubnetView};
use ibpm_agentx::notify::NotifyConfig;
use ibpm_agentx::notify::send::{Notifier, TrapSink};

const A: Guid = Guid(0x0002_c903_00a1_b2c3);
const B: Guid = Guid(0x0002_c903_00a1_b2c4);

/// "plane-a" (pmSubnetIndex 1): master `sm` when given, swept through
/// `sweeping`, the others of mlx5_0:1 and mlx5_1:1 standing by.
fn plane(sm: Option<Guid>, sweeping: &str) -> SubnetView {
    let ports = [LocalPort::new("mlx5_0", 1), LocalPort::new("mlx5_1", 1)];
    let sweeping = ports.iter().find(|p| p.to_string() == sweeping).cloned();
    SubnetView {
        index: 0,
        name: Some("plane-a".into()),
        key: SubnetKey {
            prefix: 0xfe80_0000_0000_0000,
            sm_guid: sm.unwrap_or(Guid(0)),
        },
        sm: sm.map(|guid| SmInfo {
            lid: 1,
            guid,
            priority: 14,
            state: SmState::Master,
            act_count: 0,
        }),
        standby: ports
            .iter()
            .filter(|p| Some(*p) != sweeping.as_ref())
            .cloned()
            .collect(),
        sweeping,
        nodes: 12,
        ports: 40,
        ..Default::default()
    }
}

#[test]
fn a_handover_a_failover_and_no_master_reach_snmptrapd_once_each() {
    let mut trapd = PrivateSnmptrapd::start().expect("snmptrapd");
    let sink = TrapSink::new(vec![trapd.sink().parse().unwrap()], "public".into()).unwrap();
    let mut notifier = Notifier::new(NotifyConfig::default(), Box::new(sink));
    let cache = Cache::new();
    let steps = [
        plane(Some(A), "mlx5_0:1"),
        plane(Some(B), "mlx5_1:1"),
        plane(None, "mlx5_1:1"),
        plane(None, "mlx5_1:1"),
    ];
    for (i, v) in steps.into_iter().enumerate() {
        cache.publish(Snapshot {
            sweep: i as u64 + 1,
            subnets: Arc::from(vec![v]),
            ..Default::default()
        });
        notifier.after_sweep(&cache);
    }
    let names = [
        "pmSubnetMasterChanged",
        "pmSubnetFailover",
        "pmSubnetNoMaster",
    ];
    let deadline = Instant::now() + Duration::from_secs(10);
    while names.iter().any(|n| v2_traps(&trapd.log(), n).is_empty()) {
        assert!(Instant::now() < deadline, "traps:\n{}", trapd.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // What was sent has arrived: snmptrapd logs each datagram whole.
    let log = trapd.log();
    let one = |name: &str| {
        let t = v2_traps(&log, name);
        assert_eq!(t.len(), 1, "{name} once:\n{log}");
        t[0].clone()
    };
    let old = format!("pmNotifyOldSmGuid.0 = STRING: {}", common::guid_hint(A.0));
    let new = format!("pmSubnetSmGuid.1 = STRING: {}", common::guid_hint(B.0));
    let expected: [(&str, &[&str]); 2] = [
        (
            "pmSubnetMasterChanged",
            &[
                &old,
                &new,
                "pmSubnetName.1 = STRING: plane-a",
                "pmSubnetSmLid.1 = Gauge32: 1",
                "pmSubnetSmPriority.1 = Gauge32: 14",
                "pmSubnetSmState.1 = INTEGER: master(3)",
            ],
        ),
        (
            "pmSubnetFailover",
            &[
                "pmNotifyOldLocalPort.0 = STRING: mlx5_0:1",
                "pmSubnetLocalCa.1 = STRING: mlx5_1",
                "pmSubnetLocalPort.1 = Gauge32: 1",
                "pmSubnetStandbyPorts.1 = STRING: mlx5_0:1",
            ],
        ),
    ];
    for (name, objects) in expected {
        let line = one(name);
        for says in objects {
            assert!(line.contains(says), "{says}: {line}");
        }
    }
    let none = one("pmSubnetNoMaster");
    assert!(
        none.contains("pmSubnetSmState.1 = INTEGER: none(4)"),
        "{none}"
    );
    trapd.stop();
}
