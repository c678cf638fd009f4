//! Unit tests of the settings: defaults, every range (own and between
//! settings), the environment and `set` paths, the values read back from
//! `Config::value_text`, and the text parsers and formatters.

use super::*;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn refusal(name: &str, value: &str) -> ConfigError {
    // The ranges below assume a 1 MiB local heap and 1 MiB chunks.
    let mut builder = ConfigBuilder::new().vprocs(4).local_heap_size(MIB);
    match builder.set(name, value).and_then(|b| b.build()) {
        Ok(cfg) => panic!("{name}={value} was accepted: {cfg:?}"),
        Err(e) => e,
    }
}

#[test]
fn defaults_are_valid_and_as_documented() {
    let cfg = Config::default();
    assert_eq!(cfg.plan, PlanKind::SplitHeap);
    assert_eq!(cfg.numa_policy, NumaPolicy::Local);
    assert_eq!(cfg.local_heap_size, DEFAULT_LOCAL_HEAP);
    assert_eq!(cfg.min_nursery_size, DEFAULT_LOCAL_HEAP / 8);
    assert_eq!(cfg.max_minor_heap_size, 8 * DEFAULT_LOCAL_HEAP);
    assert_eq!(cfg.chunk_size, MIB);
    assert_eq!(cfg.large_object_size, 16 * KIB);
    assert_eq!(cfg.global_gc_threshold, 32 * MIB);
    assert_eq!(cfg.heap_growth, 2.0);
    assert_eq!(cfg.topology, None);
    assert!(!cfg.verify && cfg.pin);
    assert_eq!(
        cfg.vprocs,
        topology::allowed_cpus().len().clamp(1, MAX_VPROCS)
    );
    assert!(cfg.max_heap >= cfg.vprocs * (cfg.local_heap_size + 2 * cfg.chunk_size));
    assert!(cfg.max_heap <= MAX_HEAP_LIMIT);
}

#[test]
fn every_bad_value_names_its_setting_and_value() {
    let cases: &[(&str, &str)] = &[
        ("plan", "generational"),
        ("vprocs", "0"),
        ("vprocs", "1025"),
        ("vprocs", "many"),
        ("topology", "4x"),
        ("numa-policy", "remote"),
        ("local-heap", "32K"),
        ("local-heap", "2G"),
        ("local-heap", "65537"),
        ("min-nursery", "2K"),
        ("min-nursery", "512K"),
        ("max-minor-heap", "32K"),
        ("max-minor-heap", "2G"),
        ("max-minor-heap", "65537"),
        ("max-minor-heap", "512K"),
        ("chunk-size", "96K"),
        ("chunk-size", "128M"),
        ("large-object", "128"),
        ("large-object", "256K"),
        ("global-gc-threshold", "4K"),
        ("global-gc-threshold", "2T"),
        ("heap-growth", "0.5"),
        ("heap-growth", "NaN"),
        ("heap-growth", "inf"),
        ("max-heap", "1M"),
        ("max-heap", "17T"),
        ("verify", "maybe"),
        ("young-global-gc", "sometimes"),
        ("survivor-promotion", "101"),
        ("survivor-promotion", "half"),
        ("compact-overhead", "1000001"),
        ("compact-overhead", "-1"),
        ("compact-overhead", "lots"),
        ("task-promotion", "sometimes"),
        ("pin", "2"),
        ("safepoint-timeout", "soon"),
        ("safepoint-timeout", "1.5s"),
        ("safepoint-timeout", "3601s"),
        ("safepoint-timeout", "10m"),
    ];
    for &(name, value) in cases {
        let e = refusal(name, value);
        assert_eq!((e.setting, e.value.as_str()), (name, value), "{e}");
        assert!(!e.allowed.is_empty());
    }
}

