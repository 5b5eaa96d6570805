//! XmitWait as each ASIC counts it: a port that waited a tenth of the
//! interval reads 10% in pmPortRateCongestion, whichever rule its node
//! takes (swept from the simulator, whose Quantum-2 answers Tick 7 in
//! PortSamplesControl and whose Switch-IB answers Tick 31).

use std::time::Duration;

use crate::ib::Guid;
use crate::mib::oid::Oid;
use crate::mib::{MibHandler, Value};
use crate::rig::{AgentRig, RigOptions};
use crate::sim::traffic::q;

/// One end of a link: GUID, name and LID.
type End = (u64, &'static str, u16);

/// A switch cabled port 1 to port 1 to a CA at 4x a speed: the
/// Mellanox device IDs of the switch and the CA (or none), the switch's
/// port count, the switch, the CA, the speed.
type Link = (Option<(u16, u16)>, u8, End, End, &'static str);

/// A Quantum-2 (0xd2f2) at 4x NDR to a ConnectX-7, a Switch-IB (0xcb20)
/// at 4x EDR to a ConnectX-5, a switch of no known family at 4x QDR.
#[rustfmt::skip]
const ASICS: [Link; 3] = [
    (Some((0xd2f2, 0x1021)), 65, (0x10, "q2", 1), (0x40, "cx7", 4), "NDR"),
    (Some((0xcb20, 0x1017)), 36, (0x20, "sib", 2), (0x50, "cx5", 5), "EDR"),
    (None, 8, (0x30, "other", 3), (0x60, "hca", 6), "QDR"),
];

/// The links as ibnetdiscover writes them.
fn topology(links: &[Link]) -> String {
    let ids = |devid: Option<u16>| {
        devid.map_or(String::new(), |d| format!("vendid=0x2c9\ndevid={d:#x}\n"))
    };
    let node_pairs = links.iter().map(|&(devids, ports, switch, ca, speed)| {
        let ((sw_guid, sw, sw_lid), (ca_guid, ca, ca_lid)) = (switch, ca);
        let (sw_ids, ca_ids) = (ids(devids.map(|d| d.0)), ids(devids.map(|d| d.1)));
        format!(
            "{sw_ids}switchguid={sw_guid:#x}\n\
             Switch\t{ports} \"S-{sw}\"\t\t# \"{sw}\" enhanced port 0 lid {sw_lid} lmc 0\n\
             [1]\t\"H-{ca}\"[1]\t\t# \"{ca}\" lid {ca_lid} 4x{speed}\n\n\
             {ca_ids}caguid={ca_guid:#x}\n\
             Ca\t1 \"H-{ca}\"\t\t# \"{ca}\"\n\
             [1]\t\"S-{sw}\"[1]\t\t# lid {ca_lid} lmc 0 \"{sw}\" lid {sw_lid} 4x{speed}\n"
        )
    });
    node_pairs.collect::<Vec<_>>().join("\n")
}

/// pmPortRateCongestion of (`guid`, `port`), hundredths of a percent.
fn congestion(rig: &AgentRig, guid: u64, port: u8) -> Value {
    let mut oid = String::from("1.3.6.1.3.117.1.8.1.7");
    for b in guid.to_be_bytes() {
        oid.push_str(&format!(".{b}"));
    }
    oid.push_str(&format!(".{port}"));
    rig.view().get(&oid.parse::<Oid>().unwrap())
}

#[test]
fn a_port_waiting_a_tenth_of_the_interval_reads_ten_percent_whatever_its_asic() {
    let fabric = crate::ib::topology::parse(&topology(&ASICS)).unwrap();
    let mut rig = AgentRig::new(RigOptions {
        fabric,
        traffic: false,
        ..Default::default()
    });
    rig.sweep();
    let secs = 10.0;
    // One tick: 8 bytes of a 400 Gb/s port (0.16 ns); 32 bytes of a
    // 25 Gb/s lane (10.24 ns); the IBA's 256 symbol times (the
    // simulator's Tick 0xFF) of an 8 Gb/s lane (256 ns).
    for (guid, tick) in [(0x10, 0.16e-9), (0x20, 10.24e-9), (0x30, 256e-9)] {
        let ticks = (0.1 * secs / tick) as u64;
        assert!(rig.sim.add_errors(Guid(guid), 1, q::XMIT_WAIT, ticks));
    }
    rig.advance(Duration::from_secs_f64(secs));
    rig.sweep();
    for guid in [0x10, 0x20, 0x30] {
        let Value::Gauge32(c) = congestion(&rig, guid, 1) else {
            panic!("no pmPortRateCongestion for {guid:#x}");
        };
        assert!((900..=1100).contains(&c), "{guid:#x}: {c} hundredths");
    }
    // The rule each node took.
    let snap = rig.cache.load();
    let rule = |g| snap.node(Guid(g)).unwrap().tick_rule().describe();
    assert!(rule(0x10).starts_with("Quantum-2 family: Tick 7 (from PortSamplesControl)"));
    assert!(rule(0x20).starts_with("Switch-IB family: Tick 31 (from PortSamplesControl)"));
    assert!(rule(0x30).starts_with("IBA rule: Tick 255 (from PortSamplesControl)"));
}
