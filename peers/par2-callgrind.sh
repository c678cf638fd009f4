#!/usr/bin/env bash
# Instructions per fork of numagc's par2 (safe and compiled APIs) and of
# GHC's sparks, and where numagc's go (docs/results/par2-cost.md): parfib
# n under callgrind at threshold 2 and at threshold n (sequential), one
# vproc / -N1; per function, (self instructions at 2 - at n) / forks.
# Usage: peers/par2-callgrind.sh [OUT]   (default docs/results/par2-cost/callgrind.txt)
# Environment: NUMAGC (default target/release/numagc), N (27). Needs valgrind.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
numagc="${NUMAGC:-$root/target/release/numagc}"
n="${N:-27}"
out="${1:-$root/docs/results/par2-cost/callgrind.txt}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cg() { valgrind --tool=callgrind --callgrind-out-file="$tmp/$1" "${@:2}" >/dev/null 2>&1
       callgrind_annotate --auto=no --threshold=100 "$tmp/$1" > "$tmp/$1.txt"; }
for api in safe compiled; do
    for t in 2 "$n"; do cg "$api.t$t" "$numagc" bench parfib --n "$n" --threshold "$t" --vprocs 1 --api "$api" --quiet; done
    cg "$api.start" "$numagc" bench parfib --n 1 --threshold 1 --vprocs 1 --api "$api" --quiet
done
for t in 2 "$n"; do cg "ghc.t$t" "$root/peers/build/haskell/parfib" "$n" "$t" +RTS -N1 -A32m -RTS; done
cg ghc.start "$root/peers/build/haskell/parfib" 1 1 +RTS -N1 -A32m -RTS

python3 - "$tmp" "$n" > "$out" <<'EOF'
import collections, re, sys
tmp, n = sys.argv[1], int(sys.argv[2])
def F(m):
    a, b = 0, 1
    for _ in range(m):
        a, b = b, a + b
    return a
forks, calls = F(n) - 1, 2 * F(n + 1) - 1
def parse(name, key):
    c, total = collections.Counter(), 0
    for line in open(f"{tmp}/{name}.txt"):
        m = re.match(r'^\s*([\d,]+)\s+\(\s*[\d.]+%\)\s+(.*)$', line)
        if not m:
            continue
        v, rest = int(m.group(1).replace(',', '')), m.group(2)
        if rest.startswith('PROGRAM TOTALS'):
            total = v
            continue
        file, _, fn = re.sub(r'\s+\[[^\]]*\]$', '', rest).partition(':')
        k = re.sub(r"'\d+$", '', fn) if key == 'function' else file
        k = re.sub(r'/rustc/[0-9a-f]+/library/', 'rust:', k)
        c[re.sub(r'^.*/crates/', '', k)] += v
    return total, c
print(f"# callgrind, parfib n={n}, 1 vproc / -N1: (self instructions at threshold 2 - at threshold {n}) / {forks:,} forks")
print("# columns: instructions per fork, share of the difference, function (or source file)")
for rt in ["safe", "compiled", "ghc"]:
    for key in (["function", "file"] if rt != "ghc" else ["function"]):
        ta, a = parse(f"{rt}.t2", key)
        tb, b = parse(f"{rt}.t{n}", key)
        ts, _ = parse(f"{rt}.start", key)
        print(f"\n## {rt}, by {key}: {ta:,} instructions at threshold 2, {tb:,} sequential, {ts:,} start-up")
        print(f"   per fork {(ta - tb) / forks:.0f}; per sequential call {(tb - ts) / calls:.1f} ({calls:,} calls)")
        d = sorted(((k, a[k] - b[k]) for k in set(a) | set(b)), key=lambda kv: -kv[1])
        for k, v in d:
            if abs(v) >= forks:
                print(f"{v / forks:8.1f}  {100 * v / (ta - tb):5.1f}%  {k}")
EOF
{
    echo
    echo "## who calls malloc, free and memcpy at threshold 2 (callgrind_annotate --tree=caller; calls in parentheses)"
    for api in safe compiled; do
        echo "### $api"
        for f in "malloc.c:malloc " "malloc.c:free " "__memcpy_avx_unaligned_erms"; do
            callgrind_annotate --auto=no --tree=caller --threshold=100 "$tmp/$api.t2" 2>/dev/null |
                awk -v pat="$f" '/^$/{blk=""; next} {blk=blk"\n"$0} index($0,"* ") && index($0,pat){print blk}' |
                grep -E "\([0-9,]{6,}x\)|\*" | sed -E 's#/rustc/[0-9a-f]+/library/##; s#\[/[^]]*\]##' || true
        done
    done
} >> "$out"
echo "wrote $out"
