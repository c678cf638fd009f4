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
//! - `max-minor-heap` at least `local-heap`;
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

mod builder;
mod choices;
mod text;

#[cfg(test)]
mod tests;

use crate::error::ConfigError;
use crate::topology::{self, Topology};

pub use builder::{settings, ConfigBuilder, SettingInfo};
pub use choices::{NumaPolicy, PlanKind, TaskPromotion};
pub use text::{format_size, format_size_approx, parse_millis, parse_size};

use text::size_text;

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
/// Default of `max-minor-heap`, in multiples of `local-heap`: the shared
/// plan's minor heaps may grow to 128 MiB by default. Measured on
/// binarytrees 21 (`plan::shared_heap::minor_size`), 1 vproc, alternated
/// in one run: fixed minor heaps of 32, 64 and 128 MiB took 0.82, 0.75
/// and 0.63 × the time of 16 MiB ones
/// (`docs/results/compiled/minor-size-fixed.json`).
pub const DEFAULT_MINOR_HEAP_GROWTH: usize = 8;
/// Default size of a global-heap chunk.
pub const DEFAULT_CHUNK_SIZE: usize = MIB;
/// Default global-collection threshold per vproc (paper footnote 2).
pub const DEFAULT_GLOBAL_GC_THRESHOLD: usize = 32 * MIB;
/// Default factor by which the live global heap may grow before the next global collection.
pub const DEFAULT_HEAP_GROWTH: f64 = 2.0;
/// Default of `survivor-promotion`, in percent (measured on binary-trees:
/// docs/results/binarytrees.md).
pub const DEFAULT_SURVIVOR_PROMOTION: u32 = 90;
/// Default of `compact-overhead`, in percent: OCaml 4's `max_overhead`
/// (OCaml 5 compacts only when asked; see `plan::shared_heap::compact`).
pub const DEFAULT_COMPACT_OVERHEAD: u32 = 500;
const MAX_COMPACT_OVERHEAD: u32 = 1_000_000;
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

const PLAN_ALLOWED: &str = "split (or split-heap), shared (or shared-heap)";
const POLICY_ALLOWED: &str = "local, interleave, node0";
const BOOL_ALLOWED: &str = "true, false, 1, 0, yes, no, on, off";
const VPROCS_ALLOWED: &str = "1 ..= 1024";
const LOCAL_HEAP_ALLOWED: &str = "a multiple of 4 KiB from 64 KiB to 1 GiB";
const MAX_MINOR_HEAP_ALLOWED: &str = "a multiple of 4 KiB from local-heap to 1 GiB";
const CHUNK_SIZE_ALLOWED: &str = "a power of two from 64 KiB to 64 MiB";
const MIN_NURSERY_ALLOWED: &str = "a size from 4 KiB to local-heap/4 (at most 256 MiB)";
const LARGE_OBJECT_ALLOWED: &str =
    "a size from 256 B to min(chunk-size/4, local-heap/8) (at most 16 MiB)";
const GLOBAL_GC_ALLOWED: &str = "a size from chunk-size (at least 64 KiB) to 1 TiB";
const HEAP_GROWTH_ALLOWED: &str = "a finite number from 1.0 to 100.0";
const TASK_PROMOTION_ALLOWED: &str = "lazy or eager";
const SURVIVOR_PROMOTION_ALLOWED: &str = "a percentage from 0 (never) to 100";
const COMPACT_OVERHEAD_ALLOWED: &str = "a percentage from 0 (never) to 1000000";
const MAX_HEAP_ALLOWED: &str =
    "a size from vprocs x (local-heap + 2 x chunk-size) (at least 192 KiB) to 16 TiB";
const VPROC_STACK_ALLOWED: &str = "a size from 1 MiB to 1 GiB";
const SAFEPOINT_TIMEOUT_ALLOWED: &str =
    "0 (wait for ever) or a duration from 1ms to 3600s (a number with unit ms or s; no unit: ms)";

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
    /// Bytes: the largest a minor heap of the shared plan grows to
    /// (`plan::shared_heap::minor_size`); `local_heap_size` when its size is fixed.
    pub max_minor_heap_size: usize,
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
    /// extension of §3.3, see `plan::split`).
    pub survivor_promotion: u32,
    /// Percent: the shared plan compacts its major heap at the end of a
    /// cycle when the bytes it holds beyond the live data exceed this share
    /// of the live data (0 = never; `plan::shared_heap::compact`).
    pub compact_overhead: u32,
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
            "max-minor-heap" => size_text(self.max_minor_heap_size),
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
            "compact-overhead" => match self.compact_overhead {
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
