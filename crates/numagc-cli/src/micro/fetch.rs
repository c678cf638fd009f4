//! fetch: reading another PE's object over MPI against a raw MPI
//! ping-pong of the same bytes, side by side (issue 19: a fetch round trip
//! within 2 × the raw ping-pong). Run under `mpirun -n 2`; rank 0
//! measures, rank 1 owns the data.
//!
//! PE 0 asks PE 1 (`Scope::call_on`) to make a mutable array holding a raw
//! object of N bytes; the array comes back as a FetchMe. Then, for each
//! size, alternately, `repeat` times:
//! - **numagc**: `rounds` times `Scope::remote_get(array, 0)` on PE 0: an
//!   `access` message to PE 1, served by a vproc there (the object packed
//!   whole), a `value` message back, unpacked into PE 0's heap (a copy of
//!   the N bytes);
//! - **raw**: `rounds` blocking `MPI_Send`/`MPI_Recv` pairs on
//!   `MPI_COMM_WORLD` whose messages have the sizes of numagc's: the
//!   request as long as an `access`, the answer as long as the `value`
//!   (the packet's header and tag words besides the N bytes). What a
//!   hand-written MPI program pays to move the same bytes.
//!
//! Each PE is a runtime of the `NUMAGC_*` settings (`NUMAGC_PLAN=shared`
//! runs it on the shared plan), with one vproc.
//!
//! The figure is the time of one round trip (median over the
//! measurements, each the mean of `rounds`). Checked: every copy has N
//! bytes, and the last one the bytes PE 1 wrote; at the end, the weight
//! books of both PEs are empty.

#[cfg(not(feature = "mpi"))]
pub fn run(
    _bytes: &[usize],
    _rounds: u64,
    _repeat: usize,
    _concurrent: bool,
) -> Result<(), String> {
    Err("micro fetch measures PEs over MPI: build it with `cargo build --release -p numagc-cli --features mpi` and run it under `mpirun -n 2`".into())
}

/// Bytes of an `access` message (`numagc::pe`'s format, version 2): the
/// 16-byte header, request id, reply PE, global id, field, operation.
#[cfg(feature = "mpi")]
const ACCESS_BYTES: usize = 16 + 8 + 4 + 8 + 8 + 1;

/// Bytes of the `value` message answering with a raw object of `n` bytes:
/// the header, request id, outcome tag, and the packet (3 header words,
/// the object's tag word, its words, the value's word).
#[cfg(feature = "mpi")]
fn value_bytes(n: usize) -> usize {
    16 + 8 + 1 + 8 * (3 + 1 + n / 8 + 1)
}

#[cfg(feature = "mpi")]
fn pattern(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x5555
}

/// The task PE 0 sends PE 1: an array holding a raw object of
/// `args[0]` words.
#[cfg(feature = "mpi")]
fn make_array<'s>(
    s: &mut numagc::Scope<'s>,
    args: &[numagc::Handle<'s>],
) -> numagc::Result<numagc::Handle<'s>> {
    let words = s.as_int(args[0]).unwrap_or(0).max(0) as u64;
    let data: Vec<u64> = (0..words).map(pattern).collect();
    let raw = s.alloc_raw(&data)?;
    s.alloc_array(1, raw)
}

