//! SNMP datagrams to the built-in responder (over a writable MIB view of
//! the simulated fabric): never a panic; every reply is one decodable SNMP
//! message within the size limit.
#![no_main]

use ibpm_agentx::snmp::{MAX_UDP_PAYLOAD, Outcome, ResponderConfig, process};
use ibpm_agentx_fuzz::with_sim_view;
use libfuzzer_sys::fuzz_target;

fn check(data: &[u8], max: usize) {
    let config = ResponderConfig::new("public")
        .with_write_community("private")
        .with_max_message_size(max);
    let outcome = with_sim_view(|s| process(data, &config, &s.view));
    if let Outcome::Reply(r) = outcome {
        assert!(
            r.len() <= max,
            "reply of {} octets over the limit {max}",
            r.len()
        );
        let decoded: Result<rasn_snmp::v2c::Message<rasn_snmp::v2::Pdus>, _> =
            rasn::ber::decode(&r);
        let v1: Result<rasn_snmp::v1::Message<rasn_snmp::v1::Pdus>, _> = rasn::ber::decode(&r);
        assert!(
            decoded.is_ok() || v1.is_ok(),
            "reply does not decode: {:?} / {:?}",
            decoded.err(),
            v1.err()
        );
    }
}

fuzz_target!(|data: &[u8]| {
    check(data, MAX_UDP_PAYLOAD);
    // RFC 3417: every agent accepts messages of 484 octets.
    check(data, 484);
});
