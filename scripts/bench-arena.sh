#!/usr/bin/env bash
# Runs `numagc arena-bench` (issue 7, item 6) for the results page: every
# workload at SIZE (paper or test) on THREADS (comma-separated), REPEAT runs
# of each allocator alternated, against glibc, jemalloc, mimalloc, tcmalloc
# (scripts/install-allocators.sh installs them; missing ones are listed as
# such), numagc-malloc and numagc-rich (the rich interface linked in); writes the table, the Markdown tables, the JSON of
# every run and the plots into OUT. Run it on a quiet machine.
# Usage: scripts/bench-arena.sh [SIZE] [THREADS] [REPEAT] [OUT] [extra arena-bench flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
size=${1:-paper}; threads=${2:-1,2}; repeat=${3:-5}; out=${4:-docs/results/arena}
shift $(( $# < 4 ? $# : 4 ))
cargo build --release -q -p numagc-cli -p numagc-malloc
mkdir -p "$out"
target/release/numagc arena-bench --size "$size" --threads "$threads" --repeat "$repeat" \
  --json "$out/arena.json" --markdown "$out/tables.md" --plot "$out" "$@" | tee "$out/table.txt"
