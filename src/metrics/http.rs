//! The HTTP edge of the metrics endpoint: hyper's HTTP/1.1 server on the
//! edge runtime ([`crate::runtime`]), over TCP or TLS, admitting through
//! the pure core of [`crate::edge`].
//!
//! - At accept, before a connection takes a slot or a TLS handshake
//!   starts, the [`Gate`] decides: a peer outside `sources` or over its
//!   rate is closed at once. A listed peer takes a slot of the connection
//!   table ([`Slots`]), by network; when none is free, a connection that
//!   has not sent a whole head, else the one idle the longest, is closed
//!   to make room.
//! - Each connection lives by its phase in the table: the head of a request
//!   within `head_timeout`, a kept-alive connection idle up to
//!   `idle_timeout`, an answer within its deadline.
//! - A scrape renders the latest snapshot on a blocking thread, at most
//!   one per source and `renders` at once (the others wait their turn in
//!   order, within their deadline), streamed in chunks within its
//!   budget ([`super::stream`]).
//! - The status page and `/api/health` are copied from the views made for
//!   the latest sweep and the query ([`super::views::ready`]); a view
//!   not made yet is made as a scrape is rendered, and those being read
//!   are made again off the request path as each sweep settles.

use std::convert::Infallible;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant, UNIX_EPOCH};

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{Notify, Semaphore, watch};
use tracing::{debug, info};

use super::auth::{Auth, Verdict};
use super::decide::{Decision, Head, decide};
use super::render::{Scrape, render};
use super::status::Query;
use super::stream::{Body, gzip_writer};
use super::views::View;
use super::views::ready::Ready;
use super::web::WebConfig;
use super::{HttpCounters, MetricsSettings};
use crate::edge::head::automatic_answer;
use crate::edge::render::Renders;
use crate::edge::slots::{Admit, ConnId, Slots};
use crate::edge::{Edge, Gate, Refusal, RefusalLog};
use crate::fabric::cache::Cache;
use crate::mib::EndpointCounters;
use crate::runtime::EdgeRuntime;
use crate::time::Clock;

/// The request head, at most (hyper answers 431 beyond it).
pub const MAX_HEAD: usize = 16 * 1024;
/// Time a connection has past its answer's deadline to end it.
const ANSWER_GRACE: Duration = Duration::from_secs(1);
/// A refusal of each kind is logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(10);
/// The header a Prometheus scrape says its timeout in.
const SCRAPE_TIMEOUT: &str = "x-prometheus-scrape-timeout-seconds";

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// What every connection shares.
struct Shared {
    settings: MetricsSettings,
    web: WebConfig,
    cache: Arc<Cache>,
    endpoint: Arc<EndpointCounters>,
    counters: Arc<HttpCounters>,
    gate: Mutex<Gate>,
    /// The connection table; a connection's token wakes it to close.
    slots: Mutex<Slots<Arc<Notify>>>,
    /// Scrapes rendering or waiting, one per source.
    renders: Mutex<Renders>,
    /// The places to render in (the number of cores), taken in order.
    render_places: Arc<Semaphore>,
    auth: Auth,
    log: Mutex<RefusalLog>,
    /// The event log `/api/events`, `/api/hosts` and the page read.
    events: Option<Arc<crate::events::Log>>,
    /// The status page and `/api/health` made for the latest snapshot.
    ready: Arc<Ready>,
    /// Where the edge reads the time: the sweepers' clocks, so that the
    /// snapshot's stamps are on it.
    clock: Clock,
}

impl Shared {
    fn refuse(&self, r: Refusal, peer: SocketAddr, detail: &str) {
        let now = self.clock.now();
        lock(&self.log).refuse(&self.counters.refused, r, peer, detail, now);
    }

