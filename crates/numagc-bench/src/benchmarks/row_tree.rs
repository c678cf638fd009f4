//! Matrices as balanced binary trees of rows, for the benchmarks that
//! rebuild a matrix row by row at every step (lu_decomposition,
//! floyd_warshall).
//!
//! A row is any heap object (here a raw object of `n` numbers); a tree is
//! a row or a node `(left, right, rows)` over at least two rows. The empty
//! tree is `NIL`. [`map`] forks with [`Scope::par2`] at every node above
//! the grain, and a stolen half's environment holds only that half of the
//! old matrix: lazy promotion then copies to the global heap just the rows
//! the thief reads. (`Scope::tabulate` and `par_map` give both halves the
//! whole sequence as environment, so a steal promotes every local row of
//! the old matrix: floyd_warshall n = 1024 on 2 vprocs written with them
//! promoted 7.0 and 8.2 GB of the 8.3 GB it allocates, against 4.1 and
//! 4.2 GB with this module.)

use numagc::{DescId, Descriptor, Handle, ObjectKind, Result, Runtime, Scope, View};
use std::sync::Arc;

/// The descriptor of tree nodes: `left`, `right` and the raw row count.
pub fn register(rt: &Runtime) -> std::result::Result<DescId, String> {
    let d = Descriptor::mixed("row-tree-node", 3, &[0, 1]).map_err(crate::rt_err)?;
    rt.register(d).map_err(crate::rt_err)
}

fn is_node(v: View<'_>, node: DescId) -> bool {
    v.kind() == Some(ObjectKind::Mixed(node))
}

/// Number of rows of a tree.
pub fn rows(v: View<'_>, node: DescId) -> usize {
    if v.is_int() {
        0
    } else if is_node(v, node) {
        v.raw(2) as usize
    } else {
        1
    }
}

/// The tree of `left` followed by `right`, either of which may be empty.
fn join<'s>(
    s: &mut Scope<'s>,
    node: DescId,
    left: Handle<'_>,
    right: Handle<'_>,
) -> Result<Handle<'s>> {
    let (l, r) = (rows(s.view(left), node), rows(s.view(right), node));
    match (l, r) {
        (0, _) => Ok(s.handle(s.view(right))),
        (_, 0) => Ok(s.handle(s.view(left))),
        _ => s.alloc_mixed(node, &[left, right], &[(l + r) as u64]),
    }
}

/// Shares a row-making function for [`build`]; the bound gives a closure
/// its higher-ranked signature.
pub fn make_fn<F>(make: F) -> Arc<F>
where
    F: for<'i> Fn(&mut Scope<'i>, usize) -> Result<Handle<'i>> + Send + Sync + 'static,
{
    Arc::new(make)
}

/// Shares a row-mapping function for [`map`] (see [`make_fn`]).
pub fn map_fn<F>(f: F) -> Arc<F>
where
    F: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], Handle<'i>, usize) -> Result<Handle<'i>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(f)
}

/// The balanced tree of rows `make(i)` for `i` in `lo..hi` (not empty),
/// made in parallel above `grain` rows.
pub fn build<'s, F>(
    s: &mut Scope<'s>,
    node: DescId,
    lo: usize,
    hi: usize,
    grain: usize,
    make: &Arc<F>,
) -> Result<Handle<'s>>
where
    F: for<'i> Fn(&mut Scope<'i>, usize) -> Result<Handle<'i>> + Send + Sync + 'static,
{
    if hi - lo == 1 {
        return make(s, lo);
    }
    let mid = lo + (hi - lo) / 2;
    if hi - lo <= grain {
        return s.scope_value(|s| {
            let l = build(s, node, lo, mid, grain, make)?;
            let r = build(s, node, mid, hi, grain, make)?;
            join(s, node, l, r)
        });
    }
    let make_b = make.clone();
    let (l, r) = s.par2(
        &[],
        |s, _| build(s, node, lo, mid, grain, make),
        move |s, _| build(s, node, mid, hi, grain, &make_b),
    )?;
    join(s, node, l, r)
}

/// The balanced tree of the rows `rows` (not empty), built here.
pub fn from_rows<'s>(s: &mut Scope<'s>, node: DescId, rows: &[Handle<'_>]) -> Result<Handle<'s>> {
    if rows.len() == 1 {
        return Ok(s.handle(s.view(rows[0])));
    }
    let mid = rows.len() / 2;
    s.scope_value(|s| {
        let l = from_rows(s, node, &rows[..mid])?;
        let r = from_rows(s, node, &rows[mid..])?;
        join(s, node, l, r)
    })
}

/// The tree of `f(env, row, i)` for the rows of `tree`, numbered from
/// `first`; rows for which `f` returns `NIL` are left out. Forks at every
/// node of more than `grain` rows; the forked half's environment is its
/// own subtree and `env`.
pub fn map<'s, F>(
    s: &mut Scope<'s>,
    node: DescId,
    tree: Handle<'_>,
    env: &[Handle<'_>],
    first: usize,
    grain: usize,
    f: &Arc<F>,
) -> Result<Handle<'s>>
where
    F: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], Handle<'i>, usize) -> Result<Handle<'i>>
        + Send
        + Sync
        + 'static,
{
    let v = s.view(tree);
    if !is_node(v, node) {
        return s.scope_value(|s| {
            let row = s.handle(s.view(tree));
            let env: Vec<Handle<'_>> = env.iter().map(|&h| s.handle(s.view(h))).collect();
            f(s, &env, row, first)
        });
    }
    let (count, left, right) = (rows(v, node), v.field(0), v.field(1));
    let (left, right) = (s.handle(left), s.handle(right));
    let mid = first + rows(s.view(left), node);
    if count <= grain {
        return s.scope_value(|s| {
            let l = map(s, node, left, env, first, grain, f)?;
            let r = map(s, node, right, env, mid, grain, f)?;
            join(s, node, l, r)
        });
    }
    let mut right_env = vec![right];
    right_env.extend_from_slice(env);
    let f_b = f.clone();
    let (l, r) = s.par2(
        &right_env,
        |s, e| map(s, node, left, &e[1..], first, grain, f),
        move |s, e| map(s, node, e[0], &e[1..], mid, grain, &f_b),
    )?;
    join(s, node, l, r)
}

/// The first row of a non-empty tree.
pub fn first_row<'s>(s: &Scope<'s>, node: DescId, tree: Handle<'_>) -> Handle<'s> {
    let mut v = s.view(tree);
    while is_node(v, node) {
        v = v.field(0);
    }
    s.handle(v)
}

/// Row `i` of a tree (which has more than `i` rows).
pub fn nth_row<'s>(s: &Scope<'s>, node: DescId, tree: Handle<'_>, mut i: usize) -> Handle<'s> {
    let mut v = s.view(tree);
    while is_node(v, node) {
        let left = v.field(0);
        let left_rows = rows(left, node);
        v = if i < left_rows {
            left
        } else {
            i -= left_rows;
            v.field(1)
        };
    }
    s.handle(v)
}

/// Calls `f` on the words of every row, in order (rows are raw objects).
pub fn for_each_row<'a>(v: View<'a>, node: DescId, f: &mut impl FnMut(&'a [u64])) {
    if is_node(v, node) {
        for_each_row(v.field(0), node, f);
        for_each_row(v.field(1), node, f);
    } else if let Some(words) = v.raw_words() {
        f(words);
    }
}
