//! binary-trees one depth at a time: for each depth given, the 2^(25-d)
//! trees of that depth (as in `numagc bench binarytrees --depth 21`) on a
//! fresh 1-vproc runtime, then the copy volumes of each kind of collection.
//! Shows where collector time goes per tree size (docs/results/binarytrees.md).
//! Runtime settings come from the `NUMAGC_*` environment variables.
//!
//! `cargo run --release -p numagc-bench --example bt_depths -- 4,16,18,20`

use numagc::{ConfigBuilder, DescId, Descriptor, Handle, Runtime, Scope, View};
use std::time::Instant;

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

fn main() -> Result<(), String> {
    let arg = std::env::args().nth(1).ok_or("usage: bt_depths D[,D...]")?;
    let depths: Vec<u32> = arg
        .split(',')
        .map(|x| x.parse().map_err(|e| format!("depth {x:?}: {e}")))
        .collect::<Result<_, _>>()?;
    for d in depths {
        if !(1..=25).contains(&d) {
            return Err(format!("depth {d}: allowed 1..=25"));
        }
        let mut b = ConfigBuilder::from_env().map_err(|e| e.to_string())?;
        b.set("vprocs", "1").map_err(|e| e.to_string())?;
        let rt = Runtime::new(b.build().map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let node = rt
            .register(Descriptor::mixed("node", 2, &[0, 1]).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
        let iterations = 1u64 << (25 - d);
        let t0 = Instant::now();
        let sum = rt
            .run_on(0, move |s| -> numagc::Result<u64> {
                let mut sum = 0;
                for _ in 0..iterations {
                    sum += s.scope(|s| make(s, node, d).map(|t| check(s.view(t))))?;
                }
                Ok(sum)
            })
            .map_err(|e| e.to_string())?
            .map_err(|e| e.to_string())?;
        let wall = t0.elapsed().as_secs_f64();
        let want = iterations * ((1u64 << (d + 1)) - 1);
        if sum != want {
            return Err(format!("depth {d}: check {sum} != {want}"));
        }
        let t = rt.stats().total;
        let mb = |b: u64| b as f64 / 1e6;
        let ms = |ns: u64| ns as f64 / 1e6;
        println!(
            "depth {d:>2}: {iterations:>8} trees, wall {wall:.3} s | minor {} copied {:.0} MB {:.0} ms | major {} copied {:.0} MB {:.0} ms | global {} copied {:.0} MB {:.0} ms",
            t.minor.count, mb(t.bytes_copied_minor), ms(t.minor.total_ns),
            t.major.count, mb(t.bytes_copied_major), ms(t.major.total_ns),
            t.global.count, mb(t.bytes_copied_global), ms(t.global.total_ns),
        );
    }
    Ok(())
}
