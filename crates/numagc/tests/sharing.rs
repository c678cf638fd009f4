//! Two vprocs share data while both allocate and collect: lists built on
//! one vproc are published into a shared mutable array (the write barrier
//! promotes them), the other vproc reads and checks them against checksums
//! computed independently, while minor, major and global collections are
//! forced at pseudo-random points. The verifier runs after every collection.

mod common;

use common::*;
use numagc::{Handle, Scope};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A small deterministic generator (the test must not depend on a seed
/// that changes between runs).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// A list of `n` vectors `[i, seed, tail]`; its checksum, computed from the
/// same formula without the heap.
fn build<'s>(s: &mut Scope<'s>, seed: u64, n: u64) -> numagc::Result<Handle<'s>> {
    let list = s.slot(Handle::NIL);
    for i in 0..n {
        let cell = s.scope_value(|s| {
            s.alloc_vector(&[Handle::int(i as i64), Handle::int(seed as i64), list.get()])
        })?;
        s.assign(list, cell);
    }
    Ok(list.get())
}

fn expected_sum(seed: u64, n: u64) -> u64 {
    (0..n)
        .map(|i| i.wrapping_mul(31).wrapping_add(seed))
        .fold(0u64, u64::wrapping_add)
}

fn walk_sum(s: &Scope<'_>, list: Handle<'_>) -> (u64, u64, u64) {
    let mut v = s.view(list);
    let (mut sum, mut len, mut seed) = (0u64, 0u64, 0u64);
    while v.is_object() {
        let i = v.field(0).as_int().unwrap() as u64;
        seed = v.field(1).as_int().unwrap() as u64;
        sum = sum.wrapping_add(i.wrapping_mul(31).wrapping_add(seed));
        len += 1;
        v = v.field(2);
    }
    (sum, len, seed)
}

#[test]
fn vprocs_share_promoted_data_through_a_mutable_array_while_collecting() {
    const SLOTS: usize = 16;
    const ROUNDS: u64 = 150;
    let rt = runtime(2);
    // The shared array lives in a global root; vproc 0 creates it.
    let shared = Arc::new(
        rt.run_on(0, |s| {
            let a = s.alloc_array(SLOTS, Handle::NIL).unwrap();
            s.global_root(a).unwrap()
        })
        .unwrap(),
    );
    let checked = Arc::new(AtomicU64::new(0));
    let (sh, ck) = (shared.clone(), checked.clone());
    let results = rt
        .run_each(move |s| -> numagc::Result<u64> {
            let me = s.vproc() as u64;
            let mut rng = Lcg(0x5eed + me);
            let mut seen = 0;
            for round in 0..ROUNDS {
                // Publish a fresh list (local until the store promotes it).
                let seed = me * 1_000_000 + round;
                let n = 20 + rng.next() % 200;
                s.scope(|s| -> numagc::Result<()> {
                    let list = build(s, seed, n)?;
                    let arr = s.get_global(&sh).unwrap();
                    let slot = (rng.next() as usize) % SLOTS;
                    s.set(arr, slot, list)?;
                    // Read back every published list, whoever wrote it.
                    for k in 0..SLOTS {
                        let l = s.field(arr, k)?;
                        if s.view(l).is_object() {
                            assert!(!s.is_local(l), "a value in a global array is global");
                            let (sum, len, seed) = walk_sum(s, l);
                            assert_eq!(
                                sum,
                                expected_sum(seed, len),
                                "list in slot {k} (seed {seed}) on vproc {me}"
                            );
                            seen += 1;
                        }
                    }
                    Ok(())
                })?;
                // Garbage and a collection at a pseudo-random point.
                s.scope(|s| build(s, 7, rng.next() % 500).map(|_| ()))?;
                match rng.next() % 10 {
                    0 => s.collect_global().unwrap(),
                    1 | 2 => s.collect_major().unwrap(),
                    3..=5 => s.collect_minor(),
                    _ => s.poll(),
                }
            }
            ck.fetch_add(seen, Ordering::Relaxed);
            Ok(seen)
        })
        .unwrap();
    for r in results {
        assert!(r.unwrap() > ROUNDS, "each vproc read lists");
    }
    assert!(checked.load(Ordering::Relaxed) > 2 * ROUNDS);
    assert!(
        rt.global_collections() >= 5,
        "global collections: {}",
        rt.global_collections()
    );
    let stats = rt.stats();
    for v in &stats.vprocs {
        assert!(
            (v.promotion.count > 0 || !split_plan()) && v.global.count > 0,
            "vproc {}: {:?}",
            v.vproc,
            (v.promotion.count, v.global.count)
        );
    }
    // The lists are still intact after the workers finished.
    let sh = shared.clone();
    let lists = rt
        .run_on(1, move |s| {
            s.collect_global().unwrap();
            let arr = s.get_global(&sh).unwrap();
            (0..SLOTS)
                .filter(|&k| {
                    let l = s.field(arr, k).unwrap();
                    if !s.view(l).is_object() {
                        return false;
                    }
                    let (sum, len, seed) = walk_sum(s, l);
                    assert_eq!(sum, expected_sum(seed, len));
                    true
                })
                .count()
        })
        .unwrap();
    assert!(lists > 0);
}
