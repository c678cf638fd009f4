//! The global heap's byte budget: bytes in use against the heap limit
//! (issue 2, item 10: reaching the limit is an error for the mutator that
//! asked, never an abort).
//!
//! **Invariant.** A mutator request is charged only if, at the moment it is
//! added, the bytes in use stay within the limit: the check and the
//! addition are one atomic step (`fetch_update`), so vprocs asking at once
//! cannot each pass a check and together go over it. Collector requests
//! (`force`) are charged unconditionally: a copying collection cannot stop
//! half-way, and the address-space reservation is sized well above the
//! limit so they find room. A request whose memory then cannot be had
//! (the system refuses a map) is uncharged by its caller.

use crate::sync::{AtomicUsize, Ordering};

/// The heap would exceed its limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct OverLimit {
    /// Bytes in use when the request was refused.
    pub in_use: usize,
    pub limit: usize,
}

pub(crate) struct HeapBudget {
    limit: usize,
    in_use: AtomicUsize,
    peak: AtomicUsize,
}

impl HeapBudget {
    pub fn new(limit: usize) -> HeapBudget {
        HeapBudget {
            limit,
            in_use: AtomicUsize::new(0),
            peak: AtomicUsize::new(0),
        }
    }

    /// Adds `bytes` to the bytes in use: for a mutator request (`!force`)
    /// only when the total stays within the limit, checked and added in one
    /// atomic step.
    pub fn charge(&self, bytes: usize, force: bool) -> Result<(), OverLimit> {
        let before = if force {
            self.in_use.fetch_add(bytes, Ordering::AcqRel)
        } else {
            self.in_use
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |u| {
                    u.checked_add(bytes).filter(|&n| n <= self.limit)
                })
                .map_err(|in_use| OverLimit {
                    in_use,
                    limit: self.limit,
                })?
        };
        self.peak.fetch_max(before + bytes, Ordering::Relaxed);
        Ok(())
    }

    /// Gives back `bytes` charged before (memory released, or a charged
    /// request whose memory could not be had).
    pub fn uncharge(&self, bytes: usize) {
        let before = self.in_use.fetch_sub(bytes, Ordering::AcqRel);
        debug_assert!(
            before >= bytes,
            "uncharging {bytes} of {before} bytes in use"
        );
    }

    pub fn in_use(&self) -> usize {
        self.in_use.load(Ordering::Acquire)
    }

    /// The most bytes ever in use at once.
    pub fn peak(&self) -> usize {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn limit(&self) -> usize {
        self.limit
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn mutator_requests_stop_at_the_limit_collector_requests_do_not() {
        let b = HeapBudget::new(100);
        assert_eq!(b.charge(60, false), Ok(()));
        assert_eq!(b.charge(40, false), Ok(()));
        assert_eq!(
            b.charge(1, false),
            Err(OverLimit {
                in_use: 100,
                limit: 100
            })
        );
        assert_eq!(b.charge(50, true), Ok(()));
        assert_eq!((b.in_use(), b.peak()), (150, 150));
        b.uncharge(150);
        assert_eq!((b.in_use(), b.peak()), (0, 150));
        assert_eq!(
            b.charge(usize::MAX, false).map_err(|e| e.in_use),
            Err(0),
            "no overflow"
        );
    }

    /// Many threads charging chunk-sized requests at once never take the
    /// bytes in use past the limit, and exactly limit / chunk succeed.
    #[test]
    fn concurrent_mutator_requests_never_overshoot() {
        use std::sync::Arc;
        for _ in 0..50 {
            let b = Arc::new(HeapBudget::new(10 * 64));
            let granted: usize = (0..4)
                .map(|_| {
                    let b = b.clone();
                    std::thread::spawn(move || {
                        (0..10).filter(|_| b.charge(64, false).is_ok()).count()
                    })
                })
                .collect::<Vec<_>>()
                .into_iter()
                .map(|t| t.join().unwrap())
                .sum();
            assert_eq!(granted, 10);
            assert_eq!(b.in_use(), 640);
            assert!(b.peak() <= 640);
        }
    }
}
