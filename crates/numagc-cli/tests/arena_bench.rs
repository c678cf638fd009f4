//! `numagc arena-bench`, run as a user would: end to end at the test size
//! with every allocator (those not installed are listed as such, which an
//! empty `--lib-dir` forces), a wrong answer from a workload makes the
//! command fail, and so does a preload that the dynamic linker ignored.

mod common;

use common::numagc;
use std::path::{Path, PathBuf};
use std::process::Command;

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("numagc-arena-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

/// libnumagc_malloc.so next to the numagc binary, where arena-bench looks
/// for it (`cargo test` does not build other crates' cdylibs).
fn build_numagc_malloc() -> PathBuf {
    let bin = PathBuf::from(env!("CARGO_BIN_EXE_numagc"));
    let dir = bin.parent().unwrap().to_path_buf();
    let profile = if dir.file_name().unwrap() == "release" {
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
    assert!(
        o.status.success(),
        "cargo build failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    let so = dir.join("libnumagc_malloc.so");
    assert!(so.exists(), "{} not built", so.display());
    so
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("JSON written")).expect("valid JSON")
}

#[test]
fn runs_end_to_end_at_the_test_size() {
    build_numagc_malloc();
    let dir = temp("e2e");
    let (json, md, plots) = (dir.join("r.json"), dir.join("r.md"), dir.join("plots"));
    let (ok, out, err) = numagc(&[
        "arena-bench",
        "--size",
        "test",
        "--repeat",
        "1",
        "--json",
        json.to_str().unwrap(),
        "--markdown",
        md.to_str().unwrap(),
        "--plot",
        plots.to_str().unwrap(),
    ]);
    assert!(ok, "arena-bench failed:\n{out}\n{err}");
    let v = read_json(&json);
    let allocs = v["allocators"].as_array().unwrap();
    let names: Vec<&str> = allocs.iter().map(|a| a["name"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "glibc",
            "jemalloc",
            "mimalloc",
            "tcmalloc",
            "numagc",
            "numagc-rich"
        ]
    );
    for a in allocs {
        let status = a["status"].as_str().unwrap();
        let name = a["name"].as_str().unwrap();
        match name {
            "glibc" | "numagc" | "numagc-rich" => assert_eq!(status, "ran", "{name}"),
            _ => assert!(
                status == "ran" || status == "not installed (run scripts/install-allocators.sh)",
                "{name}: {status}"
            ),
        }
        if status != "ran" {
            assert!(
                out.contains(&format!("{name:<11} {status}")),
                "{name} not listed as {status}:\n{out}"
            );
        }
    }
    let sums = v["summaries"].as_array().unwrap();
    // Every case x allocator has a row: 4 X x 2 threads x (bound + 6), ft and mg x 2 x (bound + 6),
    // larson and xmalloc x 2 x (bound + 5) (numagc-rich runs the array workloads only).
    assert_eq!(sums.len(), 4 * 2 * 7 + 2 * 2 * 7 + 2 * 2 * 6, "{out}");
    for s in sums {
        if s["status"] == "ran" {
            assert_eq!(s["answers_ok"], true, "{s}");
            assert!(s["wall_median_s"].as_f64().unwrap() > 0.0, "{s}");
        }
        // Every workload has its bound, so every allocator that ran has an overhead.
        if s["status"] == "ran" && s["allocator"] != "bound" {
            assert!(
                s["overhead_s"].is_f64() && s["over_bound"].is_f64(),
                "no overhead: {s}"
            );
        }
    }
    // numagc's runs really ran on numagc-malloc.
    let runs = v["runs"].as_array().unwrap();
    let numagc_runs: Vec<_> = runs.iter().filter(|r| r["allocator"] == "numagc").collect();
    assert_eq!(numagc_runs.len(), 4 * 2 + 4 * 2);
    for r in runs {
        let secs = r["seconds"].as_f64().expect("the workload's time");
        assert!(secs >= 0.0 && secs <= r["wall_s"].as_f64().unwrap(), "{r}");
    }
    for r in numagc_runs {
        assert!(
            r["malloc"]
                .as_str()
                .unwrap()
                .ends_with("libnumagc_malloc.so"),
            "{r}"
        );
    }
    // numagc-rich's ran on the rich interface, and on nothing else.
    let rich: Vec<_> = runs
        .iter()
        .filter(|r| r["allocator"] == "numagc-rich")
        .collect();
    assert_eq!(rich.len(), 4 * 2 + 2 * 2);
    for r in rich {
        assert_eq!(r["malloc"], "numagc-arena(rich)", "{r}");
    }
    assert!(v["targets"].as_array().unwrap().len() >= 20);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| fig1 X=25 | 2 | numagc |"), "{md}");
    for w in ["larson", "xmalloc"] {
        for k in [1, 2] {
            assert!(md.contains(&format!("| {w} | {k} | bound |")), "{md}");
        }
        let bounds: Vec<_> = runs
            .iter()
            .filter(|r| r["workload"] == w && r["allocator"] == "bound")
            .collect();
        assert_eq!(bounds.len(), 2, "{w}: one bound run per thread count");
        for r in bounds {
            assert_eq!(r["ok"], true, "{r}");
            assert!(
                !r["malloc"].as_str().unwrap().contains("numagc"),
                "the bound runs with nothing preloaded: {r}"
            );
        }
    }
    for f in ["fig5.svg", "fig5.png", "fig6-x25.svg", "workloads.png"] {
        assert!(plots.join(f).is_file(), "{f} not written");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn allocators_not_installed_are_listed_not_skipped() {
    let empty = temp("nolibs");
    let (ok, out, err) = numagc(&[
        "arena-bench",
        "larson",
        "--size",
        "test",
        "--repeat",
        "1",
        "--threads",
        "1",
        "--allocators",
        "glibc,jemalloc,mimalloc,tcmalloc",
        "--lib-dir",
        empty.to_str().unwrap(),
    ]);
    assert!(ok, "{out}\n{err}");
    for a in ["jemalloc", "mimalloc", "tcmalloc"] {
        let want = format!("{a:<11} not installed (run scripts/install-allocators.sh)");
        assert!(
            out.matches(&want).count() >= 2,
            "{a} should be listed as not installed, in the list and the table:\n{out}"
        );
    }
    let _ = std::fs::remove_dir_all(&empty);
}

#[test]
fn a_wrong_answer_fails_the_command() {
    let out = Command::new(env!("CARGO_BIN_EXE_numagc"))
        .args([
            "arena-bench",
            "xmalloc",
            "larson",
            "--size",
            "test",
            "--repeat",
            "1",
            "--threads",
            "1",
            "--allocators",
            "glibc",
        ])
        .env("NUMAGC_ARENA_BENCH_FAULT", "larson")
        .output()
        .unwrap();
    let (so, se) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(
        !out.status.success(),
        "a corrupted larson answer passed:\n{so}\n{se}"
    );
    assert!(
        se.contains("larson x1 glibc #0") && se.contains("WRONG ANSWER"),
        "{se}"
    );
    // larson's bound checks its answer too.
    assert!(se.contains("larson x1 bound #0"), "{se}");
    assert!(
        !se.contains("xmalloc x1"),
        "xmalloc was right and should not be blamed:\n{se}"
    );
    assert!(so.contains("WRONG"), "the table should show it:\n{so}");
}

#[test]
fn an_ignored_preload_fails_the_run() {
    // Not a shared object: the dynamic linker warns and runs on glibc.
    let dir = temp("badso");
    let fake = dir.join("libnumagc_malloc.so");
    std::fs::write(&fake, "not an ELF file").unwrap();
    let (ok, out, err) = numagc(&[
        "arena-bench",
        "larson",
        "--size",
        "test",
        "--repeat",
        "1",
        "--threads",
        "1",
        "--allocators",
        "numagc",
        "--numagc-malloc",
        fake.to_str().unwrap(),
    ]);
    assert!(!ok, "a run on the wrong malloc passed:\n{out}\n{err}");
    assert!(
        err.contains("malloc came from") && err.contains("libc"),
        "{err}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_options_are_refused_by_name() {
    for (args, says) in [
        (&["arena-bench", "--size", "huge"][..], "--size \"huge\""),
        (&["arena-bench", "nbody"], "no workload \"nbody\""),
        (
            &["arena-bench", "--allocators", "hoard"],
            "no allocator \"hoard\"",
        ),
        (&["arena-bench", "--repeat", "0"], "--repeat 0"),
    ] {
        let (ok, _, err) = numagc(args);
        assert!(
            !ok && err.contains(says),
            "{args:?} should fail saying {says:?}: {err}"
        );
    }
}
