//! Random operation sequences on one vproc against a shadow model of every
//! live root's contents; after every operation the heap must match.

mod common;

use common::*;
use numagc::{DescId, Handle, ObjectKind, Runtime, Scope, View};
use proptest::prelude::*;
use std::sync::OnceLock;

#[derive(Clone, Debug)]
enum Op {
    Cons {
        elem: usize,
        payload: u64,
        int: i64,
    },
    Vector {
        elems: Vec<usize>,
        ints: Vec<i64>,
    },
    Raw(Vec<u64>),
    Array {
        len: usize,
        init: i64,
    },
    Promote(usize),
    Store {
        array: usize,
        slot: usize,
        value: usize,
    },
    Drop(usize),
    /// Allocate garbage (and some promotions) in a nested scope that is dropped.
    Scope(usize),
    Minor,
    Major,
    Global,
}

#[derive(Clone, Debug, PartialEq)]
enum Shape {
    Int(i64),
    Cons(Box<Shape>, u64),
    Vector(Vec<Shape>),
    Raw(Vec<u64>),
    /// Index into the model's array contents (arrays are mutable and shared).
    Array(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (any::<usize>(), any::<u64>(), any::<i64>()).prop_map(|(elem, payload, int)| Op::Cons { elem, payload, int: int >> 2 }),
        2 => (prop::collection::vec(any::<usize>(), 0..4), prop::collection::vec(-1000i64..1000, 0..4)).prop_map(|(elems, ints)| Op::Vector { elems, ints }),
        2 => prop::collection::vec(any::<u64>(), 0..6).prop_map(Op::Raw),
        1 => (1usize..6, -50i64..50).prop_map(|(len, init)| Op::Array { len, init }),
        2 => any::<usize>().prop_map(Op::Promote),
        2 => (any::<usize>(), any::<usize>(), any::<usize>()).prop_map(|(array, slot, value)| Op::Store { array, slot, value }),
        1 => any::<usize>().prop_map(Op::Drop),
        1 => (0usize..3000).prop_map(Op::Scope),
        1 => Just(Op::Minor),
        1 => Just(Op::Major),
        1 => Just(Op::Global),
    ]
}

fn contains_array(s: &Shape) -> bool {
    match s {
        Shape::Array(_) => true,
        Shape::Cons(e, _) => contains_array(e),
        Shape::Vector(v) => v.iter().any(contains_array),
        _ => false,
    }
}

fn check(v: View<'_>, shape: &Shape, arrays: &[Vec<Shape>], cons: DescId) -> Result<(), String> {
    match shape {
        Shape::Int(i) => (v.as_int() == Some(*i))
            .then_some(())
            .ok_or(format!("expected int {i}, got {v:?}")),
        Shape::Cons(e, p) => {
            if v.kind() != Some(ObjectKind::Mixed(cons)) {
                return Err(format!("expected cons, got {v:?}"));
            }
            if v.raw(1) != *p || v.field(2).as_int() != Some(0) {
                return Err(format!("cons payload/tail differ: {} vs {p}", v.raw(1)));
            }
            check(v.field(0), e, arrays, cons)
        }
        Shape::Vector(xs) => {
            if v.kind() != Some(ObjectKind::Vector) || v.len() != xs.len() {
                return Err(format!("expected vector of {}, got {v:?}", xs.len()));
            }
            xs.iter()
                .enumerate()
                .try_for_each(|(i, x)| check(v.field(i), x, arrays, cons))
        }
        Shape::Raw(ws) => (v.kind() == Some(ObjectKind::Raw) && v.raw_words() == Some(&ws[..]))
            .then_some(())
            .ok_or(format!("raw object differs: {v:?}")),
        Shape::Array(a) => {
            let xs = &arrays[*a];
            if v.kind() != Some(ObjectKind::Array) || v.len() != xs.len() {
                return Err(format!("expected array of {}, got {v:?}", xs.len()));
            }
            xs.iter()
                .enumerate()
                .try_for_each(|(i, x)| check(v.field(i), x, arrays, cons))
        }
    }
}

fn rt() -> &'static (Runtime, DescId) {
    static RT: OnceLock<(Runtime, DescId)> = OnceLock::new();
    RT.get_or_init(|| {
        let rt = runtime(1);
        let cons = register_cons(&rt);
        (rt, cons)
    })
}

