//! The HTTP edge of the metrics endpoint: hyper's HTTP/1.1 server on the
//! edge runtime ([`crate::runtime`]), over TCP or TLS. Everything from
//! outside is bounded: connections at once, header size and time, each
//! connection's life, requests per source, bcrypt checks at once, renders
//! at once. A scrape loads the latest snapshot and renders it on a
//! blocking thread into 64 KiB chunks (gzipped when the client accepts
//! it) that the body sends as they fill: the exposition is never held
//! whole, and a client that stops reading stops the render.

use std::collections::{HashMap, HashSet};
use std::convert::Infallible;
use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant, UNIX_EPOCH};

use base64::Engine as _;
use bytes::Bytes;
use hyper::body::{Frame, Incoming};
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use sha2::Digest;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{Semaphore, mpsc, watch};
use tracing::{debug, info, warn};

use super::families::{Collector, Collectors};
use super::render::{Format, Scrape, render};
use super::web::WebConfig;
use super::{HttpCounters, MetricsSettings};
use crate::fabric::cache::Cache;
use crate::mib::EndpointCounters;
use crate::runtime::EdgeRuntime;
use crate::time::Throttle;

/// Connections served at once; more are answered 503 (or, over TLS,
/// closed) at once.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections from one source address at once: a client that holds idle
/// connections does not lock the others out.
pub const MAX_CONNECTIONS_PER_SOURCE: usize = 16;
/// Renders at once (each holds a blocking thread and a snapshot).
pub const MAX_RENDERS: usize = 4;
/// bcrypt checks at once.
const MAX_AUTH_CHECKS: usize = 2;
/// The request head, at most (hyper answers 431 beyond it).
pub const MAX_HEAD: usize = 16 * 1024;
/// Time to send a whole request head, and the longest a kept-alive
/// connection waits for the next one.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// Time for a TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection's whole life (keep-alive included).
pub const CONNECTION_LIFETIME: Duration = Duration::from_secs(300);
/// Time a client may take to accept one chunk of the body.
const SEND_TIMEOUT: Duration = Duration::from_secs(30);
/// Size of a body chunk.
const CHUNK: usize = 64 * 1024;
/// Requests per second and burst per source address.
pub const SOURCE_RATE: f64 = 10.0;
pub const SOURCE_BURST: f64 = 20.0;
/// Sources whose request rates are tracked at most.
const MAX_TRACKED_SOURCES: usize = 4096;
/// Successful basic-auth checks remembered (so a scrape costs one bcrypt
/// check per credential, not per request).
const MAX_AUTH_CACHE: usize = 64;
/// A refusal of each kind is logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(10);

/// Requests per source: a token bucket per address, pure (time passed in).
#[derive(Debug, Default)]
pub struct SourceLimiter {
    buckets: HashMap<IpAddr, (f64, Instant)>,
}

