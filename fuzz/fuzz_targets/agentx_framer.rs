//! The AgentX stream framer: arbitrary bytes pushed in arbitrary chunks
//! give the same frames and errors as the same bytes pushed at once, and
//! every frame goes through the PDU decoder. The same stream, after an
//! Open answered with session 1, goes through the protocol core over a MIB
//! view of the simulated fabric: whatever it sends back decodes.
#![no_main]

use std::time::{Duration, Instant};

use ibpm_agentx::agentx::SessionConfig;
use ibpm_agentx::agentx::core::{Action, AgentxCore};
use ibpm_agentx::agentx::pdu::{self, ByteOrder, FrameError, Framer, Payload, Pdu, ResError};
use ibpm_agentx_fuzz::with_sim_view;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, PartialEq)]
enum Event {
    Frame(Vec<u8>),
    Oversized(pdu::Header),
    Desync,
}

fn drain(f: &mut Framer, out: &mut Vec<Event>) -> bool {
    while let Some(r) = f.next_frame() {
        match r {
            Ok(frame) => {
                let _ = pdu::decode(&frame);
                out.push(Event::Frame(frame));
            }
            Err(FrameError::Oversized { header, .. }) => out.push(Event::Oversized(header)),
            Err(FrameError::Desync(_)) => {
                out.push(Event::Desync);
                return false;
            }
        }
    }
    true
}

fuzz_target!(|data: &[u8]| {
    let Some((&conf, stream)) = data.split_first() else {
        return;
    };
    // Small limits make Oversized reachable.
    let max = 16 + usize::from(conf & 0x3F) * 8;
    let seed = usize::from(conf >> 6) + 1;

    let mut whole = Framer::new(max);
    let mut a = Vec::new();
    whole.push(stream);
    drain(&mut whole, &mut a);

    let mut chunked = Framer::new(max);
    let mut b = Vec::new();
    let mut rest = stream;
    let mut i = 0usize;
    while !rest.is_empty() {
        let n = (1 + (i * 7 + seed * 13) % 29).min(rest.len());
        chunked.push(&rest[..n]);
        rest = &rest[n..];
        i += 1;
        if !drain(&mut chunked, &mut b) {
            break;
        }
    }
    assert_eq!(a, b, "framing depends on how the stream was chunked");

    let cfg = SessionConfig {
        max_pdu: max,
        ..SessionConfig::default()
    };
    let mut core = AgentxCore::new(cfg);
    let t0 = Instant::now();
    let opened = Pdu::new(
        1,
        1,
        1,
        Payload::Response {
            sys_uptime: 0,
            error: ResError::NO_ERROR,
            index: 0,
            varbinds: vec![],
        },
    );
    let opened = pdu::encode(&opened, ByteOrder::Big).expect("encodes");
    with_sim_view(|s| {
        let _ = core.on_connected(t0);
        let _ = core.on_bytes(&opened, t0, &s.view);
        for (i, chunk) in stream.chunks(seed * 17).enumerate() {
            let now = t0 + Duration::from_millis(i as u64 * 100);
            let mut actions = core.on_bytes(chunk, now, &s.view);
            actions.extend(core.on_timeout(now));
            for a in actions {
                match a {
                    Action::Send(b) => {
                        pdu::decode(&b).expect("the core sends PDUs that decode");
                    }
                    Action::Lost(_) => {
                        core.on_disconnected(&s.view);
                        let _ = core.on_connected(now);
                    }
                }
            }
        }
    });
});
