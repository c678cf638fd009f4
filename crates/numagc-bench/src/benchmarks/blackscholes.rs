//! Black-Scholes option pricing (`gumsmp-shared-distributed-heaps.txt`
//! §3.1: "a data-parallel application ... by providing a number of options,
//! and granularity"), after PARSEC's `blackscholes`: European options
//! priced by the closed-form Black-Scholes formula with PARSEC's
//! polynomial approximation of the cumulative normal distribution
//! (`CNDF`, Abramowitz & Stegun 26.2.17), the whole set priced `runs`
//! times as PARSEC does (its `NUM_RUNS` is 100).
//!
//! The options are immutable heap records (raw objects of six words: spot,
//! strike, rate, volatility, time, call/put), generated deterministically
//! from `seed`, in chunks of `granularity` as the parallel Haskell version
//! splits its list: a chunk is a vector of option records. Each chunk is
//! priced `runs` times where its records were built, as each PARSEC thread
//! runs all `NUM_RUNS` over its own block of options; every run writes a
//! new raw object of the chunk's unboxed prices, preceded by their sum
//! (PARSEC writes its prices into a float array; boxing each price would
//! triple what travels back). A range of chunks gives its per-run sums
//! (the halves' added, so a run's total depends neither on the vproc
//! count nor on the PE count) and the tree of its last run's price
//! objects. The output is the sum of the last run's prices.
//!
//! Parallelism, the same code on one runtime and on a PE group (`--pes`,
//! `numagc::pe`): a divide and conquer over ranges of chunks. The exported
//! unit is a range of at most [`OptionSet::chunks_per_task`] chunks, all
//! its runs included, forked with [`numagc::Scope::par2_export`]: its
//! arguments are seven integers (options, granularity, the seed's two
//! halves, runs, first and last chunk), and the task builds its chunks'
//! option records itself from the seed, so no option travels (a range's
//! records would weigh seven words an option in the task's packet); its
//! result, the per-run sums and the tree of last prices, is what comes
//! back, and `chunks_per_task` bounds it under
//! `numagc::pe::PACKET_LIMIT_WORDS` (a larger result would be declined and
//! its work redone by the forker; `runs` is bounded for that too). Larger
//! ranges are halved with `par2`, which stays on its PE. (Before the PE
//! version, one runtime priced the whole set run after run, over records
//! built once and kept for the whole program; a task that carried its runs
//! across PEs that way would build its options again in every run.)
//!
//! Every 64th option is the twin of its predecessor (same parameters,
//! other kind), so that put-call parity can be checked on the program's
//! own prices.
//!
//! Check, independent of the heap: (1) every run's sum equals the sum of a
//! plain-Rust recomputation on a `Vec` of the options with the CNDF
//! polynomial written out as one expression (relative 1e-9); (2) for the
//! twins, the program's prices are within the polynomial's error (7.5e-8
//! per N(x)) of prices computed with an accurate normal CDF (Marsaglia's
//! series), and satisfy put-call parity C − P = S − K·e^(−rT) to 1e-9.

use crate::pe_support::{no_descriptors, task_ints, ExportTable};
use crate::{rt_err, Benchmark, Outcome, Param, Params, PeProgram};
use numagc::pe::{PeGroup, PACKET_LIMIT_WORDS};
use numagc::{Handle, Result, Runtime, Scope, View};

pub struct BlackScholes;

/// Option indices `i` with `i % TWIN_EVERY == TWIN_EVERY - 1` copy option
/// `i - 1` with the other kind.
const TWIN_EVERY: usize = 64;

/// One option; on the heap a raw record of six words in this order (a
/// record of unboxed fields: a raw object, read as one slice).
#[derive(Clone, Copy, Debug)]
struct OptionData {
    spot: f64,
    strike: f64,
    rate: f64,
    volatility: f64,
    time: f64,
    put: bool,
}

