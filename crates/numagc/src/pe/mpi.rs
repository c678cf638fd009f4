//! The MPI transport: one PE per MPI rank, on one machine or many
//! (`gumsmp-shared-distributed-heaps.txt` §2: GUM's PEs are processes
//! that exchange messages; §3.3: GUMSMP runs one of them per NUMA region
//! or machine). Built with the `mpi` cargo feature, over the `mpi` crate
//! (rsmpi) and the MPI library of the system (Open MPI from Debian:
//! `scripts/install-deps.sh`).
//!
//! [`MpiSession`] initialises MPI (with `MPI_THREAD_MULTIPLE`: services
//! and vprocs send from their own threads) and makes the groups of a
//! job; every rank must make the same groups in the same order, as every
//! rank runs the same program. Each group's messages carry the group's
//! number as their MPI tag, so a message sent late to a group that has
//! ended is never read by the next one.
//!
//! Choices, and why:
//! - **Receiving: the service itself, or a communication thread per PE.**
//!   The service probes MPI (`MPI_Improbe`) in its `recv`, so a message
//!   goes from the sender to the service without a hand-off between
//!   threads; when the service is busy (handling a message, sending), a
//!   communication thread probes instead and queues what comes, so a rank
//!   always drains what is sent to it and a large (rendezvous) send from
//!   either side always completes. One token (`Peers::token`) decides who
//!   probes, and the service empties the queue before it probes, so each
//!   sender's messages stay in order. Both poll, yielding for 200 µs after
//!   a message and then sleeping from 20 µs doubling to 500 µs (the
//!   service asleep on the queue, so that what the thread queues wakes
//!   it), because a blocking probe in Open MPI spins a core, and a PE's
//!   cores are its vprocs'. The cost against raw MPI: `numagc micro
//!   roundtrip`, in `docs/results/hybrid.md`.
//! - **Sends** are `MPI_Isend`s from the sending thread, tested until
//!   done; a send to a PE that is lost is abandoned (its buffer leaked,
//!   the MPI request with it) and answered with an error, so no thread
//!   waits forever on a dead rank.
//! - **Liveness by heartbeat**: the communication thread sends an empty
//!   message to every other PE each `HEARTBEAT`; a PE not heard from for
//!   `PEER_TIMEOUT` is lost ([`Transport::peer_alive`] says false), and
//!   the services fail what they exported to it (`super::service`). A
//!   rank that dies is also seen by `mpirun`, which ends the job; a rank
//!   that hangs (stopped, spinning without its threads scheduled) is seen
//!   only by its silence. The start of a group waits at a non-blocking
//!   barrier for at most `JOIN_TIMEOUT`, so a rank that never comes is an
//!   error, not a hang.

use super::export::Exports;
use super::group::PeGroup;
use super::inbox::ProbeToken;
use super::transport::Transport;
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::runtime::Runtime;
use mpi::point_to_point::MatchedReceiveVec;
use mpi::request::StaticScope;
use mpi::topology::SimpleCommunicator;
use mpi::traits::*;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, TryRecvError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a PE tells the others it is there.
const HEARTBEAT: Duration = Duration::from_millis(250);
/// Silence after which a PE is lost. Generous: ranks may share cores
/// (`--oversubscribe`) and a busy machine delays threads by seconds.
pub const PEER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the start of a group waits for every rank to join it.
pub const JOIN_TIMEOUT: Duration = Duration::from_secs(30);
/// Tags in use: group numbers wrap below MPI's guaranteed tag bound.
const TAG_SPAN: u64 = 32_000;

/// MPI for this process: initialised by [`MpiSession::init`], finalised
/// when dropped (after every group of the session has ended).
pub struct MpiSession {
    _universe: mpi::environment::Universe,
    rank: usize,
    size: usize,
    groups: AtomicU64,
    /// Ranks lost in an earlier group: no later group waits for them.
    lost: Arc<[AtomicBool]>,
}

