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
//!   ([`BAD_INTS`]: `numagc_sel.dir`, `numagc_case.dir`, `is_mutable`) and
//!   counts far beyond their arrays ([`huge_count`]) for every pointer+count
//!   entry point the program calls ([`Body::huge`], `alloc_mixed`,
//!   `register`, the thread kind `T_BAD_INPUT` for `numagc_next_*`);
//! * blocking sections ([`Body::blocking_op`], [`Body::blocked_op`]):
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
//! live object reads back unchanged ([`Body::check_values`]). A blocking channel operation is made only when a counterpart is
//! sure to come (a thread spawned to send or receive on that channel, see
//! [`Chan`]), so the program never waits for ever by construction, and a
//! hang is a finding.

use crate::Input;
use numagc_capi::numagc_dir::{NUMAGC_RECV, NUMAGC_SEND};
use numagc_capi::numagc_kind::*;
use numagc_capi::numagc_status::{self, *};
use numagc_capi::*;
use numagc::ConfigBuilder;
use std::ffi::{c_int, c_void, CStr, CString};
use std::ptr::{null, null_mut};

/// How often each kind of interesting outcome happened, when counting is
/// on (the replay test checks that seeded inputs reach them all, so that a
/// change that makes the interpreter bail out early fails a test).
static REACH: std::sync::Mutex<std::collections::BTreeMap<&'static str, usize>> = std::sync::Mutex::new(std::collections::BTreeMap::new());
static COUNTING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn hit(what: &'static str) {
    if COUNTING.load(std::sync::atomic::Ordering::Relaxed) {
        *REACH.lock().unwrap_or_else(|p| p.into_inner()).entry(what).or_default() += 1;
    }
}

/// Turns counting on and returns the counts so far (see [`hit`]).
pub fn reach(counting: bool) -> std::collections::BTreeMap<&'static str, usize> {
    COUNTING.store(counting, std::sync::atomic::Ordering::Relaxed);
    REACH.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The outcomes [`reach`] counts.
pub const OUTCOMES: &[&str] = &[
    "runtime", "runtime refused", "descriptor", "descriptor refused", "callback", "callback failed", "run_each",
    "frame left", "frame out of order", "frame_return", "mixed", "mixed refused", "heap limit", "object", "field read",
    "raw read", "store", "store refused", "global", "global read", "global freed twice", "par2", "par2 failed",
    "nested par2", "spawn", "thread sent", "thread received", "thread failed on purpose", "recv", "send", "select",
    "stale scope", "scope on another thread", "nested run_on refused", "collection", "stale handle refused",
    "bad int refused", "huge count refused", "thread bad input refused", "blocking section", "blocking section left",
    "refused in a section", "blocking misuse refused", "returned inside a section", "section left for its callback",
    "collection during a section", "section in a task", "thread returned inside a section",
];

/// Values of C `int` fields that are checked enums or flags (`dir`,
/// `is_mutable`) but hold none of the accepted values: an uninitialised
/// field, a C `bool` cast wrong, a sign bit.
const BAD_INTS: &[c_int] = &[2, 7, -1, 256, c_int::MIN, c_int::MAX];

/// A count far beyond any array the program passes with it: the library
/// must refuse it before reading the array or sizing anything by it.
fn huge_count(inp: &mut Input) -> usize {
    inp.pick(&[1usize << 40, usize::MAX, (1 << 40) + 1, usize::MAX / 8 + 1])
}

/// Most calls of one input (callback and task bodies included).
pub const MAX_OPS: usize = 160;
/// Longest object the program allocates, in words (larger lengths are
/// always absurd ones, beyond the 48-bit length field).
const MAX_LEN: usize = 1 << 17;

fn code(s: numagc_status) -> c_int {
    s as c_int
}

fn last_error() -> String {
    // SAFETY: numagc_last_error returns a NUL-terminated string owned by
    // the library, valid until the next failing call on this thread.
    unsafe { CStr::from_ptr(numagc_last_error()) }.to_string_lossy().into_owned()
}

/// Checks a status against the allowed ones; every failure must have a
/// message, and no call may report an internal error.
#[track_caller]
fn expect(rc: c_int, allowed: &[numagc_status], what: &str) {
    if rc == code(NUMAGC_ERR_INTERNAL) {
        panic!("{what}: NUMAGC_ERR_INTERNAL: {}", last_error());
    }
    if !allowed.iter().any(|&s| code(s) == rc) {
        panic!("{what}: returned {rc} ({:?}), allowed {allowed:?}; last error: {}", numagc_status_from(rc), last_error());
    }
    if rc != 0 {
        assert!(!last_error().is_empty(), "{what}: failed with {rc} but left no message");
    }
    if rc == code(NUMAGC_ERR_HEAP_LIMIT) {
        hit("heap limit");
    }
}

fn numagc_status_from(rc: c_int) -> String {
    // SAFETY: numagc_status_name returns a static NUL-terminated string.
    unsafe { CStr::from_ptr(numagc_status_name(rc)) }.to_string_lossy().into_owned()
}

/// A C string from fuzz bytes: NUL bytes cut it short; may be invalid UTF-8.
fn c_string(bytes: &[u8]) -> CString {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    CString::new(&bytes[..end]).expect("no NUL inside")
}

const SETTING_VALUES: &[(&str, &[&str])] = &[
    ("local-heap", &["64K", "128K", "256K", "1M", "60K", "2G"]),
    ("chunk-size", &["64K", "128K", "1M", "96K"]),
    ("min-nursery", &["4K", "8K", "16K", "2K", "1M"]),
    ("large-object", &["256", "1K", "4K", "8K", "128"]),
    ("global-gc-threshold", &["64K", "128K", "1M", "1T"]),
    ("max-heap", &["1M", "2M", "4M", "8M", "32M", "1G", "16T", "17T"]),
    ("heap-growth", &["1.0", "1.5", "2", "100", "0.5"]),
    ("young-global-gc", &["true", "false"]),
    ("survivor-promotion", &["0", "50", "90", "100", "101"]),
    ("task-promotion", &["lazy", "eager", "sometimes"]),
    ("verify", &["true", "false", "maybe"]),
    ("trace", &["true", "false"]),
    ("numa-policy", &["local", "interleave", "node0"]),
    ("topology", &["1x1", "2x1", "1x2", "2x2", "detect", "4x", ""]),
    ("plan", &["split", "split-heap", "other"]),
    ("pin", &["true", "false"]),
    ("vproc-stack", &["1M", "8M", "256M", "64K", "2G", "EAGER"]),
];

/// One configuration setting, near-valid or arbitrary; NULLs sometimes.
/// An accepted one is made on `shadow` too (the model of the
/// configuration, which says the heap limit the runtime will have).
fn config_set(inp: &mut Input, cfg: *mut numagc_config, shadow: &mut ConfigBuilder) -> c_int {
    let (name, value) = match inp.u8() % 8 {
        0 => (c_string(inp.bytes(16)), c_string(inp.bytes(16))),
        1 => {
            let (n, _) = SETTING_VALUES[inp.below(SETTING_VALUES.len())];
            (c_string(n.as_bytes()), c_string(inp.bytes(12)))
        }
        _ => {
            let (n, vs) = SETTING_VALUES[inp.below(SETTING_VALUES.len())];
            (c_string(n.as_bytes()), c_string(inp.pick(vs).as_bytes()))
        }
    };
    let (np, vp) = match inp.u8() % 16 {
        0 => (null(), value.as_ptr()),
        1 => (name.as_ptr(), null()),
        _ => (name.as_ptr(), value.as_ptr()),
    };
    let cfg = if inp.one_in(16) { null_mut() } else { cfg };
    // SAFETY: `cfg` is a live configuration or NULL; the strings are
    // NUL-terminated and live for the call.
    let rc = unsafe { numagc_config_set(cfg, np, vp) };
    // In the order the arguments are checked.
    let ok = if cfg.is_null() || np.is_null() {
        vec![NUMAGC_ERR_NULL_ARGUMENT]
    } else if name.to_str().is_err() {
        vec![NUMAGC_ERR_INVALID_ARGUMENT]
    } else if vp.is_null() {
        vec![NUMAGC_ERR_NULL_ARGUMENT]
    } else if value.to_str().is_err() {
        vec![NUMAGC_ERR_INVALID_ARGUMENT]
    } else {
        vec![NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG]
    };
    expect(rc, &ok, "numagc_config_set");
    if rc == 0 {
        let (n, v) = (name.to_str().unwrap(), value.to_str().unwrap());
        shadow.set(n, v).expect("the model refused a setting numagc_config_set accepted");
    }
    rc
}

fn set(cfg: *mut numagc_config, shadow: &mut ConfigBuilder, name: &str, value: &str) {
    let (n, v) = (CString::new(name).unwrap(), CString::new(value).unwrap());
    // SAFETY: a live configuration and two C strings.
    let rc = unsafe { numagc_config_set(cfg, n.as_ptr(), v.as_ptr()) };
    expect(rc, &[NUMAGC_OK], "numagc_config_set (fixed)");
    shadow.set(name, value).expect("the model refused a fixed setting");
}

/// A registered descriptor as the program knows it.
#[derive(Clone)]
struct Desc {
    id: numagc_desc,
    size: usize,
    /// Whether each field holds a value.
    ptr: Vec<bool>,
    mutable: bool,
}

/// What the program knows of a live runtime.
struct Rt {
    rt: *mut numagc_runtime,
    vprocs: usize,
    descs: Vec<Desc>,
    /// Its heap limit in bytes (setting `max-heap`, from the model of its
    /// configuration): an object of more words than fit is refused with
    /// `NUMAGC_ERR_HEAP_LIMIT` before its array is read.
    max_heap: usize,
}

/// What a channel op may do without waiting for ever. Each thread spawned
/// to send on a channel adds one send that will come, each thread spawned
/// to receive one receive; `balance` is sends minus receives, made or to
/// come, over the channel's life. A callback may receive only while
/// `balance > 0` (a sender is still to be matched) and send only while
/// `balance < 0`. The threads are only ever spawned with valid arguments,
/// so they do what was counted.
#[derive(Clone, Copy)]
struct Chan {
    token: *mut numagc_channel,
    /// Index into `State::rts` of its runtime (`usize::MAX` when freed).
    rt: usize,
    live: bool,
    balance: i64,
}

/// The program's state, shared with the callbacks it runs (which run one
/// at a time, while the fuzzer's thread waits in `numagc_run_on`).
struct State<'a> {
    inp: Input<'a>,
    ops: usize,
    rts: Vec<Option<Rt>>,
    globals: Vec<(numagc_global, usize, bool)>,
    chans: Vec<Chan>,
    /// Scope tokens of callbacks that have returned.
    stale_scopes: Vec<usize>,
    /// Time spent waiting for collector threads inside blocking sections
    /// (bounded per input, see [`Body::blocking_op`]).
    waited: std::time::Duration,
}

impl State<'_> {
    fn tick(&mut self) -> bool {
        self.ops += 1;
        self.ops <= MAX_OPS && !self.inp.is_empty()
    }

    fn live_rt(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.rts.len()).filter(|&k| self.rts[k].is_some()).collect();
        if live.is_empty() {
            None
        } else {
            Some(self.inp.pick(&live))
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut st = State { inp: Input::new(data), ops: 0, rts: Vec::new(), globals: Vec::new(), chans: Vec::new(), stale_scopes: Vec::new(), waited: Default::default() };
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
            expect(unsafe { numagc_runtime_free(rt.rt) }, &[NUMAGC_OK], "numagc_runtime_free");
        }
    }
}

