//! Explicit threads and synchronous channels (§2.1: "language-level visible
//! threads and synchronous message passing", after Concurrent ML [RRX09]).
//!
//! * [`Scope::spawn`] starts a thread of the language on the vprocs. A
//!   thread is written in continuation-passing style: its body returns a
//!   [`Next`] saying what it does next — [`Next::exit`], [`Next::yield_now`],
//!   or a synchronisation ([`Next::send`], [`Next::recv`],
//!   [`Next::select`]) with the continuation to run once it completes. The
//!   environment a continuation needs is passed explicitly, as handles, like
//!   the environment of `par2`'s tasks. This is how a compiler that emits
//!   continuations (as Manticore's does) drives the runtime, and it never
//!   blocks a vproc: see `crate::sched::thread`.
//! * [`Channel`]s are synchronous: a send completes only together with a
//!   receive, and the value is promoted (§2.3) before it is handed over.
//!   A choice ([`Next::select`], [`Scope::select`]) completes exactly one of
//!   its cases.
//! * Code that is not a thread — a job's body, a `par2` branch — may also
//!   synchronise in direct style with [`Scope::send`], [`Scope::recv`] and
//!   [`Scope::select`]. The vproc then waits, but keeps doing its duties:
//!   it joins global collections, answers promotion requests, and runs
//!   other threads and stolen tasks. Inside a thread these calls are an
//!   error (the thread would hold its vproc's stack while it waits; return a
//!   [`Next`] instead). [`Scope::poll`] is only a collection safepoint: a
//!   job that waits for a thread must wait in `recv`/`select` (or return),
//!   since on one vproc a job spinning on `poll` never lets the thread run.
//!
//! ```
//! use numagc::{Channel, Config, Handle, Next, Result, Runtime};
//!
//! /// A thread that sends n, n-1, ..., 1 on `ch` and exits.
//! fn countdown<'i>(ch: Channel, n: i64) -> Result<Next<'i>> {
//!     if n == 0 {
//!         return Ok(Next::exit());
//!     }
//!     let next = ch.clone();
//!     Ok(Next::send(&ch, Handle::int(n), &[], move |_, _| countdown(next, n - 1)))
//! }
//!
//! let rt = Runtime::new(Config::builder().vprocs(2).build()?)?;
//! let ch = rt.channel();
//! let sum = rt.run_on(0, move |s| -> Result<i64> {
//!     let c = ch.clone();
//!     s.spawn(&[], move |_, _| countdown(c, 100))?;
//!     let mut sum = 0;
//!     for _ in 0..100 {
//!         let v = s.recv(&ch)?; // runs the thread meanwhile if no other vproc does
//!         sum += s.as_int(v).unwrap();
//!     }
//!     Ok(sum)
//! })??;
//! assert_eq!(sum, 5050);
//! # Ok::<(), numagc::Error>(())
//! ```
//!
//! Threads that end with an error or a panic are counted in the statistics
//! and their errors kept for [`crate::Runtime::take_thread_errors`]; the
//! vproc carries on. A thread blocked on a channel that nobody will use
//! again stays queued there until the channel is dropped (or the runtime
//! shuts down).

use crate::error::{Error, Result};
use crate::mutator::roots::GlobalRoot;
use crate::mutator::scope::{Handle, Scope};
use crate::sched::channel::Dir;
use crate::sched::thread::{self, ChanCore, Cont, Runnable};
use crate::vproc::Shared;
use std::sync::{Arc, Weak};

/// A synchronous channel of a runtime. Cloning gives another handle to the
/// same channel; it may be moved to any vproc and into thread closures.
#[derive(Clone)]
pub struct Channel {
    pub(crate) inner: Arc<ChanCore>,
    runtime: Weak<Shared>,
}

impl Channel {
    pub(crate) fn new(shared: &Arc<Shared>) -> Channel {
        let inner = Arc::new(ChanCore::new());
        shared.register_channel(&inner);
        Channel {
            inner,
            runtime: Arc::downgrade(shared),
        }
    }

    /// Offers (threads or vprocs) queued on this channel, including entries
    /// of choices that completed elsewhere and were not dropped yet.
    pub fn waiting(&self) -> usize {
        self.inner.waiting()
    }

