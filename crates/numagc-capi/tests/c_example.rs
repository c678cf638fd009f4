//! Builds `examples/c/trees.c`, `examples/c/channels.c`,
//! `examples/c/bad_input.c`, `examples/c/blocking.c`, `examples/c/pe.c`
//! (and the program of
//! `docs/c-api.md`) with the
//! system C compiler against `libnumagc.a` (and `libnumagc.so`), runs them,
//! runs them again built with AddressSanitizer and UndefinedBehaviorSanitizer
//! when the compiler has their runtimes, and under valgrind's memcheck when
//! valgrind is installed (`scripts/install-deps.sh` installs both).
//!
//! `cargo test` does not build a crate's staticlib or cdylib for its
//! integration tests, so the test asks cargo for them (same target
//! directory and profile, so this is a no-op after the first time).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

fn show(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The paths of `libnumagc.a` and `libnumagc.so`, built by cargo now.
fn build_libraries() -> (PathBuf, PathBuf) {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    // The profile of this test binary: target/<dir>/deps/<test>.
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe
        .parent()
        .and_then(|d| d.parent())
        .and_then(|d| d.file_name())
        .unwrap();
    let profile = if profile_dir == "release" {
        "release"
    } else {
        "test"
    };
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let o = Command::new(cargo)
        .args([
            "build",
            "--lib",
            "--message-format=json",
            "--profile",
            profile,
            "--manifest-path",
        ])
        .arg(&manifest)
        .output()
        .expect("running cargo");
    assert!(
        o.status.success(),
        "cargo build of libnumagc failed:\n{}",
        show(&o)
    );
    let (mut a, mut so) = (None, None);
    for line in String::from_utf8_lossy(&o.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        if msg["reason"] != "compiler-artifact" || msg["target"]["name"] != "numagc" {
            continue;
        }
        if !msg["package_id"]
            .as_str()
            .unwrap_or("")
            .contains("numagc-capi")
        {
            continue;
        }
        for f in msg["filenames"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|f| f.as_str())
        {
            if f.ends_with("libnumagc.a") {
                a = Some(PathBuf::from(f));
            } else if f.ends_with("libnumagc.so") {
                so = Some(PathBuf::from(f));
            }
        }
    }
    (
        a.expect("cargo reported libnumagc.a"),
        so.expect("cargo reported libnumagc.so"),
    )
}

/// Compiles `examples/c/<example>.c` against the library in `lib_dir`
/// (`-lnumagc`).
fn compile(example: &str, lib_dir: &Path, out: &Path, extra: &[&str]) {
    let root = repo_root();
    let o = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-pedantic", "-g"])
        .arg("-I")
        .arg(root.join("include"))
        .arg(root.join(format!("examples/c/{example}.c")))
        .arg("-L")
        .arg(lib_dir)
        .args(extra)
        .args(["-lnumagc", "-lpthread", "-ldl", "-lm", "-o"])
        .arg(out)
        .output()
        .expect("running cc (a C compiler is required)");
    assert!(o.status.success(), "cc failed:\n{}", show(&o));
}

/// The checks on a run of an example: exit 0 with "`name`: all checks
/// passed", each misuse code reported, and each of `texts` printed.
fn check_example_run(o: &Output, what: &str, name: &str, codes: &[&str], texts: &[&str]) {
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && stdout.contains(&format!("{name}: all checks passed")),
        "{what}:\n{}",
        show(o)
    );
    for code in codes {
        assert!(
            stdout.contains(&format!("misuse: {code}")),
            "{what}: no {code} case:\n{}",
            show(o)
        );
    }
    for text in texts {
        assert!(stdout.contains(text), "{what}: no \"{text}\":\n{}", show(o));
    }
}

fn check_run(o: &Output, what: &str) {
    let codes = [
        "NUMAGC_ERR_NULL_ARGUMENT",
        "NUMAGC_ERR_NOT_ON_VPROC",
        "NUMAGC_ERR_UNBALANCED_FRAME",
        "NUMAGC_ERR_UNKNOWN_DESCRIPTOR",
        "NUMAGC_ERR_INVALID_CONFIG",
        "NUMAGC_ERR_HEAP_LIMIT",
        "NUMAGC_ERR_BAD_VALUE",
        "NUMAGC_ERR_MISUSE",
    ];
    check_example_run(
        o,
        what,
        "trees",
        &codes,
        &[
            "is not live: its callback has returned",
            "used from another thread",
        ],
    );
}

