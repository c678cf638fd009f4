//! Replays seeded inputs through the fuzz targets' interpreters, without
//! libFuzzer, so that normal CI runs them: pseudo-random byte strings from
//! fixed seeds (splitmix64), of lengths from 0 to a few hundred bytes, plus
//! every file in `fuzz/corpus/<target>/` and `fuzz/regressions/<target>/`
//! when there is one (inputs a campaign kept, or that once found a bug).
//! A panic, an abort, or a kept input that runs over 10 s fails the test,
//! as it would be a finding of the fuzzer.

use numagc_fuzz::SplitMix;
use std::path::Path;

fn replay(target: &str, run: fn(&[u8]), seed: u64, count: usize, max_len: usize) {
    let mut rng = SplitMix(seed);
    for _ in 0..count {
        let len = (rng.next_u64() as usize) % (max_len + 1);
        let input = rng.bytes(len);
        run(&input);
    }
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    for sub in ["corpus", "regressions"] {
        let Ok(entries) = std::fs::read_dir(dir.join(sub).join(target)) else { continue };
        for e in entries.flatten() {
            if let Ok(bytes) = std::fs::read(e.path()) {
                // As libFuzzer's `-timeout=10` in scripts/fuzz.sh: an input
                // over 10 s is a finding (a hang).
                let t = std::time::Instant::now();
                run(&bytes);
                assert!(t.elapsed() < std::time::Duration::from_secs(10), "{}: {:?}", e.path().display(), t.elapsed());
            }
        }
    }
}

#[test]
fn config_inputs() {
    replay("config", numagc_fuzz::config::run, 1, 2000, 400);
}

#[test]
fn descriptor_inputs() {
    replay("descriptor", numagc_fuzz::descriptor::run, 2, 2000, 600);
}

/// Also checks that the seeded inputs reach every kind of outcome the
/// interpreter counts (`capi::OUTCOMES`): a change that made it bail out
/// early, or never block on a channel, would fail here.
#[test]
fn capi_inputs() {
    numagc_fuzz::capi::reach(true);
    replay("capi", numagc_fuzz::capi::run, 3, 2000, 800);
    let reach = numagc_fuzz::capi::reach(false);
    let missed: Vec<&str> = numagc_fuzz::capi::OUTCOMES.iter().copied().filter(|o| reach.get(o).copied().unwrap_or(0) == 0).collect();
    assert!(missed.is_empty(), "the seeded inputs never reached {missed:?}; reached: {reach:?}");
}
