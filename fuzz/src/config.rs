//! Fuzzing the settings: [`run`] applies up to 48 operations to a
//! `ConfigBuilder` — `set(name, value)` with known and unknown names and
//! arbitrary or near-valid values, the typed setters with arbitrary
//! numbers, `from_env_map` with `NUMAGC_*` and other keys — and builds.
//! It also feeds the text to `parse_size` and `Topology::synthetic`.
//!
//! Checked, besides "no panic, no hang":
//! * a refused `set` names its setting (or `setting` for an unknown name)
//!   and the value as given, with a non-empty allowed range, and leaves the
//!   builder as it was;
//! * a refused `build` names a setting and, when that setting's value came
//!   from `set`, the text as given;
//! * an accepted `build` gives a `Config` inside every documented range,
//!   cross-setting ones included (the invariant of `numagc::config`);
//! * `parse_size(format_size(n)) == Some(n)` for every `n`, and a parsed
//!   size formats back to the same number;
//! * a synthetic topology has the nodes and CPUs it was asked for, and
//!   places any number of vprocs on them.

use crate::Input;
use numagc::config::{format_size, parse_size, settings};
use numagc::{ConfigBuilder, ConfigError, NumaPolicy, PlanKind, TaskPromotion, Topology};
use std::collections::BTreeMap;

const MAX_OPS: usize = 48;
const KIB: usize = 1 << 10;
const GIB: usize = 1 << 30;
const TIB: usize = 1 << 40;

const UNITS: &[&str] = &["", "B", "K", "k", "KB", "KiB", "kib", "M", "MiB", " mib", "G", "g", "T", "TiB", "X", "%", ".5", "e3"];
const WORDS: &[&str] = &[
    "", " ", "true", "false", "1", "0", "yes", "no", "on", "off", "maybe", "local", "interleave", "node0", "Node0", "remote",
    "split", "split-heap", "SPLIT", "generational", "lazy", "eager", "detect", "DETECT", "2x2", "1x1", "64x1024", "65x1", "0x4",
    "4X2", "x", "NaN", "inf", "-inf", "-0", "1.0", "100", "100.0", "100.5", "0.999", "1e2", "+1", "-1", "90%", "101%",
];

/// A value that is often near a valid one.
pub fn value(inp: &mut Input) -> String {
    match inp.u8() % 8 {
        0 => inp.text(24),
        1 => inp.size().to_string(),
        2 => format!("{}{}", inp.below(5000), inp.pick(UNITS)),
        3 | 4 => inp.pick(WORDS).to_string(),
        5 => format!("{}x{}", inp.below(1100), inp.below(1100)),
        6 => f64::from_bits(inp.u64()).to_string(),
        _ => (inp.u64() as i64).to_string(),
    }
}

/// A setting name: usually a real one.
pub fn name(inp: &mut Input) -> String {
    match inp.u8() % 8 {
        0 => inp.text(16),
        1 => settings()[inp.below(settings().len())].name.to_uppercase(),
        _ => settings()[inp.below(settings().len())].name.to_string(),
    }
}

fn check_refusal(e: &ConfigError) {
    assert!(!e.setting.is_empty() && !e.allowed.is_empty(), "refusal without a setting or a range: {e:?}");
    let shown = e.to_string();
    assert!(shown.contains(e.setting), "message {shown:?} does not name {}", e.setting);
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let mut inp = Input::new(data);
    let mut b = ConfigBuilder::new();
    // The text given to `set` for each setting still in force.
    let mut given: BTreeMap<String, String> = BTreeMap::new();
    for _ in 0..MAX_OPS {
        if inp.is_empty() {
            break;
        }
        match inp.u8() % 10 {
            0..=3 => {
                let (n, v) = (name(&mut inp), value(&mut inp));
                let before = format!("{b:?}");
                match b.set(&n, &v) {
                    Ok(_) => {
                        given.insert(n, v);
                    }
                    Err(e) => {
                        check_refusal(&e);
                        if settings().iter().any(|s| s.name == n) {
                            assert_eq!(e.setting, n, "set({n:?}, {v:?}) refused as another setting: {e}");
                            // A topology is shown trimmed, as `Topology::synthetic` saw it.
                            let shown = if n == "topology" { v.trim() } else { v.as_str() };
                            assert_eq!(e.value, shown, "set({n:?}, {v:?}) refused another value: {e}");
                        } else {
                            assert_eq!((e.setting, e.value.as_str()), ("setting", n.as_str()), "unknown name: {e}");
                        }
                        assert_eq!(before, format!("{b:?}"), "set({n:?}, {v:?}) was refused but changed the builder");
                    }
                }
            }
            4 | 5 => {
                let key = settings()[inp.below(settings().len())].name;
                typed(&mut inp, &mut b, key);
                given.remove(key);
            }
            6 => {
                // The environment path: NUMAGC_* keys (known or not) and others.
                let mut vars = Vec::new();
                for _ in 0..inp.below(6) {
                    let key = match inp.u8() % 4 {
                        0 => format!("NUMAGC_{}", inp.text(12)),
                        1 => inp.text(12),
                        _ => settings()[inp.below(settings().len())].env.to_string(),
                    };
                    vars.push((key, value(&mut inp)));
                }
                match ConfigBuilder::from_env_map(vars.clone()) {
                    Ok(env_b) => {
                        b = env_b;
                        given.clear();
                        let mut last: BTreeMap<String, String> = BTreeMap::new();
                        for (k, v) in vars {
                            last.insert(k, v);
                        }
                        for (k, v) in last {
                            if let Some(s) = settings().iter().find(|s| s.env == k) {
                                given.insert(s.name.to_string(), v);
                            }
                        }
                    }
                    Err(e) => {
                        check_refusal(&e);
                        let names_a_key = e.setting == "environment" && vars.iter().any(|(k, _)| *k == e.value);
                        let names_a_setting = settings().iter().any(|s| s.name == e.setting);
                        assert!(names_a_key || names_a_setting, "environment refusal names neither a key nor a setting: {e:?}");
                    }
                }
            }
            7 => {
                let t = inp.text(24);
                if let Some(n) = parse_size(&t) {
                    assert_eq!(parse_size(&format_size(n)), Some(n), "{t:?} parsed to {n}");
                }
                let n = inp.size();
                assert_eq!(parse_size(&format_size(n)), Some(n), "format_size({n}) = {:?}", format_size(n));
            }
            8 => {
                let spec = value(&mut inp);
                if let Ok(t) = Topology::synthetic(&spec) {
                    let (n, m) = spec.trim().split_once(['x', 'X']).expect("an accepted spec is NxM");
                    let (n, m): (usize, usize) = (n.parse().unwrap(), m.parse().unwrap());
                    assert_eq!(t.num_nodes(), n);
                    assert!(t.nodes.iter().all(|node| node.cpus.len() == m));
                    let k = inp.below(70);
                    let places = t.place_vprocs(k);
                    assert_eq!(places.len(), k);
                    assert!(places.iter().all(|p| p.node < n), "{spec}: a vproc placed off the topology");
                }
            }
            _ => build(&b, &given),
        }
    }
    build(&b, &given);
}

