//! [`ConfigBuilder`], which turns defaults, `NUMAGC_*` environment
//! variables, named settings and typed setters into a [`Config`], and the
//! table of every setting ([`settings`]).
//!
//! Invariant: a builder only holds values that passed their own range check
//! when given by name ([`ConfigBuilder::set`] parses into a copy, checks it
//! with `check_own` and keeps it only then; a refused value changes
//! nothing), and [`ConfigBuilder::build`] applies `check_own` again to every
//! setting (for the typed setters, which cannot fail) before the checks
//! that involve two settings or the machine, listed in the module doc of
//! [`config`](super). Errors show the value as given to `set` when there
//! was one.

use std::collections::BTreeMap;
use std::fmt;

use super::choices::{parse_choice, BOOL_CHOICES};
use super::text::{format_size, format_size_approx, parse_millis, parse_size, size_text};
// The defaults, limits and `*_ALLOWED` texts, `Config` and the choices.
use super::*;
use crate::error::ConfigError;
use crate::topology::{self, Topology};

/// One setting: its name (`--name` on the command line), environment variable and help.
#[derive(Clone, Copy, Debug)]
pub struct SettingInfo {
    pub name: &'static str,
    pub env: &'static str,
    pub help: &'static str,
    /// A boolean: `--name` alone means `true`.
    pub flag: bool,
}

const SETTINGS: &[SettingInfo] = &[
    SettingInfo { name: "plan", env: "NUMAGC_PLAN", help: "collector plan: split (per-vproc local heaps + chunked global heap, the default) or shared (minor heaps + one mark-and-sweep major heap, OCaml 5's)", flag: false },
    SettingInfo { name: "vprocs", env: "NUMAGC_VPROCS", help: "number of vprocs, 1 ..= 1024; default: CPUs this process may run on", flag: false },
    SettingInfo { name: "topology", env: "NUMAGC_TOPOLOGY", help: "synthetic NUMA topology NxM (N nodes of M CPUs), or \"detect\" to read /sys (default)", flag: false },
    SettingInfo { name: "numa-policy", env: "NUMAGC_NUMA_POLICY", help: "global-heap page placement: local (default), interleave, node0", flag: false },
    SettingInfo { name: "local-heap", env: "NUMAGC_LOCAL_HEAP", help: "bytes per vproc local heap, multiple of 4 KiB, 64 KiB ..= 1 GiB; default 16 MiB", flag: false },
    SettingInfo { name: "max-minor-heap", env: "NUMAGC_MAX_MINOR_HEAP", help: "shared plan: each minor heap starts at local-heap, doubles while an eighth or more of it survives its collections and halves back when a 32nd or less does, up to this, multiple of 4 KiB, local-heap ..= 1 GiB (local-heap: a fixed size); default min(8 x local-heap, 1 GiB)", flag: false },
    SettingInfo { name: "min-nursery", env: "NUMAGC_MIN_NURSERY", help: "major collection when the nursery falls below this, 4 KiB ..= local-heap/4; default local-heap/8", flag: false },
    SettingInfo { name: "chunk-size", env: "NUMAGC_CHUNK_SIZE", help: "bytes per global-heap chunk, power of two, 64 KiB ..= 64 MiB; default 1 MiB", flag: false },
    SettingInfo { name: "large-object", env: "NUMAGC_LARGE_OBJECT", help: "objects of at least this size go to the large-object space, 256 B ..= min(chunk-size/4, local-heap/8); default min(16 KiB, chunk-size/4, local-heap/8)", flag: false },
    SettingInfo { name: "global-gc-threshold", env: "NUMAGC_GLOBAL_GC_THRESHOLD", help: "global heap bytes per vproc that trigger a global collection, chunk-size ..= 1 TiB; default 32 MiB", flag: false },
    SettingInfo { name: "heap-growth", env: "NUMAGC_HEAP_GROWTH", help: "next global collection when the global heap exceeds max(threshold, live x growth), 1.0 ..= 100.0; default 2.0", flag: false },
    SettingInfo { name: "max-heap", env: "NUMAGC_MAX_HEAP", help: "heap limit in bytes, vprocs x (local-heap + 2 x chunk-size) ..= 16 TiB; default 3/4 of physical memory", flag: false },
    SettingInfo { name: "safepoint-timeout", env: "NUMAGC_SAFEPOINT_TIMEOUT", help: "a global collection is called off (nothing moved, the requester gets an error) when a vproc has not reached a safepoint this long after the request, 1ms ..= 3600s, or 0 to wait for ever; default 10s", flag: false },
    SettingInfo { name: "young-global-gc", env: "NUMAGC_YOUNG_GLOBAL_GC", help: "young global collections leave data that survived two of them in place until a full one (true/false); default true", flag: true },
    SettingInfo { name: "survivor-promotion", env: "NUMAGC_SURVIVOR_PROMOTION", help: "after a minor collection whose survivors fill this percentage of the nursery, the next local collection evacuates the local heap to the global heap, 0 (never) ..= 100; default 90", flag: false },
    SettingInfo { name: "compact-overhead", env: "NUMAGC_COMPACT_OVERHEAD", help: "shared plan: compact the major heap at the end of a cycle when it holds more than this percentage of free space over the live data, 0 (never) ..= 1000000; default 500", flag: false },
    SettingInfo { name: "task-promotion", env: "NUMAGC_TASK_PROMOTION", help: "when a forked task's environment is promoted: lazy (when stolen, default) or eager (at the fork)", flag: false },
    SettingInfo { name: "vproc-stack", env: "NUMAGC_VPROC_STACK", help: "stack size of each vproc thread (address space, committed as touched), 1 MiB ..= 1 GiB, vprocs x vproc-stack at most 256 GiB; default 256 MiB", flag: false },
    SettingInfo { name: "verify", env: "NUMAGC_VERIFY", help: "verify the heap after every collection (true/false); default false", flag: true },
    SettingInfo { name: "trace", env: "NUMAGC_TRACE", help: "record a timeline of jobs, collections, steals, waits and sleeps per vproc (true/false); default false", flag: true },
    SettingInfo { name: "pin", env: "NUMAGC_PIN", help: "pin each vproc's thread to its CPU (true/false); default true", flag: true },
];

