//! Model of the termination of a major cycle's marking on the shared plan
//! (`plan/shared_heap/termination.rs`: `Termination`, multicore-ocaml-gc.txt
//! §3.2.1).
//!
//! The counter is the production code; the heap is a replica: three
//! objects whose colours are loom atomics (marking is a load of unmarked
//! and a store of marked, as `mark::darken` does), object 0 a root of
//! vproc A pointing to object 1, and object 2 reachable at the snapshot
//! only through a mutable field of object 1. Vproc A marks from its root;
//! vproc B, with nothing to mark, counts itself off at once, then
//! overwrites that field: its deletion barrier darkens object 2 and, as it
//! now has work, counts itself back on, marks, and counts off again.
//!
//! The second model races two markers on one object: vprocs A and B have
//! roots (objects 0 and 1) that both point to object 2, which points to
//! object 3. Both may see object 2 unmarked and push it; the model checks
//! that marking still ends with every object marked, both stacks empty
//! and the counter at zero.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::plan::shared_heap::termination::Termination;

const UNMARKED: usize = 0;
const MARKED: usize = 1;

/// `mark::darken`'s protocol on a loom colour: a load, then a store.
fn darken(colour: &AtomicUsize, o: usize, stack: &mut Vec<usize>) -> bool {
    if colour.load(Ordering::Relaxed) == UNMARKED {
        colour.store(MARKED, Ordering::Release);
        stack.push(o);
        true
    } else {
        false
    }
}

struct Heap {
    colour: [AtomicUsize; 3],
    /// Object 1's mutable field: 2, or 3 (no object) once overwritten.
    field: AtomicUsize,
}

impl Heap {
    fn darken(&self, o: usize, stack: &mut Vec<usize>) -> bool {
        darken(&self.colour[o], o, stack)
    }

    /// Scans the objects of `stack`: 0 → 1, 1 → its field.
    fn mark(&self, stack: &mut Vec<usize>) {
        while let Some(o) = stack.pop() {
            match o {
                0 => {
                    self.darken(1, stack);
                }
                1 => {
                    let f = self.field.load(Ordering::Acquire);
                    if f < 3 {
                        self.darken(f, stack);
                    }
                }
                _ => {}
            }
        }
    }
}

#[test]
fn marking_ends_only_when_every_vproc_is_done_and_the_barrier_counts_back_on() {
    loom::model(|| {
        let heap = Arc::new(Heap {
            colour: Default::default(),
            field: AtomicUsize::new(2),
        });
        let term = Arc::new(Termination::new(2));
        // The cycle's root (object 0, vproc A's) is darkened at its start.
        let mut stack_a = Vec::new();
        heap.darken(0, &mut stack_a);

        let (h, t) = (heap.clone(), term.clone());
        let a = thread::spawn(move || {
            let mut done = false;
            h.mark(&mut stack_a);
            let last = t.count_off(&mut done);
            (stack_a.is_empty(), done, last)
        });
        let (h, t) = (heap.clone(), term.clone());
        let b = thread::spawn(move || {
            let mut done = false;
            let mut stack = Vec::new();
            let mut last = t.count_off(&mut done);
            // The deletion barrier, then the store.
            let old = h.field.load(Ordering::Acquire);
            if h.darken(old, &mut stack) {
                t.count_on(&mut done);
                assert!(!done);
            }
            h.field.store(3, Ordering::Release);
            h.mark(&mut stack);
            last |= t.count_off(&mut done);
            (stack.is_empty(), done, last)
        });
        let (a, b) = (a.join().unwrap(), b.join().unwrap());
        // Every vproc stopped: the counter is the vprocs with work left.
        assert!(a.0 && b.0 && a.1 && b.1);
        assert!(term.all_done(), "{} left", term.remaining());
        // Exactly one vproc saw itself last the final time it counted off
        // (one may have seen it before the barrier counted back on too).
        assert!(a.2 || b.2, "someone counted off last");
        // The snapshot is marked: object 2 by the barrier or by A.
        for o in 0..3 {
            assert_eq!(heap.colour[o].load(Ordering::Relaxed), MARKED, "object {o}");
        }
    });
}

/// Objects 0 and 1 (the two vprocs' roots) point to object 2, which
/// points to object 3.
struct Diamond {
    colour: [AtomicUsize; 4],
}

impl Diamond {
    fn mark(&self, stack: &mut Vec<usize>) {
        while let Some(o) = stack.pop() {
            let child = match o {
                0 | 1 => 2,
                2 => 3,
                _ => continue,
            };
            darken(&self.colour[child], child, stack);
        }
    }
}

#[test]
fn two_markers_that_darken_one_object_both_scan_it_and_marking_still_ends() {
    loom::model(|| {
        let heap = Arc::new(Diamond {
            colour: Default::default(),
        });
        let term = Arc::new(Termination::new(2));
        let markers: Vec<_> = (0..2)
            .map(|root| {
                let (h, t) = (heap.clone(), term.clone());
                thread::spawn(move || {
                    let mut done = false;
                    let mut stack = Vec::new();
                    darken(&h.colour[root], root, &mut stack);
                    h.mark(&mut stack);
                    t.count_off(&mut done);
                    (stack.is_empty(), done)
                })
            })
            .collect();
        for m in markers {
            assert_eq!(m.join().unwrap(), (true, true));
        }
        assert!(term.all_done(), "{} left", term.remaining());
        for o in 0..4 {
            assert_eq!(heap.colour[o].load(Ordering::Relaxed), MARKED, "object {o}");
        }
    });
}
