#!/usr/bin/env bash
# The test command of numagc: unit, integration, property and CLI tests
# (with the heap verifier on), then the loom models of the synchronising
# protocols. Run from anywhere; installs nothing beyond what cargo fetches.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
# The embedding example checks its own answer; run it with the verifier on.
NUMAGC_VPROCS=2 NUMAGC_VERIFY=true NUMAGC_LOCAL_HEAP=256K NUMAGC_PIN=false \
  cargo run -q -p numagc --example embed > /dev/null
echo "example embed: ok"
scripts/loom.sh
