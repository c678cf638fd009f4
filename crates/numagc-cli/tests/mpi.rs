//! PE groups over MPI (`numagc bench --transport mpi`, issue 19), run as a
//! user runs them: `mpirun -n 2` on this host (`--oversubscribe`: two
//! ranks may share fewer cores; `--allow-run-as-root`: CI runs as root).
//! Built only with the `mpi` feature (`scripts/test.sh` runs it); where
//! `mpirun` is missing each test says it is skipped.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One job at a time: the jobs of these tests share this machine's cores
/// (each test holds it from its check for `mpirun` on).
static ONE_JOB: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_job() -> std::sync::MutexGuard<'static, ()> {
    ONE_JOB.lock().unwrap_or_else(|e| e.into_inner())
}

fn have_mpirun() -> bool {
    let found = Command::new("mpirun")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !found {
        eprintln!("skipped: no mpirun (scripts/install-deps.sh installs Open MPI)");
    }
    found
}

fn mpirun(ranks: usize, args: &[&str]) -> Command {
    let mut c = Command::new("mpirun");
    c.args([
        "--allow-run-as-root",
        "--oversubscribe",
        "-n",
        &ranks.to_string(),
        env!("CARGO_BIN_EXE_numagc"),
    ])
    .args(args)
    .env_remove("NUMAGC_VPROCS");
    c
}

fn output(mut c: Command) -> (bool, String, String) {
    let out = c.output().expect("run mpirun");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn the_pe_benchmarks_run_over_mpi_on_both_plans() {
    let _job = one_job();
    if !have_mpirun() {
        return;
    }
    let benches = [
        "parfib",
        "coins",
        "maze",
        "sumeuler",
        "worpitzky",
        "mandelbrot",
        "blackscholes",
    ];
    let mut args = vec!["bench"];
    args.extend(benches);
    args.extend([
        "--transport",
        "mpi",
        "--suite",
        "quick",
        "--vprocs",
        "1,2",
        "--plan",
        "split,shared",
        "--verify",
        "--quiet",
        "--stats",
    ]);
    let (ok, out, err) = output(mpirun(2, &args));
    assert!(ok, "stdout:\n{out}\nstderr:\n{err}");
    for plan in ["split/2pe", "shared/2pe"] {
        for bench in benches {
            for vprocs in [1, 2] {
                let row = out
                    .lines()
                    .find(|l| {
                        let w: Vec<&str> = l.split_whitespace().collect();
                        w.len() > 4 && w[0] == bench && w[1] == plan && w[3] == vprocs.to_string()
                    })
                    .unwrap_or_else(|| panic!("no {bench} {plan} x{vprocs} row:\n{out}"));
                assert!(row.trim_end().ends_with("ok"), "{row}");
            }
        }
    }
    // Work went over MPI: PE 0 gave tasks to PE 1 (its traffic lines).
    let exported: u64 = out
        .lines()
        .filter(|l| l.starts_with("PE 0:"))
        .filter_map(|l| l.split("tasks exported ").nth(1))
        .filter_map(|t| t.split(',').next()?.trim().parse::<u64>().ok())
        .sum();
    assert!(exported > 0, "no task went to PE 1:\n{out}");
    // Rank 0 reports rank 1's figures too (sent when it stops serving).
    let imported: u64 = out
        .lines()
        .filter(|l| l.starts_with("PE 1:"))
        .filter_map(|l| l.split("imported ").nth(1))
        .filter_map(|t| t.split(';').next()?.trim().parse::<u64>().ok())
        .sum();
    assert_eq!(imported, exported, "PE 1's figures:\n{out}");
}

#[test]
fn a_pe_count_other_than_the_number_of_ranks_is_refused_at_start() {
    let _job = one_job();
    if !have_mpirun() {
        return;
    }
    let (ok, out, err) = output(mpirun(
        2,
        &[
            "bench",
            "parfib",
            "--transport",
            "mpi",
            "--pes",
            "3",
            "--suite",
            "quick",
        ],
    ));
    assert!(!ok, "stdout:\n{out}");
    assert!(
        err.contains("--pes 3 with --transport mpi: one PE per MPI rank, and the job has 2 ranks"),
        "stderr:\n{err}"
    );
}

/// The process of MPI rank `rank` started by `mpirun` (a child of it).
fn rank_pid(mpirun: &Child, rank: usize) -> Option<u32> {
    let want = format!("OMPI_COMM_WORLD_RANK={rank}");
    for e in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // The parent is the 4th field, after the parenthesised name.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        if ppid != Some(mpirun.id()) {
            continue;
        }
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
            return Some(pid);
        }
    }
    None
}

