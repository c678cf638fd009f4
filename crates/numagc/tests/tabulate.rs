//! Parallel sequences (issue 3, item 2): `tabulate`, `par_map`,
//! `seq_reduce` and the readers, on 1 and 2 vprocs with the verifier on
//! (common::test_config). Every result is compared element by element with
//! a plain Rust computation of the same function, and the rope's structure
//! (leaf sizes, stored lengths and depths, balance) is checked by walking
//! the heap objects directly.

mod common;

use common::*;
use numagc::object::header::ID_ROPE;
use numagc::{Error, ErrorKind, Handle, ObjectKind, Result, Runtime, Scope, View, ROPE_LEAF_MAX};

const VPROCS: [usize; 2] = [1, 2];

/// Element `i` of the test tabulates: a heap vector `[i, 3i + 1]`, so that
/// collections have elements to move and the result is not just immediates.
fn pair_elem<'s>(s: &mut Scope<'s>, i: usize) -> Result<Handle<'s>> {
    let i = i as i64;
    s.alloc_vector(&[Handle::int(i), Handle::int(3 * i + 1)])
}

fn model_pair(i: usize) -> (i64, i64) {
    (i as i64, 3 * i as i64 + 1)
}

fn read_pair(v: View<'_>) -> (i64, i64) {
    assert_eq!(
        v.kind(),
        Some(ObjectKind::Vector),
        "element is not a pair vector: {v:?}"
    );
    assert_eq!(v.len(), 2, "element is not a pair vector: {v:?}");
    (
        v.field(0).as_int().expect("int"),
        v.field(1).as_int().expect("int"),
    )
}

/// The elements of a sequence, read in order with `seq_for_each`.
fn read_pairs(s: &Scope<'_>, seq: Handle<'_>) -> Vec<(i64, i64)> {
    let mut out = Vec::new();
    s.seq_for_each(seq, |v| out.push(read_pair(v)))
        .expect("a sequence");
    out
}

/// The shape of a sequence read straight from its heap objects: the leaf
/// lengths in order and the depth, checking every rope node's stored length
/// and depth against its children.
#[derive(Debug, PartialEq)]
struct Shape {
    leaves: Vec<usize>,
    depth: usize,
}

fn shape(v: View<'_>) -> Shape {
    fn walk(v: View<'_>, leaves: &mut Vec<usize>) -> (usize, usize) {
        match v.kind() {
            Some(ObjectKind::Vector) => {
                assert!(
                    !v.is_empty() || leaves.is_empty(),
                    "an empty leaf inside a rope"
                );
                leaves.push(v.len());
                (v.len(), 0)
            }
            Some(ObjectKind::Mixed(d)) if d.id() == ID_ROPE => {
                let (ll, ld) = walk(v.field(2), leaves);
                let (rl, rd) = walk(v.field(3), leaves);
                assert_eq!(v.raw(0) as usize, ll + rl, "rope node length");
                assert_eq!(v.raw(1) as usize, 1 + ld.max(rd), "rope node depth");
                assert!(
                    ld.abs_diff(rd) <= 1,
                    "unbalanced node: depths {ld} and {rd}"
                );
                (ll + rl, 1 + ld.max(rd))
            }
            k => panic!("not a sequence node: {k:?}"),
        }
    }
    let mut leaves = Vec::new();
    let (_, depth) = walk(v, &mut leaves);
    Shape { leaves, depth }
}

/// The number of halvings of `n` until every part is at most `piece`.
fn expected_depth(n: usize, piece: usize) -> usize {
    let mut d = 0;
    while n.div_ceil(1 << d) > piece {
        d += 1;
    }
    d
}

fn run<R: Send + 'static>(rt: &Runtime, f: impl FnOnce(&mut Scope<'_>) -> R + Send + 'static) -> R {
    rt.run_on(0, f).expect("the job runs")
}

