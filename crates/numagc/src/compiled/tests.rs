//! Tests of the compiled-code interface, on both plans (each test runs
//! both; the verifier runs after every collection).

use super::{header, Frame, Mutator, MutatorRecord, VECTOR};
use crate::config::PlanKind;
use crate::config::DEFAULT_GLOBAL_GC_THRESHOLD;
use crate::object::{int_value, is_pointer, value_int, NIL};
use crate::runtime::{small_test_config, small_test_runtime_on};
use crate::{DescId, Descriptor, Result, Runtime};

const PLANS: [PlanKind; 2] = [PlanKind::SplitHeap, PlanKind::SharedHeap];

fn runtime(plan: PlanKind, vprocs: usize) -> Runtime {
    small_test_runtime_on(plan, vprocs, true, 1 << 20)
}

/// A complete tree of `depth` built the way a compiler would emit it: the
/// left subtree kept in a frame slot across the allocation of the right.
fn make(m: &mut Mutator<'_>, node: u64, depth: u32) -> Result<u64> {
    if depth == 0 {
        let t = m.alloc(node, 2)?;
        // SAFETY: `t` is fresh from `alloc`, with two fields.
        unsafe {
            m.init(t, 0, NIL);
            m.init(t, 1, NIL);
        }
        return Ok(t);
    }
    let f = m.push_frame(2);
    let l = make(m, node, depth - 1)?;
    f.set(0, l);
    let r = make(m, node, depth - 1)?;
    f.set(1, r);
    let t = m.alloc(node, 2)?;
    // SAFETY: `t` is fresh; the subtrees are reloaded from their slots
    // after the calls that may collect.
    unsafe {
        m.init(t, 0, f.get(0));
        m.init(t, 1, f.get(1));
    }
    m.pop_frame(f);
    Ok(t)
}

/// The nodes of the tree `t`, its fields read by `field`.
fn count_nodes(field: &dyn Fn(u64, usize) -> u64, t: u64) -> u64 {
    let l = field(t, 0);
    if !is_pointer(l) {
        1
    } else {
        1 + count_nodes(field, l) + count_nodes(field, field(t, 1))
    }
}

fn check(m: &Mutator<'_>, t: u64) -> u64 {
    // SAFETY: `t` is a tree node reachable from a frame slot, and nothing
    // collects during the walk.
    count_nodes(&|o, i| unsafe { m.field(o, i) }, t)
}

/// The sum of a list of boxed integers (cells `[int, rest]`), its fields
/// read by `field`.
fn list_sum(field: &dyn Fn(u64, usize) -> u64, mut l: u64) -> i64 {
    let mut sum = 0;
    while is_pointer(l) {
        sum += value_int(field(l, 0));
        l = field(l, 1);
    }
    sum
}

/// The node counts of 40 trees of depth 10 and one of depth 12.
fn assert_tree_counts(plan: PlanKind, counts: &[u64]) {
    assert!(counts[..40].iter().all(|&c| c == 2047), "{plan:?}");
    assert_eq!(counts[40], 8191, "{plan:?}");
}

fn assert_collected(rt: &Runtime, plan: PlanKind) {
    assert!(
        rt.stats().total.minor.count > 0,
        "{plan:?}: no collection ran"
    );
}

fn node_desc(rt: &Runtime) -> DescId {
    rt.register(Descriptor::mixed("node", 2, &[0, 1]).unwrap())
        .unwrap()
}

#[test]
fn record_layout_is_the_documented_one() {
    let o = MutatorRecord::OFFSETS;
    assert_eq!(
        [
            o.alloc_ptr,
            o.alloc_limit,
            o.roots_top,
            o.roots_limit,
            o.roots_base
        ],
        [0, 8, 16, 24, 32]
    );
    assert_eq!(
        [o.barrier_lo, o.barrier_len, o.plan, o.remember_all,],
        [40, 48, 56, 60]
    );
    assert_eq!(o.size, 64);
}

