//! The one tokio runtime the network edges run on: the AgentX driver
//! ([`crate::agentx::session`]) and the built-in SNMP responder
//! ([`crate::snmp`]). The fabric's MAD I/O stays on threads of its own
//! (umad descriptors, and umad2sim's, cannot go into epoll).
//!
//! Two worker threads, created on first use and kept for the life of the
//! process. MIB handlers answer synchronously (a SET commit may wait on the
//! fabric up to its deadline), so the edges call them inside
//! [`tokio::task::block_in_place`]: the other edge keeps being served.

use std::io;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};

/// Worker threads of the edge runtime.
const WORKERS: usize = 2;

static RUNTIME: OnceLock<Runtime> = OnceLock::new();

/// The edge runtime's handle, built on first use; an error when the OS
/// cannot create its threads or its event loop.
pub fn handle() -> io::Result<&'static Handle> {
    if let Some(rt) = RUNTIME.get() {
        return Ok(rt.handle());
    }
    let rt = Builder::new_multi_thread()
        .worker_threads(WORKERS)
        .thread_name("io-edge")
        .enable_io()
        .enable_time()
        .build()?;
    // Another thread may have won the race; then this one is dropped unused.
    let _ = RUNTIME.set(rt);
    RUNTIME
        .get()
        .map(Runtime::handle)
        .ok_or_else(|| io::Error::other("the I/O runtime is not available"))
}
