//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod binarytrees;
mod floyd_warshall;
mod gcbench;
mod lu_decomposition;
mod parfib;
mod row_tree;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &parfib::Parfib,
    &binarytrees::BinaryTrees,
    &lu_decomposition::LuDecomposition,
    &floyd_warshall::FloydWarshall,
    &gcbench::GcBench,
];