/// Starts a long job of 2 ranks, sends `signal` to rank 1 once it runs,
/// and returns (seconds from the signal to the end of the job, whether
/// it succeeded, its standard error).
fn signal_rank_1(signal: &str) -> (f64, bool, String) {
    let mut c = mpirun(
        2,
        &[
            "bench",
            "parfib",
            "--transport",
            "mpi",
            "--vprocs",
            "1",
            "--repeat",
            "200",
            "--quiet",
        ],
    );
    let mut child = c
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start mpirun");
    let t0 = Instant::now();
    let pid = loop {
        if let Some(p) = rank_pid(&child, 1) {
            break p;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "rank 1 never started"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    // Let the job get under way: groups made, work moving.
    std::thread::sleep(Duration::from_secs(2));
    let sent = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status()
        .expect("run kill");
    assert!(sent.success(), "kill -{signal} {pid}");
    let t1 = Instant::now();
    let deadline = Duration::from_secs(60);
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for mpirun") {
            break s;
        }
        if t1.elapsed() > deadline {
            let _ = Command::new("kill")
                .args(["-KILL", &pid.to_string()])
                .status();
            let _ = child.kill();
            let _ = child.wait();
            panic!("the job did not end within {deadline:?} of kill -{signal} on rank 1");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    (t1.elapsed().as_secs_f64(), status.success(), err)
}

#[test]
fn a_killed_rank_ends_the_job_with_an_error() {
    let _job = one_job();
    if !have_mpirun() {
        return;
    }
    let (secs, ok, err) = signal_rank_1("KILL");
    assert!(!ok, "the job succeeded without rank 1:\n{err}");
    assert!(err.contains("rank 1"), "stderr names the rank:\n{err}");
    eprintln!("job ended {secs:.1} s after rank 1 was killed");
}

#[test]
fn a_rank_that_stops_answering_is_lost_and_the_job_ends_with_an_error() {
    let _job = one_job();
    if !have_mpirun() {
        return;
    }
    // SIGSTOP: rank 1 lives but answers nothing; rank 0 finds it silent
    // after numagc::pe::mpi::PEER_TIMEOUT (10 s) and ends the job, or,
    // stopped between two groups, fails to come to the next within
    // JOIN_TIMEOUT (30 s).
    let (secs, ok, err) = signal_rank_1("STOP");
    assert!(!ok, "the job succeeded without rank 1:\n{err}");
    assert!(
        err.contains("MPI rank(s) [1] lost"),
        "stderr says rank 1 was lost:\n{err}"
    );
    eprintln!("job ended {secs:.1} s after rank 1 was stopped");
}

#[test]
fn a_pe_reads_another_pes_object_over_mpi_and_every_weight_comes_back() {
    let _job = one_job();
    if !have_mpirun() {
        return;
    }
    // `micro fetch` checks every copy's bytes and, at the end, that both
    // PEs' weight books are empty; a small run of it, on each plan, is the
    // test.
    for plan in ["split", "shared"] {
        let mut c = mpirun(
            2,
            &[
                "micro",
                "fetch",
                "--bytes",
                "64,65536",
                "--rounds",
                "20",
                "--repeat",
                "1",
                "--concurrent",
            ],
        );
        c.env("NUMAGC_PLAN", plan);
        let (ok, out, err) = output(c);
        assert!(ok, "{plan}: stdout:\n{out}\nstderr:\n{err}");
        assert!(out.contains("answers ok"), "{plan}: {out}");
        assert!(out.contains("concurrent: 2 readers"), "{plan}: {out}");
        assert_eq!(
            out.lines()
                .filter(|l| l.trim_start().starts_with("65536"))
                .count(),
            1,
            "{plan}: {out}"
        );
    }
}
