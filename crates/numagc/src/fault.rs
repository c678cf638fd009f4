//! Fault injection: making the system's memory calls fail on purpose, to
//! test that every failure is reported and leaves a clean state.
//!
//! Memory reaches the heap at two places (see `heap::space`):
//!
//! * [`Point::Reserve`]: the one `mmap` of the heap's address-space
//!   reservation, when a runtime starts. A failure makes
//!   [`Runtime::new`](crate::Runtime::new) return [`ErrorKind::MapFailed`](crate::ErrorKind::MapFailed).
//! * [`Point::MapChunks`]: every run of chunks handed out from the
//!   reservation (a global chunk, a large object, a local heap, a vproc's
//!   copy reserve, to-space set aside for a global collection). The
//!   reservation is `MAP_NORESERVE`: the kernel commits a page when it is
//!   first touched, and there is no commit call that could fail (an
//!   over-commit failure at that point is the kernel's OOM killer, which no
//!   runtime can report). Handing out a run is where a runtime that maps or
//!   commits per chunk would fail, and where this one really fails when the
//!   reservation is exhausted, so that is the injection point.
//!
//! The public part, [`FaultPlan`], exists only with the cargo feature
//! `fault-injection`. Without it the hook that the heap calls is a
//! zero-sized type whose check is the constant `false`: no code, no data,
//! no cost. With it, a runtime made by
//! [`Runtime::with_faults`](crate::Runtime::with_faults) consults its plan
//! at each point; the plan is shared (`Arc`), so a test can arm it at any
//! moment while the runtime runs.

/// Where a failure can be injected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Point {
    /// The `mmap` of the heap's address-space reservation.
    Reserve,
    /// A run of chunks handed out from the reservation.
    MapChunks,
}

/// What the heap consults at each [`Point`].
#[derive(Clone, Default)]
pub(crate) struct Hook {
    #[cfg(feature = "fault-injection")]
    plan: Option<std::sync::Arc<FaultPlan>>,
}

impl Hook {
    /// A hook that consults `plan`.
    #[cfg(feature = "fault-injection")]
    pub fn new(plan: std::sync::Arc<FaultPlan>) -> Hook {
        Hook { plan: Some(plan) }
    }

    /// Whether the call at `point` must fail now.
    #[inline(always)]
    pub fn fails(&self, point: Point) -> bool {
        #[cfg(feature = "fault-injection")]
        if let Some(plan) = &self.plan {
            return plan.should_fail(point);
        }
        let _ = point;
        false
    }
}

#[cfg(feature = "fault-injection")]
pub use plan::FaultPlan;

#[cfg(feature = "fault-injection")]
mod plan {
    use super::Point;
    use std::sync::Mutex;

    #[derive(Default, Debug)]
    struct State {
        fail_reserve: bool,
        /// Chunk maps that still succeed before the failing ones.
        after: usize,
        /// Chunk maps that fail once `after` is used up.
        count: usize,
        attempts: usize,
        injected: usize,
    }

    /// Which memory calls fail, for a runtime made with
    /// [`Runtime::with_faults`](crate::Runtime::with_faults). Every failure
    /// looks like `ENOMEM` from the system.
    #[derive(Default, Debug)]
    pub struct FaultPlan {
        state: Mutex<State>,
    }

    impl FaultPlan {
        /// A plan that injects nothing until armed.
        pub fn new() -> std::sync::Arc<FaultPlan> {
            std::sync::Arc::new(FaultPlan::default())
        }

        fn state(&self) -> std::sync::MutexGuard<'_, State> {
            self.state.lock().unwrap_or_else(|p| p.into_inner())
        }

        /// The next reservation of a heap's address space fails.
        pub fn fail_reservation(&self) {
            self.state().fail_reserve = true;
        }

        /// Of the next chunk maps, `after` succeed and then `count` fail
        /// (replacing what was armed before). `fail_chunk_maps(0, usize::MAX)`
        /// refuses every map from now on.
        pub fn fail_chunk_maps(&self, after: usize, count: usize) {
            let mut s = self.state();
            s.after = after;
            s.count = count;
        }

        /// Disarms everything: every call succeeds again.
        pub fn clear(&self) {
            let mut s = self.state();
            s.fail_reserve = false;
            s.after = 0;
            s.count = 0;
        }

        /// Failures injected so far.
        pub fn injected(&self) -> usize {
            self.state().injected
        }

        /// Chunk maps attempted so far (failed or not).
        pub fn chunk_maps(&self) -> usize {
            self.state().attempts
        }

        pub(crate) fn should_fail(&self, point: Point) -> bool {
            let mut s = self.state();
            let fail = match point {
                Point::Reserve => std::mem::take(&mut s.fail_reserve),
                Point::MapChunks => {
                    s.attempts += 1;
                    if s.count == 0 {
                        false
                    } else if s.after > 0 {
                        s.after -= 1;
                        false
                    } else {
                        s.count -= 1;
                        true
                    }
                }
            };
            s.injected += fail as usize;
            fail
        }
    }
}
