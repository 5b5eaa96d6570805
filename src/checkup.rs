//! `ibpm-agentx health`: the status report ([`crate::metrics::status`]) in a
//! terminal. It reads a running agent's `/api/health` (HTTP, or HTTPS with
//! a CA file, and basic auth), or with `--sweep` sweeps the fabric itself
//! through the configured backend (once, or twice some seconds apart for
//! the rates) and has the health evaluator judge what it read, for a host
//! where no agent runs. Its exit status says whether anything is
//! unhealthy ([`Outcome::code`]).

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::app::Stacks;
use crate::app::{Shutdown, open_backend};
use crate::config::Config;
use crate::fabric::cache::Cache;
use crate::health::watch::Watch;
use crate::health::watch::wall_ms;
use crate::ib::Escaped;
use crate::metrics::health_api;
use crate::metrics::page::age;
use crate::metrics::status::{End, LinkRow, PortRate, Query, Report, Section, Status, report};

pub mod plan;

/// The agent's metrics endpoint when no URL is given.
pub const DEFAULT_URL: &str = "http://127.0.0.1:9683";
/// The answer read at most (a report of five sections of 200 rows is
/// well under 1 MiB).
const MAX_BODY: usize = 4 << 20;
/// Time to connect, and to wait for each read.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
const READ_TIMEOUT: Duration = Duration::from_secs(30);
/// Time for the whole exchange, from the connect to the answer's end,
/// unless the command line gives another.
pub const EXCHANGE_TIMEOUT: Duration = Duration::from_secs(60);
/// The wait before asking again after a 503.
const RETRY_AFTER: Duration = Duration::from_secs(1);
/// The CA file read at most.
const MAX_CACERT: u64 = 1 << 20;
/// The characters a table cell shows at most (the rest is cut, `…`).
const MAX_CELL: usize = 200;

/// What the report says, as the exit status tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// No verdict stands and every node answers.
    Healthy,
    /// A verdict stands (under the query's condition, if any) or a node
    /// does not answer.
    Unhealthy,
    /// The agent is not sweeping: no sweep yet, or the last one too old.
    Stale,
}

impl Outcome {
    pub fn of(r: &Report) -> Outcome {
        match r.status {
            Status::Healthy => Outcome::Healthy,
            Status::Stale => Outcome::Stale,
            Status::Unhealthy => Outcome::Unhealthy,
        }
    }

    /// The exit status: 0 healthy, 3 unhealthy, 4 stale (1 is a report
    /// that could not be had, 2 a wrong command line or configuration).
    pub fn code(self) -> u8 {
        match self {
            Outcome::Healthy => 0,
            Outcome::Unhealthy => 3,
            Outcome::Stale => 4,
        }
    }
}

/// How to reach a running agent (no Debug: it holds a password, wiped
/// when dropped).
#[derive(Clone, Default)]
pub struct Remote {
    pub url: String,
    /// A PEM file of the CA that signed the agent's certificate (HTTPS).
    pub cacert: Option<std::path::PathBuf>,
    /// Basic auth: the user and the password.
    pub user: Option<(String, zeroize::Zeroizing<String>)>,
    /// Time for the whole exchange (zero: [`EXCHANGE_TIMEOUT`]).
    pub timeout: Duration,
}

/// The parts of `http[s]://HOST[:PORT][/PREFIX]`.
#[derive(Debug, PartialEq, Eq)]
struct Url {
    tls: bool,
    host: String,
    port: u16,
    prefix: String,
}

