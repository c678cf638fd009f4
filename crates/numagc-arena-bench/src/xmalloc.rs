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
//!
//! **The bound** (`--bound`): the same program with no allocator call in
//! the timed loop. Each producer owns a ring of `5K + 2` batch buffers,
//! each a [`Slab`] of `batch` slots of `max` bytes and the list of its
//! objects' sizes and tags, allocated and written before the timing
//! starts. Batch `n` of producer `k` is made in buffer `n mod (5K + 2)` of
//! `k`'s ring: the same random draws, the same tag writes at the same
//! offsets of each object ([`tagged::place`]); the buffer goes through the
//! same queue to a consumer, which checks and counts every object as the
//! real run does before its `free` ([`tagged::retire`]) and then marks the
//! buffer free again (one release store per batch, read by the producer
//! with an acquire load when the ring comes round to it). No more than
//! `4K` batches wait in the queue and `K` are being consumed, so the
//! producer finds its next buffer free unless a consumer was descheduled
//! in the middle of a batch; then it yields until it is (where the real run
//! would go on allocating: if anything the bound is slower there). A
//! per-thread cache of freed chunks cannot make a bound here: every object
//! is freed by a consumer and allocated by a producer, so a consumer's cache
//! would only grow and a producer's stay empty. What is left out is the
//! allocator's work: `malloc` and `free` of the objects and of each batch's
//! list, the remote frees' synchronisation, and faulting in fresh memory;
//! what is added is one flag per batch (against 2 × `batch` allocator calls).
//! The slots are `max` bytes apart where an allocator packs objects by size,
//! so the bound touches more memory than a run on a compact allocator.
//!
//! **Where the bound is not below the allocators.** With small batches the
//! time goes to the queue's hand-offs, not to the objects: a consumer that
//! finds the queue empty parks and the producer's next send wakes it (a
//! futex call each way), and the less work a batch takes the more often
//! that happens. The bound, whose batches take the least work, hands off
//! the most (about one context switch per batch at 1 + 1 threads, against
//! 0.6 for mimalloc). Measured on the 2-core VM (busy, so indicative only),
//! 5 M objects per producer at 1 + 1 threads take the bound about 0.16 s in
//! batches of 100 (`numagc arena-bench`'s paper size until it moved to 4096) against 0.04 s in
//! batches of 1000: at 100 it is level with mimalloc and tcmalloc (and
//! above tcmalloc at 2 + 2 threads), at 1000 below every allocator
//! (tcmalloc 0.07 s), and at 4096, the original xmalloc-test's batch, below
//! every allocator too (tcmalloc within 10 %). Its overheads mean something
//! only where batches are large enough for the objects' work to dominate.

use crate::rng::SplitMix64;
use crate::tagged::{self, free_obj, new_obj, Slab, Tally};
use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, Ordering};
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

/// The bound's batch buffer: room for `p.batch` objects and their (size,
/// tag) list, reused by one producer, lent to one consumer at a time.
struct BoundBatch {
    slab: Slab,
    objs: UnsafeCell<Vec<(usize, u64)>>,
    /// Set by the consumer when it is done with the buffer (Release), read
    /// by the producer before it reuses it (Acquire).
    free: AtomicBool,
}

// SAFETY: the slab and `objs` are accessed by one thread at a time: the
// producer from when it sees `free` set (Acquire, after the consumer's
// Release store) until it sends the buffer; the consumer from when it
// receives it (the channel orders the producer's writes before) until it
// sets `free`. The buffers outlive the threads (scoped).
unsafe impl Sync for BoundBatch {}

impl BoundBatch {
    fn new(p: &Params) -> BoundBatch {
        BoundBatch {
            slab: Slab::new(p.batch, p.max),
            objs: UnsafeCell::new(Vec::with_capacity(p.batch)),
            free: AtomicBool::new(true),
        }
    }
}

/// Buffers in each producer's ring: more than the queue (4K) and the
/// consumers (K) can hold at once.
fn ring_len(p: &Params) -> usize {
    5 * p.threads + 2
}

/// The bound's `produce`: the same draws and tag writes, in `b`'s slots.
fn produce_bound<'a>(
    b: &'a BoundBatch,
    rng: &mut SplitMix64,
    p: &Params,
    t: &mut Tally,
) -> &'a BoundBatch {
    while !b.free.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    b.free.store(false, Ordering::Relaxed);
    // SAFETY: `free` was set: the consumer is done with b (its Release
    // store, our Acquire load), and no one else uses it until we send it:
    // only this producer makes batches in its ring, one at a time.
    let objs = unsafe { &mut *b.objs.get() };
    objs.clear();
    for o in 0..p.batch {
        let size = rng.range(p.min, p.max);
        let tag = rng.next_u64();
        // SAFETY: slot o of b's slab holds max >= size bytes, ours (above).
        unsafe { tagged::place(b.slab.slot(o), size, tag, t) };
        objs.push((size, tag));
    }
    b
}

