//! The per-vproc work-stealing deque (§2.2): the owner pushes and pops at
//! one end (newest first), thieves steal at the other (oldest first).
//!
//! The ready queue of a vproc's threads (`sched::thread`) is an
//! [`Injector`]: any vproc pushes a thread it resumes there, and the owner
//! and thieves take from it, oldest first.
//!
//! Normal builds use `crossbeam-deque`'s Chase-Lev deque and injector. Under `--cfg loom`
//! a mutex-protected `VecDeque` with the same interface stands in for it,
//! so the model tests explore numagc's own protocol around the deque (who
//! runs a task, promotion on steal, parking) rather than crossbeam's
//! internals, which crossbeam tests itself.

#[cfg(not(loom))]
pub(crate) use crossbeam_deque::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
pub(crate) use model::{Injector, Steal, Stealer, Worker};

#[cfg(loom)]
mod model {
    use crate::sync::{lock, Mutex};
    use std::collections::VecDeque;
    use std::sync::Arc;

    pub(crate) enum Steal<T> {
        Empty,
        Success(T),
        #[allow(dead_code)]
        Retry,
    }

    pub(crate) struct Worker<T>(Arc<Mutex<VecDeque<T>>>);
    pub(crate) struct Stealer<T>(Arc<Mutex<VecDeque<T>>>);

    impl<T> Worker<T> {
        pub fn new_lifo() -> Self {
            Worker(Arc::new(Mutex::new(VecDeque::new())))
        }
        pub fn push(&self, t: T) {
            lock(&self.0).push_back(t);
        }
        pub fn pop(&self) -> Option<T> {
            lock(&self.0).pop_back()
        }
        pub fn is_empty(&self) -> bool {
            lock(&self.0).is_empty()
        }
        pub fn stealer(&self) -> Stealer<T> {
            Stealer(self.0.clone())
        }
    }

    impl<T> Stealer<T> {
        pub fn steal(&self) -> Steal<T> {
            steal_front(&self.0)
        }
        pub fn is_empty(&self) -> bool {
            lock(&self.0).is_empty()
        }
    }

    fn steal_front<T>(q: &Mutex<VecDeque<T>>) -> Steal<T> {
        match lock(q).pop_front() {
            Some(t) => Steal::Success(t),
            None => Steal::Empty,
        }
    }

    /// A first-in first-out queue anyone may push to and steal from.
    pub(crate) struct Injector<T>(Mutex<VecDeque<T>>);

    impl<T> Injector<T> {
        pub fn new() -> Self {
            Injector(Mutex::new(VecDeque::new()))
        }
        pub fn push(&self, t: T) {
            lock(&self.0).push_back(t);
        }
        pub fn steal(&self) -> Steal<T> {
            steal_front(&self.0)
        }
        pub fn is_empty(&self) -> bool {
            lock(&self.0).is_empty()
        }
    }
}
