//! A C program run with `libnumagc_malloc.so` preloaded as its allocator:
//! every allocation call it (and the C library) makes must work, its memory
//! must come from the heap manager, and a double free must abort with the
//! heap manager's message.
//!
//! `cargo test` does not build a crate's cdylib for its integration tests,
//! so the test asks cargo for it (same target directory and profile).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn show(o: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}\n--- stderr\n{}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Builds the library and returns its path and a scratch directory.
fn build() -> (PathBuf, PathBuf) {
    let exe = std::env::current_exe().unwrap();
    let profile_dir = exe.parent().and_then(|d| d.parent()).unwrap().to_path_buf();
    let profile = if profile_dir.file_name().unwrap() == "release" {
        "release"
    } else {
        "test"
    };
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let o = Command::new(cargo)
        .args(["build", "--lib", "--profile", profile, "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("running cargo");
    assert!(o.status.success(), "cargo build failed:\n{}", show(&o));
    let so = profile_dir.join("libnumagc_malloc.so");
    assert!(so.exists(), "{} not built", so.display());
    let scratch = profile_dir.join("numagc-malloc-test");
    std::fs::create_dir_all(&scratch).unwrap();
    (so, scratch)
}

/// Compiles the C program into `scratch/name`. Each test uses its own
/// `name`: the tests run in parallel, and executing a file that another
/// test's `cc` is still writing fails with ETXTBSY ("Text file busy").
fn compile(scratch: &Path, name: &str) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/c/malloc_user.c");
    let bin = scratch.join(name);
    let o = Command::new("cc")
        .args(["-O1", "-Wall", "-Werror", "-pthread", "-o"])
        .arg(&bin)
        .arg(&src)
        .arg("-ldl")
        .output()
        .expect("running cc");
    assert!(o.status.success(), "cc failed:\n{}", show(&o));
    bin
}

#[test]
fn c_program_runs_with_the_heap_manager_as_malloc() {
    let (so, scratch) = build();
    let bin = compile(&scratch, "malloc_user_run");
    let o = Command::new(&bin).env("LD_PRELOAD", &so).output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("malloc_user: ok"));

    // Without the library the program refuses to run: the check of
    // numagc_malloc_owns is real.
    let o = Command::new(&bin).output().unwrap();
    assert!(
        !o.status.success(),
        "ran without the heap manager:\n{}",
        show(&o)
    );

    let o = Command::new(&bin)
        .arg("double-free")
        .env("LD_PRELOAD", &so)
        .output()
        .unwrap();
    assert!(!o.status.success(), "{}", show(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("double free of"),
        "{}",
        show(&o)
    );
}

#[test]
fn forks_of_a_multithreaded_program_can_allocate() {
    let (so, scratch) = build();
    let bin = compile(&scratch, "malloc_user_fork");
    let mut child = Command::new(&bin)
        .arg("fork")
        .env("LD_PRELOAD", &so)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A child that inherited a held lock would hang: give it a deadline.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("the fork test hung (a lock held across fork?)");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", show(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("fork: ok"));
}

#[test]
fn system_tools_run_with_the_heap_manager_as_malloc() {
    let (so, _) = build();
    // Programs that allocate a lot through the C library.
    let o = Command::new("sort")
        .arg("-n")
        .env("LD_PRELOAD", &so)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            let mut input = String::new();
            for i in (0..20_000).rev() {
                input.push_str(&format!("{i}\n"));
            }
            c.stdin.take().unwrap().write_all(input.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(o.status.success(), "{}", show(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    let first: Vec<&str> = out.lines().take(3).collect();
    assert_eq!(first, ["0", "1", "2"]);
    assert_eq!(out.lines().count(), 20_000);
}
