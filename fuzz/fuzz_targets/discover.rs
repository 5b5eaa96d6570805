//! Discovery SMPs from the fabric: the reply parser and NodeInfo/PortInfo
//! decoders on raw bytes, then a whole directed-route walk and a light
//! sweep of what it found, in which every SMP is answered from the fuzz
//! input (status, data, sometimes a wrong TID or attribute).
#![no_main]

use std::time::Duration;

use ibpm_agentx::fabric::discover::{self, DiscoverOptions, NodeInfo, PortInfo, parse_smp_reply};
use ibpm_agentx::transport::MAD_SIZE;
use ibpm_agentx_fuzz::{Bytes, FuzzTransport};
use libfuzzer_sys::fuzz_target;

fn answer(req: &[u8; MAD_SIZE], b: &mut Bytes) -> Option<(i32, [u8; MAD_SIZE])> {
    let ctl = b.u8();
    if ctl & 0x0F == 0x0F {
        return None;
    }
    let mut m = *req;
    m[3] = discover::METHOD_GET_RESP;
    if ctl & 0x10 != 0 {
        m[4..6].copy_from_slice(&b.u16().to_be_bytes());
    }
    if ctl & 0x20 != 0 {
        m[12] ^= b.u8();
    }
    if ctl & 0x40 != 0 {
        m[17] ^= b.u8();
    }
    m[64..128].copy_from_slice(&{
        let mut d = [0u8; 64];
        let src = b.take(64);
        d[..src.len()].copy_from_slice(src);
        d
    });
    let status = if ctl & 0x80 != 0 { -110 } else { 0 };
    Some((status, m))
}

fuzz_target!(|data: &[u8]| {
    if data.len() >= MAD_SIZE {
        let mut m = [0u8; MAD_SIZE];
        m.copy_from_slice(&data[..MAD_SIZE]);
        let _ = parse_smp_reply(&m);
        let mut d = [0u8; 64];
        d.copy_from_slice(&data[64..128]);
        let _ = NodeInfo::decode(&d);
        let p = PortInfo::decode(&d);
        let _ = p.link_up();
        let _ = ibpm_agentx::ib::LinkWidth::from_code(d[0]);
        let _ = ibpm_agentx::ib::LinkSpeed::from_port_info(d[1], d[2]);
        let _ = ibpm_agentx::ib::PortState::from_code(d[3]);
        let _ = ibpm_agentx::ib::PhysState::from_code(d[4]);
    }
    let mut t = FuzzTransport::new(data, answer);
    let opts = DiscoverOptions {
        window: 16,
        timeout: Duration::from_millis(1),
        retries: 0,
        max_hops: discover::MAX_HOPS,
        ..Default::default()
    };
    if let Ok((fabric, _stats)) = discover::discover_with_stats(&mut t, &opts) {
        // A light sweep of what was found, answered from the rest of the
        // input; both must be usable as a fabric.
        if let Ok(fresh) = discover::refresh_port_info(&mut t, &fabric, &opts) {
            let _ = ibpm_agentx::fabric::state::SharedState::new(
                fresh,
                Default::default(),
                std::time::Instant::now(),
            );
        }
        let _ = ibpm_agentx::fabric::state::SharedState::new(
            fabric,
            Default::default(),
            std::time::Instant::now(),
        );
    }
});
