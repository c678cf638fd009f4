//! The interpreter: runs a program on a [`Runtime`] and on the shadow
//! side by side, forcing collections and checking after each step.
//!
//! A program runs as one job on vproc 0. Its registers are root-stack slots
//! of that job; each operation runs in a nested scope, so its temporaries
//! are popped. Every operation is applied to the shadow first (which hands
//! out the oids), then to the heap, and the registers it wrote are compared
//! with the shadow at once (`check::compare`). Work that may run on another
//! vproc (`par2`'s second branch, `tabulate` and `par_map` elements, channel
//! threads) gets its oids in advance and the values it needs as
//! environments; before building, a `par2` branch and a channel thread
//! digest what they received, and the interpreter compares that digest with
//! the shadow's (data built on one vproc, read intact on the other).
//!
//! Forced collections (issue 5: "collections are forced at random points,
//! down to every allocation"): with `gc_every` = N, every N-th allocation of
//! a builder, on whichever vproc, is followed by a collection of a random
//! kind (minor 5 : major 3 : young global 1 : full global 1). The heap digest of the builder's
//! environment and of the object just built is taken before and after the
//! collection and must not change; the runtime's verifier (`verify` on)
//! runs inside the collection and aborts on a broken heap invariant
//! (manticore-numa-gc.md §2.3). `Op::Collect` forces a collection between
//! operations, and there everything reachable — registers and global roots
//! — is compared with the shadow before and after. A program ends with a
//! full check, a global collection, and a full check.
//!
//! `Op::Compiled` runs a section of compiled code (`crate::compiled`): the
//! registers go through one `numagc::compiled::Mutator`'s frames, and the
//! same shadow predicts what it reads and builds.
//!
//! A [`Fault`] makes a run go wrong on purpose — a store behind the
//! shadow's back, a corrupted shadow, a duplicated object, an abort, a hang —
//! so the tests can show that the checker and the CLI report it.

use crate::check::{compare, heap_digest, shadow_digest, Digest};
use crate::layout::{
    array_store_index, dag_plan, elem_plan, fresh_count, id_word, oid_of, payload, wide_is_value,
    Descs, Kind, Pick, CELL_RAW, CELL_VALUE, MID_SIZE, WIDE_SIZE,
};
use crate::program::{Build, COp, Collect, Op, Src, REGS};
use crate::rng::mix;
use crate::shadow::{src_val, Field, SVal, Shadow};
use numagc::{DescId, Fresh, GlobalRoot, Handle, Layout, Next, Runtime, Scope, Slot, Typed};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long `par2`'s first branch waits for another vproc to steal the
/// second (when there is another vproc) before it returns and the second
/// runs here.
pub(crate) const STEAL_WAIT: Duration = Duration::from_millis(20);

/// Global roots a program keeps at most (the oldest is dropped beyond).
pub const MAX_GLOBALS: usize = 16;

/// A deliberate fault, injected before operation `at` (or after the last
/// one), for the tests of the checker and of the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FaultKind {
    /// A store into a new array that the shadow is not told about.
    HeapStore,
    /// A raw word of a new raw object changed in the shadow only.
    ShadowRaw,
    /// Two heap copies of an object that the shadow says is one, shared.
    Duplicate,
    /// The process aborts (as the heap verifier does on a violation).
    Abort,
    /// The job stops making progress.
    Hang,
    /// A store into a new array by compiled code, behind the shadow's
    /// back; a compiled section's check must find it.
    CompiledStore,
}

impl FaultKind {
    pub const ALL: [(&'static str, FaultKind); 6] = [
        ("heap-store", FaultKind::HeapStore),
        ("shadow-raw", FaultKind::ShadowRaw),
        ("duplicate", FaultKind::Duplicate),
        ("abort", FaultKind::Abort),
        ("hang", FaultKind::Hang),
        ("compiled-store", FaultKind::CompiledStore),
    ];

    pub fn parse(s: &str) -> Option<FaultKind> {
        FaultKind::ALL
            .iter()
            .find(|(n, _)| *n == s)
            .map(|&(_, k)| k)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fault {
    pub kind: FaultKind,
    pub at: usize,
}

/// How to run a program.
#[derive(Clone)]
pub struct Options {
    /// Force a collection after every `gc_every`-th allocation (0: never).
    pub gc_every: u32,
    /// Seeds the kinds of the forced collections.
    pub seed: u64,
    pub fault: Option<Fault>,
    /// Called with the index of each operation before it runs.
    pub progress: Option<Arc<dyn Fn(usize) + Send + Sync>>,
    /// No operation starts after this instant: the program is cut short
    /// there, and the final checks run on what it built.
    pub deadline: Option<Instant>,
}

/// What went wrong, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Index of the operation (the program's length for the final checks).
    pub op: usize,
    pub kind: FailureKind,
    pub what: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureKind {
    /// The heap differs from the shadow, or changed across a collection.
    Violation,
    /// The runtime returned an error (a heap limit, a refused call).
    Runtime,
    /// The program's job panicked.
    Panic,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = match self.kind {
            FailureKind::Violation => "violation",
            FailureKind::Runtime => "runtime error",
            FailureKind::Panic => "panic",
        };
        write!(f, "{what} at op {}: {}", self.op, self.what)
    }
}

/// What a run checked and forced.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    pub ops: u64,
    /// Digest comparisons made.
    pub checks: u64,
    pub objects_checked: u64,
    pub bytes_checked: u64,
    /// Collections the program forced: minor, major, full global, young
    /// global (full when the runtime has no young ones); and promotions.
    pub forced_minor: u64,
    pub forced_major: u64,
    pub forced_global: u64,
    pub forced_young: u64,
    pub forced_compact: u64,
    pub promotions: u64,
    /// Compiled sections run (`Op::Compiled`) and their operations; what
    /// the compiled code did: inline allocations (`alloc`), `alloc_shared`,
    /// barrier stores (`store`, `init_shared`, `store_raw`), reads the
    /// shadow predicted (`field`, `field_shared`, `header`), `par2` forks,
    /// polls, and the inline allocations and barrier stores of register
    /// code (among the others). (Its forced minor collections count in
    /// `forced_minor`.)
    pub compiled_sections: u64,
    pub compiled_ops: u64,
    pub compiled_allocs: u64,
    pub compiled_shared_allocs: u64,
    pub compiled_stores: u64,
    pub compiled_reads: u64,
    pub compiled_forks: u64,
    pub compiled_polls: u64,
    pub compiled_register_allocs: u64,
    pub compiled_register_stores: u64,
    /// Builds by register code that returns through the shadow stack
    /// (`Sp::pop`).
    pub compiled_stack_returns: u64,
}

/// Indices of [`Tally::compiled`], in [`Report`]'s order.
pub(crate) mod ctr {
    pub const SECTIONS: usize = 0;
    pub const OPS: usize = 1;
    pub const ALLOCS: usize = 2;
    pub const SHARED: usize = 3;
    pub const STORES: usize = 4;
    pub const READS: usize = 5;
    pub const FORKS: usize = 6;
    pub const POLLS: usize = 7;
    pub const REG_ALLOCS: usize = 8;
    pub const REG_STORES: usize = 9;
    pub const STACK_RETURNS: usize = 10;
}

/// Counters shared by every vproc a program runs on.
#[derive(Default)]
pub(crate) struct Tally {
    checks: AtomicU64,
    objects: AtomicU64,
    bytes: AtomicU64,
    /// Minor, major, full global, young global, compaction; promotions.
    pub(crate) forced: [AtomicU64; 6],
    /// What compiled code did ([`ctr`]).
    pub(crate) compiled: [AtomicU64; 11],
    /// A violation found where only a runtime error can be returned (a
    /// `par2` branch, a thread, an element function).
    failure: Mutex<Option<String>>,
}

impl Tally {
    pub(crate) fn digest(&self, d: &Digest) {
        self.checks.fetch_add(1, Ordering::Relaxed);
        self.objects.fetch_add(d.objects, Ordering::Relaxed);
        self.bytes.fetch_add(d.bytes, Ordering::Relaxed);
    }

