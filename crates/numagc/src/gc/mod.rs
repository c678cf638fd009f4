//! The machinery of collections that no plan owns: stopping the world and
//! the vprocs' other waits (`handshake`, manticore-numa-gc.md §3.4),
//! blocking sections (`blocking`), the work queues of a parallel scan
//! (`work_queue`), and what happens when a collector panics. The
//! collections themselves belong to their plan (`crate::plan::split`).

/// Aborts the process if a collection unwinds. A collection that stops
/// half-way leaves objects forwarded and, in a global collection, the other
/// vprocs waiting for this one forever: there is no state to return to, so
/// a panic inside the collector (an invariant broken) is reported and ends
/// the process. Memory the system refuses is not such a panic: copies take
/// their to-space before they move anything (`plan::split::copy`, `plan::split::global`).
pub(crate) struct AbortOnUnwind(pub &'static str);

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("numagc: a panic inside the {} cannot be recovered from (the heap is half-collected); aborting", self.0);
            std::process::abort();
        }
    }
}

/// What a vproc's part in a stop-the-world collection came to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Joined {
    /// It took part in a collection that completed.
    Collected,
    /// No collection was pending any more.
    NotPending,
    /// The collection was called off before anything moved; `requested`:
    /// this vproc had asked for it (it was the leader).
    Abandoned {
        reason: handshake::Abandoned,
        requested: bool,
    },
}

/// Vproc `v` enters the pending stop-the-world collection: `Err` with what
/// its part came to when there is none to take part in (see
/// [`handshake::Coordinator::enter`]).
pub(crate) fn enter<J>(coord: &handshake::Coordinator<J>, v: usize) -> Result<(), Joined> {
    match coord.enter(v) {
        handshake::Entry::Entered => Ok(()),
        handshake::Entry::NotPending => Err(Joined::NotPending),
        handshake::Entry::Abandoned(reason) => Err(Joined::Abandoned {
            reason,
            requested: false,
        }),
    }
}

pub(crate) mod blocking;
pub(crate) mod handshake;
pub(crate) mod work_queue;
