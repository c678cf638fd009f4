//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod barnes_hut;
pub(crate) mod binarytrees;
mod blackscholes;
pub(crate) mod coins;
mod dmm;
mod floyd_warshall;
mod game_of_life;
pub(crate) mod gcbench;
mod lu_decomposition;
mod mandelbrot;
mod mandelbrot6;
mod matrix_multiplication;
mod maze;
mod nbody;
pub(crate) mod parfib;
mod quicksort;
mod raytracer;
mod row_tree;
mod smvm;
mod spectralnorm;
mod sumeuler;
mod worpitzky;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &barnes_hut::BarnesHut,
    &raytracer::Raytracer,
    &quicksort::Quicksort,
    &smvm::Smvm,
    &dmm::Dmm,
    &parfib::Parfib,
    &coins::Coins,
    &sumeuler::SumEuler,
    &worpitzky::Worpitzky,
    &maze::Maze,
    &mandelbrot::Mandelbrot,
    &blackscholes::BlackScholes,
    &binarytrees::BinaryTrees,
    &game_of_life::GameOfLife,
    &nbody::NBody,
    &spectralnorm::SpectralNorm,
    &mandelbrot6::Mandelbrot6,
    &lu_decomposition::LuDecomposition,
    &matrix_multiplication::MatrixMultiplication,
    &floyd_warshall::FloydWarshall,
    &gcbench::GcBench,
];
