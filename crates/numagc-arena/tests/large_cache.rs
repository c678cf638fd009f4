//! The global heap's cache of freed very large chunks (`global_heap.rs`):
//! a freed large chunk's mapping is taken back by the next request of its
//! size, zeroed when asked, refused by `free` and `owns` while cached, and
//! given back to the system beyond the cache's bounds and after its decay.
//!
//! The cache is one per process, so the tests of this binary take turns
//! (`serial`) and start from an empty cache.

use std::sync::{Mutex, MutexGuard};

use numagc_arena::global_heap::{
    self, LARGE_CACHE_DECAY_MS, LARGE_CACHE_MAX_BYTES, LARGE_CACHE_MIN_BYTES, MAX_CACHED_LARGE,
};
use numagc_arena::Misuse;

const MIB: usize = 1 << 20;

static SERIAL: Mutex<()> = Mutex::new(());

/// Takes this binary's turn and empties the cache.
fn serial() -> MutexGuard<'static, ()> {
    let g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    global_heap::release_cached_large();
    assert_eq!(global_heap::stats().large_cached, 0);
    g
}

/// Whether `addr` lies in some mapping of this process.
fn mapped(addr: usize) -> bool {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
    maps.lines().any(|l| {
        let range = l.split_whitespace().next().unwrap();
        let (a, b) = range.split_once('-').unwrap();
        let (a, b) = (
            usize::from_str_radix(a, 16).unwrap(),
            usize::from_str_radix(b, 16).unwrap(),
        );
        a <= addr && addr < b
    })
}

fn alloc(size: usize) -> *mut u8 {
    let p = numagc_arena::alloc(size, 16);
    assert!(!p.is_null(), "alloc({size})");
    p
}

fn free(p: *mut u8) {
    // SAFETY: every caller passes a live chunk it no longer uses.
    unsafe { numagc_arena::free(p) };
}

#[test]
fn a_freed_large_chunk_is_reused_for_the_same_size() {
    let _g = serial();
    let before = global_heap::stats();
    let p = alloc(8 * MIB);
    // SAFETY: a live chunk of 8 MiB.
    unsafe { p.write_bytes(7, 8 * MIB) };
    free(p);
    let cached = global_heap::stats();
    assert_eq!(cached.large_cached, 1);
    assert_eq!(cached.large_unmapped, before.large_unmapped, "not unmapped");
    let q = alloc(8 * MIB);
    assert_eq!(q, p, "the cached mapping is taken back");
    let after = global_heap::stats();
    assert_eq!(after.large_reused, before.large_reused + 1);
    assert_eq!(
        after.large_mapped,
        before.large_mapped + 1,
        "one mapping only"
    );
    assert_eq!(after.large_cached, 0);
    // Its pages stayed resident: what the last holder wrote is still there.
    // SAFETY: a live chunk of 8 MiB.
    assert_eq!(unsafe { *q.add(4 * MIB) }, 7);
    free(q);
}

#[test]
fn a_slightly_smaller_request_takes_a_cached_mapping_a_much_smaller_one_does_not() {
    let _g = serial();
    let p = alloc(8 * MIB);
    free(p);
    // 1/16 less: within the 1/8 slack.
    let q = alloc(8 * MIB - MIB / 2);
    assert_eq!(q, p);
    let usable = numagc_arena::usable_size(q).unwrap();
    assert!(usable >= 8 * MIB, "the whole mapping is usable: {usable}");
    free(q);
    // Half the size: a mapping of its own, the 8 MiB one stays cached.
    let r = alloc(4 * MIB);
    assert_ne!(r, p);
    assert_eq!(global_heap::stats().large_cached, 1);
    assert!(numagc_arena::usable_size(r).unwrap() < 4 * MIB + MIB / 2);
    // A larger request does not take a smaller mapping.
    let s = alloc(8 * MIB + MIB / 4);
    assert_ne!(s, p);
    free(r);
    free(s);
}

