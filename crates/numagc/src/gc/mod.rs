//! The collections of the split heap (manticore-numa-gc.md §3.3, §3.4):
//! one file per collection, plus the shared copying engine, the
//! synchronisation protocols of the global collection and the verifier.

/// Aborts the process if a collection unwinds. A collection that stops
/// half-way leaves objects forwarded and, in a global collection, the other
/// vprocs waiting for this one forever: there is no state to return to, so
/// a panic inside the collector (an invariant broken) is reported and ends
/// the process. Memory the system refuses is not such a panic: copies take
/// their to-space before they move anything (`gc::copy`, `gc::global`).
pub(crate) struct AbortOnUnwind(pub &'static str);

impl Drop for AbortOnUnwind {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("numagc: a panic inside the {} cannot be recovered from (the heap is half-collected); aborting", self.0);
            std::process::abort();
        }
    }
}

pub(crate) mod blocking;
pub(crate) mod copy;
pub(crate) mod global;
pub(crate) mod handshake;
pub(crate) mod major;
pub(crate) mod minor;
pub(crate) mod promote;
pub(crate) mod verify;
pub(crate) mod work_queue;
