//! Compiled sections ([`Op::Compiled`](crate::program::Op::Compiled)): the
//! program's operations on the compiled-code interface,
//! `numagc::compiled::Mutator` (issue 18), checked against the same shadow
//! as the safe operations.
//!
//! A section runs under one `unsafe { s.compiled() }`. The program's
//! registers are copied into the mutator's first frame (slots `0..REGS`)
//! and back into the registers at the end, where the safe API compares
//! them with the shadow. In between, [`COp`]s push and pop frames of random
//! sizes, build structures through the inline path (`alloc` + `init`, up
//! to `MAX_SMALL_FIELDS` fields: pairs, records, raw data, vectors and the
//! 30-field `mid` descriptor; lists two pairs at a time with one
//! `alloc_many`) and through `alloc_shared` (mutable arrays and
//! cells filled with `store` and `store_raw`, vectors longer than
//! `MAX_SMALL_FIELDS` and above the large-object size filled with
//! `init_shared`), store through the inline barrier (the record's
//! `store`, or register code's `store_at` after an `alloc_at` of the
//! stored pair), poll, read with
//! `header`, `field` and `field_shared`, fork with `par2` and force minor
//! collections. The shadow predicts every read (a value read is compared
//! with the shadow's value at once: an integer exactly, an object by its
//! oid, kind and length), and the digest of everything reachable from the
//! slots is compared with the shadow's after each build and store, and
//! before and after each forced collection ([`MutGraph`]: the heap as
//! compiled code reads it).
//!
//! The contract of `numagc::compiled` is kept throughout: a value word is
//! used only until the next call that may collect (`alloc`,
//! `alloc_shared`, `poll`, `store`, `init_shared`, `par2`,
//! `collect_minor`); everything live across one is in a frame slot and is
//! read again from it afterwards. Builders keep their temporaries (the list
//! so far, a tree's subtrees, a DAG's nodes, a vector's fresh pairs, the
//! object being filled) in frames of their own, pushed and popped around
//! them. Debug builds poison the nurseries a minor collection empties, so a
//! word held across a collection would be caught at its next read.
//!
//! Forced collections: an allocation after which the program's ticker is
//! due (`Options::gc_every`) is followed by `collect_minor`, with the digest
//! of every slot of every frame taken before and after (they must be
//! equal); collections of the other kinds run between sections, through
//! the safe scope (`Op::Collect`, the builders of the safe operations).

use crate::check::{compare_graph, digest, shadow_digest, Graph, Item, MutGraph};
use crate::interp::{ctr, received, Cx, Fail, Ids, Machine, R, STEAL_WAIT};
use crate::layout::{
    array_store_index, dag_plan, elem_plan, fresh_count, id_word, payload, wide_is_value, Kind,
    Pick, CELL_RAW, CELL_VALUE, MID_SIZE,
};
use crate::program::{Build, COp, Src, MAX_FRAMES, MAX_FRAME_LEN, REGS};
use crate::shadow::{src_val, Field, SObj, SVal};
use numagc::compiled::{header, Ctx, Frame, Hp, Mutator, Sp, MAX_SMALL_FIELDS, RAW, VECTOR};
use numagc::object::header::{Header, ID_ARRAY};
use numagc::object::{int_value, is_pointer, value_int, NIL};
use numagc::Scope;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// A slot: a frame and an index in it.
type Loc = (Frame, usize);

fn get(l: Loc) -> u64 {
    l.0.get(l.1)
}

fn set(l: Loc, w: u64) {
    l.0.set(l.1, w)
}

/// A mutator and the frames pushed through it, bottom first, each with
/// whether the checks digest its slots (not those of garbage, nor of an
/// object being filled).
pub(crate) struct Cm<'a, 'm> {
    m: &'a mut Mutator<'m>,
    frames: Vec<(Frame, bool)>,
    cx: Cx,
}

impl<'a, 'm> Cm<'a, 'm> {
    fn new(m: &'a mut Mutator<'m>, cx: Cx) -> Self {
        Cm {
            m,
            frames: Vec::new(),
            cx,
        }
    }

    fn push(&mut self, len: usize, checked: bool) -> Frame {
        let f = self.m.push_frame(len);
        self.frames.push((f, checked));
        f
    }

    fn depth(&self) -> usize {
        self.frames.len()
    }

    /// Pops the frames from `depth` up, with one `pop_frame` of the lowest.
    fn pop_to(&mut self, depth: usize) {
        if depth < self.frames.len() {
            self.m.pop_frame(self.frames[depth].0);
            self.frames.truncate(depth);
        }
    }

    /// The slots of the first `frames` frames, bottom first.
    fn locs(&self, frames: usize) -> Vec<Loc> {
        self.frames[..frames]
            .iter()
            .flat_map(|&(f, _)| (0..f.len()).map(move |i| (f, i)))
            .collect()
    }

    fn graph(&self) -> MutGraph<'_, 'm> {
        MutGraph {
            m: self.m,
            descs: self.cx.descs,
        }
    }

    /// The digest of every checked frame's slots.
    fn digest(&self) -> Result<crate::check::Digest, String> {
        let items: Vec<Item<u64>> = self
            .frames
            .iter()
            .filter(|(_, checked)| *checked)
            .flat_map(|&(f, _)| (0..f.len()).map(move |i| MutGraph::item(f.get(i))))
            .collect();
        digest(&self.graph(), &items)
    }

    /// One allocation happened: a minor collection if one is due.
    fn tick(&mut self) -> R<()> {
        match self.cx.ticker.due() {
            Some(_) => self.force_minor(),
            None => Ok(()),
        }
    }

    /// `collect_minor`; the digest of the frames must not change across it.
    fn force_minor(&mut self) -> R<()> {
        let vproc = self.m.vproc();
        let before = self.digest().map_err(|e| {
            Fail::Violation(format!(
                "before a forced minor collection in compiled code on vproc {vproc}: {e}"
            ))
        })?;
        self.m.collect_minor();
        let after = self.digest().map_err(|e| {
            Fail::Violation(format!(
                "after a forced minor collection in compiled code on vproc {vproc}: {e}"
            ))
        })?;
        let tally = &self.cx.tally;
        tally.digest(&before);
        tally.digest(&after);
        tally.forced[0].fetch_add(1, Ordering::Relaxed);
        if before != after {
            return Err(Fail::Violation(format!(
                "a forced minor collection in compiled code on vproc {vproc} changed what the frames reach: checksum {:#x} ({} objects) before, {:#x} ({} objects) after",
                before.checksum, before.objects, after.checksum, after.objects
            )));
        }
        Ok(())
    }

