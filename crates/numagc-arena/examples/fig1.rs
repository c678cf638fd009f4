//! The microbenchmark of the paper's Fig. 1 (§2): a vector `A` of
//! `10_000_000 / X` doubles, updated 50 times; each element's update
//! allocates a temporary vector of `X` doubles filled with its index, sums
//! it, and frees it. The allocator's overhead is the time above the same
//! loop with no allocation (a buffer reused), which is the lower bound.
//!
//! `cargo run --release -p numagc-arena --example fig1 -- [X] [ITERATIONS] [THREADS,...]`
//! (defaults 25, 50, 1; speedups are over the first thread count). Allocators: numagc-arena through the rich
//! interface (arena chosen at compile time for X = 25), numagc-arena through
//! `alloc`/`free`, and the C library's `malloc`/`free`. Not a benchmark
//! harness (that is issue 7, item 6): one run each, no repetitions.

use std::hint::black_box;
use std::time::Instant;

use numagc_arena::rich::{ArenaHandle, Fixed};

#[derive(Clone, Copy)]
enum Variant {
    NoAlloc,
    Rich,
    Plain,
    Libc,
}

#[inline(always)]
fn temp_sum(v: Variant, x: usize, idx: usize, handle: &ArenaHandle, buf: *mut f64) -> f64 {
    let p: *mut f64 = match v {
        Variant::NoAlloc => buf,
        Variant::Rich if x == 25 => Fixed::<{ 25 * 8 }, 8>::alloc().cast(),
        Variant::Rich => handle.alloc().cast(),
        Variant::Plain => numagc_arena::alloc(x * 8, 8).cast(),
        // SAFETY: malloc of x doubles.
        Variant::Libc => unsafe { libc::malloc(x * 8) }.cast(),
    };
    let p = black_box(p);
    let mut s = 0.0;
    // SAFETY: p holds x doubles.
    unsafe {
        for i in 0..x {
            p.add(i).write(idx as f64);
        }
        for i in 0..x {
            s += p.add(i).read();
        }
        match v {
            Variant::NoAlloc => {}
            Variant::Rich | Variant::Plain => numagc_arena::free(p.cast()),
            Variant::Libc => libc::free(p.cast()),
        }
    }
    s
}

fn run(v: Variant, x: usize, iters: usize, threads: usize) -> (f64, f64) {
    let n = 10_000_000 / x;
    let mut a = vec![0.0f64; n];
    let handle = ArenaHandle::new(x * 8, 8).expect("a valid size");
    let start = Instant::now();
    for _ in 0..iters {
        let chunk = n.div_ceil(threads);
        std::thread::scope(|s| {
            for (t, part) in a.chunks_mut(chunk).enumerate() {
                let handle = &handle;
                s.spawn(move || {
                    let mut buf = vec![0.0f64; x];
                    for (j, e) in part.iter_mut().enumerate() {
                        let idx = t * chunk + j;
                        *e += temp_sum(v, x, idx, handle, buf.as_mut_ptr());
                    }
                });
            }
        });
    }
    let secs = start.elapsed().as_secs_f64();
    (secs, a.iter().sum())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let num = |i: usize, default: usize| {
        args.get(i)
            .map_or(default, |a| a.parse().expect("a number"))
    };
    let x = num(0, 25);
    let iters = num(1, 50);
    let threads: Vec<usize> = args.get(2).map_or(vec![1], |a| {
        a.split(',')
            .map(|t| t.parse().expect("a thread count"))
            .collect()
    });
    let variants = [
        ("no allocation (bound)", Variant::NoAlloc),
        ("numagc-arena (rich)", Variant::Rich),
        ("numagc-arena (alloc/free)", Variant::Plain),
        ("C library malloc/free", Variant::Libc),
    ];
    println!("Fig. 1 microbenchmark: X = {x}, {iters} iterations, threads {threads:?}");
    // A warm-up run first: page faults and thread start-up land there.
    run(Variant::NoAlloc, x, iters.min(5), threads[0]);
    let mut first: Vec<f64> = Vec::new();
    for (k, &t) in threads.iter().enumerate() {
        let mut base = 0.0;
        let mut reference = None;
        for (i, (name, v)) in variants.iter().enumerate() {
            let (secs, sum) = run(*v, x, iters, t);
            match reference {
                None => reference = Some(sum),
                Some(r) => assert_eq!(sum, r, "{name} computed a different answer"),
            }
            if i == 0 {
                base = secs;
            }
            if k == 0 {
                first.push(secs);
            }
            println!(
                "{t} thread(s)  {name:<26} {secs:>8.3} s   overhead {:>7.3} s   {:.2} x bound   speedup {:.2}",
                secs - base,
                secs / base,
                first[i] / secs
            );
        }
    }
}
