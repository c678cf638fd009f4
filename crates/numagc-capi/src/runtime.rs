//! Configurations, runtimes, descriptors, callbacks and statistics.

use crate::activation::on_callback_thread;
use crate::body::{run_callback, Callback, UserData};
use crate::numagc_desc;
use crate::status::numagc_status::*;
use crate::status::{array_not_null, bool_arg, guard, out, slice_arg, str_arg, Fail, Res};
use numagc_rs::object::descriptor::MAX_MIXED_SIZE;
use numagc_rs::{ConfigBuilder, DescId, Descriptor, Runtime};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// A configuration being built: every setting of numagc, set by name. Made
/// by `numagc_config_new`, freed by `numagc_config_free`.
pub struct numagc_config {
    builder: ConfigBuilder,
}

impl numagc_config {
    /// The configuration its settings make.
    pub(crate) fn build(&self) -> Res<numagc_rs::Config> {
        Ok(self.builder.build()?)
    }
}

/// A running numagc runtime with its vproc threads. Made by
/// `numagc_runtime_new`, freed by `numagc_runtime_free`.
pub struct numagc_runtime {
    pub(crate) rt: Runtime,
    pub(crate) shared: Arc<RtShared>,
}

// A runtime may be used from several C threads at once (the thread rule in
// the crate docs): that needs `Runtime` to be `Sync`.
const _: () = {
    const fn shared_between_threads<T: Send + Sync>() {}
    shared_between_threads::<numagc_runtime>();
};

/// What callbacks need of their runtime.
pub(crate) struct RtShared {
    /// Distinguishes runtimes (global roots belong to one).
    pub id: u64,
    /// Registered descriptors by raw id.
    descs: Mutex<Vec<Option<DescInfo>>>,
    /// The heap limit in bytes (setting `max-heap`): no object is larger,
    /// so counts from C are checked against it before anything is sized
    /// by them.
    pub max_heap: usize,
    /// The exportable functions of a PE group (`crate::pe`), by id.
    pub exports: std::sync::OnceLock<numagc_rs::pe::Exports>,
}

/// A registered descriptor with its field counts, which the counts that C
/// announces for a mixed object are checked against before they are used.
#[derive(Clone)]
pub(crate) struct DescInfo {
    pub id: DescId,
    pub name: Arc<str>,
    /// Value fields.
    pub values: usize,
    /// Raw fields.
    pub raw: usize,
}

impl RtShared {
    /// A new runtime's (or PE group's) state, its heap limit `max_heap`.
    pub(crate) fn new(max_heap: usize) -> RtShared {
        RtShared {
            id: NEXT_RUNTIME_ID.fetch_add(1, Ordering::Relaxed),
            descs: Mutex::new(Vec::new()),
            max_heap,
            exports: std::sync::OnceLock::new(),
        }
    }

    /// A copy of the registered descriptors (callbacks cache it).
    pub fn descriptors(&self) -> Vec<Option<DescInfo>> {
        lock(&self.descs).clone()
    }
}

/// Locks a mutex; a panic that poisoned it was already reported where it
/// happened, and the data it guards stays consistent (single assignments).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

static NEXT_RUNTIME_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) fn runtime_ref<'a>(rt: *const numagc_runtime) -> Res<&'a numagc_runtime> {
    if rt.is_null() {
        return Err(Fail::null("rt"));
    }
    // SAFETY: non-null; the caller promises a runtime made by
    // `numagc_runtime_new` and not yet freed (only `numagc_runtime_free`
    // takes it back, and the contract forbids using it concurrently).
    Ok(unsafe { &*rt })
}

/// A configuration with every setting at its default (not read from the
/// environment: see `numagc_config_from_env`). NULL only on an internal
/// error, with `numagc_last_error()` saying which.
#[no_mangle]
pub extern "C" fn numagc_config_new() -> *mut numagc_config {
    let mut cfg = std::ptr::null_mut();
    guard(|| {
        cfg = Box::into_raw(Box::new(numagc_config {
            builder: ConfigBuilder::new(),
        }));
        Ok(())
    });
    cfg
}