    fn report(&self, ops: u64) -> Report {
        let f = |i: usize| self.forced[i].load(Ordering::Relaxed);
        let c = |i: usize| self.compiled[i].load(Ordering::Relaxed);
        Report {
            ops,
            checks: self.checks.load(Ordering::Relaxed),
            objects_checked: self.objects.load(Ordering::Relaxed),
            bytes_checked: self.bytes.load(Ordering::Relaxed),
            forced_minor: f(0),
            forced_major: f(1),
            forced_global: f(2),
            forced_young: f(3),
            forced_compact: f(4),
            promotions: f(5),
            compiled_sections: c(ctr::SECTIONS),
            compiled_ops: c(ctr::OPS),
            compiled_allocs: c(ctr::ALLOCS),
            compiled_shared_allocs: c(ctr::SHARED),
            compiled_stores: c(ctr::STORES),
            compiled_reads: c(ctr::READS),
            compiled_forks: c(ctr::FORKS),
            compiled_polls: c(ctr::POLLS),
            compiled_register_allocs: c(ctr::REG_ALLOCS),
            compiled_register_stores: c(ctr::REG_STORES),
            compiled_stack_returns: c(ctr::STACK_RETURNS),
        }
    }

    pub(crate) fn count(&self, i: usize) {
        self.count_n(i, 1);
    }

    /// Counts `n` events of counter `i` at once.
    pub(crate) fn count_n(&self, i: usize, n: u64) {
        self.compiled[i].fetch_add(n, Ordering::Relaxed);
    }

    /// Keeps the first violation and turns it into a runtime error that a
    /// closure of the runtime may return.
    pub(crate) fn stash(&self, f: Fail) -> numagc::Error {
        match f {
            Fail::Runtime(e) => e,
            Fail::Violation(msg) => {
                let mut slot = self.failure.lock().unwrap_or_else(|p| p.into_inner());
                if slot.is_none() {
                    *slot = Some(msg);
                }
                numagc::Error::misuse("torture: a violation was found (see the report)")
            }
        }
    }

    fn take_failure(&self) -> Option<String> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// A failure inside an operation.
#[derive(Debug)]
pub(crate) enum Fail {
    Violation(String),
    Runtime(numagc::Error),
}

impl From<numagc::Error> for Fail {
    fn from(e: numagc::Error) -> Fail {
        Fail::Runtime(e)
    }
}

pub(crate) type R<T> = Result<T, Fail>;

/// Decides which allocations are followed by a forced collection, and of
/// which kind: one counter for the whole program, on every vproc.
pub(crate) struct Ticker {
    every: u64,
    count: AtomicU64,
    seed: u64,
}

impl Ticker {
    pub(crate) fn due(&self) -> Option<Collect> {
        if self.every == 0 {
            return None;
        }
        let c = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if !c.is_multiple_of(self.every) {
            return None;
        }
        Some(match mix(self.seed ^ c) % 20 {
            0..=9 => Collect::Minor,
            10..=15 => Collect::Major,
            16..=17 => Collect::Young,
            18 => Collect::Global,
            _ => Collect::Compact,
        })
    }
}

/// What every builder needs; cheap to clone into another vproc's work.
#[derive(Clone)]
pub(crate) struct Cx {
    pub(crate) descs: Descs,
    pub(crate) large_words: usize,
    pub(crate) ticker: Arc<Ticker>,
    pub(crate) tally: Arc<Tally>,
}

fn collect(s: &mut Scope<'_>, kind: Collect) {
    match kind {
        Collect::Minor => s.collect_minor(),
        Collect::Major => drop(s.collect_major()),
        Collect::Global => drop(s.collect_global()),
        Collect::Young => drop(s.collect_global_young()),
        Collect::Compact => drop(s.compact()),
    }
}

impl Cx {
    /// Forces a collection of `kind`; the heap digest of `roots` must not
    /// change across it.
    fn force(&self, s: &mut Scope<'_>, kind: Collect, roots: &[Handle<'_>]) -> R<()> {
        let vproc = s.vproc();
        let before = heap_digest(s, self.descs, roots).map_err(|e| {
            Fail::Violation(format!(
                "before a forced {kind:?} collection on vproc {vproc}: {e}"
            ))
        })?;
        collect(s, kind);
        let after = heap_digest(s, self.descs, roots).map_err(|e| {
            Fail::Violation(format!(
                "after a forced {kind:?} collection on vproc {vproc}: {e}"
            ))
        })?;
        self.tally.digest(&before);
        self.tally.digest(&after);
        self.tally.forced[kind as usize].fetch_add(1, Ordering::Relaxed);
        if before != after {
            return Err(Fail::Violation(format!(
                "a forced {kind:?} collection on vproc {vproc} changed what is reachable: checksum {:#x} ({} objects, {} bytes) before, {:#x} ({} objects, {} bytes) after",
                before.checksum, before.objects, before.bytes, after.checksum, after.objects, after.bytes
            )));
        }
        Ok(())
    }