impl SourceLimiter {
    /// Whether a request from `ip` at `now` is within its rate.
    pub fn allow(&mut self, ip: IpAddr, now: Instant) -> bool {
        if !self.buckets.contains_key(&ip) && self.buckets.len() >= MAX_TRACKED_SOURCES {
            // Forget the sources whose buckets have filled up again.
            self.buckets.retain(|_, (tokens, at)| {
                tokens.min(SOURCE_BURST)
                    + now.saturating_duration_since(*at).as_secs_f64() * SOURCE_RATE
                    < SOURCE_BURST
            });
            if self.buckets.len() >= MAX_TRACKED_SOURCES {
                return false;
            }
        }
        let (tokens, at) = self.buckets.entry(ip).or_insert((SOURCE_BURST, now));
        let refill = now.saturating_duration_since(*at).as_secs_f64() * SOURCE_RATE;
        *tokens = (*tokens + refill).min(SOURCE_BURST);
        *at = now;
        if *tokens >= 1.0 {
            *tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Why a request or connection was refused (the `reason` label).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refusal {
    Source,
    Auth,
    Rate,
    Busy,
    BadRequest,
    Tls,
    Timeout,
}

impl Refusal {
    /// How many kinds there are (`Timeout` is the last).
    const KINDS: usize = Refusal::Timeout as usize + 1;
}

/// The refusals' log: one line per kind of refusal at most every
/// [`LOG_EVERY`], with how many there were since the last.
struct RefusalLog([Throttle; Refusal::KINDS]);

impl Default for RefusalLog {
    fn default() -> RefusalLog {
        RefusalLog(std::array::from_fn(|_| Throttle::every(LOG_EVERY)))
    }
}

impl RefusalLog {
    /// One refusal of kind `r` at `now`: the number its line stands for,
    /// when one is due.
    fn due(&mut self, r: Refusal, now: Instant) -> Option<u64> {
        self.0[r as usize].at(now).map(|d| d.since)
    }
}

/// What every connection shares.
struct Shared {
    settings: MetricsSettings,
    web: WebConfig,
    cache: Arc<Cache>,
    endpoint: Arc<EndpointCounters>,
    counters: Arc<HttpCounters>,
    renders: Semaphore,
    auth_checks: Semaphore,
    limiter: Mutex<SourceLimiter>,
    /// SHA-256 of `user \0 password` of credentials bcrypt accepted.
    auth_ok: Mutex<HashSet<[u8; 32]>>,
    /// Checked for an unknown user, so the answer takes as long.
    dummy_hash: String,
    log: Mutex<RefusalLog>,
}

impl Shared {
    fn refuse(&self, r: Refusal, peer: SocketAddr, what: &str) {
        let (counter, kind) = match r {
            Refusal::Source => (&self.counters.source, "source"),
            Refusal::Auth => (&self.counters.auth, "auth"),
            Refusal::Rate => (&self.counters.rate, "rate"),
            Refusal::Busy => (&self.counters.busy, "busy"),
            Refusal::BadRequest => (&self.counters.bad_request, "bad_request"),
            Refusal::Tls => (&self.counters.tls, "tls"),
            Refusal::Timeout => (&self.counters.timeout, "timeout"),
        };
        HttpCounters::bump(counter);
        let due = self
            .log
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .due(r, Instant::now());
        if let Some(n) = due {
            warn!(%peer, reason = kind, count = n, "metrics: refused ({what}); at most one line per reason every 10 s");
        }
    }
}

/// A response body: a whole one, or chunks as a render sends them.
pub enum Body {
    Full(Option<Bytes>),
    Stream(mpsc::Receiver<Result<Bytes, io::Error>>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            Body::Full(Some(b)) => hyper::body::SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => hyper::body::SizeHint::with_exact(0),
            Body::Stream(_) => hyper::body::SizeHint::default(),
        }
    }
}

/// A running endpoint; stops it when dropped.
pub struct MetricsHandle {
    stop: watch::Sender<bool>,
    local_addr: SocketAddr,
    counters: Arc<HttpCounters>,
    done: Option<std::sync::mpsc::Receiver<()>>,
    _runtime: EdgeRuntime,
}

impl MetricsHandle {
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    pub fn counters(&self) -> &HttpCounters {
        &self.counters
    }

    /// Stops accepting, ends the connections, and waits for the accept
    /// loop. Call it from outside the edge runtime.
    pub fn shutdown(mut self) {
        self.stop_and_join();
    }

    fn stop_and_join(&mut self) {
        let _ = self.stop.send(true);
        if let Some(done) = self.done.take() {
            let _ = done.recv();
        }
    }
}

impl Drop for MetricsHandle {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Binds `settings.listen` and serves `cache` on the edge runtime; an
/// error when the address cannot be bound or the runtime cannot start.
pub fn serve(
    settings: MetricsSettings,
    web: WebConfig,
    cache: Arc<Cache>,
    endpoint: Arc<EndpointCounters>,
    counters: Arc<HttpCounters>,
) -> io::Result<MetricsHandle> {
    let runtime = EdgeRuntime::acquire()?;
    let std_listener = std::net::TcpListener::bind(settings.listen)?;
    std_listener.set_nonblocking(true)?;
    let local_addr = std_listener.local_addr()?;
    let listener = {
        let _in = runtime.handle().enter();
        tokio::net::TcpListener::from_std(std_listener)?
    };
    let dummy_hash = match web.users.values().next() {
        Some(h) => {
            let cost = h.parse::<bcrypt::HashParts>().map_or(10, |p| p.get_cost());
            bcrypt::hash(b"not a password", cost).unwrap_or_else(|_| h.clone())
        }
        None => String::new(),
    };
    let tls = web.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    info!(
        addr = %local_addr,
        path = %settings.path,
        tls = tls.is_some(),
        basic_auth = !web.users.is_empty(),
        collectors = %settings.collectors.names().collect::<Vec<_>>().join(","),
        "metrics endpoint listening"
    );
    let shared = Arc::new(Shared {
        settings,
        web,
        cache,
        endpoint,
        counters: Arc::clone(&counters),
        renders: Semaphore::new(MAX_RENDERS),
        auth_checks: Semaphore::new(MAX_AUTH_CHECKS),
        limiter: Mutex::new(SourceLimiter::default()),
        auth_ok: Mutex::new(HashSet::new()),
        dummy_hash,
        log: Mutex::new(RefusalLog::default()),
    });
    let (stop, stop_rx) = watch::channel(false);
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    runtime.handle().spawn(async move {
        let _done = done_tx;
        accept_loop(listener, tls, shared, stop_rx).await;
    });
    Ok(MetricsHandle {
        stop,
        local_addr,
        counters,
        done: Some(done_rx),
        _runtime: runtime,
    })
}

async fn accept_loop(
    listener: tokio::net::TcpListener,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let connections = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    let per_source: Arc<Mutex<HashMap<IpAddr, usize>>> = Arc::default();
    let mut tasks = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.changed() => break,
        };
        while tasks.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // Out of descriptors and the like: pause, do not spin.
                debug!(error = %e, "metrics: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let slot = SourceSlot::take(&per_source, peer.ip());
        let permit = slot
            .as_ref()
            .and_then(|_| Arc::clone(&connections).try_acquire_owned().ok());
        let (Some(slot), Some(permit)) = (slot, permit) else {
            shared.refuse(Refusal::Busy, peer, "too many connections");
            if tls.is_none() {
                let _ = stream.try_write(
                    b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
            continue;
        };
        let _ = stream.set_nodelay(true);
        let (shared, tls, stop) = (Arc::clone(&shared), tls.clone(), stop.clone());
        tasks.spawn(async move {
            let _held = (permit, slot);
            let allowed = shared
                .settings
                .sources
                .iter()
                .any(|n| n.contains(peer.ip()));
            let served = async {
                match tls {
                    None => serve_connection(stream, peer, allowed, &shared, stop).await,
                    Some(acceptor) => {
                        match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await
                        {
                            Ok(Ok(s)) => serve_connection(s, peer, allowed, &shared, stop).await,
                            Ok(Err(e)) => {
                                shared.refuse(Refusal::Tls, peer, &format!("TLS handshake: {e}"))
                            }
                            Err(_) => {
                                shared.refuse(Refusal::Timeout, peer, "TLS handshake too slow")
                            }
                        }
                    }
                }
            };
            if tokio::time::timeout(CONNECTION_LIFETIME, served)
                .await
                .is_err()
            {
                debug!(%peer, "metrics: a connection reached its lifetime");
            }
        });
    }
    tasks.shutdown().await;
}

/// One of a source's [`MAX_CONNECTIONS_PER_SOURCE`], given back when
/// dropped.
struct SourceSlot {
    map: Arc<Mutex<HashMap<IpAddr, usize>>>,
    ip: IpAddr,
}

impl SourceSlot {
    fn take(map: &Arc<Mutex<HashMap<IpAddr, usize>>>, ip: IpAddr) -> Option<SourceSlot> {
        let mut m = map.lock().unwrap_or_else(|e| e.into_inner());
        let n = m.entry(ip).or_insert(0);
        if *n >= MAX_CONNECTIONS_PER_SOURCE {
            return None;
        }
        *n += 1;
        Some(SourceSlot {
            map: Arc::clone(map),
            ip,
        })
    }
}

impl Drop for SourceSlot {
    fn drop(&mut self) {
        let mut m = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = m.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                m.remove(&self.ip);
            }
        }
    }
}

async fn serve_connection<I>(
    io: I,
    peer: SocketAddr,
    allowed: bool,
    shared: &Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let sh = Arc::clone(shared);
    // Requests served: a head timeout after one is the keep-alive's end
    // (hyper's head timer also runs while a kept-alive connection idles).
    let served = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = Arc::clone(&served);
    let svc = service_fn(move |req| {
        let sh = Arc::clone(&sh);
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        async move { Ok::<_, Infallible>(handle(req, peer, allowed, sh).await) }
    });
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                let idle = served.load(std::sync::atomic::Ordering::Relaxed) > 0;
                if e.is_timeout() && !idle {
                    shared.refuse(Refusal::Timeout, peer, "request head too slow");
                } else if e.is_parse() || e.is_parse_status() {
                    shared.refuse(Refusal::BadRequest, peer, &format!("malformed request: {e}"));
                } else {
                    debug!(%peer, error = %e, "metrics: connection ended");
                }
            }
        }
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = tokio::time::timeout(Duration::from_secs(1), conn).await;
        }
    }
}

