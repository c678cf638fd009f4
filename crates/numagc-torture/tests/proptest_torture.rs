//! Property tests of issue 5, part 2: programs drawn by the torture
//! generator (`program::strategy`, the same generator the CLI draws from)
//! run against the shadow with collections forced every few allocations and
//! the heap verifier on. A failing case shrinks to a minimal program: fewer
//! operations, each as simple as its choices allow.
//!
//! Each case runs in a forked process (proptest's `fork`), because the
//! heap verifier aborts the process on a broken invariant: an abort is then
//! a failed case that proptest shrinks like any other, and a case that
//! hangs fails at the timeout.

use numagc::Runtime;
use numagc_torture::interp::{self, Options};
use numagc_torture::program::{proptest_config, strategy, Sizes};
use numagc_torture::round::RoundPlan;
use numagc_torture::{Build, Fault, FaultKind, Op, Src};
use proptest::prelude::*;
use proptest::test_runner::{Config as RunnerConfig, TestCaseError, TestError, TestRunner};

/// A runtime with small heaps and the verifier on, its settings drawn from
/// `seed` as a CLI round's are.
fn runtime(seed: u64, vprocs: usize) -> Runtime {
    let plan = RoundPlan::new(seed, vprocs, "split", Some(1)).expect("a valid round");
    Runtime::new(plan.config).expect("the runtime starts")
}

fn run(
    program: &[Op],
    seed: u64,
    vprocs: usize,
    gc_every: u32,
    fault: Option<Fault>,
) -> Result<interp::Report, interp::Failure> {
    let rt = runtime(seed, vprocs);
    interp::run(
        &rt,
        program,
        &Options {
            gc_every,
            seed,
            fault,
            progress: None,
            deadline: None,
        },
    )
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn the_heap_stays_equal_to_the_shadow(
        program in strategy(16, Sizes::SMALL),
        gc_every in prop_oneof![Just(1u32), 2u32..6, 6u32..40],
        vprocs in 1usize..=2,
        seed in any::<u64>(),
    ) {
        if let Err(f) = run(&program, seed, vprocs, gc_every, None) {
            return Err(TestCaseError::fail(format!("{f}\n(vprocs {vprocs}, gc-every {gc_every}, runtime seed {seed})")));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 64,
        fork: true,
        timeout: 120_000,
        max_shrink_iters: 400,
        ..ProptestConfig::default()
    })]

    /// Larger structures (lists of hundreds, trees of depth 8, objects
    /// above the large-object size) on two vprocs, collections forced less
    /// often.
    #[test]
    fn larger_structures_on_two_vprocs(
        program in strategy(24, Sizes::MEDIUM),
        gc_every in 20u32..400,
        seed in any::<u64>(),
    ) {
        if let Err(f) = run(&program, seed, 2, gc_every, None) {
            return Err(TestCaseError::fail(format!("{f}\n(vprocs 2, gc-every {gc_every}, runtime seed {seed})")));
        }
    }
}

/// Shrinking goes through the interpreter: a program that always fails
/// (a store behind the shadow's back after its last operation) shrinks to
/// the simplest program there is, one operation of zero choices.
#[test]
fn a_failure_shrinks_to_a_minimal_program() {
    let mut runner = TestRunner::new(RunnerConfig {
        cases: 4,
        max_shrink_iters: 4000,
        failure_persistence: None,
        ..RunnerConfig::default()
    });
    let fault = Fault {
        kind: FaultKind::HeapStore,
        at: usize::MAX,
    };
    let result = runner.run(&strategy(10, Sizes::SMALL), |program| {
        match run(&program, 1, 1, 4, Some(fault)) {
            Ok(_) => Ok(()),
            Err(f) => Err(TestCaseError::fail(f.to_string())),
        }
    });
    match result {
        Err(TestError::Fail(why, minimal)) => {
            assert!(why.message().contains("Int(424242)"), "{why}");
            assert_eq!(
                minimal,
                vec![Op::Build {
                    dst: 0,
                    build: Build::List {
                        len: 0,
                        elem: Src::Int(0)
                    }
                }]
            );
        }
        other => panic!("expected a shrunk failure, got {other:?}"),
    }
}
