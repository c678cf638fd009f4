//! The rich interface, reference-counted arrays, NUMA placement, and the
//! misuse reports (a double free or a foreign pointer names the problem).

use core::alloc::Layout;

use numagc_arena::rich::{self, ArenaHandle, DataRelease, Fixed, Origin};
use numagc_arena::{ArenaChoice, Misuse, RcArray};

#[test]
fn foreign_pointers_are_reported() {
    let on_stack = 0u64;
    let p = &on_stack as *const u64 as *mut u8;
    assert!(!numagc_arena::owns(p));
    // SAFETY: a misuse the heap manager must catch without touching `p`.
    let e = unsafe { numagc_arena::try_free(p) }.unwrap_err();
    assert_eq!(e, Misuse::Foreign { addr: p as usize });
    assert!(e.to_string().contains("free of foreign pointer"), "{e}");
    // A chunk of the system allocator (this test binary's allocator).
    let sys = Box::into_raw(Box::new([0u8; 64])).cast::<u8>();
    // SAFETY: as above.
    let e = unsafe { numagc_arena::try_free(sys) }.unwrap_err();
    assert!(matches!(e, Misuse::Foreign { .. }));
    // SAFETY: back to the allocator it came from.
    drop(unsafe { Box::from_raw(sys.cast::<[u8; 64]>()) });
}

#[test]
#[should_panic(expected = "free of foreign pointer")]
fn free_of_a_foreign_pointer_panics_with_its_name() {
    let x = 5u32;
    // SAFETY: a misuse that must panic.
    unsafe { numagc_arena::free(&x as *const u32 as *mut u8) };
}

#[test]
#[should_panic(expected = "double free of")]
fn double_free_panics_with_its_name() {
    let p = numagc_arena::alloc(40, 8);
    // SAFETY: first free is fine; the second is the misuse.
    unsafe {
        numagc_arena::free(p);
        numagc_arena::free(p);
    }
}

#[test]
fn double_frees_of_every_size_and_interior_pointers_are_reported() {
    for size in [8usize, 3000, 100_000, 3 << 20] {
        let p = numagc_arena::alloc(size, 8);
        // SAFETY: a pointer inside the chunk: a misuse to be reported.
        let e = unsafe { numagc_arena::try_free(p.add(16)) }.unwrap_err();
        assert!(matches!(e, Misuse::NotAChunk { .. }), "size {size}: {e:?}");
        // SAFETY: the first free is fine.
        unsafe { numagc_arena::try_free(p) }.unwrap();
        // SAFETY: the misuse under test.
        let e = unsafe { numagc_arena::try_free(p) }.unwrap_err();
        if size > 1 << 20 {
            // A large chunk's mapping goes back to the global heap's cache
            // (or the system) on free: the pointer is foreign now.
            assert_eq!(e, Misuse::Foreign { addr: p as usize }, "size {size}");
            assert!(e.to_string().contains("already freed"), "{e}");
        } else {
            assert_eq!(e, Misuse::DoubleFree { addr: p as usize }, "size {size}");
        }
    }
}

/// A small chunk freed twice from another thread is reported at the second
/// free (the first marked it with the remote key).
#[test]
fn a_second_remote_free_of_a_small_chunk_is_reported_at_once() {
    let p = numagc_arena::alloc(64, 8) as usize;
    let e = std::thread::spawn(move || {
        // SAFETY: the first free is fine; the second is the misuse under test.
        unsafe {
            numagc_arena::try_free(p as *mut u8).unwrap();
            numagc_arena::try_free(p as *mut u8)
        }
    })
    .join()
    .unwrap()
    .unwrap_err();
    assert_eq!(e, Misuse::DoubleFree { addr: p });
    numagc_arena::collect_remote_frees();
    // The chunk went back once: it can be had again, and freed once.
    let q = numagc_arena::alloc(64, 8);
    // SAFETY: a live chunk of this thread.
    unsafe { numagc_arena::try_free(q) }.unwrap();
}

