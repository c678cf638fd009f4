//! The microbenchmark of the paper's Fig. 1 (§2, measured in §4, Fig. 5
//! and 6): a vector `A` of `10_000_000 / X` doubles, updated 50 times; each
//! element's new value is its old one plus the sum of a temporary vector of
//! `X` doubles filled with the element's index, allocated and freed for the
//! element (`mkarray([X], idx)`). The update is a with-loop run in parallel
//! over blocks of `A` (one per thread, threads kept across the iterations
//! with a barrier at each with-loop's end, as SAC's worker threads are).
//! `A` is unique, so SAC updates it in place; so does this.
//!
//! **The bound** (`--bound`): the temporary is allocated once per thread and
//! reused, so the loop does no allocation at all. Its time is the lower
//! bound; a run's allocator overhead is its time minus the bound's.
//!
//! **The rich interface** (`--rich`): the temporary comes from
//! numagc-arena linked in, through an [`ArenaHandle`] made once per thread
//! for `X` doubles (SAC selects the arena at compile time when the shape is
//! known, paper §3; `X` is a run-time parameter here, so the choice is made
//! once, before the loop), and is freed through the same handle; both go
//! through the thread's [`ThreadArenas`], found once per worker thread, and
//! for X up to 512 (a small class) through that class's `Arena`, held in
//! registers across the loop. Its free is `free_own`: the SAC runtime frees
//! a temporary on the thread that allocated it (§3), so the free makes its
//! checks in debug builds only.
//!
//! **Waits** (`--waits`): each thread times its with-loops and its waits
//! at the barriers, and the line reports them per thread (`busy_ms`,
//! `waited_ms`, `longest_wait_ms`): what a 2-thread run loses to
//! synchronisation and to a core that stalls, against its time outside the
//! threads (the making of `A` and the threads' start), which is `seconds`
//! less the threads' total. Every mode times them; the flag only prints.
//!
//! **The check**: element `idx` gains `X * idx` per iteration, so
//! `sum(A) = iterations * X * n (n - 1) / 2` exactly; every partial sum is
//! an integer below 2^53, so the doubles are exact and must match to the bit.

use std::hint::black_box;
use std::sync::Barrier;
use std::time::{Duration, Instant};

use numagc_arena::rich::{ArenaHandle, ThreadArenas};

/// Where the temporaries come from.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Mode {
    /// `malloc`/`free` of the process (whichever allocator is preloaded).
    Malloc,
    /// One temporary per thread, reused: no allocation (the bound).
    Bound,
    /// numagc-arena's rich interface, linked in.
    Rich,
}

/// What one thread spent working and waiting at the barriers.
#[derive(Clone, Copy, Default, Debug)]
struct Waits {
    busy: Duration,
    waited: Duration,
    longest: Duration,
}

