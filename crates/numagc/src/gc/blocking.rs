//! Blocking sections: a vproc in foreign code that may block (a C call that
//! sleeps, reads a file, takes a lock) does not stall the others.
//!
//! The global collection of §3.4 stops every vproc: each does its local
//! part (minor and major collection, hands in its chunks) and then copies
//! in parallel with the others. A vproc whose thread is blocked outside the
//! runtime reaches no safepoint, so without this every other vproc would
//! wait for it (or call the collection off at `safepoint-timeout`). OCaml 5
//! has `caml_enter_blocking_section`, GHC safe foreign calls; numagc has
//! [`crate::Scope::blocking`] and `numagc_enter_blocking` /
//! `numagc_leave_blocking`.
//!
//! ## The choice: a proxy thread acts for the blocked vproc
//!
//! A vproc entering a blocking section holds all its values in its root
//! stack (the API gives the blocking code no access to the heap), so its
//! whole state is the `Vproc` it leaves behind. Its *proxy*, a thread the
//! vproc starts the first time it blocks, takes part in collections with
//! that state while the vproc is blocked: it enters the collection under
//! the vproc's id, runs its local collections, copies from its roots and
//! scans like any vproc, and serves thieves' requests for environments.
//! The handshake of `gc::handshake` is unchanged — every vproc id still
//! arrives at every phase — so its proofs still hold. (The alternative,
//! collections that skip a blocked vproc and scan its heap from another
//! vproc, would change the number of participants per collection, and every
//! phase of the protocol with it.)
//!
//! ## The protocol (one state per vproc, `loom_models::blocking`)
//!
//! * `RUNNING`: the vproc's own thread owns its state.
//! * `BLOCKED`: the owner is in a blocking section and does not touch its
//!   state; no one does.
//! * `PROXIED`: the proxy owns the state (it won `BLOCKED → PROXIED`).
//!
//! The owner enters with a store of `BLOCKED` and rings the proxy's bell;
//! it leaves with a compare-and-swap `BLOCKED → RUNNING`, waiting on its
//! own doorbell while the state is `PROXIED`. The proxy waits on its bell
//! until the state is `BLOCKED` and a collection is pending or a thief's
//! request waits, then takes the state with `BLOCKED → PROXIED`, attends to
//! it, and hands it back (`PROXIED → BLOCKED`, ringing the owner). The
//! compare-and-swaps make ownership exclusive; the acquire/release pairs
//! (all `SeqCst` here) order every access of the state by one owner before
//! the next owner's.
//!
//! Wake-ups are never lost, and a section that meets no collection wakes
//! no one. A requester stores `pending`, a thief the vproc's signal; each
//! then fences and looks at the vproc's state, and rings its proxy if it
//! is not `RUNNING` ([`Coordinator::request`], [`Coordinator::signal`]).
//! The owner stores `BLOCKED`, fences, and looks at `pending` and its
//! signal, and rings its proxy if either is set. Under `SeqCst` one of the
//! two sides sees the other's store (Dekker), so the proxy is rung; it
//! tests its condition under its bell's lock (`sched::doorbell`).
//!
//! A vproc that leaves while a collection is pending that its proxy has not
//! taken yet owns its state again and joins the collection itself at once
//! (`Scope::blocking` polls after leaving).

use crate::gc::handshake::Coordinator;
use crate::sched::doorbell::Doorbell;
use crate::sync::{fence, AtomicBool, AtomicUsize, Ordering};

/// The owner's thread owns the vproc's state.
pub(crate) const RUNNING: usize = 0;
/// The owner is in a blocking section; the state is free for the proxy.
pub(crate) const BLOCKED: usize = 1;
/// The proxy owns the state.
pub(crate) const PROXIED: usize = 2;

/// Per vproc: the blocking state, the proxy's bell, and whether the proxy
/// must stop.
pub(crate) struct BlockingStates {
    state: Box<[AtomicUsize]>,
    proxy_bells: Box<[Doorbell]>,
    stop: Box<[AtomicBool]>,
}

impl BlockingStates {
    pub fn new(n: usize) -> BlockingStates {
        BlockingStates {
            state: (0..n).map(|_| AtomicUsize::new(RUNNING)).collect(),
            proxy_bells: (0..n).map(|_| Doorbell::new()).collect(),
            stop: (0..n).map(|_| AtomicBool::new(false)).collect(),
        }
    }