/// SplitMix64: the generator of the options.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Option `i` of the set generated from `seed` (PARSEC-like ranges).
fn generate(seed: u64, i: usize) -> OptionData {
    let twin = i % TWIN_EVERY == TWIN_EVERY - 1;
    let mut state =
        seed ^ ((if twin { i - 1 } else { i }) as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    let mut uniform = |lo: f64, hi: f64| {
        lo + (hi - lo) * (splitmix(&mut state) >> 11) as f64 / (1u64 << 53) as f64
    };
    let spot = uniform(10.0, 200.0);
    let strike = spot * uniform(0.5, 1.5);
    let (rate, volatility, time) = (uniform(0.01, 0.10), uniform(0.05, 0.65), uniform(0.1, 3.0));
    let put = (splitmix(&mut state) & 1 == 1) != twin;
    OptionData {
        spot,
        strike,
        rate,
        volatility,
        time,
        put,
    }
}

fn to_words(o: &OptionData) -> [u64; 6] {
    [
        o.spot.to_bits(),
        o.strike.to_bits(),
        o.rate.to_bits(),
        o.volatility.to_bits(),
        o.time.to_bits(),
        u64::from(o.put),
    ]
}

fn from_view(v: View<'_>) -> OptionData {
    let w = v.raw_words().expect("an option is a raw record");
    let f = |i: usize| f64::from_bits(w[i]);
    OptionData {
        spot: f(0),
        strike: f(1),
        rate: f(2),
        volatility: f(3),
        time: f(4),
        put: w[5] == 1,
    }
}

/// PARSEC's `CNDF`, step by step as the original.
fn cndf(input: f64) -> f64 {
    const INV_SQRT_2PI: f64 = 0.398_942_280_401_432_7;
    let (x, negative) = if input < 0.0 {
        (-input, true)
    } else {
        (input, false)
    };
    let n_prime = (-0.5 * x * x).exp() * INV_SQRT_2PI;
    let k = 1.0 / (1.0 + 0.231_641_9 * x);
    let (k2, k3) = (k * k, k * k * k);
    let (k4, k5) = (k3 * k, k3 * k * k);
    let mut local2 = k2 * -0.356_563_782 + k3 * 1.781_477_937;
    local2 += k4 * -1.821_255_978;
    local2 += k5 * 1.330_274_429;
    let local = 1.0 - (local2 + k * 0.319_381_530) * n_prime;
    if negative {
        1.0 - local
    } else {
        local
    }
}

/// PARSEC's `BlkSchlsEqEuroNoDiv`.
fn price(o: &OptionData) -> f64 {
    let sqrt_time = o.time.sqrt();
    let log_term = (o.spot / o.strike).ln();
    let power_term = o.volatility * o.volatility * 0.5;
    let den = o.volatility * sqrt_time;
    let d1 = ((o.rate + power_term) * o.time + log_term) / den;
    let d2 = d1 - den;
    let (n_d1, n_d2) = (cndf(d1), cndf(d2));
    let future_value = o.strike * (-o.rate * o.time).exp();
    if o.put {
        future_value * (1.0 - n_d2) - o.spot * (1.0 - n_d1)
    } else {
        o.spot * n_d1 - future_value * n_d2
    }
}

/// The work: `options` options generated from `seed`, in chunks of
/// `granularity`, each priced `runs` times.
#[derive(Clone, Copy, Debug)]
struct OptionSet {
    options: usize,
    granularity: usize,
    seed: u64,
    runs: usize,
}

impl OptionSet {
    fn chunks(self) -> usize {
        self.options.div_ceil(self.granularity)
    }

    /// The arguments of an exported range: the set and chunks `lo ..
    /// hi`. The seed travels as its two 32-bit halves, since an immediate
    /// integer has 63 bits.
    fn task_args(self, lo: usize, hi: usize) -> [Handle<'static>; 7] {
        [
            self.options as u64,
            self.granularity as u64,
            self.seed >> 32,
            self.seed & 0xffff_ffff,
            self.runs as u64,
            lo as u64,
            hi as u64,
        ]
        .map(|i| Handle::int(i as i64))
    }

    /// The most chunks an exported task prices: its result (a vector of
    /// the range's per-run sums, `runs` words, and its tree of price
    /// objects of `granularity + 1` words) packs into a packet of at most
    /// `PACKET_LIMIT_WORDS` words: a tag word per object, three words per
    /// node of the tree, a few for the packet's header, counted with room
    /// to spare. (`runs` is at most `MAX_RUNS`, so that this is at least
    /// one chunk.)
    fn chunks_per_task(self) -> usize {
        const PACKET_HEADER_ALLOWANCE: usize = 16;
        // k chunks: the header, the result's vector of two, the sums, k
        // price objects and k - 1 nodes.
        let fixed = PACKET_HEADER_ALLOWANCE + 3 + (1 + self.runs);
        let words_per_chunk = (1 + self.granularity + 1) + 3;
        ((PACKET_LIMIT_WORDS + 3).saturating_sub(fixed) / words_per_chunk).max(1)
    }
}

/// Most runs: a range's per-run sums stay well under the packet limit.
const MAX_RUNS: i64 = 1 << 15;
/// Most options per chunk.
const MAX_GRANULARITY: i64 = 4096;

/// Chunk `c`'s option records, a vector.
fn option_chunk<'s>(s: &mut Scope<'s>, set: OptionSet, c: usize) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let first = c * set.granularity;
        let records = (first..(first + set.granularity).min(set.options))
            .map(|i| s.alloc_raw(&to_words(&generate(set.seed, i))))
            .collect::<Result<Vec<_>>>()?;
        s.alloc_vector(&records)
    })
}

