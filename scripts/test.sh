#!/usr/bin/env bash
# The test command of numagc: unit, integration, property and CLI tests
# (with the heap verifier on), then the loom models of the synchronising
# protocols. Run from anywhere; installs nothing beyond what cargo fetches.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc
scripts/loom.sh
