//! Our version of xmalloc-test (Lever & Boreham, "malloc() Performance in a
//! Multithreaded Linux Environment", USENIX 2000; the version in
//! mimalloc-bench): producer threads allocate objects of random sizes in
//! batches and hand the batches over; consumer threads free them. Every
//! object is freed by a thread that did not allocate it, the pattern that
//! the remote-free lists of numagc-arena (`remote_free`) and the paper's
//! per-thread arenas (§3) must handle. `--threads K` runs K producers and
//! K consumers, all sharing one bounded queue of batches (so a consumer
//! frees batches of any producer).
//!
//! **The check**: as for larson, each object carries its tag in its first
//! and last 8 bytes, checked when freed; the counts and the sum of the
//! tags freed must equal a replay of the producers' random streams that
//! allocates nothing.

use crate::rng::SplitMix64;
use crate::tagged::{free_obj, new_obj, Tally};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

pub struct Params {
    pub threads: usize,
    pub batches: usize,
    pub batch: usize,
    pub min: usize,
    pub max: usize,
    pub seed: u64,
}

/// Objects of one batch: (address, size, tag).
struct Batch(Vec<(usize, usize, u64)>);

// SAFETY: the batch owns its malloc chunks; sending it hands them over.
unsafe impl Send for Batch {}

/// A batch of `p.batch` tagged objects, counted in `t`.
fn produce(rng: &mut SplitMix64, p: &Params, t: &mut Tally) -> Batch {
    let mut b = Vec::with_capacity(p.batch);
    for _ in 0..p.batch {
        let size = rng.range(p.min, p.max);
        let tag = rng.next_u64();
        b.push((new_obj(size, tag, t), size, tag));
    }
    Batch(b)
}

/// Checks, counts and frees a batch made on another thread.
fn consume(b: Batch, t: &mut Tally) {
    for (addr, size, tag) in b.0 {
        free_obj(addr, size, tag, t);
    }
}

fn expected(p: &Params) -> Tally {
    let mut t = Tally::default();
    for k in 0..p.threads {
        let mut rng = SplitMix64(p.seed.wrapping_add(k as u64));
        for _ in 0..p.batches * p.batch {
            let _size = rng.range(p.min, p.max);
            t.tag_sum = t.tag_sum.wrapping_add(rng.next_u64());
            t.allocs += 1;
            t.frees += 1;
        }
    }
    t
}

pub fn run(p: &Params, fault: bool) -> Result<String, String> {
    if p.min < 16 || p.max < p.min || p.threads == 0 || p.batch == 0 {
        return Err(format!(
            "xmalloc: need 16 <= min <= max, threads and batch >= 1 (min {}, max {})",
            p.min, p.max
        ));
    }
    crate::timing::start();
    let (tx, rx) = sync_channel::<Batch>(4 * p.threads);
    let rx = Mutex::new(rx);
    let mut total = Tally::default();
    let mut failed = false;
    std::thread::scope(|s| {
        let mut producers = Vec::new();
        for k in 0..p.threads {
            let tx = tx.clone();
            producers.push(s.spawn(move || {
                let mut rng = SplitMix64(p.seed.wrapping_add(k as u64));
                let mut t = Tally::default();
                for _ in 0..p.batches {
                    let b = produce(&mut rng, p, &mut t);
                    if tx.send(b).is_err() {
                        break;
                    }
                }
                t
            }));
        }
        drop(tx);
        let consumers: Vec<_> = (0..p.threads)
            .map(|_| {
                let rx = &rx;
                s.spawn(move || {
                    let mut t = Tally::default();
                    loop {
                        let next = rx.lock().map(|r| r.recv());
                        match next {
                            Ok(Ok(b)) => consume(b, &mut t),
                            _ => break,
                        }
                    }
                    t
                })
            })
            .collect();
        // Producers only allocate and consumers only free, so the two
        // tallies add up without counting anything twice.
        for h in producers.into_iter().chain(consumers) {
            match h.join() {
                Ok(t) => total.add(t),
                Err(_) => failed = true,
            }
        }
    });
    if failed {
        return Err("xmalloc: a producer or consumer thread panicked".into());
    }
    crate::timing::stop();
    if fault {
        total.tag_sum ^= 1;
    }
    if total.bad != 0 {
        return Err(format!("xmalloc: {} object(s) freed with a wrong tag (memory handed out twice or written over)", total.bad));
    }
    let want = expected(p);
    if total != want {
        return Err(format!(
            "xmalloc: got {total:?}, the replay expects {want:?}"
        ));
    }
    Ok(format!(
        "xmalloc threads={}+{} batches={} batch={} sizes={}..={} allocations={} frees={} tag_sum={:#x}",
        p.threads, p.threads, p.batches, p.batch, p.min, p.max, total.allocs, total.frees, total.tag_sum
    ))
}
