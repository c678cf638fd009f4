//! Synchronous channels and choice: the rendezvous protocol of Concurrent
//! ML's primitives (§2.1, [RRX09]), independent of the heap.
//!
//! A synchronisation is an [`Offer`]: one or more *cases* (send a value on
//! a channel, or receive from one), of which exactly one completes. A plain
//! `send` or `recv` is an offer of one case; `select` offers several.
//!
//! [`sync`] locks the channels of all the cases, in address order (so two
//! offers over the same channels cannot deadlock), and looks at each case
//! in turn for a waiting offer of the opposite direction. The first one it
//! can *claim* wins: claiming is a compare-and-swap of the waiting offer's
//! state from `OPEN` to "claimed by case k", so an offer waiting on several
//! channels is taken at most once however many matchers race for it. The
//! value moves from the sender's offer to the receiver's. If no case can
//! complete and the caller asked to block, the offer is queued on every
//! case's channel — still under all the locks, so no counterpart can slip
//! between the search and the queueing. The caller's own offer is never
//! queued while it searches, so it never has to be claimed in two places at
//! once; that is what the simple "lock every channel" rule buys over
//! [RRX09]'s lock-free protocol, at the price of serialising choices that
//! share a channel.
//!
//! Entries of an offer that was completed through another channel stay in
//! the queues until a matcher or a new waiter skips and drops them.
//!
//! Invariants: an offer's state leaves `OPEN` once; whoever claims it moves
//! its value and then marks it [`Offer::done`], so a waiter that sees `done`
//! finds the value delivered. The matcher is the one that wakes the waiter
//! (what waking means — a thread made ready, a vproc's doorbell — is the
//! caller's `R`, see `crate::sched::thread`).

use crate::sync::{lock, AtomicBool, AtomicUsize, Mutex, MutexGuard, Ordering};
use std::collections::VecDeque;
use std::sync::Arc;

/// The direction of one case of an offer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Dir {
    Send,
    Recv,
}

impl Dir {
    fn opposite(self) -> Dir {
        match self {
            Dir::Send => Dir::Recv,
            Dir::Recv => Dir::Send,
        }
    }
}

const OPEN: usize = 0;

/// One synchronisation over one or more cases, carrying values of type `V`
/// and, for the caller, how to resume the party that made it (`R`).
pub(crate) struct Offer<V, R> {
    /// `OPEN`, or 1 + the index of the case that completed.
    state: AtomicUsize,
    /// Set once the value has moved: the waiting party may go on.
    done: AtomicBool,
    /// Per case: the value a send case offers (taken when it completes).
    values: Mutex<Vec<Option<V>>>,
    /// The value received by the recv case that completed.
    received: Mutex<Option<V>>,
    /// How to resume the party waiting on this offer.
    pub resume: Mutex<Option<R>>,
}

impl<V, R> Offer<V, R> {
    /// An offer whose case `k` sends `values[k]` (`None` for receive cases).
    pub fn new(values: Vec<Option<V>>) -> Arc<Self> {
        Arc::new(Offer {
            state: AtomicUsize::new(OPEN),
            done: AtomicBool::new(false),
            values: Mutex::new(values),
            received: Mutex::new(None),
            resume: Mutex::new(None),
        })
    }

    fn is_open(&self) -> bool {
        self.state.load(Ordering::Acquire) == OPEN
    }

    fn claim(&self, case: usize) -> bool {
        self.state
            .compare_exchange(OPEN, case + 1, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The case that completed, once claimed.
    pub fn completed_case(&self) -> Option<usize> {
        self.state.load(Ordering::Acquire).checked_sub(1)
    }

    /// Whether the offer completed and its value moved.
    pub fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    fn mark_done(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// The value the completed receive case got.
    pub fn take_received(&self) -> Option<V> {
        lock(&self.received).take()
    }

    /// The values of the send cases that did not complete (to release them).
    pub fn take_unsent(&self) -> Vec<V> {
        lock(&self.values)
            .iter_mut()
            .filter_map(Option::take)
            .collect()
    }
}

struct Waiting<V, R> {
    offer: Arc<Offer<V, R>>,
    case: usize,
}

struct Queues<V, R> {
    senders: VecDeque<Waiting<V, R>>,
    receivers: VecDeque<Waiting<V, R>>,
}

/// A synchronous channel: the offers waiting to send and to receive.
pub(crate) struct Chan<V, R> {
    queues: Mutex<Queues<V, R>>,
}

impl<V, R> Chan<V, R> {
    pub fn new() -> Self {
        Chan {
            queues: Mutex::new(Queues {
                senders: VecDeque::new(),
                receivers: VecDeque::new(),
            }),
        }
    }

    /// Offers waiting on this channel, stale entries included.
    pub fn waiting(&self) -> usize {
        let q = lock(&self.queues);
        q.senders.len() + q.receivers.len()
    }

    /// Drops every waiting offer (runtime shutdown: what they hold is freed).
    pub fn clear(&self) {
        let mut q = lock(&self.queues);
        q.senders.clear();
        q.receivers.clear();
    }
}

/// A completed rendezvous: the caller's case `case` matched a case of the
/// waiting offer `other`, whose party the caller must now wake.
pub(crate) struct Matched<V, R> {
    pub case: usize,
    pub other: Arc<Offer<V, R>>,
}

/// The queue of direction `dir` of the locked channel at `addr`.
fn queue<'a, V, R>(
    guards: &'a mut [(usize, MutexGuard<'_, Queues<V, R>>)],
    addr: usize,
    dir: Dir,
) -> &'a mut VecDeque<Waiting<V, R>> {
    let q = &mut *guards
        .iter_mut()
        .find(|(a, _)| *a == addr)
        .expect("every case's channel is locked")
        .1;
    match dir {
        Dir::Send => &mut q.senders,
        Dir::Recv => &mut q.receivers,
    }
}

