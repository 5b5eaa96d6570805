//! The MAD path's errors as values: what a transport reports ([`Fault`]),
//! what a request ends with when the transport let it down
//! ([`TransportError`], carried by the window, the engine and the write
//! path), and why a umad port could not be opened ([`OpenError`]). Each is
//! made into text only where a line is printed (`Display`).

use std::fmt;
use std::io;

use crate::pm::mad::MadError;

/// A failed system call as the MAD path carries it: its errno when it has
/// one (shown as the operating system words it), else its kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoFault {
    Os(i32),
    Kind(io::ErrorKind),
}

impl IoFault {
    pub fn kind(self) -> io::ErrorKind {
        match self {
            IoFault::Os(n) => io::Error::from_raw_os_error(n).kind(),
            IoFault::Kind(k) => k,
        }
    }
}

impl From<&io::Error> for IoFault {
    fn from(e: &io::Error) -> Self {
        e.raw_os_error()
            .map_or(IoFault::Kind(e.kind()), IoFault::Os)
    }
}

impl From<io::Error> for IoFault {
    fn from(e: io::Error) -> Self {
        IoFault::from(&e)
    }
}

impl fmt::Display for IoFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            IoFault::Os(n) => io::Error::from_raw_os_error(n).fmt(f),
            IoFault::Kind(k) => k.fmt(f),
        }
    }
}

/// Why a [`super::MadTransport`] refused a MAD or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The transport has no agent for the MAD's management class: only
    /// this MAD is refused.
    NoAgent { class: u8 },
    /// A P_Key index other than 0: only this MAD is refused.
    PkeyIndex(u16),
    /// The backend has no MAD transport at all (DOCA alone).
    NoMadTransport,
    /// The device failed; everything is refused until it is reopened.
    Down(Down),
    /// A reopen is still running.
    ReopenInProgress,
    /// A reopen did not finish within its bound.
    ReopenTimedOut { ms: u64 },
    /// A reopen could not open the port.
    Reopen(Box<OpenError>),
    /// A system call failed.
    Io(IoFault),
}

impl Fault {
    /// Whether only the MAD itself was refused (the transport works): a
    /// transport that refuses every MAD for such a reason has not failed.
    pub fn refuses_only_this_mad(&self) -> bool {
        match self {
            Fault::NoAgent { .. } | Fault::PkeyIndex(_) => true,
            Fault::Io(e) => e.kind() == io::ErrorKind::InvalidInput,
            _ => false,
        }
    }
}

impl From<io::Error> for Fault {
    fn from(e: io::Error) -> Self {
        Fault::Io(e.into())
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Fault::NoAgent { class } => {
                write!(f, "no umad agent for management class 0x{class:02x}")
            }
            Fault::PkeyIndex(_) => {
                f.write_str("P_Key index other than 0 is not supported by this transport")
            }
            Fault::NoMadTransport => {
                f.write_str("the doca backend has no MAD transport (PM MADs need backend umad)")
            }
            Fault::Down(d) => d.fmt(f),
            Fault::ReopenInProgress => f.write_str("umad reopen still in progress"),
            Fault::ReopenTimedOut { ms } => {
                write!(f, "umad reopen did not finish within {ms} ms")
            }
            Fault::Reopen(e) => e.fmt(f),
            Fault::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for Fault {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Fault::Reopen(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

/// Why a umad device failed as a whole.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Down {
    /// It failed earlier; sends wait for a reopen.
    AwaitingReopen,
    /// One `write()` has not returned for `ms` (the bound: `bound_ms`).
    WriteBlocked { ms: u64, bound_ms: u64 },
    /// The writer's queue is full (`queued` MADs; the one refused was to
    /// `lid`).
    QueueFull { queued: usize, lid: u16 },
    /// `poll()` failed.
    Poll(IoFault),
    /// `poll()` reported an error on the device (its `revents`).
    PollEvents(i16),
    /// `read()` failed.
    Read(IoFault),
    /// `write()` failed for a reason other than the MAD itself.
    Write(IoFault),
    /// The writer thread is not running.
    WriterStopped,
    /// The reader thread is not running.
    ReaderStopped,
}

impl fmt::Display for Down {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Down::AwaitingReopen => f.write_str("umad device failed; waiting for a reopen"),
            Down::WriteBlocked { ms, bound_ms } => write!(
                f,
                "umad write blocked for {ms} ms (bound {bound_ms} ms): the MAD transport counts as failed"
            ),
            Down::QueueFull { queued, lid } => {
                write!(
                    f,
                    "umad writer stalled: {queued} MADs waiting (to LID {lid})"
                )
            }
            Down::Poll(e) => write!(f, "umad poll: {e}"),
            Down::PollEvents(r) => write!(f, "umad device error (poll revents 0x{r:x})"),
            Down::Read(e) => write!(f, "umad read: {e}"),
            Down::Write(e) => write!(f, "umad write: {e}"),
            Down::WriterStopped => f.write_str("umad writer thread has stopped"),
            Down::ReaderStopped => f.write_str("umad reader thread has stopped"),
        }
    }
}

/// How a MAD request ended when the transport let it down: what the MAD
/// window, the engine's outcomes and the write path carry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TransportError {
    /// The transport refused the send to `lid`.
    Send { lid: u16, fault: Fault },
    /// Waiting for completions failed: every request outstanding ends.
    Recv(Fault),
    /// The request could not be made (no address for it).
    NoAddress,
    /// A completion that is no GetResp (its method).
    NotAResponse { method: u8 },
    /// A completion that is no PM MAD.
    BadReply(MadError),
}