fn parse_url(u: &str) -> Result<Url, String> {
    let (tls, rest) = if let Some(r) = u.strip_prefix("http://") {
        (false, r)
    } else if let Some(r) = u.strip_prefix("https://") {
        (true, r)
    } else {
        return Err(format!(
            "{}: the URL must start with http:// or https://",
            Escaped(u)
        ));
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    if authority.contains('@') {
        return Err("give the user with --user, not in the URL".into());
    }
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => match p.parse() {
            Ok(p) if !h.contains(':') || h.starts_with('[') => (h, p),
            _ => (authority, if tls { 443 } else { 80 }),
        },
        _ => (authority, if tls { 443 } else { 80 }),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    if host.is_empty() {
        return Err(format!("{}: no host", Escaped(u)));
    }
    Ok(Url {
        tls,
        host: host.to_string(),
        port,
        prefix: path.trim_end_matches('/').to_string(),
    })
}

/// The report of a running agent.
pub fn fetch(remote: &Remote, q: &Query) -> Result<Report, String> {
    let qs = q.to_query_string();
    let body = get(
        remote,
        &format!("/api/health{}{qs}", if qs.is_empty() { "" } else { "?" }),
    )?;
    health_api::parse(&body).map_err(|e| format!("the agent's answer is no report: {e}"))
}

/// The body of a running agent's answer to `GET path` (`path` after the
/// URL's prefix, with its query), or why there is none (an answer other
/// than 200 with its text). One deadline holds for the whole exchange.
pub fn get(remote: &Remote, path: &str) -> Result<Vec<u8>, String> {
    let url = parse_url(&remote.url)?;
    let path = format!("{}{path}", url.prefix);
    // The CA file is read first: a bad one fails before any connection.
    let tls = match url.tls {
        true => Some(tls_config(remote.cacert.as_deref())?),
        false => None,
    };
    let addr = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| format!("{}: {e}", Escaped(&url.host)))?
        .next()
        .ok_or_else(|| format!("{}: no address", Escaped(&url.host)))?;
    let timeout = match remote.timeout {
        t if t.is_zero() => EXCHANGE_TIMEOUT,
        t => t,
    };
    let deadline = Instant::now() + timeout;
    let mut head = format!(
        "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\nUser-Agent: ibpm-agentx/{}\r\n",
        url.host,
        env!("CARGO_PKG_VERSION")
    );
    if let Some((user, pass)) = &remote.user {
        use base64::Engine as _;
        let raw = zeroize::Zeroizing::new(format!("{user}:{}", pass.as_str()));
        let b64 = zeroize::Zeroizing::new(
            base64::engine::general_purpose::STANDARD.encode(raw.as_bytes()),
        );
        let _ = write!(head, "Authorization: Basic {}\r\n", b64.as_str());
    }
    head.push_str("\r\n");
    let head = zeroize::Zeroizing::new(head);
    // One exchange; answered 503 (a render of this host's already under
    // way, e.g. its Prometheus scraping), another a second later, within
    // the deadline.
    let raw = loop {
        let tcp = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        tcp.set_read_timeout(Some(READ_TIMEOUT)).ok();
        tcp.set_write_timeout(Some(READ_TIMEOUT)).ok();
        let timer = tcp
            .try_clone()
            .map_err(|e| format!("cannot connect to {addr}: {e}"))?;
        let raw = if let Some(cfg) = tls.clone() {
            let name = tokio_rustls::rustls::pki_types::ServerName::try_from(url.host.clone())
                .map_err(|e| format!("{}: {e}", Escaped(&url.host)))?;
            let conn = tokio_rustls::rustls::ClientConnection::new(Arc::new(cfg), name)
                .map_err(|e| format!("TLS: {e}"))?;
            let mut s = tokio_rustls::rustls::StreamOwned::new(conn, tcp);
            exchange(&mut s, head.as_bytes(), &timer, deadline)?
        } else {
            let mut s = tcp;
            exchange(&mut s, head.as_bytes(), &timer, deadline)?
        };
        if split_response(&raw).is_ok_and(|(s, _)| s == 503)
            && Instant::now() + RETRY_AFTER < deadline
        {
            std::thread::sleep(RETRY_AFTER);
            continue;
        }
        break raw;
    };
    let (status, body) = split_response(&raw)?;
    if status != 200 {
        let text = String::from_utf8_lossy(body);
        return Err(format!(
            "{} answered {status}: {}",
            Escaped(&remote.url),
            Escaped(text.trim())
        ));
    }
    Ok(body.to_vec())
}

