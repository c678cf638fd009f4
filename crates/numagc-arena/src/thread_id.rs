//! The calling thread's identity in one instruction: the thread pointer
//! (`fs:0` on x86-64 Linux, `tpidr_el0` on aarch64 Linux), which the C
//! library sets per thread and which no two live threads share.
//!
//! Why: `free` must tell whether the calling thread owns a chunk's local
//! heap, and `malloc` must find the calling thread's heap. A thread-local
//! variable does both, but in a shared object (`libnumagc_malloc.so`) every
//! access to one is a call to `__tls_get_addr` (22 instructions, measured
//! with callgrind), about a tenth of what a malloc/free pair cost. The
//! thread pointer is a register read. (mimalloc reads it the same way.)
//!
//! Invariant: the value is non-zero and differs between threads alive at
//! the same time; a thread that exits may see its value reused by a new
//! thread, so anything keyed by it is cleared when the thread exits
//! (`thread_heap.rs` does).

/// The calling thread's identity (see the module doc).
#[inline(always)]
pub(crate) fn current() -> usize {
    #[cfg(all(target_arch = "x86_64", target_os = "linux", not(loom)))]
    {
        let tp: usize;
        // SAFETY: on x86-64 Linux the C library points `fs` at the thread's
        // control block, whose first word is the block's own address (the
        // TLS ABI requires it); reading it has no side effect.
        unsafe {
            core::arch::asm!("mov {}, qword ptr fs:[0]", out(reg) tp,
                options(nostack, readonly, preserves_flags, pure));
        }
        tp
    }
    #[cfg(all(target_arch = "aarch64", target_os = "linux", not(loom)))]
    {
        let tp: usize;
        // SAFETY: reads the thread pointer register, set by the C library
        // for every thread; no side effect.
        unsafe {
            core::arch::asm!("mrs {}, tpidr_el0", out(reg) tp,
                options(nostack, nomem, preserves_flags, pure));
        }
        tp
    }
    #[cfg(any(
        loom,
        not(all(
            any(target_arch = "x86_64", target_arch = "aarch64"),
            target_os = "linux"
        ))
    ))]
    {
        // Elsewhere: the address of a thread-local, unique per live thread.
        thread_local! { static ID: u8 = const { 0 }; }
        ID.with(|b| b as *const u8 as usize)
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn threads_alive_together_have_distinct_nonzero_ids() {
        let me = super::current();
        assert_ne!(me, 0);
        assert_eq!(me, super::current(), "stable within a thread");
        let barrier = std::sync::Barrier::new(4);
        let ids: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let id = super::current();
                        barrier.wait(); // all four alive at once
                        id
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut all = ids.clone();
        all.push(me);
        all.sort();
        all.dedup();
        assert_eq!(all.len(), 5, "{ids:?} and {me}");
    }
}
