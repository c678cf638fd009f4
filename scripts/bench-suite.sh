#!/usr/bin/env bash
# Reproduces docs/results/suite.md: the whole suite at SIZE (paper or
# quick) on the vproc counts VPROCS (comma-separated), REPEAT runs of each
# configuration alternated by the harness; writes the table, the JSON of
# every run and the plots into OUT.
# Usage: scripts/bench-suite.sh [SIZE] [VPROCS] [REPEAT] [OUT] [extra numagc flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-paper}; vprocs=${2:-1,2}; repeat=${3:-3}; out=${4:-docs/results/suite}
shift $(( $# < 4 ? $# : 4 ))
cargo build --release -q -p numagc-cli
mkdir -p "$out"
target/release/numagc bench --suite "$size" --vprocs "$vprocs" --repeat "$repeat" --quiet \
  --json "$out/suite.json" --plot "$out" "$@" | tee "$out/table.txt"