    fn alloc(&mut self, header: u64, fields: usize) -> R<u64> {
        self.cx.tally.count(ctr::ALLOCS);
        Ok(self.m.alloc(header, fields)?)
    }

    fn alloc_shared(&mut self, header: u64) -> R<u64> {
        self.cx.tally.count(ctr::SHARED);
        Ok(self.m.alloc_shared(header)?)
    }

    /// `store` through the inline barrier.
    ///
    /// # Safety
    /// As `Mutator::store`: `obj` is live (read from its slot since the
    /// last call that may collect) and mutable, `i` a value field of it.
    unsafe fn store(&mut self, obj: u64, i: usize, w: u64) -> R<()> {
        self.cx.tally.count(ctr::STORES);
        // SAFETY: the caller's contract.
        Ok(unsafe { self.m.store(obj, i, w) }?)
    }

    /// `store_raw`. # Safety: as `Mutator::store_raw`.
    unsafe fn store_raw(&mut self, obj: u64, i: usize, w: u64) {
        self.cx.tally.count(ctr::STORES);
        // SAFETY: the caller's contract.
        unsafe { self.m.store_raw(obj, i, w) }
    }
}

/// The word of a source (`shadow::src_val`), read from its slot now.
fn wsrc(s: Src, env: &[Loc], k: u64) -> u64 {
    match s {
        Src::Int(i) => int_value(i.wrapping_add(k as i64)),
        Src::Reg(_) if env.is_empty() => NIL,
        Src::Reg(r) => get(env[r as usize % env.len()]),
    }
}

/// The word a plan's pick stands for (`shadow::pick`), read now.
fn wpick(p: Pick, srcs: &[Src; 2], env: &[Loc], nodes: Option<Frame>, fresh: Option<Frame>) -> u64 {
    match p {
        Pick::Int(i) => int_value(i),
        Pick::Src(j) => wsrc(srcs[j], env, 0),
        Pick::Node(k) => nodes.expect("a DAG's nodes").get(k),
        Pick::Fresh(k) => fresh.expect("a vector's fresh pairs").get(k),
    }
}

/// Builds `b` through the compiled interface from the slots `env`, with
/// oids from `base`: the mirror of `Shadow::build`. The word returned is
/// valid until the next call that may collect.
pub(crate) fn cbuild(cm: &mut Cm<'_, '_>, b: &Build, env: &[Loc], base: u32) -> R<u64> {
    let depth = cm.depth();
    let r = build_in(cm, b, env, &mut Ids(base));
    cm.pop_to(depth);
    r
}

/// The last step of a build: the object in a frame slot across the tick
/// (which may collect), then read back.
fn finish(cm: &mut Cm<'_, '_>, w: u64) -> R<u64> {
    let d = cm.depth();
    let f = cm.push(1, true);
    f.set(0, w);
    cm.tick()?;
    let w = f.get(0);
    cm.pop_to(d);
    Ok(w)
}

/// A pair `[raw id, a, b]`, allocated inline; `a` and `b` are computed
/// after the allocation (they read slots).
fn pair(cm: &mut Cm<'_, '_>, id: u64, a: impl FnOnce() -> u64, b: impl FnOnce() -> u64) -> R<u64> {
    let p = cm.alloc(header(cm.cx.descs.pair, 3), 3)?;
    // SAFETY: `p` is fresh from `alloc`, of 3 fields; nothing that may
    // collect runs before its fields are written.
    unsafe {
        cm.m.init(p, 0, id);
        cm.m.init(p, 1, a());
        cm.m.init(p, 2, b());
    }
    Ok(p)
}

/// A vector of `len` elements `elem(i)` (each read from slots when it is
/// written): inline up to `MAX_SMALL_FIELDS`, else `alloc_shared` and
/// `init_shared`, the vector in a frame slot across each.
fn vector_of(cm: &mut Cm<'_, '_>, len: usize, elem: impl Fn(usize) -> u64) -> R<u64> {
    if len <= MAX_SMALL_FIELDS {
        let v = cm.alloc(header(VECTOR, len), len)?;
        for i in 0..len {
            // SAFETY: `v` is fresh, `i` within it, nothing collects meanwhile.
            unsafe { cm.m.init(v, i, elem(i)) };
        }
        return finish(cm, v);
    }
    let d = cm.depth();
    let f = cm.push(1, false);
    let v = cm.alloc_shared(header(VECTOR, len))?;
    f.set(0, v);
    for i in 0..len {
        cm.cx.tally.count(ctr::STORES);
        // SAFETY: the vector comes from `alloc_shared`, reloaded from its
        // slot after each `init_shared` (which may collect); `i` is within it.
        unsafe { cm.m.init_shared(f.get(0), i, elem(i)) }?;
    }
    let v = f.get(0);
    cm.pop_to(d);
    finish(cm, v)
}

