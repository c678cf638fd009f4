//! Every benchmark of the suite at the quick size, on 1 and 2 vprocs, with
//! the heap verifier after every collection: the answer must pass its
//! independent check and the runtime must report no thread errors.
//!
//! `NUMAGC_BENCH_ONLY=name,name` restricts the run (for working on one
//! benchmark).

use numagc::{Config, Runtime};
use numagc_bench::{all, Params, Size};

fn selected() -> Vec<&'static dyn numagc_bench::Benchmark> {
    let only = std::env::var("NUMAGC_BENCH_ONLY").ok();
    all()
        .into_iter()
        .filter(|b| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|n| n == b.name()))
        })
        .collect()
}

fn run_all(vprocs: usize) {
    for b in selected() {
        let params = Params::new(b, Size::Quick, &[]).unwrap();
        let config = Config::builder()
            .vprocs(vprocs)
            .verify(true)
            .build()
            .unwrap();
        let rt = Runtime::new(config).unwrap();
        let outcome = b
            .run(&rt, &params)
            .unwrap_or_else(|e| panic!("{} failed: {e}", b.name()));
        (outcome.check)()
            .unwrap_or_else(|e| panic!("{} on {vprocs} vprocs: wrong answer: {e}", b.name()));
        assert!(
            rt.take_thread_errors().is_empty(),
            "{}: thread errors",
            b.name()
        );
        let stats = rt.stats();
        assert!(
            stats.total.bytes_allocated > 0,
            "{} allocated nothing on the numagc heap",
            b.name()
        );
    }
}

#[test]
fn quick_suite_on_one_vproc() {
    run_all(1);
}

#[test]
fn quick_suite_on_two_vprocs() {
    run_all(2);
}

#[test]
fn every_benchmark_is_listed_once_with_its_parameters_in_range() {
    let mut names: Vec<_> = all().iter().map(|b| b.name()).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(names.len(), n, "duplicate benchmark names");
    for b in all() {
        for p in b.params() {
            assert!(
                p.min <= p.quick && p.quick <= p.max,
                "{} --{}: quick value out of range",
                b.name(),
                p.name
            );
            assert!(
                p.min <= p.paper && p.paper <= p.max,
                "{} --{}: paper value out of range",
                b.name(),
                p.name
            );
            assert!(
                p.min <= p.scale && p.scale <= p.max,
                "{} --{}: scale value out of range",
                b.name(),
                p.name
            );
        }
        for size in [Size::Quick, Size::Paper, Size::Scale] {
            assert!(Params::new(b, size, &[]).is_ok());
        }
        assert_eq!(Size::parse(Size::Scale.name()), Ok(Size::Scale));
    }
}

#[test]
fn an_override_out_of_range_is_an_error_naming_it() {
    let b = numagc_bench::find("binarytrees").unwrap();
    let e = Params::new(b, Size::Quick, &[("depth".into(), 99)]).unwrap_err();
    assert!(e.contains("--depth 99"), "{e}");
}

/// The programs written on the compiled-code interface (`--api
/// compiled`), at the quick size, on both plans and 1 and 2 vprocs, with
/// the verifier on: the same answers as the safe versions. In debug builds
/// the interface's checks (a value held across a collection without a
/// frame slot reads a poisoned header) run too.
#[test]
fn compiled_versions_on_every_plan() {
    let compiled: Vec<_> = selected()
        .into_iter()
        .filter(|b| b.has_compiled())
        .collect();
    if std::env::var("NUMAGC_BENCH_ONLY").is_err() {
        let names: Vec<&str> = compiled.iter().map(|b| b.name()).collect();
        assert!(
            ["binarytrees", "parfib", "coins", "gcbench"]
                .iter()
                .all(|n| names.contains(n)),
            "{names:?}"
        );
        assert!(compiled
            .iter()
            .filter(|b| ["parfib", "coins"].contains(&b.name()))
            .all(|b| b.has_compiled_calls()));
    }
    let apis = [
        numagc_bench::Api::Compiled,
        numagc_bench::Api::CompiledCalls,
    ];
    for b in compiled {
        for api in apis.into_iter().filter(|&api| b.has_api(api)) {
            for plan in [numagc::PlanKind::SplitHeap, numagc::PlanKind::SharedHeap] {
                for vprocs in [1, 2] {
                    let params = Params::new(b, Size::Quick, &[]).unwrap();
                    let config = Config::builder()
                        .plan(plan)
                        .vprocs(vprocs)
                        .verify(true)
                        .build()
                        .unwrap();
                    let rt = Runtime::new(config).unwrap();
                    let what = format!("{} ({}) on {plan:?} x{vprocs}", b.name(), api.name());
                    let outcome = b
                        .run_api(&rt, &params, api)
                        .unwrap_or_else(|e| panic!("{what} failed: {e}"));
                    (outcome.check)().unwrap_or_else(|e| panic!("{what}: wrong answer: {e}"));
                    assert!(rt.take_thread_errors().is_empty(), "{what}: thread errors");
                }
            }
        }
    }
}
