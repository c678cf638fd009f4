//! cargo-fuzz target `descriptor`: see `numagc_fuzz::descriptor` (fuzz/src/descriptor.rs).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| numagc_fuzz::descriptor::run(data));
