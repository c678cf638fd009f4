//! Every setting of the runtime, in one place.
//!
//! A [`Config`] is built by a [`ConfigBuilder`] from defaults, `NUMAGC_*`
//! environment variables, named settings (`set("local-heap", "2M")`, used by
//! the CLI) or typed setters. The table returned by [`settings`] lists every
//! setting once, with its environment variable and help text.
//!
//! Invariant: a `Config` only exists if every value is inside its range,
//! including the ranges that depend on other settings (the nursery fits the
//! local heap, large objects fit a chunk, the heap limit holds every vproc's
//! local heap and two chunks). Settings derived from others (`min-nursery`,
//! `large-object`, `max-heap`) are computed in [`ConfigBuilder::build`] from the
//! final values unless they were set explicitly. Every refused value is a
//! [`ConfigError`] naming the setting, the value as given, and the allowed range.
//!
//! One rule for every setting (issue 16): each setting's own range is
//! checked by one function, `ConfigBuilder::check_own`, which
//! [`ConfigBuilder::set`] applies at once (so the environment, the CLI's
//! flags and the C API's `numagc_config_set` refuse an out-of-range value
//! when it is set, with the same message, and keep the previous value) and
//! [`ConfigBuilder::build`] applies again to values given to the typed
//! setters (`.vprocs(0)`), which cannot fail without breaking their chains.
//! Enumerated values (`plan`, `numa-policy`, `task-promotion` and the
//! booleans) are read by one function, `parse_choice`: any case, blanks
//! around ignored. Only the checks that involve two settings, or the
//! machine, wait for `build`, whatever the order the settings were given in:
//!
//! - `min-nursery` at most `local-heap`/4;
//! - `large-object` at most min(`chunk-size`/4, `local-heap`/8);
//! - `global-gc-threshold` at least `chunk-size`;
//! - `max-heap` at least `vprocs` x (`local-heap` + 2 x `chunk-size`);
//! - `max-heap` not set: its default, 3/4 of physical memory, is raised to
//!   that floor when it is smaller (a note says so, see
//!   [`Config::warnings`]), and a floor beyond physical memory is refused:
//!   set `max-heap` explicitly to go past physical memory on purpose;
//! - `vprocs` x `vproc-stack` at most 256 GiB of address space.
//!
//! `safepoint-timeout` is a numagc addition (the paper's handshake, §3.4,
//! waits for every vproc without bound): how long the vprocs stopped for a
//! global collection wait for the others before the collection is called
//! off (see `gc::handshake`).
//!
//! Paper: the local-heap size and nursery threshold are those of §3.3 (Appel
//! semi-generational local heaps sized to fit the L3 cache); chunk size, the
//! per-vproc global-collection threshold (§3.4, footnote 2: vprocs × 32 MiB) and
//! the NUMA placement policy (§4.3: local, interleave, node0) configure the
//! global heap.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use crate::error::ConfigError;
use crate::topology::{self, Topology};

const KIB: usize = 1 << 10;
const MIB: usize = 1 << 20;
const GIB: usize = 1 << 30;
const TIB: usize = 1 << 40;

