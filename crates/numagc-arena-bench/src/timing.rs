//! The workload's own time: from `start()` (after the arguments are read)
//! to `stop()` (before the answer is checked), so that a check that
//! recomputes the answer (larson's and xmalloc-test's replays) and the
//! process's start-up and exit stay out of the figure. Each workload's
//! `ok` line ends with `seconds=` this time; `numagc arena-bench` uses it
//! for its medians and overheads and records the process's wall time too.

use std::sync::Mutex;
use std::time::Instant;

static START: Mutex<Option<Instant>> = Mutex::new(None);
static SECONDS: Mutex<Option<f64>> = Mutex::new(None);

pub fn start() {
    *START.lock().unwrap_or_else(|e| e.into_inner()) = Some(Instant::now());
}

pub fn stop() {
    let start = *START.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(t0) = start {
        *SECONDS.lock().unwrap_or_else(|e| e.into_inner()) = Some(t0.elapsed().as_secs_f64());
    }
}

/// The time measured, if `start` and `stop` were called.
pub fn seconds() -> Option<f64> {
    *SECONDS.lock().unwrap_or_else(|e| e.into_inner())
}
