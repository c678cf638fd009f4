//! The bounds of a vproc thread's stack, so that deep nesting of forks is
//! an error ([`crate::ErrorKind::StackExhausted`]) instead of a crash.
//!
//! Functional code recurses, and a fork nests a frame of the runtime in the
//! mutator's recursion, so vproc threads get a large stack (setting
//! `vproc-stack`; committed only as it is touched). Every fork checks the
//! room left against a reserve for the code that runs until the next fork
//! (a leaf's computation, a C callback's frames): a sixteenth of the stack,
//! at least [`MIN_RESERVE`]. Code that recurses without forking past the
//! end of the stack hits the guard page below it, where Rust's handler
//! reports the overflow by thread name and aborts: never silent corruption.

/// The least reserve kept below a fork.
pub(crate) const MIN_RESERVE: usize = 64 << 10;

/// The stack of the calling thread: its lowest address and size, when the
/// system says (`pthread_getattr_np`; `None` elsewhere, and the forks are
/// then unchecked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StackBounds {
    pub low: usize,
    pub size: usize,
}

impl StackBounds {
    #[cfg(target_os = "linux")]
    pub fn of_current_thread() -> Option<StackBounds> {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        // SAFETY: `pthread_getattr_np` initialises `attr` for the calling
        // thread when it returns 0; only then is it read and destroyed.
        unsafe {
            if libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()) != 0 {
                return None;
            }
            let mut addr: *mut libc::c_void = std::ptr::null_mut();
            let mut size: libc::size_t = 0;
            let r = libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
            libc::pthread_attr_destroy(attr.as_mut_ptr());
            (r == 0 && !addr.is_null()).then_some(StackBounds {
                low: addr as usize,
                size,
            })
        }
    }

    #[cfg(not(target_os = "linux"))]
    pub fn of_current_thread() -> Option<StackBounds> {
        None
    }

    /// The reserve a fork keeps below it.
    pub fn reserve(self) -> usize {
        (self.size / 16).max(MIN_RESERVE)
    }

    /// Bytes left below the caller's frame (0 when unknown bounds are
    /// not checked: see [`StackBounds::exhausted`]).
    #[inline]
    pub fn left(self) -> usize {
        let marker = 0u8;
        let here = std::hint::black_box(&marker) as *const u8 as usize;
        here.saturating_sub(self.low)
    }

    /// Whether a fork here would eat into the reserve (never, for unknown
    /// bounds).
    #[inline]
    pub fn exhausted(self) -> bool {
        self.size != 0 && self.left() < self.reserve()
    }
}
