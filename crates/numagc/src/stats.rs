//! Collector statistics per vproc and in total, printed as a table or as JSON.
//!
//! Each vproc records its own [`VprocStats`] without synchronization (minor,
//! major, promotion and its share of global collections, bytes allocated and
//! copied, pause times); a [`StatsReport`] merges them at the end. Invariant:
//! merging is a sum (counts, bytes, histograms) or a maximum (longest phase), so
//! the total row equals the merge of the vproc rows in any order, and
//! `bytes_allocated_global <= bytes_allocated` holds when it holds per vproc.
//!
//! Paper: the phases are those of §3.3 (minor, major, promotion) and §3.4
//! (global); `copied_local_node` / `copied_remote_node` measure how well chunks
//! keep node affinity (§3.1) under the placement policies of §4.3.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde::ser::SerializeStruct;

use crate::numa::BindingCounts;

const MIB: f64 = (1u64 << 20) as f64;

/// Count, total and longest duration of one collection phase.
#[derive(Clone, Copy, Debug, Default, serde::Serialize)]
pub struct PhaseStats {
    pub count: u64,
    pub total_ns: u64,
    pub max_ns: u64,
}

impl PhaseStats {
    pub fn record(&mut self, d: Duration) {
        let ns = duration_ns(d);
        self.count += 1;
        self.total_ns = self.total_ns.saturating_add(ns);
        self.max_ns = self.max_ns.max(ns);
    }

    pub fn merge(&mut self, o: &PhaseStats) {
        self.count += o.count;
        self.total_ns = self.total_ns.saturating_add(o.total_ns);
        self.max_ns = self.max_ns.max(o.max_ns);
    }

    /// "count/total ms/max ms", for the table.
    fn cell(&self) -> String {
        format!(
            "{}/{:.2}/{:.2}",
            self.count,
            self.total_ns as f64 / 1e6,
            self.max_ns as f64 / 1e6
        )
    }
}

fn duration_ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Pauses recorded in a vproc's own buffer before they go into the
/// histogram ([`PauseHistogram`]).
const RECENT_PAUSES: usize = 32;

/// Pause times in nanoseconds (3 significant digits, resizing as needed).
///
/// Copy on write, and nothing until the first pause: a histogram of pauses
/// up to a few hundred milliseconds holds some 90 KB of counts, and a vproc
/// publishes its statistics (a clone of them) after every collection, job
/// and stolen task (`Vproc::publish_stats`). So an empty histogram holds
/// no counts at all (making one zeroes no memory), a clone shares the
/// counts, and merging into an empty histogram shares the other's counts
/// instead of adding them to zeros. A pause is recorded into a buffer of
/// the last `RECENT_PAUSES` (32) first, which a clone copies with the
/// rest (a few hundred bytes): the shared counts are copied, to add the
/// buffer to them, once per that many pauses, not at the first pause
/// after every publication (a collection's: the 90 KB were copied in
/// every collection, 143 k instructions each by callgrind on the shared
/// plan's binarytrees 16). Readers see the counts with the buffer added.
#[derive(Clone, Debug, Default)]
pub struct PauseHistogram {
    /// `None` until a pause is folded or merged in.
    histogram: Option<std::sync::Arc<Histogram<u64>>>,
    /// Pauses not in `histogram` yet: `recent[..n_recent]`.
    recent: [u64; RECENT_PAUSES],
    n_recent: usize,
}

fn empty_histogram() -> Histogram<u64> {
    Histogram::new(3).expect("3 significant digits is a valid precision")
}

fn record_ns(h: &mut Histogram<u64>, ns: u64) {
    // Only values beyond the histogram's largest trackable one (~146 years) fail; clamp those.
    if h.record(ns).is_err() {
        h.saturating_record(ns);
    }
}

impl PauseHistogram {
    pub fn new() -> Self {
        PauseHistogram::default()
    }

