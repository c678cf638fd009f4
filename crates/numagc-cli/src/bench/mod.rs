//! Benchmarks. Each checks its own answer against an independently
//! computed one and prints figures; none asserts a timing.

pub mod alloc;
pub mod binarytrees;
pub mod parfib;
pub mod pingpong;
#[allow(dead_code)] // until the harness writes its records and plots
pub mod plot;
#[allow(dead_code)] // until the harness writes its records and plots
pub mod record;

use crate::runtime_args::RuntimeArgs;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum Bench {
    /// The Benchmarks Game binary-trees program on the numagc heap.
    Binarytrees {
        /// Maximum tree depth.
        #[arg(long, default_value_t = 21)]
        depth: u32,
        /// Write the results and statistics as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// Parallel Fibonacci with heap-boxed results, forked above a threshold.
    Parfib {
        /// Which Fibonacci number.
        #[arg(long, default_value_t = 38)]
        n: i64,
        /// Calls with n at most this run sequentially.
        #[arg(long, default_value_t = 20)]
        threshold: i64,
        /// Write the results and statistics as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// Two threads bounce a heap message over synchronous channels.
    Pingpong {
        /// Round trips.
        #[arg(long, default_value_t = 200_000)]
        rounds: u64,
        /// Write the results and statistics as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// Nursery allocation rate against a plain bump-pointer loop, side by side.
    Alloc {
        /// Bytes allocated per measurement.
        #[arg(long, default_value_t = 4 << 30)]
        bytes: u64,
        /// Measurements of each kind (alternating); medians are reported.
        #[arg(long, default_value_t = 7)]
        repeat: usize,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
}

pub fn run(b: Bench) -> Result<(), String> {
    match b {
        Bench::Binarytrees { depth, json, runtime } => binarytrees::run(depth, json, &runtime),
        Bench::Parfib { n, threshold, json, runtime } => parfib::run(n, threshold, json, &runtime),
        Bench::Pingpong { rounds, json, runtime } => pingpong::run(rounds, json, &runtime),
        Bench::Alloc { bytes, repeat, json, runtime } => alloc::run(bytes, repeat, json, &runtime),
    }
}

/// Median of a non-empty sample.
pub fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

pub fn write_json(path: &PathBuf, value: &serde_json::Value) -> Result<(), String> {
    std::fs::write(path, serde_json::to_string_pretty(value).unwrap())
        .map_err(|e| format!("writing {}: {e}", path.display()))
}
