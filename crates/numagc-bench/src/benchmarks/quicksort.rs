//! Quicksort (`manticore-numa-gc.md` §4.1): the NESL parallel quicksort
//! of a sequence of 10,000,000 integers, as Manticore's `quicksort.pml`
//! writes it over ropes:
//!
//! ```text
//! quicksort xs = if length xs <= 1 then xs else
//!   let p = xs ! (length xs div 2)
//!       (lt, eq, gt) = (| filter (< p) xs, filter (= p) xs, filter (> p) xs |)
//!       (l, u) = (| quicksort lt, quicksort gt |)
//!   in l ++ (eq ++ u)
//! ```
//!
//! Keys are uniform in [0, `range`) with `range` = 10,000 as in the PML
//! driver (`Rand.inRangeInt (0, 10000)`), so every key occurs many times
//! and the `eq` sequences matter; they come from a hash of the seed and
//! the index, so any vproc builds the same input.
//!
//! Sequences are ropes built here (numagc's own ropes have no filter or
//! concatenation): a leaf is a raw object of at most [`LEAF_MAX`] integer
//! words, an inner node a `qs-cat` object `[length, left, right]`, the
//! empty sequence the immediate NIL. All are immutable: every filter and
//! concatenation builds new objects, as a functional program would.
//! Concatenation is O(1) (a new node), except that two sequences with at
//! most `LEAF_MAX` elements in all are copied into one leaf (Manticore's
//! rope concatenation also coalesces small leaves). A filter reads a
//! subtree of at most [`CHUNK`] elements in one go and cuts what it keeps
//! into new leaves, so leaves stay large however much the filters cut.
//!
//! Parallelism: the three filters run in parallel (nested `par2`s; the
//! pair `(eq, gt)` is returned in a `qs-pair` object), each filter forks
//! at every rope node above [`FILTER_GRAIN`] elements, and the two
//! recursive sorts run in parallel with `par2`. A sequence of at most
//! `grain` elements is sorted sequentially: its elements are copied into
//! a new heap leaf, which is sorted in place before anyone can see it
//! (with the default grain, `LEAF_MAX`, the result is that one leaf). The
//! input is built in parallel too, so its leaves start out spread over
//! the vprocs' heaps (the PML driver maps over it for the same reason).
//!
//! Nearly everything this program allocates survives a while (each
//! filter's output is the next level's input), so it is a stress test of
//! minor, major and global collections. A task's environment stays rooted
//! until the task returns, so a sort keeps its input sequence alive while
//! it sorts the parts: the live data is about twice what a compiler's
//! precise liveness would keep (the input, once filtered, is dead in PML).
//!
//! Output: the length, the first, middle and last keys, and an
//! order-dependent checksum of the sorted sequence. Check: the keys are
//! regenerated into a Rust `Vec` and sorted with `sort_unstable`; the
//! length, the sample keys and the checksum must be equal, and the run's
//! walk over its result reports the first position out of order, if any.

use crate::mix;
use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{DescId, Descriptor, Handle, Result, Runtime, Scope, View};
use std::fmt::Write;

/// The most elements of a leaf (8 KiB: below the large-object threshold,
/// so leaves are allocated in the nursery).
const LEAF_MAX: usize = 1024;

/// A filter handles a subtree of at most this many elements in one go:
/// the kept elements are gathered and cut into new leaves of at most
/// `LEAF_MAX`, so leaves stay large however much the filters cut (filtering
/// leaf by leaf and then coalescing the small results would copy most
/// elements twice).
const CHUNK: usize = 4 * LEAF_MAX;

/// Filters (and the input's construction) fork only above this many
/// elements; below, a task would cost more than the work it carries.
const FILTER_GRAIN: usize = 8 * LEAF_MAX;

pub struct Quicksort;

/// The descriptors of the sequences' inner nodes and of the `(eq, gt)` pair.
#[derive(Clone, Copy)]
struct Descs {
    cat: DescId,
    pair: DescId,
}

