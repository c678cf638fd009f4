//! Synchronous channels for C: the channel registry and the direct-style
//! `numagc_send`, `numagc_recv` and `numagc_select` (the Rust
//! `Scope::send/recv/select` with `Sel`).
//!
//! A `numagc_channel*` is a token, like a scope: an id in pointer form that
//! is never dereferenced. The registry maps it to the Rust `Channel` and the
//! runtime it belongs to, so a channel used after `numagc_channel_free`, or
//! freed twice, is `NUMAGC_ERR_BAD_VALUE` instead of undefined behaviour,
//! and one of another runtime is `NUMAGC_ERR_MISUSE`.

use crate::activation::with_state;
use crate::registry::Registry;
use crate::runtime::runtime_ref;
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{count_arg, guard, out, slice_arg, Fail, Res};
use crate::{numagc_runtime, numagc_value, NUMAGC_MAX_CASES};
use numagc_rs::{Channel, Sel};
use std::ffi::c_int;

/// A synchronous channel of a runtime: a send completes only together with
/// a receive, and the value is promoted before it is handed over. Made by
/// `numagc_channel_new`, freed by `numagc_channel_free` (or with its
/// runtime). An opaque token, never dereferenced: a freed channel is an
/// error, not a crash.
pub struct numagc_channel {
    _private: [u8; 0],
}

/// The direction of one case of a choice: the values of the `dir` field of
/// `numagc_sel` and `numagc_case`. That field is an `int` (C may write any
/// value there); one that is none of these constants is refused with
/// `NUMAGC_ERR_INVALID_ARGUMENT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum numagc_dir {
    /// Receive a value from the channel.
    NUMAGC_RECV = 0,
    /// Send `value` on the channel.
    NUMAGC_SEND = 1,
}

impl numagc_dir {
    /// The direction of a `dir` field read from C as a plain integer:
    /// `NUMAGC_ERR_INVALID_ARGUMENT` naming the field (`what`) and the
    /// accepted values for any other value.
    pub(crate) fn from_c(v: c_int, what: &str) -> Res<numagc_dir> {
        match v {
            0 => Ok(numagc_dir::NUMAGC_RECV),
            1 => Ok(numagc_dir::NUMAGC_SEND),
            _ => Err(Fail::new(
                NUMAGC_ERR_INVALID_ARGUMENT,
                format!("{what} = {v} is not a numagc_dir: NUMAGC_RECV (0) or NUMAGC_SEND (1)"),
            )),
        }
    }
}

/// One case of a direct-style `numagc_select`: receive from `channel`, or
/// send `value` on it (`value` is ignored for a receive).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct numagc_sel {
    pub channel: *mut numagc_channel,
    /// A `numagc_dir`: `NUMAGC_RECV` or `NUMAGC_SEND`; any other value is
    /// `NUMAGC_ERR_INVALID_ARGUMENT`.
    pub dir: c_int,
    pub value: numagc_value,
}

/// Channels by id; a `numagc_channel*` is the id shifted left by 4 (never
/// NULL, and a forged pointer with low bits set names no channel).
pub(crate) static CHANNELS: Registry<Channel> = Registry::new();

fn token_of(id: u64) -> *mut numagc_channel {
    std::ptr::without_provenance_mut((id as usize) << 4)
}

/// The registered channel named by `ch` (non-null), with its runtime.
fn lookup(ch: *mut numagc_channel) -> Option<(u64, Channel)> {
    let token = ch.addr();
    if token & 0xF != 0 {
        return None;
    }
    CHANNELS.get((token >> 4) as u64)
}

/// The channel named by `ch`, which must be live and of runtime `runtime`.
/// The registry's lock is released before the channel is used (a send may
/// wait, and other vprocs use the registry meanwhile).
pub(crate) fn channel_of(ch: *mut numagc_channel, runtime: u64, what: &str) -> Res<Channel> {
    if ch.is_null() {
        return Err(Fail::null(what));
    }
    let token = ch.addr();
    let (owner, chan) = lookup(ch).ok_or_else(|| {
        Fail::new(
            NUMAGC_ERR_BAD_VALUE,
            format!(
                "channel {token:#x} does not exist (never made, freed, or its runtime was freed)"
            ),
        )
    })?;
    if owner != runtime {
        return Err(Fail::new(
            NUMAGC_ERR_MISUSE,
            format!("channel {token:#x} belongs to another runtime: channels connect the vprocs of one runtime"),
        ));
    }
    Ok(chan)
}

/// A new synchronous channel of `rt`. `*out` is NULL on failure. Channels
/// may be used from any vproc, by callbacks, tasks and threads, and by
/// several at once.
#[no_mangle]
pub unsafe extern "C" fn numagc_channel_new(
    rt: *const numagc_runtime,
    out_ch: *mut *mut numagc_channel,
) -> c_int {
    guard(|| {
        let o = out(out_ch, "out")?;
        *o = std::ptr::null_mut();
        let rt = runtime_ref(rt)?;
        *o = token_of(CHANNELS.insert(rt.shared.id, rt.rt.channel()));
        Ok(())
    })
}