/// Runs Fig. 1 and checks its answer; the line to print on success (with
/// `waits`, each thread's [`Waits`] too).
pub fn run(
    x: usize,
    total: usize,
    iters: usize,
    threads: usize,
    mode: Mode,
    fault: bool,
    waits: bool,
) -> Result<String, String> {
    if x == 0 || total < x {
        return Err(format!(
            "fig1: need 1 <= X <= total, got X = {x}, total = {total}"
        ));
    }
    let n = total / x;
    crate::timing::start();
    let mut a = crate::heap::Buf::filled(n, 0.0f64);
    let threads = threads.clamp(1, n);
    let per = n.div_ceil(threads);
    // One block per thread; with few elements there may be fewer blocks than threads.
    let barrier = Barrier::new(n.div_ceil(per));
    let spent: Vec<Waits> = std::thread::scope(|s| {
        let workers: Vec<_> = a
            .chunks_mut(per)
            .enumerate()
            .map(|(t, block)| {
                let barrier = &barrier;
                s.spawn(move || worker(block, t * per, x, iters, mode, barrier))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    crate::timing::stop();
    let mut got: f64 = a.iter().sum();
    if fault {
        got += 1.0;
    }
    let want = iters as u128 * x as u128 * (n as u128 * (n as u128 - 1) / 2);
    if want >= 1u128 << 53 {
        return Err(format!(
            "fig1: the answer {want} is too large to be exact in a double; use a smaller size"
        ));
    }
    if got != want as f64 {
        return Err(format!(
            "fig1: sum(A) = {got}, expected {want} (X = {x}, n = {n}, {iters} iterations)"
        ));
    }
    let ms = |f: fn(&Waits) -> Duration| {
        let v: Vec<String> = spent
            .iter()
            .map(|w| format!("{:.3}", f(w).as_secs_f64() * 1e3))
            .collect();
        v.join(",")
    };
    let waits = if waits {
        format!(
            " busy_ms={} waited_ms={} longest_wait_ms={}",
            ms(|w| w.busy),
            ms(|w| w.waited),
            ms(|w| w.longest)
        )
    } else {
        String::new()
    };
    Ok(format!(
        "fig1 X={x} n={n} iterations={iters} threads={threads} {} allocations={} sum={want}{waits}",
        match mode {
            Mode::Malloc => "alloc",
            Mode::Bound => "bound",
            Mode::Rich => "rich",
        },
        if mode == Mode::Bound {
            threads
        } else {
            n * iters
        }
    ))
}

fn worker(
    block: &mut [f64],
    first: usize,
    x: usize,
    iters: usize,
    mode: Mode,
    barrier: &Barrier,
) -> Waits {
    match mode {
        Mode::Malloc => updates(
            block,
            first,
            x,
            iters,
            barrier,
            || alloc(x),
            |p| {
                // SAFETY: from malloc, freed once.
                unsafe { libc::free(p.cast()) }
            },
        ),
        Mode::Bound => {
            // The bound's temporary: once per thread.
            let reused = alloc(x);
            let w = updates(block, first, x, iters, barrier, || reused, |_| {});
            // SAFETY: from malloc, freed once.
            unsafe { libc::free(reused.cast()) };
            w
        }
        Mode::Rich => match ArenaHandle::new(x * 8, 8) {
            Ok(h) => rich(block, first, x, iters, barrier, &h),
            Err(e) => {
                eprintln!("arena-workload: {e}");
                std::process::exit(3);
            }
        },
    }
}

#[cold]
fn refused(x: usize) -> ! {
    eprintln!("arena-workload: numagc-arena refused {} bytes", x * 8);
    std::process::exit(3)
}

/// The with-loop on numagc-arena's rich interface.
#[inline(always)]
fn rich(
    block: &mut [f64],
    first: usize,
    x: usize,
    iters: usize,
    barrier: &Barrier,
    handle: &ArenaHandle,
) -> Waits {
    let ran = ThreadArenas::with(|arenas| match arenas.arena(handle) {
        // A small class: its arena, held in registers across the loop.
        Some(arena) => {
            let take = || {
                let p = arena.alloc().cast::<f64>();
                if p.is_null() {
                    refused(x)
                }
                p
            };
            updates(block, first, x, iters, barrier, take, |p| {
                // SAFETY: from this arena on this thread, freed once (SAC's
                // guarantee, §3: the allocating thread frees).
                unsafe { arena.free_own(p.cast()) }
            })
        }
        // Larger: through the handle.
        None => {
            let take = || {
                let p = arenas.alloc(handle).cast::<f64>();
                if p.is_null() {
                    refused(x)
                }
                p
            };
            updates(block, first, x, iters, barrier, take, |p| {
                // SAFETY: from this handle's alloc, freed once.
                if let Err(e) = unsafe { arenas.free(handle, p.cast()) } {
                    panic!("{e}");
                }
            })
        }
    });
    ran.unwrap_or_else(|| {
        eprintln!("arena-workload: numagc-arena refused a thread heap");
        std::process::exit(3)
    })
}

/// The with-loop of every iteration: for each element, a temporary from
/// `take`, filled, summed, then given to `give_back`; returns the time
/// spent in the loops and at the barriers.
#[inline(always)]
fn updates(
    block: &mut [f64],
    first: usize,
    x: usize,
    iters: usize,
    barrier: &Barrier,
    take: impl Fn() -> *mut f64,
    give_back: impl Fn(*mut f64),
) -> Waits {
    let start = Instant::now();
    let mut w = Waits::default();
    for _ in 0..iters {
        for (j, e) in block.iter_mut().enumerate() {
            let idx = (first + j) as f64;
            // black_box: the allocation escapes, so the compiler cannot
            // elide the malloc/free pair or fold the sum (the paper's
            // "carefully restricted compiler optimisations", §2).
            let p = black_box(take());
            let mut s = 0.0;
            // SAFETY: p holds x doubles, used by this thread only until
            // given back.
            unsafe {
                for i in 0..x {
                    p.add(i).write(idx);
                }
                // Again between fill and sum: the stores must reach memory
                // and the loads read it (otherwise the compiler forwards the
                // stored values to the sum and, with the free just after,
                // drops the stores: the loop would not do the same work
                // as the bound's, whose buffer outlives the loop).
                let p = black_box(p);
                for i in 0..x {
                    s += p.add(i).read();
                }
            }
            give_back(p);
            *e += s;
        }
        let arrived = Instant::now();
        barrier.wait();
        let waited = arrived.elapsed();
        w.waited += waited;
        w.longest = w.longest.max(waited);
    }
    w.busy = start.elapsed() - w.waited;
    w
}

fn alloc(x: usize) -> *mut f64 {
    // SAFETY: malloc of x doubles; checked for NULL.
    let p = unsafe { libc::malloc(x * 8) }.cast::<f64>();
    if p.is_null() {
        eprintln!("arena-workload: malloc({}) returned NULL", x * 8);
        std::process::exit(3);
    }
    p
}