fn new_runtime(st: &mut State) {
    if st.rts.iter().filter(|r| r.is_some()).count() >= 2 {
        return;
    }
    let mut shadow = ConfigBuilder::new();
    let cfg = if st.inp.one_in(8) {
        let mut c = null_mut();
        // SAFETY: `c` is a valid output.
        let rc = unsafe { numagc_config_from_env(&mut c) };
        expect(rc, &[NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG], "numagc_config_from_env");
        if rc != 0 {
            assert!(c.is_null(), "numagc_config_from_env failed but gave a configuration");
            numagc_config_new()
        } else {
            shadow = ConfigBuilder::from_env().expect("the model refused the environment numagc_config_from_env accepted");
            c
        }
    } else {
        numagc_config_new()
    };
    assert!(!cfg.is_null());
    set(cfg, &mut shadow, "local-heap", "64K");
    set(cfg, &mut shadow, "chunk-size", "64K");
    set(cfg, &mut shadow, "global-gc-threshold", "128K");
    set(cfg, &mut shadow, "max-heap", "1M");
    set(cfg, &mut shadow, "pin", "false");
    for _ in 0..st.inp.below(6) {
        config_set(&mut st.inp, cfg, &mut shadow);
    }
    let vprocs = 1 + st.inp.below(3);
    set(cfg, &mut shadow, "vprocs", &vprocs.to_string());
    let mut rt = null_mut();
    let null_out = st.inp.one_in(32);
    // SAFETY: a live configuration; `rt` is a valid output (or NULL).
    let rc = unsafe { numagc_runtime_new(cfg, if null_out { null_mut() } else { &mut rt }) };
    if null_out {
        expect(rc, &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_runtime_new(out = NULL)");
    } else {
        expect(rc, &[NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG, NUMAGC_ERR_OS], "numagc_runtime_new");
        if rc != 0 {
            hit("runtime refused");
        }
        if rc == code(NUMAGC_ERR_INVALID_CONFIG) {
            assert!(shadow.build().is_err(), "numagc_runtime_new refused a configuration the model accepts: {}", last_error());
        }
        assert_eq!(rc == 0, !rt.is_null(), "numagc_runtime_new: status {rc} with runtime {rt:?}");
    }
    // SAFETY: the configuration is the caller's until freed, once.
    expect(unsafe { numagc_config_free(cfg) }, &[NUMAGC_OK], "numagc_config_free");
    if !rt.is_null() {
        let mut n = 0;
        // SAFETY: a live runtime and a valid output.
        expect(unsafe { numagc_runtime_vprocs(rt, &mut n) }, &[NUMAGC_OK], "numagc_runtime_vprocs");
        assert_eq!(n, vprocs);
        hit("runtime");
        let max_heap = shadow.build().expect("the model refused a configuration numagc_runtime_new accepted").max_heap;
        st.rts.push(Some(Rt { rt, vprocs, descs: Vec::new(), max_heap }));
    }
}

fn free_runtime(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let rt = st.rts[k].take().unwrap();
    // SAFETY: a live runtime, freed once.
    expect(unsafe { numagc_runtime_free(rt.rt) }, &[NUMAGC_OK], "numagc_runtime_free");
    // Its global roots and channels are gone with it.
    for g in st.globals.iter_mut().filter(|g| g.1 == k) {
        g.2 = false;
    }
    for c in st.chans.iter_mut().filter(|c| c.rt == k) {
        c.live = false;
    }
}

fn register(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let inp = &mut st.inp;
    let size = match inp.u8() % 8 {
        0 => inp.u64() as usize,
        1 => inp.pick(&[0, 64, 65, 1 << 20, (1 << 20) + 1, 1 << 40, usize::MAX]),
        _ => inp.below(12),
    };
    let len = inp.below(6);
    let mut offsets: Vec<usize> = (0..len).map(|_| if inp.one_in(8) { inp.u64() as usize } else { inp.below(size.clamp(1, 16)) }).collect();
    // Now and then a count far beyond the array (which must not be read).
    let n = if inp.one_in(16) { huge_count(inp) } else { len };
    let mutable = inp.bool();
    // Now and then a flag that is neither false nor true (an int in C).
    let flag: c_int = if inp.one_in(16) { inp.pick(BAD_INTS) } else { c_int::from(mutable) };
    let name = c_string(inp.bytes(8));
    let null_name = inp.one_in(16);
    let null_offsets = n > 0 && inp.one_in(16);
    let mut d = 7;
    let rt = st.rts[k].as_ref().unwrap().rt;
    // SAFETY: a live runtime, a C string or NULL, an array of `n` offsets
    // or NULL, a valid output.
    let rc = unsafe {
        numagc_register_mixed(
            rt,
            if null_name { null() } else { name.as_ptr() },
            size,
            if null_offsets { null() } else { offsets.as_ptr() },
            n,
            flag,
            &mut d,
        )
    };
    let mut distinct = offsets.clone();
    distinct.sort_unstable();
    distinct.dedup();
    let valid = (1..=1 << 20).contains(&size) && n == len && distinct.len() == n && offsets.iter().all(|&o| o < size);
    // In the order the arguments are checked: name, flag, offsets, layout.
    let want = if null_name {
        NUMAGC_ERR_NULL_ARGUMENT
    } else if name.to_str().is_err() || !(0..=1).contains(&flag) {
        if !(0..=1).contains(&flag) {
            hit("bad int refused");
        }
        NUMAGC_ERR_INVALID_ARGUMENT
    } else if null_offsets {
        NUMAGC_ERR_NULL_ARGUMENT
    } else if n > size.min(1 << 20) {
        // More offsets than fields: refused before the array is read.
        if n != len {
            hit("huge count refused");
        }
        NUMAGC_ERR_INVALID_DESCRIPTOR
    } else if valid {
        NUMAGC_OK
    } else {
        NUMAGC_ERR_INVALID_DESCRIPTOR
    };
    expect(rc, &[want], "numagc_register_mixed");
    if rc == 0 {
        hit("descriptor");
        offsets.sort_unstable();
        let mut ptr = vec![false; size];
        for &o in &offsets {
            ptr[o] = true;
        }
        st.rts[k].as_mut().unwrap().descs.push(Desc { id: d, size, ptr, mutable });
    } else {
        assert_eq!(d, 0, "a refused descriptor left its output set");
        hit("descriptor refused");
    }
}

fn free_global(st: &mut State) {
    let g = if st.globals.is_empty() || st.inp.one_in(8) {
        (st.inp.u64(), usize::MAX, false)
    } else {
        let k = st.inp.below(st.globals.len());
        let g = st.globals[k];
        st.globals[k].2 = false;
        g
    };
    let rc = numagc_global_free(g.0);
    if g.2 {
        expect(rc, &[NUMAGC_OK], "numagc_global_free (live)");
    } else if g.0 == 0 {
        expect(rc, &[NUMAGC_OK], "numagc_global_free(0)");
    } else if g.1 != usize::MAX {
        expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_free (freed)");
        hit("global freed twice");
    } else {
        // A forged id may happen to name a live root of this program.
        expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_global_free (forged)");
        if rc == 0 {
            for x in st.globals.iter_mut().filter(|x| x.0 == g.0) {
                x.2 = false;
            }
        }
    }
}

fn channel_op(st: &mut State) {
    match st.inp.u8() % 4 {
        0 | 1 => {
            let Some(k) = st.live_rt() else { return };
            let mut ch = null_mut();
            // SAFETY: a live runtime and a valid output.
            let rc = unsafe { numagc_channel_new(st.rts[k].as_ref().unwrap().rt, &mut ch) };
            expect(rc, &[NUMAGC_OK], "numagc_channel_new");
            st.chans.push(Chan { token: ch, rt: k, live: true, balance: 0 });
        }
        2 if !st.chans.is_empty() => {
            let k = st.inp.below(st.chans.len());
            let c = st.chans[k];
            let rc = numagc_channel_free(c.token);
            expect(rc, &[if c.live { NUMAGC_OK } else { NUMAGC_ERR_BAD_VALUE }], "numagc_channel_free");
            st.chans[k].live = false;
        }
        _ => {
            let (token, live) = if st.chans.is_empty() || st.inp.one_in(4) {
                (std::ptr::without_provenance_mut::<numagc_channel>(st.inp.u64() as usize), None)
            } else {
                let c = st.chans[st.inp.below(st.chans.len())];
                (c.token, Some(c.live))
            };
            let mut n = 99;
            // SAFETY: `token` is never dereferenced by the library (a
            // channel is an id); `n` is a valid output.
            let rc = unsafe { numagc_channel_waiting(token, &mut n) };
            match live {
                Some(true) => expect(rc, &[NUMAGC_OK], "numagc_channel_waiting"),
                Some(false) => expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_channel_waiting (freed)"),
                None if token.is_null() => expect(rc, &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_channel_waiting(NULL)"),
                None => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_channel_waiting (forged)"),
            }
            if rc != 0 {
                assert_eq!(n, 0);
            }
        }
    }
}

/// Scope calls from the fuzzer's own thread, which runs no callback: with
/// the token of a callback that returned, a forged one, or NULL.
fn stale_scope_call(st: &mut State) {
    let token = match st.inp.u8() % 4 {
        0 => 0,
        1 => st.inp.u64() as usize,
        _ if !st.stale_scopes.is_empty() => st.stale_scopes[st.inp.below(st.stale_scopes.len())],
        _ => st.inp.u64() as usize | 16,
    };
    let s = std::ptr::without_provenance_mut::<numagc_scope>(token);
    let want = if token == 0 { NUMAGC_ERR_NULL_ARGUMENT } else { NUMAGC_ERR_NOT_ON_VPROC };
    let mut v = 5;
    let mut f = 5;
    // SAFETY: scope tokens are never dereferenced; the outputs are valid.
    let rc = unsafe {
        match st.inp.u8() % 8 {
            0 => numagc_frame_enter(s, &mut f),
            1 => numagc_alloc_vector(s, null(), 0, &mut v),
            2 => numagc_collect_global(s),
            3 => numagc_field(s, numagc_int(1), 0, &mut v),
            4 => numagc_local(s, NUMAGC_NIL, &mut v),
            5 => numagc_enter_blocking(s),
            6 => numagc_leave_blocking(s),
            _ => numagc_frame_leave(s, st.inp.u64()),
        }
    };
    expect(rc, &[want], "a scope call from a thread that runs no callback");
    hit("stale scope");
    assert!(v == 0 || v == 5, "an output was set by a refused call");
    assert!(f == 0 || f == 5);
}

fn reports(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let rt = st.rts[k].as_ref().unwrap().rt;
    let mut s = null_mut();
    // SAFETY: a live runtime, a valid output; the string is freed once.
    unsafe {
        if st.inp.bool() {
            expect(numagc_stats_json(rt, &mut s), &[NUMAGC_OK], "numagc_stats_json");
        } else {
            expect(numagc_take_thread_errors(rt, &mut s), &[NUMAGC_OK], "numagc_take_thread_errors");
        }
        assert!(!s.is_null());
        let text = CStr::from_ptr(s).to_str().expect("JSON is UTF-8");
        assert!(text.starts_with('{') || text.starts_with('['), "{text}");
        expect(numagc_string_free(s), &[NUMAGC_OK], "numagc_string_free");
    }
}

/// NULL arguments, immediates, status names.
fn misc(st: &mut State) {
    let x = st.inp.u64() as i64 >> 1;
    let v = numagc_int(x);
    assert!(numagc_is_int(v));
    let mut back = 0;
    // SAFETY: valid outputs, or NULL where NULL is the point; NULL
    // runtimes, configurations and strings are refused, never read.
    unsafe {
        expect(numagc_get_int(v, &mut back), &[NUMAGC_OK], "numagc_get_int");
        assert_eq!(back, x);
        let h = st.inp.u64() & !1;
        expect(numagc_get_int(h, &mut back), &[NUMAGC_ERR_BAD_VALUE], "numagc_get_int(handle)");
        expect(numagc_get_int(v, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_get_int(NULL)");
        let _ = CStr::from_ptr(numagc_status_name(st.inp.u32() as c_int));
        let mut n = 0;
        expect(numagc_runtime_vprocs(null(), &mut n), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_runtime_vprocs(NULL)");
        expect(numagc_run_on(null(), 0, Some(callback), null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_run_on(NULL)");
        let mut rt = null_mut();
        expect(numagc_runtime_new(null(), &mut rt), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_runtime_new(NULL)");
        expect(numagc_config_set(null_mut(), c"vprocs".as_ptr(), c"1".as_ptr()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_config_set(NULL)");
        expect(numagc_config_free(null_mut()), &[NUMAGC_OK], "numagc_config_free(NULL)");
        expect(numagc_runtime_free(null_mut()), &[NUMAGC_OK], "numagc_runtime_free(NULL)");
        expect(numagc_string_free(null_mut()), &[NUMAGC_OK], "numagc_string_free(NULL)");
        expect(numagc_channel_free(null_mut()), &[NUMAGC_OK], "numagc_channel_free(NULL)");
        expect(numagc_global_free(0), &[NUMAGC_OK], "numagc_global_free(0)");
        if let Some(k) = st.live_rt() {
            let rt = st.rts[k].as_ref().unwrap().rt;
            expect(numagc_run_on(rt, 0, None, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_run_on(callback NULL)");
            expect(numagc_run_each(rt, None, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_run_each(callback NULL)");
            expect(numagc_channel_new(rt, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_channel_new(out NULL)");
            let mut d = 0;
            expect(numagc_register_mixed(rt, c"x".as_ptr(), 1, null(), 0, 0, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_register_mixed(out NULL)");
            expect(numagc_register_mixed(null(), c"x".as_ptr(), 1, null(), 0, 0, &mut d), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_register_mixed(rt NULL)");
        }
    }
}

// ---- callbacks -----------------------------------------------------------------

/// What `numagc_run_on` hands its callback: the program's state.
struct Ctx<'s, 'a> {
    st: &'s mut State<'a>,
    rt: usize,
    /// The status the callback returns.
    ret: c_int,
    /// The callback's scope token (kept as stale afterwards).
    token: usize,
    /// Frames it leaves open on purpose.
    open: usize,
    /// It returns inside a blocking section on purpose.
    blocking: bool,
}

fn run_on(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let (rt, n) = {
        let r = st.rts[k].as_ref().unwrap();
        (r.rt, r.vprocs)
    };
    let vproc = if st.inp.one_in(8) { n + st.inp.below(3) } else { st.inp.below(n) };
    let mut ctx = Ctx { st, rt: k, ret: 0, token: 0, open: 0, blocking: false };
    // SAFETY: a live runtime; `callback` has the callback signature and
    // `ctx` outlives the call, which waits for the callback to return.
    let rc = unsafe { numagc_run_on(rt, vproc, Some(callback), (&mut ctx as *mut Ctx).cast()) };
    if vproc >= n {
        expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_run_on (no such vproc)");
        return;
    }
    let (ret, open, token, blocking) = (ctx.ret, ctx.open, ctx.token, ctx.blocking);
    if token != 0 {
        st.stale_scopes.push(token);
    }
    if ret != 0 {
        assert_eq!(rc, ret, "numagc_run_on did not return the callback's status: {}", last_error());
        hit("callback failed");
    } else if blocking {
        // Returning inside a section is misuse, before open frames.
        expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_run_on (returned inside a blocking section)");
        hit("returned inside a section");
    } else if open > 0 {
        expect(rc, &[NUMAGC_ERR_UNBALANCED_FRAME], "numagc_run_on (frames left open)");
    } else {
        expect(rc, &[NUMAGC_OK], "numagc_run_on");
        hit("callback");
    }
    if blocking {
        // The section was left for it: the next callback on that vproc
        // is in none and may use its scope.
        // SAFETY: a live runtime; `after_section` has the callback signature.
        let rc = unsafe { numagc_run_on(rt, vproc, Some(after_section), null_mut()) };
        expect(rc, &[NUMAGC_OK], "numagc_run_on after a callback returned inside a section");
    }
}

/// The callback after one that returned inside a blocking section: not in
/// a section, and its scope works.
unsafe extern "C" fn after_section(s: *mut numagc_scope, _: *mut c_void) -> c_int {
    // SAFETY: our scope and valid outputs.
    unsafe {
        expect(numagc_leave_blocking(s), &[NUMAGC_ERR_MISUSE], "numagc_leave_blocking in the next callback");
        let mut f = 0;
        expect(numagc_frame_enter(s, &mut f), &[NUMAGC_OK], "numagc_frame_enter after a section left for its callback");
        let mut v = 0;
        expect(numagc_alloc_vector(s, [numagc_int(3)].as_ptr(), 1, &mut v), &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT], "numagc_alloc_vector");
        expect(numagc_collect_minor(s), &[NUMAGC_OK], "numagc_collect_minor");
        expect(numagc_frame_leave(s, f), &[NUMAGC_OK], "numagc_frame_leave");
    }
    hit("section left for its callback");
    0
}

unsafe extern "C" fn callback(s: *mut numagc_scope, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `Ctx` that `run_on` passed, alive and not used
    // by the waiting fuzzer thread until this callback returns.
    let ctx = unsafe { &mut *data.cast::<Ctx>() };
    ctx.token = s.addr();
    let mut b = Body::new(s, ctx.rt, false);
    b.program(ctx.st, 24);
    let (ret, open, blocking) = b.finish(ctx.st);
    ctx.ret = ret;
    ctx.open = open;
    ctx.blocking = blocking;
    ret
}

/// What every callback of `numagc_run_each` is handed: the program bytes
/// (read-only) and the runtime's descriptors.
struct EachCtx {
    ops: Vec<u8>,
    descs: Vec<Desc>,
    vprocs: usize,
    max_heap: usize,
}

fn run_each(st: &mut State) {
    let Some(k) = st.live_rt() else { return };
    let (rt, vprocs, descs, max_heap) = {
        let r = st.rts[k].as_ref().unwrap();
        (r.rt, r.vprocs, r.descs.clone(), r.max_heap)
    };
    let ops = st.inp.bytes(48).to_vec();
    st.ops += ops.len() / 4;
    let ctx = EachCtx { ops, descs, vprocs, max_heap };
    // SAFETY: a live runtime; `ctx` outlives the call and is only read.
    let rc = unsafe { numagc_run_each(rt, Some(each_callback), (&ctx as *const EachCtx).cast_mut().cast()) };
    expect(rc, &[NUMAGC_OK], "numagc_run_each");
    hit("run_each");
}

/// A `numagc_run_each` callback: the same allocation, read and collection
/// calls as `numagc_run_on`'s, on every vproc at once, with nothing that
/// waits for another vproc's callback (no channel ops).
unsafe extern "C" fn each_callback(s: *mut numagc_scope, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the `EachCtx` of `run_each`, alive and unchanged
    // until every callback has returned.
    let ctx = unsafe { &*data.cast::<EachCtx>() };
    let mut st = State { inp: Input::new(&ctx.ops), ops: 0, rts: Vec::new(), globals: Vec::new(), chans: Vec::new(), stale_scopes: Vec::new(), waited: Default::default() };
    st.rts.push(Some(Rt { rt: null_mut(), vprocs: ctx.vprocs, descs: ctx.descs.clone(), max_heap: ctx.max_heap }));
    let mut b = Body::new(s, 0, true);
    b.program(&mut st, 12);
    // A `run_each` callback must return cleanly: out of its section first.
    if b.blocking.is_some() {
        b.leave_section();
    }
    // Leave every frame: a `run_each` callback must return cleanly.
    while let Some(f) = b.frames.pop() {
        // SAFETY: our own scope and its innermost open frame.
        expect(unsafe { numagc_frame_leave(s, f) }, &[NUMAGC_OK], "numagc_frame_leave");
    }
    for (g, _, live) in st.globals {
        if live {
            expect(numagc_global_free(g), &[NUMAGC_OK], "numagc_global_free");
        }
    }
    0
}

/// What the program knows of a value.
#[derive(Clone, Debug)]
enum Shape {
    Unknown,
    Raw(Vec<u64>),
    Vector(Vec<Word>),
    Array(Vec<Word>),
    Mixed { desc: usize, words: Vec<Word> },
}

/// What the program knows of one field.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Word {
    Unknown,
    Int(i64),
    Raw(u64),
}

/// A handle the body made.
#[derive(Clone, Debug)]
struct H {
    v: numagc_value,
    /// Open frames when it was made: it dies when that frame is left.
    depth: usize,
    live: bool,
    shape: Shape,
}

/// A value argument and what the library must say about it.
#[derive(Clone, Copy, Debug)]
enum Arg {
    Int(i64),
    /// Index into `Body::hs` of a live handle.
    Live(usize),
    /// A handle whose frame was left, 0, or a forged even word.
    Bad(numagc_value),
}

/// One C body (a callback, a task, a `run_each` callback): its scope, the
/// handles and frames it made.
struct Body {
    s: *mut numagc_scope,
    rt: usize,
    hs: Vec<H>,
    frames: Vec<numagc_frame>,
    /// A `run_each` callback: no channel ops, no spawns that others wait for.
    concurrent: bool,
    /// Inside a blocking section (`numagc_enter_blocking`): the live
    /// handles and open frames at its start, which it may not change.
    blocking: Option<(usize, usize)>,
}

impl Body {
    fn new(s: *mut numagc_scope, rt: usize, concurrent: bool) -> Body {
        Body { s, rt, hs: Vec::new(), frames: Vec::new(), concurrent, blocking: None }
    }

    /// The heap limit of the body's runtime, in bytes.
    fn max_heap(&self, st: &State) -> usize {
        st.rts.get(self.rt).and_then(|r| r.as_ref()).map_or(0, |r| r.max_heap)
    }

    /// What allocating an object of `n` words must give before anything is
    /// read or sized by `n`, if the count alone decides: over the length
    /// field (2^48 - 1) `NUMAGC_ERR_INVALID_ARGUMENT`, more bytes than the
    /// heap limit `NUMAGC_ERR_HEAP_LIMIT`.
    fn len_refusal(n: usize, max_heap: usize) -> Option<numagc_status> {
        if n as u128 > (1u128 << 48) - 1 {
            Some(NUMAGC_ERR_INVALID_ARGUMENT)
        } else if (n as u128 + 1) * 8 > max_heap as u128 {
            Some(NUMAGC_ERR_HEAP_LIMIT)
        } else {
            None
        }
    }

    fn arg(&mut self, inp: &mut Input) -> Arg {
        let live: Vec<usize> = (0..self.hs.len()).filter(|&k| self.hs[k].live).collect();
        match inp.u8() % 16 {
            0..=6 if !live.is_empty() => Arg::Live(inp.pick(&live)),
            7 if self.hs.iter().any(|h| !h.live) => {
                let dead: Vec<usize> = (0..self.hs.len()).filter(|&k| !self.hs[k].live).collect();
                Arg::Bad(self.hs[inp.pick(&dead)].v)
            }
            8 => Arg::Bad(0),
            9 => Arg::Bad(inp.u64() & !1),
            _ => Arg::Int(inp.u32() as i32 as i64),
        }
    }

    fn value(&self, a: Arg) -> numagc_value {
        match a {
            Arg::Int(i) => numagc_int(i),
            Arg::Live(k) => self.hs[k].v,
            Arg::Bad(v) => v,
        }
    }

    fn word(&self, a: Arg) -> Word {
        match a {
            Arg::Int(i) => Word::Int(i),
            _ => Word::Unknown,
        }
    }

    fn is_bad(a: Arg) -> bool {
        matches!(a, Arg::Bad(_))
    }

    /// Records a value a call produced; immediates are not handles.
    fn made(&mut self, v: numagc_value, shape: Shape) -> Option<usize> {
        assert_ne!(v, 0, "a successful call produced value 0");
        if v & 1 == 1 {
            return None;
        }
        self.hs.push(H { v, depth: self.frames.len(), live: true, shape });
        Some(self.hs.len() - 1)
    }

    fn leave_to(&mut self, depth: usize) {
        for h in self.hs.iter_mut().filter(|h| h.depth >= depth) {
            h.live = false;
        }
    }

    fn len_arg(inp: &mut Input) -> usize {
        match inp.u8() % 16 {
            0 => inp.pick(&[1usize << 48, usize::MAX, 1 << 62]),
            1 => inp.below(MAX_LEN + 1),
            2 => inp.pick(&[1 << 14, 1 << 16, MAX_LEN]),
            _ => inp.below(40),
        }
    }

    /// A random sub-program of at most `n` calls.
    fn program(&mut self, st: &mut State, n: usize) {
        for _ in 0..n {
            if !st.tick() {
                break;
            }
            self.op(st);
        }
    }

    /// Ends the body: leaves its blocking section (or returns inside it on
    /// purpose), leaves its frames (or some of them open on purpose) and
    /// says what it returns.
    fn finish(&mut self, st: &mut State) -> (c_int, usize, bool) {
        let ret = if st.inp.one_in(16) { st.inp.pick(&[code(NUMAGC_ERR_MISUSE), 77, -1]) } else { 0 };
        if self.blocking.is_some() && !st.inp.one_in(3) {
            self.leave_section();
        }
        if self.blocking.is_some() {
            // Frames cannot be left inside a section either.
            if let Some(&f) = self.frames.last() {
                // SAFETY: our own scope and its innermost open frame.
                expect(unsafe { numagc_frame_leave(self.s, f) }, &[NUMAGC_ERR_MISUSE], "numagc_frame_leave inside a section");
            }
        } else if !st.inp.one_in(8) {
            while let Some(f) = self.frames.pop() {
                // SAFETY: our own scope and its innermost open frame.
                expect(unsafe { numagc_frame_leave(self.s, f) }, &[NUMAGC_OK], "numagc_frame_leave");
            }
        }
        (ret, self.frames.len(), self.blocking.is_some())
    }

    fn op(&mut self, st: &mut State) {
        if self.blocking.is_some() {
            return self.blocked_op(st);
        }
        let s = self.s;
        let inp = &mut st.inp;
        match inp.u8() % 32 {
            0 | 1 => {
                let mut f = 0;
                // SAFETY: our scope; a valid output.
                expect(unsafe { numagc_frame_enter(s, &mut f) }, &[NUMAGC_OK], "numagc_frame_enter");
                assert_ne!(f, 0);
                self.frames.push(f);
            }
            2 => {
                // Leave a frame: the innermost, another open one, or a bogus one.
                let (f, innermost) = match inp.u8() % 4 {
                    0 | 1 if !self.frames.is_empty() => (*self.frames.last().unwrap(), true),
                    2 if self.frames.len() > 1 => (self.frames[inp.below(self.frames.len() - 1)], false),
                    _ => (inp.u64(), false),
                };
                let innermost = innermost || self.frames.last() == Some(&f);
                // SAFETY: our scope; frames are ids, checked.
                let rc = unsafe { numagc_frame_leave(s, f) };
                if innermost {
                    expect(rc, &[NUMAGC_OK], "numagc_frame_leave (innermost)");
                    hit("frame left");
                    self.frames.pop();
                    self.leave_to(self.frames.len() + 1);
                } else {
                    expect(rc, &[NUMAGC_ERR_UNBALANCED_FRAME], "numagc_frame_leave (not innermost)");
                    hit("frame out of order");
                }
            }
            3 if !self.frames.is_empty() => {
                let a = self.arg(inp);
                let f = *self.frames.last().unwrap();
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_frame_return(s, f, self.value(a), &mut out) };
                if Self::is_bad(a) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_frame_return (bad value)");
                    assert_eq!(out, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_frame_return");
                    hit("frame_return");
                    let shape = match a {
                        Arg::Live(k) => self.hs[k].shape.clone(),
                        _ => Shape::Unknown,
                    };
                    self.frames.pop();
                    self.leave_to(self.frames.len() + 1);
                    self.made(out, shape);
                    if let Arg::Int(i) = a {
                        assert_eq!(out, numagc_int(i));
                    }
                }
            }
            4..=6 => self.alloc_mixed(st),
            7 => self.alloc_other(st),
            8..=10 => self.read(st),
            11 => self.store(st),
            12 => {
                let a = self.arg(inp);
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe {
                    if inp.bool() {
                        numagc_promote(s, self.value(a), &mut out)
                    } else {
                        numagc_local(s, self.value(a), &mut out)
                    }
                };
                if Self::is_bad(a) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_promote/local (bad value)");
                    assert_eq!(out, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_promote/local");
                    let shape = if let Arg::Live(k) = a { self.hs[k].shape.clone() } else { Shape::Unknown };
                    if out & 1 == 0 {
                        self.made(out, shape);
                    }
                }
            }
            13 => {
                let (var, val) = (self.arg(inp), self.arg(inp));
                // SAFETY: our scope.
                let rc = unsafe { numagc_assign(s, self.value(var), self.value(val)) };
                match var {
                    Arg::Live(k) if !Self::is_bad(val) => {
                        expect(rc, &[NUMAGC_OK], "numagc_assign");
                        self.hs[k].shape = if let Arg::Live(j) = val { self.hs[j].shape.clone() } else { Shape::Unknown };
                    }
                    _ => expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_assign (bad var or value)"),
                }
            }
            14 => {
                let mut b = false;
                let a = self.arg(inp);
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_is_local(s, self.value(a), &mut b) };
                expect(rc, &[if Self::is_bad(a) { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_OK }], "numagc_is_local");
            }
            15 => {
                // SAFETY: our scope.
                let rc = unsafe {
                    match inp.u8() % 4 {
                        0 => numagc_collect_minor(s),
                        1 => numagc_collect_major(s),
                        2 => numagc_collect_global(s),
                        _ => numagc_poll(s),
                    }
                };
                expect(rc, &[NUMAGC_OK], "a collection");
                hit("collection");
            }
            16 | 17 => self.global(st),
            18 => {
                let (mut h, mut f, mut v) = (0, 0, 0);
                // SAFETY: our scope, valid or NULL outputs.
                unsafe {
                    expect(numagc_scope_handles(s, &mut h, &mut f), &[NUMAGC_OK], "numagc_scope_handles");
                    assert_eq!(f, self.frames.len(), "open frames");
                    assert!(h >= self.hs.iter().filter(|x| x.live).count(), "live handles");
                    expect(numagc_scope_handles(s, null_mut(), null_mut()), &[NUMAGC_OK], "numagc_scope_handles(NULL)");
                    expect(numagc_scope_vproc(s, &mut v), &[NUMAGC_OK], "numagc_scope_vproc");
                    expect(numagc_scope_vprocs(s, &mut h), &[NUMAGC_OK], "numagc_scope_vprocs");
                    assert!(v < h);
                    expect(numagc_scope_vproc(s, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_scope_vproc(NULL)");
                    expect(numagc_frame_enter(s, null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_frame_enter(NULL)");
                }
            }
            19 | 20 => self.par2(st),
            21 | 22 if !self.concurrent => self.spawn(st),
            23 | 24 if !self.concurrent => self.channel(st),
            25 if !self.concurrent => {
                // Nested calls a callback may not make.
                let Some(rt) = st.rts[self.rt].as_ref().map(|r| r.rt) else { return };
                // SAFETY: a live runtime (it cannot be freed while this callback runs).
                unsafe {
                    expect(numagc_run_on(rt, 0, Some(callback), null_mut()), &[NUMAGC_ERR_MISUSE], "numagc_run_on from a callback");
                    expect(numagc_runtime_free(rt), &[NUMAGC_ERR_MISUSE], "numagc_runtime_free from a callback");
                    hit("nested run_on refused");
                }
            }
            26 => {
                // Our scope from another OS thread.
                let token = s.addr();
                let rc = std::thread::spawn(move || {
                    let s = std::ptr::without_provenance_mut::<numagc_scope>(token);
                    let mut f = 0;
                    // SAFETY: scope tokens are never dereferenced; a valid output.
                    unsafe { numagc_frame_enter(s, &mut f) }
                })
                .join()
                .expect("the helper thread returns");
                assert_eq!(rc, code(NUMAGC_ERR_NOT_ON_VPROC), "a scope used from another thread");
                hit("scope on another thread");
            }
            27 => {
                let Some(rt) = st.rts.get(self.rt).and_then(|r| r.as_ref()).filter(|r| !r.rt.is_null()).map(|r| r.rt) else { return };
                let mut d = 0;
                let size = 1 + inp.below(4);
                let mutable = inp.bool();
                // SAFETY: a live runtime; registering from a callback is allowed.
                let rc = unsafe { numagc_register_mixed(rt, c"late".as_ptr(), size, [0usize].as_ptr(), 1, c_int::from(mutable), &mut d) };
                expect(rc, &[NUMAGC_OK], "numagc_register_mixed from a callback");
                let mut ptr = vec![false; size];
                ptr[0] = true;
                st.rts[self.rt].as_mut().unwrap().descs.push(Desc { id: d, size, ptr, mutable });
                // The flag out of range, or a count beyond the array: refused, no descriptor.
                let (flag, n) = if inp.bool() { (inp.pick(BAD_INTS), 1) } else { (0, huge_count(inp)) };
                let mut d = 9;
                // SAFETY: as above; the array is never read past its one element.
                let rc = unsafe { numagc_register_mixed(rt, c"late".as_ptr(), size, [0usize].as_ptr(), n, flag, &mut d) };
                let want = if flag != 0 { NUMAGC_ERR_INVALID_ARGUMENT } else { NUMAGC_ERR_INVALID_DESCRIPTOR };
                expect(rc, &[want], "numagc_register_mixed from a callback (bad flag or count)");
                assert_eq!(d, 0);
                hit(if flag != 0 { "bad int refused" } else { "huge count refused" });
            }
            28 => self.blocking_op(st),
            29 => self.huge(st),
            _ => self.alloc_mixed(st),
        }
    }

    // ---- blocking sections ----------------------------------------------------

    /// Outside a section: enters one (sometimes with a global collection
    /// forced from another vproc while inside), or leaves without having
    /// entered (`NUMAGC_ERR_MISUSE`, nothing changes).
    fn blocking_op(&mut self, st: &mut State) {
        let s = self.s;
        if st.inp.one_in(4) {
            // SAFETY: our scope.
            expect(unsafe { numagc_leave_blocking(s) }, &[NUMAGC_ERR_MISUSE], "numagc_leave_blocking without a section");
            hit("blocking misuse refused");
            return;
        }
        let (mut h, mut f) = (0, 0);
        // SAFETY: our scope, valid outputs.
        expect(unsafe { numagc_scope_handles(s, &mut h, &mut f) }, &[NUMAGC_OK], "numagc_scope_handles");
        // A thread on another vproc that forces a global collection, which
        // must complete while this vproc is inside its section (its proxy
        // takes part for it); spawned just before the section starts.
        let vprocs = st.rts.get(self.rt).and_then(|r| r.as_ref()).map_or(1, |r| r.vprocs);
        let budget = st.waited < std::time::Duration::from_secs(2);
        let collector = if !self.concurrent && vprocs > 1 && budget && st.inp.bool() {
            let mut me = 0;
            // SAFETY: our scope, a valid output.
            expect(unsafe { numagc_scope_vproc(s, &mut me) }, &[NUMAGC_OK], "numagc_scope_vproc");
            let other = (me + 1 + st.inp.below(vprocs - 1)) % vprocs;
            let id = NEXT_COLLECTOR.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let data = std::ptr::without_provenance_mut::<c_void>(id << 4 | T_COLLECT);
            // SAFETY: our scope; no environment; the body has the thread
            // signature and decodes its userdata, an integer.
            let rc = unsafe { numagc_spawn_on(s, other, null(), 0, Some(thread_body), data) };
            expect(rc, &[NUMAGC_OK], "numagc_spawn_on (a collector thread)");
            Some(id)
        } else {
            None
        };
        // SAFETY: our scope.
        let rc = unsafe { numagc_enter_blocking(s) };
        // NUMAGC_ERR_OS: the proxy thread could not be started; no section.
        expect(rc, &[NUMAGC_OK, NUMAGC_ERR_OS], "numagc_enter_blocking");
        if rc != 0 {
            return;
        }
        hit("blocking section");
        self.blocking = Some((h, f));
        if let Some(id) = collector {
            let start = std::time::Instant::now();
            let limit = std::time::Duration::from_secs(1);
            let done = loop {
                if let Some(rc) = lock_collected().remove(&id) {
                    break Some(rc);
                }
                if start.elapsed() > limit {
                    break None;
                }
                std::thread::sleep(std::time::Duration::from_micros(50));
            };
            st.waited += start.elapsed();
            // The thread may be late (the other vproc busy with another
            // thread): then it collects after the section, which is fine.
            if let Some(rc) = done {
                expect(rc, &[NUMAGC_OK], "a global collection from another vproc while this one is in a section");
                hit("collection during a section");
            }
        }
    }

    /// Inside a section: leave it, or make a call that is refused there.
    fn blocked_op(&mut self, st: &mut State) {
        let s = self.s;
        match st.inp.u8() % 8 {
            0 | 1 => self.leave_section(),
            2 => {
                // SAFETY: our scope.
                expect(unsafe { numagc_enter_blocking(s) }, &[NUMAGC_ERR_MISUSE], "numagc_enter_blocking twice");
                hit("blocking misuse refused");
            }
            3 => {
                // Calls that take no scope still work: the runtime's.
                if let Some(k) = (0..st.chans.len()).find(|&k| st.chans[k].live && st.chans[k].rt == self.rt) {
                    let mut n = 99;
                    // SAFETY: a live channel token and a valid output.
                    expect(unsafe { numagc_channel_waiting(st.chans[k].token, &mut n) }, &[NUMAGC_OK], "numagc_channel_waiting inside a section");
                }
                let Some(rt) = st.rts.get(self.rt).and_then(|r| r.as_ref()).filter(|r| !r.rt.is_null()).map(|r| r.rt) else { return };
                let mut d = 0;
                // SAFETY: a live runtime, one offset, a valid output.
                let rc = unsafe { numagc_register_mixed(rt, c"blocking".as_ptr(), 2, [1usize].as_ptr(), 1, 0, &mut d) };
                expect(rc, &[NUMAGC_OK], "numagc_register_mixed inside a section");
                st.rts[self.rt].as_mut().unwrap().descs.push(Desc { id: d, size: 2, ptr: vec![false, true], mutable: false });
            }
            _ => self.refused_in_section(st),
        }
    }

    /// A scope call inside a section: `NUMAGC_ERR_MISUSE`, whatever its
    /// (well-formed) arguments, with outputs zeroed and nothing changed.
    fn refused_in_section(&mut self, st: &mut State) {
        let s = self.s;
        let a = self.arg(&mut st.inp);
        let v = self.value(a);
        let inp = &mut st.inp;
        let (mut out, mut f, mut n) = (9, 9, 9usize);
        let misuse = [NUMAGC_ERR_MISUSE];
        // SAFETY: our scope; valid outputs, arrays of the announced lengths;
        // channel tokens are never dereferenced; the task and thread
        // functions have their signatures (they are not run).
        unsafe {
            match inp.u8() % 16 {
                0 => {
                    expect(numagc_frame_enter(s, &mut f), &misuse, "numagc_frame_enter in a section");
                    assert!(f == 0 || f == 9);
                }
                1 => {
                    let f = self.frames.last().copied().unwrap_or(inp.u64());
                    expect(numagc_frame_leave(s, f), &misuse, "numagc_frame_leave in a section");
                }
                2 => {
                    let f = self.frames.last().copied().unwrap_or(inp.u64());
                    expect(numagc_frame_return(s, f, v, &mut out), &misuse, "numagc_frame_return in a section");
                    assert_eq!(out, 0);
                }
                3 => {
                    expect(numagc_alloc_vector(s, [v, v].as_ptr(), 2, &mut out), &misuse, "numagc_alloc_vector in a section");
                    assert_eq!(out, 0);
                }
                4 => {
                    let ws = [inp.u64(); 3];
                    expect(numagc_alloc_raw(s, ws.as_ptr(), 3, &mut out), &misuse, "numagc_alloc_raw in a section");
                    assert_eq!(out, 0);
                }
                5 => {
                    expect(numagc_field(s, v, inp.below(4), &mut out), &misuse, "numagc_field in a section");
                    assert_eq!(out, 0);
                    let mut w = 9;
                    expect(numagc_raw(s, v, 0, &mut w), &misuse, "numagc_raw in a section");
                    expect(numagc_length(s, v, &mut n), &misuse, "numagc_length in a section");
                    let mut k = NUMAGC_KIND_INT;
                    expect(numagc_kind_of(s, v, &mut k, null_mut()), &misuse, "numagc_kind_of in a section");
                }
                6 => {
                    expect(numagc_set(s, v, 0, numagc_int(1)), &misuse, "numagc_set in a section");
                    expect(numagc_set_raw(s, v, 0, 1), &misuse, "numagc_set_raw in a section");
                }
                7 => {
                    expect(numagc_promote(s, v, &mut out), &misuse, "numagc_promote in a section");
                    assert_eq!(out, 0);
                    expect(numagc_local(s, v, &mut out), &misuse, "numagc_local in a section");
                    expect(numagc_assign(s, v, v), &misuse, "numagc_assign in a section");
                    let mut b = false;
                    expect(numagc_is_local(s, v, &mut b), &misuse, "numagc_is_local in a section");
                }
                8 => {
                    let rc = match inp.u8() % 4 {
                        0 => numagc_collect_minor(s),
                        1 => numagc_collect_major(s),
                        2 => numagc_collect_global(s),
                        _ => numagc_poll(s),
                    };
                    expect(rc, &misuse, "a collection in a section");
                }
                9 => {
                    let mut g = 9;
                    expect(numagc_global_new(s, v, &mut g), &misuse, "numagc_global_new in a section");
                    assert_eq!(g, 0);
                    if let Some(&(g, _, _)) = st.globals.first() {
                        expect(numagc_global_get(s, g, &mut out), &misuse, "numagc_global_get in a section");
                        assert_eq!(out, 0);
                        expect(numagc_global_set(s, g, v), &misuse, "numagc_global_set in a section");
                    }
                }
                10 => {
                    expect(numagc_scope_vproc(s, &mut n), &misuse, "numagc_scope_vproc in a section");
                    expect(numagc_scope_vprocs(s, &mut n), &misuse, "numagc_scope_vprocs in a section");
                    expect(numagc_scope_handles(s, &mut n, null_mut()), &misuse, "numagc_scope_handles in a section");
                }
                11 => {
                    let (mut x, mut y) = (9, 9);
                    let env = [v];
                    let rc = numagc_par2(s, env.as_ptr(), 1, Some(task), task_data(s.addr(), 0), Some(task), task_data(s.addr(), 0), &mut x, &mut y);
                    expect(rc, &misuse, "numagc_par2 in a section");
                    assert_eq!((x, y), (0, 0));
                }
                12 => {
                    let data = std::ptr::without_provenance_mut::<c_void>(T_EXIT);
                    expect(numagc_spawn(s, [v].as_ptr(), 1, Some(thread_body), data), &misuse, "numagc_spawn in a section");
                    expect(numagc_spawn_on(s, 0, null(), 0, Some(thread_body), data), &misuse, "numagc_spawn_on in a section");
                }
                13 if !st.chans.is_empty() => {
                    // Any channel, any direction, even a `dir` out of range:
                    // refused before the channel or the cases are looked at,
                    // so nothing waits and nothing is offered. (The offers
                    // queued are not compared: threads on other vprocs may
                    // queue theirs meanwhile.)
                    let c = st.chans[inp.below(st.chans.len())];
                    expect(numagc_send(s, c.token, v), &misuse, "numagc_send in a section");
                    expect(numagc_recv(s, c.token, &mut out), &misuse, "numagc_recv in a section");
                    assert_eq!(out, 0);
                    let dir = if inp.bool() { inp.pick(BAD_INTS) } else { NUMAGC_SEND as c_int };
                    let cases = [numagc_sel { channel: c.token, dir, value: v }];
                    let mut i = 9;
                    expect(numagc_select(s, cases.as_ptr(), 1, &mut i, &mut out), &misuse, "numagc_select in a section");
                    assert_eq!(out, 0);
                }
                _ => {
                    let mut buf = [0u64; 2];
                    expect(numagc_read_raw(s, v, 0, buf.as_mut_ptr(), 2), &misuse, "numagc_read_raw in a section");
                    expect(numagc_read_f64s(s, v, 0, buf.as_mut_ptr().cast(), 2), &misuse, "numagc_read_f64s in a section");
                }
            }
        }
        hit("refused in a section");
    }

    /// Leaves the section: the handles and frames are those it started
    /// with, and every object still reads back what the model says
    /// (collections may have moved them meanwhile).
    fn leave_section(&mut self) {
        let s = self.s;
        let (h0, f0) = self.blocking.take().expect("in a section");
        // SAFETY: our scope, valid outputs.
        unsafe {
            expect(numagc_leave_blocking(s), &[NUMAGC_OK], "numagc_leave_blocking");
            let (mut h, mut f) = (0, 0);
            expect(numagc_scope_handles(s, &mut h, &mut f), &[NUMAGC_OK], "numagc_scope_handles after a section");
            assert_eq!((h, f), (h0, f0), "a blocking section changed the handles or frames");
            assert_eq!(f, self.frames.len());
        }
        self.check_values();
        hit("blocking section left");
    }

    /// Reads back every word the model knows of the body's live objects
    /// (up to 64 words each), inside a frame of its own.
    fn check_values(&self) {
        let s = self.s;
        // SAFETY: our scope; valid outputs; a buffer of the announced length.
        unsafe {
            let mut f = 0;
            expect(numagc_frame_enter(s, &mut f), &[NUMAGC_OK], "numagc_frame_enter");
            for h in self.hs.iter().filter(|h| h.live) {
                match &h.shape {
                    Shape::Raw(ws) if ws.len() <= 64 => {
                        let mut buf = vec![0u64; ws.len()];
                        expect(numagc_read_raw(s, h.v, 0, buf.as_mut_ptr(), ws.len()), &[NUMAGC_OK], "numagc_read_raw (check)");
                        assert_eq!(&buf, ws, "a raw object changed");
                    }
                    Shape::Vector(ws) | Shape::Array(ws) | Shape::Mixed { words: ws, .. } if ws.len() <= 64 => {
                        for (i, w) in ws.iter().enumerate() {
                            match *w {
                                Word::Int(x) => {
                                    let mut out = 0;
                                    expect(numagc_field(s, h.v, i, &mut out), &[NUMAGC_OK], "numagc_field (check)");
                                    assert_eq!(out, numagc_int(x), "field {i} of {:?} changed", h.shape);
                                }
                                Word::Raw(x) => {
                                    let mut out = 0;
                                    expect(numagc_raw(s, h.v, i, &mut out), &[NUMAGC_OK], "numagc_raw (check)");
                                    assert_eq!(out, x, "raw field {i} of {:?} changed", h.shape);
                                }
                                Word::Unknown => {}
                            }
                        }
                    }
                    _ => {}
                }
            }
            expect(numagc_frame_leave(s, f), &[NUMAGC_OK], "numagc_frame_leave");
        }
    }

    // ---- counts far beyond their arrays -----------------------------------------

    /// A pointer+count entry point with a count far beyond its (short)
    /// array: refused with the documented code before the array is read.
    /// Object lengths the heap limit would let through are not made (the
    /// library would read the whole array, as C asked).
    fn huge(&mut self, st: &mut State) {
        let s = self.s;
        let max_heap = self.max_heap(st);
        let vprocs = st.rts.get(self.rt).and_then(|r| r.as_ref()).map_or(1, |r| r.vprocs);
        let n = huge_count(&mut st.inp);
        let a = self.arg(&mut st.inp);
        let v = self.value(a);
        let inp = &mut st.inp;
        let vs = [v, v];
        let ws = [inp.u64(); 2];
        let mut out = 9;
        let invalid = NUMAGC_ERR_INVALID_ARGUMENT;
        // SAFETY: our scope; arrays shorter than announced, which the
        // library must not read (it refuses the count first); valid outputs.
        unsafe {
            match inp.u8() % 8 {
                k @ 0..=2 => {
                    let Some(want) = Self::len_refusal(n, max_heap) else { return };
                    let rc = match k {
                        0 => numagc_alloc_vector(s, vs.as_ptr(), n, &mut out),
                        1 => numagc_alloc_raw(s, ws.as_ptr(), n, &mut out),
                        _ => numagc_alloc_f64s(s, ws.as_ptr().cast(), n, &mut out),
                    };
                    expect(rc, &[want], "an allocation of a count far beyond its array");
                    assert_eq!(out, 0);
                }
                k @ 3..=4 => {
                    let Some(len) = Self::len_refusal(n, max_heap) else { return };
                    let want = if Self::is_bad(a) { NUMAGC_ERR_BAD_VALUE } else { len };
                    let rc = if k == 3 { numagc_alloc_vector_filled(s, n, v, &mut out) } else { numagc_alloc_array(s, n, v, &mut out) };
                    expect(rc, &[want], "numagc_alloc_vector_filled / _array of a huge length");
                    assert_eq!(out, 0);
                }
                5 => {
                    let (mut x, mut y) = (9, 9);
                    let rc = numagc_par2(s, vs.as_ptr(), n, Some(task), task_data(s.addr(), 0), Some(task), task_data(s.addr(), 0), &mut x, &mut y);
                    expect(rc, &[invalid], "numagc_par2 with n far beyond env");
                    assert_eq!((x, y), (0, 0));
                }
                6 => {
                    let data = std::ptr::without_provenance_mut::<c_void>(T_EXIT);
                    let rc = if inp.bool() {
                        numagc_spawn(s, vs.as_ptr(), n, Some(thread_body), data)
                    } else {
                        // The count is checked before the vproc.
                        numagc_spawn_on(s, inp.below(vprocs + 2), vs.as_ptr(), n, Some(thread_body), data)
                    };
                    expect(rc, &[invalid], "numagc_spawn with n far beyond env");
                }
                _ => {
                    let cases = [numagc_sel { channel: null_mut(), dir: NUMAGC_RECV as c_int, value: 0 }];
                    let mut i = 9;
                    let p = if inp.bool() { cases.as_ptr() } else { null() };
                    let rc = numagc_select(s, p, n, &mut i, &mut out);
                    expect(rc, &[invalid], "numagc_select with n far beyond cases");
                    assert_eq!(out, 0);
                    let mut buf = [0u64; 2];
                    let rc = numagc_read_raw(s, v, inp.below(4), buf.as_mut_ptr(), n);
                    let want = if Self::is_bad(a) { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_ERR_MISUSE };
                    expect(rc, &[want], "numagc_read_raw with n far beyond buf");
                }
            }
        }
        hit("huge count refused");
    }

    fn descs<'s>(&self, st: &'s State) -> &'s [Desc] {
        st.rts.get(self.rt).and_then(|r| r.as_ref()).map_or(&[], |r| &r.descs[..])
    }

    fn desc_arg(&self, st: &mut State) -> (numagc_desc, Option<Desc>) {
        let n = self.descs(st).len();
        if n == 0 || st.inp.one_in(8) {
            let id = st.inp.pick(&[0u32, 1, 2, 3, 32767, 32768, u32::MAX, 9999]);
            let known = self.descs(st).iter().find(|d| d.id == id).cloned();
            return (id, known);
        }
        let k = st.inp.below(n);
        let d = self.descs(st)[k].clone();
        (d.id, Some(d))
    }

    fn alloc_mixed(&mut self, st: &mut State) {
        let (id, desc) = self.desc_arg(st);
        let inp = &mut st.inp;
        let (np, nr) = desc.as_ref().map_or((inp.below(3), inp.below(3)), |d| {
            let p = d.ptr.iter().filter(|&&b| b).count();
            (p, d.size - p)
        });
        let skew = inp.u8() % 16;
        let (nv, nraw) = match skew {
            0 => (np + 1, nr),
            1 => (np, nr + 1),
            2 if np > 0 => (np - 1, nr),
            _ => (np, nr),
        };
        let args: Vec<Arg> = (0..nv).map(|_| self.arg(inp)).collect();
        let values: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let raws: Vec<u64> = (0..nraw).map(|_| inp.u64()).collect();
        // Now and then a count far beyond its array (which must not be read).
        let (nv_arg, nraw_arg) = match skew {
            3 => (huge_count(inp), nraw),
            4 => (nv, huge_count(inp)),
            _ => (nv, nraw),
        };
        let null_values = nv_arg > 0 && inp.one_in(32);
        let mut out = 9;
        // SAFETY: our scope; arrays of the announced lengths (or NULL); a valid output.
        let rc = unsafe {
            numagc_alloc_mixed(
                self.s,
                id,
                if null_values { null() } else { values.as_ptr() },
                nv_arg,
                raws.as_ptr(),
                nraw_arg,
                &mut out,
            )
        };
        let want: &[numagc_status] = if null_values {
            &[NUMAGC_ERR_NULL_ARGUMENT]
        } else if desc.is_none() {
            &[NUMAGC_ERR_UNKNOWN_DESCRIPTOR]
        } else if (nv_arg, nraw_arg) != (np, nr) {
            // The counts are checked before the values are read.
            if (nv_arg, nraw_arg) != (nv, nraw) {
                hit("huge count refused");
            }
            &[NUMAGC_ERR_MISUSE]
        } else if args.iter().any(|&a| Self::is_bad(a)) {
            &[NUMAGC_ERR_BAD_VALUE]
        } else {
            &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT]
        };
        expect(rc, want, "numagc_alloc_mixed");
        if want.len() == 1 && want[0] == NUMAGC_ERR_BAD_VALUE && args.iter().any(|a| matches!(a, Arg::Bad(v) if *v != 0 && self.hs.iter().any(|h| h.v == *v))) {
            hit("stale handle refused");
        }
        if rc != 0 {
            assert_eq!(out, 0, "a failed allocation left its output set");
            hit("mixed refused");
            return;
        }
        hit("mixed");
        let d = desc.unwrap();
        let (mut vi, mut ri) = (0, 0);
        let words: Vec<Word> = d
            .ptr
            .iter()
            .map(|&p| {
                if p {
                    vi += 1;
                    self.word(args[vi - 1])
                } else {
                    ri += 1;
                    Word::Raw(raws[ri - 1])
                }
            })
            .collect();
        let di = self.descs(st).iter().position(|x| x.id == d.id).unwrap();
        // Long objects are not modelled word by word.
        let shape = if words.len() > 4096 { Shape::Unknown } else { Shape::Mixed { desc: di, words } };
        self.made(out, shape);
    }

    fn alloc_other(&mut self, st: &mut State) {
        let max_heap = self.max_heap(st);
        let inp = &mut st.inp;
        let s = self.s;
        let mut out = 9;
        let kind = inp.u8() % 5;
        let (rc, want, shape): (c_int, Vec<numagc_status>, Shape) = match kind {
            0 => {
                let n = inp.below(10);
                let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
                let vs: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
                // SAFETY: our scope, an array of `n` values, a valid output.
                let rc = unsafe { numagc_alloc_vector(s, vs.as_ptr(), n, &mut out) };
                let bad = args.iter().any(|&a| Self::is_bad(a));
                let want = if bad { vec![NUMAGC_ERR_BAD_VALUE] } else { vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT] };
                (rc, want, Shape::Vector(args.iter().map(|&a| self.word(a)).collect()))
            }
            1 | 2 => {
                let len = Self::len_arg(inp);
                let a = self.arg(inp);
                // SAFETY: our scope, a valid output.
                let rc = unsafe {
                    if kind == 1 {
                        numagc_alloc_vector_filled(s, len, self.value(a), &mut out)
                    } else {
                        numagc_alloc_array(s, len, self.value(a), &mut out)
                    }
                };
                let want = if Self::is_bad(a) {
                    vec![NUMAGC_ERR_BAD_VALUE]
                } else if let Some(e) = Self::len_refusal(len, max_heap) {
                    vec![e]
                } else {
                    vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT]
                };
                // Long objects are not modelled word by word.
                let shape = if len > 4096 {
                    Shape::Unknown
                } else if kind == 1 {
                    Shape::Vector(vec![self.word(a); len])
                } else {
                    Shape::Array(vec![self.word(a); len])
                };
                (rc, want, shape)
            }
            _ => {
                let n = inp.below(12);
                let words: Vec<u64> = (0..n).map(|_| inp.u64()).collect();
                // SAFETY: our scope, an array of `n` words (u64 and f64 have
                // the same size), a valid output.
                let rc = unsafe {
                    if kind == 3 {
                        numagc_alloc_raw(s, words.as_ptr(), n, &mut out)
                    } else {
                        numagc_alloc_f64s(s, words.as_ptr().cast(), n, &mut out)
                    }
                };
                (rc, vec![NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT], Shape::Raw(words))
            }
        };
        expect(rc, &want, "an allocation");
        if rc == 0 {
            hit("object");
            self.made(out, shape);
        } else {
            assert_eq!(out, 0, "a failed allocation left its output set");
        }
    }

    /// Reads fields back and checks them against what was stored.
    fn read(&mut self, st: &mut State) {
        let s = self.s;
        let a = self.arg(&mut st.inp);
        let shape = if let Arg::Live(k) = a { self.hs[k].shape.clone() } else { Shape::Unknown };
        let v = self.value(a);
        // The layout of a mixed object's descriptor, if that is what it is.
        let layout: Option<(numagc_desc, Vec<bool>)> = match &shape {
            Shape::Mixed { desc, .. } => Some((self.descs(st)[*desc].id, self.descs(st)[*desc].ptr.clone())),
            _ => None,
        };
        let inp = &mut st.inp;
        let len = match &shape {
            Shape::Raw(w) => Some(w.len()),
            Shape::Vector(w) | Shape::Array(w) => Some(w.len()),
            Shape::Mixed { words, .. } => Some(words.len()),
            Shape::Unknown => None,
        };
        let i = match len {
            Some(n) if !inp.one_in(4) => inp.below(n.max(1)),
            _ => inp.below(8) + if inp.bool() { len.unwrap_or(0) } else { 0 },
        };
        let is_int = matches!(a, Arg::Int(_));
        let bad = Self::is_bad(a);
        match inp.u8() % 5 {
            0 => {
                let mut n = 7;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_length(s, v, &mut n) };
                expect(rc, &[if bad { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_OK }], "numagc_length");
                if rc == 0 {
                    assert_eq!(n, if is_int { 0 } else { len.unwrap_or(n) }, "length of {shape:?}");
                }
                let (mut k, mut d) = (NUMAGC_KIND_INT, 5);
                // SAFETY: our scope, valid outputs.
                let rc = unsafe { numagc_kind_of(s, v, &mut k, if inp.bool() { &mut d } else { null_mut() }) };
                expect(rc, &[if bad { NUMAGC_ERR_BAD_VALUE } else { NUMAGC_OK }], "numagc_kind_of");
                if rc == 0 {
                    let want = match &shape {
                        Shape::Raw(_) => Some(NUMAGC_KIND_RAW),
                        Shape::Vector(_) => Some(NUMAGC_KIND_VECTOR),
                        Shape::Array(_) => Some(NUMAGC_KIND_ARRAY),
                        Shape::Mixed { .. } => Some(NUMAGC_KIND_MIXED),
                        Shape::Unknown if is_int => Some(NUMAGC_KIND_INT),
                        Shape::Unknown => None,
                    };
                    if let Some(w) = want {
                        assert_eq!(k, w, "kind of {shape:?}");
                    }
                    if let (Some((id, _)), true) = (&layout, d != 5) {
                        assert_eq!(d, *id);
                    }
                }
            }
            1 | 2 => {
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_field(s, v, i, &mut out) };
                let expected = match &shape {
                    Shape::Vector(w) | Shape::Array(w) if i < w.len() => Some(Ok(w[i])),
                    Shape::Mixed { words, .. } if i < words.len() && layout.as_ref().is_some_and(|l| l.1[i]) => Some(Ok(words[i])),
                    Shape::Unknown => None,
                    _ => Some(Err(())),
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_field (bad value)");
                } else if is_int {
                    expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_field of an immediate");
                } else {
                    match expected {
                        Some(Ok(w)) => {
                            expect(rc, &[NUMAGC_OK], "numagc_field");
                            hit("field read");
                            if let Word::Int(x) = w {
                                assert_eq!(out, numagc_int(x), "field {i} of {shape:?}");
                            }
                        }
                        Some(Err(())) => expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_field (out of range or raw)"),
                        None => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_field"),
                    }
                }
                if rc == 0 {
                    self.made(out, Shape::Unknown);
                } else {
                    assert_eq!(out, 0);
                }
            }
            3 => {
                let mut w = 0u64;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_raw(s, v, i, &mut w) };
                let expected = match &shape {
                    Shape::Raw(ws) if i < ws.len() => Some(Some(ws[i])),
                    Shape::Mixed { words, .. } if i < words.len() => match words[i] {
                        Word::Raw(x) => Some(Some(x)),
                        _ => Some(None),
                    },
                    Shape::Unknown => None,
                    _ => Some(None),
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_raw (bad value)");
                } else if is_int {
                    expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_raw of an immediate");
                } else {
                    match expected {
                        Some(Some(x)) => {
                            expect(rc, &[NUMAGC_OK], "numagc_raw");
                            hit("raw read");
                            assert_eq!(w, x, "raw {i} of {shape:?}");
                        }
                        Some(None) => expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_raw (out of range or a value)"),
                        None => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_raw"),
                    }
                }
            }
            _ => {
                let n = inp.below(6);
                let start = if inp.one_in(8) { usize::MAX - inp.below(3) } else { inp.below(8) };
                let mut buf = vec![0u64; n];
                // SAFETY: our scope, a buffer of `n` words (or NULL with n = 0).
                let rc = unsafe {
                    if inp.bool() {
                        numagc_read_raw(s, v, start, buf.as_mut_ptr(), n)
                    } else {
                        numagc_read_f64s(s, v, start, buf.as_mut_ptr().cast(), n)
                    }
                };
                if bad {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_read_raw (bad value)");
                } else {
                    match &shape {
                        Shape::Raw(ws) if start.checked_add(n).is_some_and(|e| e <= ws.len()) => {
                            expect(rc, &[NUMAGC_OK], "numagc_read_raw");
                            assert_eq!(&buf[..], &ws[start..start + n]);
                        }
                        Shape::Unknown if !is_int => expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_read_raw"),
                        _ => expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_read_raw (not raw, or out of range)"),
                    }
                }
            }
        }
    }

    fn store(&mut self, st: &mut State) {
        let target = self.arg(&mut st.inp);
        let (shape, k) = match target {
            Arg::Live(k) => (self.hs[k].shape.clone(), Some(k)),
            _ => (Shape::Unknown, None),
        };
        let layout: Option<(bool, Vec<bool>)> = match &shape {
            Shape::Mixed { desc, .. } => Some((self.descs(st)[*desc].mutable, self.descs(st)[*desc].ptr.clone())),
            _ => None,
        };
        let inp = &mut st.inp;
        let len = match &shape {
            Shape::Array(w) | Shape::Vector(w) => w.len(),
            Shape::Mixed { words, .. } => words.len(),
            Shape::Raw(w) => w.len(),
            Shape::Unknown => 4,
        };
        let i = if inp.one_in(4) { len + inp.below(3) } else { inp.below(len.max(1)) };
        let raw = inp.one_in(3);
        let val = self.arg(inp);
        let word = inp.u64();
        // SAFETY: our scope.
        let rc = unsafe {
            if raw {
                numagc_set_raw(self.s, self.value(target), i, word)
            } else {
                numagc_set(self.s, self.value(target), i, self.value(val))
            }
        };
        let ok = match &shape {
            Shape::Array(w) => !raw && i < w.len(),
            Shape::Mixed { words, .. } => {
                let (mutable, ptr) = layout.as_ref().expect("a mixed shape has its layout");
                *mutable && i < words.len() && ptr[i] != raw
            }
            Shape::Vector(_) | Shape::Raw(_) => false,
            Shape::Unknown => {
                if Self::is_bad(target) || (!raw && Self::is_bad(val)) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_set (bad value)");
                } else {
                    expect(rc, &[NUMAGC_OK, NUMAGC_ERR_MISUSE], "numagc_set");
                }
                if rc == 0 {
                    // The target may be any mutable object this body knows
                    // (read from a field, a global root, a channel, a task):
                    // forget what they hold.
                    for h in self.hs.iter_mut() {
                        if let Shape::Array(_) | Shape::Mixed { .. } = h.shape {
                            h.shape = Shape::Unknown;
                        }
                    }
                }
                return;
            }
        };
        if !raw && Self::is_bad(val) {
            expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_set (bad value)");
            return;
        }
        if !ok {
            expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_set(_raw) refused");
            hit("store refused");
            return;
        }
        expect(rc, &[NUMAGC_OK], "numagc_set(_raw)");
        hit("store");
        let w = if raw { Word::Raw(word) } else { self.word(val) };
        let k = k.unwrap();
        match &mut self.hs[k].shape {
            Shape::Array(ws) | Shape::Mixed { words: ws, .. } => ws[i] = w,
            _ => unreachable!(),
        }
        // Copies of the same object (other handles) are not tracked: they
        // might now read the new value, so forget what they knew.
        let v = self.hs[k].v;
        for (j, h) in self.hs.iter_mut().enumerate() {
            if j != k && h.v != v {
                if let Shape::Array(_) | Shape::Mixed { .. } = h.shape {
                    h.shape = Shape::Unknown;
                }
            }
        }
    }

    fn global(&mut self, st: &mut State) {
        let s = self.s;
        let my_rt = self.rt;
        match st.inp.u8() % 4 {
            0 | 1 => {
                let a = self.arg(&mut st.inp);
                let mut g = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_global_new(s, self.value(a), &mut g) };
                if Self::is_bad(a) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_new (bad value)");
                    assert_eq!(g, 0);
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_global_new");
                    hit("global");
                    assert_ne!(g, 0);
                    st.globals.push((g, my_rt, true));
                }
            }
            2 => {
                let (g, rt, live) = if st.globals.is_empty() || st.inp.one_in(8) {
                    (st.inp.u64(), usize::MAX, false)
                } else {
                    st.globals[st.inp.below(st.globals.len())]
                };
                let mut out = 9;
                // SAFETY: our scope, a valid output.
                let rc = unsafe { numagc_global_get(s, g, &mut out) };
                if live && rt == my_rt {
                    expect(rc, &[NUMAGC_OK], "numagc_global_get");
                    hit("global read");
                    self.made(out, Shape::Unknown);
                } else if rt == usize::MAX {
                    expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_global_get (forged)");
                    if rc == 0 {
                        self.made(out, Shape::Unknown);
                    }
                } else {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_get (freed or of another runtime)");
                    assert_eq!(out, 0);
                }
            }
            _ => {
                if st.globals.is_empty() {
                    return;
                }
                let (g, rt, live) = st.globals[st.inp.below(st.globals.len())];
                let a = self.arg(&mut st.inp);
                // SAFETY: our scope.
                let rc = unsafe { numagc_global_set(s, g, self.value(a)) };
                if !(live && rt == my_rt) || Self::is_bad(a) {
                    expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_global_set (bad root or value)");
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_global_set");
                }
            }
        }
    }

    fn par2(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let n = inp.below(4);
        let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
        let env: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let (ka, kb) = (inp.below(TASK_KINDS), inp.below(TASK_KINDS));
        let parent = self.s.addr();
        let (da, db) = (task_data(parent, ka), task_data(parent, kb));
        let (mut oa, mut ob) = (9, 9);
        let null_b = inp.one_in(32);
        // SAFETY: our scope; an environment of `n` values; the task
        // functions have the task signature; the userdata are integers the
        // tasks decode, never pointers; valid outputs.
        let rc = unsafe { numagc_par2(self.s, env.as_ptr(), n, Some(task), da, if null_b { None } else { Some(task) }, db, &mut oa, &mut ob) };
        // A task that allocates (2, or 7's nested fork) may also hit the
        // heap limit, one that enters a blocking section (8, 9) find that
        // its proxy thread cannot be started; `a`'s failure comes first.
        let may_fail = |k: usize| match k {
            2 | 7 => Some(NUMAGC_ERR_HEAP_LIMIT),
            8 | 9 => Some(NUMAGC_ERR_OS),
            _ => None,
        };
        let want: Vec<numagc_status> = if null_b {
            vec![NUMAGC_ERR_NULL_ARGUMENT]
        } else if args.iter().any(|&a| Self::is_bad(a)) {
            vec![NUMAGC_ERR_BAD_VALUE]
        } else if let Some(e) = TASK_OUTCOME[ka] {
            vec![e].into_iter().chain(may_fail(ka)).collect()
        } else {
            let mut w = match TASK_OUTCOME[kb] {
                Some(e) => vec![e],
                None => vec![NUMAGC_OK],
            };
            w.extend(may_fail(ka));
            w.extend(may_fail(kb));
            w
        };
        expect(rc, &want, "numagc_par2");
        if rc == 0 {
            hit("par2");
            self.made(oa, Shape::Unknown);
            self.made(ob, Shape::Unknown);
        } else {
            hit("par2 failed");
            assert_eq!((oa, ob), (0, 0), "a failed par2 left its outputs set");
        }
    }

    fn spawn(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let n = inp.below(3);
        let args: Vec<Arg> = (0..n).map(|_| self.arg(inp)).collect();
        let env: Vec<numagc_value> = args.iter().map(|&a| self.value(a)).collect();
        let vprocs = st.rts[self.rt].as_ref().map_or(1, |r| r.vprocs);
        let on = if inp.one_in(8) { Some(vprocs + inp.below(2)) } else if inp.bool() { Some(inp.below(vprocs)) } else { None };
        // The thread's channel: one of this runtime's live channels.
        let mine: Vec<usize> = (0..st.chans.len()).filter(|&k| st.chans[k].rt == self.rt && st.chans[k].live).collect();
        let mut kind = inp.below(THREAD_KINDS);
        let chan = if mine.is_empty() { None } else { Some(inp.pick(&mine)) };
        if chan.is_none() && (kind == T_SEND || kind == T_RECV) {
            kind = T_EXIT;
        }
        let token = chan.map_or(0, |c| st.chans[c].token.addr());
        let data = std::ptr::without_provenance_mut::<c_void>(token | kind);
        let bad = args.iter().any(|&a| Self::is_bad(a));
        let null_body = inp.one_in(32);
        let body = if null_body { None } else { Some(thread_body as ThreadFn) };
        // SAFETY: our scope; an environment of `n` values; the body has the
        // thread signature; the userdata is an integer the body decodes.
        let rc = unsafe {
            match on {
                Some(v) => numagc_spawn_on(self.s, v, env.as_ptr(), n, body, data),
                None => numagc_spawn(self.s, env.as_ptr(), n, body, data),
            }
        };
        let want = if null_body {
            NUMAGC_ERR_NULL_ARGUMENT
        } else if bad {
            NUMAGC_ERR_BAD_VALUE
        } else if on.is_some_and(|v| v >= vprocs) {
            NUMAGC_ERR_MISUSE
        } else {
            NUMAGC_OK
        };
        expect(rc, &[want], "numagc_spawn");
        if rc == 0 {
            hit("spawn");
            if let Some(c) = chan {
                match kind {
                    T_SEND => st.chans[c].balance += 1,
                    T_RECV => st.chans[c].balance -= 1,
                    _ => {}
                }
            }
        }
    }

    /// Direct-style channel ops, made only when they cannot wait for ever.
    fn channel(&mut self, st: &mut State) {
        let inp = &mut st.inp;
        let s = self.s;
        let pick = inp.u8() % 8;
        let k = if st.chans.is_empty() { None } else { Some(inp.below(st.chans.len())) };
        match (pick, k) {
            (0..=2, Some(k)) => {
                let c = st.chans[k];
                let mine = c.rt == self.rt;
                let recv = inp.bool();
                // Only what completes or is refused at once.
                let safe = !c.live || !mine || if recv { c.balance > 0 } else { c.balance < 0 };
                if !safe {
                    return;
                }
                let a = self.arg(inp);
                let mut out = 9;
                // SAFETY: our scope; channel tokens are never dereferenced.
                let rc = unsafe {
                    if recv {
                        numagc_recv(s, c.token, &mut out)
                    } else {
                        numagc_send(s, c.token, self.value(a))
                    }
                };
                let want = if !c.live {
                    NUMAGC_ERR_BAD_VALUE
                } else if !mine {
                    NUMAGC_ERR_MISUSE
                } else if !recv && Self::is_bad(a) {
                    NUMAGC_ERR_BAD_VALUE
                } else {
                    NUMAGC_OK
                };
                expect(rc, &[want], if recv { "numagc_recv" } else { "numagc_send" });
                if rc == 0 {
                    hit(if recv { "recv" } else { "send" });
                    st.chans[k].balance += if recv { -1 } else { 1 };
                    if recv {
                        self.made(out, Shape::Unknown);
                    }
                } else if recv {
                    assert_eq!(out, 0);
                }
            }
            (3, _) => {
                // A choice over some channels, made only if one case is
                // sure to complete, or if it is refused at once: a `dir`
                // out of range, a NULL, freed or foreign channel, a bad
                // value to send, no cases. Every case is checked, in
                // order, before anything waits; the first bad one decides.
                let n = inp.below(4);
                let mut cases = Vec::new();
                let mut idx = Vec::new();
                let mut refusal = if n == 0 { Some(NUMAGC_ERR_MISUSE) } else { None };
                for _ in 0..n {
                    let bad_dir = inp.one_in(12).then(|| inp.pick(BAD_INTS));
                    let (case, this) = if st.chans.is_empty() || inp.one_in(16) {
                        idx.push(None);
                        (numagc_sel { channel: null_mut(), dir: NUMAGC_RECV as c_int, value: 0 }, Some(NUMAGC_ERR_NULL_ARGUMENT))
                    } else {
                        // Often a case that can complete: a channel with a
                        // counterpart to come, in the direction that meets it.
                        let ready: Vec<usize> = (0..st.chans.len()).filter(|&j| st.chans[j].live && st.chans[j].balance != 0).collect();
                        let (j, recv) = if !ready.is_empty() && inp.bool() {
                            let j = inp.pick(&ready);
                            (j, st.chans[j].balance > 0)
                        } else {
                            (inp.below(st.chans.len()), inp.bool())
                        };
                        // A send's value: NIL, or any argument (a bad one is refused).
                        let a = if !recv && inp.one_in(4) { self.arg(inp) } else { Arg::Int(0) };
                        let value = if let Arg::Int(0) = a { NUMAGC_NIL } else { self.value(a) };
                        let c = st.chans[j];
                        let this = if !c.live {
                            Some(NUMAGC_ERR_BAD_VALUE)
                        } else if c.rt != self.rt {
                            Some(NUMAGC_ERR_MISUSE)
                        } else if !recv && Self::is_bad(a) {
                            Some(NUMAGC_ERR_BAD_VALUE)
                        } else {
                            None
                        };
                        idx.push(Some((j, recv)));
                        (numagc_sel { channel: c.token, dir: if recv { NUMAGC_RECV } else { NUMAGC_SEND } as c_int, value }, this)
                    };
                    let this = if bad_dir.is_some() { Some(NUMAGC_ERR_INVALID_ARGUMENT) } else { this };
                    refusal = refusal.or(this);
                    cases.push(numagc_sel { dir: bad_dir.unwrap_or(case.dir), ..case });
                }
                if refusal.is_none() {
                    let completes = idx.iter().flatten().any(|&(j, recv)| {
                        let b = st.chans[j].balance;
                        if recv {
                            b > 0
                        } else {
                            b < 0
                        }
                    });
                    if !completes {
                        return;
                    }
                    // The same channel in two cases could complete twice over
                    // one balance: keep choices to distinct channels.
                    let mut seen: Vec<usize> = idx.iter().flatten().map(|&(j, _)| j).collect();
                    seen.sort_unstable();
                    seen.dedup();
                    if seen.len() != idx.iter().flatten().count() {
                        return;
                    }
                }
                let (mut i, mut out) = (7, 9);
                // SAFETY: our scope; an array of `n` cases; valid outputs.
                let rc = unsafe { numagc_select(s, cases.as_ptr(), n, &mut i, &mut out) };
                if let Some(e) = refusal {
                    expect(rc, &[e], "numagc_select (refused)");
                    assert_eq!(out, 0);
                    if e == NUMAGC_ERR_INVALID_ARGUMENT {
                        hit("bad int refused");
                    }
                } else {
                    expect(rc, &[NUMAGC_OK], "numagc_select");
                    hit("select");
                    // The completed case may be one without a certain
                    // counterpart: a thread queued to match another thread
                    // can be taken by the choice first; the balance keeps
                    // count of the one left unmatched.
                    let (j, recv) = idx[i].expect("a completed case names a channel");
                    st.chans[j].balance += if recv { -1 } else { 1 };
                    if recv {
                        self.made(out, Shape::Unknown);
                    } else {
                        assert_eq!(out, NUMAGC_NIL);
                    }
                }
            }
            (4, _) => {
                let mut ch = null_mut();
                let Some(rt) = st.rts[self.rt].as_ref().map(|r| r.rt) else { return };
                // SAFETY: a live runtime, a valid output.
                expect(unsafe { numagc_channel_new(rt, &mut ch) }, &[NUMAGC_OK], "numagc_channel_new from a callback");
                st.chans.push(Chan { token: ch, rt: self.rt, live: true, balance: 0 });
            }
            (5, Some(k)) => {
                let c = st.chans[k];
                // Freeing a channel that a callback could still count on is
                // fine: later ops on it are refused at once.
                expect(numagc_channel_free(c.token), &[if c.live { NUMAGC_OK } else { NUMAGC_ERR_BAD_VALUE }], "numagc_channel_free");
                st.chans[k].live = false;
            }
            _ => {
                let mut out = 9;
                // SAFETY: our scope; NULL and forged channels are refused.
                let rc = unsafe { numagc_recv(s, null_mut(), &mut out) };
                expect(rc, &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_recv(NULL)");
                let forged = std::ptr::without_provenance_mut::<numagc_channel>((inp.u64() as usize) | 1);
                // SAFETY: as above.
                let rc = unsafe { numagc_send(s, forged, NUMAGC_NIL) };
                expect(rc, &[NUMAGC_ERR_BAD_VALUE], "numagc_send (forged channel)");
                // SAFETY: no cases: NULL with n = 0 is allowed, and refused.
                let rc = unsafe { numagc_select(s, null(), 0, &mut 0, &mut out) };
                expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_select (no cases)");
            }
        }
    }
}

// ---- par2 tasks ------------------------------------------------------------------

/// Task behaviours, chosen by the low 4 bits of a task's userdata (the
/// high bits carry the parent's scope token).
const TASK_KINDS: usize = 10;
/// What `numagc_par2` returns because of each behaviour (`None`: the task
/// succeeds).
const TASK_OUTCOME: [Option<numagc_status>; TASK_KINDS] = [
    None,                              // 0: returns an immediate
    None,                              // 1: returns its first env value (or NIL)
    None,                              // 2: allocates a vector of its env, returns it via frame_return
    Some(NUMAGC_ERR_BAD_VALUE),        // 3: returns OK with *result unset
    Some(NUMAGC_ERR_UNBALANCED_FRAME), // 4: leaves a frame open
    Some(NUMAGC_ERR_NOT_ON_VPROC),     // 5: uses its parent's scope, returns that status
    Some(NUMAGC_ERR_MISUSE),           // 6: returns a status of its own
    None,                              // 7: forks again (tasks of kind 0 and 1)
    Some(NUMAGC_ERR_MISUSE),           // 8: returns inside a blocking section
    None,                              // 9: a blocking section, refused calls in it, left
];

fn task_data(parent: usize, kind: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(parent | kind)
}

unsafe extern "C" fn task(s: *mut numagc_scope, env: *const numagc_value, n: usize, data: *mut c_void, result: *mut numagc_value) -> c_int {
    let (parent, kind) = (data.addr() & !0xF, data.addr() & 0xF);
    // SAFETY: `env` has `n` values and `result` is writable (numagc_par2's
    // contract for task functions); the scope tokens are never dereferenced.
    unsafe {
        let env = if n == 0 { &[][..] } else { std::slice::from_raw_parts(env, n) };
        match kind {
            0 => {
                *result = numagc_int(42);
                0
            }
            1 => {
                *result = env.first().copied().unwrap_or(NUMAGC_NIL);
                0
            }
            2 => {
                let mut f = 0;
                expect(numagc_frame_enter(s, &mut f), &[NUMAGC_OK], "numagc_frame_enter in a task");
                let mut v = 0;
                let rc = numagc_alloc_vector(s, env.as_ptr(), n, &mut v);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT], "numagc_alloc_vector in a task");
                if rc != 0 {
                    expect(numagc_frame_leave(s, f), &[NUMAGC_OK], "numagc_frame_leave in a task");
                    return rc;
                }
                expect(numagc_frame_return(s, f, v, result), &[NUMAGC_OK], "numagc_frame_return in a task");
                0
            }
            3 => 0,
            4 => {
                let mut f = 0;
                expect(numagc_frame_enter(s, &mut f), &[NUMAGC_OK], "numagc_frame_enter in a task");
                *result = numagc_int(1);
                0
            }
            5 => {
                let p = std::ptr::without_provenance_mut::<numagc_scope>(parent);
                let mut f = 0;
                let rc = numagc_frame_enter(p, &mut f);
                expect(rc, &[NUMAGC_ERR_NOT_ON_VPROC], "the parent's scope inside a task");
                rc
            }
            6 => code(NUMAGC_ERR_MISUSE),
            8 => {
                let rc = numagc_enter_blocking(s);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_OS], "numagc_enter_blocking in a task");
                if rc != 0 {
                    return rc;
                }
                *result = numagc_int(8);
                0
            }
            9 => {
                let rc = numagc_enter_blocking(s);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_OS], "numagc_enter_blocking in a task");
                if rc != 0 {
                    return rc;
                }
                let mut v = 9;
                let rc = numagc_alloc_vector(s, env.as_ptr(), n, &mut v);
                expect(rc, &[NUMAGC_ERR_MISUSE], "numagc_alloc_vector in a task's section");
                assert_eq!(v, 0);
                expect(numagc_enter_blocking(s), &[NUMAGC_ERR_MISUSE], "numagc_enter_blocking twice in a task");
                expect(numagc_leave_blocking(s), &[NUMAGC_OK], "numagc_leave_blocking in a task");
                expect(numagc_leave_blocking(s), &[NUMAGC_ERR_MISUSE], "numagc_leave_blocking twice in a task");
                *result = env.first().copied().unwrap_or(NUMAGC_NIL);
                hit("section in a task");
                0
            }
            _ => {
                let (mut a, mut b) = (0, 0);
                let rc = numagc_par2(s, env.as_ptr(), n, Some(task), task_data(s.addr(), 0), Some(task), task_data(s.addr(), 1), &mut a, &mut b);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_HEAP_LIMIT], "a nested numagc_par2");
                hit("nested par2");
                *result = a;
                rc
            }
        }
    }
}

// ---- threads ----------------------------------------------------------------------

type ThreadFn = unsafe extern "C" fn(*mut numagc_scope, *const numagc_value, usize, numagc_value, *mut c_void, *mut numagc_next) -> c_int;

/// Thread behaviours, in the low 4 bits of a thread's userdata (the high
/// bits carry its channel's token, when it has one).
const THREAD_KINDS: usize = 11;
const T_EXIT: usize = 0;
const T_SEND: usize = 1;
const T_RECV: usize = 2;
const T_YIELD: usize = 3;
const T_NOTHING: usize = 4;
const T_TWICE: usize = 5;
const T_FAIL: usize = 6;
const T_BLOCKING: usize = 7;
const T_OPEN_FRAME: usize = 8;
/// Bad input to `numagc_next_*` (a `dir` out of range, counts far beyond
/// their arrays), each refused without counting as the answer; then exits.
const T_BAD_INPUT: usize = 9;
/// Returns inside a blocking section (its `numagc_next_exit` there is
/// refused): the thread fails.
const T_IN_SECTION: usize = 10;
/// Forces a global collection and reports its status (high bits: its id
/// in `COLLECTED`); spawned only by [`Body::blocking_op`].
const T_COLLECT: usize = 11;
/// The continuation after a send, a receive or a yield: exits.
const T_THEN_EXIT: usize = 15;

/// Ids of collector threads (`T_COLLECT`), never reused.
static NEXT_COLLECTOR: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
/// The status of each collector thread's collection, by id, until the body
/// that waits for it takes it.
static COLLECTED: std::sync::Mutex<std::collections::BTreeMap<usize, c_int>> = std::sync::Mutex::new(std::collections::BTreeMap::new());

fn lock_collected() -> std::sync::MutexGuard<'static, std::collections::BTreeMap<usize, c_int>> {
    COLLECTED.lock().unwrap_or_else(|p| p.into_inner())
}