    /// The configured headers on `r`.
    fn secure(&self, r: &mut Response<Body>) {
        for (k, v) in &self.web.headers {
            r.headers_mut().insert(k.clone(), v.clone());
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

/// Binds `settings.listen` and serves `cache` on the edge runtime, reading
/// the time on `clock` (where it admits, times out and stamps a request);
/// an error when the address cannot be bound or the runtime cannot start.
pub fn serve(
    settings: MetricsSettings,
    web: WebConfig,
    cache: Arc<Cache>,
    endpoint: Arc<EndpointCounters>,
    counters: Arc<HttpCounters>,
    events: Option<Arc<crate::events::Log>>,
    clock: Clock,
) -> io::Result<MetricsHandle> {
    let runtime = EdgeRuntime::acquire()?;
    let std_listener = std::net::TcpListener::bind(settings.listen)?;
    std_listener.set_nonblocking(true)?;
    let local_addr = std_listener.local_addr()?;
    let listener = {
        let _in = runtime.handle().enter();
        tokio::net::TcpListener::from_std(std_listener)?
    };
    let tls = web.tls.clone().map(tokio_rustls::TlsAcceptor::from);
    let limits = settings.limits;
    info!(
        addr = %local_addr,
        path = %settings.path,
        tls = tls.is_some(),
        basic_auth = !web.users.is_empty(),
        collectors = %settings.collectors.names().collect::<Vec<_>>().join(","),
        connections = limits.connections,
        renders = limits.renders(),
        "metrics endpoint listening"
    );
    let auth = Auth::new(web.users.clone());
    let ready = Arc::new(Ready::new(
        Arc::clone(&cache),
        events.clone(),
        &settings.path,
        clock.clone(),
    ));
    let shared = Arc::new(Shared {
        gate: Mutex::new(Gate::new(
            settings.sources.clone(),
            limits.rate,
            limits.burst,
        )),
        slots: Mutex::new(Slots::new(limits.slots())),
        renders: Mutex::new(Renders::new(limits.connections)),
        render_places: Arc::new(Semaphore::new(limits.renders())),
        settings,
        web,
        cache,
        endpoint,
        counters: Arc::clone(&counters),
        auth,
        log: Mutex::new(RefusalLog::every(Edge::Http, LOG_EVERY)),
        events,
        ready,
        clock,
    });
    let (stop, stop_rx) = watch::channel(false);
    runtime
        .handle()
        .spawn(warm_views(Arc::clone(&shared), stop_rx.clone()));
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
        let now = shared.clock.now();
        let admitted = lock(&shared.gate).accept(peer.ip(), now);
        let id = admitted.and_then(|()| {
            let wake = Arc::new(Notify::new());
            match lock(&shared.slots).admit(peer.ip(), now, Arc::clone(&wake)) {
                Admit::Taken { id, evicted } => {
                    if let Some(other) = evicted {
                        other.notify_one();
                    }
                    Ok((id, wake))
                }
                Admit::Full => Err(Refusal::Busy),
            }
        });
        let (id, wake) = match id {
            Ok(taken) => taken,
            Err(r) => {
                shared.refuse(r, peer, "at accept");
                if tls.is_none() {
                    answer_at_accept(&stream, r, &shared.web);
                }
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        debug!(%peer, id, "metrics: connection accepted");
        let (shared, tls, stop) = (Arc::clone(&shared), tls.clone(), stop.clone());
        tasks.spawn(connection(stream, peer, id, wake, tls, shared, stop));
    }
    tasks.shutdown().await;
}

/// The answer of a refusal at accept over plain HTTP, written if the
/// socket takes it at once (what the peer sent so far is read first, so
/// that the close does not reset the answer away).
fn answer_at_accept(stream: &tokio::net::TcpStream, r: Refusal, web: &WebConfig) {
    let Some(status) = r.kind().status.and_then(|s| StatusCode::from_u16(s).ok()) else {
        return;
    };
    let mut drain = [0u8; 4096];
    for _ in 0..4 {
        if !matches!(stream.try_read(&mut drain), Ok(n) if n > 0) {
            break;
        }
    }
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Length: 0\r\nConnection: close\r\n",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    if r.kind().retry {
        head.push_str("Retry-After: 1\r\n");
    }
    for (k, v) in &web.headers {
        if let Ok(v) = v.to_str() {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
    }
    head.push_str("\r\n");
    let _ = stream.try_write(head.as_bytes());
}

/// A connection's part of the table, shared by its reads, its requests
/// and its answers' bodies.
struct Mark {
    id: ConnId,
    shared: Arc<Shared>,
    /// Between requests: the next bytes read start a head.
    waiting: AtomicBool,
    /// Its first request was charged to its source's rate at accept.
    prepaid: AtomicBool,
}

impl Mark {
    fn bytes_arrived(&self) {
        if self.waiting.swap(false, Ordering::Relaxed) {
            let now = self.shared.clock.now();
            lock(&self.shared.slots).head(self.id, now);
        }
    }

    fn busy(&self, until: Instant) {
        self.waiting.store(false, Ordering::Relaxed);
        let now = self.shared.clock.now();
        lock(&self.shared.slots).busy(self.id, now, until);
    }

    fn idle(&self) {
        let now = self.shared.clock.now();
        lock(&self.shared.slots).idle(self.id, now);
        self.waiting.store(true, Ordering::Relaxed);
    }
}

/// Marks its connection idle when the answer's body is dropped.
struct IdleWhenSent(Arc<Mark>);

impl Drop for IdleWhenSent {
    fn drop(&mut self) {
        self.0.idle();
    }
}

/// Frees a connection's slot when its task ends.
struct Release(Arc<Shared>, ConnId);

impl Drop for Release {
    fn drop(&mut self) {
        lock(&self.0.slots).release(self.1);
    }
}

/// The connection's stream, telling its [`Mark`] when bytes arrive, and
/// giving hyper's own answers to heads it could not parse the configured
/// headers ([`automatic_answer`]).
struct Watched<I> {
    io: I,
    mark: Arc<Mark>,
    /// Octets to write before any other, and how many are written.
    pending: Vec<u8>,
    written: usize,
}

impl<I: AsyncWrite + Unpin> Watched<I> {
    fn new(io: I, mark: Arc<Mark>) -> Watched<I> {
        Watched {
            io,
            mark,
            pending: Vec::new(),
            written: 0,
        }
    }

    /// Writes what is pending; ready once it is all written.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.written < self.pending.len() {
            let n = ready!(Pin::new(&mut self.io).poll_write(cx, &self.pending[self.written..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.written += n;
        }
        self.pending.clear();
        self.written = 0;
        Poll::Ready(Ok(()))
    }
}

impl<I: AsyncRead + Unpin> AsyncRead for Watched<I> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut me.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            me.mark.bytes_arrived();
        }
        r
    }
}

impl<I: AsyncWrite + Unpin> AsyncWrite for Watched<I> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        if let Some(answer) = automatic_answer(b, &me.mark.shared.web.headers) {
            me.pending = answer;
            // Written by this call or the flush that follows.
            if let Poll::Ready(Err(e)) = me.poll_pending(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(b.len()));
        }
        Pin::new(&mut me.io).poll_write(cx, b)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        Pin::new(&mut me.io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let me = self.get_mut();
        ready!(me.poll_pending(cx))?;
        Pin::new(&mut me.io).poll_shutdown(cx)
    }

    // Not vectored: hyper hands a head over whole, for `automatic_answer`.
}

/// One connection, from its slot to its close: the TLS handshake (within
/// the head time), then requests, each phase ended on its time by the
/// table, or at once when the connection is evicted or the endpoint stops.
async fn connection(
    stream: tokio::net::TcpStream,
    peer: SocketAddr,
    id: ConnId,
    wake: Arc<Notify>,
    tls: Option<tokio_rustls::TlsAcceptor>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let _release = Release(Arc::clone(&shared), id);
    let mark = Arc::new(Mark {
        id,
        shared: Arc::clone(&shared),
        waiting: AtomicBool::new(true),
        prepaid: AtomicBool::new(true),
    });
    let served = {
        let (mark, shared, stop) = (Arc::clone(&mark), Arc::clone(&shared), stop.clone());
        async move {
            match tls {
                None => serve_connection(Watched::new(stream, mark), peer, &shared, stop).await,
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(s) => serve_connection(Watched::new(s, mark), peer, &shared, stop).await,
                    Err(e) => shared.refuse(Refusal::Tls, peer, &format!("TLS handshake: {e}")),
                },
            }
        }
    };
    tokio::pin!(served);
    loop {
        let end = lock(&shared.slots).end(id);
        let Some(end) = end else {
            debug!(%peer, "metrics: an idle connection made room for another");
            return;
        };
        let now = shared.clock.now();
        if end.at <= now {
            if let Some(r) = end.counts {
                shared.refuse(r, peer, "no whole request head in time");
            } else {
                debug!(%peer, "metrics: a connection reached its time");
            }
            return;
        }
        tokio::select! {
            _ = &mut served => return,
            _ = wake.notified() => {}
            _ = tokio::time::sleep(end.at.saturating_duration_since(now)) => {}
            _ = stop.changed() => {
                let _ = tokio::time::timeout(Duration::from_secs(1), &mut served).await;
                return;
            }
        }
    }
}