#[test]
fn trees_survive_collections_on_every_plan() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let node = node_desc(&rt);
        let got = rt
            .run_on(0, move |s| -> Result<Vec<u64>> {
                // SAFETY: the functions above keep the interface's contract.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let keep = m.push_frame(1);
                keep.set(0, make(&mut m, h, 12)?);
                let mut counts = Vec::new();
                for _ in 0..40 {
                    let t = make(&mut m, h, 10)?;
                    counts.push(check(&m, t));
                }
                counts.push(check(&m, keep.get(0)));
                m.pop_frame(keep);
                Ok(counts)
            })
            .unwrap()
            .unwrap();
        assert_tree_counts(plan, &got);
        assert_collected(&rt, plan);
    }
}

#[test]
fn combined_allocations_survive_collections_on_every_plan() {
    for plan in PLANS {
        let rt = runtime(plan, 2);
        let node = node_desc(&rt);
        let got = rt
            .run_each(move |s| -> Result<(i64, usize)> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let v3 = header(VECTOR, 3);
                // `(i, [i, 2i, 3i]) :: rest`: a cons cell, its pair and the
                // pair's vector in one block, the list in a frame slot.
                let f = m.push_frame(1);
                for i in 0..30_000 {
                    let [cell, pair, vec] = m.alloc_many([(h, 2), (h, 2), (v3, 3)])?;
                    // SAFETY: all three are fresh from `alloc_many`; the
                    // list is reloaded from its slot.
                    unsafe {
                        m.init(vec, 0, int_value(i));
                        m.init(vec, 1, int_value(2 * i));
                        m.init(vec, 2, int_value(3 * i));
                        m.init(pair, 0, int_value(i));
                        m.init(pair, 1, vec);
                        m.init(cell, 0, pair);
                        m.init(cell, 1, f.get(0));
                    }
                    f.set(0, cell);
                }
                let (mut sum, mut len) = (0, 0);
                let mut l = f.get(0);
                while is_pointer(l) {
                    // SAFETY: list cells, pairs and vectors; no collection
                    // during the walk.
                    unsafe {
                        let pair = m.field(l, 0);
                        let i = value_int(m.field(pair, 0));
                        let vec = m.field(pair, 1);
                        assert_eq!(m.header(vec).len(), 3);
                        for k in 0..3 {
                            assert_eq!(value_int(m.field(vec, k)), (k as i64 + 1) * i);
                        }
                        sum += i;
                        l = m.field(l, 1);
                    }
                    len += 1;
                }
                m.pop_frame(f);
                Ok((sum, len))
            })
            .unwrap();
        for r in got {
            assert_eq!(r.unwrap(), ((0..30_000).sum::<i64>(), 30_000), "{plan:?}");
        }
        assert_collected(&rt, plan);
    }
}

#[test]
fn a_block_out_of_range_is_refused() {
    let rt = runtime(PlanKind::SplitHeap, 1);
    let node = node_desc(&rt);
    rt.run_on(0, move |s| {
        // SAFETY: nothing is allocated.
        let mut m = unsafe { s.compiled() };
        let h = header(node, 2);
        for words in [0, 1, super::MAX_BLOCK_WORDS + 1] {
            let e = m.alloc_block_out_of_line(h, words).unwrap_err();
            assert!(e.to_string().contains("alloc_block"), "{e}");
        }
        let b = m.alloc_block_out_of_line(h, 3).unwrap();
        // SAFETY: a fresh block of one object of two fields.
        unsafe {
            m.init(b, 0, NIL);
            m.init(b, 1, NIL);
        }
    })
    .unwrap();
}

#[test]
fn frames_are_roots_and_poll_joins_collections() {
    for plan in PLANS {
        let rt = runtime(plan, 2);
        let node = node_desc(&rt);
        let sums = rt
            .run_each(move |s| -> Result<i64> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                // A list of boxed integers, built and kept in a frame slot
                // while many collections run.
                let f = m.push_frame(1);
                for i in 0..20_000 {
                    let cell = m.alloc(h, 2)?;
                    // SAFETY: fresh cell; the list's head is in the slot.
                    unsafe {
                        m.init(cell, 0, int_value(i));
                        m.init(cell, 1, f.get(0));
                    }
                    f.set(0, cell);
                    m.poll();
                }
                // SAFETY: list cells, no collection during the walk.
                let sum = list_sum(&|o, i| unsafe { m.field(o, i) }, f.get(0));
                m.pop_frame(f);
                Ok(sum)
            })
            .unwrap();
        for s in sums {
            assert_eq!(s.unwrap(), (0..20_000).sum::<i64>(), "{plan:?}");
        }
    }
}