fn plain(status: StatusCode, text: &str) -> Response<Body> {
    let mut r = Response::new(Body::Full(Some(Bytes::from(format!("{text}\n")))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// The `collect[]` values of a query string, percent-decoded.
pub fn collect_params(query: &str) -> Vec<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .filter(|(k, _)| matches!(percent_decode(k).as_deref(), Some("collect[]")))
        .filter_map(|(_, v)| percent_decode(v))
        .collect()
}

fn percent_decode(s: &str) -> Option<String> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'%' => {
                let hex = std::str::from_utf8(b.get(i + 1..i + 3)?).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            c => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// Whether an Accept-Encoding header accepts gzip.
pub fn accepts_gzip(h: Option<&str>) -> bool {
    h.is_some_and(|h| {
        h.split(',').any(|e| {
            let mut p = e.split(';').map(str::trim);
            let coding = p.next().unwrap_or("").to_ascii_lowercase();
            let q = p
                .filter_map(|x| x.strip_prefix("q="))
                .next()
                .and_then(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (coding == "gzip" || coding == "*") && q > 0.0
        })
    })
}

/// The user and password of a Basic Authorization header.
pub fn basic_credentials(h: &HeaderValue) -> Option<(String, Vec<u8>)> {
    let v = h.to_str().ok()?;
    let (scheme, b64) = v.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let raw = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .ok()?;
    let colon = raw.iter().position(|&c| c == b':')?;
    let user = String::from_utf8(raw[..colon].to_vec()).ok()?;
    Some((user, raw[colon + 1..].to_vec()))
}

async fn authorized(sh: &Arc<Shared>, req: &Request<Incoming>) -> bool {
    if sh.web.users.is_empty() {
        return true;
    }
    let Some((user, pass)) = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(basic_credentials)
    else {
        return false;
    };
    let mut h = sha2::Sha256::new();
    h.update(user.as_bytes());
    h.update([0]);
    h.update(&pass);
    let key: [u8; 32] = h.finalize().into();
    if sh
        .auth_ok
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .contains(&key)
    {
        return true;
    }
    let known = sh.web.users.get(&user).cloned();
    let hash = known.clone().unwrap_or_else(|| sh.dummy_hash.clone());
    let Ok(_permit) = sh.auth_checks.acquire().await else {
        return false;
    };
    let ok = tokio::task::spawn_blocking(move || bcrypt::verify(&pass, &hash).unwrap_or(false))
        .await
        .unwrap_or(false)
        && known.is_some();
    if ok {
        let mut cache = sh.auth_ok.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_AUTH_CACHE {
            cache.clear();
        }
        cache.insert(key);
    }
    ok
}

async fn handle(
    req: Request<Incoming>,
    peer: SocketAddr,
    allowed: bool,
    sh: Arc<Shared>,
) -> Response<Body> {
    let mut r = route(req, peer, allowed, &sh).await;
    for (k, v) in &sh.web.headers {
        r.headers_mut().insert(k.clone(), v.clone());
    }
    r
}

async fn route(
    req: Request<Incoming>,
    peer: SocketAddr,
    allowed: bool,
    sh: &Arc<Shared>,
) -> Response<Body> {
    if !allowed {
        sh.refuse(Refusal::Source, peer, "source not in metrics.sources");
        return plain(
            StatusCode::FORBIDDEN,
            "Forbidden: this address is not in metrics.sources",
        );
    }
    let allowed_now = sh
        .limiter
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .allow(peer.ip(), Instant::now());
    if !allowed_now {
        sh.refuse(Refusal::Rate, peer, "over the request rate of its source");
        let mut r = plain(StatusCode::TOO_MANY_REQUESTS, "Too many requests");
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    }
    if req.method() != Method::GET && req.method() != Method::HEAD {
        sh.refuse(Refusal::BadRequest, peer, "method not GET or HEAD");
        let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "Only GET and HEAD");
        r.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return r;
    }
    if !authorized(sh, &req).await {
        sh.refuse(Refusal::Auth, peer, "no valid basic-auth credentials");
        let mut r = plain(StatusCode::UNAUTHORIZED, "Unauthorized");
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"ibpm-agentx\""),
        );
        return r;
    }
    let path = req.uri().path();
    if let Some(view) = super::views::View::of_path(path, &sh.settings.path) {
        let (snap, query, metrics) = (
            sh.cache.load(),
            req.uri().query().unwrap_or("").to_string(),
            sh.settings.path.clone(),
        );
        let now = (
            crate::health::watch::wall_ms(std::time::SystemTime::now()),
            Instant::now(),
        );
        let answer = tokio::task::spawn_blocking(move || {
            super::views::answer(view, &query, &snap, &metrics, now)
        })
        .await;
        return match answer {
            Ok(Ok((ty, body))) => {
                let mut r = Response::new(Body::Full(Some(Bytes::from(body))));
                r.headers_mut()
                    .insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
                r
            }
            Ok(Err(why)) => {
                sh.refuse(Refusal::BadRequest, peer, "bad status page query");
                plain(StatusCode::BAD_REQUEST, &why)
            }
            Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the report failed"),
        };
    }
    if path != sh.settings.path {
        return plain(StatusCode::NOT_FOUND, "Not found");
    }
    let asked = collect_params(req.uri().query().unwrap_or(""));
    let mut collectors = Collectors::NONE;
    for name in &asked {
        match Collector::from_name(name) {
            Some(c) => collectors = collectors.with(c),
            None => {
                sh.refuse(Refusal::BadRequest, peer, "unknown collector");
                let known: Vec<&str> = Collector::ALL.iter().map(|c| c.name()).collect();
                return plain(
                    StatusCode::BAD_REQUEST,
                    &format!(
                        "unknown collector `{}`; known: {}",
                        name.escape_debug(),
                        known.join(", ")
                    ),
                );
            }
        }
    }
    if asked.is_empty() {
        collectors = sh.settings.collectors;
    }
    let header_str = |h| {
        req.headers()
            .get(h)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    let format = Format::negotiate(header_str(header::ACCEPT));
    let gzip = accepts_gzip(header_str(header::ACCEPT_ENCODING));
    let mut r = Response::new(Body::Full(None));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(format.content_type()),
    );
    if gzip {
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    r.headers_mut().insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    if req.method() == Method::HEAD {
        return r;
    }
    let Ok(permit) = sh.renders.try_acquire() else {
        sh.refuse(Refusal::Busy, peer, "too many scrapes at once");
        let mut r = plain(StatusCode::SERVICE_UNAVAILABLE, "Too many scrapes at once");
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
        return r;
    };
    permit.forget();
    let permit = RenderPermit(Arc::clone(sh));
    HttpCounters::bump(&sh.counters.scrapes);
    let (tx, rx) = mpsc::channel(2);
    let sh2 = Arc::clone(sh);
    let rt = tokio::runtime::Handle::current();
    tokio::task::spawn_blocking(move || {
        let snap = sh2.cache.load();
        let taken_unix = snap
            .published_wall(std::time::SystemTime::now(), Instant::now())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
        let scrape = Scrape {
            snap: &snap,
            endpoint: &sh2.endpoint,
            http: &sh2.counters,
            format,
            collectors,
            taken_unix,
        };
        let mut sink = ChunkSink {
            buf: Vec::with_capacity(CHUNK),
            tx: tx.clone(),
            rt,
        };
        let result = if gzip {
            let mut z = gzip_writer(&mut sink);
            render(&scrape, &mut z).and_then(|()| z.finish().map(|_| ()))
        } else {
            render(&scrape, &mut sink)
        };
        let result = result.and_then(|()| sink.send());
        if let Err(e) = result {
            debug!(error = %e, "metrics: a scrape ended early");
            let _ = tx.blocking_send(Err(e));
        }
        drop(snap);
        drop(permit);
    });
    *r.body_mut() = Body::Stream(rx);
    r
}

/// A render's share of [`MAX_RENDERS`], given back when dropped (a render
/// that ends early or panics gives it back too).
struct RenderPermit(Arc<Shared>);

impl Drop for RenderPermit {
    fn drop(&mut self) {
        self.0.renders.add_permits(1);
    }
}

/// gzip at its fastest level, fed in [`CHUNK`]s (the renderer writes a
/// line at a time; deflate works best on large inputs).
pub struct GzipWriter<W: Write>(io::BufWriter<flate2::write::GzEncoder<W>>);

pub fn gzip_writer<W: Write>(w: W) -> GzipWriter<W> {
    GzipWriter(io::BufWriter::with_capacity(
        CHUNK,
        flate2::write::GzEncoder::new(w, flate2::Compression::fast()),
    ))
}

impl<W: Write> GzipWriter<W> {
    /// Writes the rest and the gzip trailer.
    pub fn finish(self) -> io::Result<W> {
        self.0.into_inner().map_err(|e| e.into_error())?.finish()
    }
}

impl<W: Write> Write for GzipWriter<W> {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.0.write(b)
    }

    fn write_all(&mut self, b: &[u8]) -> io::Result<()> {
        self.0.write_all(b)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// A writer that sends what it is given in [`CHUNK`]s to the body.
struct ChunkSink {
    buf: Vec<u8>,
    tx: mpsc::Sender<Result<Bytes, io::Error>>,
    rt: tokio::runtime::Handle,
}

impl ChunkSink {
    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        let sent = self
            .rt
            .block_on(tokio::time::timeout(SEND_TIMEOUT, self.tx.send(Ok(chunk))));
        match sent {
            Ok(Ok(())) => Ok(()),
            Ok(Err(_)) => Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the client went away",
            )),
            Err(_) => Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "the client stopped reading",
            )),
        }
    }
}

