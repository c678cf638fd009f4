//! How every call is checked: [`expect`] compares its status with the ones
//! its documentation allows for the arguments given, and [`c_string`]
//! makes C strings of fuzz bytes.
//!
//! Invariant: a status that is not allowed, `NUMAGC_ERR_INTERNAL` (a panic
//! caught at the boundary) or a failure without a message panics, which is
//! a finding; nothing here reads fuzz bytes.

use super::hit;
use numagc_capi::numagc_status::{self, *};
use numagc_capi::*;
use std::ffi::{c_int, CStr, CString};

pub(super) fn code(s: numagc_status) -> c_int {
    s as c_int
}

pub(super) fn last_error() -> String {
    // SAFETY: numagc_last_error returns a NUL-terminated string owned by
    // the library, valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(numagc_last_error()) }
        .to_string_lossy()
        .into_owned()
}

/// Checks a status against the allowed ones; every failure must have a
/// message, and no call may report an internal error.
#[track_caller]
pub(super) fn expect(rc: c_int, allowed: &[numagc_status], what: &str) {
    if rc == code(NUMAGC_ERR_INTERNAL) {
        panic!("{what}: NUMAGC_ERR_INTERNAL: {}", last_error());
    }
    if !allowed.iter().any(|&s| code(s) == rc) {
        panic!(
            "{what}: returned {rc} ({:?}), allowed {allowed:?}; last error: {}",
            numagc_status_from(rc),
            last_error()
        );
    }
    if rc != 0 {
        assert!(
            !last_error().is_empty(),
            "{what}: failed with {rc} but left no message"
        );
    }
    if rc == code(NUMAGC_ERR_HEAP_LIMIT) {
        hit("heap limit");
    }
}

fn numagc_status_from(rc: c_int) -> String {
    // SAFETY: numagc_status_name returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(numagc_status_name(rc)) }
        .to_string_lossy()
        .into_owned()
}

/// A C string from fuzz bytes: NUL bytes cut it short; may be invalid UTF-8.
pub(super) fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL inside")
}
