//! A response body streamed as it is rendered: a render on a blocking
//! thread fills 64 KiB chunks (gzipped when the client accepts it) and
//! hands each to the body within its [`Budget`]. A chunk the client does
//! not take in time ends the render at once: nothing blocks past the
//! budget, and the thread, the snapshot and the render's permit are freed.
//! A body whose render ended early ends in an error, so hyper aborts the
//! response instead of closing it as if it were whole. A render holds its
//! render place ([`ChunkSink::hold_place`]) only while it renders: while
//! a chunk waits for a reader that is behind, the place is another
//! render's, and the render waits its turn for it again after.

use std::io::{self, Write};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::Frame;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::edge::render::Budget;
use crate::time::Clock;

/// Size of a body chunk.
pub const CHUNK: usize = 64 * 1024;

/// A response body: a whole one, or chunks as a render sends them. It
/// holds `on_end` until hyper drops it (the answer was sent or abandoned).
pub struct Body {
    inner: Inner,
    on_end: Option<Box<dyn Send + Sync>>,
}

enum Inner {
    Full(Option<Bytes>),
    Stream {
        rx: mpsc::Receiver<Bytes>,
        complete: Arc<AtomicBool>,
    },
}

impl Body {
    pub fn full(b: Bytes) -> Body {
        Body {
            inner: Inner::Full(Some(b)),
            on_end: None,
        }
    }

    pub fn empty() -> Body {
        Body {
            inner: Inner::Full(None),
            on_end: None,
        }
    }

    /// Keeps `guard` until the body is dropped.
    pub fn hold(&mut self, guard: Box<dyn Send + Sync>) {
        self.on_end = Some(guard);
    }
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match &mut self.get_mut().inner {
            Inner::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Inner::Stream { rx, complete } => rx.poll_recv(cx).map(|o| match o {
                Some(b) => Some(Ok(Frame::data(b))),
                None if complete.load(Ordering::Acquire) => None,
                None => Some(Err(io::Error::other("the render ended early"))),
            }),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self.inner, Inner::Full(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match &self.inner {
            Inner::Full(Some(b)) => hyper::body::SizeHint::with_exact(b.len() as u64),
            Inner::Full(None) => hyper::body::SizeHint::with_exact(0),
            Inner::Stream { .. } => hyper::body::SizeHint::default(),
        }
    }
}

/// The render's end of a streamed body.
pub struct ChunkSink {
    buf: Vec<u8>,
    tx: mpsc::Sender<Bytes>,
    complete: Arc<AtomicBool>,
    rt: tokio::runtime::Handle,
    budget: Budget,
    sent: u64,
    place: Option<Place>,
    /// Where the budget's deadlines are read against.
    clock: Clock,
}

/// A streamed body and the sink that fills it, from a render on a blocking
/// thread of `rt`'s runtime, its budget read on `clock`.
pub fn channel(rt: tokio::runtime::Handle, budget: Budget, clock: Clock) -> (Body, ChunkSink) {
    let (tx, rx) = mpsc::channel(2);
    let complete = Arc::new(AtomicBool::new(false));
    let body = Body {
        inner: Inner::Stream {
            rx,
            complete: Arc::clone(&complete),
        },
        on_end: None,
    };
    let sink = ChunkSink {
        buf: Vec::with_capacity(CHUNK),
        tx,
        complete,
        rt,
        budget,
        sent: 0,
        place: None,
        clock,
    };
    (body, sink)
}

/// A render place: the semaphore it is taken from, and the permit while
/// the render holds it.
struct Place {
    places: Arc<Semaphore>,
    permit: Option<OwnedSemaphorePermit>,
}

impl ChunkSink {
    /// The render holds `permit`, a place of `places`, while it renders.
    pub fn hold_place(&mut self, places: Arc<Semaphore>, permit: OwnedSemaphorePermit) {
        self.place = Some(Place {
            places,
            permit: Some(permit),
        });
    }

    /// The render is done: its place is free.
    pub fn release_place(&mut self) {
        self.place = None;
    }

    fn send(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = Bytes::from(std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK)));
        self.sent += chunk.len() as u64;
        let by = self
            .budget
            .chunk_by(self.sent, chunk.len() as u64, self.clock.now());
        let late = || io::Error::new(io::ErrorKind::TimedOut, "the client did not keep up");
        if self.clock.now() >= by {
            return Err(late());
        }
        let gone = || io::Error::new(io::ErrorKind::BrokenPipe, "the client went away");
        let chunk = match self.tx.try_send(chunk) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Closed(_)) => return Err(gone()),
            Err(TrySendError::Full(chunk)) => chunk,
        };
        // The reader is behind: the place is another render's meanwhile.
        let places = self.place.as_mut().map(|p| {
            p.permit = None;
            Arc::clone(&p.places)
        });
        let sent = self.rt.block_on(tokio::time::timeout(
            by.saturating_duration_since(self.clock.now()),
            self.tx.send(chunk),
        ));
        match sent {
            Ok(Ok(())) => {}
            Ok(Err(_)) => return Err(gone()),
            Err(_) => return Err(late()),
        }
        // Its turn again, in order, within the deadline.
        if let Some(places) = places {
            let again = self.rt.block_on(tokio::time::timeout(
                self.budget
                    .deadline()
                    .saturating_duration_since(self.clock.now()),
                places.acquire_owned(),
            ));
            match (again, self.place.as_mut()) {
                (Ok(Ok(permit)), Some(p)) => p.permit = Some(permit),
                _ => {
                    return Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no render place free again within the deadline",
                    ));
                }
            }
        }
        Ok(())
    }

    /// Sends what is left of the render.
    pub fn send_rest(&mut self) -> io::Result<()> {
        self.send()
    }

    /// The render was sent whole: the body ends whole when the sink is
    /// dropped. Dropped without it, the body ends in an error.
    pub fn complete(self) {
        self.complete.store(true, Ordering::Release);
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
