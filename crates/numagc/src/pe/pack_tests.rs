//! Tests of packing: round trips between two runtimes, random DAGs
//! compared by a checker of their own, refusals on both sides, and
//! collections during unpacking.

use super::*;
use crate::runtime::{small_test_config, test_plan};
use crate::{Config, Runtime};
use proptest::prelude::*;
use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

/// The PE number the receiving side gives to the sender.
const SENDER: usize = 7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Descs {
    /// `[elem (value), payload (raw), tail (value)]`.
    cons: DescId,
    /// `[raw, value, raw, value]`.
    leaf: DescId,
    /// 40 fields, values at 0, 7 and 39 (no packed layout).
    wide: DescId,
    /// Two raw fields, no value.
    blob: DescId,
}

fn descriptors() -> [Descriptor; 4] {
    [
        Descriptor::mixed("cons", 3, &[0, 2]).unwrap(),
        Descriptor::mixed("leaf", 4, &[1, 3]).unwrap(),
        Descriptor::mixed("wide", 40, &[0, 7, 39]).unwrap(),
        Descriptor::mixed("blob", 2, &[]).unwrap(),
    ]
}

fn config() -> Config {
    small_test_config(test_plan(), 1, true, 1 << 20)
        .build()
        .unwrap()
}

/// A runtime with the test descriptors registered in the usual order.
fn runtime_with(cfg: Config) -> (Runtime, Descs) {
    let rt = Runtime::new(cfg).unwrap();
    let [cons, leaf, wide, blob] = descriptors().map(|d| rt.register(d).unwrap());
    (
        rt,
        Descs {
            cons,
            leaf,
            wide,
            blob,
        },
    )
}

/// Two runtimes with the same descriptors: a sender and a receiver.
fn two() -> (Runtime, Runtime, Descs) {
    let (a, da) = runtime_with(config());
    let (b, db) = runtime_with(config());
    assert_eq!(da, db);
    (a, b, da)
}

/// Builds values in `rt` and packs them.
fn send<F>(rt: &Runtime, limit: usize, build: F) -> Result<Vec<u64>>
where
    F: for<'s> FnOnce(&mut Scope<'s>) -> Result<Vec<Handle<'s>>> + Send + 'static,
{
    rt.run_on(0, move |s| {
        let values = build(s)?;
        pack(s, &values, limit)
    })?
}

/// The message of the refusal of `words` by `rt`, checked to be
/// `ErrorKind::Pe` naming the sender.
fn refused(rt: &Runtime, words: Vec<u64>) -> String {
    let r = rt.run_on(0, move |s| unpack(s, &words, SENDER).map(|v| v.len()));
    match r.unwrap().map_err(Error::into_kind) {
        Err(ErrorKind::Pe {
            pe: SENDER,
            message,
        }) => {
            assert!(message.starts_with("refused packet: "), "{message}");
            message
        }
        other => panic!("expected a refusal from PE {SENDER}, got {other:?}"),
    }
}

fn not_exportable(r: Result<Vec<u64>>) -> String {
    match r.map_err(Error::into_kind) {
        Err(ErrorKind::NotExportable(m)) => m,
        other => panic!("expected NotExportable, got {other:?}"),
    }
}

// ---- an independent checker: the canonical form of a graph ---------------

#[derive(Clone, Debug, PartialEq, Eq)]
enum Val {
    Int(i64),
    /// The object's number in breadth-first order of discovery.
    Obj(usize),
}

#[derive(Debug, PartialEq, Eq)]
enum Node {
    Raw(Vec<u64>),
    Vector(Vec<Val>),
    Mixed(u16, Vec<Result<Val, u64>>),
}

