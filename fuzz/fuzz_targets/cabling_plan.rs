//! Plan files (a CSV cabling table, or ibnetdiscover's output): parse must
//! never panic; a plan lists each port once, never cabled to itself, and
//! its errors are one short line.
#![no_main]

use std::collections::HashSet;

use ibpm_agentx::cabling::parse_plan;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse_plan(data) {
        Ok(plan) => {
            let mut ends = HashSet::new();
            for l in &plan.links {
                assert!(l.a != l.z);
                assert!(ends.insert(l.a.clone()) && ends.insert(l.z.clone()));
            }
        }
        Err(e) => {
            let shown = e.to_string();
            assert!(!shown.contains('\n') && shown.len() < 1000);
        }
    }
});
