//! Recursion that does not fork (so no fork can check the stack) past the
//! end of a vproc's stack hits the guard page below it: the process stops
//! with a message naming the vproc thread, never with silent corruption
//! (issue 16, defect 4). The test runs the overflow in a child process (it
//! re-runs this test binary with an environment variable set).

mod common;

use common::*;
use std::process::Command;

const CHILD: &str = "NUMAGC_TEST_OVERFLOW_CHILD";

fn recurse(depth: u64) -> u64 {
    let frame = std::hint::black_box([depth; 64]);
    if depth == 0 {
        return frame[3];
    }
    recurse(depth - 1) + std::hint::black_box(frame[5]) % 2
}

#[test]
fn recursion_past_the_vproc_stack_is_reported_by_thread_name() {
    if std::env::var_os(CHILD).is_some() {
        let rt =
            numagc::Runtime::new(test_config(1).vproc_stack(1 << 20).build().unwrap()).unwrap();
        let r = rt.run_on(0, |_| recurse(u64::MAX / 2));
        println!("not reached: {r:?}");
        return;
    }
    let exe = std::env::current_exe().unwrap();
    let o = Command::new(exe)
        .args([
            "recursion_past_the_vproc_stack_is_reported_by_thread_name",
            "--exact",
            "--nocapture",
        ])
        .env(CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "the child survived: {stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l.starts_with("thread 'numagc-vproc-0'")
                && l.ends_with("has overflowed its stack")),
        "no message naming the vproc:\n{stderr}"
    );
}
