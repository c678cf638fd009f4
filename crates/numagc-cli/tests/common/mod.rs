//! Running the `numagc` binary as a user would, for the CLI tests.

use std::process::Command;

/// Runs `numagc ARGS...` (with no `NUMAGC_VPROCS` from the environment):
/// whether it succeeded, its standard output and its standard error.
pub fn numagc(args: &[&str]) -> (bool, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_numagc"))
        .args(args)
        .env_remove("NUMAGC_VPROCS")
        .output()
        .expect("run numagc");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