/// Chunks freed by another thread all come back, whether its outbox sent
/// them as a chain (chunks of 16 bytes cannot carry the others' addresses)
/// or in a carrier (one 512-byte chunk in each batch of 32 can).
#[test]
fn remote_frees_come_back_in_chains_and_in_carriers() {
    let stats = || {
        numagc_arena::thread_stats()
            .expect("this thread has a heap")
            .0
    };
    let small: Vec<usize> = (0..64)
        .map(|_| numagc_arena::alloc(16, 8) as usize)
        .collect();
    let mixed: Vec<usize> = (0..64)
        .map(|i| numagc_arena::alloc(if i % 32 == 5 { 512 } else { 48 }, 8) as usize)
        .collect();
    numagc_arena::collect_remote_frees();
    let before = stats();
    std::thread::spawn(move || {
        // A heap of its own, so that its frees of others' chunks gather in
        // its outbox (a thread without one pushes each chunk at once).
        let own = numagc_arena::alloc(8, 8);
        // SAFETY: every chunk is live and freed once, here.
        unsafe {
            numagc_arena::try_free(own).unwrap();
            for &p in small.iter().chain(&mixed) {
                numagc_arena::try_free(p as *mut u8).unwrap();
            }
        }
        // The outbox is pushed when it is full and at the thread's exit.
    })
    .join()
    .unwrap();
    numagc_arena::collect_remote_frees();
    let after = stats();
    assert_eq!(after.remote_frees_taken - before.remote_frees_taken, 128);
    assert_eq!(
        after.remote_carriers_taken - before.remote_carriers_taken,
        2
    );
    // Taken back whole: each size can be had again and freed again.
    for size in [16, 48, 512] {
        let p = numagc_arena::alloc(size, 8);
        // SAFETY: a live chunk of this thread.
        unsafe { numagc_arena::try_free(p) }.unwrap();
    }
}

/// A variable-size chunk freed twice from another thread before its owner
/// took it back is found when the owner does; the owner is inside the
/// allocator then, so it aborts with the message (checked in a child
/// process).
#[test]
fn remote_double_free_aborts_with_a_message() {
    if std::env::var_os("NUMAGC_ARENA_CHILD").is_some() {
        let p = numagc_arena::alloc(20_000, 8) as usize;
        std::thread::spawn(move || {
            // SAFETY: the misuse under test: two frees from another thread.
            unsafe {
                numagc_arena::try_free(p as *mut u8).unwrap();
                numagc_arena::try_free(p as *mut u8).unwrap();
            }
        })
        .join()
        .unwrap();
        numagc_arena::collect_remote_frees();
        unreachable!("the double free was not found");
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "remote_double_free_aborts_with_a_message",
            "--nocapture",
        ])
        .env("NUMAGC_ARENA_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("double free of"), "stderr: {stderr}");
    assert!(
        stderr.contains("freed by another thread"),
        "stderr: {stderr}"
    );
}

#[test]
fn impossible_requests_are_refused_with_the_reason() {
    assert!(numagc_arena::alloc(16, 3).is_null());
    let e = numagc_arena::try_alloc(16, 3).unwrap_err();
    assert!(e.to_string().contains("not a power of two"), "{e}");
    let e = numagc_arena::try_alloc(usize::MAX / 2, 8).unwrap_err();
    assert!(e.to_string().contains("larger than isize::MAX"), "{e}");
    // No address space holds an alignment above 2^62 (MAX_ALIGN).
    let e = numagc_arena::try_alloc(8, 1 << (usize::BITS - 1)).unwrap_err();
    assert!(e.to_string().contains("alignment is larger"), "{e}");
    // A size that fits isize::MAX alone but not with its alignment.
    let e = numagc_arena::try_alloc(isize::MAX as usize - (1 << 20), 1 << 30).unwrap_err();
    assert!(e.to_string().contains("larger than isize::MAX"), "{e}");
    assert!(ArenaHandle::new(10, 5).is_err());
}