    /// The counts with the buffered pauses added, if any pause was recorded.
    fn counts(&self) -> Option<std::borrow::Cow<'_, Histogram<u64>>> {
        if self.n_recent == 0 {
            return self
                .histogram
                .as_deref()
                .filter(|h| !h.is_empty())
                .map(std::borrow::Cow::Borrowed);
        }
        let mut h = self
            .histogram
            .as_deref()
            .cloned()
            .unwrap_or_else(empty_histogram);
        for &ns in &self.recent[..self.n_recent] {
            record_ns(&mut h, ns);
        }
        Some(std::borrow::Cow::Owned(h))
    }

    /// Adds the buffered pauses to the counts (copying them when they are
    /// shared).
    fn fold(&mut self) {
        if self.n_recent == 0 {
            return;
        }
        let h = std::sync::Arc::make_mut(
            self.histogram
                .get_or_insert_with(|| std::sync::Arc::new(empty_histogram())),
        );
        for &ns in &self.recent[..self.n_recent] {
            record_ns(h, ns);
        }
        self.n_recent = 0;
    }

    pub fn record(&mut self, d: Duration) {
        if self.n_recent == RECENT_PAUSES {
            self.fold();
        }
        self.recent[self.n_recent] = duration_ns(d);
        self.n_recent += 1;
    }

    pub fn merge(&mut self, o: &PauseHistogram) {
        let Some(theirs) = o.counts() else {
            return;
        };
        self.fold();
        match self.histogram.as_mut().filter(|h| !h.is_empty()) {
            // Both histograms auto-resize over the same value range, so addition cannot fail.
            Some(mine) => std::sync::Arc::make_mut(mine)
                .add(&*theirs)
                .expect("auto-resizing histograms add"),
            // Nothing buffered on the other side: share its counts.
            None if o.n_recent == 0 => self.histogram = o.histogram.clone(),
            None => self.histogram = Some(std::sync::Arc::new(theirs.into_owned())),
        }
    }

    pub fn count(&self) -> u64 {
        self.counts().map_or(0, |h| h.len())
    }

    /// The pause at percentile `q` (0 ..= 100), 0 when nothing was recorded.
    pub fn percentile_ns(&self, q: f64) -> u64 {
        self.counts()
            .map_or(0, |h| h.value_at_percentile(q.clamp(0.0, 100.0)))
    }

    /// The median, 99th and 99.9th percentiles and the maximum, 0 each
    /// when nothing was recorded: what the table and the JSON report.
    pub fn summary_ns(&self) -> [u64; 4] {
        let Some(h) = self.counts() else {
            return [0; 4];
        };
        [
            h.value_at_percentile(50.0),
            h.value_at_percentile(99.0),
            h.value_at_percentile(99.9),
            h.max(),
        ]
    }

    /// Every distinct recorded pause (to the histogram's precision, 3
    /// significant digits) with how many times it occurred, shortest first:
    /// the data of a pause-time histogram plot.
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        let Some(h) = self.counts() else {
            return Vec::new();
        };
        h.iter_recorded()
            .map(|v| {
                (
                    h.highest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect()
    }

    pub fn max_ns(&self) -> u64 {
        self.counts().map_or(0, |h| h.max())
    }

    /// "p50/p99/p99.9/max" in microseconds, for the table.
    fn cell(&self) -> String {
        let [p50, p99, p999, max] = self.summary_ns().map(|ns| ns as f64 / 1e3);
        format!("{p50:.1}/{p99:.1}/{p999:.1}/{max:.1}")
    }
}

impl serde::Serialize for PauseHistogram {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let [p50, p99, p999, max] = self.summary_ns();
        let mut s = serializer.serialize_struct("PauseHistogram", 5)?;
        s.serialize_field("count", &self.count())?;
        s.serialize_field("p50_ns", &p50)?;
        s.serialize_field("p99_ns", &p99)?;
        s.serialize_field("p999_ns", &p999)?;
        s.serialize_field("max_ns", &max)?;
        s.end()
    }
}

/// The median (the upper one of an even count) and the maximum of `xs`,
/// which it sorts; `None` when it is empty. For the per-collection
/// figures ([`StatsReport::global_copy_imbalance`],
/// [`StatsReport::global_scan_wait_us`]).
pub fn median_and_max(xs: &mut [f64]) -> Option<(f64, f64)> {
    xs.sort_by(f64::total_cmp);
    Some((*xs.get(xs.len() / 2)?, *xs.last()?))
}

/// The cost of promotion over a run ([`StatsReport::promotion_cost`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PromotionCost {
    /// Promotions that copied something.
    pub promotions: u64,
    pub objects: u64,
    pub bytes: u64,
    pub ns_per_object: f64,
    pub ns_per_kib: f64,
}

