//! The hybrid mode (issue 19): random programs over a group of PEs in one
//! process, against a shadow model, with the weight books checked at the
//! end.
//!
//! Each PE keeps a table of `SLOTS` references (a mutable array of its own
//! heap). A program's operations, drawn from the round's seed, make
//! objects on a PE — mutable arrays, and chains of immutable vectors long
//! enough to pass the packet limit, which the round sets small — send
//! references between the PEs' tables (`Scope::call_on`; the reference
//! travels packed: a copy, a global address, or the PE's own object coming
//! home), read and write them wherever they are (`remote_get`,
//! `remote_set`, `resolve`), drop them, and force collections. Every
//! object carries its unique id in field 0, so a FetchMe that resolves
//! to a wrong object is found at its first read.
//!
//! Checked:
//! - every read gives what the shadow says (an array's field, a chain's
//!   id, length and sum);
//! - the heap verifier after every collection, on every PE (the round's
//!   runtimes verify);
//! - at the end, with every table emptied, [`numagc::pe::PeGroup::settle`]
//!   leaves no GIT entry and no import on any PE: every weight came back
//!   (the `Ledger`'s invariant, on the real books), and the services met no
//!   error.

use crate::rng::{mix, Choices, Rng};
use numagc::pe::{Export, Exports, PeGroup};
use numagc::{Config, ConfigBuilder, GlobalRoot, Handle, Result, Scope};
use std::sync::{Arc, Mutex, OnceLock};

/// References each PE's table holds.
pub const SLOTS: usize = 8;

/// One operation; PEs and slots are in range for the round.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HOp {
    /// PE `pe` makes a mutable array of `len` fields into its slot.
    MakeArray { pe: usize, slot: usize, len: usize },
    /// PE `pe` makes a chain of `len` immutable vectors into its slot.
    MakeChain { pe: usize, slot: usize, len: usize },
    /// PE `from` sends its slot's reference to PE `to`'s slot `into`.
    Send {
        from: usize,
        slot: usize,
        to: usize,
        into: usize,
    },
    /// PE `pe` reads what its slot references, wherever it lives.
    Read {
        pe: usize,
        slot: usize,
        field: usize,
    },
    /// PE `pe` writes `value` into field `field` of its slot's array.
    Write {
        pe: usize,
        slot: usize,
        field: usize,
        value: i64,
    },
    /// PE `pe` drops its slot's reference.
    Drop { pe: usize, slot: usize },
    /// PE `pe` runs a full collection (its import scan follows).
    Collect { pe: usize },
}

/// A round of the hybrid mode, drawn from its seed.
#[derive(Clone, Debug)]
pub struct HybridPlan {
    pub seed: u64,
    pub pes: usize,
    pub packet_limit: usize,
    pub config: Config,
    pub program: Vec<HOp>,
    /// A fault the round injects, for the tests that show the checks fail.
    pub fault: Option<HybridFault>,
}

/// Faults that the hybrid mode's checks must catch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HybridFault {
    /// The shadow records every array field one higher than written.
    WrongShadow,
    /// The tables are not emptied at the end: what they hold keeps its
    /// weight away from its owner.
    KeepReferences,
}

impl HybridPlan {
    /// Draws the round of `seed` on `pes` PEs of one vproc each, of
    /// `plan`. Errors name a refused setting.
    pub fn new(seed: u64, pes: usize, plan: &str) -> std::result::Result<HybridPlan, String> {
        let mut rng = Rng::new(mix(seed ^ 0x6879_6272));
        let c = &mut rng;
        let mut b = ConfigBuilder::new();
        b.set("plan", plan).map_err(|e| e.to_string())?;
        let config = b
            .vprocs(1)
            .local_heap_size([64, 256][c.choose(2) as usize] << 10)
            .chunk_size(64 << 10)
            .global_gc_threshold((64 << 10) * [1, 4][c.choose(2) as usize])
            .max_heap(1 << 30)
            .verify(true)
            .pin(false)
            .build()
            .map_err(|e| e.to_string())?;
        let packet_limit = [64, 128, 512][c.choose(3) as usize];
        let ops = c.range(20, 80) as usize;
        let mut filled = vec![vec![false; SLOTS]; pes];
        let program = (0..ops).map(|_| draw(c, pes, &mut filled)).collect();
        Ok(HybridPlan {
            seed,
            pes,
            packet_limit,
            config,
            program,
            fault: None,
        })
    }
}

