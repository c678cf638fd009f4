//! Shared helpers of the integration tests: a small verified configuration,
//! a test data structure (a list of mixed `cons` cells) with an independent
//! Rust model, walkers that compare heap contents with the model, and a
//! watchdog that turns a hang into a failure.
#![allow(dead_code)]

use numagc::{Config, ConfigBuilder, DescId, Descriptor, Handle, Result, Runtime, Scope, View};

pub const KIB: usize = 1 << 10;
pub const MIB: usize = 1 << 20;
pub const LOCAL_HEAP: usize = 256 * KIB;
pub const CHUNK: usize = 64 * KIB;

/// The plan the tests run on: `NUMAGC_TEST_PLAN` (`split` when unset), so
/// that `scripts/test.sh` runs the suite on every plan.
pub fn test_plan() -> numagc::PlanKind {
    match std::env::var("NUMAGC_TEST_PLAN") {
        Ok(p) => p.parse().expect("NUMAGC_TEST_PLAN names a plan"),
        Err(_) => numagc::PlanKind::SplitHeap,
    }
}

/// Whether the tests run on the split plan, where fresh data is private
/// to its vproc until promoted (on the shared plan nothing is private).
pub fn split_plan() -> bool {
    test_plan() == numagc::PlanKind::SplitHeap
}

/// Small sizes, heap verification after every collection, no pinning.
pub fn test_config(vprocs: usize) -> ConfigBuilder {
    Config::builder()
        .plan(test_plan())
        .vprocs(vprocs)
        .verify(true)
        .pin(false)
        .local_heap_size(LOCAL_HEAP)
        .chunk_size(CHUNK)
        .global_gc_threshold(MIB)
        .max_heap(256 * MIB)
}

pub fn runtime(vprocs: usize) -> Runtime {
    Runtime::new(test_config(vprocs).build().expect("test config is valid"))
        .expect("runtime starts")
}

/// `cons`: field 0 = element (value), field 1 = raw payload, field 2 = tail (value).
pub fn register_cons(rt: &Runtime) -> DescId {
    rt.register(Descriptor::mixed("cons", 3, &[0, 2]).unwrap())
        .unwrap()
}

/// The expected content of one list element.
#[derive(Clone, Debug, PartialEq)]
pub enum Elem {
    Int(i64),
    /// An immutable vector of two ints.
    Vec2(i64, i64),
    /// A raw object of f64s.
    F64s(Vec<f64>),
}

/// Element `i` of list number `seed` (a pure function, the independent model).
pub fn elem(seed: i64, i: i64) -> Elem {
    match i % 3 {
        0 => Elem::Int(seed * 1_000_003 + i),
        1 => Elem::Vec2(i, -i * seed),
        _ => Elem::F64s(vec![i as f64 * 0.5, seed as f64 + 0.25, -(i as f64)]),
    }
}

pub fn payload(seed: i64, i: i64) -> u64 {
    (seed as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (i as u64)
}

/// The model of `build_list(seed, n)`, head first.
pub fn model_list(seed: i64, n: usize) -> Vec<(Elem, u64)> {
    (0..n as i64)
        .rev()
        .map(|i| (elem(seed, i), payload(seed, i)))
        .collect()
}

fn alloc_elem<'s>(s: &mut Scope<'s>, e: &Elem) -> Result<Handle<'s>> {
    match e {
        Elem::Int(x) => Ok(Handle::int(*x)),
        Elem::Vec2(a, b) => s.alloc_vector(&[Handle::int(*a), Handle::int(*b)]),
        Elem::F64s(xs) => s.alloc_f64s(xs),
    }
}

/// Builds the list whose model is `model_list(seed, n)`: cells are consed
/// on in order i = 0, 1, ..., so the head holds element n-1. Roots are
/// popped every 100 cells.
pub fn build_list<'s>(s: &mut Scope<'s>, cons: DescId, seed: i64, n: usize) -> Result<Handle<'s>> {
    let mut list = s.nil();
    let mut i = 0i64;
    while (i as usize) < n {
        let end = (i + 100).min(n as i64);
        let start = i;
        list = s.scope_value(|s| {
            let l = s.slot(list);
            for j in start..end {
                let e = alloc_elem(s, &elem(seed, j))?;
                let cell = s.alloc_mixed(cons, &[e, l.get()], &[payload(seed, j)])?;
                s.assign(l, cell);
            }
            Ok::<_, numagc::Error>(l.get())
        })?;
        i = end;
    }
    Ok(list)
}