    /// One allocation happened: force a collection if it is due, keeping
    /// `env` and `extra` as the roots to digest.
    fn tick(&self, s: &mut Scope<'_>, env: &[Handle<'_>], extra: &[Handle<'_>]) -> R<()> {
        match self.ticker.due() {
            Some(kind) => {
                let roots: Vec<Handle<'_>> = env.iter().chain(extra).copied().collect();
                self.force(s, kind, &roots)
            }
            None => Ok(()),
        }
    }
}

/// Hands out the oids of a build, from a base the shadow chose.
pub(crate) struct Ids(pub(crate) u32);

impl Ids {
    pub(crate) fn next(&mut self) -> u64 {
        let id = id_word(self.0);
        self.0 += 1;
        id
    }
}

/// The heap value of a source (see `shadow::src_val`).
fn hsrc<'e>(s: Src, env: &[Handle<'e>], k: u64) -> Handle<'e> {
    match s {
        Src::Int(i) => Handle::int(i.wrapping_add(k as i64)),
        Src::Reg(_) if env.is_empty() => Handle::int(0),
        Src::Reg(r) => env[r as usize % env.len()],
    }
}

fn hpick<'e>(
    p: Pick,
    srcs: &[Handle<'e>; 2],
    nodes: &[Handle<'e>],
    fresh: &[Handle<'e>],
) -> Handle<'e> {
    match p {
        Pick::Int(i) => Handle::int(i),
        Pick::Src(j) => srcs[j],
        Pick::Node(k) => nodes[k],
        Pick::Fresh(k) => fresh[k],
    }
}

fn int_of(id: u64) -> Handle<'static> {
    Handle::int(id as i64)
}

/// Builds `b` in the heap from `env`, with oids from `base`: the mirror of
/// `Shadow::build`.
fn build<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    b: &Build,
    env: &[Handle<'_>],
    base: u32,
) -> R<Handle<'s>> {
    let mut ids = Ids(base);
    let ids = &mut ids;
    let pair = cx.descs.pair;
    match *b {
        Build::List { len, elem } => s.scope_value(|s| {
            let cur = s.slot(Handle::NIL);
            for k in 0..len as u64 {
                let e = hsrc(elem, env, k);
                s.alloc_mixed_to(cur, pair, &[e, cur.get()], &[ids.next()])?;
                cx.tick(s, env, &[cur.get()])?;
            }
            Ok(cur.get())
        }),
        Build::Tree { depth, leaf } => tree(s, cx, ids, depth, hsrc(leaf, env, 0), env),
        Build::Dag { nodes, seed, srcs } => s.scope_value(|s| {
            let sv = [hsrc(srcs[0], env, 0), hsrc(srcs[1], env, 0)];
            let mut built = Vec::with_capacity(nodes as usize);
            for [a, b] in dag_plan(seed, nodes as usize) {
                let (a, b) = (hpick(a, &sv, &built, &[]), hpick(b, &sv, &built, &[]));
                let h = s.alloc_mixed(pair, &[a, b], &[ids.next()])?;
                built.push(h);
                cx.tick(s, env, &[h])?;
            }
            let mut elems = vec![int_of(ids.next())];
            elems.extend(built);
            let v = s.alloc_vector(&elems)?;
            cx.tick(s, env, &[v])?;
            Ok(v)
        }),
        Build::Vector { len, seed, srcs } => vector(
            s,
            cx,
            ids,
            len as usize,
            seed,
            [hsrc(srcs[0], env, 0), hsrc(srcs[1], env, 0)],
            env,
        ),
        Build::Raw { len } => raw(s, cx, ids, len as usize, env),
        Build::Rec { a, b } => {
            let id = ids.next();
            let h = s.alloc_mixed(
                cx.descs.rec,
                &[hsrc(a, env, 0), hsrc(b, env, 0)],
                &[id, payload(id, 2), payload(id, 4)],
            )?;
            cx.tick(s, env, &[h])?;
            Ok(h)
        }
        Build::Wide { seed, srcs } => {
            let sv = [hsrc(srcs[0], env, 0), hsrc(srcs[1], env, 0)];
            wide(s, cx, ids, cx.descs.wide, WIDE_SIZE, seed, sv, env)
        }
        Build::Mid { seed, srcs } => {
            let sv = [hsrc(srcs[0], env, 0), hsrc(srcs[1], env, 0)];
            wide(s, cx, ids, cx.descs.mid, MID_SIZE, seed, sv, env)
        }
        Build::Large {
            raw: true, extra, ..
        } => raw(s, cx, ids, cx.large_words + extra as usize, env),
        Build::Large {
            raw: false,
            extra,
            seed,
            srcs,
        } => {
            let sv = [hsrc(srcs[0], env, 0), hsrc(srcs[1], env, 0)];
            vector(s, cx, ids, cx.large_words + extra as usize, seed, sv, env)
        }
        Build::Array { len, init } => {
            let a = s.alloc_array(len as usize + 1, hsrc(init, env, 0))?;
            s.set(a, 0, int_of(ids.next()))?;
            cx.tick(s, env, &[a])?;
            Ok(a)
        }
        Build::Cell { init } => {
            let h = s.alloc_mixed(cx.descs.cell, &[hsrc(init, env, 0)], &[ids.next(), 0])?;
            cx.tick(s, env, &[h])?;
            Ok(h)
        }
    }
}

