//! Scopes of C callbacks: the token check, the handle table over the Rust
//! scope's root slots, and root frames (see the crate docs).

use crate::runtime::{lock, DescInfo, RtShared};
use crate::status::numagc_status::{self, *};
use crate::status::{
    clear_last_error, guard, last_error, out, set_last_error, slice_arg, Fail, Res,
};
use crate::thread::{numagc_next, NextSlot};
use crate::{numagc_frame, numagc_value};
use numagc_rs::{Handle, Scope, Slot};
use std::cell::Cell;
use std::collections::BTreeMap;
use std::ffi::{c_int, c_void};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

/// The scope of one running callback: an opaque token, valid only on the
/// vproc thread running that callback and only until it returns. It is
/// never dereferenced; every function checks it.
pub struct numagc_scope {
    _private: [u8; 0],
}

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

/// Live tokens with the vproc and thread of their callback, for error
/// messages only.
static LIVE: Mutex<BTreeMap<usize, (usize, ThreadId)>> = Mutex::new(BTreeMap::new());

thread_local! {
    /// The callback running on this thread: its token and its state.
    static ACTIVE: Cell<Option<(usize, *mut CallState)>> = const { Cell::new(None) };
}

#[cfg(test)]
thread_local! {
    /// Tests set it to make the next C body on this thread panic on the
    /// Rust side, with its activation in place.
    pub(crate) static INJECT_PANIC: Cell<bool> = const { Cell::new(false) };
}

/// Whether a callback is running on this thread.
pub(crate) fn on_callback_thread() -> bool {
    ACTIVE.with(|a| a.get().is_some())
}

/// Handle values: bit 0 clear, bits 1..=31 the table index, bits 32..=63
/// the tag the table entry must have.
const MAX_HANDLES: usize = 1 << 31;

fn encode(index: usize, tag: u32) -> numagc_value {
    ((tag as u64) << 32) | ((index as u64) << 1)
}

fn decode(v: numagc_value) -> (usize, u32) {
    (((v >> 1) & 0x7FFF_FFFF) as usize, (v >> 32) as u32)
}

struct Frame {
    /// Table index of the first handle of this frame.
    base: usize,
    tag: u32,
}

/// What a running callback's scope knows. Lives on the vproc thread's
/// stack for the duration of the callback, reached through `ACTIVE`.
pub(crate) struct CallState {
    /// The callback's Rust scope, with its lifetime erased (see `run_callback`).
    scope: *mut Scope<'static>,
    /// The handle table: root slots of `scope`, created on demand.
    slots: Vec<Slot<'static>>,
    /// The tag of each live entry (0: free).
    tags: Vec<u32>,
    /// Entries in use: `slots[..top]`.
    top: usize,
    frames: Vec<Frame>,
    next_tag: u32,
    pub vproc: usize,
    pub rt: Arc<RtShared>,
    /// A copy of the runtime's descriptor ids, refreshed on a miss.
    descs: Vec<Option<DescInfo>>,
    /// A thread step's answer to "what next" (`None` for callbacks and
    /// tasks, which have no `numagc_next`).
    pub next: Option<NextSlot>,
    /// The blocking section the body is in (`numagc_enter_blocking`):
    /// while there is one, every call but `numagc_leave_blocking` is
    /// refused, since the vproc's state belongs to its proxy.
    pub blocking: Option<numagc_rs::BlockingSection>,
}