#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct VprocStats {
    pub vproc: usize,
    pub node: usize,
    pub minor: PhaseStats,
    pub major: PhaseStats,
    pub promotion: PhaseStats,
    /// The parallel part of global collections: after the vproc's own
    /// minor and major collections that start each one (counted in `minor`
    /// and `major`), so the four phases add up to collection time.
    pub global: PhaseStats,
    /// All bytes the mutator allocated (nursery and direct global).
    pub bytes_allocated: u64,
    /// Of which allocated straight in the global heap (mutable objects, large objects).
    pub bytes_allocated_global: u64,
    pub bytes_copied_minor: u64,
    pub bytes_copied_major: u64,
    /// Major collections that evacuated the whole local heap, nursery
    /// included (survivor promotion; also counted in `major`).
    pub survivor_evacuations: u64,
    /// Tasks this vproc forked (`Scope::par2`).
    pub tasks_forked: u64,
    /// Of those, run by this vproc itself (not stolen).
    pub tasks_inline: u64,
    /// Tasks this vproc stole from others.
    pub tasks_stolen: u64,
    /// Threads of the language spawned by this vproc (`Scope::spawn`).
    pub threads_spawned: u64,
    /// Threads that finished (`Next::exit`) on this vproc.
    pub threads_finished: u64,
    /// Threads that ended with an error or a panic on this vproc.
    pub threads_failed: u64,
    /// Runs of a thread's continuation taken from another vproc's ready queue.
    pub threads_stolen: u64,
    /// Channel rendezvous this vproc completed (the matching side).
    pub rendezvous: u64,
    /// Synchronisations that had to wait: a thread queued on channels, or a
    /// job blocked in `Scope::send`, `recv` or `select`.
    pub sync_waits: u64,
    pub bytes_promoted: u64,
    /// Objects copied by promotions (split plan): with `bytes_promoted`
    /// and `promotion`'s time, the cost of promotion per object and per
    /// byte ([`StatsReport::promotion_cost`]).
    pub objects_promoted: u64,
    pub bytes_copied_global: u64,
    /// Bytes this vproc copied in each global collection, in order (split
    /// plan; every vproc takes part in every one, so index `i` is the
    /// same collection on every vproc): the balance of the parallel copy
    /// ([`StatsReport::global_copy_imbalance`]). In a merged total, the
    /// bytes of all vprocs per collection.
    pub global_copied: Vec<u64>,
    /// Nanoseconds this vproc waited for scan work in each global
    /// collection, in order, as `global_copied` (split plan): the time the
    /// busiest vproc made the others wait. Merged: summed per collection.
    pub global_waited_ns: Vec<u64>,
    /// Bytes copied in global collections from chunks on this vproc's node.
    pub copied_local_node: u64,
    /// Bytes copied in global collections from chunks on other nodes.
    pub copied_remote_node: u64,
    /// Shared plan: bytes of objects scanned by marking and of slots swept
    /// (the work of its major slices).
    pub bytes_marked: u64,
    /// Shared plan: compactions of the major heap this vproc led (so the
    /// total counts each once), and the bytes of objects it moved in all
    /// compactions.
    pub compactions: u64,
    pub bytes_compacted: u64,
    pub pauses: PauseHistogram,
}

impl VprocStats {
    /// Adds `o`'s counts into `self`; `vproc` and `node` stay `self`'s.
    pub fn merge(&mut self, o: &VprocStats) {
        self.minor.merge(&o.minor);
        self.major.merge(&o.major);
        self.promotion.merge(&o.promotion);
        self.global.merge(&o.global);
        for (mine, theirs) in [
            (&mut self.bytes_allocated, o.bytes_allocated),
            (&mut self.bytes_allocated_global, o.bytes_allocated_global),
            (&mut self.bytes_copied_minor, o.bytes_copied_minor),
            (&mut self.bytes_copied_major, o.bytes_copied_major),
            (&mut self.survivor_evacuations, o.survivor_evacuations),
            (&mut self.tasks_forked, o.tasks_forked),
            (&mut self.tasks_inline, o.tasks_inline),
            (&mut self.tasks_stolen, o.tasks_stolen),
            (&mut self.threads_spawned, o.threads_spawned),
            (&mut self.threads_finished, o.threads_finished),
            (&mut self.threads_failed, o.threads_failed),
            (&mut self.threads_stolen, o.threads_stolen),
            (&mut self.rendezvous, o.rendezvous),
            (&mut self.sync_waits, o.sync_waits),
            (&mut self.bytes_promoted, o.bytes_promoted),
            (&mut self.objects_promoted, o.objects_promoted),
            (&mut self.bytes_copied_global, o.bytes_copied_global),
            (&mut self.copied_local_node, o.copied_local_node),
            (&mut self.copied_remote_node, o.copied_remote_node),
            (&mut self.bytes_marked, o.bytes_marked),
            (&mut self.compactions, o.compactions),
            (&mut self.bytes_compacted, o.bytes_compacted),
        ] {
            *mine = mine.saturating_add(theirs);
        }
        for (mine, theirs) in [
            (&mut self.global_copied, &o.global_copied),
            (&mut self.global_waited_ns, &o.global_waited_ns),
        ] {
            if mine.len() < theirs.len() {
                mine.resize(theirs.len(), 0);
            }
            for (m, &t) in mine.iter_mut().zip(theirs) {
                *m = m.saturating_add(t);
            }
        }
        self.pauses.merge(&o.pauses);
    }

