//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod binarytrees;
mod blackscholes;
mod game_of_life;
mod parfib;
mod spectralnorm;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &parfib::Parfib,
    &blackscholes::BlackScholes,
    &binarytrees::BinaryTrees,
    &game_of_life::GameOfLife,
    &spectralnorm::SpectralNorm,
];