/// One operation. `filled` follows which slots hold references, so that
/// most reads, writes and sends find one (an operation on an empty slot
/// is drawn one time in ten).
fn draw(c: &mut Rng, pes: usize, filled: &mut [Vec<bool>]) -> HOp {
    let full: Vec<(usize, usize)> = (0..pes)
        .flat_map(|p| (0..SLOTS).map(move |k| (p, k)))
        .filter(|&(p, k)| filled[p][k])
        .collect();
    let (pe, slot) = if !full.is_empty() && !c.chance(10) {
        full[c.choose(full.len() as u64) as usize]
    } else {
        (
            c.choose(pes as u64) as usize,
            c.choose(SLOTS as u64) as usize,
        )
    };
    let fresh = (
        c.choose(pes as u64) as usize,
        c.choose(SLOTS as u64) as usize,
    );
    let op = match c.weighted(&[3, 2, 6, 8, 4, 2, 1]) {
        0 => HOp::MakeArray {
            pe: fresh.0,
            slot: fresh.1,
            len: c.range(2, 6) as usize,
        },
        1 => HOp::MakeChain {
            pe: fresh.0,
            slot: fresh.1,
            len: c.range(1, 120) as usize,
        },
        2 => HOp::Send {
            from: pe,
            slot,
            to: fresh.0,
            into: fresh.1,
        },
        3 => HOp::Read {
            pe,
            slot,
            field: c.choose(8) as usize,
        },
        4 => HOp::Write {
            pe,
            slot,
            field: c.choose(8) as usize,
            value: c.range(0, 1000) as i64,
        },
        5 => HOp::Drop { pe, slot },
        _ => HOp::Collect { pe },
    };
    match op {
        HOp::MakeArray { pe, slot, .. } | HOp::MakeChain { pe, slot, .. } => {
            filled[pe][slot] = true
        }
        HOp::Send {
            from,
            slot,
            to,
            into,
        } => filled[to][into] = filled[from][slot],
        HOp::Drop { pe, slot } => filled[pe][slot] = false,
        _ => {}
    }
    op
}

/// What the shadow knows of an object.
#[derive(Clone, Debug)]
enum Shadow {
    /// An array's fields (field 0 is its id).
    Array(Vec<i64>),
    /// A chain's length and the sum of its values.
    Chain { len: usize, sum: i64 },
}

