//! How a language implementation embeds numagc: register object layouts,
//! run work on every vproc, allocate through handle scopes, read through
//! views, share values through a mutable global array, hold objects of a
//! layout known at compile time in typed handles, read statistics.
//!
//! Run with `cargo run --release -p numagc --example embed`. The program
//! checks its own answer.

use numagc::{Config, DescId, Descriptor, Fresh, Handle, Layout, Record, Runtime, Scope, Typed};

/// A tree node whose layout the program knows when it compiles: two
/// children (NIL in a leaf). Reads through a typed handle need no check.
struct Node;

impl Layout for Node {
    const NAME: &'static str = "node";
    // The second descriptor this program registers (after `cons`).
    const DESC: DescId = DescId::nth_registered(1);
    const SIZE: usize = 2;
    const VALUES: u32 = 0b11;
}

/// A complete tree of `depth`: each call's handles are popped when it
/// returns, and its node, allocated last, is rooted in the caller's scope.
fn tree<'a>(s: &'a mut Scope<'_>, depth: u32) -> numagc::Result<Fresh<'a, Node>> {
    if depth == 0 {
        return s.alloc_fresh::<Node>(&[Handle::NIL, Handle::NIL], &[]);
    }
    let l = s.scope_fresh(|s| tree(s, depth - 1))?;
    let r = s.scope_fresh(|s| tree(s, depth - 1))?;
    s.alloc_fresh::<Node>(&[l.untyped(), r.untyped()], &[])
}

/// Nodes of a tree: a child read from a node is taken as a node with one
/// look at its header.
fn count(t: Record<'_, Node>) -> u64 {
    let l = t.get(0);
    if l.is_int() {
        return 1;
    }
    1 + count(child(l)) + count(child(t.get(1)))
}

/// A child read from a node, taken as a node.
fn child(v: numagc::View<'_>) -> Record<'_, Node> {
    v.record::<Node>().expect("a node")
}

fn main() -> numagc::Result<()> {
    let rt = Runtime::new(Config::from_env()?)?;
    // A cons cell: field 0 is a raw 64-bit payload, field 1 the tail (a value).
    let cons = rt.register(Descriptor::mixed("cons", 2, &[1])?)?;
    assert_eq!(rt.register(Node::descriptor()?)?, Node::DESC);
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

    // Typed handles: a tree of 2^17 - 1 nodes built on vproc 0.
    let nodes = rt.run_on(0, |s| -> numagc::Result<u64> {
        let t: Typed<'_, Node> = s.scope_fresh(|s| tree(s, 16))?;
        s.collect_major()?; // the typed handle follows its tree
        Ok(count(s.record(t)))
    })??;
    assert_eq!(nodes, (1 << 17) - 1);
    println!("a typed tree of {nodes} nodes");

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
