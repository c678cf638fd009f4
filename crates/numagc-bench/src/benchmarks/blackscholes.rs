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
//! splits its list: the option set is a sequence (built by `tabulate`, one
//! chunk per task) of chunks, each a vector of option records. A run maps
//! the pricing of a chunk over the chunks (`par_map`, one chunk per task),
//! each chunk giving a raw object of its unboxed prices, preceded by their
//! sum (PARSEC writes its prices into a float array; boxing each price
//! would triple what a thief copies back to the owner). The total is then
//! the sum of the chunks' sums, in sequence order, so it does not depend on
//! the vproc count. (Summing all the prices after the map would be a
//! sequential O(n) loop in every run; a parallel `seq_reduce` over the
//! prices would make its first steal promote the owner's half of them, a
//! copy done while the thief waits.) The output is the sum of the last
//! run's prices.
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

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{Handle, Result, Runtime, Scope, View};
use std::fmt::Write;

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

/// The option set: a sequence of chunks of `granularity` option records.
fn options<'s>(s: &mut Scope<'s>, n: usize, granularity: usize, seed: u64) -> Result<Handle<'s>> {
    s.tabulate(&[], 0, n.div_ceil(granularity), 1, move |s, _, c| {
        s.scope_value(|s| {
            let records = (c * granularity..((c + 1) * granularity).min(n))
                .map(|i| s.alloc_raw(&to_words(&generate(seed, i))))
                .collect::<Result<Vec<_>>>()?;
            s.alloc_vector(&records)
        })
    })
}

/// The prices of every option: a sequence of raw objects, one per chunk,
/// each holding the chunk's sum and then its prices.
fn prices<'s>(s: &mut Scope<'s>, options: Handle<'_>) -> Result<Handle<'s>> {
    s.par_map(&[], options, 1, |s, _, chunk| {
        let chunk = s.view(chunk);
        // The chunk's sum and prices, in a local buffer of the loop that is
        // copied into the new raw object (no view may live across the
        // allocation).
        let mut words = vec![0u64; 1 + chunk.len()];
        let mut sum = 0.0;
        for (k, word) in words[1..].iter_mut().enumerate() {
            let p = price(&from_view(chunk.field(k)));
            sum += p;
            *word = p.to_bits();
        }
        words[0] = sum.to_bits();
        s.alloc_raw(&words)
    })
}

/// The sum of all prices: the chunks' sums, in sequence order.
fn total(s: &Scope<'_>, prices: Handle<'_>) -> Result<f64> {
    let mut sum = 0.0;
    s.seq_for_each(prices, |chunk| {
        sum += f64::from_bits(chunk.raw_words().expect("a price chunk is a raw object")[0])
    })?;
    Ok(sum)
}

/// The price of option `i`: price `i % granularity` of chunk `i / granularity`.
fn price_of(s: &Scope<'_>, prices: Handle<'_>, granularity: usize, i: usize) -> Result<f64> {
    let chunk = s.seq_get(prices, i / granularity)?;
    let words = s
        .view(chunk)
        .raw_words()
        .expect("a price chunk is a raw object");
    Ok(f64::from_bits(words[1 + i % granularity]))
}

/// What a run hands to the check: each run's sum, and the twins' last prices.
struct Priced {
    sums: Vec<f64>,
    /// (index of the first of a pair, its price, its twin's price).
    twins: Vec<(usize, f64, f64)>,
}

fn price_all(
    s: &mut Scope<'_>,
    n: usize,
    runs: usize,
    granularity: usize,
    seed: u64,
) -> Result<Priced> {
    let options = options(s, n, granularity, seed)?;
    let mut priced = Priced {
        sums: Vec::with_capacity(runs),
        twins: Vec::new(),
    };
    for run in 0..runs {
        s.scope(|s| -> Result<()> {
            let prices = prices(s, options)?;
            priced.sums.push(total(s, prices)?);
            if run + 1 == runs {
                for i in (TWIN_EVERY - 1..n).step_by(TWIN_EVERY) {
                    let (first, second) = (
                        price_of(s, prices, granularity, i - 1)?,
                        price_of(s, prices, granularity, i)?,
                    );
                    priced.twins.push((i - 1, first, second));
                }
            }
            Ok(())
        })?;
    }
    Ok(priced)
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
                min: 1,
                max: 100_000_000,
            },
            Param {
                name: "runs",
                help: "times the whole set is priced (PARSEC: 100)",
                quick: 40,
                paper: 100,
                min: 1,
                max: 100_000,
            },
            Param {
                name: "granularity",
                help: "options per chunk (task)",
                quick: 128,
                paper: 128,
                min: 1,
                max: 4096,
            },
            Param {
                name: "seed",
                help: "seed of the generated options",
                quick: 1,
                paper: 1,
                min: 0,
                max: i64::MAX,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> std::result::Result<Outcome, String> {
        let (n, runs, granularity, seed) = (
            p.usize("options"),
            p.usize("runs"),
            p.usize("granularity"),
            p.get("seed") as u64,
        );
        let priced = rt
            .run_on(0, move |s| price_all(s, n, runs, granularity, seed))
            .map_err(rt_err)?
            .map_err(rt_err)?;
        let mut out = String::new();
        writeln!(out, "{n} options, {runs} runs, granularity {granularity}").unwrap();
        writeln!(
            out,
            "sum of prices: {:.6}",
            priced.sums.last().copied().unwrap_or(0.0)
        )
        .unwrap();
        Ok(Outcome::new(out, move || check(n, seed, &priced)))
    }
}
