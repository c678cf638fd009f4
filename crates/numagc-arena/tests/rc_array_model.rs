//! RcArray against a model: random clones, updates, modarrays and drops;
//! every array must always hold its model's contents, counts must equal
//! the number of values sharing a data vector, and an update must be in
//! place exactly when the count was one.

use std::collections::HashMap;

use numagc_arena::RcArray;
use proptest::prelude::*;

#[derive(Clone, Debug)]
enum Op {
    Clone(usize),
    Set(usize, usize, u32),
    Add(usize, u32),
    Drop(usize),
    New(u8),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => any::<usize>().prop_map(Op::Clone),
        3 => (any::<usize>(), any::<usize>(), any::<u32>()).prop_map(|(a, i, v)| Op::Set(a, i, v)),
        1 => (any::<usize>(), any::<u32>()).prop_map(|(a, k)| Op::Add(a, k)),
        2 => any::<usize>().prop_map(Op::Drop),
        1 => any::<u8>().prop_map(Op::New),
    ]
}

fn check(arrays: &[(RcArray<u32>, Vec<u32>)]) {
    let mut sharing: HashMap<*const u32, usize> = HashMap::new();
    for (a, model) in arrays {
        assert_eq!(a.as_slice(), &model[..]);
        *sharing.entry(a.data_ptr()).or_default() += 1;
    }
    for (a, _) in arrays {
        assert_eq!(
            a.refcount(),
            sharing[&a.data_ptr()],
            "count of {:?}",
            a.data_ptr()
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn rc_arrays_follow_their_model(ops in prop::collection::vec(op(), 1..120)) {
        let mut arrays: Vec<(RcArray<u32>, Vec<u32>)> = Vec::new();
        for op in ops {
            match op {
                Op::New(n) => {
                    let len = n as usize % 40 + 1;
                    let a = RcArray::from_fn(&[len], |i| i as u32).unwrap();
                    arrays.push((a, (0..len as u32).collect()));
                }
                _ if arrays.is_empty() => {}
                Op::Clone(i) => {
                    let (a, m) = &arrays[i % arrays.len()];
                    let c = (a.clone(), m.clone());
                    arrays.push(c);
                }
                Op::Set(i, j, v) => {
                    let k = i % arrays.len();
                    let (a, m) = &mut arrays[k];
                    let j = j % m.len();
                    let was_unique = a.refcount() == 1;
                    let before = a.data_ptr();
                    let copied = a.set(j, v).unwrap();
                    m[j] = v;
                    prop_assert_eq!(copied, !was_unique);
                    prop_assert_eq!(a.data_ptr() == before, was_unique);
                }
                Op::Add(i, k) => {
                    let idx = i % arrays.len();
                    let (a, m) = arrays.swap_remove(idx);
                    let a = a.modarray(|_, x| x.wrapping_add(k)).unwrap();
                    let m: Vec<u32> = m.iter().map(|x| x.wrapping_add(k)).collect();
                    arrays.push((a, m));
                }
                Op::Drop(i) => {
                    let idx = i % arrays.len();
                    arrays.swap_remove(idx);
                }
            }
            check(&arrays);
        }
    }
}
