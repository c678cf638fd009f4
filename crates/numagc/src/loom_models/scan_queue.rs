//! Models of the termination of the parallel scan (`gc/work_queue.rs`:
//! `ScanQueue`, §3.4).

use super::bounded;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::gc::work_queue::ScanQueue;

// ---------------------------------------------------------------------------
// §3.4 parallel scanning: each item once, termination
// ---------------------------------------------------------------------------

/// One scanning worker: pushes its `roots`, then pops until the queue says
/// the collection's work is finished. Scanning item 1 discovers item 2, which
/// lands in a to-space chunk of node 1 and is pushed there — by whichever
/// worker took item 1, i.e. work is pushed "while popping". `outstanding`
/// counts items pushed and not yet fully scanned (`Relaxed`: when `pop`
/// returns `None` the queue's lock must make every other worker's decrement
/// visible), and must be 0 whenever `pop` declares termination.
fn scan_worker(
    q: &ScanQueue<u32>,
    outstanding: &AtomicUsize,
    node: usize,
    roots: &[(usize, u32)],
) -> Vec<u32> {
    for &(n, item) in roots {
        outstanding.fetch_add(1, Ordering::Relaxed);
        q.push(n, item);
    }
    let mut got = Vec::new();
    while let Some(item) = q.pop(node) {
        if item == 1 {
            outstanding.fetch_add(1, Ordering::Relaxed);
            q.push(1, 2);
        }
        got.push(item);
        outstanding.fetch_sub(1, Ordering::Relaxed);
    }
    assert_eq!(
        outstanding.load(Ordering::Relaxed),
        0,
        "worker {node} stopped while work was outstanding"
    );
    got
}

#[test]
fn scan_queue_each_item_once_and_terminates() {
    bounded(3).check(|| {
        let q = Arc::new(ScanQueue::<u32>::new(2));
        let out = Arc::new(AtomicUsize::new(0));
        q.reset(2);

        // Worker 0 (node 0) has the roots: item 1 on node 0, item 3 on
        // node 1. Worker 1 (node 1) has none and takes whatever appears.
        let (q0, o0) = (q.clone(), out.clone());
        let w0 = thread::spawn(move || scan_worker(&q0, &o0, 0, &[(0, 1), (1, 3)]));
        let (q1, o1) = (q.clone(), out.clone());
        let w1 = thread::spawn(move || scan_worker(&q1, &o1, 1, &[]));
        let mut all = w0.join().unwrap();
        all.extend(w1.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3], "each item popped exactly once");
        // Both stopped with the queue drained: the next collection can start.
        assert_eq!(q.pop(0), None);
        q.reset(2);
    });
}

/// A push wakes a worker that went idle: worker 0 pushes an item and then
/// waits (outside the queue) until worker 1 has taken it. If `push` did not
/// wake the idle worker 1, both would block and loom reports the deadlock.
/// (In the scan itself a lost wake-up would only cost parallelism, since the
/// pusher pops its own work; this model pins the wake-up down.)
#[test]
fn scan_queue_push_wakes_idle_worker() {
    loom::model(|| {
        let q = Arc::new(ScanQueue::<u32>::new(2));
        q.reset(2);
        let handoff = Arc::new((loom::sync::Mutex::new(false), loom::sync::Condvar::new()));

        let (q1, h1) = (q.clone(), handoff.clone());
        let w1 = thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(item) = q1.pop(1) {
                got.push(item);
                *h1.0.lock().unwrap() = true;
                h1.1.notify_all();
            }
            got
        });
        let (q0, h0) = (q.clone(), handoff.clone());
        let w0 = thread::spawn(move || {
            q0.push(1, 5);
            let mut taken = h0.0.lock().unwrap();
            while !*taken {
                taken = h0.1.wait(taken).unwrap();
            }
            drop(taken);
            q0.pop(0)
        });
        assert_eq!(w0.join().unwrap(), None);
        assert_eq!(w1.join().unwrap(), vec![5]);
    });
}

/// Sharing on request (`ScanQueue::wants_work`): worker 0 holds all the
/// work (items 10 and 11) and gives item 11 away only once the queue says
/// another worker waits with nothing queued for it; worker 1 has nothing
/// and pops. Every item is taken exactly once, both stop, and the hint is
/// false again once the work is finished. Worker 0 also leaves off waiting
/// for the hint when its own work is done (a hint can be missed; an item
/// never is).
#[test]
fn scan_queue_shares_when_asked() {
    bounded(3).check(|| {
        let q = Arc::new(ScanQueue::<u32>::new(1));
        q.reset(2);
        let q1 = q.clone();
        let w1 = thread::spawn(move || {
            q1.arrive();
            let mut got = Vec::new();
            while let Some(item) = q1.pop(0) {
                got.push(item);
            }
            got
        });
        let q0 = q.clone();
        let w0 = thread::spawn(move || {
            q0.arrive();
            let mut mine = vec![10];
            let mut shared = false;
            for _ in 0..3 {
                if q0.wants_work() {
                    q0.push(0, 11);
                    shared = true;
                    break;
                }
                thread::yield_now();
            }
            if !shared {
                mine.push(11);
            }
            while let Some(item) = q0.pop(0) {
                mine.push(item);
            }
            mine
        });
        let mut all = w0.join().unwrap();
        all.extend(w1.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, vec![10, 11], "each item taken exactly once");
        assert!(!q.wants_work(), "no worker waits after the end");
        assert!(!q.someone_absent(), "both workers arrived");
    });
}
