//! Fork-join on vprocs (issue 3): stealing, lazy and eager promotion,
//! promoted results, nested parallelism, collections while tasks are in
//! flight, errors and panics in tasks, idle vprocs that sleep. The verifier
//! runs after every collection (common::test_config).

mod common;

use common::*;
use numagc::{Error, ErrorKind, Handle, Result, Scope, TaskPromotion, View};

/// A boxed integer: field 0 = the value (immediate), so results live in the heap.
fn boxed<'s>(s: &mut Scope<'s>, cell: numagc::DescId, x: i64) -> Result<Handle<'s>> {
    s.alloc_mixed(cell, &[Handle::int(x)], &[])
}

fn unbox(v: View<'_>) -> i64 {
    v.field(0).as_int().expect("boxed int")
}

/// Parallel Fibonacci with heap-allocated results; below `cutoff` sequential.
fn pfib<'s>(s: &mut Scope<'s>, cell: numagc::DescId, n: i64, cutoff: i64) -> Result<Handle<'s>> {
    if n < 2 {
        return boxed(s, cell, n);
    }
    if n < cutoff {
        let x = s.scope_value(|s| pfib(s, cell, n - 1, cutoff))?;
        let y = s.scope_value(|s| pfib(s, cell, n - 2, cutoff))?;
        let sum = unbox(s.view(x)) + unbox(s.view(y));
        return boxed(s, cell, sum);
    }
    let (x, y) = s.par2(
        &[],
        move |s, _| pfib(s, cell, n - 1, cutoff),
        move |s, _| pfib(s, cell, n - 2, cutoff),
    )?;
    let sum = unbox(s.view(x)) + unbox(s.view(y));
    boxed(s, cell, sum)
}

fn fib(n: i64) -> i64 {
    let (mut a, mut b) = (0i64, 1i64);
    for _ in 0..n {
        (a, b) = (b, a + b);
    }
    a
}

fn register_cell(rt: &numagc::Runtime) -> numagc::DescId {
    rt.register(numagc::Descriptor::mixed("cell", 1, &[0]).unwrap())
        .unwrap()
}

#[test]
fn par2_on_one_vproc_runs_inline_and_promotes_nothing() {
    let rt = runtime(1);
    let cell = register_cell(&rt);
    let r = rt
        .run_on(0, move |s| pfib(s, cell, 20, 8).map(|h| unbox(s.view(h))))
        .unwrap()
        .unwrap();
    assert_eq!(r, fib(20));
    let t = rt.stats().total;
    assert!(t.tasks_forked > 100, "forked {}", t.tasks_forked);
    assert_eq!(t.tasks_inline, t.tasks_forked);
    assert_eq!(t.tasks_stolen, 0);
    assert_eq!(
        t.bytes_promoted, 0,
        "lazy promotion promoted without a steal"
    );
}

#[test]
fn idle_vprocs_steal_nested_tasks() {
    let rt = runtime(2);
    let cell = register_cell(&rt);
    // Whether vproc 1 gets a CPU while the job runs is up to the OS (the
    // test binary runs several runtimes at once on few cores): run rounds
    // until it has stolen, up to a bound that a lost wake-up would exceed.
    for round in 0..200 {
        let r = rt
            .run_on(0, move |s| pfib(s, cell, 24, 10).map(|h| unbox(s.view(h))))
            .unwrap()
            .unwrap();
        assert_eq!(r, fib(24), "round {round}");
        // A thief publishes its statistics before it hands the result back.
        if round >= 2 && rt.stats().vprocs[1].tasks_stolen > 0 {
            break;
        }
    }
    let st = rt.stats();
    assert!(
        st.vprocs[1].tasks_stolen > 0,
        "vproc 1 never stole: {:?}",
        st.vprocs[1].tasks_stolen
    );
    assert_eq!(
        st.total.tasks_forked,
        st.total.tasks_inline + st.total.tasks_stolen
    );
}