impl TransportError {
    /// The transport's own report, when it made one.
    pub fn fault(&self) -> Option<&Fault> {
        match self {
            TransportError::Send { fault, .. } | TransportError::Recv(fault) => Some(fault),
            _ => None,
        }
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TransportError::Send { lid, fault } => write!(f, "send to LID {lid}: {fault}"),
            TransportError::Recv(fault) => write!(f, "receive: {fault}"),
            TransportError::NoAddress => f.write_str("the request has no address"),
            TransportError::NotAResponse { method } => {
                write!(f, "unexpected method 0x{method:02x} in reply")
            }
            TransportError::BadReply(e) => write!(f, "bad reply: {e:?}"),
        }
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.fault().map(|e| e as _)
    }
}

/// Why a umad port could not be opened (or opened again).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OpenError {
    /// `timeout_ms` 0: the kernel would drop every reply.
    ZeroTimeout,
    /// A path with a NUL byte.
    NulInPath(String),
    /// A sysfs file could not be read.
    Read { path: String, error: IoFault },
    /// A sysfs directory could not be listed.
    List { path: String, error: IoFault },
    /// No umad support: the ABI version file cannot be read.
    NoUmad(Box<OpenError>),
    /// The ABI version file holds something else.
    AbiText { path: String, text: String },
    /// The kernel's umad ABI is older than the one spoken here.
    AbiTooOld {
        path: String,
        version: u32,
        needed: u32,
    },
    /// sysfs lists no InfiniBand port.
    NoPorts { under: String },
    /// No port matches the configuration (`wanted`: what was asked).
    NoSuchPort { wanted: String, known: Vec<String> },
    /// Every matching port's link is down (each as `ca/port state`).
    LinkDown { wanted: String, states: Vec<String> },
    /// No umad device belongs to the port.
    NoDevice {
        ca: String,
        port: u8,
        under: &'static str,
    },
    /// The device file could not be opened.
    OpenDevice { path: String, error: IoFault },
    /// An agent could not be registered (`what`: its class).
    Register {
        path: String,
        what: &'static str,
        error: IoFault,
    },
    /// A thread (`what`) could not be started.
    Spawn { what: &'static str, error: IoFault },
    /// Every one of the port's `max` handles is in use.
    NoFreeHandle { device: String, max: usize },
}