fn check_channels_run(o: &Output, what: &str) {
    let codes = [
        "NUMAGC_ERR_NULL_ARGUMENT",
        "NUMAGC_ERR_NOT_ON_VPROC",
        "NUMAGC_ERR_UNBALANCED_FRAME",
        "NUMAGC_ERR_UNKNOWN_DESCRIPTOR",
        "NUMAGC_ERR_BAD_VALUE",
        "NUMAGC_ERR_MISUSE",
    ];
    let texts = [
        "with nested par2",
        "from a producer thread",
        "in order",
        "through 9 forced collections",
        "belongs to another runtime",
    ];
    check_example_run(o, what, "channels", &codes, &texts);
}

fn check_blocking_run(o: &Output, what: &str) {
    check_example_run(
        o,
        what,
        "blocking",
        &["NUMAGC_ERR_MISUSE"],
        &[
            "inside a blocking section, vproc 1 blocked",
            "outside a blocking section, vproc 1 blocked",
        ],
    );
}

fn check_compiled_run(o: &Output, what: &str) {
    check_example_run(
        o,
        what,
        "compiled",
        &[
            "NUMAGC_ERR_MISUSE",
            "NUMAGC_ERR_NULL_ARGUMENT",
            "NUMAGC_ERR_UNKNOWN_DESCRIPTOR",
            "NUMAGC_ERR_BAD_VALUE",
        ],
        &[
            "is not the record of the vproc",
            "is not an object of this runtime's heap",
            "store into an immutable object",
            "alloc_ptr 0x8 is outside the nursery",
            "compiled: all checks passed",
        ],
    );
}

/// The compiled-code example (`examples/c/compiled.c`): `numagc_inline.h`'s
/// fast paths on both plans, its misuse cases, and the record's C layout
/// against the Rust one (a drift between the two fails here).
fn run_compiled_example(static_dir: &Path, dir: &Path) {
    let exe = dir.join("compiled");
    compile("compiled", static_dir, &exe, &[]);
    let o = Command::new(&exe).arg("--layout").output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let c: std::collections::BTreeMap<String, usize> = String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(' ')?;
            Some((k.to_string(), v.parse().ok()?))
        })
        .collect();
    let r = numagc_rs::compiled::MutatorRecord::OFFSETS;
    let rust = [
        ("alloc_ptr", r.alloc_ptr),
        ("alloc_limit", r.alloc_limit),
        ("roots_top", r.roots_top),
        ("roots_limit", r.roots_limit),
        ("roots_base", r.roots_base),
        ("barrier_lo", r.barrier_lo),
        ("barrier_len", r.barrier_len),
        ("plan", r.plan),
        ("remember_all", r.remember_all),
        ("size", r.size),
    ];
    for (field, off) in rust {
        assert_eq!(
            c.get(field),
            Some(&off),
            "numagc_mutator.{field}: C offset {:?}, Rust {off}",
            c.get(field)
        );
    }
    println!(
        "numagc_inline.h: the record's C layout matches the Rust one ({} fields)",
        rust.len() - 1
    );
    for plan in ["split", "shared"] {
        let o = Command::new(&exe)
            .arg("12")
            .env("NUMAGC_PLAN", plan)
            .output()
            .unwrap();
        check_compiled_run(&o, &format!("compiled on the {plan} plan"));
    }
}

