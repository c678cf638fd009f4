//! PE groups for C (`numagc::pe`, `gumsmp-shared-distributed-heaps.txt`
//! §2.1): exportable tasks registered by name, a group of PEs in one
//! process, forks another PE may take, tasks sent to a chosen PE, and the
//! reads and writes of other PEs' objects.
//!
//! An exportable task is a C function of the `numagc_task_fn` type (the
//! type of `numagc_par2`'s tasks) with its user pointer, registered under
//! a name in a `numagc_exports` before the group starts; every PE runs the
//! same program, so the functions get the same ids everywhere. It runs as
//! a C body of its own (`body::run_body`) on whichever PE takes it: its
//! arguments are handles of its scope, and its result travels back packed.
//! Its failure travels as its message and comes back as `NUMAGC_ERR_PE`.
//!
//! A group's PEs share one `RtShared` (one descriptor table: the
//! descriptors are registered on every PE at once,
//! `numagc_pe_group_register_mixed`, so their ids agree).

use crate::activation::{on_callback_thread, with_state};
use crate::body::{run_callback, Callback, UserData};
use crate::numagc_desc;
use crate::parallel::{numagc_task_fn, run_task, Failed, TaskFn};
use crate::runtime::{lock, numagc_config, register_mixed_on, report, RtShared};
use crate::scope::{numagc_scope, CallState};
use crate::status::numagc_status::*;
use crate::status::{count_arg, guard, out, str_arg, Fail, Res};
use crate::{numagc_value, NUMAGC_MAX_ENV};
use numagc_rs::pe::{Export, Exports, PeGroup, MAX_PES};
use numagc_rs::Error;
use std::ffi::{c_char, c_int, c_void};
use std::sync::{Arc, OnceLock};

/// Exportable functions being registered: made by `numagc_exports_new`,
/// given to `numagc_pe_group_new` (which takes it) or freed by
/// `numagc_exports_free`.
pub struct numagc_exports {
    exports: Exports,
    /// The group's state, set when the group starts: the functions run as
    /// C bodies of it.
    group: Arc<OnceLock<Arc<RtShared>>>,
}

/// A group of PEs in this process, each a runtime with its own heap and
/// vprocs, sharing nothing but messages. Made by `numagc_pe_group_new`,
/// freed by `numagc_pe_group_free`.
pub struct numagc_pe_group {
    group: PeGroup,
    shared: Arc<RtShared>,
}

fn group_ref<'a>(g: *const numagc_pe_group) -> Res<&'a numagc_pe_group> {
    if g.is_null() {
        return Err(Fail::null("group"));
    }
    // SAFETY: non-null; the caller promises a group made by
    // `numagc_pe_group_new` and not yet freed.
    Ok(unsafe { &*g })
}

/// A new, empty table of exportable functions (`*out` NULL on failure).
#[no_mangle]
pub unsafe extern "C" fn numagc_exports_new(out_exports: *mut *mut numagc_exports) -> c_int {
    guard(|| {
        let o = out(out_exports, "out")?;
        *o = Box::into_raw(Box::new(numagc_exports {
            exports: Exports::new(),
            group: Arc::new(OnceLock::new()),
        }));
        Ok(())
    })
}

/// Registers `f` with `userdata` under `name` (unique in the table);
/// `*out_id` is its id, the same on every PE of a program that registers
/// its functions in the same order. The function runs on whichever PE
/// takes the task, as a `numagc_par2` task does (its arguments as `env`);
/// `userdata` is this process's and may be used from any vproc thread.
/// `NUMAGC_ERR_MISUSE` for a name registered already or a full table.
#[no_mangle]
pub unsafe extern "C" fn numagc_exports_register(
    exports: *mut numagc_exports,
    name: *const c_char,
    f: numagc_task_fn,
    userdata: *mut c_void,
    out_id: *mut u32,
) -> c_int {
    guard(|| {
        let o = out(out_id, "out")?;
        *o = 0;
        if exports.is_null() {
            return Err(Fail::null("exports"));
        }
        // SAFETY: non-null; the caller promises a table made by
        // `numagc_exports_new`, not yet given away or freed, and not used
        // from another thread at the same time.
        let ex = unsafe { &mut *exports };
        let name = str_arg(name, "name")?.to_string();
        let f: TaskFn = f.ok_or_else(|| Fail::null("f"))?;
        let data = UserData(userdata);
        let group = ex.group.clone();
        let what = format!("exported function `{name}`");
        let e = ex.exports.register_closure(&name, move |s, args| {
            let rt = group
                .get()
                .ok_or_else(|| Error::misuse("an exported C function ran outside its group"))?;
            let failed = Failed::default();
            run_task(s, args, f, data, rt, &what, &failed)
        })?;
        *o = e.id();
        Ok(())
    })
}