/// The task's environment is a list in the owner's local heap; a stolen task
/// reads it (promoted on demand) and returns a new list built from it,
/// which the owner reads back (promoted result).
#[test]
fn stolen_tasks_see_their_environment_and_return_promoted_results() {
    for promotion in [TaskPromotion::Lazy, TaskPromotion::Eager] {
        let rt = numagc::Runtime::new(test_config(2).task_promotion(promotion).build().unwrap())
            .unwrap();
        let cons = register_cons(&rt);
        // Rounds until the other vproc has stolen (see idle_vprocs_steal_nested_tasks).
        let mut stolen = 0;
        for _round in 0..20 {
            let (round_stolen, checked) = rt
                .run_on(0, move |s| {
                    let mut stolen = 0;
                    let mut checked = 0;
                    for k in 0..200i64 {
                        s.scope(|s| {
                            let list = build_list(s, cons, k, 50).unwrap();
                            let (a, b) = s
                                .par2(
                                    &[list],
                                    move |s, env| {
                                        garbage(s, cons, 3_000);
                                        Ok(copy_list(s, cons, env[0]))
                                    },
                                    move |s, env| {
                                        // Burn a little time so the other vproc can steal.
                                        garbage(s, cons, 200);
                                        Ok(copy_list(s, cons, env[0]))
                                    },
                                )
                                .unwrap();
                            check_list(s, a, cons, &model_list(k, 50), "branch a");
                            check_list(s, b, cons, &model_list(k, 50), "branch b");
                            checked += 1;
                            if !s.is_local(b) {
                                stolen += 1;
                            }
                        });
                    }
                    (stolen, checked)
                })
                .unwrap();
            assert_eq!(checked, 200);
            stolen += round_stolen;
            if rt.stats().vprocs[1].tasks_stolen > 0 {
                break;
            }
        }
        let st = rt.stats();
        // A stolen task's result is global; one run here may be too (moved
        // by survivor promotion), so only the inequality is certain.
        assert!(
            st.vprocs[1].tasks_stolen > 0,
            "{promotion:?}: nothing was stolen"
        );
        assert!(
            stolen >= st.vprocs[1].tasks_stolen,
            "{promotion:?}: {stolen} global results, {} steals",
            st.vprocs[1].tasks_stolen
        );
        if promotion == TaskPromotion::Eager {
            assert_eq!(st.total.bytes_promoted > 0, split_plan());
        }
    }
}

/// A copy of a list (fresh cells, same elements), built in `s`.
fn copy_list<'s>(s: &mut Scope<'s>, cons: numagc::DescId, l: Handle<'_>) -> Handle<'s> {
    s.scope_value(|s| {
        let mut elems = Vec::new();
        let mut v = s.view(l);
        while v.is_object() {
            elems.push((s.handle(v.field(0)), v.raw(1)));
            v = v.field(2);
        }
        let out = s.slot(Handle::NIL);
        for (e, payload) in elems.into_iter().rev() {
            s.alloc_mixed_to(out, cons, &[e, out.get()], &[payload])?;
        }
        Ok::<_, Error>(out.get())
    })
    .unwrap()
}

/// Each level of a recursion builds a fresh local list and forks with it
/// as the environment; the leaves count the cells they can see.
fn fork_tree<'s>(
    s: &mut Scope<'s>,
    cons: numagc::DescId,
    depth: u32,
    seed: i64,
) -> Result<Handle<'s>> {
    let list = build_list(s, cons, seed, 20)?;
    if depth == 0 {
        let n = read_list(s.view(list), cons).unwrap().len() as i64;
        return s.alloc_vector(&[Handle::int(n)]);
    }
    let (a, b) = s.par2(
        &[list],
        move |s, env| {
            let x = fork_tree(s, cons, depth - 1, seed * 2)?;
            let n = read_list(s.view(env[0]), cons).unwrap().len() as i64
                + s.view(x).field(0).as_int().unwrap();
            s.alloc_vector(&[Handle::int(n)])
        },
        move |s, env| {
            let x = fork_tree(s, cons, depth - 1, seed * 2 + 1)?;
            let n = read_list(s.view(env[0]), cons).unwrap().len() as i64
                + s.view(x).field(0).as_int().unwrap();
            s.alloc_vector(&[Handle::int(n)])
        },
    )?;
    let n = s.view(a).field(0).as_int().unwrap() + s.view(b).field(0).as_int().unwrap();
    s.alloc_vector(&[Handle::int(n)])
}