#[test]
fn arena_choice_is_made_at_compile_time() {
    // These are constants: the classification ran in the compiler.
    const SMALL: ArenaChoice = Fixed::<200>::HANDLE.choice();
    const MEDIUM: ArenaChoice = Fixed::<20_000>::HANDLE.choice();
    const LARGE: ArenaChoice = Fixed::<{ 4 << 20 }>::HANDLE.choice();
    assert!(matches!(SMALL, ArenaChoice::Small(_)));
    assert!(matches!(MEDIUM, ArenaChoice::Medium(_)));
    assert_eq!(LARGE, ArenaChoice::Large);
    let p = Fixed::<200>::alloc();
    let q = Fixed::<200, 64>::alloc();
    assert_eq!(q as usize % 64, 0);
    assert!(numagc_arena::usable_size(p).unwrap() >= 200);
    // SAFETY: live chunks.
    unsafe {
        numagc_arena::free(p);
        numagc_arena::free(q);
    }
}

#[test]
fn data_vectors_know_where_they_come_from() {
    let desc = Layout::new::<[u64; 3]>();
    for n in [4usize, 1000, 200_000] {
        let data = Layout::array::<f64>(n).unwrap();
        let co = rich::alloc_with_descriptor(desc, data).unwrap();
        assert_eq!(co.data.as_ptr() as usize % 8, 0);
        assert!(co.data.as_ptr() as usize >= co.descriptor.as_ptr() as usize + desc.size());
        assert_eq!(rich::origin(co.descriptor.as_ptr()), Origin::Chunk);
        assert_eq!(rich::origin(co.data.as_ptr()), Origin::WithDescriptor);
        // SAFETY: the data lives in the descriptor's chunk: nothing is freed.
        assert_eq!(
            unsafe { rich::free_data(co.data.as_ptr()) },
            Ok(DataRelease::WithDescriptor)
        );
        // SAFETY: the chunk's start frees both.
        unsafe { numagc_arena::free(co.descriptor.as_ptr()) };
    }
    // A data vector of its own, and one from another allocator.
    let own = numagc_arena::alloc(800, 8);
    // SAFETY: a live chunk of ours.
    assert_eq!(unsafe { rich::free_data(own) }, Ok(DataRelease::Freed));
    // SAFETY: malloc of the C library (not replaced in this binary).
    let foreign = unsafe { libc::malloc(800) }.cast::<u8>();
    // SAFETY: not ours: reported, not touched.
    assert_eq!(
        unsafe { rich::free_data(foreign) },
        Ok(DataRelease::Foreign)
    );
    // SAFETY: back to its allocator.
    unsafe { libc::free(foreign.cast()) };
}

#[test]
fn rc_arrays_update_in_place_when_unique_and_copy_when_shared() {
    let mut a = RcArray::from_fn(&[10, 10], |i| i as f64).unwrap();
    assert_eq!(a.shape(), &[10, 10]);
    assert_eq!(a.refcount(), 1);
    let before = a.data_ptr();
    assert!(!a.set(5, -1.0).unwrap(), "unique: no copy");
    assert_eq!(a.data_ptr(), before, "updated in place");
    let b = a.clone();
    assert_eq!(a.refcount(), 2);
    assert!(a.set(6, -2.0).unwrap(), "shared: copied");
    assert_ne!(a.data_ptr(), before);
    assert_eq!(b.refcount(), 1);
    assert_eq!(b.as_slice()[6], 6.0, "the other reference is unchanged");
    assert_eq!(a.as_slice()[6], -2.0);
    assert_eq!(a.as_slice()[5], -1.0);
    // modarray reuses a unique array.
    let p = b.data_ptr();
    let c = b.modarray(|i, x| x + i as f64).unwrap();
    assert_eq!(c.data_ptr(), p);
    assert_eq!(c.as_slice()[7], 14.0);
    let e = RcArray::new(&[1, 1, 1, 1, 1], 0u8).unwrap_err();
    assert!(e.to_string().contains("at most 4 dimensions"), "{e}");
}