fn tls_config(cacert: Option<&Path>) -> Result<tokio_rustls::rustls::ClientConfig, String> {
    use tokio_rustls::rustls;
    use tokio_rustls::rustls::pki_types::CertificateDer;
    use tokio_rustls::rustls::pki_types::pem::PemObject;
    let Some(path) = cacert else {
        return Err("an https:// URL needs --cacert (the CA of the agent's certificate)".into());
    };
    let mut roots = rustls::RootCertStore::empty();
    // Read as every file from outside is: a regular file, bounded.
    let pem = crate::files::read_untrusted(path, MAX_CACERT)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let certs = CertificateDer::pem_slice_iter(&pem);
    for c in certs {
        let c = c.map_err(|e| format!("{}: {e}", path.display()))?;
        roots
            .add(c)
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Sends the request and reads the answer to its end (at most
/// [`MAX_BODY`]), all of it by `deadline`: each read waits no longer than
/// what is left (`socket` is the stream's socket, whose timeouts are set).
fn exchange<S: Read + Write>(
    s: &mut S,
    request: &[u8],
    socket: &TcpStream,
    deadline: Instant,
) -> Result<Vec<u8>, String> {
    let late = || "no whole answer within the time given (--timeout)".to_string();
    let left = || {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(late());
        }
        let wait = Some(left.min(READ_TIMEOUT));
        socket.set_read_timeout(wait).ok();
        socket.set_write_timeout(wait).ok();
        Ok(())
    };
    left()?;
    s.write_all(request)
        .and_then(|()| s.flush())
        .map_err(|e| format!("sending the request: {e}"))?;
    let mut out = Vec::new();
    let mut buf = [0u8; 16 * 1024];
    loop {
        left()?;
        match s.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                out.extend_from_slice(&buf[..n]);
                if out.len() > MAX_BODY {
                    return Err(format!("the answer is over {MAX_BODY} bytes"));
                }
            }
            // A TLS peer that closes without close_notify: what came is
            // what was sent (the length is checked by the JSON parser).
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !out.is_empty() => break,
            Err(_) if Instant::now() >= deadline => return Err(late()),
            Err(e) => return Err(format!("reading the answer: {e}")),
        }
    }
    Ok(out)
}

/// The status and the body of an HTTP/1.x answer.
fn split_response(raw: &[u8]) -> Result<(u16, &[u8]), String> {
    let end = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("the answer has no HTTP head")?;
    let head = std::str::from_utf8(&raw[..end]).map_err(|_| "the HTTP head is not text")?;
    let status = head
        .strip_prefix("HTTP/1.")
        .and_then(|r| r.get(2..5))
        .and_then(|s| s.parse().ok())
        .ok_or("the answer has no HTTP status")?;
    Ok((status, &raw[end + 4..]))
}

/// The fabric swept by a command of its own, without an agent: the
/// agent's stacks ([`Stacks`]) over the configured backend, with no state
/// file, publishing into one cache (several subnets merged as the agent
/// merges them), swept on the caller's thread.
pub struct Offline {
    pub cache: Arc<Cache>,
    stacks: Stacks,
}

impl Offline {
    /// The stacks of `cfg`'s backend, tuned for a command that sweeps and
    /// ends: the device closes as soon as the report is made (its threads
    /// look at their stop flag often), and the optional attributes are
    /// asked for only when the rates of two readings `rates` apart are.
    pub fn open(cfg: &Config, rates: Option<Duration>) -> Result<Offline, String> {
        let mut cfg = cfg.clone();
        cfg.umad.reader_poll = Duration::from_millis(2);
        match rates {
            Some(r) => cfg.fabric.sweep_interval = r,
            None => cfg.fabric.optional_attributes = false,
        }
        crate::time::start();
        let shutdown = Shutdown::new();
        let backend = open_backend(&cfg, &shutdown).map_err(|e| e.to_string())?;
        let cache = Arc::new(Cache::new());
        let stacks = Stacks::new(
            &cfg,
            backend.subnets,
            &cache,
            None,
            &shutdown,
            Instant::now(),
        );
        Ok(Offline { cache, stacks })
    }

    /// Sweep every subnet once, one after the other.
    pub fn sweep_once(&mut self) {
        self.stacks.sweep_once();
    }

    /// The sweepers' clock (the first subnet's): what the evaluators and
    /// the report are given.
    pub fn clock(&self) -> crate::time::Clock {
        self.stacks
            .clock()
            .cloned()
            .unwrap_or_else(crate::time::Clock::system)
    }
}

