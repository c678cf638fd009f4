//! cargo-fuzz target `capi`: see `numagc_fuzz::capi` (fuzz/src/capi/).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numagc_fuzz::capi::run(data));
