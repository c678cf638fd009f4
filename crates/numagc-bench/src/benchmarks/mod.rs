//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod binarytrees;
mod dmm;
mod matrix_multiplication;
mod parfib;
mod quicksort;
mod smvm;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &parfib::Parfib,
    &binarytrees::BinaryTrees,
    &quicksort::Quicksort,
    &smvm::Smvm,
    &dmm::Dmm,
    &matrix_multiplication::MatrixMultiplication,
];
