//! The status page and `/api/health` are made once per sweep and query
//! and copied to each request: over real sockets, on an agent whose
//! simulated fabric loses a link, what `/` serves follows each new sweep,
//! each acknowledgement and each query, whatever was served before.

mod common;

use std::time::Duration;

use common::health::get;
use common::{free_tcp_port, wait_until};
use ibpm_agentx::app::{self, Backend, Shutdown};
use ibpm_agentx::config::Config;
use ibpm_agentx::ib::health::{Ack, Condition};
use ibpm_agentx::ib::{Guid, topology};
use ibpm_agentx::metrics::page::escape;
use ibpm_agentx::sim::SimFabric;

/// The page's count of unhealthy links.
fn unhealthy_links(page: &str) -> usize {
    let at = page
        .find("<h2 id=\"unhealthy\">")
        .unwrap_or_else(|| panic!("no unhealthy links section: {page}"));
    let rest = &page[at..];
    let open = rest.find("(").unwrap() + 1;
    let close = rest.find(")").unwrap();
    rest[open..close].parse().unwrap()
}

fn page(port: u16, query: &str) -> String {
    let (status, head, body) = get(port, &format!("/{query}"), "");
    assert_eq!(status, 200, "{head}\n{body}");
    body
}

#[test]
fn a_new_sweep_an_acknowledgement_and_a_query_change_what_the_page_serves() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_tcp_port();
    // Sweeps every 0.5 s; a verdict stays in its recovery window for ten
    // minutes, so only the acknowledgement clears it within the test.
    let path = dir.path().join("agent.toml");
    std::fs::write(
        &path,
        format!(
            "[agentx]\nenabled = false\n\
             [fabric]\nsweep_interval = 0.5\n\
             [sim]\ntraffic = false\n\
             [health]\nrecovery = 600\n\
             [metrics]\nlisten = \"127.0.0.1:{port}\"\n"
        ),
    )
    .unwrap();
    let cfg = Config::load(&path).expect("test configuration");
    let sim = SimFabric::new(topology::default_fabric(), app::sim_options(&cfg));
    let agent = app::start_with(&cfg, Backend::sim(&sim), Shutdown::new()).expect("agent");
    let cache = std::sync::Arc::clone(agent.cache());
    wait_until(
        "an evaluated sweep",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || cache.load().health.sweep >= 2,
    );

    // Healthy, served (and made) before the link goes.
    let healthy = page(port, "");
    assert!(healthy.contains("id=\"status\">healthy<"), "{healthy}");
    assert_eq!(unhealthy_links(&healthy), 0);
    assert_eq!(unhealthy_links(&page(port, "")), 0);

    // A link between two switches lost: a later sweep's page shows it.
    let f = sim.fabric();
    let (x, y) = common::health::switch_link(&f);
    assert!(sim.set_link(x.0, x.1, false));
    wait_until(
        "the lost link on the page",
        Duration::from_secs(30),
        Duration::from_millis(100),
        || unhealthy_links(&page(port, "")) == 1,
    );
    // Back up: the verdict stands in its recovery window.
    assert!(sim.set_link(x.0, x.1, true));
    let swept = cache.load().sweep;
    wait_until(
        "two more sweeps",
        Duration::from_secs(30),
        Duration::from_millis(50),
        || cache.load().health.sweep >= swept + 2,
    );
    let standing = page(port, "");
    assert_eq!(unhealthy_links(&standing), 1, "in its recovery window");
    let snap = cache.load();
    let name = |(g, p): (Guid, u8)| {
        escape(&ibpm_agentx::mib::read::port_name(
            snap.node(g).unwrap(),
            p,
            &snap,
        ))
    };
    assert!(standing.contains(&name(x)) && standing.contains(&name(y)));
    // A query of its own: the other conditions' links only.
    assert_eq!(unhealthy_links(&page(port, "?condition=erroring")), 0);
    assert_eq!(unhealthy_links(&page(port, "?condition=link_lost")), 1);

    // Acknowledged: the next request's page has it cleared, at once.
    assert!(cache.acknowledge(Ack {
        guid: x.0,
        port: x.1,
        condition: Some(Condition::LinkLost),
    }));
    assert_eq!(unhealthy_links(&page(port, "")), 0, "acknowledged");
    assert_eq!(unhealthy_links(&page(port, "?condition=link_lost")), 0);
    agent.stop();
}
