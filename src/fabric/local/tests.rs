//! Grouping local ports into subnets, and the failover state machine on
//! virtual time.

use super::*;

const A: u64 = DEFAULT_PREFIX;
const B: u64 = 0xfe80_0000_0000_0002;

fn p(s: &str) -> LocalPort {
    let (ca, n) = s.rsplit_once(':').unwrap();
    LocalPort::new(ca, n.parse().unwrap())
}

fn seen(port: &str, state: u8, prefix: u64, sm: u64) -> Seen {
    Seen {
        port: p(port),
        state,
        prefix,
        sm_guid: Guid(sm),
    }
}

fn key(prefix: u64, sm: u64) -> SubnetKey {
    SubnetKey {
        prefix,
        sm_guid: Guid(sm),
    }
}

/// A host on three planes: two at the default prefix told apart by their
/// master SM, one at its own prefix; a second port on the first plane; a
/// port down.
fn host() -> Vec<Seen> {
    vec![
        seen("mlx5_0:1", 4, A, 0x11),
        seen("mlx5_0:2", 1, A, 0),
        seen("mlx5_1:1", 4, A, 0x22),
        seen("mlx5_2:1", 4, A, 0x11),
        seen("mlx5_3:1", 4, B, 0x33),
    ]
}

fn names(ports: &[LocalPort]) -> Vec<String> {
    ports.iter().map(ToString::to_string).collect()
}

