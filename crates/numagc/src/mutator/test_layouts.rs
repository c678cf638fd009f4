//! The layouts the typed API's tests share (`typed`, `frame`,
//! `combined`), and a runtime that registers them with the verifier on.

use super::typed::Layout;
use crate::object::descriptor::DescId;
use crate::{Config, PlanKind, Runtime};

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
