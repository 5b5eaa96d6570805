//! Several planes in one topology: each a connected component of the
//! links (adapters do not join their ports' planes), a subnet with its own
//! prefix, LIDs from 1, master SM and a transport that reaches it alone;
//! and the generators' plane options, parsed back.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use ibpm_agentx::ib::planes::Planes;
use ibpm_agentx::ib::subnet::{DEFAULT_PREFIX, LocalPort, SmInfo, SmState};
use ibpm_agentx::ib::topology::{self, Topology};
use ibpm_agentx::ib::{Fabric, Guid, Node, NodeType, PortState};
use ibpm_agentx::pm::PortCounters;
use ibpm_agentx::pm::mad::{self, attr, method, status};
use ibpm_agentx::sim::{SimFabric, SimOptions, SimTransport, traffic};
use ibpm_agentx::transport::{MadAddr, MadTransport};

/// Plane A: switch SA, host HA1 and port 1 of the adapter M (port 3 of M
/// is not cabled); plane B: switch SB, host HB1 and port 2 of M; an
/// isolated switch X and adapter Y.
const TWO_PLANES: &str = "\
# subnetprefix=0xfe80000000000001
Switch 8 \"SA\"
[1] \"HA1\"[1]
[2] \"M\"[1]

# an ordinary comment
# subnetprefix=0xfe80000000000002
switchguid=0x300000
Switch 8 \"SB\"
[1] \"HB1\"[1]
[2] \"M\"[2]

Hca 1 \"HA1\"
[1] \"SA\"[1]

Hca 3 \"M\"
[1] \"SA\"[2]
[2] \"SB\"[2]

caguid=0x400000
Hca 1 \"HB1\"
[1] \"SB\"[1]

Switch 4 \"X\"

Hca 1 \"Y\"
";

const SA: Guid = Guid(0x200000);
const SB: Guid = Guid(0x300000);
const X: Guid = Guid(0x300001);
const HA1: Guid = Guid(0x100000);
const M: Guid = Guid(0x100002);
const HB1: Guid = Guid(0x400000);
const Y: Guid = Guid(0x400002);

fn quiet() -> SimOptions {
    SimOptions {
        traffic: false,
        ..SimOptions::default()
    }
}

fn two_planes() -> SimFabric {
    let t = topology::parse_topology(TWO_PLANES).expect("topology");
    SimFabric::from_topology(t, quiet())
}

fn guids(f: &Fabric) -> Vec<Guid> {
    f.nodes.iter().map(|n| n.id.guid).collect()
}

fn node(f: &Fabric, g: Guid) -> &Node {
    f.node(g).unwrap_or_else(|| panic!("no node {g}"))
}

fn ports(n: &Node) -> Vec<(u8, u16)> {
    n.ports.iter().map(|p| (p.num, p.lid)).collect()
}

/// PortCounters of `port` at `lid` through `t`, or None when nothing
/// answers.
fn counters(t: &mut SimTransport, lid: u16, port: u8) -> Option<PortCounters> {
    let mut d = [0u8; 192];
    PortCounters::select(port, 0, 0).encode(&mut d);
    let req = mad::request(method::GET, attr::PORT_COUNTERS, 0, 7, &d);
    t.send(&MadAddr::gsi(lid), &req).expect("send");
    let r = t.recv(Duration::from_millis(20)).expect("recv")?;
    let (h, data) = mad::parse(&*r.mad).expect("a well-formed reply");
    assert_eq!(h.status, status::OK);
    Some(PortCounters::decode(data))
}