    /// Rings the proxy of every vproc that may be blocked (a collection
    /// was requested: `pending` was stored just before, followed by a
    /// `SeqCst` fence).
    /// Whether vproc `v`'s proxy owns its state now (called by whoever
    /// owns it: the answer cannot change under it).
    pub fn is_proxied(&self, v: usize) -> bool {
        self.state[v].load(Ordering::SeqCst) == PROXIED
    }

    pub fn ring_blocked(&self) {
        for v in 0..self.state.len() {
            self.ring_if_blocked(v);
        }
    }

    /// Rings `v`'s proxy if `v` may be blocked (a request for `v` was
    /// stored just before, followed by a `SeqCst` fence).
    pub fn ring_if_blocked(&self, v: usize) {
        if self.state[v].load(Ordering::SeqCst) != RUNNING {
            self.proxy_bells[v].ring();
        }
    }
}

/// What the proxy of a vproc is to do next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ProxyWake {
    /// It owns the vproc's state now: attend to the pending collection or
    /// requests, then [`Coordinator::proxy_done`].
    Serve,
    /// The vproc is exiting: the proxy ends.
    Stop,
}

impl<J> Coordinator<J> {
    /// Vproc `v`'s thread enters a blocking section: from now on it does not
    /// touch its state until [`Coordinator::leave_blocking`] returns.
    pub fn enter_blocking(&self, v: usize) {
        let b = self.blocking();
        debug_assert_eq!(b.state[v].load(Ordering::Relaxed), RUNNING);
        b.state[v].store(BLOCKED, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        // A request stored before this state was, whose ringer saw the
        // vproc RUNNING and left the proxy asleep, is seen here (Dekker:
        // each side stores, fences, then loads the other's word). Most
        // sections find nothing, and wake no one.
        if self.pending() || self.signalled(v) {
            b.proxy_bells[v].ring();
        }
    }

    /// Vproc `v`'s thread leaves its blocking section: waits while its
    /// proxy acts for it, then owns its state again.
    pub fn leave_blocking(&self, v: usize) {
        let b = self.blocking();
        loop {
            match b.state[v].compare_exchange(BLOCKED, RUNNING, Ordering::SeqCst, Ordering::SeqCst)
            {
                Ok(_) => return,
                Err(s) => {
                    debug_assert_eq!(s, PROXIED, "vproc {v} leaves a section it did not enter");
                    self.bell(v)
                        .wait_unless(|| b.state[v].load(Ordering::SeqCst) != PROXIED);
                }
            }
        }
    }

    /// The proxy of `v` waits until it must act for `v` (a collection is
    /// pending or a request waits, while `v` is blocked) and takes `v`'s
    /// state, or until it must stop.
    pub fn proxy_wait(&self, v: usize) -> ProxyWake {
        let b = self.blocking();
        loop {
            let wanted = || {
                b.state[v].load(Ordering::SeqCst) == BLOCKED
                    && (self.pending() || self.signalled(v))
            };
            b.proxy_bells[v].wait_unless(|| b.stop[v].load(Ordering::SeqCst) || wanted());
            if b.stop[v].load(Ordering::SeqCst) {
                return ProxyWake::Stop;
            }
            if wanted()
                && b.state[v]
                    .compare_exchange(BLOCKED, PROXIED, Ordering::SeqCst, Ordering::SeqCst)
                    .is_ok()
            {
                return ProxyWake::Serve;
            }
        }
    }

    /// The proxy of `v` hands `v`'s state back and wakes the owner if it
    /// waits to leave.
    pub fn proxy_done(&self, v: usize) {
        let b = self.blocking();
        let was = b.state[v].swap(BLOCKED, Ordering::SeqCst);
        debug_assert_eq!(was, PROXIED);
        self.bell(v).ring();
    }

    /// Tells `v`'s proxy to end (its vproc is exiting, not blocked).
    pub fn stop_proxy(&self, v: usize) {
        let b = self.blocking();
        b.stop[v].store(true, Ordering::SeqCst);
        b.proxy_bells[v].ring();
    }
}
