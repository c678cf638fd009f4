#!/usr/bin/env bash
# Reproduces docs/results/binarytrees.md: binary-trees at depth 21 on 1 and
# 2 vprocs, REPEAT runs each, alternating (1 2 1 2 ...) so drift in machine
# speed hits both alike; medians with min/max, then the allocation-rate
# comparison (numagc nursery vs a plain bump-pointer loop, same run).
# Usage: scripts/bench-binarytrees.sh [REPEAT] [extra numagc flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}; shift || true
cargo build --release -q -p numagc-cli
bin=target/release/numagc
out=$(mktemp -d)
for i in $(seq 1 "$repeat"); do
  for v in 1 2; do
    "$bin" bench binarytrees --depth 21 --vprocs "$v" --json "$out/bt-$v-$i.json" "$@" > "$out/bt-$v-$i.txt"
  done
done
python3 - "$out" "$repeat" <<'PY'
import json, sys, statistics as st
out, repeat = sys.argv[1], int(sys.argv[2])
rows = {}
for v in (1, 2):
    runs = [json.load(open(f"{out}/bt-{v}-{i}.json")) for i in range(1, repeat + 1)]
    assert all(r["correct"] for r in runs)
    wall = [r["wall_s"] for r in runs]
    rate = [r["allocation_rate_gb_s"] for r in runs]
    t = [r["stats"]["total"] for r in runs]
    gc = [(x["minor"]["total_ns"] + x["major"]["total_ns"] + x["global"]["total_ns"] + x["promotion"]["total_ns"]) / 1e9 / v / w for x, w in zip(t, wall)]
    rows[v] = (st.median(wall), min(wall), max(wall), st.median(rate), st.median(gc),
               st.median(r["global_collections"] for r in runs),
               st.median(x["pauses"]["p99_ns"] for x in t) / 1e6, max(x["pauses"]["max_ns"] for x in t) / 1e6)
print(f"binarytrees depth 21, {repeat} runs per configuration (median [min, max])")
print("| vprocs | wall s | alloc rate GB/s | GC share | global GCs | pause p99 ms | pause max ms |")
print("|---|---|---|---|---|---|---|")
for v, (m, lo, hi, rate, gc, g, p99, pmax) in rows.items():
    print(f"| {v} | {m:.2f} [{lo:.2f}, {hi:.2f}] | {rate:.2f} | {100*gc:.0f} % | {g:.0f} | {p99:.1f} | {pmax:.1f} |")
print(f"speedup 1 -> 2 vprocs (ratio of medians): {rows[1][0] / rows[2][0]:.2f}")
PY
"$bin" bench alloc --repeat "$repeat" "$@"