/// Default size of each vproc's local heap (§3.1: "chosen so that the
/// local heaps will fit into the L3 cache").
///
/// Measured, not derived from the reported cache size (a virtual machine may
/// report the host's L3): on the 2-core development machine (32 MiB L3, so
/// 16 MiB per core) the nursery allocation rate through the API is flat from
/// 256 KiB to 64 MiB, while binary-trees depth 21 on 2 vprocs takes 6.6 s
/// with 256 KiB, 6.1 s with 1 MiB, 4.4 s with 4 MiB and 4.2 s with 16 MiB
/// (medians of 3, `docs/results/binarytrees.md`). Larger local heaps keep
/// mid-sized structures out of the global heap; beyond the L3 share the gain
/// comes only from a benchmark's data fitting whole, so 16 MiB it is.
pub const DEFAULT_LOCAL_HEAP: usize = 16 * MIB;
/// Default size of a global-heap chunk.
pub const DEFAULT_CHUNK_SIZE: usize = MIB;
/// Default global-collection threshold per vproc (paper footnote 2).
pub const DEFAULT_GLOBAL_GC_THRESHOLD: usize = 32 * MIB;
/// Default factor by which the live global heap may grow before the next global collection.
pub const DEFAULT_HEAP_GROWTH: f64 = 2.0;
/// Default of `survivor-promotion`, in percent (measured on binary-trees:
/// docs/results/binarytrees.md).
pub const DEFAULT_SURVIVOR_PROMOTION: u32 = 90;
/// Largest default large-object threshold; smaller when the chunk or local heap is small.
pub const DEFAULT_LARGE_OBJECT_CAP: usize = 16 * KIB;
/// Most vprocs a runtime may have.
pub const MAX_VPROCS: usize = 1024;
/// Default `safepoint-timeout`, in milliseconds: generous, since it only
/// has to catch a vproc that never reaches a safepoint (a loop that neither
/// allocates nor polls, a job blocked outside the runtime).
pub const DEFAULT_SAFEPOINT_TIMEOUT_MS: u64 = 10_000;
/// Longest `safepoint-timeout` other than 0 (wait for ever): one hour.
pub const MAX_SAFEPOINT_TIMEOUT_MS: u64 = 3_600_000;
/// Default `vproc-stack`, the stack size of each vproc thread: generous,
/// because it is address space reserved by the thread's mapping and
/// committed only as it is touched, and functional code recurses deeply
/// (GHC and OCaml 5 grow their stacks instead; a thread's cannot grow).
pub const DEFAULT_VPROC_STACK: usize = 256 * MIB;
/// Smallest `vproc-stack`: the runtime's own frames need room (in a debug
/// build, binary-trees of depth 12 overflowed a 64 KiB stack; 128 KiB
/// held, so 1 MiB leaves a margin).
pub const MIN_VPROC_STACK: usize = MIB;
/// Largest `vproc-stack`.
pub const MAX_VPROC_STACK: usize = GIB;
/// Most address space all vproc stacks together may reserve: 1024 vprocs
/// with the default stack, or 256 with the largest.
pub const MAX_TOTAL_VPROC_STACK: usize = 256 * GIB;

const MAX_GLOBAL_GC_THRESHOLD: usize = TIB;
const MAX_HEAP_LIMIT: usize = 16 * TIB;
const MIN_NURSERY_FLOOR: usize = 4 * KIB;
const MIN_LOCAL_HEAP: usize = 64 * KIB;
const MAX_LOCAL_HEAP: usize = GIB;
const MIN_CHUNK: usize = 64 * KIB;
const MAX_CHUNK: usize = 64 * MIB;
/// The smallest heap floor: one vproc, the smallest local heap and chunks.
const MIN_MAX_HEAP: usize = MIN_LOCAL_HEAP + 2 * MIN_CHUNK;
pub(crate) const LARGE_OBJECT_FLOOR: usize = 256;

const PLAN_ALLOWED: &str = "split (or split-heap)";
const POLICY_ALLOWED: &str = "local, interleave, node0";
const BOOL_ALLOWED: &str = "true, false, 1, 0, yes, no, on, off";
const VPROCS_ALLOWED: &str = "1 ..= 1024";
const LOCAL_HEAP_ALLOWED: &str = "a multiple of 4 KiB from 64 KiB to 1 GiB";
const CHUNK_SIZE_ALLOWED: &str = "a power of two from 64 KiB to 64 MiB";
const MIN_NURSERY_ALLOWED: &str = "a size from 4 KiB to local-heap/4 (at most 256 MiB)";
const LARGE_OBJECT_ALLOWED: &str =
    "a size from 256 B to min(chunk-size/4, local-heap/8) (at most 16 MiB)";
const GLOBAL_GC_ALLOWED: &str = "a size from chunk-size (at least 64 KiB) to 1 TiB";
const HEAP_GROWTH_ALLOWED: &str = "a finite number from 1.0 to 100.0";
const TASK_PROMOTION_ALLOWED: &str = "lazy or eager";
const SURVIVOR_PROMOTION_ALLOWED: &str = "a percentage from 0 (never) to 100";
const MAX_HEAP_ALLOWED: &str =
    "a size from vprocs x (local-heap + 2 x chunk-size) (at least 192 KiB) to 16 TiB";