#[test]
fn planes_are_the_components_of_the_links_and_adapters_do_not_join_them() {
    let t = topology::parse_topology(TWO_PLANES).unwrap();
    assert_eq!(
        t.prefixes
            .iter()
            .map(|d| (d.line, d.node))
            .collect::<Vec<_>>(),
        [(1, SA), (7, SB)]
    );
    let (planes, conflicts) = Planes::of(&t.fabric, &t.prefixes);
    assert!(conflicts.is_empty());
    assert_eq!(planes.count(), 2);
    assert_eq!(
        (planes.prefix(0), planes.prefix(1)),
        (0xfe80_0000_0000_0001, 0xfe80_0000_0000_0002)
    );
    let idx = |g: Guid| t.fabric.nodes.iter().position(|n| n.id.guid == g).unwrap();
    // The multi-plane adapter: port 1 in A, port 2 in B, its uncabled
    // port 3 with its first cabled port; isolated nodes in the first plane.
    let m = idx(M);
    assert_eq!(
        (
            planes.of_port(m, 1),
            planes.of_port(m, 2),
            planes.of_port(m, 3)
        ),
        (0, 1, 0)
    );
    assert!(planes.has_node(m, 0) && planes.has_node(m, 1));
    for (g, plane) in [(SA, 0), (HA1, 0), (X, 0), (Y, 0), (SB, 1), (HB1, 1)] {
        assert_eq!(planes.of_node(idx(g)), plane, "{g}");
        assert!(!planes.has_node(idx(g), 1 - plane), "{g}");
    }
}

#[test]
fn a_connected_file_is_one_plane_at_the_default_prefix() {
    let f = topology::default_fabric();
    let (planes, _) = Planes::of(&f, &[]);
    assert_eq!((planes.count(), planes.prefix(0)), (1, DEFAULT_PREFIX));
    let sim = SimFabric::with_planes(f.clone(), &[], quiet());
    assert_eq!(sim.plane_count(), 1);
    let whole = sim.fabric();
    assert_eq!(guids(&whole), guids(&f));
    assert_eq!(sim.planes()[0].fabric(), whole);
    assert!(sim.plane(1).is_none());
    assert!(sim.plane_fabric(1).nodes.is_empty());
    // Nodes and no links at all: one plane too.
    let bare = topology::parse("Switch 4 \"A\"\n\nHca 2 \"B\"\n").unwrap();
    assert_eq!(Planes::of(&bare, &[]).0.count(), 1);
    let sim = SimFabric::with_planes(bare, &[], quiet());
    assert_eq!((sim.plane_count(), sim.fabric().nodes.len()), (1, 2));
}

#[test]
fn new_makes_one_subnet_of_whatever_the_links_join() {
    let t = topology::parse_topology(TWO_PLANES).unwrap();
    let sim = SimFabric::new(t.fabric.clone(), quiet());
    assert_eq!(sim.plane_count(), 1);
    let f = sim.fabric();
    assert_eq!(f.nodes.len(), t.fabric.nodes.len());
    // One LID space: 6 adapter ports and 3 switches, LIDs 1..=9.
    let mut lids: Vec<u16> = f
        .nodes
        .iter()
        .flat_map(|n| match n.id.node_type {
            NodeType::Switch => vec![n.id.lid],
            _ => n.ports.iter().map(|p| p.lid).collect(),
        })
        .collect();
    lids.sort_unstable();
    assert_eq!(lids, (1..=9).collect::<Vec<u16>>());
    assert_eq!(sim.planes()[0].prefix(), DEFAULT_PREFIX);
}