fn build_in(cm: &mut Cm<'_, '_>, b: &Build, env: &[Loc], ids: &mut Ids) -> R<u64> {
    let descs = cm.cx.descs;
    let misuse = |cm: &Cm<'_, '_>, what: &str| {
        Fail::Runtime(cm.m.misuse(format!(
            "torture: {b:?} is not built on the compiled interface ({what})"
        )))
    };
    match *b {
        Build::List { len, elem } => {
            let d = cm.depth();
            let cur = cm.push(1, true);
            let mut k = 0;
            // Two elements at a time with one combined allocation
            // (`alloc_many`), the second pointing to the first, as a
            // compiler allocates `a :: b :: rest`; an odd last one alone.
            while k + 1 < len as u64 {
                let h = header(descs.pair, 3);
                cm.cx.tally.count(ctr::ALLOCS);
                cm.cx.tally.count(ctr::ALLOCS);
                let [p, q] = cm.m.alloc_many([(h, 3), (h, 3)])?;
                let (ip, iq) = (ids.next(), ids.next());
                // SAFETY: both are fresh from `alloc_many`, of 3 fields;
                // nothing that may collect runs before they are written.
                unsafe {
                    cm.m.init(p, 0, ip);
                    cm.m.init(p, 1, wsrc(elem, env, k));
                    cm.m.init(p, 2, cur.get(0));
                    cm.m.init(q, 0, iq);
                    cm.m.init(q, 1, wsrc(elem, env, k + 1));
                    cm.m.init(q, 2, p);
                }
                cur.set(0, q);
                cm.tick()?;
                cm.tick()?;
                k += 2;
            }
            if k < len as u64 {
                let p = pair(cm, ids.next(), || wsrc(elem, env, k), || cur.get(0))?;
                cur.set(0, p);
                cm.tick()?;
            }
            let w = cur.get(0);
            cm.pop_to(d);
            Ok(w)
        }
        Build::Tree { depth, leaf } => tree(cm, ids, depth, leaf, env),
        Build::Dag { nodes, seed, srcs } => {
            let d = cm.depth();
            let nf = cm.push(nodes as usize, true);
            for (k, [a, b]) in dag_plan(seed, nodes as usize).into_iter().enumerate() {
                let p = pair(
                    cm,
                    ids.next(),
                    || wpick(a, &srcs, env, Some(nf), None),
                    || wpick(b, &srcs, env, Some(nf), None),
                )?;
                nf.set(k, p);
                cm.tick()?;
            }
            let id = ids.next();
            let w = vector_of(cm, nodes as usize + 1, |i| {
                if i == 0 {
                    int_value(id as i64)
                } else {
                    nf.get(i - 1)
                }
            })?;
            cm.pop_to(d);
            Ok(w)
        }
        Build::Vector { len, seed, srcs } => vector(cm, ids, len as usize, seed, srcs, env),
        Build::Large {
            raw: false,
            extra,
            seed,
            srcs,
        } => {
            let len = cm.cx.large_words + extra as usize;
            vector(cm, ids, len, seed, srcs, env)
        }
        Build::Raw { len } => {
            let len = len as usize;
            if len == 0 || len > MAX_SMALL_FIELDS {
                return Err(misuse(
                    cm,
                    "raw data above MAX_SMALL_FIELDS words cannot be written",
                ));
            }
            let id = ids.next();
            let p = cm.alloc(header(RAW, len), len)?;
            for i in 0..len {
                let w = if i == 0 { id } else { payload(id, i) };
                // SAFETY: fresh object, `i` within it.
                unsafe { cm.m.init(p, i, w) };
            }
            finish(cm, p)
        }
        Build::Rec { a, b } => {
            let id = ids.next();
            let p = cm.alloc(header(descs.rec, 5), 5)?;
            // SAFETY: fresh object of 5 fields; the sources are read now.
            unsafe {
                cm.m.init(p, 0, id);
                cm.m.init(p, 1, wsrc(a, env, 0));
                cm.m.init(p, 2, payload(id, 2));
                cm.m.init(p, 3, wsrc(b, env, 0));
                cm.m.init(p, 4, payload(id, 4));
            }
            finish(cm, p)
        }
        Build::Mid { seed, srcs } => {
            let plan = elem_plan(seed, MID_SIZE, false);
            let id = ids.next();
            let p = cm.alloc(header(descs.mid, MID_SIZE), MID_SIZE)?;
            for i in 0..MID_SIZE {
                let w = match i {
                    0 => id,
                    i if wide_is_value(i) => wpick(plan[i - 1], &srcs, env, None, None),
                    i => payload(id, i),
                };
                // SAFETY: fresh object of MID_SIZE fields.
                unsafe { cm.m.init(p, i, w) };
            }
            finish(cm, p)
        }
        Build::Array { len, init } => {
            let n = len as usize + 1;
            let id = ids.next();
            let d = cm.depth();
            let f = cm.push(1, false);
            let a = cm.alloc_shared(Header::new(ID_ARRAY, n as u64).bits())?;
            f.set(0, a);
            // SAFETY: the array is reloaded from its slot after each store
            // (which may collect); its fields are values.
            unsafe { cm.store(f.get(0), 0, int_value(id as i64)) }?;
            for i in 1..n {
                unsafe { cm.store(f.get(0), i, wsrc(init, env, 0)) }?;
            }
            let a = f.get(0);
            cm.pop_to(d);
            finish(cm, a)
        }
        Build::Cell { init } => {
            let id = ids.next();
            let d = cm.depth();
            let f = cm.push(1, false);
            let c = cm.alloc_shared(header(descs.cell, 3))?;
            f.set(0, c);
            // SAFETY: a cell `[raw id, value, raw]` from `alloc_shared`,
            // reloaded from its slot after the store (which may collect).
            unsafe {
                cm.store_raw(c, 0, id);
                cm.store(f.get(0), CELL_VALUE, wsrc(init, env, 0))?;
                cm.store_raw(f.get(0), CELL_RAW, 0);
            }
            let c = f.get(0);
            cm.pop_to(d);
            finish(cm, c)
        }
        Build::Wide { .. } => Err(misuse(cm, "a mixed object above MAX_SMALL_FIELDS fields")),
        Build::Large { raw: true, .. } => Err(misuse(cm, "large raw data cannot be written")),
    }
}

/// A complete binary tree of pairs (`Shadow::tree`): the subtrees in a
/// frame of two slots while the node is allocated.
fn tree(cm: &mut Cm<'_, '_>, ids: &mut Ids, depth: u8, leaf: Src, env: &[Loc]) -> R<u64> {
    let d = cm.depth();
    let f = cm.push(2, true);
    if depth > 0 {
        let l = tree(cm, ids, depth - 1, leaf, env)?;
        f.set(0, l);
        let r = tree(cm, ids, depth - 1, leaf, env)?;
        f.set(1, r);
    }
    let p = if depth == 0 {
        pair(cm, ids.next(), || wsrc(leaf, env, 0), || NIL)?
    } else {
        pair(cm, ids.next(), || f.get(0), || f.get(1))?
    };
    cm.pop_to(d);
    finish(cm, p)
}

/// Counts what a build by register code did: `allocs` inline allocations
/// (`alloc_at`, `alloc_many_at`) and `polls` polls (`poll_at`).
fn count_register_code(cm: &Cm<'_, '_>, allocs: u64, polls: u64) {
    cm.cx.tally.count_n(ctr::ALLOCS, allocs);
    cm.cx.tally.count_n(ctr::REG_ALLOCS, allocs);
    cm.cx.tally.count_n(ctr::POLLS, polls);
}