/// A configuration with the defaults overridden by every `NUMAGC_*`
/// environment variable that is set. `*out` is NULL on failure
/// (`NUMAGC_ERR_INVALID_CONFIG` for a refused variable).
#[no_mangle]
pub unsafe extern "C" fn numagc_config_from_env(out_cfg: *mut *mut numagc_config) -> c_int {
    guard(|| {
        let o = out(out_cfg, "out")?;
        *o = std::ptr::null_mut();
        let builder = ConfigBuilder::from_env()?;
        *o = Box::into_raw(Box::new(numagc_config { builder }));
        Ok(())
    })
}

/// Sets one setting by its name as on the command line (`"local-heap"`,
/// `"vprocs"`, `"vproc-stack"`, `"verify"`, ...; `numagc info` lists them)
/// to `value` as text (`"16M"`, `"2"`, `"true"`; names such as `"eager"`
/// in any case). `NUMAGC_ERR_INVALID_CONFIG` names an unknown setting, or
/// a value that does not parse or is outside the setting's own range, with
/// the message the CLI gives; the configuration keeps its previous value.
/// Ranges that depend on other settings (min-nursery, large-object,
/// global-gc-threshold, max-heap, vprocs x vproc-stack) are checked by
/// `numagc_runtime_new`, whatever order the settings were set in.
#[no_mangle]
pub unsafe extern "C" fn numagc_config_set(
    cfg: *mut numagc_config,
    name: *const c_char,
    value: *const c_char,
) -> c_int {
    guard(|| {
        let cfg = out(cfg, "cfg")?;
        let name = str_arg(name, "name")?;
        let value = str_arg(value, "value")?;
        cfg.builder.set(name, value)?;
        Ok(())
    })
}

/// Frees a configuration; NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn numagc_config_free(cfg: *mut numagc_config) -> c_int {
    guard(|| {
        if !cfg.is_null() {
            // SAFETY: made by `Box::into_raw` in `numagc_config_new` or
            // `numagc_config_from_env`; the caller gives it back once.
            drop(unsafe { Box::from_raw(cfg) });
        }
        Ok(())
    })
}

/// Starts a runtime with the configuration `cfg` (which stays the
/// caller's: free it when done). `*out` is NULL on failure:
/// `NUMAGC_ERR_INVALID_CONFIG` when the settings do not fit together,
/// `NUMAGC_ERR_OS` when memory or threads cannot be had.
#[no_mangle]
pub unsafe extern "C" fn numagc_runtime_new(
    cfg: *const numagc_config,
    out_rt: *mut *mut numagc_runtime,
) -> c_int {
    guard(|| {
        let o = out(out_rt, "out")?;
        *o = std::ptr::null_mut();
        if cfg.is_null() {
            return Err(Fail::null("cfg"));
        }
        // SAFETY: non-null; the caller promises a configuration made by
        // `numagc_config_new` and not yet freed.
        let cfg = unsafe { &*cfg };
        let config = cfg.builder.build()?;
        let rt = Runtime::new(config)?;
        let shared = Arc::new(RtShared::new(rt.config().max_heap));
        *o = Box::into_raw(Box::new(numagc_runtime { rt, shared }));
        Ok(())
    })
}

/// Stops a runtime: waits for its vprocs to finish their callbacks, frees
/// its global roots, its heap and its threads. NULL is ignored. Refused
/// with `NUMAGC_ERR_MISUSE` from inside a callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_runtime_free(rt: *mut numagc_runtime) -> c_int {
    guard(|| {
        if rt.is_null() {
            return Ok(());
        }
        if on_callback_thread() {
            return Err(Fail::new(
                NUMAGC_ERR_MISUSE,
                "numagc_runtime_free called from a callback: a runtime cannot be freed by one of its own jobs",
            ));
        }
        // SAFETY: made by `Box::into_raw` in `numagc_runtime_new`; the
        // caller gives it back once and uses it no more.
        let rt = unsafe { Box::from_raw(rt) };
        crate::ops::GLOBALS.remove_runtime(rt.shared.id);
        crate::channel::CHANNELS.remove_runtime(rt.shared.id);
        drop(rt);
        Ok(())
    })
}

