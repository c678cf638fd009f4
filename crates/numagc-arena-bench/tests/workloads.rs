//! Every workload at a tiny size gives the right answer with glibc's malloc
//! and with numagc-malloc preloaded, reports the malloc it ran on, and
//! fails (exit status 2) when its answer is corrupted
//! (`NUMAGC_ARENA_BENCH_FAULT`).
//!
//! `cargo test` does not build another crate's cdylib, so the test asks
//! cargo for `libnumagc_malloc.so` (same target directory and profile), as
//! numagc-malloc's own tests do.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

const TINY: [&[&str]; 11] = [
    &["fig1", "--x", "25", "--total", "20000", "--iterations", "3"],
    &[
        "fig1",
        "--x",
        "1000",
        "--total",
        "20000",
        "--iterations",
        "2",
        "--bound",
    ],
    &["ft", "--class", "S"],
    &["mg", "--class", "S"],
    &[
        "larson", "--slots", "50", "--steps", "2000", "--epochs", "3",
    ],
    &["xmalloc", "--batches", "50", "--batch", "20"],
    &[
        "fig1",
        "--x",
        "100",
        "--total",
        "20000",
        "--iterations",
        "2",
    ],
    &["ft", "--class", "S", "--bound"],
    &["mg", "--class", "S", "--bound"],
    &[
        "larson", "--slots", "50", "--steps", "2000", "--epochs", "3", "--bound",
    ],
    &["xmalloc", "--batches", "50", "--batch", "20", "--bound"],
];

fn show(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn numagc_malloc() -> &'static Path {
    static SO: OnceLock<PathBuf> = OnceLock::new();
    SO.get_or_init(|| {
        let exe = std::env::current_exe().unwrap();
        let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
        let profile = if profile_dir.file_name().unwrap() == "release" {
            "release"
        } else {
            "test"
        };
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let o = Command::new(cargo)
            .args([
                "build",
                "--lib",
                "-p",
                "numagc-malloc",
                "--profile",
                profile,
                "--manifest-path",
            ])
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
            .output()
            .expect("running cargo");
        assert!(o.status.success(), "cargo build failed:\n{}", show(&o));
        let so = profile_dir.join("libnumagc_malloc.so");
        assert!(so.exists(), "{} not built", so.display());
        std::fs::canonicalize(so).unwrap()
    })
}

fn workload(args: &[&str], preload: Option<&Path>, fault: Option<&str>) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_arena-workload"));
    c.args(args).env_remove("NUMAGC_ARENA_BENCH_FAULT");
    match preload {
        Some(p) => c.env("LD_PRELOAD", p),
        None => c.env_remove("LD_PRELOAD"),
    };
    if let Some(f) = fault {
        c.env("NUMAGC_ARENA_BENCH_FAULT", f);
    }
    c.output().expect("running arena-workload")
}

fn check_ok(args: &[&str], threads: &str, preload: Option<&Path>) {
    let mut a = args.to_vec();
    a.extend(["--threads", threads]);
    let o = workload(&a, preload, None);
    assert!(o.status.success(), "{a:?}:\n{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let line = out
        .lines()
        .find(|l| l.starts_with("ok "))
        .unwrap_or_else(|| panic!("no ok line:\n{}", show(&o)));
    let origin = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("malloc="))
        .expect("malloc= reported");
    let secs = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("seconds="))
        .and_then(|v| v.parse::<f64>().ok());
    assert!(
        secs.is_some_and(|s| s >= 0.0),
        "{a:?}: no seconds= in {line}"
    );
    match preload {
        Some(p) => assert_eq!(
            Path::new(origin),
            p,
            "{a:?} did not run on the preloaded malloc"
        ),
        None => assert!(
            origin.contains("libc.so") || origin.contains("libc-"),
            "{a:?}: malloc from {origin}"
        ),
    }
}

#[test]
fn right_answers_with_glibc() {
    for args in TINY {
        for k in ["1", "2"] {
            check_ok(args, k, None);
        }
    }
}

#[test]
fn right_answers_with_numagc_malloc_preloaded() {
    let so = numagc_malloc();
    for args in TINY {
        for k in ["1", "2"] {
            check_ok(args, k, Some(so));
        }
    }
}

#[test]
fn a_corrupted_answer_is_caught() {
    for args in TINY {
        let o = workload(args, None, Some(args[0]));
        assert_eq!(
            o.status.code(),
            Some(2),
            "{args:?} with its answer corrupted:\n{}",
            show(&o)
        );
        assert!(
            String::from_utf8_lossy(&o.stderr).contains("WRONG ANSWER"),
            "{}",
            show(&o)
        );
    }
    // The fault names one workload: the others are unaffected.
    let o = workload(TINY[3], None, Some("ft"));
    assert!(o.status.success(), "{}", show(&o));
}

#[test]
fn bad_arguments_are_refused_by_name() {
    for (args, says) in [
        (&["fig1"][..], "--x is required"),
        (&["ft", "--class", "Q"], "--class \"Q\""),
        (
            &["fig1", "--x", "25", "--frobs", "3"],
            "unknown option --frobs",
        ),
        (&["nbody"], "no workload \"nbody\""),
        (&["larson", "--threads", "0"], "--threads 0"),
        (
            &["xmalloc", "--bound", "yes"],
            "unexpected argument \"yes\"",
        ),
    ] {
        let o = workload(args, None, None);
        assert_eq!(o.status.code(), Some(64), "{args:?}:\n{}", show(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?} should say {says:?}:\n{}",
            show(&o)
        );
    }
}