#[test]
fn cross_field_errors_state_the_dependent_range() {
    let e = refusal("large-object", "192K");
    assert_eq!(
        e.allowed,
        "256 B ..= 128 KiB (min of chunk-size/4 and local-heap/8)"
    );
    let e = ConfigBuilder::new()
        .vprocs(2)
        .local_heap_size(MIB)
        .max_heap(4 * MIB)
        .build()
        .unwrap_err();
    assert_eq!((e.setting, e.value.as_str()), ("max-heap", "4194304"));
    assert!(e.allowed.starts_with("6 MiB (vprocs x"), "{}", e.allowed);
    let e = ConfigBuilder::new()
        .chunk_size(64 * MIB)
        .global_gc_threshold(32 * MIB)
        .build()
        .unwrap_err();
    assert_eq!(e.setting, "global-gc-threshold");
    assert_eq!(e.allowed, "64 MiB (chunk-size) ..= 1 TiB");
}

#[test]
fn max_minor_heap_is_at_least_the_local_heap_and_follows_it_by_default() {
    let e = ConfigBuilder::new()
        .local_heap_size(32 * MIB)
        .max_minor_heap_size(16 * MIB)
        .build()
        .unwrap_err();
    assert_eq!(e.setting, "max-minor-heap");
    assert_eq!(e.allowed, "32 MiB (local-heap) ..= 1 GiB");
    let cfg = ConfigBuilder::new().local_heap_size(MIB).build().unwrap();
    assert_eq!(cfg.max_minor_heap_size, 8 * MIB);
    // The default is capped at the largest size; equal to the local heap
    // it fixes the size.
    let cfg = ConfigBuilder::new()
        .local_heap_size(GIB)
        .max_heap(4 * GIB)
        .vprocs(1)
        .build()
        .unwrap();
    assert_eq!(cfg.max_minor_heap_size, GIB);
    let mut b = ConfigBuilder::new();
    b.set("max-minor-heap", "16M").unwrap();
    assert_eq!(b.build().unwrap().max_minor_heap_size, 16 * MIB);
    assert_eq!(
        b.build().unwrap().value_text("max-minor-heap").unwrap(),
        "16 MiB"
    );
}

#[test]
fn unknown_setting_name_lists_the_names() {
    let e = ConfigBuilder::new()
        .set("nursery", "1M")
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.value, "nursery");
    assert!(e.allowed.contains("min-nursery") && e.allowed.contains("numa-policy"));
}

#[test]
fn env_map_overrides_defaults_and_ignores_other_keys() {
    let cfg = ConfigBuilder::from_env_map(env(&[
        ("PATH", "/bin"),
        ("NUMAGC_VPROCS", "3"),
        ("NUMAGC_NUMA_POLICY", "Interleave"),
        ("NUMAGC_LOCAL_HEAP", "2MiB"),
        ("NUMAGC_TOPOLOGY", "2x2"),
        ("NUMAGC_VERIFY", "on"),
        ("NUMAGC_PIN", "no"),
        ("NUMAGC_HEAP_GROWTH", "1.5"),
        ("NUMAGC_PLAN", "split-heap"),
    ]))
    .unwrap()
    .build()
    .unwrap();
    assert_eq!(cfg.vprocs, 3);
    assert_eq!(cfg.numa_policy, NumaPolicy::Interleave);
    assert_eq!(cfg.local_heap_size, 2 * MIB);
    assert_eq!(cfg.topology.as_deref(), Some("2x2"));
    assert!(cfg.verify && !cfg.pin);
    assert_eq!(cfg.heap_growth, 1.5);
    let detect = ConfigBuilder::from_env_map(env(&[("NUMAGC_TOPOLOGY", "detect")])).unwrap();
    assert_eq!(detect.build().unwrap().topology, None);
}

#[test]
fn unknown_numagc_key_is_refused() {
    let e = ConfigBuilder::from_env_map(env(&[("NUMAGC_NURSERY", "1M")])).unwrap_err();
    assert_eq!(e.value, "NUMAGC_NURSERY");
    assert!(e.allowed.contains("NUMAGC_MIN_NURSERY"));
}