    /// Time spent collecting, in nanoseconds (the four phases; nothing
    /// counted twice).
    pub fn gc_ns(&self) -> u64 {
        self.minor
            .total_ns
            .saturating_add(self.major.total_ns)
            .saturating_add(self.promotion.total_ns)
            .saturating_add(self.global.total_ns)
    }

    /// Share of global-collection copying that read chunks on this vproc's node;
    /// `None` when nothing was copied.
    pub fn numa_locality(&self) -> Option<f64> {
        let all = self.copied_local_node + self.copied_remote_node;
        (all > 0).then(|| self.copied_local_node as f64 / all as f64)
    }
}

/// State of the global heap at the end of a run.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct HeapReport {
    pub global_bytes_per_node: Vec<u64>,
    pub large_object_bytes: u64,
    pub global_gc_trigger: u64,
    pub max_heap: u64,
    /// The most the heap's budget held: global (major) heap bytes, and on
    /// the shared plan the minor heaps' growth beyond `local-heap`.
    pub peak_global_bytes: u64,
    /// Shared plan: each minor heap's size now and the largest it grew
    /// to (`plan::shared_heap::minor_size`); 0 on the split plan.
    pub minor_heap_bytes: u64,
    pub peak_minor_heap_bytes: u64,
    pub bindings: BindingCounts,
}

#[derive(Clone, Debug, serde::Serialize)]
pub struct StatsReport {
    pub vprocs: Vec<VprocStats>,
    /// The merge of all vprocs; its `vproc` and `node` are 0 and carry no meaning.
    pub total: VprocStats,
    pub heap: HeapReport,
}

impl StatsReport {
    pub fn new(vprocs: Vec<VprocStats>, heap: HeapReport) -> Self {
        let mut total = VprocStats::default();
        for v in &vprocs {
            total.merge(v);
        }
        StatsReport {
            vprocs,
            total,
            heap,
        }
    }

