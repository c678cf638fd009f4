//! Ephemerons and finalisers on the split heap: where its collectors run
//! the plan-neutral processing of `crate::weak` (multicore-ocaml-gc.txt
//! §5.1–5.2), and the [`WeakTracer`] each one is.
//!
//! | collector | lists | dead means |
//! |---|---|---|
//! | [`minor`] (`minor::collect`) | the vproc's private ones | in the nursery, not copied |
//! | [`major`] (`major::evacuate`) | the vproc's private ones | in the evacuated old data, not copied |
//! | [`global`] (`global::participate`, leader) | every vproc's, all | in from-space, not copied; a large object unmarked (full collections) |
//! | [`promoted`] (`promote::promote`) | the vproc's private ephemerons | — (strong) |
//!
//! * **Local collections** decide only about local objects: a local
//!   ephemeron whose key is global has a live key as far as they know, and
//!   a finalised global value is left to global collections. After one,
//!   entries whose object became global (a major collection copied it, or
//!   a promotion did earlier) move to the vproc's shared lists.
//! * **Global collections** run the rounds over every vproc's lists, on
//!   the leader, after the parallel scan (the others wait at a phase
//!   barrier; with no entry anywhere there is no barrier). Local
//!   ephemerons are processed too: their global keys and data may move or
//!   die. Everything a round keeps is copied by the leader's own evacuator.
//! * **Promotion treats ephemerons as strong.** A promoted ephemeron is a
//!   global object, and the global heap never points into a local heap
//!   (§2.3), so its key and data are promoted with it, and live until the
//!   next global collection decides about them. Finalised values are
//!   promoted like any value (the promotion made them reachable from a
//!   shared place); their entries move to the shared list at the next
//!   local collection.
//!
//! Nothing here runs, and nothing is locked, when the registry is empty:
//! each collector tests that with one load.

use super::copy::ToGlobal;
use super::global::Evacuator;
use super::minor::Minor;
use crate::heap::space::ChunkKind;
use crate::object::{is_pointer, Obj};
use crate::vproc::Shared;
use crate::weak::{process, Lists, VprocWeak, WeakTracer, CLEARED, EPH_DATA, EPH_KEY};
use std::sync::atomic::Ordering;

/// The header word at `a` (an object start or a forwarded one).
#[inline]
fn header_word(a: usize) -> u64 {
    // SAFETY: callers pass addresses of objects of a collected range that
    // has not been reused yet.
    unsafe { Obj::at(a) }.header_word()
}

/// Moves the private entries whose object is no longer in `local` to the
/// shared lists.
fn relist(w: &mut VprocWeak, local: (usize, usize)) {
    let in_local = |x: u64| (x as usize).wrapping_sub(local.0) < local.1 - local.0;
    let (keep, moved): (Vec<u64>, Vec<u64>) = w.eph_private.iter().partition(|&&e| in_local(e));
    w.eph_private = keep;
    w.eph_shared.extend(moved);
    if w.fin_private.iter().any(|f| !in_local(f.value)) {
        for f in std::mem::take(&mut w.fin_private) {
            if in_local(f.value) {
                w.fin_private.push(f);
            } else {
                w.fin_shared.push(f);
            }
        }
    }
}

/// Whether vproc `id`'s lists have anything a local collection processes.
fn private_work(w: &VprocWeak) -> bool {
    !(w.eph_private.is_empty() && w.fin_private.is_empty() && w.pending.is_empty())
}

impl WeakTracer for Minor<'_> {
    fn live(&self, w: u64) -> Option<u64> {
        if !is_pointer(w) {
            return Some(w);
        }
        let a = w as usize;
        if a < self.local.0 || a >= self.local.1 {
            return Some(w);
        }
        let hw = header_word(a);
        if hw & 1 == 0 {
            return Some(hw); // copied by this collection, or promoted
        }
        let dead = a >= self.nursery.0 && a < self.nursery.1;
        (!dead).then_some(w)
    }

    fn keep(&mut self, w: u64) -> u64 {
        self.forward(w)
    }

    fn drain(&mut self) {
        Minor::drain(self)
    }
}

/// The weak processing of vproc `id`'s minor collection.
pub(crate) fn minor(shared: &Shared, id: usize, m: &mut Minor<'_>) {
    let mut w = shared.weak.lock(id);
    if private_work(&w) {
        process(&mut [&mut *w], Lists::Private, m);
        relist(&mut w, m.local);
    }
}

/// A major collection: the copy to the global heap, and the young data
/// that will slide down by `delta` once this processing is over.
struct Major<'c, 'a> {
    c: &'c mut ToGlobal<'a>,
    young: (usize, usize),
    delta: usize,
}

impl Major<'_, '_> {
    #[inline]
    fn rebase(&self, w: u64) -> u64 {
        let a = w as usize;
        if is_pointer(w) && a >= self.young.0 && a < self.young.1 {
            (a - self.delta) as u64
        } else {
            w
        }
    }
}

