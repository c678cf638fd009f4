//! Blocking sections from C: `numagc_enter_blocking` before code that may
//! block outside the runtime (a system call, a lock, a foreign library),
//! `numagc_leave_blocking` after it — OCaml's
//! `caml_enter_blocking_section` / `caml_leave_blocking_section`.
//!
//! In between, other vprocs' collections go on without this vproc's
//! thread: its proxy takes part for it with its root frames and local heap
//! (`numagc::Scope::enter_blocking`; the protocol is in the core crate's
//! `gc::blocking`). The body must hold every value it needs afterwards in
//! handles (they stay valid and follow the moves), and may not use the
//! scope meanwhile: every scope call but `numagc_leave_blocking` is refused
//! with `NUMAGC_ERR_MISUSE` until then, which also makes the state the
//! proxy owns unreachable from C.

use crate::activation::{with_any_state, with_state};
use crate::scope::numagc_scope;
use crate::status::numagc_status::NUMAGC_ERR_MISUSE;
use crate::status::{guard, Fail};
use std::os::raw::c_int;

/// Enters a blocking section: until `numagc_leave_blocking(scope)`, the
/// body may block for as long as it likes without delaying the other
/// vprocs, and must not use `scope` (calls are refused with
/// `NUMAGC_ERR_MISUSE`). `NUMAGC_ERR_MISUSE` if the body is in one
/// already; `NUMAGC_ERR_OS` if the vproc's proxy thread (started by its
/// first section) cannot be started — the body is not in a section then.
#[no_mangle]
pub unsafe extern "C" fn numagc_enter_blocking(scope: *mut numagc_scope) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            // SAFETY: from here until `numagc_leave_blocking` (or the body's
            // return, which leaves first: `run_body`) every call on this
            // state but the leave is refused by `with_state`, so nothing
            // uses the scope while the section is open.
            let section = unsafe { st.sc().enter_blocking()? };
            st.blocking = Some(section);
            Ok(())
        })
    })
}

/// Leaves the blocking section: waits for a collection its proxy is taking
/// part in, then joins one that is pending. The scope and every handle are
/// usable again. `NUMAGC_ERR_MISUSE`, changing nothing, if the body is not
/// in a blocking section.
#[no_mangle]
pub unsafe extern "C" fn numagc_leave_blocking(scope: *mut numagc_scope) -> c_int {
    guard(|| {
        with_any_state(scope, |st| {
            let section = st.blocking.take().ok_or_else(|| {
                Fail::new(
                    NUMAGC_ERR_MISUSE,
                    "numagc_leave_blocking without numagc_enter_blocking: the scope is not in a blocking section",
                )
            })?;
            section.leave();
            st.sc().poll();
            Ok(())
        })
    })
}
