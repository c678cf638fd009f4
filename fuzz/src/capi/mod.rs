//! Fuzzing the C ABI: [`run`] reads the input as a program of C ABI calls
//! and makes them through the `extern "C"` functions of `numagc-capi`,
//! exactly as a C program would (raw pointers, C strings, callbacks).
//!
//! The program, at most [`MAX_OPS`] calls:
//! * configurations: `numagc_config_new`, `_set` with any names and values
//!   (invalid UTF-8 and NULL included), `_from_env`, `_free`;
//! * runtimes (at most two live, 1 to 3 vprocs, the other settings
//!   fuzzed): `numagc_runtime_new`, `_vprocs`, `_free`, `numagc_stats_json`,
//!   `numagc_take_thread_errors`;
//! * descriptors: `numagc_register_mixed` with any size, offsets, name;
//! * callbacks on any vproc (existing or not) with `numagc_run_on`, and on
//!   all with `numagc_run_each`: inside, a sub-program of scope calls —
//!   frames entered and left in and out of order, `numagc_frame_return`,
//!   allocation of every kind with sizes small, medium and absurd, field
//!   and raw reads and stores in and out of range, promotion, local
//!   variables, global roots (made, read, set, freed twice, of another
//!   runtime), collections, `numagc_par2` with tasks that succeed, fail,
//!   leave frames open, leave their result unset or use their parent's
//!   scope, threads (`numagc_spawn`, `_spawn_on`) that send, receive, yield,
//!   exit, or misbehave (no `numagc_next_*`, two, a blocking receive inside
//!   a step), direct-style `numagc_send` / `_recv` / `_select`, nested
//!   `numagc_run_on` and `numagc_runtime_free` (refused), a scope used from
//!   another OS thread;
//! * channels: `numagc_channel_new`, `_free` (twice), `_waiting`;
//! * scope calls with stale or forged scope tokens from the fuzzer's own
//!   thread, which is no vproc; NULL runtimes, scopes, outputs, arrays;
//! * bad input (issue 16): checked `int` fields out of range
//!   ([`BAD_INTS`](bad_input::BAD_INTS): `numagc_sel.dir`,
//!   `numagc_case.dir`, `is_mutable`) and counts far beyond their arrays
//!   ([`huge_count`](bad_input::huge_count)) for every pointer+count entry
//!   point the program calls ([`Body::huge`](model::Body::huge),
//!   `alloc_mixed`, `register`, the thread kind `T_BAD_INPUT` for
//!   `numagc_next_*`);
//! * blocking sections ([`Body::blocking_op`](model::Body::blocking_op),
//!   [`Body::blocked_op`](model::Body::blocked_op)):
//!   `numagc_enter_blocking` / `_leave_blocking` anywhere in a callback,
//!   entered twice, left without entering, every other scope call inside
//!   (refused), calls that take no scope inside (allowed), callbacks,
//!   tasks and thread steps that return inside one, and a global collection
//!   forced by a thread on another vproc while a callback waits inside its
//!   section.
//!
//! Checked for every call: it returns, with a status its documentation
//! allows for these arguments, never `NUMAGC_ERR_INTERNAL` (a panic caught
//! at the boundary); a failure comes with a message and zeroed outputs. A
//! handle whose frame was left, a freed global root or channel, or a value
//! 0 is `NUMAGC_ERR_BAD_VALUE`; frames left out of order are
//! `NUMAGC_ERR_UNBALANCED_FRAME`. Objects read back what was stored in
//! them. Bad input gets the documented refusal in the order the arguments
//! are checked (docs/c-api.md, "Input is checked"), computed by the model:
//! the heap limit that decides between `NUMAGC_ERR_HEAP_LIMIT` and an
//! allocation comes from a shadow `ConfigBuilder` given the same settings,
//! and a length the limit would let through is never passed with a short
//! array. Inside a blocking section every scope call is
//! `NUMAGC_ERR_MISUSE` with zeroed outputs; after it, the handles and
//! frames are those at its start and every word the model knows of every
//! live object reads back unchanged
//! ([`Body::check_values`](model::Body::check_values)). A blocking channel
//! operation is made only when a counterpart is sure to come (a thread
//! spawned to send or receive on that channel, see [`Chan`](model::Chan)),
//! so the program never waits for ever by construction, and a hang is a
//! finding.
//!
//! The files, by concept: this one holds the entry points ([`run`],
//! [`reach`], [`OUTCOMES`]) and the top-level loop; `model` the shadow of
//! runtimes, descriptors, channels, global roots, handles and frames;
//! `check` the status checks; `config` configurations, their shadow
//! `ConfigBuilder` and `numagc_runtime_new`; `toplevel` the other calls
//! from the fuzzer's thread; `callbacks` `numagc_run_on` / `_run_each`;
//! `body` the decoding of a body's scope calls from bytes; `objects`
//! allocation, reads, stores and global roots; `tasks` `numagc_par2`;
//! `threads` threads and channel operations; `bad_input` out-of-range
//! fields and huge counts; `blocking` blocking sections.

