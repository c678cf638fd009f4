//! Parallel sequences: tabulate, map and reduce over index ranges, with
//! results in the heap as vectors or ropes.
//!
//! PML, the language of *Garbage Collection for Multicore NUMA Machines*
//! (`../shared/papers/manticore-numa-gc.md`, §2.1), has implicitly-threaded
//! parallel arrays; Manticore represents them as *ropes*: balanced binary
//! trees whose leaves are vectors. This module is that representation on
//! top of [`Scope::par2`], so that a language built on numagc gets parallel
//! arrays whose pieces are built on whichever vproc ran them, with no
//! copying into one big array at the end.
//!
//! Representation (the choices, and why):
//!
//! * A *sequence* is a vector (header ID 1) or a *rope node*. Only the top
//!   of a sequence and the children of rope nodes are interpreted as
//!   sequence structure; the elements inside a leaf are plain values, so a
//!   sequence of vectors (or of sequences) is unambiguous.
//! * A rope node is an immutable mixed object of the built-in descriptor
//!   [`ID_ROPE`] (`numagc.rope`): `[length (raw), depth (raw), left, right]`.
//!   The length is that of the whole subtree, so indexing descends in
//!   O(depth); the depth (1 for a node over two leaves) is kept so that
//!   balance can be checked and a later concatenation can rebalance.
//! * [`ID_ROPE`] is the last 15-bit ID, reserved: the descriptor table
//!   registers it when it is created and hands out embedder IDs from 3
//!   below it, so no embedder descriptor or vector is ever taken for a rope
//!   node, and the collectors, promotion and the verifier treat rope nodes
//!   as the ordinary objects they are (a new header ID would have needed a
//!   case in every scanning loop; registering the descriptor first at run
//!   time would have moved every embedder's IDs by one). An embedder can
//!   still forge a node (through `ObjectKind::Mixed` and `alloc_mixed`);
//!   the readers check every length against the objects they reach, so a
//!   forged node gives an error, never an out-of-bounds read.
//! * Leaves hold at most [`ROPE_LEAF_MAX`] elements and are never empty.
//!   Small leaves stay below the large-object threshold, so they are
//!   allocated in the nursery and their elements are not promoted.
//!
//! Invariants of what this module builds: a result of at most
//! `ROPE_LEAF_MAX` elements is a single vector; a longer one is a rope whose
//! leaves are the pieces the range was split into, each of at most
//! `min(grain, ROPE_LEAF_MAX)` elements; ranges are split in halves, so the
//! rope is balanced (depth ⌈log₂(n / piece)⌉); `par_map` keeps its input's
//! shape exactly. Every operation returns [`ErrorKind::Misuse`] for a zero
//! grain, a reversed range, an index out of range or a value that is not a
//! sequence, and never panics on them.
//!
//! Parallelism follows [`Scope::par_reduce`]: ranges and rope nodes are
//! split with `par2`, whose environments carry the sub-sequences (handles
//! cannot cross threads). Element functions may fork themselves, so nested
//! parallelism (a tabulate of tabulates) works.
//!
//! Depth: the readers (`seq_len`, `seq_get`, `seq_for_each`, `seq_to_vec`)
//! walk a rope with loops and an explicit stack, so any depth is fine. The
//! parallel operations recurse one `par2` per rope level (and per halving
//! of a range, ⌈log₂ n⌉ levels); the ropes built here are balanced, but an
//! embedder's own nodes can make a rope as deep as it is long. Every fork
//! checks the vproc's stack (`crate::stack`), so such a rope gets
//! [`ErrorKind::StackExhausted`] where the stack runs short, never an overflow.

use crate::error::{Error, Result};
use crate::mutator::scope::{Handle, Scope};
use crate::mutator::view::{ObjectKind, View};
use crate::object::descriptor::{DescId, ROPE_DEPTH, ROPE_LEFT, ROPE_LEN, ROPE_RIGHT};
use crate::object::header::ID_ROPE;
use std::sync::Arc;