#[test]
fn each_plane_has_its_lids_from_1_and_its_nodes_and_ports() {
    let sim = two_planes();
    let planes = sim.planes();
    assert_eq!(planes.len(), 2);
    let a = planes[0].fabric();
    let b = planes[1].fabric();
    // GUID order within a plane: HA1, M (ports 1 and 3), SA, X, Y.
    assert_eq!(guids(&a), [HA1, M, SA, X, Y]);
    assert_eq!(ports(node(&a, HA1)), [(1, 1)]);
    assert_eq!(ports(node(&a, M)), [(1, 2), (3, 3)]);
    assert_eq!(node(&a, SA).id.lid, 4);
    assert_eq!(node(&a, X).id.lid, 5);
    assert_eq!(ports(node(&a, Y)), [(1, 6)]);
    // Plane B starts again at 1: M's port 2, SB, HB1.
    assert_eq!(guids(&b), [M, SB, HB1]);
    assert_eq!(ports(node(&b, M)), [(2, 1)]);
    assert_eq!(node(&b, M).id.lid, 1, "the adapter's LID in this plane");
    assert_eq!(node(&b, M).id.num_ports, 3);
    assert_eq!(node(&b, SB).id.lid, 2);
    assert_eq!(ports(node(&b, HB1)), [(1, 3)]);
    assert_eq!(sim.fabric(), a, "fabric() is the first plane's");
    assert_eq!(
        (planes[0].prefix(), planes[1].prefix()),
        (0xfe80_0000_0000_0001, 0xfe80_0000_0000_0002)
    );
    assert_eq!(
        (planes[0].local_port(), planes[1].local_port()),
        (LocalPort::new("sim0", 1), LocalPort::new("sim0", 2))
    );
}

#[test]
fn a_plane_transport_reaches_its_own_plane_alone() {
    let sim = two_planes();
    // Marks: 7 symbol errors on M's port 2 (plane B, LID 1 there), none
    // on HA1 (plane A's LID 1).
    assert!(sim.add_errors(M, 2, traffic::q::SYMBOL_ERRORS, 7));
    let mut a = sim.plane_transport(0);
    let mut b = sim.planes()[1].transport();
    assert_eq!(counters(&mut b, 1, 2).unwrap().symbol_errors, 7);
    assert_eq!(counters(&mut a, 1, 1).unwrap().symbol_errors, 0);
    // SA (LID 4) and X (LID 5) are plane A's: B has LIDs 1..3 only.
    assert!(counters(&mut a, 4, 1).is_some());
    assert!(counters(&mut b, 4, 1).is_none());
    assert!(counters(&mut b, 5, 1).is_none());
    // SB is LID 2 in B; LID 2 in A is M's port 1.
    assert!(counters(&mut b, 2, 1).is_some());
    assert_eq!(counters(&mut a, 2, 1).unwrap().symbol_errors, 0);
    // The first plane's transport is transport(); past the last, nothing.
    let mut first = sim.transport();
    assert!(
        counters(&mut first, 5, 1).is_some(),
        "X, isolated, is in the first plane"
    );
    let mut none = sim.plane_transport(2);
    assert!(counters(&mut none, 1, 1).is_none());
}

#[test]
fn each_plane_has_a_master_sm_that_tests_can_change() {
    let sim = two_planes();
    let master = |lid, guid| SmInfo {
        lid,
        guid,
        priority: 0,
        state: SmState::Master,
        act_count: 0,
    };
    // The first switch of each plane by GUID, at its plane's LID.
    assert_eq!(sim.master_sm(0), Some(master(4, SA)));
    assert_eq!(sim.master_sm(1), Some(master(2, SB)));
    // A failover to HB1 in plane B, then no master at all.
    let hb1 = SmInfo {
        priority: 14,
        act_count: 9,
        ..master(3, Guid(HB1.0 + 1))
    };
    let b = sim.plane(1).unwrap();
    b.set_master_sm(Some(hb1));
    assert_eq!(b.master_sm(), Some(hb1));
    assert_eq!(sim.master_sm(0), Some(master(4, SA)), "plane A unchanged");
    assert_eq!(b.key().to_string(), "fe80:0:0:2::/64@0x0000000000400001");
    assert!(sim.set_master_sm(1, None));
    assert_eq!(sim.master_sm(1), None);
    assert_eq!(
        b.key().to_string(),
        "fe80:0:0:2::/64",
        "no master SM: the prefix alone"
    );
    assert!(!sim.set_master_sm(2, None));
    assert_eq!(sim.master_sm(2), None);
    // A plane of adapters only: its first port by GUID.
    let cas = topology::parse("Hca 1 \"A\"\n[1] \"B\"[1]\n\nHca 1 \"B\"\n[1] \"A\"[1]\n").unwrap();
    let sim = SimFabric::new(cas, quiet());
    assert_eq!(sim.master_sm(0), Some(master(1, Guid(0x100001))));
}

