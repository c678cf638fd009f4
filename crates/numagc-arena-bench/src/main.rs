//! `arena-workload`: one workload of `numagc arena-bench` (issue 7, item 6)
//! in a process of its own, on whichever `malloc` `LD_PRELOAD` chose; see
//! the library's documentation for the workloads and their checks.
//! `numagc arena-bench` runs the same code as `numagc arena-workload`.

use std::process::ExitCode;

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(numagc_arena_bench::run(&argv).report())
}