#[test]
fn stores_go_through_each_plans_barrier() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let node = node_desc(&rt);
        let sum = rt
            .run_on(0, move |s| -> Result<i64> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let f = m.push_frame(1);
                // A mutable array, filled with young values that must
                // survive (promoted on split, remembered on shared).
                let arr = m.alloc_shared(header(DescId(crate::object::header::ID_ARRAY), 64))?;
                f.set(0, arr);
                for round in 0..50 {
                    for i in 0..64 {
                        let cell = m.alloc(h, 2)?;
                        // SAFETY: fresh cell.
                        unsafe {
                            m.init(cell, 0, int_value(round * 64 + i as i64));
                            m.init(cell, 1, NIL);
                            m.store(f.get(0), i, cell)?;
                        }
                    }
                    // Garbage in between, so that collections run.
                    for _ in 0..200 {
                        make(&mut m, h, 3)?;
                    }
                }
                let mut sum = 0;
                for i in 0..64 {
                    // SAFETY: the array is live in the slot.
                    let c = unsafe { m.field_shared(f.get(0), i) };
                    sum += value_int(unsafe { m.field(c, 0) });
                }
                m.pop_frame(f);
                Ok(sum)
            })
            .unwrap()
            .unwrap();
        assert_eq!(sum, (49 * 64..50 * 64).sum::<i64>(), "{plan:?}");
    }
}

#[test]
fn large_and_shared_objects_and_headers() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let got = rt
            .run_on(0, move |s| -> Result<(u16, usize, i64)> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let v = m.alloc_shared(header(VECTOR, 100))?;
                let f = m.push_frame(1);
                f.set(0, v);
                for i in 0..100 {
                    let b = m.alloc(header(VECTOR, 1), 1)?;
                    // SAFETY: fresh objects; the vector is in the slot.
                    unsafe {
                        m.init(b, 0, int_value(i));
                        m.init_shared(f.get(0), i as usize, b)?;
                    }
                }
                s_collect(&mut m);
                // SAFETY: the vector is live in the slot.
                let hd = unsafe { m.header(f.get(0)) };
                let mut sum = 0;
                for i in 0..100 {
                    sum += value_int(unsafe { m.field(m.field(f.get(0), i), 0) });
                }
                Ok((hd.id(), hd.len(), sum))
            })
            .unwrap()
            .unwrap();
        assert_eq!(got, (VECTOR.0, 100, 4950), "{plan:?}");
    }
}

/// Allocates enough garbage for a few minor collections.
fn s_collect(m: &mut Mutator<'_>) {
    for _ in 0..10_000 {
        let g = m.alloc(header(VECTOR, 3), 3).unwrap();
        // SAFETY: fresh object.
        unsafe {
            for i in 0..3 {
                m.init(g, i, NIL);
            }
        }
    }
}

#[test]
fn bad_headers_are_refused_by_alloc_shared() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let errs = rt
            .run_on(0, |s| {
                // SAFETY: nothing here reads or stores.
                let mut m = unsafe { s.compiled() };
                vec![
                    m.alloc_shared(2).unwrap_err().to_string(),
                    m.alloc_shared(header(DescId(999), 2))
                        .unwrap_err()
                        .to_string(),
                ]
            })
            .unwrap();
        assert!(errs[0].contains("not a header word"), "{errs:?}");
        assert!(
            errs[1].contains("unknown object descriptor id 999"),
            "{errs:?}"
        );
    }
}

