//! binary-trees from the Computer Language Benchmarks Game
//! (`multicore-ocaml-gc.txt` §6.2, "binarytrees5"; also issue 2's
//! benchmark): a stretch tree of depth max+1, a long-lived tree of depth
//! max kept in a global root for the whole run, and 2^(max-d+4) trees for
//! each depth d from 4 to max in steps of 2, the iterations of each depth
//! spread over the vprocs (statically: every vproc takes every n-th
//! iteration, so each does the same work). The stretch and long-lived
//! trees are built with their top levels forked (`make_par`), so that
//! every vproc helps build them. The output lines are the standard program's;
//! each check value is compared with the node count 2^(d+1)-1 computed
//! independently. The trees are held in typed handles
//! ([`numagc::Typed`]): the program knows its node's layout, so a node it
//! holds is read with no check, and a child read from a node is taken as a
//! node with one look at its header (no layout table).

use crate::{register_as, rt_err, Benchmark, Outcome, Param, Params};
use numagc::{DescId, Handle, Layout, Record, Runtime, Scope, Typed};
use std::fmt::Write;

pub(crate) const MIN_DEPTH: u32 = 4;

pub struct BinaryTrees;

/// A tree node: two children, NIL in a leaf; the runtime's first
/// descriptor.
struct Node;

impl Layout for Node {
    const NAME: &'static str = "tree-node";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 2;
    const VALUES: u32 = 0b11;
}

type Tree<'s> = Typed<'s, Node>;

fn make<'s>(s: &mut Scope<'s>, depth: u32) -> numagc::Result<Tree<'s>> {
    if depth == 0 {
        return s.alloc_typed::<Node>(&[Handle::NIL, Handle::NIL], &[]);
    }
    s.scope_fresh(|s| {
        let l = make(s, depth - 1)?;
        let r = make(s, depth - 1)?;
        s.alloc_fresh::<Node>(&[l.untyped(), r.untyped()], &[])
    })
}

/// Levels at the top of the stretch and long-lived trees built in parallel
/// (2^PAR_LEVELS subtrees): those two trees are built by one job, and
/// without this the other vprocs would idle while it runs.
pub(crate) const PAR_LEVELS: u32 = 3;

/// `make` with its top `levels` levels forked with `par2`.
fn make_par<'s>(s: &mut Scope<'s>, depth: u32, levels: u32) -> numagc::Result<Tree<'s>> {
    if levels == 0 || depth == 0 {
        return make(s, depth);
    }
    let (l, r) = s.par2(
        &[],
        move |s, _| make_par(s, depth - 1, levels - 1).map(Typed::untyped),
        move |s, _| make_par(s, depth - 1, levels - 1).map(Typed::untyped),
    )?;
    s.alloc_typed::<Node>(&[l, r], &[])
}

/// Nodes of the tree `t`: its children are read without checks, and each
/// is taken as a node with one look at its header.
fn check(t: Record<'_, Node>) -> u64 {
    let l = t.get(0);
    if l.is_int() {
        1
    } else {
        1 + check(child(l)) + check(child(t.get(1)))
    }
}