/// Frees a table that was not given to a group. NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn numagc_exports_free(exports: *mut numagc_exports) -> c_int {
    guard(|| {
        if !exports.is_null() {
            // SAFETY: made by `Box::into_raw` in `numagc_exports_new`; the
            // caller gives it back once.
            drop(unsafe { Box::from_raw(exports) });
        }
        Ok(())
    })
}

/// Starts `pes` PEs in this process, each a runtime of `cfg` (its
/// `vprocs` per PE), running the functions of `exports`, which the group
/// takes (it is freed, and must not be used again, whatever the outcome).
/// `*out` is NULL on failure: `NUMAGC_ERR_INVALID_CONFIG` for `pes`
/// outside 1 ..= 1024 or settings that do not fit, `NUMAGC_ERR_OS` when
/// memory or threads cannot be had. Refused from inside a callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_pe_group_new(
    pes: usize,
    cfg: *const numagc_config,
    exports: *mut numagc_exports,
    out_group: *mut *mut numagc_pe_group,
) -> c_int {
    guard(|| {
        if exports.is_null() {
            return Err(Fail::null("exports"));
        }
        // SAFETY: made by `Box::into_raw` in `numagc_exports_new`; the
        // group takes it, as documented.
        let ex = unsafe { Box::from_raw(exports) };
        let o = out(out_group, "out")?;
        *o = std::ptr::null_mut();
        if on_callback_thread() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "numagc_pe_group_new called from a callback",
            ));
        }
        if !(1..=MAX_PES).contains(&pes) {
            return Err(Fail::new(
                NUMAGC_ERR_INVALID_CONFIG,
                format!("pes = {pes}: a group has 1 ..= {MAX_PES} PEs"),
            ));
        }
        if cfg.is_null() {
            return Err(Fail::null("cfg"));
        }
        // SAFETY: non-null; the caller promises a configuration made by
        // `numagc_config_new` and not yet freed.
        let config = unsafe { &*cfg }.build()?;
        let shared = Arc::new(RtShared::new(config.max_heap));
        let _ = shared.exports.set(ex.exports.clone());
        ex.group
            .set(shared.clone())
            .map_err(|_| Fail::new(NUMAGC_ERR_MISUSE, "these exports run another group"))?;
        let group = PeGroup::new(pes, config, ex.exports, |_| Ok(()))?;
        *o = Box::into_raw(Box::new(numagc_pe_group { group, shared }));
        Ok(())
    })
}

/// Registers a mixed-object descriptor on every PE of the group, at the
/// same id: as `numagc_register_mixed`.
#[no_mangle]
pub unsafe extern "C" fn numagc_pe_group_register_mixed(
    group: *const numagc_pe_group,
    name: *const c_char,
    size: usize,
    pointer_offsets: *const usize,
    n_offsets: usize,
    is_mutable: c_int,
    out_desc: *mut numagc_desc,
) -> c_int {
    guard(|| {
        let o = out(out_desc, "out")?;
        *o = 0;
        let g = group_ref(group)?;
        let runtimes: Vec<_> = g.group.local_pes().map(|p| g.group.runtime(p)).collect();
        *o = register_mixed_on(
            &runtimes,
            &g.shared,
            name,
            size,
            pointer_offsets,
            n_offsets,
            is_mutable,
        )?;
        Ok(())
    })
}

/// Runs `callback(scope, user_data)` on PE 0's vproc 0 and waits for it;
/// the other PEs take work from it as they go idle. Returns as
/// `numagc_run_on` does.
#[no_mangle]
pub unsafe extern "C" fn numagc_pe_group_run(
    group: *const numagc_pe_group,
    callback: crate::numagc_callback,
    user_data: *mut c_void,
) -> c_int {
    guard(|| {
        let g = group_ref(group)?;
        if on_callback_thread() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "numagc_pe_group_run called from a callback: callbacks cannot wait for callbacks",
            ));
        }
        let cb: Callback = callback.ok_or_else(|| Fail::null("callback"))?;
        let shared = g.shared.clone();
        let data = UserData(user_data);
        let (rc, message) = g.group.run(move |s| run_callback(s, cb, data, &shared))?;
        report(rc, message)
    })
}

