//! Models of the heap's shared state: the heap limit (`heap/budget.rs`:
//! `HeapBudget`) and the per-node chunk pool (`heap/chunk_pool.rs`:
//! `ChunkPool`, §3.1).

use loom::sync::Arc;
use loom::thread;

use crate::heap::budget::HeapBudget;
use crate::heap::chunk_pool::ChunkPool;

// ---------------------------------------------------------------------------
// The heap limit (issue 2, item 10)
// ---------------------------------------------------------------------------

/// Two vprocs ask for a chunk each while the limit has room for one, while
/// a collector copy forces one more: at most one mutator request is
/// granted, and exactly one unless the forced charge came first; a refusal
/// reports bytes in use that leave no room; the bytes in use never exceed
/// the limit by more than the forced charge.
#[test]
fn heap_limit_is_never_overshot() {
    loom::model(|| {
        let b = Arc::new(HeapBudget::new(3 * 64));
        b.charge(2 * 64, false).unwrap();
        let ask = |b: Arc<HeapBudget>| thread::spawn(move || b.charge(64, false));
        let (x, y) = (ask(b.clone()), ask(b.clone()));
        let bf = b.clone();
        let forced = thread::spawn(move || {
            bf.charge(64, true).unwrap();
            bf.in_use()
        });
        let (x, y) = (x.join().unwrap(), y.join().unwrap());
        let right_after_forced = forced.join().unwrap();
        let granted = x.is_ok() as usize + y.is_ok() as usize;
        assert!(granted <= 1, "both granted past the limit");
        if granted == 0 {
            // Only possible when the forced charge took the last room first.
            assert_eq!(right_after_forced, 3 * 64);
        }
        for refused in [x, y].into_iter().filter_map(|r| r.err()) {
            assert!(
                refused.in_use + 64 > 3 * 64,
                "refused at {} bytes in use",
                refused.in_use
            );
        }
        assert_eq!(b.in_use(), (3 + granted) * 64);
        assert!(b.peak() <= 4 * 64);
    });
}

// ---------------------------------------------------------------------------
// §3.1 chunk pool: node affinity, node-local synchronisation
// ---------------------------------------------------------------------------

/// Chunk ids encode their node: `node * 100 + i`.
fn node_of(chunk: u32) -> usize {
    (chunk / 100) as usize
}

#[test]
fn chunk_pool_affinity() {
    loom::model(|| {
        let p = Arc::new(ChunkPool::new(2));
        p.put(0, 1);
        p.put(1, 101);

        // A vproc of node 0: frees a chunk of node 0 and one of node 1 (from
        // a collection), then takes from its own node.
        let pa = p.clone();
        let a = thread::spawn(move || {
            pa.put(0, 2);
            pa.put(1, 102);
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(ch) = pa.take(0) {
                    got.push((0, ch));
                }
            }
            got
        });
        // A vproc of node 1: takes from its own node, then from node 0.
        let pb = p.clone();
        let b = thread::spawn(move || {
            let mut got = Vec::new();
            if let Some(ch) = pb.take(1) {
                got.push((1, ch));
            }
            if let Some(ch) = pb.take(0) {
                got.push((0, ch));
            }
            got
        });
        let mut taken = a.join().unwrap();
        taken.extend(b.join().unwrap());
        for &(node, ch) in &taken {
            assert_eq!(
                node_of(ch),
                node,
                "chunk {ch} taken from node {node}'s pool"
            );
        }
        // Drain what is left; every chunk put is accounted for exactly once.
        for node in 0..2 {
            let left = p.len(node);
            for _ in 0..left {
                let ch = p.take(node).expect("len said non-empty");
                assert_eq!(node_of(ch), node);
                taken.push((node, ch));
            }
            assert_eq!(p.take(node), None);
        }
        let mut ids: Vec<u32> = taken.iter().map(|&(_, ch)| ch).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            vec![1, 2, 101, 102],
            "no chunk lost or handed out twice"
        );
    });
}
