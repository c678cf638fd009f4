//! Configurations and the runtimes made of them: `numagc_config_new`,
//! `_from_env`, `_set` with near-valid or arbitrary names and values (NULL
//! and invalid UTF-8 included), `_free`, and `numagc_runtime_new`.
//!
//! Invariant (configuration shadowing): every setting the library accepts
//! is made on a shadow `ConfigBuilder` too, which must accept it, and a
//! configuration the library refuses is one the shadow refuses; the
//! shadow's heap limit is the one recorded for the runtime (`Rt::max_heap`).

use super::check::{c_string, code, expect, last_error};
use super::hit;
use super::model::{Rt, State};
use crate::Input;
use numagc::ConfigBuilder;
use numagc_capi::numagc_status::*;
use numagc_capi::*;
use std::ffi::{c_int, CString};
use std::ptr::{null, null_mut};

const SETTING_VALUES: &[(&str, &[&str])] = &[
    ("local-heap", &["64K", "128K", "256K", "1M", "60K", "2G"]),
    ("chunk-size", &["64K", "128K", "1M", "96K"]),
    ("min-nursery", &["4K", "8K", "16K", "2K", "1M"]),
    ("max-minor-heap", &["64K", "256K", "2M", "32K", "2G"]),
    ("large-object", &["256", "1K", "4K", "8K", "128"]),
    ("global-gc-threshold", &["64K", "128K", "1M", "1T"]),
    (
        "max-heap",
        &["1M", "2M", "4M", "8M", "32M", "1G", "16T", "17T"],
    ),
    ("heap-growth", &["1.0", "1.5", "2", "100", "0.5"]),
    ("young-global-gc", &["true", "false"]),
    ("survivor-promotion", &["0", "50", "90", "100", "101"]),
    ("compact-overhead", &["0", "500", "1000000", "1000001", "-1"]),
    ("task-promotion", &["lazy", "eager", "sometimes"]),
    ("verify", &["true", "false", "maybe"]),
    ("trace", &["true", "false"]),
    ("numa-policy", &["local", "interleave", "node0"]),
    (
        "topology",
        &["1x1", "2x1", "1x2", "2x2", "detect", "4x", ""],
    ),
    ("plan", &["split", "split-heap", "shared", "other"]),
    ("pin", &["true", "false"]),
    ("vproc-stack", &["1M", "8M", "256M", "64K", "2G", "EAGER"]),
];

/// One configuration setting, near-valid or arbitrary; NULLs sometimes.
/// An accepted one is made on `shadow` too (the model of the
/// configuration, which says the heap limit the runtime will have).
fn config_set(inp: &mut Input, cfg: *mut numagc_config, shadow: &mut ConfigBuilder) -> c_int {
    let (name, value) = match inp.u8() % 8 {
        0 => (c_string(inp.bytes(16)), c_string(inp.bytes(16))),
        1 => {
            let (n, _) = SETTING_VALUES[inp.below(SETTING_VALUES.len())];
            (c_string(n.as_bytes()), c_string(inp.bytes(12)))
        }
        _ => {
            let (n, vs) = SETTING_VALUES[inp.below(SETTING_VALUES.len())];
            (c_string(n.as_bytes()), c_string(inp.pick(vs).as_bytes()))
        }
    };
    let (np, vp) = match inp.u8() % 16 {
        0 => (null(), value.as_ptr()),
        1 => (name.as_ptr(), null()),
        _ => (name.as_ptr(), value.as_ptr()),
    };
    let cfg = if inp.one_in(16) { null_mut() } else { cfg };
    // SAFETY: `cfg` is a live configuration or NULL; the strings are
    // NUL-terminated and live for the call.
    let rc = unsafe { numagc_config_set(cfg, np, vp) };
    // In the order the arguments are checked.
    let ok = if cfg.is_null() || np.is_null() {
        vec![NUMAGC_ERR_NULL_ARGUMENT]
    } else if name.to_str().is_err() {
        vec![NUMAGC_ERR_INVALID_ARGUMENT]
    } else if vp.is_null() {
        vec![NUMAGC_ERR_NULL_ARGUMENT]
    } else if value.to_str().is_err() {
        vec![NUMAGC_ERR_INVALID_ARGUMENT]
    } else {
        vec![NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG]
    };
    expect(rc, &ok, "numagc_config_set");
    if rc == 0 {
        let (n, v) = (name.to_str().unwrap(), value.to_str().unwrap());
        shadow
            .set(n, v)
            .expect("the model refused a setting numagc_config_set accepted");
    }
    rc
}