/// The number of vprocs of the runtime.
#[no_mangle]
pub unsafe extern "C" fn numagc_runtime_vprocs(
    rt: *const numagc_runtime,
    out_n: *mut usize,
) -> c_int {
    guard(|| {
        let o = out(out_n, "out")?;
        *o = runtime_ref(rt)?.rt.vprocs();
        Ok(())
    })
}

/// Registers a mixed-object descriptor: objects of `size` words whose
/// fields at the `n_offsets` offsets in `pointer_offsets` hold values
/// (handles or immediates), the others raw 64-bit words. A mutable
/// descriptor's objects live in the global heap and accept
/// `numagc_set` / `numagc_set_raw`. `name` is for messages.
/// `NUMAGC_ERR_INVALID_DESCRIPTOR` for a size of 0 or over 2^20 words
/// (mixed objects are records: bulk data goes in vectors, arrays and raw
/// objects), an offset out of range or listed twice (so also for
/// `n_offsets` over `size`, refused before the array is read), or a full
/// table. `is_mutable` is 0 (immutable) or 1 (mutable), as C's `false` and
/// `true` are; any other value is `NUMAGC_ERR_INVALID_ARGUMENT`. May be
/// called at any time, from any thread, callbacks included.
#[no_mangle]
pub unsafe extern "C" fn numagc_register_mixed(
    rt: *const numagc_runtime,
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
        let rt = runtime_ref(rt)?;
        *o = register_mixed_on(
            &[&rt.rt],
            &rt.shared,
            name,
            size,
            pointer_offsets,
            n_offsets,
            is_mutable,
        )?;
        Ok(())
    })
}

/// `numagc_register_mixed` on each of `runtimes` (the PEs of a group get
/// the same descriptors, at the same ids), recorded in `shared`.
pub(crate) fn register_mixed_on(
    runtimes: &[&Runtime],
    shared: &RtShared,
    name: *const c_char,
    size: usize,
    pointer_offsets: *const usize,
    n_offsets: usize,
    is_mutable: c_int,
) -> Res<numagc_desc> {
    let name = str_arg(name, "name")?;
    let is_mutable = bool_arg(is_mutable, "is_mutable")?;
    array_not_null(pointer_offsets, n_offsets, "pointer_offsets")?;
    // More offsets than fields cannot all be in range and distinct:
    // refused before `pointer_offsets` is read as an array of that many.
    if n_offsets > size.min(MAX_MIXED_SIZE) {
        return Err(Fail::new(
            NUMAGC_ERR_INVALID_DESCRIPTOR,
            format!(
                "descriptor `{name}`: n_offsets = {n_offsets} is more than its size ({size} words, at most {MAX_MIXED_SIZE}): an offset would be out of range or listed twice"
            ),
        ));
    }
    let offsets = slice_arg(pointer_offsets, n_offsets, "pointer_offsets")?;
    let mut d = Descriptor::mixed(name, size, offsets)?;
    if is_mutable {
        d = d.mutable();
    }
    let info = (d.pointer_offsets().len(), d.raw_offsets().len());
    let mut id = None;
    for rt in runtimes {
        let got = rt.register(d.clone())?;
        if id.is_some_and(|i| i != got) {
            return Err(Fail::new(
                NUMAGC_ERR_INVALID_DESCRIPTOR,
                format!("descriptor `{name}`: the PEs gave it different ids"),
            ));
        }
        id = Some(got);
    }
    let id = id.ok_or_else(|| Fail::new(NUMAGC_ERR_INTERNAL, "no runtime to register on"))?;
    let raw = id.id() as usize;
    let mut descs = lock(&shared.descs);
    if descs.len() <= raw {
        descs.resize(raw + 1, None);
    }
    descs[raw] = Some(DescInfo {
        id,
        name: name.into(),
        values: info.0,
        raw: info.1,
    });
    Ok(raw as numagc_desc)
}

