//! `include/numagc.h` is generated from this crate by cbindgen; this test
//! fails when the committed header differs from what the sources give.
//! `NUMAGC_BLESS_HEADER=1 cargo test -p numagc-capi --test header` rewrites it.

use std::path::Path;

#[test]
fn header_is_up_to_date() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let header = crate_dir.join("../../include/numagc.h");
    let config =
        cbindgen::Config::from_file(crate_dir.join("cbindgen.toml")).expect("cbindgen.toml parses");
    let mut generated = Vec::new();
    cbindgen::Builder::new()
        .with_crate(crate_dir)
        .with_config(config)
        .generate()
        .expect("cbindgen generates the header")
        .write(&mut generated);
    let generated = String::from_utf8(generated).expect("the header is UTF-8");
    if std::env::var_os("NUMAGC_BLESS_HEADER").is_some() {
        std::fs::write(&header, &generated).expect("writing include/numagc.h");
        return;
    }
    let committed = std::fs::read_to_string(&header).unwrap_or_default();
    if committed != generated {
        let line = committed
            .lines()
            .zip(generated.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(committed.lines().count().min(generated.lines().count()));
        panic!(
            "include/numagc.h is out of date (first difference at line {}); regenerate it with\n  \
             NUMAGC_BLESS_HEADER=1 cargo test -p numagc-capi --test header",
            line + 1
        );
    }
}
