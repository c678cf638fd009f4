//! `loom` models of the heap manager's cross-thread protocols, built only
//! with `RUSTFLAGS="--cfg loom"` (`scripts/loom.sh` runs them). Under that
//! cfg [`crate::sync`] is loom's, so the production code of
//! [`crate::remote_free`] and of the heap adoption in [`crate::thread_heap`]
//! is explored over every interleaving (up to the preemption bound) and the
//! weak-memory outcomes loom models.
//!
//! | protocol | production code | model(s) |
//! |---|---|---|
//! | cross-thread free: push on the owner's remote list, owner takes all | `remote_free.rs`: `RemoteFreeList::{push, take_all}` | [`remote_frees_from_two_threads_reach_owner_once`], [`remote_free_contents_visible_to_owner`] |
//! | a freer's outbox pushed as one chain | `remote_free.rs`: `RemoteFreeList::push_chain` | [`chains_from_two_outboxes_reach_owner_whole`] |
//! | a freer's outbox pushed as a carrier: the addresses of the other chunks written into one of them, which is pushed on the owner's second list | `remote_free.rs`: `Outbox::flush`, `carried` over `RemoteFreeList::push` | [`a_carriers_addresses_reach_the_owner`] |
//! | a heap abandoned at thread exit and claimed by a new thread | `thread_heap.rs`: `claim`, `abandon` | [`abandoned_heap_is_claimed_once_with_its_state`] |
//! | which thread may use a heap: the owner writes its identity into the heap's `tid` after claiming it and clears it before abandoning it; `free` and `current` compare | `thread_heap.rs`: `enter`, `leave`, `may_use` with `claim`, `abandon` | [`only_the_owner_may_use_a_heap`] |
//! | a remote free racing with its owner's exit: taken by the owner before it abandons the heap, or by the next owner | both of the above, as `on_thread_exit` and `adopt` use them | [`remote_free_during_owner_exit_is_taken_once`] |
//!
//! Not modelled: the global heap's cache (one `std` mutex), the region map
//! (`std` atomic bit operations, each region's bit set before and cleared
//! after the only window in which its chunks are live) and the topology's
//! one-time detection (a state machine of one `std` atomic with the
//! detecting thread never waiting).

use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::thread;

use crate::remote_free::{Link, RemoteFreeList};
use crate::sync::{AtomicU8, AtomicUsize, Ordering};
use crate::thread_heap::{abandon, claim, enter, leave, may_use};

/// A chunk stand-in: its link and its contents in loom-checked cells, so a
/// missing happens-before between a pusher's writes and the owner's reads is
/// a reported data race.
struct Node {
    next: UnsafeCell<*mut Node>,
    payload: UnsafeCell<usize>,
}

// SAFETY: nodes are handed between threads only through the list protocol
// under test, which loom checks.
unsafe impl Send for Node {}
unsafe impl Sync for Node {}

impl Link for Node {
    unsafe fn set_next(node: *mut Self, next: *mut Self) {
        // SAFETY: the caller owns the node.
        unsafe { (*node).next.with_mut(|p| *p = next) };
    }
    unsafe fn next(node: *mut Self) -> *mut Self {
        // SAFETY: the caller owns the node.
        unsafe { (*node).next.with(|p| *p) }
    }
}

struct SendPtr(*mut Node);
// SAFETY: see Node.
unsafe impl Send for SendPtr {}

fn node(payload: usize) -> *mut Node {
    Box::into_raw(Box::new(Node {
        next: UnsafeCell::new(core::ptr::null_mut()),
        payload: UnsafeCell::new(payload),
    }))
}

/// Walks a taken list, returning the payloads (and freeing the nodes).
fn drain(list: &RemoteFreeList<Node>) -> Vec<usize> {
    let mut out = Vec::new();
    let mut n = list.take_all();
    while !n.is_null() {
        // SAFETY: take_all gave this thread every node of the list.
        unsafe {
            let next = Node::next(n);
            out.push((*n).payload.with(|p| *p));
            drop(Box::from_raw(n));
            n = next;
        }
    }
    out
}

/// Takes from the list, yielding in between, until `n` nodes arrived.
fn take_until(list: &RemoteFreeList<Node>, n: usize) -> Vec<usize> {
    let mut seen = drain(list);
    while seen.len() < n {
        thread::yield_now();
        seen.extend(drain(list));
    }
    seen
}