#[test]
fn short_tabulate_is_one_vector_with_the_right_elements() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        for (n, grain) in [
            (0, 1),
            (1, 1),
            (37, 5),
            (ROPE_LEAF_MAX, 16),
            (ROPE_LEAF_MAX, 1000),
        ] {
            run(&rt, move |s| {
                let seq = s
                    .tabulate(&[], 0, n, grain, |s, _, i| pair_elem(s, i))
                    .unwrap();
                assert_eq!(
                    s.view(seq).kind(),
                    Some(ObjectKind::Vector),
                    "n {n} grain {grain}"
                );
                assert_eq!(s.seq_len(seq).unwrap(), n);
                assert_eq!(s.seq_depth(seq).unwrap(), 0);
                let model: Vec<_> = (0..n).map(model_pair).collect();
                assert_eq!(
                    read_pairs(s, seq),
                    model,
                    "vprocs {vprocs} n {n} grain {grain}"
                );
            });
        }
        // A range that does not start at 0: `f` gets the indices themselves.
        run(&rt, |s| {
            let seq = s
                .tabulate(&[], 1000, 1100, 7, |s, _, i| pair_elem(s, i))
                .unwrap();
            let model: Vec<_> = (1000..1100).map(model_pair).collect();
            assert_eq!(read_pairs(s, seq), model);
        });
    }
}

#[test]
fn long_tabulate_is_a_balanced_rope_of_grain_sized_leaves() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        for (n, grain) in [(20_000, 64), (ROPE_LEAF_MAX + 1, 1000), (5_000, 1)] {
            run(&rt, move |s| {
                let seq = s
                    .tabulate(&[], 0, n, grain, |s, _, i| pair_elem(s, i))
                    .unwrap();
                let piece = grain.min(ROPE_LEAF_MAX);
                let sh = shape(s.view(seq));
                assert_eq!(sh.leaves.iter().sum::<usize>(), n);
                assert!(
                    sh.leaves.iter().all(|&l| l >= 1 && l <= piece),
                    "leaf sizes {:?}",
                    sh.leaves
                );
                assert_eq!(sh.depth, expected_depth(n, piece), "n {n} piece {piece}");
                assert_eq!(s.seq_depth(seq).unwrap(), sh.depth);
                assert_eq!(s.seq_len(seq).unwrap(), n);
                let model: Vec<_> = (0..n).map(model_pair).collect();
                assert_eq!(
                    read_pairs(s, seq),
                    model,
                    "seq_for_each, vprocs {vprocs} n {n}"
                );
                // Indexing descends the rope: every index, including both ends of every leaf.
                for (i, &expected) in model.iter().enumerate() {
                    let x = s.seq_get(seq, i).unwrap();
                    assert_eq!(read_pair(s.view(x)), expected, "seq_get {i}");
                }
                // Flattening copies the leaves, in order, into one vector.
                let flat = s.seq_to_vec(seq).unwrap();
                assert_eq!(s.view(flat).kind(), Some(ObjectKind::Vector));
                assert_eq!(read_pairs(s, flat), model, "seq_to_vec");
            });
        }
        // The 20 000-element rope has 9 levels: several, as the issue asks.
        assert_eq!(expected_depth(20_000, 64), 9);
        if vprocs == 2 {
            let t = rt.stats().total;
            assert!(t.tasks_forked > 0 && t.tasks_forked == t.tasks_inline + t.tasks_stolen);
        }
    }
}

#[test]
fn par_map_keeps_the_shape_of_vectors_and_ropes() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        run(&rt, move |s| {
            // A vector longer than a leaf stays one vector.
            let n = 1000;
            let hs: Vec<_> = (0..n).map(|i| Handle::int(i as i64)).collect();
            let vector = s.alloc_vector(&hs).unwrap();
            let k = Handle::int(5);
            let mapped = s
                .par_map(&[k], vector, 37, |s, env, x| {
                    let x = s.as_int(x).unwrap();
                    let k = s.as_int(env[0]).unwrap();
                    s.alloc_vector(&[Handle::int(x), Handle::int(k * x)])
                })
                .unwrap();
            assert_eq!(
                shape(s.view(mapped)),
                Shape {
                    leaves: vec![n],
                    depth: 0
                }
            );
            let mut got = Vec::new();
            s.seq_for_each(mapped, |v| got.push(read_pair(v))).unwrap();
            let model: Vec<_> = (0..n as i64).map(|x| (x, 5 * x)).collect();
            assert_eq!(got, model, "par_map over a vector, vprocs {vprocs}");

            // A rope gives a rope of the same structure.
            let rope = s
                .tabulate(&[], 0, 5_000, 100, |s, _, i| pair_elem(s, i))
                .unwrap();
            let before = shape(s.view(rope));
            assert!(before.depth >= 5, "depth {}", before.depth);
            let mapped = s
                .par_map(&[], rope, 30, |s, _, x| {
                    let (a, b) = read_pair(s.view(x));
                    Ok(Handle::int(a * 1_000 + b))
                })
                .unwrap();
            assert_eq!(
                shape(s.view(mapped)),
                before,
                "par_map changed the rope's structure"
            );
            let mut got = Vec::new();
            s.seq_for_each(mapped, |v| got.push(v.as_int().unwrap()))
                .unwrap();
            let model: Vec<_> = (0..5_000)
                .map(model_pair)
                .map(|(a, b)| a * 1_000 + b)
                .collect();
            assert_eq!(got, model, "par_map over a rope, vprocs {vprocs}");
            // The input is unchanged.
            assert_eq!(
                read_pairs(s, rope),
                (0..5_000).map(model_pair).collect::<Vec<_>>()
            );
        });
    }
}