#[test]
fn a_plane_fabric_shows_its_links_as_they_are_now() {
    let sim = two_planes();
    assert!(sim.set_link(M, 2, false));
    let b = sim.plane_fabric(1);
    assert_eq!(node(&b, M).port(2).unwrap().state, Some(PortState::Down));
    assert_eq!(node(&b, SB).port(2).unwrap().state, Some(PortState::Down));
    let a = sim.plane_fabric(0);
    assert_eq!(node(&a, M).port(1).unwrap().state, Some(PortState::Active));
    // The planes stay what the file made them.
    assert_eq!(sim.plane_count(), 2);
    assert!(sim.set_link(M, 2, true));
    assert_eq!(
        node(&sim.plane_fabric(1), M).port(2).unwrap().state,
        Some(PortState::Active)
    );
}

#[test]
fn prefix_lines_are_checked_with_their_line() {
    // Two prefixes for one plane.
    let text = "# subnetprefix=0xfe80000000000001\nSwitch 2 \"S\"\n[1] \"H\"[1]\n\n\
                # subnetprefix=0xfe80000000000002\nHca 1 \"H\"\n[1] \"S\"[1]\n";
    let e = topology::parse(text).unwrap_err();
    assert_eq!(e.line, 5, "{e}");
    assert!(e.reason.contains("line 1"), "{e}");
    // The same prefix twice is no conflict.
    let same = text.replace("0xfe80000000000002", "0xfe80000000000001");
    assert_eq!(topology::parse_topology(&same).unwrap().prefixes.len(), 2);
    // Not a number; no node after it.
    let e = topology::parse("# subnetprefix=fe80::\nSwitch 2 \"S\"\n").unwrap_err();
    assert_eq!(e.line, 1, "{e}");
    assert!(e.reason.contains("bad subnet prefix"), "{e}");
    let e = topology::parse("Switch 2 \"S\"\n\n# subnetprefix=0x1\n").unwrap_err();
    assert_eq!(e.line, 3, "{e}");
    for bad in ["0x", "0x1ffffffffffffffff", "-1", "", "0xfe80 junk"] {
        let e = topology::parse(&format!("# subnetprefix={bad}\nSwitch 2 \"S\"\n")).unwrap_err();
        assert!(e.reason.contains("bad subnet prefix"), "{bad}: {e}");
    }
    // Decimal is a number too; other comments are comments.
    let t =
        topology::parse_topology("#subnetprefix=7\nSwitch 2 \"S\"\n# subnet prefix 9\n").unwrap();
    assert_eq!(t.prefixes[0].prefix, 7);
    assert_eq!(t.prefixes.len(), 1);
}

fn generate(script: &str, args: &[&str]) -> Topology {
    let out = Command::new(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("scripts")
            .join(script),
    )
    .args(args)
    .output()
    .expect("run the generator");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    topology::parse_topology(&String::from_utf8(out.stdout).unwrap()).expect("parses back")
}

/// Per plane: (prefix, nodes, ports, adapter ports).
fn census(t: Topology) -> Vec<(u64, usize, usize, usize)> {
    let sim = SimFabric::from_topology(t, quiet());
    sim.planes()
        .iter()
        .map(|p| {
            let f = p.fabric();
            let ca_ports = f
                .nodes
                .iter()
                .filter(|n| n.id.node_type == NodeType::Ca)
                .map(|n| n.ports.len())
                .sum();
            let ports = f.nodes.iter().map(|n| n.ports.len()).sum();
            (p.prefix(), f.nodes.len(), ports, ca_ports)
        })
        .collect()
}

