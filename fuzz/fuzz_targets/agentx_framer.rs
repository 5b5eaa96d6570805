//! The AgentX stream framer: arbitrary bytes pushed in arbitrary chunks
//! give the same frames and errors as the same bytes pushed at once, and
//! every frame goes through the PDU decoder.
#![no_main]

use ibpm_agentx::agentx::pdu::{self, FrameError, Framer};
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
});