#[test]
fn par2_forks_compiled_sides() {
    fn fib(m: &mut Mutator<'_>, n: i64) -> Result<u64> {
        if n < 2 {
            return Ok(int_value(n));
        }
        if n < 12 {
            let (a, b) = (fib(m, n - 1)?, fib(m, n - 2)?);
            return Ok(int_value(value_int(a) + value_int(b)));
        }
        let b = m.alloc(header(VECTOR, 1), 1)?;
        // SAFETY: fresh object.
        unsafe { m.init(b, 0, int_value(n)) };
        let (x, y) = m.par2(
            &[b],
            |m, env| fib(m, value_int(unsafe { m.field(env[0], 0) }) - 1),
            |m, env| fib(m, value_int(unsafe { m.field(env[0], 0) }) - 2),
        )?;
        Ok(int_value(value_int(x) + value_int(y)))
    }
    for plan in PLANS {
        let rt = runtime(plan, 2);
        let got = rt
            .run_on(0, |s| {
                // SAFETY: `fib` keeps the contract.
                let mut m = unsafe { s.compiled() };
                fib(&mut m, 22).map(value_int)
            })
            .unwrap()
            .unwrap();
        assert_eq!(got, 17711, "{plan:?}");
    }
}

#[test]
fn frames_left_pushed_are_popped_with_the_mutator() {
    let rt = runtime(crate::runtime::test_plan(), 1);
    let (before, inside, after) = rt
        .run_on(0, |s| {
            let before = s.roots_in_use();
            let inside = {
                // SAFETY: frames only.
                let mut m = unsafe { s.compiled() };
                let _f: Frame = m.push_frame(5);
                let g = m.push_frame(3);
                g.set(2, int_value(7));
                m.vproc() + 5 + g.len()
            };
            (before, inside, s.roots_in_use())
        })
        .unwrap();
    assert_eq!(inside, 8);
    assert_eq!(before, after);
}

/// A value held in a local across a collection, instead of a frame slot,
/// is caught in debug builds at its next use.
#[test]
#[cfg(debug_assertions)]
fn a_missing_root_is_caught_in_debug_builds() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let node = node_desc(&rt);
        let r = rt.run_on(0, move |s| {
            // SAFETY: this test breaks contract 1 on purpose; the debug
            // check must catch it before anything reads freed memory.
            let mut m = unsafe { s.compiled() };
            let h = header(node, 2);
            let t = make(&mut m, h, 4).unwrap(); // held in a local: the bug
            m.collect_minor();
            check(&m, t)
        });
        let e = r.expect_err("the stale read must panic").to_string();
        assert!(e.contains("stale value"), "{plan:?}: {e}");
    }
}

// ---- register code (`registers.rs`) ------------------------------------------

use super::{catch, Ctx, Hp, Sp};

/// [`make`] in register code: the allocation pointer and the stack's top
/// passed and returned, the left subtree in a frame at `sp` across the
/// second call, and both subtrees in frames when the node's allocation
/// takes its slow path.
fn make_r(m: Ctx<'_>, hp: Hp, sp: Sp, node: u64, depth: u32) -> (u64, Hp) {
    if depth == 0 {
        let (t, hp) = m.alloc_at(hp, sp, node, 2);
        // SAFETY: `t` is fresh, with two fields.
        unsafe {
            m.init(t, 0, NIL);
            m.init(t, 1, NIL);
        }
        return (t, hp);
    }
    let (l, hp) = make_r(m, hp, sp, node, depth - 1);
    let top = m.push_at(sp, [l]);
    let (r, hp) = make_r(m, hp, top, node, depth - 1);
    let (t, hp) = match m.try_alloc_at(hp, node, 2) {
        Some((t, hp)) => {
            // SAFETY: fresh; `r` returned since, `l` reloaded.
            unsafe { m.init(t, 1, r) };
            (t, hp)
        }
        None => {
            let above = m.push_at(top, [r]);
            let (t, hp) = m.alloc_at_slow(hp, above, node, 2);
            // SAFETY: fresh; `r` reloaded from its slot.
            unsafe { m.init(t, 1, top.get(0)) };
            (t, hp)
        }
    };
    // SAFETY: `t` is fresh; the left subtree is reloaded from its slot.
    unsafe { m.init(t, 0, sp.get(0)) };
    (t, hp)
}

