//! compact: memory given back when a program's live data shrinks
//! (`Scope::compact`, OCaml's `Gc.compact`).
//!
//! Vproc 0 builds `objects` small objects of five sizes (2 to 6 fields)
//! and keeps every `keep`-th; then it drops its handle to the rest. The
//! resident memory of the process (`/proc/self/statm`) and the heap's
//! bytes in use are reported at four points: built (everything live);
//! after a full collection (`collect_global`: the garbage is freed, but on
//! the shared plan the survivors are spread thinly over every page, and on
//! the split plan the emptied chunks wait in the chunk pools); after
//! `compact`; and after allocating the same amount of short-lived data
//! again (the memory comes back only as it is needed). The survivors are
//! checked against their indices after each step, and the time of the
//! compaction is reported.
//!
//! Run it once per plan (`--plan split`, `--plan shared`) and with
//! `--compact-overhead 0` or the default, to see automatic compaction's
//! part (the shared plan's default compacts by itself at the end of a
//! cycle once free space passes 500 % of the live data).

use crate::runtime_args::RuntimeArgs;
use numagc::{Handle, Runtime, Scope};
use std::path::PathBuf;
use std::time::Instant;

/// Resident bytes of this process.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    // SAFETY: sysconf only reads a system constant.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) }.max(1) as u64;
    pages * page
}

/// Fields of object `i`: `2 + i % 5`, each `i * (1 + 2k)`.
fn fields(i: i64) -> Vec<Handle<'static>> {
    (0..2 + i % 5)
        .map(|k| Handle::int(i * (1 + 2 * k)))
        .collect()
}

/// Checks the kept list (newest first) against the indices it must hold.
fn check(s: &mut Scope<'_>, kept: Handle<'_>, objects: i64, keep: i64) -> Result<(), String> {
    let mut v = s.view(kept);
    let mut i = (objects - 1) / keep * keep;
    while i >= 0 {
        let o = v.field(0);
        for (k, f) in fields(i).iter().enumerate() {
            if o.field(k).as_int() != s.view(*f).as_int() {
                return Err(format!("kept object {i} has a wrong field {k}"));
            }
        }
        v = v.field(1);
        i -= keep;
    }
    if v.as_int().is_none() {
        return Err("the kept list is longer than it should be".into());
    }
    Ok(())
}

#[derive(serde::Serialize)]
struct Point {
    step: &'static str,
    rss_bytes: u64,
    heap_bytes: u64,
}

pub fn run(
    objects: i64,
    keep: i64,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> Result<(), String> {
    if objects < 1 || keep < 1 {
        return Err("--objects and --keep must be at least 1".into());
    }
    let config = args.config()?;
    let plan = config.plan;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    // Resident memory and heap bytes in use, now.
    let measure = |step, rt: &Runtime| Point {
        step,
        rss_bytes: rss(),
        heap_bytes: rt.stats().heap.global_bytes_per_node.iter().sum::<u64>(),
    };
    let mut points = Vec::new();
    let root = rt
        .run_on(0, move |s| -> Result<numagc::GlobalRoot, String> {
            // `all` holds every object until the scope ends. Two slots are
            // updated in place, each object made in a scope of its own, so
            // that the root stack stays small as a program's would.
            let kept = s
                .scope_value(|s| {
                    let (nil, nil2) = (s.nil(), s.nil());
                    let (kept, all) = (s.slot(nil), s.slot(nil2));
                    for i in 0..objects {
                        s.scope(|s| -> numagc::Result<()> {
                            let o = s.alloc_vector(&fields(i))?;
                            let a = s.alloc_vector(&[o, all.get()])?;
                            s.assign(all, a);
                            if i % keep == 0 {
                                let k = s.alloc_vector(&[o, kept.get()])?;
                                s.assign(kept, k);
                            }
                            Ok(())
                        })?;
                    }
                    Ok::<_, numagc::Error>(kept.get())
                })
                .map_err(|e| e.to_string())?;
            check(s, kept, objects, keep)?;
            s.global_root(kept).map_err(|e| e.to_string())
        })
        .map_err(|e| e.to_string())??;
    // Nothing has collected the dropped objects yet: the peak.
    points.push(measure("built", &rt));
    let root = std::sync::Arc::new(root);
    let r = root.clone();
    rt.run_on(0, move |s| -> Result<(), String> {
        s.collect_global().map_err(|e| e.to_string())?;
        let kept = s.get_global(&r).map_err(|e| e.to_string())?;
        check(s, kept, objects, keep)
    })
    .map_err(|e| e.to_string())??;
    points.push(measure("full collection", &rt));
    let r = root.clone();
    let compact_ms = rt
        .run_on(0, move |s| -> Result<f64, String> {
            let t0 = Instant::now();
            s.compact().map_err(|e| e.to_string())?;
            let ms = t0.elapsed().as_secs_f64() * 1e3;
            let kept = s.get_global(&r).map_err(|e| e.to_string())?;
            check(s, kept, objects, keep)?;
            Ok(ms)
        })
        .map_err(|e| e.to_string())??;
    points.push(measure("compact", &rt));
    let r = root.clone();
    rt.run_on(0, move |s| -> Result<(), String> {
        for i in 0..objects {
            s.scope(|s| s.alloc_vector(&fields(i)).map(|_| ()))
                .map_err(|e| e.to_string())?;
        }
        let kept = s.get_global(&r).map_err(|e| e.to_string())?;
        check(s, kept, objects, keep)
    })
    .map_err(|e| e.to_string())??;
    points.push(measure("short-lived data", &rt));
    let st = rt.stats();
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "compact: plan {}, {objects} objects, every {keep}th kept; compaction {compact_ms:.1} ms, {} compactions in all, {:.1} MiB moved",
        plan.name(),
        st.total.compactions,
        mib(st.total.bytes_compacted)
    );
    println!("{:<18} {:>10} {:>10}", "step", "RSS MiB", "heap MiB");
    for p in &points {
        println!(
            "{:<18} {:>10.1} {:>10.1}",
            p.step,
            mib(p.rss_bytes),
            mib(p.heap_bytes)
        );
    }
    if let Some(path) = json {
        let out = serde_json::json!({
            "plan": plan.name(),
            "objects": objects,
            "keep": keep,
            "compact_ms": compact_ms,
            "compactions": st.total.compactions,
            "bytes_compacted": st.total.bytes_compacted,
            "points": points,
        });
        std::fs::write(&path, serde_json::to_string_pretty(&out).unwrap())
            .map_err(|e| format!("{}: {e}", path.display()))?;
    }
    Ok(())
}
