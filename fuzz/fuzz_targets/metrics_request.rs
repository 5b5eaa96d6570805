//! What a scraper sends the metrics endpoint beyond hyper's own parsing:
//! the query string (`collect[]`), the Accept, Accept-Encoding and
//! Authorization headers, the scrape timeout, and the whole decision on
//! them (`decide`, at a virtual time); and the web configuration file's
//! YAML. None may panic.
#![no_main]

use std::path::Path;
use std::time::{Duration, Instant};

use ibpm_agentx::edge::Gate;
use ibpm_agentx::edge::head::{accepts_gzip, basic_credentials, collect_params};
use ibpm_agentx::metrics::MetricsSettings;
use ibpm_agentx::metrics::decide::{Head, decide};
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
    let (method, path, timeout) = (text(parts.next()), text(parts.next()), text(parts.next()));
    let settings = MetricsSettings::on(
        ([127, 0, 0, 1], 0).into(),
        vec!["127.0.0.0/8".parse().unwrap()],
    );
    let mut gate = Gate::new(settings.sources.clone(), 10, 20);
    let head = Head {
        method: &method,
        path: &path,
        query: Some(&query),
        accept: Some(&accept),
        accept_encoding: Some(&encoding),
        scrape_timeout: Some(&timeout),
    };
    let t = Instant::now();
    for i in 0..3 {
        let at = t + Duration::from_millis(i * 50);
        let _ = decide(
            &head,
            [127, 0, 0, 1].into(),
            at,
            &mut gate,
            i == 0,
            &settings,
        );
    }
    if let Ok(yaml) = std::str::from_utf8(parts.next().unwrap_or(&[])) {
        // Paths it names are looked up under a directory that does not exist.
        let _ = WebConfig::parse(yaml, Path::new("/nonexistent-fuzz-dir"));
    }
});