/// Affine maps x ↦ a·x + b (mod P) under composition: associative but not
/// commutative, so a reduction that combined out of order would differ.
const P: i64 = 1_000_003;

fn affine(i: usize) -> (i64, i64) {
    ((i as i64 * 7 + 3) % P, (i as i64 * 13 + 11) % P)
}

/// "first f, then g".
fn then(f: (i64, i64), g: (i64, i64)) -> (i64, i64) {
    ((g.0 * f.0) % P, (g.0 * f.1 + g.1) % P)
}

#[test]
fn seq_reduce_combines_in_sequence_order() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        run(&rt, move |s| {
            for (n, grain) in [(1, 1), (200, 9), (7_000, 50)] {
                let seq = s
                    .tabulate(&[], 0, n, grain, |s, _, i| {
                        let (a, b) = affine(i);
                        s.alloc_vector(&[Handle::int(a), Handle::int(b)])
                    })
                    .unwrap();
                let r = s
                    .seq_reduce(&[], seq, 16, Handle::NIL, |s, _, f, g| {
                        let (f, g) = (read_pair(s.view(f)), read_pair(s.view(g)));
                        let (a, b) = then(f, g);
                        s.alloc_vector(&[Handle::int(a), Handle::int(b)])
                    })
                    .unwrap();
                let model = (1..n).map(affine).fold(affine(0), then);
                assert_eq!(read_pair(s.view(r)), model, "n {n} vprocs {vprocs}");
            }
            // Empty: the unit comes back; an environment reaches `combine`.
            let empty = s.tabulate(&[], 3, 3, 1, |s, _, i| pair_elem(s, i)).unwrap();
            let r = s
                .seq_reduce(&[], empty, 4, Handle::int(-1), |_, _, x, _| Ok(x))
                .unwrap();
            assert_eq!(s.as_int(r), Some(-1));
            let ints = s
                .tabulate(&[], 0, 3_000, 64, |_, _, i| Ok(Handle::int(i as i64)))
                .unwrap();
            // The environment reaches `combine`: a sum modulo a boxed modulus.
            let modulus = s.alloc_vector(&[Handle::int(1_009)]).unwrap();
            let sum = s
                .seq_reduce(&[modulus], ints, 40, Handle::int(0), |s, env, x, y| {
                    let m = s.view(env[0]).field(0).as_int().unwrap();
                    Ok(Handle::int(
                        (s.as_int(x).unwrap() + s.as_int(y).unwrap()) % m,
                    ))
                })
                .unwrap();
            assert_eq!(
                s.as_int(sum),
                Some((0..3_000i64).fold(0, |a, x| (a + x) % 1_009))
            );
        });
    }
}