fn set(cfg: *mut numagc_config, shadow: &mut ConfigBuilder, name: &str, value: &str) {
    let (n, v) = (CString::new(name).unwrap(), CString::new(value).unwrap());
    // SAFETY: a live configuration and two C strings.
    let rc = unsafe { numagc_config_set(cfg, n.as_ptr(), v.as_ptr()) };
    expect(rc, &[NUMAGC_OK], "numagc_config_set (fixed)");
    shadow
        .set(name, value)
        .expect("the model refused a fixed setting");
}

pub(super) fn new_runtime(st: &mut State) {
    if st.rts.iter().filter(|r| r.is_some()).count() >= 2 {
        return;
    }
    let mut shadow = ConfigBuilder::new();
    let cfg = if st.inp.one_in(8) {
        let mut c = null_mut();
        // SAFETY: `c` is a valid output.
        let rc = unsafe { numagc_config_from_env(&mut c) };
        expect(
            rc,
            &[NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG],
            "numagc_config_from_env",
        );
        if rc != 0 {
            assert!(
                c.is_null(),
                "numagc_config_from_env failed but gave a configuration"
            );
            numagc_config_new()
        } else {
            shadow = ConfigBuilder::from_env()
                .expect("the model refused the environment numagc_config_from_env accepted");
            c
        }
    } else {
        numagc_config_new()
    };
    assert!(!cfg.is_null());
    set(cfg, &mut shadow, "local-heap", "64K");
    set(cfg, &mut shadow, "chunk-size", "64K");
    set(cfg, &mut shadow, "global-gc-threshold", "128K");
    set(cfg, &mut shadow, "max-heap", "1M");
    set(cfg, &mut shadow, "pin", "false");
    for _ in 0..st.inp.below(6) {
        config_set(&mut st.inp, cfg, &mut shadow);
    }
    let vprocs = 1 + st.inp.below(3);
    set(cfg, &mut shadow, "vprocs", &vprocs.to_string());
    let mut rt = null_mut();
    let null_out = st.inp.one_in(32);
    // SAFETY: a live configuration; `rt` is a valid output (or NULL).
    let rc = unsafe { numagc_runtime_new(cfg, if null_out { null_mut() } else { &mut rt }) };
    if null_out {
        expect(
            rc,
            &[NUMAGC_ERR_NULL_ARGUMENT],
            "numagc_runtime_new(out = NULL)",
        );
    } else {
        expect(
            rc,
            &[NUMAGC_OK, NUMAGC_ERR_INVALID_CONFIG, NUMAGC_ERR_OS],
            "numagc_runtime_new",
        );
        if rc != 0 {
            hit("runtime refused");
        }
        if rc == code(NUMAGC_ERR_INVALID_CONFIG) {
            assert!(
                shadow.build().is_err(),
                "numagc_runtime_new refused a configuration the model accepts: {}",
                last_error()
            );
        }
        assert_eq!(
            rc == 0,
            !rt.is_null(),
            "numagc_runtime_new: status {rc} with runtime {rt:?}"
        );
    }
    // SAFETY: the configuration is the caller's until freed, once.
    expect(
        unsafe { numagc_config_free(cfg) },
        &[NUMAGC_OK],
        "numagc_config_free",
    );
    if !rt.is_null() {
        let mut n = 0;
        // SAFETY: a live runtime and a valid output.
        expect(
            unsafe { numagc_runtime_vprocs(rt, &mut n) },
            &[NUMAGC_OK],
            "numagc_runtime_vprocs",
        );
        assert_eq!(n, vprocs);
        hit("runtime");
        let max_heap = shadow
            .build()
            .expect("the model refused a configuration numagc_runtime_new accepted")
            .max_heap;
        st.rts.push(Some(Rt {
            rt,
            vprocs,
            descs: Vec::new(),
            max_heap,
        }));
    }
}
