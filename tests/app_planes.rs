//! One agent, two subnets: a simulated fabric of two planes and an adapter
//! cabled to both, each plane swept by its own stack and merged into the
//! one snapshot the agent serves; a SET reaches the plane of its port.

mod common;

use std::time::{Duration, Instant};

use ibpm_agentx::agentx::AgentxAddr;
use ibpm_agentx::app::{self, open_backend};
use ibpm_agentx::config::{Config, FabricBackend};
use ibpm_agentx::ib::Guid;
use ibpm_agentx::ib::subnet::prefix_text;

/// Plane 1 (prefix ...:1): switch SA, adapters H (port 1) and A1; plane 2
/// (prefix ...:2): switch SB, the same H (port 2) and B1.
const TWO_PLANES: &str = "\
Hca 2 \"H\"
[1] \"SA\"[1]
[2] \"SB\"[1]

Hca 1 \"A1\"
[1] \"SA\"[2]

Hca 1 \"B1\"
[1] \"SB\"[2]

# subnetprefix=0xfe80000000000001
Switch 4 \"SA\"
[1] \"H\"[1]
[2] \"A1\"[1]

# subnetprefix=0xfe80000000000002
Switch 4 \"SB\"
[1] \"H\"[2]
[2] \"B1\"[1]
";

const H: Guid = Guid(0x100000);

fn config(dir: &std::path::Path) -> Config {
    let topo = dir.join("two-planes.net");
    std::fs::write(&topo, TWO_PLANES).unwrap();
    let mut cfg = Config::default();
    cfg.fabric.backend = FabricBackend::Sim;
    cfg.fabric.topology = Some(topo);
    cfg.fabric.sweep_interval = Duration::from_millis(500);
    // No master there: the session keeps trying to connect.
    cfg.agentx.socket = AgentxAddr::Unix(dir.join("no-master"));
    cfg.set.allow = true;
    cfg
}

#[test]
fn two_planes_are_two_subnets_of_one_agent() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let backend = open_backend(&cfg, &app::Shutdown::new()).expect("backend");
    assert_eq!(backend.subnets.len(), 2, "a subnet per plane");
    let running = app::start(&cfg, backend).expect("start");
    // Both planes swept twice (rates known).
    let t0 = Instant::now();
    let snap = loop {
        let s = running.cache().load();
        if s.subnets.len() == 2 && s.subnets.iter().all(|v| v.sweep >= 2) {
            break s;
        }
        assert!(t0.elapsed() < Duration::from_secs(20), "both planes swept");
        std::thread::sleep(Duration::from_millis(50));
    };
    let prefixes: Vec<String> = snap
        .subnets
        .iter()
        .map(|v| prefix_text(v.key.prefix))
        .collect();
    assert_eq!(prefixes, ["fe80:0:0:1::/64", "fe80:0:0:2::/64"]);
    assert_eq!(
        snap.subnets.iter().map(|v| v.nodes).collect::<Vec<_>>(),
        [3, 3],
        "SA, H, A1 and SB, H, B1"
    );
    assert_eq!(snap.nodes.len(), 5, "H once");
    let h = snap.node(H).expect("H");
    let ports: Vec<(u8, u8, bool)> = h
        .ports()
        .map(|p| (p.link.num, p.subnet, p.read_at.is_some()))
        .collect();
    assert_eq!(ports, [(1, 0, true), (2, 1, true)]);
    assert!(h.ports().all(|p| p.rates.valid != 0), "rates on both ports");
    running.stop();
}