/// The graph reachable from `values`, with objects numbered breadth-first
/// and every field read through the public `View` API: two graphs are
/// equal with the same sharing exactly when their forms are equal.
fn canon(s: &Scope<'_>, values: &[Handle<'_>]) -> (Vec<Val>, Vec<Node>) {
    fn val<'a>(v: View<'a>, ids: &mut HashMap<u64, usize>, queue: &mut VecDeque<View<'a>>) -> Val {
        if let Some(i) = v.as_int() {
            return Val::Int(i);
        }
        let next = ids.len();
        Val::Obj(*ids.entry(v.identity()).or_insert_with(|| {
            queue.push_back(v);
            next
        }))
    }
    let (mut ids, mut queue) = (HashMap::new(), VecDeque::new());
    let roots = values
        .iter()
        .map(|&h| val(s.view(h), &mut ids, &mut queue))
        .collect();
    let mut nodes = Vec::new();
    while let Some(v) = queue.pop_front() {
        let mut visit = |f| val(f, &mut ids, &mut queue);
        nodes.push(match v.kind().unwrap() {
            ObjectKind::Raw => Node::Raw(v.raw_words().unwrap().to_vec()),
            ObjectKind::Vector => Node::Vector((0..v.len()).map(|i| visit(v.field(i))).collect()),
            ObjectKind::Mixed(d) => Node::Mixed(
                d.id(),
                (0..v.len())
                    .map(|i| v.try_field(i).map(&mut visit).map_err(|_| v.raw(i)))
                    .collect(),
            ),
            ObjectKind::Array => panic!("no arrays in these tests"),
        });
    }
    (roots, nodes)
}

/// Sends what `build` makes from `a` to `b`; both canonical forms, which
/// the caller compares, and the packet.
type Form = (Vec<Val>, Vec<Node>);
fn round_trip<F>(a: &Runtime, b: &Runtime, build: F) -> (Form, Form, Vec<u64>)
where
    F: for<'s> FnOnce(&mut Scope<'s>) -> Result<Vec<Handle<'s>>> + Send + 'static,
{
    let (packet, sent) = a
        .run_on(0, move |s| -> Result<_> {
            let values = build(s)?;
            Ok((pack(s, &values, usize::MAX)?, canon(s, &values)))
        })
        .unwrap()
        .unwrap();
    let words = packet.clone();
    let got = b
        .run_on(0, move |s| -> Result<_> {
            let values = unpack(s, &words, SENDER)?;
            s.collect_major()?; // everything moves; sharing must stay
            Ok(canon(s, &values))
        })
        .unwrap()
        .unwrap();
    assert_eq!(
        packet[1] as usize,
        sent.1.len(),
        "one packed object per distinct object"
    );
    (sent, got, packet)
}

// ---- round trips -------------------------------------------------------------

#[test]
fn immediates_lists_raw_and_mixed_objects_round_trip() {
    let (a, b, d) = two();
    let (sent, got, packet) = round_trip(&a, &b, move |s| {
        let raw = s.alloc_raw(&[0, 2, u64::MAX, 0xdead_beef_0000])?; // even words too
        let mut list = s.nil();
        for i in 0..10 {
            list = s.alloc_mixed(d.cons, &[Handle::int(i), list], &[i as u64 * 2])?;
        }
        let leaf = s.alloc_mixed(d.leaf, &[raw, Handle::int(-3)], &[4, 6])?;
        let mut wide_vals = [Handle::int(1); 3];
        wide_vals[1] = leaf;
        let raws: Vec<u64> = (0..37).map(|i| i * 1000).collect();
        let wide = s.alloc_mixed(d.wide, &wide_vals, &raws)?;
        let blob = s.alloc_mixed(d.blob, &[], &[8, 10])?;
        let empty = s.alloc_vector(&[])?;
        Ok(vec![
            Handle::int(5),
            list,
            wide,
            blob,
            Handle::int(-(1 << 62)),
            empty,
            raw,
        ])
    });
    assert_eq!(sent, got);
    assert_eq!(got.0[0], Val::Int(5));
    assert_eq!(got.0[4], Val::Int(-(1 << 62)));
    assert_eq!(packet[0], 7);
    assert_eq!(packet[2], 4, "four descriptors in the table");
}