#[test]
fn nested_tabulates_build_sequences_of_sequences() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        run(&rt, move |s| {
            let outer_n = 24;
            let scale = Handle::int(1_000);
            // Element i of the outer sequence is a sequence of i·40 elements
            // i·scale + j: ropes from i = 7 on, built by tasks of the outer one.
            let nested = s
                .tabulate(&[scale], 0, outer_n, 1, |s, env, i| {
                    let scale = s.as_int(env[0]).unwrap();
                    s.tabulate(&[], 0, i * 40, 16, move |_, _, j| {
                        Ok(Handle::int(i as i64 * scale + j as i64))
                    })
                })
                .unwrap();
            assert_eq!(s.seq_len(nested).unwrap(), outer_n);
            assert_eq!(
                s.seq_depth(nested).unwrap(),
                0,
                "24 elements fit one vector"
            );
            for i in 0..outer_n {
                let inner = s.seq_get(nested, i).unwrap();
                assert_eq!(s.seq_len(inner).unwrap(), i * 40);
                assert_eq!(
                    s.seq_depth(inner).unwrap() > 0,
                    i * 40 > ROPE_LEAF_MAX,
                    "inner {i}"
                );
                let mut got = Vec::new();
                s.seq_for_each(inner, |v| got.push(v.as_int().unwrap()))
                    .unwrap();
                let model: Vec<i64> = (0..i * 40).map(|j| i as i64 * 1_000 + j as i64).collect();
                assert_eq!(got, model, "inner sequence {i}, vprocs {vprocs}");
            }
            // Nested reduction: the sum of the inner sums.
            let total = s
                .seq_reduce(&[], nested, 1, Handle::int(0), |s, _, x, y| {
                    let sum_of = |s: &mut Scope<'_>, h| -> Result<i64> {
                        if s.as_int(h).is_some() {
                            return Ok(s.as_int(h).unwrap());
                        }
                        let r = s.seq_reduce(&[], h, 32, Handle::int(0), |s, _, a, b| {
                            Ok(Handle::int(s.as_int(a).unwrap() + s.as_int(b).unwrap()))
                        })?;
                        Ok(s.as_int(r).unwrap())
                    };
                    let (a, b) = (sum_of(s, x)?, sum_of(s, y)?);
                    Ok(Handle::int(a + b))
                })
                .unwrap();
            let model: i64 = (0..outer_n)
                .flat_map(|i| (0..i * 40).map(move |j| i as i64 * 1_000 + j as i64))
                .sum();
            assert_eq!(s.as_int(total), Some(model));
        });
    }
}

/// The first index where `got` and `model` differ (`len` when one is a
/// prefix of the other), `None` when they are equal.
fn first_difference<T: PartialEq>(got: &[T], model: &[T]) -> Option<usize> {
    got.iter()
        .zip(model)
        .position(|(g, m)| g != m)
        .or((got.len() != model.len()).then(|| got.len().min(model.len())))
}

#[test]
fn collections_during_the_build_keep_every_element() {
    for vprocs in VPROCS {
        // A 64 KiB local heap and a global trigger of one chunk: the build
        // runs minor, major and global collections many times over.
        let config = test_config(vprocs)
            .local_heap_size(64 * KIB)
            .global_gc_threshold(CHUNK)
            .build()
            .unwrap();
        let rt = Runtime::new(config).unwrap();
        let n = 30_000;
        // On 2 vprocs, rounds until a piece was stolen (usually the first),
        // so that promoted pieces of the rope are checked too.
        for round in 0..5 {
            let (built, mapped) = run(&rt, move |s| {
                let seq = s
                    .tabulate(&[], 0, n, 50, |s, _, i| {
                        // Garbage between elements, so that collections move the
                        // partial pieces and the elements of other pieces.
                        s.scope(|s| {
                            for k in 0..4 {
                                s.alloc_vector(&[Handle::int(k); 6]).unwrap();
                            }
                        });
                        let inner = pair_elem(s, i)?;
                        s.alloc_vector(&[inner, Handle::int(i as i64)])
                    })
                    .unwrap();
                s.collect_global().unwrap();
                let read = |s: &Scope<'_>, seq| {
                    let mut got = Vec::new();
                    s.seq_for_each(seq, |v| {
                        got.push((read_pair(v.field(0)), v.field(1).as_int().unwrap()))
                    })
                    .unwrap();
                    got
                };
                let model: Vec<_> = (0..n).map(|i| (model_pair(i), i as i64)).collect();
                let built = first_difference(&read(s, seq), &model);
                // A par_map over the rope, with the same garbage, after the collections.
                let mapped = s
                    .par_map(&[], seq, 25, |s, _, x| {
                        s.scope(|s| s.alloc_vector(&[Handle::int(0); 8]).map(|_| ()))?;
                        let (a, b) = read_pair(s.view(x).field(0));
                        Ok(Handle::int(a + b))
                    })
                    .unwrap();
                s.collect_minor();
                let mut got = Vec::new();
                s.seq_for_each(mapped, |v| got.push(v.as_int().unwrap()))
                    .unwrap();
                let mapped =
                    first_difference(&got, &(0..n).map(|i| 4 * i as i64 + 1).collect::<Vec<_>>());
                (built, mapped)
            });
            assert_eq!(
                built, None,
                "tabulate under collections: first wrong element, vprocs {vprocs} round {round}"
            );
            assert_eq!(
                mapped, None,
                "par_map under collections: first wrong element, vprocs {vprocs} round {round}"
            );
            if vprocs == 1 || rt.stats().total.tasks_stolen > 0 {
                break;
            }
        }
        let t = rt.stats().total;
        if vprocs == 2 {
            assert!(
                t.tasks_stolen > 0 && (t.bytes_promoted > 0 || !split_plan()),
                "no piece was stolen in 5 rounds"
            );
        }
        assert!(t.minor.count > 10, "minor collections: {}", t.minor.count);
        assert!(t.major.count > 0, "major collections: {}", t.major.count);
        assert!(
            rt.global_collections() > 1,
            "global collections: {}",
            rt.global_collections()
        );
    }
}

