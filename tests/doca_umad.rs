//! Combined mode end to end: `backend = "umad"` with `[doca] enabled =
//! true`. ibsim (under umad2sim) is the fabric, read with PM MADs; the
//! DOCA stand-in serves the local CA, whose node GUID the fake sysfs gives
//! as ibsim's. Through a private snmpd the local node says pmaAndDoca and
//! takes bytes, packets and discards from DOCA and its errors from its
//! PMA; every other node says pma.

mod common;
mod ibsim;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::doca::{FakeHost, standin_library};
use common::{ChildGuard, PrivateSnmpd, SnmpTool};
use ibsim::{IbSim, NET_2SW2PATH4HCA, hex_guid, parse_ibnetdiscover};

#[test]
fn the_local_adapter_is_served_by_doca_and_the_fabric_by_pm_mads() {
    assert!(
        PrivateSnmpd::available(),
        "snmpd and the net-snmp tools are needed: run scripts/install-deps"
    );
    let sim = IbSim::start(Path::new(NET_2SW2PATH4HCA));
    // The CA umad2sim presents as this host's.
    let ibstat = sim.tool("ibstat", &[]);
    let local = ibstat
        .stdout
        .lines()
        .find_map(|l| l.trim().strip_prefix("Node GUID:"))
        .map(|g| hex_guid(g.trim()))
        .unwrap_or_else(|| panic!("no node GUID in ibstat: {}", ibstat.stdout));
    let ib = parse_ibnetdiscover(&sim.tool("ibnetdiscover", &[]).stdout);
    assert!(ib.contains_key(&local), "{local:#x} is in the fabric");
    let other = *ib
        .iter()
        .find(|(g, n)| **g != local && !n.switch)
        .map(|(g, _)| g)
        .expect("another CA");

    let host = FakeHost::with_devices("28.43.1000", &[("mlx5_0", local, "0000:08:00.0", 1)]);
    let snmpd = PrivateSnmpd::start().expect("start a private snmpd");
    let (mut c, log) = sim.agent_command(&format!(
        "[agentx]\nsocket = \"{}\"\nreconnect_max = 1\n\
         [fabric]\nbackend = \"umad\"\nsweep_interval = 1\n[log]\nlevel = \"info\"\n{}",
        snmpd.agentx_addr(),
        host.doca_section(
            &standin_library(),
            "enabled = true\nsample_period_ms = 20\n"
        )
    ));
    c.env_remove("IBPM_DOCA_LIBRARY");
    let mut agent = ChildGuard::new("ibpm-agentx", c.spawn().expect("start ibpm-agentx"));

    let target = snmpd.target();
    let get = |col: &str, guid: u64, port: Option<u8>| -> Option<String> {
        let idx: Vec<String> = guid.to_be_bytes().iter().map(|b| b.to_string()).collect();
        let name = match port {
            Some(p) => format!("IB-PM-MIB::{col}.{}.{p}", idx.join(".")),
            None => format!("IB-PM-MIB::{col}.{}", idx.join(".")),
        };
        let out = SnmpTool::new("snmpget")
            .mibs(true)
            .args(["-v2c", "-c", "public", "-Oqv", &target, &name])
            .run();
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !text.contains("No Such"))
            .then(|| text.split_whitespace().next().unwrap_or("").to_string())
    };
    let start = Instant::now();
    while get("pmPortHCSymbolErrors", local, Some(1)).is_none()
        || get("pmPortHCInDiscards", local, Some(1)).is_none()
    {
        assert!(
            agent.running(),
            "agent exited: {}",
            fs::read_to_string(&log).unwrap()
        );
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "local port not served within 30 s: {}",
            fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        get("pmNodeSource", local, None).as_deref(),
        Some("pmaAndDoca")
    );
    assert_eq!(get("pmNodeSource", other, None).as_deref(), Some("pma"));
    // DOCA: the stand-in's bytes (1001 per sample for port_rx_bytes of
    // local port 1), packets and discards.
    for (col, step) in [
        ("pmPortHCInOctets", 1001u64),
        ("pmPortHCOutOctets", 1501),
        ("pmPortHCInPkts", 3001),
        ("pmPortHCOutPkts", 3501),
        ("pmPortHCInDiscards", 5001),
    ] {
        let v: u64 = get(col, local, Some(1)).unwrap().parse().unwrap();
        eprintln!("{col} of the local port: {v}");
        assert!(
            v > 0 && v.is_multiple_of(step),
            "{col} = {v}: not the stand-in's"
        );
    }
    // PM MADs: the local node's draft PortCounters row and its error
    // counters; the other CA has no DOCA discard counter.
    assert!(get("pmPortCountersSymbolErrors", local, None).is_some());
    assert!(get("pmPortHCOutUcastPkts", local, Some(1)).is_some());
    assert!(get("pmPortHCInOctets", other, Some(1)).is_some());
    assert_eq!(get("pmPortHCInDiscards", other, Some(1)), None);
    agent.stop();
}