/// Every setting, in the order the CLI shows them.
pub fn settings() -> &'static [SettingInfo] {
    SETTINGS
}

/// Builds a [`Config`]; values are checked by [`ConfigBuilder::build`].
#[derive(Clone, Debug)]
pub struct ConfigBuilder {
    plan: PlanKind,
    vprocs: usize,
    topology: Option<String>,
    numa_policy: NumaPolicy,
    local_heap_size: usize,
    min_nursery_size: Option<usize>,
    max_minor_heap_size: Option<usize>,
    chunk_size: usize,
    large_object_size: Option<usize>,
    global_gc_threshold: usize,
    heap_growth: f64,
    max_heap: Option<usize>,
    safepoint_timeout_ms: u64,
    young_global_gc: bool,
    survivor_promotion: u32,
    compact_overhead: u32,
    task_promotion: TaskPromotion,
    vproc_stack: usize,
    verify: bool,
    trace: bool,
    pin: bool,
    /// Text given to [`ConfigBuilder::set`] per setting, so errors show the value as given.
    given: BTreeMap<&'static str, String>,
}

impl Default for ConfigBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ConfigBuilder {
    /// All defaults.
    pub fn new() -> Self {
        ConfigBuilder {
            plan: PlanKind::SplitHeap,
            vprocs: topology::allowed_cpus().len().clamp(1, MAX_VPROCS),
            topology: None,
            numa_policy: NumaPolicy::Local,
            local_heap_size: DEFAULT_LOCAL_HEAP,
            min_nursery_size: None,
            max_minor_heap_size: None,
            chunk_size: DEFAULT_CHUNK_SIZE,
            large_object_size: None,
            global_gc_threshold: DEFAULT_GLOBAL_GC_THRESHOLD,
            heap_growth: DEFAULT_HEAP_GROWTH,
            max_heap: None,
            safepoint_timeout_ms: DEFAULT_SAFEPOINT_TIMEOUT_MS,
            young_global_gc: true,
            survivor_promotion: DEFAULT_SURVIVOR_PROMOTION,
            compact_overhead: DEFAULT_COMPACT_OVERHEAD,
            task_promotion: TaskPromotion::Lazy,
            vproc_stack: DEFAULT_VPROC_STACK,
            verify: false,
            trace: false,
            pin: true,
            given: BTreeMap::new(),
        }
    }