#[test]
fn remote_frees_from_two_threads_reach_owner_once() {
    loom::model(|| {
        let list = Arc::new(RemoteFreeList::<Node>::new());
        let pushers: Vec<_> = [1usize, 2]
            .into_iter()
            .map(|v| {
                let list = list.clone();
                let n = SendPtr(node(v));
                thread::spawn(move || {
                    let n = n;
                    // SAFETY: this thread owns the node and gives it up.
                    unsafe { list.push(n.0) };
                })
            })
            .collect();
        // The owner takes concurrently with the pushes until it has both.
        let mut seen = take_until(&list, 2);
        for p in pushers {
            p.join().unwrap();
        }
        seen.sort_unstable();
        assert_eq!(
            seen,
            vec![1, 2],
            "each remote free reaches the owner exactly once"
        );
        assert!(list.is_empty());
    });
}

#[test]
fn remote_free_contents_visible_to_owner() {
    loom::model(|| {
        let list = Arc::new(RemoteFreeList::<Node>::new());
        let n = SendPtr(node(0));
        let pusher = {
            let list = list.clone();
            thread::spawn(move || {
                let n = n;
                // SAFETY: this thread owns the node until the push.
                unsafe {
                    (*n.0).payload.with_mut(|p| *p = 42);
                    list.push(n.0);
                }
            })
        };
        // Whatever the owner takes, it must see the pusher's last write.
        // The owner keeps taking while the push is under way, as an owner
        // that runs short does; it never joins the pusher first.
        let seen = take_until(&list, 1);
        pusher.join().unwrap();
        assert_eq!(seen, vec![42]);
    });
}

#[test]
fn abandoned_heap_is_claimed_once_with_its_state() {
    loom::model(|| {
        // state OWNED (1) by the exiting thread; `data` stands for the
        // heap's owner-private arenas.
        let state = Arc::new(AtomicU8::new(1));
        let data = Arc::new(UnsafeCell::new(0usize));
        let exiting = {
            let (state, data) = (state.clone(), data.clone());
            thread::spawn(move || {
                // SAFETY: this thread owns the heap (state OWNED).
                data.with_mut(|d| unsafe { *d = 7 });
                abandon(&state);
            })
        };
        let claimers: Vec<_> = (0..2)
            .map(|_| {
                let (state, data) = (state.clone(), data.clone());
                thread::spawn(move || {
                    if claim(&state) {
                        // SAFETY: claimed: this thread owns the heap now.
                        let v = data.with(|d| unsafe { *d });
                        assert_eq!(v, 7, "the new owner sees the old owner's work");
                        true
                    } else {
                        false
                    }
                })
            })
            .collect();
        exiting.join().unwrap();
        let wins = claimers
            .into_iter()
            .map(|c| c.join().unwrap() as usize)
            .sum::<usize>();
        assert!(wins <= 1, "a heap has at most one owner");
        // Nobody claimed it only if both tried before the abandonment.
        if wins == 0 {
            assert_eq!(state.load(Ordering::Relaxed), 0);
        }
    });
}

#[test]
fn remote_free_during_owner_exit_is_taken_once() {
    loom::model(|| {
        let list = Arc::new(RemoteFreeList::<Node>::new());
        let state = Arc::new(AtomicU8::new(1));
        let n = SendPtr(node(5));
        let pusher = {
            let list = list.clone();
            thread::spawn(move || {
                let n = n;
                // SAFETY: this thread owns the node and gives it up.
                unsafe { list.push(n.0) };
            })
        };
        // The exiting owner takes what is there, then abandons the heap
        // (on_thread_exit).
        let exiting = {
            let (list, state) = (list.clone(), state.clone());
            thread::spawn(move || {
                let seen = drain(&list);
                abandon(&state);
                seen
            })
        };
        // A new thread adopts the heap as soon as it is abandoned and takes
        // what is there (adopt, then an arena that runs short), and again
        // later.
        while !claim(&state) {
            thread::yield_now();
        }
        let mut seen = drain(&list);
        seen.extend(exiting.join().unwrap());
        pusher.join().unwrap();
        seen.extend(drain(&list));
        assert_eq!(seen, vec![5], "the remote free is taken exactly once");
    });
}

