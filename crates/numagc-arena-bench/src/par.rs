//! Data parallelism of the with-loops (the paper's §2 and §4: SAC runs a
//! with-loop's index space in parallel on its worker threads). `for_chunks`
//! splits an output array into one contiguous block per thread, as SAC's
//! default static scheduler does, on scoped `std` threads, and calls the
//! body with each block and its first index.

/// Runs `body(first_index, block)` on `threads` threads over blocks of `out`
/// whose lengths are multiples of `unit` (a line or plane of a 3-D array),
/// so that no unit straddles two threads.
pub fn for_chunks<T: Send>(
    threads: usize,
    out: &mut [T],
    unit: usize,
    body: impl Fn(usize, &mut [T]) + Sync,
) {
    let units = out.len() / unit.max(1);
    if threads <= 1 || units <= 1 {
        body(0, out);
        return;
    }
    let per = units.div_ceil(threads) * unit;
    std::thread::scope(|s| {
        let body = &body;
        let mut rest = out;
        let mut start = 0;
        while !rest.is_empty() {
            let n = per.min(rest.len());
            let (block, tail) = rest.split_at_mut(n);
            rest = tail;
            let first = start;
            start += n;
            if rest.is_empty() {
                // The last block on this thread: one thread fewer to start.
                body(first, block);
            } else {
                s.spawn(move || body(first, block));
            }
        }
    });
}