/// One sweep of the fabric (two, `rates` apart, when given) through the
/// configured backend, judged by the health evaluator. A single sweep
/// does not ask for the optional attributes: without a second reading
/// nothing of them reaches a verdict.
pub fn sweep(cfg: &Config, rates: Option<Duration>, q: &Query) -> Result<Report, String> {
    let mut off = Offline::open(cfg, rates)?;
    // The agent's driver of the evaluator, with no state file, on the
    // sweeper's clock.
    let clock = off.clock();
    let mut watch = Watch::new(cfg.health(), None).with_clock(clock.clone());
    let cache = Arc::clone(&off.cache);
    let mut judge = |off: &mut Offline| {
        off.sweep_once();
        watch.after_sweep(&cache);
    };
    judge(&mut off);
    if let Some(r) = rates {
        std::thread::sleep(r);
        judge(&mut off);
    }
    let (now, wall) = clock.both();
    Ok(report(&cache.load(), wall_ms(wall), now, q))
}

/// A line of counts by title: `what: title n, title n`, each title
/// escaped.
pub fn counts<'a, N: std::fmt::Display>(
    o: &mut String,
    what: &str,
    counts: impl Iterator<Item = (&'a str, N)>,
) {
    let counts: Vec<String> = counts
        .map(|(title, n)| format!("{} {n}", Escaped(title)))
        .collect();
    let _ = writeln!(o, "{what}: {}", counts.join(", "));
}

/// The report as terminal tables.
pub fn text(r: &Report) -> String {
    let mut o = String::new();
    let a = &r.agent;
    let _ = writeln!(
        o,
        "{} · ibpm-agentx {} · {}",
        Escaped(&r.status.name().to_uppercase()),
        Escaped(&a.version),
        Escaped(&r.generated)
    );
    let last = a.last_sweep_age_s.map_or("no sweep yet".to_string(), |s| {
        format!("sweep #{} {} ago", a.sweep, age((s * 1000.0) as u64))
    });
    let _ = writeln!(
        o,
        "agent: {last}{}, {} ms, {} MADs, {} timed out; {} of {} nodes reachable, {} ports",
        if a.stale { " (not sweeping)" } else { "" },
        a.sweep_duration_ms,
        a.mads,
        a.timeouts,
        a.nodes_reachable,
        a.nodes,
        a.ports
    );
    counts(
        &mut o,
        "ports per condition",
        r.conditions.iter().map(|c| (c.title.as_str(), c.ports)),
    );
    let shows = r.shows_subnets();
    if shows {
        subnets(&mut o, r);
    }
    let nodes: Vec<Vec<String>> = r
        .unreachable_nodes
        .rows
        .iter()
        .map(|n| {
            let state = match (&n.unresponsive, n.reachable) {
                (Some(_), _) => format!(
                    "unresponsive ({} of {} missed)",
                    n.missed.unwrap_or(0),
                    n.of.unwrap_or(0)
                ),
                (None, _) => format!("unreachable ({} sweeps)", n.failed_sweeps),
            };
            let mut row = vec![Escaped(&n.name).to_string(), Escaped(&n.guid).to_string()];
            if shows {
                row.push(Escaped(&n.subnets.join(",")).to_string());
            }
            row.push(state);
            row
        })
        .collect();
    let head: &[&str] = if shows {
        &["NODE", "GUID", "SUBNETS", "STATE"]
    } else {
        &["NODE", "GUID", "STATE"]
    };
    table(
        &mut o,
        "NODES NOT ANSWERING",
        &r.unreachable_nodes,
        head,
        nodes,
    );
    for (title, s) in [
        ("UNHEALTHY LINKS", &r.unhealthy_links),
        ("DEGRADED LINKS", &r.degraded_links),
    ] {
        let rows = s.rows.iter().map(|l| link_cells(r, l)).collect();
        table(
            &mut o,
            title,
            s,
            &["LINK", "PEER", "VERDICTS", "FLAPS"],
            rows,
        );
    }
    for (title, unit, s) in [
        (
            "WORST PORTS BY ERROR RATE",
            "ERRORS/S",
            &r.worst_error_ports,
        ),
        (
            "WORST PORTS BY CONGESTION",
            "% WAITING",
            &r.worst_congested_ports,
        ),
    ] {
        let rows = s.rows.iter().map(|p| rate_cells(r, p)).collect();
        table(&mut o, title, s, &["PORT", "PEER", unit], rows);
    }
    o
}

