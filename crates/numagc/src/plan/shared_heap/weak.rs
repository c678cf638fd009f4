//! Ephemerons and finalisers on the shared heap: where its collections run
//! the plan-neutral processing of `crate::weak` (multicore-ocaml-gc.txt
//! §5.1–5.2), and the [`WeakTracer`] each one is.
//!
//! Nothing is private on this plan, so every entry is on a vproc's shared
//! lists, and both collections process them all (`Lists::All`):
//!
//! | collection | when | dead means |
//! |---|---|---|
//! | minor (`collection`, phase 2) | after every vproc promoted its roots | in a minor heap, not promoted |
//! | end of a cycle (`collection`, phase 3) | marking complete, before the colours rotate | in the major heap, not marked |
//!
//! A minor collection decides only about minor-heap objects (a major key
//! is alive as far as it knows); the end of a cycle about the major heap
//! (the minor heaps are empty then). Both run on the leader while the
//! other vprocs wait at the phase barrier, with the leader's own promoter
//! or mark stack, so the rounds of §5.1.2 end when one keeps nothing new:
//! with no mutator running, §5.1.3's counting of domains reduces to that.
//! The paper runs the rounds concurrently during marking; ours run at the
//! barrier that ends marking, as OCaml's own final ephemeron phase does
//! (`Phase_mark_final`), at the cost of a serial step whose length grows
//! with the live ephemerons (measured nowhere yet).
//!
//! Cost: a minor collection walks every list, old entries included (OCaml
//! keeps a separate list of minor ephemerons); with no entry anywhere,
//! nothing runs (one load).

use super::mark::{self, colour_cell, darken};
use super::minor::Promoter;
use crate::object::{is_pointer, Obj};
use crate::vproc::Shared;
use crate::weak::{process, Lists, VprocWeak, WeakTracer};
use std::sync::atomic::Ordering;

impl WeakTracer for Promoter<'_> {
    fn live(&self, w: u64) -> Option<u64> {
        if !self.is_minor(w) {
            return Some(w); // not collected by a minor collection
        }
        // SAFETY: a pointer value into a minor heap targets an object
        // header or the forwarding address that replaced it; the minor
        // heaps are not reused before this collection ends.
        let hw = unsafe { Obj::at(w as usize) }.header_word();
        (hw & 1 == 0).then_some(hw)
    }

    fn keep(&mut self, w: u64) -> u64 {
        self.forward(w)
    }

    fn drain(&mut self) {
        Promoter::drain(self)
    }
}

/// Runs the weak processing of a minor collection (leader, every vproc
/// waiting) with the leader's promoter.
pub(crate) fn after_minor(shared: &Shared, p: &mut Promoter<'_>) {
    if shared.weak.is_empty() {
        return;
    }
    let mut locked = shared.weak.lock_all();
    let mut lists: Vec<&mut VprocWeak> = locked.iter_mut().map(|l| &mut **l).collect();
    process(&mut lists, Lists::All, p);
}

/// Darkens the values of every vproc's due finalisers (roots, like the
/// global roots, when a cycle begins).
pub(crate) fn darken_pending(shared: &Shared, stack: &mut Vec<usize>) {
    if shared.weak.is_empty() {
        return;
    }
    let gc = &shared.shared_heap;
    let roles = gc.colours.roles();
    for l in shared.weak.lock_all() {
        for p in l.pending.iter() {
            darken(&shared.heap, gc.page_bytes, roles, stack, p.value);
        }
    }
}

/// The marker as the end of a cycle sees it: marked means alive.
struct Marker<'a> {
    shared: &'a Shared,
    stack: &'a mut Vec<usize>,
}

impl WeakTracer for Marker<'_> {
    fn live(&self, w: u64) -> Option<u64> {
        if !is_pointer(w) {
            return Some(w);
        }
        let gc = &self.shared.shared_heap;
        match colour_cell(&self.shared.heap, gc.page_bytes, w) {
            Some(c) => (c.load(Ordering::Relaxed) == gc.colours.roles().marked).then_some(w),
            None => Some(w),
        }
    }

    fn keep(&mut self, w: u64) -> u64 {
        let gc = &self.shared.shared_heap;
        darken(
            &self.shared.heap,
            gc.page_bytes,
            gc.colours.roles(),
            self.stack,
            w,
        );
        w
    }

    fn drain(&mut self) {
        let s = self.shared;
        mark::mark(&s.heap, &s.shared_heap, &s.descs, self.stack, usize::MAX);
    }
}

/// Runs the weak processing of the end of a cycle (leader, every vproc
/// waiting, marking complete) with the leader's mark stack.
pub(crate) fn at_cycle_end(shared: &Shared, stack: &mut Vec<usize>) {
    if shared.weak.is_empty() {
        return;
    }
    let mut locked = shared.weak.lock_all();
    let mut lists: Vec<&mut VprocWeak> = locked.iter_mut().map(|l| &mut **l).collect();
    let mut m = Marker { shared, stack };
    process(&mut lists, Lists::All, &mut m);
}