#[test]
fn zeroed_large_chunks_are_zero_when_the_mapping_is_reused() {
    let _g = serial();
    for align in [16usize, 4096, 1 << 20] {
        global_heap::release_cached_large();
        let size = 6 * MIB;
        // A chunk whose mapping is as long as the zeroed request's, or a
        // page longer: its data starts `align` earlier than that one's.
        let p = numagc_arena::alloc(size + align, 16);
        // SAFETY: a live chunk of `size + align` bytes.
        unsafe { p.write_bytes(0xab, size + align) };
        free(p);
        let z = numagc_arena::alloc_zeroed(size, align);
        assert_eq!(z as usize % align, 0);
        assert_eq!(
            z as usize & !(numagc_arena::REGION_SIZE - 1),
            p as usize & !(numagc_arena::REGION_SIZE - 1),
            "align {align}: the cached mapping was reused"
        );
        // SAFETY: a live chunk of `size` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(z, size) };
        assert!(bytes.iter().all(|&b| b == 0), "align {align}: not zero");
        free(z);
    }
    // A fresh mapping is zero without being written (nothing cached fits).
    let z = numagc_arena::alloc_zeroed(30 * MIB, 16);
    // SAFETY: a live chunk of 30 MiB.
    let bytes = unsafe { core::slice::from_raw_parts(z, 30 * MIB) };
    assert!(bytes.iter().all(|&b| b == 0));
    free(z);
}

#[test]
fn pointers_into_a_cached_mapping_are_foreign() {
    let _g = serial();
    let p = alloc(3 * MIB);
    free(p);
    assert_eq!(global_heap::stats().large_cached, 1);
    assert!(mapped(p as usize), "cached, so still mapped");
    assert!(!numagc_arena::owns(p));
    assert_eq!(numagc_arena::usable_size(p), None);
    for addr in [p, p.wrapping_add(4096)] {
        // SAFETY: the misuse under test; nothing is written.
        let e = unsafe { numagc_arena::try_free(addr) }.unwrap_err();
        assert_eq!(
            e,
            Misuse::Foreign {
                addr: addr as usize
            }
        );
    }
    // SAFETY: as above.
    let e = unsafe { numagc_arena::realloc(p, 100, 16) }.unwrap_err();
    assert_eq!(e, Misuse::Foreign { addr: p as usize });
    // The misuse left the cache as it was: the mapping is still reusable.
    assert_eq!(global_heap::stats().large_cached, 1);
    let q = alloc(3 * MIB);
    assert_eq!(q, p);
    assert!(numagc_arena::owns(q));
    free(q);
}

#[test]
fn the_cache_holds_what_was_live_lately_and_at_least_its_floor() {
    let _g = serial();
    let n = 12;
    let ps: Vec<*mut u8> = (0..n).map(|_| alloc(8 * MIB)).collect();
    for &p in &ps {
        // SAFETY: a live chunk of 8 MiB: one page made resident.
        unsafe { *p = 1 };
    }
    for &p in &ps[..n - 1] {
        free(p);
    }
    // 96 MiB were live a moment ago, 8 MiB are now: the 88 MiB freed since
    // stay cached, beyond the 64 MiB floor.
    let s = global_heap::stats();
    assert_eq!(s.large_cached, n - 1);
    assert!(s.large_cached_bytes > LARGE_CACHE_MIN_BYTES);
    assert!(ps[..n - 1].iter().all(|&p| mapped(p as usize)));
    // 40 MiB more live (a size nothing cached fits): the recent peak less
    // the live bytes is 48 MiB, and an eighth of the peak 12 MiB more, so
    // the floor of 64 MiB is the bound, which
    // holds 7 of these mappings (8 MiB and a page each): the 4 oldest go.
    let before = global_heap::stats();
    let big = alloc(40 * MIB);
    let after = global_heap::stats();
    assert_eq!(after.large_reused, before.large_reused);
    assert_eq!(after.large_cached, 7);
    assert!(after.large_cached_bytes <= LARGE_CACHE_MIN_BYTES);
    assert_eq!(after.large_unmapped - before.large_unmapped, 4);
    // (The 4 unmapped may lie where `big` was mapped, so only the kept ones
    // are looked up.)
    assert!(ps[4..n - 1].iter().all(|&p| mapped(p as usize)));
    free(big);
    free(ps[n - 1]);
}

