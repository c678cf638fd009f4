//! Who takes a PE's incoming messages, and in what order (the MPI
//! transport, `super::mpi`).
//!
//! Three kinds of thread take messages off the wire (MPI's queue of what
//! was sent to this rank): the service, in `recv`; the communication
//! thread, when the service is busy; and a vproc waiting for an answer or
//! serving reads (`Transport::poll`, `super::remote`), which keeps what it
//! can use (a `value`, a read) and declines the rest. The service must see
//! each sender's other messages in the order they were sent (a task's
//! result after its `schedule` answered, a stop after the last result),
//! as GUM's protocol assumes of its messages
//! (`gumsmp-shared-distributed-heaps.txt` §2.1).
//!
//! The invariant: only the holder of the [`ProbeToken`] takes from the
//! wire, and it queues what it declines before it lets go; the service
//! takes from the queue first, and, under the token, looks at the queue
//! again before it takes from the wire. So a message declined into the
//! queue is always ahead of every later message the service can take.
//! Messages a vproc keeps leave the order: each answers a request of its
//! own by id (`value`), or reads an object this PE owns (`access`), and
//! neither depends on an earlier message of its sender.
//!
//! The protocol is generic over the message and the two queues, so the
//! loom model `loom_models::pe_inbox` explores this code with a queue for
//! the wire.

use crate::sync::{lock, Mutex};

/// Held by whoever takes messages off the wire (see the module doc).
pub(crate) struct ProbeToken(Mutex<()>);

impl ProbeToken {
    pub(crate) fn new() -> ProbeToken {
        ProbeToken(Mutex::new(()))
    }

    /// The service's next message: one of the queue's, else, under the
    /// token, one of the queue's again (the token's last holder may have
    /// queued one meanwhile) or one off the wire.
    pub(crate) fn receive<M>(
        &self,
        mut queued: impl FnMut() -> Option<M>,
        probe: impl FnMut() -> Option<M>,
    ) -> Option<M> {
        if let Some(m) = queued() {
            return Some(m);
        }
        let _token = lock(&self.0);
        queued().or_else(probe)
    }

    /// Unless another thread holds the token: takes every message off the
    /// wire, gives each to `take`, and queues (with `queue`, still under
    /// the token) each one `take` declines; stops when the wire is empty or
    /// `queue` fails. Returns whether any message came.
    pub(crate) fn poll<M>(
        &self,
        mut probe: impl FnMut() -> Option<M>,
        mut take: impl FnMut(&M) -> bool,
        mut queue: impl FnMut(M) -> bool,
    ) -> bool {
        let Ok(_token) = self.0.try_lock() else {
            return false;
        };
        let mut got = false;
        while let Some(m) = probe() {
            got = true;
            if !take(&m) && !queue(m) {
                break;
            }
        }
        got
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::collections::VecDeque;
    use std::sync::Mutex;

    #[test]
    fn what_a_poller_declines_reaches_the_service_before_later_messages() {
        let wire = Mutex::new(VecDeque::from([1, 2, 3, 4]));
        let queue = Mutex::new(VecDeque::new());
        let token = ProbeToken::new();
        // The poller keeps the even ones and queues the odd ones.
        let mut kept = Vec::new();
        let mut declined = 0;
        let got = token.poll(
            || wire.lock().unwrap().pop_front(),
            |&m| {
                if m % 2 == 0 {
                    kept.push(m);
                    true
                } else {
                    false
                }
            },
            |m| {
                declined += 1;
                queue.lock().unwrap().push_back(m);
                true
            },
        );
        assert!(got);
        assert_eq!(kept, [2, 4]);
        assert_eq!(declined, 2);
        wire.lock().unwrap().push_back(5);
        let mut seen = Vec::new();
        while let Some(m) = token.receive(
            || queue.lock().unwrap().pop_front(),
            || wire.lock().unwrap().pop_front(),
        ) {
            seen.push(m);
        }
        assert_eq!(seen, [1, 3, 5]);
        // A held token: the poller takes nothing.
        let _held = lock(&token.0);
        wire.lock().unwrap().push_back(6);
        assert!(!token.poll(|| wire.lock().unwrap().pop_front(), |_| true, |_| true));
        assert_eq!(wire.lock().unwrap().len(), 1);
    }
}