/// Chunk `c` priced `runs` times: a vector of its per-run sums (a raw
/// object) and its last run's prices (a raw object holding the sum and
/// then the prices). Every run writes its prices into a new object, as
/// PARSEC's every run writes its price array.
fn priced_chunk<'s>(s: &mut Scope<'s>, set: OptionSet, c: usize) -> Result<Handle<'s>> {
    s.scope_value(|s| {
        let options = option_chunk(s, set, c)?;
        let last = s.slot(Handle::NIL);
        let mut sums = Vec::with_capacity(set.runs);
        for _ in 0..set.runs {
            let chunk = s.view(options);
            // The chunk's sum and prices, in a local buffer of the loop
            // that is copied into the new raw object (no view may live
            // across the allocation).
            let mut words = vec![0u64; 1 + chunk.len()];
            let mut sum = 0.0;
            for (k, word) in words[1..].iter_mut().enumerate() {
                let p = price(&from_view(chunk.field(k)));
                sum += p;
                *word = p.to_bits();
            }
            words[0] = sum.to_bits();
            sums.push(sum.to_bits());
            s.scope(|s| s.alloc_raw(&words).map(|prices| s.assign(last, prices)))?;
        }
        let sums = s.alloc_raw(&sums)?;
        s.alloc_vector(&[sums, last.get()])
    })
}

