//! Child processes measured to the end, shared by `numagc compare` and
//! `numagc arena-bench`: the wall time of spawn..reap (an `Instant` around
//! it), and from `wait4`'s `rusage` the CPU time (user + system) and the
//! peak resident set. Both pipes are drained while the child runs, so that
//! neither can fill and block it.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Instant;

/// Runs `cmd` to the end: its standard output and its measures.
pub struct Measured {
    pub stdout: String,
    pub stderr: String,
    pub wall_s: f64,
    pub cpu_s: f64,
    pub max_rss_kib: u64,
    /// Ok for exit status 0; otherwise how it ended and the last line of its standard error.
    pub exit: Result<(), String>,
}

pub fn measure(mut cmd: Command) -> Result<Measured, String> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let t0 = Instant::now();
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("starting {:?}: {e}", cmd.get_program()))?;
    let pid = child.id() as libc::pid_t;
    // Standard error on a thread so that neither pipe can fill and block the child.
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let err_thread = std::thread::spawn(move || {
        let mut s = Vec::new();
        let _ = err_pipe.read_to_end(&mut s);
        s
    });
    let mut out = Vec::new();
    let _ = child
        .stdout
        .take()
        .expect("piped stdout")
        .read_to_end(&mut out);
    let mut status: libc::c_int = 0;
    // SAFETY: rusage is plain data, zero is a valid value; wait4 fills it.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        // SAFETY: pid is our own unreaped child; status and ru are valid for writing.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut ru) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break r;
    };
    let wall_s = t0.elapsed().as_secs_f64();
    if r != pid {
        return Err(format!("wait4: {}", std::io::Error::last_os_error()));
    }
    // The child is reaped: `child` must not be waited for again (dropping it does not wait).
    drop(child);
    let err = err_thread.join().unwrap_or_default();
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    let exit = if libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0 {
        Ok(())
    } else {
        let how = if libc::WIFEXITED(status) {
            format!("exit status {}", libc::WEXITSTATUS(status))
        } else {
            format!("killed by signal {}", libc::WTERMSIG(status))
        };
        let err = String::from_utf8_lossy(&err);
        let last = err
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim();
        Err(if last.is_empty() {
            how
        } else {
            format!("{how}: {last}")
        })
    };
    Ok(Measured {
        stdout: String::from_utf8_lossy(&out).into_owned(),
        stderr: String::from_utf8_lossy(&err).into_owned(),
        wall_s,
        cpu_s: tv(ru.ru_utime) + tv(ru.ru_stime),
        max_rss_kib: ru.ru_maxrss.max(0) as u64,
        exit,
    })
}
