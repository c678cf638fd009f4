//! `numagc compare`, run as a user would. Passes whether or not the peers
//! are installed: the "not installed" path uses an empty peers directory,
//! the checking of answers uses fake peers (shell scripts), and the real
//! peers (`peers/build`, or `COMPARE_TEST_PEERS_DIR`) only when present.

mod common;

use common::numagc;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

fn temp(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("numagc-compare-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&p);
    std::fs::create_dir_all(&p).unwrap();
    p
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("JSON written")).expect("valid JSON")
}

fn rows<'a>(v: &'a serde_json::Value, runtime: &str) -> Vec<&'a serde_json::Value> {
    v["summaries"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["runtime"] == runtime)
        .collect()
}

/// Writes an executable shell script at `dir/rel`.
fn script(dir: &Path, rel: &str, body: &str) {
    let p = dir.join(rel);
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn without_peers_numagc_runs_and_every_peer_is_listed_as_not_installed() {
    let dir = temp("empty");
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1",
        "--repeat",
        "1",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    assert!(
        out.contains("not installed (run peers/install.sh)"),
        "{out}"
    );
    let v = read_json(&json);
    let n = rows(&v, "numagc");
    assert_eq!(n.len(), 1);
    assert_eq!(n[0]["answers_ok"], true);
    assert!(n[0]["wall_median_s"].as_f64().unwrap() > 0.0);
    assert!(n[0]["cpu_median_s"].as_f64().is_some());
    assert!(n[0]["max_rss_median_kib"].as_u64().unwrap() > 0);
    // numagc's timed runs report their pauses.
    assert!(n[0]["pause_max_ms"].as_f64().is_some(), "{}", n[0]);
    assert!(n[0]["pause_p999_ms"].as_f64().unwrap() <= n[0]["pause_max_ms"].as_f64().unwrap());
    for peer in ["haskell", "ocaml", "java-parallelgc", "java-g1"] {
        let r = rows(&v, peer);
        assert_eq!(r.len(), 1, "{peer}");
        assert_eq!(
            r[0]["status"], "not installed (run peers/install.sh)",
            "{peer}"
        );
    }
    assert_eq!(
        rows(&v, "ocaml5")[0]["status"],
        "OCaml 5 not installed (run peers/install-ocaml5.sh, then peers/build.sh)"
    );
    assert_eq!(v["runs"].as_array().unwrap().len(), 1, "only numagc ran");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_fake_peer_printing_numagcs_output_is_ok_and_gets_the_positional_parameters() {
    let dir = temp("fake-ok");
    let (ok, want, err) = numagc(&["compare", "--print-output", "--suite", "quick", "parfib"]);
    assert!(ok && !want.is_empty(), "{err}");
    std::fs::write(dir.join("want.txt"), &want).unwrap();
    let d = dir.display();
    script(
        &dir,
        "peers/haskell/parfib",
        &format!("echo \"$@\" >> {d}/haskell-args.txt\ncat {d}/want.txt"),
    );
    script(
        &dir,
        "peers/ocaml/parfib",
        &format!("echo \"$@\" >> {d}/ocaml-args.txt\ncat {d}/want.txt"),
    );
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1,2",
        "--repeat",
        "2",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    let v = read_json(&json);
    let h = rows(&v, "haskell");
    assert_eq!(h.len(), 2);
    assert!(h.iter().all(|r| r["answers_ok"] == true
        && r["runs"] == 2
        && r["numagc_over_this"].as_f64().is_some()));
    let o = rows(&v, "ocaml");
    assert_eq!(o[0]["answers_ok"], true);
    assert_eq!(o[1]["status"], "sequential (runs at vprocs 1 only)");
    // Parameters in the order of parfib's params() (n threshold), quick size; GHC's RTS flags
    // (`haskell` with -A32m, then `haskell-default`, the same program, in each round).
    let args = std::fs::read_to_string(dir.join("haskell-args.txt")).unwrap();
    assert_eq!(
        args,
        "30 15 +RTS -N1 -A32m -RTS\n30 15 +RTS -N1 -RTS\n".repeat(2)
            + &"30 15 +RTS -N2 -A32m -RTS\n30 15 +RTS -N2 -RTS\n".repeat(2)
    );
    assert_eq!(rows(&v, "haskell-default").len(), 2);
    assert_eq!(
        std::fs::read_to_string(dir.join("ocaml-args.txt")).unwrap(),
        "30 15\n30 15\n"
    );
    // Alternation: repetition is the outer loop.
    let order: Vec<String> = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["vprocs"] == 1)
        .map(|r| r["runtime"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        order,
        ["numagc", "haskell", "haskell-default", "ocaml"].repeat(2)
    );
    let best: Vec<&serde_json::Value> = v["best"].as_array().unwrap().iter().collect();
    assert_eq!(best.len(), 2);
    assert!(best
        .iter()
        .all(|b| b["best_peer"].is_string() && b["numagc_over_best"].as_f64().is_some()));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn ocaml5_runs_under_gcpauses_with_k_domains_and_its_pauses_are_read() {
    let dir = temp("fake-ocaml5");
    let (ok, want, err) = numagc(&["compare", "--print-output", "--suite", "quick", "parfib"]);
    assert!(ok && !want.is_empty(), "{err}");
    std::fs::write(dir.join("want.txt"), &want).unwrap();
    let d = dir.display();
    // A fake gcpauses: records its arguments, runs the peer, reports pauses
    // whose size depends on the worker count (its last argument).
    script(
        &dir,
        "peers/ocaml5/gcpauses",
        &format!(
            "echo \"$@\" >> {d}/args.txt\n\"$@\" || exit 1\nfor k; do :; done\n\
             echo \"ocaml-pauses count=3 total_ns=9 p50_ns=1 p99_ns=2 p999_ns=${{k}}000000 max_ns=${{k}}500000 lost_events=$((k - 1))\" >&2"
        ),
    );
    script(&dir, "peers/ocaml5/parfib", &format!("cat {d}/want.txt"));
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1,2",
        "--repeat",
        "1",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    assert_eq!(
        std::fs::read_to_string(dir.join("args.txt")).unwrap(),
        format!("{d}/peers/ocaml5/parfib 30 15 1\n{d}/peers/ocaml5/parfib 30 15 2\n")
    );
    let v = read_json(&json);
    let o = rows(&v, "ocaml5");
    assert_eq!(o.len(), 2);
    assert!(o.iter().all(|r| r["answers_ok"] == true));
    assert_eq!(o[0]["pause_p999_ms"], 1.0);
    assert_eq!(o[1]["pause_max_ms"], 2.5);
    assert_eq!(
        (
            o[0]["pauses_lost_events"].clone(),
            o[1]["pauses_lost_events"].clone()
        ),
        (false.into(), true.into())
    );
    assert!(out.contains("2.000/2.500*"), "{out}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_peer_with_a_different_answer_or_a_failure_makes_the_command_fail() {
    let dir = temp("fake-wrong");
    script(&dir, "peers/haskell/parfib", "echo 'fib 30 = 1'");
    script(&dir, "peers/ocaml/parfib", "echo oops >&2; exit 3");
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1",
        "--repeat",
        "1",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(!ok, "stdout:\n{out}");
    assert!(
        err.contains("haskell") && err.contains("different answer"),
        "{err}"
    );
    assert!(
        err.contains("ocaml") && err.contains("exit status 3: oops"),
        "{err}"
    );
    assert!(out.contains("WRONG"), "{out}");
    // The table and JSON are still written.
    let v = read_json(&json);
    assert_eq!(rows(&v, "haskell")[0]["answers_ok"], false);
    assert_eq!(rows(&v, "numagc")[0]["answers_ok"], true);
    std::fs::remove_dir_all(&dir).ok();
}

/// `--pes`: numagc on PE groups as another runtime, at K workers in all;
/// a benchmark without a PE version, or a K the PE count does not divide,
/// is a skipped row with its reason, not an error. No peer is installed.
#[test]
fn pe_groups_are_numagc_runtimes_of_their_own_and_skip_what_they_cannot_run() {
    let dir = temp("pes");
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "binarytrees",
        "--suite",
        "quick",
        "--vprocs",
        "1,2",
        "--pes",
        "1,2",
        "--repeat",
        "1",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    let v = read_json(&json);
    // The plan in the name is the one of the NUMAGC_* settings.
    let summaries = v["summaries"].as_array().unwrap();
    let group = summaries
        .iter()
        .map(|s| s["runtime"].as_str().unwrap())
        .find(|r| r.starts_with("numagc ") && r.ends_with("/2pe"))
        .unwrap_or_else(|| panic!("no numagc PLAN/2pe runtime: {out}"));
    let row = |bench: &str, k: u64| {
        rows(&v, group)
            .into_iter()
            .find(|s| s["benchmark"] == bench && s["vprocs"] == k)
            .unwrap_or_else(|| panic!("no {bench} x{k} {group} row"))
    };
    // parfib at K = 2: 2 PEs of 1 vproc, numagc's checked answer.
    assert_eq!(row("parfib", 2)["answers_ok"], true, "{out}");
    assert_eq!(row("parfib", 2)["runs"], 1);
    assert_eq!(
        row("parfib", 1)["status"],
        "the PE count does not divide the vprocs (K = PEs x vprocs per PE)"
    );
    for k in [1, 2] {
        assert_eq!(
            row("binarytrees", k)["status"],
            "no PE version of this benchmark (--pes)"
        );
    }
    // --pes 1 is numagc on one runtime, as without --pes.
    assert_eq!(rows(&v, "numagc").len(), 4);
    assert!(rows(&v, "numagc").iter().all(|r| r["answers_ok"] == true));
    let group_runs = v["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["runtime"] == group)
        .count();
    assert_eq!(group_runs, 1, "only parfib x2 ran on the group");
    std::fs::remove_dir_all(&dir).ok();

    let (ok, _, err) = numagc(&["compare", "parfib", "--suite", "quick", "--pes", "0"]);
    assert!(!ok && err.contains("--pes 0"), "{err}");
}

#[test]
fn unknown_benchmark_is_a_clear_error() {
    let (ok, _, err) = numagc(&["compare", "nosuchbench", "--suite", "quick"]);
    assert!(!ok);
    assert!(err.contains("no benchmark \"nosuchbench\""), "{err}");
}

#[test]
fn benchmark_without_peers_is_refused() {
    let (ok, _, err) = numagc(&["compare", "raytracer", "--suite", "quick"]);
    assert!(!ok);
    assert!(
        err.contains("raytracer has no peer implementations"),
        "{err}"
    );
    assert!(err.contains("binarytrees"), "lists those with peers: {err}");
}

/// With the real peers, when built: each either ran with numagc's answer or is "not installed".
#[test]
fn real_peers_when_present_give_numagcs_answer() {
    let dir = std::env::var_os("COMPARE_TEST_PEERS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../peers/build"));
    if !dir.is_dir() {
        eprintln!("skipped: no peers at {} (peers/install.sh)", dir.display());
        return;
    }
    let tmp = temp("real");
    let json = tmp.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1",
        "--repeat",
        "1",
        "--peers-dir",
        dir.to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    let v = read_json(&json);
    assert_eq!(rows(&v, "numagc")[0]["answers_ok"], true);
    for peer in ["haskell", "ocaml", "ocaml5", "java-parallelgc", "java-g1"] {
        let r = rows(&v, peer)[0];
        assert!(
            r["answers_ok"] == true
                || r["status"] == "not installed (run peers/install.sh)"
                || r["status"]
                    == "OCaml 5 not installed (run peers/install-ocaml5.sh, then peers/build.sh)",
            "{peer}: {r}"
        );
    }
    std::fs::remove_dir_all(&tmp).ok();
}

#[test]
fn breakdown_reads_each_runtimes_own_accounting() {
    let dir = temp("breakdown");
    let (ok, want, err) = numagc(&["compare", "--print-output", "--suite", "quick", "parfib"]);
    assert!(ok && !want.is_empty(), "{err}");
    std::fs::write(dir.join("want.txt"), &want).unwrap();
    let d = dir.display();
    // A fake GHC program: its statistics only when asked for with +RTS -s.
    script(
        &dir,
        "peers/haskell/parfib",
        &format!(
            "cat {d}/want.txt\ncase \"$*\" in *-s*) printf '  1,500,000 bytes allocated in the heap\\n  GC      time    0.100s  (  0.050s elapsed)\\n' >&2;; esac"
        ),
    );
    let json = dir.join("out.json");
    let (ok, out, err) = numagc(&[
        "compare",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "2",
        "--repeat",
        "1",
        "--breakdown",
        "--peers-dir",
        dir.join("peers").to_str().unwrap(),
        "--json",
        json.to_str().unwrap(),
        "--markdown",
        dir.join("out.md").to_str().unwrap(),
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("mutator s"), "{out}");
    let md = std::fs::read_to_string(dir.join("out.md")).expect("markdown written");
    assert!(
        md.contains("| parfib | 2 | haskell |") && md.contains("| parfib | 2 | numagc |"),
        "{md}"
    );
    assert!(
        md.contains("| parfib | 2 | haskell | ") && md.contains("| 0.050 |"),
        "{md}"
    );
    let v = read_json(&json);
    let b = v["breakdown"].as_array().unwrap();
    assert_eq!(b.len(), 3, "{b:?}");
    let of = |rt: &str| {
        b.iter()
            .find(|r| r["runtime"] == rt)
            .unwrap_or_else(|| panic!("{rt} in {b:?}"))
    };
    let n = of("numagc");
    assert_eq!(n["ok"], true);
    // parfib boxes every result: at least 16 bytes per call of fib(30).
    assert!(
        n["accounting"]["allocated_bytes"].as_u64().unwrap() > 16 * 1_000_000,
        "{n}"
    );
    assert!(n["accounting"]["gc_s"].as_f64().is_some(), "{n}");
    let h = of("haskell");
    assert_eq!(h["ok"], true);
    assert_eq!(h["accounting"]["allocated_bytes"], 1_500_000);
    assert_eq!(h["accounting"]["gc_s"], 0.05);
    assert_eq!(of("haskell-default")["accounting"]["gc_s"], 0.05);
    // The accounted runs are not among the timed ones.
    assert_eq!(v["runs"].as_array().unwrap().len(), 3);
    std::fs::remove_dir_all(&dir).ok();
}