fn prefix(plane: u64) -> u64 {
    0xfe80_0000_0000_0000 + plane + 1
}

#[test]
fn gen_pods_builds_planes_of_their_own() {
    // 2 pods x 2 leaves x 3 hosts, 2 uplinks: 6 switches of 64 ports,
    // 4 cores... per plane: 4 leaves, 4 spines, 4 cores, 12 HCAs.
    let one = census(generate("gen-pods", &["2", "2", "3", "2"]));
    assert_eq!(one, [(DEFAULT_PREFIX, 24, 12 * 64 + 12, 12)]);
    let three = census(generate("gen-pods", &["--planes", "3", "2", "2", "3", "2"]));
    assert_eq!(
        three,
        (0..3)
            .map(|q| (prefix(q), 24, 12 * 64 + 12, 12))
            .collect::<Vec<_>>()
    );
    // Shared adapters: 12 of 3 ports, port q+1 in plane q.
    let t = generate(
        "gen-pods",
        &["--planes", "3", "--multi-plane-hcas", "2", "2", "3", "2"],
    );
    let cas: Vec<_> = t
        .fabric
        .nodes
        .iter()
        .filter(|n| n.id.node_type == NodeType::Ca)
        .collect();
    assert_eq!(cas.len(), 12);
    assert!(cas.iter().all(|n| n.ports.len() == 3));
    assert_eq!(census(t), three);
}

/// gen-pods' switches are Quantum-2 and its adapters ConnectX-7, by the
/// NodeInfo IDs the simulator's kinds and the XmitWait families declare,
/// and every link trains at 4x NDR: none below what its ends support.
#[test]
fn gen_pods_builds_quantum_2_switches_and_connectx_7_adapters_at_ndr() {
    use ibpm_agentx::ib::link::{LinkHealth, assess};
    use ibpm_agentx::ib::xmit_wait::AsicFamily;
    use ibpm_agentx::ib::{LinkSpeed, LinkWidth};
    use ibpm_agentx::sim::SampleCaps;
    use ibpm_agentx::sim::device::DeviceKind;
    for args in [
        &["2", "2", "3", "2"][..],
        &["--planes", "2", "--multi-plane-hcas", "1", "2", "3", "1"],
    ] {
        let sim = SimFabric::from_topology(generate("gen-pods", args), quiet());
        let f = sim.fabric();
        let mut links = 0;
        for n in &f.nodes {
            let kind = DeviceKind::of(n).map(|k| k.name);
            let family = AsicFamily::of(n.id.vendor_id, n.id.device_id).map(|a| a.name);
            let tick = SampleCaps::tick_rule(n).describe();
            match n.id.node_type {
                NodeType::Switch => {
                    assert_eq!((kind, family), (Some("Quantum-2"), Some("Quantum-2")));
                    assert!(tick.starts_with("Quantum-2 family: Tick 7"), "{tick}");
                }
                _ => assert_eq!((kind, family), (Some("ConnectX-7"), None)),
            }
            for p in n.ports.iter().filter(|p| p.remote().is_some()) {
                let (g, q) = p.remote().unwrap();
                let peer = f.node(g).and_then(|m| m.port(q));
                assert_eq!(
                    (p.width, p.speed),
                    (Some(LinkWidth::X4), Some(LinkSpeed::Ndr))
                );
                assert_eq!(assess(p, peer).health, Some(LinkHealth::Normal));
                links += 1;
            }
        }
        assert!(links > 0);
    }
}

