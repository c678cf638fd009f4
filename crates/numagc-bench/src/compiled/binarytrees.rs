//! binarytrees on the compiled-code interface: the program of
//! `benchmarks/binarytrees.rs` (same trees, same forks of the two big
//! trees' top levels, same static split of the iterations, same output and
//! check), with `make` emitting an inline allocation per node and keeping
//! in a frame slot what is live across a call that may collect, as a
//! compiler's frame for `Node (make (d-1), make (d-1))` would: the left
//! subtree across the second call, and the right one too when the node's
//! allocation takes its slow path.

use crate::benchmarks::binarytrees::{check_output, output, MIN_DEPTH, PAR_LEVELS};
use crate::{rt_err, Outcome, Params};
use numagc::compiled::{header, Ctx, Hp, Mutator, Sp};
use numagc::object::{is_pointer, NIL};
use numagc::{DescId, Descriptor, Result, Runtime};

/// The header word of a tree node: a constant, the runtime's first
/// descriptor (`super::register_nth` checks it).
const NODE: u64 = header(DescId::nth_registered(0), 2);

/// A complete tree of `depth`, in register code (`numagc::compiled::Hp`,
/// `Sp`: the allocation pointer and the stack's top are arguments, and
/// the allocation pointer a result, as a compiler keeps them in
/// registers). A leaf is allocated at once; an inner node goes on in
/// [`make_inner`] (a jump, not a call), so that a leaf saves none of the
/// registers an inner node needs (the shrink-wrapping of a native code
/// generator; `parfib.rs` says why it is written by hand).
#[inline(never)]
fn make(m: Ctx<'_>, hp: Hp, sp: Sp, depth: u32) -> (u64, Hp) {
    if depth > 0 {
        return make_inner(m, hp, sp, depth);
    }
    let (t, hp) = match m.try_alloc_at(hp, NODE, 2) {
        Some(r) => r,
        None => m.alloc_at_slow(hp, sp, NODE, 2),
    };
    // SAFETY: `t` is fresh, with two value fields.
    unsafe {
        m.init(t, 0, NIL);
        m.init(t, 1, NIL);
    }
    (t, hp)
}

/// An inner node of `make`. Nothing is live across the first call; the
/// left subtree is kept in a frame of one slot across the second, and
/// reloaded for the node's allocation (a compiler's frame holds only the
/// values live across a call that may collect).
#[inline(never)]
fn make_inner(m: Ctx<'_>, hp: Hp, sp: Sp, depth: u32) -> (u64, Hp) {
    let (l, hp) = make(m, hp, sp, depth - 1);
    let top = m.push_at(sp, [l]);
    let (r, hp) = make(m, hp, top, depth - 1);
    // `r` is fresh; allocating the node may collect, so `r` goes into
    // the allocation's slow path through a frame too when it is taken.
    match m.try_alloc_at(hp, NODE, 2) {
        Some((t, hp)) => {
            // SAFETY: `t` is fresh; the left subtree is reloaded from its
            // slot, `r` was returned since the last call that may collect
            // (`try_alloc_at` does not collect).
            unsafe {
                m.init(t, 0, sp.get(0));
                m.init(t, 1, r);
            }
            (t, hp)
        }
        None => node_slow(m, hp, sp, top, r),
    }
}

/// The node of the left subtree in the frame at `sp` and `r`, allocated
/// through the slow path: `r` is kept in a frame at `top` across it.
#[cold]
#[inline(never)]
fn node_slow(m: Ctx<'_>, hp: Hp, sp: Sp, top: Sp, r: u64) -> (u64, Hp) {
    let above = m.push_at(top, [r]);
    let (t, hp) = m.alloc_at_slow(hp, above, NODE, 2);
    // SAFETY: `t` is fresh; both subtrees are reloaded from their slots.
    unsafe {
        m.init(t, 0, sp.get(0));
        m.init(t, 1, top.get(0));
    }
    (t, hp)
}