impl CallState {
    /// The callback's Rust scope.
    pub fn sc(&mut self) -> &mut Scope<'static> {
        // SAFETY: `scope` points at the scope that `run_callback` received,
        // which outlives this state (the state is dropped before
        // `run_callback` returns), and `run_callback` does not touch it
        // while the state exists. `&mut self` is unique (`with_state` takes
        // the state out of `ACTIVE` while it is lent), so this is the only
        // reference. The erased lifetime never escapes: handles and slots
        // obtained through it are kept only in this state.
        unsafe { &mut *self.scope }
    }

    fn next_tag(&mut self) -> u32 {
        self.next_tag = self.next_tag.wrapping_add(1);
        if self.next_tag == 0 {
            self.next_tag = 1;
        }
        self.next_tag
    }

    /// The Rust handle of a C value; `NUMAGC_ERR_BAD_VALUE` for a handle
    /// that is not live in this callback.
    pub fn handle(&self, v: numagc_value) -> Res<Handle<'static>> {
        if v & 1 == 1 {
            return Ok(Handle::int((v as i64) >> 1));
        }
        let (index, tag) = decode(v);
        if v == 0 {
            return Err(Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                "value 0 is not a value (a failed call's output?)",
            ));
        }
        if index >= self.top || self.tags[index] != tag {
            return Err(Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                format!(
                    "value {v:#x} is not a live handle of this callback: its frame was left, or it comes from another callback"
                ),
            ));
        }
        Ok(self.slots[index].get())
    }

    /// The Rust handles of the `n` C values at `p` (`what` names the
    /// array). The caller has checked `n` against its own limit; the buffer
    /// is reserved fallibly (`NUMAGC_ERR_OS`) and the size of the array
    /// checked before `p` is read, so no count aborts the process.
    pub fn handles_arg(&self, p: *const numagc_value, n: usize, what: &str) -> Res<Handles> {
        let mut hs = Handles::with_len(n, what)?;
        let vs = slice_arg(p, n, what)?;
        for (h, &v) in hs.as_mut_slice().iter_mut().zip(vs) {
            *h = self.handle(v)?;
        }
        Ok(hs)
    }

    /// The next free entry of the table (creating its root slot if needed).
    fn reserve(&mut self) -> Res<Slot<'static>> {
        if self.top == self.slots.len() {
            if self.top >= MAX_HANDLES {
                return Err(Fail::new(
                    NUMAGC_ERR_MISUSE,
                    format!("more than {MAX_HANDLES} live handles: leave frames"),
                ));
            }
            let slot = self.sc().slot(Handle::NIL);
            self.slots.push(slot);
            self.tags.push(0);
        }
        Ok(self.slots[self.top])
    }

    /// Makes the reserved entry live and returns its handle value.
    fn commit(&mut self) -> numagc_value {
        let tag = self.next_tag();
        let i = self.top;
        self.tags[i] = tag;
        self.top += 1;
        encode(i, tag)
    }

    /// Runs `op` in a nested Rust scope; it stores its result into the slot
    /// it is given. Returns an immediate as itself, else a new handle.
    pub fn produce(
        &mut self,
        op: impl for<'i> FnOnce(&mut Scope<'i>, Slot<'static>) -> numagc_rs::Result<()>,
    ) -> Res<numagc_value> {
        let slot = self.reserve()?;
        let sc = self.sc();
        sc.scope(|inner| op(inner, slot))?;
        if let Some(i) = sc.as_int(slot.get()) {
            sc.assign(slot, Handle::NIL);
            return Ok(int_word(i));
        }
        Ok(self.commit())
    }

    /// Roots `h` in a new entry of the innermost frame; an immediate is
    /// returned as itself.
    pub fn root(&mut self, h: Handle<'_>) -> Res<numagc_value> {
        if let Some(i) = self.sc().as_int(h) {
            return Ok(int_word(i));
        }
        let slot = self.reserve()?;
        self.sc().assign(slot, h);
        Ok(self.commit())
    }

    /// `produce` for `N` results: `op` stores them into the `N` slots it
    /// is given (in a nested Rust scope). Immediates come back as
    /// themselves, the others as new handles in the innermost frame, in
    /// order; nothing is kept when `op` fails.
    pub fn produce_n<const N: usize>(
        &mut self,
        op: impl for<'i> FnOnce(&mut Scope<'i>, [Slot<'static>; N]) -> Res<()>,
    ) -> Res<[numagc_value; N]> {
        // The entries `top .. top + N`, not live until committed.
        while self.slots.len() < self.top + N {
            if self.slots.len() >= MAX_HANDLES {
                return Err(Fail::new(
                    NUMAGC_ERR_MISUSE,
                    format!("more than {MAX_HANDLES} live handles: leave frames"),
                ));
            }
            let slot = self.sc().slot(Handle::NIL);
            self.slots.push(slot);
            self.tags.push(0);
        }
        let slots: [Slot<'static>; N] = std::array::from_fn(|k| self.slots[self.top + k]);
        let sc = self.sc();
        if let Err(e) = sc.scope(|inner| op(inner, slots)) {
            for slot in slots {
                sc.assign(slot, Handle::NIL);
            }
            return Err(e);
        }
        let mut out = [0; N];
        for (k, slot) in slots.into_iter().enumerate() {
            let h = slot.get();
            if let Some(i) = self.sc().as_int(h) {
                self.sc().assign(slot, Handle::NIL);
                out[k] = int_word(i);
                continue;
            }
            // Compact: entry `top` is at or below `slot`'s entry.
            let here = self.slots[self.top];
            if here != slot {
                self.sc().assign(here, h);
                self.sc().assign(slot, Handle::NIL);
            }
            out[k] = self.commit();
        }
        Ok(out)
    }

    /// Frees the table entries from `base` up, clearing their slots.
    fn release(&mut self, base: usize) {
        for i in base..self.top {
            let slot = self.slots[i];
            self.sc().assign(slot, Handle::NIL);
            self.tags[i] = 0;
        }
        self.top = base;
    }

    /// The index of the open frame named by `f`, if it is the innermost.
    fn innermost(&self, f: numagc_frame) -> Res<usize> {
        let depth = (f & 0xFFFF_FFFF) as usize;
        let tag = (f >> 32) as u32;
        let open = self.frames.len();
        if depth == 0 || depth > open || self.frames[depth - 1].tag != tag {
            return Err(Fail::new(
                NUMAGC_ERR_UNBALANCED_FRAME,
                format!("frame {f:#x} is not an open frame of this callback (left already, or from another callback)"),
            ));
        }
        if depth < open {
            return Err(Fail::new(
                NUMAGC_ERR_UNBALANCED_FRAME,
                format!(
                    "frame {f:#x} (depth {depth}) is not the innermost open frame: {} frame(s) opened inside it must be left first",
                    open - depth
                ),
            ));
        }
        Ok(depth - 1)
    }

    /// The descriptor with raw id `id`, with its field counts.
    pub fn desc(&mut self, id: u32) -> Res<DescInfo> {
        let find = |descs: &[Option<DescInfo>]| descs.get(id as usize).cloned().flatten();
        if let Some(d) = find(&self.descs) {
            return Ok(d);
        }
        self.descs = self.rt.descriptors();
        find(&self.descs).ok_or_else(|| {
            Fail::new(
                NUMAGC_ERR_UNKNOWN_DESCRIPTOR,
                format!("descriptor id {id} is not registered with this runtime"),
            )
        })
    }
}

/// The C value of an immediate integer: `(i << 1) | 1`, numagc's encoding
/// (`Handle::int`), which `CallState::handle` undoes.
pub(crate) fn int_word(i: i64) -> numagc_value {
    ((i as u64) << 1) | 1
}

/// Up to 8 handles inline, more on the heap (mixed objects are small).
pub(crate) enum Handles {
    Inline([Handle<'static>; 8], usize),
    Heap(Vec<Handle<'static>>),
}

impl Handles {
    /// `n` NIL handles; more than 8 on the heap, reserved fallibly:
    /// `NUMAGC_ERR_OS` when the memory cannot be had (never an abort).
    fn with_len(n: usize, what: &str) -> Res<Handles> {
        if n <= 8 {
            return Ok(Handles::Inline([Handle::NIL; 8], n));
        }
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|e| {
            Fail::new(
                NUMAGC_ERR_OS,
                format!("argument `{what}`: no memory for the {n} handles it announces: {e}"),
            )
        })?;
        v.resize(n, Handle::NIL);
        Ok(Handles::Heap(v))
    }

    fn as_mut_slice(&mut self) -> &mut [Handle<'static>] {
        match self {
            Handles::Inline(a, n) => &mut a[..*n],
            Handles::Heap(v) => v,
        }
    }

    pub fn as_slice(&self) -> &[Handle<'static>] {
        match self {
            Handles::Inline(a, n) => &a[..*n],
            Handles::Heap(v) => v,
        }
    }
}

/// Lends the state of the callback that `scope` names, if it runs on this
/// thread; else `NUMAGC_ERR_NOT_ON_VPROC`.
pub(crate) fn with_state<R>(
    scope: *mut numagc_scope,
    f: impl FnOnce(&mut CallState) -> Res<R>,
) -> Res<R> {
    with_any_state(scope, |st| {
        if st.blocking.is_some() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "the scope is in a blocking section (numagc_enter_blocking): the heap cannot be used until numagc_leave_blocking",
            ));
        }
        f(st)
    })
}