fn misuse(r: Result<impl std::fmt::Debug>) -> String {
    match r.map_err(Error::into_kind) {
        Err(ErrorKind::Misuse(m)) => m,
        other => panic!("expected a misuse error, got {other:?}"),
    }
}

#[test]
fn misuse_is_an_error_that_names_the_problem() {
    for vprocs in VPROCS {
        let rt = runtime(vprocs);
        let cons = register_cons(&rt);
        run(&rt, move |s| {
            let m = misuse(s.tabulate(&[], 0, 10, 0, |s, _, i| pair_elem(s, i)));
            assert!(m.contains("tabulate") && m.contains("grain"), "{m}");
            let m = misuse(s.tabulate(&[], 10, 5, 4, |s, _, i| pair_elem(s, i)));
            assert!(m.contains("10..5") && m.contains("reversed"), "{m}");

            let seq = s
                .tabulate(&[], 0, 1_000, 10, |s, _, i| pair_elem(s, i))
                .unwrap();
            let m = misuse(s.seq_get(seq, 1_000));
            assert!(m.contains("index 1000") && m.contains("length 1000"), "{m}");
            let small = s
                .tabulate(&[], 0, 3, 10, |s, _, i| pair_elem(s, i))
                .unwrap();
            let m = misuse(s.seq_get(small, usize::MAX));
            assert!(m.contains("out of range"), "{m}");

            let m = misuse(s.par_map(&[], seq, 0, |_, _, x| Ok(x)));
            assert!(m.contains("par_map") && m.contains("grain"), "{m}");
            let m = misuse(s.seq_reduce(&[], seq, 0, Handle::NIL, |_, _, x, _| Ok(x)));
            assert!(m.contains("seq_reduce") && m.contains("grain"), "{m}");

            // Values that are not sequences: an immediate, a raw object, a
            // mixed object of the embedder.
            let raw = s.alloc_raw(&[1, 2, 3]).unwrap();
            let cell = s
                .alloc_mixed(cons, &[Handle::NIL, Handle::NIL], &[7])
                .unwrap();
            for (what, h) in [
                ("an immediate", Handle::int(4)),
                ("Raw", raw),
                ("Mixed", cell),
            ] {
                let m = misuse(s.seq_len(h));
                assert!(
                    m.contains("seq_len") && m.contains("not a sequence") && m.contains(what),
                    "{m}"
                );
                assert!(misuse(s.seq_get(h, 0)).contains("not a sequence"));
                assert!(misuse(s.seq_depth(h)).contains("not a sequence"));
                assert!(misuse(s.seq_to_vec(h)).contains("not a sequence"));
                assert!(misuse(s.seq_for_each(h, |_| ())).contains("not a sequence"));
                assert!(misuse(s.par_map(&[], h, 4, |_, _, x| Ok(x))).contains("par_map"));
                assert!(
                    misuse(s.seq_reduce(&[], h, 4, Handle::NIL, |_, _, x, _| Ok(x)))
                        .contains("not a sequence")
                );
            }

            // An error of the element function comes back, from any piece.
            let r = s.tabulate(&[], 0, 2_000, 16, |s, _, i| {
                if i == 1_234 {
                    return Err(Error::misuse("element 1234 refused"));
                }
                pair_elem(s, i)
            });
            assert!(misuse(r).contains("element 1234 refused"));
            let r = s.par_map(&[], seq, 8, |s, _, x| {
                let (a, _) = read_pair(s.view(x));
                if a == 999 {
                    return Err(Error::misuse("element 999 refused"));
                }
                Ok(x)
            });
            assert!(misuse(r).contains("element 999 refused"));
            // The runtime is still usable afterwards.
            let again = s
                .tabulate(&[], 0, 300, 16, |s, _, i| pair_elem(s, i))
                .unwrap();
            assert_eq!(
                read_pairs(s, again),
                (0..300).map(model_pair).collect::<Vec<_>>()
            );
        });
    }
}

