//! What the metrics endpoint answers a request, decided from its head
//! alone, pure: time is an argument and the gate's state is passed in. The
//! HTTP edge ([`super::http`]) checks credentials, renders and writes; it
//! decides nothing.

use std::net::IpAddr;
use std::time::Instant;

use super::MetricsSettings;
use super::families::{Collector, Collectors};
use super::render::Format;
use crate::edge::head::{accepts_gzip, collect_params};
use crate::edge::render::Budget;
use crate::edge::{Gate, Refusal};

/// The parts of a request head the decision reads.
#[derive(Clone, Copy, Debug, Default)]
pub struct Head<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: Option<&'a str>,
    pub accept: Option<&'a str>,
    pub accept_encoding: Option<&'a str>,
    /// `X-Prometheus-Scrape-Timeout-Seconds`.
    pub scrape_timeout: Option<&'a str>,
}

/// A scrape to render.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    pub collectors: Collectors,
    pub format: Format,
    pub gzip: bool,
    /// A HEAD request: the headers only.
    pub head_only: bool,
    pub budget: Budget,
}

/// The answer to a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Refused before credentials are checked.
    Refuse(Refusal, String),
    /// Not GET or HEAD (405, counted as a bad request).
    Method,
    /// Answered once the credentials are good:
    /// the status page or `/api/health`,
    View(super::views::View),
    NotFound,
    /// A bad request (400) with its reason.
    Bad(String),
    Scrape(Plan),
}

impl Decision {
    /// Whether the answer waits on valid credentials (when users are
    /// configured).
    pub fn needs_credentials(&self) -> bool {
        !matches!(self, Decision::Refuse(..) | Decision::Method)
    }
}