/// Tries to complete `mine` (whose case `k` is `cases[k]`) against the
/// offers waiting on the channels; on success the value has moved and both
/// offers are claimed and done. Otherwise, if `block`, queues `mine` on
/// every case's channel, where a later matcher completes it.
pub(crate) fn sync<V, R>(
    cases: &[(&Chan<V, R>, Dir)],
    mine: &Arc<Offer<V, R>>,
    block: bool,
) -> Option<Matched<V, R>> {
    let addr = |k: usize| std::ptr::from_ref(cases[k].0) as usize;
    // Lock each distinct channel once, in address order.
    let mut order: Vec<usize> = (0..cases.len()).collect();
    order.sort_by_key(|&k| addr(k));
    order.dedup_by_key(|k| addr(*k));
    let mut guards: Vec<(usize, MutexGuard<'_, Queues<V, R>>)> = order
        .iter()
        .map(|&k| (addr(k), lock(&cases[k].0.queues)))
        .collect();
    for (k, &(_, dir)) in cases.iter().enumerate() {
        let opposite = queue(&mut guards, addr(k), dir.opposite());
        while let Some(w) = opposite.pop_front() {
            if Arc::ptr_eq(&w.offer, mine) || !w.offer.claim(w.case) {
                continue; // stale: completed elsewhere (or our own, never queued here yet)
            }
            let claimed = mine.claim(k);
            debug_assert!(
                claimed,
                "an offer that is not queued is claimed only by its owner"
            );
            drop(guards);
            let (from, from_case, to) = match dir {
                Dir::Send => (mine, k, &w.offer),
                Dir::Recv => (&w.offer, w.case, mine),
            };
            let v = lock(&from.values)[from_case].take();
            *lock(&to.received) = v;
            mine.mark_done();
            w.offer.mark_done();
            return Some(Matched {
                case: k,
                other: w.offer,
            });
        }
    }
    if block {
        for (k, &(_, dir)) in cases.iter().enumerate() {
            let same = queue(&mut guards, addr(k), dir);
            same.retain(|w| w.offer.is_open());
            same.push_back(Waiting {
                offer: mine.clone(),
                case: k,
            });
        }
    }
    None
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    type C = Chan<u32, ()>;

    #[test]
    fn send_then_recv_moves_the_value() {
        let ch = C::new();
        let s = Offer::new(vec![Some(7)]);
        assert!(sync(&[(&ch, Dir::Send)], &s, true).is_none());
        assert_eq!(ch.waiting(), 1);
        let r = Offer::new(vec![None]);
        let m = sync(&[(&ch, Dir::Recv)], &r, false).expect("a sender waits");
        assert_eq!(m.case, 0);
        assert!(Arc::ptr_eq(&m.other, &s));
        assert_eq!(r.take_received(), Some(7));
        assert!(s.done() && r.done());
        assert_eq!(ch.waiting(), 0);
    }

    #[test]
    fn a_choice_completes_once_and_leaves_stale_entries_behind() {
        let (a, b) = (C::new(), C::new());
        let sel = Offer::new(vec![None, None]);
        assert!(sync(&[(&a, Dir::Recv), (&b, Dir::Recv)], &sel, true).is_none());
        let s1 = Offer::new(vec![Some(1)]);
        let m = sync(&[(&b, Dir::Send)], &s1, true).expect("the choice waits on b");
        assert!(Arc::ptr_eq(&m.other, &sel));
        assert_eq!(sel.completed_case(), Some(1));
        assert_eq!(sel.take_received(), Some(1));
        // The entry on `a` is stale: a sender skips it and waits.
        let s2 = Offer::new(vec![Some(2)]);
        assert!(sync(&[(&a, Dir::Send)], &s2, true).is_none());
        assert_eq!(
            a.waiting(),
            1,
            "the stale receiver was dropped, the sender queued"
        );
    }

    #[test]
    fn an_offer_never_matches_itself() {
        let ch = C::new();
        let both = Offer::new(vec![Some(5), None]);
        assert!(sync(&[(&ch, Dir::Send), (&ch, Dir::Recv)], &both, true).is_none());
        let r = Offer::new(vec![None]);
        let m = sync(&[(&ch, Dir::Recv)], &r, false).expect("the send case waits");
        assert!(Arc::ptr_eq(&m.other, &both));
        assert_eq!(both.completed_case(), Some(0));
        assert_eq!(r.take_received(), Some(5));
        assert!(both.take_unsent().is_empty());
    }

    #[test]
    fn without_block_nothing_is_queued() {
        let ch = C::new();
        let r = Offer::new(vec![None]);
        assert!(sync(&[(&ch, Dir::Recv)], &r, false).is_none());
        assert_eq!(ch.waiting(), 0);
        assert!(r.is_open());
    }
}