#[test]
fn every_active_port_grouped_by_prefix_and_master_sm() {
    let g = group(&Wanted::Every, &host());
    let got: Vec<(SubnetKey, String, Vec<String>)> = g
        .subnets
        .iter()
        .map(|s| {
            (
                s.key,
                s.sweeping.as_ref().unwrap().to_string(),
                names(&s.standby),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            (
                key(A, 0x11),
                "mlx5_0:1".into(),
                vec!["mlx5_2:1".to_string()]
            ),
            (key(A, 0x22), "mlx5_1:1".into(), vec![]),
            (key(B, 0x33), "mlx5_3:1".into(), vec![]),
        ]
    );
    assert!(g.subnets.iter().all(|s| s.name.is_none()));
    assert_eq!((g.idle.len(), g.stray.len(), g.left_out), (0, 0, 0));
}

#[test]
fn listed_ports_keep_their_order_and_a_down_one_waits() {
    let want = Wanted::Ports(vec![
        p("mlx5_2:1"),
        p("mlx5_0:2"),
        p("mlx5_0:1"),
        p("mlx5_9:1"),
    ]);
    let g = group(&want, &host());
    assert_eq!(g.subnets.len(), 1);
    assert_eq!(g.subnets[0].sweeping, Some(p("mlx5_2:1")));
    assert_eq!(names(&g.subnets[0].standby), ["mlx5_0:1"]);
    assert_eq!(names(&g.idle), ["mlx5_0:2", "mlx5_9:1"]);
}

#[test]
fn the_old_keys_are_a_list_of_one() {
    let one = |ca: Option<&str>, port: Option<u8>, seen: &[Seen]| {
        group(
            &Wanted::First {
                ca: ca.map(Arc::from),
                port,
            },
            seen,
        )
    };
    let g = one(Some("mlx5_0"), None, &host());
    assert_eq!(g.subnets.len(), 1);
    assert_eq!(g.subnets[0].sweeping, Some(p("mlx5_0:1")));
    assert!(g.subnets[0].standby.is_empty());
    let g = one(None, Some(1), &host());
    assert_eq!(g.subnets[0].sweeping, Some(p("mlx5_0:1")), "the first CA");
    // No active port: one whose link is up (Init) still carries SMPs.
    let init = [seen("mlx5_0:1", 1, A, 0), seen("mlx5_0:2", 2, A, 0)];
    let g = one(Some("mlx5_0"), None, &init);
    assert_eq!(g.subnets[0].sweeping, Some(p("mlx5_0:2")));
    let g = one(Some("mlx5_0"), Some(1), &init);
    assert!(g.subnets.is_empty());
    assert_eq!(names(&g.idle), ["mlx5_0:1"]);
}

#[test]
fn planes_keep_their_order_names_and_ports() {
    let planes = Wanted::Planes(vec![
        Plane {
            name: Some("plane-b".into()),
            ports: vec![p("mlx5_3:1")],
        },
        Plane {
            name: Some("plane-a".into()),
            // The first is down: the second sweeps; the third is on
            // another subnet and is no standby of this one.
            ports: vec![p("mlx5_0:2"), p("mlx5_0:1"), p("mlx5_1:1"), p("mlx5_2:1")],
        },
        Plane {
            name: None,
            ports: vec![p("mlx5_7:1")],
        },
    ]);
    let g = group(&planes, &host());
    assert_eq!(g.subnets.len(), 3);
    let b = &g.subnets[0];
    assert_eq!(
        (b.name.as_deref(), b.key, b.sweeping.clone()),
        (Some("plane-b"), key(B, 0x33), Some(p("mlx5_3:1")))
    );
    let a = &g.subnets[1];
    assert_eq!(
        (a.name.as_deref(), a.key, a.sweeping.clone()),
        (Some("plane-a"), key(A, 0x11), Some(p("mlx5_0:1")))
    );
    assert_eq!(names(&a.standby), ["mlx5_0:2", "mlx5_2:1"]);
    assert_eq!(g.stray, [(p("mlx5_1:1"), 1, key(A, 0x22))]);
    // A plane none of whose ports is there: kept in its place, unswept.
    let c = &g.subnets[2];
    assert_eq!((c.sweeping.clone(), c.key), (None, key(A, 0)));
    assert_eq!(names(&g.idle), ["mlx5_0:2", "mlx5_7:1"]);
}

#[test]
fn subnets_past_the_most_are_left_out() {
    let many: Vec<Seen> = (0..70)
        .map(|i| seen(&format!("mlx5_{i}:1"), 4, A, 0x100 + i))
        .collect();
    let g = group(&Wanted::Every, &many);
    assert_eq!((g.subnets.len(), g.left_out), (MAX_SUBNETS, 6));
}

/// One subnet swept through mlx5_0:1 with mlx5_1:1 and mlx5_2:1 standby.
fn three_ports() -> (FailoverMachine, Vec<Seen>) {
    let up = vec![
        seen("mlx5_0:1", 4, A, 0x11),
        seen("mlx5_1:1", 4, A, 0x11),
        seen("mlx5_2:1", 4, A, 0x11),
    ];
    let g = group(&Wanted::Every, &up);
    (
        FailoverMachine::new(&g.subnets, Duration::from_secs(20)),
        up,
    )
}

fn with_state(mut ports: Vec<Seen>, port: &str, state: u8) -> Vec<Seen> {
    for s in &mut ports {
        if s.port == p(port) {
            s.state = state;
        }
    }
    ports
}

#[test]
fn the_sweep_moves_to_a_standby_at_the_next_sweep_after_the_port_is_seen_down() {
    let (mut f, up) = three_ports();
    assert!(f.ports(&up).is_empty());
    assert_eq!(f.sweep(0), (Some(p("mlx5_0:1")), vec![]));
    // Down and up again between two sweeps: nothing moves.
    f.ports(&with_state(up.clone(), "mlx5_0:1", 1));
    f.ports(&up);
    assert_eq!(f.sweep(0), (Some(p("mlx5_0:1")), vec![]));
    // Down at the next sweep: the first standby that is up takes it.
    let down = with_state(with_state(up.clone(), "mlx5_0:1", 1), "mlx5_1:1", 2);
    assert!(f.ports(&down).is_empty(), "a port down is not gone");
    let (to, events) = f.sweep(0);
    assert_eq!(to, Some(p("mlx5_2:1")));
    assert_eq!(
        events,
        [Event {
            subnet: 0,
            change: Change::FailedOver {
                from: p("mlx5_0:1"),
                to: p("mlx5_2:1"),
            },
        }]
    );
    let v = f.view(0).unwrap();
    assert_eq!(v.sweeping, Some(p("mlx5_2:1")));
    assert_eq!(names(&v.standby), ["mlx5_1:1", "mlx5_0:1"]);
    // It stays on the standby when the first port is back.
    f.ports(&up);
    assert_eq!(f.sweep(0), (Some(p("mlx5_2:1")), vec![]));
}

#[test]
fn a_vanished_ca_is_gone_once_and_then_no_port_is_left() {
    let (mut f, up) = three_ports();
    // mlx5_0 hot-unplugged: its port is not listed any more.
    let unplugged: Vec<Seen> = up[1..].to_vec();
    assert_eq!(
        f.ports(&unplugged),
        [Event {
            subnet: 0,
            change: Change::PortGone {
                port: p("mlx5_0:1"),
            },
        }]
    );
    assert!(f.ports(&unplugged).is_empty(), "said once");
    assert_eq!(f.sweep(0).0, Some(p("mlx5_1:1")));
    // Every port down: the subnet is not swept, and that is said once.
    let all_down = with_state(with_state(unplugged.clone(), "mlx5_1:1", 1), "mlx5_2:1", 1);
    f.ports(&all_down);
    assert_eq!(
        f.sweep(0),
        (
            None,
            vec![Event {
                subnet: 0,
                change: Change::NoPortLeft {
                    last: p("mlx5_1:1"),
                },
            }]
        )
    );
    let v = f.view(0).unwrap();
    assert_eq!(v.sweeping, None);
    assert_eq!(f.sweep(0), (None, vec![]), "said once");
    // The CA is plugged back and its port comes up: the sweep resumes
    // through it.
    let back = with_state(up.clone(), "mlx5_1:1", 1);
    let back = with_state(back, "mlx5_2:1", 1);
    f.ports(&back);
    let (to, events) = f.sweep(0);
    assert_eq!(to, Some(p("mlx5_0:1")));
    assert_eq!(
        events,
        [Event {
            subnet: 0,
            change: Change::FailedOver {
                from: p("mlx5_1:1"),
                to: p("mlx5_0:1"),
            },
        }]
    );
    let v = f.view(0).unwrap();
    assert_eq!(names(&v.standby), ["mlx5_1:1", "mlx5_2:1"], "each once");
}

/// An event names the subnet it happened on: a port gone and the move
/// to a standby on the second subnet are said of it, not of the first.
#[test]
fn an_event_names_its_subnet() {
    let up = vec![
        seen("mlx5_0:1", 4, A, 0x11),
        seen("mlx5_1:1", 4, B, 0x22),
        seen("mlx5_1:2", 4, B, 0x22),
    ];
    let g = group(&Wanted::Every, &up);
    let mut f = FailoverMachine::new(&g.subnets, Duration::from_secs(20));
    f.ports(&up);
    assert_eq!(f.sweep(1).0, Some(p("mlx5_1:1")));
    let gone = f.ports(&[up[0].clone(), up[2].clone()]);
    assert_eq!(
        gone,
        [Event {
            subnet: 1,
            change: Change::PortGone {
                port: p("mlx5_1:1"),
            },
        }]
    );
    assert_eq!(f.sweep(0), (Some(p("mlx5_0:1")), vec![]));
    assert_eq!(f.sweep(1).1[0].subnet, 1);
}

#[test]
fn sm_changes_and_a_missing_master_after_the_grace() {
    let (mut f, _) = three_ports();
    let t0 = Instant::now();
    let at = |s: u64| t0 + Duration::from_secs(s);
    let sm = |guid: u64, state: SmState| SmInfo {
        lid: 1,
        guid: Guid(guid),
        priority: 0,
        state,
        act_count: 7,
    };
    assert!(f.sm(0, at(0), Some(sm(0x11, SmState::Master))).is_empty());
    assert_eq!(f.view(0).unwrap().key, key(A, 0x11));
    // The same master, counting on: nothing.
    assert!(f.sm(0, at(10), Some(sm(0x11, SmState::Master))).is_empty());
    // No master (the old one gone, the standby not yet master): said
    // once the grace has passed, and once.
    assert!(f.sm(0, at(20), None).is_empty());
    assert!(f.sm(0, at(30), Some(sm(0x44, SmState::Standby))).is_empty());
    // Within the grace the view keeps the master last known.
    assert_eq!(f.view(0).unwrap().sm.map(|s| s.guid), Some(Guid(0x11)));
    assert_eq!(
        f.sm(0, at(40), None),
        [Event {
            subnet: 0,
            change: Change::NoMasterSm {
                last: Some(sm(0x11, SmState::Master)),
            },
        }]
    );
    assert_eq!(f.view(0).unwrap().sm, None, "none past the grace");
    assert!(f.sm(0, at(50), None).is_empty());
    // The standby took over: a change from the master last known.
    assert_eq!(
        f.sm(0, at(60), Some(sm(0x44, SmState::Master))),
        [Event {
            subnet: 0,
            change: Change::SmChanged {
                old: sm(0x11, SmState::Master),
                new: sm(0x44, SmState::Master),
            },
        }]
    );
    // The subnet keeps its first key; the view shows the new master.
    let v = f.view(0).unwrap();
    assert_eq!(
        (v.key, v.sm.map(|s| s.guid)),
        (key(A, 0x11), Some(Guid(0x44)))
    );
    // A handover within the grace says nothing but the change.
    assert!(f.sm(0, at(70), None).is_empty());
    assert_eq!(
        f.sm(0, at(75), Some(sm(0x11, SmState::Master))).len(),
        1,
        "{:?}",
        f.view(0)
    );
    assert!(f.sm(0, at(200), Some(sm(0x11, SmState::Master))).is_empty());
    assert!(f.sm(9, at(200), None).is_empty(), "no such subnet");
}

#[test]
fn a_port_read_through_smps_is_seen_on_its_masters_subnet() {
    let read = crate::fabric::discover::SubnetRead {
        port: 1,
        state: 4,
        prefix: B,
        sm_lid: 3,
        sm: Some(SmInfo {
            lid: 3,
            guid: Guid(0x33),
            priority: 1,
            state: SmState::Master,
            act_count: 0,
        }),
        others: Vec::new(),
        smps: 3,
    };
    let s = Seen::from_read(p("mlx5_3:1"), &read);
    assert_eq!((s.key(), s.active()), (key(B, 0x33), true));
    let none = crate::fabric::discover::SubnetRead { sm: None, ..read };
    assert_eq!(Seen::from_read(p("mlx5_3:1"), &none).key(), key(B, 0));
}