/// Chunks `lo .. hi` priced `runs` times: a vector of the range's per-run
/// sums (a raw object; each the chunks' sums added up the halving) and
/// the tree of its last run's price objects (chunk `lo`'s object for one
/// chunk, else a node, a vector of two, of the trees of `lo .. mid` and
/// `mid .. hi`, [`midpoint`]). One chunk is priced here; more are
/// halved, the upper half forked exportable ([`ranges_task`]) when the
/// range fits one task's packet ([`OptionSet::chunks_per_task`]), with
/// `par2` above that. (A tree, not one vector of the chunks: a vector of
/// thousands of fields is allocated in the global heap, which would
/// promote every chunk it holds.)
fn priced_range<'s>(s: &mut Scope<'s>, set: OptionSet, lo: usize, hi: usize) -> Result<Handle<'s>> {
    if hi - lo == 1 {
        return priced_chunk(s, set, lo);
    }
    let mid = midpoint(lo, hi);
    s.scope_value(|s| {
        let (low, high) = if hi - lo <= set.chunks_per_task() {
            s.par2_export(EXPORTS.export(0), &set.task_args(mid, hi), move |s, _| {
                priced_range(s, set, lo, mid)
            })?
        } else {
            s.par2(
                &[],
                move |s, _| priced_range(s, set, lo, mid),
                move |s, _| priced_range(s, set, mid, hi),
            )?
        };
        let sums: Vec<u64> = {
            let (low, high) = (s.view(low), s.view(high));
            words_of_sums(low)
                .iter()
                .zip(words_of_sums(high))
                .map(|(&a, &b)| (f64::from_bits(a) + f64::from_bits(b)).to_bits())
                .collect()
        };
        let sums = s.alloc_raw(&sums)?;
        let (low_prices, high_prices) = (s.field(low, 1)?, s.field(high, 1)?);
        let prices = s.alloc_vector(&[low_prices, high_prices])?;
        s.alloc_vector(&[sums, prices])
    })
}

/// The per-run sums of a range priced by [`priced_range`].
fn words_of_sums(range: View<'_>) -> &[u64] {
    range
        .field(0)
        .raw_words()
        .expect("a range's sums are a raw object")
}

/// Where [`priced_range`] splits `lo .. hi`.
fn midpoint(lo: usize, hi: usize) -> usize {
    lo + (hi - lo) / 2
}

/// The PE program's exportable function: [`priced_range`] from `args` =
/// `[options, granularity, seed_high, seed_low, runs, lo, hi]`.
fn ranges_task<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let [options, granularity, seed_high, seed_low, runs, lo, hi] = task_ints(
        s,
        args,
        "blackscholes.ranges: (options, granularity, seed_high, seed_low, runs, lo, hi)",
    )?;
    let set = OptionSet {
        options: options as usize,
        granularity: granularity as usize,
        seed: seed_high << 32 | seed_low,
        runs: runs as usize,
    };
    let (lo, hi) = (lo as usize, hi as usize);
    if set.granularity == 0
        || set.granularity as i64 > MAX_GRANULARITY
        || set.runs as i64 > MAX_RUNS
        || lo >= hi
        || hi > set.chunks()
    {
        return Err(numagc::Error::misuse(format!(
            "blackscholes.ranges: chunks {lo}..{hi} of {} options by {}, {} runs",
            set.options, set.granularity, set.runs
        )));
    }
    priced_range(s, set, lo, hi)
}

/// The program's exportable function: a range of chunks priced.
static EXPORTS: ExportTable<1> = ExportTable::new([("blackscholes.ranges", ranges_task)]);

/// The price of option `i`: price `i % granularity` of chunk `i /
/// granularity`, found in the tree of chunks `0 .. chunks` as
/// [`priced_range`] split it.
fn price_of(prices: View<'_>, set: OptionSet, i: usize) -> f64 {
    let c = i / set.granularity;
    let (mut node, mut lo, mut hi) = (prices, 0, set.chunks());
    while hi - lo > 1 {
        let mid = midpoint(lo, hi);
        if c < mid {
            (node, hi) = (node.field(0), mid);
        } else {
            (node, lo) = (node.field(1), mid);
        }
    }
    let words = node.raw_words().expect("a price chunk is a raw object");
    f64::from_bits(words[1 + i % set.granularity])
}

/// What the program hands to the check: each run's sum, and the twins'
/// last prices.
struct Priced {
    sums: Vec<f64>,
    /// (index of the first of a pair, its price, its twin's price).
    twins: Vec<(usize, f64, f64)>,
}

