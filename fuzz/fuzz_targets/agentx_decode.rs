//! AgentX PDUs from the master: decode must never panic, whatever decodes
//! must encode back to bytes that decode to the same PDU, and a request is
//! answered from a MIB view of the simulated fabric as the session answers
//! it (Get, GetNext and GetBulk with search ranges straight from the PDU).
#![no_main]

use ibpm_agentx::agentx::core::get_bulk;
use ibpm_agentx::agentx::pdu::{self, Header, Payload, Pdu, ResError};
use ibpm_agentx::mib::{MibHandler, Value, VarBind};
use ibpm_agentx_fuzz::with_sim_view;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(p) = pdu::decode(data) else {
        return;
    };
    if let Ok(bytes) = pdu::encode(&p, p.byte_order()) {
        let again = pdu::decode(&bytes).expect("an encoded PDU decodes");
        assert_eq!(again, p, "decode(encode(pdu)) != pdu");
    }
    let h = Header::parse(data).expect("a decoded PDU's header parses");
    let vbs: Vec<VarBind> = with_sim_view(|s| {
        let v = &s.view;
        match &p.payload {
            Payload::Get { ranges, .. } => ranges
                .iter()
                .map(|r| VarBind::new(r.start.clone(), v.get(&r.start)))
                .collect(),
            Payload::GetNext { ranges, .. } => ranges
                .iter()
                .map(|r| match v.get_next(&r.start, r.include, r.end_bound()) {
                    Some(vb) => {
                        assert!(
                            vb.name > r.start || (r.include && vb.name == r.start),
                            "GetNext answered {} for a range from {}",
                            vb.name,
                            r.start
                        );
                        vb
                    }
                    None => VarBind::new(r.start.clone(), Value::EndOfMibView),
                })
                .collect(),
            Payload::GetBulk {
                non_repeaters,
                max_repetitions,
                ranges,
                ..
            } => get_bulk(v, *non_repeaters, *max_repetitions, ranges),
            _ => Vec::new(),
        }
    });
    let answer = Pdu::response_to(&h, ResError::NO_ERROR, 0, vbs);
    let _ = pdu::encode(&answer, h.byte_order());
});
