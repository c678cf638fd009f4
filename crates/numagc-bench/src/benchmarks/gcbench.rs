//! GCBench (Hans Boehm's "An Artificial Garbage Collection Benchmark",
//! Java version by Boehm and Ellis): a stretch tree of depth
//! `kStretchTreeDepth` = 18 built and dropped, a long-lived tree of depth
//! `kLongLivedTreeDepth` = 16 and a long-lived array of `kArraySize` =
//! 500,000 doubles (half filled with 1/i) kept for the whole run, then for
//! each depth d = 4, 6, ..., 16 `NumIters(d) = 2·TreeSize(18)/TreeSize(d)`
//! trees built "top down" and as many "bottom up", each dropped at once.
//! At the end the long-lived data must be intact (`array[1000] == 1/1000`).
//!
//! A node has `left`, `right` and two integers `i`, `j` (the Java `Node`).
//! Top-down construction (`Populate`) allocates a node and then stores its
//! children into it. numagc's young objects are immutable: a mutable node
//! (a mutable descriptor written with `Scope::set`) is allocated in the
//! global heap, which would turn the benchmark's short-lived trees, the
//! young generation's workload, into global-heap traffic. So both
//! constructions build the children first and then the node; the two
//! phases are kept, as two passes of `NumIters(d)` trees, so that the
//! allocation volume is the original's. The long-lived array is one raw
//! object of 4 MB, which goes to the large-object space.
//!
//! Parallelism: the trees of each phase and depth are spread over the
//! vprocs with [`Scope::par_reduce`] over the iteration numbers; a leaf of
//! the reduction builds about `grain` nodes' worth of trees (at least one)
//! one after the other, walks each to count its nodes (the check values)
//! and drops it. The stretch tree and the long-lived tree are single trees
//! of 2^19 and 2^17 nodes that survive while they are built (the stretch
//! tree is larger than a local heap), so they cost several times as much
//! per node as the short-lived trees: built sequentially they
//! were a quarter of the one-vproc time and held 2 vprocs to a speedup of
//! about 1.45. They are built with their subtrees above depth
//! [`FORK_DEPTH`] forked with [`Scope::par2`] (about 1.6).
//!
//! Output: GCBench's progress lines, compacted (no timings). Check: the
//! node count of every tree against 2^(d+1)−1, the number of trees per
//! phase and depth against the closed form `NumIters`, and the whole
//! array against its formula.

use crate::{rt_err, Benchmark, Outcome, Param, Params};
use numagc::{DescId, Descriptor, Handle, Layout, Record, Runtime, Scope, Typed, View};
use std::fmt::Write;

pub struct GcBench;

pub(crate) const MIN_TREE_DEPTH: u32 = 4;

/// Nodes of a complete tree of `depth`: GCBench's `TreeSize`.
pub(crate) fn tree_size(depth: u32) -> u64 {
    (1u64 << (depth + 1)) - 1
}

/// Trees built per phase at `depth`: GCBench's `NumIters`.
pub(crate) fn num_iters(stretch_depth: u32, depth: u32) -> u64 {
    2 * tree_size(stretch_depth) / tree_size(depth)
}

/// GCBench's `Node`: `left` and `right` (values, NIL in a leaf), then
/// `i` and `j` (raw); the runtime's first descriptor ([`Setup::read`]).
/// The safe program holds its trees in typed handles
/// ([`numagc::Typed`]), as a program that knows this layout would.
struct GcNode;

impl Layout for GcNode {
    const NAME: &'static str = "gcbench-node";
    const DESC: DescId = DescId::nth_registered(0);
    const SIZE: usize = 4;
    const VALUES: u32 = 0b0011;
}

type Tree<'s> = Typed<'s, GcNode>;

/// A complete tree of `depth` (`MakeTree`); `i` and `j` stay 0 as in Java.
fn make_tree<'s>(s: &mut Scope<'s>, depth: u32) -> numagc::Result<Tree<'s>> {
    if depth == 0 {
        return s.alloc_typed::<GcNode>(&[Handle::NIL, Handle::NIL], &[0, 0]);
    }
    s.scope_fresh(|s| {
        let left = make_tree(s, depth - 1)?;
        let right = make_tree(s, depth - 1)?;
        s.alloc_fresh::<GcNode>(&[left.untyped(), right.untyped()], &[0, 0])
    })
}

