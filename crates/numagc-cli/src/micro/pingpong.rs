//! pingpong: two threads of the language (`Scope::spawn`) bounce a counter
//! over two synchronous channels (manticore-numa-gc.md §2.1, CML-style
//! message passing). Each message is a freshly allocated heap record, so
//! every send promotes it (§2.3); the cost of a rendezvous, the promotion
//! and the thread switch are what is measured. The two threads start on the
//! first and the last vproc, so with 2 vprocs every message crosses
//! between vprocs, and with 1 both threads share one.
//!
//! The answer is checked: the counter comes back as 2 × rounds, and the
//! payload of the last message is the one computed independently.

use crate::runtime_args::RuntimeArgs;
use numagc::{Channel, DescId, Descriptor, Handle, Next, Result, Runtime, Scope};
use std::path::PathBuf;
use std::time::Instant;

/// A message: field 0 = the counter (immediate), field 1 = a raw payload.
fn message<'s>(s: &mut Scope<'s>, msg: DescId, count: i64) -> Result<Handle<'s>> {
    s.alloc_mixed(msg, &[Handle::int(count)], &[payload(count)])
}

fn payload(count: i64) -> u64 {
    (count as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555
}

/// Receives on `from`, replies on `to` with counter + 1, `left` more times;
/// the last message goes to `done`.
fn player<'i>(
    msg: DescId,
    from: Channel,
    to: Channel,
    done: Channel,
    left: u64,
) -> Result<Next<'i>> {
    let f = from.clone();
    Ok(Next::recv(&f, &[], move |s, _, m| {
        let v = s.view(m);
        let count = v.field(0).as_int().expect("a counter");
        if v.raw(1) != payload(count) {
            return Err(numagc::Error::misuse(format!(
                "message {count} arrived damaged"
            )));
        }
        if left == 0 {
            return Ok(Next::send(&done, m, &[], |_, _| Ok(Next::exit())));
        }
        let reply = message(s, msg, count + 1)?;
        let (t, d) = (to.clone(), done.clone());
        Ok(Next::send(&to, reply, &[], move |_, _| {
            player(msg, from, t, d, left - 1)
        }))
    }))
}

pub fn run(
    rounds: u64,
    json: Option<PathBuf>,
    args: &RuntimeArgs,
) -> std::result::Result<(), String> {
    let config = args.config()?;
    let vprocs = config.vprocs;
    let rt = Runtime::new(config).map_err(|e| e.to_string())?;
    let msg = rt
        .register(Descriptor::mixed("message", 2, &[0]).unwrap())
        .map_err(|e| e.to_string())?;
    let (ping, pong, done) = (rt.channel(), rt.channel(), rt.channel());
    let t0 = Instant::now();
    let last = rt
        .run_on(0, move |s| -> Result<(i64, u64)> {
            let (a, b, d) = (ping.clone(), pong.clone(), done.clone());
            s.spawn_on(0, &[], move |_, _| player(msg, a, b, d, rounds))?;
            let (a, b, d) = (ping.clone(), pong.clone(), done.clone());
            s.spawn_on(s.vprocs() - 1, &[], move |_, _| {
                player(msg, b, a, d, rounds)
            })?;
            let first = message(s, msg, 0)?;
            s.send(&ping, first)?;
            let m = s.recv(&done)?;
            let v = s.view(m);
            Ok((v.field(0).as_int().expect("a counter"), v.raw(1)))
        })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    let wall = t0.elapsed().as_secs_f64();
    let stats = rt.stats();
    let errors = rt.take_thread_errors();
    // The first player to run out of rounds has seen 2 × rounds increments.
    let expected = 2 * rounds as i64;
    let correct = last == (expected, payload(expected)) && errors.is_empty();
    let messages = 2 * rounds + 1;
    println!(
        "pingpong {rounds} rounds on {vprocs} vproc(s): counter {} (expected {expected}), wall {wall:.3} s, {:.0} ns per message, {} rendezvous, {} threads stolen, {:.1} MB promoted",
        last.0,
        wall * 1e9 / messages as f64,
        stats.total.rendezvous,
        stats.total.threads_stolen,
        stats.total.bytes_promoted as f64 / 1e6
    );
    if let Some(path) = json {
        let v = serde_json::json!({
            "benchmark": "pingpong",
            "rounds": rounds,
            "vprocs": vprocs,
            "wall_s": wall,
            "ns_per_message": wall * 1e9 / messages as f64,
            "rendezvous": stats.total.rendezvous,
            "bytes_promoted": stats.total.bytes_promoted,
            "config": rt.config(),
            "stats": stats.to_json(),
            "correct": correct,
        });
        crate::bench::write_json(&path, &v)?;
    }
    if correct {
        Ok(())
    } else {
        Err(format!(
            "wrong answer: counter {:?}, expected {expected}; thread errors {errors:?}",
            last
        ))
    }
}
