//! Running a C body: a callback, a `numagc_par2` task or a thread step.
//! Each gets a fresh scope token, a handle table of its own with its
//! environment rooted first, the activation of the token while its C code
//! runs, and the same checks on how it ended (`Ended`).
//!
//! Invariant: tokens are never reused and never 0; the body's `CallState`
//! lives in `run_body`'s frame and outlives the token's activation, which
//! is exactly the C call; the thread's last-error message is the body's own
//! while it runs and is put back afterwards.

use crate::activation::Activation;
use crate::numagc_value;
use crate::runtime::RtShared;
use crate::scope::{numagc_scope, CallState, Small};
use crate::status::numagc_status::{self, *};
use crate::status::{last_error, restore_last_error, set_last_error, take_last_error, Fail};
use crate::thread::numagc_next;
use numagc_rs::{Handle, Scope};
#[cfg(test)]
use std::cell::Cell;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

pub(crate) type Callback = unsafe extern "C" fn(*mut numagc_scope, *mut c_void) -> c_int;

/// The callback's `user_data`, carried to the vproc thread.
#[derive(Clone, Copy)]
pub(crate) struct UserData(pub *mut c_void);

// SAFETY: the pointer is only handed back to the C callback, never
// dereferenced here; the C caller is responsible for what it points to
// being usable from the vproc threads (documented at `numagc_run_on` and
// `numagc_run_each`).
unsafe impl Send for UserData {}
// SAFETY: as for `Send`: this crate never reads through the pointer.
unsafe impl Sync for UserData {}

/// Scope tokens: never reused, never 0 (`gen << 4`, gen from 1).
static NEXT_GENERATION: AtomicU64 = AtomicU64::new(1);

#[cfg(test)]
thread_local! {
    /// Tests set it to make the next C body on this thread panic on the
    /// Rust side, with its activation in place.
    pub(crate) static INJECT_PANIC: Cell<bool> = const { Cell::new(false) };
}

/// The next-token of a scope token: bit 3 set (tokens are `gen << 4`).
pub(crate) const NEXT_BIT: usize = 8;

/// How one C body ended.
pub(crate) struct Ended {
    pub rc: c_int,
    /// Root frames it left open.
    pub open: usize,
    /// It returned inside a blocking section (left for it since).
    pub blocking: bool,
    /// The last error on this thread when it returned, if it failed.
    pub last: Option<String>,
}

impl Ended {
    /// The failure this end is, if any; `what` names the body ("the
    /// callback on vproc 1"), formatted only when it failed.
    pub fn failure(&self, what: &dyn std::fmt::Display) -> Option<Fail> {
        let (rc, open) = (self.rc, self.open);
        if rc == NUMAGC_OK as c_int {
            if self.blocking {
                return Some(Fail::new(
                    NUMAGC_ERR_MISUSE,
                    format!("{what} returned inside a blocking section: call numagc_leave_blocking before returning (it was left for it)"),
                ));
            }
            if open == 0 {
                return None;
            }
            return Some(Fail::new(
                NUMAGC_ERR_UNBALANCED_FRAME,
                format!("{what} returned with {open} root frame(s) still open: leave every frame before returning"),
            ));
        }
        let name = numagc_status::from_code(rc)
            .map_or("a code of the callback's own".to_string(), |s| {
                format!("{s:?}")
            });
        let last = self
            .last
            .as_ref()
            .map_or("none".to_string(), |m| format!("\"{m}\""));
        let frames = if open > 0 {
            format!("; it left {open} frame(s) open, now closed")
        } else {
            String::new()
        };
        Some(Fail {
            code: rc,
            message: format!(
                "{what} returned {rc} ({name}){frames}; last error on that vproc: {last}"
            ),
        })
    }
}

/// What a C body is given besides its scope.
pub(crate) struct BodyArgs<'e, 'i> {
    /// Rooted in the body's table as handles that live until it returns.
    pub env: &'e [Handle<'i>],
    /// A thread continuation's received value (NIL otherwise).
    pub received: Option<Handle<'i>>,
    /// Whether the body is a thread step and gets a `numagc_next`.
    pub thread: bool,
    /// Whether the body is a `numagc_fork` task stolen by this vproc: only
    /// the compiled interface is open to it, and its slow paths keep the
    /// root slots in use when it started.
    pub word_task: bool,
}

