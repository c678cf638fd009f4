#!/usr/bin/env bash
# The cost of one fork: numagc's Scope::par2 (safe API) and Mutator::par2
# (compiled-code interface) against GHC's sparks (par/pseq) and Java's
# ForkJoinPool (fork/join), on parfib with thresholds so low that forks
# dominate (docs/results/par2-cost.md).
#
# ns per fork = (wall(threshold t) - wall(sequential: threshold n)) / forks,
# forks = the calls with argument above t (and at least 2) = F(n-t+2) - 1.
# Every run is a process (peers/alternate.py: spawn to exit, start-up
# included, which the difference cancels); for each K all configurations
# run in turn, ROUNDS rounds, medians.
#
# Usage: peers/par2-cost.sh [OUT_DIR]      (default docs/results/par2-cost)
#   after cargo build --release -p numagc-cli and peers/build.sh.
# Environment: NUMAGC (default target/release/numagc), N (34), THRESHOLDS
#   ("2 4 6 10"), VPROCS ("1 2"), ROUNDS (3), APIS ("safe compiled"; the
#   compiled interface is left out when numagc does not have it),
#   ALTERNATE_OPTS (more options of peers/alternate.py, e.g. "--quiet 0").
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
numagc="${NUMAGC:-$root/target/release/numagc}"
n="${N:-34}"
thresholds="${THRESHOLDS:-2 4 6 10}"
vprocs="${VPROCS:-1 2}"
rounds="${ROUNDS:-3}"
apis="${APIS:-safe compiled}"
ALTERNATE_OPTS="${ALTERNATE_OPTS:-}"   # e.g. "--quiet 0" (see peers/alternate.py)
out="${1:-$root/docs/results/par2-cost}"
b="$root/peers/build"
mkdir -p "$out"
help="$("$numagc" bench --help)"
api_flag=1
case "$help" in *--api*) ;; *) apis="safe"; api_flag= ;; esac

for k in $vprocs; do
    cmds=()
    for t in $thresholds $n; do
        for api in $apis; do
            cmds+=("!numagc-$api-t$t=$numagc bench parfib --n $n --threshold $t --vprocs $k ${api_flag:+--api $api} --quiet")
        done
        cmds+=("ghc-t$t=$b/haskell/parfib $n $t +RTS -N$k -A32m -RTS")
        cmds+=("java-t$t=java -XX:+UseParallelGC -cp $b/java Parfib $n $t $k")
    done
    # shellcheck disable=SC2086
    "$root/peers/alternate.py" --rounds "$rounds" $ALTERNATE_OPTS --json "$out/k$k.json" "${cmds[@]}"
done

python3 - "$out" "$n" "$thresholds" "$vprocs" <<'EOF'
import json, re, statistics, sys
out, n, ts, ks = sys.argv[1], int(sys.argv[2]), [int(t) for t in sys.argv[3].split()], sys.argv[4].split()

def fib(m):
    a, b = 0, 1
    for _ in range(m):
        a, b = b, a + b
    return a

def forks(t):
    return 0 if t >= n else fib(n - t + 2) - 1

want = fib(n)
lines = ["| K | runtime | threshold | forks | wall s, median [min, max] | CPU s | ns per fork (wall) | ns per fork (CPU) |",
         "|---|---|---|---|---|---|---|---|"]
for k in ks:
    d = json.load(open(f"{out}/k{k}.json"))
    runs = d["runs"]
    runtimes = sorted({l.rsplit("-t", 1)[0] for l in runs}, key=lambda r: (not r.startswith("numagc"), r))
    for rt in runtimes:
        seq = runs[f"{rt}-t{n}"]
        seq_wall = statistics.median(r["wall_s"] for r in seq)
        seq_cpu = statistics.median(r["cpu_s"] for r in seq)
        for t in ts + [n]:
            rs = runs[f"{rt}-t{t}"]
            for r in rs:
                # numagc checks its answer itself (its table says ok); peers print it
                if rt.startswith("numagc"):
                    assert re.search(r"\bok\s*$", r["output"].strip()), r["output"]
                else:
                    assert r["output"].strip().endswith(f"= {want}"), r["output"]
            w = [r["wall_s"] for r in rs]
            wm, cm = statistics.median(w), statistics.median(r["cpu_s"] for r in rs)
            f = forks(t)
            per_w = f"{(wm - seq_wall) / f * 1e9:.0f}" if f else "-"
            per_c = f"{(cm - seq_cpu) / f * 1e9:.0f}" if f else "-"
            lines.append(f"| {k} | {rt} | {t if t < n else f'{t} (sequential)'} | {f:,} | {wm:.3f} [{min(w):.3f}, {max(w):.3f}] "
                         f"| {cm:.3f} | {per_w} | {per_c} |")
table = "\n".join(lines) + "\n"
open(f"{out}/table.md", "w").write(table)
print(table)
EOF