impl MpiSession {
    /// Initialises MPI with `MPI_THREAD_MULTIPLE`.
    ///
    /// Errors: MPI was initialised already in this process; the MPI
    /// library gives less than `MPI_THREAD_MULTIPLE`.
    pub fn init() -> Result<MpiSession> {
        let Some((universe, threading)) = mpi::initialize_with_threading(mpi::Threading::Multiple)
        else {
            return Err(Error::misuse(
                "MPI is already initialised in this process: one MpiSession per process",
            ));
        };
        if threading < mpi::Threading::Multiple {
            return Err(Error::misuse(format!(
                "the MPI library gives {threading:?} threading; numagc's PEs need MPI_THREAD_MULTIPLE"
            )));
        }
        let world = universe.world();
        Ok(MpiSession {
            rank: world.rank() as usize,
            size: world.size() as usize,
            _universe: universe,
            groups: AtomicU64::new(0),
            lost: (0..world.size()).map(|_| AtomicBool::new(false)).collect(),
        })
    }

    /// This process's rank: the PE it runs.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks: the PEs of every group.
    pub fn size(&self) -> usize {
        self.size
    }

    /// Ends the job on every rank (`MPI_Abort` with `code`): for a
    /// session that lost a rank, whose `MPI_Finalize` would wait for it
    /// forever. Dropping such a session does the same, with code 1.
    pub fn abort(&self, code: i32) -> ! {
        SimpleCommunicator::world().abort(code)
    }

    /// The ranks found lost (silent past `PEER_TIMEOUT`) so far: no
    /// group can start while any is.
    pub fn lost_ranks(&self) -> Vec<usize> {
        (0..self.size)
            .filter(|&p| self.lost[p].load(Ordering::SeqCst))
            .collect()
    }

    /// Starts this rank's PE of a group of `pes` PEs, one per rank, once
    /// every rank has come to it (every rank calls this, with the same
    /// arguments, in the same order of groups).
    ///
    /// Errors: `pes` is not the number of ranks; a rank did not come
    /// within `JOIN_TIMEOUT`; as [`PeGroup::with_transport`].
    pub fn group(
        &self,
        pes: usize,
        config: Config,
        exports: Exports,
        setup: impl Fn(&Runtime) -> Result<()>,
    ) -> Result<PeGroup> {
        if pes != self.size {
            return Err(ErrorKind::Config(Box::new(crate::error::ConfigError {
                setting: "pes",
                value: pes.to_string(),
                allowed: format!(
                    "{} (one PE per MPI rank: the job has {} ranks)",
                    self.size, self.size
                ),
            }))
            .into());
        }
        let t = self.transport()?;
        PeGroup::with_transport(Arc::new(t), config, exports, setup)
    }

    /// The transport of a new group, its number the group's tag, once
    /// every rank has come to it (as [`MpiSession::group`], which starts
    /// a PE on it; alone, for measuring the message layer:
    /// `numagc micro roundtrip`).
    ///
    /// Errors: a rank lost before, or not come within `JOIN_TIMEOUT`.
    pub fn transport(&self) -> Result<MpiTransport> {
        if let Some(p) = (0..self.size).find(|&p| self.lost[p].load(Ordering::SeqCst)) {
            return Err(ErrorKind::Pe {
                pe: p,
                message: format!("PE {p} (MPI rank {p}) was lost in an earlier group"),
            }
            .into());
        }
        let number = self.groups.fetch_add(1, Ordering::Relaxed);
        if let Err(e) = join_all(self.rank) {
            // Some rank did not come, and the barrier cannot say which:
            // every other rank is lost to this one, and no group starts.
            for p in (0..self.size).filter(|&p| p != self.rank) {
                self.lost[p].store(true, Ordering::SeqCst);
            }
            return Err(e);
        }
        MpiTransport::start(
            self.rank,
            self.size,
            (number % TAG_SPAN) as i32,
            self.lost.clone(),
        )
    }
}

impl Drop for MpiSession {
    fn drop(&mut self) {
        let lost = self.lost_ranks();
        if !lost.is_empty() {
            eprintln!("numagc: MPI rank(s) {lost:?} lost: ending the job on every rank");
            self.abort(1);
        }
        // Otherwise the universe finalises MPI.
    }
}

