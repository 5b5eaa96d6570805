//! The local ports as sysfs shows them, read from a fixture tree of several
//! CAs (tests/fixtures/sysfs: states, two subnet prefixes, an Ethernet
//! port, a port down), grouped into subnets; then the tree changes between
//! two reads (a port goes down, a CA is unplugged) and the failover state
//! machine follows. This is the path ibsim cannot show: umad2sim gives a
//! process one port only.

use std::path::{Path, PathBuf};
use std::time::Duration;

use ibpm_agentx::fabric::local::{Change, Event, FailoverMachine, Seen, Wanted, group};
use ibpm_agentx::ib::Guid;
use ibpm_agentx::ib::subnet::{LocalPort, SubnetKey};
use ibpm_agentx::transport::umad::{LinkLayer, SysfsCa, ib_ports, read_cas};

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs")
}

fn cas_of(root: &Path) -> Vec<SysfsCa> {
    read_cas(&root.join("class/infiniband").display().to_string()).unwrap()
}

/// The SM read through each port, as the umad path would answer it: the
/// SM at LID 1 differs between mlx5_0 (plane A) and mlx5_1 (plane B), the
/// prefix does not.
fn sm_guid(p: &ibpm_agentx::transport::umad::SysfsPort) -> Guid {
    Guid(match (p.ca.as_str(), p.sm_lid) {
        (_, 0) => 0,
        ("mlx5_1", _) => 0xb0,
        (_, lid) => 0xa0 + u64::from(lid),
    })
}

