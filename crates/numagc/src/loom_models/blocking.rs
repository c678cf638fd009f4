//! Blocking sections (`gc/blocking.rs`): vproc 1's thread enters a section
//! and its proxy acts for it. The vproc's state is a loom `UnsafeCell`
//! written by whoever owns it, so an access by the proxy that is not
//! ordered with the owner's is reported. Mutation checks: without the
//! proxies' ring in `request` or the owner's in `enter_blocking` (a
//! request stored before the section), loom reports the deadlock of the
//! first model; without the `ring_if_blocked` of `signal`, of the third.

use super::bounded;
use crate::gc::blocking::ProxyWake;
use crate::gc::handshake::{Coordinator, Entry};
use loom::cell::UnsafeCell;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use loom::sync::{Arc, Condvar, Mutex};
use loom::thread;

/// The vproc's state and the collections it took part in.
struct VprocState {
    data: UnsafeCell<u64>,
    collections: AtomicUsize,
    served_requests: AtomicUsize,
}

impl VprocState {
    fn new() -> Arc<Self> {
        Arc::new(VprocState {
            data: UnsafeCell::new(0),
            collections: AtomicUsize::new(0),
            served_requests: AtomicUsize::new(0),
        })
    }

    /// Whoever owns the state touches it.
    fn touch(&self) {
        self.data.with_mut(|p| unsafe { *p += 1 });
    }
}

/// The safepoint of `plan::poll`: serves requests, and takes part in a
/// pending collection (enter, gather, one phase whose serial part ends
/// it). No deadline: every vproc is waited for.
fn safepoint(c: &Coordinator<u32>, v: usize, st: Option<&VprocState>) {
    if c.take_signal(v) {
        if let Some(st) = st {
            st.served_requests.fetch_add(1, Ordering::Relaxed);
        }
    }
    if !c.pending() {
        return;
    }
    if c.enter(v) == Entry::Entered {
        if let Some(st) = st {
            st.touch();
        }
        c.gather(v, || Ok(()), || unreachable!("no deadline"))
            .expect("no deadline, enough to-space");
        c.phase(v, || c.finish());
        if let Some(st) = st {
            st.collections.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The proxy of vproc 1 (`sched::proxy::serve`).
fn proxy(c: Arc<Coordinator<u32>>, st: Arc<VprocState>) -> thread::JoinHandle<()> {
    thread::spawn(move || loop {
        match c.proxy_wait(1) {
            ProxyWake::Stop => return,
            ProxyWake::Serve => {
                st.touch();
                safepoint(&c, 1, Some(&st));
                c.proxy_done(1);
            }
        }
    })
}

/// A flag the blocked foreign code waits for.
#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
}

impl Gate {
    fn open(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
    fn wait(&self) {
        let mut g = self.open.lock().unwrap();
        while !*g {
            g = self.cv.wait(g).unwrap();
        }
    }
}

/// Vproc 1 blocks until vproc 0's collection is over: the collection
/// completes without vproc 1's thread, through its proxy, whenever the
/// request comes (before, during or after the entry).
#[test]
fn a_blocked_vproc_takes_part_through_its_proxy() {
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let st = VprocState::new();
        let gate = Arc::new(Gate::default());
        let p = proxy(c.clone(), st.clone());
        let (c1, st1, g1) = (c.clone(), st.clone(), gate.clone());
        let owner = thread::spawn(move || {
            st1.touch();
            c1.enter_blocking(1);
            g1.wait(); // foreign code, until the collection is over
            c1.leave_blocking(1);
            st1.touch();
            safepoint(&c1, 1, Some(&st1));
        });
        assert!(c.request(0));
        safepoint(&c, 0, None);
        assert_eq!(c.collections(), 1);
        gate.open();
        owner.join().unwrap();
        c.stop_proxy(1);
        p.join().unwrap();
        assert_eq!(st.collections.load(Ordering::Relaxed), 1);
    });
}

/// Vproc 1 enters and leaves at once, racing with vproc 0's request:
/// either its proxy or its own thread takes part, exactly once, and
/// never both at the same time.
#[test]
fn leaving_races_with_a_collection() {
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let st = VprocState::new();
        let p = proxy(c.clone(), st.clone());
        let (c1, st1) = (c.clone(), st.clone());
        let owner = thread::spawn(move || {
            c1.enter_blocking(1);
            c1.leave_blocking(1);
            st1.touch();
            // `Scope::blocking` polls after leaving; the vproc's next
            // safepoints come later (one here is enough: the
            // collection waits for it).
            while st1.collections.load(Ordering::Relaxed) == 0 {
                if c1.pending() {
                    safepoint(&c1, 1, Some(&st1));
                } else {
                    thread::yield_now();
                }
            }
        });
        assert!(c.request(0));
        safepoint(&c, 0, None);
        owner.join().unwrap();
        c.stop_proxy(1);
        p.join().unwrap();
        assert_eq!(c.collections(), 1);
        assert_eq!(st.collections.load(Ordering::Relaxed), 1);
    });
}

/// A thief's request for vproc 1 (`signal`) while it is blocked is
/// served by the proxy: the thief is not kept waiting for the foreign
/// code.
#[test]
fn a_request_to_a_blocked_vproc_is_served_by_its_proxy() {
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let st = VprocState::new();
        let gate = Arc::new(Gate::default());
        let served = Arc::new(AtomicBool::new(false));
        let p = proxy(c.clone(), st.clone());
        let (c1, st1, g1) = (c.clone(), st.clone(), gate.clone());
        let owner = thread::spawn(move || {
            c1.enter_blocking(1);
            g1.wait();
            c1.leave_blocking(1);
            st1.touch();
        });
        c.signal(1);
        // The thief waits for its answer (on its doorbell, in the
        // runtime); here: until the request was taken.
        while st.served_requests.load(Ordering::Relaxed) == 0 {
            thread::yield_now();
        }
        served.store(true, Ordering::Relaxed);
        gate.open();
        owner.join().unwrap();
        c.stop_proxy(1);
        p.join().unwrap();
        assert!(served.load(Ordering::Relaxed));
    });
}