#[test]
fn rc_arrays_shared_between_threads_are_freed_once() {
    let a = RcArray::from_fn(&[1000], |i| i as u64).unwrap();
    let handles: Vec<_> = (0..2)
        .map(|t| {
            let mine = a.clone();
            std::thread::spawn(move || {
                let mut mine = mine;
                let sum: u64 = mine.as_slice().iter().sum();
                // Shared: this write copies, and the copy dies on this thread.
                mine.set(0, t).unwrap();
                (sum, mine.as_slice()[0])
            })
        })
        .collect();
    for (t, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().unwrap(), (499_500, t as u64));
    }
    assert_eq!(a.refcount(), 1);
    assert_eq!(a.as_slice()[0], 0);
    // The last reference dropped on another thread: a remote free.
    let remote = a.clone();
    drop(a);
    std::thread::spawn(move || drop(remote)).join().unwrap();
    numagc_arena::collect_remote_frees();
}

#[test]
fn local_heaps_are_placed_on_the_threads_node() {
    let before = numagc_arena::placement::counts();
    // A large chunk of a size no other test of this binary frees maps and
    // binds new memory (a mapping from the cache of freed ones is not
    // bound again).
    let p = numagc_arena::alloc(5 << 20, 64);
    let after = numagc_arena::placement::counts();
    // SAFETY: live chunk.
    unsafe { numagc_arena::free(p) };
    let described = numagc_arena::placement::describe();
    if described.ends_with("policy off") {
        return;
    }
    // Other tests of this binary may bind memory meanwhile: at least one.
    assert!(
        after.applied + after.skipped > before.applied + before.skipped,
        "a new mapping was bound ({described})"
    );
    assert_eq!(after.failed, before.failed, "the kernel refused a binding");
}

#[test]
fn zeroed_chunks_are_zero_even_when_reused() {
    for size in [24usize, 3000, 50_000, 2 << 20] {
        let p = numagc_arena::alloc(size, 8);
        // SAFETY: a live chunk of `size` bytes.
        unsafe {
            p.write_bytes(0xee, size);
            numagc_arena::free(p);
        }
        let z = numagc_arena::alloc_zeroed(size, 8);
        // SAFETY: as above.
        let all_zero = unsafe { core::slice::from_raw_parts(z, size) }
            .iter()
            .all(|&b| b == 0);
        assert!(all_zero, "size {size}");
        // SAFETY: live chunk.
        unsafe { numagc_arena::free(z) };
    }
}

#[test]
fn large_chunks_beyond_the_cache_bound_go_back_to_the_system_when_freed() {
    // Bigger than the global heap's cache of large mappings ever holds:
    // unmapped on free (never touched beyond 1 MiB, so it costs no memory).
    let size = numagc_arena::global_heap::LARGE_CACHE_MAX_BYTES + (16 << 20);
    let before = numagc_arena::global_heap::stats();
    let p = numagc_arena::alloc(size, 16);
    assert!(numagc_arena::owns(p));
    // SAFETY: a live chunk of `size` bytes.
    unsafe {
        p.write_bytes(1, 1 << 20);
        numagc_arena::free(p);
    }
    let after = numagc_arena::global_heap::stats();
    // Other tests of this binary may map and unmap meanwhile, so only the
    // count is checked (the address may already be in use again).
    assert!(after.large_unmapped > before.large_unmapped);
}

