//! The `numagc` binary, run as a user would.

mod common;

use common::numagc;

#[test]
fn binarytrees_prints_the_standard_output_and_statistics() {
    let (ok, out, err) = numagc(&[
        "bench",
        "binarytrees",
        "--depth",
        "10",
        "--vprocs",
        "2",
        "--verify",
        "--local-heap",
        "64K",
        "--chunk-size",
        "64K",
        "--global-gc-threshold",
        "64K",
    ]);
    assert!(ok, "stderr: {err}");
    let expected = "stretch tree of depth 11\t check: 4095\n\
                    1024\t trees of depth 4\t check: 31744\n\
                    256\t trees of depth 6\t check: 32512\n\
                    64\t trees of depth 8\t check: 32704\n\
                    16\t trees of depth 10\t check: 32752\n\
                    long lived tree of depth 10\t check: 2047\n";
    assert!(out.starts_with(expected), "output:\n{out}");
    // The statistics table: one row per vproc and a total, with every kind of collection.
    let total = out
        .lines()
        .find(|l| l.starts_with("total"))
        .expect("total row");
    let counts: Vec<u64> = total
        .split_whitespace()
        .skip(2)
        .take(4)
        .map(|c| c.split('/').next().unwrap().parse().unwrap())
        .collect();
    assert!(
        counts[0] > 0 && counts[1] > 0 && counts[3] > 0,
        "minor, major and global collections: {total}"
    );
    assert!(
        counts[2] > 0,
        "promotion (global root of the long-lived tree): {total}"
    );
}

