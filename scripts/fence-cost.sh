#!/usr/bin/env bash
# What a sequentially consistent fence costs on this machine: a loop that
# stores and fences, against the same loop without the fence (3 rounds of
# 10^8 iterations). docs/results/par2-cost.md uses it to explain a fork's
# cost (a Chase-Lev pop and a wake-up check each had one). Needs cc.
set -euo pipefail
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/fence.c" <<'C'
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
int main(void) {
    volatile long x = 0;
    const long n = 100000000;
    for (int r = 0; r < 3; r++) {
        double t0 = now();
        for (long i = 0; i < n; i++) {
            x = i;
            atomic_thread_fence(memory_order_seq_cst);
        }
        double t1 = now();
        for (long i = 0; i < n; i++)
            x = i;
        double t2 = now();
        printf("store + fence %.2f ns, store alone %.2f ns\n", (t1 - t0) / n * 1e9,
               (t2 - t1) / n * 1e9);
    }
    return 0;
}
C
cc -O2 -o "$tmp/fence" "$tmp/fence.c"
"$tmp/fence"