#[test]
fn threads_allocate_from_different_local_heaps() {
    // Paper §3: "Small amounts of memory are guaranteed to be allocated from
    // different parts of the address space if requested by different
    // threads" (no false sharing between threads' chunks).
    let region = |p: usize| p & !(numagc_arena::REGION_SIZE - 1);
    let (tx, rx) = std::sync::mpsc::channel();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = (0..2)
        .map(|_| {
            let (tx, barrier) = (tx.clone(), barrier.clone());
            std::thread::spawn(move || {
                let ps: Vec<usize> = (0..100)
                    .map(|_| numagc_arena::alloc(64, 16) as usize)
                    .collect();
                tx.send(ps.clone()).unwrap();
                // Both threads are alive (own their heaps) while comparing.
                barrier.wait();
                for p in ps {
                    // SAFETY: live chunks of this thread.
                    unsafe { numagc_arena::free(p as *mut u8) };
                }
            })
        })
        .collect();
    let a: std::collections::HashSet<usize> = rx.recv().unwrap().into_iter().map(region).collect();
    let b: std::collections::HashSet<usize> = rx.recv().unwrap().into_iter().map(region).collect();
    assert!(
        a.is_disjoint(&b),
        "two threads' small chunks share a local heap"
    );
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn emptied_subheaps_are_reused_by_other_classes_and_given_back() {
    std::thread::spawn(|| {
        // 3 local heaps' worth of 64-byte chunks (63 subheaps of 1024 each).
        let ps: Vec<usize> = (0..3 * 63 * 1024)
            .map(|_| numagc_arena::alloc(64, 16) as usize)
            .collect();
        let (s0, subheaps_full, live) = numagc_arena::thread_stats().unwrap();
        assert!(live >= ps.len());
        for &p in &ps {
            // SAFETY: live chunks of this thread.
            unsafe { numagc_arena::free(p as *mut u8) };
        }
        let (s1, subheaps_empty, _) = numagc_arena::thread_stats().unwrap();
        assert!(
            s1.subheaps_released - s0.subheaps_released >= 3 * 63 - 8,
            "emptied subheaps gave their slots back"
        );
        assert!(subheaps_empty + 3 * 63 - 8 <= subheaps_full);
        assert!(
            s1.subheap_heaps_released > s0.subheap_heaps_released,
            "an empty subheap local heap went back to the global heap"
        );
        // Another class takes the freed slots: the thread's subheap count
        // does not grow back past where it was.
        let qs: Vec<usize> = (0..60 * 512)
            .map(|_| numagc_arena::alloc(128, 16) as usize)
            .collect();
        let (_, subheaps_again, _) = numagc_arena::thread_stats().unwrap();
        assert!(
            subheaps_again <= subheaps_full,
            "{subheaps_again} > {subheaps_full}"
        );
        for q in qs {
            // SAFETY: live chunks of this thread.
            unsafe { numagc_arena::free(q as *mut u8) };
        }
    })
    .join()
    .unwrap();
}

#[test]
fn a_remote_free_of_a_chunk_already_free_is_reported_at_once() {
    for size in [64usize, 20_000] {
        let p = numagc_arena::alloc(size, 8) as usize;
        // SAFETY: the owner's free, fine.
        unsafe { numagc_arena::try_free(p as *mut u8) }.unwrap();
        let e = std::thread::spawn(move || {
            // SAFETY: the misuse under test, from another thread.
            unsafe { numagc_arena::try_free(p as *mut u8) }
        })
        .join()
        .unwrap()
        .unwrap_err();
        assert_eq!(e, Misuse::DoubleFree { addr: p }, "size {size}");
    }
}

/// A live chunk whose second word happens to hold the free-list key (a
/// program may store any value) is freed normally: the key only makes the
/// free look for the chunk on its subheap's free list.
#[test]
fn a_live_chunk_holding_the_key_value_is_not_taken_for_a_double_free() {
    let a = numagc_arena::alloc(48, 8);
    let b = numagc_arena::alloc(48, 8);
    // SAFETY: `a` is freed once; its second word (the key) is read while the
    // chunk stays mapped in this thread's subheap; `b` is live and 48 bytes.
    unsafe {
        numagc_arena::try_free(a).unwrap();
        let key = a.cast::<usize>().add(1).read();
        assert_ne!(key, 0, "a free chunk carries the key");
        b.cast::<usize>().add(1).write(key);
        numagc_arena::try_free(b).unwrap();
        assert_eq!(
            numagc_arena::try_free(b),
            Err(Misuse::DoubleFree { addr: b as usize })
        );
    }
}

/// The rich interface's own free, and the thread's arenas found once: a
/// chunk of every kind goes back through them and is reused, a double free
/// through them is reported, and a chunk made on another thread is handed
/// back to its owner.
#[test]
fn rich_free_and_thread_arenas_round_trip() {
    use numagc_arena::rich::ThreadArenas;
    ThreadArenas::with(round_trip).expect("a thread heap");
}

fn round_trip(arenas: &numagc_arena::rich::ThreadArenas) {
    for size in [24usize, 200, 4096, 20_000, 3 << 20] {
        let h = ArenaHandle::new(size, 8).unwrap();
        let p = arenas.alloc(&h);
        assert!(!p.is_null() && numagc_arena::owns(p), "size {size}");
        // SAFETY: p holds `size` bytes; freed once through the same arena.
        unsafe {
            p.write_bytes(0xab, size);
            arenas.free(&h, p).unwrap();
        }
        if size <= 4096 {
            // LIFO reuse of the subheap's free list.
            let q = h.alloc();
            assert_eq!(q, p, "size {size}");
            // SAFETY: live, freed once; then the misuse under test.
            unsafe {
                h.free(q).unwrap();
                assert_eq!(
                    arenas.free(&h, q),
                    Err(Misuse::DoubleFree { addr: q as usize })
                );
            }
        }
    }
    // Fixed: compile-time arena, its own free.
    let p = Fixed::<48>::alloc();
    // SAFETY: from Fixed::<48>::alloc, freed once.
    unsafe { Fixed::<48>::free(p) }.unwrap();
    // A chunk of another thread, freed through this thread's arenas.
    let h = ArenaHandle::new(64, 8).unwrap();
    let other = std::thread::spawn(move || h.alloc() as usize)
        .join()
        .unwrap();
    // SAFETY: a live chunk of the exited thread's heap, freed once.
    unsafe { arenas.free(&h, other as *mut u8) }.unwrap();
}

/// Freed small chunks wait on their arena's list, counted as free by
/// `thread_stats`; `trim` gives them back to their subheaps, which then
/// release their slots.
#[test]
fn trim_gives_the_arena_lists_back() {
    std::thread::spawn(|| {
        let ps: Vec<usize> = (0..5000)
            .map(|_| numagc_arena::alloc(32, 16) as usize)
            .collect();
        let (_, _, live) = numagc_arena::thread_stats().unwrap();
        assert!(live >= 5000);
        // Newest first: the last ones freed, which stay on the list, are
        // from the first subheap, which is not the current one.
        for &p in ps.iter().rev() {
            // SAFETY: live chunks of this thread, freed once.
            unsafe { numagc_arena::free(p as *mut u8) };
        }
        let (s0, _, live0) = numagc_arena::thread_stats().unwrap();
        assert_eq!(live0, live - 5000, "chunks on the lists are free");
        numagc_arena::trim();
        let (s1, _, live1) = numagc_arena::thread_stats().unwrap();
        assert_eq!(live1, live0);
        assert!(
            s1.subheaps_released > s0.subheaps_released,
            "the subheap whose chunks waited on the list was released"
        );
        // Still usable afterwards.
        let p = numagc_arena::alloc(32, 16);
        // SAFETY: live, freed once.
        unsafe { numagc_arena::free(p) };
    })
    .join()
    .unwrap();
}

/// `free_own`, the rich free on SAC's promise (the allocating thread
/// frees): it frees and the chunk is reused; in debug builds a broken
/// promise is reported by name (a chunk of another thread, a double free).
#[test]
fn free_own_frees_and_debug_builds_report_a_broken_promise() {
    use numagc_arena::rich::ThreadArenas;
    let h = ArenaHandle::new(40, 8).unwrap();
    ThreadArenas::with(|arenas| {
        let a = arenas.arena(&h).expect("a small class");
        let p = a.alloc();
        // SAFETY: allocated here, freed once.
        unsafe { a.free_own(p) };
        assert_eq!(a.alloc(), p, "the freed chunk is the next one");
        // SAFETY: freed once.
        unsafe { a.free_own(p) };
        assert!(arenas
            .arena(&ArenaHandle::new(20_000, 8).unwrap())
            .is_none());
    })
    .unwrap();
    if !cfg!(debug_assertions) {
        return;
    }
    let other = std::thread::spawn(move || h.alloc() as usize)
        .join()
        .unwrap();
    let e = std::panic::catch_unwind(|| {
        ThreadArenas::with(|arenas| {
            // SAFETY: the broken promise under test (debug build: checked).
            unsafe { arenas.arena(&h).unwrap().free_own(other as *mut u8) }
        })
    })
    .unwrap_err();
    let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("not allocated by the calling thread"), "{msg}");
    let e = std::panic::catch_unwind(|| {
        ThreadArenas::with(|arenas| {
            let a = arenas.arena(&h).unwrap();
            let p = a.alloc();
            // SAFETY: the second free is the broken promise under test.
            unsafe {
                a.free_own(p);
                a.free_own(p);
            }
        })
    })
    .unwrap_err();
    let msg = e.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(msg.contains("double free of"), "{msg}");
}

