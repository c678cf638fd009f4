//! One file per benchmark; [`ALL`] lists them in the order of the suite's
//! table (crate docs).

mod binarytrees;
mod parfib;
mod raytracer;
mod mandelbrot;
mod mandelbrot6;

use crate::Benchmark;

/// Every benchmark of the suite.
pub static ALL: &[&dyn Benchmark] = &[
    &parfib::Parfib,
    &binarytrees::BinaryTrees,
    &raytracer::Raytracer,
    &mandelbrot::Mandelbrot,
    &mandelbrot6::Mandelbrot6,
];