/// The bound's `consume`: the same checks and counts, then `b` is free.
fn consume_bound(b: &BoundBatch, t: &mut Tally) {
    {
        // SAFETY: b came through the queue, after the producer's last
        // write to it; the producer does not touch it again until `free`
        // is set below, after our last read.
        let objs = unsafe { &*b.objs.get() };
        for (o, &(size, tag)) in objs.iter().enumerate() {
            // SAFETY: as above; slot o holds the object of `size` bytes.
            unsafe { tagged::retire(b.slab.slot(o), size, tag, t) };
        }
    }
    b.free.store(true, Ordering::Release);
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

/// K producers make `p.batches` batches each with `make(k, n, rng, t)` and
/// K consumers take them from one bounded queue with `take(batch, t)`.
fn exchange<M: Send>(
    p: &Params,
    make: impl Fn(usize, usize, &mut SplitMix64, &mut Tally) -> M + Sync,
    take: impl Fn(M, &mut Tally) + Sync,
) -> Result<Tally, String> {
    let (tx, rx) = sync_channel::<M>(4 * p.threads);
    let rx = Mutex::new(rx);
    let mut total = Tally::default();
    let mut failed = false;
    let (make, take) = (&make, &take);
    std::thread::scope(|s| {
        let mut producers = Vec::new();
        for k in 0..p.threads {
            let tx = tx.clone();
            producers.push(s.spawn(move || {
                let mut rng = SplitMix64(p.seed.wrapping_add(k as u64));
                let mut t = Tally::default();
                for n in 0..p.batches {
                    let b = make(k, n, &mut rng, &mut t);
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
                            Ok(Ok(b)) => take(b, &mut t),
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
    Ok(total)
}

/// Runs xmalloc-test (or its bound) and checks it; the line to print on success.
pub fn run(p: &Params, bound: bool, fault: bool) -> Result<String, String> {
    run_with_ring(p, bound, fault, ring_len(p))
}

/// `run`, with `ring` buffers per producer in the bound.
fn run_with_ring(p: &Params, bound: bool, fault: bool, ring: usize) -> Result<String, String> {
    if p.min < 16 || p.max < p.min || p.threads == 0 || p.batch == 0 {
        return Err(format!(
            "xmalloc: need 16 <= min <= max, threads and batch >= 1 (min {}, max {})",
            p.min, p.max
        ));
    }
    // The bound's buffers are made (and faulted in) before the timing starts.
    let bufs: Vec<BoundBatch> = if bound {
        (0..p.threads * ring).map(|_| BoundBatch::new(p)).collect()
    } else {
        Vec::new()
    };
    crate::timing::start();
    let total = if bound {
        exchange(
            p,
            |k, n, rng, t| produce_bound(&bufs[k * ring + n % ring], rng, p, t),
            consume_bound,
        )
    } else {
        exchange(p, |_, _, rng, t| produce(rng, p, t), consume)
    };
    crate::timing::stop();
    drop(bufs);
    let mut total = total?;
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
    // In the bound the objects are placed in and retired from slots: no
    // allocation but the buffers', before the timing.
    let (made, gone) = if bound {
        ("objects", "retired")
    } else {
        ("allocations", "frees")
    };
    Ok(format!(
        "xmalloc {} threads={}+{} batches={} batch={} sizes={}..={} {made}={} {gone}={} tag_sum={:#x}",
        if bound { "bound" } else { "alloc" },
        p.threads, p.threads, p.batches, p.batch, p.min, p.max, total.allocs, total.frees, total.tag_sum
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(threads: usize, batch: usize) -> Params {
        Params {
            threads,
            batches: 300,
            batch,
            min: 16,
            max: 64,
            seed: 9,
        }
    }

    /// The bound's ring under contention: more threads than cores and
    /// rings of 1 and 2 buffers, so that producers come round to buffers
    /// that consumers still hold and must wait for them, and the rings of
    /// the runs themselves; every tag survives and the tally is the replay's.
    #[test]
    fn the_bound_hands_buffers_back_safely() {
        for threads in [1, 3] {
            for batch in [1, 9] {
                let p = params(threads, batch);
                for ring in [1, 2, ring_len(&p)] {
                    let line = run_with_ring(&p, true, false, ring).unwrap();
                    assert!(line.starts_with("xmalloc bound "), "{line}");
                }
            }
        }
    }

    /// The bound's answer is checked: a corrupted tally is reported.
    #[test]
    fn the_bound_checks_its_answer() {
        let e = run(&params(2, 5), true, true).unwrap_err();
        assert!(e.contains("the replay expects"), "{e}");
    }
}