#[test]
fn gen_fat_tree_builds_planes_of_their_own() {
    // 2 leaves, 1 spine, 3 hosts each (one dual-port): per plane 9
    // nodes, leaves of 3+1+1 ports, a spine of 2, hosts of 1+1+2.
    let shape = ["2", "1", "3", "1"];
    let one = census(generate("gen-fat-tree", &shape));
    assert_eq!(one, [(DEFAULT_PREFIX, 9, 2 * 5 + 2 + 8, 8)]);
    let args: Vec<&str> = ["--planes", "4"].iter().chain(&shape).copied().collect();
    assert_eq!(
        census(generate("gen-fat-tree", &args)),
        (0..4).map(|q| (prefix(q), 9, 20, 8)).collect::<Vec<_>>()
    );
    let multi = census(generate(
        "gen-fat-tree",
        &["--planes", "2", "--multi-plane-hcas", "2", "1", "3"],
    ));
    assert_eq!(
        multi,
        (0..2)
            .map(|q| (prefix(q), 9, 2 * 4 + 2 + 6, 6))
            .collect::<Vec<_>>()
    );
}

/// The topologies shipped and used by the tests are one plane each, but
/// for generations.net: four disconnected parts, four planes, that hold
/// every node and port once.
#[test]
fn the_shipped_topologies_and_their_planes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("config/default-fabric.net")];
    for dir in [
        root.join("tests/fixtures/topology"),
        Path::new("/usr/share/doc/ibsim-utils/net-examples").to_path_buf(),
    ] {
        for e in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".net") || name.starts_with("net") {
                files.push(p);
            }
        }
    }
    assert!(files.len() >= 4, "{files:?}");
    for f in files {
        let t = topology::load_topology(&f).unwrap_or_else(|e| panic!("{e}"));
        let whole = SimFabric::new(t.fabric.clone(), quiet()).fabric();
        let sim = SimFabric::from_topology(t, quiet());
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        if name != "generations.net" {
            assert_eq!(sim.plane_count(), 1, "{name}");
            assert_eq!(sim.fabric(), whole, "{name}");
            continue;
        }
        assert_eq!(sim.plane_count(), 4, "{name}");
        let mut seen: Vec<(Guid, u8)> = sim
            .planes()
            .iter()
            .flat_map(|p| p.fabric().nodes)
            .flat_map(|n| {
                n.ports
                    .iter()
                    .map(|p| (n.id.guid, p.num))
                    .collect::<Vec<_>>()
            })
            .collect();
        seen.sort_unstable();
        let all: Vec<(Guid, u8)> = whole
            .nodes
            .iter()
            .flat_map(|n| n.ports.iter().map(|p| (n.id.guid, p.num)))
            .collect();
        assert_eq!(seen, all);
    }
}

/// `query "M" 2` finds port 2 of the multi-plane adapter on the plane that
/// holds it (the first plane's copy of M has port 2 without a link there),
/// and port 1 on the first; a port neither has is the first error.
#[test]
fn a_query_finds_the_port_on_whichever_plane_holds_it() {
    use ibpm_agentx::ib::names::NameMap;
    use ibpm_agentx::query::{QueryError, find_port_in};
    let sim = two_planes();
    let fabrics = [sim.plane_fabric(0), sim.plane_fabric(1)];
    let (i, n, port) =
        find_port_in(&fabrics, &NameMap::default(), "M", Some(2)).expect("port 2 of M");
    assert_eq!((i, n.id.guid, port), (1, M, 2));
    let (i, _, port) =
        find_port_in(&fabrics, &NameMap::default(), "M", Some(1)).expect("port 1 of M");
    assert_eq!((i, port), (0, 1));
    assert!(matches!(
        find_port_in(&fabrics, &NameMap::default(), "M", Some(7)),
        Err(QueryError::NoPort { port: 7, .. })
    ));
    // Read there: the counters of port 2 come from plane B.
    let (i, n, port) = find_port_in(&fabrics, &NameMap::default(), "M", Some(2)).unwrap();
    let r = ibpm_agentx::query::read(
        Box::new(sim.plane(i).unwrap().transport()),
        Default::default(),
        &fabrics[i],
        n,
        port,
    )
    .expect("read on plane B");
    assert_eq!((r.guid, r.port), (M, 2));
}
