//! `numagc torture`: random mutator programs against a shadow model, with
//! forced collections and the heap verifier (issue 5, part 1; the workload,
//! the shadow and the checks are in the `numagc-torture` crate).
//!
//! The command runs rounds until `--seconds` have passed (or `--rounds`
//! rounds ran): each round a fresh runtime with settings drawn from the
//! round's seed, one random program, every collection verified and every
//! forced collection checked against the shadow. It prints collections by
//! kind (the runtime's statistics), what the programs forced, the sharing
//! the rounds exercised (stolen tasks and threads, rendezvous, promotion),
//! what the compiled sections ran (operations on the compiled-code
//! interface, `numagc::compiled`), the objects and bytes checked, and the
//! violations. It exits non-zero at
//! the first violation and prints the round's seed, the operation, and the
//! command that replays the round.
//!
//! The heap verifier aborts the process on a broken invariant (a collector
//! bug must not unwind out of a collection that other vprocs wait in), so the
//! rounds run in a child process, this same binary with the hidden
//! `--worker` flag. The child reports each round and operation on its
//! standard output (lines starting with `@`); the parent sums the rounds and
//! reports a child that died (the verifier's abort, a crash) or stopped
//! making progress for `--stall-timeout` seconds (a deadlock: the parent
//! kills it) as a violation, with the seed and the operation it was at.

use numagc_torture::interp::{FailureKind, Fault, FaultKind};
use numagc_torture::round::{self, RoundPlan, RuntimeCounts};
use numagc_torture::Report;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

#[derive(clap::Args, Clone, Debug)]
pub struct TortureArgs {
    /// Run rounds for this many seconds (a round started before the end finishes).
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Stop after this many rounds, if that comes first.
    #[arg(long)]
    rounds: Option<u64>,
    /// Vprocs of each round's runtime (1 ..= 1024).
    #[arg(long, default_value_t = 2)]
    vprocs: usize,
    /// Seed of the first round (the next rounds use seed+1, seed+2, ...); decimal or 0x hex. Default: from the clock, printed.
    #[arg(long, value_parser = parse_seed)]
    seed: Option<u64>,
    /// Collector plan of the runtimes: split (or split-heap), shared (or shared-heap).
    #[arg(long, default_value = "split")]
    plan: String,
    /// Force a collection after every N-th allocation (1: the harshest; 0: never). Default: drawn per round from 1, 3, 10, 50, 300, 2000 and never.
    #[arg(long)]
    gc_every: Option<u32>,
    /// Hybrid mode (issue 19): rounds on a group of this many PEs in one process (1 vproc each; 2 ..= 16), objects and references moving between them, the weight books checked at the end. 1: the ordinary rounds.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=16))]
    pes: u64,
    /// Report a hang, and stop, when a round makes no progress for this many seconds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..))]
    stall_timeout: u64,
    /// Print a line per round.
    #[arg(long)]
    verbose: bool,
    /// Print each round's program, an operation per line (with --seed S --rounds 1: the program of round S).
    #[arg(long)]
    show_program: bool,
    /// Run the rounds in this process and report them on standard output (used by the parent).
    #[arg(long, hide = true)]
    worker: bool,
    /// Inject a fault into the first round, KIND[@OP] (heap-store, shadow-raw, duplicate, abort, hang, compiled-store): for the tests.
    #[arg(long, hide = true)]
    fault: Option<String>,
}

fn parse_seed(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => t.parse(),
    };
    r.map_err(|_| format!("`{s}` is not a seed: a 64-bit number, decimal or 0x hex"))
}

fn parse_fault(s: &str) -> Result<Fault, String> {
    let (kind, at) = s.split_once('@').unwrap_or((s, "0"));
    let names: Vec<&str> = FaultKind::ALL.iter().map(|(n, _)| *n).collect();
    let kind = FaultKind::parse(kind)
        .ok_or_else(|| format!("unknown fault `{kind}` (known: {})", names.join(", ")))?;
    let at = at
        .parse()
        .map_err(|_| format!("fault position `{at}` is not an operation index"))?;
    Ok(Fault { kind, at })
}

pub fn run(args: TortureArgs) -> Result<(), String> {
    if args.seconds == 0 && args.rounds.is_none() {
        return Err("--seconds must be at least 1 (or give --rounds)".into());
    }
    if args.rounds == Some(0) {
        return Err("--rounds must be at least 1".into());
    }
    let fault = args.fault.as_deref().map(parse_fault).transpose()?;
    if fault.is_some() && args.pes > 1 {
        return Err("--fault injects into the ordinary rounds, not the hybrid mode (--pes)".into());
    }
    let seed = args.seed.unwrap_or_else(clock_seed);
    // Refuse bad settings (vprocs, plan) here, with the library's message.
    RoundPlan::new(seed, args.vprocs, &args.plan, args.gc_every)?;
    if args.worker {
        return worker(&args, seed, fault);
    }
    parent(&args, seed)
}

