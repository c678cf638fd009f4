//! A round of `numagc torture`: one runtime with settings drawn from the
//! round's seed, one program, run and checked.
//!
//! Choices (written down here, as the module docs of numagc do):
//! * Heaps are small — local heaps of 64 KiB to 1 MiB, chunks of 64 to
//!   256 KiB, a global-collection threshold of 1 to 8 chunks — so that
//!   minor, major and global collections all happen often without forcing.
//! * Every other setting that changes what the collectors do is drawn too:
//!   the large-object size (default, or anywhere in its range), young global
//!   collections on or off, survivor promotion (off, 50 %, 90 %), lazy or
//!   eager task promotion. The verifier is always on; threads are not pinned
//!   (the machine is shared).
//! * The harshness `gc_every` (a forced collection after every N-th
//!   allocation) is 1, 3, 10, 50, 300, 2000 or never, unless given; the
//!   sizes of the structures shrink with it ([`Sizes::for_gc_every`]) so
//!   that a round stays within seconds.
//! * A round's seed determines its settings, its program and the kinds of
//!   its forced collections; rounds of a run use consecutive seeds, so
//!   `--seed S --rounds 1` replays round S. With more than one vproc the
//!   interleaving of the vprocs is not replayed, only the program.

use crate::interp::{self, Failure, FailureKind, Fault, Options, Report};
use crate::program::{self, Op, Sizes};
use crate::rng::{mix, Choices, Rng};
use numagc::{Config, ConfigBuilder, Runtime, TaskPromotion};
use std::sync::Arc;
use std::time::Instant;

const KIB: usize = 1 << 10;

/// Everything a round will run, drawn from its seed.
#[derive(Clone, Debug)]
pub struct RoundPlan {
    pub seed: u64,
    pub config: Config,
    pub gc_every: u32,
    pub program: Vec<Op>,
}

impl RoundPlan {
    /// Draws the round of `seed`. `gc_every` overrides the drawn harshness.
    /// Errors name a refused setting (an unknown plan).
    pub fn new(
        seed: u64,
        vprocs: usize,
        plan: &str,
        gc_every: Option<u32>,
    ) -> Result<RoundPlan, String> {
        let mut rng = Rng::new(mix(seed));
        let c = &mut rng;
        let local = [64, 128, 256, 1024][c.choose(4) as usize] * KIB;
        let chunk = [64, 128, 256][c.choose(3) as usize] * KIB;
        let mut b = ConfigBuilder::new();
        b.set("plan", plan).map_err(|e| e.to_string())?;
        let mut b = b
            .vprocs(vprocs)
            .local_heap_size(local)
            .chunk_size(chunk)
            .global_gc_threshold(chunk * [1, 2, 4, 8][c.choose(4) as usize])
            .young_global_gc(c.chance(50))
            .survivor_promotion([0, 50, 90][c.choose(3) as usize])
            .task_promotion(if c.chance(50) {
                TaskPromotion::Lazy
            } else {
                TaskPromotion::Eager
            })
            .max_heap(1 << 30)
            .verify(true)
            .pin(false);
        if c.chance(50) {
            let max = (chunk / 4).min(local / 8);
            b = b.large_object_size(c.range(256, max as u64) as usize / 8 * 8);
        }
        let config = b.build().map_err(|e| e.to_string())?;
        let drawn = [1, 3, 10, 50, 300, 2000, 0][c.weighted(&[2, 2, 3, 3, 3, 2, 1])];
        let gc_every = gc_every.unwrap_or(drawn);
        let sizes = Sizes::for_gc_every(gc_every);
        let ops = match sizes {
            s if s == Sizes::SMALL => c.range(15, 50),
            s if s == Sizes::MEDIUM => c.range(25, 80),
            _ => c.range(30, 100),
        } as usize;
        let program = program::generate(&mut rng, ops, &sizes);
        Ok(RoundPlan {
            seed,
            config,
            gc_every,
            program,
        })
    }

    /// The settings that differ between rounds, in one line.
    pub fn describe(&self) -> String {
        let c = &self.config;
        format!(
            "local-heap {} KiB, chunk {} KiB, large-object {} B, global-gc-threshold {} KiB, young-global-gc {}, survivor-promotion {}, task-promotion {:?}, gc-every {}, {} ops",
            c.local_heap_size / KIB,
            c.chunk_size / KIB,
            c.large_object_size,
            c.global_gc_threshold / KIB,
            c.young_global_gc,
            c.survivor_promotion,
            c.task_promotion,
            self.gc_every,
            self.program.len()
        )
    }
}

