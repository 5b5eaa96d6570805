//! The process heap, on glibc: the agent's memory at fabric scale is
//! mostly per-port records that each sweep replaces (copy on write against
//! the published snapshot), so freed memory is plentiful right after a
//! sweep and glibc keeps it unless asked to give it back.
//!
//! - One malloc arena ([`configure`]): the agent has a handful of
//!   threads that allocate little besides the sweeper, and each extra arena
//!   keeps free memory of its own (on scripts/bench-scale's 173,056 ports,
//!   two arenas held about 150 bytes more per port than one).
//! - No fast bins ([`configure`]): a sweep frees and takes small blocks by
//!   the hundred thousand (MAD buffers, record copies), and a freed block
//!   in a fast bin is not merged with its free neighbours until the next
//!   consolidation, so the blocks a sweep keeps land higher in the heap and
//!   leave partly used pages below that no trim gives back. Without them
//!   (the per-thread cache still serves the hot sizes), on
//!   `scripts/bench-memory`'s 48,960 ports the agent's resident memory
//!   after a sweep was 1.8 MB (about 38 bytes a port) lower, its sweeps
//!   as fast.
//! - After each sweep, free pages go back to the kernel ([`trim`]).
//!
//! Elsewhere (musl, other systems) these are no-ops.

/// Set the allocator up as the agent uses it: at most `arenas` malloc
/// arenas, no fast bins. Call before threads start.
pub fn configure(arenas: i32) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets allocator parameters: M_ARENA_MAX takes
    // any positive count, M_MXFAST any size up to its maximum (0: no fast
    // bins). It is called from the main thread before the agent's threads
    // start.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, arenas.max(1));
        libc::mallopt(libc::M_MXFAST, 0);
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = arenas;
}

/// Bytes the heap holds: (in use by allocations, taken from the kernel),
/// or None where the allocator does not say.
pub fn usage() -> Option<(u64, u64)> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: mallinfo2 only reads the allocator's counters (under its
        // locks) and returns them by value.
        let m = unsafe { libc::mallinfo2() };
        Some(((m.uordblks + m.hblkhd) as u64, (m.arena + m.hblkhd) as u64))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    None
}

/// The process's resident memory (VmRSS) in kB, where /proc says it: the
/// log gives it once the fabric is loaded, before any state is kept for
/// it, and after each sweep (scripts/bench-scale measures the agent's share
/// from the two).
pub fn resident_kb() -> Option<u64> {
    status_kb("VmRSS:")
}

/// The most resident memory the process has had so far (VmHWM) in kB.
pub fn peak_kb() -> Option<u64> {
    status_kb("VmHWM:")
}

fn status_kb(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Give the heap's free pages back to the kernel.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes the allocator's locks itself and only
    // releases pages no allocation uses; 0 keeps no padding at the top.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    /// Bytes in freed blocks the fast bins hold.
    fn fast_bin_bytes() -> usize {
        // SAFETY: as in `usage`.
        unsafe { libc::mallinfo2() }.fsmblks
    }

    /// Once configured, small blocks freed beyond the per-thread cache go
    /// where they are merged with their free neighbours, not to fast bins.
    #[test]
    fn configured_the_heap_keeps_no_fast_bins() {
        let churn = || {
            let blocks: Vec<Box<[u8; 40]>> = (0..4096).map(|i| Box::new([i as u8; 40])).collect();
            // Every other one, so the freed blocks have live neighbours.
            let kept: Vec<_> = blocks.into_iter().step_by(2).collect();
            std::hint::black_box(&kept);
        };
        super::configure(1);
        // Blocks an arena held in fast bins before are not this test's.
        let before = fast_bin_bytes();
        churn();
        assert!(
            fast_bin_bytes() <= before,
            "{} bytes in fast bins, {before} before",
            fast_bin_bytes()
        );
    }
}
