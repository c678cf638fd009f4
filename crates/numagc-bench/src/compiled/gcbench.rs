//! GCBench on the compiled-code interface: the program of
//! `benchmarks/gcbench.rs` (the stretch tree, the long-lived tree and
//! array, `NumIters(d)` trees per phase and depth spread over the vprocs by
//! a fork-join reduction whose leaves build about `grain` nodes' worth of
//! trees one after the other; the big trees' top levels forked), emitted
//! against the inline allocator, with a subtree in a frame slot while it is
//! live across a call that may collect, and the long-lived data in the
//! outermost frame.

use crate::benchmarks::gcbench::{
    num_iters, tree_size, PhaseCount, Report, Setup, FORK_DEPTH, MIN_TREE_DEPTH,
};
use crate::{rt_err, Outcome, Params};
use numagc::compiled::{header, Ctx, Frame, Hp, Mutator, Sp, RAW};
use numagc::object::{is_pointer, NIL};
use numagc::{DescId, Result, Runtime};

/// The header word of a node: a constant, the runtime's first descriptor
/// (`Setup::read` registers it first; `run` checks it).
const NODE: u64 = header(DescId::nth_registered(0), 4);

/// A complete tree of `depth` (`MakeTree`); `i` and `j` stay 0. Register
/// code (`numagc::compiled::Hp`, `Sp`, as in `binarytrees.rs`). A leaf is
/// allocated at once; an inner node goes on in [`make_inner`] (the
/// shrink-wrapping of `binarytrees.rs`).
#[inline(never)]
fn make_tree(m: Ctx<'_>, hp: Hp, sp: Sp, depth: u32) -> (u64, Hp) {
    if depth == 0 {
        let (t, hp) = m.alloc_at(hp, sp, NODE, 4);
        // SAFETY: `t` is fresh, a leaf.
        return (unsafe { init_node(m, t, NIL, NIL) }, hp);
    }
    make_inner(m, hp, sp, depth)
}

/// An inner node of `make_tree`: the left subtree in a frame of one slot
/// across the second call (nothing is live across the first), the right
/// one in a slot of its own only when the node's allocation may collect.
#[inline(never)]
fn make_inner(m: Ctx<'_>, hp: Hp, sp: Sp, depth: u32) -> (u64, Hp) {
    let (l, hp) = make_tree(m, hp, sp, depth - 1);
    let top = m.push_at(sp, [l]);
    let (r, hp) = make_tree(m, hp, top, depth - 1);
    match m.try_alloc_at(hp, NODE, 4) {
        // SAFETY: `t` is fresh from `try_alloc_at`; the left subtree is
        // reloaded from its slot, `r` was returned since the last call
        // that may collect.
        Some((t, hp)) => (unsafe { init_node(m, t, sp.get(0), r) }, hp),
        None => node_slow(m, hp, sp, top, r),
    }
}

/// The node of the left subtree in the frame at `sp` and `r`, through the
/// allocation's slow path: `r` is kept in a frame at `top` across it.
#[cold]
#[inline(never)]
fn node_slow(m: Ctx<'_>, hp: Hp, sp: Sp, top: Sp, r: u64) -> (u64, Hp) {
    let above = m.push_at(top, [r]);
    let (t, hp) = m.alloc_at_slow(hp, above, NODE, 4);
    // SAFETY: `t` is fresh; both subtrees are reloaded from their slots.
    (unsafe { init_node(m, t, sp.get(0), top.get(0)) }, hp)
}

/// [`make_tree`] entered from code on the record (`Mutator::with_regs`).
fn tree(m: &mut Mutator<'_>, depth: u32) -> Result<u64> {
    m.with_regs(|m, hp, sp| make_tree(m, hp, sp, depth))
}

/// Writes a node's fields: its children and two zero raw fields.
///
/// # Safety
/// `t` is fresh from an allocation of a 4-field node since the last call
/// that may collect; `l` and `r` are values read since then.
#[inline(always)]
unsafe fn init_node(m: Ctx<'_>, t: u64, l: u64, r: u64) -> u64 {
    // SAFETY: the caller's contract (4 fields: two values, two raw).
    unsafe {
        m.init(t, 0, l);
        m.init(t, 1, r);
        m.init(t, 2, 0);
        m.init(t, 3, 0);
    }
    t
}

/// A node whose children are in slot 0 of each of `kids` (leaves: NIL),
/// through the allocation that may collect.
#[inline(always)]
fn new_node(m: &mut Mutator<'_>, kids: Option<(Frame, Frame)>) -> Result<u64> {
    let t = m.alloc(NODE, 4)?;
    let (l, r) = kids.map_or((NIL, NIL), |(f, g)| (f.get(0), g.get(0)));
    // SAFETY: `t` is fresh from `alloc`; the children are read from their
    // slots after the allocation.
    Ok(unsafe { init_node(m.ctx(), t, l, r) })
}

/// `make_tree` with the subtrees of nodes deeper than `FORK_DEPTH` built
/// in parallel.
fn make_big_tree(m: &mut Mutator<'_>, depth: u32) -> Result<u64> {
    if depth <= FORK_DEPTH {
        return tree(m, depth);
    }
    let (l, r) = m.par2(
        &[],
        move |m, _| make_big_tree(m, depth - 1),
        move |m, _| make_big_tree(m, depth - 1),
    )?;
    let f = m.push_frame_with([l]);
    let g = m.push_frame_with([r]);
    let t = new_node(m, Some((f, g)));
    m.pop_frame(f); // and `g`, pushed after it
    t
}