/// The program: every option priced `runs` times.
fn price_all(s: &mut Scope<'_>, set: OptionSet) -> Result<Priced> {
    s.scope(|s| {
        let priced = priced_range(s, set, 0, set.chunks())?;
        let priced = s.view(priced);
        let sums = priced.field(0).raw_words().expect("the runs' sums");
        let prices = priced.field(1);
        Ok(Priced {
            sums: sums.iter().map(|&w| f64::from_bits(w)).collect(),
            twins: (TWIN_EVERY - 1..set.options)
                .step_by(TWIN_EVERY)
                .map(|i| {
                    (
                        i - 1,
                        price_of(prices, set, i - 1),
                        price_of(prices, set, i),
                    )
                })
                .collect(),
        })
    })
}

// ---- the check ----------------------------------------------------------------

/// The Black-Scholes price with the normal CDF `cdf`, written as the
/// textbook formula (C = S·N(d1) − K·e^(−rT)·N(d2), P = K·e^(−rT)·N(−d2) − S·N(−d1)).
fn textbook_price(o: &OptionData, cdf: impl Fn(f64) -> f64) -> f64 {
    let vol_sqrt_t = o.volatility * o.time.sqrt();
    let d1 = ((o.spot / o.strike).ln() + (o.rate + o.volatility * o.volatility / 2.0) * o.time)
        / vol_sqrt_t;
    let d2 = d1 - vol_sqrt_t;
    let discounted_strike = o.strike * (-o.rate * o.time).exp();
    if o.put {
        discounted_strike * cdf(-d2) - o.spot * cdf(-d1)
    } else {
        o.spot * cdf(d1) - discounted_strike * cdf(d2)
    }
}

/// Abramowitz & Stegun 26.2.17 in one expression, with N(−x) = 1 − N(x).
fn polynomial_cdf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.2316419 * x.abs());
    let poly = t
        * (0.319381530
            + t * (-0.356563782 + t * (1.781477937 + t * (-1.821255978 + t * 1.330274429))));
    let upper_tail = (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt() * poly;
    if x >= 0.0 {
        1.0 - upper_tail
    } else {
        upper_tail
    }
}

/// The normal CDF to about 1e-15 (Marsaglia 2004: N(x) = 1/2 + φ(x)·Σ
/// x^(2k+1)/(1·3·…·(2k+1)), a series of positive terms).
fn accurate_cdf(x: f64) -> f64 {
    if x.abs() > 12.0 {
        return if x > 0.0 { 1.0 } else { 0.0 };
    }
    let (mut sum, mut term, mut odd) = (x, x, 1.0);
    loop {
        odd += 2.0;
        term *= x * x / odd;
        let next = sum + term;
        if next == sum {
            break;
        }
        sum = next;
    }
    0.5 + sum * (-0.5 * x * x - 0.918_938_533_204_672_8).exp()
}

fn check(n: usize, seed: u64, priced: &Priced) -> std::result::Result<(), String> {
    let options: Vec<OptionData> = (0..n).map(|i| generate(seed, i)).collect();
    let want: f64 = options
        .iter()
        .map(|o| textbook_price(o, polynomial_cdf))
        .sum();
    for (run, &got) in priced.sums.iter().enumerate() {
        if (got - want).abs() > 1e-9 * want.abs().max(1.0) {
            return Err(format!(
                "run {run}: sum of prices {got}, plain recomputation {want}"
            ));
        }
    }
    if priced.twins.len() != n / TWIN_EVERY {
        return Err(format!(
            "{} twin pairs read back, expected {}",
            priced.twins.len(),
            n / TWIN_EVERY
        ));
    }
    for &(i, first, second) in &priced.twins {
        for (o, got) in [(options[i], first), (options[i + 1], second)] {
            let exact = textbook_price(&o, accurate_cdf);
            // Each N(x) of the polynomial is within 7.5e-8 of the exact one.
            if (got - exact).abs() > 7.5e-8 * (o.spot + o.strike) + 1e-12 {
                return Err(format!(
                    "option {i}: price {got}, with an accurate CDF {exact} ({o:?})"
                ));
            }
        }
        let o = options[i];
        let (call, put) = if o.put {
            (second, first)
        } else {
            (first, second)
        };
        let parity = o.spot - o.strike * (-o.rate * o.time).exp();
        if (call - put - parity).abs() > 1e-9 * (o.spot + o.strike) {
            return Err(format!(
                "options {i}, {}: call {call} − put {put} ≠ S − K·e^(−rT) = {parity}",
                i + 1
            ));
        }
    }
    Ok(())
}

