//! Status codes, the thread-local last-error message, and the guard that
//! keeps panics from crossing the C boundary.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// What a numagc function returns: `NUMAGC_OK` (0) or the reason it
/// failed. `numagc_last_error()` then gives a message that names what was
/// wrong.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum numagc_status {
    /// Success.
    NUMAGC_OK = 0,
    /// A required pointer argument (runtime, scope, configuration, output,
    /// array, string, callback) was NULL.
    NUMAGC_ERR_NULL_ARGUMENT = 1,
    /// A scope function was called on a thread that is not running that
    /// scope's callback: the scope was kept after its callback returned,
    /// or passed to another thread.
    NUMAGC_ERR_NOT_ON_VPROC = 2,
    /// A frame that is not the innermost open one was left, or a callback
    /// returned 0 with frames still open.
    NUMAGC_ERR_UNBALANCED_FRAME = 3,
    /// No descriptor with this id is registered with the runtime.
    NUMAGC_ERR_UNKNOWN_DESCRIPTOR = 4,
    /// A descriptor was refused (size 0 or over 2^20 words, offset out of
    /// range or listed twice, table full).
    NUMAGC_ERR_INVALID_DESCRIPTOR = 5,
    /// A configuration setting or value was refused; the message names the
    /// setting, the value and the accepted range.
    NUMAGC_ERR_INVALID_CONFIG = 6,
    /// The heap limit (setting `max-heap`) was reached. The allocation is
    /// refused and the heap is left as it was: drop data and retry.
    NUMAGC_ERR_HEAP_LIMIT = 7,
    /// A value is not a valid handle of this callback (its frame was left,
    /// it comes from another callback, or it is 0), or a global-root id is
    /// unknown or belongs to another runtime, or an immediate was expected.
    NUMAGC_ERR_BAD_VALUE = 8,
    /// A call that does not fit the object or the API: a field index out of
    /// range or of the wrong kind, a store into an immutable object, a
    /// vproc that does not exist, waiting for a callback from a callback,
    /// freeing the runtime from its own callback.
    NUMAGC_ERR_MISUSE = 9,
    /// An argument is out of its range: a string that is not valid UTF-8,
    /// an enum or flag field or argument (`numagc_sel.dir`,
    /// `numagc_case.dir`, `is_mutable`) with a value that is none of its
    /// constants, or a count over its limit (`NUMAGC_MAX_ENV`,
    /// `NUMAGC_MAX_CASES`, the object length limit of 2^48 - 1 words). The
    /// message names the argument, its value and what is accepted; nothing
    /// was changed.
    NUMAGC_ERR_INVALID_ARGUMENT = 10,
    /// The Rust side of a job panicked; the vproc carries on.
    NUMAGC_ERR_TASK_PANICKED = 11,
    /// The operating system refused a request (reserving or mapping memory,
    /// starting a thread). A refused allocation leaves the heap as it was.
    NUMAGC_ERR_OS = 12,
    /// A bug in numagc: a panic was caught at the C boundary.
    NUMAGC_ERR_INTERNAL = 13,
    /// A global collection was called off because a vproc did not reach a
    /// safepoint within the `safepoint-timeout` setting; nothing was moved
    /// and the call that needed the collection may be retried.
    NUMAGC_ERR_SAFEPOINT_TIMEOUT = 14,
    /// A fork (`numagc_par2`) found the vproc's stack nearly used up:
    /// nothing was forked. Forks nested that deep need a larger
    /// `vproc-stack` setting.
    NUMAGC_ERR_STACK_EXHAUSTED = 15,
    /// Another PE of the group failed the request: its task or access
    /// failed there, it refused a message, or it was lost (the message
    /// names the PE).
    NUMAGC_ERR_PE = 16,
    /// A value that cannot travel between PEs (an ephemeron or weak
    /// reference, in the arguments of `numagc_call_on`).
    NUMAGC_ERR_NOT_EXPORTABLE = 17,
}

use numagc_status::*;

impl numagc_status {
    const ALL: [numagc_status; 18] = [
        NUMAGC_OK,
        NUMAGC_ERR_NULL_ARGUMENT,
        NUMAGC_ERR_NOT_ON_VPROC,
        NUMAGC_ERR_UNBALANCED_FRAME,
        NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
        NUMAGC_ERR_INVALID_DESCRIPTOR,
        NUMAGC_ERR_INVALID_CONFIG,
        NUMAGC_ERR_HEAP_LIMIT,
        NUMAGC_ERR_BAD_VALUE,
        NUMAGC_ERR_MISUSE,
        NUMAGC_ERR_INVALID_ARGUMENT,
        NUMAGC_ERR_TASK_PANICKED,
        NUMAGC_ERR_OS,
        NUMAGC_ERR_INTERNAL,
        NUMAGC_ERR_SAFEPOINT_TIMEOUT,
        NUMAGC_ERR_STACK_EXHAUSTED,
        NUMAGC_ERR_PE,
        NUMAGC_ERR_NOT_EXPORTABLE,
    ];