#[test]
fn sharing_is_kept() {
    let (a, b, d) = two();
    let words = send(&a, usize::MAX, move |s| {
        let c = s.alloc_vector(&[Handle::int(1), Handle::int(2)])?;
        let leaf = s.alloc_mixed(d.leaf, &[c, c], &[0, 0])?;
        let cons = s.alloc_mixed(d.cons, &[c, Handle::NIL], &[5])?;
        let root = s.alloc_vector(&[leaf, c, cons])?;
        Ok(vec![root, c])
    })
    .unwrap();
    assert_eq!(words[1], 4, "c, leaf, cons and root, each once");
    b.run_on(0, move |s| {
        let vs = unpack(s, &words, SENDER).unwrap();
        s.collect_major().unwrap();
        let (root, c) = (s.view(vs[0]), s.view(vs[1]));
        assert!(root.field(1).same(c));
        assert!(root.field(0).field(1).same(c) && root.field(0).field(3).same(c));
        assert!(root.field(2).field(0).same(c));
        assert_eq!((c.len(), c.field(1).as_int()), (2, Some(2)));
    })
    .unwrap();
}

#[test]
fn a_list_of_a_million_cells_needs_no_deep_stack() {
    const N: i64 = 1_000_000;
    let (a, b, d) = two();
    let words = send(&a, usize::MAX, move |s| {
        let list = s.slot(Handle::NIL);
        for i in 0..N {
            s.alloc_mixed_to(list, d.cons, &[Handle::int(i), list.get()], &[i as u64 * 7])?;
        }
        Ok(vec![list.get()])
    })
    .unwrap();
    assert_eq!(words.len(), 3 + 2 + 4 * N as usize + 1);
    b.run_on(0, move |s| {
        let vs = unpack(s, &words, SENDER).unwrap();
        let mut v = s.view(vs[0]);
        for i in (0..N).rev() {
            assert_eq!((v.field(0).as_int(), v.raw(1)), (Some(i), i as u64 * 7));
            v = v.field(2);
        }
        assert_eq!(v.as_int(), Some(0));
    })
    .unwrap();
}

#[test]
fn a_vector_of_100_000_fields_round_trips() {
    let (a, b, _) = two();
    let (sent, got, _) = round_trip(&a, &b, |s| {
        let shared = s.alloc_raw(&[42])?;
        let fields: Vec<Handle<'_>> = (0..100_000)
            .map(|i| {
                if i % 1000 == 0 {
                    shared
                } else {
                    Handle::int(i)
                }
            })
            .collect();
        Ok(vec![s.alloc_vector(&fields)?])
    });
    assert_eq!(sent, got);
    assert_eq!(got.1.len(), 2, "the vector and its one shared raw object");
}

#[test]
fn ropes_round_trip() {
    let (a, b, _) = two();
    let words = send(&a, usize::MAX, |s| {
        let rope = s.tabulate(&[], 0, 1000, 64, |_, _, i| Ok(Handle::int(3 * i as i64)))?;
        assert!(s.seq_depth(rope)? > 0, "a rope, not a vector");
        Ok(vec![rope])
    })
    .unwrap();
    b.run_on(0, move |s| {
        let vs = unpack(s, &words, SENDER).unwrap();
        assert_eq!(s.seq_len(vs[0]).unwrap(), 1000);
        let flat = s.seq_to_vec(vs[0]).unwrap();
        let flat = s.view(flat);
        assert!((0..1000).all(|i| flat.field(i).as_int() == Some(3 * i as i64)));
    })
    .unwrap();
}

#[test]
fn collections_during_unpacking_keep_what_was_built() {
    const N: i64 = 20_000;
    let (a, _, d) = two();
    let small = small_test_config(test_plan(), 1, true, 1 << 20)
        .local_heap_size(64 << 10)
        .build()
        .unwrap();
    let (b, _) = runtime_with(small);
    let words = send(&a, usize::MAX, move |s| {
        let shared = s.alloc_vector(&[Handle::int(-1), Handle::int(-2)])?;
        let list = s.slot(Handle::NIL);
        for i in 0..N {
            s.scope(|s| -> Result<()> {
                let elem = match i % 2 {
                    0 => shared,
                    _ => s.alloc_raw(&[i as u64, !(i as u64)])?,
                };
                s.alloc_mixed_to(list, d.cons, &[elem, list.get()], &[i as u64])
            })?;
        }
        Ok(vec![list.get(), shared])
    })
    .unwrap();
    // Minor collections, and the major ones of survivor promotion that
    // take their place when most of the nursery is live.
    let collections = |rt: &Runtime| {
        let t = rt.stats().total;
        t.minor.count + t.major.count + t.global.count
    };
    let before = collections(&b);
    b.run_on(0, move |s| {
        let vs = unpack(s, &words, SENDER).unwrap();
        s.collect_major().unwrap();
        let (mut v, shared) = (s.view(vs[0]), s.view(vs[1]));
        for i in (0..N).rev() {
            let e = v.field(0);
            match i % 2 {
                0 => assert!(e.same(shared)),
                _ => assert_eq!(e.raw_words(), Some(&[i as u64, !(i as u64)][..])),
            }
            assert_eq!(v.raw(1), i as u64);
            v = v.field(2);
        }
        assert_eq!(shared.field(1).as_int(), Some(-2));
    })
    .unwrap();
    let after = collections(&b);
    assert!(
        after > before + 5,
        "unpacking collected: {before} then {after}"
    );
}

