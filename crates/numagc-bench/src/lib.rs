//! The benchmark suite of the papers, written in functional style on the
//! numagc API: the data the original programs allocate (trees, lists,
//! vectors, particles, matrices) is allocated through the runtime and is
//! immutable once built; plain Rust collections appear only in the
//! independent computations that check the answers.
//!
//! | paper | benchmarks |
//! |---|---|
//! | `manticore-numa-gc.md` §4.1 | barnes-hut, raytracer, quicksort, smvm, dmm |
//! | `gumsmp-shared-distributed-heaps.txt` §3.1 | parfib, coins, sumeuler, worpitzky, maze, mandelbrot, blackscholes |
//! | `multicore-ocaml-gc.txt` §6.2 | binarytrees, game_of_life, nbody, spectralnorm, mandelbrot6, lu_decomposition, matrix_multiplication, floyd_warshall |
//! | Boehm's GCBench | gcbench |
//!
//! Every benchmark has three sizes ([`Size`]): `paper`, the size of the
//! paper (or the customary one where the paper gives none); `quick`, under
//! about one second on one core, for the tests and CI; and `scale`, for
//! speedup curves on many cores (issue 20): about 16 s on one core of the
//! 16-core machine measured in `../shared/measurements/16-vprocs.md` (4 to
//! 15 s on one core of the 2-core development machine, whose cores are
//! 1.1 to 3.5 × as fast, depending on the benchmark), so that a run at 16
//! vprocs lasts at least a second even at ideal speedup (the sizes and how
//! they were chosen: `docs/results/scaling.md`). barnes-hut's paper size
//! takes longer than that, so its `scale` is smaller; lu_decomposition's
//! order stops at its range's end. A size is a set of named integer
//! parameters ([`Param`]) that the harness may override one by one
//! (`numagc bench binarytrees --depth 21`).
//!
//! Some benchmarks are also written on the compiled-code interface
//! ([`compiled`], `--api compiled`): the same work as a compiler would emit
//! it against numagc, for the comparison with the safe API and the peers.
//!
//! A run ([`Benchmark::run`]) computes on a runtime the harness made and
//! returns the program's output and a check; the harness times the run and
//! calls the check afterwards, outside the timed region, so that the
//! independent computation of the expected answer is not counted.

use numagc::Runtime;
use std::collections::BTreeMap;
use std::fmt;

pub mod benchmarks;
pub mod compiled;
pub(crate) mod pe_support;

/// The three sizes of the suite.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Size {
    /// Each benchmark under about one second on one core (tests, CI).
    Quick,
    /// The papers' sizes.
    Paper,
    /// Sized for speedup curves up to 16 vprocs (see the module doc).
    Scale,
}

impl Size {
    pub fn name(self) -> &'static str {
        match self {
            Size::Quick => "quick",
            Size::Paper => "paper",
            Size::Scale => "scale",
        }
    }

    pub fn parse(s: &str) -> Result<Size, String> {
        match s {
            "quick" => Ok(Size::Quick),
            "paper" => Ok(Size::Paper),
            "scale" => Ok(Size::Scale),
            other => Err(format!(
                "unknown suite size {other:?}: expected quick, paper or scale"
            )),
        }
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A named integer parameter of a benchmark, with its value at each size
/// and the range the benchmark accepts.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    /// Lower-case, words joined by `-` (it becomes a `--flag`).
    pub name: &'static str,
    pub help: &'static str,
    pub quick: i64,
    pub paper: i64,
    pub scale: i64,
    /// Smallest and largest accepted values.
    pub min: i64,
    pub max: i64,
}

impl Param {
    pub fn default_for(&self, size: Size) -> i64 {
        match size {
            Size::Quick => self.quick,
            Size::Paper => self.paper,
            Size::Scale => self.scale,
        }
    }
}

/// The parameter values of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Params {
    values: BTreeMap<&'static str, i64>,
}