/// The ownership test of the fast paths: thread 1 owns the heap and exits
/// (leave, abandon), thread 2 claims it and enters, thread 3 frees into it
/// from outside. `may_use` answers `true` to exactly the thread that
/// owns the heap at that moment: the owner-private data (a loom cell) is
/// touched only under `may_use`, so two users at once would be a reported
/// race, and the new owner sees the old owner's writes.
#[test]
fn only_the_owner_may_use_a_heap() {
    loom::model(|| {
        let state = Arc::new(AtomicU8::new(1));
        let tid = Arc::new(AtomicUsize::new(0));
        let data = Arc::new(UnsafeCell::new(0usize));
        enter(&tid, 1); // thread 1's adoption, before it runs
        let owner = {
            let (state, tid, data) = (state.clone(), tid.clone(), data.clone());
            thread::spawn(move || {
                assert!(may_use(&tid, 1));
                // SAFETY: may_use: this thread owns the heap.
                data.with_mut(|d| unsafe { *d = 7 });
                leave(&tid);
                assert!(!may_use(&tid, 1), "an exited owner may not use it");
                abandon(&state);
            })
        };
        let next = {
            let (state, tid, data) = (state.clone(), tid.clone(), data.clone());
            thread::spawn(move || {
                if !may_use(&tid, 2) && claim(&state) {
                    enter(&tid, 2);
                    assert!(may_use(&tid, 2));
                    // SAFETY: claimed and entered: this thread owns the heap.
                    let v = data.with_mut(|d| unsafe {
                        *d += 1;
                        *d
                    });
                    assert_eq!(v, 8, "the new owner sees the old owner's work");
                }
            })
        };
        // A remote freer is never taken for the owner.
        assert!(!may_use(&tid, 3));
        owner.join().unwrap();
        assert!(!may_use(&tid, 3));
        next.join().unwrap();
    });
}

/// Two freers each push a chain of two chunks (an outbox's flush) while the
/// owner takes: every chunk arrives once, with its contents, and a chain is
/// never cut (its inner link is written before the CAS that publishes it).
#[test]
fn chains_from_two_outboxes_reach_owner_whole() {
    loom::model(|| {
        let list = Arc::new(RemoteFreeList::<Node>::new());
        let pushers: Vec<_> = [10usize, 20]
            .into_iter()
            .map(|v| {
                let list = list.clone();
                let (a, b) = (SendPtr(node(v + 1)), SendPtr(node(0)));
                thread::spawn(move || {
                    let (a, b) = (a, b);
                    // SAFETY: this thread owns both nodes until the push:
                    // it links them into a chain a -> b, then gives it up.
                    unsafe {
                        (*b.0).payload.with_mut(|p| *p = v + 2);
                        Node::set_next(a.0, b.0);
                        list.push_chain(a.0, b.0);
                    }
                })
            })
            .collect();
        let mut seen = take_until(&list, 4);
        for p in pushers {
            p.join().unwrap();
        }
        seen.sort_unstable();
        assert_eq!(seen, vec![11, 12, 21, 22]);
        assert!(list.is_empty());
    });
}

/// A carrier: the freer writes, into one chunk, the address of another
/// chunk whose contents it also wrote, and pushes the carrier alone; the
/// owner, taking the carrier, must see the address and, through it, the
/// other chunk's contents (both written before the `Release` CAS).
#[test]
fn a_carriers_addresses_reach_the_owner() {
    loom::model(|| {
        let list = Arc::new(RemoteFreeList::<Node>::new());
        let pusher = {
            let list = list.clone();
            let (carrier, carried) = (SendPtr(node(0)), SendPtr(node(0)));
            thread::spawn(move || {
                let (carrier, carried) = (carrier, carried);
                // SAFETY: this thread owns both nodes until the push; it
                // writes the carried one's contents and its address into
                // the carrier, then gives the carrier up.
                unsafe {
                    (*carried.0).payload.with_mut(|p| *p = 42);
                    (*carrier.0).payload.with_mut(|p| *p = carried.0 as usize);
                    list.push(carrier.0);
                }
            })
        };
        let mut c = list.take_all();
        while c.is_null() {
            thread::yield_now();
            c = list.take_all();
        }
        // SAFETY: take_all gave this thread the carrier, and with it the
        // chunk whose address it holds.
        unsafe {
            assert!(Node::next(c).is_null(), "one carrier was pushed");
            let carried = (*c).payload.with(|p| *p) as *mut Node;
            assert!(!carried.is_null(), "the carrier's address arrived");
            assert_eq!((*carried).payload.with(|p| *p), 42);
            drop(Box::from_raw(carried));
            drop(Box::from_raw(c));
        }
        pusher.join().unwrap();
        assert!(list.is_empty());
    });
}