fn seen(cas: &[SysfsCa]) -> Vec<Seen> {
    ib_ports(cas)
        .map(|p| Seen::from_sysfs(p, sm_guid(p)))
        .collect()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

#[test]
fn the_fixture_hosts_ports_are_read_as_sysfs_writes_them() {
    let cas = cas_of(&fixture());
    let names: Vec<(&str, u8)> = cas
        .iter()
        .map(|c| (c.name.as_str(), c.port_count))
        .collect();
    assert_eq!(
        names,
        [
            ("mlx5_0", 1),
            ("mlx5_1", 2),
            ("mlx5_2", 1),
            ("mlx5_3", 1),
            ("mlx5_4", 1),
            ("mlx5_10", 1)
        ]
    );
    let p = &cas[1].ports[1];
    assert_eq!(
        (
            p.ca.as_str(),
            p.port,
            p.state,
            p.phys_state,
            p.lid,
            p.sm_lid
        ),
        ("mlx5_1", 2, 1, 3, 0xffff, 0)
    );
    let c = &cas[2].ports[0];
    assert_eq!(
        (c.prefix, c.port_guid),
        (0xfe80_0000_0000_0002, 0x0002_c903_0000_0c01)
    );
    assert_eq!(
        (c.lid, c.sm_lid, c.rate.as_str()),
        (0x12, 2, "200 Gb/sec (4X HDR)")
    );
    assert_eq!(cas[3].ports[0].link_layer, LinkLayer::Ethernet);
    let ib: Vec<String> = ib_ports(&cas)
        .map(|p| format!("{}:{}", p.ca, p.port))
        .collect();
    assert_eq!(
        ib,
        [
            "mlx5_0:1",
            "mlx5_1:1",
            "mlx5_1:2",
            "mlx5_2:1",
            "mlx5_4:1",
            "mlx5_10:1"
        ],
        "the Ethernet port is none of the fabric's"
    );
}

#[test]
fn every_active_port_grouped_by_subnet_from_the_fixture() {
    let g = group(&Wanted::Every, &seen(&cas_of(&fixture())));
    let got: Vec<(String, String, Vec<String>)> = g
        .subnets
        .iter()
        .map(|s| {
            (
                s.key.to_string(),
                s.sweeping.as_ref().unwrap().to_string(),
                s.standby.iter().map(ToString::to_string).collect(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                "fe80::/64@0x00000000000000a1".to_string(),
                "mlx5_0:1".to_string(),
                vec!["mlx5_10:1".to_string()]
            ),
            (
                "fe80::/64@0x00000000000000b0".into(),
                "mlx5_1:1".into(),
                vec![]
            ),
            (
                "fe80:0:0:2::/64@0x00000000000000a2".into(),
                "mlx5_2:1".into(),
                vec![]
            ),
        ],
        "planes A and B share a prefix and differ by SM; the Init and Down ports wait"
    );
}

#[test]
fn a_port_going_down_and_a_ca_unplugged_between_two_reads() {
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&fixture(), dir.path());
    let first = seen(&cas_of(dir.path()));
    let g = group(&Wanted::Every, &first);
    let mut f = FailoverMachine::new(&g.subnets, Duration::from_secs(10));
    assert!(f.ports(&first).is_empty());
    assert_eq!(f.sweep(0).0, Some(LocalPort::new("mlx5_0", 1)));

    // mlx5_0:1 goes down between two reads.
    let ports = dir.path().join("class/infiniband");
    std::fs::write(ports.join("mlx5_0/ports/1/state"), "1: DOWN\n").unwrap();
    let second = seen(&cas_of(dir.path()));
    assert_eq!(second[0].state, 1);
    assert!(f.ports(&second).is_empty());
    let (to, events) = f.sweep(0);
    assert_eq!(to, Some(LocalPort::new("mlx5_10", 1)));
    assert_eq!(
        events,
        [Event {
            subnet: 0,
            change: Change::FailedOver {
                from: LocalPort::new("mlx5_0", 1),
                to: LocalPort::new("mlx5_10", 1),
            },
        }]
    );

    // mlx5_10 is unplugged: its directory vanishes; the other subnets are
    // untouched and this one has no port left.
    std::fs::remove_dir_all(ports.join("mlx5_10")).unwrap();
    let third = cas_of(dir.path());
    assert!(third.iter().all(|c| c.name != "mlx5_10"));
    assert_eq!(
        f.ports(&seen(&third)),
        [Event {
            subnet: 0,
            change: Change::PortGone {
                port: LocalPort::new("mlx5_10", 1),
            },
        }]
    );
    assert_eq!(
        f.sweep(0),
        (
            None,
            vec![Event {
                subnet: 0,
                change: Change::NoPortLeft {
                    last: LocalPort::new("mlx5_10", 1),
                },
            }]
        )
    );
    assert_eq!(f.sweep(1).0, Some(LocalPort::new("mlx5_1", 1)));
    assert_eq!(f.sweep(2).0, Some(LocalPort::new("mlx5_2", 1)));
    assert_eq!(
        f.view(2).unwrap().key,
        SubnetKey {
            prefix: 0xfe80_0000_0000_0002,
            sm_guid: Guid(0xa2)
        }
    );
}

/// A planarized adapter (XDR) on two planes: four umad devices, two per
/// port GUID, the GSI one with IsSMDisabled in its CapabilityMask. They
/// pair as libibumad pairs them (SMI mlx5_0 / GSI mlx5_1 on plane A, SMI
/// mlx5_2 / GSI mlx5_3 on plane B); the agent lists and sweeps each port
/// through its GSI device (its SMPs go to the SMI device), so the SMI
/// device is no standby port of its plane and the two planes are two
/// subnets, one local port each.
#[test]
fn a_planarized_adapters_smi_and_gsi_devices_pair_by_port_guid() {
    use ibpm_agentx::transport::umad::pairs::{SmiGsiPair, smi_gsi_pairs, smi_halves, smi_of};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/sysfs-planarized");
    let cas = cas_of(&root);
    assert_eq!(cas.len(), 4, "four umad devices");
    let dev = |ca: &str| Some((ca.to_string(), 1));
    assert_eq!(
        smi_gsi_pairs(&cas),
        [
            SmiGsiPair {
                port_guid: 0xb8ce_f603_00a1_b200,
                smi: dev("mlx5_0"),
                gsi: dev("mlx5_1"),
                planarized: true,
            },
            SmiGsiPair {
                port_guid: 0xb8ce_f603_00a1_b201,
                smi: dev("mlx5_2"),
                gsi: dev("mlx5_3"),
                planarized: true,
            },
        ]
    );
    assert_eq!(
        smi_halves(&cas),
        [dev("mlx5_0").unwrap(), dev("mlx5_2").unwrap()]
    );
    assert_eq!(smi_of(&cas, &dev("mlx5_3").unwrap()), dev("mlx5_2"));
    let listed: Vec<String> = ib_ports(&cas).map(|p| p.ca.clone()).collect();
    assert_eq!(
        listed,
        ["mlx5_1", "mlx5_3"],
        "each port through its GSI device"
    );
    // Grouped: a subnet per plane (their SMs differ), no standby.
    let seen: Vec<Seen> = ib_ports(&cas)
        .map(|p| Seen::from_sysfs(p, Guid(if p.ca == "mlx5_1" { 0xa1 } else { 0xb1 })))
        .collect();
    let g = group(&Wanted::Every, &seen);
    assert_eq!(g.subnets.len(), 2);
    assert!(g.subnets.iter().all(|s| s.standby.is_empty()));
    // The ordinary fixture host: every port its own SMI and GSI device.
    let plain = cas_of(&fixture());
    assert!(
        smi_gsi_pairs(&plain)
            .iter()
            .all(|p| !p.planarized && p.smi == p.gsi)
    );
    assert!(smi_halves(&plain).is_empty());
}