/// Checks one chunk of `size` bytes aligned to `align`: the address, both
/// ends writable, the usable size, `owns`, and a reported interior free.
fn check_aligned_chunk(p: *mut u8, size: usize, align: usize) {
    assert!(!p.is_null(), "{size} bytes aligned to {align:#x} refused");
    assert_eq!(p as usize % align, 0, "{size} bytes aligned to {align:#x}");
    assert!(numagc_arena::owns(p), "align {align:#x}");
    assert!(
        numagc_arena::usable_size(p).unwrap() >= size,
        "align {align:#x}"
    );
    // SAFETY: a live chunk of `size` bytes (only its first and last pages
    // are touched).
    unsafe {
        p.write_bytes(0x5a, 4096);
        p.add(size - 4096).write_bytes(0xa5, 4096);
        assert_eq!(*p, 0x5a);
        assert_eq!(*p.add(size - 1), 0xa5);
    }
    // SAFETY: a pointer inside the chunk: a misuse to be reported.
    let e = unsafe { numagc_arena::try_free(p.add(16)) }.unwrap_err();
    assert!(
        matches!(e, Misuse::NotAChunk { .. }),
        "align {align:#x}: {e:?}"
    );
    assert_eq!(rich::origin(p), Origin::Chunk, "align {align:#x}");
}