#[test]
fn the_cache_never_holds_more_than_its_ceiling() {
    let _g = serial();
    // Three mappings of 400 MiB, never touched (they cost no memory): all
    // were live a moment ago, but the cache keeps at most 1 GiB of them.
    let ps: Vec<*mut u8> = (0..3).map(|_| alloc(400 * MIB)).collect();
    let before = global_heap::stats();
    for &p in &ps {
        free(p);
    }
    let s = global_heap::stats();
    assert_eq!(s.large_cached, 2);
    assert!(s.large_cached_bytes <= LARGE_CACHE_MAX_BYTES);
    assert_eq!(s.large_unmapped - before.large_unmapped, 1);
    assert!(!mapped(ps[0] as usize), "the oldest is unmapped");
    assert!(mapped(ps[1] as usize) && mapped(ps[2] as usize));
}

#[test]
fn the_cache_keeps_at_most_its_number_of_entries() {
    let _g = serial();
    let n = MAX_CACHED_LARGE + 4;
    let ps: Vec<*mut u8> = (0..n).map(|_| alloc(MIB + MIB / 2)).collect();
    for &p in &ps {
        free(p);
    }
    let after = global_heap::stats();
    assert_eq!(after.large_cached, MAX_CACHED_LARGE);
    for (i, &p) in ps.iter().enumerate() {
        assert_eq!(mapped(p as usize), i >= 4, "chunk {i} of {n}");
    }
}

#[test]
fn cached_mappings_decay_after_a_second() {
    let _g = serial();
    let p = alloc(2 * MIB);
    free(p);
    assert!(mapped(p as usize));
    let before = global_heap::stats();
    assert_eq!(before.large_cached, 1);
    std::thread::sleep(std::time::Duration::from_millis(LARGE_CACHE_DECAY_MS + 300));
    // Any large allocation or free looks at the ages. (The new mapping may
    // lie where the decayed one was, so only the counters tell.)
    let q = alloc(5 * MIB);
    let s = global_heap::stats();
    assert_eq!(
        s.large_unmapped,
        before.large_unmapped + 1,
        "decayed mapping unmapped"
    );
    assert_eq!(s.large_cached, 0);
    free(q);
    assert_eq!(
        global_heap::stats().large_cached,
        1,
        "only the new one is cached"
    );
    assert_eq!(alloc(5 * MIB), q);
    free(q);
}

#[test]
fn large_chunks_freed_by_other_threads_are_reused() {
    let _g = serial();
    // Made here, freed by another thread, taken back here.
    let p = alloc(8 * MIB) as usize;
    std::thread::spawn(move || free(p as *mut u8))
        .join()
        .unwrap();
    let q = alloc(8 * MIB);
    assert_eq!(q as usize, p);
    free(q);

    // Four threads pass large chunks of a few sizes round a ring: each
    // checks the pattern its neighbour wrote and frees the chunk, so the
    // cache is filled and emptied by all of them at once.
    let threads = 4;
    let rounds = 150;
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..threads)
        .map(|_| std::sync::mpsc::channel::<(usize, usize, u8)>())
        .unzip();
    let handles: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(|(t, rx)| {
            let tx = txs[(t + 1) % threads].clone();
            std::thread::spawn(move || {
                let mut freed = 0;
                for r in 0..rounds {
                    let size = [2 * MIB, 3 * MIB, 5 * MIB][(r + t) % 3] + r * 100;
                    let tag = (t * 31 + r) as u8;
                    let p = numagc_arena::alloc(size, 64);
                    assert!(!p.is_null());
                    assert!(numagc_arena::usable_size(p).unwrap() >= size);
                    // SAFETY: a live chunk of `size` bytes; the first and last
                    // pages and one in between are written.
                    unsafe {
                        for off in [0, size / 2, size - 4096] {
                            p.add(off).write_bytes(tag, 4096);
                        }
                    }
                    tx.send((p as usize, size, tag)).unwrap();
                    let (q, qsize, qtag) = rx.recv().unwrap();
                    for off in [0, qsize / 2, qsize - 4096] {
                        // SAFETY: the neighbour's chunk, handed over whole.
                        let page =
                            unsafe { core::slice::from_raw_parts((q + off) as *const u8, 4096) };
                        assert!(page.iter().all(|&b| b == qtag), "chunk {q:#x} changed");
                    }
                    free(q as *mut u8);
                    freed += 1;
                }
                freed
            })
        })
        .collect();
    drop(txs);
    for h in handles {
        assert_eq!(h.join().unwrap(), rounds);
    }
    let s = global_heap::stats();
    assert!(s.large_cached <= MAX_CACHED_LARGE);
    assert!(s.large_cached_bytes <= LARGE_CACHE_MAX_BYTES);
}