/// A typed setter with an arbitrary argument.
fn typed(inp: &mut Input, b: &mut ConfigBuilder, key: &str) {
    let c = b.clone();
    *b = match key {
        "plan" => c.plan(inp.pick(&[PlanKind::SplitHeap, PlanKind::SharedHeap])),
        "vprocs" => c.vprocs(inp.size()),
        "topology" => c.topology(inp.bool().then(|| value(inp))),
        "numa-policy" => c.numa_policy(inp.pick(&NumaPolicy::ALL)),
        "local-heap" => c.local_heap_size(inp.size()),
        "min-nursery" => c.min_nursery_size(inp.size()),
        "max-minor-heap" => c.max_minor_heap_size(inp.size()),
        "chunk-size" => c.chunk_size(inp.size()),
        "large-object" => c.large_object_size(inp.size()),
        "global-gc-threshold" => c.global_gc_threshold(inp.size()),
        "heap-growth" => c.heap_growth(if inp.bool() { f64::from_bits(inp.u64()) } else { inp.below(2000) as f64 / 10.0 }),
        "max-heap" => c.max_heap(inp.size()),
        "young-global-gc" => c.young_global_gc(inp.bool()),
        "survivor-promotion" => c.survivor_promotion(if inp.bool() { inp.u32() } else { inp.below(120) as u32 }),
        "compact-overhead" => c.compact_overhead(if inp.bool() { inp.u32() } else { inp.below(2000) as u32 }),
        "task-promotion" => c.task_promotion(inp.pick(&[TaskPromotion::Lazy, TaskPromotion::Eager])),
        "vproc-stack" => c.vproc_stack(inp.size()),
        "verify" => c.verify(inp.bool()),
        "trace" => c.trace(inp.bool()),
        "pin" => c.pin(inp.bool()),
        "safepoint-timeout" => c.safepoint_timeout(std::time::Duration::from_millis(if inp.bool() { inp.u64() } else { inp.below(10_000) as u64 })),
        other => panic!("setting {other} has no typed setter in the fuzzer: add it"),
    };
}

/// Builds and checks the result against the documented ranges.
fn build(b: &ConfigBuilder, given: &BTreeMap<String, String>) {
    match b.build() {
        Ok(c) => {
            assert!((1..=1024).contains(&c.vprocs), "{c:?}");
            let lh = c.local_heap_size;
            assert!((64 * KIB..=GIB).contains(&lh) && lh % (4 * KIB) == 0, "{c:?}");
            let cs = c.chunk_size;
            assert!((64 * KIB..=64 << 20).contains(&cs) && cs.is_power_of_two(), "{c:?}");
            assert!((4 * KIB..=lh / 4).contains(&c.min_nursery_size), "{c:?}");
            let mm = c.max_minor_heap_size;
            assert!((lh..=GIB).contains(&mm) && mm % (4 * KIB) == 0, "{c:?}");
            assert!((256..=(cs / 4).min(lh / 8)).contains(&c.large_object_size), "{c:?}");
            assert!((cs..=TIB).contains(&c.global_gc_threshold), "{c:?}");
            assert!(c.heap_growth.is_finite() && (1.0..=100.0).contains(&c.heap_growth), "{c:?}");
            assert!(c.survivor_promotion <= 100, "{c:?}");
            assert!(c.compact_overhead <= 1_000_000, "{c:?}");
            assert!((64 * KIB..=GIB).contains(&c.vproc_stack), "{c:?}");
            assert!(c.vprocs * c.vproc_stack <= 256 * GIB, "{c:?}");
            assert!((c.vprocs * (lh + 2 * cs)..=16 * TIB).contains(&c.max_heap), "{c:?}");
            if let Some(spec) = &c.topology {
                assert!(Topology::synthetic(spec).is_ok(), "accepted topology {spec:?} does not parse");
            }
            // The configuration serialises (the CLI's `info --json`).
            let _ = format!("{c:?}");
        }
        Err(e) => {
            check_refusal(&e);
            assert!(settings().iter().any(|s| s.name == e.setting), "build refused an unknown setting: {e:?}");
            if let Some(v) = given.get(e.setting) {
                if e.setting != "topology" {
                    assert_eq!(&e.value, v, "build refused {} but did not show the value as given", e.setting);
                }
            }
        }
    }
}