/// A list (`Build::List`, `Shadow::list`) built by register code: the
/// pairs two at a time with one `alloc_many_at` (an odd last one with
/// `alloc_at`), the list so far in a frame slot at `sp`, a `poll_at` after
/// each step; only the slow paths collect.
fn list_regs(cm: &mut Cm<'_, '_>, len: usize, elem: Src, env: &[Loc], ids: &mut Ids) -> R<u64> {
    let h = header(cm.cx.descs.pair, 3);
    let ids: Vec<u64> = (0..len).map(|_| ids.next()).collect();
    let w = cm.m.with_regs(|m, hp, sp| {
        let top = m.push_at(sp, [NIL]);
        let mut hp = hp;
        let mut k = 0;
        while k + 1 < len {
            let [p, q];
            ([p, q], hp) = m.alloc_many_at(hp, top, [(h, 3), (h, 3)]);
            // SAFETY: both fresh, of 3 fields; the list and the sources are
            // read from their slots after the allocation.
            unsafe {
                m.init(p, 0, ids[k]);
                m.init(p, 1, wsrc(elem, env, k as u64));
                m.init(p, 2, sp.get(0));
                m.init(q, 0, ids[k + 1]);
                m.init(q, 1, wsrc(elem, env, k as u64 + 1));
                m.init(q, 2, p);
                sp.set(0, q);
            }
            hp = m.poll_at(hp, top);
            k += 2;
        }
        if k < len {
            let p;
            (p, hp) = m.alloc_at(hp, top, h, 3);
            // SAFETY: as above.
            unsafe {
                m.init(p, 0, ids[k]);
                m.init(p, 1, wsrc(elem, env, k as u64));
                m.init(p, 2, sp.get(0));
                sp.set(0, p);
            }
        }
        // SAFETY: the slot holds the list.
        (unsafe { sp.get(0) }, hp)
    })?;
    count_register_code(cm, len as u64, 0);
    finish(cm, w)
}

/// A store into value field `at` of the mutable object in slot `target`
/// by register code: with `fresh` (the new pair's id), the pair
/// `[id, value, 1]` allocated with `alloc_at` and stored, else `value`
/// itself; then `store_at` (the inline test, the slow path past it) and
/// a `poll_at`. The target and the value are read from their slots after
/// the allocation, which may collect.
fn store_regs(
    cm: &mut Cm<'_, '_>,
    target: Loc,
    at: usize,
    value: Src,
    env: &[Loc],
    fresh: Option<u64>,
) -> R<()> {
    let h = header(cm.cx.descs.pair, 3);
    cm.m.with_regs(|m, hp, sp| {
        let mut hp = hp;
        let w = match fresh {
            Some(id) => {
                let p;
                (p, hp) = m.alloc_at(hp, sp, h, 3);
                // SAFETY: fresh, of 3 fields; the source is read now.
                unsafe {
                    m.init(p, 0, id);
                    m.init(p, 1, wsrc(value, env, 0));
                    m.init(p, 2, int_value(1));
                }
                p
            }
            None => wsrc(value, env, 0),
        };
        // SAFETY: the target is a live array or cell read from its slot
        // after the allocation; `at` is one of its value fields; `w` is a
        // value read since the last call that may collect.
        hp = unsafe { m.store_at(hp, sp, get(target), at, w) };
        hp = m.poll_at(hp, sp);
        ((), hp)
    })?;
    if fresh.is_some() {
        cm.cx.tally.count(ctr::ALLOCS);
        cm.cx.tally.count(ctr::REG_ALLOCS);
    }
    cm.cx.tally.count(ctr::STORES);
    cm.cx.tally.count(ctr::REG_STORES);
    cm.cx.tally.count(ctr::POLLS);
    Ok(())
}

/// A complete binary tree (`Build::Tree`, as [`tree`]) built by register
/// code: the left subtree in a frame slot across the right one's build,
/// both across the node's allocation.
fn tree_regs(cm: &mut Cm<'_, '_>, depth: u8, leaf: Src, env: &[Loc], ids: &mut Ids) -> R<u64> {
    fn node(
        m: Ctx<'_>,
        hp: Hp,
        sp: Sp,
        (h, depth, leaf, env): (u64, u8, Src, &[Loc]),
        ids: &mut Ids,
    ) -> (u64, Hp) {
        if depth == 0 {
            let (p, hp) = m.alloc_at(hp, sp, h, 3);
            // SAFETY: fresh, of 3 fields; the source is read now.
            unsafe {
                m.init(p, 0, ids.next());
                m.init(p, 1, wsrc(leaf, env, 0));
                m.init(p, 2, NIL);
            }
            return (p, hp);
        }
        let (l, hp) = node(m, hp, sp, (h, depth - 1, leaf, env), ids);
        let top = m.push_at(sp, [l]);
        let (r, hp) = node(m, hp, top, (h, depth - 1, leaf, env), ids);
        let above = m.push_at(top, [r]);
        let (p, hp) = m.alloc_at(hp, above, h, 3);
        // SAFETY: fresh; both subtrees are reloaded from their slots.
        unsafe {
            m.init(p, 0, ids.next());
            m.init(p, 1, sp.get(0));
            m.init(p, 2, top.get(0));
        }
        (p, hp)
    }
    let h = header(cm.cx.descs.pair, 3);
    let w =
        cm.m.with_regs(|m, hp, sp| node(m, hp, sp, (h, depth, leaf, env), ids))?;
    count_register_code(cm, (2u64 << depth) - 1, 0);
    finish(cm, w)
}

/// The tree of [`tree_regs`], in the same order of allocation, built by
/// register code that returns through the shadow stack (`Sp::pop`): a
/// frame `[NIL, depth, AFTER_LEFT]` while a left subtree is built, turned
/// into `[left, depth, AFTER_RIGHT]` for the right one; the right subtree
/// in a frame of its own above it across the node's allocation.
fn tree_stack_regs(
    cm: &mut Cm<'_, '_>,
    depth: u8,
    leaf: Src,
    env: &[Loc],
    ids: &mut Ids,
) -> R<u64> {
    const AFTER_LEFT: u64 = int_value(0);
    const AFTER_RIGHT: u64 = int_value(1);
    let h = header(cm.cx.descs.pair, 3);
    let build = |m: Ctx<'_>, hp: Hp, sp0: Sp| -> (u64, Hp) {
        let (mut hp, mut sp, mut d) = (hp, sp0, depth);
        loop {
            while d > 0 {
                sp = m.push_at(sp, [NIL, int_value(i64::from(d)), AFTER_LEFT]);
                d -= 1;
            }
            let (mut r, next) = m.alloc_at(hp, sp, h, 3);
            // SAFETY: fresh, of 3 fields; the source is read now.
            unsafe {
                m.init(r, 0, ids.next());
                m.init(r, 1, wsrc(leaf, env, 0));
                m.init(r, 2, NIL);
            }
            hp = next;
            loop {
                if sp == sp0 {
                    return (r, hp);
                }
                // SAFETY: every frame above `sp0` was pushed by this loop
                // with three slots, the frames above the last popped.
                let f = unsafe { sp.pop(3) };
                // SAFETY: `f`'s frame is live (popped, not passed since to a
                // call that may collect).
                if unsafe { f.get(2) } == AFTER_LEFT {
                    // SAFETY: as above; the frame stays pushed for the right subtree.
                    unsafe {
                        f.set(0, r);
                        f.set(2, AFTER_RIGHT);
                    }
                    // SAFETY: as above.
                    d = (value_int(unsafe { f.get(1) }) - 1) as u8;
                    break;
                }
                let above = m.push_at(sp, [r]);
                let (p, next) = m.alloc_at(hp, above, h, 3);
                // SAFETY: fresh; both subtrees are reloaded from their
                // slots after the allocation.
                unsafe {
                    m.init(p, 0, ids.next());
                    m.init(p, 1, f.get(0));
                    m.init(p, 2, sp.get(0));
                }
                (r, hp, sp) = (p, next, f);
            }
        }
    };
    let w = cm.m.with_regs(build)?;
    cm.cx.tally.count(ctr::STACK_RETURNS);
    count_register_code(cm, (2u64 << depth) - 1, 0);
    finish(cm, w)
}

