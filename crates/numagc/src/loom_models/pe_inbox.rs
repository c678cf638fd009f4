//! Model of the order of a PE's incoming messages (`pe/inbox.rs`, the
//! MPI transport's probe token; `gumsmp-shared-distributed-heaps.txt`
//! §2.1 assumes each sender's messages arrive in order): a sender puts
//! three messages on the wire (a queue standing for MPI's, which keeps
//! one sender's order) while the service receives (`ProbeToken::receive`)
//! and a vproc polls (`ProbeToken::poll`), keeping the one message it can
//! use (an answer) and declining the others into the service's queue.
//!
//! Whatever the interleaving, every message is taken exactly once, and
//! the service sees the messages the vproc did not keep in the order they
//! were sent.
//!
//! Mutation check (done while writing this model, then reverted):
//! queueing what the poller declines after it lets go of the token fails
//! [`what_a_polling_vproc_declines_keeps_its_place`]: the service takes
//! the third message off the wire before the first reaches the queue.

use crate::pe::inbox::ProbeToken;
use crate::sync::lock;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;
use std::collections::VecDeque;

/// Messages: (number in the order sent, whether it is an answer).
type Msg = (usize, bool);
const SENT: [Msg; 3] = [(1, false), (2, true), (3, false)];

#[test]
fn what_a_polling_vproc_declines_keeps_its_place() {
    loom::model(|| {
        let wire: Arc<Mutex<VecDeque<Msg>>> = Arc::new(Mutex::new(VecDeque::new()));
        let queue: Arc<Mutex<VecDeque<Msg>>> = Arc::new(Mutex::new(VecDeque::new()));
        let token = Arc::new(ProbeToken::new());
        let taken = Arc::new(AtomicUsize::new(0));
        let sender = {
            let wire = wire.clone();
            thread::spawn(move || {
                for m in SENT {
                    lock(&wire).push_back(m);
                }
            })
        };
        let vproc = {
            let (wire, queue, token, taken) =
                (wire.clone(), queue.clone(), token.clone(), taken.clone());
            thread::spawn(move || {
                let mut kept = Vec::new();
                for _ in 0..2 {
                    token.poll(
                        || lock(&wire).pop_front(),
                        |&(n, answer)| {
                            if answer {
                                kept.push(n);
                                taken.fetch_add(1, Ordering::SeqCst);
                            }
                            answer
                        },
                        |m| {
                            lock(&queue).push_back(m);
                            true
                        },
                    );
                }
                kept
            })
        };
        let mut seen = Vec::new();
        while taken.load(Ordering::SeqCst) + seen.len() < SENT.len() {
            match token.receive(|| lock(&queue).pop_front(), || lock(&wire).pop_front()) {
                Some((n, _)) => seen.push(n),
                None => thread::yield_now(),
            }
        }
        sender.join().unwrap();
        let kept = vproc.join().unwrap();
        assert!(lock(&wire).is_empty() && lock(&queue).is_empty());
        let mut all: Vec<usize> = seen.iter().chain(&kept).copied().collect();
        all.sort_unstable();
        assert_eq!(all, [1, 2, 3], "each message taken once");
        let others: Vec<usize> = seen.iter().copied().filter(|&n| n != 2).collect();
        assert_eq!(others, [1, 3], "the service's messages in the order sent");
    });
}
