#!/usr/bin/env bash
# Reproduces docs/results/compiled.md (issue 18): the benchmarks written on
# the compiled-code interface against the safe API, the peers (GHC, OCaml 5,
# Java) and a C bump-arena binarytrees, side by side in one run per plan
# (alternated, REPEAT runs each), then the inline allocation path against a
# plain bump loop, then instructions per binarytrees node and per parfib
# call (callgrind) for numagc's two programs and OCaml 5's.
# Usage: scripts/bench-compiled.sh [REPEAT] [SUITE] [PARTS]
#   (defaults: 3 paper compare,alloc,instructions; PARTS picks what runs)
# Needs the peers (peers/install.sh, peers/install-ocaml5.sh) for the
# comparison and valgrind for the instruction counts; what is missing is
# skipped and said so.
set -euo pipefail
cd "$(dirname "$0")/.."
repeat=${1:-3}
suite=${2:-paper}
parts=${3:-compare,alloc,instructions}
has() { [[ ",$parts," == *",$1,"* ]]; }
out=docs/results/compiled
mkdir -p "$out"
cargo build --release -q -p numagc-cli
bin=target/release/numagc

if has compare; then
  for plan in split shared; do
    NUMAGC_PLAN=$plan "$bin" compare binarytrees parfib coins gcbench \
      --suite "$suite" --vprocs 1,2 --repeat "$repeat" --api compiled,compiled-calls,safe \
      --json "$out/compare-$plan.json" --markdown "$out/compare-$plan.md"
  done
fi

if has alloc; then
  "$bin" micro alloc --repeat 15 --json "$out/alloc.json"
fi

if ! has instructions; then
  exit 0
fi
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

# binarytrees at depth D: every node the program allocates. The smallest
# run (depth D0) gives what a run costs besides its nodes, and parfib's
# (n = 1, one call) besides its calls: the process's start (the dynamic
# loader, the CLI's argument parsing, the runtime's start) and end.
D, D0 = 16, 6
def tree(d): return (1 << (d + 1)) - 1
def all_nodes(top): return tree(top + 1) + tree(top) + sum((1 << (top - d + 4)) * tree(d) for d in range(4, top + 1, 2))
nodes, nodes0 = all_nodes(D), all_nodes(D0)
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
        bench = lambda name, *args: instructions(
            [bin_, "bench", name, *args, "--vprocs", "1", "--api", api, "--quiet"])
        if api == "compiled-calls":
            bt, bt0 = rows[-1]["binarytrees_instructions"], rows[-1]["binarytrees_instructions_smallest"]
        else:
            bt, bt0 = bench("binarytrees", "--depth", str(D)), bench("binarytrees", "--depth", str(D0))
        pf = bench("parfib", "--n", str(N), "--threshold", str(T))
        pf0 = bench("parfib", "--n", "1", "--threshold", str(T))
        rows.append({"runtime": f"numagc {api}", "plan": plan,
                     "binarytrees_instructions": bt, "binarytrees_instructions_smallest": bt0,
                     "parfib_instructions": pf, "parfib_instructions_smallest": pf0})
if os.access(f"{ocaml5}/binarytrees", os.X_OK):
    bt = instructions([f"{ocaml5}/binarytrees", str(D), "1"])
    bt0 = instructions([f"{ocaml5}/binarytrees", str(D0), "1"])
    pf = instructions([f"{ocaml5}/parfib", str(N), str(T), "1"])
    pf0 = instructions([f"{ocaml5}/parfib", "1", str(T), "1"])
    rows.append({"runtime": "OCaml 5.3", "plan": "-",
                 "binarytrees_instructions": bt, "binarytrees_instructions_smallest": bt0,
                 "parfib_instructions": pf, "parfib_instructions_smallest": pf0})
else:
    print("skipped: OCaml 5 (peers/install-ocaml5.sh, then peers/build.sh)")
for r in rows:
    # Whole process divided by the nodes or calls, and the marginal cost:
    # the difference from the smallest run, per node or call more.
    r["per_node"] = r["binarytrees_instructions"] / nodes
    r["per_call"] = r["parfib_instructions"] / pcalls
    r["per_node_marginal"] = (r["binarytrees_instructions"] - r["binarytrees_instructions_smallest"]) / (nodes - nodes0)
    r["per_call_marginal"] = (r["parfib_instructions"] - r["parfib_instructions_smallest"]) / (pcalls - 1)
json.dump({"binarytrees_depth": D, "binarytrees_smallest_depth": D0, "nodes": nodes,
           "nodes_smallest": nodes0, "parfib_n": N, "parfib_threshold": T,
           "calls": pcalls, "rows": rows}, open(dest, "w"), indent=1)
print(f"instructions (callgrind, 1 vproc/domain): binarytrees depth {D} ({nodes} nodes; "
      f"depth {D0}, {nodes0}, the smallest run), parfib {N} threshold {T} ({pcalls} calls; n = 1 the smallest)")
print("| runtime | plan | per binarytrees node, whole process | marginal | per parfib call, whole process | marginal |")
print("|---|---|---|---|---|---|")
for r in rows:
    print(f"| {r['runtime']} | {r['plan']} | {r['per_node']:.1f} | {r['per_node_marginal']:.1f} "
          f"| {r['per_call']:.1f} | {r['per_call_marginal']:.1f} |")
PY
