//! The weak processing of one collection, for every plan: the ephemeron
//! rounds of multicore-ocaml-gc.txt §5.1.2 and the finalisers of §5.2,
//! run by the collector after its ordinary trace, through the
//! [`WeakTracer`] the plan implements.
//!
//! Order, as in §5.2 (finalisers marked when marking first finishes, then
//! ephemerons, then `finalise_last`, then the ephemeron sweep, §5.1.4):
//!
//! 1. The values of pending finalisers are roots: kept, then drained.
//! 2. `finalise`: a value found dead is kept (resurrected) and its
//!    finaliser queued; drained.
//! 3. Ephemeron rounds: every live ephemeron whose key is live has its data
//!    kept; drained; repeated until a round keeps nothing new. Keys reached
//!    only through other ephemerons' data are found by later rounds.
//! 4. `finalise_last`: a value still dead is forgotten and its finaliser
//!    queued.
//! 5. Sweep: dead ephemerons leave the lists; a live one with a dead key
//!    gets both fields [`CLEARED`]; the others get their fields' new
//!    values. Registered finalisers and queued values are updated likewise.
//!
//! A stop-the-world collection runs the rounds serially over every vproc's
//! lists (the termination rule of §5.1.3 reduces to "a round kept nothing",
//! since no mutator runs meanwhile); a concurrent collector calls the same
//! steps per vproc with the termination protocol of §5.1.3 around them.

use super::{Finaliser, FinaliserFn, VprocWeak, CLEARED, EPH_DATA, EPH_KEY};
use crate::object::{Obj, NIL};

/// What a collector tells the weak processing. Words are values
/// (immediates or object addresses); [`CLEARED`] is never passed. `live`
/// and `keep` are asked about *old* words only (as they were before the
/// collection), each registered word once per step: a collector that
/// moves objects answers from its forwarding pointers.
pub(crate) trait WeakTracer {
    /// The word `w` becomes if its object is known to be alive now
    /// (reached by the trace so far, or outside what this collection
    /// collects); `None` if it is dead so far. Immediates are alive.
    fn live(&self, w: u64) -> Option<u64>;
    /// Keeps `w`'s object alive (copies or marks it, and queues it to be
    /// scanned) and returns the word it becomes.
    fn keep(&mut self, w: u64) -> u64;
    /// Traces everything reachable from what was kept, to the end.
    fn drain(&mut self);
    /// Where the fields of the live object `w` (a word returned by `live`)
    /// are while the collection runs: `w` itself, unless the collector
    /// moves objects after this processing (the split plan's major
    /// collection slides its young data afterwards).
    fn body(&self, w: u64) -> Obj {
        // SAFETY: `w` is a live object's word (the trait's contract).
        unsafe { Obj::at(w as usize) }
    }
}

/// Which lists a collection processes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Lists {
    /// Those of the private heap (a local collection).
    Private,
    /// All (a collection of the shared heap).
    All,
}

/// Runs the weak processing of one collection over `vprocs`' lists.
/// Returns the number of finalisers queued.
pub(crate) fn process<T: WeakTracer>(
    vprocs: &mut [&mut VprocWeak],
    which: Lists,
    t: &mut T,
) -> usize {
    let all = which == Lists::All;
    // 1. Pending values are roots.
    for w in vprocs.iter_mut() {
        for p in w.pending.iter_mut() {
            p.value = t.keep(p.value);
        }
    }
    t.drain();

    // 2. `finalise`: resurrect and queue.
    let mut queued = queue_dead(vprocs, all, t, |f| matches!(f, FinaliserFn::First(_)));
    t.drain();

    // 3. Ephemeron rounds.
    let mut done: Vec<[Vec<bool>; 2]> = vprocs
        .iter()
        .map(|w| {
            let shared = if all { w.eph_shared.len() } else { 0 };
            [vec![false; w.eph_private.len()], vec![false; shared]]
        })
        .collect();
    loop {
        let mut kept = false;
        for (w, done) in vprocs.iter().zip(done.iter_mut()) {
            let [dp, ds] = done;
            for (list, done) in [(&w.eph_private, dp), (&w.eph_shared, ds)] {
                // `done` is empty for a list this collection does not process.
                for (&e, d) in list.iter().zip(done.iter_mut()) {
                    if !*d && round(e, t) {
                        *d = true;
                        kept = true;
                    }
                }
            }
        }
        if !kept {
            break;
        }
        t.drain();
    }

    // 4. `finalise_last`: queue without the value.
    queued += queue_dead(vprocs, all, t, |f| matches!(f, FinaliserFn::Last(_)));

    // 5. Sweep: ephemerons, and the new places of registered values.
    for w in vprocs.iter_mut() {
        sweep_ephemerons(&mut w.eph_private, t);
        if all {
            sweep_ephemerons(&mut w.eph_shared, t);
        }
        for list in [Some(&mut w.fin_private), all.then_some(&mut w.fin_shared)]
            .into_iter()
            .flatten()
        {
            for f in list.iter_mut() {
                f.value = t
                    .live(f.value)
                    .expect("a value whose finaliser was not queued is alive");
            }
        }
    }
    queued
}