/// A mixed object of `size` fields in the `wide` layout (`Shadow::wide`).
#[allow(clippy::too_many_arguments)]
fn wide<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    desc: numagc::DescId,
    size: usize,
    seed: u64,
    sv: [Handle<'_>; 2],
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    let plan = elem_plan(seed, size, false);
    let id = ids.next();
    let values: Vec<Handle<'_>> = (1..size)
        .filter(|&i| wide_is_value(i))
        .map(|i| hpick(plan[i - 1], &sv, &[], &[]))
        .collect();
    let raws: Vec<u64> = (0..size)
        .filter(|&i| !wide_is_value(i))
        .map(|i| if i == 0 { id } else { payload(id, i) })
        .collect();
    let h = s.alloc_mixed(desc, &values, &raws)?;
    cx.tick(s, env, &[h])?;
    Ok(h)
}

/// The pair's layout as a typed handle knows it (`numagc::Typed`): the
/// id raw, then two values; the torture's first descriptor
/// (`Descs::register`), checked before it is used.
struct TypedPair;

impl Layout for TypedPair {
    const NAME: &'static str = "torture.pair";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 3;
    const VALUES: u32 = 0b110;
}

fn tree<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    depth: u8,
    leaf: Handle<'_>,
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    // The nodes at odd depths are built and held through typed handles,
    // half of them in frames (`Scope::frame_fresh`), so a tree mixes the
    // kinds of handle, each node's children made by another kind.
    if depth % 4 == 1 && cx.descs.pair == TypedPair::DESC {
        return typed_tree(s, cx, ids, depth, leaf, env);
    }
    if depth % 4 == 3 && cx.descs.pair == TypedPair::DESC {
        return frame_tree(s, cx, ids, depth, leaf, env);
    }
    s.scope_value(|s| {
        let h = if depth == 0 {
            s.alloc_mixed(cx.descs.pair, &[leaf, Handle::NIL], &[ids.next()])?
        } else {
            let l = tree(s, cx, ids, depth - 1, leaf, env)?;
            let r = tree(s, cx, ids, depth - 1, leaf, env)?;
            s.alloc_mixed(cx.descs.pair, &[l, r], &[ids.next()])?
        };
        cx.tick(s, env, &[h])?;
        Ok(h)
    })
}

/// A node of [`tree`] built through a typed handle, read back through it
/// after the tick's collections: its id must be the one it was given.
fn typed_tree<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    depth: u8,
    leaf: Handle<'_>,
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    let t = s.scope_typed(|s| -> R<Typed<'_, TypedPair>> {
        let l = tree(s, cx, ids, depth - 1, leaf, env)?;
        let r = tree(s, cx, ids, depth - 1, leaf, env)?;
        let id = ids.next();
        let t = s.alloc_typed::<TypedPair>(&[l, r], &[id])?;
        cx.tick(s, env, &[t.untyped()])?;
        let got = s.raw_of(t, 0);
        if got != id {
            return Err(Fail::Violation(format!(
                "a typed handle read id {got:#x} where its node has {id:#x}"
            )));
        }
        Ok(t)
    })?;
    Ok(t.untyped())
}

/// A node of [`tree`] built in a frame (`Scope::frame_fresh`): each child
/// is built in a scope of its own, whose end pops the child's handles, so
/// that the frame's slot it is kept in (`FrameSlot::keep_record`) is its
/// only root across the tick's collections; the node returns unrooted
/// (`Fresh`) and is rooted by `scope_fresh`. Its id, read back after
/// another tick, must be the one it was given.
fn frame_tree<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    depth: u8,
    leaf: Handle<'_>,
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    let mut id = 0;
    let t = s.scope_fresh(|s| {
        s.frame_fresh(|s, [left, right]| -> R<Fresh<'_, TypedPair>> {
            let l = s.scope(|s| -> R<_> {
                let l = tree(s, cx, ids, depth - 1, leaf, env)?;
                Ok(left.keep_record(pair_record(s, l)?))
            })?;
            let r = s.scope(|s| -> R<_> {
                let r = tree(s, cx, ids, depth - 1, leaf, env)?;
                Ok(right.keep_record(pair_record(s, r)?))
            })?;
            cx.tick(s, env, &[])?;
            id = ids.next();
            Ok(s.alloc_fresh::<TypedPair>(&[l.untyped(), r.untyped()], &[id])?)
        })
    })?;
    cx.tick(s, env, &[t.untyped()])?;
    let got = s.raw_of(t, 0);
    if got != id {
        return Err(Fail::Violation(format!(
            "a node built in a frame read id {got:#x} where it has {id:#x}"
        )));
    }
    Ok(t.untyped())
}

/// `h`'s node read as a typed record (one look at its header).
fn pair_record<'a>(s: &'a Scope<'_>, h: Handle<'_>) -> R<numagc::Record<'a, TypedPair>> {
    s.view(h)
        .record::<TypedPair>()
        .ok_or_else(|| Fail::Violation("a tree's child is not a pair".into()))
}

fn raw<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    len: usize,
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    let id = ids.next();
    let h = s.alloc_raw_with(len, |w| {
        for (i, x) in w.iter_mut().enumerate() {
            *x = if i == 0 { id } else { payload(id, i) };
        }
    })?;
    cx.tick(s, env, &[h])?;
    Ok(h)
}

#[allow(clippy::too_many_arguments)]
fn vector<'s>(
    s: &mut Scope<'s>,
    cx: &Cx,
    ids: &mut Ids,
    len: usize,
    seed: u64,
    sv: [Handle<'_>; 2],
    env: &[Handle<'_>],
) -> R<Handle<'s>> {
    s.scope_value(|s| {
        let mut fresh = Vec::new();
        for f in 0..fresh_count(len) {
            let h = s.alloc_mixed(
                cx.descs.pair,
                &[Handle::int(f as i64), Handle::NIL],
                &[ids.next()],
            )?;
            fresh.push(h);
            cx.tick(s, env, &[h])?;
        }
        let mut elems = vec![int_of(ids.next())];
        elems.extend(
            elem_plan(seed, len, true)
                .into_iter()
                .map(|p| hpick(p, &sv, &[], &fresh)),
        );
        let v = s.alloc_vector(&elems)?;
        cx.tick(s, env, &[v])?;
        Ok(v)
    })
}