fn run_ops(s: &mut Scope<'_>, cons: DescId, ops: &[Op]) -> Result<(), String> {
    let mut roots: Vec<(Handle<'_>, Shape)> = Vec::new();
    let mut arrays: Vec<Vec<Shape>> = Vec::new();
    let pick = |n: usize, k: usize| if n == 0 { None } else { Some(k % n) };
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Cons { elem, payload, int } => {
                let (e, shape) = match pick(roots.len(), *elem) {
                    Some(i) if elem % 3 != 0 => (roots[i].0, roots[i].1.clone()),
                    _ => (Handle::int(*int), Shape::Int(*int)),
                };
                let h = s
                    .alloc_mixed(cons, &[e, Handle::NIL], &[*payload])
                    .map_err(|e| e.to_string())?;
                roots.push((h, Shape::Cons(Box::new(shape), *payload)));
            }
            Op::Vector { elems, ints } => {
                let mut hs = Vec::new();
                let mut shapes = Vec::new();
                for &e in elems {
                    if let Some(i) = pick(roots.len(), e) {
                        hs.push(roots[i].0);
                        shapes.push(roots[i].1.clone());
                    }
                }
                for &i in ints {
                    hs.push(Handle::int(i));
                    shapes.push(Shape::Int(i));
                }
                let h = s.alloc_vector(&hs).map_err(|e| e.to_string())?;
                roots.push((h, Shape::Vector(shapes)));
            }
            Op::Raw(ws) => {
                let h = s.alloc_raw(ws).map_err(|e| e.to_string())?;
                roots.push((h, Shape::Raw(ws.clone())));
            }
            Op::Array { len, init } => {
                let h = s
                    .alloc_array(*len, Handle::int(*init))
                    .map_err(|e| e.to_string())?;
                arrays.push(vec![Shape::Int(*init); *len]);
                roots.push((h, Shape::Array(arrays.len() - 1)));
            }
            Op::Promote(k) => {
                if let Some(i) = pick(roots.len(), *k) {
                    let g = s.promote(roots[i].0).unwrap();
                    if s.view(g).is_object() && s.is_local(g) {
                        return Err(format!("step {step}: promoted value is local"));
                    }
                    roots.push((g, roots[i].1.clone()));
                }
            }
            Op::Store { array, slot, value } => {
                let arrs: Vec<usize> = (0..roots.len())
                    .filter(|&i| matches!(roots[i].1, Shape::Array(_)))
                    .collect();
                if let (Some(a), Some(v)) = (pick(arrs.len(), *array), pick(roots.len(), *value)) {
                    let (ah, Shape::Array(ai)) = roots[arrs[a]].clone() else {
                        unreachable!()
                    };
                    let slot = slot % arrays[ai].len();
                    let (vh, vs) = roots[v].clone();
                    if contains_array(&vs) {
                        // Storing arrays into arrays could make cycles the model cannot describe.
                        continue;
                    }
                    s.set(ah, slot, vh).map_err(|e| e.to_string())?;
                    arrays[ai][slot] = vs;
                    let stored = s.handle(s.view(ah).field(slot));
                    if s.view(stored).is_object() && s.is_local(stored) {
                        return Err(format!("step {step}: value stored into an array is local"));
                    }
                }
            }
            Op::Drop(k) => {
                if let Some(i) = pick(roots.len(), *k) {
                    roots.swap_remove(i);
                }
            }
            Op::Scope(n) => {
                let before = s.roots_in_use();
                s.scope(|s| {
                    garbage(s, cons, *n);
                    let l = build_list(s, cons, *n as i64, 50).unwrap();
                    let _ = s.promote(l).unwrap();
                });
                if s.roots_in_use() != before {
                    return Err(format!(
                        "step {step}: roots {before} -> {}",
                        s.roots_in_use()
                    ));
                }
            }
            Op::Minor => s.collect_minor(),
            Op::Major => s.collect_major().unwrap(),
            Op::Global => s.collect_global().unwrap(),
        }
        for (i, (h, shape)) in roots.iter().enumerate() {
            check(s.view(*h), shape, &arrays, cons)
                .map_err(|e| format!("step {step} ({op:?}), root {i}: {e}"))?;
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_operations_match_the_model(ops in prop::collection::vec(op(), 1..60)) {
        let (rt, cons) = rt();
        let cons = *cons;
        let r = rt.run_on(0, move |s| run_ops(s, cons, &ops)).unwrap();
        prop_assert!(r.is_ok(), "{}", r.unwrap_err());
    }
}
