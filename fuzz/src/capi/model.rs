//! The model: what the program knows of its runtimes, descriptors,
//! channels and global roots ([`State`]), and of one body's handles,
//! frames and the shape of each object ([`Body`]); how value arguments are
//! drawn from it ([`Arg`]) and which allocation lengths the count alone
//! must refuse ([`Body::len_refusal`]).
//!
//! Invariant: a handle is live exactly while the frame it was made in is
//! open, and every word the model knows of an object is what the object
//! holds.

use super::{MAX_LEN, MAX_OPS};
use crate::Input;
use numagc_capi::numagc_status::{self, *};
use numagc_capi::*;

/// A registered descriptor as the program knows it.
#[derive(Clone)]
pub(super) struct Desc {
    pub(super) id: numagc_desc,
    pub(super) size: usize,
    /// Whether each field holds a value.
    pub(super) ptr: Vec<bool>,
    pub(super) mutable: bool,
}

/// What the program knows of a live runtime.
pub(super) struct Rt {
    pub(super) rt: *mut numagc_runtime,
    pub(super) vprocs: usize,
    pub(super) descs: Vec<Desc>,
    /// Its heap limit in bytes (setting `max-heap`, from the model of its
    /// configuration): an object of more words than fit is refused with
    /// `NUMAGC_ERR_HEAP_LIMIT` before its array is read.
    pub(super) max_heap: usize,
}

/// What a channel op may do without waiting for ever. Each thread spawned
/// to send on a channel adds one send that will come, each thread spawned
/// to receive one receive; `balance` is sends minus receives, made or to
/// come, over the channel's life. A callback may receive only while
/// `balance > 0` (a sender is still to be matched) and send only while
/// `balance < 0`. The threads are only ever spawned with valid arguments,
/// so they do what was counted.
#[derive(Clone, Copy)]
pub(super) struct Chan {
    pub(super) token: *mut numagc_channel,
    /// Index into `State::rts` of its runtime (`usize::MAX` when freed).
    pub(super) rt: usize,
    pub(super) live: bool,
    pub(super) balance: i64,
}

/// The program's state, shared with the callbacks it runs (which run one
/// at a time, while the fuzzer's thread waits in `numagc_run_on`).
pub(super) struct State<'a> {
    pub(super) inp: Input<'a>,
    pub(super) ops: usize,
    pub(super) rts: Vec<Option<Rt>>,
    pub(super) globals: Vec<(numagc_global, usize, bool)>,
    pub(super) chans: Vec<Chan>,
    /// Scope tokens of callbacks that have returned.
    pub(super) stale_scopes: Vec<usize>,
    /// Time spent waiting for collector threads inside blocking sections
    /// (bounded per input, see [`Body::blocking_op`]).
    pub(super) waited: std::time::Duration,
}

impl State<'_> {
    pub(super) fn tick(&mut self) -> bool {
        self.ops += 1;
        self.ops <= MAX_OPS && !self.inp.is_empty()
    }

    pub(super) fn live_rt(&mut self) -> Option<usize> {
        let live: Vec<usize> = (0..self.rts.len())
            .filter(|&k| self.rts[k].is_some())
            .collect();
        if live.is_empty() {
            None
        } else {
            Some(self.inp.pick(&live))
        }
    }
}

/// What the program knows of a value.
#[derive(Clone, Debug)]
pub(super) enum Shape {
    Unknown,
    Raw(Vec<u64>),
    Vector(Vec<Word>),
    Array(Vec<Word>),
    Mixed { desc: usize, words: Vec<Word> },
}

/// What the program knows of one field.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Word {
    Unknown,
    Int(i64),
    Raw(u64),
}

/// A handle the body made.
#[derive(Clone, Debug)]
pub(super) struct H {
    pub(super) v: numagc_value,
    /// Open frames when it was made: it dies when that frame is left.
    pub(super) depth: usize,
    pub(super) live: bool,
    pub(super) shape: Shape,
}

/// A value argument and what the library must say about it.
#[derive(Clone, Copy, Debug)]
pub(super) enum Arg {
    Int(i64),
    /// Index into `Body::hs` of a live handle.
    Live(usize),
    /// A handle whose frame was left, 0, or a forged even word.
    Bad(numagc_value),
}

/// One C body (a callback, a task, a `run_each` callback): its scope, the
/// handles and frames it made.
pub(super) struct Body {
    pub(super) s: *mut numagc_scope,
    pub(super) rt: usize,
    pub(super) hs: Vec<H>,
    pub(super) frames: Vec<numagc_frame>,
    /// A `run_each` callback: no channel ops, no spawns that others wait for.
    pub(super) concurrent: bool,
    /// Inside a blocking section (`numagc_enter_blocking`): the live
    /// handles and open frames at its start, which it may not change.
    pub(super) blocking: Option<(usize, usize)>,
}

