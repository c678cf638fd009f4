#!/usr/bin/env bash
# Reproduces docs/results/parfib.md: parfib at 1 and 2 vprocs with lazy and
# eager promotion of forked tasks' environments, REPEAT runs of each
# configuration, alternating (1/lazy 2/lazy 1/eager 2/eager ...) so drift in
# machine speed hits all alike; medians with min/max, speedups, bytes
# promoted. Usage: scripts/bench-parfib.sh [REPEAT] [extra numagc flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-5}; shift || true
cargo build --release -q -p numagc-cli
bin=target/release/numagc
out=$(mktemp -d)
for i in $(seq 1 "$repeat"); do
  for p in lazy eager; do
    "$bin" bench parfib --vprocs 1,2 --task-promotion "$p" --quiet --json "$out/pf-$p-$i.json" "$@" > /dev/null
  done
done
python3 - "$out" "$repeat" <<'PY'
import json, sys, statistics as st
out, repeat = sys.argv[1], int(sys.argv[2])
runs = {}
for p in ("lazy", "eager"):
    for i in range(1, repeat + 1):
        for r in json.load(open(f"{out}/pf-{p}-{i}.json"))["runs"]:
            assert r["correct"], "wrong answer"
            runs.setdefault((p, r["vprocs"]), []).append(r)
first = runs["lazy", 1][0]["params"]
print(f"parfib {first['n']} (threshold {first['threshold']}), {repeat} runs per configuration (median [min, max])")
print("| promotion | vprocs | wall s | tasks forked | stolen | bytes promoted |")
print("|---|---|---|---|---|---|")
med = {}
for (p, v), rs in runs.items():
    w = [r["wall_s"] for r in rs]
    med[p, v] = st.median(w)
    print(f"| {p} | {v} | {st.median(w):.3f} [{min(w):.3f}, {max(w):.3f}] | {rs[0]['tasks_forked']} | "
          f"{st.median(r['tasks_stolen'] for r in rs):.0f} | {st.median(r['bytes_promoted'] for r in rs):.0f} |")
for p in ("lazy", "eager"):
    # Each 1-vproc run is paired with the 2-vproc run right after it, so a
    # drift in the VM's speed cancels out of each ratio.
    pairs = sorted(a["wall_s"] / b["wall_s"] for a, b in zip(runs[p, 1], runs[p, 2]))
    print(f"speedup 1 -> 2 vprocs, {p}: ratio of medians {med[p, 1] / med[p, 2]:.2f}; "
          f"median of paired ratios {st.median(pairs):.2f} [{pairs[0]:.2f}, {pairs[-1]:.2f}]")
print(f"eager / lazy wall time at 2 vprocs: {med['eager', 2] / med['lazy', 2]:.2f}")
PY