    /// Per global collection seen by every vproc, in order: each vproc's
    /// entry of `per_collection` for it (`global_copied`,
    /// `global_waited_ns`). Empty for a single vproc.
    fn per_global_collection(
        &self,
        per_collection: fn(&VprocStats) -> &[u64],
    ) -> impl Iterator<Item = Vec<u64>> + '_ {
        let collections = if self.vprocs.len() < 2 {
            0
        } else {
            self.vprocs
                .iter()
                .map(|v| per_collection(v).len())
                .min()
                .unwrap_or(0)
        };
        (0..collections).map(move |i| self.vprocs.iter().map(|v| per_collection(v)[i]).collect())
    }

    /// Per global collection in which anything was copied: the most bytes
    /// one vproc copied over the mean of all (1: perfectly balanced; the
    /// others wait for the busiest). Empty for a plan without global
    /// collections, or a single vproc.
    pub fn global_copy_imbalance(&self) -> Vec<f64> {
        self.per_global_collection(|v| &v.global_copied)
            .filter_map(|xs| {
                let (sum, max) = xs.iter().fold((0u64, 0u64), |(s, m), &x| (s + x, m.max(x)));
                (sum > 0).then(|| max as f64 * xs.len() as f64 / sum as f64)
            })
            .collect()
    }

    /// Per global collection: the mean over the vprocs of the time each
    /// waited for scan work, in microseconds. Empty as
    /// [`Self::global_copy_imbalance`] is.
    pub fn global_scan_wait_us(&self) -> Vec<f64> {
        self.per_global_collection(|v| &v.global_waited_ns)
            .map(|xs| xs.iter().sum::<u64>() as f64 / xs.len() as f64 / 1000.0)
            .collect()
    }

    /// What a promotion costs over the run, all vprocs together: the time
    /// in promotions (the `promotion` phase, which counts those that
    /// copied something) over the objects and over the bytes they copied.
    /// `None` when nothing was promoted.
    pub fn promotion_cost(&self) -> Option<PromotionCost> {
        let t = &self.total;
        (t.objects_promoted > 0 && t.bytes_promoted > 0).then(|| PromotionCost {
            promotions: t.promotion.count,
            objects: t.objects_promoted,
            bytes: t.bytes_promoted,
            ns_per_object: t.promotion.total_ns as f64 / t.objects_promoted as f64,
            ns_per_kib: t.promotion.total_ns as f64 * 1024.0 / t.bytes_promoted as f64,
        })
    }

    /// An aligned text table, one row per vproc and a total row, then the heap lines.
    pub fn table(&self) -> String {
        const HEADER: [&str; 11] = [
            "vproc",
            "node",
            "minor n/ms/max",
            "major n/ms/max",
            "promote n/ms/max",
            "global n/ms/max",
            "alloc MiB",
            "copied MiB min/maj/glob",
            "promoted MiB",
            "pause us p50/p99/p99.9/max",
            "NUMA local",
        ];
        let mib = |b: u64| format!("{:.2}", b as f64 / MIB);
        let row = |vproc: String, node: String, s: &VprocStats| -> Vec<String> {
            vec![
                vproc,
                node,
                s.minor.cell(),
                s.major.cell(),
                s.promotion.cell(),
                s.global.cell(),
                mib(s.bytes_allocated),
                format!(
                    "{}/{}/{}",
                    mib(s.bytes_copied_minor),
                    mib(s.bytes_copied_major),
                    mib(s.bytes_copied_global)
                ),
                mib(s.bytes_promoted),
                s.pauses.cell(),
                s.numa_locality()
                    .map_or("-".to_string(), |l| format!("{:.1}%", l * 100.0)),
            ]
        };
        let mut rows: Vec<Vec<String>> = vec![HEADER.iter().map(|h| h.to_string()).collect()];
        rows.extend(
            self.vprocs
                .iter()
                .map(|v| row(v.vproc.to_string(), v.node.to_string(), v)),
        );
        rows.push(row("total".into(), "-".into(), &self.total));

        let widths: Vec<usize> = (0..rows[0].len())
            .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
            .collect();
        let mut out = String::new();
        for r in &rows {
            let cells: Vec<String> = r
                .iter()
                .zip(&widths)
                .map(|(cell, w)| format!("{cell:>w$}"))
                .collect();
            out += cells.join("  ").trim_end();
            out.push('\n');
        }

        let heap = &self.heap;
        let per_node: Vec<String> = heap
            .global_bytes_per_node
            .iter()
            .enumerate()
            .map(|(node, &b)| format!("node {node} {} MiB", mib(b)))
            .collect();
        out += &format!(
            "global heap per node: {}\n",
            if per_node.is_empty() {
                "-".into()
            } else {
                per_node.join(", ")
            }
        );
        out += &format!("large objects: {} MiB\n", mib(heap.large_object_bytes));
        out += &format!("peak global heap: {} MiB\n", mib(heap.peak_global_bytes));
        if heap.minor_heap_bytes > 0 {
            out += &format!(
                "minor heaps: {} MiB each, at most {} MiB\n",
                mib(heap.minor_heap_bytes),
                mib(heap.peak_minor_heap_bytes)
            );
        }
        out += &format!("global GC trigger: {} MiB\n", mib(heap.global_gc_trigger));
        out += &format!("max heap: {} MiB\n", mib(heap.max_heap));
        let b = &heap.bindings;
        out += &format!(
            "NUMA bindings: {} applied, {} skipped, {} failed\n",
            b.applied, b.skipped, b.failed
        );
        let mut imbalance = self.global_copy_imbalance();
        if let Some((median, max)) = median_and_max(&mut imbalance) {
            out += &format!(
                "global copy balance (most bytes one vproc copied / mean): median {median:.2}, max {max:.2} over {} collections\n",
                imbalance.len()
            );
        }
        if let Some(c) = self.promotion_cost() {
            out += &format!(
                "promotion cost: {:.1} ns per object, {:.1} ns per KiB ({} promotions, {} objects, {} MiB)\n",
                c.ns_per_object,
                c.ns_per_kib,
                c.promotions,
                c.objects,
                mib(c.bytes)
            );
        }
        let mut waits = self.global_scan_wait_us();
        if let Some((median, max)) = median_and_max(&mut waits) {
            out += &format!(
                "global scan waiting (mean per vproc, waiting for scan work): median {median:.0} us, max {max:.0} us over {} collections\n",
                waits.len()
            );
        }
        out
    }

    /// The report as JSON; every vproc object and the total also get `numa_locality`
    /// (a fraction, or null when nothing was copied in global collections).
    pub fn to_json(&self) -> serde_json::Value {
        let mut json = serde_json::to_value(self)
            .expect("the report has only string keys and serializable values");
        for (i, v) in self.vprocs.iter().enumerate() {
            json["vprocs"][i]["numa_locality"] = v.numa_locality().into();
        }
        json["total"]["numa_locality"] = self.total.numa_locality().into();
        json
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn global_copy_imbalance_is_the_busiest_vproc_over_the_mean_per_collection() {
        let copied = |id: usize, xs: &[u64]| VprocStats {
            vproc: id,
            global_copied: xs.to_vec(),
            ..Default::default()
        };
        // Collection 0 balanced, 1 all on one vproc, 2 nothing copied
        // (left out), 3 seen by one vproc only (left out).
        let r = StatsReport::new(
            vec![copied(0, &[10, 0, 0, 5]), copied(1, &[10, 30, 0])],
            HeapReport::default(),
        );
        assert_eq!(r.global_copy_imbalance(), [1.0, 2.0]);
        assert_eq!(r.total.global_copied, [20, 30, 0, 5]);
        assert!(r
            .table()
            .contains("median 2.00, max 2.00 over 2 collections"));
        let one = StatsReport::new(vec![copied(0, &[10])], HeapReport::default());
        assert!(one.global_copy_imbalance().is_empty());
    }

    #[test]
    fn global_scan_wait_is_the_mean_wait_per_collection() {
        let waited = |id: usize, ns: &[u64]| VprocStats {
            vproc: id,
            global_waited_ns: ns.to_vec(),
            ..Default::default()
        };
        // Collection 1 seen by one vproc only (left out).
        let r = StatsReport::new(
            vec![waited(0, &[4000, 1000]), waited(1, &[0])],
            HeapReport::default(),
        );
        assert_eq!(r.global_scan_wait_us(), [2.0]);
        assert_eq!(r.total.global_waited_ns, [4000, 1000]);
        assert!(r
            .table()
            .contains("median 2 us, max 2 us over 1 collections"));
        let one = StatsReport::new(vec![waited(0, &[10])], HeapReport::default());
        assert!(one.global_scan_wait_us().is_empty());
    }

    #[test]
    fn promotion_cost_is_time_over_objects_and_bytes() {
        let promoted = |id: usize, us: u64, objects: u64, bytes: u64| {
            let mut v = VprocStats {
                vproc: id,
                objects_promoted: objects,
                bytes_promoted: bytes,
                ..Default::default()
            };
            v.promotion.record(Duration::from_micros(us));
            v
        };
        let r = StatsReport::new(
            vec![promoted(0, 30, 100, 4096), promoted(1, 10, 300, 4096)],
            HeapReport::default(),
        );
        let c = r.promotion_cost().expect("promotions");
        assert_eq!((c.promotions, c.objects, c.bytes), (2, 400, 8192));
        assert_eq!(c.ns_per_object, 100.0);
        assert_eq!(c.ns_per_kib, 5000.0);
        assert!(r
            .table()
            .contains("promotion cost: 100.0 ns per object, 5000.0 ns per KiB (2 promotions, 400 objects, 0.01 MiB)"));
        let none = StatsReport::new(vec![VprocStats::default()], HeapReport::default());
        assert_eq!(none.promotion_cost(), None);
        assert!(!none.table().contains("promotion cost"));
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn vproc(id: usize, node: usize, pauses_us: &[u64]) -> VprocStats {
        let mut v = VprocStats {
            vproc: id,
            node,
            ..Default::default()
        };
        for &us in pauses_us {
            v.minor.record(Duration::from_micros(us));
            v.pauses.record(Duration::from_micros(us));
        }
        v.bytes_allocated = 3 << 20;
        v.bytes_allocated_global = 1 << 20;
        v.copied_local_node = 3 * (id as u64 + 1);
        v.copied_remote_node = 1;
        v
    }

    #[test]
    fn phase_stats_record_and_merge() {
        let mut a = PhaseStats::default();
        a.record(ms(2));
        a.record(ms(5));
        assert_eq!((a.count, a.total_ns, a.max_ns), (2, 7_000_000, 5_000_000));
        let mut b = PhaseStats::default();
        b.record(ms(9));
        a.merge(&b);
        assert_eq!((a.count, a.total_ns, a.max_ns), (3, 16_000_000, 9_000_000));
        a.record(Duration::MAX);
        assert_eq!((a.total_ns, a.max_ns), (u64::MAX, u64::MAX));
    }

    #[test]
    fn histogram_recorded_values_count_every_pause() {
        let mut h = PauseHistogram::new();
        assert!(h.recorded().is_empty());
        for us in [5, 5, 7, 1000] {
            h.record(Duration::from_micros(us));
        }
        let r = h.recorded();
        assert_eq!(r.iter().map(|&(_, n)| n).sum::<u64>(), 4);
        assert_eq!(r.len(), 3);
        assert_eq!(r[0].1, 2);
        // Values within the histogram's 3 significant digits.
        assert!(
            r[0].0.abs_diff(5_000) <= 5 && r[2].0.abs_diff(1_000_000) <= 1_000,
            "{r:?}"
        );
    }

    #[test]
    fn histogram_percentiles_on_known_inputs() {
        let mut h = PauseHistogram::new();
        assert_eq!((h.count(), h.percentile_ns(50.0), h.max_ns()), (0, 0, 0));
        for us in 1..=10_000 {
            h.record(Duration::from_micros(us));
        }
        let close = |got: u64, want: u64| (got as f64 - want as f64).abs() <= want as f64 * 1e-3;
        assert_eq!(h.count(), 10_000);
        assert!(
            close(h.percentile_ns(50.0), 5_000_000),
            "{}",
            h.percentile_ns(50.0)
        );
        assert!(
            close(h.percentile_ns(99.0), 9_900_000),
            "{}",
            h.percentile_ns(99.0)
        );
        assert!(
            close(h.percentile_ns(99.9), 9_990_000),
            "{}",
            h.percentile_ns(99.9)
        );
        assert!(close(h.max_ns(), 10_000_000), "{}", h.max_ns());
        assert!(close(h.percentile_ns(100.0), 10_000_000));
        assert!(close(h.percentile_ns(0.0), 1_000));
    }

    #[test]
    fn histogram_merge_sums_counts() {
        let mut a = PauseHistogram::new();
        let mut b = PauseHistogram::new();
        a.record(Duration::from_micros(10));
        b.record(Duration::from_micros(20));
        b.record(Duration::from_secs(30));
        a.merge(&b);
        assert_eq!(a.count(), 3);
        assert!(a.max_ns() >= 30_000_000_000 && a.max_ns() <= 30_030_000_000);
        assert_eq!(b.count(), 2);
    }

    #[test]
    fn histogram_merged_into_an_empty_one_is_shared_until_written() {
        let empty = PauseHistogram::new();
        assert_eq!(
            (empty.count(), empty.max_ns(), empty.percentile_ns(99.0)),
            (0, 0, 0)
        );
        assert!(empty.recorded().is_empty());
        let mut b = PauseHistogram::new();
        b.record(Duration::from_micros(20));
        let mut a = PauseHistogram::new();
        a.merge(&empty);
        assert_eq!(a.count(), 0);
        a.merge(&b);
        assert_eq!(a.count(), 1);
        // Writing either side leaves the other as it was.
        a.record(Duration::from_micros(40));
        b.record(Duration::from_micros(60));
        b.record(Duration::from_micros(80));
        assert_eq!((a.count(), b.count()), (2, 3));
        assert_eq!(a.recorded().len(), 2);
        assert!(a.max_ns() < 41_000 && b.max_ns() >= 80_000);
    }

    /// Pauses buffered, folded when the buffer fills, published (cloned)
    /// in between and merged: every reader sees what one histogram fed
    /// every pause directly holds.
    #[test]
    fn buffered_pauses_count_as_recorded_across_clones_folds_and_merges() {
        let mut direct = Histogram::<u64>::new(3).unwrap();
        let mut h = PauseHistogram::new();
        let mut published = Vec::new();
        for i in 0..(3 * RECENT_PAUSES as u64 + 5) {
            let d = Duration::from_micros(10 + 7 * i);
            h.record(d);
            direct.record(duration_ns(d)).unwrap();
            if i % 5 == 0 {
                published.push((i + 1, h.clone()));
            }
        }
        let expect = [
            direct.value_at_percentile(50.0),
            direct.value_at_percentile(99.0),
            direct.value_at_percentile(99.9),
            direct.max(),
        ];
        assert_eq!(h.count(), direct.len());
        assert_eq!(h.summary_ns(), expect);
        assert_eq!(
            h.recorded().iter().map(|&(_, n)| n).sum::<u64>(),
            direct.len()
        );
        // A publication holds what had been recorded when it was made.
        for (recorded, p) in &published {
            assert_eq!(p.count(), *recorded);
        }
        // Merging into an empty histogram and into one with buffered pauses.
        let mut m = PauseHistogram::new();
        m.merge(&h);
        assert_eq!((m.count(), m.summary_ns()), (h.count(), expect));
        let mut n = PauseHistogram::new();
        n.record(Duration::from_millis(500));
        n.merge(&h);
        assert_eq!(n.count(), h.count() + 1);
        assert!(n.max_ns() >= 500_000_000);
        assert_eq!(h.count(), direct.len(), "the merged-from side is unchanged");
    }

    #[test]
    fn total_is_the_merge_of_all_vprocs() {
        let report = StatsReport::new(
            vec![vproc(0, 0, &[10, 20]), vproc(1, 1, &[30])],
            HeapReport::default(),
        );
        let t = &report.total;
        assert_eq!(
            (t.minor.count, t.minor.total_ns, t.minor.max_ns),
            (3, 60_000, 30_000)
        );
        assert_eq!(t.pauses.count(), 3);
        assert_eq!(
            (t.bytes_allocated, t.bytes_allocated_global),
            (6 << 20, 2 << 20)
        );
        assert_eq!((t.copied_local_node, t.copied_remote_node), (9, 2));
        assert_eq!(t.numa_locality(), Some(9.0 / 11.0));
        assert_eq!(VprocStats::default().numa_locality(), None);
    }

    #[test]
    fn table_has_a_row_per_vproc_and_a_total() {
        let heap = HeapReport {
            global_bytes_per_node: vec![2 << 20, 1 << 20],
            large_object_bytes: 1 << 20,
            global_gc_trigger: 64 << 20,
            max_heap: 1 << 30,
            peak_global_bytes: 3 << 20,
            minor_heap_bytes: 0,
            peak_minor_heap_bytes: 0,
            bindings: BindingCounts {
                applied: 5,
                skipped: 2,
                failed: 1,
            },
        };
        let report = StatsReport::new(vec![vproc(0, 0, &[10, 20]), vproc(1, 1, &[30])], heap);
        let table = report.table();
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].trim_start().starts_with("vproc"), "{table}");
        assert!(lines[1].trim_start().starts_with("0  "), "{table}");
        assert!(lines[2].trim_start().starts_with("1  "), "{table}");
        assert!(lines[3].trim_start().starts_with("total"), "{table}");
        assert!(lines[3].contains("3/0.06/0.03"), "{table}");
        assert!(lines[3].contains("81.8%"), "{table}");
        let header_width = lines[0].len();
        assert!(
            lines[1..4].iter().all(|l| l.len() == header_width),
            "columns are aligned:\n{table}"
        );
        assert!(
            table.contains("global heap per node: node 0 2.00 MiB, node 1 1.00 MiB"),
            "{table}"
        );
        assert!(
            table.contains("NUMA bindings: 5 applied, 2 skipped, 1 failed"),
            "{table}"
        );
    }

    #[test]
    fn json_has_the_fields_and_pause_percentiles() {
        let report = StatsReport::new(
            vec![vproc(0, 0, &[10, 20]), vproc(1, 1, &[30])],
            HeapReport::default(),
        );
        let json = report.to_json();
        assert_eq!(json["vprocs"].as_array().unwrap().len(), 2);
        assert_eq!(json["vprocs"][1]["node"], 1);
        assert_eq!(json["total"]["minor"]["count"], 3);
        assert_eq!(json["total"]["pauses"]["count"], 3);
        for key in ["p50_ns", "p99_ns", "p999_ns", "max_ns"] {
            assert!(
                json["total"]["pauses"][key].as_u64().unwrap() >= 10_000,
                "{key}"
            );
        }
        assert_eq!(
            json["total"]["pauses"]["max_ns"].as_u64().unwrap() / 1000,
            30
        );
        assert_eq!(json["vprocs"][0]["numa_locality"], 0.75);
        assert_eq!(json["heap"]["bindings"]["applied"], 0);
        assert!(json["heap"]["global_bytes_per_node"].is_array());
        let empty = StatsReport::new(vec![], HeapReport::default()).to_json();
        assert!(empty["total"]["numa_locality"].is_null());
    }
}