    /// The status with this code, if it is one.
    pub(crate) fn from_code(code: c_int) -> Option<numagc_status> {
        Self::ALL.into_iter().find(|s| *s as c_int == code)
    }

    /// The constant's name, NUL-terminated.
    fn name(self) -> &'static CStr {
        match self {
            NUMAGC_OK => c"NUMAGC_OK",
            NUMAGC_ERR_NULL_ARGUMENT => c"NUMAGC_ERR_NULL_ARGUMENT",
            NUMAGC_ERR_NOT_ON_VPROC => c"NUMAGC_ERR_NOT_ON_VPROC",
            NUMAGC_ERR_UNBALANCED_FRAME => c"NUMAGC_ERR_UNBALANCED_FRAME",
            NUMAGC_ERR_UNKNOWN_DESCRIPTOR => c"NUMAGC_ERR_UNKNOWN_DESCRIPTOR",
            NUMAGC_ERR_INVALID_DESCRIPTOR => c"NUMAGC_ERR_INVALID_DESCRIPTOR",
            NUMAGC_ERR_INVALID_CONFIG => c"NUMAGC_ERR_INVALID_CONFIG",
            NUMAGC_ERR_HEAP_LIMIT => c"NUMAGC_ERR_HEAP_LIMIT",
            NUMAGC_ERR_BAD_VALUE => c"NUMAGC_ERR_BAD_VALUE",
            NUMAGC_ERR_MISUSE => c"NUMAGC_ERR_MISUSE",
            NUMAGC_ERR_INVALID_ARGUMENT => c"NUMAGC_ERR_INVALID_ARGUMENT",
            NUMAGC_ERR_TASK_PANICKED => c"NUMAGC_ERR_TASK_PANICKED",
            NUMAGC_ERR_OS => c"NUMAGC_ERR_OS",
            NUMAGC_ERR_INTERNAL => c"NUMAGC_ERR_INTERNAL",
            NUMAGC_ERR_SAFEPOINT_TIMEOUT => c"NUMAGC_ERR_SAFEPOINT_TIMEOUT",
            NUMAGC_ERR_STACK_EXHAUSTED => c"NUMAGC_ERR_STACK_EXHAUSTED",
            NUMAGC_ERR_PE => c"NUMAGC_ERR_PE",
            NUMAGC_ERR_NOT_EXPORTABLE => c"NUMAGC_ERR_NOT_EXPORTABLE",
        }
    }
}

/// A failed call: the code to return and the message to record.
#[derive(Debug)]
pub(crate) struct Fail {
    pub code: c_int,
    pub message: String,
}

impl Fail {
    pub fn new(code: numagc_status, message: impl Into<String>) -> Fail {
        Fail {
            code: code as c_int,
            message: message.into(),
        }
    }

    pub fn null(what: &str) -> Fail {
        Fail::new(
            NUMAGC_ERR_NULL_ARGUMENT,
            format!("argument `{what}` is NULL"),
        )
    }
}

impl From<numagc_rs::Error> for Fail {
    fn from(e: numagc_rs::Error) -> Fail {
        use numagc_rs::ErrorKind as E;
        #[allow(unreachable_patterns)] // kept for variants added later
        let code = match e.kind() {
            E::Config(_) => NUMAGC_ERR_INVALID_CONFIG,
            E::Descriptor(_) => NUMAGC_ERR_INVALID_DESCRIPTOR,
            E::HeapLimit { .. } => NUMAGC_ERR_HEAP_LIMIT,
            E::UnknownDescriptor(_) => NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
            E::Misuse(_) => NUMAGC_ERR_MISUSE,
            E::Os { .. } => NUMAGC_ERR_OS,
            E::TaskPanicked { .. } => NUMAGC_ERR_TASK_PANICKED,
            E::MapFailed { .. } => NUMAGC_ERR_OS,
            E::SafepointTimeout { .. } => NUMAGC_ERR_SAFEPOINT_TIMEOUT,
            E::StackExhausted { .. } => NUMAGC_ERR_STACK_EXHAUSTED,
            E::Pe { .. } => NUMAGC_ERR_PE,
            E::NotExportable(_) => NUMAGC_ERR_NOT_EXPORTABLE,
            _ => NUMAGC_ERR_MISUSE,
        };
        Fail::new(code, e.to_string())
    }
}