/// A child read from a node, taken as a node.
fn child(v: numagc::View<'_>) -> Record<'_, Node> {
    v.record::<Node>().expect("a tree node")
}

/// Nodes of a complete tree of `depth` (the independent answer).
pub(crate) fn nodes(depth: u32) -> u64 {
    (1u64 << (depth + 1)) - 1
}

impl Benchmark for BinaryTrees {
    fn name(&self) -> &'static str {
        "binarytrees"
    }
    fn source(&self) -> &'static str {
        "multicore-ocaml-gc.txt §6.2"
    }
    fn description(&self) -> &'static str {
        "allocate and walk complete binary trees; one long-lived tree"
    }
    fn params(&self) -> &'static [Param] {
        &[Param {
            name: "depth",
            help: "maximum tree depth",
            quick: 18,
            paper: 21,
            scale: 22,
            min: 6,
            max: 30,
        }]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> Result<Outcome, String> {
        let max_depth = p.get("depth") as u32;
        register_as(rt, Node::DESC, Node::descriptor().map_err(rt_err)?).map_err(rt_err)?;
        let stretch = rt
            .run_on(0, move |s| -> numagc::Result<u64> {
                let t = make_par(s, max_depth + 1, PAR_LEVELS)?;
                Ok(check(s.record(t)))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let long_lived = rt
            .run_on(0, move |s| -> numagc::Result<numagc::GlobalRoot> {
                let t = make_par(s, max_depth, PAR_LEVELS)?;
                s.global_root(t.untyped())
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;

        let per_vproc = rt
            .run_each(move |s| -> numagc::Result<Vec<u64>> {
                let (me, n) = (s.vproc() as u64, s.vprocs() as u64);
                let mut sums = Vec::new();
                for d in (MIN_DEPTH..=max_depth).step_by(2) {
                    let iterations = 1u64 << (max_depth - d + MIN_DEPTH);
                    let mut sum = 0;
                    for _ in (me..iterations).step_by(n as usize) {
                        sum += s.scope(|s| make(s, d).map(|t| check(s.record(t))))?;
                    }
                    sums.push(sum);
                }
                Ok(sums)
            })
            .map_err(rt_err)?;
        let mut totals = vec![0u64; (MIN_DEPTH..=max_depth).step_by(2).count()];
        for r in per_vproc {
            for (t, x) in totals.iter_mut().zip(r.map_err(rt_err)?) {
                *t += x;
            }
        }

        let ll = rt
            .run_on(0, move |s| {
                let t = s.get_global(&long_lived).unwrap();
                check(s.view(t).record::<Node>().expect("a tree node"))
            })
            .map_err(rt_err)?;
        let out = output(max_depth, stretch, &totals, ll);
        Ok(Outcome::new(out, move || {
            check_output(max_depth, stretch, &totals, ll)
        }))
    }

    fn has_compiled(&self) -> bool {
        true
    }

    fn run_compiled(&self, rt: &Runtime, p: &Params) -> Result<Outcome, String> {
        crate::compiled::binarytrees::run(rt, p)
    }
}

/// The standard program's output lines.
pub(crate) fn output(max_depth: u32, stretch: u64, totals: &[u64], long_lived: u64) -> String {
    let mut out = String::new();
    writeln!(
        out,
        "stretch tree of depth {}\t check: {}",
        max_depth + 1,
        stretch
    )
    .unwrap();
    for (d, &sum) in (MIN_DEPTH..=max_depth).step_by(2).zip(totals) {
        let iterations = 1u64 << (max_depth - d + MIN_DEPTH);
        writeln!(out, "{iterations}\t trees of depth {d}\t check: {sum}").unwrap();
    }
    writeln!(
        out,
        "long lived tree of depth {max_depth}\t check: {long_lived}"
    )
    .unwrap();
    out
}

/// Compares every check value with the node counts computed independently.
pub(crate) fn check_output(
    max_depth: u32,
    stretch: u64,
    totals: &[u64],
    ll: u64,
) -> Result<(), String> {
    let mut failures = Vec::new();
    if stretch != nodes(max_depth + 1) {
        failures.push(format!(
            "stretch tree: {stretch} != {}",
            nodes(max_depth + 1)
        ));
    }
    for (d, &sum) in (MIN_DEPTH..=max_depth).step_by(2).zip(totals) {
        let want = (1u64 << (max_depth - d + MIN_DEPTH)) * nodes(d);
        if sum != want {
            failures.push(format!("depth {d}: {sum} != {want}"));
        }
    }
    if ll != nodes(max_depth) {
        failures.push(format!("long-lived tree: {ll} != {}", nodes(max_depth)));
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("; "))
    }
}