/// [`with_state`] whether or not the body is in a blocking section (for
/// `numagc_leave_blocking`, which touches nothing but the section).
pub(crate) fn with_any_state<R>(
    scope: *mut numagc_scope,
    f: impl FnOnce(&mut CallState) -> Res<R>,
) -> Res<R> {
    if scope.is_null() {
        return Err(Fail::null("scope"));
    }
    let token = scope.addr();
    match ACTIVE.with(|a| a.get()) {
        Some((t, st)) if t == token => {
            // Lent out: a nested call (none exists) would find no state
            // instead of a second `&mut`.
            let _lent = Lend::new((t, st));
            // SAFETY: `st` was stored by `run_callback` on this thread and
            // stays valid until it clears `ACTIVE` after the callback
            // returns; we are inside that callback (same thread, same
            // token). `ACTIVE` is empty while the reference lives, so it
            // is the only one.
            f(unsafe { &mut *st })
        }
        active => Err(not_on_vproc(token, active.map(|(t, _)| t))),
    }
}

/// Empties `ACTIVE` and puts the entry back on drop (even on a panic).
struct Lend((usize, *mut CallState));

impl Lend {
    fn new(entry: (usize, *mut CallState)) -> Lend {
        ACTIVE.with(|a| a.set(None));
        Lend(entry)
    }
}