// ---- random DAGs ----------------------------------------------------------------

/// A value: an immediate or an earlier node (index taken modulo the nodes
/// built so far; NIL when there are none).
#[derive(Clone, Debug)]
enum Ref {
    Int(i64),
    Node(usize),
}

#[derive(Clone, Debug)]
enum Spec {
    Raw(Vec<u64>),
    Vector(Vec<Ref>),
    Cons(Ref, u64, Ref),
    Leaf(u64, Ref, u64, Ref),
    Wide([Ref; 3], u64),
    Blob(u64, u64),
}

fn reference() -> impl Strategy<Value = Ref> {
    prop_oneof![
        1 => prop_oneof![Just(-(1i64 << 62)), Just((1 << 62) - 1), -1000i64..1000].prop_map(Ref::Int),
        3 => any::<usize>().prop_map(Ref::Node),
    ]
}

fn spec() -> impl Strategy<Value = Spec> {
    let r = reference;
    prop_oneof![
        prop::collection::vec(any::<u64>(), 0..5).prop_map(Spec::Raw),
        prop::collection::vec(r(), 0..6).prop_map(Spec::Vector),
        (r(), any::<u64>(), r()).prop_map(|(a, p, b)| Spec::Cons(a, p, b)),
        (any::<u64>(), r(), any::<u64>(), r()).prop_map(|(x, a, y, b)| Spec::Leaf(x, a, y, b)),
        ([r(), r(), r()], any::<u64>()).prop_map(|(v, x)| Spec::Wide(v, x)),
        (any::<u64>(), any::<u64>()).prop_map(|(x, y)| Spec::Blob(x, y)),
    ]
}

fn build<'s>(
    s: &mut Scope<'s>,
    d: Descs,
    specs: &[Spec],
    roots: &[Ref],
) -> Result<Vec<Handle<'s>>> {
    let mut hs: Vec<Handle<'s>> = Vec::new();
    let get = |hs: &[Handle<'s>], r: &Ref| match *r {
        Ref::Int(i) => Handle::int(i),
        Ref::Node(_) if hs.is_empty() => Handle::NIL,
        Ref::Node(j) => hs[j % hs.len()],
    };
    for spec in specs {
        let h = match spec {
            Spec::Raw(ws) => s.alloc_raw(ws)?,
            Spec::Vector(rs) => {
                let vs: Vec<_> = rs.iter().map(|r| get(&hs, r)).collect();
                s.alloc_vector(&vs)?
            }
            Spec::Cons(a, p, b) => s.alloc_mixed(d.cons, &[get(&hs, a), get(&hs, b)], &[*p])?,
            Spec::Leaf(x, a, y, b) => {
                s.alloc_mixed(d.leaf, &[get(&hs, a), get(&hs, b)], &[*x, *y])?
            }
            Spec::Wide(rs, x) => {
                let raws: Vec<u64> = (0..37).map(|i| x.rotate_left(i)).collect();
                s.alloc_mixed(d.wide, &rs.clone().map(|r| get(&hs, &r)), &raws)?
            }
            Spec::Blob(x, y) => s.alloc_mixed(d.blob, &[], &[*x, *y])?,
        };
        hs.push(h);
    }
    Ok(roots.iter().map(|r| get(&hs, r)).collect())
}