impl WeakTracer for Major<'_, '_> {
    fn live(&self, w: u64) -> Option<u64> {
        if !is_pointer(w) {
            return Some(w);
        }
        let a = w as usize;
        if a.wrapping_sub(self.c.local_lo) >= self.c.local_hi - self.c.local_lo {
            return Some(w);
        }
        let hw = header_word(a);
        if hw & 1 == 0 {
            return Some(hw); // copied to the global heap
        }
        if a >= self.c.from_lo && a < self.c.from_hi {
            return None;
        }
        Some(self.rebase(w))
    }

    fn keep(&mut self, w: u64) -> u64 {
        let n = self.c.forward(w);
        self.rebase(n)
    }

    fn drain(&mut self) {
        self.c.finish()
    }

    fn body(&self, w: u64) -> Obj {
        let a = w as usize;
        // The young data's final place: `[from_lo, from_lo + its size)`.
        let young_len = self.young.1.saturating_sub(self.young.0);
        let at = if a.wrapping_sub(self.c.from_lo) < young_len {
            a + self.delta // young data, not slid yet
        } else {
            a
        };
        // SAFETY: `w` is a live object's word: a global copy, or a young
        // object whose body is still `delta` above its final place.
        unsafe { Obj::at(at) }
    }
}

/// The weak processing of vproc `id`'s major collection (or survivor
/// evacuation): `c` copied `[c.from_lo, c.from_hi)`, and the young data
/// `young` will slide down by `delta`.
pub(crate) fn major(
    shared: &Shared,
    id: usize,
    c: &mut ToGlobal<'_>,
    young: (usize, usize),
    delta: usize,
) {
    let mut w = shared.weak.lock(id);
    if private_work(&w) {
        let local = (c.local_lo, c.local_hi);
        process(
            &mut [&mut *w],
            Lists::Private,
            &mut Major { c, young, delta },
        );
        relist(&mut w, local);
    }
}

/// After a promotion by `c` (of vproc `id`, local heap `local`): every
/// ephemeron it copied gets its key and data promoted too (strong), until
/// no promoted ephemeron is left with local fields.
pub(crate) fn promoted(shared: &Shared, id: usize, c: &mut ToGlobal<'_>, local: (usize, usize)) {
    let mut w = shared.weak.lock(id);
    let in_local = |x: usize| x.wrapping_sub(local.0) < local.1 - local.0;
    loop {
        let mut moved = Vec::new();
        w.eph_private.retain(|&e| {
            // A private entry is an ephemeron of the local heap, dead or
            // alive, whose memory is intact until the next local
            // collection; forwarded means promoted by this pass (earlier
            // promotions moved their entries already).
            let hw = header_word(e as usize);
            let promoted = hw & 1 == 0 && !in_local(hw as usize);
            if promoted {
                moved.push(hw);
            }
            !promoted
        });
        if moved.is_empty() {
            return;
        }
        for &e in &moved {
            // SAFETY: `e` is the global copy this pass made.
            let o = unsafe { Obj::at(e as usize) };
            for f in [EPH_KEY, EPH_DATA] {
                let x = o.field(f);
                if x != CLEARED {
                    o.set_field(f, c.forward(x));
                }
            }
        }
        w.eph_shared.extend(moved);
        c.finish();
    }
}

/// The leader's evacuator in a global collection.
struct Global<'e, 'a> {
    e: &'e mut Evacuator<'a>,
}

impl WeakTracer for Global<'_, '_> {
    fn live(&self, w: u64) -> Option<u64> {
        if !is_pointer(w) {
            return Some(w);
        }
        let a = w as usize;
        let space = &self.e.heap.space;
        let Some(cid) = space.chunk_of(a) else {
            return Some(w);
        };
        let info = space.info(cid);
        match info.kind() {
            ChunkKind::FromSpace => {
                let hw = header_word(a);
                (hw & 1 == 0).then_some(hw)
            }
            ChunkKind::LargeHead if self.e.full => info.mark.load(Ordering::Acquire).then_some(w),
            // Local heaps survive global collections whole; tenured chunks
            // and large objects survive young ones; to-space holds copies.
            _ => Some(w),
        }
    }

    fn keep(&mut self, w: u64) -> u64 {
        self.e.forward(w)
    }

    fn drain(&mut self) {
        self.e.drain()
    }
}

/// The weak processing of a global collection: run by the leader, with
/// its evacuator `e`, after the parallel scan, while the other vprocs wait.
pub(super) fn global(shared: &Shared, e: &mut Evacuator<'_>) {
    let mut all = shared.weak.lock_all();
    let mut lists: Vec<&mut VprocWeak> = all.iter_mut().map(|l| &mut **l).collect();
    process(&mut lists, Lists::All, &mut Global { e });
}
