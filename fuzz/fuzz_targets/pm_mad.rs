//! PM MADs from the fabric: parse, then every attribute decode and field
//! table on the data; decode/encode/decode of every attribute is stable.
#![no_main]

use ibpm_agentx::pm::{
    self, ClassPortInfo, MadHeader, PortCounters, PortCountersExtended, PortSamplesControl,
    PortSamplesResult, mad,
};
use libfuzzer_sys::fuzz_target;

macro_rules! roundtrip {
    ($t:ty, $d:expr) => {{
        let x = <$t>::decode($d);
        let mut buf = [0u8; mad::DATA_SIZE];
        x.encode(&mut buf);
        assert_eq!(
            <$t>::decode(&buf),
            x,
            "{} re-decodes differently",
            stringify!($t)
        );
    }};
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= ibpm_agentx::transport::MAD_SIZE {
        let mut m = [0u8; ibpm_agentx::transport::MAD_SIZE];
        m.copy_from_slice(&data[..ibpm_agentx::transport::MAD_SIZE]);
        let h = MadHeader::decode(&m);
        let _ = h.check_pm();
        let _ = h.is_response();
    }
    let Ok((h, d)) = mad::parse(data) else {
        return;
    };
    let _ = h.check_pm();
    roundtrip!(ClassPortInfo, d);
    roundtrip!(PortCounters, d);
    roundtrip!(PortCountersExtended, d);
    roundtrip!(PortSamplesControl, d);
    roundtrip!(PortSamplesResult, d);
    let cpi = ClassPortInfo::decode(d);
    let _ = cpi.has(h.attr_mod as u16);
    let psc = PortSamplesControl::decode(d);
    let _ = pm::samples::counter_width_bits(psc.counter_width);
    for attr in [h.attr_id, 0x01, 0x10, 0x11, 0x12, 0x1D] {
        for f in pm::fields_of(attr) {
            let v = f.get(d);
            let mut copy = *d;
            if f.set(&mut copy, v) {
                assert_eq!(f.get(&copy), v);
            }
        }
    }
});