fn count_nodes(m: &Mutator<'_>, t: u64) -> u64 {
    // SAFETY: `t` is a node of a live tree; nothing collects in the walk.
    let l = unsafe { m.field(t, 0) };
    if !is_pointer(l) {
        1
    } else {
        1 + count_nodes(m, l) + count_nodes(m, unsafe { m.field(t, 1) })
    }
}

/// A `tree-counts` object holding `c` (four raw fields).
fn counts(m: &mut Mutator<'_>, count: u64, c: PhaseCount) -> Result<u64> {
    let o = m.alloc(count, 4)?;
    // SAFETY: `o` is fresh, with four raw fields.
    unsafe {
        m.init(o, 0, c.trees);
        m.init(o, 1, c.nodes);
        m.init(o, 2, c.min_nodes);
        m.init(o, 3, c.max_nodes);
    }
    Ok(o)
}

/// The counts in a `tree-counts` object.
///
/// # Safety
/// `o` is a live `tree-counts` object.
unsafe fn read_counts(m: &Mutator<'_>, o: u64) -> PhaseCount {
    // SAFETY: the caller's contract.
    unsafe {
        PhaseCount {
            trees: m.field(o, 0),
            nodes: m.field(o, 1),
            min_nodes: m.field(o, 2),
            max_nodes: m.field(o, 3),
        }
    }
}

#[derive(Clone, Copy)]
struct Phase {
    count: u64,
    depth: u32,
    per_task: usize,
}

/// The trees `lo..hi` of a phase, halves forked: a `tree-counts` object.
fn reduce(m: &mut Mutator<'_>, p: Phase, lo: usize, hi: usize) -> Result<u64> {
    if hi - lo <= p.per_task {
        let mut c = PhaseCount {
            trees: 0,
            nodes: 0,
            min_nodes: u64::MAX,
            max_nodes: 0,
        };
        for _ in lo..hi {
            let t = tree(m, p.depth)?;
            let nodes = count_nodes(m, t);
            c = c.join(PhaseCount {
                trees: 1,
                nodes,
                min_nodes: nodes,
                max_nodes: nodes,
            });
        }
        return counts(m, p.count, c);
    }
    let mid = lo + (hi - lo) / 2;
    let (x, y) = m.par2(
        &[],
        move |m, _| reduce(m, p, lo, mid),
        move |m, _| reduce(m, p, mid, hi),
    )?;
    // SAFETY: both results were just returned by `par2`.
    let c = unsafe { read_counts(m, x).join(read_counts(m, y)) };
    counts(m, p.count, c)
}

/// `TimeConstruction`'s loop for one phase and depth.
fn construct_trees(
    m: &mut Mutator<'_>,
    count: u64,
    stretch: u32,
    depth: u32,
    grain: usize,
) -> Result<PhaseCount> {
    let iters = num_iters(stretch, depth) as usize;
    let per_task = (grain / tree_size(depth) as usize).max(1);
    let p = Phase {
        count,
        depth,
        per_task,
    };
    let total = reduce(m, p, 0, iters)?;
    // SAFETY: `total` was just returned.
    Ok(unsafe { read_counts(m, total) })
}

pub fn run(rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
    let setup = Setup::read(rt, p)?;
    let Setup {
        stretch,
        long_lived_depth,
        max_depth,
        array_size,
        grain,
        node,
        count,
    } = setup;
    super::check_nth(node, 0)?;
    super::check_nth(count, 1)?;
    let count = header(count, 4);
    let report = rt
        .run_on(0, move |s| -> Result<Report> {
            // SAFETY: this module keeps the interface's contract.
            let mut m = unsafe { s.compiled() };
            // Stretch the memory space quickly.
            let t = make_big_tree(&mut m, stretch)?;
            let stretch_nodes = count_nodes(&m, t);
            let keep = m.push_frame(2);
            let long_lived = make_big_tree(&mut m, long_lived_depth)?;
            keep.set(0, long_lived);
            let array = m.alloc_shared(header(RAW, array_size))?;
            keep.set(1, array);
            for i in 0..array_size / 2 {
                // SAFETY: a fresh raw object of `array_size` fields, in a slot.
                unsafe { m.store_raw(array, i, (1.0 / i as f64).to_bits()) };
            }
            let mut phases = Vec::new();
            for depth in (MIN_TREE_DEPTH..=max_depth).step_by(2) {
                let top_down = construct_trees(&mut m, count, stretch, depth, grain)?;
                let bottom_up = construct_trees(&mut m, count, stretch, depth, grain)?;
                phases.push((depth, top_down, bottom_up));
            }
            let long_lived_nodes = count_nodes(&m, keep.get(0));
            let array = keep.get(1);
            let array = (0..array_size)
                // SAFETY: the array is live in its slot; nothing collects.
                .map(|i| f64::from_bits(unsafe { m.field(array, i) }))
                .collect();
            m.pop_frame(keep);
            Ok(Report {
                stretch_nodes,
                phases,
                long_lived_nodes,
                array,
            })
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;
    Ok(setup.outcome(report))
}