impl From<numagc_rs::ConfigError> for Fail {
    fn from(e: numagc_rs::ConfigError) -> Fail {
        Fail::new(NUMAGC_ERR_INVALID_CONFIG, e.to_string())
    }
}

impl From<numagc_rs::DescriptorError> for Fail {
    fn from(e: numagc_rs::DescriptorError) -> Fail {
        Fail::new(NUMAGC_ERR_INVALID_DESCRIPTOR, e.to_string())
    }
}

pub(crate) type Res<T = ()> = Result<T, Fail>;

thread_local! {
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

/// Records `message` as this thread's last error.
pub(crate) fn set_last_error(message: &str) {
    let c = CString::new(message.replace('\0', "\\0")).unwrap_or_default();
    // During thread teardown the thread-local may be gone: then there is
    // no one left to read the message.
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = Some(c));
}

/// This thread's last error message, if any.
pub(crate) fn last_error() -> Option<String> {
    LAST_ERROR
        .try_with(|m| {
            m.borrow()
                .as_ref()
                .map(|c| c.to_string_lossy().into_owned())
        })
        .ok()
        .flatten()
}

/// This thread's last error, taken out (none is left): with
/// [`restore_last_error`], how a body nested in a C call keeps the
/// caller's message without copying it (a fork runs two bodies).
pub(crate) fn take_last_error() -> Option<CString> {
    LAST_ERROR
        .try_with(|m| m.borrow_mut().take())
        .ok()
        .flatten()
}

/// Makes `saved` (from [`take_last_error`]) this thread's last error again.
pub(crate) fn restore_last_error(saved: Option<CString>) {
    let _ = LAST_ERROR.try_with(|m| *m.borrow_mut() = saved);
}

pub(crate) fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".into())
}

/// Runs the body of a C entry point: returns 0, or records the failure and
/// returns its code. A panic is caught here and becomes
/// `NUMAGC_ERR_INTERNAL`.
pub(crate) fn guard(f: impl FnOnce() -> Res) -> c_int {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => NUMAGC_OK as c_int,
        Ok(Err(fail)) => {
            set_last_error(&fail.message);
            fail.code
        }
        Err(p) => {
            set_last_error(&format!(
                "internal error: a panic was caught at the C boundary: {}",
                panic_message(&*p)
            ));
            NUMAGC_ERR_INTERNAL as c_int
        }
    }
}

/// Checks an output pointer and gives it as a reference.
pub(crate) fn out<'a, T>(p: *mut T, what: &str) -> Res<&'a mut T> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-null; the caller promises (module docs, safety contract)
    // that an output pointer is valid and aligned for one `T` and not
    // aliased for the duration of the call.
    Ok(unsafe { &mut *p })
}

/// Reads a NUL-terminated UTF-8 string argument.
pub(crate) fn str_arg<'a>(p: *const c_char, what: &str) -> Res<&'a str> {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-null; the caller promises a NUL-terminated string that
    // lives for the duration of the call.
    let c = unsafe { CStr::from_ptr(p) };
    c.to_str().map_err(|_| {
        Fail::new(
            NUMAGC_ERR_INVALID_ARGUMENT,
            format!("argument `{what}` is not valid UTF-8: {c:?}"),
        )
    })
}

/// Checks a count read from C against the limit of what it counts, before
/// anything is sized by it or a slice is formed: `NUMAGC_ERR_INVALID_ARGUMENT`
/// naming the count and the limit otherwise. `limit_name` says what the limit
/// is ("NUMAGC_MAX_ENV", "the object length limit").
pub(crate) fn count_arg(n: usize, limit: usize, what: &str, limit_name: &str) -> Res {
    if n > limit {
        return Err(Fail::new(
            NUMAGC_ERR_INVALID_ARGUMENT,
            format!("argument `{what}` = {n} exceeds {limit_name} ({limit})"),
        ));
    }
    Ok(())
}

/// The most elements of `T` a slice may have: its size in bytes must not
/// exceed `isize::MAX` (`slice::from_raw_parts`' requirement).
fn max_elements<T>() -> usize {
    isize::MAX as usize / std::mem::size_of::<T>().max(1)
}

/// `NUMAGC_ERR_INVALID_ARGUMENT` when `n` elements of `T` cannot be one
/// slice (more than `isize::MAX` bytes), before the slice is formed.
fn check_slice_len<T>(n: usize, what: &str) -> Res {
    let max = max_elements::<T>();
    if n > max {
        return Err(Fail::new(
            NUMAGC_ERR_INVALID_ARGUMENT,
            format!(
                "argument `{what}` announces {n} elements of {} bytes, more than fit in memory (at most {max})",
                std::mem::size_of::<T>()
            ),
        ));
    }
    Ok(())
}

