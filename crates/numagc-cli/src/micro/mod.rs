//! Microbenchmarks of single mechanisms, outside the papers' suite: the
//! nursery allocation rate against a plain bump-pointer loop, the cost
//! of a message over a synchronous channel, and blocking sections.

pub mod alloc;
pub mod blocking;
pub mod compact;
pub mod copy;
pub mod fetch;
pub mod pack;
pub mod pingpong;
pub mod roundtrip;
mod tree;

use crate::runtime_args::RuntimeArgs;
use clap::Subcommand;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum Micro {
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
    /// Memory given back when live data shrinks: resident memory and heap
    /// bytes after a full collection, after `compact`, and after new
    /// short-lived data.
    Compact {
        /// Objects built (2 to 6 fields each).
        #[arg(long, default_value_t = 4_000_000)]
        objects: i64,
        /// Every `keep`-th object stays live.
        #[arg(long, default_value_t = 16)]
        keep: i64,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// Packing an immutable tree into a PE packet and unpacking it, against
    /// memcpy of the packet's bytes, alternately (numagc::pe, issue 19).
    Pack {
        /// Levels of the complete binary tree (2^depth - 1 nodes, 32
        /// bytes each in the packet; 19: 16.8 MB).
        #[arg(long, default_value_t = 19)]
        depth: u32,
        /// Measurements of each kind (alternating); medians are reported.
        #[arg(long, default_value_t = 7)]
        repeat: usize,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// The split plan's global collection copying a tree, against memcpy
    /// of the same bytes, alternately (issue 20).
    Copy {
        /// Levels of the complete binary tree (2^depth - 1 nodes of 32
        /// bytes; 20: 33.6 MB).
        #[arg(long, default_value_t = 20)]
        depth: u32,
        /// Measurements of each kind (alternating); medians are reported.
        #[arg(long, default_value_t = 7)]
        repeat: usize,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
    /// A message's round trip through the PE transport over MPI against a
    /// raw MPI ping-pong of the same bytes, alternately; under `mpirun -n 2`
    /// (a build with `--features mpi`).
    Roundtrip {
        /// Message sizes in bytes, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "64,4096,65536,1048576")]
        bytes: Vec<usize>,
        /// Round trips per measurement.
        #[arg(long, default_value_t = 2000)]
        rounds: u64,
        /// Measurements of each kind (alternating); medians are reported.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
    },
    /// Reading another PE's object over MPI (`remote_get`, a copy of N
    /// bytes back) against raw MPI send/recv of the same message sizes,
    /// alternately; under `mpirun -n 2` (a build with `--features mpi`).
    Fetch {
        /// Object sizes in bytes (whole words), comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "64,4096,65536,1048576")]
        bytes: Vec<usize>,
        /// Round trips per measurement.
        #[arg(long, default_value_t = 2000)]
        rounds: u64,
        /// Measurements of each kind (alternating); medians are reported.
        #[arg(long, default_value_t = 5)]
        repeat: usize,
        /// Then two readers at once on PE 0 (two vprocs), `rounds` reads
        /// each of the last size, every copy checked: a vproc that takes
        /// messages from the transport while it waits answers the other's
        /// reads too.
        #[arg(long)]
        concurrent: bool,
    },
    /// The cost of an empty blocking section, and other vprocs' global
    /// collections while vproc 1 blocks inside and outside one.
    Blocking {
        /// Empty sections (and safepoint polls) per measurement.
        #[arg(long, default_value_t = 1_000_000)]
        sections: u64,
        /// How long vproc 1 blocks, in milliseconds.
        #[arg(long, default_value_t = 500)]
        block_ms: u64,
        /// Global collections vproc 0 runs meanwhile.
        #[arg(long, default_value_t = 5)]
        collections: usize,
        /// Write the results as JSON.
        #[arg(long)]
        json: Option<PathBuf>,
        #[command(flatten)]
        runtime: RuntimeArgs,
    },
}

pub fn run(m: Micro) -> Result<(), String> {
    match m {
        Micro::Alloc {
            bytes,
            repeat,
            json,
            runtime,
        } => alloc::run(bytes, repeat, json, &runtime),
        Micro::Pingpong {
            rounds,
            json,
            runtime,
        } => pingpong::run(rounds, json, &runtime),
        Micro::Compact {
            objects,
            keep,
            json,
            runtime,
        } => compact::run(objects, keep, json, &runtime),
        Micro::Pack {
            depth,
            repeat,
            json,
            runtime,
        } => pack::run(depth, repeat, json, &runtime),
        Micro::Copy {
            depth,
            repeat,
            json,
            runtime,
        } => copy::run(depth, repeat, json, &runtime),
        Micro::Roundtrip {
            bytes,
            rounds,
            repeat,
        } => roundtrip::run(&bytes, rounds, repeat),
        Micro::Fetch {
            bytes,
            rounds,
            repeat,
            concurrent,
        } => fetch::run(&bytes, rounds, repeat, concurrent),
        Micro::Blocking {
            sections,
            block_ms,
            collections,
            json,
            runtime,
        } => blocking::run(sections, block_ms, collections, json, &runtime),
    }
}