/// [`make_r`] returning through the shadow stack (`Sp::pop`; the module
/// doc of `registers`): a frame `[NIL, depth, AFTER_LEFT]` while a left
/// subtree is built, `[left, depth, AFTER_RIGHT]` while the right one is,
/// and the right subtree in a frame above it across the node's allocation.
fn make_s(m: Ctx<'_>, hp: Hp, sp0: Sp, node: u64, depth: u32) -> (u64, Hp) {
    const AFTER_LEFT: u64 = int_value(0);
    const AFTER_RIGHT: u64 = int_value(1);
    let (mut hp, mut sp, mut d) = (hp, sp0, depth);
    loop {
        while d > 0 {
            sp = m.push_at(sp, [NIL, int_value(i64::from(d)), AFTER_LEFT]);
            d -= 1;
        }
        let (mut r, next) = m.alloc_at(hp, sp, node, 2);
        // SAFETY: fresh, with two fields.
        unsafe {
            m.init(r, 0, NIL);
            m.init(r, 1, NIL);
        }
        hp = next;
        loop {
            if sp == sp0 {
                return (r, hp);
            }
            // SAFETY: every frame above `sp0` was pushed by this loop with
            // three slots, the frames above the last popped.
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
                d = value_int(unsafe { f.get(1) }) as u32 - 1;
                break;
            }
            let above = m.push_at(sp, [r]);
            let (t, next) = m.alloc_at(hp, above, node, 2);
            // SAFETY: fresh; both subtrees reloaded from their slots.
            unsafe {
                m.init(t, 0, f.get(0));
                m.init(t, 1, sp.get(0));
            }
            (r, hp, sp) = (t, next, f);
        }
    }
}

#[test]
fn shadow_stack_returns_survive_collections_on_every_plan() {
    // Machine returns and shadow-stack returns alternate.
    trees_alternate(via_make_s, via_make_r);
}

/// [`check`] in register code.
#[cfg(debug_assertions)]
fn check_c(c: Ctx<'_>, t: u64) -> u64 {
    // SAFETY: as in `check`.
    count_nodes(&|o, i| unsafe { c.field(o, i) }, t)
}

/// A tree of depth `depth` by [`make_r`], from code on the record.
fn via_make_r(m: &mut Mutator<'_>, node: u64, depth: u32) -> Result<u64> {
    m.with_regs(|m, hp, sp| make_r(m, hp, sp, node, depth))
}

/// A tree of depth `depth` by [`make_s`], from code on the record.
fn via_make_s(m: &mut Mutator<'_>, node: u64, depth: u32) -> Result<u64> {
    m.with_regs(|m, hp, sp| make_s(m, hp, sp, node, depth))
}