/// Pushes `p` in a frame of its own at `top` (recorded in `tops`, whose
/// `k`-th entry reads the `k`-th object pushed) and polls: the new top and
/// allocation pointer, for the DAG's nodes and the vector's fresh pairs.
fn push_own_frame(m: Ctx<'_>, hp: Hp, top: Sp, p: u64, tops: &mut Vec<Sp>) -> (Sp, Hp) {
    tops.push(top);
    let top = m.push_at(top, [p]);
    (top, m.poll_at(hp, top))
}

/// A DAG (`Build::Dag`, as the record path builds it) by register code:
/// each node a pair allocated with `alloc_at`, its fields picked from the
/// sources and the nodes before it, then pushed in a frame of its own
/// (`push_at`) above theirs, a `poll_at` after each. The vector gathering
/// the nodes is allocated by register code too when it fits
/// `MAX_SMALL_FIELDS`; a longer one is built by [`vector_of`], from a
/// record frame into which the nodes are copied as the register code ends
/// (no allocation in between).
fn dag_regs(
    cm: &mut Cm<'_, '_>,
    nodes: usize,
    seed: u64,
    srcs: [Src; 2],
    env: &[Loc],
    ids: &mut Ids,
) -> R<u64> {
    let h = header(cm.cx.descs.pair, 3);
    let plan = dag_plan(seed, nodes);
    let node_ids: Vec<u64> = (0..nodes).map(|_| ids.next()).collect();
    let vid = ids.next();
    let inline = nodes < MAX_SMALL_FIELDS;
    let d = cm.depth();
    // The nodes' record frame, for a vector built outside register code.
    let nf = (!inline).then(|| cm.push(nodes, true));
    let w = cm.m.with_regs(|m, hp, sp| {
        let mut hp = hp;
        // `tops[k]`: the top at which node `k` was pushed (its slot 0).
        let mut tops: Vec<Sp> = Vec::with_capacity(nodes);
        let mut top = sp;
        for (k, picks) in plan.iter().enumerate() {
            let p;
            (p, hp) = m.alloc_at(hp, top, h, 3);
            // SAFETY: fresh, of 3 fields; the sources and the earlier
            // nodes are read from their slots after the allocation.
            unsafe {
                m.init(p, 0, node_ids[k]);
                for (f, &pick) in picks.iter().enumerate() {
                    let w = match pick {
                        Pick::Node(j) => tops[j].get(0),
                        pick => wpick(pick, &srcs, env, None, None),
                    };
                    m.init(p, 1 + f, w);
                }
            }
            (top, hp) = push_own_frame(m, hp, top, p, &mut tops);
        }
        if let Some(nf) = nf {
            for (k, t) in tops.iter().enumerate() {
                // SAFETY: node `k`'s slot, read with nothing allocated
                // since the last poll.
                nf.set(k, unsafe { t.get(0) });
            }
            return (NIL, hp);
        }
        let v;
        (v, hp) = m.alloc_at(hp, top, header(VECTOR, nodes + 1), nodes + 1);
        // SAFETY: fresh, of `nodes + 1` fields (at most MAX_SMALL_FIELDS);
        // the nodes are read from their slots after the allocation.
        unsafe {
            m.init(v, 0, int_value(vid as i64));
            for (k, t) in tops.iter().enumerate() {
                m.init(v, 1 + k, t.get(0));
            }
        }
        (v, hp)
    })?;
    count_register_code(cm, nodes as u64 + u64::from(inline), nodes as u64);
    let w = match nf {
        None => w,
        Some(nf) => vector_of(cm, nodes + 1, |i| {
            if i == 0 {
                int_value(vid as i64)
            } else {
                nf.get(i - 1)
            }
        })?,
    };
    cm.pop_to(d);
    finish(cm, w)
}

/// A vector of at most `MAX_SMALL_FIELDS` elements with its fresh pairs
/// (`Build::Vector`, as [`vector`] builds it) by register code: the fresh
/// pairs allocated with `alloc_at`, each pushed in a frame of its own
/// (`push_at`), a `poll_at` after each; then the vector with `alloc_at`,
/// its elements read after the allocation.
fn vector_regs(
    cm: &mut Cm<'_, '_>,
    len: usize,
    seed: u64,
    srcs: [Src; 2],
    env: &[Loc],
    ids: &mut Ids,
) -> R<u64> {
    debug_assert!(len <= MAX_SMALL_FIELDS);
    let ph = header(cm.cx.descs.pair, 3);
    let nfresh = fresh_count(len);
    let fresh_ids: Vec<u64> = (0..nfresh).map(|_| ids.next()).collect();
    let vid = ids.next();
    let plan = elem_plan(seed, len, true);
    let w = cm.m.with_regs(|m, hp, sp| {
        let mut hp = hp;
        let mut tops: Vec<Sp> = Vec::with_capacity(nfresh);
        let mut top = sp;
        for (k, &id) in fresh_ids.iter().enumerate() {
            let p;
            (p, hp) = m.alloc_at(hp, top, ph, 3);
            // SAFETY: fresh, of 3 fields.
            unsafe {
                m.init(p, 0, id);
                m.init(p, 1, int_value(k as i64));
                m.init(p, 2, NIL);
            }
            (top, hp) = push_own_frame(m, hp, top, p, &mut tops);
        }
        let v;
        (v, hp) = m.alloc_at(hp, top, header(VECTOR, len), len);
        // SAFETY: fresh, of `len` fields; the sources and the fresh pairs
        // are read from their slots after the allocation.
        unsafe {
            m.init(v, 0, int_value(vid as i64));
            for (i, &pick) in plan.iter().enumerate() {
                let w = match pick {
                    Pick::Fresh(k) => tops[k].get(0),
                    pick => wpick(pick, &srcs, env, None, None),
                };
                m.init(v, 1 + i, w);
            }
        }
        (v, hp)
    })?;
    count_register_code(cm, nfresh as u64 + 1, nfresh as u64);
    finish(cm, w)
}