fn clock_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_secs() << 20 ^ t.subsec_micros() as u64) & 0xFFFF_FFFF_FFFF
}

// ---- the worker: runs rounds, reports on stdout --------------------------------------------

fn worker(args: &TortureArgs, seed: u64, fault: Option<Fault>) -> Result<(), String> {
    let start = Instant::now();
    let mut n = 0u64;
    while args.rounds.is_none_or(|r| n < r) && (n == 0 || start.elapsed().as_secs() < args.seconds)
    {
        let round_seed = seed.wrapping_add(n);
        if args.pes > 1 {
            hybrid_round(args, n, round_seed)?;
            n += 1;
            continue;
        }
        let plan = RoundPlan::new(round_seed, args.vprocs, &args.plan, args.gc_every)?;
        println!(
            "@round {n} {round_seed} {} {}",
            plan.gc_every,
            plan.describe()
        );
        if args.show_program {
            for (i, op) in plan.program.iter().enumerate() {
                match op {
                    // A compiled section: an operation per line.
                    numagc_torture::Op::Compiled(cops) => {
                        println!("op {i}: Compiled ({} operations)", cops.len());
                        for (k, c) in cops.iter().enumerate() {
                            println!("    compiled op {k}: {c:?}");
                        }
                    }
                    _ => println!("op {i}: {op:?}"),
                }
            }
        }
        let progress: Arc<dyn Fn(usize) + Send + Sync> = Arc::new(|i| println!("@op {i}"));
        let deadline = start + Duration::from_secs(args.seconds);
        let r = round::run(
            &plan,
            if n == 0 { fault } else { None },
            Some(progress),
            Some(deadline),
        );
        println!("@done {}", encode(&r.report, &r.counts));
        if r.failure.is_none() {
            println!("@pass");
        }
        if let Some(f) = r.failure {
            let kind = match f.kind {
                FailureKind::Violation => "violation",
                FailureKind::Runtime => "runtime-error",
                FailureKind::Panic => "panic",
            };
            println!("@fail {kind} {} {}", f.op, f.what.replace('\n', " | "));
            std::io::stdout().flush().ok();
            std::process::exit(1);
        }
        n += 1;
    }
    println!("@end");
    Ok(())
}

/// A round of the hybrid mode, reported as the worker reports rounds.
fn hybrid_round(args: &TortureArgs, n: u64, round_seed: u64) -> Result<(), String> {
    let plan = numagc_torture::hybrid::HybridPlan::new(round_seed, args.pes as usize, &args.plan)?;
    println!(
        "@round {n} {round_seed} 0 hybrid: {} PEs, packet limit {} words, {} ops",
        plan.pes,
        plan.packet_limit,
        plan.program.len()
    );
    if args.show_program {
        for (i, op) in plan.program.iter().enumerate() {
            println!("op {i}: {op:?}");
        }
    }
    let r = numagc_torture::hybrid::run(&plan);
    println!("@done ops={} checks={}", r.ops_run, r.reads_checked);
    match r.failure {
        None => {
            println!("@pass");
            Ok(())
        }
        Some(f) => {
            println!(
                "@fail violation {} {}",
                r.ops_run.saturating_sub(1),
                f.replace('\n', " | ")
            );
            std::io::stdout().flush().ok();
            std::process::exit(1);
        }
    }
}

const FIELDS: [&str; 30] = [
    "ops",
    "checks",
    "objects",
    "bytes",
    "fminor",
    "fmajor",
    "fglobal",
    "fyoung",
    "fcompact",
    "promotions",
    "minor",
    "major",
    "promotion",
    "global",
    "full",
    "stolen",
    "tstolen",
    "rendezvous",
    "promoted",
    "csections",
    "cops",
    "callocs",
    "cshared",
    "cstores",
    "creads",
    "cforks",
    "cpolls",
    "cregs",
    "cregstores",
    "cstackret",
];

