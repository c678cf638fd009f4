//! How messages travel between PEs: the [`Transport`] trait, and the
//! in-process transport (PEs as thread groups of one process, messages
//! over channels).
//!
//! A transport moves bytes (`super::message` gives them their meaning)
//! and says which PE sent them; it keeps each sender's messages in order.
//! Losing a peer is not a transport error: a PE that stops leaves its
//! mark on the [`Liveness`] board, which the others read while they wait
//! on it (`super::group`).

use crate::error::{ErrorKind, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::Duration;

/// Moves messages between the PEs of a group.
pub trait Transport: Send + Sync {
    /// This PE's number, `0 .. pes()`.
    fn pe(&self) -> usize;
    /// Number of PEs in the group.
    fn pes(&self) -> usize;
    /// Sends `bytes` to PE `to`. Errors: [`ErrorKind::Pe`] when `to`
    /// cannot receive any more (it has stopped).
    fn send(&self, to: usize, bytes: Vec<u8>) -> Result<()>;
    /// The next message and its sender, waiting at most `timeout`;
    /// `Ok(None)` when none came.
    fn recv(&self, timeout: Duration) -> Result<Option<(usize, Vec<u8>)>>;
    /// Whether PE `pe` is still heard from. A transport between
    /// processes says false once `pe` has been silent past its deadline
    /// (it died or hangs); in one process the group's own board says
    /// which PEs stopped, and this stays true.
    fn peer_alive(&self, _pe: usize) -> bool {
        true
    }
    /// Stops what the transport runs of its own (the MPI transport's
    /// communication thread), when its group is dropped: something may
    /// still hold the transport (a value rooted in a PE's runtime keeps
    /// the PE's context), and nothing of it may run past the end of MPI.
    fn close(&self) {}
    /// Takes the messages that have come, if no other thread is taking
    /// them now, without waiting: each goes to `take`, and what `take`
    /// declines (returns `false` for) goes on to the service's queue, in
    /// order. For a vproc that waits for an answer: it takes the answer
    /// itself rather than wait for the service to hand it over. Returns
    /// whether any message came. A transport whose messages reach the
    /// service without a thread of its own in between (in process: a
    /// channel) has nothing to gain, and takes none.
    fn poll(&self, _take: &mut dyn FnMut(usize, &[u8]) -> bool) -> bool {
        false
    }
    /// Whether [`Transport::poll`] can take anything: whether a waiting
    /// vproc gains by polling rather than sleeping.
    fn polls(&self) -> bool {
        false
    }
}

/// Which PEs of a group are still running; a PE's entry goes false when
/// its service stops, normally or not.
#[derive(Debug)]
pub(crate) struct Liveness(Box<[AtomicBool]>);

impl Liveness {
    pub fn new(pes: usize) -> Arc<Liveness> {
        Arc::new(Liveness((0..pes).map(|_| AtomicBool::new(true)).collect()))
    }

    pub fn alive(&self, pe: usize) -> bool {
        self.0[pe].load(Ordering::SeqCst)
    }

    pub fn stopped(&self, pe: usize) {
        self.0[pe].store(false, Ordering::SeqCst);
    }
}

/// PEs in one process: each has a channel; every PE holds a sender to
/// each of them.
pub struct InProcess {
    me: usize,
    to: Vec<Sender<(usize, Vec<u8>)>>,
    from: std::sync::Mutex<Receiver<(usize, Vec<u8>)>>,
}

impl InProcess {
    /// The transports of a group of `pes` PEs, one per PE, in PE order.
    pub fn group(pes: usize) -> Vec<InProcess> {
        let (txs, rxs): (Vec<_>, Vec<_>) = (0..pes).map(|_| mpsc::channel()).unzip();
        rxs.into_iter()
            .enumerate()
            .map(|(me, rx)| InProcess {
                me,
                to: txs.clone(),
                from: std::sync::Mutex::new(rx),
            })
            .collect()
    }
}

impl Transport for InProcess {
    fn pe(&self) -> usize {
        self.me
    }

    fn pes(&self) -> usize {
        self.to.len()
    }

    fn send(&self, to: usize, bytes: Vec<u8>) -> Result<()> {
        let Some(tx) = self.to.get(to) else {
            return Err(ErrorKind::Pe {
                pe: to,
                message: format!("no such PE (group of {})", self.to.len()),
            }
            .into());
        };
        tx.send((self.me, bytes)).map_err(|_| {
            ErrorKind::Pe {
                pe: to,
                message: "stopped: its channel is closed".into(),
            }
            .into()
        })
    }

    fn recv(&self, timeout: Duration) -> Result<Option<(usize, Vec<u8>)>> {
        // A std lock (under `--cfg loom` too: the transport's threads are
        // not part of any model), poison ignored: a receiver holds no
        // invariant a panic could break.
        let rx = self.from.lock().unwrap_or_else(|p| p.into_inner());
        match rx.recv_timeout(timeout) {
            Ok(m) => Ok(Some(m)),
            Err(RecvTimeoutError::Timeout) => Ok(None),
            // Every PE holds a sender to every other, itself included: the
            // channel cannot disconnect while this transport lives.
            Err(RecvTimeoutError::Disconnected) => Ok(None),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_arrive_in_order_with_their_sender() {
        let g = InProcess::group(3);
        for i in 0..10u8 {
            g[0].send(2, vec![i]).unwrap();
            g[1].send(2, vec![100 + i]).unwrap();
        }
        let mut from0 = vec![];
        let mut from1 = vec![];
        while let Some((s, b)) = g[2].recv(Duration::from_millis(10)).unwrap() {
            match s {
                0 => from0.push(b[0]),
                1 => from1.push(b[0]),
                _ => panic!("sender {s}"),
            }
        }
        assert_eq!(from0, (0..10).collect::<Vec<_>>());
        assert_eq!(from1, (100..110).collect::<Vec<_>>());
        assert!(g[0].send(3, vec![]).is_err());
    }

    #[test]
    fn liveness_marks_stopped_pes() {
        let l = Liveness::new(2);
        assert!(l.alive(1));
        l.stopped(1);
        assert!(!l.alive(1) && l.alive(0));
    }
}