/// Depth of the subtrees below which [`make_big_tree`] builds sequentially.
pub(crate) const FORK_DEPTH: u32 = 12;

/// `make_tree` for the one-off big trees (stretch, long-lived): the two
/// subtrees of a node deeper than [`FORK_DEPTH`] are built in parallel.
fn make_big_tree<'s>(s: &mut Scope<'s>, depth: u32) -> numagc::Result<Tree<'s>> {
    if depth <= FORK_DEPTH {
        return make_tree(s, depth);
    }
    let (left, right) = s.par2(
        &[],
        move |s, _| make_big_tree(s, depth - 1).map(Typed::untyped),
        move |s, _| make_big_tree(s, depth - 1).map(Typed::untyped),
    )?;
    s.alloc_typed::<GcNode>(&[left, right], &[0, 0])
}

/// Nodes of the tree `t`: a child read from a node is taken as a node with
/// one look at its header.
fn count_nodes(t: Record<'_, GcNode>) -> u64 {
    let left = t.get(0);
    if left.is_int() {
        1
    } else {
        1 + count_nodes(node(left)) + count_nodes(node(t.get(1)))
    }
}

/// A child read from a node, taken as a node.
fn node(v: View<'_>) -> Record<'_, GcNode> {
    v.record::<GcNode>().expect("a gcbench node")
}

/// The trees of one phase and depth: how many were built and their node
/// counts (total, smallest, largest).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PhaseCount {
    pub trees: u64,
    pub nodes: u64,
    pub min_nodes: u64,
    pub max_nodes: u64,
}

impl PhaseCount {
    fn raw(self) -> [u64; 4] {
        [self.trees, self.nodes, self.min_nodes, self.max_nodes]
    }
    fn of(v: View<'_>) -> PhaseCount {
        PhaseCount {
            trees: v.raw(0),
            nodes: v.raw(1),
            min_nodes: v.raw(2),
            max_nodes: v.raw(3),
        }
    }
    pub(crate) fn join(self, o: PhaseCount) -> PhaseCount {
        PhaseCount {
            trees: self.trees + o.trees,
            nodes: self.nodes + o.nodes,
            min_nodes: self.min_nodes.min(o.min_nodes),
            max_nodes: self.max_nodes.max(o.max_nodes),
        }
    }
}

/// Builds, walks and drops `num_iters(stretch, depth)` trees in parallel
/// (`TimeConstruction`'s loop).
fn construct_trees(
    s: &mut Scope<'_>,
    count: DescId,
    stretch: u32,
    depth: u32,
    grain: usize,
) -> numagc::Result<PhaseCount> {
    let iters = num_iters(stretch, depth) as usize;
    let trees_per_task = (grain / tree_size(depth) as usize).max(1);
    let total = s.par_reduce(
        &[],
        0,
        iters,
        trees_per_task,
        move |s, _, lo, hi| {
            let mut c = PhaseCount {
                trees: 0,
                nodes: 0,
                min_nodes: u64::MAX,
                max_nodes: 0,
            };
            for _ in lo..hi {
                let nodes = s.scope(|s| make_tree(s, depth).map(|t| count_nodes(s.record(t))))?;
                c = c.join(PhaseCount {
                    trees: 1,
                    nodes,
                    min_nodes: nodes,
                    max_nodes: nodes,
                });
            }
            s.alloc_mixed(count, &[], &c.raw())
        },
        move |s, _, x, y| {
            let c = PhaseCount::of(s.view(x)).join(PhaseCount::of(s.view(y)));
            s.alloc_mixed(count, &[], &c.raw())
        },
    )?;
    Ok(PhaseCount::of(s.view(total)))
}

/// The long-lived array's contents: 1/i in the first half (so +inf at 0),
/// 0 in the rest.
fn array_value(i: usize, size: usize) -> f64 {
    if i < size / 2 {
        1.0 / i as f64
    } else {
        0.0
    }
}

/// What a run measured, for the check.
pub(crate) struct Report {
    pub stretch_nodes: u64,
    pub phases: Vec<(u32, PhaseCount, PhaseCount)>,
    pub long_lived_nodes: u64,
    pub array: Vec<f64>,
}

