//! The tokio runtime of the built-in SNMP responder ([`crate::snmp`]), the
//! network edge that waits on several things at once (its socket, its
//! rate limits' timers and shutdown). The AgentX session has a thread of its own with a blocking
//! socket ([`crate::agentx::session`]), and the fabric's MAD I/O threads of
//! their own (umad descriptors, and umad2sim's, cannot go into epoll).
//!
//! Two worker threads while a responder runs ([`EdgeRuntime`]). MIB handlers
//! answer synchronously; the edges call them through [`OnRuntime`], which
//! moves a SET commit (that may wait on the fabric up to its deadline) off
//! the worker: the runtime's other tasks keep being served.

use std::io;
use std::sync::{Arc, Mutex, Weak};

use tokio::runtime::{Builder, Handle, Runtime};
use tokio::task::block_in_place;

use crate::mib::{MibHandler, Oid, SetError, SetTxn, Value, VarBind};

/// Worker threads of the edge runtime.
const WORKERS: usize = 2;

/// The runtime while anyone holds a share of it.
static CURRENT: Mutex<Weak<Runtime>> = Mutex::new(Weak::new());

/// A share of the edge runtime. The runtime is built when the first share
/// is taken and shut down, its threads joined, when the last one is
/// dropped: an agent that stops leaves no thread behind. Drop shares from
/// outside the runtime (a runtime cannot be shut down from its own tasks).
#[derive(Clone)]
pub struct EdgeRuntime(Arc<Runtime>);

impl EdgeRuntime {
    /// A share of the running edge runtime, or of a new one; an error when
    /// the OS cannot create its threads or its event loop.
    pub fn acquire() -> io::Result<EdgeRuntime> {
        let mut current = CURRENT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(rt) = current.upgrade() {
            return Ok(EdgeRuntime(rt));
        }
        let rt = Arc::new(
            Builder::new_multi_thread()
                .worker_threads(WORKERS)
                .thread_name("io-edge")
                .enable_io()
                .enable_time()
                .build()?,
        );
        *current = Arc::downgrade(&rt);
        Ok(EdgeRuntime(rt))
    }

    pub fn handle(&self) -> &Handle {
        self.0.handle()
    }
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