#[test]
fn env_value_errors_name_the_setting() {
    // Refused as it is read, not only by `build`.
    let e = ConfigBuilder::from_env_map(env(&[("NUMAGC_CHUNK_SIZE", "3M")])).unwrap_err();
    assert_eq!((e.setting, e.value.as_str()), ("chunk-size", "3M"));
    // A range that depends on another setting waits for `build`.
    let e = ConfigBuilder::from_env_map(env(&[
        ("NUMAGC_CHUNK_SIZE", "4M"),
        ("NUMAGC_GLOBAL_GC_THRESHOLD", "1M"),
    ]))
    .unwrap()
    .build()
    .unwrap_err();
    assert_eq!((e.setting, e.value.as_str()), ("global-gc-threshold", "1M"));
}

#[test]
fn derived_defaults_follow_local_heap_and_chunk_size() {
    let small = ConfigBuilder::new()
        .local_heap_size(64 * KIB)
        .build()
        .unwrap();
    assert_eq!(small.min_nursery_size, 8 * KIB);
    assert_eq!(small.large_object_size, 8 * KIB);
    let big = ConfigBuilder::new()
        .local_heap_size(8 * MIB)
        .build()
        .unwrap();
    assert_eq!(big.min_nursery_size, MIB);
    assert_eq!(big.large_object_size, 16 * KIB);
    let small_chunk = ConfigBuilder::new()
        .chunk_size(64 * KIB)
        .global_gc_threshold(64 * KIB)
        .build()
        .unwrap();
    assert_eq!(small_chunk.large_object_size, 16 * KIB);
    let explicit = ConfigBuilder::new()
        .local_heap_size(8 * MIB)
        .min_nursery_size(64 * KIB)
        .build()
        .unwrap();
    assert_eq!(explicit.min_nursery_size, 64 * KIB);
}

#[test]
fn explicit_max_heap_is_kept_and_default_respects_the_floor() {
    let cfg = ConfigBuilder::new()
        .vprocs(1)
        .local_heap_size(MIB)
        .max_heap(3 * MIB)
        .build()
        .unwrap();
    assert_eq!(cfg.max_heap, 3 * MIB);
    let floor = 1024 * (GIB + 2 * 64 * MIB);
    let cfg = ConfigBuilder::new()
        .vprocs(1024)
        .local_heap_size(GIB)
        .chunk_size(64 * MIB)
        .global_gc_threshold(64 * MIB)
        .large_object_size(KIB)
        .build_for(1280 * GIB)
        .unwrap();
    assert_eq!(cfg.max_heap, floor);
    assert!(
        cfg.notes[0].starts_with("max-heap raised from 960 GiB"),
        "{:?}",
        cfg.notes
    );
}

/// Issue 16, defect 9: `--vprocs 1024 --local-heap 1G` silently raised
/// the default heap limit past physical memory. Now the default is
/// raised only up to physical memory, with a note; past it the
/// configuration is refused unless `max-heap` is set explicitly.
#[test]
fn a_default_max_heap_past_physical_memory_is_refused() {
    let big = ConfigBuilder::new().vprocs(1024).local_heap_size(GIB);
    let e = big.build_for(64 * GIB).unwrap_err();
    assert_eq!(e.setting, "max-heap");
    assert!(e.value.contains("raised to 1026 GiB"), "{e}");
    assert!(
        e.allowed.contains("64 GiB of physical memory") && e.allowed.contains("explicitly"),
        "{e}"
    );
    // Explicitly: kept, even past physical memory.
    let cfg = big.clone().max_heap(2 * TIB).build_for(64 * GIB).unwrap();
    assert_eq!(cfg.max_heap, 2 * TIB);
    assert!(cfg.notes.is_empty());
    // Between 3/4 of physical memory and all of it: raised, and said.
    let cfg = ConfigBuilder::new()
        .vprocs(4)
        .local_heap_size(GIB)
        .build_for(5 * GIB)
        .unwrap();
    assert_eq!(cfg.max_heap, 4 * (GIB + 2 * MIB));
    assert_eq!(
        cfg.notes,
        ["max-heap raised from 3840 MiB (3/4 of physical memory) to 4104 MiB, which vprocs x (local-heap + 2 x chunk-size) needs"]
    );
    assert!(cfg.warnings().contains(&cfg.notes[0]));
    // Unknown physical memory: the floor, as before.
    let cfg = ConfigBuilder::new().vprocs(2).build_for(0).unwrap();
    assert_eq!(cfg.max_heap, 2 * (16 * MIB + 2 * MIB));
}

