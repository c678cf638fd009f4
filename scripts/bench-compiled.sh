#!/usr/bin/env bash
# Reproduces docs/results/compiled.md (issue 18): the benchmarks written on
# the compiled-code interface against the safe API, the peers (GHC, OCaml 5,
# Java) and a C bump-arena binarytrees, side by side in one run per plan
# (alternated, REPEAT runs each), then the inline allocation path against a
# plain bump loop, then instructions per binarytrees node and per parfib
# call (callgrind) for numagc's two programs and OCaml 5's.
# Usage: scripts/bench-compiled.sh [REPEAT] [SUITE]     (defaults: 3 paper)
# Needs the peers (peers/install.sh, peers/install-ocaml5.sh) for the
# comparison and valgrind for the instruction counts; what is missing is
# skipped and said so.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
suite=${2:-paper}
out=docs/results/compiled
mkdir -p "$out"
cargo build --release -q -p numagc-cli
bin=target/release/numagc

for plan in split shared; do
  NUMAGC_PLAN=$plan "$bin" compare binarytrees parfib coins gcbench \
    --suite "$suite" --vprocs 1,2 --repeat "$repeat" --api compiled,compiled-calls,safe \
    --json "$out/compare-$plan.json" --markdown "$out/compare-$plan.md"
done

"$bin" micro alloc --repeat 5 --json "$out/alloc.json"

if ! command -v valgrind > /dev/null; then
  echo "skipped: instruction counts (valgrind not installed; scripts/install-deps.sh installs it)"
  exit 0
fi
python3 - "$bin" "$out/instructions.json" <<'PY'
import json, os, re, subprocess, sys, tempfile
bin_, dest = sys.argv[1], sys.argv[2]
ocaml5 = "peers/build/ocaml5"

def instructions(cmd):
    with tempfile.TemporaryDirectory() as d:
        f = os.path.join(d, "cg.out")
        subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + f] + cmd,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for line in open(f):
            if line.startswith("summary:") or line.startswith("totals:"):
                return int(line.split()[1])
    raise SystemExit("no callgrind summary for " + " ".join(cmd))

# binarytrees at depth D: every node the program allocates.
D = 16
def tree(d): return (1 << (d + 1)) - 1
nodes = tree(D + 1) + tree(D) + sum((1 << (D - d + 4)) * tree(d) for d in range(4, D + 1, 2))
# parfib N with threshold T: every call of pfib (one box each).
N, T = 27, 10
calls = {}
def count(n):
    if n < 2: return 1
    if n not in calls: calls[n] = 1 + count(n - 1) + count(n - 2)
    return calls[n]
pcalls = count(N)

rows = []
for plan in ("split", "shared"):
    for api in ("compiled", "compiled-calls", "safe"):
        os.environ["NUMAGC_PLAN"] = plan
        # binarytrees has no machine-call version: the compiled program's count.
        if api == "compiled-calls":
            bt = rows[-1]["binarytrees_instructions"]
        else:
            bt = instructions([bin_, "bench", "binarytrees", "--depth", str(D), "--vprocs", "1",
                               "--api", api, "--quiet"])
        pf = instructions([bin_, "bench", "parfib", "--n", str(N), "--threshold", str(T),
                           "--vprocs", "1", "--api", api, "--quiet"])
        rows.append({"runtime": f"numagc {api}", "plan": plan,
                     "binarytrees_instructions": bt, "parfib_instructions": pf})
if os.access(f"{ocaml5}/binarytrees", os.X_OK):
    bt = instructions([f"{ocaml5}/binarytrees", str(D), "1"])
    pf = instructions([f"{ocaml5}/parfib", str(N), str(T), "1"])
    rows.append({"runtime": "OCaml 5.3", "plan": "-",
                 "binarytrees_instructions": bt, "parfib_instructions": pf})
else:
    print("skipped: OCaml 5 (peers/install-ocaml5.sh, then peers/build.sh)")
for r in rows:
    r["per_node"] = r["binarytrees_instructions"] / nodes
    r["per_call"] = r["parfib_instructions"] / pcalls
json.dump({"binarytrees_depth": D, "nodes": nodes, "parfib_n": N, "parfib_threshold": T,
           "calls": pcalls, "rows": rows}, open(dest, "w"), indent=1)
print(f"instructions (callgrind, whole process, 1 vproc/domain): binarytrees depth {D} "
      f"({nodes} nodes), parfib {N} threshold {T} ({pcalls} calls)")
print("| runtime | plan | per binarytrees node | per parfib call |")
print("|---|---|---|---|")
for r in rows:
    print(f"| {r['runtime']} | {r['plan']} | {r['per_node']:.1f} | {r['per_call']:.1f} |")
PY