/// The benchmarks in C on the register code of `numagc_inline.h`
/// (`examples/c/{parfib,coins,binarytrees,gcbench}.c`): a small run of
/// each and the output it must print (each program checks its answer
/// itself and exits 1 when it is wrong). gcbench's is `numagc bench
/// gcbench`'s at the same parameters; its stretch tree is forked (deeper
/// than 12).
const C_BENCHMARKS: [(&str, &[&str], &str); 5] = [
    (
        "parfib",
        &["27", "12", "1"],
        "parfib 27 (threshold 12) = 196418\n",
    ),
    (
        "parfib",
        &["27", "12", "2"],
        "parfib 27 (threshold 12) = 196418\n",
    ),
    (
        "coins",
        &["300", "3", "2"],
        "coins: ways to pay 300 (depth 3) = 5828\n",
    ),
    (
        "binarytrees",
        &["10", "2"],
        "stretch tree of depth 11\t check: 4095\n\
         1024\t trees of depth 4\t check: 31744\n\
         256\t trees of depth 6\t check: 32512\n\
         64\t trees of depth 8\t check: 32704\n\
         16\t trees of depth 10\t check: 32752\n\
         long lived tree of depth 10\t check: 2047\n",
    ),
    (
        "gcbench",
        &["14", "13", "12", "4000", "512", "2"],
        "Garbage Collector Test\n \
         Stretching memory with a binary tree of depth 14: 32767 nodes\n \
         Creating a long-lived binary tree of depth 13\n \
         Creating a long-lived array of 4000 doubles\n\
         Creating 2114 trees of depth 4: top down 65534 nodes, bottom up 65534 nodes\n\
         Creating 516 trees of depth 6: top down 65532 nodes, bottom up 65532 nodes\n\
         Creating 128 trees of depth 8: top down 65408 nodes, bottom up 65408 nodes\n\
         Creating 32 trees of depth 10: top down 65504 nodes, bottom up 65504 nodes\n\
         Creating 8 trees of depth 12: top down 65528 nodes, bottom up 65528 nodes\n\
         Long-lived tree: 16383 nodes; array[1000] == 1/1000: true\n",
    ),
];

/// No report of AddressSanitizer or UndefinedBehaviorSanitizer in a run.
fn check_no_sanitizer_report(o: &Output, what: &str) {
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        !stderr.contains("runtime error:") && !stderr.contains("Sanitizer"),
        "{what}: a sanitizer reported:\n{}",
        show(o)
    );
}

/// A run that exits 0 having printed `expected`.
fn check_stdout_run(o: &Output, what: &str, expected: &str) {
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout) == expected,
        "{what}: expected {expected:?}:\n{}",
        show(o)
    );
}

/// The benchmarks in C on both plans, and their refusals of bad
/// arguments.
fn run_c_benchmarks(static_dir: &Path, dir: &Path) {
    for name in ["parfib", "coins", "binarytrees", "gcbench"] {
        compile(name, static_dir, &dir.join(name), &[]);
    }
    for plan in ["split", "shared"] {
        for (name, args, expected) in C_BENCHMARKS {
            let o = Command::new(dir.join(name))
                .args(args)
                .env("NUMAGC_PLAN", plan)
                .env("NUMAGC_LOCAL_HEAP", "256K")
                .output()
                .unwrap();
            check_stdout_run(&o, &format!("{name} {args:?} on the {plan} plan"), expected);
        }
    }
    let parfib = dir.join("parfib");
    let o = Command::new(&parfib).args(["90", "12"]).output().unwrap();
    assert_eq!(o.status.code(), Some(2), "parfib 90:\n{}", show(&o));
    let o = Command::new(dir.join("gcbench"))
        .args(["10", "8", "11", "4000", "1"])
        .output()
        .unwrap();
    assert!(
        o.status.code() == Some(2)
            && String::from_utf8_lossy(&o.stderr).contains("MAX_DEPTH 11 exceeds STRETCH_DEPTH 10"),
        "gcbench with MAX_DEPTH over STRETCH_DEPTH:\n{}",
        show(&o)
    );
    let o = Command::new(&parfib)
        .args(["20", "5", "0"])
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(1),
        "parfib on 0 vprocs:\n{}",
        show(&o)
    );
}

