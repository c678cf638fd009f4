//! The checker can fail: each deliberate fault is reported as a violation,
//! at the operation where it was injected, with a message that names it.
//! (A checker that never fails would pass every torture run.)

use numagc::{Config, Runtime};
use numagc_torture::interp::{self, Options};
use numagc_torture::{Build, Collect, Failure, FailureKind, Fault, FaultKind, Op, Src};

fn runtime(vprocs: usize) -> Runtime {
    let cfg = Config::builder()
        .vprocs(vprocs)
        .pin(false)
        .verify(true)
        .local_heap_size(128 << 10)
        .chunk_size(64 << 10)
        .global_gc_threshold(128 << 10)
        .max_heap(256 << 20)
        .build()
        .unwrap();
    Runtime::new(cfg).unwrap()
}

fn program() -> Vec<Op> {
    vec![
        Op::Build {
            dst: 2,
            build: Build::Tree {
                depth: 3,
                leaf: Src::Int(4),
            },
        },
        Op::Build {
            dst: 3,
            build: Build::List {
                len: 10,
                elem: Src::Reg(2),
            },
        },
        Op::Collect(Collect::Minor),
        Op::Build {
            dst: 4,
            build: Build::Vector {
                len: 30,
                seed: 3,
                srcs: [Src::Reg(2), Src::Reg(3)],
            },
        },
    ]
}

fn run_with(fault: Option<Fault>, gc_every: u32) -> Result<interp::Report, Failure> {
    let rt = runtime(2);
    interp::run(
        &rt,
        &program(),
        &Options {
            gc_every,
            seed: 1,
            fault,
            progress: None,
            deadline: None,
        },
    )
}

#[test]
fn the_program_passes_without_a_fault() {
    let r = run_with(None, 3).unwrap();
    assert_eq!(r.ops, 4);
    assert!(
        r.objects_checked > 0 && r.checks > 0 && r.forced_minor > 0,
        "{r:?}"
    );
}

fn expect_violation(kind: FaultKind, words: &str) {
    for at in [0, 2, 9] {
        let f = run_with(Some(Fault { kind, at }), 5).unwrap_err();
        assert_eq!(f.kind, FailureKind::Violation, "{f}");
        assert_eq!(f.op, at.min(program().len()), "{f}");
        assert!(f.what.contains(words), "{kind:?}: {f}");
    }
}

#[test]
fn a_store_behind_the_shadows_back_is_a_violation() {
    // The heap has 424242 where the shadow has the array's initial 5.
    expect_violation(FaultKind::HeapStore, "Int(424242)");
}

#[test]
fn a_wrong_shadow_is_a_violation() {
    expect_violation(FaultKind::ShadowRaw, "differs from the shadow");
}

#[test]
fn a_duplicated_shared_object_is_a_violation() {
    expect_violation(FaultKind::Duplicate, "duplicated");
}

#[test]
fn a_compiled_store_behind_the_shadows_back_is_found_by_compiled_code() {
    expect_violation(FaultKind::CompiledStore, "Int(424242)");
    let f = run_with(
        Some(Fault {
            kind: FaultKind::CompiledStore,
            at: 1,
        }),
        5,
    )
    .unwrap_err();
    assert!(f.what.starts_with("compiled op 0 (Check)"), "{f}");
}