/// The largest number of elements of a rope leaf, and of a result that is
/// returned as one vector. 256 values are 2 KiB, below every allowed
/// large-object threshold but the smallest, so leaves go to the nursery.
pub const ROPE_LEAF_MAX: usize = 256;

/// One level of a sequence, read through views.
#[derive(Clone, Copy)]
enum Level<'a> {
    Leaf(View<'a>),
    Node {
        len: usize,
        depth: u64,
        left: View<'a>,
        right: View<'a>,
    },
}

/// Classifies `v` as a sequence; `op` names the caller in the error.
fn level<'a>(v: View<'a>, op: &str) -> Result<Level<'a>> {
    match v.kind() {
        Some(ObjectKind::Vector) => Ok(Level::Leaf(v)),
        Some(ObjectKind::Mixed(d)) if d == DescId(ID_ROPE) => Ok(Level::Node {
            len: v.try_raw(ROPE_LEN)? as usize,
            depth: v.try_raw(ROPE_DEPTH)?,
            left: v.try_field(ROPE_LEFT)?,
            right: v.try_field(ROPE_RIGHT)?,
        }),
        Some(k) => Err(Error::misuse(format!(
            "{op}: the value is not a sequence (a vector or a rope) but a {k:?} object"
        ))),
        None => Err(Error::misuse(format!(
            "{op}: the value is not a sequence (a vector or a rope) but an immediate"
        ))),
    }
}

fn level_len(l: Level<'_>) -> usize {
    match l {
        Level::Leaf(v) => v.len(),
        Level::Node { len, .. } => len,
    }
}

fn level_depth(l: Level<'_>) -> u64 {
    match l {
        Level::Leaf(_) => 0,
        Level::Node { depth, .. } => depth,
    }
}

fn malformed(op: &str, what: String) -> Error {
    Error::misuse(format!("{op}: malformed rope: {what}"))
}

fn check_grain(op: &str, grain: usize) -> Result<()> {
    if grain == 0 {
        return Err(Error::misuse(format!("{op}: grain must be at least 1")));
    }
    Ok(())
}