/// Collections and sharing the runtime counted in a round.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RuntimeCounts {
    pub minor: u64,
    pub major: u64,
    pub promotion: u64,
    /// Global collections (every vproc takes part in each).
    pub global: u64,
    /// Of which full (every chunk evacuated).
    pub full_global: u64,
    pub tasks_stolen: u64,
    pub threads_stolen: u64,
    pub rendezvous: u64,
    pub bytes_promoted: u64,
}

impl RuntimeCounts {
    pub fn add(&mut self, o: &RuntimeCounts) {
        self.minor += o.minor;
        self.major += o.major;
        self.promotion += o.promotion;
        self.global += o.global;
        self.full_global += o.full_global;
        self.tasks_stolen += o.tasks_stolen;
        self.threads_stolen += o.threads_stolen;
        self.rendezvous += o.rendezvous;
        self.bytes_promoted += o.bytes_promoted;
    }
}

/// The outcome of a round.
#[derive(Clone, Debug)]
pub struct RoundResult {
    pub report: Report,
    pub counts: RuntimeCounts,
    pub failure: Option<Failure>,
}

/// Runs a planned round. `progress` gets each operation's index.
/// No operation starts after `deadline`.
pub fn run(
    plan: &RoundPlan,
    fault: Option<Fault>,
    progress: Option<Arc<dyn Fn(usize) + Send + Sync>>,
    deadline: Option<Instant>,
) -> RoundResult {
    let rt = match Runtime::new(plan.config.clone()) {
        Ok(rt) => rt,
        Err(e) => {
            return RoundResult {
                report: Report::default(),
                counts: RuntimeCounts::default(),
                failure: Some(Failure {
                    op: 0,
                    kind: FailureKind::Runtime,
                    what: format!("starting the runtime: {e}"),
                }),
            }
        }
    };
    let opts = Options {
        gc_every: plan.gc_every,
        seed: mix(plan.seed ^ 0x70_7274),
        fault,
        progress,
        deadline,
    };
    let (report, failure) = interp::run_counted(&rt, &plan.program, &opts);
    let stats = rt.stats();
    let t = &stats.total;
    let counts = RuntimeCounts {
        minor: t.minor.count,
        major: t.major.count,
        promotion: t.promotion.count,
        global: rt.global_collections(),
        full_global: rt.full_global_collections(),
        tasks_stolen: t.tasks_stolen,
        threads_stolen: t.threads_stolen,
        rendezvous: t.rendezvous,
        bytes_promoted: t.bytes_promoted,
    };
    let mut failure = failure;
    let thread_errors = rt.take_thread_errors();
    if failure.is_none() && !thread_errors.is_empty() {
        failure = Some(Failure {
            op: plan.program.len(),
            kind: FailureKind::Runtime,
            what: format!("threads failed: {thread_errors:?}"),
        });
    }
    RoundResult {
        report,
        counts,
        failure,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_is_a_function_of_its_seed() {
        let a = RoundPlan::new(42, 2, "split", None).unwrap();
        let b = RoundPlan::new(42, 2, "split", None).unwrap();
        assert_eq!(a.program, b.program);
        assert_eq!(a.describe(), b.describe());
        assert!(a.config.verify);
    }

    #[test]
    fn an_unknown_plan_is_refused_by_name() {
        let e = RoundPlan::new(1, 2, "generational", None).unwrap_err();
        assert!(e.contains("plan") && e.contains("generational"), "{e}");
        assert!(RoundPlan::new(1, 2, "split-heap", None).is_ok());
    }

    #[test]
    fn gc_every_is_drawn_unless_given() {
        let drawn: std::collections::BTreeSet<u32> = (0..200)
            .map(|s| RoundPlan::new(s, 1, "split", None).unwrap().gc_every)
            .collect();
        assert!(drawn.len() >= 6, "{drawn:?}");
        assert_eq!(RoundPlan::new(3, 1, "split", Some(1)).unwrap().gc_every, 1);
    }
}