/// A vector of `len` elements with its fresh pairs (`Shadow::vector`).
fn vector(
    cm: &mut Cm<'_, '_>,
    ids: &mut Ids,
    len: usize,
    seed: u64,
    srcs: [Src; 2],
    env: &[Loc],
) -> R<u64> {
    let d = cm.depth();
    let nfresh = fresh_count(len);
    let ff = cm.push(nfresh, true);
    for k in 0..nfresh {
        let p = pair(cm, ids.next(), || int_value(k as i64), || NIL)?;
        ff.set(k, p);
        cm.tick()?;
    }
    let id = ids.next();
    let plan = elem_plan(seed, len, true);
    let w = vector_of(cm, len, |i| {
        if i == 0 {
            int_value(id as i64)
        } else {
            wpick(plan[i - 1], &srcs, env, None, Some(ff))
        }
    })?;
    cm.pop_to(d);
    Ok(w)
}

/// One side of a compiled `par2`: its values in a frame of its own, then
/// `f`; a violation is kept in the tally for the caller.
fn side(
    m: &mut Mutator<'_>,
    cx: &Cx,
    env: &[u64],
    f: impl FnOnce(&mut Cm<'_, '_>, &[Loc]) -> R<u64>,
) -> numagc::Result<u64> {
    let mut c = Cm::new(m, cx.clone());
    // The words of `env` are valid until the first call that may collect:
    // into slots at once.
    let ef = c.push(env.len(), true);
    for (i, &w) in env.iter().enumerate() {
        ef.set(i, w);
    }
    let envl: Vec<Loc> = (0..env.len()).map(|i| (ef, i)).collect();
    let r = f(&mut c, &envl);
    c.pop_to(0);
    r.map_err(|e| cx.tally.stash(e))
}

/// The shadow of a compiled section: its slots, bottom first, and the
/// length of each frame pushed.
struct CShadow {
    slots: Vec<SVal>,
    frames: Vec<usize>,
}

impl CShadow {
    fn at(&self, k: u8) -> usize {
        k as usize % self.slots.len()
    }
}