/// Runs one C body — a callback, a par2 task, a thread step — on `s`:
/// makes it a scope token of its own and a handle table, roots its
/// environment there, activates the token on this thread while `call`
/// runs, and hands `finish` the state (for the handles the body left
/// behind: a task's result, a thread's next step) and how it ended.
///
/// The thread's last-error message is the body's own while it runs (it is
/// quoted when the body fails) and is put back afterwards, so a body nested
/// in a waiting callback does not change the callback's message.
pub(crate) fn run_body<'i, R>(
    s: &mut Scope<'i>,
    rt: &Arc<RtShared>,
    args: BodyArgs<'_, 'i>,
    call: impl FnOnce(*mut numagc_scope, &[numagc_value], numagc_value, *mut numagc_next) -> c_int,
    finish: impl FnOnce(&mut CallState, Ended) -> R,
) -> R {
    let saved = take_last_error();
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    let token = (generation as usize) << 4;
    let vproc = s.vproc();
    let floor = if args.word_task { s.roots_in_use() } else { 0 };
    let mut st = CallState::new(
        // The lifetime is erased here; see `CallState::sc` for why no use
        // outlives the scope.
        (s as *mut Scope<'_>).cast::<Scope<'static>>(),
        generation,
        vproc,
        rt,
        args.thread,
    );
    if args.word_task {
        st.word_tasks = 1;
        st.floor = floor;
    }
    // The environment: handles outside any frame, so they live until the
    // body returns. Rooting cannot fail short of 2^31 entries.
    let (mut env, mut rooted) = match Small::with_len(args.env.len(), 0, "env") {
        Ok(env) => (env, Ok(())),
        Err(e) => (Small::Inline([0; 8], 0), Err(e)),
    };
    for (v, &h) in env.as_mut_slice().iter_mut().zip(args.env) {
        match st.root(h) {
            Ok(r) => *v = r,
            Err(e) => rooted = Err(e),
        }
    }
    let received = match args.received {
        Some(h) => st.root(h),
        None => Ok(crate::NUMAGC_NIL),
    };
    let (rc, open, blocking) = match (rooted, received) {
        (Ok(()), Ok(received)) => {
            let activation = Activation::new(token, vproc, &mut st);
            #[cfg(test)]
            if INJECT_PANIC.with(|p| p.replace(false)) {
                panic!("a panic injected by a test before a C body");
            }
            let scope_ptr = std::ptr::without_provenance_mut::<numagc_scope>(token);
            let next_ptr = std::ptr::without_provenance_mut::<numagc_next>(token | NEXT_BIT);
            let rc = call(scope_ptr, env.as_slice(), received, next_ptr);
            drop(activation);
            // A body that returns inside a blocking section has it left
            // here, before anything touches the scope again.
            let blocking = st.blocking.take().is_some();
            (rc, st.open_frames(), blocking)
        }
        (Err(e), _) | (_, Err(e)) => {
            set_last_error(&e.message);
            (e.code, 0, false)
        }
    };
    let last = if rc == NUMAGC_OK as c_int {
        None
    } else {
        last_error()
    };
    restore_last_error(saved);
    finish(
        &mut st,
        Ended {
            rc,
            open,
            blocking,
            last,
        },
    )
}

/// Runs a C callback as a numagc job: returns its result code and, when
/// it is not `NUMAGC_OK`, the message for the caller's thread.
pub(crate) fn run_callback(
    s: &mut Scope<'_>,
    cb: Callback,
    data: UserData,
    rt: &Arc<RtShared>,
) -> (c_int, Option<String>) {
    let vproc = s.vproc();
    let args = BodyArgs {
        env: &[],
        received: None,
        thread: false,
        word_task: false,
    };
    // SAFETY: `cb` is a C function pointer given to `numagc_run_on` /
    // `numagc_run_each` with this signature; `data` is the caller's
    // pointer, handed back untouched. C code cannot unwind into Rust
    // (`extern "C"` aborts on unwinding).
    let call = |scope, _: &[numagc_value], _, _| unsafe { cb(scope, data.0) };
    run_body(s, rt, args, call, |_, ended| {
        match ended.failure(&format_args!("the callback on vproc {vproc}")) {
            None => (NUMAGC_OK as c_int, None),
            Some(f) => (f.code, Some(f.message)),
        }
    })
}