/// What both versions (safe and compiled) start from: the parameters,
/// checked, and the two descriptors registered.
#[derive(Clone, Copy)]
pub(crate) struct Setup {
    pub stretch: u32,
    pub long_lived_depth: u32,
    pub max_depth: u32,
    pub array_size: usize,
    pub grain: usize,
    pub node: DescId,
    pub count: DescId,
}

impl Setup {
    pub(crate) fn read(rt: &Runtime, p: &Params) -> Result<Setup, String> {
        let stretch = p.get("stretch-depth") as u32;
        let max_depth = p.get("max-depth") as u32;
        if max_depth > stretch {
            return Err(format!("gcbench: --max-depth {max_depth} exceeds --stretch-depth {stretch} (no tree would be built)"));
        }
        Ok(Setup {
            stretch,
            long_lived_depth: p.get("long-lived-depth") as u32,
            max_depth,
            array_size: p.usize("array-size"),
            grain: p.usize("grain"),
            node: rt
                .register(Descriptor::mixed("gcbench-node", 4, &[0, 1]).map_err(rt_err)?)
                .map_err(rt_err)?,
            count: rt
                .register(Descriptor::mixed("tree-counts", 4, &[]).map_err(rt_err)?)
                .map_err(rt_err)?,
        })
    }

    /// The run's printed report and its checks.
    pub(crate) fn outcome(self, report: Report) -> Outcome {
        outcome(
            report,
            self.stretch,
            self.long_lived_depth,
            self.max_depth,
            self.array_size,
        )
    }
}

impl Benchmark for GcBench {
    fn name(&self) -> &'static str {
        "gcbench"
    }
    fn source(&self) -> &'static str {
        "Boehm's GCBench"
    }
    fn description(&self) -> &'static str {
        "Boehm's GCBench: stretch tree, long-lived tree and array, short-lived trees of depths 4..16"
    }
    fn params(&self) -> &'static [Param] {
        &[
            Param {
                name: "stretch-depth",
                help: "depth of the stretch tree (kStretchTreeDepth)",
                quick: 17,
                paper: 18,
                scale: 23,
                min: 4,
                max: 26,
            },
            Param {
                name: "long-lived-depth",
                help: "depth of the long-lived tree (kLongLivedTreeDepth)",
                quick: 15,
                paper: 16,
                scale: 20,
                min: 0,
                max: 24,
            },
            Param {
                name: "max-depth",
                help: "largest depth of the short-lived trees (kMaxTreeDepth)",
                quick: 16,
                paper: 16,
                scale: 20,
                min: 4,
                max: 24,
            },
            Param {
                name: "array-size",
                help: "doubles in the long-lived array (kArraySize)",
                quick: 250_000,
                paper: 500_000,
                scale: 500_000,
                min: 2002,
                max: 1 << 26,
            },
            Param {
                name: "grain",
                help: "nodes of the trees one task builds one after the other (at least one tree)",
                quick: 4096,
                paper: 4096,
                scale: 4096,
                min: 1,
                max: 1 << 30,
            },
        ]
    }

    fn run(&self, rt: &Runtime, p: &Params) -> Result<Outcome, String> {
        let setup = Setup::read(rt, p)?;
        let Setup {
            stretch,
            long_lived_depth,
            max_depth,
            array_size,
            grain,
            node: _,
            count,
        } = setup;
        let report = rt
            .run_on(0, move |s| -> numagc::Result<Report> {
                // Stretch the memory space quickly.
                let stretch_nodes =
                    s.scope(|s| make_big_tree(s, stretch).map(|t| count_nodes(s.record(t))))?;
                let long_lived = make_big_tree(s, long_lived_depth)?;
                let array = s.alloc_raw_with(array_size, |a| {
                    for (i, w) in a.iter_mut().enumerate().take(array_size / 2) {
                        *w = (1.0 / i as f64).to_bits();
                    }
                })?;
                let mut phases = Vec::new();
                for depth in (MIN_TREE_DEPTH..=max_depth).step_by(2) {
                    let top_down = construct_trees(s, count, stretch, depth, grain)?;
                    let bottom_up = construct_trees(s, count, stretch, depth, grain)?;
                    phases.push((depth, top_down, bottom_up));
                }
                let long_lived_nodes = count_nodes(s.record(long_lived));
                let array = s
                    .view(array)
                    .raw_words()
                    .expect("a raw array")
                    .iter()
                    .map(|&w| f64::from_bits(w))
                    .collect();
                Ok(Report {
                    stretch_nodes,
                    phases,
                    long_lived_nodes,
                    array,
                })
            })
            .map_err(rt_err)?
            .map_err(rt_err)?;
        Ok(setup.outcome(report))
    }

    fn has_compiled(&self) -> bool {
        true
    }

    fn run_compiled(&self, rt: &Runtime, p: &Params) -> Result<Outcome, String> {
        crate::compiled::gcbench::run(rt, p)
    }
}