/// On both plans, 2 vprocs: a tree of depth 12 by `even` kept in a frame
/// across 40 trees of depth 10 built alternately by `even` and `odd`,
/// under collections; every tree's node count checked, and the stack's
/// top back where it was.
fn trees_alternate(
    even: fn(&mut Mutator<'_>, u64, u32) -> Result<u64>,
    odd: fn(&mut Mutator<'_>, u64, u32) -> Result<u64>,
) {
    for plan in PLANS {
        let rt = runtime(plan, 2);
        let node = node_desc(&rt);
        let got = rt
            .run_each(move |s| -> Result<Vec<u64>> {
                // SAFETY: the builders keep the interface's contract.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let before = m.regs().1;
                let keep = m.push_frame(1);
                let t = even(&mut m, h, 12)?;
                keep.set(0, t);
                let mut counts = Vec::new();
                for i in 0..40 {
                    let t = if i % 2 == 0 {
                        even(&mut m, h, 10)?
                    } else {
                        odd(&mut m, h, 10)?
                    };
                    counts.push(check(&m, t));
                }
                counts.push(check(&m, keep.get(0)));
                m.pop_frame(keep);
                assert_eq!(m.regs().1, before, "the stack's top after register code");
                Ok(counts)
            })
            .unwrap();
        for c in got {
            assert_tree_counts(plan, &c.unwrap());
        }
        assert_collected(&rt, plan);
    }
}

#[test]
fn register_code_trees_survive_collections_on_every_plan() {
    // Register code and record code alternate.
    trees_alternate(via_make_r, make);
}

#[test]
fn register_code_polls_join_collections() {
    for plan in PLANS {
        let rt = runtime(plan, 2);
        let node = node_desc(&rt);
        let sums = rt
            .run_each(move |s| -> Result<i64> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                // A list of 20,000 boxed integers built in one frame slot,
                // a poll after every cell, in a combined allocation every
                // other time.
                let list = m.with_regs(|m, hp, sp| {
                    let top = m.push_at(sp, [NIL]);
                    let mut hp = hp;
                    for i in 0..20_000 {
                        let cell;
                        (cell, hp) = if i % 2 == 0 {
                            m.alloc_at(hp, top, h, 2)
                        } else {
                            let ([c], hp) = m.alloc_many_at(hp, top, [(h, 2)]);
                            (c, hp)
                        };
                        // SAFETY: fresh cell; the list's head in the slot.
                        unsafe {
                            m.init(cell, 0, int_value(i));
                            m.init(cell, 1, sp.get(0));
                            sp.set(0, cell);
                        }
                        hp = m.poll_at(hp, top);
                    }
                    // SAFETY: the slot holds the list.
                    (unsafe { sp.get(0) }, hp)
                })?;
                // SAFETY: list cells, no collection during the walk.
                Ok(list_sum(&|o, i| unsafe { m.field(o, i) }, list))
            })
            .unwrap();
        for s in sums {
            assert_eq!(s.unwrap(), (0..20_000).sum::<i64>(), "{plan:?}");
        }
    }
}

/// A list that grows until the heap limit, in register code: the slow
/// path raises the error, which comes back as `Err` from `with_regs`
/// (and from the job when nothing catches it), and the vproc goes on.
#[test]
fn the_heap_limit_in_register_code_is_an_error_and_the_runtime_carries_on() {
    fn grow(m: Ctx<'_>, hp: Hp, sp: Sp, h: u64) -> (u64, Hp) {
        let top = m.push_at(sp, [NIL]);
        let mut hp = hp;
        loop {
            let cell;
            (cell, hp) = m.alloc_at(hp, top, h, 2);
            // SAFETY: fresh; the list is in the slot.
            unsafe {
                m.init(cell, 0, int_value(1));
                m.init(cell, 1, sp.get(0));
                sp.set(0, cell);
            }
        }
    }
    for plan in PLANS {
        let cfg = small_test_config(plan, 2, true, DEFAULT_GLOBAL_GC_THRESHOLD)
            .max_heap(8 << 20)
            .build()
            .unwrap();
        let rt = Runtime::new(cfg).unwrap();
        let node = node_desc(&rt);
        let r = rt
            .run_on(0, move |s| {
                // SAFETY: `grow` keeps the interface's contract.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let before = m.regs().1;
                let e = m.with_regs(|m, hp, sp| grow(m, hp, sp, h)).unwrap_err();
                assert_eq!(
                    m.regs().1,
                    before,
                    "{plan:?}: the stack's top after the raise"
                );
                // The list is garbage now: the same mutator allocates again.
                let t = m.with_regs(|m, hp, sp| make_r(m, hp, sp, h, 10)).unwrap();
                let t = check(&m, t);
                let u = make(&mut m, h, 10).unwrap();
                (e, t, check(&m, u))
            })
            .unwrap();
        assert!(
            matches!(r.0.kind(), crate::ErrorKind::HeapLimit { .. }),
            "{plan:?}: {:?}",
            r.0
        );
        assert_eq!((r.1, r.2), (2047, 2047), "{plan:?}");
        // Uncaught, the error ends the job as itself (not as a panic).
        let e = rt
            .run_on(0, move |s| {
                // SAFETY: as above; `regs` and `set_regs` by hand, no catch.
                let m = unsafe { s.compiled() };
                let (hp, sp) = m.regs();
                let (_, hp) = grow(m.ctx(), hp, sp, header(node, 2));
                m.set_regs(hp, sp);
            })
            .unwrap_err();
        assert!(
            matches!(e.kind(), crate::ErrorKind::HeapLimit { .. }),
            "{plan:?}: {e:?}"
        );
        // Both vprocs carry on.
        let n = rt
            .run_each(move |s| {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let t = m
                    .with_regs(|m, hp, sp| make_r(m, hp, sp, header(node, 2), 8))
                    .unwrap();
                check(&m, t)
            })
            .unwrap();
        assert_eq!(n, vec![511, 511], "{plan:?}");
    }
}

/// Stores of young values into a mutable array from register code
/// (`store_at`): promoted on split, remembered on shared, surviving the
/// collections that garbage in between runs.
#[test]
fn register_code_stores_go_through_each_plans_barrier() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let node = node_desc(&rt);
        let sum = rt
            .run_on(0, move |s| -> Result<i64> {
                // SAFETY: as above.
                let mut m = unsafe { s.compiled() };
                let h = header(node, 2);
                let arr = m.alloc_shared(header(DescId(crate::object::header::ID_ARRAY), 64))?;
                let keep = m.push_frame_with([arr]);
                let sum = m.with_regs(|c, mut hp, sp| {
                    for round in 0..50 {
                        for i in 0..64 {
                            let cell;
                            (cell, hp) = c.alloc_at(hp, sp, h, 2);
                            // SAFETY: a fresh cell; the array is reloaded
                            // from its slot, below `sp`.
                            unsafe {
                                c.init(cell, 0, int_value(round * 64 + i as i64));
                                c.init(cell, 1, NIL);
                                hp = c.store_at(hp, sp, keep.get(0), i, cell);
                            }
                        }
                        // Garbage in between, so that collections run.
                        for _ in 0..200 {
                            (_, hp) = make_r(c, hp, sp, h, 3);
                        }
                    }
                    let mut sum = 0;
                    for i in 0..64 {
                        // SAFETY: the array is live in its slot.
                        let cell = unsafe { c.field_shared(keep.get(0), i) };
                        sum += value_int(unsafe { c.field(cell, 0) });
                    }
                    (sum, hp)
                })?;
                m.pop_frame(keep);
                Ok(sum)
            })
            .unwrap()
            .unwrap();
        assert_eq!(sum, (49 * 64..50 * 64).sum::<i64>(), "{plan:?}");
        assert_collected(&rt, plan);
    }
}

