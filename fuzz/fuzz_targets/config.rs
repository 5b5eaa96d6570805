//! Configuration files: parse (TOML + validation) must never panic, and
//! what parses answers its derived settings.
#![no_main]

use std::time::Instant;

use ibpm_agentx::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(c) = Config::parse(text, "fuzz.toml") {
        assert!(c.validate().is_ok(), "parse accepted what validate rejects");
        let _ = c.topology_path();
        let _ = (c.sweep(), c.engine(), c.control(), c.warnings());
        // The durations the agent derives from the file are added to
        // `Instant::now()` when timers are armed: they must not overflow.
        let now = Instant::now();
        for (key, d) in [
            ("fabric.sweep_interval", c.sweep_interval()),
            ("mad.timeout_ms", c.mad.timeout),
            ("umad.discovery_timeout_ms", c.umad.discovery_timeout),
            ("agentx.ping_interval", c.agentx.ping_interval),
            ("agentx.reconnect_max", c.agentx.reconnect_max),
        ] {
            assert!(
                now.checked_add(d).is_some(),
                "{key} = {d:?} overflows a timer"
            );
        }
    }
});
