//! No leaks (issue 5, part 6): creating and dropping a runtime 1,000 times
//! keeps the process's resident memory flat. Each runtime has 2 vprocs and
//! small heaps, allocates a little on both vprocs (a list kept across a
//! global collection, so chunks, pools, global roots and the copy reserve
//! are all used) and is dropped. Resident memory is read from
//! `/proc/self/statm` after a warm-up (the allocator's arenas and the
//! thread stacks' caches settle in the first iterations) and at the end;
//! the figures are printed. One test in its own binary, so that no other
//! test's memory is counted.

mod common;

use common::*;
use numagc::{Handle, Runtime};

const RUNS: usize = 1_000;
const WARM_UP: usize = 50;
/// Growth allowed between the warm-up and the end: allocator noise, far
/// below what one leaked runtime per iteration would give (its chunk table,
/// threads and touched heap pages: several hundred KiB each, so 950
/// iterations would leak hundreds of MiB).
const SLACK: usize = 8 * MIB;

fn rss_bytes() -> usize {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm is readable");
    let pages: usize = statm
        .split_whitespace()
        .nth(1)
        .and_then(|f| f.parse().ok())
        .expect("statm has a resident field");
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    pages * page
}

#[test]
fn creating_and_dropping_a_runtime_a_thousand_times_keeps_memory_flat() {
    let _w = watchdog(600, "1,000 runtimes");
    let config = test_config(2)
        .verify(false)
        .local_heap_size(64 * KIB)
        .max_heap(16 * MIB)
        .build()
        .unwrap();
    let mut after_warm_up = 0;
    let mut samples = Vec::new();
    let t0 = std::time::Instant::now();
    for i in 0..RUNS {
        let rt = Runtime::new(config.clone()).expect("runtime starts");
        let cons = register_cons(&rt);
        let lens = rt
            .run_each(move |s| {
                let l = build_list(s, cons, s.vproc() as i64, 300).unwrap();
                let g = s.promote(l).unwrap();
                let root = s.global_root(g).unwrap();
                garbage(s, cons, 500);
                s.collect_global().unwrap();
                let v = s.get_global(&root).unwrap();
                let _ = s.alloc_vector(&[v, Handle::int(1)]).unwrap();
                read_list(s.view(v), cons).unwrap().len()
            })
            .unwrap();
        assert_eq!(lens, vec![300, 300]);
        assert!(rt.global_collections() >= 1);
        drop(rt);
        if i + 1 == WARM_UP {
            after_warm_up = rss_bytes();
        }
        if (i + 1) % 100 == 0 {
            samples.push((i + 1, rss_bytes()));
        }
    }
    let end = rss_bytes();
    let per_run = end.saturating_sub(after_warm_up) / (RUNS - WARM_UP);
    println!(
        "no leak: RSS {} KiB after {WARM_UP} runtimes, {} KiB after {RUNS} ({} bytes per runtime after the warm-up; {:.1} s)",
        after_warm_up / KIB,
        end / KIB,
        per_run,
        t0.elapsed().as_secs_f64()
    );
    for (n, rss) in &samples {
        println!("  after {n:>4} runtimes: RSS {} KiB", rss / KIB);
    }
    assert!(
        end <= after_warm_up + SLACK,
        "resident memory grew from {} KiB to {} KiB over {} runtimes",
        after_warm_up / KIB,
        end / KIB,
        RUNS - WARM_UP
    );
}