/// Issue 16: `vproc-stack`, its own range at `set`, the total of all
/// vprocs' stacks at `build`.
#[test]
fn vproc_stack_range() {
    assert_eq!(Config::default().vproc_stack, 256 * MIB);
    let mut b = ConfigBuilder::new().vprocs(4);
    for (given, bytes) in [
        ("1M", MIB),
        ("64M", 64 * MIB),
        ("1G", GIB),
        ("1100000", 1_100_000),
    ] {
        b.set("vproc-stack", given).unwrap();
        assert_eq!(b.build().unwrap().vproc_stack, bytes, "{given}");
    }
    for bad in ["1023K", "64K", "2G", "0", "-1", "big"] {
        let e = b.set("vproc-stack", bad).map(|_| ()).unwrap_err();
        assert_eq!((e.setting, e.value.as_str()), ("vproc-stack", bad));
        assert_eq!(e.allowed, "a size from 1 MiB to 1 GiB");
    }
    assert_eq!(
        b.build().unwrap().vproc_stack,
        1_100_000,
        "the refused values changed nothing"
    );
    let e = ConfigBuilder::new().vproc_stack(KIB).build().unwrap_err();
    assert_eq!((e.setting, e.value.as_str()), ("vproc-stack", "1024"));
    // 1024 vprocs x 256 MiB is the most; 1024 x 512 MiB is refused.
    let many = ConfigBuilder::new()
        .vprocs(1024)
        .local_heap_size(64 * KIB)
        .max_heap(TIB);
    assert!(many.build().is_ok());
    let e = many.clone().vproc_stack(512 * MIB).build().unwrap_err();
    assert_eq!(e.setting, "vproc-stack");
    assert_eq!(
        e.allowed,
        "1 MiB ..= 256 MiB (256 GiB of stacks in all / 1024 vprocs)"
    );
    let cfg = ConfigBuilder::from_env_map(env(&[("NUMAGC_VPROC_STACK", "8M")]))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(cfg.vproc_stack, 8 * MIB);
}

/// Issue 16, defect 9: `numagc info` shows every value in words (it
/// showed `null` for a detected topology), and the words are read back.
#[test]
fn every_value_has_words_that_are_read_back() {
    let cfg = ConfigBuilder::new().vprocs(2).build().unwrap();
    let mut b = ConfigBuilder::new().vprocs(2);
    for s in settings() {
        let text = cfg
            .value_text(s.name)
            .unwrap_or_else(|| panic!("{} has no words", s.name));
        assert!(
            !text.contains("null") && !text.contains('{'),
            "{}: {text}",
            s.name
        );
        let value = text.split(" (").next().unwrap();
        b.set(s.name, value)
            .unwrap_or_else(|e| panic!("{} = {text:?} is not read back: {e}", s.name));
    }
    assert_eq!(format!("{:?}", b.build().unwrap()), format!("{cfg:?}"));
    assert_eq!(
        cfg.value_text("topology").unwrap(),
        "detect (from /sys/devices/system/node)"
    );
    assert_eq!(cfg.value_text("nursery"), None);
}

#[test]
fn typed_setter_replaces_the_text_given_to_set() {
    let mut b = ConfigBuilder::new();
    b.set("vprocs", "0x10").unwrap_err();
    b.set("vprocs", "2").unwrap();
    b.set("max-heap", "1M").unwrap();
    assert_eq!(b.build().unwrap_err().value, "1M");
    let e = b.clone().max_heap(MIB).build().unwrap_err();
    assert_eq!(e.value, "1048576");
    let e = b.clone().vprocs(0).build().unwrap_err();
    assert_eq!(e.value, "0");
    assert!(b.max_heap(GIB).build().is_ok());
}