/// The output lines and the check of a run's [`Report`].
pub(crate) fn outcome(
    report: Report,
    stretch: u32,
    long_lived_depth: u32,
    max_depth: u32,
    array_size: usize,
) -> Outcome {
    let mut out = String::new();
    writeln!(out, "Garbage Collector Test").unwrap();
    writeln!(
        out,
        " Stretching memory with a binary tree of depth {stretch}: {} nodes",
        report.stretch_nodes
    )
    .unwrap();
    writeln!(
        out,
        " Creating a long-lived binary tree of depth {long_lived_depth}"
    )
    .unwrap();
    writeln!(out, " Creating a long-lived array of {array_size} doubles").unwrap();
    for (depth, top_down, bottom_up) in &report.phases {
        writeln!(
            out,
            "Creating {} trees of depth {depth}: top down {} nodes, bottom up {} nodes",
            top_down.trees, top_down.nodes, bottom_up.nodes
        )
        .unwrap();
    }
    let intact = report.array.get(1000) == Some(&(1.0 / 1000.0));
    writeln!(
        out,
        "Long-lived tree: {} nodes; array[1000] == 1/1000: {intact}",
        report.long_lived_nodes
    )
    .unwrap();

    Outcome::new(out, move || {
        let mut failures = Vec::new();
        if report.stretch_nodes != tree_size(stretch) {
            failures.push(format!(
                "stretch tree: {} nodes, expected {}",
                report.stretch_nodes,
                tree_size(stretch)
            ));
        }
        let depths: Vec<u32> = report.phases.iter().map(|p| p.0).collect();
        let want_depths: Vec<u32> = (MIN_TREE_DEPTH..=max_depth).step_by(2).collect();
        if depths != want_depths {
            failures.push(format!("depths {depths:?}, expected {want_depths:?}"));
        }
        for (depth, top_down, bottom_up) in &report.phases {
            // NumIters as GCBench writes it, in plain integer arithmetic.
            let trees = 2 * ((1u64 << (stretch + 1)) - 1) / ((1u64 << (depth + 1)) - 1);
            let nodes = (1u64 << (depth + 1)) - 1;
            let want = PhaseCount {
                trees,
                nodes: trees * nodes,
                min_nodes: nodes,
                max_nodes: nodes,
            };
            for (phase, got) in [("top down", top_down), ("bottom up", bottom_up)] {
                if *got != want {
                    failures.push(format!(
                        "{phase}, depth {depth}: {got:?}, expected {want:?}"
                    ));
                }
            }
        }
        if report.long_lived_nodes != tree_size(long_lived_depth) {
            failures.push(format!(
                "long-lived tree: {} nodes, expected {}",
                report.long_lived_nodes,
                tree_size(long_lived_depth)
            ));
        }
        if report.array.len() != array_size {
            failures.push(format!(
                "array of {} doubles, expected {array_size}",
                report.array.len()
            ));
        } else if let Some(i) = (0..array_size)
            .find(|&i| report.array[i].to_bits() != array_value(i, array_size).to_bits())
        {
            failures.push(format!(
                "array[{i}] = {}, expected {}",
                report.array[i],
                array_value(i, array_size)
            ));
        }
        if report.array.get(1000) != Some(&0.001) {
            failures.push("array[1000] != 1/1000 (GCBench's final test)".to_string());
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(failures.join("; "))
        }
    })
}
