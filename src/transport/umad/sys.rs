//! Every libc call of the umad transport, each behind a safe function: the
//! device and sysfs files as an owned [`Fd`], directories behind a guard
//! that closes the `DIR*`. Only calls that umad2sim interposes are used (`open`,
//! `read`, `write`, `ioctl`, `poll`, `close`, `opendir`), which is why
//! nothing goes through `std::fs` (std opens with `open64`).

use std::ffi::{CStr, c_int, c_ulong, c_void};
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};

/// umad2sim's `read` returns `-EWOULDBLOCK` itself when nothing is queued.
const SIM_EWOULDBLOCK: isize = -(libc::EWOULDBLOCK as isize);

/// An open file descriptor, closed on drop. Like `OwnedFd`, except that a
/// failing `close` is ignored: umad2sim's `close` of its fake descriptors
/// (numbered from 1024) reports `EBADF`, which `OwnedFd` treats as an I/O
/// safety violation and aborts on.
#[derive(Debug)]
pub struct Fd(RawFd);

impl AsFd for Fd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        // SAFETY: `self.0` is open for as long as `self` lives (closed only
        // in drop), which bounds the borrow.
        unsafe { BorrowedFd::borrow_raw(self.0) }
    }
}

impl Drop for Fd {
    fn drop(&mut self) {
        // SAFETY: this Fd is the only owner of the descriptor, which nothing
        // uses after drop; it is closed once.
        unsafe { libc::close(self.0) };
    }
}

/// `open(path, flags | O_CLOEXEC)`.
pub fn open(path: &CStr, flags: c_int) -> io::Result<Fd> {
    // SAFETY: `path` is a valid NUL-terminated string for the duration of
    // the call. libc `open` (not open64) so that umad2sim can interpose it.
    let fd = unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(Fd(fd))
}

/// `read` into `buf`. `Ok(0)` at end of file; `WouldBlock` when nothing is
/// queued (also umad2sim's way of saying so).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    // SAFETY: `fd` is open for the borrow; `buf` is a live, writable buffer
    // of `buf.len()` bytes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast::<c_void>(), buf.len()) };
    if n == SIM_EWOULDBLOCK {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok((n as usize).min(buf.len()))
}

/// `write` of `buf`; returns the bytes written.
pub fn write(fd: BorrowedFd<'_>, buf: &[u8]) -> io::Result<usize> {
    // SAFETY: `fd` is open for the borrow; `buf` is a live buffer of
    // `buf.len()` bytes that write() only reads.
    let n = unsafe { libc::write(fd.as_raw_fd(), buf.as_ptr().cast::<c_void>(), buf.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(n as usize)
}

/// `poll` one descriptor for input: `Ok(None)` on timeout, else its
/// `revents`.
pub fn poll_in(fd: BorrowedFd<'_>, timeout_ms: c_int) -> io::Result<Option<i16>> {
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd that lives across the call, count 1.
    let r = unsafe { libc::poll(&mut pfd, 1, timeout_ms) };
    match r {
        r if r < 0 => Err(io::Error::last_os_error()),
        0 => Ok(None),
        _ => Ok(Some(pfd.revents)),
    }
}

/// An `ioctl` whose argument is the buffer `arg`, read and written in
/// place. The caller passes a request whose encoded size is `arg.len()`.
pub fn ioctl(fd: BorrowedFd<'_>, request: c_ulong, arg: &mut [u8]) -> io::Result<()> {
    debug_assert_eq!(
        (request >> 16) as usize & 0x3FFF,
        arg.len(),
        "ioctl size does not match its argument"
    );
    // SAFETY: the kernel (or umad2sim) reads and writes at most the size
    // encoded in `request`, which the caller matched to `arg.len()`; `arg`
    // is live and writable for the call.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), request, arg.as_mut_ptr().cast::<c_void>()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An open directory (`opendir`), closed on drop.
pub struct Dir(*mut libc::DIR);

impl Dir {
    pub fn open(path: &CStr) -> io::Result<Dir> {
        // SAFETY: `path` is a valid NUL-terminated string for the call.
        let dir = unsafe { libc::opendir(path.as_ptr()) };
        if dir.is_null() {
            return Err(io::Error::last_os_error());
        }
        Ok(Dir(dir))
    }
}

impl Iterator for Dir {
    type Item = String;

    /// The next entry's name (`.` and `..` included).
    fn next(&mut self) -> Option<String> {
        // SAFETY: `self.0` is a valid DIR* from opendir, closed only in drop.
        let ent = unsafe { libc::readdir(self.0) };
        if ent.is_null() {
            return None;
        }
        // SAFETY: readdir returned a valid dirent whose d_name is
        // NUL-terminated; it stays valid until the next readdir/closedir on
        // this DIR*, and is copied out before either.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        Some(name.to_string_lossy().into_owned())
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        // SAFETY: `self.0` came from opendir and is closed once, here.
        unsafe { libc::closedir(self.0) };
    }
}