impl Benchmark for BlackScholes {
    fn name(&self) -> &'static str {
        "blackscholes"
    }
    fn source(&self) -> &'static str {
        "gumsmp-shared-distributed-heaps.txt §3.1"
    }
    fn description(&self) -> &'static str {
        "Black-Scholes pricing of heap-allocated options in parallel chunks, repeated runs"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "options",
                help: "number of options",
                quick: 65_536,
                paper: 1_048_576,
                scale: 1_048_576,
                min: 1,
                max: 100_000_000,
            },
            Param {
                name: "runs",
                help: "times the whole set is priced (PARSEC: 100)",
                quick: 40,
                paper: 100,
                scale: 200,
                min: 1,
                max: MAX_RUNS,
            },
            Param {
                name: "granularity",
                help: "options per chunk (task)",
                quick: 128,
                paper: 128,
                scale: 128,
                min: 1,
                max: MAX_GRANULARITY,
            },
            Param {
                name: "seed",
                help: "seed of the generated options",
                quick: 1,
                paper: 1,
                scale: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let set = option_set(p);
        let priced = rt
            .run_on(0, move |s| price_all(s, set))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(set, priced))
    }

    fn pe_program(&self) -> Option<PeProgram> {
        Some(EXPORTS.program(no_descriptors))
    }

    fn run_pes(&self, g: &PeGroup, p: &Params) -> std::result::Result<Outcome, String> {
        let set = option_set(p);
        let priced = g
            .run(move |s| price_all(s, set))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(outcome(set, priced))
    }
}

/// The work the parameters ask for.
fn option_set(p: &Params) -> OptionSet {
    OptionSet {
        options: p.usize("options"),
        granularity: p.usize("granularity"),
        seed: p.get("seed") as u64,
        runs: p.usize("runs"),
    }
}

/// The output lines, and the check of the runs' sums and the twins.
fn outcome(set: OptionSet, priced: Priced) -> Outcome {
    let OptionSet {
        options: n,
        granularity,
        seed,
        runs,
    } = set;
    let out = format!(
        "{n} options, {runs} runs, granularity {granularity}\nsum of prices: {:.6}\n",
        priced.sums.last().copied().unwrap_or(0.0)
    );
    Outcome::new(out, move || check(n, seed, &priced))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An exported task's result is never past the packet limit, at any
    /// granularity and run count the benchmark accepts: a vector of two
    /// (3 words), the per-run sums (a tag and `runs` words), `k` price
    /// objects of `granularity + 1` words and a tag each, `k - 1` nodes of
    /// a tag and two fields, and the packet's few header words.
    #[test]
    fn an_exported_range_fits_the_packet_limit() {
        for granularity in [1, 2, 127, 128, 129, 1000, MAX_GRANULARITY as usize] {
            for runs in [1, 40, 100, 10_000, MAX_RUNS as usize] {
                let set = OptionSet {
                    options: 1 << 20,
                    granularity,
                    seed: 1,
                    runs,
                };
                let k = set.chunks_per_task();
                let words =
                    |k: usize| 3 + (1 + runs) + k * (1 + granularity + 1) + 3 * (k - 1) + 16;
                assert!(
                    words(k) <= PACKET_LIMIT_WORDS,
                    "granularity {granularity}, {runs} runs: {k} chunks"
                );
                // Not needlessly small either: the largest range that fits.
                assert!(words(k + 1) > PACKET_LIMIT_WORDS);
            }
        }
    }
}
