//! PEs: runtime instances that share nothing but messages — the hybrid of
//! `gumsmp-shared-distributed-heaps.txt` (GUMSMP, §2.1 and §3.3).
//!
//! A PE is one [`crate::Runtime`], of any plan, with its own heap and
//! vprocs; a [`PeGroup`] is several of them running one program. Work
//! moves between them as GUM moves it (§2.1): an idle PE asks another
//! for work, and gets a task — a registered function ([`Exports`]) and
//! its arguments, packed — whose result is packed back. One PE per NUMA
//! node is the paper's best configuration (§3.3, Table 2).
//!
//! | concept | module |
//! |---|---|
//! | exportable functions, by name | `export` |
//! | the fork that offers its second half, a task sent to a chosen PE | `fork` (`Scope::par2_export`, `Scope::call_on`) |
//! | packing a graph into a portable packet (breadth first) | `pack` |
//! | the packer's table of visited objects | `address_index` |
//! | unpacking: checking a packet, building it in an order its references allow | `unpack` |
//! | the messages and their wire format | `message` |
//! | moving the bytes (in process) | `transport` |
//! | moving the bytes between processes (feature `mpi`) | `mpi` |
//! | the group, what its vprocs and services share | `group` |
//! | the service thread: the work protocol | `service` |
//! | weighted reference counting: the GIT and import books | `weight` |
//! | global addresses in the heap: GIT roots, FetchMes, imports held weakly, weight returned | `global` |
//! | reads, writes and fetches of other PEs' objects | `remote` (`Scope::remote_get`, `remote_set`, `resolve`) |
//!
//! Where its PEs run: all in one process ([`PeGroup::new`], the
//! in-process transport) or one per MPI rank (`mpi::MpiSession::group`,
//! feature `mpi`), each PE's vprocs on one node
//! (`Topology::place_pe_vprocs`: PE `p` on node `p % nodes`).
//!
//! What travels how: immutable graphs are copied (`pack`); mutable
//! objects, FetchMes and immutable objects past the packet limit travel as
//! global addresses (`global`), whose weight comes back when the holder's
//! collection finds its FetchMe dead. The C ABI of all this is
//! `numagc-capi`'s `pe.rs`.

mod address_index;
mod export;
mod fork;
pub(crate) mod global;
#[cfg(all(test, not(loom)))]
mod global_tests;
pub(crate) mod group;
// The MPI transport's (its protocol also runs in the unit tests and the
// loom model).
#[cfg(any(feature = "mpi", test))]
pub(crate) mod inbox;
mod message;
#[cfg(feature = "mpi")]
pub mod mpi;
pub(crate) mod pack;
mod remote;
mod service;
mod transport;
mod unpack;
pub mod weight;
#[cfg(test)]
mod weight_tests;

pub use export::{Export, ExportClosure, ExportFn, Exports, MAX_EXPORTS};
pub(crate) use global::fetchme_descriptor;
pub use group::{PeGroup, PeStats, MAX_PES, MIN_PACKET_LIMIT_WORDS, PACKET_LIMIT_WORDS};
/// Packing an immutable graph into a portable packet, and back (the
/// format: `pack`'s module doc).
pub use pack::{pack as pack_graph, pack_into as pack_graph_into, unpack as unpack_graph};
pub use transport::{InProcess, Transport};
