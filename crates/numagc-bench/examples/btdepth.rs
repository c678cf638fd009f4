// scratch: copy volumes per depth of binarytrees on 1 vproc (not committed)
use numagc::{Config, Descriptor, Handle, Runtime, Scope, View, DescId};
use std::time::Instant;
fn make<'s>(s: &mut Scope<'s>, node: DescId, depth: u32) -> numagc::Result<Handle<'s>> {
    if depth == 0 { return s.alloc_mixed(node, &[Handle::NIL, Handle::NIL], &[]); }
    s.scope_value(|s| { let l = make(s, node, depth - 1)?; let r = make(s, node, depth - 1)?; s.alloc_mixed(node, &[l, r], &[]) })
}
fn check(t: View<'_>) -> u64 { let l = t.field(0); if l.is_int() { 1 } else { 1 + check(l) + check(t.field(1)) } }
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let depths: Vec<u32> = args[1].split(',').map(|x| x.parse().unwrap()).collect();
    let max = 21;
    for d in depths {
        let rt = Runtime::new({ let mut b = numagc::ConfigBuilder::from_env().unwrap(); b.set("vprocs","1").unwrap(); b.build().unwrap() }).unwrap();
        let node = rt.register(Descriptor::mixed("n", 2, &[0, 1]).unwrap()).unwrap();
        let iters = 1u64 << (max - d + 4);
        let t0 = Instant::now();
        let sum = rt.run_on(0, move |s| { let mut sum = 0; for _ in 0..iters { sum += s.scope(|s| make(s, node, d).map(|t| check(s.view(t)))).unwrap(); } sum }).unwrap();
        let el = t0.elapsed().as_secs_f64();
        let st = rt.stats().total;
        println!("d={d} iters={iters} sum={sum} wall={el:.3} minor {} n {:.0} MB {:.0} ms | major {} n {:.0} MB {:.0} ms | global {} n {:.0} MB {:.0} ms",
          st.minor.count, st.bytes_copied_minor as f64/1e6, st.minor.total_ns as f64/1e6,
          st.major.count, st.bytes_copied_major as f64/1e6, st.major.total_ns as f64/1e6,
          st.global.count, st.bytes_copied_global as f64/1e6, st.global.total_ns as f64/1e6);
    }
}