fn check_bad_input_run(o: &Output, what: &str) {
    let codes = [
        "NUMAGC_ERR_INVALID_ARGUMENT",
        "NUMAGC_ERR_INVALID_DESCRIPTOR",
        "NUMAGC_ERR_MISUSE",
        "NUMAGC_ERR_HEAP_LIMIT",
        "NUMAGC_ERR_UNBALANCED_FRAME",
        "NUMAGC_ERR_BAD_VALUE",
    ];
    let texts = [
        "`is_mutable` = 2 is not a flag",
        "cases[0].dir = 7 is not a numagc_dir",
        "cases[0].dir = -1 is not a numagc_dir",
        "n_values = 1099511627776",
        "n_values = 18446744073709551615",
        "exceeds the object length limit",
        "more than the heap limit",
        "exceeds NUMAGC_MAX_ENV (65536)",
        "exceeds NUMAGC_MAX_CASES (65536)",
        "a thread's bad choices were refused and it went on",
        "env word 0x18: 0x18 is not an object of this runtime's heap",
        "is not the record of the vproc running this callback",
        "moved the root stack's top",
        "the result 0x18 of the numagc_fork task b",
        "the scope was used inside a numagc_fork task",
    ];
    check_example_run(o, what, "bad_input", &codes, &texts);
}

/// Whether `cc` builds and runs a program with `-fsanitize=address,undefined`
/// (the runtimes, libasan and libubsan, come with gcc on Debian/Ubuntu).
fn sanitizers_available(dir: &Path) -> Result<(), String> {
    let src = dir.join("sanitizer-probe.c");
    let exe = dir.join("sanitizer-probe");
    std::fs::write(&src, "int main(void) { return 0; }\n").unwrap();
    let o = Command::new("cc")
        .args(SANITIZE)
        .arg(&src)
        .arg("-o")
        .arg(&exe)
        .output()
        .map_err(|e| format!("running cc: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "cc cannot link the sanitizer runtimes:\n{}",
            show(&o)
        ));
    }
    let o = Command::new(&exe)
        .output()
        .map_err(|e| format!("running the probe: {e}"))?;
    if !o.status.success() {
        return Err(format!(
            "a sanitized program does not run here:\n{}",
            show(&o)
        ));
    }
    Ok(())
}

const SANITIZE: &[&str] = &["-fsanitize=address,undefined", "-fno-omit-frame-pointer"];

/// Runs `exe` (built with `SANITIZE`) with `args`: any report of either
/// sanitizer ends it with an error. Leak detection stays on (the library's
/// own allocations are freed with the runtime, or reachable from statics,
/// which LeakSanitizer does not report); where LeakSanitizer cannot run at
/// all (under ptrace, in some containers) the run is repeated without it,
/// and valgrind still checks for leaks.
fn run_sanitized(exe: &Path, args: &[&str]) -> Output {
    let run = |asan: &str| {
        Command::new(exe)
            .args(args)
            .env("ASAN_OPTIONS", asan)
            .env("UBSAN_OPTIONS", "halt_on_error=1:print_stacktrace=1")
            .output()
            .unwrap()
    };
    let o = run("detect_leaks=1:abort_on_error=0");
    if String::from_utf8_lossy(&o.stderr).contains("LeakSanitizer has encountered a fatal error") {
        println!(
            "LeakSanitizer cannot run here: {} rerun with detect_leaks=0",
            exe.display()
        );
        return run("detect_leaks=0:abort_on_error=0");
    }
    o
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(program).is_file()))
        .unwrap_or(false)
}

