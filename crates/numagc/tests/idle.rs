//! An idle runtime uses no CPU: after parallel work its vprocs spin
//! briefly, then sleep until work, a collection or a job arrives. (Its own
//! test binary: it measures the whole process's CPU time.)

mod common;

use common::*;
use numagc::{Handle, Result, Scope};

fn count<'s>(s: &mut Scope<'s>, depth: u32) -> Result<Handle<'s>> {
    if depth == 0 {
        return s.alloc_vector(&[Handle::int(1)]);
    }
    let (a, b) = s.par2(
        &[],
        move |s, _| count(s, depth - 1),
        move |s, _| count(s, depth - 1),
    )?;
    let n = s.view(a).field(0).as_int().unwrap() + s.view(b).field(0).as_int().unwrap();
    s.alloc_vector(&[Handle::int(n)])
}

/// An idle runtime uses no CPU: its vprocs sleep once they find no work.
#[test]
fn idle_vprocs_sleep() {
    let rt = runtime(2);
    let n = rt
        .run_on(0, |s| {
            count(s, 12).map(|h| s.view(h).field(0).as_int().unwrap())
        })
        .unwrap()
        .unwrap();
    assert_eq!(n, 1 << 12);
    std::thread::sleep(std::time::Duration::from_millis(50));
    let cpu = || {
        // SAFETY: getrusage only writes the struct we pass.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
        (u.ru_utime.tv_sec as f64 + u.ru_utime.tv_usec as f64 / 1e6)
            + (u.ru_stime.tv_sec as f64 + u.ru_stime.tv_usec as f64 / 1e6)
    };
    let before = cpu();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let used = cpu() - before;
    assert!(used < 0.1, "idle runtime used {used:.3} s of CPU in 0.3 s");
}
