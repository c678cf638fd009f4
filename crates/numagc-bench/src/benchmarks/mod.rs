//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod barnes_hut;
mod binarytrees;
mod coins;
mod maze;
mod nbody;
mod parfib;
mod sumeuler;
mod worpitzky;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &barnes_hut::BarnesHut,
    &parfib::Parfib,
    &coins::Coins,
    &sumeuler::SumEuler,
    &worpitzky::Worpitzky,
    &maze::Maze,
    &binarytrees::BinaryTrees,
    &nbody::NBody,
];
