//! Our version of the larson benchmark (Larson & Krishnan, "Memory
//! allocation for long-running server applications", ISMM'98), the
//! server pattern that multithreaded allocators are compared on, as the
//! paper's §4 compares them: each thread owns a table of `slots` objects of
//! random sizes; a step frees a random slot's object and puts a new one of
//! a random size in `min..=max` bytes there. After every epoch the threads
//! exit and new threads take over the tables, each the table of the
//! previous thread of the next index, so most objects are freed by a
//! thread other than the one that allocated them (and, at the end, by the
//! main thread).
//!
//! **The check**: every object holds its tag (a random word) in its first
//! and last 8 bytes, checked when it is freed; a chunk handed out twice or
//! written over shows as a wrong tag. The sum of the tags freed and the
//! counts of allocations and frees must equal those of a replay of the
//! tables' random streams that allocates nothing (each table carries its
//! own generator, so what it does does not depend on the schedule).
//!
//! **The bound** (`--bound`): the same program with no allocator call in
//! the timed loop. Each table owns a [`Slab`] of `slots` slots of `max`
//! bytes, allocated and written before the timing starts; slot `i` holds
//! the object at index `i`, so a step checks the old object's tags and
//! writes the new one's at the same offsets (`slot + 0`, `slot + size - 8`)
//! as the real run does in its chunks, with the same random draws, counts
//! and checks ([`tagged::place`], [`tagged::retire`]: the same code as
//! `new_obj`/`free_obj` less `malloc`/`free`). The slab moves with its
//! table from thread to thread at each epoch, as the objects do, and the
//! main thread retires what is left at the end, so every hand-off of the
//! real run is there and none is added (a per-thread cache of freed chunks
//! would not be: larson frees on one thread what another allocated, and
//! such a cache would grow on one thread and drain on another). What is
//! left out is exactly the allocator's work: `malloc` and `free`, their
//! synchronisation between threads, and the faulting-in of fresh memory.
//! The slab spreads the objects over `slots * max` bytes where an
//! allocator packs them by size (about half that on average), so if
//! anything the bound takes more cache misses than a run on an allocator
//! that packs well: it is a lower bound on the work, not a flattering one.

use crate::rng::SplitMix64;
use crate::tagged::{self, free_obj, new_obj, Slab, Tally};

/// Sizes, counts and seed of a run.
pub struct Params {
    pub threads: usize,
    pub slots: usize,
    pub steps: usize,
    pub epochs: usize,
    pub min: usize,
    pub max: usize,
    pub seed: u64,
}

struct Table {
    objs: Vec<(usize, usize, u64)>, // (address, size, tag); address 0 = empty
    rng: SplitMix64,
    /// The bound's storage (slot `i` for `objs[i]`); `None` in a real run.
    slab: Option<Slab>,
}

// SAFETY: a table's objects are malloc chunks (or slots of its slab) owned
// by the table alone; moving the table to another thread moves that
// ownership.
unsafe impl Send for Table {}

/// A step of a real run: free the slot's object, allocate a new one.
fn step(table: &mut Table, p: &Params, t: &mut Tally) {
    let i = table.rng.range(0, p.slots - 1);
    let size = table.rng.range(p.min, p.max);
    let tag = table.rng.next_u64();
    let (addr, old_size, old_tag) = table.objs[i];
    if addr != 0 {
        free_obj(addr, old_size, old_tag, t);
    }
    table.objs[i] = (new_obj(size, tag, t), size, tag);
}

/// A step of the bound: the same draws, checks and writes, in slot `i` of
/// the table's slab instead of a fresh chunk.
fn step_bound(table: &mut Table, slab: &Slab, p: &Params, t: &mut Tally) {
    let i = table.rng.range(0, p.slots - 1);
    let size = table.rng.range(p.min, p.max);
    let tag = table.rng.next_u64();
    let (addr, old_size, old_tag) = table.objs[i];
    let slot = slab.slot(i);
    // SAFETY: slot i of the table's own slab holds max >= size bytes, and
    // the table (with its slab) is this thread's alone during the epoch.
    unsafe {
        if addr != 0 {
            tagged::retire(addr, old_size, old_tag, t);
        }
        tagged::place(slot, size, tag, t);
    }
    table.objs[i] = (slot, size, tag);
}

/// `p.steps` steps on `table`, real or bound by whether it has a slab.
fn epoch(table: &mut Table, p: &Params, t: &mut Tally) {
    match table.slab.take() {
        Some(slab) => {
            for _ in 0..p.steps {
                step_bound(table, &slab, p, t);
            }
            table.slab = Some(slab);
        }
        None => {
            for _ in 0..p.steps {
                step(table, p, t);
            }
        }
    }
}