impl Body {
    pub(super) fn new(s: *mut numagc_scope, rt: usize, concurrent: bool) -> Body {
        Body {
            s,
            rt,
            hs: Vec::new(),
            frames: Vec::new(),
            concurrent,
            blocking: None,
        }
    }

    /// The heap limit of the body's runtime, in bytes.
    pub(super) fn max_heap(&self, st: &State) -> usize {
        st.rts
            .get(self.rt)
            .and_then(|r| r.as_ref())
            .map_or(0, |r| r.max_heap)
    }

    /// What allocating an object of `n` words must give before anything is
    /// read or sized by `n`, if the count alone decides: over the length
    /// field (2^48 - 1) `NUMAGC_ERR_INVALID_ARGUMENT`, more bytes than the
    /// heap limit `NUMAGC_ERR_HEAP_LIMIT`.
    pub(super) fn len_refusal(n: usize, max_heap: usize) -> Option<numagc_status> {
        if n as u128 > (1u128 << 48) - 1 {
            Some(NUMAGC_ERR_INVALID_ARGUMENT)
        } else if (n as u128 + 1) * 8 > max_heap as u128 {
            Some(NUMAGC_ERR_HEAP_LIMIT)
        } else {
            None
        }
    }

    pub(super) fn arg(&mut self, inp: &mut Input) -> Arg {
        let live: Vec<usize> = (0..self.hs.len()).filter(|&k| self.hs[k].live).collect();
        match inp.u8() % 16 {
            0..=6 if !live.is_empty() => Arg::Live(inp.pick(&live)),
            7 if self.hs.iter().any(|h| !h.live) => {
                let dead: Vec<usize> = (0..self.hs.len()).filter(|&k| !self.hs[k].live).collect();
                Arg::Bad(self.hs[inp.pick(&dead)].v)
            }
            8 => Arg::Bad(0),
            9 => Arg::Bad(inp.u64() & !1),
            _ => Arg::Int(inp.u32() as i32 as i64),
        }
    }

    pub(super) fn value(&self, a: Arg) -> numagc_value {
        match a {
            Arg::Int(i) => numagc_int(i),
            Arg::Live(k) => self.hs[k].v,
            Arg::Bad(v) => v,
        }
    }

    pub(super) fn word(&self, a: Arg) -> Word {
        match a {
            Arg::Int(i) => Word::Int(i),
            _ => Word::Unknown,
        }
    }

    pub(super) fn is_bad(a: Arg) -> bool {
        matches!(a, Arg::Bad(_))
    }

    /// Records a value a call produced; immediates are not handles.
    pub(super) fn made(&mut self, v: numagc_value, shape: Shape) -> Option<usize> {
        assert_ne!(v, 0, "a successful call produced value 0");
        if v & 1 == 1 {
            return None;
        }
        self.hs.push(H {
            v,
            depth: self.frames.len(),
            live: true,
            shape,
        });
        Some(self.hs.len() - 1)
    }

    pub(super) fn leave_to(&mut self, depth: usize) {
        for h in self.hs.iter_mut().filter(|h| h.depth >= depth) {
            h.live = false;
        }
    }

    pub(super) fn len_arg(inp: &mut Input) -> usize {
        match inp.u8() % 16 {
            0 => inp.pick(&[1usize << 48, usize::MAX, 1 << 62]),
            1 => inp.below(MAX_LEN + 1),
            2 => inp.pick(&[1 << 14, 1 << 16, MAX_LEN]),
            _ => inp.below(40),
        }
    }

    pub(super) fn descs<'s>(&self, st: &'s State) -> &'s [Desc] {
        st.rts
            .get(self.rt)
            .and_then(|r| r.as_ref())
            .map_or(&[], |r| &r.descs[..])
    }

    pub(super) fn desc_arg(&self, st: &mut State) -> (numagc_desc, Option<Desc>) {
        let n = self.descs(st).len();
        if n == 0 || st.inp.one_in(8) {
            let id = st.inp.pick(&[0u32, 1, 2, 3, 32767, 32768, u32::MAX, 9999]);
            let known = self.descs(st).iter().find(|d| d.id == id).cloned();
            return (id, known);
        }
        let k = st.inp.below(n);
        let d = self.descs(st)[k].clone();
        (d.id, Some(d))
    }
}