#[test]
fn c_examples_run_and_are_memcheck_clean() {
    let (a, so) = build_libraries();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("c-example");
    let (static_dir, shared_dir) = (dir.join("static"), dir.join("shared"));
    for (d, lib, name) in [
        (&static_dir, &a, "libnumagc.a"),
        (&shared_dir, &so, "libnumagc.so"),
    ] {
        std::fs::create_dir_all(d).unwrap();
        let link = d.join(name);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(lib, &link).unwrap();
    }

    // Linked statically: the example at its default depth.
    let trees = dir.join("trees");
    compile("trees", &static_dir, &trees, &[]);
    let o = Command::new(&trees).output().unwrap();
    check_run(&o, "trees (static)");
    println!(
        "{}",
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
    );

    // Linked dynamically: the cdylib exports the same interface.
    let trees_so = dir.join("trees-shared");
    let rpath = format!("-Wl,-rpath,{}", shared_dir.display());
    compile("trees", &shared_dir, &trees_so, &[&rpath]);
    let o = Command::new(&trees_so).arg("4").output().unwrap();
    check_run(&o, "trees (shared)");

    // Tasks, threads and channels, linked statically and dynamically.
    let channels = dir.join("channels");
    compile("channels", &static_dir, &channels, &[]);
    let o = Command::new(&channels).output().unwrap();
    check_channels_run(&o, "channels (static)");
    println!(
        "{}",
        String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("")
    );
    let channels_so = dir.join("channels-shared");
    compile("channels", &shared_dir, &channels_so, &[&rpath]);
    let o = Command::new(&channels_so).arg("16").output().unwrap();
    check_channels_run(&o, "channels (shared)");

    // Bad input through the C interface (issue 16): refused, never an abort.
    let bad_input = dir.join("bad_input");
    compile("bad_input", &static_dir, &bad_input, &[]);
    let o = Command::new(&bad_input).output().unwrap();
    check_bad_input_run(&o, "bad_input (static)");

    // The same programs on the shared plan (`example_config` reads
    // NUMAGC_PLAN).
    let on_shared = |exe: &Path| {
        Command::new(exe)
            .env("NUMAGC_PLAN", "shared")
            .output()
            .unwrap()
    };
    check_run(&on_shared(&trees), "trees (static, shared plan)");
    check_channels_run(&on_shared(&channels), "channels (static, shared plan)");
    check_bad_input_run(&on_shared(&bad_input), "bad_input (static, shared plan)");
    // The variable is read: a plan that does not exist is refused by name.
    let o = Command::new(&trees)
        .env("NUMAGC_PLAN", "bogus")
        .output()
        .unwrap();
    assert!(
        !o.status.success() && String::from_utf8_lossy(&o.stderr).contains("bogus"),
        "trees with NUMAGC_PLAN=bogus:\n{}",
        show(&o)
    );

    // Blocking sections (issue 16): collections go on while a callback
    // sleeps in one, and are called off when it sleeps outside one.
    let blocking = dir.join("blocking");
    compile("blocking", &static_dir, &blocking, &[]);
    let o = Command::new(&blocking).arg("600").output().unwrap();
    check_blocking_run(&o, "blocking (static)");
    print!("{}", String::from_utf8_lossy(&o.stdout));

    // PE groups (issue 19): exportable tasks, a task sent to a PE, another
    // PE's array read and written, weight books settled; on both plans.
    let pe = dir.join("pe");
    compile("pe", &static_dir, &pe, &[]);
    let pe_codes = [
        "NUMAGC_ERR_MISUSE",
        "NUMAGC_ERR_INVALID_CONFIG",
        "NUMAGC_ERR_PE",
        "NUMAGC_ERR_INVALID_ARGUMENT",
    ];
    let o = Command::new(&pe).arg("22").output().unwrap();
    check_example_run(
        &o,
        "pe (static)",
        "pe",
        &pe_codes,
        &["pfib 22 on 2 PEs = 17711"],
    );
    check_example_run(
        &on_shared(&pe),
        "pe (static, shared plan)",
        "pe",
        &pe_codes,
        &[],
    );

    // The program of docs/c-api.md.
    let doc = std::fs::read_to_string(repo_root().join("docs/c-api.md")).unwrap();
    let program = doc
        .split("```c\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("docs/c-api.md has a C program");
    let doc_c = dir.join("doc.c");
    std::fs::write(&doc_c, program).unwrap();
    let doc_exe = dir.join("doc");
    let o = Command::new("cc")
        .args(["-std=c11", "-Wall", "-Wextra", "-Werror", "-I"])
        .arg(repo_root().join("include"))
        .arg(&doc_c)
        .arg("-L")
        .arg(&static_dir)
        .args(["-lnumagc", "-lpthread", "-ldl", "-lm", "-o"])
        .arg(&doc_exe)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "the program of docs/c-api.md does not compile:\n{}",
        show(&o)
    );
    let o = Command::new(&doc_exe).output().unwrap();
    assert!(
        o.status.success() && String::from_utf8_lossy(&o.stdout) == "sum 499500\n",
        "docs/c-api.md:\n{}",
        show(&o)
    );

    // The header is valid C++ too.
    if on_path("c++") {
        let o = Command::new("c++")
            .args(["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-x", "c++", "-I"])
            .arg(repo_root().join("include"))
            .arg("-")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin.take().unwrap().write_all(b"#include <numagc.h>\nint main() { return numagc_is_int(NUMAGC_NIL) ? 0 : 1; }\n")?;
                c.wait_with_output()
            })
            .unwrap();
        assert!(
            o.status.success(),
            "numagc.h does not compile as C++:\n{}",
            show(&o)
        );
    }

    // AddressSanitizer and UndefinedBehaviorSanitizer in the C code (the
    // Rust library is not instrumented, but every access C makes to memory
    // the library hands it, and every C-side overflow, is checked). Small
    // runs: seconds in all.
    run_compiled_example(&static_dir, &dir);
    run_c_benchmarks(&static_dir, &dir);

    match sanitizers_available(&dir) {
        Err(why) => println!(
            "skipped: AddressSanitizer/UndefinedBehaviorSanitizer runs ({why}); scripts/install-deps.sh installs gcc's runtimes"
        ),
        Ok(()) => {
            for (example, args) in [
                ("trees", &["6"][..]),
                ("channels", &["16"][..]),
                ("bad_input", &[][..]),
                ("blocking", &["600"][..]),
                ("compiled", &["8"][..]),
                ("pe", &["18"][..]),
            ] {
                let exe = dir.join(format!("{example}-sanitized"));
                compile(example, &static_dir, &exe, SANITIZE);
                let o = run_sanitized(&exe, args);
                let what = format!("{example} with -fsanitize=address,undefined");
                match example {
                    "trees" => check_run(&o, &what),
                    "channels" => check_channels_run(&o, &what),
                    "blocking" => check_blocking_run(&o, &what),
                    "compiled" => check_compiled_run(&o, &what),
                    "pe" => check_example_run(&o, &what, "pe", &[], &["pfib 18 on 2 PEs = 2584"]),
                    _ => check_bad_input_run(&o, &what),
                }
                check_no_sanitizer_report(&o, &what);
            }
            // The benchmarks in C, each once (parfib at 2 vprocs).
            for (name, args, expected) in &C_BENCHMARKS[1..] {
                let exe = dir.join(format!("{name}-sanitized"));
                compile(name, &static_dir, &exe, SANITIZE);
                let o = run_sanitized(&exe, args);
                let what = format!("{name} with -fsanitize=address,undefined");
                check_stdout_run(&o, &what, expected);
                check_no_sanitizer_report(&o, &what);
            }
            println!("sanitizers: no reports (trees, channels, bad_input, blocking, compiled, pe, parfib, binarytrees, coins)");
        }
    }

    // Memcheck: no errors, no definite leaks. Small trees: valgrind is slow.
    if !on_path("valgrind") {
        println!("skipped: valgrind not installed (scripts/install-deps.sh installs it)");
        return;
    }
    let o = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
            "--quiet",
        ])
        .arg(&trees)
        .arg("6")
        .output()
        .unwrap();
    check_run(&o, "trees under valgrind");
    let o = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
            "--quiet",
        ])
        .arg(&channels)
        .arg("16")
        .output()
        .unwrap();
    check_channels_run(&o, "channels under valgrind");
    let o = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
            "--quiet",
        ])
        .arg(&bad_input)
        .output()
        .unwrap();
    check_bad_input_run(&o, "bad_input under valgrind");
    let o = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
            "--quiet",
        ])
        .arg(&pe)
        .arg("16")
        .output()
        .unwrap();
    check_example_run(
        &o,
        "pe under valgrind",
        "pe",
        &[],
        &["pfib 16 on 2 PEs = 987"],
    );
    let o = Command::new("valgrind")
        .args([
            "--error-exitcode=1",
            "--leak-check=full",
            "--errors-for-leak-kinds=definite",
            "--show-leak-kinds=definite",
            "--quiet",
        ])
        .arg(dir.join("compiled"))
        .arg("8")
        .output()
        .unwrap();
    check_compiled_run(&o, "compiled under valgrind");
    println!(
        "valgrind memcheck: no errors, no definite leaks (trees, channels, bad_input, compiled)"
    );
}
