//! A Rust program with the heap manager as its global allocator: collections,
//! threads, values dropped on other threads than the one that made them, and
//! thread heaps taken over by new threads when old ones exit.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc;

#[global_allocator]
static ALLOC: numagc_arena::ArenaAlloc = numagc_arena::ArenaAlloc;

#[test]
fn collections_and_threads_run_on_the_heap_manager() {
    let v: Vec<String> = (0..10_000).map(|i| format!("item {i}")).collect();
    assert!(
        numagc_arena::owns(v.as_ptr().cast()),
        "Vec memory comes from numagc-arena"
    );
    assert!(numagc_arena::owns(v[17].as_ptr()));
    let mut m: HashMap<String, usize> = HashMap::new();
    for (i, s) in v.iter().enumerate() {
        m.insert(s.clone(), i);
    }
    assert_eq!(m["item 4321"], 4321);
    let mut t = BTreeMap::new();
    for i in 0..50_000u64 {
        t.insert(
            i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
            vec![i; (i % 7) as usize],
        );
    }
    assert_eq!(t.len(), 50_000);
    let total: u64 = t.values().map(|v| v.iter().sum::<u64>()).sum();
    let expected: u64 = (0..50_000u64).map(|i| i * (i % 7)).sum();
    assert_eq!(total, expected);

    // Producer/consumer: boxes made on one thread, dropped on another.
    let (tx, rx) = mpsc::sync_channel::<Box<[u8]>>(64);
    let producer = std::thread::spawn(move || {
        for i in 0..20_000usize {
            let len = [8, 100, 3000, 70_000][i % 4];
            tx.send(vec![(i % 251) as u8; len].into_boxed_slice())
                .unwrap();
        }
    });
    let consumer = std::thread::spawn(move || {
        let mut n = 0usize;
        for (i, b) in rx.into_iter().enumerate() {
            assert!(b.iter().all(|&x| x == (i % 251) as u8));
            n += b.len();
        }
        n
    });
    producer.join().unwrap();
    let bytes = consumer.join().unwrap();
    assert_eq!(bytes, 5000 * (8 + 100 + 3000 + 70_000));
    drop(v);
    drop(m);
}

#[test]
fn exited_threads_leave_their_heaps_to_new_threads() {
    let before = numagc_arena::thread_heaps_created();
    for i in 0..40 {
        std::thread::spawn(move || {
            let v: Vec<u64> = (0..1000).map(|x| x * i).collect();
            assert_eq!(v[999], 999 * i);
        })
        .join()
        .unwrap();
    }
    let made = numagc_arena::thread_heaps_created() - before;
    // Heaps are made only when more threads are alive at once than ever
    // before; the other tests of this binary run meanwhile, with at most
    // ten threads alive together, against 40 threads made here.
    assert!(
        made <= 12,
        "{made} thread heaps made for 40 threads run one after another"
    );
}

#[test]
fn values_outlive_the_threads_that_made_them() {
    // Waves of short threads; what they make is dropped later by a
    // long-lived thread, after they exited: remote frees into abandoned
    // heaps, which the next waves' threads adopt and take back.
    let (tx, rx) = mpsc::channel::<(usize, Vec<Box<[u32]>>)>();
    let keeper = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut checked = 0usize;
        for (id, boxes) in rx {
            for b in &boxes {
                assert!(
                    b.iter().all(|&x| x as usize == id),
                    "values of thread {id} changed"
                );
            }
            kept.push(boxes);
            if kept.len() > 6 {
                checked += kept.remove(0).len();
            }
        }
        checked + kept.iter().map(Vec::len).sum::<usize>()
    });
    for wave in 0..6 {
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    let id = wave * 4 + t;
                    let boxes: Vec<Box<[u32]>> = (0..300)
                        .map(|i| vec![id as u32; [3, 40, 1500, 9000][i % 4]].into_boxed_slice())
                        .collect();
                    tx.send((id, boxes)).unwrap();
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }
    drop(tx);
    assert_eq!(keeper.join().unwrap(), 6 * 4 * 300);
}