/// Fig. 1 with more threads than blocks of A (5 elements on 4 threads make
/// 3 blocks of 2): every block's thread meets at the with-loop's barrier.
#[test]
fn fig1_with_more_threads_than_blocks() {
    check_ok(
        &[
            "fig1",
            "--x",
            "1000",
            "--total",
            "5000",
            "--iterations",
            "3",
        ],
        "4",
        None,
    );
}

/// `--waits`: a busy, a waited and a longest-wait figure per thread, the
/// longest wait within the waits' total; without the flag, none.
#[test]
fn fig1_reports_each_threads_waits() {
    // TINY[6]: fig1 at X = 100, 2 iterations.
    let mut a = TINY[6].to_vec();
    a.extend(["--threads", "2", "--waits"]);
    let o = workload(&a, None, None);
    assert!(o.status.success(), "{a:?}:\n{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let field = |k: &str| -> Vec<f64> {
        let v = out
            .split_whitespace()
            .find_map(|w| w.strip_prefix(k))
            .unwrap_or_else(|| panic!("no {k} in {out}"));
        v.split(',').map(|x| x.parse().unwrap()).collect()
    };
    let (busy, waited, longest) = (
        field("busy_ms="),
        field("waited_ms="),
        field("longest_wait_ms="),
    );
    assert_eq!(
        (busy.len(), waited.len(), longest.len()),
        (2, 2, 2),
        "{out}"
    );
    for t in 0..2 {
        assert!(busy[t] > 0.0, "{out}");
        assert!(longest[t] >= 0.0 && longest[t] <= waited[t], "{out}");
    }
    // Without the flag, no such fields.
    let plain = workload(&a[..a.len() - 1], None, None);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("busy_ms="));
}

/// fig1, ft and mg with numagc-arena's rich interface linked in (`--rich`):
/// right answers at 1 and 2 threads, reported as such; the malloc patterns
/// refuse the flag by name, and so does `--rich` with `--bound`.
#[test]
fn right_answers_with_the_rich_interface() {
    // The array programs of TINY, without the bound: fig1 at X = 25 and
    // 100, ft and mg.
    let array_programs = TINY
        .iter()
        .filter(|a| matches!(a[0], "fig1" | "ft" | "mg") && !a.contains(&"--bound"));
    for &args in array_programs {
        for k in ["1", "2"] {
            let mut a = args.to_vec();
            a.extend(["--threads", k, "--rich"]);
            let o = workload(&a, None, None);
            assert!(o.status.success(), "{a:?}:\n{}", show(&o));
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(
                out.lines()
                    .any(|l| l.starts_with("ok ") && l.contains("malloc=numagc-arena(rich)")),
                "{a:?}:\n{}",
                show(&o)
            );
        }
        let mut a = args.to_vec();
        a.push("--rich");
        let o = workload(&a, None, Some(args[0]));
        assert_eq!(o.status.code(), Some(2), "{a:?} corrupted:\n{}", show(&o));
    }
    for (args, says) in [
        (&["larson", "--rich"][..], "is a malloc pattern"),
        (
            &["fig1", "--x", "25", "--rich", "--bound"],
            "one or the other",
        ),
    ] {
        let o = workload(args, None, None);
        assert_eq!(o.status.code(), Some(64), "{args:?}:\n{}", show(&o));
        assert!(
            String::from_utf8_lossy(&o.stderr).contains(says),
            "{args:?} should say {says:?}:\n{}",
            show(&o)
        );
    }
}

/// The value of `key=` on the `ok` line of a run that must succeed.
fn field(args: &[&str], key: &str) -> String {
    let o = workload(args, None, None);
    assert!(o.status.success(), "{args:?}:\n{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.split_whitespace()
        .find_map(|w| w.strip_prefix(key).and_then(|v| v.strip_prefix('=')))
        .unwrap_or_else(|| panic!("{args:?}: no {key}= in {out}"))
        .to_string()
}

/// larson's and xmalloc's bounds do the real runs' work: as many objects
/// made and retired, with the same tags, as the real runs allocate and
/// free (each also checked against the replay inside the workload), and
/// say that they are the bound.
#[test]
fn larson_and_xmalloc_bounds_do_the_same_work() {
    for (real, made, gone) in [
        (
            &[
                "larson",
                "--slots",
                "30",
                "--steps",
                "500",
                "--epochs",
                "3",
                "--threads",
                "2",
            ][..],
            "allocations",
            "frees",
        ),
        (
            &[
                "xmalloc",
                "--batches",
                "40",
                "--batch",
                "7",
                "--threads",
                "2",
            ],
            "allocations",
            "frees",
        ),
    ] {
        let mut bound = real.to_vec();
        bound.push("--bound");
        assert_eq!(field(real, made), field(&bound, "objects"), "{real:?}");
        assert_eq!(field(real, gone), field(&bound, "retired"), "{real:?}");
        assert_eq!(field(real, "tag_sum"), field(&bound, "tag_sum"), "{real:?}");
        let o = workload(&bound, None, None);
        let out = String::from_utf8_lossy(&o.stdout);
        assert!(out.contains(&format!("ok {} bound ", real[0])), "{out}");
    }
}