/// A plane whose master SM changes (a failover to another SM) or goes
/// away shows it in its subnet's view at the next sweep; the other plane's
/// stays.
#[test]
fn a_new_master_sm_shows_at_the_next_sweep() {
    use ibpm_agentx::app::{Backend, sim_options};
    use ibpm_agentx::ib::subnet::{SmInfo, SmState};
    use ibpm_agentx::ib::topology;
    use ibpm_agentx::sim::SimFabric;
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path());
    let sim = SimFabric::from_topology(
        topology::load_topology(cfg.fabric.topology.as_ref().unwrap()).unwrap(),
        sim_options(&cfg),
    );
    let running = app::start(&cfg, Backend::sim(&sim)).expect("start");
    let wait_for = |what: &str, ok: &dyn Fn(&ibpm_agentx::fabric::cache::Snapshot) -> bool| {
        let t0 = Instant::now();
        loop {
            let s = running.cache().load();
            if ok(&s) {
                return s;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "{what}");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    let first = wait_for("both swept", &|s| {
        s.subnets.len() == 2 && s.subnets.iter().all(|v| v.sweep >= 1)
    });
    let sm_b = first.subnets[1].sm.expect("plane 2's SM");
    assert_eq!(sm_b.state, SmState::Master);
    let standby = SmInfo {
        lid: 3,
        guid: Guid(0x100004),
        priority: 15,
        state: SmState::Master,
        act_count: 1,
    };
    sim.set_master_sm(1, Some(standby));
    let s = wait_for("the new SM seen", &|s| {
        s.subnets[1].sm.map(|x| x.guid) == Some(standby.guid)
    });
    assert_eq!(s.subnets[1].sm.unwrap().priority, 15);
    assert_eq!(s.subnets[0].sm, first.subnets[0].sm, "plane 1 keeps its SM");
    sim.set_master_sm(1, None);
    wait_for("no SM seen", &|s| s.subnets[1].sm.is_none());
    running.stop();
}

/// The agent's subnet notifications from a real agent to a real
/// snmptrapd: a plane's master SM handed over to another SM
/// (pmSubnetMasterChanged, the new SM in the subnet's row), then gone
/// (pmSubnetNoMaster); the other plane sends nothing.
#[test]
fn an_sm_handover_and_no_master_reach_snmptrapd() {
    use ibpm_agentx::app::{Backend, sim_options};
    use ibpm_agentx::ib::subnet::{SmInfo, SmState};
    use ibpm_agentx::ib::topology;
    use ibpm_agentx::sim::SimFabric;
    let trapd = common::PrivateSnmptrapd::start().expect("snmptrapd");
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.agentx.enabled = false;
    cfg.notify.enabled = true;
    cfg.notify.sinks = vec![trapd.sink().parse().unwrap()];
    let sim = SimFabric::from_topology(
        topology::load_topology(cfg.fabric.topology.as_ref().unwrap()).unwrap(),
        sim_options(&cfg),
    );
    let running = app::start(&cfg, Backend::sim(&sim)).expect("start");
    let wait_for = |what: &str, ok: &dyn Fn(&str) -> bool| {
        let t0 = Instant::now();
        loop {
            let log = trapd.log();
            if ok(&log) {
                return log;
            }
            assert!(t0.elapsed() < Duration::from_secs(20), "{what}:\n{log}");
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    // Both planes swept at least twice before the handover.
    let t0 = Instant::now();
    while !{
        let s = running.cache().load();
        s.subnets.len() == 2 && s.subnets.iter().all(|v| v.sweep >= 2)
    } {
        assert!(t0.elapsed() < Duration::from_secs(20), "both planes swept");
        std::thread::sleep(Duration::from_millis(20));
    }
    let new = SmInfo {
        lid: 3,
        guid: Guid(0x0002_c903_00a1_b2c4),
        priority: 15,
        state: SmState::Master,
        act_count: 1,
    };
    sim.set_master_sm(1, Some(new));
    let log = wait_for("pmSubnetMasterChanged", &|l| {
        !common::v2_traps(l, "pmSubnetMasterChanged").is_empty()
    });
    let traps = common::v2_traps(&log, "pmSubnetMasterChanged");
    assert_eq!(traps.len(), 1, "once:\n{log}");
    let guid = format!(
        "pmSubnetSmGuid.2 = STRING: {}",
        common::guid_hint(new.guid.0)
    );
    assert!(traps[0].contains(&guid), "{guid}: {}", traps[0]);
    assert!(
        traps[0].contains("pmSubnetSmPriority.2 = Gauge32: 15"),
        "{}",
        traps[0]
    );
    sim.set_master_sm(1, None);
    let log = wait_for("pmSubnetNoMaster", &|l| {
        !common::v2_traps(l, "pmSubnetNoMaster").is_empty()
    });
    assert!(
        common::v2_traps(&log, "pmSubnetMasterChanged").len() == 1
            && common::v2_traps(&log, "pmSubnetFailover").is_empty(),
        "no other subnet trap:\n{log}"
    );
    running.stop();
}

/// A transport whose MADs are never answered: a dead plane.
struct Silent;

impl ibpm_agentx::transport::MadTransport for Silent {
    fn send(
        &mut self,
        _to: &ibpm_agentx::transport::MadAddr,
        _mad: &[u8; ibpm_agentx::transport::MAD_SIZE],
    ) -> Result<(), ibpm_agentx::transport::Fault> {
        Ok(())
    }
    fn recv(
        &mut self,
        timeout: Duration,
    ) -> Result<Option<ibpm_agentx::transport::Received>, ibpm_agentx::transport::Fault> {
        std::thread::sleep(timeout.min(Duration::from_millis(20)));
        Ok(None)
    }
}

/// A plane whose PMAs stopped answering holds none of the others: the
/// live plane keeps its interval and its nodes stay reachable while the
/// dead plane's sweeps wait out their deadlines.
#[test]
fn a_dead_plane_holds_none_of_the_others() {
    use ibpm_agentx::app::{Backend, sim_options};
    use ibpm_agentx::ib::topology;
    use ibpm_agentx::sim::SimFabric;
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.fabric.sweep_interval = Duration::from_millis(300);
    let sim = SimFabric::from_topology(
        topology::load_topology(cfg.fabric.topology.as_ref().unwrap()).unwrap(),
        sim_options(&cfg),
    );
    let mut backend = Backend::sim(&sim);
    let dead = &mut backend.subnets[1];
    dead.sweep = Box::new(Silent);
    dead.write = Box::new(Silent);
    dead.poll = Box::new(Silent);
    let running = app::start(&cfg, backend).expect("start");
    // The event: the live plane three sweeps ahead of the dead one, which
    // planes swept in turn (or a live plane held by the dead one's
    // deadlines) never reach. Polled, bounded, whatever the machine's
    // speed.
    let deadline = Instant::now() + Duration::from_secs(60);
    let snap = loop {
        let snap = running.cache().load();
        if let [live, dead] = &snap.subnets[..]
            && live.sweep >= dead.sweep + 3
        {
            break snap;
        }
        assert!(
            Instant::now() < deadline,
            "the live plane never got ahead: {:?}",
            snap.subnets
                .iter()
                .map(|v| (v.index, v.sweep))
                .collect::<Vec<_>>()
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    for guid in [Guid(0x200000), Guid(0x100003)] {
        let n = snap.node(guid).expect("a live plane's node");
        assert!(
            n.reachable && n.ports().any(|p| p.read_at.is_some()),
            "{guid}"
        );
    }
    running.stop();
}

/// The same file without its prefix lines: still two subnets (an adapter
/// forwards nothing, so no host could sweep it as one), both at fe80::,
/// told apart by their master SM.
#[test]
fn parts_joined_only_through_adapters_are_subnets_without_prefix_lines() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    let topo = dir.path().join("no-prefixes.net");
    let text: String = TWO_PLANES
        .lines()
        .filter(|l| !l.contains("subnetprefix="))
        .flat_map(|l| [l, "\n"])
        .collect();
    std::fs::write(&topo, text).unwrap();
    cfg.fabric.topology = Some(topo);
    let backend = open_backend(&cfg, &app::Shutdown::new()).expect("backend");
    assert_eq!(
        backend.subnets.len(),
        2,
        "a subnet per switch-connected part"
    );
    let keys: Vec<_> = backend.subnets.iter().map(|s| s.view.key).collect();
    assert!(keys.iter().all(|k| k.prefix == 0xfe80_0000_0000_0000));
    assert_ne!(
        keys[0].sm_guid, keys[1].sm_guid,
        "told apart by their master SM"
    );
    assert_ne!(keys[0], keys[1]);
}
