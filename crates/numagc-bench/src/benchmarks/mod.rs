//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod barnes_hut;
mod binarytrees;
mod nbody;
mod parfib;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &barnes_hut::BarnesHut,
    &parfib::Parfib,
    &binarytrees::BinaryTrees,
    &nbody::NBody,
];