#[test]
fn json_output_has_the_runs_and_summaries() {
    let path = std::env::temp_dir().join(format!("numagc-bt-{}.json", std::process::id()));
    let p = path.to_str().unwrap();
    let (ok, _, err) = numagc(&[
        "bench",
        "binarytrees",
        "--depth",
        "8",
        "--vprocs",
        "1",
        "--local-heap",
        "64K",
        "--json",
        p,
    ]);
    assert!(ok, "{err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    std::fs::remove_file(&path).ok();
    let run = &v["runs"][0];
    assert_eq!(run["correct"], true);
    assert_eq!(run["params"]["depth"], 8);
    assert!(run["bytes_allocated"].as_u64().unwrap() > 0);
    assert!(run["minor_collections"].as_u64().unwrap() > 0);
    assert_eq!(v["summaries"][0]["benchmark"], "binarytrees");
    assert_eq!(v["summaries"][0]["all_correct"], true);
}

#[test]
fn the_harness_runs_configurations_and_writes_the_trace() {
    let dir = std::env::temp_dir().join(format!("numagc-harness-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (json, trace) = (dir.join("r.json"), dir.join("t.json"));
    let (ok, out, err) = numagc(&[
        "bench",
        "parfib",
        "binarytrees",
        "--suite",
        "quick",
        "--n",
        "22",
        "--depth",
        "10",
        "--vprocs",
        "1,2",
        "--numa-policy",
        "local,interleave",
        "--repeat",
        "2",
        "--topology",
        "2x1",
        "--local-heap",
        "256K",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    assert!(!out.contains("stretch tree"), "--quiet: {out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v["runs"].as_array().unwrap().len(), 2 * 2 * 2 * 2);
    let sums = v["summaries"].as_array().unwrap();
    assert_eq!(sums.len(), 2 * 2 * 2);
    for s in sums {
        assert_eq!(s["runs"], 2);
        assert_eq!(s["all_correct"], true);
        assert!(s["speedup"].as_f64().unwrap() > 0.0);
        // One table row per configuration.
        let row = [
            s["benchmark"].as_str().unwrap().to_string(),
            s["plan"].as_str().unwrap().to_string(),
            s["numa_policy"].as_str().unwrap().to_string(),
            s["vprocs"].to_string(),
        ];
        assert!(
            out.lines().any(|l| l
                .split_whitespace()
                .take(4)
                .map(String::from)
                .collect::<Vec<_>>()
                == row),
            "row {row:?} in:\n{out}"
        );
    }
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t["traceEvents"].as_array().unwrap();
    let processes = events
        .iter()
        .filter(|e| e["name"] == "process_name")
        .count();
    assert_eq!(processes, 16, "one process per run");
    // Named after the run's configuration, the plan included.
    assert!(
        events
            .iter()
            .any(|e| e["name"] == "process_name"
                && e["args"]["name"] == "parfib split interleave x2 #2"),
        "process names"
    );
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "minor GC"));
    assert!(events
        .iter()
        .any(|e| e["ph"] == "X" && e["name"] == "job" && e["tid"] == 1));
    std::fs::remove_dir_all(&dir).ok();
}

/// `--plan` is a dimension of the harness, like `--numa-policy`: the plan
/// is in every run, every summary and the table.
#[test]
fn the_harness_records_the_plan_of_every_run() {
    let json = std::env::temp_dir().join(format!("numagc-plan-{}.json", std::process::id()));
    let (ok, out, err) = numagc(&[
        "bench",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1",
        "--plan",
        "split",
        "--repeat",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    let (runs, sums) = (
        v["runs"].as_array().unwrap(),
        v["summaries"].as_array().unwrap(),
    );
    assert_eq!((runs.len(), sums.len()), (1, 1));
    assert_eq!(runs[0]["plan"], "split");
    assert_eq!(sums[0]["plan"], "split");
    let cells = |l: &str| l.split_whitespace().take(4).collect::<Vec<_>>().join(" ");
    let header = out
        .lines()
        .find(|l| l.starts_with("benchmark"))
        .expect("table header");
    assert_eq!(cells(header), "benchmark plan policy vprocs", "{out}");
    assert!(
        out.lines()
            .any(|l| cells(l).starts_with("parfib split ") && cells(l).ends_with(" 1")),
        "{out}"
    );
}

/// A value of `--plan` is parsed by the `plan` setting's parser: a refused
/// one gives the setting's own message, before anything runs.
#[test]
fn the_harness_refuses_a_plan_with_the_settings_message() {
    let setting_message = "hybrid"
        .parse::<numagc::PlanKind>()
        .expect_err("a plan named hybrid exists: pick a name that is no plan")
        .to_string();
    assert!(setting_message.contains("split (or split-heap), shared (or shared-heap)"));
    let (ok, out, err) = numagc(&["bench", "parfib", "--suite", "quick", "--plan", "hybrid"]);
    assert!(!ok, "{out}");
    assert!(
        err.contains(&format!("--plan hybrid: {setting_message}")),
        "{err}"
    );
    let (ok, out, err) = numagc(&["bench", "parfib", "--plan", "split,hybrid"]);
    assert!(!ok && !out.contains("benchmark"), "nothing runs: {out}");
    assert!(err.contains(&setting_message), "{err}");
    // The plan of the configuration (NUMAGC_PLAN) is the setting's too.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_numagc"))
        .args(["bench", "parfib", "--suite", "quick"])
        .env("NUMAGC_PLAN", "hybrid")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains(&setting_message));
}

/// Two names of one plan (`split`, `split-heap`, any case) are one
/// configuration: it runs once.
#[test]
fn the_harness_runs_a_plan_named_twice_once() {
    let json = std::env::temp_dir().join(format!("numagc-plan-dup-{}.json", std::process::id()));
    let (ok, _, err) = numagc(&[
        "bench",
        "parfib",
        "--suite",
        "quick",
        "--vprocs",
        "1",
        "--plan",
        "split,split-heap,SPLIT",
        "--repeat",
        "1",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    let plans = |key: &str| -> Vec<String> {
        v[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["plan"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(plans("runs"), ["split"]);
    assert_eq!(plans("summaries"), ["split"]);
}

/// `--plan split,shared` runs every benchmark on both plans, side by side,
/// each checking its answer.
#[test]
fn the_harness_runs_each_plan_it_is_given() {
    let json = std::env::temp_dir().join(format!("numagc-plans-{}.json", std::process::id()));
    let (ok, out, err) = numagc(&[
        "bench",
        "parfib",
        "binarytrees",
        "--suite",
        "quick",
        "--vprocs",
        "1,2",
        "--plan",
        "split,shared",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    std::fs::remove_file(&json).ok();
    let runs = v["runs"].as_array().unwrap();
    for plan in ["split", "shared"] {
        for bench in ["parfib", "binarytrees"] {
            let n = runs
                .iter()
                .filter(|r| r["plan"] == plan && r["benchmark"] == bench)
                .count();
            assert_eq!(n, 2, "{bench} on {plan} at 1 and 2 vprocs: {out}");
        }
    }
    assert!(
        out.lines()
            .filter(|l| l.trim_end().ends_with(" ok"))
            .count()
            >= 8,
        "{out}"
    );
}

#[test]
fn harness_errors_name_the_problem() {
    let (ok, _, err) = numagc(&["bench", "nosuch"]);
    assert!(!ok && err.contains("no benchmark \"nosuch\""), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--depth", "9"]);
    assert!(
        !ok && err.contains("--depth") && err.contains("none of the selected"),
        "{err}"
    );
    let (ok, _, err) = numagc(&["bench", "binarytrees", "--depth", "99"]);
    assert!(!ok && err.contains("--depth 99"), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--suite", "huge"]);
    assert!(!ok && err.contains("--suite"), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--numa-policy", "local,everywhere"]);
    assert!(!ok && err.contains("everywhere"), "{err}");
    let (ok, out, _) = numagc(&["bench", "--list"]);
    assert!(
        ok && out.contains("binarytrees") && out.contains("depth=18/21/22"),
        "{out}"
    );
}

#[test]
fn bad_settings_are_refused_with_the_setting_named() {
    let (ok, _, err) = numagc(&["bench", "binarytrees", "--depth", "6", "--local-heap", "3K"]);
    assert!(!ok);
    assert!(err.contains("local-heap") && err.contains("3K"), "{err}");
    let (ok, _, err) = numagc(&["info", "--numa-policy", "everywhere"]);
    assert!(!ok);
    assert!(
        err.contains("numa-policy") && err.contains("everywhere"),
        "{err}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_numagc"))
        .args(["info"])
        .env("NUMAGC_VPROCS", "0")
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("vprocs"));
}

#[test]
fn info_reports_topology_pinning_and_placement() {
    let (ok, out, err) = numagc(&["info", "--topology", "4x1", "--vprocs", "4"]);
    assert!(ok, "{err}");
    assert!(out.contains("synthetic 4x1"), "{out}");
    for v in 0..4 {
        assert!(
            out.contains(&format!("vproc {v:>3}  node {v:>2}")),
            "vproc {v} on node {v}:\n{out}"
        );
    }
    assert!(out.contains("--numa-policy") && out.contains("NUMAGC_NUMA_POLICY"));
    // Nodes 1..3 do not exist on a machine with fewer nodes: their binding is skipped.
    let nodes = std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.filter_map(|e| e.ok())
                .filter(|e| e.file_name().to_string_lossy().starts_with("node"))
                .count()
        })
        .unwrap_or(0);
    if nodes < 4 {
        assert!(out.contains("skipped"), "{out}");
    }
    assert!(out.contains("applied"), "{out}");
    let (ok, out, _) = numagc(&["info", "--json", "--vprocs", "1"]);
    assert!(ok);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["config"]["vprocs"], 1);
}

/// Issue 16, defect 9: `numagc info` speaks words: no `null` for a
/// detected topology, no Rust debug syntax for pinning and placement.
#[test]
fn info_prints_words_not_null_or_debug_syntax() {
    let (ok, out, err) = numagc(&["info", "--vprocs", "1", "--pin=false"]);
    assert!(ok, "{err}");
    for bad in [
        "null",
        "Pinned",
        "Disabled",
        "BindRequest",
        "Applied",
        "Skipped",
        "{ ",
        "Some(",
    ] {
        assert!(!out.contains(bad), "{bad:?} in:\n{out}");
    }
    assert!(
        out.contains("detect"),
        "the topology setting in words:\n{out}"
    );
    assert!(out.contains("not pinned"), "{out}");
    assert!(
        out.contains("--vproc-stack") && out.contains("256 MiB"),
        "{out}"
    );
}

/// Issue 16, defect 9: a topology that maps an OS CPU twice says so, in
/// `numagc info` and on standard error, and so do vprocs sharing a CPU.
#[test]
fn info_says_when_cpus_are_shared() {
    let (ok, out, err) = numagc(&[
        "info",
        "--topology",
        "64x1",
        "--vprocs",
        "8",
        "--local-heap",
        "256K",
        "--pin=false",
    ]);
    assert!(ok, "{err}");
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus < 8 {
        assert!(out.contains("vprocs share"), "{out}");
        assert!(err.contains("vprocs share"), "{err}");
    }
    if cpus < 64 {
        assert!(out.contains("warning") && out.contains("shared"), "{out}");
        assert!(err.contains("warning") && err.contains("shared"), "{err}");
        assert_eq!(
            err.lines().filter(|l| l.contains("topology 64x1")).count(),
            1,
            "said once: {err}"
        );
    }
}

/// Issue 16, defect 9: one rule for every enumerated setting: any case.
#[test]
fn enumerated_flags_take_any_case() {
    let (ok, out, err) = numagc(&[
        "info",
        "--vprocs",
        "1",
        "--task-promotion",
        "EAGER",
        "--plan",
        "SPLIT",
        "--numa-policy",
        "Local",
    ]);
    assert!(ok, "{err}");
    assert!(out.contains("eager"), "{out}");
}

/// Issue 16, defect 8: out-of-range values are refused with the setting,
/// the value and the accepted range named, for flags and variables alike.
#[test]
fn out_of_range_values_name_the_range() {
    for (flag, value, range) in [
        ("--heap-growth", "nan", "1.0 to 100.0"),
        ("--chunk-size", "3", "power of two"),
        ("--survivor-promotion", "1000", "percentage"),
        ("--vproc-stack", "64K", "1 MiB"),
    ] {
        let (ok, _, err) = numagc(&["info", "--vprocs", "1", flag, value]);
        assert!(!ok);
        assert!(
            err.contains(&flag[2..]) && err.contains(value) && err.contains(range),
            "{flag} {value}: {err}"
        );
    }
}

#[test]
fn paper_mode_full_global_collections_give_the_same_answers() {
    // `--young-global-gc=false`: every global collection evacuates every
    // chunk, as in the paper (§3.4); the verifier checks each one.
    let (ok, out, err) = numagc(&[
        "bench",
        "binarytrees",
        "--depth",
        "10",
        "--vprocs",
        "2",
        "--verify",
        "--young-global-gc=false",
        "--local-heap",
        "64K",
        "--chunk-size",
        "64K",
        "--global-gc-threshold",
        "64K",
    ]);
    assert!(ok, "stderr: {err}");
    assert!(
        out.contains("long lived tree of depth 10\t check: 2047"),
        "{out}"
    );
    let total = out
        .lines()
        .find(|l| l.starts_with("total"))
        .expect("total row");
    let global: u64 = total
        .split_whitespace()
        .nth(5)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(global > 0, "global collections ran: {total}");
}

#[test]
fn parfib_answers_and_reports_tasks_under_both_promotion_policies() {
    for policy in ["lazy", "eager"] {
        let (ok, out, err) = numagc(&[
            "bench",
            "parfib",
            "--n",
            "24",
            "--threshold",
            "12",
            "--vprocs",
            "2",
            "--verify",
            "--task-promotion",
            policy,
            "--local-heap",
            "256K",
            "--chunk-size",
            "64K",
            "--global-gc-threshold",
            "1M",
        ]);
        assert!(ok, "{policy}: stderr: {err}");
        assert!(
            out.starts_with("parfib 24 (threshold 12) = 46368\n"),
            "{policy}: output:\n{out}"
        );
        assert!(out.contains("tasks stolen"), "{policy}: output:\n{out}");
    }
    let (ok, _, err) = numagc(&["bench", "parfib", "--task-promotion", "sometimes"]);
    assert!(
        !ok && err.contains("task-promotion") && err.contains("lazy or eager"),
        "stderr: {err}"
    );
}

#[test]
fn pingpong_answers_on_one_and_two_vprocs_with_the_verifier() {
    for vprocs in ["1", "2"] {
        let (ok, out, err) = numagc(&[
            "micro",
            "pingpong",
            "--rounds",
            "3000",
            "--vprocs",
            vprocs,
            "--verify",
            "--local-heap",
            "256K",
            "--chunk-size",
            "64K",
            "--global-gc-threshold",
            "1M",
        ]);
        assert!(ok, "{vprocs} vprocs: stderr: {err}");
        assert!(
            out.contains("counter 6000 (expected 6000)"),
            "{vprocs} vprocs: output:\n{out}"
        );
        // 6001 messages and the final one on `done`; that last rendezvous may
        // be counted by a vproc that publishes its statistics only after
        // the job has returned (statistics are as of each vproc's last
        // publication), so 6001 is also a correct reading.
        assert!(
            out.contains("6002 rendezvous") || out.contains("6001 rendezvous"),
            "{vprocs} vprocs: output:\n{out}"
        );
    }
}

#[test]
fn pe_groups_run_the_pe_benchmarks_on_both_plans_and_refuse_what_they_cannot_run() {
    let dir = std::env::temp_dir().join(format!("numagc-pes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("pes.json");
    let (ok, out, err) = numagc(&[
        "bench",
        "parfib",
        "coins",
        "maze",
        "sumeuler",
        "worpitzky",
        "mandelbrot",
        "blackscholes",
        "--suite",
        "quick",
        "--pes",
        "1,2",
        "--vprocs",
        "1",
        "--plan",
        "split,shared",
        "--verify",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    for plan in ["split/1pe", "split/2pe", "shared/1pe", "shared/2pe"] {
        for bench in [
            "parfib",
            "coins",
            "maze",
            "sumeuler",
            "worpitzky",
            "mandelbrot",
            "blackscholes",
        ] {
            let row = out
                .lines()
                .find(|l| l.starts_with(bench) && l.contains(&format!(" {plan} ")))
                .unwrap_or_else(|| panic!("no {bench} {plan} row:\n{out}"));
            assert!(row.trim_end().ends_with("ok"), "{row}");
        }
    }
    // The JSON carries each PE's traffic; what PE 0 exported, the others
    // imported.
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let runs = j["runs"].as_array().unwrap();
    let two: Vec<&serde_json::Value> = runs.iter().filter(|r| r["pes"] == 2).collect();
    assert_eq!(two.len(), 14, "{runs:?}");
    for r in two {
        let pes = r["pe_stats"].as_array().unwrap();
        assert_eq!(pes.len(), 2);
        let total = |k: &str| pes.iter().map(|p| p[k].as_u64().unwrap()).sum::<u64>();
        assert_eq!(total("tasks_exported"), total("tasks_imported"), "{r}");
        assert_eq!(total("refused_messages"), 0);
        if r["benchmark"] == "blackscholes" {
            // Its tasks really travel, and their results come back rather
            // than being declined (a declined task's answer is a short
            // message; a result holds at least one chunk's price object of
            // 128 prices and its sum, over 1 KB).
            let pe1 = &pes[1];
            let imported = pe1["tasks_imported"].as_u64().unwrap();
            assert!(imported > 0, "no blackscholes task went to PE 1: {r}");
            assert!(
                pe1["bytes_sent"].as_u64().unwrap() >= imported * 130 * 8,
                "PE 1 sent back less than a chunk's prices per task: {r}"
            );
        }
    }

    // The timeline has a process per PE of a group, each with its spans.
    let trace = dir.join("pes-trace.json");
    let (ok, _, err) = numagc(&[
        "bench",
        "parfib",
        "--suite",
        "quick",
        "--pes",
        "2",
        "--vprocs",
        "1",
        "--quiet",
        "--trace",
        trace.to_str().unwrap(),
    ]);
    assert!(ok, "stderr: {err}");
    let t: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    let events = t
        .as_array()
        .or_else(|| t["traceEvents"].as_array())
        .unwrap();
    for pe in [0, 1] {
        let pid = events
            .iter()
            .find(|e| {
                e["name"] == "process_name"
                    && e["args"]["name"]
                        .as_str()
                        .unwrap()
                        .ends_with(&format!(" PE {pe}"))
            })
            .unwrap_or_else(|| panic!("no process of PE {pe} in the trace"))["pid"]
            .clone();
        assert!(
            events.iter().any(|e| e["pid"] == pid && e["ph"] == "X"),
            "PE {pe} has no spans"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);

    let (ok, _, err) = numagc(&["bench", "binarytrees", "--pes", "2"]);
    assert!(!ok && err.contains("no PE version of binarytrees"), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--pes", "0"]);
    assert!(!ok && err.contains("--pes 0"), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--pes", "2", "--api", "compiled"]);
    assert!(!ok && err.contains("safe programs only"), "{err}");
}

#[test]
fn cores_holds_the_total_vprocs_fixed_across_the_pe_counts() {
    // Table 2's configurations: --pes 1,2,4 --cores 4 runs 1 x 4, 2 x 2
    // and 4 x 1, and nothing else.
    let (ok, out, err) = numagc(&[
        "bench", "parfib", "--suite", "quick", "--pes", "1,2,4", "--cores", "4", "--quiet",
    ]);
    assert!(ok, "stderr: {err}");
    let rows: Vec<(String, String)> = out
        .lines()
        .filter(|l| l.starts_with("parfib "))
        .map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f[1].to_string(), f[3].to_string())
        })
        .collect();
    let plan = rows
        .first()
        .map(|r| r.0.split('/').next().unwrap().to_string());
    let plan = plan.unwrap_or_else(|| panic!("no rows:\n{out}"));
    let expected: Vec<(String, String)> = [(1, 4), (2, 2), (4, 1)]
        .iter()
        .map(|(p, v)| (format!("{plan}/{p}pe"), v.to_string()))
        .collect();
    assert_eq!(rows, expected, "{out}");
    assert!(
        out.lines()
            .filter(|l| l.starts_with("parfib "))
            .all(|l| l.trim_end().ends_with("ok")),
        "{out}"
    );

    let (ok, _, err) = numagc(&["bench", "parfib", "--pes", "2,3", "--cores", "4"]);
    assert!(!ok && err.contains("--cores 4 --pes 3"), "{err}");
    let (ok, _, err) = numagc(&["bench", "parfib", "--cores", "4"]);
    assert!(!ok && err.contains("give --pes"), "{err}");
    let (ok, _, err) = numagc(&[
        "bench", "parfib", "--pes", "2", "--cores", "4", "--vprocs", "2",
    ]);
    assert!(!ok && err.contains("--vprocs"), "{err}");
}

#[test]
fn an_unknown_transport_is_refused_and_mpi_needs_a_build_with_mpi() {
    let (ok, _, err) = numagc(&["bench", "parfib", "--transport", "tcp", "--suite", "quick"]);
    assert!(!ok);
    assert!(
        err.contains("--transport \"tcp\": inprocess or mpi"),
        "{err}"
    );
    // This binary is built without the `mpi` feature (tests/mpi.rs runs
    // the one built with it).
    #[cfg(not(feature = "mpi"))]
    {
        let (ok, _, err) = numagc(&["bench", "parfib", "--transport", "mpi", "--suite", "quick"]);
        assert!(!ok);
        assert!(
            err.contains("built without MPI") && err.contains("--features mpi"),
            "{err}"
        );
    }
}

#[test]
fn micro_copy_checks_its_tree_and_bytes_on_one_and_two_vprocs() {
    for vprocs in ["1", "2"] {
        let (ok, out, err) = numagc(&[
            "micro", "copy", "--depth", "14", "--repeat", "2", "--vprocs", vprocs, "--verify",
        ]);
        assert!(ok, "{vprocs} vprocs: stderr: {err}");
        assert!(
            out.contains("16383 nodes") && out.contains("answer ok"),
            "{vprocs} vprocs: output:\n{out}"
        );
    }
    let (ok, _, err) = numagc(&["micro", "copy", "--plan", "shared"]);
    assert!(!ok && err.contains("split plan"), "stderr: {err}");
    let (ok, _, err) = numagc(&["micro", "copy", "--depth", "40"]);
    assert!(!ok && err.contains("--depth 40"), "stderr: {err}");
}
