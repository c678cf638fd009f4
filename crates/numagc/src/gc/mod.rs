//! The collections of the split heap (manticore-numa-gc.md §3.3, §3.4):
//! one file per collection, plus the shared copying engine, the
//! synchronisation protocols of the global collection and the verifier.

pub(crate) mod copy;
pub(crate) mod global;
pub(crate) mod handshake;
pub(crate) mod major;
pub(crate) mod minor;
pub(crate) mod promote;
pub(crate) mod verify;
pub(crate) mod work_queue;