/// Lazy promotion promotes only the environments of stolen tasks; eager
/// promotes every one. Same program, same answer.
#[test]
fn lazy_promotion_promotes_less_than_eager() {
    if !split_plan() {
        return; // nothing is promoted to be shared on the shared plan
    }
    const DEPTH: u32 = 9;
    let run = |promotion| {
        let rt = numagc::Runtime::new(test_config(2).task_promotion(promotion).build().unwrap())
            .unwrap();
        let cons = register_cons(&rt);
        let n = rt
            .run_on(0, move |s| {
                fork_tree(s, cons, DEPTH, 1).map(|h| s.view(h).field(0).as_int().unwrap())
            })
            .unwrap()
            .unwrap();
        (n, rt.stats().total)
    };
    let (lazy_n, lazy) = run(TaskPromotion::Lazy);
    let (eager_n, eager) = run(TaskPromotion::Eager);
    // 2^DEPTH leaves see 20 cells each; every inner fork adds 20 per branch.
    let expected = 20 * (1i64 << DEPTH) + 2 * 20 * ((1i64 << DEPTH) - 1);
    assert_eq!((lazy_n, eager_n), (expected, expected));
    assert!(eager.bytes_promoted > 0);
    assert!(
        lazy.bytes_promoted * 2 < eager.bytes_promoted,
        "lazy promoted {} bytes, eager {}",
        lazy.bytes_promoted,
        eager.bytes_promoted
    );
}

/// An eager fork parks its environment in global roots at once; the owner
/// that pops the task back frees them, a thief takes them, and a stolen
/// task's result is taken by the join: none is left after the run, on 1
/// vproc (every task popped back) or 2.
#[test]
fn eager_forks_leave_no_global_roots() {
    const DEPTH: u32 = 7;
    for vprocs in [1, 2] {
        let rt = numagc::Runtime::new(
            test_config(vprocs)
                .task_promotion(TaskPromotion::Eager)
                .build()
                .unwrap(),
        )
        .unwrap();
        let cons = register_cons(&rt);
        let before = rt.global_roots();
        let n = rt
            .run_on(0, move |s| {
                fork_tree(s, cons, DEPTH, 1).map(|h| s.view(h).field(0).as_int().unwrap())
            })
            .unwrap()
            .unwrap();
        assert_eq!(n, 20 * (1i64 << DEPTH) + 2 * 20 * ((1i64 << DEPTH) - 1));
        assert_eq!(
            rt.global_roots(),
            before,
            "global roots left by eager forks on {vprocs} vprocs"
        );
    }
}

/// Global collections forced inside tasks on both vprocs while others are
/// stolen or waiting: every result stays correct (verifier on).
#[test]
fn collections_while_tasks_are_in_flight() {
    let rt = runtime(2);
    let cell = register_cell(&rt);
    let r = rt
        .run_on(0, move |s| {
            s.par_reduce(
                &[],
                0,
                64,
                1,
                move |s, _, lo, _| {
                    if lo % 8 == 0 {
                        s.collect_global().unwrap();
                    } else if lo % 3 == 0 {
                        s.collect_minor();
                    }
                    let x = pfib(s, cell, 12, 100)?;
                    let v = unbox(s.view(x));
                    boxed(s, cell, v + lo as i64)
                },
                move |s, _, x, y| {
                    let t = unbox(s.view(x)) + unbox(s.view(y));
                    boxed(s, cell, t)
                },
            )
            .map(|h| unbox(s.view(h)))
        })
        .unwrap()
        .unwrap();
    assert_eq!(r, 64 * fib(12) + (0..64).sum::<i64>());
    // 8 requests; two made at once by both vprocs are one collection.
    assert!(
        rt.global_collections() >= 4,
        "{} global collections",
        rt.global_collections()
    );
}

/// Forks a branch `b` that fails while `a` keeps vproc 0 busy.
fn fork_failing<B>(rt: &numagc::Runtime, cell: numagc::DescId, b: B) -> numagc::Result<Result<()>>
where
    B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send + 'static,
{
    rt.run_on(0, move |s| {
        s.par2(
            &[],
            move |s, _| {
                garbage_cells(s, cell, 2_000);
                boxed(s, cell, 1)
            },
            b,
        )
        .map(|_| ())
    })
}