impl Params {
    /// `bench`'s parameters at `size`, with `overrides` (name, value)
    /// applied; an override of a parameter `bench` does not have is
    /// ignored (the harness checks that each applies to some benchmark),
    /// one out of range is an error naming it.
    pub fn new(
        bench: &dyn Benchmark,
        size: Size,
        overrides: &[(String, i64)],
    ) -> Result<Params, String> {
        let mut values = BTreeMap::new();
        for p in bench.params() {
            let mut v = p.default_for(size);
            for (name, x) in overrides {
                if name == p.name {
                    v = *x;
                }
            }
            if v < p.min || v > p.max {
                return Err(format!(
                    "{} --{} {v}: allowed {} ..= {}",
                    bench.name(),
                    p.name,
                    p.min,
                    p.max
                ));
            }
            values.insert(p.name, v);
        }
        Ok(Params { values })
    }

    /// The value of parameter `name`.
    ///
    /// Panics when the benchmark did not declare `name`: that is a bug in
    /// the benchmark, found by the quick-suite test.
    pub fn get(&self, name: &str) -> i64 {
        match self.values.get(name) {
            Some(&v) => v,
            None => panic!("benchmark parameter {name:?} is not declared"),
        }
    }

    /// `get(name)` as a `usize` (parameters' ranges are non-negative where this is used).
    pub fn usize(&self, name: &str) -> usize {
        usize::try_from(self.get(name)).unwrap_or(0)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&'static str, i64)> + '_ {
        self.values.iter().map(|(k, v)| (*k, *v))
    }
}

impl fmt::Display for Params {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        f.write_str(&parts.join(" "))
    }
}

/// Checks a run's answer against an independently computed one; runs
/// after the timed region.
pub type Check = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// What a run produced.
pub struct Outcome {
    /// The program's standard output (e.g. binarytrees' check lines).
    pub output: String,
    /// Compares the answer with an independent computation.
    pub check: Check,
}