fn shared_pair() -> &'static (Runtime, Runtime, Descs) {
    static RTS: OnceLock<(Runtime, Runtime, Descs)> = OnceLock::new();
    RTS.get_or_init(two)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn random_dags_round_trip_with_their_sharing(
        specs in prop::collection::vec(spec(), 0..60),
        roots in prop::collection::vec(reference(), 0..5),
    ) {
        let (a, b, d) = shared_pair();
        let d = *d;
        let (sent, got, packet) = round_trip(a, b, move |s| build(s, d, &specs, &roots));
        prop_assert_eq!(&sent, &got);
        prop_assert_eq!(packet[1] as usize, got.1.len());
    }
}

// ---- refusals when packing ----------------------------------------------------

#[test]
fn mutable_objects_and_ephemerons_are_not_exported() {
    let (a, d) = runtime_with(config());
    let cell = a
        .register(Descriptor::mixed("cell", 1, &[0]).unwrap().mutable())
        .unwrap();
    let m = not_exportable(send(&a, usize::MAX, |s| {
        let arr = s.alloc_array(2, Handle::int(1))?;
        Ok(vec![s.alloc_vector(&[Handle::int(0), arr])?])
    }));
    assert!(m.contains("mutable array"), "{m}");
    let m = not_exportable(send(&a, usize::MAX, move |s| {
        let c = s.alloc_mixed(cell, &[Handle::int(1)], &[])?;
        Ok(vec![s.alloc_mixed(d.cons, &[Handle::int(0), c], &[1])?])
    }));
    assert!(m.contains("mutable descriptor `cell`"), "{m}");
    let m = not_exportable(send(&a, usize::MAX, |s| {
        let x = s.alloc_vector(&[Handle::int(1)])?;
        Ok(vec![s.weak_ref(x)?])
    }));
    assert!(m.contains("ephemeron"), "{m}");
}