fn encode(r: &Report, c: &RuntimeCounts) -> String {
    let v = [
        r.ops,
        r.checks,
        r.objects_checked,
        r.bytes_checked,
        r.forced_minor,
        r.forced_major,
        r.forced_global,
        r.forced_young,
        r.forced_compact,
        r.promotions,
        c.minor,
        c.major,
        c.promotion,
        c.global,
        c.full_global,
        c.tasks_stolen,
        c.threads_stolen,
        c.rendezvous,
        c.bytes_promoted,
        r.compiled_sections,
        r.compiled_ops,
        r.compiled_allocs,
        r.compiled_shared_allocs,
        r.compiled_stores,
        r.compiled_reads,
        r.compiled_forks,
        r.compiled_polls,
        r.compiled_register_allocs,
        r.compiled_register_stores,
        r.compiled_stack_returns,
    ];
    FIELDS
        .iter()
        .zip(v)
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn decode(s: &str, r: &mut Report, c: &mut RuntimeCounts) {
    let m: HashMap<&str, u64> = s
        .split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .filter_map(|(k, v)| Some((k, v.parse().ok()?)))
        .collect();
    let g = |k: &str| m.get(k).copied().unwrap_or(0);
    r.ops += g("ops");
    r.checks += g("checks");
    r.objects_checked += g("objects");
    r.bytes_checked += g("bytes");
    r.forced_minor += g("fminor");
    r.forced_major += g("fmajor");
    r.forced_global += g("fglobal");
    r.forced_young += g("fyoung");
    r.forced_compact += g("fcompact");
    r.promotions += g("promotions");
    r.compiled_sections += g("csections");
    r.compiled_ops += g("cops");
    r.compiled_allocs += g("callocs");
    r.compiled_shared_allocs += g("cshared");
    r.compiled_stores += g("cstores");
    r.compiled_reads += g("creads");
    r.compiled_forks += g("cforks");
    r.compiled_polls += g("cpolls");
    r.compiled_register_allocs += g("cregs");
    r.compiled_register_stores += g("cregstores");
    r.compiled_stack_returns += g("cstackret");
    c.add(&RuntimeCounts {
        minor: g("minor"),
        major: g("major"),
        promotion: g("promotion"),
        global: g("global"),
        full_global: g("full"),
        tasks_stolen: g("stolen"),
        threads_stolen: g("tstolen"),
        rendezvous: g("rendezvous"),
        bytes_promoted: g("promoted"),
    });
}

// ---- the parent: runs the worker, watches it, reports -------------------------------------

/// Where the worker is.
#[derive(Default)]
struct Position {
    round: u64,
    seed: u64,
    gc_every: u32,
    desc: String,
    op: Option<usize>,
}

enum Event {
    Line(String),
    Eof,
}

fn parent(args: &TortureArgs, seed: u64) -> Result<(), String> {
    let exe = std::env::current_exe()
        .map_err(|e| format!("cannot find the numagc binary to run the worker: {e}"))?;
    let mut cmd = Command::new(exe);
    cmd.args([
        "torture",
        "--worker",
        "--seconds",
        &args.seconds.to_string(),
        "--vprocs",
        &args.vprocs.to_string(),
    ]);
    cmd.args(["--seed", &seed.to_string(), "--plan", &args.plan]);
    cmd.args(["--pes", &args.pes.to_string()]);
    if let Some(r) = args.rounds {
        cmd.args(["--rounds", &r.to_string()]);
    }
    if let Some(g) = args.gc_every {
        cmd.args(["--gc-every", &g.to_string()]);
    }
    if let Some(f) = &args.fault {
        cmd.args(["--fault", f]);
    }
    if args.show_program {
        cmd.arg("--show-program");
    }
    let mut child = cmd
        .stdout(Stdio::piped())
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start the worker: {e}"))?;
    let stdout = child
        .stdout
        .take()
        .ok_or("the worker has no standard output")?;
    let (tx, rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            match line {
                Ok(l) => {
                    if tx.send(Event::Line(l)).is_err() {
                        return;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = tx.send(Event::Eof);
    });

    let every = args
        .gc_every
        .map_or("drawn per round".to_string(), |n| n.to_string());
    println!(
        "numagc torture: {} s on {}, plan {}, first seed {seed}, {}, verifier on",
        args.seconds,
        if args.pes > 1 {
            format!("{} PEs of 1 vproc (hybrid mode)", args.pes)
        } else {
            format!("{} vproc(s)", args.vprocs)
        },
        args.plan,
        if args.pes > 1 {
            "packet limit drawn per round".to_string()
        } else {
            format!("gc-every {every}")
        }
    );
    let t0 = Instant::now();
    let (mut report, mut counts) = (Report::default(), RuntimeCounts::default());
    let mut pos = Position::default();
    let (mut rounds, mut passed) = (0u64, 0u64);
    let mut violation: Option<String> = None;
    let mut ended = false;
    let mut round_start = Instant::now();
    let stall = Duration::from_secs(args.stall_timeout);
    loop {
        match rx.recv_timeout(stall) {
            Ok(Event::Line(l)) => {
                if let Some(rest) = l.strip_prefix("@op ") {
                    pos.op = rest.trim().parse().ok();
                } else if let Some(rest) = l.strip_prefix("@round ") {
                    let mut it = rest.splitn(4, ' ');
                    pos.round = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    pos.seed = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    pos.gc_every = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
                    pos.desc = it.next().unwrap_or("").to_string();
                    pos.op = None;
                    round_start = Instant::now();
                } else if let Some(rest) = l.strip_prefix("@done ") {
                    decode(rest, &mut report, &mut counts);
                    rounds += 1;
                } else if l == "@pass" {
                    passed += 1;
                    if args.verbose {
                        let secs = round_start.elapsed().as_secs_f64();
                        println!(
                            "round {} (seed {}): {}: ok in {secs:.2} s",
                            pos.round, pos.seed, pos.desc
                        );
                    }
                } else if let Some(rest) = l.strip_prefix("@fail ") {
                    let mut it = rest.splitn(3, ' ');
                    let (kind, op, what) = (
                        it.next().unwrap_or(""),
                        it.next().unwrap_or("?"),
                        it.next().unwrap_or(""),
                    );
                    pos.op = op.parse().ok();
                    violation = Some(format!("({kind}) {what}"));
                } else if l == "@end" {
                    ended = true;
                } else {
                    println!("{l}");
                }
            }
            Ok(Event::Eof) | Err(mpsc::RecvTimeoutError::Disconnected) => break,
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let _ = child.kill();
                violation = Some(format!("(hang) no progress for {} s (a deadlock or a livelock?): the worker was killed", args.stall_timeout));
                break;
            }
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the worker: {e}"))?;
    let _ = reader.join();
    if violation.is_none() && (!status.success() || !ended) {
        violation = Some(format!("(crash) the worker died: {} (the heap verifier aborts on a broken invariant; its report is above)", describe(status)));
    }

    let elapsed = t0.elapsed().as_secs_f64();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    println!(
        "rounds: {rounds} run, {passed} passed, in {elapsed:.1} s; {} operations",
        report.ops
    );
    if args.pes > 1 {
        println!(
            "checked: {} reads against the shadow; every round's weight books settled empty",
            report.checks
        );
    }
    if args.pes == 1 {
        println!(
            "collections: minor {}, major {}, promotion {}, global {} (full {})",
            counts.minor, counts.major, counts.promotion, counts.global, counts.full_global
        );
        println!(
        "forced by the programs: minor {}, major {}, young global {}, full global {}, compactions {}; promotions {}",
        report.forced_minor, report.forced_major, report.forced_young, report.forced_global, report.forced_compact, report.promotions
    );
        println!(
            "sharing: {} tasks stolen, {} threads stolen, {} rendezvous, {:.1} MiB promoted",
            counts.tasks_stolen,
            counts.threads_stolen,
            counts.rendezvous,
            mib(counts.bytes_promoted)
        );
        println!(
        "compiled ops: {} in {} sections; {} inline allocations ({} of them by register code), {} shared, {} barrier stores ({} by register code), {} reads, {} par2 forks, {} polls; {} trees by code returning through the shadow stack",
        report.compiled_ops,
        report.compiled_sections,
        report.compiled_allocs,
        report.compiled_register_allocs,
        report.compiled_shared_allocs,
        report.compiled_stores,
        report.compiled_register_stores,
        report.compiled_reads,
        report.compiled_forks,
        report.compiled_polls,
        report.compiled_stack_returns
    );
        println!(
            "checked: {} objects, {:.1} MiB, in {} digests",
            report.objects_checked,
            mib(report.bytes_checked),
            report.checks
        );
    }
    match violation {
        None => {
            println!("violations: 0");
            Ok(())
        }
        Some(v) => {
            println!("violations: 1");
            let op = pos
                .op
                .map_or("before the first operation".to_string(), |o| {
                    format!("op {o}")
                });
            println!(
                "VIOLATION in round {} (seed {}), {op} {v}",
                pos.round, pos.seed
            );
            if !pos.desc.is_empty() {
                println!("round settings: {}", pos.desc);
            }
            let mut gc = args
                .gc_every
                .map_or(String::new(), |g| format!(" --gc-every {g}"));
            if args.pes > 1 {
                gc.push_str(&format!(" --pes {}", args.pes));
            }
            println!(
                "reproduce: numagc torture --seed {} --rounds 1 --vprocs {} --plan {}{gc}",
                pos.seed, args.vprocs, args.plan
            );
            Err(format!(
                "torture: a violation in round {} (seed {})",
                pos.round, pos.seed
            ))
        }
    }
}

fn describe(status: ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(sig) = status.signal() {
            let name = match sig {
                6 => " (SIGABRT)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                7 => " (SIGBUS)",
                _ => "",
            };
            return format!("killed by signal {sig}{name}");
        }
    }
    status.to_string()
}