fn link_cells(r: &Report, l: &LinkRow) -> Vec<String> {
    let verdicts: Vec<String> = l
        .verdicts
        .iter()
        .map(|v| {
            format!(
                "{} {} ago ×{}{}",
                Escaped(&v.title),
                age(r.generated_ms.saturating_sub(v.since_ms)),
                v.raised,
                if v.holding { "" } else { " (recovering)" }
            )
        })
        .collect();
    vec![
        end_text(r, &l.a),
        l.b.as_ref().map_or("?".to_string(), |b| end_text(r, b)),
        verdicts.join("; "),
        l.flaps.to_string(),
    ]
}

fn rate_cells(r: &Report, p: &PortRate) -> Vec<String> {
    vec![
        end_text(r, &p.port),
        p.peer.as_ref().map_or(String::new(), |e| end_text(r, e)),
        format!("{:.3}", p.value),
    ]
}

/// A port's name, with its subnet in brackets when the report says which
/// subnet things are in.
fn end_text(r: &Report, e: &End) -> String {
    match &e.subnet {
        Some(s) if r.shows_subnets() => format!("{} [{}]", Escaped(&e.name), Escaped(s)),
        _ => Escaped(&e.name).to_string(),
    }
}

/// The subnets the agent sweeps, one row each.
fn subnets(o: &mut String, r: &Report) {
    let rows = r
        .subnets
        .iter()
        .map(|s| {
            let sm = s.sm.as_ref().map_or("none".to_string(), |sm| {
                format!(
                    "{} LID {} prio {} {}",
                    Escaped(&sm.guid),
                    sm.lid,
                    sm.priority,
                    Escaped(&sm.state)
                )
            });
            let last = s.last_sweep_age_s.map_or("none yet".to_string(), |a| {
                format!(
                    "#{} {} ago, {} ms",
                    s.sweep,
                    age((a * 1000.0) as u64),
                    s.sweep_duration_ms
                )
            });
            vec![
                Escaped(&s.label).to_string(),
                Escaped(&s.prefix).to_string(),
                sm,
                s.local_port
                    .as_ref()
                    .map_or("none up".to_string(), |p| Escaped(p).to_string()),
                Escaped(&s.standby.join(",")).to_string(),
                s.nodes.to_string(),
                s.ports.to_string(),
                last,
            ]
        })
        .collect();
    let all = Section::<()> {
        total: r.subnets.len(),
        more: 0,
        rows: Vec::new(),
    };
    table(
        o,
        "SUBNETS",
        &all,
        &[
            "SUBNET",
            "PREFIX",
            "MASTER SM",
            "LOCAL PORT",
            "STANDBY",
            "NODES",
            "PORTS",
            "LAST SWEEP",
        ],
        rows,
    );
}

/// A section: its title and count, its rows in aligned columns, and how
/// many more there are.
fn table<T>(o: &mut String, title: &str, s: &Section<T>, head: &[&str], rows: Vec<Vec<String>>) {
    rows_table(o, title, (s.total, s.more), head, rows);
}

/// A table of `rows` under `title` and its count: each cell cut to
/// [`MAX_CELL`] characters, the columns aligned, then how many more rows
/// there are (`counts`: the total and those not shown).
pub fn rows_table(
    o: &mut String,
    title: &str,
    (total, more): (usize, usize),
    head: &[&str],
    rows: Vec<Vec<String>>,
) {
    let _ = writeln!(o, "\n{title} ({total})");
    // Each cell cut to its most: the widths, and so the table, are bounded.
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| r.into_iter().map(cut).collect())
        .collect();
    if rows.is_empty() {
        o.push_str("  none\n");
        return;
    }
    let mut width: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |o: &mut String, cells: Vec<&str>| {
        let mut l = String::from(" ");
        for (i, (c, w)) in cells.iter().zip(&width).enumerate() {
            l.push(' ');
            l.push_str(c);
            if i + 1 < cells.len() {
                l.extend(std::iter::repeat_n(' ', w - c.chars().count()));
            }
        }
        o.push_str(l.trim_end());
        o.push('\n');
    };
    line(o, head.to_vec());
    for r in &rows {
        line(o, r.iter().map(String::as_str).collect());
    }
    if more > 0 {
        let _ = writeln!(o, "  ({more} more not shown)");
    }
}