/// Frees a channel; NULL is ignored. Threads queued on it keep what they
/// need and are dropped with the runtime if nobody completes them; later
/// uses of `ch` return `NUMAGC_ERR_BAD_VALUE`, and so does a second free or
/// a free after the runtime was freed (which frees its channels).
#[no_mangle]
pub extern "C" fn numagc_channel_free(ch: *mut numagc_channel) -> c_int {
    guard(|| {
        if ch.is_null() {
            return Ok(());
        }
        let token = ch.addr();
        let entry = if token & 0xF == 0 {
            CHANNELS.remove((token >> 4) as u64)
        } else {
            None
        };
        match entry {
            Some(chan) => {
                drop(chan);
                Ok(())
            }
            None => Err(Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                format!(
                    "channel {token:#x} does not exist (freed twice, or its runtime was freed)"
                ),
            )),
        }
    })
}

/// The number of offers (of threads or waiting callbacks) queued on `ch`,
/// counting entries of choices that completed elsewhere and were not yet
/// cleared: 1 after a thread blocked on it alone, for instance.
#[no_mangle]
pub unsafe extern "C" fn numagc_channel_waiting(
    ch: *mut numagc_channel,
    out_n: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_n, "out")?;
        *o = 0;
        if ch.is_null() {
            return Err(Fail::null("ch"));
        }
        let token = ch.addr();
        let (_, chan) = lookup(ch).ok_or_else(|| {
            Fail::new(
                NUMAGC_ERR_BAD_VALUE,
                format!("channel {token:#x} does not exist (freed?)"),
            )
        })?;
        *o = chan.waiting();
        Ok(())
    })
}

/// The common part of the direct-style calls: resolves the cases' channels
/// and values, waits, and returns the case completed and its value.
/// `one` names the channel of `numagc_send` / `numagc_recv` in messages.
/// `cases` has at most `NUMAGC_MAX_CASES` entries (checked by the callers).
fn select_in(st: &mut CallState, cases: &[numagc_sel], one: bool) -> Res<(usize, numagc_value)> {
    let mut chans = Vec::with_capacity(cases.len());
    let mut values = Vec::with_capacity(cases.len());
    for (k, c) in cases.iter().enumerate() {
        let dir = numagc_dir::from_c(c.dir, &format!("cases[{k}].dir"))?;
        let what = if one {
            "ch".to_string()
        } else {
            format!("cases[{k}].channel")
        };
        chans.push(channel_of(c.channel, st.rt.id, &what)?);
        values.push(match dir {
            numagc_dir::NUMAGC_SEND => Some(st.handle(c.value)?),
            numagc_dir::NUMAGC_RECV => None,
        });
    }
    let mut index = 0;
    let [v] = st.produce_n(|s, [slot]| {
        let sel: Vec<Sel<'_, '_>> = chans
            .iter()
            .zip(&values)
            .map(|(ch, v)| match v {
                Some(h) => Sel::Send(ch, *h),
                None => Sel::Recv(ch),
            })
            .collect();
        let (case, got) = s.select(&sel)?;
        s.assign(slot, got);
        index = case;
        Ok(())
    })?;
    Ok((index, v))
}

/// Sends `value` on `ch` (it is promoted) and waits until a receiver has
/// taken it. While it waits, the vproc keeps its duties: it joins
/// collections and runs other threads and stolen tasks. `NUMAGC_ERR_MISUSE`
/// inside a thread body (return `numagc_next_send` instead) or for a
/// channel of another runtime; `NUMAGC_ERR_BAD_VALUE` for a freed channel.
#[no_mangle]
pub unsafe extern "C" fn numagc_send(
    scope: *mut numagc_scope,
    ch: *mut numagc_channel,
    value: numagc_value,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            select_in(
                st,
                &[numagc_sel {
                    channel: ch,
                    dir: numagc_dir::NUMAGC_SEND as c_int,
                    value,
                }],
                true,
            )?;
            Ok(())
        })
    })
}

/// Waits for a value on `ch`; `*out` is a handle in the innermost frame
/// (to a global object) or an immediate. As `numagc_send` otherwise.
#[no_mangle]
pub unsafe extern "C" fn numagc_recv(
    scope: *mut numagc_scope,
    ch: *mut numagc_channel,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        *o = with_state(scope, |st| {
            let (_, v) = select_in(
                st,
                &[numagc_sel {
                    channel: ch,
                    dir: numagc_dir::NUMAGC_RECV as c_int,
                    value: 0,
                }],
                true,
            )?;
            Ok(v)
        })?;
        Ok(())
    })
}

/// Waits until one of the `n` cases can complete and completes it alone
/// (the first one in order when several can). `*out_index` is its index and
/// `*out_value` the value received (`NUMAGC_NIL` for a send). No cases is
/// `NUMAGC_ERR_MISUSE` (it would wait for ever); more than
/// `NUMAGC_MAX_CASES` cases, or a `dir` that is not a `numagc_dir`,
/// `NUMAGC_ERR_INVALID_ARGUMENT` (checked before anything is waited for);
/// as `numagc_send` otherwise.
#[no_mangle]
pub unsafe extern "C" fn numagc_select(
    scope: *mut numagc_scope,
    cases: *const numagc_sel,
    n: usize,
    out_index: *mut usize,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let oi = out(out_index, "out_index")?;
        let ov = out(out_value, "out_value")?;
        *ov = 0;
        count_arg(n, NUMAGC_MAX_CASES, "n", "NUMAGC_MAX_CASES")?;
        let cases = slice_arg(cases, n, "cases")?;
        let (i, v) = with_state(scope, |st| select_in(st, cases, false))?;
        *oi = i;
        *ov = v;
        Ok(())
    })
}