/// A value's oid (an element of a sequence), or its integer.
fn oid_or_int(v: numagc::View<'_>) -> numagc::Result<i64> {
    if let Some(i) = v.as_int() {
        return Ok(i);
    }
    let w = v.try_raw(0)?;
    oid_of(w)
        .map(|o| o as i64)
        .ok_or_else(|| numagc::Error::misuse(format!("element without an id: {v:?}")))
}

pub(crate) type Received = Arc<Mutex<Option<Result<Digest, String>>>>;

pub(crate) fn received() -> Received {
    Arc::new(Mutex::new(None))
}

/// The program's state: registers and global roots, in the heap and in the shadow.
pub(crate) struct Machine<'s> {
    pub(crate) regs: Vec<Slot<'s>>,
    pub(crate) sregs: [SVal; REGS],
    globals: Vec<(Arc<GlobalRoot>, SVal)>,
    pub(crate) sh: Shadow,
    pub(crate) cx: Cx,
}

pub(crate) fn r(i: u8) -> usize {
    i as usize % REGS
}

impl<'s> Machine<'s> {
    fn reg(&self, i: u8) -> Handle<'s> {
        self.regs[r(i)].get()
    }

    fn env(&self) -> Vec<Handle<'s>> {
        self.regs.iter().map(|x| x.get()).collect()
    }

    fn put(&mut self, s: &Scope<'_>, dst: u8, h: Handle<'_>, v: SVal) {
        s.assign(self.regs[r(dst)], h);
        self.sregs[r(dst)] = v;
    }

    /// Compares registers `which` with the shadow.
    pub(crate) fn check_regs(&self, s: &mut Scope<'_>, which: &[u8]) -> R<()> {
        let names: Vec<String> = which.iter().map(|&i| format!("r{}", r(i))).collect();
        let roots: Vec<Handle<'_>> = which.iter().map(|&i| self.reg(i)).collect();
        let want: Vec<SVal> = which.iter().map(|&i| self.sregs[r(i)]).collect();
        let d =
            compare(s, self.cx.descs, &self.sh, &names, &roots, &want).map_err(Fail::Violation)?;
        self.cx.tally.digest(&d);
        Ok(())
    }

    /// Compares everything reachable (registers and global roots) with the
    /// shadow; with `kind`, forces that collection and compares again.
    fn full_check(&self, s: &mut Scope<'_>, kind: Option<Collect>) -> R<()> {
        s.scope(|s| {
            let mut names: Vec<String> = (0..REGS).map(|i| format!("r{i}")).collect();
            let mut roots = self.env();
            let mut want = self.sregs.to_vec();
            for (k, (g, v)) in self.globals.iter().enumerate() {
                names.push(format!("global{k}"));
                roots.push(s.get_global(g).unwrap());
                want.push(*v);
            }
            let d = compare(s, self.cx.descs, &self.sh, &names, &roots, &want)
                .map_err(Fail::Violation)?;
            self.cx.tally.digest(&d);
            if let Some(kind) = kind {
                collect(s, kind);
                self.cx.tally.forced[kind as usize].fetch_add(1, Ordering::Relaxed);
                let after =
                    compare(s, self.cx.descs, &self.sh, &names, &roots, &want).map_err(|e| {
                        Fail::Violation(format!("after a forced {kind:?} collection: {e}"))
                    })?;
                self.cx.tally.digest(&after);
            }
            Ok(())
        })
    }

    pub(crate) fn violation_from(&self, e: numagc::Error) -> Fail {
        match self.cx.tally.take_failure() {
            Some(msg) => Fail::Violation(msg),
            None => Fail::Runtime(e),
        }
    }

    /// Checks what a branch or thread reported it received against the
    /// shadow's digest of the values sent.
    pub(crate) fn check_received(&self, got: &Received, want: Digest, what: &str) -> R<()> {
        if let Some(msg) = self.cx.tally.take_failure() {
            return Err(Fail::Violation(msg));
        }
        match got.lock().unwrap_or_else(|p| p.into_inner()).take() {
            Some(Ok(d)) if d == want => {
                self.cx.tally.digest(&d);
                Ok(())
            }
            Some(Ok(d)) => Err(Fail::Violation(format!(
                "{what} received data that differs from what was sent: checksum {:#x} ({} objects), shadow {:#x} ({} objects)",
                d.checksum, d.objects, want.checksum, want.objects
            ))),
            Some(Err(e)) => Err(Fail::Violation(format!("{what} received data it cannot read: {e}"))),
            None => Err(Fail::Violation(format!("{what} did not report what it received"))),
        }
    }

    fn step(&mut self, s: &mut Scope<'_>, op: &Op) -> R<()> {
        let lw = self.cx.large_words;
        match op {
            Op::Build { dst, build: b } => {
                let base = self.sh.next_oid();
                let v = self.sh.build(b, &self.sregs, lw);
                let env = self.env();
                let h = build(s, &self.cx, b, &env, base)?;
                self.put(s, *dst, h, v);
                self.check_regs(s, &[*dst])
            }
            Op::Move { dst, src } => {
                let (h, v) = (self.reg(*src), self.sregs[r(*src)]);
                self.put(s, *dst, h, v);
                Ok(())
            }
            Op::Load { dst, src, field } => {
                let from = self.sregs[r(*src)];
                let Some(o) = self.sh.obj(from) else {
                    return Ok(());
                };
                let values = o.values();
                if values.is_empty() {
                    return Ok(());
                }
                let (pos, v) = values[*field as usize % values.len()];
                let h = if o.kind == Kind::Seq {
                    s.seq_get(self.reg(*src), pos)?
                } else {
                    s.field(self.reg(*src), pos)?
                };
                self.put(s, *dst, h, v);
                self.check_regs(s, &[*dst])
            }
            Op::Clear { dst } => {
                self.put(s, *dst, Handle::NIL, SVal::Int(0));
                Ok(())
            }
            Op::Store {
                obj,
                index,
                value,
                fresh,
            } => {
                let target = self.sregs[r(*obj)];
                let at = match self.sh.obj(target) {
                    Some(o) if o.kind == Kind::Array => array_store_index(o.fields.len(), *index),
                    Some(o) if o.kind == Kind::Cell => Some(CELL_VALUE),
                    _ => None,
                };
                let Some(at) = at else { return Ok(()) };
                let env = self.env();
                let (mut h, mut v) = (hsrc(*value, &env, 0), src_val(*value, &self.sregs, 0));
                if *fresh {
                    // A new local object: the store must promote it.
                    let base = self.sh.next_oid();
                    v = self.sh.pair(v, SVal::Int(1));
                    h =
                        s.alloc_mixed(self.cx.descs.pair, &[h, Handle::int(1)], &[id_word(base)])?;
                }
                s.set(self.reg(*obj), at, h)?;
                if let Some(o) = self.sh.obj_mut(target) {
                    o.fields[at] = Field::Val(v);
                }
                self.check_regs(s, &[*obj])
            }
            Op::StoreRaw { obj, value } => {
                let target = self.sregs[r(*obj)];
                if self.sh.kind(target) != Some(Kind::Cell) {
                    return Ok(());
                }
                s.set_raw(self.reg(*obj), CELL_RAW, *value)?;
                if let Some(o) = self.sh.obj_mut(target) {
                    o.fields[CELL_RAW] = Field::Raw(*value);
                }
                self.check_regs(s, &[*obj])
            }
            Op::Promote { reg } => {
                let g = s.promote(self.reg(*reg)).unwrap();
                s.assign(self.regs[r(*reg)], g);
                self.cx.tally.forced[5].fetch_add(1, Ordering::Relaxed);
                self.check_regs(s, &[*reg])
            }
            Op::GlobalAdd { src } => {
                let g = s.global_root(self.reg(*src)).unwrap();
                self.globals.push((Arc::new(g), self.sregs[r(*src)]));
                if self.globals.len() > MAX_GLOBALS {
                    self.globals.remove(0);
                }
                Ok(())
            }
            Op::GlobalDrop { index } => {
                if !self.globals.is_empty() {
                    self.globals.remove(*index as usize % self.globals.len());
                }
                Ok(())
            }
            Op::GlobalGet { dst, index } => {
                if self.globals.is_empty() {
                    return Ok(());
                }
                let (g, v) = self.globals[*index as usize % self.globals.len()].clone();
                let h = s.get_global(&g).unwrap();
                self.put(s, *dst, h, v);
                self.check_regs(s, &[*dst])
            }
            Op::GlobalSet { index, src } => {
                if self.globals.is_empty() {
                    return Ok(());
                }
                let k = *index as usize % self.globals.len();
                s.set_global(&self.globals[k].0, self.reg(*src)).unwrap();
                self.globals[k].1 = self.sregs[r(*src)];
                Ok(())
            }
            Op::Par {
                dst,
                env,
                global,
                a,
                b,
            } => self.par(s, *dst, *env, *global, a, b),
            Op::Tabulate { dst, env, n, grain } => {
                let e = self.sregs[r(*env)];
                let base = self.sh.next_oid();
                let elems: Vec<SVal> = (0..*n as i64)
                    .map(|i| self.sh.pair(e, SVal::Int(i)))
                    .collect();
                let v = self.sh.seq(elems);
                let cx = self.cx.clone();
                let h = s
                    .tabulate(
                        &[self.reg(*env)],
                        0,
                        *n as usize,
                        *grain as usize,
                        move |s, env, i| {
                            let h = s.alloc_mixed(
                                cx.descs.pair,
                                &[env[0], Handle::int(i as i64)],
                                &[id_word(base + i as u32)],
                            )?;
                            cx.tick(s, env, &[h]).map_err(|f| cx.tally.stash(f))?;
                            Ok(h)
                        },
                    )
                    .map_err(|e| self.violation_from(e))?;
                self.put(s, *dst, h, v);
                self.check_regs(s, &[*dst])
            }
            Op::ParMap { dst, src, grain } => {
                let from = self.sregs[r(*src)];
                if self.sh.kind(from) != Some(Kind::Seq) {
                    return Ok(());
                }
                let elems = self.sh.value_fields(from);
                let first = match elems.first() {
                    Some(SVal::Obj(o)) => *o,
                    _ => 0,
                };
                let base = self.sh.next_oid();
                let mapped: Vec<SVal> = elems
                    .iter()
                    .map(|&e| self.sh.pair(e, SVal::Int(7)))
                    .collect();
                let v = self.sh.seq(mapped);
                let cx = self.cx.clone();
                let h = s
                    .par_map(&[], self.reg(*src), *grain as usize, move |s, env, e| {
                        let o = oid_or_int(s.view(e))? as u32;
                        let id = id_word(base + o.wrapping_sub(first));
                        let h = s.alloc_mixed(cx.descs.pair, &[e, Handle::int(7)], &[id])?;
                        cx.tick(s, env, &[h]).map_err(|f| cx.tally.stash(f))?;
                        Ok(h)
                    })
                    .map_err(|e| self.violation_from(e))?;
                self.put(s, *dst, h, v);
                self.check_regs(s, &[*dst])
            }
            Op::Reduce { src, grain } => {
                let from = self.sregs[r(*src)];
                if self.sh.kind(from) != Some(Kind::Seq) {
                    return Ok(());
                }
                let want: i64 = self
                    .sh
                    .value_fields(from)
                    .iter()
                    .map(|e| if let SVal::Obj(o) = e { *o as i64 } else { 0 })
                    .sum();
                let h = s.seq_reduce(
                    &[],
                    self.reg(*src),
                    *grain as usize,
                    Handle::int(0),
                    |s, _, x, y| Ok(Handle::int(oid_or_int(s.view(x))? + oid_or_int(s.view(y))?)),
                )?;
                let got = oid_or_int(s.view(h))?;
                if got != want {
                    return Err(Fail::Violation(format!(
                        "seq_reduce over r{} summed the element ids to {got}, the shadow to {want}",
                        r(*src)
                    )));
                }
                Ok(())
            }
            Op::Channel {
                dst,
                src,
                build: b,
                mutate,
            } => self.channel(s, *dst, *src, b, *mutate),
            Op::Garbage { objects } => s.scope(|s| {
                let env = self.env();
                let keep = s.slot(Handle::NIL);
                for k in 0..*objects as u64 {
                    if k % 16 == 0 {
                        s.assign(keep, Handle::NIL);
                    }
                    if k % 3 == 0 {
                        s.alloc_raw_with(1 + (k % 5) as usize, |w| w.fill(k))?;
                    } else {
                        s.alloc_mixed_to(
                            keep,
                            self.cx.descs.pair,
                            &[Handle::int(k as i64), keep.get()],
                            &[k],
                        )?;
                    }
                    self.cx.tick(s, &env, &[])?;
                }
                Ok(())
            }),
            Op::Collect(kind) => self.full_check(s, Some(*kind)),
            Op::Check => self.full_check(s, None),
            Op::Compiled(cops) => self.compiled(s, cops),
            Op::Blocking { spins, sleep } => {
                let (spins, sleep) = (*spins, *sleep);
                s.blocking(move || {
                    let mut x = u64::from(spins);
                    for _ in 0..spins {
                        x = std::hint::black_box(x.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 1);
                    }
                    if sleep {
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    x
                })?;
                Ok(())
            }
        }
    }

    fn par(
        &mut self,
        s: &mut Scope<'_>,
        dst: [u8; 2],
        env: [u8; 2],
        global: Option<u32>,
        a: &Build,
        b: &Build,
    ) -> R<()> {
        let lw = self.cx.large_words;
        let senv = [self.sregs[r(env[0])], self.sregs[r(env[1])]];
        let g = global
            .filter(|_| !self.globals.is_empty())
            .map(|k| self.globals[k as usize % self.globals.len()].clone());
        let mut sent = senv.to_vec();
        if let Some((_, v)) = &g {
            sent.push(*v);
        }
        let want = shadow_digest(&self.sh, &sent);
        let base_a = self.sh.next_oid();
        let va = self.sh.build(a, &senv, lw);
        let base_b = self.sh.next_oid();
        let vb = self.sh.build(b, &senv, lw);
        let got = received();
        let (cx_a, cx_b, got_b, b) = (self.cx.clone(), self.cx.clone(), got.clone(), b.clone());
        let root = g.map(|(g, _)| g);
        let started = Arc::new(AtomicBool::new(false));
        let started_b = started.clone();
        let hs = s.par2(
            &[self.reg(env[0]), self.reg(env[1])],
            |s, env| {
                let h = build(s, &cx_a, a, env, base_a).map_err(|f| cx_a.tally.stash(f))?;
                // Give an idle vproc the time to steal `b`, so that what this
                // vproc built is read on the other one (safepoints meanwhile:
                // a thief's request for the environment is served here).
                let t = Instant::now();
                while s.vprocs() > 1 && !started.load(Ordering::Acquire) && t.elapsed() < STEAL_WAIT
                {
                    s.poll();
                    std::hint::spin_loop();
                }
                Ok(h)
            },
            move |s, env| {
                started_b.store(true, Ordering::Release);
                let d = s.scope(|s| {
                    let mut seen: Vec<Handle<'_>> = env.to_vec();
                    if let Some(g) = &root {
                        seen.push(s.get_global(g).unwrap());
                    }
                    heap_digest(s, cx_b.descs, &seen)
                });
                *got_b.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
                build(s, &cx_b, &b, env, base_b).map_err(|f| cx_b.tally.stash(f))
            },
        );
        let (ha, hb) = hs.map_err(|e| self.violation_from(e))?;
        self.check_received(&got, want, "a par2 branch")?;
        self.put(s, dst[0], ha, va);
        self.put(s, dst[1], hb, vb);
        self.check_regs(s, &dst)
    }

    fn channel(&mut self, s: &mut Scope<'_>, dst: u8, src: u8, b: &Build, mutate: bool) -> R<()> {
        let lw = self.cx.large_words;
        let sent = self.sregs[r(src)];
        let want = shadow_digest(&self.sh, &[sent]);
        let base = self.sh.next_oid();
        let v = self.sh.build(b, &[sent], lw);
        let store_at = match self.sh.obj(sent) {
            Some(o) if mutate && o.kind == Kind::Array => array_store_index(o.fields.len(), base),
            Some(o) if mutate && o.kind == Kind::Cell => Some(CELL_VALUE),
            _ => None,
        };
        if let Some(i) = store_at {
            if let Some(o) = self.sh.obj_mut(sent) {
                o.fields[i] = Field::Val(v);
            }
        }
        let (to, from) = (s.channel(), s.channel());
        let got = received();
        let (cx, got_t, b, to_t, from_t) = (
            self.cx.clone(),
            got.clone(),
            b.clone(),
            to.clone(),
            from.clone(),
        );
        let target = s.vprocs() - 1;
        s.spawn_on(target, &[], move |_, _| {
            Ok(Next::recv(&to_t, &[], move |s, _, value| {
                let out = catch_unwind(AssertUnwindSafe(|| -> R<Handle<'_>> {
                    let d = heap_digest(s, cx.descs, &[value]);
                    *got_t.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
                    let h = build(s, &cx, &b, &[value], base)?;
                    if let Some(i) = store_at {
                        // A local value stored into a global mutable object
                        // on this vproc: the write barrier promotes it.
                        s.set(value, i, h)?;
                    }
                    Ok(h)
                }));
                let reply = match out {
                    Ok(Ok(h)) => h,
                    Ok(Err(f)) => {
                        let e = cx.tally.stash(f);
                        cx.tally
                            .stash(Fail::Violation(format!("the channel thread failed: {e}")));
                        Handle::int(-1)
                    }
                    Err(p) => {
                        let msg = p
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                        cx.tally.stash(Fail::Violation(format!(
                            "the channel thread panicked: {}",
                            msg.unwrap_or_default()
                        )));
                        Handle::int(-1)
                    }
                };
                Ok(Next::send(&from_t, reply, &[], |_, _| Ok(Next::exit())))
            }))
        })?;
        s.send(&to, self.reg(src))?;
        let h = s.recv(&from)?;
        self.check_received(&got, want, "a channel thread")?;
        self.put(s, dst, h, v);
        self.check_regs(s, &[dst, src])
    }

    /// Injects a deliberate fault and checks, so that it is found.
    fn inject(&mut self, s: &mut Scope<'_>, kind: FaultKind) -> R<()> {
        let lw = self.cx.large_words;
        match kind {
            FaultKind::HeapStore => {
                self.step(
                    s,
                    &Op::Build {
                        dst: 0,
                        build: Build::Array {
                            len: 2,
                            init: Src::Int(5),
                        },
                    },
                )?;
                // Behind the shadow's back.
                s.set(self.reg(0), 1, Handle::int(424_242))?;
            }
            FaultKind::ShadowRaw => {
                self.step(
                    s,
                    &Op::Build {
                        dst: 0,
                        build: Build::Raw { len: 3 },
                    },
                )?;
                if let Some(o) = self.sh.obj_mut(self.sregs[0]) {
                    if let Field::Raw(w) = &mut o.fields[1] {
                        *w ^= 1;
                    }
                }
            }
            FaultKind::Duplicate => {
                let base = self.sh.next_oid();
                let b = Build::Raw { len: 2 };
                let v = self.sh.build(&b, &[], lw);
                let env = self.env();
                let h1 = build(s, &self.cx, &b, &env, base)?;
                let h2 = build(s, &self.cx, &b, &env, base)?;
                self.put(s, 0, h1, v);
                self.put(s, 1, h2, v);
            }
            FaultKind::CompiledStore => {
                let array = Build::Array {
                    len: 2,
                    init: Src::Int(5),
                };
                self.step(
                    s,
                    &Op::Compiled(vec![COp::Build {
                        dst: 0,
                        build: array,
                        regs: false,
                    }]),
                )?;
                let w = s.raw_word(self.reg(0));
                {
                    // SAFETY: `w` is the array in register 0, read just now;
                    // field 1 is a value field; nothing collects before.
                    let mut m = unsafe { s.compiled() };
                    unsafe { m.store(w, 1, numagc::object::int_value(424_242)) }?;
                }
                // Behind the shadow's back: a compiled check finds it.
                self.step(s, &Op::Compiled(vec![COp::Check]))?;
            }
            FaultKind::Abort => std::process::abort(),
            FaultKind::Hang => loop {
                std::thread::sleep(std::time::Duration::from_secs(1));
            },
        }
        self.full_check(s, None)
    }
}

