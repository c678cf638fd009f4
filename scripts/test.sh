#!/usr/bin/env bash
# The test command of numagc: unit, integration, property and CLI tests
# (with the heap verifier on; the quick benchmark suite among them), the
# fault-injection tests (feature `fault-injection`), the C
# example (under valgrind memcheck when it can be installed), the quick
# suite through the harness in release, the PE groups over MPI (feature
# `mpi`, two ranks under mpirun), a bounded torture run, the fuzz
# targets' replay of seeded inputs, then the loom models of the
# synchronising protocols.
# Run from anywhere; besides what cargo fetches it installs valgrind and
# Open MPI with apt-get when they are missing and that is possible
# (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --workspace --all-targets "$@"
# The shared plan (issue 17): the runtime's unit and integration tests and
# the C ABI's tests again, on it (the default plan above is split).
NUMAGC_TEST_PLAN=shared cargo test -p numagc --lib --tests "$@"
NUMAGC_TEST_PLAN=shared cargo test -p numagc-capi --lib "$@"
# The fault tests inject refused memory: they need the `fault-injection`
# feature, which the workspace build leaves out (the hooks cost nothing then).
cargo test -p numagc --features fault-injection --test faults "$@"
cargo test --workspace --exclude numagc-capi --doc
# PE groups over MPI (issue 19): the `mpi` feature, 2 ranks under mpirun on
# this host (crates/numagc-cli/tests/mpi.rs). Needs Open MPI, which
# scripts/install-deps.sh installs where it can.
if command -v mpicc >/dev/null 2>&1 && command -v mpirun >/dev/null 2>&1; then
  cargo test --release -p numagc-cli --features mpi --test mpi "$@"
else
  echo "MPI tests: skipped (no Open MPI: scripts/install-deps.sh could not install it)"
fi
# The embedding example checks its own answer; run it with the verifier on.
NUMAGC_VPROCS=2 NUMAGC_VERIFY=true NUMAGC_LOCAL_HEAP=256K NUMAGC_PIN=false \
  cargo run -q -p numagc --example embed > /dev/null
echo "example embed: ok"
# The quick suite through the harness, as a user runs it: every benchmark on
# 1 and 2 vprocs, answers checked, with the plots and the timeline written.
out=$(mktemp -d)
cargo run -q --release -p numagc-cli -- bench --suite quick --vprocs 1,2 --quiet \
  --json "$out/quick.json" --plot "$out/plots" --trace "$out/trace.json" > "$out/table.txt"
for f in quick.json plots/speedup.png plots/speedup.svg plots/gc_share.png plots/pauses.png trace.json; do
  test -s "$out/$f" || { echo "bench --suite quick: $f missing"; exit 1; }
done
echo "quick suite through the harness: ok ($(grep -c ' ok$' "$out/table.txt") configurations)"
rm -rf "$out"
# Torture (issue 5): random mutator programs on 2 vprocs against a shadow
# model, with collections forced at random points and the heap verifier
# after every collection, 40 s on each plan. The first round's seed comes
# from the clock and is printed; a violation prints the command that
# replays it.
for plan in split shared; do
  cargo run -q --release -p numagc-cli -- torture --seconds 40 --vprocs 2 --plan "$plan"
done
# Its hybrid mode (issue 19): 3 PEs in one process, references and objects
# moving between them, the weight books checked empty after every round.
for plan in split shared; do
  cargo run -q --release -p numagc-cli -- torture --seconds 15 --pes 3 --plan "$plan"
done
# The fuzz targets' interpreters (fuzz/, a workspace of its own) on seeded
# inputs, without libFuzzer; in the same target directory, so that it
# reuses the numagc build above. The campaigns themselves: scripts/fuzz.sh.
CARGO_TARGET_DIR="$PWD/target" cargo test --manifest-path fuzz/Cargo.toml
scripts/loom.sh
