//! Scopes of C bodies: the handle table over the Rust scope's root slots,
//! and root frames (see the crate docs). The scope token and its check are
//! in `activation.rs`; running a C body with its own table, in `body.rs`.
//!
//! Invariant: a handle value is accepted only for a live entry, one below
//! `top` whose tag it carries (a free entry has tag 0, never a tag), and it
//! reads that entry's root slot, which collections update. Each use of an
//! entry gets a new tag, so a handle from a left frame or another body is
//! refused (up to the 32-bit tag check). A frame is left only as the
//! innermost open one, freeing exactly the entries made since it was
//! entered.

use crate::activation::with_state;
use crate::runtime::{DescInfo, RtShared};
use crate::status::numagc_status::*;
use crate::status::{guard, out, slice_arg, Fail, Res};
use crate::thread::NextSlot;
use crate::{numagc_frame, numagc_value};
use numagc_rs::{Handle, Scope, Slot};
use std::ffi::c_int;
use std::sync::Arc;

/// The scope of one running callback: an opaque token, valid only on the
/// vproc thread running that callback and only until it returns. It is
/// never dereferenced; every function checks it.
pub struct numagc_scope {
    _private: [u8; 0],
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
    /// The body's Rust scope, with its lifetime erased (see `body::run_body`).
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
    /// `numagc_fork` tasks running in this body now (nested ones count
    /// each): while there is one, the scope's own functions are refused
    /// (the task's frames lie above the handle table's slots) and only the
    /// compiled interface is open.
    pub word_tasks: u32,
    /// Root-stack slots the running `numagc_fork` task must leave in use:
    /// its fork's slots (0 outside a task). The compiled slow paths check
    /// the top against it, so nothing collects while a task has popped
    /// them.
    pub floor: usize,
}