impl fmt::Display for OpenError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OpenError::ZeroTimeout => f.write_str(
                "umad timeout_ms must be > 0 (the kernel drops replies to MADs sent without a timeout)",
            ),
            OpenError::NulInPath(p) => write!(f, "path contains NUL: {p:?}"),
            OpenError::Read { path, error } => write!(f, "cannot read {path}: {error}"),
            OpenError::List { path, error } => write!(f, "cannot list {path}: {error}"),
            OpenError::NoUmad(e) => write!(
                f,
                "no InfiniBand umad support ({e}); is ib_umad loaded, or LD_PRELOAD=libumad2sim.so set?"
            ),
            OpenError::AbiText { path, text } => write!(f, "{path}: unexpected content {text:?}"),
            OpenError::AbiTooOld {
                path,
                version,
                needed,
            } => write!(f, "{path}: umad ABI {version} is older than {needed}"),
            OpenError::NoPorts { under } => write!(f, "no InfiniBand ports under {under}"),
            OpenError::NoSuchPort { wanted, known } => {
                write!(f, "no {wanted} (known ports: {})", known.join(", "))
            }
            OpenError::LinkDown { wanted, states } => {
                write!(f, "no usable port on {wanted}: link down ({})", states.join(", "))
            }
            OpenError::NoDevice { ca, port, under } => {
                write!(f, "no umad device for {ca}/{port} under {under}")
            }
            OpenError::OpenDevice { path, error } => {
                write!(f, "cannot open {path}: {error}")?;
                if error.kind() == io::ErrorKind::PermissionDenied {
                    f.write_str(" (needs root or read/write access to the umad device)")?;
                }
                Ok(())
            }
            OpenError::Register { path, what, error } => {
                write!(f, "{path}: cannot register a {what} agent: {error}")
            }
            OpenError::Spawn { what, error } => write!(f, "cannot start the {what} thread: {error}"),
            OpenError::NoFreeHandle { device, max } => {
                write!(f, "{device}: all {max} umad handles are in use")
            }
        }
    }
}

impl std::error::Error for OpenError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OpenError::NoUmad(e) => Some(e.as_ref()),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_faults_read_as_the_system_words_them() {
        let e = io::Error::from_raw_os_error(libc::EPIPE);
        assert_eq!(IoFault::from(&e).to_string(), e.to_string());
        assert_eq!(IoFault::from(&e).kind(), io::ErrorKind::BrokenPipe);
        let other = IoFault::from(io::Error::other("x"));
        assert_eq!(other, IoFault::Kind(io::ErrorKind::Other));
    }

    #[test]
    fn only_a_refused_mad_leaves_the_transport_working() {
        let only_mad = [
            Fault::NoAgent { class: 0x81 },
            Fault::PkeyIndex(3),
            Fault::Io(IoFault::Os(libc::EINVAL)),
        ];
        assert!(only_mad.iter().all(Fault::refuses_only_this_mad));
        let whole = [
            Fault::NoMadTransport,
            Fault::Down(Down::AwaitingReopen),
            Fault::Down(Down::Write(IoFault::Os(libc::EIO))),
            Fault::Io(IoFault::Kind(io::ErrorKind::Other)),
            Fault::ReopenInProgress,
        ];
        assert!(!whole.iter().any(Fault::refuses_only_this_mad));
    }

    #[test]
    fn messages_name_the_step_and_the_cause() {
        let e = TransportError::Send {
            lid: 7,
            fault: Fault::Down(Down::WriteBlocked {
                ms: 260,
                bound_ms: 250,
            }),
        };
        assert_eq!(
            e.to_string(),
            "send to LID 7: umad write blocked for 260 ms (bound 250 ms): the MAD transport counts as failed"
        );
        let r = TransportError::Recv(Fault::Down(Down::Read(IoFault::Os(libc::ENODEV))));
        assert_eq!(
            r.to_string(),
            format!(
                "receive: umad read: {}",
                io::Error::from_raw_os_error(libc::ENODEV)
            )
        );
        assert!(std::error::Error::source(&r).is_some());
        assert!(std::error::Error::source(&TransportError::NoAddress).is_none());
        let denied = OpenError::OpenDevice {
            path: "/dev/infiniband/umad0".into(),
            error: IoFault::Os(libc::EACCES),
        };
        assert!(
            denied
                .to_string()
                .ends_with("(needs root or read/write access to the umad device)"),
            "{denied}"
        );
        let nested = OpenError::NoUmad(Box::new(OpenError::Read {
            path: "/sys/class/infiniband_mad/abi_version".into(),
            error: IoFault::Os(libc::ENOENT),
        }));
        assert!(nested.to_string().starts_with(
            "no InfiniBand umad support (cannot read /sys/class/infiniband_mad/abi_version: "
        ));
    }
}
