//! GC pauses of the timed runs, for the runtimes that report them: numagc
//! and OCaml 5. Both print one line on standard error at the end of a run,
//! `<who>-pauses count=N total_ns=T p999_ns=P max_ns=M [lost_events=L]`:
//! - numagc (`--run-output`): its pause histogram summed over the vprocs
//!   (`VprocStats::pauses`: each vproc's time stopped for a collection).
//! - OCaml 5: `peers/build/ocaml5/gcpauses`, which runs the peer with
//!   OCaml's `Runtime_events` on and reads its rings while it runs (see
//!   `peers/ocaml5/gcpauses.ml`): each domain's outermost GC phase spans.
//!   `lost_events` > 0 means a ring wrapped before it was read, so the
//!   figures miss some pauses; the tables flag it.

use numagc::stats::PauseHistogram;

/// One run's pauses.
#[derive(serde::Serialize, Clone, Copy, Debug, Default, PartialEq)]
pub struct Pauses {
    pub count: u64,
    pub total_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    pub lost_events: u64,
}

/// The line numagc's timed run prints on standard error (the total to
/// the histogram's precision, 3 significant digits).
pub fn numagc_line(h: &PauseHistogram) -> String {
    let total: u64 = h.recorded().iter().map(|(ns, n)| ns * n).sum();
    format!(
        "numagc-pauses count={} total_ns={total} p999_ns={} max_ns={}",
        h.count(),
        h.percentile_ns(99.9),
        h.max_ns()
    )
}

/// The pauses a run reported on standard error, if it did.
pub fn parse(stderr: &str) -> Option<Pauses> {
    let line = stderr.lines().find_map(|l| {
        l.strip_prefix("numagc-pauses ")
            .or_else(|| l.strip_prefix("ocaml-pauses "))
    })?;
    let field = |name: &str| {
        line.split_whitespace().find_map(|kv| {
            kv.strip_prefix(name)?
                .strip_prefix('=')?
                .parse::<u64>()
                .ok()
        })
    };
    Some(Pauses {
        count: field("count")?,
        total_ns: field("total_ns")?,
        p999_ns: field("p999_ns")?,
        max_ns: field("max_ns")?,
        lost_events: field("lost_events").unwrap_or(0),
    })
}

/// Over the runs of one runtime: the largest p99.9 and the largest maximum
/// (ms), and whether any run lost events. None when no run reported pauses.
pub fn worst(runs: &[Option<Pauses>]) -> Option<(f64, f64, bool)> {
    let ps: Vec<&Pauses> = runs.iter().flatten().collect();
    if ps.is_empty() {
        return None;
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    Some((
        ms(ps.iter().map(|p| p.p999_ns).max().unwrap_or(0)),
        ms(ps.iter().map(|p| p.max_ns).max().unwrap_or(0)),
        ps.iter().any(|p| p.lost_events > 0),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn numagc_line_round_trips() {
        let mut h = PauseHistogram::new();
        for us in [100, 200, 5000] {
            h.record(Duration::from_micros(us));
        }
        let p = parse(&format!("noise\n{}\n", numagc_line(&h))).unwrap();
        assert_eq!(p.count, 3);
        assert_eq!(p.max_ns, h.max_ns());
        assert_eq!(p.p999_ns, h.percentile_ns(99.9));
        assert!(p.total_ns >= 5_300_000 && p.total_ns < 5_400_000);
        assert_eq!(p.lost_events, 0);
    }

    #[test]
    fn ocaml_line_is_read_and_worst_taken() {
        let a = parse("x\nocaml-pauses count=10 total_ns=9000 p50_ns=500 p99_ns=2000 p999_ns=2500 max_ns=3000 lost_events=0\n");
        let b = parse("ocaml-pauses count=4 total_ns=100 p50_ns=1 p99_ns=2 p999_ns=4000 max_ns=4000 lost_events=7");
        assert_eq!(a.unwrap().p999_ns, 2500);
        assert_eq!(b.unwrap().lost_events, 7);
        assert_eq!(worst(&[a, b, None]), Some((0.004, 0.004, true)));
        assert_eq!(worst(&[None]), None);
        assert_eq!(parse("no pauses here"), None);
    }
}
