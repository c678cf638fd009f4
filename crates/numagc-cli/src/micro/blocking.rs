//! blocking: what a blocking section (`Scope::blocking`, issue 16) costs
//! the vproc that enters it, and what it saves the others.
//!
//! 1. The cost: vproc 0 runs `sections` empty sections (nothing blocks, no
//!    collection is pending: the common case of a system call that
//!    returns at once) and, alternately, as many safepoint polls; both are
//!    reported per call.
//! 2. The saving (2 vprocs or more): vproc 1 blocks for `block_ms`, inside
//!    a section and then outside one, while vproc 0 runs `collections`
//!    global collections; each collection's duration is reported. Inside,
//!    vproc 1's proxy takes part for it; outside, the collections wait for
//!    vproc 1 to come back.
//!
//! The answers are checked: each section's closure result, and vproc 1's
//! list, built before it blocks and read back after.

use crate::runtime_args::RuntimeArgs;
use numagc::{Descriptor, Runtime};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Elements of vproc 1's list.
const LIST: u64 = 20_000;

fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub fn run(
    sections: u64,
    block_ms: u64,
    collections: usize,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> Result<(), String> {
    let config = args.config()?;
    let vprocs = config.vprocs;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let cons = rt
        .register(Descriptor::mixed("cons", 2, &[1]).unwrap())
        .map_err(|e| e.to_string())?;

    // 1. The cost of an empty section, against a safepoint poll.
    let (section_ns, poll_ns) = rt
        .run_on(0, move |s| -> numagc::Result<(f64, f64)> {
            let (mut sec, mut poll) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                let t0 = Instant::now();
                let mut sum = 0u64;
                for i in 0..sections {
                    sum = sum.wrapping_add(s.blocking(|| std::hint::black_box(i))?);
                }
                sec.push(t0.elapsed().as_nanos() as f64 / sections as f64);
                if sum != sections.wrapping_mul(sections.wrapping_sub(1)) / 2 {
                    return Err(numagc::Error::misuse("a section lost its result"));
                }
                let t0 = Instant::now();
                for _ in 0..sections {
                    s.poll();
                }
                poll.push(t0.elapsed().as_nanos() as f64 / sections as f64);
            }
            Ok((median(&mut sec), median(&mut poll)))
        })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    println!(
        "blocking: {sections} empty sections on vproc 0: {section_ns:.1} ns each (a safepoint poll: {poll_ns:.1} ns), median of 5"
    );

    // 2. Collections while vproc 1 blocks.
    let mut rounds = Vec::new();
    if vprocs >= 2 {
        for in_section in [true, false] {
            let blocked = Arc::new(AtomicBool::new(false));
            let b = blocked.clone();
            let out = rt
                .run_each(move |s| -> numagc::Result<Vec<f64>> {
                    match s.vproc() {
                        1 => {
                            let list = s.scope_value(|s| {
                                let mut l = s.nil();
                                for i in 0..LIST {
                                    l = s.alloc_mixed(cons, &[l], &[i])?;
                                }
                                Ok::<_, numagc::Error>(l)
                            })?;
                            let wait = || {
                                b.store(true, Ordering::SeqCst);
                                std::thread::sleep(Duration::from_millis(block_ms));
                            };
                            if in_section {
                                s.blocking(wait)?;
                            } else {
                                wait();
                            }
                            let (mut v, mut i) = (s.view(list), LIST);
                            while v.is_object() {
                                i -= 1;
                                if v.raw(0) != i {
                                    return Err(numagc::Error::misuse(format!(
                                        "vproc 1's list is damaged at element {i}"
                                    )));
                                }
                                v = v.field(1);
                            }
                            if i != 0 {
                                return Err(numagc::Error::misuse("vproc 1's list is short"));
                            }
                            Ok(Vec::new())
                        }
                        0 => {
                            while !b.load(Ordering::SeqCst) {
                                std::thread::sleep(Duration::from_micros(200));
                            }
                            let mut ms = Vec::new();
                            for _ in 0..collections {
                                let t0 = Instant::now();
                                s.collect_global()?;
                                ms.push(t0.elapsed().as_secs_f64() * 1e3);
                            }
                            Ok(ms)
                        }
                        _ => Ok(Vec::new()),
                    }
                })
                .map_err(|e| e.to_string())?;
            let mut ms = Vec::new();
            for r in out {
                let r = r.map_err(|e| e.to_string())?;
                ms.extend(r);
            }
            let all = ms.clone();
            let max = ms.iter().cloned().fold(0.0, f64::max);
            println!(
                "vproc 1 blocked {block_ms} ms {} a section; vproc 0's {collections} global collections: median {:.2} ms, max {max:.2} ms",
                if in_section { "inside" } else { "outside" },
                median(&mut ms)
            );
            rounds.push(serde_json::json!({
                "in_section": in_section,
                "collection_ms": all,
            }));
        }
    }
    if let Some(path) = json {
        let v = serde_json::json!({
            "benchmark": "blocking",
            "sections": sections,
            "section_ns": section_ns,
            "poll_ns": poll_ns,
            "block_ms": block_ms,
            "rounds": rounds,
            "config": rt.config(),
        });
        crate::bench::write_json(&path, &v)?;
    }
    Ok(())
}
