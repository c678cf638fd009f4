//! Termination of a major cycle's marking and sweeping
//! (multicore-ocaml-gc.txt §3.2.1): the counter of vprocs that have work
//! left in the cycle (`gNumDomsToMark` in the paper, which counts marking;
//! ours counts sweeping too).
//!
//! Protocol: at the barrier that begins a cycle the counter is the number
//! of vprocs, and each vproc's `done` flag is clear. A vproc whose mark
//! stack is empty and whose pages are swept counts itself off once
//! ([`Termination::count_off`]); one that darkens an object afterwards —
//! the deletion barrier, a read out of an ephemeron — counts itself back
//! on ([`Termination::count_on`]) before it reaches a safepoint. So when
//! every vproc is stopped, the counter is the number of vprocs with work
//! left, and zero means every mark stack is empty and every page swept:
//! the cycle can end. (While vprocs run, a zero may be followed by a
//! count-on; the cycle then ends only at the next stop-the-world barrier,
//! where each vproc drains what it has left first: see `collection`.)
//! `loom_models::termination` explores this code.

use crate::sync::{AtomicUsize, Ordering};

pub(crate) struct Termination {
    to_finish: AtomicUsize,
}

impl Termination {
    pub fn new(vprocs: usize) -> Termination {
        Termination {
            to_finish: AtomicUsize::new(vprocs),
        }
    }

    /// A cycle begins (every vproc stopped; each clears its `done`).
    pub fn reset(&self, vprocs: usize) {
        self.to_finish.store(vprocs, Ordering::Release);
    }

    /// A vproc with nothing left to do in this cycle counts itself off
    /// (once: `done` says whether it did already); `true` when it was the
    /// last one.
    pub fn count_off(&self, done: &mut bool) -> bool {
        if *done {
            return false;
        }
        *done = true;
        self.to_finish.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// A vproc that counted itself off got work again.
    pub fn count_on(&self, done: &mut bool) {
        if *done {
            *done = false;
            self.to_finish.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Whether every vproc counted itself off.
    pub fn all_done(&self) -> bool {
        self.to_finish.load(Ordering::Acquire) == 0
    }

    /// Vprocs that have not counted themselves off.
    #[cfg(all(test, loom))]
    pub fn remaining(&self) -> usize {
        self.to_finish.load(Ordering::Acquire)
    }
}