    /// Defaults, then every `NUMAGC_*` variable of this process's environment.
    pub fn from_env() -> Result<Self, ConfigError> {
        Self::from_env_map(std::env::vars_os().map(|(k, v)| {
            (
                k.to_string_lossy().into_owned(),
                v.to_string_lossy().into_owned(),
            )
        }))
    }

    /// Defaults, then every `NUMAGC_*` pair of `vars`; other keys are ignored and an
    /// unknown `NUMAGC_*` key is refused.
    pub fn from_env_map(
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let vars: BTreeMap<String, String> = vars
            .into_iter()
            .filter(|(k, _)| k.starts_with("NUMAGC_"))
            .collect();
        let mut builder = Self::new();
        for (key, value) in &vars {
            let info = SETTINGS
                .iter()
                .find(|s| s.env == key)
                .ok_or_else(|| ConfigError {
                    setting: "environment",
                    value: key.clone(),
                    allowed: SETTINGS
                        .iter()
                        .map(|s| s.env)
                        .collect::<Vec<_>>()
                        .join(", "),
                })?;
            builder.set(info.name, value)?;
        }
        Ok(builder)
    }

    /// Sets a setting by its name in [`settings`], parsing `value` and
    /// checking it against the setting's own range (the ranges that depend
    /// on other settings wait for [`ConfigBuilder::build`]). A refused value
    /// changes nothing.
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self, ConfigError> {
        let info = SETTINGS
            .iter()
            .find(|s| s.name == name)
            .ok_or_else(|| ConfigError {
                setting: "setting",
                value: name.to_string(),
                allowed: SETTINGS
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", "),
            })?;
        let setting = info.name;
        let size =
            |allowed: &str| parse_size(value).ok_or_else(|| refused(setting, value, allowed));
        let boolean = || parse_choice(setting, value, BOOL_CHOICES, BOOL_ALLOWED);
        // Parsed into a copy, checked, and only then kept.
        let mut next = self.clone();
        match setting {
            "plan" => next.plan = value.parse()?,
            "vprocs" => {
                next.vprocs = value
                    .trim()
                    .parse()
                    .map_err(|_| refused(setting, value, VPROCS_ALLOWED))?
            }
            "topology" => next.topology = normalize_topology(Some(value.to_string())),
            "numa-policy" => next.numa_policy = value.parse()?,
            "local-heap" => next.local_heap_size = size(LOCAL_HEAP_ALLOWED)?,
            "min-nursery" => next.min_nursery_size = Some(size(MIN_NURSERY_ALLOWED)?),
            "max-minor-heap" => next.max_minor_heap_size = Some(size(MAX_MINOR_HEAP_ALLOWED)?),
            "chunk-size" => next.chunk_size = size(CHUNK_SIZE_ALLOWED)?,
            "large-object" => next.large_object_size = Some(size(LARGE_OBJECT_ALLOWED)?),
            "global-gc-threshold" => next.global_gc_threshold = size(GLOBAL_GC_ALLOWED)?,
            "heap-growth" => {
                next.heap_growth = value
                    .trim()
                    .parse()
                    .map_err(|_| refused(setting, value, HEAP_GROWTH_ALLOWED))?
            }
            "max-heap" => next.max_heap = Some(size(MAX_HEAP_ALLOWED)?),
            "safepoint-timeout" => {
                next.safepoint_timeout_ms = parse_millis(value)
                    .ok_or_else(|| refused(setting, value, SAFEPOINT_TIMEOUT_ALLOWED))?
            }
            "young-global-gc" => next.young_global_gc = boolean()?,
            "task-promotion" => next.task_promotion = value.parse()?,
            "survivor-promotion" => {
                next.survivor_promotion = value
                    .trim()
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| refused(setting, value, SURVIVOR_PROMOTION_ALLOWED))?
            }
            "compact-overhead" => {
                next.compact_overhead = value
                    .trim()
                    .trim_end_matches('%')
                    .parse()
                    .map_err(|_| refused(setting, value, COMPACT_OVERHEAD_ALLOWED))?
            }
            "vproc-stack" => next.vproc_stack = size(VPROC_STACK_ALLOWED)?,
            "verify" => next.verify = boolean()?,
            "trace" => next.trace = boolean()?,
            "pin" => next.pin = boolean()?,
            _ => unreachable!("setting {setting} is in SETTINGS but has no parser"),
        }
        next.given.insert(setting, value.to_string());
        next.check_own(setting)?;
        *self = next;
        Ok(self)
    }

    /// The range check of `setting` alone (not the ranges that depend on
    /// another setting): the one check that [`ConfigBuilder::set`] applies
    /// when a value is set and [`ConfigBuilder::build`] applies to every
    /// setting, so both refuse the same values with the same message.
    fn check_own(&self, setting: &'static str) -> Result<(), ConfigError> {
        let owned = |s: &str| s.to_string();
        let size_in =
            |setting, value: Option<usize>, range: std::ops::RangeInclusive<usize>, allowed| {
                match value {
                    Some(v) => self.check(setting, v, range.contains(&v), || owned(allowed)),
                    None => Ok(()),
                }
            };
        match setting {
            "vprocs" => {
                let n = self.vprocs;
                self.check(setting, n, (1..=MAX_VPROCS).contains(&n), || {
                    owned(VPROCS_ALLOWED)
                })
            }
            "topology" => match &self.topology {
                Some(spec) => Topology::synthetic(spec).map(|_| ()),
                None => Ok(()),
            },
            "local-heap" => {
                let v = self.local_heap_size;
                let ok =
                    (MIN_LOCAL_HEAP..=MAX_LOCAL_HEAP).contains(&v) && v.is_multiple_of(4 * KIB);
                self.check(setting, v, ok, || owned(LOCAL_HEAP_ALLOWED))
            }
            "max-minor-heap" => match self.max_minor_heap_size {
                Some(v) => {
                    let ok =
                        (MIN_LOCAL_HEAP..=MAX_LOCAL_HEAP).contains(&v) && v.is_multiple_of(4 * KIB);
                    self.check(setting, v, ok, || owned(MAX_MINOR_HEAP_ALLOWED))
                }
                None => Ok(()),
            },
            "chunk-size" => {
                let v = self.chunk_size;
                let ok = (MIN_CHUNK..=MAX_CHUNK).contains(&v) && v.is_power_of_two();
                self.check(setting, v, ok, || owned(CHUNK_SIZE_ALLOWED))
            }
            "min-nursery" => size_in(
                setting,
                self.min_nursery_size,
                MIN_NURSERY_FLOOR..=MAX_LOCAL_HEAP / 4,
                MIN_NURSERY_ALLOWED,
            ),
            "large-object" => size_in(
                setting,
                self.large_object_size,
                LARGE_OBJECT_FLOOR..=MAX_CHUNK / 4,
                LARGE_OBJECT_ALLOWED,
            ),
            "global-gc-threshold" => size_in(
                setting,
                Some(self.global_gc_threshold),
                MIN_CHUNK..=MAX_GLOBAL_GC_THRESHOLD,
                GLOBAL_GC_ALLOWED,
            ),
            "max-heap" => size_in(
                setting,
                self.max_heap,
                MIN_MAX_HEAP..=MAX_HEAP_LIMIT,
                MAX_HEAP_ALLOWED,
            ),
            "vproc-stack" => size_in(
                setting,
                Some(self.vproc_stack),
                MIN_VPROC_STACK..=MAX_VPROC_STACK,
                VPROC_STACK_ALLOWED,
            ),
            "heap-growth" => {
                let g = self.heap_growth;
                let ok = g.is_finite() && (1.0..=100.0).contains(&g);
                self.check(setting, g, ok, || owned(HEAP_GROWTH_ALLOWED))
            }
            "survivor-promotion" => {
                let p = self.survivor_promotion;
                self.check(setting, p, p <= 100, || owned(SURVIVOR_PROMOTION_ALLOWED))
            }
            "compact-overhead" => {
                let p = self.compact_overhead;
                self.check(setting, p, p <= MAX_COMPACT_OVERHEAD, || {
                    owned(COMPACT_OVERHEAD_ALLOWED)
                })
            }
            "safepoint-timeout" => {
                let ms = self.safepoint_timeout_ms;
                self.check(
                    setting,
                    format!("{ms}ms"),
                    ms <= MAX_SAFEPOINT_TIMEOUT_MS,
                    || owned(SAFEPOINT_TIMEOUT_ALLOWED),
                )
            }
            // Enumerations and booleans: every value that parses is in range.
            _ => Ok(()),
        }
    }

    fn typed(mut self, setting: &'static str, assign: impl FnOnce(&mut Self)) -> Self {
        assign(&mut self);
        self.given.remove(setting);
        self
    }

    pub fn plan(self, plan: PlanKind) -> Self {
        self.typed("plan", |b| b.plan = plan)
    }
    pub fn vprocs(self, vprocs: usize) -> Self {
        self.typed("vprocs", |b| b.vprocs = vprocs)
    }
    /// `None`, `""` and `"detect"` all mean: detect from /sys.
    pub fn topology(self, spec: Option<String>) -> Self {
        self.typed("topology", |b| b.topology = normalize_topology(spec))
    }
    pub fn numa_policy(self, policy: NumaPolicy) -> Self {
        self.typed("numa-policy", |b| b.numa_policy = policy)
    }
    pub fn local_heap_size(self, bytes: usize) -> Self {
        self.typed("local-heap", |b| b.local_heap_size = bytes)
    }
    /// The shared plan's largest minor heap (`max-minor-heap`); the
    /// local-heap size turns the adaptive sizing off.
    pub fn max_minor_heap_size(self, bytes: usize) -> Self {
        self.typed("max-minor-heap", |b| b.max_minor_heap_size = Some(bytes))
    }
    pub fn min_nursery_size(self, bytes: usize) -> Self {
        self.typed("min-nursery", |b| b.min_nursery_size = Some(bytes))
    }
    pub fn chunk_size(self, bytes: usize) -> Self {
        self.typed("chunk-size", |b| b.chunk_size = bytes)
    }
    pub fn large_object_size(self, bytes: usize) -> Self {
        self.typed("large-object", |b| b.large_object_size = Some(bytes))
    }
    pub fn global_gc_threshold(self, bytes: usize) -> Self {
        self.typed("global-gc-threshold", |b| b.global_gc_threshold = bytes)
    }
    pub fn heap_growth(self, factor: f64) -> Self {
        self.typed("heap-growth", |b| b.heap_growth = factor)
    }
    pub fn max_heap(self, bytes: usize) -> Self {
        self.typed("max-heap", |b| b.max_heap = Some(bytes))
    }
    /// `Duration::ZERO`: wait for ever. Whole milliseconds count.
    pub fn safepoint_timeout(self, timeout: std::time::Duration) -> Self {
        let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
        self.typed("safepoint-timeout", |b| b.safepoint_timeout_ms = ms)
    }
    pub fn young_global_gc(self, on: bool) -> Self {
        self.typed("young-global-gc", |b| b.young_global_gc = on)
    }
    pub fn survivor_promotion(self, percent: u32) -> Self {
        self.typed("survivor-promotion", |b| b.survivor_promotion = percent)
    }
    /// Percent of free space over live data past which the shared plan
    /// compacts its major heap at the end of a cycle; 0: never.
    pub fn compact_overhead(self, percent: u32) -> Self {
        self.typed("compact-overhead", |b| b.compact_overhead = percent)
    }
    pub fn task_promotion(self, when: TaskPromotion) -> Self {
        self.typed("task-promotion", |b| b.task_promotion = when)
    }
    /// Bytes of stack of each vproc thread.
    pub fn vproc_stack(self, bytes: usize) -> Self {
        self.typed("vproc-stack", |b| b.vproc_stack = bytes)
    }
    pub fn verify(self, on: bool) -> Self {
        self.typed("verify", |b| b.verify = on)
    }

    pub fn trace(self, on: bool) -> Self {
        self.typed("trace", |b| b.trace = on)
    }
    pub fn pin(self, on: bool) -> Self {
        self.typed("pin", |b| b.pin = on)
    }

    /// Refuses `value` for `setting` unless `ok`; the error shows the text given to
    /// [`ConfigBuilder::set`] if there was one.
    fn check(
        &self,
        setting: &'static str,
        value: impl fmt::Display,
        ok: bool,
        allowed: impl FnOnce() -> String,
    ) -> Result<(), ConfigError> {
        if ok {
            return Ok(());
        }
        let value = self
            .given
            .get(setting)
            .cloned()
            .unwrap_or_else(|| value.to_string());
        Err(ConfigError {
            setting,
            value,
            allowed: allowed(),
        })
    }

    /// Checks every range, computes derived defaults, and returns the configuration.
    pub fn build(&self) -> Result<Config, ConfigError> {
        self.build_for(physical_memory())
    }

    /// [`ConfigBuilder::build`] on a machine with `physical` bytes of
    /// memory (0: unknown).
    pub(super) fn build_for(&self, physical: usize) -> Result<Config, ConfigError> {
        for s in SETTINGS {
            self.check_own(s.name)?;
        }
        // From here on, only the ranges that involve two settings or the
        // machine (listed in the module doc).
        let vprocs = self.vprocs;
        let local_heap = self.local_heap_size;
        let chunk = self.chunk_size;

        let nursery_max = local_heap / 4;
        let min_nursery = self.min_nursery_size.unwrap_or(local_heap / 8);
        self.check(
            "min-nursery",
            min_nursery,
            (MIN_NURSERY_FLOOR..=nursery_max).contains(&min_nursery),
            || format!("4 KiB ..= {} (local-heap/4)", format_size(nursery_max)),
        )?;

        let max_minor = self
            .max_minor_heap_size
            .unwrap_or((DEFAULT_MINOR_HEAP_GROWTH * local_heap).min(MAX_LOCAL_HEAP));
        self.check(
            "max-minor-heap",
            max_minor,
            (local_heap..=MAX_LOCAL_HEAP).contains(&max_minor),
            || format!("{} (local-heap) ..= 1 GiB", format_size(local_heap)),
        )?;

        let large_max = (chunk / 4).min(local_heap / 8);
        let large_object = self
            .large_object_size
            .unwrap_or(DEFAULT_LARGE_OBJECT_CAP.min(large_max));
        self.check(
            "large-object",
            large_object,
            (LARGE_OBJECT_FLOOR..=large_max).contains(&large_object),
            || {
                format!(
                    "256 B ..= {} (min of chunk-size/4 and local-heap/8)",
                    format_size(large_max)
                )
            },
        )?;

        let threshold = self.global_gc_threshold;
        self.check(
            "global-gc-threshold",
            threshold,
            (chunk..=MAX_GLOBAL_GC_THRESHOLD).contains(&threshold),
            || format!("{} (chunk-size) ..= 1 TiB", format_size(chunk)),
        )?;

        let mut notes = Vec::new();
        // At most 1024 x (1 GiB + 128 MiB), so it cannot overflow and is below 16 TiB.
        let heap_floor = vprocs * (local_heap + 2 * chunk);
        let max_heap = match self.max_heap {
            // Set explicitly: kept, even past physical memory (address
            // space is only reserved; the user asked for it).
            Some(max_heap) => max_heap,
            None => {
                let default = (physical / 4 * 3).min(MAX_HEAP_LIMIT);
                if physical != 0 && heap_floor > physical {
                    return Err(ConfigError {
                        setting: "max-heap",
                        value: format!(
                            "default raised to {} (vprocs x (local-heap + 2 x chunk-size) = {vprocs} x ({} + 2 x {}))",
                            format_size(heap_floor),
                            format_size(local_heap),
                            format_size(chunk)
                        ),
                        allowed: format!(
                            "at most the {} of physical memory unless max-heap is set explicitly: \
                             lower vprocs or local-heap, or set max-heap to go past physical memory",
                            size_text(physical)
                        ),
                    });
                }
                if heap_floor > default {
                    notes.push(format!(
                        "max-heap raised from {} (3/4 of physical memory) to {}, which vprocs x (local-heap + 2 x chunk-size) needs",
                        format_size_approx(default),
                        format_size_approx(heap_floor)
                    ));
                }
                default.max(heap_floor)
            }
        };
        self.check(
            "max-heap",
            max_heap,
            (heap_floor..=MAX_HEAP_LIMIT).contains(&max_heap),
            || {
                format!(
                    "{} (vprocs x (local-heap + 2 x chunk-size)) ..= 16 TiB",
                    format_size(heap_floor)
                )
            },
        )?;

        let stack = self.vproc_stack;
        let stack_max = MAX_TOTAL_VPROC_STACK / vprocs;
        self.check("vproc-stack", stack, stack <= stack_max, || {
            format!(
                "1 MiB ..= {} (256 GiB of stacks in all / {vprocs} vprocs)",
                format_size(stack_max.min(MAX_VPROC_STACK))
            )
        })?;

        Ok(Config {
            plan: self.plan,
            vprocs,
            topology: self.topology.clone(),
            numa_policy: self.numa_policy,
            local_heap_size: local_heap,
            min_nursery_size: min_nursery,
            max_minor_heap_size: max_minor,
            chunk_size: chunk,
            large_object_size: large_object,
            global_gc_threshold: threshold,
            heap_growth: self.heap_growth,
            max_heap,
            safepoint_timeout_ms: self.safepoint_timeout_ms,
            young_global_gc: self.young_global_gc,
            survivor_promotion: self.survivor_promotion,
            compact_overhead: self.compact_overhead,
            task_promotion: self.task_promotion,
            vproc_stack: stack,
            verify: self.verify,
            trace: self.trace,
            pin: self.pin,
            notes,
        })
    }
}

pub(super) fn refused(setting: &'static str, value: &str, allowed: &str) -> ConfigError {
    ConfigError {
        setting,
        value: value.to_string(),
        allowed: allowed.to_string(),
    }
}

fn normalize_topology(spec: Option<String>) -> Option<String> {
    spec.map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty() && !s.eq_ignore_ascii_case("detect"))
}

/// Bytes of physical memory, or 0 when sysconf cannot tell.
fn physical_memory() -> usize {
    // SAFETY: sysconf only reads system constants; it has no memory-safety preconditions.
    let (pages, page_size) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGE_SIZE),
        )
    };
    if pages <= 0 || page_size <= 0 {
        return 0;
    }
    (pages as usize).saturating_mul(page_size as usize)
}