/// A C callback run on a vproc. `scope` is valid only on this thread and
/// only until the callback returns. Return 0 (`NUMAGC_OK`) on success; any
/// other value is handed back by `numagc_run_on` / `numagc_run_each`.
pub type numagc_callback =
    Option<unsafe extern "C" fn(scope: *mut crate::numagc_scope, user_data: *mut c_void) -> c_int>;

pub(crate) fn report(rc: c_int, message: Option<String>) -> Res {
    if rc == NUMAGC_OK as c_int {
        return Ok(());
    }
    Err(Fail {
        code: rc,
        message: message.unwrap_or_default(),
    })
}

/// Runs `callback(scope, user_data)` on vproc `vproc` and waits for it.
/// Returns the callback's nonzero result unchanged (the message quotes the
/// vproc's last error), `NUMAGC_ERR_UNBALANCED_FRAME` if it returned 0
/// with frames open, `NUMAGC_ERR_MISUSE` for a vproc that does not exist
/// or a call from inside a callback.
#[no_mangle]
pub unsafe extern "C" fn numagc_run_on(
    rt: *const numagc_runtime,
    vproc: usize,
    callback: numagc_callback,
    user_data: *mut c_void,
) -> c_int {
    guard(|| {
        let rt = runtime_ref(rt)?;
        let cb: Callback = callback.ok_or_else(|| Fail::null("callback"))?;
        let shared = rt.shared.clone();
        let data = UserData(user_data);
        let (rc, message) = rt
            .rt
            .run_on(vproc, move |s| run_callback(s, cb, data, &shared))?;
        report(rc, message)
    })
}

/// Runs `callback(scope, user_data)` on every vproc at once, each with a
/// scope of its own and the same `user_data` (synchronise your accesses to
/// it), and waits for all. Returns the first nonzero result in vproc order,
/// as `numagc_run_on` would.
#[no_mangle]
pub unsafe extern "C" fn numagc_run_each(
    rt: *const numagc_runtime,
    callback: numagc_callback,
    user_data: *mut c_void,
) -> c_int {
    guard(|| {
        let rt = runtime_ref(rt)?;
        let cb: Callback = callback.ok_or_else(|| Fail::null("callback"))?;
        let shared = rt.shared.clone();
        let data = UserData(user_data);
        let results = rt
            .rt
            .run_each(move |s| run_callback(s, cb, data, &shared))?;
        for (rc, message) in results {
            report(rc, message)?;
        }
        Ok(())
    })
}

/// The runtime's statistics as JSON (per vproc and in total: collections
/// with counts and times, bytes allocated, copied and promoted, pauses,
/// global heap per node, NUMA locality), as of the last finished callback
/// or global collection of each vproc. Free `*out` with
/// `numagc_string_free`.
#[no_mangle]
pub unsafe extern "C" fn numagc_stats_json(
    rt: *const numagc_runtime,
    out_json: *mut *mut c_char,
) -> c_int {
    guard(|| {
        let o = out(out_json, "out")?;
        *o = std::ptr::null_mut();
        let json = runtime_ref(rt)?.rt.stats().to_json().to_string();
        let c = CString::new(json)
            .map_err(|_| Fail::new(NUMAGC_ERR_INTERNAL, "statistics JSON contains a NUL byte"))?;
        *o = c.into_raw();
        Ok(())
    })
}

/// Frees a string returned by the library; NULL is ignored.
#[no_mangle]
pub unsafe extern "C" fn numagc_string_free(s: *mut c_char) -> c_int {
    guard(|| {
        if !s.is_null() {
            // SAFETY: made by `CString::into_raw` in this library; the
            // caller gives it back once.
            drop(unsafe { CString::from_raw(s) });
        }
        Ok(())
    })
}