impl Write for ChunkSink {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(b);
        if self.buf.len() >= CHUNK {
            self.send()?;
        }
        Ok(b.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collect_params_are_decoded() {
        assert_eq!(
            collect_params("collect%5B%5D=errors&x=1&collect[]=vl"),
            vec!["errors".to_string(), "vl".to_string()]
        );
        assert!(collect_params("").is_empty());
        assert!(collect_params("collect[]=%zz").is_empty());
    }

    #[test]
    fn gzip_is_taken_when_accepted() {
        assert!(accepts_gzip(Some("gzip")));
        assert!(accepts_gzip(Some("deflate, gzip;q=0.5")));
        assert!(!accepts_gzip(Some("gzip;q=0")));
        assert!(!accepts_gzip(Some("identity")));
        assert!(!accepts_gzip(None));
    }

    #[test]
    fn basic_credentials_decode() {
        let h = HeaderValue::from_static("Basic YWxpY2U6czNjcmV0OnRvbw==");
        assert_eq!(
            basic_credentials(&h),
            Some(("alice".to_string(), b"s3cret:too".to_vec()))
        );
        assert_eq!(
            basic_credentials(&HeaderValue::from_static("Bearer x")),
            None
        );
        assert_eq!(
            basic_credentials(&HeaderValue::from_static("Basic !!")),
            None
        );
    }

    #[test]
    fn a_source_gets_its_burst_then_its_rate() {
        let mut l = SourceLimiter::default();
        let ip: IpAddr = [127, 0, 0, 1].into();
        let t0 = Instant::now();
        let granted = (0..100).filter(|_| l.allow(ip, t0)).count();
        assert_eq!(granted, SOURCE_BURST as usize);
        let t1 = t0 + Duration::from_secs(1);
        let granted = (0..100).filter(|_| l.allow(ip, t1)).count();
        assert_eq!(granted, SOURCE_RATE as usize);
        let other: IpAddr = [127, 0, 0, 2].into();
        assert!(l.allow(other, t1));
    }

    #[test]
    fn refusals_are_logged_once_per_period() {
        let mut log = RefusalLog::default();
        let t = Instant::now();
        assert_eq!(log.due(Refusal::Source, t), Some(1));
        assert_eq!(log.due(Refusal::Source, t + Duration::from_secs(1)), None);
        assert_eq!(log.due(Refusal::Auth, t), Some(1));
        assert_eq!(log.due(Refusal::Timeout, t), Some(1));
        assert_eq!(
            log.due(Refusal::Source, t + Duration::from_secs(11)),
            Some(2)
        );
    }
}