/// Which elements a filter keeps, relative to the pivot.
#[derive(Clone, Copy)]
enum Keep {
    Less,
    Equal,
    Greater,
}

impl Keep {
    fn test(self, x: u64, pivot: u64) -> bool {
        match self {
            Keep::Less => x < pivot,
            Keep::Equal => x == pivot,
            Keep::Greater => x > pivot,
        }
    }
}

/// Input key `i`, in [0, range).
fn key(seed: u64, range: u64, i: usize) -> u64 {
    mix(mix(seed) ^ i as u64) % range
}

/// One level of a sequence.
enum Node<'a> {
    Empty,
    Leaf(&'a [u64]),
    Cat {
        len: usize,
        left: View<'a>,
        right: View<'a>,
    },
}

fn node(v: View<'_>) -> Node<'_> {
    if v.is_int() {
        Node::Empty
    } else if let Some(words) = v.raw_words() {
        Node::Leaf(words)
    } else {
        Node::Cat {
            len: v.raw(0) as usize,
            left: v.field(1),
            right: v.field(2),
        }
    }
}

fn len(v: View<'_>) -> usize {
    match node(v) {
        Node::Empty => 0,
        Node::Leaf(words) => words.len(),
        Node::Cat { len, .. } => len,
    }
}

/// Element `i` of a sequence, found in O(depth).
fn nth(mut v: View<'_>, mut i: usize) -> u64 {
    loop {
        match node(v) {
            Node::Empty => panic!("index {i} past the end of a sequence"),
            Node::Leaf(words) => return words[i],
            Node::Cat { left, right, .. } => {
                let left_len = len(left);
                v = if i < left_len {
                    left
                } else {
                    i -= left_len;
                    right
                };
            }
        }
    }
}

/// Calls `f` on every leaf of a sequence, in order.
fn for_each_leaf(v: View<'_>, f: &mut impl FnMut(&[u64])) {
    match node(v) {
        Node::Empty => {}
        Node::Leaf(words) => f(words),
        Node::Cat { left, right, .. } => {
            for_each_leaf(left, f);
            for_each_leaf(right, f);
        }
    }
}

/// The elements of a sequence, copied out in order.
fn elements(v: View<'_>) -> Vec<u64> {
    let mut out = Vec::with_capacity(len(v));
    for_each_leaf(v, &mut |words| out.extend_from_slice(words));
    out
}

/// `a ++ b`.
fn cat<'s>(s: &mut Scope<'s>, d: Descs, a: Handle<'_>, b: Handle<'_>) -> Result<Handle<'s>> {
    let (a_len, b_len) = (len(s.view(a)), len(s.view(b)));
    if a_len == 0 {
        return Ok(s.handle(s.view(b)));
    }
    if b_len == 0 {
        return Ok(s.handle(s.view(a)));
    }
    if a_len + b_len <= LEAF_MAX {
        let mut both = elements(s.view(a));
        both.extend(elements(s.view(b)));
        return s.alloc_raw(&both);
    }
    s.alloc_mixed(d.cat, &[a, b], &[(a_len + b_len) as u64])
}

/// A sequence of `words`, in leaves of at most `LEAF_MAX`.
fn from_words<'s>(s: &mut Scope<'s>, d: Descs, words: &[u64]) -> Result<Handle<'s>> {
    if words.len() <= LEAF_MAX {
        return s.alloc_raw(words);
    }
    s.scope_value(|s| {
        let (l, r) = words.split_at(words.len() / 2);
        let (l, r) = (from_words(s, d, l)?, from_words(s, d, r)?);
        s.alloc_mixed(d.cat, &[l, r], &[words.len() as u64])
    })
}