/// `c`, cut to [`MAX_CELL`] characters.
fn cut(c: String) -> String {
    match c.char_indices().nth(MAX_CELL) {
        Some((at, _)) => format!("{}…", &c[..at]),
        None => c,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_split_and_refused_with_a_reason() {
        let u = parse_url("http://127.0.0.1:9683").unwrap();
        assert_eq!(
            u,
            Url {
                tls: false,
                host: "127.0.0.1".into(),
                port: 9683,
                prefix: String::new()
            }
        );
        let u = parse_url("https://[::1]:8443/ib/").unwrap();
        assert_eq!(
            (u.tls, u.host.as_str(), u.port, u.prefix.as_str()),
            (true, "::1", 8443, "/ib")
        );
        assert_eq!(parse_url("https://agent").unwrap().port, 443);
        assert!(parse_url("ftp://x").is_err());
        assert!(parse_url("http://u:p@x/").unwrap_err().contains("--user"));
        assert!(parse_url("http://").is_err());
    }

    #[test]
    fn answers_are_split_into_status_and_body() {
        let (s, b) = split_response(b"HTTP/1.1 400 Bad Request\r\nA: b\r\n\r\nwhy\n").unwrap();
        assert_eq!((s, b), (400, &b"why\n"[..]));
        assert!(split_response(b"garbage").is_err());
        assert!(split_response(b"SSH-2.0\r\n\r\n").is_err());
    }

    #[test]
    fn the_terminal_table_shows_the_report() {
        let u = crate::metrics::tests::unhealthy();
        let r = report(&u.snap, u.now, Instant::now(), &Query::default());
        let t = text(&r);
        assert!(t.starts_with("UNHEALTHY · ibpm-agentx "), "{t}");
        let l = &r.unhealthy_links.rows[0];
        let row = t
            .lines()
            .find(|x| x.contains(&l.a.name) && x.contains("link lost"))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(row.contains(&l.b.as_ref().unwrap().name), "{row}");
        assert!(t.contains("\nNODES NOT ANSWERING (1)\n"), "{t}");
        assert_eq!(Outcome::of(&r).code(), 3);
    }

    #[test]
    fn the_terminal_table_says_which_subnet() {
        let u = crate::metrics::tests::unhealthy();
        let one = text(&report(&u.snap, u.now, Instant::now(), &Query::default()));
        assert!(!one.contains("SUBNETS") && !one.contains(" ["), "{one}");
        let snap = crate::metrics::tests::two_subnets(&u);
        let r = report(&snap, u.now, Instant::now(), &Query::default());
        let t = text(&r);
        assert!(t.contains("\nSUBNETS (2)\n"), "{t}");
        let row = t
            .lines()
            .find(|l| l.trim_start().starts_with("plane-a "))
            .unwrap_or_else(|| panic!("{t}"));
        for says in [
            "fe80::/64",
            "0x0002c90300a1b2c3 LID 1 prio 14 master",
            "mlx5_0:1",
            "mlx5_2:1",
        ] {
            assert!(row.contains(says), "{says}: {row}");
        }
        assert!(t.contains("none up"), "{t}");
        let l = &r.unhealthy_links.rows[0];
        let a = format!("{} [{}]", l.a.name, l.a.subnet.as_deref().unwrap());
        assert!(
            t.lines().any(|x| x.contains(&a) && x.contains("link lost")),
            "{a}\n{t}"
        );
        let head = t
            .lines()
            .find(|l| l.trim_start().starts_with("NODE "))
            .unwrap_or_else(|| panic!("{t}"));
        assert!(head.contains(" SUBNETS "), "{head}");
    }
}