/// The replay: the same streams, integers only.
fn expected(p: &Params) -> Tally {
    let mut t = Tally::default();
    for k in 0..p.threads {
        let mut rng = SplitMix64(p.seed.wrapping_add(k as u64));
        let mut tags: Vec<Option<u64>> = vec![None; p.slots];
        for _ in 0..p.steps * p.epochs {
            let i = rng.range(0, p.slots - 1);
            let _size = rng.range(p.min, p.max);
            let tag = rng.next_u64();
            if let Some(old) = tags[i] {
                t.frees += 1;
                t.tag_sum = t.tag_sum.wrapping_add(old);
            }
            tags[i] = Some(tag);
            t.allocs += 1;
        }
        for old in tags.into_iter().flatten() {
            t.frees += 1;
            t.tag_sum = t.tag_sum.wrapping_add(old);
        }
    }
    t
}

/// Runs larson (or its bound) and checks it; the line to print on success.
pub fn run(p: &Params, bound: bool, fault: bool) -> Result<String, String> {
    if p.min < 16 || p.max < p.min || p.slots == 0 || p.threads == 0 {
        return Err(format!(
            "larson: need 16 <= min <= max and slots, threads >= 1 (min {}, max {}, slots {})",
            p.min, p.max, p.slots
        ));
    }
    let make = || -> Vec<Table> {
        (0..p.threads)
            .map(|k| Table {
                objs: vec![(0, 0, 0); p.slots],
                rng: SplitMix64(p.seed.wrapping_add(k as u64)),
                slab: bound.then(|| Slab::new(p.slots, p.max)),
            })
            .collect()
    };
    // The bound's slabs are made (and faulted in) before the timing starts.
    let mut tables = if bound {
        let tables = make();
        crate::timing::start();
        tables
    } else {
        crate::timing::start();
        make()
    };
    let mut total = Tally::default();
    for _ in 0..p.epochs {
        let results: Vec<std::thread::Result<(Table, Tally)>> = std::thread::scope(|s| {
            let handles: Vec<_> = tables
                .into_iter()
                .map(|mut table| {
                    s.spawn(move || {
                        let mut t = Tally::default();
                        epoch(&mut table, p, &mut t);
                        (table, t)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join()).collect()
        });
        let mut next = Vec::with_capacity(p.threads);
        for r in results {
            let (table, t) = r.map_err(|_| "larson: a worker thread panicked".to_string())?;
            total.add(t);
            next.push(table);
        }
        // Thread k + 1 of the next epoch takes over table k.
        next.rotate_right(1);
        tables = next;
    }
    for table in &tables {
        for &(addr, size, tag) in &table.objs {
            if addr == 0 {
                continue;
            }
            if bound {
                // SAFETY: a slot of the table's slab, alive until `tables` is dropped.
                unsafe { tagged::retire(addr, size, tag, &mut total) };
            } else {
                free_obj(addr, size, tag, &mut total);
            }
        }
    }
    crate::timing::stop();
    drop(tables);
    if fault {
        total.tag_sum ^= 1;
    }
    let want = expected(p);
    if total.bad != 0 {
        return Err(format!(
            "larson: {} object(s) freed with a wrong tag (memory handed out twice or written over)",
            total.bad
        ));
    }
    if total != want {
        return Err(format!(
            "larson: got {total:?}, the replay expects {want:?}"
        ));
    }
    // In the bound the objects are placed in and retired from slots: no
    // allocation but the slabs', one per table before the timing.
    let (made, gone) = if bound {
        ("objects", "retired")
    } else {
        ("allocations", "frees")
    };
    Ok(format!(
        "larson {} threads={} slots={} steps={} epochs={} sizes={}..={} {made}={} {gone}={} tag_sum={:#x}",
        if bound { "bound" } else { "alloc" },
        p.threads, p.slots, p.steps, p.epochs, p.min, p.max, total.allocs, total.frees, total.tag_sum
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params() -> Params {
        Params {
            threads: 3,
            slots: 20,
            steps: 400,
            epochs: 4,
            min: 16,
            max: 100,
            seed: 5,
        }
    }

    /// The bound and the real run count the same objects and tags (each
    /// also checked against the replay inside `run`).
    #[test]
    fn the_bound_does_the_real_runs_work() {
        let real = run(&params(), false, false).unwrap();
        let bound = run(&params(), true, false).unwrap();
        let tail = |l: &str, made: &str| l.split_once(made).unwrap().1.to_string();
        assert_eq!(
            tail(&real, "allocations="),
            tail(&bound, "objects=").replace("retired=", "frees="),
            "{real}\n{bound}"
        );
        assert!(bound.starts_with("larson bound "), "{bound}");
    }

    /// The bound's answer is checked: a corrupted tally is reported.
    #[test]
    fn the_bound_checks_its_answer() {
        let e = run(&params(), true, true).unwrap_err();
        assert!(e.contains("the replay expects"), "{e}");
    }
}
