#!/usr/bin/env bash
# Reproduces docs/results/binarytrees.md: binary-trees at depth 21 on 1 and
# 2 vprocs, REPEAT runs each, alternating (1 2 1 2 ...: the harness's
# order) so drift in machine speed hits both alike; medians with min/max,
# then the allocation-rate comparison (numagc nursery vs a plain
# bump-pointer loop, same run).
# Usage: scripts/bench-binarytrees.sh [REPEAT] [extra numagc flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}; shift || true
cargo build --release -q -p numagc-cli
bin=target/release/numagc
out=$(mktemp -d)
"$bin" bench binarytrees --depth 21 --vprocs 1,2 --repeat "$repeat" --quiet --json "$out/bt.json" "$@" > /dev/null
python3 - "$out/bt.json" "$repeat" <<'PY'
import json, sys, statistics as st
runs, repeat = json.load(open(sys.argv[1]))["runs"], int(sys.argv[2])
assert all(r["correct"] for r in runs), "wrong answer"
rows = {}
for v in (1, 2):
    rs = [r for r in runs if r["vprocs"] == v]
    wall = [r["wall_s"] for r in rs]
    rows[v] = (st.median(wall), min(wall), max(wall),
               st.median(r["bytes_allocated"] / r["wall_s"] / 1e9 for r in rs),
               st.median(r["gc_share"] for r in rs),
               st.median(r["global_collections"] for r in rs),
               st.median(r["pause_p99_ms"] for r in rs), max(r["pause_max_ms"] for r in rs))
print(f"binarytrees depth 21, {repeat} runs per configuration (median [min, max])")
print("| vprocs | wall s | alloc rate GB/s | GC share | global GCs | pause p99 ms | pause max ms |")
print("|---|---|---|---|---|---|---|")
for v, (m, lo, hi, rate, gc, g, p99, pmax) in rows.items():
    print(f"| {v} | {m:.2f} [{lo:.2f}, {hi:.2f}] | {rate:.2f} | {100*gc:.0f} % | {g:.0f} | {p99:.1f} | {pmax:.1f} |")
print(f"speedup 1 -> 2 vprocs (ratio of medians): {rows[1][0] / rows[2][0]:.2f}")
PY
"$bin" micro alloc --repeat "$repeat" "$@"