/// Waits at a non-blocking barrier of every rank, at most `JOIN_TIMEOUT`
/// (a rank still running its last group's answer check is worth waiting
/// for; a rank that stopped between two groups is found here).
fn join_all(rank: usize) -> Result<()> {
    let world = SimpleCommunicator::world();
    let mut req = world.immediate_barrier();
    let t0 = Instant::now();
    let mut pause = Pause::new();
    loop {
        match req.test() {
            Ok(_) => return Ok(()),
            Err(r) => req = r,
        }
        if t0.elapsed() > JOIN_TIMEOUT {
            // SAFETY: the barrier's request has no buffer, and it is
            // 'static (`StaticScope`): abandoning it leaves MPI nothing
            // of ours to touch.
            let _ = unsafe { req.into_raw() };
            return Err(ErrorKind::Pe {
                pe: rank,
                message: format!(
                    "not every MPI rank started the group within {} s",
                    JOIN_TIMEOUT.as_secs()
                ),
            }
            .into());
        }
        pause.wait();
    }
}

/// The waits of the transport's polling loops: yield for `SPIN` after
/// the last activity (a reply usually comes within a round trip, and a
/// sleeping poller would add its sleep to it), then sleep from 20 µs
/// doubling to 500 µs (an idle PE leaves its cores to its vprocs).
struct Pause {
    since: Instant,
    spin: Duration,
    sleeps: u32,
}

impl Pause {
    /// After a message, the receiving thread's spin.
    const SPIN: Duration = Duration::from_micros(200);
    /// A send's: a large message moves in fragments, each at a test of
    /// the request (Open MPI progresses a send only inside its calls), so
    /// a sender that slept between tests would send at its sleeps' pace
    /// (`numagc micro roundtrip` measures it).
    const SEND_SPIN: Duration = Duration::from_millis(20);

    fn new() -> Pause {
        Pause::spinning(Pause::SPIN)
    }

    fn spinning(spin: Duration) -> Pause {
        Pause {
            since: Instant::now(),
            spin,
            sleeps: 0,
        }
    }

    fn reset(&mut self) {
        self.since = Instant::now();
        self.sleeps = 0;
    }

    fn wait(&mut self) {
        match self.next() {
            None => std::thread::yield_now(),
            Some(d) => std::thread::sleep(d),
        }
    }

    /// The next wait: `None` while spinning (yield), else how long to
    /// sleep.
    fn next(&mut self) -> Option<Duration> {
        if self.since.elapsed() < self.spin {
            return None;
        }
        let exp = self.sleeps.min(5);
        self.sleeps += 1;
        Some(Duration::from_micros(20 << exp).min(Duration::from_micros(500)))
    }
}

/// What the transport's users and its communication thread share.
struct Peers {
    /// Per PE: the last time it was heard from, in µs since `t0`.
    heard: Box<[AtomicU64]>,
    /// Per PE: lost (the session's marks, shared by its groups).
    lost: Arc<[AtomicBool]>,
    t0: Instant,
    stop: AtomicBool,
    /// Held by whoever probes MPI for the group's messages: the service
    /// in `recv`, the communication thread when the service does not, a
    /// vproc that polls (`Transport::poll`). Whoever holds it queues what
    /// it declines before letting go, and the service takes the queue's
    /// messages before probing itself, so each sender's messages reach
    /// the service in order (`super::inbox`).
    token: ProbeToken,
}

impl Peers {
    fn now_us(&self) -> u64 {
        self.t0.elapsed().as_micros() as u64
    }
}

/// The queue of received messages (sender, bytes), and the service's
/// poll.
type Incoming = (Receiver<(usize, Vec<u8>)>, Pause);

/// One rank's end of a group over MPI.
pub struct MpiTransport {
    me: usize,
    pes: usize,
    tag: i32,
    peers: Arc<Peers>,
    /// The queue of received messages, and the service's poll: its
    /// pause lasts across calls of `recv`, so an idle service sleeps.
    incoming: Mutex<Incoming>,
    // The loopback: messages to this PE itself (the service's wake-up)
    // skip MPI.
    to_self: Sender<(usize, Vec<u8>)>,
    comm: Mutex<Option<JoinHandle<()>>>,
}

impl MpiTransport {
    fn start(me: usize, pes: usize, tag: i32, lost: Arc<[AtomicBool]>) -> Result<MpiTransport> {
        let peers = Arc::new(Peers {
            heard: (0..pes).map(|_| AtomicU64::new(0)).collect(),
            lost,
            t0: Instant::now(),
            stop: AtomicBool::new(false),
            token: ProbeToken::new(),
        });
        let (tx, rx) = mpsc::channel();
        let comm = {
            let (peers, tx) = (peers.clone(), tx.clone());
            std::thread::Builder::new()
                .name(format!("numagc-pe{me}-mpi"))
                .spawn(move || receive_loop(me, pes, tag, &peers, &tx))
                .map_err(|source| ErrorKind::Os {
                    what: "starting a PE's MPI thread",
                    source,
                })?
        };
        Ok(MpiTransport {
            me,
            pes,
            tag,
            peers,
            incoming: Mutex::new((rx, Pause::new())),
            to_self: tx,
            comm: Mutex::new(Some(comm)),
        })
    }