/// Found by fuzzing (`fuzz/`, target `config`): a refused topology was
/// kept, so a later `build` failed on a value `set` had refused.
#[test]
fn a_refused_value_changes_nothing() {
    for s in settings() {
        let mut b = ConfigBuilder::new();
        let before = format!("{b:?}");
        b.set(s.name, "33554431x").unwrap_err();
        assert_eq!(
            format!("{b:?}"),
            before,
            "set({}) was refused but changed the builder",
            s.name
        );
    }
    let mut b = ConfigBuilder::new().vprocs(1);
    b.set("topology", "2x1").unwrap();
    b.set("topology", "4x").unwrap_err();
    assert_eq!(b.build().unwrap().topology.as_deref(), Some("2x1"));
}

#[test]
fn policy_and_plan_names_round_trip() {
    for p in NumaPolicy::ALL {
        assert_eq!(p.to_string().parse::<NumaPolicy>().unwrap(), p);
    }
    assert_eq!("split".parse::<PlanKind>().unwrap(), PlanKind::SplitHeap);
    assert_eq!(PlanKind::SplitHeap.to_string(), "split");
    assert_eq!(serde_json::to_value(NumaPolicy::Node0).unwrap(), "node0");
    assert_eq!(serde_json::to_value(PlanKind::SplitHeap).unwrap(), "split");
}

#[test]
fn parse_size_cases() {
    let cases: &[(&str, Option<usize>)] = &[
        ("1048576", Some(MIB)),
        ("256K", Some(256 * KIB)),
        ("256KiB", Some(256 * KIB)),
        ("256kb", Some(256 * KIB)),
        ("4M", Some(4 * MIB)),
        ("4MiB", Some(4 * MIB)),
        ("4 mib", Some(4 * MIB)),
        ("1G", Some(GIB)),
        ("2T", Some(2 * TIB)),
        ("512B", Some(512)),
        ("", None),
        ("K", None),
        ("-1", None),
        ("+1", None),
        ("1.5M", None),
        ("4X", None),
        ("99999999999999999999", None),
        ("17179869184G", None),
    ];
    for &(input, expected) in cases {
        assert_eq!(parse_size(input), expected, "{input:?}");
    }
}

#[test]
fn safepoint_timeout_parses_units_and_zero_means_for_ever() {
    assert_eq!(
        Config::default().safepoint_timeout(),
        Some(std::time::Duration::from_secs(10))
    );
    let mut b = ConfigBuilder::new();
    for (given, ms) in [
        ("250", 250),
        ("250ms", 250),
        ("3s", 3000),
        (" 2 S ", 2000),
        ("3600s", 3_600_000),
    ] {
        b.set("safepoint-timeout", given).unwrap();
        assert_eq!(b.build().unwrap().safepoint_timeout_ms, ms, "{given}");
    }
    b.set("safepoint-timeout", "0").unwrap();
    assert_eq!(b.build().unwrap().safepoint_timeout(), None);
    let cfg = ConfigBuilder::from_env_map(env(&[("NUMAGC_SAFEPOINT_TIMEOUT", "1s")]))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(cfg.safepoint_timeout_ms, 1000);
    let e = ConfigBuilder::new()
        .safepoint_timeout(std::time::Duration::from_secs(7200))
        .build()
        .unwrap_err();
    assert_eq!(
        (e.setting, e.value.as_str()),
        ("safepoint-timeout", "7200000ms")
    );
    assert_eq!(parse_millis("18446744073709551615s"), None);
}

#[test]
fn format_size_uses_exact_units() {
    assert_eq!(format_size(64 * KIB), "64 KiB");
    assert_eq!(format_size(3 * GIB), "3 GiB");
    assert_eq!(format_size(1000), "1000 B");
    assert_eq!(format_size(0), "0 B");
    assert_eq!(format_size_approx(3 * GIB), "3 GiB");
    assert_eq!(format_size_approx(4104 * MIB), "4104 MiB");
    assert_eq!(format_size_approx(18513072 * KIB), "about 17.7 GiB");
    assert_eq!(format_size_approx(1000), "1000 B");
    assert_eq!(format_size_approx(15000), "about 14.6 KiB");
    assert_eq!(size_text(15000), "15000 B (about 14.6 KiB)");
    assert_eq!(size_text(GIB), "1 GiB");
}

