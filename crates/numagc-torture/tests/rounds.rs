//! Seeded rounds, as `numagc torture` runs them, on one and two vprocs.

use numagc_torture::round::{self, RoundPlan};

#[test]
fn seeded_rounds_pass() {
    for seed in 0..6u64 {
        for vprocs in [1, 2] {
            // Harshness from 3 up: the debug profile is slow.
            let every = [3, 10, 50, 300, 0, 7][seed as usize];
            let plan = RoundPlan::new(seed, vprocs, "split", Some(every)).unwrap();
            let r = round::run(&plan, None, None, None);
            assert!(
                r.failure.is_none(),
                "seed {seed} vprocs {vprocs} ({}): {}",
                plan.describe(),
                r.failure.unwrap()
            );
            assert!(r.report.objects_checked > 0);
        }
    }
}