impl Drop for Lend {
    fn drop(&mut self) {
        let entry = self.0;
        let _ = ACTIVE.try_with(|a| a.set(Some(entry)));
    }
}

fn not_on_vproc(token: usize, here: Option<usize>) -> Fail {
    let owner = lock(&LIVE).get(&token).copied();
    let what = match owner {
        Some((v, thread)) if thread == std::thread::current().id() => format!(
            "scope {token:#x} belongs to the callback on vproc {v} that is waiting for a nested one on this thread (a par2 task or a thread body): inside it, use the scope it was given"
        ),
        Some((v, _)) => format!(
            "scope {token:#x} belongs to the callback running on vproc {v} and was used from another thread; a scope may only be used on the thread running its callback"
        ),
        None => format!("scope {token:#x} is not live: its callback has returned (a scope is valid only during its callback)"),
    };
    let here = match here {
        Some(t) => format!(" (this thread runs the callback of scope {t:#x})"),
        None => " (no callback runs on this thread)".to_string(),
    };
    Fail::new(NUMAGC_ERR_NOT_ON_VPROC, what + &here)
}

/// Sets `ACTIVE` for one C body and, on drop (even on a panic), puts back
/// what was there before (nothing, or the entry a waiting `with_state` will
/// restore) and removes the token's `LIVE` entry.
struct Activation {
    token: usize,
    previous: Option<(usize, *mut CallState)>,
}

impl Activation {
    fn new(token: usize, vproc: usize, st: *mut CallState) -> Activation {
        lock(&LIVE).insert(token, (vproc, std::thread::current().id()));
        let previous = ACTIVE.with(|a| a.replace(Some((token, st))));
        Activation { token, previous }
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        let previous = self.previous;
        let _ = ACTIVE.try_with(|a| a.set(previous));
        lock(&LIVE).remove(&self.token);
    }
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
    /// callback on vproc 1").
    pub fn failure(&self, what: &str) -> Option<Fail> {
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
    let saved = last_error();
    clear_last_error();
    let generation = NEXT_GENERATION.fetch_add(1, Ordering::Relaxed);
    let token = (generation as usize) << 4;
    let vproc = s.vproc();
    let mut st = CallState {
        // The lifetime is erased here; see `CallState::sc` for why no use
        // outlives the scope.
        scope: (s as *mut Scope<'_>).cast::<Scope<'static>>(),
        slots: Vec::new(),
        tags: Vec::new(),
        top: 0,
        frames: Vec::new(),
        next_tag: (generation as u32).wrapping_mul(0x9E37_79B9),
        vproc,
        rt: rt.clone(),
        descs: rt.descriptors(),
        next: args.thread.then(NextSlot::default),
        blocking: None,
    };
    // The environment: handles outside any frame, so they live until the
    // body returns. Rooting cannot fail short of 2^31 entries.
    let mut env = Vec::with_capacity(args.env.len());
    let mut rooted = Ok(());
    for &h in args.env {
        match st.root(h) {
            Ok(v) => env.push(v),
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
            let rc = call(scope_ptr, &env, received, next_ptr);
            drop(activation);
            // A body that returns inside a blocking section has it left
            // here, before anything touches the scope again.
            let blocking = st.blocking.take().is_some();
            (rc, st.frames.len(), blocking)
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
    match saved {
        Some(m) => set_last_error(&m),
        None => clear_last_error(),
    }
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
    };
    // SAFETY: `cb` is a C function pointer given to `numagc_run_on` /
    // `numagc_run_each` with this signature; `data` is the caller's
    // pointer, handed back untouched. C code cannot unwind into Rust
    // (`extern "C"` aborts on unwinding).
    let call = |scope, _: &[numagc_value], _, _| unsafe { cb(scope, data.0) };
    run_body(s, rt, args, call, |_, ended| {
        match ended.failure(&format!("the callback on vproc {vproc}")) {
            None => (NUMAGC_OK as c_int, None),
            Some(f) => (f.code, Some(f.message)),
        }
    })
}

/// Opens a root frame: handles made from now on belong to it until
/// `numagc_frame_leave(scope, *out)`.
#[no_mangle]
pub unsafe extern "C" fn numagc_frame_enter(
    scope: *mut numagc_scope,
    out_frame: *mut numagc_frame,
) -> c_int {
    guard(|| {
        let o = out(out_frame, "out")?;
        *o = 0;
        with_state(scope, |st| {
            let tag = st.next_tag();
            let base = st.top;
            st.frames.push(Frame { base, tag });
            *o = ((tag as u64) << 32) | st.frames.len() as u64;
            Ok(())
        })
    })
}

/// Leaves `frame`, which must be the innermost open frame, and drops every
/// handle made in it (using one afterwards gives `NUMAGC_ERR_BAD_VALUE`).
/// `NUMAGC_ERR_UNBALANCED_FRAME`, changing nothing, for any other frame.
#[no_mangle]
pub unsafe extern "C" fn numagc_frame_leave(
    scope: *mut numagc_scope,
    frame: numagc_frame,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let i = st.innermost(frame)?;
            let base = st.frames[i].base;
            st.release(base);
            st.frames.pop();
            Ok(())
        })
    })
}