/// The input keys `lo..hi`, built in parallel.
fn input<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    seed: u64,
    range: u64,
    lo: usize,
    hi: usize,
) -> Result<Handle<'s>> {
    if hi - lo <= LEAF_MAX {
        return s.alloc_raw_with(hi - lo, |words| {
            for (k, w) in words.iter_mut().enumerate() {
                *w = key(seed, range, lo + k);
            }
        });
    }
    let mid = lo + (hi - lo) / 2;
    s.scope_value(|s| {
        let (l, r) = if hi - lo > FILTER_GRAIN {
            s.par2(
                &[],
                move |s, _| input(s, d, seed, range, lo, mid),
                move |s, _| input(s, d, seed, range, mid, hi),
            )?
        } else {
            (
                input(s, d, seed, range, lo, mid)?,
                input(s, d, seed, range, mid, hi)?,
            )
        };
        s.alloc_mixed(d.cat, &[l, r], &[(hi - lo) as u64])
    })
}

/// The elements `x` of `seq` with `keep.test(x, pivot)`, in order.
fn filter<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    seq: Handle<'_>,
    pivot: u64,
    keep: Keep,
) -> Result<Handle<'s>> {
    let (n, left, right) = match node(s.view(seq)) {
        Node::Cat { len, left, right } if len > CHUNK => (len, s.handle(left), s.handle(right)),
        _ => {
            let mut kept = Vec::new();
            for_each_leaf(s.view(seq), &mut |words| {
                kept.extend(words.iter().copied().filter(|&x| keep.test(x, pivot)))
            });
            return if kept.is_empty() {
                Ok(Handle::NIL)
            } else {
                from_words(s, d, &kept)
            };
        }
    };
    s.scope_value(|s| {
        let (a, b) = if n > FILTER_GRAIN {
            s.par2(
                &[left, right],
                move |s, e| filter(s, d, e[0], pivot, keep),
                move |s, e| filter(s, d, e[1], pivot, keep),
            )?
        } else {
            (
                filter(s, d, left, pivot, keep)?,
                filter(s, d, right, pivot, keep)?,
            )
        };
        cat(s, d, a, b)
    })
}

/// `seq` (at most `grain` elements) sorted sequentially.
fn sort_small<'s>(s: &mut Scope<'s>, d: Descs, seq: Handle<'_>) -> Result<Handle<'s>> {
    let mut keys = elements(s.view(seq));
    if keys.is_empty() {
        return Ok(Handle::NIL);
    }
    if keys.len() <= LEAF_MAX {
        return s.alloc_raw_with(keys.len(), |words| {
            words.copy_from_slice(&keys);
            words.sort_unstable();
        });
    }
    keys.sort_unstable();
    from_words(s, d, &keys)
}

fn quicksort<'s>(s: &mut Scope<'s>, d: Descs, seq: Handle<'_>, grain: usize) -> Result<Handle<'s>> {
    let n = len(s.view(seq));
    if n <= grain.max(1) {
        return sort_small(s, d, seq);
    }
    let pivot = nth(s.view(seq), n / 2);
    s.scope_value(|s| {
        let (lt, eq_gt) = s.par2(
            &[seq],
            move |s, e| filter(s, d, e[0], pivot, Keep::Less),
            move |s, e| {
                let (eq, gt) = s.par2(
                    e,
                    move |s, e| filter(s, d, e[0], pivot, Keep::Equal),
                    move |s, e| filter(s, d, e[0], pivot, Keep::Greater),
                )?;
                s.alloc_mixed(d.pair, &[eq, gt], &[])
            },
        )?;
        let (eq, gt) = (s.field(eq_gt, 0)?, s.field(eq_gt, 1)?);
        let (l, u) = s.par2(
            &[lt, gt],
            move |s, e| quicksort(s, d, e[0], grain),
            move |s, e| quicksort(s, d, e[1], grain),
        )?;
        let eq_u = cat(s, d, eq, u)?;
        cat(s, d, l, eq_u)
    })
}

/// What the run reports about its sorted sequence.
#[derive(Debug, PartialEq)]
struct Summary {
    len: usize,
    first: u64,
    middle: u64,
    last: u64,
    checksum: u64,
}