const VPROC_STACK_ALLOWED: &str = "a size from 1 MiB to 1 GiB";
const SAFEPOINT_TIMEOUT_ALLOWED: &str =
    "0 (wait for ever) or a duration from 1ms to 3600s (a number with unit ms or s; no unit: ms)";

/// When the environment of a forked task is promoted to the global heap
/// (§3.1, after Rainey's lazy promotion \[Rai10\]; see `sched`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TaskPromotion {
    /// Only when another vproc steals the task (the paper's lazy promotion).
    Lazy,
    /// When the task is forked, whether or not it is stolen.
    Eager,
}

impl TaskPromotion {
    pub fn name(self) -> &'static str {
        match self {
            TaskPromotion::Lazy => "lazy",
            TaskPromotion::Eager => "eager",
        }
    }
}

impl fmt::Display for TaskPromotion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for TaskPromotion {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        parse_choice(
            "task-promotion",
            s,
            &[
                ("lazy", TaskPromotion::Lazy),
                ("eager", TaskPromotion::Eager),
            ],
            TASK_PROMOTION_ALLOWED,
        )
    }
}

/// Where global-heap chunks get their physical pages (§4.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NumaPolicy {
    /// On the node of the vproc that requests the chunk (the paper's default).
    Local,
    /// Spread page by page over all nodes.
    Interleave,
    /// All on node 0.
    Node0,
}

impl NumaPolicy {
    pub const ALL: [NumaPolicy; 3] = [NumaPolicy::Local, NumaPolicy::Interleave, NumaPolicy::Node0];

    pub fn name(self) -> &'static str {
        match self {
            NumaPolicy::Local => "local",
            NumaPolicy::Interleave => "interleave",
            NumaPolicy::Node0 => "node0",
        }
    }
}

impl fmt::Display for NumaPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for NumaPolicy {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        let choices = NumaPolicy::ALL.map(|p| (p.name(), p));
        parse_choice("numa-policy", s, &choices, POLICY_ALLOWED)
    }
}

/// Which collector plan the runtime uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub enum PlanKind {
    /// Per-vproc local heaps plus a chunked global heap (DLG + Appel, §3).
    #[serde(rename = "split")]
    SplitHeap,
}

impl PlanKind {
    pub fn name(self) -> &'static str {
        match self {
            PlanKind::SplitHeap => "split",
        }
    }
}

impl fmt::Display for PlanKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for PlanKind {
    type Err = ConfigError;
    fn from_str(s: &str) -> Result<Self, ConfigError> {
        parse_choice(
            "plan",
            s,
            &[
                ("split", PlanKind::SplitHeap),
                ("split-heap", PlanKind::SplitHeap),
            ],
            PLAN_ALLOWED,
        )
    }
}