/// Issue 16, defect 8: a value outside the setting's own range is
/// refused by `set` (so by the environment, the CLI and
/// `numagc_config_set`), not only later by `build`, with the message
/// `build` gives for the same value, and the builder keeps its value.
#[test]
fn set_refuses_a_value_outside_its_own_range_at_once() {
    let cases: &[(&str, &str)] = &[
        ("vprocs", "0"),
        ("vprocs", "1025"),
        ("heap-growth", "nan"),
        ("heap-growth", "-3"),
        ("heap-growth", "inf"),
        ("chunk-size", "3"),
        ("chunk-size", "96K"),
        ("local-heap", "3"),
        ("local-heap", "65537"),
        ("max-heap", "1"),
        ("max-heap", "17T"),
        ("survivor-promotion", "1000"),
        ("min-nursery", "1K"),
        ("min-nursery", "512M"),
        ("large-object", "128"),
        ("large-object", "32M"),
        ("global-gc-threshold", "4K"),
        ("global-gc-threshold", "2T"),
        ("safepoint-timeout", "3601s"),
    ];
    for &(name, value) in cases {
        let mut b = ConfigBuilder::new().vprocs(2);
        let before = format!("{b:?}");
        let e = match b.set(name, value) {
            Ok(_) => panic!("{name}={value} was accepted by set"),
            Err(e) => e,
        };
        assert_eq!((e.setting, e.value.as_str()), (name, value), "{e}");
        assert!(!e.allowed.is_empty());
        assert_eq!(
            format!("{b:?}"),
            before,
            "{name}={value} changed the builder"
        );
        assert!(b.build().is_ok(), "the previous values still build");
    }
    // The same message as the typed setter gets from `build`.
    let set = ConfigBuilder::new()
        .set("vprocs", "0")
        .map(|_| ())
        .unwrap_err();
    let typed = ConfigBuilder::new().vprocs(0).build().unwrap_err();
    assert_eq!(set.to_string(), typed.to_string());
    let set = ConfigBuilder::new()
        .set("survivor-promotion", "1000")
        .map(|_| ())
        .unwrap_err();
    let typed = ConfigBuilder::new()
        .survivor_promotion(1000)
        .build()
        .unwrap_err();
    assert_eq!(set.to_string(), typed.to_string());
}

/// Issue 16, defect 9: every enumerated setting takes its names in any
/// case, through one parse function (it was `--plan SPLIT` accepted,
/// `--task-promotion EAGER` refused).
#[test]
fn enumerated_settings_are_case_insensitive() {
    let mut b = ConfigBuilder::new();
    for (name, value) in [
        ("plan", "SPLIT"),
        ("plan", "Split-Heap"),
        ("numa-policy", "NODE0"),
        ("task-promotion", "EAGER"),
        ("verify", "TRUE"),
        ("pin", "Off"),
        ("young-global-gc", "No"),
        ("trace", " YES "),
    ] {
        b.set(name, value)
            .unwrap_or_else(|e| panic!("{name}={value} refused: {e}"));
    }
    let cfg = b.build().unwrap();
    assert_eq!(cfg.task_promotion, TaskPromotion::Eager);
    assert_eq!(cfg.numa_policy, NumaPolicy::Node0);
    assert!(cfg.verify && cfg.trace && !cfg.pin && !cfg.young_global_gc);
    assert_eq!(
        "Lazy".parse::<TaskPromotion>().unwrap(),
        TaskPromotion::Lazy
    );
    let env = ConfigBuilder::from_env_map(env(&[("NUMAGC_TASK_PROMOTION", "Eager")]))
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(env.task_promotion, TaskPromotion::Eager);
}

#[test]
fn settings_table_is_complete_and_consistent() {
    assert_eq!(settings().len(), 21);
    let mut b = ConfigBuilder::new();
    for s in settings() {
        assert_eq!(
            s.env,
            format!("NUMAGC_{}", s.name.to_uppercase().replace('-', "_"))
        );
        // Every name has a parser: a garbage value is refused as that setting, not as unknown.
        let e = b.set(s.name, "@").map(|_| ()).unwrap_err();
        assert_eq!(e.setting, s.name);
    }
}
