//! What a server answers `ibpm-agentx health`: the report parser must
//! never panic, refuse whatever holds more than the schema allows, and
//! whatever it takes is shown as a bounded table with no terminal escape
//! left raw.
#![no_main]

use ibpm_agentx::checkup::text;
use ibpm_agentx::metrics::health_api::{MAX_LIST, MAX_STRING, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(r) = parse(data) else {
        return;
    };
    for s in [
        r.unreachable_nodes.rows.len(),
        r.unhealthy_links.rows.len(),
        r.degraded_links.rows.len(),
        r.worst_error_ports.rows.len(),
        r.worst_congested_ports.rows.len(),
        r.subnets.len(),
        r.conditions.len(),
    ] {
        assert!(s <= MAX_LIST, "{s} rows taken");
    }
    // Every string of the report is bounded: the agent's version stands
    // for them (the status and conditions are names the reader knows).
    assert!(r.agent.version.len() <= MAX_STRING);
    let t = text(&r);
    assert!(
        !t.chars()
            .any(|c| c.is_control() && c != '\n' || ('\u{202a}'..='\u{202e}').contains(&c)),
        "a raw control or bidi character in {t:?}"
    );
    // Seven sections of at most MAX_LIST rows of at most eight cells of at
    // most 200 characters (4 octets each), and the lines above them.
    assert!(t.len() <= 7 * (MAX_LIST + 3) * 8 * 202 * 4 + 64 * 1024, "{}", t.len());
});