impl Outcome {
    pub fn new(
        output: String,
        check: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Outcome {
        Outcome {
            output,
            check: Box::new(check),
        }
    }
}

/// One benchmark program.
pub trait Benchmark: Sync {
    /// Lower-case name, words joined by `_` as in the paper's table.
    fn name(&self) -> &'static str;
    /// Which paper and section it comes from.
    fn source(&self) -> &'static str;
    /// One line on what it computes.
    fn description(&self) -> &'static str;
    fn params(&self) -> &'static [Param];
    /// Runs the program on `rt` (a fresh runtime; descriptors are
    /// registered by the run). Errors of the runtime (heap limit, misuse)
    /// are returned as text.
    fn run(&self, rt: &Runtime, params: &Params) -> Result<Outcome, String>;
    /// Whether the program is also written on the compiled-code interface
    /// (`--api compiled`, [`compiled`]).
    fn has_compiled(&self) -> bool {
        false
    }
    /// The program on the compiled-code interface: the same work, output
    /// and check as [`Benchmark::run`], written as a compiler would emit it.
    fn run_compiled(&self, _rt: &Runtime, _params: &Params) -> Result<Outcome, String> {
        Err(format!("{} has no compiled version", self.name()))
    }
    /// Whether the compiled program is also written with the machine's
    /// calls and returns (`--api compiled-calls`, [`compiled::Returns`]).
    fn has_compiled_calls(&self) -> bool {
        false
    }
    /// The compiled program with the machine's calls and returns: the
    /// same work, output and check as [`Benchmark::run_compiled`].
    fn run_compiled_calls(&self, _rt: &Runtime, _params: &Params) -> Result<Outcome, String> {
        Err(format!(
            "{} has no compiled version with machine calls",
            self.name()
        ))
    }
    /// Whether the program is written on `api`.
    fn has_api(&self, api: Api) -> bool {
        match api {
            Api::Safe => true,
            Api::Compiled => self.has_compiled(),
            Api::CompiledCalls => self.has_compiled_calls(),
        }
    }
    /// The program's exportable functions and the setup every PE runs
    /// (descriptors, registered in the same order everywhere), when its
    /// forks are exportable tasks (`numagc::pe`, `--pes`).
    fn pe_program(&self) -> Option<PeProgram> {
        None
    }
    /// The program on a PE group made from [`Benchmark::pe_program`]: it
    /// starts on PE 0, and the other PEs take its exported forks. The
    /// same code as [`Benchmark::run`], which runs it on one runtime.
    fn run_pes(&self, _group: &numagc::pe::PeGroup, _params: &Params) -> Result<Outcome, String> {
        Err(format!("{} has no PE version", self.name()))
    }
    /// Runs the program through `api`.
    fn run_api(&self, rt: &Runtime, params: &Params, api: Api) -> Result<Outcome, String> {
        match api {
            Api::Safe => self.run(rt, params),
            Api::Compiled => self.run_compiled(rt, params),
            Api::CompiledCalls => self.run_compiled_calls(rt, params),
        }
    }
}

/// What a PE group needs of a benchmark (`--pes`): the table of its
/// exportable functions, and the setup each PE's runtime gets.
pub struct PeProgram {
    pub exports: &'static numagc::pe::Exports,
    pub setup: fn(&Runtime) -> numagc::Result<()>,
}

/// Registers `d` on `rt` and checks that it got the id the program's code
/// names as a constant (`DescId::nth_registered(n)`): every PE registers
/// the same descriptors in the same order, so exported tasks read the same
/// layouts everywhere.
pub(crate) fn register_as(
    rt: &Runtime,
    want: numagc::DescId,
    d: numagc::Descriptor,
) -> numagc::Result<()> {
    let got = rt.register(d)?;
    if got != want {
        return Err(numagc::Error::misuse(format!(
            "descriptor registered as {got:?}, the program's code expects {want:?}: register the program's descriptors first, in order"
        )));
    }
    Ok(())
}

/// Which interface of numagc a benchmark program is written on (`--api`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Api {
    /// The safe API: handles, scopes, views (`numagc::Scope`).
    Safe,
    /// The compiled-code interface: inline allocation, frames, raw reads
    /// (`numagc::compiled`); recursion returns through the shadow stack
    /// where the program is written both ways ([`compiled::Returns`]).
    Compiled,
    /// The compiled-code interface with the machine's calls and returns
    /// (coins and parfib, [`compiled::Returns::Calls`]).
    CompiledCalls,
}

impl Api {
    pub fn name(self) -> &'static str {
        match self {
            Api::Safe => "safe",
            Api::Compiled => "compiled",
            Api::CompiledCalls => "compiled-calls",
        }
    }

    pub fn parse(s: &str) -> Result<Api, String> {
        match s.to_ascii_lowercase().as_str() {
            "safe" => Ok(Api::Safe),
            "compiled" => Ok(Api::Compiled),
            "compiled-calls" => Ok(Api::CompiledCalls),
            other => Err(format!(
                "unknown API {other:?}: expected safe, compiled or compiled-calls"
            )),
        }
    }
}

/// Every benchmark of the suite, in the order of the table above.
pub fn all() -> Vec<&'static dyn Benchmark> {
    benchmarks::ALL.to_vec()
}

/// The benchmark called `name`.
pub fn find(name: &str) -> Option<&'static dyn Benchmark> {
    benchmarks::ALL.iter().copied().find(|b| b.name() == name)
}

/// splitmix64's finaliser (with its increment): a well-mixed hash of one
/// word, from which the benchmarks derive their deterministic inputs (an
/// entry is `mix` of its seed and indices, so the check can regenerate any
/// entry independently of the run).
#[inline]
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Turns a runtime or descriptor error into the text a run returns.
pub fn rt_err(e: impl fmt::Display) -> String {
    e.to_string()
}
