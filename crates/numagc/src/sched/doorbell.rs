//! A doorbell per vproc: how a vproc that waits inside a computation (for a
//! stolen task's result, or for the environment of a task it stole) is woken
//! by whoever changed what it waits for.
//!
//! Protocol: the ringer first publishes its change (an atomic store), then
//! rings; the waiter tests its condition under the bell's lock before
//! sleeping. A ring that comes before the wait leaves `rung` set, one that
//! comes after finds the waiter asleep on the condition variable: no wake-up
//! is lost (`loom_models::waking::doorbell_*`).

use crate::sync::{lock, wait, Condvar, Mutex};

pub(crate) struct Doorbell {
    rung: Mutex<bool>,
    cv: Condvar,
}

impl Doorbell {
    pub fn new() -> Doorbell {
        Doorbell {
            rung: Mutex::new(false),
            cv: Condvar::new(),
        }
    }

    pub fn ring(&self) {
        *lock(&self.rung) = true;
        self.cv.notify_all();
    }

    /// Sleeps until rung, unless `ready()` holds already; clears the ring.
    pub fn wait_unless(&self, ready: impl Fn() -> bool) {
        let mut rung = lock(&self.rung);
        while !*rung && !ready() {
            rung = wait(&self.cv, rung);
        }
        *rung = false;
    }
}