fn short(cop: &COp) -> String {
    let s = format!("{cop:?}");
    match s.char_indices().nth(160) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

impl<'s> Machine<'s> {
    /// Runs a compiled section: the registers into the first frame, the
    /// operations, the first frame back into the registers, which are then
    /// compared with the shadow through the safe API.
    pub(crate) fn compiled(&mut self, s: &mut Scope<'_>, cops: &[COp]) -> R<()> {
        self.cx.tally.count(ctr::SECTIONS);
        let words: Vec<u64> = self.regs.iter().map(|x| s.raw_word(x.get())).collect();
        let mut cs = CShadow {
            slots: self.sregs.to_vec(),
            frames: vec![REGS],
        };
        let out: Vec<u64> = {
            // SAFETY: this section keeps the contract of `numagc::compiled`
            // (the module docs): words live across calls that may collect
            // are in frame slots, objects are initialised before the next
            // such call, reads and stores are checked against the shadow's
            // layouts first, frames are popped in order.
            let mut m = unsafe { s.compiled() };
            let mut cm = Cm::new(&mut m, self.cx.clone());
            let f = cm.push(REGS, true);
            for (i, &w) in words.iter().enumerate() {
                f.set(i, w);
            }
            for (k, cop) in cops.iter().enumerate() {
                self.cx.tally.count(ctr::OPS);
                self.cstep(&mut cm, &mut cs, cop).map_err(|e| match e {
                    Fail::Violation(m) => {
                        Fail::Violation(format!("compiled op {k} ({}): {m}", short(cop)))
                    }
                    other => other,
                })?;
            }
            let out = (0..REGS).map(|i| f.get(i)).collect();
            // Half the sections pop their frames, the others leave them to
            // the mutator's drop.
            if cops.len().is_multiple_of(2) {
                cm.pop_to(0);
            }
            out
        };
        for (i, &w) in out.iter().enumerate() {
            // SAFETY: `w` was read from the registers' frame, and nothing
            // that may collect ran since.
            let h = unsafe { s.root_word(w) };
            s.assign(self.regs[i], h);
            self.sregs[i] = cs.slots[i];
        }
        let all: Vec<u8> = (0..REGS as u8).collect();
        self.check_regs(s, &all).map_err(|e| match e {
            Fail::Violation(m) => Fail::Violation(format!("after a compiled section: {m}")),
            other => other,
        })
    }

    /// Compares slots `which` with the shadow.
    fn check_slots(&self, cm: &Cm<'_, '_>, cs: &CShadow, which: &[usize]) -> R<()> {
        let locs = cm.locs(cm.depth());
        let names: Vec<String> = which.iter().map(|j| format!("slot{j}")).collect();
        let items: Vec<Item<u64>> = which
            .iter()
            .map(|&j| MutGraph::item(get(locs[j])))
            .collect();
        let want: Vec<SVal> = which.iter().map(|&j| cs.slots[j]).collect();
        let d =
            compare_graph(&cm.graph(), &self.sh, &names, &items, &want).map_err(Fail::Violation)?;
        self.cx.tally.digest(&d);
        Ok(())
    }

    fn check_all(&self, cm: &Cm<'_, '_>, cs: &CShadow) -> R<()> {
        let all: Vec<usize> = (0..cs.slots.len()).collect();
        self.check_slots(cm, cs, &all)
    }

    /// The header of `w`, the object the shadow calls `o`, must be its.
    fn check_header(&self, cm: &Cm<'_, '_>, w: u64, o: &SObj, what: &str) -> R<()> {
        cm.cx.tally.count(ctr::READS);
        if !is_pointer(w) {
            return Err(Fail::Violation(format!(
                "{what}: {w:#x} is not an object; the shadow has a {:?} of {} fields",
                o.kind,
                o.fields.len()
            )));
        }
        // (`Mutator::header`, after a check for a stale value.)
        let h = cm
            .graph()
            .header(w)
            .map_err(|e| Fail::Violation(format!("{what}: {e}")))?;
        let want = cm.cx.descs.header_id(o.kind);
        if Some(h.id()) != want || h.len() != o.fields.len() {
            return Err(Fail::Violation(format!(
                "{what}: the header of {w:#x} has id {} and {} fields; the shadow has a {:?} (id {want:?}) of {} fields",
                h.id(),
                h.len(),
                o.kind,
                o.fields.len()
            )));
        }
        Ok(())
    }

    /// A value read, `x`, must be the shadow's `v`: the same integer, or
    /// the object of the same oid (its header and id checked).
    fn check_value(&self, cm: &Cm<'_, '_>, x: u64, v: SVal, what: &str) -> R<()> {
        let bad =
            |got: String| Fail::Violation(format!("{what}: read {got}, the shadow predicts {v:?}"));
        match v {
            SVal::Int(i) if x == int_value(i) => Ok(()),
            SVal::Int(_) => Err(bad(format!("{x:#x}"))),
            SVal::Obj(o) => {
                if !is_pointer(x) {
                    return Err(bad(format!("the immediate {x:#x}")));
                }
                let so = &self.sh.objs[o as usize];
                if so.kind == Kind::Seq {
                    return Ok(());
                }
                self.check_header(cm, x, so, what)?;
                let g = cm.graph();
                let mut fields = Vec::new();
                let head = g.open(x, &mut fields).map_err(&bad)?;
                if head.id != Some(id_word(o)) {
                    return Err(bad(format!("{} of id {:?}", g.describe(x), head.id)));
                }
                Ok(())
            }
        }
    }

    fn cstep(&mut self, cm: &mut Cm<'_, '_>, cs: &mut CShadow, cop: &COp) -> R<()> {
        let lw = self.cx.large_words;
        let locs = cm.locs(cm.depth());
        debug_assert_eq!(locs.len(), cs.slots.len());
        match cop {
            COp::Poll { times } => {
                for _ in 0..(*times).max(1) {
                    self.cx.tally.count(ctr::POLLS);
                    cm.m.poll();
                }
                Ok(())
            }
            COp::Push { len } => {
                if cs.frames.len() >= MAX_FRAMES {
                    return Ok(());
                }
                let n = (*len as usize).min(MAX_FRAME_LEN as usize);
                let f = cm.push(n, true);
                cs.frames.push(n);
                cs.slots.extend(std::iter::repeat_n(SVal::Int(0), n));
                if (0..n).any(|i| f.get(i) != NIL) {
                    return Err(Fail::Violation(format!(
                        "a frame of {n} slots was pushed with slots that are not NIL"
                    )));
                }
                Ok(())
            }
            COp::Pop { frames } => {
                let depth = cs.frames.len();
                if depth <= 1 {
                    return Ok(());
                }
                let target = depth - (1 + *frames as usize % (depth - 1));
                cm.pop_to(target);
                let keep = cs.frames[..target].iter().sum();
                cs.frames.truncate(target);
                cs.slots.truncate(keep);
                Ok(())
            }
            COp::Move { dst, src } => {
                let (d, from) = (cs.at(*dst), cs.at(*src));
                set(locs[d], get(locs[from]));
                cs.slots[d] = cs.slots[from];
                Ok(())
            }
            COp::Clear { dst } => {
                let d = cs.at(*dst);
                set(locs[d], NIL);
                cs.slots[d] = SVal::Int(0);
                Ok(())
            }
            COp::Build { dst, build, regs } => {
                let base = self.sh.next_oid();
                let v = self.sh.build(build, &cs.slots, lw);
                let w = match (*regs, build) {
                    (true, Build::List { len, elem }) => {
                        list_regs(cm, *len as usize, *elem, &locs, &mut Ids(base))?
                    }
                    // Half the trees by code that returns through the
                    // shadow stack (the parity of the first id: any).
                    (true, Build::Tree { depth, leaf }) if base % 2 == 1 => {
                        tree_stack_regs(cm, *depth, *leaf, &locs, &mut Ids(base))?
                    }
                    (true, Build::Tree { depth, leaf }) => {
                        tree_regs(cm, *depth, *leaf, &locs, &mut Ids(base))?
                    }
                    (true, Build::Dag { nodes, seed, srcs }) => {
                        dag_regs(cm, *nodes as usize, *seed, *srcs, &locs, &mut Ids(base))?
                    }
                    (true, Build::Vector { len, seed, srcs })
                        if *len as usize <= MAX_SMALL_FIELDS =>
                    {
                        vector_regs(cm, *len as usize, *seed, *srcs, &locs, &mut Ids(base))?
                    }
                    _ => cbuild(cm, build, &locs, base)?,
                };
                let d = cs.at(*dst);
                set(locs[d], w);
                cs.slots[d] = v;
                self.check_slots(cm, cs, &[d])
            }
            COp::Read { dst, src, field } => {
                let from = cs.at(*src);
                let Some(o) = self.sh.obj(cs.slots[from]) else {
                    return Ok(());
                };
                if o.kind == Kind::Seq {
                    return Ok(());
                }
                let w = get(locs[from]);
                let what = format!("the object in slot {from}");
                self.check_header(cm, w, o, &what)?;
                let values = o.values();
                if values.is_empty() {
                    return Ok(());
                }
                let (pos, v) = values[*field as usize % values.len()];
                let mutable = matches!(o.kind, Kind::Array | Kind::Cell);
                self.cx.tally.count(ctr::READS);
                // SAFETY: `w` is live (read from its slot, nothing collected
                // since) and `pos` a value field within it (its header was
                // checked); mutable objects are read with `field_shared`.
                let x = unsafe {
                    if mutable {
                        cm.m.field_shared(w, pos)
                    } else {
                        cm.m.field(w, pos)
                    }
                };
                let what = format!("field {pos} of the {:?} in slot {from}", o.kind);
                self.check_value(cm, x, v, &what)?;
                let d = cs.at(*dst);
                set(locs[d], x);
                cs.slots[d] = v;
                Ok(())
            }
            COp::ReadRaw { src, field } => {
                let from = cs.at(*src);
                let Some(o) = self.sh.obj(cs.slots[from]) else {
                    return Ok(());
                };
                let raws = o.raws();
                if raws.is_empty() {
                    return Ok(());
                }
                let w = get(locs[from]);
                let what = format!("the object in slot {from}");
                self.check_header(cm, w, o, &what)?;
                let (pos, want) = raws[*field as usize % raws.len()];
                self.cx.tally.count(ctr::READS);
                // SAFETY: as in `Read`.
                let x = unsafe {
                    if o.kind == Kind::Cell {
                        cm.m.field_shared(w, pos)
                    } else {
                        cm.m.field(w, pos)
                    }
                };
                if x != want {
                    return Err(Fail::Violation(format!(
                        "raw field {pos} of the {:?} in slot {from}: read {x:#x}, the shadow predicts {want:#x}",
                        o.kind
                    )));
                }
                Ok(())
            }
            COp::Store {
                obj,
                index,
                value,
                fresh,
                regs,
            } => {
                let oi = cs.at(*obj);
                let target = cs.slots[oi];
                let at = match self.sh.obj(target) {
                    Some(o) if o.kind == Kind::Array => array_store_index(o.fields.len(), *index),
                    Some(o) if o.kind == Kind::Cell => Some(CELL_VALUE),
                    _ => None,
                };
                let Some(at) = at else { return Ok(()) };
                let mut v = src_val(*value, &cs.slots, 0);
                if *regs {
                    let id = fresh.then(|| id_word(self.sh.next_oid()));
                    if *fresh {
                        v = self.sh.pair(v, SVal::Int(1));
                    }
                    store_regs(cm, locs[oi], at, *value, &locs, id)?;
                } else if *fresh {
                    // A new object in the nursery: the barrier promotes it
                    // (split) or remembers the store (shared).
                    let base = self.sh.next_oid();
                    v = self.sh.pair(v, SVal::Int(1));
                    let p = pair(
                        cm,
                        id_word(base),
                        || wsrc(*value, &locs, 0),
                        || int_value(1),
                    )?;
                    // SAFETY: the target is reloaded from its slot after
                    // the allocation; `p` is fresh; `at` is a value field.
                    unsafe { cm.store(get(locs[oi]), at, p) }?;
                } else {
                    // SAFETY: as above.
                    unsafe { cm.store(get(locs[oi]), at, wsrc(*value, &locs, 0)) }?;
                }
                if let Some(o) = self.sh.obj_mut(target) {
                    o.fields[at] = Field::Val(v);
                }
                self.check_slots(cm, cs, &[oi])
            }
            COp::StoreRaw { obj, value } => {
                let oi = cs.at(*obj);
                let target = cs.slots[oi];
                if self.sh.kind(target) != Some(Kind::Cell) {
                    return Ok(());
                }
                let w = get(locs[oi]);
                // SAFETY: a live cell (its slot), whose field CELL_RAW is raw.
                let back = unsafe {
                    cm.store_raw(w, CELL_RAW, *value);
                    cm.m.field_shared(w, CELL_RAW)
                };
                self.cx.tally.count(ctr::READS);
                if let Some(o) = self.sh.obj_mut(target) {
                    o.fields[CELL_RAW] = Field::Raw(*value);
                }
                if back != *value {
                    return Err(Fail::Violation(format!(
                        "the cell in slot {oi} reads {back:#x} after store_raw of {value:#x}"
                    )));
                }
                Ok(())
            }
            COp::Par { dst, env, a, b } => self.cpar(cm, cs, &locs, *dst, *env, a, b),
            COp::Garbage { objects } => {
                let d = cm.depth();
                let keep = cm.push(1, false);
                for k in 0..*objects as u64 {
                    if k % 16 == 0 {
                        keep.set(0, NIL);
                    }
                    if k % 3 == 0 {
                        let n = 1 + (k % 5) as usize;
                        let r = cm.alloc(header(RAW, n), n)?;
                        for i in 0..n {
                            // SAFETY: fresh raw object of n words.
                            unsafe { cm.m.init(r, i, k) };
                        }
                    } else {
                        let v = cm.alloc(header(VECTOR, 2), 2)?;
                        // SAFETY: fresh vector of 2; the chain is in `keep`.
                        unsafe {
                            cm.m.init(v, 0, int_value(k as i64));
                            cm.m.init(v, 1, keep.get(0));
                        }
                        keep.set(0, v);
                    }
                    cm.tick()?;
                }
                cm.pop_to(d);
                Ok(())
            }
            COp::Collect => {
                self.check_all(cm, cs)?;
                cm.m.collect_minor();
                self.cx.tally.forced[0].fetch_add(1, Ordering::Relaxed);
                self.check_all(cm, cs).map_err(|e| match e {
                    Fail::Violation(m) => {
                        Fail::Violation(format!("after collect_minor in compiled code: {m}"))
                    }
                    other => other,
                })
            }
            COp::Check => self.check_all(cm, cs),
        }
    }

    /// `par2` on the compiled interface: side `a` builds, then waits a
    /// little (polling) for another vproc to steal `b`; side `b` digests
    /// what it received, then builds. Both results go to slots `dst`.
    #[allow(clippy::too_many_arguments)]
    fn cpar(
        &mut self,
        cm: &mut Cm<'_, '_>,
        cs: &mut CShadow,
        locs: &[Loc],
        dst: [u8; 2],
        env: [u8; 2],
        a: &Build,
        b: &Build,
    ) -> R<()> {
        let lw = self.cx.large_words;
        let (e0, e1) = (cs.at(env[0]), cs.at(env[1]));
        let senv = [cs.slots[e0], cs.slots[e1]];
        let want = shadow_digest(&self.sh, &senv);
        let base_a = self.sh.next_oid();
        let va = self.sh.build(a, &senv, lw);
        let base_b = self.sh.next_oid();
        let vb = self.sh.build(b, &senv, lw);
        let got = received();
        let (cx_a, cx_b, got_b) = (self.cx.clone(), self.cx.clone(), got.clone());
        let (a, b) = (a.clone(), b.clone());
        let started = Arc::new(AtomicBool::new(false));
        let started_b = started.clone();
        self.cx.tally.count(ctr::FORKS);
        let words = [get(locs[e0]), get(locs[e1])];
        let r = cm.m.par2(
            &words,
            move |m, env| {
                side(m, &cx_a, env, |c, envl| {
                    let w = cbuild(c, &a, envl, base_a)?;
                    // Give an idle vproc the time to steal `b`; the result
                    // waits in a slot across the polls.
                    let d = c.depth();
                    let f = c.push(1, true);
                    f.set(0, w);
                    let t = Instant::now();
                    while c.m.vprocs() > 1
                        && !started.load(Ordering::Acquire)
                        && t.elapsed() < STEAL_WAIT
                    {
                        c.m.poll();
                        std::hint::spin_loop();
                    }
                    let w = f.get(0);
                    c.pop_to(d);
                    Ok(w)
                })
            },
            move |m, env| {
                started_b.store(true, Ordering::Release);
                side(m, &cx_b, env, |c, envl| {
                    let items: Vec<Item<u64>> =
                        envl.iter().map(|&l| MutGraph::item(get(l))).collect();
                    let d = digest(&c.graph(), &items);
                    *got_b.lock().unwrap_or_else(|p| p.into_inner()) = Some(d);
                    cbuild(c, &b, envl, base_b)
                })
            },
        );
        let (wa, wb) = r.map_err(|e| self.violation_from(e))?;
        // Valid until the next call that may collect: into slots at once.
        let (d0, d1) = (cs.at(dst[0]), cs.at(dst[1]));
        set(locs[d0], wa);
        cs.slots[d0] = va;
        set(locs[d1], wb);
        cs.slots[d1] = vb;
        self.check_received(&got, want, "a compiled par2 side")?;
        self.check_slots(cm, cs, &[d0, d1])
    }
}
