//! copy: the bandwidth of the split plan's global collection copying a
//! tree (`plan::split::global`, manticore-numa-gc.md §3.4) against
//! `memcpy` of the same bytes, measured alternately in one run (issue 20
//! asks the global copy for ≥ 50 % of `memcpy`'s bandwidth per vproc).
//!
//! The graph is a complete binary tree of `depth` levels of immutable
//! mixed nodes (left, right, a raw payload word: four words with the
//! header), promoted to the global heap; every full global collection
//! (`Scope::collect_global`) then evacuates it whole; the first, whose
//! to-space is fresh memory, is not measured. Reported:
//! - *collection*: the tree's bytes over the wall time of
//!   `collect_global` (local collections, the handshake and the copy);
//! - *per vproc*: the bytes each vproc copied over the time it spent in
//!   the global phase (`VprocStats::global`, local collections left out),
//!   summed over the measured collections, the mean over the vprocs;
//! - *memcpy*: one thread copying a buffer of the tree's size into
//!   another it reuses.
//!
//! Checked: each collection copied the tree's bytes, and the tree after
//! the last one has every node and the payload sum of the formula.

use super::tree::{census, start, tree, TreeRun};
use crate::bench::record::{median, min_max};
use crate::runtime_args::RuntimeArgs;
use numagc::{PlanKind, Runtime, StatsReport};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// The runtime's statistics once every vproc has published those of
/// `collections` global collections (each publishes its own just after a
/// collection ends; a second at most).
fn settled(rt: &Runtime, collections: usize) -> std::result::Result<StatsReport, String> {
    let deadline = Instant::now() + std::time::Duration::from_secs(1);
    loop {
        let stats = rt.stats();
        if stats
            .vprocs
            .iter()
            .all(|v| v.global_copied.len() >= collections)
        {
            return Ok(stats);
        }
        if Instant::now() > deadline {
            return Err("the vprocs' statistics of the last collection did not arrive".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

pub fn run(
    depth: u32,
    repeat: usize,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> std::result::Result<(), String> {
    let config = args.config()?;
    if config.plan != PlanKind::SplitHeap {
        return Err(
            "micro copy measures the split plan's copying global collection (--plan split)".into(),
        );
    }
    let TreeRun {
        rt,
        node,
        nodes,
        want_sum,
    } = start(depth, 25, config)?;
    let tree_bytes = nodes * 32;
    let repeat = repeat.max(1);
    let rt = std::sync::Arc::new(rt);
    let job_rt = rt.clone();
    let (collections, copy, got, marks) = rt
        .run_on(0, move |s| -> std::result::Result<_, String> {
            let e = |e: numagc::Error| e.to_string();
            let root = tree(s, node, depth, 0).map_err(e)?;
            let root = s.promote(root).map_err(e)?;
            let root = s.slot(root);
            // A first collection, not measured: its to-space is fresh
            // memory. Then each vproc's statistics so far.
            s.collect_global().map_err(e)?;
            let marks: Vec<(usize, u64)> = settled(&job_rt, 1)?
                .vprocs
                .iter()
                .map(|v| (v.global_copied.len(), v.global.total_ns))
                .collect();
            let (mut collections, mut copy) = (Vec::new(), Vec::new());
            let src = vec![1u64; (tree_bytes / 8) as usize];
            let mut dst = vec![0u64; src.len()];
            for _ in 0..repeat {
                let t = Instant::now();
                s.collect_global().map_err(e)?;
                collections.push(t.elapsed().as_secs_f64());
                let t = Instant::now();
                dst.copy_from_slice(black_box(&src));
                copy.push(t.elapsed().as_secs_f64());
                black_box(&dst);
            }
            let got = census(s.view(root.get()));
            Ok((collections, copy, got, marks))
        })
        .map_err(|e| e.to_string())??;
    if got != (nodes, want_sum) {
        return Err(format!(
            "tree after the collections: {} nodes, payload sum {:#x}; expected {nodes}, {want_sum:#x}",
            got.0, got.1
        ));
    }
    let stats = settled(&rt, 1 + repeat)?;
    let vprocs = stats.vprocs.len();
    // Per vproc: bytes copied and global-phase time in the measured
    // collections.
    let per_vproc: Vec<(u64, u64)> = stats
        .vprocs
        .iter()
        .zip(&marks)
        .map(|(v, &(n0, ns0))| {
            (
                v.global_copied.iter().skip(n0).sum(),
                v.global.total_ns.saturating_sub(ns0),
            )
        })
        .collect();
    let measured = stats.vprocs[0].global_copied.len() - marks[0].0;
    let copied_total: u64 = per_vproc.iter().map(|p| p.0).sum();
    if measured != repeat || copied_total != tree_bytes * repeat as u64 {
        return Err(format!(
            "{measured} collections copied {copied_total} bytes; expected {repeat} of {tree_bytes}"
        ));
    }
    let gbs = |ts: &[f64]| {
        ts.iter()
            .map(|t| tree_bytes as f64 / t / 1e9)
            .collect::<Vec<f64>>()
    };
    let (c, m) = (gbs(&collections), gbs(&copy));
    let (cm, mm) = (median(&c), median(&m));
    let rates: Vec<f64> = per_vproc
        .iter()
        .map(|&(b, ns)| if ns == 0 { 0.0 } else { b as f64 / ns as f64 })
        .collect();
    let per_vproc_gbs = rates.iter().sum::<f64>() / vprocs as f64;
    println!(
        "tree of depth {depth}: {nodes} nodes, {:.1} MB in the global heap; {repeat} full global collections and {repeat} memcpy, alternating; {vprocs} vprocs",
        tree_bytes as f64 / 1e6
    );
    for (name, xs, med) in [("collection", &c, cm), ("memcpy", &m, mm)] {
        let (lo, hi) = min_max(xs);
        println!("{name:<10} {med:>7.2} GB/s median  ({lo:.2} .. {hi:.2})");
    }
    let shares: Vec<String> = per_vproc
        .iter()
        .zip(&rates)
        .map(|(&(b, _), r)| format!("{:.0} MB at {r:.2} GB/s", b as f64 / 1e6))
        .collect();
    println!(
        "per vproc  {per_vproc_gbs:>7.2} GB/s mean of the vprocs' copying rates in the global phase ({})",
        shares.join(", ")
    );
    println!(
        "per vproc / memcpy: {:.3}; collection / memcpy: {:.3}; answer ok",
        per_vproc_gbs / mm,
        cm / mm
    );
    if let Some(path) = json {
        let v = serde_json::json!({
            "depth": depth, "nodes": nodes, "tree_bytes": tree_bytes, "vprocs": vprocs,
            "collection_gbs": c, "memcpy_gbs": m,
            "per_vproc_copied_bytes": per_vproc.iter().map(|p| p.0).collect::<Vec<_>>(),
            "per_vproc_global_ns": per_vproc.iter().map(|p| p.1).collect::<Vec<_>>(),
            "per_vproc_gbs": per_vproc_gbs,
            "per_vproc_over_memcpy": per_vproc_gbs / mm,
            "collection_over_memcpy": cm / mm,
        });
        crate::bench::write_json(&path, &v)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