impl Summary {
    fn new() -> Summary {
        Summary {
            len: 0,
            first: 0,
            middle: 0,
            last: 0,
            checksum: 0,
        }
    }

    /// Takes the next key of a sequence of `expected` keys.
    fn push(&mut self, x: u64, expected: usize) {
        if self.len == 0 {
            self.first = x;
        }
        if self.len == expected / 2 {
            self.middle = x;
        }
        self.last = x;
        self.checksum = self.checksum.wrapping_mul(1_000_003).wrapping_add(x);
        self.len += 1;
    }
}

/// The summary of a sorted sequence and the first position out of order.
fn summarise(v: View<'_>) -> (Summary, Option<usize>) {
    let n = len(v);
    let (mut sum, mut previous, mut disorder) = (Summary::new(), 0u64, None);
    for_each_leaf(v, &mut |words| {
        for &x in words {
            if sum.len > 0 && x < previous && disorder.is_none() {
                disorder = Some(sum.len);
            }
            previous = x;
            sum.push(x, n);
        }
    });
    (sum, disorder)
}

impl Benchmark for Quicksort {
    fn name(&self) -> &'static str {
        "quicksort"
    }
    fn source(&self) -> &'static str {
        "manticore-numa-gc.md §4.1"
    }
    fn description(&self) -> &'static str {
        "NESL quicksort of a rope of integers: parallel filters, parallel recursion, concatenation"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "n",
                help: "number of integers to sort",
                quick: 300_000,
                paper: 10_000_000,
                scale: 40_000_000,
                min: 0,
                max: 1 << 32,
            },
            Param {
                name: "range",
                help: "keys are uniform in [0, range)",
                quick: 10_000,
                paper: 10_000,
                scale: 10_000,
                min: 1,
                max: 1 << 62,
            },
            Param {
                name: "grain",
                help: "sequences of at most this many elements are sorted sequentially",
                quick: LEAF_MAX as i64,
                paper: LEAF_MAX as i64,
                scale: LEAF_MAX as i64,
                min: 1,
                max: 1 << 32,
            },
            Param {
                name: "seed",
                help: "seed of the input keys",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, range, grain, seed) = (
            p.usize("n"),
            p.get("range") as u64,
            p.usize("grain"),
            p.get("seed") as u64,
        );
        let d = Descs {
            cat: rt
                .register(Descriptor::mixed("qs-cat", 3, &[1, 2]).map_err(rt_err)?)
                .map_err(rt_err)?,
            pair: rt
                .register(Descriptor::mixed("qs-pair", 2, &[0, 1]).map_err(rt_err)?)
                .map_err(rt_err)?,
        };
        let (got, disorder) = rt
            .run_on(0, move |s| -> Result<(Summary, Option<usize>)> {
                let xs = if n == 0 {
                    s.nil()
                } else {
                    input(s, d, seed, range, 0, n)?
                };
                let sorted = quicksort(s, d, xs, grain)?;
                Ok(summarise(s.view(sorted)))
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let mut out = String::new();
        writeln!(
            out,
            "quicksort: {} integers in [0, {range}) sorted",
            got.len
        )
        .unwrap();
        writeln!(
            out,
            "first {}, middle {}, last {}, checksum {}",
            got.first, got.middle, got.last, got.checksum
        )
        .unwrap();

        Ok(Outcome::new(out, move || {
            if let Some(i) = disorder {
                return Err(format!("the result is out of order at position {i}"));
            }
            let mut want: Vec<u64> = (0..n).map(|i| key(seed, range, i)).collect();
            want.sort_unstable();
            let mut summary = Summary::new();
            want.iter().for_each(|&x| summary.push(x, n));
            let want = summary;
            if got == want {
                Ok(())
            } else {
                Err(format!("got {got:?}, expected {want:?}"))
            }
        }))
    }
}