/// Each PE's table, for the exported `store` (an exported function has no
/// captures: it finds its PE's table here, by `Scope::pe`). One round at a
/// time per process (`ROUND`).
static TABLES: Mutex<Vec<Option<Arc<GlobalRoot>>>> = Mutex::new(Vec::new());
static ROUND: Mutex<()> = Mutex::new(());
static STORE: OnceLock<Export> = OnceLock::new();
/// The tables `HybridFault::KeepReferences` keeps through the settling.
static KEPT: Mutex<Vec<Arc<GlobalRoot>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// `store(value, slot)`: into this PE's table.
fn store<'s>(s: &mut Scope<'s>, args: &[Handle<'s>]) -> Result<Handle<'s>> {
    let (pe, _) = s
        .pe()
        .ok_or_else(|| numagc::Error::misuse("store outside a group"))?;
    let slot = s.as_int(args[1]).unwrap_or(0) as usize;
    let table = lock(&TABLES)[pe].clone().expect("the round made the table");
    let t = s.get_global(&table)?;
    s.set(t, slot, args[0])?;
    Ok(Handle::int(0))
}

/// A round's outcome: the operations run, and the first failure.
#[derive(Debug)]
pub struct HybridResult {
    pub ops_run: usize,
    pub reads_checked: usize,
    pub remote_accesses: u64,
    pub weight_returns: u64,
    pub failure: Option<String>,
}

/// Runs a round.
pub fn run(plan: &HybridPlan) -> HybridResult {
    let _one = lock(&ROUND);
    let mut result = HybridResult {
        ops_run: 0,
        reads_checked: 0,
        remote_accesses: 0,
        weight_returns: 0,
        failure: None,
    };
    let mut e = Exports::new();
    let st = match e.register("torture.store", store) {
        Ok(x) => x,
        Err(err) => {
            result.failure = Some(err.to_string());
            return result;
        }
    };
    let _ = STORE.set(st);
    let g = match PeGroup::new(plan.pes, plan.config.clone(), e, |_| Ok(())) {
        Ok(g) => g,
        Err(err) => {
            result.failure = Some(format!("starting the group: {err}"));
            return result;
        }
    };
    if let Err(err) = g.set_packet_limit(plan.packet_limit) {
        result.failure = Some(err.to_string());
        return result;
    }
    let failure = run_ops(&g, plan, &mut result);
    // Every table emptied and dropped: nothing holds a global object.
    lock(&TABLES).clear();
    let stats = g.stats();
    result.remote_accesses = stats.iter().map(|s| s.accesses).sum();
    let left = g.settle();
    lock(&KEPT).clear();
    let errors = g.take_errors();
    let stats = g.stats();
    result.weight_returns = stats.iter().map(|s| s.weight_returns).sum();
    result.failure = failure.or_else(|| {
        (left != (0, 0)).then(|| {
            format!(
                "weight books not settled at the end: {} GIT entries, {} imports left ({stats:?})",
                left.0, left.1
            )
        })
    });
    result.failure = match (result.failure.take(), errors.is_empty()) {
        (f, true) => f,
        (None, false) => Some(format!("the PEs' services failed: {errors:?}")),
        // Both: the services' errors may be the cause.
        (Some(f), false) => Some(format!("{f}; the PEs' services failed too: {errors:?}")),
    };
    result
}

fn run_ops(g: &PeGroup, plan: &HybridPlan, result: &mut HybridResult) -> Option<String> {
    let pes = plan.pes;
    // Each PE's table, in a global root of its runtime.
    let mut tables = Vec::with_capacity(pes);
    for pe in 0..pes {
        let t = g.runtime(pe).run_on(0, |s| -> Result<GlobalRoot> {
            let t = s.alloc_array(SLOTS, Handle::int(0))?;
            s.global_root(t)
        });
        match t {
            Ok(Ok(t)) => tables.push(Arc::new(t)),
            Ok(Err(e)) | Err(e) => return Some(format!("making PE {pe}'s table: {e}")),
        }
    }
    *lock(&TABLES) = tables.iter().cloned().map(Some).collect();
    let store = *STORE.get().expect("registered");
    let mut objects: Vec<Shadow> = Vec::new();
    let mut slots: Vec<Vec<Option<usize>>> = vec![vec![None; SLOTS]; pes];
    let mut next = mix(plan.seed);
    for (i, op) in plan.program.iter().enumerate() {
        result.ops_run = i + 1;
        let at = |pe: usize| tables[pe].clone();
        let outcome: std::result::Result<(), String> = match *op {
            HOp::MakeArray { pe, slot, len } => {
                let id = objects.len() as i64;
                let mut fields = vec![id];
                for _ in 1..len {
                    next = mix(next);
                    fields.push((next % 1000) as i64);
                }
                let mut shadow = fields.clone();
                if plan.fault == Some(HybridFault::WrongShadow) {
                    shadow.iter_mut().skip(1).for_each(|f| *f += 1);
                }
                objects.push(Shadow::Array(shadow));
                slots[pe][slot] = Some(id as usize);
                on(g, pe, at(pe), move |s, t| {
                    let a = s.alloc_array(fields.len(), Handle::int(0))?;
                    for (k, &f) in fields.iter().enumerate() {
                        s.set(a, k, Handle::int(f))?;
                    }
                    s.set(t, slot, a)
                })
            }
            HOp::MakeChain { pe, slot, len } => {
                let id = objects.len() as i64;
                next = mix(next);
                let base = (next % 100) as i64;
                let sum = (0..len as i64).map(|k| base + k).sum();
                objects.push(Shadow::Chain { len, sum });
                slots[pe][slot] = Some(id as usize);
                on(g, pe, at(pe), move |s, t| {
                    let mut h = Handle::int(-1);
                    for k in (0..len as i64).rev() {
                        h = s.alloc_vector(&[Handle::int(id), Handle::int(base + k), h])?;
                    }
                    s.set(t, slot, h)
                })
            }
            HOp::Send {
                from,
                slot,
                to,
                into,
            } => {
                slots[to][into] = slots[from][slot];
                on(g, from, at(from), move |s, t| {
                    let v = s.field(t, slot)?;
                    s.call_on(to, store, &[v, Handle::int(into as i64)])?;
                    Ok(())
                })
            }
            HOp::Read { pe, slot, field } => match slots[pe][slot].map(|o| (o, objects[o].clone()))
            {
                None => Ok(()),
                Some((id, Shadow::Array(fields))) => {
                    result.reads_checked += 1;
                    let f = field % fields.len();
                    let want = (fields[0], fields[f]);
                    on(g, pe, at(pe), move |s, t| {
                        let v = s.field(t, slot)?;
                        let got0 = s.remote_get(v, 0)?;
                        let got = s.remote_get(v, f)?;
                        let got = (s.as_int(got0), s.as_int(got));
                        if got != (Some(want.0), Some(want.1)) {
                            return Err(numagc::Error::misuse(format!(
                                "array {id}: fields 0 and {f} read {got:?}, the shadow has {want:?}"
                            )));
                        }
                        Ok(())
                    })
                }
                Some((id, Shadow::Chain { len, sum })) => {
                    result.reads_checked += 1;
                    on(g, pe, at(pe), move |s, t| {
                        let mut cur = s.field(t, slot)?;
                        let (mut n, mut total) = (0, 0);
                        while !s.view(cur).is_int() {
                            if s.is_remote(cur) {
                                cur = s.resolve(cur)?;
                            }
                            let v = s.view(cur);
                            if v.field(0).as_int() != Some(id as i64) {
                                return Err(numagc::Error::misuse(format!(
                                    "chain {id}: node {n} belongs to {:?}",
                                    v.field(0).as_int()
                                )));
                            }
                            total += v.field(1).as_int().unwrap_or(i64::MIN / 4);
                            n += 1;
                            cur = s.field(cur, 2)?;
                        }
                        if (n, total) != (len, sum) {
                            return Err(numagc::Error::misuse(format!(
                                "chain {id}: {n} nodes summing to {total}, the shadow has {len} and {sum}"
                            )));
                        }
                        Ok(())
                    })
                }
            },
            HOp::Write {
                pe,
                slot,
                field,
                value,
            } => match slots[pe][slot] {
                Some(o) => match &mut objects[o] {
                    Shadow::Array(fields) if fields.len() > 1 => {
                        let f = 1 + field % (fields.len() - 1);
                        fields[f] = value;
                        on(g, pe, at(pe), move |s, t| {
                            let v = s.field(t, slot)?;
                            s.remote_set(v, f, Handle::int(value))
                        })
                    }
                    _ => Ok(()),
                },
                None => Ok(()),
            },
            HOp::Drop { pe, slot } => {
                slots[pe][slot] = None;
                on(g, pe, at(pe), move |s, t| s.set(t, slot, Handle::int(0)))
            }
            HOp::Collect { pe } => on(g, pe, at(pe), |s, _| s.collect_global()),
        };
        if let Err(e) = outcome {
            return Some(format!("op {i} ({op:?}): {e}"));
        }
    }
    // Empty every table, then let the roots go.
    if plan.fault == Some(HybridFault::KeepReferences) {
        // The tables' roots live until after the books are settled.
        *lock(&KEPT) = tables;
        return None;
    }
    for (pe, t) in tables.iter().enumerate() {
        if let Err(e) = on(g, pe, t.clone(), |s, t| {
            for k in 0..SLOTS {
                s.set(t, k, Handle::int(0))?;
            }
            Ok(())
        }) {
            return Some(format!("emptying PE {pe}'s table: {e}"));
        }
    }
    None
}

/// Runs `f` on PE `pe`'s vproc 0 with its table.
fn on(
    g: &PeGroup,
    pe: usize,
    table: Arc<GlobalRoot>,
    f: impl for<'s> FnOnce(&mut Scope<'s>, Handle<'s>) -> Result<()> + Send + 'static,
) -> std::result::Result<(), String> {
    match g.runtime(pe).run_on(0, move |s| {
        let t = s.get_global(&table)?;
        f(s, t)
    }) {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) | Err(e) => Err(e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hybrid_rounds_keep_their_answers_and_settle_their_books() {
        for seed in 0..12 {
            for plan in ["split", "shared"] {
                let p = HybridPlan::new(seed, 3, plan).unwrap();
                let r = run(&p);
                assert!(
                    r.failure.is_none(),
                    "seed {seed}, {plan}: {r:?}\n{:?}",
                    p.program
                );
                assert_eq!(r.ops_run, p.program.len());
            }
        }
    }

    #[test]
    fn the_checks_catch_a_wrong_read_and_unreturned_weight() {
        let failing = |fault: HybridFault, what: &str| {
            (0..12).any(|seed| {
                let mut p = HybridPlan::new(seed, 3, "split").unwrap();
                p.fault = Some(fault);
                run(&p).failure.is_some_and(|f| f.contains(what))
            })
        };
        assert!(failing(HybridFault::WrongShadow, "the shadow has"));
        assert!(failing(
            HybridFault::KeepReferences,
            "weight books not settled"
        ));
    }

    #[test]
    fn a_round_is_a_function_of_its_seed() {
        let a = HybridPlan::new(7, 3, "split").unwrap();
        let b = HybridPlan::new(7, 3, "split").unwrap();
        assert_eq!(a.program, b.program);
        assert_eq!(a.packet_limit, b.packet_limit);
    }
}