impl<'s> Scope<'s> {
    /// A sequence of `f(i)` for `i` in `lo..hi`, computed in parallel.
    ///
    /// The range is split in halves with [`Scope::par2`] down to pieces of
    /// at most `min(grain, ROPE_LEAF_MAX)` indices, each computed in order
    /// on one vproc. The result is one vector when `hi - lo <=
    /// ROPE_LEAF_MAX` (then the pieces are copied into it), else a balanced
    /// rope whose leaves are the pieces. `f` receives `env` as handles of
    /// its own scope and may fork (nested parallelism).
    ///
    /// Errors: [`ErrorKind::Misuse`](crate::ErrorKind::Misuse) for a zero grain or `lo > hi`; the first
    /// error of `f`.
    pub fn tabulate<F>(
        &mut self,
        env: &[Handle<'_>],
        lo: usize,
        hi: usize,
        grain: usize,
        f: F,
    ) -> Result<Handle<'s>>
    where
        F: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], usize) -> Result<Handle<'i>>
            + Send
            + Sync
            + 'static,
    {
        check_grain("tabulate", grain)?;
        if lo > hi {
            return Err(Error::misuse(format!(
                "tabulate: range {lo}..{hi} is reversed"
            )));
        }
        let f = Arc::new(f);
        self.scope_value(|s| {
            let env = s.slot_handles_of(env);
            let built = build(s, &env, lo, hi, grain.min(ROPE_LEAF_MAX), &f)?;
            if hi - lo <= ROPE_LEAF_MAX {
                s.seq_to_vec(built)
            } else {
                Ok(built)
            }
        })
    }

    /// `f` applied to every element of the sequence `seq`, in parallel;
    /// the result has `seq`'s shape: a vector for a vector, a rope of the
    /// same structure for a rope. Rope nodes are split with
    /// [`Scope::par2`], and a vector (or leaf) longer than `grain` is split
    /// into index ranges of at most `grain`, whose results are copied into
    /// one vector of the leaf's length.
    ///
    /// Errors: [`ErrorKind::Misuse`](crate::ErrorKind::Misuse) for a zero grain or when `seq` is not a
    /// sequence; the first error of `f`.
    pub fn par_map<F>(
        &mut self,
        env: &[Handle<'_>],
        seq: Handle<'_>,
        grain: usize,
        f: F,
    ) -> Result<Handle<'s>>
    where
        F: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], Handle<'i>) -> Result<Handle<'i>>
            + Send
            + Sync
            + 'static,
    {
        check_grain("par_map", grain)?;
        level(self.view(seq), "par_map")?;
        let f = Arc::new(f);
        self.scope_value(|s| {
            let mut seq_env = s.slot_handles_of(&[seq]);
            seq_env.extend(s.slot_handles_of(env));
            map_seq(s, &seq_env, grain, &f)
        })
    }

    /// Reduces the elements of `seq` with the associative `combine`, in
    /// parallel: rope nodes are split with [`Scope::par2`], vectors into
    /// index ranges of at most `grain`, each folded from left to right.
    /// Elements are combined in sequence order (`combine` need not be
    /// commutative). An empty sequence gives `unit`; `unit` is not combined
    /// with anything otherwise.
    ///
    /// Errors: [`ErrorKind::Misuse`](crate::ErrorKind::Misuse) for a zero grain or when `seq` is not a
    /// sequence; the first error of `combine`.
    pub fn seq_reduce<C>(
        &mut self,
        env: &[Handle<'_>],
        seq: Handle<'_>,
        grain: usize,
        unit: Handle<'_>,
        combine: C,
    ) -> Result<Handle<'s>>
    where
        C: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], Handle<'i>, Handle<'i>) -> Result<Handle<'i>>
            + Send
            + Sync
            + 'static,
    {
        check_grain("seq_reduce", grain)?;
        if self.seq_len(seq)? == 0 {
            return Ok(self.push_root(self.word(unit)));
        }
        let combine = Arc::new(combine);
        self.scope_value(|s| {
            let mut seq_env = s.slot_handles_of(&[seq]);
            seq_env.extend(s.slot_handles_of(env));
            reduce_seq(s, &seq_env, grain, &combine)
        })
    }

    /// The number of elements of a sequence (a vector or a rope).
    pub fn seq_len(&self, seq: Handle<'_>) -> Result<usize> {
        level(self.view(seq), "seq_len").map(level_len)
    }

    /// The depth of a sequence: 0 for a vector, else one more than the
    /// deeper of its rope node's children.
    pub fn seq_depth(&self, seq: Handle<'_>) -> Result<usize> {
        level(self.view(seq), "seq_depth").map(|l| level_depth(l) as usize)
    }

    /// Element `i` of a sequence, found in O(depth).
    pub fn seq_get(&self, seq: Handle<'_>, i: usize) -> Result<Handle<'s>> {
        let mut l = level(self.view(seq), "seq_get")?;
        let len = level_len(l);
        if i >= len {
            return Err(Error::misuse(format!(
                "seq_get: index {i} out of range for a sequence of length {len}"
            )));
        }
        let mut i = i;
        loop {
            match l {
                Level::Leaf(v) => {
                    let x = v
                        .try_field(i)
                        .map_err(|e| malformed("seq_get", e.to_string()))?;
                    return Ok(self.handle(x));
                }
                Level::Node { left, right, .. } => {
                    let left = level(left, "seq_get")?;
                    let left_len = level_len(left);
                    l = if i < left_len {
                        left
                    } else {
                        i -= left_len;
                        level(right, "seq_get")?
                    };
                }
            }
        }
    }

    /// Calls `f` on every element of a sequence, in order, reading each leaf
    /// directly (no descent per element). `f` gets views, so no collection
    /// runs meanwhile; it may root values with [`Scope::handle`].
    pub fn seq_for_each<'a>(&'a self, seq: Handle<'_>, mut f: impl FnMut(View<'a>)) -> Result<()> {
        let first = level(self.view(seq), "seq_for_each")?;
        let mut pending = vec![first];
        while let Some(l) = pending.pop() {
            match l {
                Level::Leaf(v) => (0..v.len()).for_each(|i| f(v.field(i))),
                Level::Node { left, right, .. } => {
                    pending.push(level(right, "seq_for_each")?);
                    pending.push(level(left, "seq_for_each")?);
                }
            }
        }
        Ok(())
    }

    /// The elements of a sequence as one vector: `seq` itself when it is a
    /// vector, else a new vector copied from the rope's leaves in order.
    pub fn seq_to_vec(&mut self, seq: Handle<'_>) -> Result<Handle<'s>> {
        if let Level::Leaf(v) = level(self.view(seq), "seq_to_vec")? {
            return Ok(self.handle(v));
        }
        self.scope_value(|s| {
            // The stored length is only a hint: a forged rope node could
            // claim any length, and that must not become a huge reservation.
            let mut elems = Vec::with_capacity(s.seq_len(seq)?.min(1 << 20));
            s.seq_for_each(seq, |v| elems.push(s.handle(v)))?;
            s.alloc_vector(&elems)
        })
    }

    /// A rope node over two non-empty sequences.
    fn rope_node(&mut self, left: Handle<'_>, right: Handle<'_>) -> Result<Handle<'s>> {
        let l = level(self.view(left), "rope")?;
        let r = level(self.view(right), "rope")?;
        let len = (level_len(l) + level_len(r)) as u64;
        let depth = 1 + level_depth(l).max(level_depth(r));
        self.alloc_mixed(DescId(ID_ROPE), &[left, right], &[len, depth])
    }
}

