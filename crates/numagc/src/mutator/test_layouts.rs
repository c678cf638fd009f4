//! The layouts the typed API's tests share (`typed`, `frame`,
//! `combined`), and a runtime that registers them with the verifier on.

use super::scope::Scope;
use super::typed::Layout;
use crate::object::descriptor::DescId;
use crate::{Config, PlanKind, Result, Runtime};

/// Two values: a pair, a cons cell, a tree node.
pub(super) struct Pair;
impl Layout for Pair {
    const NAME: &'static str = "pair";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 2;
    const VALUES: u32 = 0b11;
}

/// A value, a raw word, a value: the raw field in the middle.
pub(super) struct Mixed;
impl Layout for Mixed {
    const NAME: &'static str = "mixed";
    const DESC: DescId = DescId::nth_registered(1);
    const SIZE: usize = 3;
    const VALUES: u32 = 0b101;
}

/// Claims `Pair`'s descriptor with another layout.
pub(super) struct Impostor;
impl Layout for Impostor {
    const NAME: &'static str = "impostor";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 3;
    const VALUES: u32 = 0b111;
}

/// The plans every test runs on.
pub(super) const PLANS: [PlanKind; 2] = [PlanKind::SplitHeap, PlanKind::SharedHeap];

/// A runtime of one vproc on `plan`, with a small local heap (so that
/// collections run often) and the verifier after every collection, with
/// `Pair` and `Mixed` registered.
pub(super) fn runtime(plan: PlanKind) -> Runtime {
    let rt = Runtime::new(
        Config::builder()
            .vprocs(1)
            .plan(plan)
            .local_heap_size(256 * 1024)
            .verify(true)
            .build()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        rt.register(Pair::descriptor().unwrap()).unwrap(),
        Pair::DESC
    );
    assert_eq!(
        rt.register(Mixed::descriptor().unwrap()).unwrap(),
        Mixed::DESC
    );
    rt
}

/// Runs `job` in a fresh [`runtime`] of each plan, and checks that a
/// minor collection ran during it (the tests that use it allocate enough
/// for several, so that their handles are read across collections).
pub(super) fn on_every_plan(job: fn(&mut Scope<'_>, PlanKind) -> Result<()>) {
    for plan in PLANS {
        let rt = runtime(plan);
        rt.run_on(0, move |s| job(s, plan)).unwrap().unwrap();
        assert!(
            rt.stats().total.minor.count > 0,
            "{plan:?}: no collection ran"
        );
    }
}