async fn serve_connection<I>(
    io: Watched<I>,
    peer: SocketAddr,
    shared: &Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) where
    I: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let sh = Arc::clone(shared);
    let mark = Arc::clone(&io.mark);
    let svc = service_fn(move |req| {
        let (sh, mark) = (Arc::clone(&sh), Arc::clone(&mark));
        async move { Ok::<_, Infallible>(handle(req, peer, mark, sh).await) }
    });
    // The head's time is the table's: hyper's own head timer would also
    // run while a kept-alive connection idles.
    let conn = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(None)
        .max_buf_size(MAX_HEAD)
        .keep_alive(true)
        .serve_connection(TokioIo::new(io), svc);
    tokio::pin!(conn);
    tokio::select! {
        r = conn.as_mut() => {
            if let Err(e) = r {
                if e.is_parse() || e.is_parse_status() {
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
    let mut r = Response::new(Body::full(Bytes::from(format!("{text}\n"))));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// A refusal's answer: the table's status, `Connection: close`, and what
/// the client needs to try again.
fn refusal(r: Refusal, text: &str) -> Response<Body> {
    let status = r
        .kind()
        .status
        .and_then(|s| StatusCode::from_u16(s).ok())
        .unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
    let mut resp = plain(status, text);
    let h = resp.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if r.kind().retry {
        h.insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    }
    if r == Refusal::Auth {
        h.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"ibpm-agentx\""),
        );
    }
    resp
}

async fn handle(
    req: Request<Incoming>,
    peer: SocketAddr,
    mark: Arc<Mark>,
    sh: Arc<Shared>,
) -> Response<Body> {
    let now = sh.clock.now();
    let limits = &sh.settings.limits;
    // The connection's time for this answer: the longest a scrape may take.
    mark.busy(now + limits.response_timeout + ANSWER_GRACE);
    let mut r = route(req, peer, &mark, &sh, now).await;
    sh.secure(&mut r);
    r.body_mut().hold(Box::new(IdleWhenSent(mark)));
    r
}

/// The request's [`Head`].
fn head_of(req: &Request<Incoming>) -> Head<'_> {
    let h = |name| {
        req.headers()
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
    };
    Head {
        method: req.method().as_str(),
        path: req.uri().path(),
        query: req.uri().query(),
        accept: h(header::ACCEPT.as_str()),
        accept_encoding: h(header::ACCEPT_ENCODING.as_str()),
        scrape_timeout: h(SCRAPE_TIMEOUT),
    }
}

/// A render place (scrapes, the status page and `/api/health` share the
/// cores), waited for in order until `deadline`; past it a 503.
async fn render_place(
    sh: &Arc<Shared>,
    peer: SocketAddr,
    deadline: Instant,
) -> Result<tokio::sync::OwnedSemaphorePermit, Response<Body>> {
    let left = deadline.saturating_duration_since(sh.clock.now());
    let place = tokio::time::timeout(left, Arc::clone(&sh.render_places).acquire_owned());
    match place.await {
        Ok(Ok(place)) => Ok(place),
        _ => {
            sh.refuse(
                Refusal::Busy,
                peer,
                "no render place free within its deadline",
            );
            Err(refusal(Refusal::Busy, "Too many renders at once"))
        }
    }
}

/// A view's answer: `body` of content type `ty`, never cached by the
/// client, never sniffed.
fn view_answer(ty: &'static str, body: Bytes) -> Response<Body> {
    let mut r = Response::new(Body::full(body));
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// A view of the latest snapshot. It is its source's answer, as a scrape
/// is: one at a time per source. The status page and `/api/health` are
/// copied from those made for the snapshot and the query
/// ([`super::views::ready`]) when they are; a view made now is made on a
/// blocking thread in a render place of its own, within the response
/// deadline.
async fn answer_view(
    view: View,
    req: &Request<Incoming>,
    peer: SocketAddr,
    sh: &Arc<Shared>,
    now: Instant,
) -> Response<Body> {
    let query = req.uri().query().unwrap_or("").to_string();
    let ready = match view {
        View::Page | View::Json => match Query::parse(&query) {
            Ok(q) => Some(q),
            Err(why) => {
                sh.refuse(Refusal::BadRequest, peer, "bad status page query");
                return refusal(Refusal::BadRequest, &why);
            }
        },
        _ => None,
    };
    if let Err(e) = lock(&sh.renders).take(peer.ip()) {
        sh.refuse(e, peer, "a render of its source is under way");
        return refusal(e, "A render of this source is under way");
    }
    let source = RenderPermit(Arc::clone(sh), peer.ip());
    let ty = if view == View::Page {
        super::views::PAGE_TYPE
    } else {
        super::views::JSON_TYPE
    };
    if let Some(q) = &ready
        && let Some(body) = sh.ready.hit(view, q)
    {
        drop(source);
        return view_answer(ty, body);
    }
    let place = match render_place(sh, peer, now + sh.settings.limits.response_timeout).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    let sh2 = Arc::clone(sh);
    let answer = tokio::task::spawn_blocking(move || {
        let _permit = (source, place);
        if let Some(q) = ready {
            return Ok((ty, sh2.ready.make(view, &q)));
        }
        let wall = crate::time::unix_ms(sh2.clock.wall());
        super::views::answer(
            view,
            &query,
            &sh2.cache.load(),
            &sh2.settings.path,
            (wall, now),
            sh2.events.as_deref(),
        )
        .map(|(ty, body)| (ty, Bytes::from(body)))
    })
    .await;
    match answer {
        Ok(Ok((ty, body))) => view_answer(ty, body),
        Ok(Err(why)) => {
            sh.refuse(Refusal::BadRequest, peer, "bad status page query");
            refusal(Refusal::BadRequest, &why)
        }
        Err(_) => plain(StatusCode::INTERNAL_SERVER_ERROR, "the report failed"),
    }
}

/// Makes the views of the queries being read again as each snapshot
/// settles, in a render place, until the endpoint stops.
async fn warm_views(sh: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    let mut last = None;
    loop {
        tokio::select! {
            _ = tokio::time::sleep(super::views::ready::POLL) => {}
            _ = stop.changed() => return,
        }
        if !sh.ready.due(&mut last) {
            continue;
        }
        let place = tokio::select! {
            p = Arc::clone(&sh.render_places).acquire_owned() => p,
            _ = stop.changed() => return,
        };
        let ready = Arc::clone(&sh.ready);
        let _ = tokio::task::spawn_blocking(move || {
            let _place = place;
            ready.warm()
        })
        .await;
    }
}

/// The I/O of [`decide`]'s answer: credentials checked, a scrape rendered.
async fn route(
    req: Request<Incoming>,
    peer: SocketAddr,
    mark: &Mark,
    sh: &Arc<Shared>,
    now: Instant,
) -> Response<Body> {
    let decision = {
        let prepaid = mark.prepaid.swap(false, Ordering::Relaxed);
        let mut gate = lock(&sh.gate);
        decide(
            &head_of(&req),
            peer.ip(),
            now,
            &mut gate,
            prepaid,
            &sh.settings,
        )
    };
    if decision.needs_credentials() {
        match sh
            .auth
            .check(req.headers().get(header::AUTHORIZATION), peer.ip())
            .await
        {
            Verdict::Accepted => {}
            Verdict::Refused => {
                sh.refuse(Refusal::Auth, peer, "no valid basic-auth credentials");
                return refusal(Refusal::Auth, "Unauthorized");
            }
            Verdict::Busy => {
                sh.refuse(Refusal::Busy, peer, "the bcrypt queue is full");
                return refusal(Refusal::Busy, "Too many credentials to check at once");
            }
        }
    }
    let plan = match decision {
        Decision::Refuse(r, text) => {
            sh.refuse(r, peer, "a request on a kept-alive connection");
            return refusal(r, &text);
        }
        Decision::Method => {
            sh.refuse(Refusal::BadRequest, peer, "method not GET or HEAD");
            let mut r = plain(StatusCode::METHOD_NOT_ALLOWED, "Only GET and HEAD");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            return r;
        }
        Decision::View(view) => return answer_view(view, &req, peer, sh, now).await,
        Decision::NotFound => return plain(StatusCode::NOT_FOUND, "Not found"),
        Decision::Bad(why) => {
            sh.refuse(Refusal::BadRequest, peer, &why);
            return refusal(Refusal::BadRequest, &why);
        }
        Decision::Scrape(plan) => plan,
    };
    mark.busy(plan.budget.deadline() + ANSWER_GRACE);
    let mut r = Response::new(Body::empty());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(plan.format.content_type()),
    );
    if plan.gzip {
        r.headers_mut()
            .insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    r.headers_mut().insert(
        header::VARY,
        HeaderValue::from_static("Accept, Accept-Encoding"),
    );
    if plan.head_only {
        return r;
    }
    if let Err(e) = lock(&sh.renders).take(peer.ip()) {
        sh.refuse(e, peer, "a scrape of its source is under way");
        return refusal(e, "A scrape of this source is under way");
    }
    let source = RenderPermit(Arc::clone(sh), peer.ip());
    // Its turn among the sources waiting, within its budget.
    let place = match render_place(sh, peer, plan.budget.deadline()).await {
        Ok(p) => p,
        Err(r) => return r,
    };
    HttpCounters::bump(&sh.counters.scrapes);
    let (body, mut sink) = super::stream::channel(
        tokio::runtime::Handle::current(),
        plan.budget,
        sh.clock.clone(),
    );
    // Held while it renders, not while a reader that is behind keeps it
    // waiting.
    sink.hold_place(Arc::clone(&sh.render_places), place);
    let sh2 = Arc::clone(sh);
    tokio::task::spawn_blocking(move || {
        let snap = sh2.cache.load();
        let (now, wall) = sh2.clock.both();
        let taken_unix = snap
            .published_wall(wall, now)
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map(|d| d.as_secs_f64());
        let scrape = Scrape {
            snap: &snap,
            endpoint: &sh2.endpoint,
            http: &sh2.counters,
            format: plan.format,
            collectors: plan.collectors,
            taken_unix,
            events: sh2.events.as_ref().map(|l| l.counts()),
            now,
        };
        let result = if plan.gzip {
            let mut z = gzip_writer(&mut sink);
            render(&scrape, &mut z).and_then(|()| z.finish().map(|_| ()))
        } else {
            render(&scrape, &mut sink)
        };
        let result = result.and_then(|()| sink.send_rest());
        // The render's place is free before the body can end, so that the
        // source's next scrape never finds it taken.
        sink.release_place();
        drop(source);
        match result {
            Ok(()) => sink.complete(),
            Err(e) if e.kind() == io::ErrorKind::TimedOut => {
                sh2.refuse(Refusal::Timeout, peer, &e.to_string());
            }
            Err(e) => debug!(%peer, error = %e, "metrics: a scrape ended early"),
        }
    });
    *r.body_mut() = body;
    r
}

/// A source's scrape in [`Renders`], given back when dropped (a render
/// that ends early or panics gives it back too).
struct RenderPermit(Arc<Shared>, IpAddr);

impl Drop for RenderPermit {
    fn drop(&mut self) {
        lock(&self.0.renders).give_back(self.1);
    }
}

#[cfg(test)]
mod tests;
