//! The one tokio runtime the network edges run on: the AgentX driver
//! ([`crate::agentx::session`]) and the built-in SNMP responder
//! ([`crate::snmp`]). The fabric's MAD I/O stays on threads of its own
//! (umad descriptors, and umad2sim's, cannot go into epoll).
//!
//! One worker thread, created on first use and kept for the life of the
//! process. MIB handlers answer synchronously; the edges call them through
//! [`OnRuntime`], which hands the runtime to another thread while a SET
//! commit (that may wait on the fabric up to its deadline) runs: the other
//! edge keeps being served.

use std::io;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::block_in_place;

use crate::mib::{MibHandler, Oid, SetError, SetTxn, Value, VarBind};

/// Worker threads of the edge runtime: one is enough for two light edges and
/// saves the wake-up of a second worker on every request; a SET commit
/// (`block_in_place`) hands the edges to another thread while it waits.
const WORKERS: usize = 1;

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

/// A MIB handler for use on the runtime: reads go straight through (they
/// answer from memory), while a SET's commit or undo, which may wait on the
/// fabric up to its deadline, runs in [`tokio::task::block_in_place`] so
/// the runtime's other tasks are not held meanwhile. Only on this runtime.
pub struct OnRuntime<'a>(pub &'a dyn MibHandler);

impl MibHandler for OnRuntime<'_> {
    fn get(&self, oid: &Oid) -> Value {
        self.0.get(oid)
    }
    fn get_many(&self, oids: &[Oid]) -> Vec<Value> {
        self.0.get_many(oids)
    }
    fn get_next(&self, start: &Oid, include: bool, end: Option<&Oid>) -> Option<VarBind> {
        self.0.get_next(start, include, end)
    }
    fn test_set(&self, txn: SetTxn, varbinds: &[VarBind]) -> Result<(), SetError> {
        self.0.test_set(txn, varbinds)
    }
    fn commit_set(&self, txn: SetTxn) -> Result<(), SetError> {
        block_in_place(|| self.0.commit_set(txn))
    }
    fn undo_set(&self, txn: SetTxn) -> Result<(), SetError> {
        block_in_place(|| self.0.undo_set(txn))
    }
    fn cleanup_set(&self, txn: SetTxn) {
        self.0.cleanup_set(txn)
    }
    fn session_closed(&self, session_id: u32) {
        self.0.session_closed(session_id)
    }
}