/// Settles the group's weight books after a run (`PeGroup::settle`): every
/// reference to another PE's object that the run dropped gives its weight
/// back. `*out_git` and `*out_imports` are the entries left over all PEs
/// (both 0 when the run let go of every global object). Refused from
/// inside a callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_pe_group_settle(
    group: *const numagc_pe_group,
    out_git: *mut usize,
    out_imports: *mut usize,
) -> c_int {
    guard(|| {
        let og = out(out_git, "out_git")?;
        let oi = out(out_imports, "out_imports")?;
        let g = group_ref(group)?;
        if on_callback_thread() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "numagc_pe_group_settle called from a callback",
            ));
        }
        (*og, *oi) = g.group.settle();
        Ok(())
    })
}

/// Stops a group: its PEs' services, vprocs and heaps. NULL is ignored.
/// Refused from inside a callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_pe_group_free(group: *mut numagc_pe_group) -> c_int {
    guard(|| {
        if group.is_null() {
            return Ok(());
        }
        if on_callback_thread() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "numagc_pe_group_free called from a callback",
            ));
        }
        // SAFETY: made by `Box::into_raw` in `numagc_pe_group_new`; the
        // caller gives it back once and uses it no more.
        let g = unsafe { Box::from_raw(group) };
        crate::ops::GLOBALS.remove_runtime(g.shared.id);
        crate::channel::CHANNELS.remove_runtime(g.shared.id);
        drop(g);
        Ok(())
    })
}

/// The exportable function `id` of the scope's group.
fn export_of(st: &CallState, id: u32) -> Res<Export> {
    st.rt
        .exports
        .get()
        .and_then(|e| e.by_id(id))
        .ok_or_else(|| {
            Fail::new(
                NUMAGC_ERR_INVALID_ARGUMENT,
                format!("export id {id}: no exportable function of that id in this scope's group"),
            )
        })
}

/// Forks: runs task `a` here and the exportable function `export_id` on
/// the `n` values of `args`, in parallel, and waits for both, as
/// `numagc_par2` does; another PE that runs out of work may take the
/// exported half (its arguments travel packed, mutable objects as global
/// addresses). Errors: as `numagc_par2`; an unknown `export_id` is
/// `NUMAGC_ERR_INVALID_ARGUMENT`; the exported half's failure on another PE,
/// or that PE's loss, `NUMAGC_ERR_PE`.
#[no_mangle]
pub unsafe extern "C" fn numagc_par2_export(
    scope: *mut numagc_scope,
    export_id: u32,
    args: *const numagc_value,
    n: usize,
    a: numagc_task_fn,
    userdata_a: *mut c_void,
    out_a: *mut numagc_value,
    out_b: *mut numagc_value,
) -> c_int {
    guard(|| {
        let oa = out(out_a, "out_a")?;
        let ob = out(out_b, "out_b")?;
        (*oa, *ob) = (0, 0);
        let fa: TaskFn = a.ok_or_else(|| Fail::null("a"))?;
        count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
        let da = UserData(userdata_a);
        let [va, vb] = with_state(scope, |st| {
            let export = export_of(st, export_id)?;
            let hs = st.handles_arg(args, n, "args")?;
            let rt_a = st.rt.clone();
            let failed_a = Failed::default();
            let fail_a = &failed_a;
            st.produce_n(|s, [slot_a, slot_b]| {
                let r = s.par2_export(export, hs.as_slice(), move |s, env| {
                    run_task(s, env, fa, da, &rt_a, "par2_export task a", fail_a)
                });
                match r {
                    Ok((x, y)) => {
                        s.assign(slot_a, x);
                        s.assign(slot_b, y);
                        Ok(())
                    }
                    Err(e) => Err(lock(&failed_a).take().unwrap_or_else(|| e.into())),
                }
            })
        })?;
        (*oa, *ob) = (va, vb);
        Ok(())
    })
}

