//! Plans: the heap designs numagc can run, chosen at run time (`--plan`).
//!
//! The mutator API ([`crate::Scope`], [`crate::Handle`], [`crate::View`])
//! depends on a plan only through the slow paths re-exported here —
//! nursery exhausted, allocation straight in the shared heap, promotion,
//! safepoint poll and explicit collections — and through the plan-neutral
//! bump-pointer fast path of [`crate::vproc::Vproc`]. Every design of the
//! papers has per-vproc bump allocation, so a new plan supplies these entry
//! points and the same benchmark code runs on it.
//!
//! | plan | paper | status |
//! |---|---|---|
//! | `split` | manticore-numa-gc.md §3: local heaps + chunked NUMA global heap | implemented |
//! | shared heap | multicore-ocaml-gc.txt | not yet implemented |
//! | hybrid | gumsmp-shared-distributed-heaps.txt | not yet implemented |

pub(crate) mod split_heap;
