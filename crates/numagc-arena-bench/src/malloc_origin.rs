//! Which shared object's `malloc` this process calls: `dladdr` of the
//! address that the dynamic linker bound `malloc` to. With an allocator
//! preloaded it is that allocator's `.so`; without, the C library. Every
//! workload reports it, and `numagc arena-bench` checks it against the
//! allocator it meant to test, so that a preload the dynamic linker
//! ignored (it only warns) cannot pass for a measurement of that allocator.

/// The path of the object that defines the `malloc` this process calls.
pub fn malloc_origin() -> String {
    let f: unsafe extern "C" fn(libc::size_t) -> *mut libc::c_void = libc::malloc;
    // SAFETY: Dl_info is plain data; dladdr fills it or returns 0.
    let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
    // SAFETY: a valid code address and a valid out-pointer.
    let found = unsafe { libc::dladdr(f as *const libc::c_void, &mut info) };
    if found == 0 || info.dli_fname.is_null() {
        return "unknown".into();
    }
    // SAFETY: dli_fname is a NUL-terminated string owned by the dynamic linker.
    let name = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
    let name = name.to_string_lossy().into_owned();
    std::fs::canonicalize(&name)
        .map(|p| p.display().to_string())
        .unwrap_or(name)
}