/// Runs the exportable function `export_id` on the `n` values of `args`
/// on PE `pe` of the scope's group and waits for its value (`*out`): only
/// this callback waits, its vproc runs other PEs' work meanwhile. On this
/// PE it is a call. A mutable object made there comes back as a FetchMe
/// (read it with `numagc_remote_get`). Errors: `pe` outside the group
/// `NUMAGC_ERR_MISUSE`; the function's failure there, or the loss of PE
/// `pe`, `NUMAGC_ERR_PE`; arguments that cannot travel
/// `NUMAGC_ERR_NOT_EXPORTABLE`.
#[no_mangle]
pub unsafe extern "C" fn numagc_call_on(
    scope: *mut numagc_scope,
    pe: usize,
    export_id: u32,
    args: *const numagc_value,
    n: usize,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        count_arg(n, NUMAGC_MAX_ENV, "n", "NUMAGC_MAX_ENV")?;
        *o = with_state(scope, |st| {
            let export = export_of(st, export_id)?;
            let hs = st.handles_arg(args, n, "args")?;
            st.produce(|s, slot| {
                let r = s.call_on(pe, export, hs.as_slice())?;
                s.assign(slot, r);
                Ok(())
            })
        })?;
        Ok(())
    })
}

/// Value field `i` of `obj`, read where `obj` lives: here for a local
/// object, at its owner for a FetchMe (`Scope::remote_get`).
#[no_mangle]
pub unsafe extern "C" fn numagc_remote_get(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        *o = with_state(scope, |st| {
            let h = st.handle(obj)?;
            st.produce(|s, slot| {
                let v = s.remote_get(h, i)?;
                s.assign(slot, v);
                Ok(())
            })
        })?;
        Ok(())
    })
}

/// Raw field `i` of `obj`, read where `obj` lives.
#[no_mangle]
pub unsafe extern "C" fn numagc_remote_get_raw(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    out_word: *mut u64,
) -> c_int {
    guard(|| {
        let o = out(out_word, "out")?;
        *o = 0;
        *o = with_state(scope, |st| {
            let h = st.handle(obj)?;
            Ok(st.sc().remote_get_raw(h, i)?)
        })?;
        Ok(())
    })
}

/// Stores `value` into value field `i` of the mutable object `obj`, where
/// it lives (the value travels packed to a remote owner).
#[no_mangle]
pub unsafe extern "C" fn numagc_remote_set(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    value: numagc_value,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let (o, v) = (st.handle(obj)?, st.handle(value)?);
            Ok(st.sc().remote_set(o, i, v)?)
        })
    })
}

/// Stores `word` into raw field `i` of the mutable object `obj`, where it
/// lives.
#[no_mangle]
pub unsafe extern "C" fn numagc_remote_set_raw(
    scope: *mut numagc_scope,
    obj: numagc_value,
    i: usize,
    word: u64,
) -> c_int {
    guard(|| {
        with_state(scope, |st| {
            let o = st.handle(obj)?;
            Ok(st.sc().remote_set_raw(o, i, word)?)
        })
    })
}

/// `*out` is a copy of the immutable object a FetchMe stands for, fetched
/// from its owner; any other value is itself (`Scope::resolve`).
#[no_mangle]
pub unsafe extern "C" fn numagc_resolve(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_value: *mut numagc_value,
) -> c_int {
    guard(|| {
        let o = out(out_value, "out")?;
        *o = 0;
        *o = with_state(scope, |st| {
            let h = st.handle(v)?;
            st.produce(|s, slot| {
                let r = s.resolve(h)?;
                s.assign(slot, r);
                Ok(())
            })
        })?;
        Ok(())
    })
}

/// `*out` is 1 when `v` is a FetchMe (the name of another PE's object),
/// else 0; `*out_len` (when not NULL) its object's number of fields, local
/// or remote.
#[no_mangle]
pub unsafe extern "C" fn numagc_remote_info(
    scope: *mut numagc_scope,
    v: numagc_value,
    out_remote: *mut c_int,
    out_len: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_remote, "out")?;
        *o = 0;
        let (remote, len) = with_state(scope, |st| {
            let h = st.handle(v)?;
            let sc = st.sc();
            Ok((sc.is_remote(h), sc.remote_len(h)))
        })?;
        *o = c_int::from(remote);
        if !out_len.is_null() {
            // SAFETY: non-null; the caller passes a writable `size_t`.
            unsafe { *out_len = len };
        }
        Ok(())
    })
}