/// [`make`] entered from code on the record (`Mutator::with_regs`).
fn make_tree(m: &mut Mutator<'_>, depth: u32) -> Result<u64> {
    m.with_regs(|m, hp, sp| make(m, hp, sp, depth))
}

/// The node of `l` and `r`, from code on the record.
fn node(m: &mut Mutator<'_>, l: u64, r: u64) -> Result<u64> {
    m.with_regs(|m, hp, sp| {
        let top = m.push_at(sp, [l]);
        node_slow(m, hp, sp, top, r)
    })
}

/// `make` with its top `levels` levels forked.
fn make_par(m: &mut Mutator<'_>, depth: u32, levels: u32) -> Result<u64> {
    if levels == 0 || depth == 0 {
        return make_tree(m, depth);
    }
    let (l, r) = m.par2(
        &[],
        move |m, _| make_par(m, depth - 1, levels - 1),
        move |m, _| make_par(m, depth - 1, levels - 1),
    )?;
    // `par2` returned both results; `node` keeps them in frame slots
    // while the node is allocated.
    node(m, l, r)
}

/// Nodes of the tree `t` (nothing collects during the walk).
fn check(m: &Mutator<'_>, t: u64) -> u64 {
    // SAFETY: `t` is a node of a live tree.
    let l = unsafe { m.field(t, 0) };
    if !is_pointer(l) {
        1
    } else {
        // SAFETY: as above.
        1 + check(m, l) + check(m, unsafe { m.field(t, 1) })
    }
}

pub fn run(rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
    let max_depth = p.get("depth") as u32;
    super::register_nth(
        rt,
        0,
        Descriptor::mixed("tree-node", 2, &[0, 1]).map_err(rt_err)?,
    )?;

    let stretch = rt
        .run_on(0, move |s| -> Result<u64> {
            // SAFETY: this module keeps the interface's contract.
            let mut m = unsafe { s.compiled() };
            let t = make_par(&mut m, max_depth + 1, PAR_LEVELS)?;
            Ok(check(&m, t))
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;

    let long_lived = rt
        .run_on(0, move |s| -> Result<numagc::GlobalRoot> {
            let t = {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                make_par(&mut m, max_depth, PAR_LEVELS)?
            };
            // SAFETY: `t` was returned just now; nothing collected since.
            let h = unsafe { s.root_word(t) };
            s.global_root(h)
        })
        .map_err(rt_err)?
        .map_err(rt_err)?;

    let per_vproc = rt
        .run_each(move |s| -> Result<Vec<u64>> {
            // SAFETY: as above.
            let mut m = unsafe { s.compiled() };
            let (me, n) = (m.vproc() as u64, m.vprocs() as u64);
            let mut sums = Vec::new();
            for d in (MIN_DEPTH..=max_depth).step_by(2) {
                let iterations = 1u64 << (max_depth - d + MIN_DEPTH);
                let mut sum = 0;
                for _ in (me..iterations).step_by(n as usize) {
                    let t = make_tree(&mut m, d)?;
                    sum += check(&m, t);
                }
                sums.push(sum);
            }
            Ok(sums)
        })
        .map_err(rt_err)?;

    let ll = rt
        .run_on(0, move |s| {
            let t = s.get_global(&long_lived).unwrap();
            let w = s.raw_word(t);
            // SAFETY: reads only.
            let m = unsafe { s.compiled() };
            check(&m, w)
        })
        .map_err(rt_err)?;
    let mut totals = vec![0u64; (MIN_DEPTH..=max_depth).step_by(2).count()];
    for r in per_vproc {
        for (t, x) in totals.iter_mut().zip(r.map_err(rt_err)?) {
            *t += x;
        }
    }
    let out = output(max_depth, stretch, &totals, ll);
    Ok(Outcome::new(out, move || {
        check_output(max_depth, stretch, &totals, ll)
    }))
}