#[test]
fn catch_passes_other_panics_on() {
    let r = std::panic::catch_unwind(|| catch(|| panic!("not an error of the heap")));
    let p = r.expect_err("the panic goes on unwinding");
    assert_eq!(p.downcast_ref::<&str>(), Some(&"not an error of the heap"));
    let e = catch(|| super::raise(crate::Error::misuse("raised".to_string())));
    assert!(e.unwrap_err().to_string().contains("raised"));
}

/// A value held in a local across a collection in register code, instead
/// of a frame slot, is caught in debug builds at its next use.
#[test]
#[cfg(debug_assertions)]
fn a_missing_root_in_register_code_is_caught_in_debug_builds() {
    for plan in PLANS {
        let rt = runtime(plan, 1);
        let node = node_desc(&rt);
        let r = rt.run_on(0, move |s| {
            // SAFETY: this test breaks contract 1 on purpose; the debug
            // check must catch it before anything reads freed memory.
            let mut m = unsafe { s.compiled() };
            let h = header(node, 2);
            m.collect_minor();
            m.with_regs(|m, hp, sp| {
                // Garbage first, so that the tree does not lie where the
                // allocation after the collection goes.
                let mut hp = hp;
                for _ in 0..64 {
                    (_, hp) = make_r(m, hp, sp, h, 0);
                }
                let (t, mut hp) = make_r(m, hp, sp, h, 4); // held in a local: the bug
                let minors = || m.vproc().stats.minor.count;
                let before = minors();
                while minors() == before {
                    let c;
                    (c, hp) = m.alloc_at(hp, sp, h, 2);
                    // SAFETY: fresh.
                    unsafe {
                        m.init(c, 0, NIL);
                        m.init(c, 1, NIL);
                    }
                }
                (check_c(m, t), hp)
            })
        });
        let e = r.expect_err("the stale read must panic").to_string();
        assert!(e.contains("stale value"), "{plan:?}: {e}");
    }
}