/// A validated configuration; see the module doc for the invariant it keeps.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Config {
    pub plan: PlanKind,
    pub vprocs: usize,
    /// Synthetic topology spec as given (`"4x6"`); `None` = detect from /sys.
    pub topology: Option<String>,
    pub numa_policy: NumaPolicy,
    /// Bytes of each vproc's local heap.
    pub local_heap_size: usize,
    /// Bytes: a major collection runs when the nursery falls below this.
    pub min_nursery_size: usize,
    /// Bytes of a global-heap chunk.
    pub chunk_size: usize,
    /// Bytes: objects of at least this size go to the large-object space.
    pub large_object_size: usize,
    /// Bytes per vproc of global heap that trigger a global collection.
    pub global_gc_threshold: usize,
    /// Next global collection when the global heap exceeds max(threshold, live × growth).
    pub heap_growth: f64,
    /// Young global collections: evacuate only the chunks filled since the
    /// last global collection and the survivors of the one before; older
    /// data stays in place until a full collection (a numagc extension of
    /// §3.4; off = the paper's full collection every time).
    pub young_global_gc: bool,
    /// Percent: after a minor collection whose survivors fill at least this
    /// share of the nursery, the next local collection evacuates the whole
    /// local heap to the global heap in one pass (0 = never; a numagc
    /// extension of §3.3, see `plan::split_heap`).
    pub survivor_promotion: u32,
    /// When a forked task's environment is promoted.
    pub task_promotion: TaskPromotion,
    /// Bytes: the heap limit.
    pub max_heap: usize,
    /// Milliseconds the vprocs stopped for a global collection wait for the
    /// others to reach a safepoint before the collection is called off
    /// (0: wait for ever).
    pub safepoint_timeout_ms: u64,
    /// Bytes of stack of each vproc thread (address space; committed as touched).
    pub vproc_stack: usize,
    pub verify: bool,
    /// Record a timeline of each vproc's jobs, collections, stolen work,
    /// waits and sleeps (`Runtime::trace`).
    pub trace: bool,
    pub pin: bool,
    /// What [`ConfigBuilder::build`] decided that the user should hear
    /// about (a default raised to fit the other settings); see
    /// [`Config::warnings`].
    pub notes: Vec<String>,
}

impl Config {
    pub fn builder() -> ConfigBuilder {
        ConfigBuilder::new()
    }

    /// `safepoint-timeout` as a duration; `None` means wait for ever.
    pub fn safepoint_timeout(&self) -> Option<std::time::Duration> {
        (self.safepoint_timeout_ms > 0)
            .then(|| std::time::Duration::from_millis(self.safepoint_timeout_ms))
    }

    /// Defaults overridden by every `NUMAGC_*` environment variable that is set.
    pub fn from_env() -> Result<Config, ConfigError> {
        ConfigBuilder::from_env()?.build()
    }

    /// Everything about this configuration a person should be told, one
    /// sentence each: the [`notes`](Config::notes) of `build`, then the OS
    /// CPUs that the topology or the vprocs share
    /// ([`topology::cpu_warnings`]). The library never prints them; the
    /// CLI prints them on standard error once, and `numagc info` lists
    /// them (from [`RuntimeInfo::warnings`](crate::RuntimeInfo)).
    pub fn warnings(&self) -> Vec<String> {
        let mut out = self.notes.clone();
        if let Ok(topo) = Topology::from_config(self) {
            let placements = topo.place_vprocs(self.vprocs);
            out.extend(topology::cpu_warnings(&topo, &placements, self.pin));
        }
        out
    }

    /// The value of setting `name` (as in [`settings`]) in words, as
    /// `numagc info` shows it; `None` for an unknown name. Apart from a
    /// note in parentheses, the text is accepted back by
    /// [`ConfigBuilder::set`].
    pub fn value_text(&self, name: &str) -> Option<String> {
        let text = match name {
            "plan" => self.plan.name().to_string(),
            "vprocs" => self.vprocs.to_string(),
            "topology" => match &self.topology {
                Some(spec) => spec.clone(),
                None => format!("detect (from {})", topology::SYS_NODE_DIR),
            },
            "numa-policy" => self.numa_policy.name().to_string(),
            "local-heap" => size_text(self.local_heap_size),
            "min-nursery" => size_text(self.min_nursery_size),
            "chunk-size" => size_text(self.chunk_size),
            "large-object" => size_text(self.large_object_size),
            "global-gc-threshold" => size_text(self.global_gc_threshold),
            "heap-growth" => self.heap_growth.to_string(),
            "max-heap" => size_text(self.max_heap),
            "safepoint-timeout" => match self.safepoint_timeout_ms {
                0 => "0 (wait for ever)".to_string(),
                ms if ms % 1000 == 0 => format!("{}s", ms / 1000),
                ms => format!("{ms}ms"),
            },
            "young-global-gc" => self.young_global_gc.to_string(),
            "survivor-promotion" => match self.survivor_promotion {
                0 => "0 (never)".to_string(),
                p => format!("{p}%"),
            },
            "task-promotion" => self.task_promotion.name().to_string(),
            "vproc-stack" => size_text(self.vproc_stack),
            "verify" => self.verify.to_string(),
            "trace" => self.trace.to_string(),
            "pin" => self.pin.to_string(),
            _ => return None,
        };
        Some(text)
    }
}