/// Issue 16, defect 6: alignments of 2 MiB and above (huge-page-aligned
/// buffers) were refused. Each is served now, from its own mapping, and
/// free, realloc and usable_size work on it.
#[test]
fn alignments_of_2_mib_to_1_gib_are_served() {
    const MIB: usize = 1 << 20;
    for align in [2 * MIB, 4 * MIB, 8 * MIB, 64 * MIB, 1 << 30] {
        for size in [8192usize, 100_000, 3 * MIB, 9 * MIB] {
            let p = numagc_arena::alloc(size, align);
            check_aligned_chunk(p, size, align);
            // SAFETY: a live chunk; realloc keeps the data and the alignment.
            let q = unsafe { numagc_arena::realloc(p, size + 5 * MIB, align) }.unwrap();
            // SAFETY: `q` holds the `size` bytes of `p` (when not null).
            unsafe {
                assert!(!q.is_null());
                assert_eq!(*q.add(4095), 0x5a, "align {align:#x}");
                assert_eq!(*q.add(size - 1), 0xa5, "align {align:#x}");
            }
            check_aligned_chunk(q, size + 5 * MIB, align);
            // SAFETY: the first free is fine, the second is the misuse.
            unsafe { numagc_arena::try_free(q) }.unwrap();
            let e = unsafe { numagc_arena::try_free(q) }.unwrap_err();
            assert!(
                matches!(e, Misuse::Foreign { .. } | Misuse::DoubleFree { .. }),
                "align {align:#x}: {e:?}"
            );
        }
    }
}

