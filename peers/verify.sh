#!/usr/bin/env bash
# Checks that each built peer prints exactly numagc's output for the same
# parameters (the quick size by default): runs numagc's version once on one
# vproc (the numagc-bench `run` example prints the output of its first run)
# and diffs each peer's output with it.
# Usage: peers/verify.sh [BENCH...]     (after peers/build.sh)
set -uo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
b="$root/peers/build"
workers=2
# name | numagc name | quick parameters, in the order of the benchmark's params()
declare -A args=(
    [binarytrees]="18"
    [parfib]="30 15"
    [gcbench]="17 15 16 250000 4096"
    [coins]="600 4"
    [sumeuler]="5000 100"
    [mandelbrot]="512 1000"
    [nbody]="512 100 1"
    [quicksort]="300000 10000 1024 1"
)
declare -A java=([binarytrees]=BinaryTrees [parfib]=Parfib [gcbench]=GCBench [coins]=Coins
    [sumeuler]=SumEuler [mandelbrot]=Mandelbrot [nbody]=NBody [quicksort]=Quicksort)
benches=("$@")
[ ${#benches[@]} -eq 0 ] && benches=(binarytrees parfib gcbench coins sumeuler mandelbrot nbody quicksort)
# NUMAGC_RUN: a built numagc-bench `run` example to use instead of building
# one with cargo (e.g. while another build holds the target directory).
if [ -n "${NUMAGC_RUN:-}" ]; then run=("$NUMAGC_RUN")
else
    (cd "$root" && cargo build --release -q -p numagc-bench --example run) || exit 1
    run=(cargo run --release -q -p numagc-bench --example run --)
fi
fail=0
for n in "${benches[@]}"; do
    want="$(mktemp)"
    (cd "$root" && "${run[@]}" "$n" quick 1 1) |
        sed -n '2,$p' | grep -v '^  vprocs ' > "$want"
    [ -s "$want" ] || { echo "$n: numagc printed nothing"; fail=1; continue; }
    a="${args[$n]}"
    check() {
        local label="$1"; shift
        if [ ! -x "$1" ] && [ "$1" != java ]; then echo "$n $label: not built"; return; fi
        if "$@" 2>/dev/null | diff -q "$want" - >/dev/null; then echo "$n $label: same output"
        else echo "$n $label: DIFFERENT"; fail=1; fi
    }
    check haskell "$b/haskell/$(echo "$n")" $a +RTS -N$workers -RTS
    check ocaml "$b/ocaml/$n" $a
    # OCaml 5 as numagc compare runs it: under gcpauses (runtime events on).
    if [ -x "$b/ocaml5/gcpauses" ]; then check ocaml5 "$b/ocaml5/gcpauses" "$b/ocaml5/$n" $a $workers
    else echo "$n ocaml5: not built"; fi
    # C (only binarytrees has one): THREADS = workers.
    if [ -f "$root/peers/c/$n.c" ]; then check c "$b/c/$n" $a $workers; fi
    if [ -f "$b/java/${java[$n]}.class" ]; then
        check java-parallelgc java -XX:+UseParallelGC -cp "$b/java" "${java[$n]}" $a $workers
        check java-g1 java -XX:+UseG1GC -cp "$b/java" "${java[$n]}" $a $workers
    else echo "$n java: not built"; fi
    rm -f "$want"
done
exit $fail