    pub(crate) fn check_runtime(&self, shared: &Arc<Shared>) -> Result<()> {
        if std::ptr::eq(self.runtime.as_ptr(), Arc::as_ptr(shared)) {
            Ok(())
        } else {
            Err(Error::misuse("a channel of another runtime was used"))
        }
    }
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Channel({:p})", Arc::as_ptr(&self.inner))
    }
}

/// What a thread does next: the value a thread's body or continuation
/// returns. `'i` is the scope of that body: the handles it names are read
/// when the body returns.
pub struct Next<'i> {
    pub(crate) step: Step<'i>,
}

pub(crate) enum Step<'i> {
    Exit,
    Yield {
        env: Vec<Handle<'i>>,
        k: Cont,
    },
    Sync {
        env: Vec<Handle<'i>>,
        cases: Vec<Case<'i>>,
    },
}

/// One case of a thread's [`Next::select`].
pub struct Case<'i> {
    pub(crate) chan: Channel,
    pub(crate) dir: Dir,
    pub(crate) value: Option<Handle<'i>>,
    pub(crate) k: Cont,
}

impl<'i> Case<'i> {
    /// Receive from `ch`, then run `k` with the environment and the value.
    pub fn recv<K>(ch: &Channel, k: K) -> Case<'i>
    where
        K: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>], Handle<'j>) -> Result<Next<'j>>
            + Send
            + 'static,
    {
        let k: Cont =
            Box::new(move |s, env, v| k(s, env, v.expect("a completed receive has a value")));
        Case {
            chan: ch.clone(),
            dir: Dir::Recv,
            value: None,
            k,
        }
    }

    /// Send `value` on `ch`, then run `k` with the environment.
    pub fn send<K>(ch: &Channel, value: Handle<'i>, k: K) -> Case<'i>
    where
        K: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>]) -> Result<Next<'j>> + Send + 'static,
    {
        let k: Cont = Box::new(move |s, env, _| k(s, env));
        Case {
            chan: ch.clone(),
            dir: Dir::Send,
            value: Some(value),
            k,
        }
    }
}

impl<'i> Next<'i> {
    /// The thread ends.
    pub fn exit() -> Next<'i> {
        Next { step: Step::Exit }
    }

    /// Let other threads run, then continue with `k` (the thread goes to
    /// the back of its vproc's ready queue).
    pub fn yield_now<K>(env: &[Handle<'i>], k: K) -> Next<'i>
    where
        K: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>]) -> Result<Next<'j>> + Send + 'static,
    {
        let k: Cont = Box::new(move |s, env, _| k(s, env));
        Next {
            step: Step::Yield {
                env: env.to_vec(),
                k,
            },
        }
    }

    /// Receive a value from `ch`, then continue with `k(s, env, value)`.
    pub fn recv<K>(ch: &Channel, env: &[Handle<'i>], k: K) -> Next<'i>
    where
        K: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>], Handle<'j>) -> Result<Next<'j>>
            + Send
            + 'static,
    {
        Next::select(env, vec![Case::recv(ch, k)])
    }

    /// Send `value` on `ch` (it is promoted), then continue with `k(s, env)`
    /// once a receiver has taken it.
    pub fn send<K>(ch: &Channel, value: Handle<'i>, env: &[Handle<'i>], k: K) -> Next<'i>
    where
        K: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>]) -> Result<Next<'j>> + Send + 'static,
    {
        Next::select(env, vec![Case::send(ch, value, k)])
    }

    /// Wait until one of `cases` can complete, complete it (only it), and
    /// continue with its continuation. Cases are tried in order when
    /// several can complete at once. A choice of no cases never completes:
    /// the thread is dropped.
    pub fn select(env: &[Handle<'i>], cases: Vec<Case<'i>>) -> Next<'i> {
        Next {
            step: Step::Sync {
                env: env.to_vec(),
                cases,
            },
        }
    }
}

/// One case of a direct-style [`Scope::select`].
#[derive(Clone, Copy, Debug)]
pub enum Sel<'c, 'h> {
    Send(&'c Channel, Handle<'h>),
    Recv(&'c Channel),
}

impl<'s> Scope<'s> {
    /// A new synchronous channel of this runtime.
    pub fn channel(&self) -> Channel {
        Channel::new(&self.vp.shared)
    }