/// The decision for `head` from `peer` at `now`. `prepaid`: the request is
/// its connection's first, paid for at accept.
pub fn decide(
    head: &Head<'_>,
    peer: IpAddr,
    now: Instant,
    gate: &mut Gate,
    prepaid: bool,
    settings: &MetricsSettings,
) -> Decision {
    if !prepaid && let Err(r) = gate.request(peer, now) {
        return Decision::Refuse(r, "Too many requests".into());
    }
    let head_only = match head.method {
        "GET" => false,
        "HEAD" => true,
        _ => return Decision::Method,
    };
    if let Some(view) = super::views::View::of_path(head.path, &settings.path) {
        return Decision::View(view);
    }
    if head.path != settings.path {
        return Decision::NotFound;
    }
    let asked = match collect_params(head.query.unwrap_or("")) {
        Ok(a) => a,
        Err(raw) => {
            return Decision::Bad(format!(
                "collect[] `{}` is not percent-encoded UTF-8",
                raw.escape_debug()
            ));
        }
    };
    let mut collectors = if asked.is_empty() {
        settings.collectors
    } else {
        Collectors::NONE
    };
    for name in &asked {
        match Collector::from_name(name) {
            Some(c) => collectors = collectors.with(c),
            None => {
                let known: Vec<&str> = Collector::ALL.iter().map(|c| c.name()).collect();
                return Decision::Bad(format!(
                    "unknown collector `{}`; known: {}",
                    name.escape_debug(),
                    known.join(", ")
                ));
            }
        }
    }
    let limits = &settings.limits;
    Decision::Scrape(Plan {
        collectors,
        format: Format::negotiate(head.accept),
        gzip: accepts_gzip(head.accept_encoding),
        head_only,
        budget: Budget::new(
            now,
            limits.response_timeout,
            head.scrape_timeout,
            limits.min_rate,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::edge::Limits;
    use std::time::Duration;

    fn settings() -> MetricsSettings {
        MetricsSettings {
            limits: Limits {
                rate: 1,
                burst: 2,
                ..Limits::default()
            },
            ..MetricsSettings::on(
                ([127, 0, 0, 1], 0).into(),
                vec!["10.0.0.0/8".parse().unwrap()],
            )
        }
    }

    fn get(path: &str) -> Head<'_> {
        Head {
            method: "GET",
            path,
            ..Head::default()
        }
    }

    #[test]
    fn a_scrape_is_planned_from_its_head() {
        let s = settings();
        let t = Instant::now();
        let peer: IpAddr = [10, 0, 0, 1].into();
        let mut gate = Gate::new(s.sources.clone(), 0, 1);
        let head = Head {
            query: Some("collect[]=errors&collect%5B%5D=vl"),
            accept: Some("application/openmetrics-text; version=1.0.0"),
            accept_encoding: Some("gzip"),
            scrape_timeout: Some("10"),
            ..get("/metrics")
        };
        let Decision::Scrape(p) = decide(&head, peer, t, &mut gate, false, &s) else {
            panic!("not a scrape");
        };
        assert_eq!(p.collectors.names().collect::<Vec<_>>(), ["errors", "vl"]);
        assert_eq!(p.format, Format::negotiate(head.accept));
        assert!(p.gzip && !p.head_only);
        assert_eq!(p.budget.deadline(), t + Duration::from_secs(10));
        let Decision::Scrape(p) = decide(&get("/metrics"), peer, t, &mut gate, false, &s) else {
            panic!("not a scrape");
        };
        assert_eq!(p.collectors, s.collectors, "the defaults");
        assert_eq!(p.budget.deadline(), t + s.limits.response_timeout);
        let head_only = Head {
            method: "HEAD",
            ..get("/metrics")
        };
        assert!(matches!(
            decide(&head_only, peer, t, &mut gate, false, &s),
            Decision::Scrape(Plan {
                head_only: true,
                ..
            })
        ));
    }

    #[test]
    fn bad_requests_say_why() {
        let s = settings();
        let t = Instant::now();
        let peer: IpAddr = [10, 0, 0, 1].into();
        let mut gate = Gate::new(s.sources.clone(), 0, 1);
        let mut d = |h: Head<'_>| decide(&h, peer, t, &mut gate, false, &s);
        assert_eq!(d(get("/")), Decision::View(super::super::views::View::Page));
        assert_eq!(
            d(get("/api/health")),
            Decision::View(super::super::views::View::Json)
        );
        assert_eq!(d(get("/other")), Decision::NotFound);
        let post = Head {
            method: "POST",
            ..get("/metrics")
        };
        assert_eq!(d(post), Decision::Method);
        assert!(!Decision::Method.needs_credentials());
        let bad = |q| Head {
            query: Some(q),
            ..get("/metrics")
        };
        match d(bad("collect[]=cpu")) {
            Decision::Bad(why) => assert!(why.contains("unknown collector `cpu`"), "{why}"),
            other => panic!("{other:?}"),
        }
        match d(bad("collect[]=%ff")) {
            Decision::Bad(why) => assert!(why.contains("not percent-encoded UTF-8"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert!(Decision::Bad(String::new()).needs_credentials());
    }

    #[test]
    fn requests_on_a_kept_alive_connection_pay_the_rate_on_virtual_time() {
        let s = settings();
        let t = Instant::now();
        let peer: IpAddr = [10, 0, 0, 1].into();
        let mut gate = Gate::new(s.sources.clone(), s.limits.rate, s.limits.burst);
        let mut at = |secs: u64, prepaid| {
            decide(
                &get("/metrics"),
                peer,
                t + Duration::from_secs(secs),
                &mut gate,
                prepaid,
                &s,
            )
        };
        // The burst of 2, then nothing until a second has passed; a
        // connection's first request was paid at accept.
        assert!(matches!(at(0, false), Decision::Scrape(_)));
        assert!(matches!(at(0, false), Decision::Scrape(_)));
        assert!(matches!(at(0, true), Decision::Scrape(_)));
        let refused = at(0, false);
        assert!(
            matches!(refused, Decision::Refuse(Refusal::Rate, _)),
            "{refused:?}"
        );
        assert!(!refused.needs_credentials());
        assert!(matches!(at(1, false), Decision::Scrape(_)));
        assert!(matches!(at(1, false), Decision::Refuse(Refusal::Rate, _)));
    }
}
