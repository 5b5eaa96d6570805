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

/// A Quantum-2 (0xd2f2) at 4x NDR to a ConnectX-7, a Switch-IB (0xcb20)
/// at 4x EDR to a ConnectX-5, a switch of no known family at 4x QDR.
const ASICS: &str = "\
vendid=0x2c9
devid=0xd2f2
switchguid=0x10
Switch\t65 \"S-q2\"\t\t# \"q2\" enhanced port 0 lid 1 lmc 0
[1]\t\"H-cx7\"[1]\t\t# \"cx7\" lid 4 4xNDR

vendid=0x2c9
devid=0x1021
caguid=0x40
Ca\t1 \"H-cx7\"\t\t# \"cx7\"
[1]\t\"S-q2\"[1]\t\t# lid 4 lmc 0 \"q2\" lid 1 4xNDR

vendid=0x2c9
devid=0xcb20
switchguid=0x20
Switch\t36 \"S-sib\"\t\t# \"sib\" enhanced port 0 lid 2 lmc 0
[1]\t\"H-cx5\"[1]\t\t# \"cx5\" lid 5 4xEDR

vendid=0x2c9
devid=0x1017
caguid=0x50
Ca\t1 \"H-cx5\"\t\t# \"cx5\"
[1]\t\"S-sib\"[1]\t\t# lid 5 lmc 0 \"sib\" lid 2 4xEDR

switchguid=0x30
Switch\t8 \"S-other\"\t\t# \"other\" enhanced port 0 lid 3 lmc 0
[1]\t\"H-hca\"[1]\t\t# \"hca\" lid 6 4xQDR

caguid=0x60
Ca\t1 \"H-hca\"\t\t# \"hca\"
[1]\t\"S-other\"[1]\t\t# lid 6 lmc 0 \"other\" lid 3 4xQDR
";

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
    let fabric = crate::ib::topology::parse(ASICS).unwrap();
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