impl CallState {
    /// The callback's Rust scope.
    pub fn sc(&mut self) -> &mut Scope<'static> {
        // SAFETY: `scope` points at the scope that `body::run_body`
        // received, which outlives this state (the state is dropped before
        // `run_body` returns), and `run_body` does not touch it while the
        // state exists. `&mut self` is unique (`with_state` takes
        // the state out of `ACTIVE` while it is lent), so this is the only
        // reference. The erased lifetime never escapes: handles and slots
        // obtained through it are kept only in this state.
        unsafe { &mut *self.scope }
    }

    /// Makes `scope` the scope that the state at `st` lends (`sc`), and
    /// returns the one it lent before: a `numagc_fork` task running here
    /// gets the scope its fork made for it, so that its slow paths borrow
    /// the vproc through the fork's borrow, and the fork's scope comes back
    /// when the task returns.
    ///
    /// # Safety
    /// `st` points at a live state that is not lent (no reference to it
    /// exists), and `scope` stays valid for as long as it is lent.
    pub unsafe fn swap_scope(
        st: *mut CallState,
        scope: *mut Scope<'static>,
    ) -> *mut Scope<'static> {
        // SAFETY: the caller's contract: a write of one field, no
        // reference to the state alive.
        unsafe { std::ptr::addr_of_mut!((*st).scope).replace(scope) }
    }

    /// The state of a new C body on `scope` (its lifetime erased by
    /// `body::run_body`; see `sc`): an empty table whose tags start from
    /// the body's token `generation`, and a `NextSlot` if it is a thread
    /// step (`thread`).
    pub fn new(
        scope: *mut Scope<'static>,
        generation: u64,
        vproc: usize,
        rt: &Arc<RtShared>,
        thread: bool,
    ) -> CallState {
        let (slots, tags, frames) = SpareTables::take();
        CallState {
            scope,
            slots,
            tags,
            top: 0,
            frames,
            next_tag: (generation as u32).wrapping_mul(0x9E37_79B9),
            vproc,
            rt: rt.clone(),
            // Copied on the first look-up (`desc`): most bodies (a fork's
            // tasks) never look one up.
            descs: Vec::new(),
            next: thread.then(NextSlot::default),
            blocking: None,
            word_tasks: 0,
            floor: 0,
        }
    }

    /// The number of open root frames.
    pub fn open_frames(&self) -> usize {
        self.frames.len()
    }

    /// Root-stack slots that must stay in use: one past the handle
    /// table's highest slot, or a running `numagc_fork` task's floor
    /// (compiled frames must not be popped below either).
    pub fn roots_needed(&self) -> usize {
        self.slots
            .last()
            .map_or(0, |s| s.index() + 1)
            .max(self.floor)
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
        let mut hs = Handles::with_len(n, Handle::NIL, what)?;
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

impl Drop for CallState {
    fn drop(&mut self) {
        SpareTables::give(
            std::mem::take(&mut self.slots),
            std::mem::take(&mut self.tags),
            std::mem::take(&mut self.frames),
        );
    }
}

/// The emptied handle tables of ended bodies on this thread, for the next
/// bodies to fill: a fork runs two bodies, and without these each body
/// allocated and freed its tables (a few `malloc`s and `realloc`s of the
/// ~12,000 instructions a C fork took). At most `KEPT` sets, none with
/// more than `LARGEST` entries, so a body that once held many handles
/// does not keep their memory.
struct SpareTables;

type Tables = (Vec<Slot<'static>>, Vec<u32>, Vec<Frame>);

thread_local! {
    static SPARE_TABLES: std::cell::RefCell<Vec<Tables>> = const { std::cell::RefCell::new(Vec::new()) };
}

impl SpareTables {
    const KEPT: usize = 16;
    const LARGEST: usize = 1024;

    fn take() -> Tables {
        SPARE_TABLES
            .try_with(|s| s.borrow_mut().pop())
            .ok()
            .flatten()
            .unwrap_or_default()
    }

    fn give(mut slots: Vec<Slot<'static>>, mut tags: Vec<u32>, mut frames: Vec<Frame>) {
        if slots.capacity() > Self::LARGEST
            || tags.capacity() > Self::LARGEST
            || frames.capacity() > Self::LARGEST
        {
            return;
        }
        slots.clear();
        tags.clear();
        frames.clear();
        // During thread teardown the thread-local may be gone: the tables
        // are then simply freed.
        let _ = SPARE_TABLES.try_with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < Self::KEPT {
                s.push((slots, tags, frames));
            }
        });
    }
}

/// The C value of an immediate integer: `(i << 1) | 1`, numagc's encoding
/// (`Handle::int`), which `CallState::handle` undoes.
pub(crate) fn int_word(i: i64) -> numagc_value {
    ((i as u64) << 1) | 1
}

/// Up to 8 values inline, more on the heap: the handles of an argument
/// array (mixed objects are small) and a body's environment (a fork's
/// is a few values), which then allocate nothing.
pub(crate) enum Small<T> {
    Inline([T; 8], usize),
    Heap(Vec<T>),
}

/// The Rust handles of a C argument array.
pub(crate) type Handles = Small<Handle<'static>>;

impl<T: Copy> Small<T> {
    /// `n` copies of `fill`; more than 8 on the heap, reserved fallibly:
    /// `NUMAGC_ERR_OS` when the memory cannot be had (never an abort).
    /// `what` names the array for that message.
    pub(crate) fn with_len(n: usize, fill: T, what: &str) -> Res<Small<T>> {
        if n <= 8 {
            return Ok(Small::Inline([fill; 8], n));
        }
        let mut v = Vec::new();
        v.try_reserve_exact(n).map_err(|e| {
            Fail::new(
                NUMAGC_ERR_OS,
                format!("argument `{what}`: no memory for the {n} values it announces: {e}"),
            )
        })?;
        v.resize(n, fill);
        Ok(Small::Heap(v))
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Small::Inline(a, n) => &mut a[..*n],
            Small::Heap(v) => v,
        }
    }

    pub fn as_slice(&self) -> &[T] {
        match self {
            Small::Inline(a, n) => &a[..*n],
            Small::Heap(v) => v,
        }
    }
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
