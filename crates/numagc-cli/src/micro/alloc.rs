//! Nursery allocation rate: numagc's allocation fast path (bump, limit
//! check, header and fields written, result stored in a root slot) against a
//! plain bump-pointer loop writing the same objects into a buffer the size
//! of the nursery, measured alternately in one run (medians reported).
//! Both build 3-word objects (header + two fields) that die at once. A
//! third series is the compiled-code interface's inline path
//! (`numagc::compiled::Mutator::alloc`: bump, one compare, header and
//! fields, the result in a frame slot), alternated with the other two, and
//! a fourth its register code (`Mutator::alloc_at` in `with_regs`: the
//! allocation pointer in a register, written back only by the slow path).

use crate::bench::record::median;
use crate::runtime_args::RuntimeArgs;
use numagc::{Descriptor, Handle, Runtime};
use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

const OBJECT_BYTES: u64 = 24;

/// The baseline: bump allocation of `bytes` into a `nursery`-byte buffer.
fn bump_loop(buf: &mut [u64], bytes: u64) -> (f64, u64) {
    let words = buf.len();
    let objects = bytes / OBJECT_BYTES;
    let t = Instant::now();
    let mut p = 0usize;
    let mut sum = 0u64;
    for i in 0..objects {
        if p + 3 > words {
            sum = sum.wrapping_add(buf[p / 2]);
            p = 0;
        }
        buf[p] = (2 << 16) | 5;
        buf[p + 1] = (i << 1) | 1;
        buf[p + 2] = 1;
        p += 3;
    }
    black_box(&buf);
    (t.elapsed().as_secs_f64(), sum)
}

pub fn run(
    bytes: u64,
    repeat: usize,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> Result<(), String> {
    let mut b = args.builder()?;
    if !args.has("vprocs") {
        b = b.vprocs(1);
    }
    let config = b.build().map_err(|e| e.to_string())?;
    crate::runtime_args::warn(&config);
    let nursery = config.local_heap_size / 2;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let pair = rt
        .register(Descriptor::mixed("pair", 2, &[0, 1]).unwrap())
        .map_err(|e| e.to_string())?;
    let mut buf = vec![0u64; nursery / 8];
    let objects = bytes / OBJECT_BYTES;
    let (mut base, mut ours, mut inline, mut regs) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let pair_header = numagc::compiled::header(pair, 2);
    for _ in 0..repeat.max(1) {
        let (t, _) = bump_loop(&mut buf, bytes);
        base.push(bytes as f64 / t / 1e9);
        let t = rt
            .run_on(0, move |s| -> numagc::Result<f64> {
                let slot = s.slot(Handle::NIL);
                let t = Instant::now();
                for i in 0..objects {
                    s.alloc_mixed_to(slot, pair, &[Handle::int(i as i64), Handle::NIL], &[])?;
                }
                black_box(s.view(slot.get()).field(0).as_int());
                Ok(t.elapsed().as_secs_f64())
            })
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        ours.push(bytes as f64 / t / 1e9);
        let t = rt
            .run_on(0, move |s| -> numagc::Result<f64> {
                // SAFETY: the object is initialised before the next
                // allocation and kept in a frame slot, read back only
                // after the loop (the interface's contract).
                let mut m = unsafe { s.compiled() };
                let f = m.push_frame(1);
                let t = Instant::now();
                for i in 0..objects {
                    let o = m.alloc(pair_header, 2)?;
                    // SAFETY: `o` is fresh, with two value fields.
                    unsafe {
                        m.init(o, 0, (i << 1) | 1);
                        m.init(o, 1, 1);
                    }
                    f.set(0, o);
                }
                // SAFETY: the last object is live in the slot.
                black_box(unsafe { m.field(f.get(0), 0) });
                Ok(t.elapsed().as_secs_f64())
            })
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        inline.push(bytes as f64 / t / 1e9);
        let t = rt
            .run_on(0, move |s| -> numagc::Result<f64> {
                // SAFETY: as above, in register code: the object is kept in
                // the frame slot at `sp`.
                let mut m = unsafe { s.compiled() };
                let t = Instant::now();
                let last = m.with_regs(|m, mut hp, sp| {
                    let top = m.push_at(sp, [numagc::object::NIL]);
                    for i in 0..objects {
                        let o;
                        (o, hp) = m.alloc_at(hp, top, pair_header, 2);
                        // SAFETY: `o` is fresh, with two value fields; the
                        // slot is the frame's.
                        unsafe {
                            m.init(o, 0, (i << 1) | 1);
                            m.init(o, 1, 1);
                            sp.set(0, o);
                        }
                    }
                    // SAFETY: the last object is live in the slot.
                    (unsafe { m.field(sp.get(0), 0) }, hp)
                })?;
                black_box(last);
                Ok(t.elapsed().as_secs_f64())
            })
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        regs.push(bytes as f64 / t / 1e9);
    }
    let stats = rt.stats();
    if stats.total.bytes_allocated < 3 * objects * OBJECT_BYTES * repeat.max(1) as u64 {
        return Err(format!(
            "allocated {} bytes, expected {}",
            stats.total.bytes_allocated,
            objects * OBJECT_BYTES
        ));
    }
    let (mb, mo, mi, mr) = (median(&base), median(&ours), median(&inline), median(&regs));
    println!(
        "allocation rate, {} MB of 24-byte objects per run, {} runs each, alternating:",
        bytes / 1_000_000,
        repeat
    );
    println!(
        "  plain bump-pointer loop ({} KiB buffer): median {mb:.2} GB/s  (min {:.2}, max {:.2})",
        nursery >> 10,
        base.iter().cloned().fold(f64::MAX, f64::min),
        base.iter().cloned().fold(0.0, f64::max)
    );
    println!(
        "  numagc nursery (local heap {} KiB):       median {mo:.2} GB/s  (min {:.2}, max {:.2})",
        rt.config().local_heap_size >> 10,
        ours.iter().cloned().fold(f64::MAX, f64::min),
        ours.iter().cloned().fold(0.0, f64::max)
    );
    println!(
        "  numagc inline path (compiled interface):   median {mi:.2} GB/s  (min {:.2}, max {:.2})",
        inline.iter().cloned().fold(f64::MAX, f64::min),
        inline.iter().cloned().fold(0.0, f64::max)
    );
    println!(
        "  numagc register code (alloc_at):           median {mr:.2} GB/s  (min {:.2}, max {:.2})",
        regs.iter().cloned().fold(f64::MAX, f64::min),
        regs.iter().cloned().fold(0.0, f64::max)
    );
    println!("  ratio numagc / bump loop: {:.0} %", 100.0 * mo / mb);
    println!("  ratio inline path / bump loop: {:.0} %", 100.0 * mi / mb);
    println!(
        "  ratio register code / bump loop: {:.0} %",
        100.0 * mr / mb
    );
    println!(
        "  minor collections: {}, bytes copied by them: {}",
        stats.total.minor.count, stats.total.bytes_copied_minor
    );
    if let Some(path) = json {
        let v = serde_json::json!({
            "benchmark": "alloc", "bytes_per_run": bytes, "repeat": repeat,
            "local_heap": rt.config().local_heap_size,
            "bump_gb_s": base, "numagc_gb_s": ours,
            "bump_median": mb, "numagc_median": mo, "ratio": mo / mb,
            "inline_gb_s": inline, "inline_median": mi, "inline_ratio": mi / mb,
            "regs_gb_s": regs, "regs_median": mr, "regs_ratio": mr / mb,
        });
        crate::bench::write_json(&path, &v)?;
    }
    Ok(())
}
