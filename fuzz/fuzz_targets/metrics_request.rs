//! What a scraper sends the metrics endpoint beyond hyper's own parsing:
//! the query string (`collect[]`), the Accept, Accept-Encoding and
//! Authorization headers; and the web configuration file's YAML. None may
//! panic.
#![no_main]

use std::path::Path;

use ibpm_agentx::metrics::http::{accepts_gzip, basic_credentials, collect_params};
use ibpm_agentx::metrics::render::Format;
use ibpm_agentx::metrics::web::WebConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut parts = data.split(|&b| b == 0);
    let text = |b: Option<&[u8]>| String::from_utf8_lossy(b.unwrap_or(&[])).into_owned();
    let (query, accept, encoding) = (text(parts.next()), text(parts.next()), text(parts.next()));
    for name in collect_params(&query).unwrap_or_default() {
        let _ = ibpm_agentx::metrics::Collector::from_name(&name);
    }
    let _ = Format::negotiate(Some(&accept));
    let _ = accepts_gzip(Some(&encoding));
    if let Ok(h) = hyper::header::HeaderValue::from_bytes(parts.next().unwrap_or(&[])) {
        let _ = basic_credentials(&h);
    }
    if let Ok(yaml) = std::str::from_utf8(parts.next().unwrap_or(&[])) {
        // Paths it names are looked up under a directory that does not exist.
        let _ = WebConfig::parse(yaml, Path::new("/nonexistent-fuzz-dir"));
    }
});
