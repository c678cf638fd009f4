//! `numagc torture`, run as a user (and CI) runs it: a clean run reports its
//! collections and no violation; a violation, a dying worker (the heap
//! verifier aborts) and a hang are reported with the seed and the
//! operation, and make the command fail; bad input is a clear error.

mod common;

/// `numagc torture ARGS...`.
fn numagc(args: &[&str]) -> (bool, String, String) {
    common::numagc(&[&["torture"], args].concat())
}

#[test]
fn a_clean_run_reports_collections_checks_and_no_violation() {
    let (ok, out, err) = numagc(&[
        "--seconds",
        "4",
        "--vprocs",
        "2",
        "--seed",
        "11",
        "--gc-every",
        "7",
    ]);
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    assert!(out.contains("first seed 11"), "{out}");
    let line = |p: &str| {
        out.lines()
            .find(|l| l.starts_with(p))
            .unwrap_or_else(|| panic!("no `{p}` line in\n{out}"))
            .to_string()
    };
    let numbers = |l: &str| -> Vec<u64> {
        l.split(|c: char| !c.is_ascii_digit())
            .filter_map(|x| x.parse().ok())
            .collect()
    };
    let collections = numbers(&line("collections:"));
    assert!(
        collections[0] > 0 && collections[1] > 0,
        "minor and major collections: {out}"
    );
    let forced = numbers(&line("forced by the programs:"));
    assert!(forced[0] > 0, "forced minor collections: {out}");
    let checked = numbers(&line("checked:"));
    assert!(checked[0] > 0, "objects checked: {out}");
    assert!(out.contains("violations: 0"), "{out}");
}

fn expect_violation(args: &[&str], words: &[&str]) {
    let (ok, out, err) = numagc(args);
    assert!(!ok, "the command must fail:\n{out}\n{err}");
    for w in words {
        assert!(out.contains(w), "`{w}` missing in\n{out}\nstderr:\n{err}");
    }
    assert!(out.contains("violations: 1"), "{out}");
    assert!(err.contains("torture: a violation"), "{err}");
}

#[test]
fn a_violation_stops_the_run_with_the_seed_and_the_operation() {
    expect_violation(
        &[
            "--seconds",
            "30",
            "--seed",
            "7",
            "--vprocs",
            "2",
            "--fault",
            "heap-store@0",
        ],
        &[
            "VIOLATION in round 0 (seed 7), op 0",
            "Int(424242)",
            "reproduce: numagc torture --seed 7 --rounds 1 --vprocs 2 --plan split",
        ],
    );
}

#[test]
fn a_worker_that_aborts_is_reported_with_its_seed_and_operation() {
    // The heap verifier aborts the process on a broken invariant.
    expect_violation(
        &[
            "--seconds",
            "30",
            "--seed",
            "0x10",
            "--vprocs",
            "2",
            "--gc-every",
            "5",
            "--fault",
            "abort@1",
        ],
        &["worker died", "SIGABRT", "(seed 16), op 1", "--gc-every 5"],
    );
}

#[test]
fn a_hang_is_killed_and_reported() {
    expect_violation(
        &[
            "--seconds",
            "30",
            "--seed",
            "3",
            "--vprocs",
            "1",
            "--stall-timeout",
            "2",
            "--fault",
            "hang@0",
        ],
        &["no progress for 2 s", "(seed 3), op 0"],
    );
}

#[test]
fn bad_input_is_a_clear_error() {
    for (args, words) in [
        (
            &["--plan", "generational", "--seconds", "1"][..],
            &["plan", "generational"][..],
        ),
        (
            &["--vprocs", "0", "--seconds", "1"][..],
            &["vprocs", "0"][..],
        ),
        (&["--seed", "twelve"][..], &["twelve", "not a seed"][..]),
        (&["--seconds", "0"][..], &["--seconds"][..]),
        (
            &["--fault", "meteor", "--seconds", "1"][..],
            &["unknown fault", "meteor"][..],
        ),
        (&["--stall-timeout", "0"][..], &["stall-timeout"][..]),
    ] {
        let (ok, out, err) = numagc(args);
        assert!(!ok, "{args:?} accepted:\n{out}");
        for w in words {
            assert!(err.contains(w), "{args:?}: `{w}` missing in: {err}");
        }
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn the_hybrid_mode_runs_rounds_over_pes_and_refuses_faults() {
    for plan in ["split", "shared"] {
        let (ok, out, err) = numagc(&[
            "--seconds",
            "2",
            "--pes",
            "3",
            "--plan",
            plan,
            "--seed",
            "5",
        ]);
        assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
        assert!(out.contains("3 PEs of 1 vproc (hybrid mode)"), "{out}");
        assert!(
            out.contains("every round's weight books settled empty"),
            "{out}"
        );
        assert!(out.contains("violations: 0"), "{out}");
    }
    let (ok, _, err) = numagc(&["--seconds", "1", "--pes", "3", "--fault", "abort"]);
    assert!(!ok && err.contains("not the hybrid mode"), "{err}");
    let (ok, _, err) = numagc(&["--seconds", "1", "--pes", "17"]);
    assert!(!ok && err.contains("pes"), "{err}");
}
