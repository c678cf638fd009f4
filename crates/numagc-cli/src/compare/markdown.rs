//! `numagc compare --markdown FILE`: the tables of a comparison as
//! Markdown, for the results pages (`docs/results/peers.md` includes the
//! file as it is written, so the figures there are never typed by hand).

use super::{AccountedRun, Best, Summary};
use crate::bench::table::opt;
use std::fmt::Write;

/// Results, best peers and (when there are accounted runs) the breakdown.
/// `primary` is the runtime the ratio column divides by (numagc's first program).
pub fn render(
    summaries: &[Summary],
    bests: &[Best],
    accounts: &[AccountedRun],
    primary: &str,
) -> String {
    let mut t = String::new();
    let _ = writeln!(t, "| benchmark | K | runtime | wall s, median [min, max] | CPU s | peak RSS MiB | answer | numagc / runtime | pause ms, p99.9 / max |");
    let _ = writeln!(t, "|---|---|---|---|---|---|---|---|---|");
    for s in summaries {
        match (s.wall_median_s, s.wall_min_s, s.wall_max_s) {
            (Some(m), Some(lo), Some(hi)) => {
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {m:.3} [{lo:.3}, {hi:.3}] | {} | {} | {} | {} | {} |",
                    s.benchmark,
                    s.vprocs,
                    s.runtime,
                    opt(s.cpu_median_s, 3),
                    opt(s.max_rss_median_kib.map(|k| k as f64 / 1024.0), 1),
                    if s.answers_ok == Some(true) {
                        "ok"
                    } else {
                        "**wrong**"
                    },
                    if s.runtime == primary {
                        "-".into()
                    } else {
                        opt(s.numagc_over_this, 2)
                    },
                    super::pause_cell(s).replace('/', " / "),
                );
            }
            _ => {
                let _ = writeln!(
                    t,
                    "| {} | {} | {} | {} | | | | | |",
                    s.benchmark, s.vprocs, s.runtime, s.status
                );
            }
        }
    }
    let _ = writeln!(
        t,
        "\nBest peer (fastest median wall time with the right answer):\n"
    );
    let _ = writeln!(t, "| benchmark | K | best peer | numagc / best |");
    let _ = writeln!(t, "|---|---|---|---|");
    for b in bests {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} |",
            b.benchmark,
            b.vprocs,
            b.best_peer.as_deref().unwrap_or("-"),
            opt(b.numagc_over_best, 2)
        );
    }
    if !accounts.is_empty() {
        let _ = writeln!(
            t,
            "\nEach runtime's own accounting (one more run each, `--breakdown`):\n"
        );
        let _ = writeln!(
            t,
            "| benchmark | K | runtime | wall s | GC s | GC % | mutator s | allocated MB |"
        );
        let _ = writeln!(t, "|---|---|---|---|---|---|---|---|");
        for r in accounts {
            let [b, k, rt, wall, gc, share, mutator, alloc, flag] = r.cells();
            let flag = if flag.is_empty() {
                ""
            } else {
                " **failed or wrong**"
            };
            let _ = writeln!(
                t,
                "| {b} | {k} | {rt} | {wall} | {gc} | {share} | {mutator} | {alloc} |{flag}"
            );
        }
    }
    t
}