/// A rope far deeper than any tabulate builds (an embedder's own nodes, one
/// element per level): `par_map` and `seq_reduce` recurse one fork per
/// level, and where the vproc's stack runs short they return
/// `StackExhausted` instead of overflowing it; the iterative readers
/// (`seq_len`, `seq_get`, `seq_for_each`) walk it whole.
#[test]
fn a_rope_deeper_than_the_stack_is_an_error_not_a_crash() {
    const DEPTH: usize = 200_000;
    // The smallest stack: the comb is far deeper than it can fork.
    let rt = Runtime::new(test_config(1).vproc_stack(1 << 20).build().unwrap()).unwrap();
    let out = rt
        .run_on(0, |s| {
            let some = s
                .tabulate(&[], 0, ROPE_LEAF_MAX + 1, 64, |_, _, i| {
                    Ok(Handle::int(i as i64))
                })
                .unwrap();
            let Some(ObjectKind::Mixed(rope)) = s.view(some).kind() else {
                panic!("tabulate of more than a leaf is a rope");
            };
            // A right comb: node k = (vector [k], node k-1).
            let first = s.alloc_vector(&[Handle::int(0)]).unwrap();
            let deep = s.slot(first);
            for k in 1..DEPTH {
                s.scope(|s| {
                    let leaf = s.alloc_vector(&[Handle::int(k as i64)]).unwrap();
                    let node = s
                        .alloc_mixed(rope, &[leaf, deep.get()], &[k as u64 + 1, k as u64])
                        .unwrap();
                    s.assign(deep, node);
                });
            }
            let deep = deep.get();
            assert_eq!(s.seq_len(deep).unwrap(), DEPTH);
            let last = s.seq_get(deep, DEPTH - 1).unwrap();
            assert_eq!(s.as_int(last), Some(0));
            let mut sum = 0;
            s.seq_for_each(deep, |v| sum += v.as_int().unwrap())
                .unwrap();
            assert_eq!(sum, (DEPTH * (DEPTH - 1) / 2) as i64);
            let mapped = s.par_map(&[], deep, 64, |_, _, x| Ok(x)).map(|_| ());
            let reduced = s
                .seq_reduce(&[], deep, 64, Handle::int(0), |s, _, x, y| {
                    let (x, y) = (s.as_int(x).unwrap(), s.as_int(y).unwrap());
                    Ok(Handle::int(x + y))
                })
                .map(|h| s.as_int(h));
            (mapped, reduced)
        })
        .unwrap();
    for r in [out.0.map(|_| None), out.1] {
        match r.map_err(Error::into_kind) {
            Err(ErrorKind::StackExhausted { vproc: 0, .. }) => {}
            other => panic!("expected StackExhausted, got {other:?}"),
        }
    }
    // The vproc carries on.
    let n = rt
        .run_on(0, |s| {
            let t = s
                .tabulate(&[], 0, 10_000, 64, |_, _, i| Ok(Handle::int(i as i64)))
                .unwrap();
            s.seq_len(t).unwrap()
        })
        .unwrap();
    assert_eq!(n, 10_000);
}
