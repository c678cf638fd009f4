#!/usr/bin/env bash
# The test command of numagc: unit, integration, property and CLI tests
# (with the heap verifier on), the C example (under valgrind memcheck when
# it can be installed), then the loom models of the synchronising protocols.
# Run from anywhere; besides what cargo fetches it installs valgrind with
# apt-get when it is missing and that is possible (scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --exclude numagc-capi --doc
# The embedding example checks its own answer; run it with the verifier on.
NUMAGC_VPROCS=2 NUMAGC_VERIFY=true NUMAGC_LOCAL_HEAP=256K NUMAGC_PIN=false \
  cargo run -q -p numagc --example embed > /dev/null
echo "example embed: ok"
scripts/loom.sh