/// The large-object size of `rt` in words: a `Build::Large` is at least this.
pub fn large_words(rt: &Runtime) -> usize {
    rt.config().large_object_size.div_ceil(8)
}

/// Runs `program` on `rt` (a program job on vproc 0) against the shadow.
/// `Ok` with what was checked, or the first failure.
pub fn run(rt: &Runtime, program: &[Op], opts: &Options) -> Result<Report, Failure> {
    match run_counted(rt, program, opts) {
        (r, None) => Ok(r),
        (_, Some(f)) => Err(f),
    }
}

/// [`run`], with what was checked up to a failure too.
pub fn run_counted(rt: &Runtime, program: &[Op], opts: &Options) -> (Report, Option<Failure>) {
    let descs = match Descs::register(rt) {
        Ok(d) => d,
        Err(e) => {
            let f = Failure {
                op: 0,
                kind: FailureKind::Runtime,
                what: format!("registering descriptors: {e}"),
            };
            return (Report::default(), Some(f));
        }
    };
    let tally = Arc::new(Tally::default());
    let cx = Cx {
        descs,
        large_words: large_words(rt),
        ticker: Arc::new(Ticker {
            every: opts.gc_every as u64,
            count: AtomicU64::new(0),
            seed: opts.seed,
        }),
        tally: tally.clone(),
    };
    let current = Arc::new(AtomicUsize::new(0));
    let (program, opts2, cur) = (program.to_vec(), opts.clone(), current.clone());
    let result = rt.run_on(0, move |s| -> Result<u64, Failure> {
        let regs: Vec<Slot<'_>> = (0..REGS).map(|_| s.slot(Handle::NIL)).collect();
        let mut m = Machine {
            regs,
            sregs: [SVal::Int(0); REGS],
            globals: Vec::new(),
            sh: Shadow::default(),
            cx,
        };
        let fail = |op: usize, f: Fail| match f {
            Fail::Violation(what) => Failure {
                op,
                kind: FailureKind::Violation,
                what,
            },
            Fail::Runtime(e) => Failure {
                op,
                kind: FailureKind::Runtime,
                what: e.to_string(),
            },
        };
        let mut n = program.len();
        let mut i = 0;
        loop {
            if i < n && opts2.deadline.is_some_and(|d| Instant::now() >= d) {
                n = i;
            }
            cur.store(i, Ordering::Relaxed);
            if let Some(p) = &opts2.progress {
                p(i);
            }
            if let Some(f) = opts2.fault.filter(|f| f.at.min(n) == i) {
                s.scope(|s| m.inject(s, f.kind)).map_err(|e| fail(i, e))?;
            }
            if i == n {
                break;
            }
            s.scope(|s| m.step(s, &program[i]))
                .map_err(|e| fail(i, e))?;
            i += 1;
        }
        // The end: everything, then across a global collection.
        s.scope(|s| m.full_check(s, Some(Collect::Global)))
            .map_err(|e| fail(n, e))?;
        m.globals.clear();
        Ok(n as u64)
    });
    let at = current.load(Ordering::Relaxed);
    match result {
        Ok(Ok(ops)) => (tally.report(ops), None),
        Ok(Err(f)) => (tally.report(f.op as u64), Some(f)),
        Err(e) => (
            tally.report(at as u64),
            Some(Failure {
                op: at,
                kind: FailureKind::Panic,
                what: e.to_string(),
            }),
        ),
    }
}
