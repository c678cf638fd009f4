//! How a language implementation embeds numagc: register object layouts,
//! run work on every vproc, allocate through handle scopes, read through
//! views, share values through a mutable global array, read statistics.
//!
//! Run with `cargo run --release -p numagc --example embed`. The program
//! checks its own answer.

use numagc::{Config, Descriptor, Handle, Runtime};

fn main() -> numagc::Result<()> {
    let rt = Runtime::new(Config::from_env()?)?;
    // A cons cell: field 0 is a raw 64-bit payload, field 1 the tail (a value).
    let cons = rt.register(Descriptor::mixed("cons", 2, &[1])?)?;
    const N: u64 = 100_000;

    // A mutable array in the global heap, one slot per vproc, kept alive by
    // a global root so that every vproc (and later jobs) can reach it.
    let results = rt.run_on(0, move |s| {
        let a = s.alloc_array(s.vprocs(), Handle::NIL)?;
        s.global_root(a)
    })??;
    let results = std::sync::Arc::new(results);

    // Every vproc builds a list of N cells in its local heap, sums it, and
    // publishes the list: the store promotes it to the global heap.
    let r = results.clone();
    let sums = rt.run_each(move |s| -> numagc::Result<u64> {
        let me = s.vproc() as u64;
        let list = s.slot(Handle::NIL); // a variable of the mutator
        for i in 0..N {
            s.alloc_mixed_to(list, cons, &[list.get()], &[i * (me + 1)])?; // may collect
        }
        let mut sum = 0;
        let mut v = s.view(list.get()); // no collection while a view lives
        while v.is_object() {
            sum += v.raw(0);
            v = v.field(1);
        }
        let array = s.get_global(&r)?;
        s.set(array, me as usize, list.get())?; // the write barrier promotes the list
        Ok(sum)
    })?;

    // Another job reads every vproc's list from the global array.
    let r = results.clone();
    let lengths = rt.run_on(0, move |s| -> numagc::Result<Vec<u64>> {
        s.collect_global()?;
        let array = s.get_global(&r)?;
        (0..s.vprocs())
            .map(|k| {
                let mut v = s.view(array).try_field(k)?;
                let mut n = 0;
                while v.is_object() {
                    n += 1;
                    v = v.field(1);
                }
                Ok(n)
            })
            .collect()
    })??;

    let expected = N * (N - 1) / 2;
    for (k, sum) in sums.into_iter().enumerate() {
        let sum = sum?;
        assert_eq!(sum, expected * (k as u64 + 1), "vproc {k}");
        assert_eq!(lengths[k], N, "list of vproc {k}");
        println!(
            "vproc {k}: sum {sum}, list of {} cells in the global heap",
            lengths[k]
        );
    }
    println!();
    print!("{}", rt.stats().table());
    Ok(())
}