    fn lost_error(&self, to: usize) -> Error {
        ErrorKind::Pe {
            pe: to,
            message: format!(
                "PE {to} (MPI rank {to}) is lost: not heard from for {} s",
                PEER_TIMEOUT.as_secs()
            ),
        }
        .into()
    }
}

/// A heartbeat's send, until it completes: no buffer (it is empty).
type Beat = mpi::request::Request<'static, [u8], StaticScope>;

/// The heartbeat's (empty) buffer.
static BEAT: [u8; 0] = [];

/// The next message of the group, if one has come (heartbeats are
/// counted and skipped). The caller holds `peers.token`.
fn receive_one(
    world: &SimpleCommunicator,
    tag: i32,
    pes: usize,
    peers: &Peers,
) -> Option<(usize, Vec<u8>)> {
    while let Some(probed) = world.any_process().immediate_matched_probe_with_tag(tag) {
        let (bytes, status) = probed.matched_receive_vec::<u8>();
        let from = status.source_rank() as usize;
        if from >= pes {
            continue;
        }
        peers.heard[from].store(peers.now_us(), Ordering::Relaxed);
        // An empty message is a heartbeat; the protocol's messages are
        // never empty (`super::message`: a header at least).
        if !bytes.is_empty() {
            return Some((from, bytes));
        }
    }
    None
}

/// The communication thread: receives the group's messages into `tx`,
/// sends heartbeats, and marks silent PEs lost.
fn receive_loop(me: usize, pes: usize, tag: i32, peers: &Peers, tx: &Sender<(usize, Vec<u8>)>) {
    let world = SimpleCommunicator::world();
    let mut pause = Pause::new();
    let mut next_beat = Instant::now();
    // Per PE, the heartbeat on its way: one at a time, so a PE that does
    // not receive (stopped) never makes this thread wait or pile them up.
    let mut beats: Vec<Option<Beat>> = (0..pes).map(|_| None).collect();
    while !peers.stop.load(Ordering::SeqCst) {
        let got = peers.token.poll(
            || receive_one(&world, tag, pes, peers),
            |_| false,
            |m| tx.send(m).is_ok(),
        );
        let now = Instant::now();
        if now >= next_beat {
            next_beat = now + HEARTBEAT;
            let now_us = peers.now_us();
            for p in (0..pes).filter(|&p| p != me) {
                if let Some(b) = beats[p].take() {
                    if let Err(b) = b.test() {
                        beats[p] = Some(b);
                    }
                }
                if peers.lost[p].load(Ordering::SeqCst) {
                    continue;
                }
                let silent = now_us.saturating_sub(peers.heard[p].load(Ordering::Relaxed));
                if silent > PEER_TIMEOUT.as_micros() as u64 {
                    peers.lost[p].store(true, Ordering::SeqCst);
                    continue;
                }
                if beats[p].is_none() {
                    beats[p] = Some(world.process_at_rank(p as i32).immediate_send_with_tag(
                        StaticScope,
                        &BEAT[..],
                        tag,
                    ));
                }
            }
        }
        if got {
            pause.reset();
        } else {
            pause.wait();
        }
    }
    for b in beats.into_iter().flatten() {
        if let Err(b) = b.test() {
            // SAFETY: the request's buffer is `BEAT`, static: abandoning
            // the request (to a PE that receives no more) leaves MPI
            // nothing of ours it could outlive.
            let _ = unsafe { b.into_raw() };
        }
    }
}

impl Transport for MpiTransport {
    fn pe(&self) -> usize {
        self.me
    }

    fn pes(&self) -> usize {
        self.pes
    }

