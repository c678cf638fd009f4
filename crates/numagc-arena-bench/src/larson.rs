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

use crate::rng::SplitMix64;
use crate::tagged::{free_obj, new_obj, Tally};

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
}

// SAFETY: a table's objects are malloc chunks owned by the table alone;
// moving the table to another thread moves that ownership.
unsafe impl Send for Table {}

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

pub fn run(p: &Params, fault: bool) -> Result<String, String> {
    if p.min < 16 || p.max < p.min || p.slots == 0 || p.threads == 0 {
        return Err(format!(
            "larson: need 16 <= min <= max and slots, threads >= 1 (min {}, max {}, slots {})",
            p.min, p.max, p.slots
        ));
    }
    crate::timing::start();
    let mut tables: Vec<Table> = (0..p.threads)
        .map(|k| Table {
            objs: vec![(0, 0, 0); p.slots],
            rng: SplitMix64(p.seed.wrapping_add(k as u64)),
        })
        .collect();
    let mut total = Tally::default();
    for _ in 0..p.epochs {
        let results: Vec<std::thread::Result<(Table, Tally)>> = std::thread::scope(|s| {
            let handles: Vec<_> = tables
                .into_iter()
                .map(|mut table| {
                    s.spawn(move || {
                        let mut t = Tally::default();
                        for _ in 0..p.steps {
                            step(&mut table, p, &mut t);
                        }
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
    for table in tables {
        for (addr, size, tag) in table.objs {
            if addr != 0 {
                free_obj(addr, size, tag, &mut total);
            }
        }
    }
    crate::timing::stop();
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
    Ok(format!(
        "larson threads={} slots={} steps={} epochs={} sizes={}..={} allocations={} frees={} tag_sum={:#x}",
        p.threads, p.slots, p.steps, p.epochs, p.min, p.max, total.allocs, total.frees, total.tag_sum
    ))
}
