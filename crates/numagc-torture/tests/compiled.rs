//! Compiled sections (`Op::Compiled`, issue 18): programs that run part of
//! their work on the compiled-code interface (`numagc::compiled`) stay
//! equal to the shadow on both plans, with the verifier on and collections
//! forced down to every allocation; failures shrink like the others.

use numagc::Runtime;
use numagc_torture::interp::{self, Options};
use numagc_torture::program::{
    choices, from_choices_compiled, proptest_config, strategy_compiled, Sizes,
};
use numagc_torture::rng::Rng;
use numagc_torture::round::{self, RoundPlan};
use numagc_torture::{Build, COp, Op, Src};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const PLANS: [&str; 2] = ["split", "shared"];

fn run(
    program: &[Op],
    plan: &str,
    seed: u64,
    vprocs: usize,
    gc_every: u32,
) -> Result<interp::Report, interp::Failure> {
    let config = RoundPlan::new(seed, vprocs, plan, Some(gc_every))
        .expect("a valid round")
        .config;
    let rt = Runtime::new(config).expect("the runtime starts");
    interp::run(
        &rt,
        program,
        &Options {
            gc_every,
            seed,
            fault: None,
            progress: None,
            deadline: None,
        },
    )
}

/// Seeded rounds whose programs are half compiled sections, on each plan.
#[test]
fn seeded_compiled_rounds_pass_on_every_plan() {
    for plan in PLANS {
        for seed in 0..4u64 {
            for vprocs in [1, 2] {
                let every = [3, 10, 50, 0][seed as usize];
                let mut round = RoundPlan::new(seed, vprocs, plan, Some(every)).unwrap();
                let sizes = Sizes::for_gc_every(every);
                round.program =
                    from_choices_compiled(&choices(&mut Rng::new(seed ^ 0xC0DE), 24), &sizes);
                let r = round::run(&round, None, None, None);
                assert!(
                    r.failure.is_none(),
                    "plan {plan} seed {seed} vprocs {vprocs} ({}): {}",
                    round.describe(),
                    r.failure.unwrap()
                );
                let rep = r.report;
                assert!(
                    rep.compiled_sections > 0 && rep.compiled_ops > 0 && rep.compiled_allocs > 0,
                    "{plan} {seed}: {rep:?}"
                );
            }
        }
    }
}

/// Every kind of compiled operation and build, by hand, with a collection
/// forced after every allocation.
#[test]
fn a_hand_written_section_passes_on_every_plan() {
    let small = numagc::compiled::MAX_SMALL_FIELDS as u32;
    let builds = [
        Build::List {
            len: 20,
            elem: Src::Reg(0),
        },
        Build::Tree {
            depth: 3,
            leaf: Src::Int(7),
        },
        Build::Dag {
            nodes: 40,
            seed: 3,
            srcs: [Src::Reg(1), Src::Int(2)],
        },
        Build::Vector {
            len: small,
            seed: 4,
            srcs: [Src::Reg(8), Src::Reg(2)],
        },
        Build::Vector {
            len: small + 1,
            seed: 5,
            srcs: [Src::Reg(3), Src::Reg(9)],
        },
        Build::Raw { len: small },
        Build::Rec {
            a: Src::Reg(4),
            b: Src::Int(-3),
        },
        Build::Mid {
            seed: 6,
            srcs: [Src::Reg(5), Src::Reg(0)],
        },
        Build::Large {
            raw: false,
            extra: 5,
            seed: 7,
            srcs: [Src::Reg(6), Src::Reg(1)],
        },
        Build::Array {
            len: 6,
            init: Src::Reg(2),
        },
        Build::Cell { init: Src::Reg(3) },
    ];
    let mut cops = vec![COp::Push { len: 4 }, COp::Push { len: 0 }];
    for (k, b) in builds.iter().enumerate() {
        // Each structure built on the record, then by register code (lists
        // and trees; the others on the record again) into the same slot.
        for regs in [false, true] {
            cops.push(COp::Build {
                dst: k as u8,
                build: b.clone(),
                regs,
            });
        }
        cops.push(COp::Read {
            dst: 11,
            src: k as u8,
            field: k as u32,
        });
        cops.push(COp::ReadRaw {
            src: k as u8,
            field: 1,
        });
    }
    // Stores into the array (slot 9) and the cell (slot 10), a fresh pair
    // and a value of a slot, through the record's barrier and then by
    // register code.
    for regs in [false, true] {
        for (obj, value, fresh) in [(9, Src::Reg(0), true), (10, Src::Reg(7), false)] {
            cops.push(COp::Store {
                obj,
                index: 2,
                value,
                fresh,
                regs,
            });
        }
    }
    cops.extend([
        COp::StoreRaw { obj: 10, value: 99 },
        COp::Poll { times: 3 },
        COp::Collect,
        COp::Par {
            dst: [8, 11],
            env: [9, 2],
            a: builds[0].clone(),
            b: builds[9].clone(),
        },
        COp::Garbage { objects: 100 },
        COp::Move { dst: 1, src: 8 },
        COp::Clear { dst: 2 },
        COp::Pop { frames: 1 },
        COp::Check,
    ]);
    let program = vec![
        Op::Build {
            dst: 7,
            build: Build::List {
                len: 5,
                elem: Src::Int(1),
            },
        },
        Op::Compiled(cops),
        Op::Collect(numagc_torture::Collect::Global),
        Op::Compiled(vec![COp::Read {
            dst: 0,
            src: 1,
            field: 0,
        }]),
    ];
    for plan in PLANS {
        for vprocs in [1, 2] {
            for gc_every in [1, 7] {
                let r = run(&program, plan, 3, vprocs, gc_every)
                    .unwrap_or_else(|f| panic!("{plan} vprocs {vprocs} gc-every {gc_every}: {f}"));
                assert_eq!(r.compiled_sections, 2);
                assert!(r.compiled_ops >= 40 && r.compiled_forks == 1, "{r:?}");
                assert!(r.compiled_shared_allocs >= 4, "{r:?}");
                assert_eq!(r.compiled_register_stores, 2, "{r:?}");
                assert!(r.forced_minor > 0, "{r:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(proptest_config())]

    #[test]
    fn compiled_sections_stay_equal_to_the_shadow(
        program in strategy_compiled(10, Sizes::SMALL),
        gc_every in prop_oneof![Just(1u32), 2u32..6, 6u32..40],
        vprocs in 1usize..=2,
        shared in any::<bool>(),
        seed in any::<u64>(),
    ) {
        let plan = PLANS[shared as usize];
        if let Err(f) = run(&program, plan, seed, vprocs, gc_every) {
            return Err(TestCaseError::fail(format!("{f}\n(plan {plan}, vprocs {vprocs}, gc-every {gc_every}, runtime seed {seed})")));
        }
    }
}