    fn send(&self, to: usize, bytes: Vec<u8>) -> Result<()> {
        if to >= self.pes {
            return Err(Error::misuse(format!(
                "send to PE {to} in a group of {} PEs",
                self.pes
            )));
        }
        if to == self.me {
            return self
                .to_self
                .send((to, bytes))
                .map_err(|_| self.lost_error(to));
        }
        if bytes.is_empty() {
            return Err(Error::misuse(
                "an empty message (the transport's heartbeat)",
            ));
        }
        if self.peers.lost[to].load(Ordering::SeqCst) {
            return Err(self.lost_error(to));
        }
        let raw: *mut [u8] = Box::into_raw(bytes.into_boxed_slice());
        // SAFETY: `raw` comes from `Box::into_raw` just above and is freed
        // only below, after MPI has finished with it, or never.
        let buf: &'static [u8] = unsafe { &*raw };
        let world = SimpleCommunicator::world();
        let mut req =
            world
                .process_at_rank(to as i32)
                .immediate_send_with_tag(StaticScope, buf, self.tag);
        let mut pause = Pause::spinning(Pause::SEND_SPIN);
        loop {
            match req.test() {
                Ok(_) => {
                    // SAFETY: the send is complete, so MPI no longer reads
                    // `buf`, and `buf` is not used after this; `raw` came
                    // from `Box::into_raw` and is freed once, here.
                    drop(unsafe { Box::from_raw(raw) });
                    return Ok(());
                }
                Err(r) => req = r,
            }
            if self.peers.lost[to].load(Ordering::SeqCst) || self.peers.stop.load(Ordering::SeqCst)
            {
                // SAFETY: the request is abandoned with its buffer, which
                // is leaked ('static, never freed), so MPI may still read
                // it whenever it likes.
                let _ = unsafe { req.into_raw() };
                return Err(self.lost_error(to));
            }
            pause.wait();
        }
    }

    fn recv(&self, timeout: Duration) -> Result<Option<(usize, Vec<u8>)>> {
        let mut incoming = self.incoming.lock().unwrap_or_else(|e| e.into_inner());
        let (rx, pause) = &mut *incoming;
        let world = SimpleCommunicator::world();
        let t0 = Instant::now();
        let ended = || -> Error {
            ErrorKind::Pe {
                pe: self.me,
                message: "the MPI communication thread ended".into(),
            }
            .into()
        };
        loop {
            // The queue first (the loopback, and what the communication
            // thread took), then MPI itself, under the token: no thread
            // hand-off on the way from the sender to the service.
            let mut disconnected = false;
            let got = self.peers.token.receive(
                || match rx.try_recv() {
                    Ok(m) => Some(m),
                    Err(TryRecvError::Disconnected) => {
                        disconnected = true;
                        None
                    }
                    Err(TryRecvError::Empty) => None,
                },
                || receive_one(&world, self.tag, self.pes, &self.peers),
            );
            if disconnected && got.is_none() {
                return Err(ended());
            }
            if got.is_some() {
                pause.reset();
                return Ok(got);
            }
            let left = timeout.saturating_sub(t0.elapsed());
            if left.is_zero() {
                return Ok(None);
            }
            match pause.next() {
                None => std::thread::yield_now(),
                // Asleep on the queue: what the communication thread
                // takes meanwhile wakes the service at once.
                Some(d) => match rx.recv_timeout(d.min(left)) {
                    Ok(m) => {
                        pause.reset();
                        return Ok(Some(m));
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => return Err(ended()),
                },
            }
        }
    }

    fn peer_alive(&self, pe: usize) -> bool {
        pe < self.pes && !self.peers.lost[pe].load(Ordering::SeqCst)
    }

    fn polls(&self) -> bool {
        true
    }

    /// Probes MPI under the token when nobody holds it: what `take`
    /// declines joins the queue (the communication thread's, which the
    /// service empties before it probes), so each sender's messages reach
    /// the service in order, as the token's protocol keeps them.
    fn poll(&self, take: &mut dyn FnMut(usize, &[u8]) -> bool) -> bool {
        let world = SimpleCommunicator::world();
        self.peers.token.poll(
            || receive_one(&world, self.tag, self.pes, &self.peers),
            |(from, bytes)| take(*from, bytes),
            |m| self.to_self.send(m).is_ok(),
        )
    }

    /// Stops the communication thread and waits for it (its group is
    /// gone, or the transport dropped).
    fn close(&self) {
        self.peers.stop.store(true, Ordering::SeqCst);
        let h = self.comm.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(h) = h {
            let _ = h.join();
        }
    }
}

impl Drop for MpiTransport {
    fn drop(&mut self) {
        self.close();
    }
}
