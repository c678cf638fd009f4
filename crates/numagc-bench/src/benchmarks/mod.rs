//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod barnes_hut;
mod binarytrees;
mod coins;
mod dmm;
mod matrix_multiplication;
mod maze;
mod nbody;
mod parfib;
mod quicksort;
mod smvm;
mod sumeuler;
mod worpitzky;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &barnes_hut::BarnesHut,
    &quicksort::Quicksort,
    &smvm::Smvm,
    &dmm::Dmm,
    &parfib::Parfib,
    &coins::Coins,
    &sumeuler::SumEuler,
    &worpitzky::Worpitzky,
    &maze::Maze,
    &binarytrees::BinaryTrees,
    &nbody::NBody,
    &matrix_multiplication::MatrixMultiplication,
];