/// A vector of `elem(i)` for `i` in `lo..hi`, computed here in order.
fn leaf<'i, E>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    lo: usize,
    hi: usize,
    elem: &E,
) -> Result<Handle<'i>>
where
    E: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], usize) -> Result<Handle<'k>>,
{
    s.scope_value(|s| {
        let env = s.slot_handles_of(env);
        let mut elems = Vec::with_capacity(hi - lo);
        for i in lo..hi {
            // A safepoint per element: a thief waiting for this vproc to
            // promote a task's environment (lazy promotion) is served even
            // when `elem` computes without allocating.
            s.poll();
            elems.push(elem(s, &env, i)?);
        }
        s.alloc_vector(&elems)
    })
}

/// The pieces of `lo..hi` of at most `piece` indices: one vector when the
/// range fits in a piece, else a rope node over its two halves, built in
/// parallel.
fn build<'i, E>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    lo: usize,
    hi: usize,
    piece: usize,
    elem: &Arc<E>,
) -> Result<Handle<'i>>
where
    E: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], usize) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    if hi - lo <= piece {
        return leaf(s, env, lo, hi, &**elem);
    }
    let mid = lo + (hi - lo) / 2;
    let (elem_a, elem_b) = (elem.clone(), elem.clone());
    let (x, y) = s.par2(
        env,
        move |s, env| build(s, env, lo, mid, piece, &elem_a),
        move |s, env| build(s, env, mid, hi, piece, &elem_b),
    )?;
    s.rope_node(x, y)
}

/// Shares an element function; the bound gives a closure its higher-ranked
/// signature.
fn element_fn<E>(elem: E) -> Arc<E>
where
    E: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], usize) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    Arc::new(elem)
}