#[cfg(feature = "mpi")]
pub fn run(bytes: &[usize], rounds: u64, repeat: usize, concurrent: bool) -> Result<(), String> {
    use super::roundtrip::{print_rows, two_ranks};
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use numagc::pe::Exports;
    use numagc::Handle;
    use std::time::{Duration, Instant};

    let session = two_ranks("fetch")?;
    if let Some(n) = bytes.iter().find(|&&n| n == 0 || n % 8 != 0) {
        return Err(format!(
            "--bytes {n}: sizes are whole words (multiples of 8, not 0)"
        ));
    }
    let me = session.rank();
    let world = SimpleCommunicator::world();
    let other = world.process_at_rank(1 - me as i32);
    let (rounds, repeat) = (rounds.max(1), repeat.max(1));
    const RAW_TAG: i32 = 32_200;
    // Between phases: a barrier that sleeps, so that a rank waiting in it
    // leaves the cores to its PE.
    let barrier = || {
        let mut req = world.immediate_barrier();
        loop {
            match req.test() {
                Ok(_) => return,
                Err(r) => req = r,
            }
            std::thread::sleep(Duration::from_micros(100));
        }
    };
    let mut exports = Exports::new();
    let make = exports
        .register("make_array", make_array)
        .map_err(|e| e.to_string())?;
    // The NUMAGC_* settings apply (`NUMAGC_PLAN=shared`); one vproc per PE
    // (two for --concurrent).
    let config = numagc::ConfigBuilder::from_env()
        .map_err(|e| e.to_string())?
        .vprocs(if concurrent { 2 } else { 1 })
        .pin(false)
        .build()
        .map_err(|e| e.to_string())?;
    let mut g = session
        .group(2, config, exports, |_| Ok(()))
        .map_err(|e| e.to_string())?;
    let mut rows = Vec::new();
    for &n in bytes {
        let words = n / 8;
        // PE 0 holds the FetchMe of PE 1's array in a global root.
        let array = if me == 0 {
            let got = g
                .run(move |s| -> numagc::Result<numagc::GlobalRoot> {
                    let fm = s.call_on(1, make, &[Handle::int(words as i64)])?;
                    if !s.is_remote(fm) {
                        return Err(numagc::Error::misuse("the array did not stay on PE 1"));
                    }
                    s.global_root(fm)
                })
                .map_err(|e| e.to_string())?
                .map_err(|e| e.to_string())?;
            Some(std::sync::Arc::new(got))
        } else {
            None
        };
        let (mut raw, mut ours) = (Vec::new(), Vec::new());
        for _ in 0..repeat {
            barrier();
            // Raw MPI, with numagc's message sizes.
            let (req, ans) = (vec![1u8; ACCESS_BYTES], vec![2u8; value_bytes(n)]);
            let (mut req_in, mut ans_in) = (vec![0u8; ACCESS_BYTES], vec![0u8; value_bytes(n)]);
            let t = Instant::now();
            for _ in 0..rounds {
                if me == 0 {
                    other.send_with_tag(&req[..], RAW_TAG);
                    other.receive_into_with_tag(&mut ans_in[..], RAW_TAG);
                } else {
                    other.receive_into_with_tag(&mut req_in[..], RAW_TAG);
                    other.send_with_tag(&ans[..], RAW_TAG);
                }
            }
            raw.push(t.elapsed().as_secs_f64() / rounds as f64);
            if (me == 0 && ans_in != ans) || (me == 1 && req_in != req) {
                return Err(format!("raw MPI: a message of {n} bytes came damaged"));
            }
            barrier();
            // numagc: PE 0 reads field 0 of PE 1's array, `rounds` times;
            // PE 1's service and vproc answer (its main thread waits in
            // the barrier).
            if let Some(array) = &array {
                let array = array.clone();
                let (secs, ok) = g
                    .run(move |s| -> numagc::Result<(f64, bool)> {
                        let fm = s.get_global(&array)?;
                        let t = Instant::now();
                        let mut ok = true;
                        for round in 0..rounds {
                            let last = round + 1 == rounds;
                            ok &= s.scope(|s| -> numagc::Result<bool> {
                                let copy = s.remote_get(fm, 0)?;
                                let v = s.view(copy);
                                let ws = v.raw_words().unwrap_or_default();
                                Ok(ws.len() == words
                                    && (!last
                                        || ws
                                            .iter()
                                            .enumerate()
                                            .all(|(i, &w)| w == pattern(i as u64))))
                            })?;
                        }
                        Ok((t.elapsed().as_secs_f64() / rounds as f64, ok))
                    })
                    .map_err(|e| e.to_string())?
                    .map_err(|e| e.to_string())?;
                if !ok {
                    return Err(format!("numagc: a fetch of {n} bytes came back damaged"));
                }
                ours.push(secs);
            }
            barrier();
        }
        rows.push((n, raw, ours));
        if concurrent && n == *bytes.last().expect("sizes given") {
            if let Some(array) = &array {
                read_concurrently(&mut g, array.clone(), words, rounds)?;
            }
            barrier();
        }
    }
    if me != 0 {
        // Until PE 0 ends the job.
        return g.serve().map_err(|e| e.to_string());
    }
    let stats = g.finish();
    let left: Vec<String> = stats
        .iter()
        .filter(|p| p.git_entries + p.imports > 0)
        .map(|p| {
            format!(
                "PE {}: {} GIT entries, {} imports",
                p.pe, p.git_entries, p.imports
            )
        })
        .collect();
    println!(
        "fetch over MPI, 2 ranks: remote_get of a raw object of N bytes against raw MPI \
         send/recv of the same message sizes; {rounds} round trips a measurement, {repeat} \
         measurements each, alternating"
    );
    print_rows(&rows);
    if !left.is_empty() {
        return Err(format!("weight books not settled: {}", left.join("; ")));
    }
    if concurrent {
        println!(
            "concurrent: 2 readers on PE 0 x {rounds} reads of the last size, every copy checked"
        );
    }
    println!("answers ok (every copy had the bytes PE 1 wrote; every weight came back)");
    Ok(())
}

/// Two readers at once on PE 0, `rounds` reads each of field 0 of the
/// array, every copy's bytes checked.
#[cfg(feature = "mpi")]
fn read_concurrently(
    g: &mut numagc::pe::PeGroup,
    array: std::sync::Arc<numagc::GlobalRoot>,
    words: usize,
    rounds: u64,
) -> Result<(), String> {
    use numagc::Handle;
    fn reads<'i>(
        s: &mut numagc::Scope<'i>,
        fm: Handle<'_>,
        words: usize,
        rounds: u64,
    ) -> numagc::Result<Handle<'i>> {
        for _ in 0..rounds {
            let ok =
                s.scope(|s| -> numagc::Result<bool> {
                    let copy = s.remote_get(fm, 0)?;
                    let v = s.view(copy);
                    let ws = v.raw_words().unwrap_or_default();
                    Ok(ws.len() == words
                        && ws.iter().enumerate().all(|(i, &w)| w == pattern(i as u64)))
                })?;
            if !ok {
                return Ok(Handle::int(0));
            }
        }
        Ok(Handle::int(1))
    }
    let ok = g
        .run(move |s| -> numagc::Result<bool> {
            let fm = s.get_global(&array)?;
            let (a, b) = s.par2(
                &[fm],
                move |s, env| reads(s, env[0], words, rounds),
                move |s, env| reads(s, env[0], words, rounds),
            )?;
            Ok(s.as_int(a) == Some(1) && s.as_int(b) == Some(1))
        })
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    if ok {
        Ok(())
    } else {
        Err("concurrent readers: a copy came back damaged".into())
    }
}
