//! Blocking sections through the C ABI (issue 16, defect 5) and forks
//! nested past the stack (defect 4): a callback that blocks between
//! `numagc_enter_blocking` and `numagc_leave_blocking` does not stall the
//! other vprocs' collections; calls inside the section and unbalanced
//! calls are refused with `NUMAGC_ERR_MISUSE`; `numagc_par2` nested too
//! deep is `NUMAGC_ERR_STACK_EXHAUSTED`.

use crate::numagc_status::*;
use crate::tests::{build_list, check, last, ok, sum_list, Rt, OK};
use crate::tests_parallel::{par2, task};
use crate::*;
use std::ffi::c_int;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::{Duration, Instant};

/// Lets two test threads run callbacks on one runtime at once.
struct Both<'a>(&'a Rt);
// SAFETY: a `numagc_runtime*` may be used from several threads at once
// (the C ABI's thread rule); the test frees it after both threads end.
unsafe impl Sync for Both<'_> {}

impl Both<'_> {
    fn run(&self, vproc: usize, f: impl FnMut(*mut numagc_scope) -> c_int) -> c_int {
        self.0.run(vproc, f)
    }
}

fn wait_for(flag: &AtomicBool) {
    let t0 = Instant::now();
    while !flag.load(SeqCst) {
        assert!(t0.elapsed() < Duration::from_secs(30), "gave up waiting");
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn a_callback_blocked_in_a_section_does_not_stall_collections() {
    let rt = Rt::new(2, &[("safepoint-timeout", "300ms"), ("verify", "true")]);
    let cons = rt.register("cons", 2, &[1], false);
    let blocked = AtomicBool::new(false);
    let release = AtomicBool::new(false);
    let both = Both(&rt);
    let (rc0, rc1) = std::thread::scope(|sc| {
        let t1 = sc.spawn(|| {
            both.run(1, |s| {
                let list = build_list(s, cons, 3_000);
                // SAFETY: the scope token of this callback.
                ok(unsafe { numagc_enter_blocking(s) });
                // Entering twice, and using the heap, are refused.
                // SAFETY: the scope token of this callback.
                check(unsafe { numagc_enter_blocking(s) }, NUMAGC_ERR_MISUSE);
                assert!(last().contains("blocking section"), "{}", last());
                let mut v = 0;
                let one = numagc_int(1);
                // SAFETY: one value, a valid output.
                check(
                    unsafe { numagc_alloc_vector(s, &one, 1, &mut v) },
                    NUMAGC_ERR_MISUSE,
                );
                assert!(last().contains("numagc_leave_blocking"), "{}", last());
                // Foreign code blocks far longer than the safepoint timeout.
                blocked.store(true, SeqCst);
                wait_for(&release);
                // SAFETY: the scope token of this callback.
                ok(unsafe { numagc_leave_blocking(s) });
                // SAFETY: as above.
                check(unsafe { numagc_leave_blocking(s) }, NUMAGC_ERR_MISUSE);
                assert!(last().contains("not in a blocking section"), "{}", last());
                assert_eq!(sum_list(s, list), (3_000 * 2_999 / 2, 3_000));
                OK
            })
        });
        let rc0 = both.run(0, |s| {
            wait_for(&blocked);
            for _ in 0..3 {
                let garbage = build_list(s, cons, 1_000);
                let _ = garbage;
                // SAFETY: the scope token of this callback.
                let rc = unsafe { numagc_collect_global(s) };
                if rc != OK {
                    release.store(true, SeqCst);
                    return rc;
                }
            }
            release.store(true, SeqCst);
            OK
        });
        (rc0, t1.join().unwrap())
    });
    assert_eq!((rc0, rc1), (OK, OK), "{}", last());
}

#[test]
fn a_callback_that_returns_inside_a_section_is_an_error_and_it_is_left() {
    let rt = Rt::new(1, &[("verify", "true")]);
    let cons = rt.register("cons", 2, &[1], false);
    // SAFETY: the scope token of the callback.
    let rc = rt.run(0, |s| unsafe { numagc_enter_blocking(s) });
    check(rc, NUMAGC_ERR_MISUSE);
    assert!(
        last().contains("returned inside a blocking section"),
        "{}",
        last()
    );
    // The vproc is out of the section: it allocates and collects.
    let rc = rt.run(0, |s| {
        let list = build_list(s, cons, 100);
        // SAFETY: the scope token of this callback.
        ok(unsafe { numagc_collect_global(s) });
        assert_eq!(sum_list(s, list), (99 * 100 / 2, 100));
        OK
    });
    ok(rc);
}

/// `numagc_par2` nested `depth` deep (branch `a` recurses).
fn nest(s: *mut numagc_scope, depth: u64) -> c_int {
    if depth == 0 {
        return OK;
    }
    let a = task(move |s, _, r| {
        *r = numagc_int(0);
        nest(s, depth - 1)
    });
    let b = task(|_, _, r| {
        *r = numagc_int(1);
        OK
    });
    match par2(s, &[], &a, &b) {
        Ok(_) => OK,
        Err(rc) => rc,
    }
}

#[test]
fn forks_nested_past_the_stack_are_stack_exhausted() {
    let rt = Rt::new(1, &[("vproc-stack", "1M")]);
    let rc = rt.run(0, |s| nest(s, u64::MAX));
    check(rc, NUMAGC_ERR_STACK_EXHAUSTED);
    assert!(last().contains("vproc-stack"), "{}", last());
    // The vproc carries on.
    ok(rt.run(0, |s| nest(s, 100)));
}

/// With the default `vproc-stack`, what crashed on 2 MiB thread stacks
/// runs: `numagc_par2` nested 1,000 deep, and 8 MiB of ordinary frames in
/// a callback.
#[test]
fn the_default_stack_holds_deep_forks_and_large_frames() {
    /// 64 KiB of frame per level, 128 levels.
    fn frames(depth: u32) -> u64 {
        let buf = std::hint::black_box([depth as u8; 64 << 10]);
        if depth == 0 {
            return buf[17] as u64;
        }
        frames(depth - 1) + std::hint::black_box(buf[depth as usize]) as u64
    }
    let rt = Rt::new(2, &[]);
    ok(rt.run(0, |s| nest(s, 1_000)));
    ok(rt.run(1, |_| {
        assert_eq!(frames(128), (1..=128).map(|d: u64| d % 256).sum::<u64>());
        OK
    }));
}