/// The data of a chunk aligned to 4 MiB or more starts at a region
/// boundary: the region's own bits say nothing about it, so a pointer to
/// the start of a region in a large chunk that is not such a chunk's data
/// must stay refused.
#[test]
fn region_starts_inside_large_chunks_are_not_chunks() {
    let region = numagc_arena::REGION_SIZE;
    let p = numagc_arena::alloc(3 * region, 16);
    let inner = ((p as usize + region) & !(region - 1)) as *mut u8;
    assert!(numagc_arena::usable_size(inner).is_none());
    // SAFETY: a pointer inside a live chunk: a misuse to be reported.
    assert!(unsafe { numagc_arena::try_free(inner) }.is_err());
    // A 4 MiB-aligned chunk's second data region is not a chunk either.
    let q = numagc_arena::alloc(3 * region, region);
    let inner = (q as usize + region) as *mut u8;
    assert!(numagc_arena::usable_size(inner).is_none());
    // SAFETY: as above.
    assert!(unsafe { numagc_arena::try_free(inner) }.is_err());
    // SAFETY: live chunks, freed once.
    unsafe {
        numagc_arena::free(p);
        numagc_arena::free(q);
    }
    assert!(!numagc_arena::owns(q), "a freed aligned chunk is not ours");
}

#[test]
fn zeroed_chunks_with_large_alignments_are_zero() {
    for align in [2usize << 20, 4 << 20, 16 << 20] {
        let size = 6 << 20;
        let p = numagc_arena::alloc(size, align);
        assert!(!p.is_null(), "align {align:#x} refused");
        // SAFETY: a live chunk of `size` bytes.
        unsafe {
            p.write_bytes(0xee, size);
            numagc_arena::free(p);
        }
        let z = numagc_arena::alloc_zeroed(size, align);
        assert_eq!(z as usize % align, 0);
        // SAFETY: a live chunk of `size` bytes.
        let bytes = unsafe { core::slice::from_raw_parts(z, size) };
        assert!(bytes.iter().all(|&b| b == 0), "align {align:#x}");
        // SAFETY: live chunk.
        unsafe { numagc_arena::free(z) };
    }
}

/// Sizes near `usize::MAX` with big alignments overflow nothing: refused.
#[test]
fn huge_sizes_with_huge_alignments_are_refused() {
    for align in [2usize << 20, 1 << 30, 1 << 40, 1 << 62] {
        for size in [
            usize::MAX,
            usize::MAX - align,
            isize::MAX as usize,
            isize::MAX as usize - align + 1,
        ] {
            assert!(
                numagc_arena::alloc(size, align).is_null(),
                "{size:#x}/{align:#x}"
            );
            assert!(numagc_arena::try_alloc(size, align).is_err());
        }
    }
    // An alignment no address space can give is refused, a size with it too.
    assert!(numagc_arena::alloc(16, 1 << 62).is_null());
    assert!(numagc_arena::alloc(16, 1 << 63).is_null());
}

#[test]
fn the_global_allocator_serves_large_alignments() {
    let layout = Layout::from_size_align(3 << 20, 8 << 20).unwrap();
    let a = numagc_arena::ArenaAlloc;
    // SAFETY: a non-zero-size layout; the chunk is freed with it.
    unsafe {
        use core::alloc::GlobalAlloc;
        let p = a.alloc_zeroed(layout);
        assert!(!p.is_null());
        assert_eq!(p as usize % (8 << 20), 0);
        assert_eq!(*p.add((3 << 20) - 1), 0);
        let q = a.realloc(p, layout, 9 << 20);
        assert_eq!(q as usize % (8 << 20), 0);
        a.dealloc(q, Layout::from_size_align(9 << 20, 8 << 20).unwrap());
    }
}
