//! Builds `examples/c/trees.c`, `examples/c/channels.c` (and the program
//! of `docs/c-api.md`) with
//! the system C compiler against `libnumagc.a` (and `libnumagc.so`), runs
//! it, and runs it again under valgrind's memcheck when valgrind is
//! installed (`scripts/install-deps.sh` installs it).
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
    println!("valgrind memcheck: no errors, no definite leaks (trees, channels)");
}