/// Leaves `frame` as `numagc_frame_leave` does but keeps `value`: `*out`
/// is a handle to it in the enclosing frame (or the immediate itself).
#[no_mangle]
pub unsafe extern "C" fn numagc_frame_return(
    scope: *mut numagc_scope,
    frame: numagc_frame,
    value: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        with_state(scope, |st| {
            let i = st.innermost(frame)?;
            let h = st.handle(value)?;
            let base = st.frames[i].base;
            if value & 1 == 1 {
                st.release(base);
                st.frames.pop();
                *o = value;
                return Ok(());
            }
            if base < st.top {
                // Copy the value into the frame's first entry, free the rest.
                let keep = st.slots[base];
                st.sc().assign(keep, h);
                st.release(base + 1);
                st.frames.pop();
                let tag = st.next_tag();
                st.tags[base] = tag;
                *o = encode(base, tag);
            } else {
                // An empty frame: the value is an outer one; root it anew.
                st.frames.pop();
                let slot = st.reserve()?;
                st.sc().assign(slot, h);
                *o = st.commit();
            }
            Ok(())
        })
    })
}

/// A new handle in the innermost frame holding `value`, even an immediate:
/// a variable for `numagc_assign` (in the spirit of OCaml's `CAMLlocal`).
#[no_mangle]
pub unsafe extern "C" fn numagc_local(
    scope: *mut numagc_scope,
    value: numagc_value,
    out_var: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_var, "out")?;
        *o = 0;
        with_state(scope, |st| {
            let h = st.handle(value)?;
            let slot = st.reserve()?;
            st.sc().assign(slot, h);
            *o = st.commit();
            Ok(())
        })
    })
}

/// Stores `value` into the handle `var`, which must be live (not an
/// immediate): every copy of `var` then reads `value`. Loops rebind a
/// variable this way instead of making a handle per iteration.
#[no_mangle]
pub unsafe extern "C" fn numagc_assign(
    scope: *mut numagc_scope,
    var: numagc_value,
    value: numagc_value,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            if var & 1 == 1 {
                return Err(Fail::new(
                    NUMAGC_ERR_BAD_VALUE,
                    format!("value {var:#x} is an immediate, not a variable: make one with numagc_local"),
                ));
            }
            st.handle(var)?; // checks that `var` is live
            let h = st.handle(value)?;
            let slot = st.slots[decode(var).0];
            st.sc().assign(slot, h);
            Ok(())
        })
    })
}

/// The vproc this callback runs on.
#[no_mangle]
pub unsafe extern "C" fn numagc_scope_vproc(
    scope: *mut numagc_scope,
    out_vproc: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_vproc, "out")?;
        with_state(scope, |st| {
            *o = st.vproc;
            Ok(())
        })
    })
}

/// The number of vprocs of the runtime.
#[no_mangle]
pub unsafe extern "C" fn numagc_scope_vprocs(scope: *mut numagc_scope, out_n: *mut usize) -> c_int {
    guard(|| {
        let o = out(out_n, "out")?;
        with_state(scope, |st| {
            *o = st.sc().vprocs();
            Ok(())
        })
    })
}

/// The number of live handles of this callback (all frames) and of open
/// frames; either output may be NULL.
#[no_mangle]
pub unsafe extern "C" fn numagc_scope_handles(
    scope: *mut numagc_scope,
    out_handles: *mut usize,
    out_frames: *mut usize,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            if !out_handles.is_null() {
                *out(out_handles, "out_handles")? = st.top;
            }
            if !out_frames.is_null() {
                *out(out_frames, "out_frames")? = st.frames.len();
            }
            Ok(())
        })
    })
}
