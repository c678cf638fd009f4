//! `numagc compare --breakdown`: where each runtime's time goes, by its own
//! accounting. After the timed runs of a benchmark and vproc count, every
//! runtime runs once more with its collector's accounting switched on; that
//! run is reported apart and never enters the medians.
//!
//! What each runtime reports, and how it is read:
//! - numagc (`--run-output --account`): one line on
//!   standard error with the collection time summed over the vprocs (minor,
//!   major, promotion and global phases, `VprocStats::gc_ns`) and the bytes
//!   the mutator allocated.
//! - GHC (`+RTS -s`): `GC time ... ( X elapsed)` and
//!   `N bytes allocated in the heap`.
//! - Java (`-Xlog:gc:stderr`): the durations of the `Pause` lines, summed
//!   (concurrent phases of G1 are not pauses and are left out). The JVM
//!   does not report its allocation volume in this log.
//! - OCaml (`OCAMLRUNPARAM=v=0x400`): `allocated_words` at exit; it reports
//!   no collection time.
//! - OCaml 5: the same `allocated_words` (the peer's line, the first: the
//!   `gcpauses` wrapper prints its own after the peer has exited), and as
//!   collection time the sum of the domains' pauses that `gcpauses` reads
//!   from `Runtime_events` (see `pauses`), a sum over domains like numagc's.
//!
//! **GC share** is the fraction of the run's worker time spent collecting:
//! for numagc and OCaml 5 `gc / (wall × K)`, since their times are summed
//! over the workers (numagc's vprocs collect their local heaps
//! independently: minor and major collections stop one vproc, not all);
//! for GHC and Java, whose collections stop every worker, the elapsed
//! collection time over the wall time. The rest, `wall × (1 − share)`, is
//! the mutator's (with start-up and exit), the part a runtime's collector
//! does not explain.

use std::process::Command;

/// One runtime's own account of a run.
#[derive(serde::Serialize, Clone, Debug, Default, PartialEq)]
pub struct Accounting {
    /// Collection time in seconds: numagc's summed over vprocs, the others' elapsed.
    pub gc_s: Option<f64>,
    /// Fraction of the worker time spent collecting (see the module doc).
    pub gc_share: Option<f64>,
    /// Bytes the program allocated, where the runtime reports it.
    pub allocated_bytes: Option<u64>,
}

/// The line numagc's accounted run prints on standard error.
pub fn numagc_line(gc_ns: u64, allocated: u64) -> String {
    format!("numagc-account gc_ns={gc_ns} allocated_bytes={allocated}")
}

/// Switches `runtime`'s accounting on in `cmd`. Flags that must come before
/// the program's arguments (the JVM's) are handled by `launch`; this adds
/// what can go at the end or in the environment.
pub fn account(runtime: &str, cmd: &mut Command) {
    match runtime {
        numagc if super::is_numagc(numagc) => {
            cmd.arg("--account");
        }
        "haskell" | "haskell-default" => {
            cmd.args(["+RTS", "-s", "-RTS"]);
        }
        "ocaml" | "ocaml5" => {
            cmd.env("OCAMLRUNPARAM", "v=0x400");
        }
        _ => {}
    }
}

/// The JVM option that logs its collections (before the class name).
pub const JAVA_GC_LOG: &str = "-Xlog:gc:stderr";

