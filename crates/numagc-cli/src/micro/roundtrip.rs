//! roundtrip: the PE message layer over MPI against raw MPI, side by
//! side (issue 19: a fetch round trip within 2 × a raw MPI ping-pong of
//! the same bytes). Run under `mpirun -n 2`; rank 0 measures, rank 1
//! echoes.
//!
//! For each message size, alternately, `repeat` times:
//! - **raw**: `MPI_Send` / `MPI_Recv` ping-pong on `MPI_COMM_WORLD`, the
//!   baseline a hand-written MPI program gets (blocking calls: Open MPI
//!   spins in them);
//! - **numagc**: `numagc::pe::mpi::MpiTransport`'s `send` and `recv`, as
//!   the PEs' services and vprocs use them: a non-blocking send tested
//!   until done, and a receiving thread that polls (spinning briefly,
//!   then sleeping 20 µs doubling to 500 µs) and queues what comes.
//!
//! The figure is the time of one round trip (median over the
//! measurements, each the mean of `rounds` round trips). Checked: every
//! echo has the length sent, and each kind's last echo the bytes sent.

#[cfg(not(feature = "mpi"))]
pub fn run(_bytes: &[usize], _rounds: u64, _repeat: usize) -> Result<(), String> {
    Err("micro roundtrip measures the MPI transport: build it with `cargo build --release -p numagc-cli --features mpi` and run it under `mpirun -n 2`".into())
}

#[cfg(feature = "mpi")]
pub fn run(bytes: &[usize], rounds: u64, repeat: usize) -> Result<(), String> {
    use mpi::topology::SimpleCommunicator;
    use mpi::traits::*;
    use numagc::pe::Transport;
    use std::time::{Duration, Instant};

    let session = two_ranks("roundtrip")?;
    let me = session.rank();
    let world = SimpleCommunicator::world();
    let (rounds, repeat) = (rounds.max(1), repeat.max(1));
    // Raw MPI's tag: above the transport's group tags.
    const RAW_TAG: i32 = 32_100;
    let message = |n: usize, seed: u64| -> Vec<u8> {
        (0..n)
            .map(|i| (i as u64 ^ seed.wrapping_mul(31)) as u8)
            .collect()
    };
    let wait = Duration::from_secs(30);
    let mut rows = Vec::new();
    for &n in bytes {
        let (mut raw, mut ours) = (Vec::new(), Vec::new());
        for _ in 0..repeat {
            // Raw MPI.
            let other = world.process_at_rank(1 - me as i32);
            let msg = message(n, 0);
            let mut buf = vec![0u8; n];
            let t = Instant::now();
            for _ in 0..rounds {
                if me == 0 {
                    other.send_with_tag(&msg[..], RAW_TAG);
                    other.receive_into_with_tag(&mut buf[..], RAW_TAG);
                } else {
                    other.receive_into_with_tag(&mut buf[..], RAW_TAG);
                    other.send_with_tag(&buf[..], RAW_TAG);
                }
            }
            raw.push(t.elapsed().as_secs_f64() / rounds as f64);
            if me == 0 && buf != msg {
                return Err(format!("raw MPI: a message of {n} bytes came back damaged"));
            }
            // numagc's transport: a group of its own each time.
            let tr = session.transport().map_err(|e| e.to_string())?;
            let peer = 1 - me;
            // The API takes the bytes by value (a message is encoded into a
            // fresh vector): each send gets a copy, as raw MPI's does not.
            let msg = message(n.max(1), 1);
            let t = Instant::now();
            for round in 0..rounds {
                if me == 0 {
                    tr.send(peer, msg.clone()).map_err(|e| e.to_string())?;
                    match tr.recv(wait).map_err(|e| e.to_string())? {
                        // Every echo's length, and the last one's bytes (as
                        // raw MPI's last buffer is checked).
                        Some((from, back))
                            if from == peer
                                && back.len() == msg.len()
                                && (round + 1 < rounds || back == msg) => {}
                        _ => {
                            return Err(format!(
                                "numagc transport: round {round} of {n} bytes: no echo or a damaged one"
                            ))
                        }
                    }
                } else {
                    match tr.recv(wait).map_err(|e| e.to_string())? {
                        Some((from, m)) if from == peer => {
                            tr.send(peer, m).map_err(|e| e.to_string())?
                        }
                        _ => return Err(format!("numagc transport: round {round}: nothing came")),
                    }
                }
            }
            ours.push(t.elapsed().as_secs_f64() / rounds as f64);
            world.barrier();
        }
        rows.push((n, raw, ours));
    }
    if me != 0 {
        return Ok(());
    }
    println!("round trip over MPI, 2 ranks; {rounds} round trips a measurement, {repeat} measurements each, alternating");
    print_rows(&rows);
    println!("answers ok (every echo had the bytes sent)");
    Ok(())
}

/// The MPI session of a measurement between two ranks (`micro roundtrip`,
/// `micro fetch`): refused on any other number of ranks.
#[cfg(feature = "mpi")]
pub(crate) fn two_ranks(what: &str) -> Result<numagc::pe::mpi::MpiSession, String> {
    let session = numagc::pe::mpi::MpiSession::init().map_err(|e| e.to_string())?;
    if session.size() != 2 {
        return Err(format!(
            "micro {what} runs on 2 MPI ranks (mpirun -n 2), not {}",
            session.size()
        ));
    }
    Ok(session)
}

/// Prints one line per message size: raw MPI's and numagc's round trip
/// (median and range of the measurements, in µs) and their ratio.
#[cfg(feature = "mpi")]
pub(crate) fn print_rows(rows: &[(usize, Vec<f64>, Vec<f64>)]) {
    use crate::bench::record::{median, min_max};
    println!(
        "{:>9}  {:>22}  {:>22}  numagc/raw",
        "bytes", "raw MPI µs (range)", "numagc µs (range)"
    );
    let us = |xs: &[f64]| {
        let (lo, hi) = min_max(xs);
        (median(xs) * 1e6, lo * 1e6, hi * 1e6)
    };
    for (n, raw, ours) in rows {
        let (rm, rl, rh) = us(raw);
        let (om, ol, oh) = us(ours);
        println!(
            "{n:>9}  {rm:>9.2} ({rl:.2}..{rh:.2})  {om:>9.2} ({ol:.2}..{oh:.2})  {:>10.2}",
            om / rm
        );
    }
}