    /// Starts a thread on this vproc's ready queue (an idle vproc may steal
    /// it). `env` is promoted: the thread may run on any vproc.
    pub fn spawn<F>(&mut self, env: &[Handle<'_>], body: F) -> Result<()>
    where
        F: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>]) -> Result<Next<'j>> + Send + 'static,
    {
        let me = self.vproc();
        self.spawn_on(me, env, body)
    }

    /// Starts a thread on vproc `vproc`'s ready queue.
    pub fn spawn_on<F>(&mut self, vproc: usize, env: &[Handle<'_>], body: F) -> Result<()>
    where
        F: for<'j> FnOnce(&mut Scope<'j>, &[Handle<'j>]) -> Result<Next<'j>> + Send + 'static,
    {
        if vproc >= self.vprocs() {
            return Err(Error::misuse(format!(
                "spawn_on: vproc {vproc} does not exist (the runtime has {})",
                self.vprocs()
            )));
        }
        let env = self.park(env)?;
        let k: Cont = Box::new(move |s, env, _| body(s, env));
        self.vp.stats.threads_spawned += 1;
        thread::push_ready(
            &self.vp.shared,
            vproc,
            Runnable {
                env,
                value: None,
                k,
            },
        );
        Ok(())
    }

    /// Sends `value` on `ch` and waits until a receiver has taken it.
    pub fn send(&mut self, ch: &Channel, value: Handle<'_>) -> Result<()> {
        self.select(&[Sel::Send(ch, value)]).map(|_| ())
    }

    /// Waits for a value on `ch`.
    pub fn recv(&mut self, ch: &Channel) -> Result<Handle<'s>> {
        self.select(&[Sel::Recv(ch)]).map(|(_, v)| v)
    }

    /// Waits until one of `cases` can complete and completes it alone.
    /// Returns its index and, for a receive, the value (NIL for a send).
    ///
    /// Errors: inside a thread (return a [`Next`] instead), no cases, or a
    /// channel of another runtime: [`ErrorKind::Misuse`](crate::ErrorKind::Misuse).
    pub fn select(&mut self, cases: &[Sel<'_, '_>]) -> Result<(usize, Handle<'s>)> {
        if self.vp.in_thread > 0 {
            return Err(Error::misuse(
                "send/recv/select called inside a spawned thread: it would hold the vproc while it waits; return Next::send/recv/select instead",
            ));
        }
        if cases.is_empty() {
            return Err(Error::misuse("select over no cases would wait for ever"));
        }
        let shared = self.shared();
        let mut sent = Vec::new();
        let mut on: Vec<(&ChanCore, Dir)> = Vec::with_capacity(cases.len());
        for c in cases {
            let (ch, dir) = match *c {
                Sel::Send(ch, v) => {
                    sent.push(v);
                    (ch, Dir::Send)
                }
                Sel::Recv(ch) => (ch, Dir::Recv),
            };
            ch.check_runtime(&shared)?;
            on.push((&ch.inner, dir));
        }
        let mut parked = self.park(&sent)?.into_iter();
        let values = on
            .iter()
            .map(|&(_, d)| if d == Dir::Send { parked.next() } else { None })
            .collect();
        let (case, value) = thread::select_blocking(self, &on, values);
        Ok((
            case,
            value.map_or_else(|| self.nil(), |w| self.push_root(w)),
        ))
    }

    /// Promotes `hs` together and keeps them in global roots (values that
    /// cross to another vproc or outlive this scope).
    /// `Err` (nothing parked) when the system refuses the memory.
    pub(crate) fn park(&mut self, hs: &[Handle<'_>]) -> Result<Vec<GlobalRoot>> {
        let mut words: Vec<u64> = hs.iter().map(|&h| self.word(h)).collect();
        let slots = crate::sched::park_env(self.vp, &mut words)?;
        Ok(slots
            .into_iter()
            .map(|slot| GlobalRoot {
                slot,
                shared: self.vp.shared.clone(),
            })
            .collect())
    }
}