mod bad_input;
mod blocking;
mod body;
mod callbacks;
mod check;
mod config;
mod model;
mod objects;
mod tasks;
mod threads;
mod toplevel;

use crate::Input;
use callbacks::{run_each, run_on};
use check::expect;
use config::new_runtime;
use model::State;
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use toplevel::{channel_op, free_global, free_runtime, misc, register, reports, stale_scope_call};

/// How often each kind of interesting outcome happened, when counting is
/// on (the replay test checks that seeded inputs reach them all, so that a
/// change that makes the interpreter bail out early fails a test).
static REACH: std::sync::Mutex<std::collections::BTreeMap<&'static str, usize>> =
    std::sync::Mutex::new(std::collections::BTreeMap::new());
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn hit(what: &'static str) {
    if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
        *REACH
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(what)
            .or_default() += 1;
    }
}

/// Turns counting on and returns the counts so far (see [`hit`]).
pub fn reach(counting: bool) -> std::collections::BTreeMap<&'static str, usize> {
    COUNTING.store(counting, std::sync::atomic::Ordering::Relaxed);
    REACH.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The outcomes [`reach`] counts.
pub const OUTCOMES: &[&str] = &[
    "runtime",
    "runtime refused",
    "descriptor",
    "descriptor refused",
    "callback",
    "callback failed",
    "run_each",
    "frame left",
    "frame out of order",
    "frame_return",
    "mixed",
    "mixed refused",
    "heap limit",
    "object",
    "field read",
    "raw read",
    "store",
    "store refused",
    "global",
    "global read",
    "global freed twice",
    "par2",
    "par2 failed",
    "nested par2",
    "spawn",
    "thread sent",
    "thread received",
    "thread failed on purpose",
    "recv",
    "send",
    "select",
    "stale scope",
    "scope on another thread",
    "nested run_on refused",
    "collection",
    "stale handle refused",
    "bad int refused",
    "huge count refused",
    "thread bad input refused",
    "blocking section",
    "blocking section left",
    "refused in a section",
    "blocking misuse refused",
    "returned inside a section",
    "section left for its callback",
    "collection during a section",
    "section in a task",
    "thread returned inside a section",
];

/// Most calls of one input (callback and task bodies included).
pub const MAX_OPS: usize = 160;
/// Longest object the program allocates, in words (larger lengths are
/// always absurd ones, beyond the 48-bit length field).
const MAX_LEN: usize = 1 << 17;

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut st = State {
        inp: Input::new(data),
        ops: 0,
        rts: Vec::new(),
        globals: Vec::new(),
        chans: Vec::new(),
        stale_scopes: Vec::new(),
        waited: Default::default(),
    };
    new_runtime(&mut st);
    while st.tick() {
        match st.inp.u8() % 16 {
            0 => new_runtime(&mut st),
            1 => free_runtime(&mut st),
            2 => register(&mut st),
            3..=7 => run_on(&mut st),
            8 => run_each(&mut st),
            9 => channel_op(&mut st),
            10 => free_global(&mut st),
            11 => stale_scope_call(&mut st),
            12 => reports(&mut st),
            13 => misc(&mut st),
            14 => register(&mut st),
            _ => run_on(&mut st),
        }
    }
    for k in 0..st.rts.len() {
        if let Some(rt) = st.rts[k].take() {
            // SAFETY: a live runtime, freed once.
            expect(
                unsafe { numagc_runtime_free(rt.rt) },
                &[NUMAGC_OK],
                "numagc_runtime_free",
            );
        }
    }
}