/// `par_map` of `seq_env[0]` with the user environment `seq_env[1..]`.
fn map_seq<'i, F>(
    s: &mut Scope<'i>,
    seq_env: &[Handle<'i>],
    grain: usize,
    f: &Arc<F>,
) -> Result<Handle<'i>>
where
    F: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], Handle<'k>) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    let (seq, env) = (seq_env[0], &seq_env[1..]);
    let len = match level(s.view(seq), "par_map")? {
        Level::Leaf(v) => v.len(),
        Level::Node { left, right, .. } => {
            let (left, right) = (s.handle(left), s.handle(right));
            let mut children_env = vec![left, right];
            children_env.extend_from_slice(env);
            let (f_a, f_b) = (f.clone(), f.clone());
            let (x, y) = s.par2(
                &children_env,
                move |s, e| map_seq(s, &[&e[..1], &e[2..]].concat(), grain, &f_a),
                move |s, e| map_seq(s, &e[1..], grain, &f_b),
            )?;
            return s.rope_node(x, y);
        }
    };
    // A vector: its elements, computed in index pieces of at most `grain`,
    // then gathered into one vector of the same length.
    let f = f.clone();
    let elem = element_fn(move |s, e, i| {
        let x = s.field(e[0], i)?;
        f(s, &e[1..], x)
    });
    let pieces = build(s, seq_env, 0, len, grain, &elem)?;
    s.seq_to_vec(pieces)
}

/// `seq_reduce` of the non-empty `seq_env[0]` with the user environment
/// `seq_env[1..]`.
fn reduce_seq<'i, C>(
    s: &mut Scope<'i>,
    seq_env: &[Handle<'i>],
    grain: usize,
    combine: &Arc<C>,
) -> Result<Handle<'i>>
where
    C: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], Handle<'k>, Handle<'k>) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    let (seq, env) = (seq_env[0], &seq_env[1..]);
    match level(s.view(seq), "seq_reduce")? {
        Level::Leaf(v) => {
            let len = v.len();
            reduce_vector(s, seq_env, 0, len, grain, combine)
        }
        Level::Node { left, right, .. } => {
            let (left, right) = (s.handle(left), s.handle(right));
            let mut children_env = vec![left, right];
            children_env.extend_from_slice(env);
            let (c_a, c_b) = (combine.clone(), combine.clone());
            let (x, y) = s.par2(
                &children_env,
                move |s, e| reduce_seq(s, &[&e[..1], &e[2..]].concat(), grain, &c_a),
                move |s, e| reduce_seq(s, &e[1..], grain, &c_b),
            )?;
            combine(s, env, x, y)
        }
    }
}

/// The reduction of elements `lo..hi` (not empty) of the vector
/// `vec_env[0]`: folded here when at most `grain`, else split in halves.
fn reduce_vector<'i, C>(
    s: &mut Scope<'i>,
    vec_env: &[Handle<'i>],
    lo: usize,
    hi: usize,
    grain: usize,
    combine: &Arc<C>,
) -> Result<Handle<'i>>
where
    C: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], Handle<'k>, Handle<'k>) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    let (vector, env) = (vec_env[0], &vec_env[1..]);
    if hi - lo <= grain {
        return s.scope_value(|s| {
            let env = s.slot_handles_of(env);
            let first = s.field(vector, lo)?;
            let acc = s.slot(first);
            for i in lo + 1..hi {
                s.poll();
                // Each step's handles are popped; only `acc` carries over.
                s.scope(|s| -> Result<()> {
                    let x = s.field(vector, i)?;
                    let env = s.slot_handles_of(&env);
                    let so_far = s.slot_handles_of(&[acc.get()])[0];
                    let r = combine(s, &env, so_far, x)?;
                    s.assign(acc, r);
                    Ok(())
                })?;
            }
            Ok(acc.get())
        });
    }
    let mid = lo + (hi - lo) / 2;
    let (c_a, c_b) = (combine.clone(), combine.clone());
    let (x, y) = s.par2(
        vec_env,
        move |s, e| reduce_vector(s, e, lo, mid, grain, &c_a),
        move |s, e| reduce_vector(s, e, mid, hi, grain, &c_b),
    )?;
    combine(s, env, x, y)
}