#[test]
fn errors_and_panics_in_tasks_are_reported_and_the_runtime_carries_on() {
    let rt = runtime(2);
    let cell = register_cell(&rt);
    for _ in 0..20 {
        let r = fork_failing(&rt, cell, |_, _| {
            Err(Error::misuse("task failed on purpose"))
        })
        .unwrap();
        assert!(
            matches!(&r, Err(e) if matches!(e.kind(), ErrorKind::Misuse(m) if m.contains("on purpose"))),
            "{r:?}"
        );
        let r = fork_failing(&rt, cell, |_, _| panic!("task panicked on purpose"));
        // Stolen: an error result; run inline: the job's panic.
        match r
            .map(|r| r.map_err(Error::into_kind))
            .map_err(Error::into_kind)
        {
            Ok(Err(ErrorKind::TaskPanicked { message, .. }))
            | Err(ErrorKind::TaskPanicked { message, .. }) => {
                assert!(message.contains("on purpose"), "{message}")
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    let ok = rt
        .run_on(0, move |s| pfib(s, cell, 18, 6).map(|h| unbox(s.view(h))))
        .unwrap()
        .unwrap();
    assert_eq!(ok, fib(18));
}

fn garbage_cells(s: &mut Scope<'_>, cell: numagc::DescId, n: usize) {
    s.scope(|s| {
        for k in 0..n {
            s.scope(|s| {
                boxed(s, cell, k as i64).unwrap();
            });
        }
    });
}

/// Every way out of `par2` pops the environment's slots: a job that catches
/// panics of `a` (and of `b` run inline) or gets errors keeps no root-stack
/// slots, so the objects they held can be collected.
#[test]
fn par2_restores_the_root_stack_on_panics_and_errors() {
    let rt = runtime(1);
    let cell = register_cell(&rt);
    rt.run_on(0, move |s| {
        let x = boxed(s, cell, 1).unwrap();
        let y = boxed(s, cell, 2).unwrap();
        let before = s.roots_in_use();
        for round in 0..100 {
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = s.par2(&[x, y], |_s, _env| panic!("a panics"), |_s, env| Ok(env[0]));
            }));
            assert!(
                caught.is_err(),
                "round {round}: the panic of `a` propagates"
            );
            assert_eq!(
                s.roots_in_use(),
                before,
                "round {round}: after a panic of a"
            );
            let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let _ = s.par2(
                    &[x, y],
                    |_s, env| Ok(env[1]),
                    |_s, _env| panic!("b panics, run here"),
                );
            }));
            assert!(
                caught.is_err(),
                "round {round}: the panic of `b` run here propagates"
            );
            assert_eq!(
                s.roots_in_use(),
                before,
                "round {round}: after a panic of b"
            );
            let e = s
                .par2(
                    &[x, y],
                    |_s, _env| Err(Error::misuse("a fails")),
                    |_s, env| Ok(env[0]),
                )
                .unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Misuse(_)));
            assert_eq!(s.roots_in_use(), before, "round {round}: after an error");
        }
        // The values are intact and par2 still works.
        let (a, b) = s
            .par2(&[x, y], |_s, env| Ok(env[0]), |_s, env| Ok(env[1]))
            .unwrap();
        assert_eq!((unbox(s.view(a)), unbox(s.view(b))), (1, 2));
    })
    .unwrap();
}

/// `par2` nested far deeper than the vproc's stack can hold: the fork that
/// finds the stack nearly used up returns `StackExhausted` (no crash), every
/// level unwinds with it, and the vproc carries on.
#[test]
fn forks_nested_past_the_stack_are_an_error_not_a_crash() {
    fn nest<'s>(s: &mut Scope<'s>, depth: u64) -> Result<Handle<'s>> {
        if depth == 0 {
            return Ok(s.nil());
        }
        // A frame of realistic size per level.
        let pad = std::hint::black_box([depth; 32]);
        let (x, _) = s.par2(
            &[],
            move |s, _| nest(s, depth - 1),
            |_, _| Ok(Handle::int(1)),
        )?;
        std::hint::black_box(pad);
        Ok(x)
    }
    // The smallest stack, so that the test reaches its end quickly.
    let rt = numagc::Runtime::new(test_config(1).vproc_stack(1 << 20).build().unwrap()).unwrap();
    let e = rt
        .run_on(0, |s| nest(s, 100_000_000).map(|_| ()))
        .unwrap()
        .unwrap_err();
    match e.into_kind() {
        ErrorKind::StackExhausted {
            vproc: 0,
            left,
            size,
        } => assert!(left < size, "{left} {size}"),
        e => panic!("{e}"),
    }
    // The vproc works, and forks again.
    let cell = register_cell(&rt);
    let r = rt
        .run_on(0, move |s| {
            let x = pfib(s, cell, 15, 5).unwrap();
            unbox(s.view(x))
        })
        .unwrap();
    assert_eq!(r, fib(15));
}