#[test]
fn packets_past_the_limit_are_refused() {
    let (a, d) = runtime_with(config());
    let list = move |s: &mut Scope<'_>| -> Result<u64> {
        let l = s.slot(Handle::NIL);
        (0..100).try_for_each(|i| s.alloc_mixed_to(l, d.cons, &[Handle::int(i), l.get()], &[0]))?;
        let size = pack(s, &[l.get()], usize::MAX)?.len() as u64;
        assert_eq!(size, 3 + 2 + 400 + 1);
        assert_eq!(pack(s, &[l.get()], size as usize)?.len() as u64, size);
        let m = match pack(s, &[l.get()], size as usize - 1).map_err(Error::into_kind) {
            Err(ErrorKind::NotExportable(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            m,
            format!("graph larger than the packet limit of {} words", size - 1)
        );
        assert!(
            pack(s, &[Handle::int(1)], 3).is_err(),
            "the header and the value need 4"
        );
        Ok(size)
    };
    a.run_on(0, list).unwrap().unwrap();
}

// ---- refusals when unpacking ----------------------------------------------------

/// A valid packet with every kind of object, from `rt`.
fn sample(rt: &Runtime, d: Descs) -> Vec<u64> {
    send(rt, usize::MAX, move |s| {
        let raw = s.alloc_raw(&[1, 2, 3])?;
        let c = s.alloc_mixed(d.cons, &[raw, Handle::int(9)], &[77])?;
        let l = s.alloc_mixed(d.leaf, &[c, raw], &[5, 6])?;
        let v = s.alloc_vector(&[l, c, Handle::int(-4)])?;
        Ok(vec![v, Handle::int(3), raw])
    })
    .unwrap()
}

#[test]
fn truncated_and_padded_packets_are_refused() {
    let (a, b, d) = two();
    let packet = sample(&a, d);
    for len in 0..packet.len() {
        refused(&b, packet[..len].to_vec());
    }
    // A word more: the descriptor table moves by one and is refused.
    let mut long = packet.clone();
    long.push(1);
    refused(&b, long);
    // A word more before the table: trailing.
    let mut long = packet.clone();
    long.insert(packet.len() - 2 * packet[2] as usize, 1);
    assert!(refused(&b, long).contains("trailing"));
    // The packet itself is fine.
    b.run_on(0, move |s| {
        assert_eq!(unpack(s, &packet, SENDER).unwrap().len(), 3)
    })
    .unwrap();
}

#[test]
fn corrupt_tags_ids_and_references_are_refused() {
    let (a, b, d) = two();
    let packet = sample(&a, d);
    let first = 3; // the first object's tag
    let table = packet.len() - 2 * packet[2] as usize; // the first entry
    let with = |i: usize, w: u64| {
        let mut p = packet.clone();
        p[i] = w;
        p
    };
    assert!(refused(&b, with(first, packet[first] | 4)).contains("unknown tag"));
    // A global address outside a PE group, or of the wrong size.
    assert!(refused(&b, with(first, tag(KIND_GLOBAL, 0, 4))).contains("not a PE of a group"));
    assert!(refused(&b, with(first, tag(KIND_GLOBAL, 0, 2))).contains("not 4"));
    assert!(refused(&b, with(first, tag(KIND_GLOBAL, 7, 4))).contains("unknown tag"));
    assert!(refused(&b, with(first, packet[first] | 0x10)).contains("unknown tag"));
    assert!(refused(&b, with(first, tag(KIND_VECTOR, 5, 0))).contains("unknown tag"));
    assert!(refused(&b, with(table, 500)).contains("unknown descriptor id 500"));
    assert!(refused(&b, with(table, u64::from(ID_EPHEMERON))).contains("ephemeron"));
    assert!(refused(&b, with(table, 1)).contains("not a mixed-object descriptor id"));
    assert!(refused(&b, with(table, 1 << 40)).contains("not a mixed-object descriptor id"));
    assert!(refused(&b, with(table + 1, packet[table + 1] ^ 1)).contains("fingerprint mismatch"));
    // A value referencing an object past the last.
    let last_value = table - 1;
    assert!(refused(&b, with(last_value, packet[1] << 1)).contains("references object"));
    // By hand: references in either direction are fine, a cycle is not.
    let fwd = vec![
        1,
        2,
        0,
        tag(KIND_VECTOR, 0, 1),
        1 << 1,
        tag(KIND_VECTOR, 0, 0),
        0,
    ];
    b.run_on(0, move |s| {
        let v = unpack(s, &fwd, SENDER).unwrap();
        let outer = s.view(v[0]);
        assert_eq!(outer.len(), 1);
        assert_eq!(outer.field(0).len(), 0);
    })
    .unwrap();
    // References backward only (packet order), and both ways (a sort):
    // 1 → 0 and 0 → 2 ← 1, the values 1 and 0.
    let back = vec![
        1,
        2,
        0,
        tag(KIND_VECTOR, 0, 0),
        tag(KIND_VECTOR, 0, 1),
        0,
        1 << 1,
    ];
    let both = vec![
        2,
        3,
        0,
        tag(KIND_VECTOR, 0, 1),
        2 << 1,
        tag(KIND_VECTOR, 0, 2),
        0,
        2 << 1,
        tag(KIND_RAW, 0, 1),
        42,
        1 << 1,
        0,
    ];
    b.run_on(0, move |s| {
        let v = unpack(s, &back, SENDER).unwrap();
        assert_eq!(s.view(v[0]).field(0).len(), 0);
        let v = unpack(s, &both, SENDER).unwrap();
        let (one, zero) = (s.view(v[0]), s.view(v[1]));
        assert!(one.field(0).same(zero), "object 1 names object 0");
        assert!(one.field(1).same(zero.field(0)), "object 2 is shared");
        assert_eq!(zero.field(0).raw_words(), Some(&[42][..]));
    })
    .unwrap();
    let own = vec![1, 1, 0, tag(KIND_VECTOR, 0, 1), 0, 0];
    assert!(refused(&b, own).contains("object 0 references itself"));
    // 0 → 1 → 2 → 0, with 3 → 0 first in the other direction: a cycle
    // that only the sort meets.
    let cycle = vec![
        1,
        4,
        0,
        tag(KIND_VECTOR, 0, 1),
        1 << 1,
        tag(KIND_VECTOR, 0, 1),
        2 << 1,
        tag(KIND_VECTOR, 0, 1),
        0,
        tag(KIND_VECTOR, 0, 1),
        0,
        3 << 1,
    ];
    assert!(refused(&b, cycle).contains("a cycle"));
    let past = vec![1, 1, 0, tag(KIND_VECTOR, 0, 1), 1 << 1, 0];
    assert!(refused(&b, past).contains("object 0 references object 1, but the packet has 1"));
    let unlisted = vec![1, 1, 0, tag(KIND_MIXED, d.blob.id(), 2), 1, 2, 0];
    assert!(refused(&b, unlisted).contains("not listed"));
    let blob = fingerprint(&descriptors()[3]);
    let short = vec![
        1,
        1,
        1,
        tag(KIND_MIXED, d.blob.id(), 1),
        1,
        0,
        u64::from(d.blob.id()),
        blob,
    ];
    assert!(refused(&b, short).contains("has 2"));
    let twice = vec![
        0,
        0,
        2,
        u64::from(d.blob.id()),
        blob,
        u64::from(d.blob.id()),
        blob,
    ];
    assert!(refused(&b, twice).contains("listed twice"));
    // Raw words are verbatim: anything goes there.
    let raw = vec![1, 1, 0, tag(KIND_RAW, 0, 2), 0, 6, 0];
    b.run_on(0, move |s| {
        let v = unpack(s, &raw, SENDER).unwrap();
        assert_eq!(s.view(v[0]).raw_words(), Some(&[0, 6][..]));
    })
    .unwrap();
}

#[test]
fn absurd_counts_are_refused_before_allocating() {
    let (_, b, _) = two();
    for p in [
        vec![0, u64::MAX, 0],
        vec![u64::MAX, 0, 0],
        vec![0, 0, u64::MAX],
        vec![u64::MAX, u64::MAX, u64::MAX, 0, 0],
        vec![0, 1 << 62, 1 << 62, 0],
        vec![0, 1, 0, tag(KIND_RAW, 0, MAX_COUNT)],
        vec![0, 1, 0, tag(KIND_VECTOR, 0, 1 << 39), 1],
        vec![1, 1, 0, tag(KIND_VECTOR, 0, 2), 1],
    ] {
        refused(&b, p);
    }
}

#[test]
fn another_layout_under_the_same_id_is_refused() {
    let (a, _, d) = two();
    let packet = sample(&a, d);
    // The receiver registered `cons` with other value fields, and `leaf`
    // with another size: the first entry the packet lists is refused.
    let other = Runtime::new(config()).unwrap();
    other
        .register(Descriptor::mixed("cons", 3, &[0, 1]).unwrap())
        .unwrap();
    other
        .register(Descriptor::mixed("leaf", 5, &[1, 3]).unwrap())
        .unwrap();
    assert!(refused(&other, packet.clone()).contains("fingerprint mismatch"));
    // A mutable descriptor of the same layout is refused too.
    let mutable = Runtime::new(config()).unwrap();
    let [cons, leaf, ..] = descriptors();
    mutable.register(cons.mutable()).unwrap();
    mutable.register(leaf).unwrap();
    assert!(refused(&mutable, packet.clone()).contains("is mutable"));
    // A receiver without the descriptors.
    let bare = Runtime::new(config()).unwrap();
    assert!(refused(&bare, packet).contains("unknown descriptor id"));
}

#[test]
fn pack_into_reuses_the_buffer_and_packs_alike() {
    let (a, _, d) = two();
    a.run_on(0, move |s| -> Result<()> {
        let mut list = s.nil();
        for i in 0..1000 {
            list = s.alloc_mixed(d.cons, &[Handle::int(i), list], &[i as u64])?;
        }
        let small = s.alloc_vector(&[Handle::int(1)])?;
        let fresh = pack(s, &[list], usize::MAX)?;
        let mut buf = vec![7; 3];
        pack_into(s, &[list], usize::MAX, &mut buf)?;
        assert_eq!(buf, fresh, "into a used buffer: the same packet");
        let capacity = buf.capacity();
        pack_into(s, &[small], usize::MAX, &mut buf)?;
        assert_eq!(buf, pack(s, &[small], usize::MAX)?);
        assert_eq!(buf.capacity(), capacity, "the memory is kept");
        // A refusal leaves the buffer empty.
        let past = pack_into(s, &[list], 10, &mut buf);
        assert!(past.is_err() && buf.is_empty());
        Ok(())
    })
    .unwrap()
    .unwrap();
}
