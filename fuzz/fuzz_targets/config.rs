//! cargo-fuzz target `config`: see `numagc_fuzz::config` (fuzz/src/config.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numagc_fuzz::config::run(data));