/// Reads an element of a cons cell.
pub fn read_elem(v: View<'_>) -> std::result::Result<Elem, String> {
    if let Some(x) = v.as_int() {
        return Ok(Elem::Int(x));
    }
    match v.kind() {
        Some(numagc::ObjectKind::Vector) => {
            if v.len() != 2 {
                return Err(format!("vector of length {}", v.len()));
            }
            let a = v.field(0).as_int().ok_or("vector field 0 not an int")?;
            let b = v.field(1).as_int().ok_or("vector field 1 not an int")?;
            Ok(Elem::Vec2(a, b))
        }
        Some(numagc::ObjectKind::Raw) => Ok(Elem::F64s((0..v.len()).map(|i| v.f64(i)).collect())),
        k => Err(format!("unexpected element kind {k:?}")),
    }
}

/// Walks a list and returns its contents, head first.
pub fn read_list(v: View<'_>, cons: DescId) -> std::result::Result<Vec<(Elem, u64)>, String> {
    let mut out = Vec::new();
    let mut v = v;
    while v.is_object() {
        if v.kind() != Some(numagc::ObjectKind::Mixed(cons)) {
            return Err(format!("cell {} is {:?}, not a cons", out.len(), v.kind()));
        }
        out.push((read_elem(v.field(0))?, v.raw(1)));
        v = v.field(2);
    }
    if v.as_int() != Some(0) {
        return Err(format!("list ends in {v:?}, not NIL"));
    }
    Ok(out)
}

/// Asserts that `h` holds exactly `model`.
pub fn check_list(s: &Scope<'_>, h: Handle<'_>, cons: DescId, model: &[(Elem, u64)], what: &str) {
    let got = read_list(s.view(h), cons).unwrap_or_else(|e| panic!("{what}: malformed list: {e}"));
    assert_eq!(got.len(), model.len(), "{what}: list length");
    for (k, (g, m)) in got.iter().zip(model).enumerate() {
        assert_eq!(g, m, "{what}: cell {k} differs");
    }
}

/// Allocates `cells` cons cells of garbage (nothing keeps them).
pub fn garbage(s: &mut Scope<'_>, cons: DescId, cells: usize) {
    s.scope(|s| {
        for k in 0..cells {
            s.scope(|s| {
                let v = s.alloc_vector(&[Handle::int(k as i64)]).unwrap();
                s.alloc_mixed(cons, &[v, Handle::NIL], &[k as u64]).unwrap();
            });
        }
    });
}

/// Builds a list and promotes it; the local copy is dropped. On the shared
/// plan, where promotion is not needed to share, a minor collection moves
/// it into the major heap instead, so that it is global data either way.
pub fn promoted_list<'s>(
    s: &mut Scope<'s>,
    cons: DescId,
    seed: i64,
    n: usize,
) -> Result<Handle<'s>> {
    let l = s.scope_value(|s| {
        let l = build_list(s, cons, seed, n)?;
        s.promote(l)
    })?;
    if !split_plan() {
        s.collect_minor();
    }
    Ok(l)
}

/// Fails the test process if it is still running `secs` seconds from now:
/// prints what hung and exits with status 1 (a deadlock would otherwise
/// hang the test run). Dropping the guard disarms it.
pub struct Watchdog {
    done: std::sync::Arc<(std::sync::Mutex<bool>, std::sync::Condvar)>,
}

pub fn watchdog(secs: u64, what: &str) -> Watchdog {
    let done = std::sync::Arc::new((std::sync::Mutex::new(false), std::sync::Condvar::new()));
    let d = done.clone();
    let what = what.to_string();
    std::thread::spawn(move || {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
        let mut g = d.0.lock().unwrap_or_else(|p| p.into_inner());
        while !*g {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                eprintln!("watchdog: `{what}` still running after {secs} s: a hang or a deadlock");
                std::process::exit(1);
            }
            g =
                d.1.wait_timeout(g, left)
                    .unwrap_or_else(|p| p.into_inner())
                    .0;
        }
    });
    Watchdog { done }
}

impl Drop for Watchdog {
    fn drop(&mut self) {
        *self.done.0.lock().unwrap_or_else(|p| p.into_inner()) = true;
        self.done.1.notify_all();
    }
}