impl Default for Config {
    fn default() -> Self {
        ConfigBuilder::new()
            .build()
            .expect("the default configuration is valid")
    }
}

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
    SettingInfo { name: "plan", env: "NUMAGC_PLAN", help: "collector plan: split (per-vproc local heaps + chunked global heap)", flag: false },
    SettingInfo { name: "vprocs", env: "NUMAGC_VPROCS", help: "number of vprocs, 1 ..= 1024; default: CPUs this process may run on", flag: false },
    SettingInfo { name: "topology", env: "NUMAGC_TOPOLOGY", help: "synthetic NUMA topology NxM (N nodes of M CPUs), or \"detect\" to read /sys (default)", flag: false },
    SettingInfo { name: "numa-policy", env: "NUMAGC_NUMA_POLICY", help: "global-heap page placement: local (default), interleave, node0", flag: false },
    SettingInfo { name: "local-heap", env: "NUMAGC_LOCAL_HEAP", help: "bytes per vproc local heap, multiple of 4 KiB, 64 KiB ..= 1 GiB; default 16 MiB", flag: false },
    SettingInfo { name: "min-nursery", env: "NUMAGC_MIN_NURSERY", help: "major collection when the nursery falls below this, 4 KiB ..= local-heap/4; default local-heap/8", flag: false },
    SettingInfo { name: "chunk-size", env: "NUMAGC_CHUNK_SIZE", help: "bytes per global-heap chunk, power of two, 64 KiB ..= 64 MiB; default 1 MiB", flag: false },
    SettingInfo { name: "large-object", env: "NUMAGC_LARGE_OBJECT", help: "objects of at least this size go to the large-object space, 256 B ..= min(chunk-size/4, local-heap/8); default min(16 KiB, chunk-size/4, local-heap/8)", flag: false },
    SettingInfo { name: "global-gc-threshold", env: "NUMAGC_GLOBAL_GC_THRESHOLD", help: "global heap bytes per vproc that trigger a global collection, chunk-size ..= 1 TiB; default 32 MiB", flag: false },
    SettingInfo { name: "heap-growth", env: "NUMAGC_HEAP_GROWTH", help: "next global collection when the global heap exceeds max(threshold, live x growth), 1.0 ..= 100.0; default 2.0", flag: false },
    SettingInfo { name: "max-heap", env: "NUMAGC_MAX_HEAP", help: "heap limit in bytes, vprocs x (local-heap + 2 x chunk-size) ..= 16 TiB; default 3/4 of physical memory", flag: false },
    SettingInfo { name: "safepoint-timeout", env: "NUMAGC_SAFEPOINT_TIMEOUT", help: "a global collection is called off (nothing moved, the requester gets an error) when a vproc has not reached a safepoint this long after the request, 1ms ..= 3600s, or 0 to wait for ever; default 10s", flag: false },
    SettingInfo { name: "young-global-gc", env: "NUMAGC_YOUNG_GLOBAL_GC", help: "young global collections leave data that survived two of them in place until a full one (true/false); default true", flag: true },
    SettingInfo { name: "survivor-promotion", env: "NUMAGC_SURVIVOR_PROMOTION", help: "after a minor collection whose survivors fill this percentage of the nursery, the next local collection evacuates the local heap to the global heap, 0 (never) ..= 100; default 90", flag: false },
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
    chunk_size: usize,
    large_object_size: Option<usize>,
    global_gc_threshold: usize,
    heap_growth: f64,
    max_heap: Option<usize>,
    safepoint_timeout_ms: u64,
    young_global_gc: bool,
    survivor_promotion: u32,
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
            chunk_size: DEFAULT_CHUNK_SIZE,
            large_object_size: None,
            global_gc_threshold: DEFAULT_GLOBAL_GC_THRESHOLD,
            heap_growth: DEFAULT_HEAP_GROWTH,
            max_heap: None,
            safepoint_timeout_ms: DEFAULT_SAFEPOINT_TIMEOUT_MS,
            young_global_gc: true,
            survivor_promotion: DEFAULT_SURVIVOR_PROMOTION,
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
    fn build_for(&self, physical: usize) -> Result<Config, ConfigError> {
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
            chunk_size: chunk,
            large_object_size: large_object,
            global_gc_threshold: threshold,
            heap_growth: self.heap_growth,
            max_heap,
            safepoint_timeout_ms: self.safepoint_timeout_ms,
            young_global_gc: self.young_global_gc,
            survivor_promotion: self.survivor_promotion,
            task_promotion: self.task_promotion,
            vproc_stack: stack,
            verify: self.verify,
            trace: self.trace,
            pin: self.pin,
            notes,
        })
    }
}

