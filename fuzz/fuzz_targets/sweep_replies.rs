//! PM MAD replies from the fabric at depth: two sweeps of the default
//! simulated fabric's layout in which every PM MAD is answered from the
//! fuzz input (status, data, sometimes a wrong TID, attribute or method),
//! then a walk of the whole MIB over what the sweeps stored.
#![no_main]

use std::sync::Arc;
use std::time::Duration;

use ibpm_agentx::fabric::cache::Cache;
use ibpm_agentx::fabric::engine::{Engine, EngineConfig};
use ibpm_agentx::fabric::settings::SweepConfig;
use ibpm_agentx::fabric::state::SharedState;
use ibpm_agentx::fabric::sweep::Sweeper;
use ibpm_agentx::ib::topology;
use ibpm_agentx::mib::view::MibView;
use ibpm_agentx::mib::{MibHandler, Oid};
use ibpm_agentx::pm::mad;
use ibpm_agentx::transport::MAD_SIZE;
use ibpm_agentx_fuzz::{Bytes, FuzzTransport};
use libfuzzer_sys::fuzz_target;

fn answer(req: &[u8; MAD_SIZE], b: &mut Bytes) -> Option<(i32, [u8; MAD_SIZE])> {
    let ctl = b.u8();
    if ctl & 0x0F == 0x0F {
        return None;
    }
    let (h, data) = mad::parse(req).ok()?;
    let status = if ctl & 0x10 != 0 { b.u16() } else { 0 };
    let mut d = *data;
    // Replace a run of the data area, keeping the rest as requested.
    let at = usize::from(b.u8()) % d.len();
    let n = usize::from(b.u8());
    let src = b.take(n.min(d.len() - at));
    d[at..at + src.len()].copy_from_slice(src);
    let mut m = mad::response(&h, status, &d);
    if ctl & 0x20 != 0 {
        m[15] ^= b.u8();
    }
    if ctl & 0x40 != 0 {
        m[17] ^= b.u8();
    }
    if ctl & 0x80 != 0 {
        m[3] ^= b.u8();
    }
    Some((0, m))
}

fuzz_target!(|data: &[u8]| {
    let fabric = topology::default_fabric();
    let cache = Arc::new(Cache::new());
    let state = SharedState::new(fabric, SweepConfig::default(), std::time::Instant::now());
    let engine = Engine::new(
        Box::new(FuzzTransport::new(data, answer)),
        EngineConfig {
            window: 64,
            timeout: Duration::from_millis(1),
            retries: 0,
        },
    );
    let mut sweeper = Sweeper::new(state, engine, Arc::clone(&cache));
    sweeper.sweep_once();
    sweeper.sweep_once();
    let view = MibView::new(cache);
    let mut at = Oid(vec![1]);
    for _ in 0..20_000 {
        match view.get_next(&at, false, None) {
            Some(vb) => {
                assert!(vb.name > at, "GetNext went backwards");
                let _ = view.get(&vb.name);
                at = vb.name;
            }
            None => break,
        }
    }
});