/// Queues the finalisers of kind `kind` whose value is dead, on every
/// vproc's pending queue, in the reverse order of their registration (as
/// OCaml calls the finalisers of one cycle). A `First` finaliser keeps
/// its value (resurrected: the caller drains the tracer); a `Last` one
/// gets `NIL`. Returns how many were queued.
fn queue_dead<T: WeakTracer>(
    vprocs: &mut [&mut VprocWeak],
    all: bool,
    t: &mut T,
    kind: impl Fn(&FinaliserFn) -> bool,
) -> usize {
    let mut queued = 0;
    for w in vprocs.iter_mut() {
        let VprocWeak {
            fin_private,
            fin_shared,
            pending,
            ..
        } = &mut **w;
        let mut found = Vec::new();
        for list in [Some(fin_private), all.then_some(fin_shared)]
            .into_iter()
            .flatten()
        {
            take_dead(list, |f| kind(&f.f), t, &mut found);
        }
        for mut f in found.into_iter().rev() {
            f.value = match f.f {
                FinaliserFn::First(_) => t.keep(f.value),
                FinaliserFn::Last(_) => NIL,
            };
            pending.push_back(f);
            queued += 1;
        }
    }
    queued
}

/// Moves the finalisers of `list` that match `kind` and whose value is
/// dead to `found`, in registration order. The others keep their old
/// words: step 5 updates them (a tracer is asked about old words only).
fn take_dead<T: WeakTracer>(
    list: &mut Vec<Finaliser>,
    kind: impl Fn(&Finaliser) -> bool,
    t: &T,
    found: &mut Vec<Finaliser>,
) {
    if !list.iter().any(|f| kind(f) && t.live(f.value).is_none()) {
        return;
    }
    for f in std::mem::take(list) {
        if kind(&f) && t.live(f.value).is_none() {
            found.push(f);
        } else {
            list.push(f);
        }
    }
}

/// One ephemeron in a round: whether its data is now kept (it is alive,
/// its key is alive, and its data was kept now) or needs no round any more
/// (its key was cleared before).
fn round<T: WeakTracer>(e: u64, t: &mut T) -> bool {
    let Some(e) = t.live(e) else {
        return false;
    };
    let o = t.body(e);
    let key = o.field(EPH_KEY);
    if key == CLEARED {
        return true;
    }
    if t.live(key).is_none() {
        return false;
    }
    let data = o.field(EPH_DATA);
    if data != CLEARED {
        t.keep(data);
    }
    true
}

/// Step 5 for one list of ephemerons.
fn sweep_ephemerons<T: WeakTracer>(list: &mut Vec<u64>, t: &T) {
    list.retain_mut(|e| {
        let Some(n) = t.live(*e) else {
            return false; // the ephemeron itself is dead
        };
        *e = n;
        let o = t.body(n);
        let key = o.field(EPH_KEY);
        if key == CLEARED {
            return true;
        }
        match t.live(key) {
            Some(k) => {
                o.set_field(EPH_KEY, k);
                let data = o.field(EPH_DATA);
                if data != CLEARED {
                    let d = t.live(data).expect("the data of a live key was kept");
                    o.set_field(EPH_DATA, d);
                }
            }
            None => {
                o.set_field(EPH_KEY, CLEARED);
                o.set_field(EPH_DATA, CLEARED);
            }
        }
        true
    });
}
