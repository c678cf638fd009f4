//! binary-trees from the Computer Language Benchmarks Game, on the numagc
//! heap: a stretch tree of depth max+1, a long-lived tree of depth max kept
//! in a global root for the whole run, and 2^(max-d+4) trees for each depth
//! d from 4 to max in steps of 2, the iterations of each depth spread over
//! the vprocs. The output lines are the standard program's; each check value
//! is compared with the node count 2^(d+1)-1 computed independently.

use crate::runtime_args::RuntimeArgs;
use numagc::{DescId, Descriptor, Handle, Runtime, Scope, View};
use std::path::PathBuf;
use std::time::Instant;

const MIN_DEPTH: u32 = 4;

fn make<'s>(s: &mut Scope<'s>, node: DescId, depth: u32) -> numagc::Result<Handle<'s>> {
    if depth == 0 {
        return s.alloc_mixed(node, &[Handle::NIL, Handle::NIL], &[]);
    }
    s.scope_value(|s| {
        let l = make(s, node, depth - 1)?;
        let r = make(s, node, depth - 1)?;
        s.alloc_mixed(node, &[l, r], &[])
    })
}

fn check(t: View<'_>) -> u64 {
    let l = t.field(0);
    if l.is_int() {
        1
    } else {
        1 + check(l) + check(t.field(1))
    }
}

fn nodes(depth: u32) -> u64 {
    (1u64 << (depth + 1)) - 1
}

pub fn run(depth: u32, json: Option<PathBuf>, args: &RuntimeArgs) -> Result<(), String> {
    let max_depth = depth.max(MIN_DEPTH + 2);
    if max_depth > 30 {
        return Err(format!("--depth {depth}: allowed 0 ..= 30"));
    }
    let config = args.config()?;
    let vprocs = config.vprocs;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let node = rt.register(Descriptor::mixed("tree-node", 2, &[0, 1]).unwrap()).map_err(|e| e.to_string())?;
    let err = |e: numagc::Error| e.to_string();
    let mut failures = Vec::new();
    let t0 = Instant::now();

    let stretch = rt
        .run_on(0, move |s| -> numagc::Result<u64> {
            let t = make(s, node, max_depth + 1)?;
            Ok(check(s.view(t)))
        })
        .map_err(err)?
        .map_err(err)?;
    println!("stretch tree of depth {}\t check: {}", max_depth + 1, stretch);
    if stretch != nodes(max_depth + 1) {
        failures.push(format!("stretch tree: {stretch} != {}", nodes(max_depth + 1)));
    }

    let long_lived = rt
        .run_on(0, move |s| -> numagc::Result<numagc::GlobalRoot> {
            let t = make(s, node, max_depth)?;
            Ok(s.global_root(t))
        })
        .map_err(err)?
        .map_err(err)?;

    let depths: Vec<u32> = (MIN_DEPTH..=max_depth).step_by(2).collect();
    let per_vproc = rt
        .run_each(move |s| -> numagc::Result<Vec<u64>> {
            let (me, n) = (s.vproc() as u64, s.vprocs() as u64);
            let mut sums = Vec::new();
            for d in (MIN_DEPTH..=max_depth).step_by(2) {
                let iterations = 1u64 << (max_depth - d + MIN_DEPTH);
                let mut sum = 0;
                for _ in (me..iterations).step_by(n as usize) {
                    sum += s.scope(|s| make(s, node, d).map(|t| check(s.view(t))))?;
                }
                sums.push(sum);
            }
            Ok(sums)
        })
        .map_err(err)?;
    let mut totals = vec![0u64; depths.len()];
    for r in per_vproc {
        for (t, x) in totals.iter_mut().zip(r.map_err(err)?) {
            *t += x;
        }
    }
    for (&d, &sum) in depths.iter().zip(&totals) {
        let iterations = 1u64 << (max_depth - d + MIN_DEPTH);
        println!("{iterations}\t trees of depth {d}\t check: {sum}");
        if sum != iterations * nodes(d) {
            failures.push(format!("depth {d}: {sum} != {}", iterations * nodes(d)));
        }
    }

    let ll = rt
        .run_on(0, move |s| {
            let t = s.get_global(&long_lived);
            check(s.view(t))
        })
        .map_err(err)?;
    println!("long lived tree of depth {max_depth}\t check: {ll}");
    if ll != nodes(max_depth) {
        failures.push(format!("long-lived tree: {ll} != {}", nodes(max_depth)));
    }
    let wall = t0.elapsed().as_secs_f64();

    let stats = rt.stats();
    let allocated = stats.total.bytes_allocated as f64;
    println!();
    println!(
        "binarytrees depth {max_depth} on {vprocs} vproc(s): wall {wall:.3} s, allocated {:.2} GB, allocation rate {:.2} GB/s, {} global collections ({} full)",
        allocated / 1e9,
        allocated / wall / 1e9,
        rt.global_collections(),
        rt.full_global_collections()
    );
    print!("{}", stats.table());
    if let Some(path) = json {
        let v = serde_json::json!({
            "benchmark": "binarytrees",
            "depth": max_depth,
            "vprocs": vprocs,
            "wall_s": wall,
            "bytes_allocated": stats.total.bytes_allocated,
            "allocation_rate_gb_s": allocated / wall / 1e9,
            "global_collections": rt.global_collections(),
            "full_global_collections": rt.full_global_collections(),
            "config": rt.config(),
            "stats": stats.to_json(),
            "correct": failures.is_empty(),
        });
        crate::bench::write_json(&path, &v)?;
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("wrong answers: {failures:?}"))
    }
}
