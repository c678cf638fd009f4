//! pack: the bandwidth of packing an immutable graph into a PE packet
//! (`numagc::pe::pack_graph_into`, gumsmp-shared-distributed-heaps.txt
//! §2.1), and of unpacking it, against `memcpy` of the packet's bytes,
//! measured alternately in one run (issue 19 asks packing for ≥ 50 % of
//! `memcpy`'s bandwidth on a 10 MB tree). Both packing and `memcpy` write
//! into a buffer they reuse from one measurement to the next, so neither
//! pays for fresh pages.
//!
//! The graph is a complete binary tree of `depth` levels of immutable
//! mixed nodes (left, right, a raw payload word): 2^depth − 1 nodes of
//! four words in the packet (tag, three fields). Bandwidth is packet bytes
//! over time for all three.
//!
//! Checked: the packet has the size the format gives for the tree; the
//! unpacked tree has every payload, summed, equal to the sum computed
//! from the formula of the payloads, and the right node count.

use super::tree::{census, start, tree, TreeRun};
use crate::bench::record::{median, min_max};
use crate::runtime_args::RuntimeArgs;
use numagc::Result;
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

/// (pack, unpack, memcpy seconds; packet words; (nodes, payload sum)
/// of the last unpacked tree).
type Measured = (Vec<f64>, Vec<f64>, Vec<f64>, usize, (u64, u64));

pub fn run(
    depth: u32,
    repeat: usize,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> std::result::Result<(), String> {
    let TreeRun {
        rt,
        node,
        nodes,
        want_sum,
    } = start(depth, 26, args.config()?)?;
    let repeat = repeat.max(1);
    let r = rt
        .run_on(0, move |s| -> Result<Measured> {
            let root = tree(s, node, depth, 0)?;
            let root = s.slot(root);
            let (mut pack, mut unpack, mut copy) = (Vec::new(), Vec::new(), Vec::new());
            let mut words = 0;
            let mut got = (0, 0);
            let mut dst: Vec<u64> = Vec::new();
            let mut packet: Vec<u64> = Vec::new();
            for _ in 0..repeat {
                let t = Instant::now();
                numagc::pe::pack_graph_into(s, &[root.get()], usize::MAX, &mut packet)?;
                pack.push(t.elapsed().as_secs_f64());
                words = packet.len();
                if dst.len() != words {
                    dst = vec![1; words];
                }
                let t = Instant::now();
                dst.copy_from_slice(black_box(&packet));
                copy.push(t.elapsed().as_secs_f64());
                black_box(&dst);
                got = s.scope(|s| -> Result<(u64, u64)> {
                    let t = Instant::now();
                    let hs = numagc::pe::unpack_graph(s, &packet, 0)?;
                    unpack.push(t.elapsed().as_secs_f64());
                    Ok(census(s.view(hs[0])))
                })?;
            }
            Ok((pack, unpack, copy, words, got))
        })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let (pack, unpack, copy, words, (got_nodes, got_sum)) = r;
    // Header (3 words), one descriptor entry (2), 4 words a node, 1 value.
    let want_words = 3 + 2 + 4 * nodes as usize + 1;
    if words != want_words {
        return Err(format!(
            "packet of {words} words, the format gives {want_words}"
        ));
    }
    if (got_nodes, got_sum) != (nodes, want_sum) {
        return Err(format!(
            "unpacked tree: {got_nodes} nodes, payload sum {got_sum:#x}; expected {nodes}, {want_sum:#x}"
        ));
    }
    let bytes = (words * 8) as f64;
    let gbs = |ts: &[f64]| ts.iter().map(|t| bytes / t / 1e9).collect::<Vec<f64>>();
    let (p, u, c) = (gbs(&pack), gbs(&unpack), gbs(&copy));
    let (pm, um, cm) = (median(&p), median(&u), median(&c));
    println!(
        "tree of depth {depth}: {nodes} nodes, packet {:.1} MB; {repeat} measurements each, alternating",
        bytes / 1e6
    );
    for (name, xs, m) in [("pack", &p, pm), ("unpack", &u, um), ("memcpy", &c, cm)] {
        let (lo, hi) = min_max(xs);
        println!("{name:<7} {m:>7.2} GB/s median  ({lo:.2} .. {hi:.2})");
    }
    println!(
        "pack / memcpy: {:.3} (median of each); unpack / memcpy: {:.3}; answer ok",
        pm / cm,
        um / cm
    );
    if let Some(path) = json {
        let v = serde_json::json!({
            "depth": depth, "nodes": nodes, "packet_bytes": bytes,
            "pack_gbs": p, "unpack_gbs": u, "memcpy_gbs": c,
            "pack_over_memcpy": pm / cm, "unpack_over_memcpy": um / cm,
        });
        crate::bench::write_json(&path, &v)?;
        println!("wrote {}", path.display());
    }
    Ok(())
}