/// Reads `runtime`'s account from its standard error, for a run of
/// `wall_s` seconds on `k` workers.
pub fn parse(runtime: &str, stderr: &str, wall_s: f64, k: usize) -> Accounting {
    let share = |gc: f64, workers: f64| (wall_s > 0.0).then(|| gc / (wall_s * workers));
    match runtime {
        numagc if super::is_numagc(numagc) => {
            let line = stderr
                .lines()
                .find_map(|l| l.strip_prefix("numagc-account "));
            let field = |name: &str| {
                line.and_then(|l| {
                    l.split_whitespace().find_map(|kv| {
                        kv.strip_prefix(name)?
                            .strip_prefix('=')?
                            .parse::<u64>()
                            .ok()
                    })
                })
            };
            let gc_s = field("gc_ns").map(|ns| ns as f64 / 1e9);
            Accounting {
                gc_s,
                gc_share: gc_s.and_then(|g| share(g, k as f64)),
                allocated_bytes: field("allocated_bytes"),
            }
        }
        "haskell" | "haskell-default" => {
            // "  GC      time    0.010s  (  0.005s elapsed)"
            let gc_s = stderr
                .lines()
                .find(|l| l.trim_start().starts_with("GC "))
                .and_then(|l| {
                    let inner = l.split('(').nth(1)?;
                    inner
                        .trim()
                        .strip_suffix("elapsed)")?
                        .trim()
                        .strip_suffix('s')?
                        .parse::<f64>()
                        .ok()
                });
            // "   4,057,360 bytes allocated in the heap"
            let allocated = stderr
                .lines()
                .find(|l| l.contains("bytes allocated in the heap"))
                .and_then(|l| {
                    l.split_whitespace()
                        .next()?
                        .replace(',', "")
                        .parse::<u64>()
                        .ok()
                });
            Accounting {
                gc_s,
                gc_share: gc_s.and_then(|g| share(g, 1.0)),
                allocated_bytes: allocated,
            }
        }
        "java-parallelgc" | "java-g1" => {
            // "[0.119s][info][gc] GC(1) Pause Young (Allocation Failure) 95M->0M(457M) 1.105ms"
            let pauses: Vec<f64> = stderr
                .lines()
                .filter(|l| l.contains("[gc]") && l.contains(" Pause "))
                .filter_map(|l| {
                    l.split_whitespace()
                        .last()?
                        .strip_suffix("ms")?
                        .parse::<f64>()
                        .ok()
                })
                .collect();
            let saw_log = stderr.contains("[gc]");
            let gc_s = saw_log.then(|| pauses.iter().fold(0.0, |a, p| a + p) / 1e3);
            Accounting {
                gc_s,
                gc_share: gc_s.and_then(|g| share(g, 1.0)),
                allocated_bytes: None,
            }
        }
        "ocaml" | "ocaml5" => {
            let words = stderr.lines().find_map(|l| {
                l.strip_prefix("allocated_words:")?
                    .trim()
                    .parse::<u64>()
                    .ok()
            });
            let gc_s = super::pauses::parse(stderr)
                .filter(|_| runtime == "ocaml5")
                .map(|p| p.total_ns as f64 / 1e9);
            Accounting {
                gc_s,
                gc_share: gc_s.and_then(|g| share(g, k as f64)),
                allocated_bytes: words.map(|w| w * 8),
            }
        }
        _ => Accounting::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numagc_line_round_trips() {
        let a = parse(
            "numagc",
            &format!("noise\n{}\n", numagc_line(500_000_000, 4096)),
            1.0,
            2,
        );
        assert_eq!(a.gc_s, Some(0.5));
        assert_eq!(a.gc_share, Some(0.25));
        assert_eq!(a.allocated_bytes, Some(4096));
        assert_eq!(
            parse("numagc", "no account here", 1.0, 2),
            Accounting::default()
        );
    }

    #[test]
    fn ghc_statistics_are_read() {
        let err = "parfib 25 (threshold 10) = 75025\n       4,057,360 bytes allocated in the heap\n\
                   \x20         62,824 bytes copied during GC\n  INIT    time    0.001s  (  0.001s elapsed)\n\
                   \x20 MUT     time    0.001s  (  0.001s elapsed)\n  GC      time    0.300s  (  0.250s elapsed)\n";
        let a = parse("haskell", err, 1.0, 2);
        assert_eq!(a.gc_s, Some(0.25));
        assert_eq!(a.gc_share, Some(0.25));
        assert_eq!(a.allocated_bytes, Some(4_057_360));
    }

    #[test]
    fn java_pauses_are_summed_and_concurrent_phases_left_out() {
        let err =
            "[0.119s][info][gc] GC(1) Pause Young (Allocation Failure) 95M->0M(457M) 1.500ms\n\
                   [0.2s][info][gc] GC(2) Concurrent Mark Cycle 30.000ms\n\
                   [0.3s][info][gc] GC(2) Pause Remark 20M->20M(64M) 2.500ms\n";
        let a = parse("java-g1", err, 0.5, 2);
        assert_eq!(a.gc_s, Some(0.004));
        assert_eq!(a.gc_share, Some(0.008));
        assert_eq!(a.allocated_bytes, None);
        assert_eq!(parse("java-parallelgc", "no log", 0.5, 2).gc_s, None);
    }

    #[test]
    fn ocaml_allocation_is_read() {
        let a = parse(
            "ocaml",
            "allocated_words: 485714\nminor_words: 485714\n",
            1.0,
            1,
        );
        assert_eq!(a.allocated_bytes, Some(485_714 * 8));
        assert_eq!(a.gc_s, None);
    }

    #[test]
    fn ocaml5_gc_time_is_its_pauses_summed_over_domains() {
        // The peer's statistics come first, gcpauses' own after it.
        let err =
            "allocated_words: 100\nocaml-pauses count=2 total_ns=500000000 p50_ns=1 p99_ns=1 \
                   p999_ns=1 max_ns=1 lost_events=0\nallocated_words: 7\n";
        let a = parse("ocaml5", err, 1.0, 2);
        assert_eq!(a.gc_s, Some(0.5));
        assert_eq!(a.gc_share, Some(0.25));
        assert_eq!(a.allocated_bytes, Some(800));
    }
}