/// A flag read from C as an integer: 0 is false, 1 is true, anything else
/// `NUMAGC_ERR_INVALID_ARGUMENT` (a Rust `bool` may only hold 0 or 1, so C
/// flags are declared `int` and checked here).
pub(crate) fn bool_arg(v: c_int, what: &str) -> Res<bool> {
    match v {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(Fail::new(
            NUMAGC_ERR_INVALID_ARGUMENT,
            format!("argument `{what}` = {v} is not a flag: 0 (false) or 1 (true)"),
        )),
    }
}

/// Writes `v` to an output pointer without forming a reference to what is
/// there. For outputs whose Rust type has a restricted set of values
/// (enums, `bool`): the C caller's variable may hold anything (it is often
/// uninitialised), which a `&mut` to it would claim is a valid value.
pub(crate) fn write_out<T: Copy>(p: *mut T, v: T, what: &str) -> Res {
    if p.is_null() {
        return Err(Fail::null(what));
    }
    // SAFETY: non-null; the caller promises (safety contract) that an output
    // pointer is valid and aligned for one `T`. `write` neither reads nor
    // drops the old contents, so they need not be a valid `T`.
    unsafe { p.write(v) };
    Ok(())
}

/// `NUMAGC_ERR_NULL_ARGUMENT` for an array argument that is NULL although
/// it announces elements. Checks nothing else and reads nothing: callers
/// that must check `n` before forming the array report NULL first this way.
pub(crate) fn array_not_null<T>(p: *const T, n: usize, what: &str) -> Res {
    if n > 0 && p.is_null() {
        return Err(Fail::new(
            NUMAGC_ERR_NULL_ARGUMENT,
            format!("argument `{what}` is NULL but {n} elements were announced"),
        ));
    }
    Ok(())
}

/// An input array of `n` elements; NULL is allowed when `n` is 0. `n` is
/// checked to fit in memory first (`NUMAGC_ERR_INVALID_ARGUMENT`); callers
/// check it against their own, smaller limits before this.
#[inline]
pub(crate) fn slice_arg<'a, T>(p: *const T, n: usize, what: &str) -> Res<&'a [T]> {
    if n == 0 {
        return Ok(&[]);
    }
    check_slice_len::<T>(n, what)?;
    if p.is_null() {
        return Err(Fail::new(
            NUMAGC_ERR_NULL_ARGUMENT,
            format!("argument `{what}` is NULL but {n} elements were announced"),
        ));
    }
    // SAFETY: non-null; `n * size_of::<T>()` is at most `isize::MAX`
    // (checked above); the caller promises `n` initialised, aligned
    // elements that are not written during the call.
    Ok(unsafe { std::slice::from_raw_parts(p, n) })
}

/// An output array of `n` elements; NULL is allowed when `n` is 0.
pub(crate) fn slice_out<'a, T>(p: *mut T, n: usize, what: &str) -> Res<&'a mut [T]> {
    if n == 0 {
        return Ok(&mut []);
    }
    check_slice_len::<T>(n, what)?;
    if p.is_null() {
        return Err(Fail::new(
            NUMAGC_ERR_NULL_ARGUMENT,
            format!("argument `{what}` is NULL but {n} elements were announced"),
        ));
    }
    // SAFETY: non-null; `n * size_of::<T>()` is at most `isize::MAX`
    // (checked above); the caller promises room for `n` aligned elements,
    // not otherwise accessed during the call.
    Ok(unsafe { std::slice::from_raw_parts_mut(p, n) })
}

/// The message of the last failed numagc call on this thread, or "" if
/// none has failed. Successful calls leave it alone. The string belongs to
/// the library and stays valid until the next failing call on this thread.
#[no_mangle]
pub extern "C" fn numagc_last_error() -> *const c_char {
    let r = catch_unwind(|| {
        LAST_ERROR
            .try_with(|m| m.borrow().as_ref().map_or(c"".as_ptr(), |c| c.as_ptr()))
            .unwrap_or(c"".as_ptr())
    });
    r.unwrap_or(c"".as_ptr())
}

/// The name of a status code ("NUMAGC_ERR_HEAP_LIMIT"), or "unknown status"
/// for a code that is none of them. The string is static.
#[no_mangle]
pub extern "C" fn numagc_status_name(code: c_int) -> *const c_char {
    numagc_status::from_code(code).map_or(c"unknown status".as_ptr(), |s| s.name().as_ptr())
}