fn refused(setting: &'static str, value: &str, allowed: &str) -> ConfigError {
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

const BOOL_CHOICES: &[(&str, bool)] = &[
    ("true", true),
    ("1", true),
    ("yes", true),
    ("on", true),
    ("false", false),
    ("0", false),
    ("no", false),
    ("off", false),
];

/// The one parser of every enumerated setting (`plan`, `numa-policy`,
/// `task-promotion`, the booleans): one of `choices`' names, in any case,
/// blanks around ignored.
fn parse_choice<T: Copy>(
    setting: &'static str,
    value: &str,
    choices: &[(&str, T)],
    allowed: &str,
) -> Result<T, ConfigError> {
    choices
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case(value.trim()))
        .map(|&(_, v)| v)
        .ok_or_else(|| refused(setting, value, allowed))
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

/// Parses a duration in milliseconds: digits, then an optional unit `ms`
/// or `s` (no unit: milliseconds). `None` for anything else or overflow.
pub fn parse_millis(s: &str) -> Option<u64> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let scale = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "ms" => 1,
        "s" => 1000,
        _ => return None,
    };
    digits.parse::<u64>().ok()?.checked_mul(scale)
}

/// Parses a byte size: digits, then an optional binary unit (`K`, `KB`, `KiB`, `M`,
/// `G`, `T`, ... all multiples of 1024, case-insensitive). `None` for empty, signed,
/// fractional, unknown-unit or overflowing input.
pub fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let digits_end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(digits_end);
    if digits.is_empty() {
        return None;
    }
    let shift = match unit.trim_start().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(1usize << shift)
}

/// A byte count for people: [`format_size`] when that has at most four
/// digits ("64 KiB", "4104 MiB"), else rounded to a tenth of the largest
/// unit it reaches ("about 17.7 GiB").
pub fn format_size_approx(bytes: usize) -> String {
    const UNITS: [(usize, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    let exact = format_size(bytes);
    if exact
        .split(' ')
        .next()
        .is_some_and(|digits| digits.len() <= 4)
    {
        return exact;
    }
    match UNITS.iter().find(|(unit, _)| bytes >= *unit) {
        Some((unit, name)) => format!("about {:.1} {name}", bytes as f64 / *unit as f64),
        None => exact,
    }
}

/// `format_size`, then `format_size_approx` in parentheses when they differ.
fn size_text(bytes: usize) -> String {
    let (exact, approx) = (format_size(bytes), format_size_approx(bytes));
    if exact == approx {
        exact
    } else {
        format!("{exact} ({approx})")
    }
}

/// Formats a byte count in the largest binary unit that divides it exactly ("64 KiB", "1000 B").
pub fn format_size(bytes: usize) -> String {
    const UNITS: [(usize, &str); 4] = [(TIB, "TiB"), (GIB, "GiB"), (MIB, "MiB"), (KIB, "KiB")];
    UNITS
        .iter()
        .find(|(unit, _)| bytes != 0 && bytes.is_multiple_of(*unit))
        .map(|(unit, name)| format!("{} {name}", bytes / unit))
        .unwrap_or_else(|| format!("{bytes} B"))
}

#[cfg(test)]
mod tests {
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
        assert_eq!(settings().len(), 19);
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
}
