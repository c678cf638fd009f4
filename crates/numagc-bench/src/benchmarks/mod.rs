//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod binarytrees;
mod coins;
mod maze;
mod parfib;
mod sumeuler;
mod worpitzky;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &parfib::Parfib,
    &coins::Coins,
    &sumeuler::SumEuler,
    &worpitzky::Worpitzky,
    &maze::Maze,
    &binarytrees::BinaryTrees,
];