unsafe extern "C" fn thread_body(
    s: *mut numagc_scope,
    env: *const numagc_value,
    n: usize,
    _received: numagc_value,
    data: *mut c_void,
    next: *mut numagc_next,
) -> c_int {
    let (token, kind) = (data.addr() & !0xF, data.addr() & 0xF);
    let ch = std::ptr::without_provenance_mut::<numagc_channel>(token);
    let then = std::ptr::without_provenance_mut::<c_void>(T_THEN_EXIT);
    // SAFETY: `env` has `n` values, `next` is this body's token (the
    // thread-body contract); channel tokens are never dereferenced.
    unsafe {
        let env = if n == 0 { &[][..] } else { std::slice::from_raw_parts(env, n) };
        match kind {
            T_SEND => {
                let v = env.first().copied().unwrap_or(NUMAGC_NIL);
                // The channel may have been freed since the spawn: then the
                // thread fails, and the callbacks no longer block on it.
                let rc = numagc_next_send(next, ch, v, env.as_ptr(), n, Some(thread_body), then);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_next_send");
                hit("thread sent");
                rc
            }
            T_RECV => {
                let rc = numagc_next_recv(next, ch, env.as_ptr(), n, Some(thread_body), then);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_BAD_VALUE], "numagc_next_recv");
                hit("thread received");
                rc
            }
            T_YIELD => {
                expect(numagc_next_yield(next, env.as_ptr(), n, Some(thread_body), then), &[NUMAGC_OK], "numagc_next_yield");
                0
            }
            T_NOTHING => 0,
            T_TWICE => {
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                expect(numagc_next_exit(next), &[NUMAGC_ERR_MISUSE], "numagc_next_exit twice");
                0
            }
            T_FAIL => {
                hit("thread failed on purpose");
                expect(numagc_next_select(next, null(), 0, null(), 0), &[NUMAGC_ERR_MISUSE], "numagc_next_select (no cases)");
                expect(numagc_next_exit(null_mut()), &[NUMAGC_ERR_NULL_ARGUMENT], "numagc_next_exit(NULL)");
                let fake = std::ptr::without_provenance_mut::<numagc_next>(s.addr());
                expect(numagc_next_exit(fake), &[NUMAGC_ERR_NOT_ON_VPROC], "numagc_next_exit(scope token)");
                code(NUMAGC_ERR_MISUSE)
            }
            T_BLOCKING => {
                let mut out = 0;
                let rc = numagc_recv(s, ch, &mut out);
                let allowed = if token == 0 { NUMAGC_ERR_NULL_ARGUMENT } else { NUMAGC_ERR_MISUSE };
                expect(rc, &[allowed, NUMAGC_ERR_BAD_VALUE], "a blocking numagc_recv inside a thread step");
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            T_OPEN_FRAME => {
                let mut f = 0;
                expect(numagc_frame_enter(s, &mut f), &[NUMAGC_OK], "numagc_frame_enter in a thread");
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            T_BAD_INPUT => {
                let invalid = [NUMAGC_ERR_INVALID_ARGUMENT];
                // The dir is checked before the channel (which may be NULL
                // or freed); the environment is the body's own.
                let dir = BAD_INTS[(s.addr() >> 4) % BAD_INTS.len()];
                let bad = numagc_case { channel: ch, dir, value: NUMAGC_NIL, k: Some(thread_body), userdata: then };
                expect(numagc_next_select(next, env.as_ptr(), n, &bad, 1), &invalid, "numagc_next_select (dir out of range)");
                let good = numagc_case { dir: NUMAGC_RECV as c_int, ..bad };
                // Counts far beyond their arrays, checked before them.
                expect(numagc_next_select(next, env.as_ptr(), n, &good, usize::MAX), &invalid, "numagc_next_select (n_cases = SIZE_MAX)");
                expect(numagc_next_select(next, env.as_ptr(), n, null(), 1 << 40), &invalid, "numagc_next_select (n_cases = 2^40, NULL)");
                expect(numagc_next_select(next, env.as_ptr(), 1 << 40, &good, 1), &invalid, "numagc_next_select (n = 2^40)");
                expect(numagc_next_yield(next, env.as_ptr(), usize::MAX, Some(thread_body), then), &invalid, "numagc_next_yield (n = SIZE_MAX)");
                expect(numagc_next_send(next, ch, NUMAGC_NIL, env.as_ptr(), 1 << 40, Some(thread_body), then), &invalid, "numagc_next_send (n = 2^40)");
                expect(numagc_next_recv(next, ch, env.as_ptr(), usize::MAX, Some(thread_body), then), &invalid, "numagc_next_recv (n = SIZE_MAX)");
                hit("thread bad input refused");
                // None of them was the answer.
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit after refused numagc_next_* calls");
                0
            }
            T_IN_SECTION => {
                let rc = numagc_enter_blocking(s);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_OS], "numagc_enter_blocking in a thread");
                // Refused inside the section (a scope call), so the step
                // also says nothing: it fails either way.
                let want = if rc == 0 { NUMAGC_ERR_MISUSE } else { NUMAGC_OK };
                expect(numagc_next_exit(next), &[want], "numagc_next_exit in a section");
                hit("thread returned inside a section");
                0
            }
            T_COLLECT => {
                let rc = numagc_collect_global(s);
                expect(rc, &[NUMAGC_OK, NUMAGC_ERR_SAFEPOINT_TIMEOUT], "numagc_collect_global in a collector thread");
                lock_collected().insert(token >> 4, rc);
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
            _ => {
                expect(numagc_next_exit(next), &[NUMAGC_OK], "numagc_next_exit");
                0
            }
        }
    }
}
