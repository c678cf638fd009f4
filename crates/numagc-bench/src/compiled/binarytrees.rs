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
use numagc::compiled::{header, Mutator};
use numagc::object::{is_pointer, NIL};
use numagc::{DescId, Descriptor, Result, Runtime};

/// The header word of a tree node: a constant, the runtime's first
/// descriptor (`super::register_nth` checks it).
const NODE: u64 = header(DescId::nth_registered(0), 2);

/// A complete tree of `depth`. A leaf is allocated at once; an inner node
/// goes on in [`make_inner`] (a jump, not a call), so that a leaf saves
/// none of the registers an inner node needs (the shrink-wrapping of a
/// native code generator; `parfib.rs` says why it is written by hand).
#[inline(never)]
fn make(m: &mut Mutator<'_>, depth: u32) -> Result<u64> {
    if depth > 0 {
        return make_inner(m, depth);
    }
    match m.try_alloc(NODE, 2) {
        Some(t) => {
            // SAFETY: `t` is fresh from `try_alloc`, with two value fields.
            unsafe {
                m.init(t, 0, NIL);
                m.init(t, 1, NIL);
            }
            Ok(t)
        }
        None => leaf_slow(m),
    }
}

/// A leaf through the allocation's slow path.
#[cold]
#[inline(never)]
fn leaf_slow(m: &mut Mutator<'_>) -> Result<u64> {
    let t = m.alloc_out_of_line(NODE, 2)?;
    // SAFETY: `t` is fresh, with two value fields.
    unsafe {
        m.init(t, 0, NIL);
        m.init(t, 1, NIL);
    }
    Ok(t)
}

/// An inner node of `make`. Nothing is live across the first call; the
/// left subtree is kept in a frame of one slot across the second, and
/// reloaded for the node's allocation (a compiler's frame holds only the
/// values live across a call that may collect).
#[inline(never)]
fn make_inner(m: &mut Mutator<'_>, depth: u32) -> Result<u64> {
    let l = make(m, depth - 1)?;
    let f = m.push_frame_with([l]);
    let t = node_of(m, depth, f);
    m.pop_frame(f);
    t
}

/// The rest of an inner node of `make`, the left subtree in slot 0 of
/// `f`.
#[inline(always)]
fn node_of(m: &mut Mutator<'_>, depth: u32, f: numagc::compiled::Frame) -> Result<u64> {
    let r = make(m, depth - 1)?;
    // `r` is fresh; allocating the node may collect, so `r` goes into
    // the allocation's slow path through the frame too when it is taken.
    match m.try_alloc(NODE, 2) {
        Some(t) => {
            // SAFETY: `t` is fresh from `try_alloc`; the left subtree is
            // reloaded from its slot, `r` was returned since the last call
            // that may collect (`try_alloc` does not collect).
            unsafe {
                m.init(t, 0, f.get(0));
                m.init(t, 1, r);
            }
            Ok(t)
        }
        None => node_slow(m, f, r),
    }
}

/// A node of the left subtree in slot 0 of `f` and `r`, allocated out of
/// line (the slow path of `node_of`, and the forked top levels): `r` is
/// kept in a frame slot across the allocation.
#[cold]
#[inline(never)]
fn node_slow(m: &mut Mutator<'_>, f: numagc::compiled::Frame, r: u64) -> Result<u64> {
    let g = m.push_frame_with([r]);
    let t = m.alloc_out_of_line(NODE, 2);
    let t = t.inspect(|&t| {
        // SAFETY: `t` is fresh; both subtrees are reloaded from slots.
        unsafe {
            m.init(t, 0, f.get(0));
            m.init(t, 1, g.get(0));
        }
    });
    m.pop_frame(g);
    t
}

/// `make` with its top `levels` levels forked.
fn make_par(m: &mut Mutator<'_>, depth: u32, levels: u32) -> Result<u64> {
    if levels == 0 || depth == 0 {
        return make(m, depth);
    }
    let (l, r) = m.par2(
        &[],
        move |m, _| make_par(m, depth - 1, levels - 1),
        move |m, _| make_par(m, depth - 1, levels - 1),
    )?;
    // `par2` returned both results; keep them while the node is allocated.
    let f = m.push_frame_with([l]);
    let t = node_slow(m, f, r);
    m.pop_frame(f);
    t
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
    super::register_nth(rt, 0, Descriptor::mixed("tree-node", 2, &[0, 1]).map_err(rt_err)?)?;

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
                    let t = make(&mut m, d)?;
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
