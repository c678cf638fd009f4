#!/usr/bin/env bash
# The many-core experiments, in one run on a machine of many CPUs (issues 19 and 20): what a
# 2-core machine cannot show. Each step has its own time limit, so a slow step costs its own
# figures and not the others'; everything lands in OUTDIR (logs, JSON, plots) and
# OUTDIR.tar.gz.
#   1. correctness at this width: the torture tester on both plans at all CPUs, and its hybrid
#      mode at 4 PEs;
#   2. Table 2 of gumsmp-shared-distributed-heaps.txt in process: the seven benchmarks on
#      1, 2, 4, ... PEs with the total vprocs held at the CPU count (--pes ... --cores N), both
#      plans, alternated by the harness's repetitions;
#   3. scaling of the whole suite, 1 vproc against all CPUs, on each plan.
# Timed-out steps keep the figures of the benchmarks that finished.
# Usage: scripts/many-cores.sh BIN OUTDIR [paper|quick|scale]   (BIN: a release `numagc`, stripped or
# not; the machine needs nothing else). Summarise with scripts/many-cores-summary.py OUTDIR.
set -u
bin=$1
out=$2
size=${3:-paper}
cores=${CORES:-$(nproc)}
mkdir -p "$out"
step() { # step NAME SECONDS COMMAND...: runs COMMAND with a limit, its output in NAME.txt
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s%N)
  timeout "$limit" "$@" >"$out/$name.txt" 2>&1
  local rc=$?
  echo "$name: rc $rc, $(( ($(date +%s%N) - t0) / 1000000 )) ms" | tee -a "$out/steps.txt"
}
{
  echo "date: $(date -u +%FT%TZ)"; echo "cpus: $cores"; uname -a
  grep -m1 'model name' /proc/cpuinfo; grep MemTotal /proc/meminfo
  ls /sys/devices/system/node 2>/dev/null | grep -c '^node' | sed 's/^/numa nodes in \/sys: /'
  "$bin" --version 2>/dev/null
} >"$out/machine.txt" 2>&1

# PE counts: the powers of two that divide the CPU count.
pes=""; p=1
while [ $p -le "$cores" ]; do
  [ $((cores % p)) -eq 0 ] && pes="$pes${pes:+,}$p"
  p=$((p * 2))
done

# Phases run against time budgets (seconds; HYBRID_S, SCALING_S, TORTURE=0 skips the torture
# runs): each benchmark is its own invocation with its own JSON, so a phase cut short keeps what
# finished, and each table is printed as it comes.
phase_end=0
budget() { phase_end=$(( $(date +%s) + $1 )); }
left() { echo $(( phase_end - $(date +%s) )); }
bench() { # bench NAME ARGS...: one invocation, within what is left of the phase
  local name=$1; shift
  local t=$(left)
  if [ "$t" -le 5 ]; then echo "$name: skipped, phase budget spent" | tee -a "$out/steps.txt"; return; fi
  step "$name" "$t" "$bin" bench "$@" --quiet --json "$out/$name.json"
  grep -E '^[a-z0-9_-]+ +(split|shared)' "$out/$name.txt" | awk '{print $1, $2, $4, $6, $7}'
}
if [ "${TORTURE:-1}" != 0 ]; then
  step torture-split 40 "$bin" torture --seconds 12 --vprocs "$cores" --plan split
  step torture-shared 40 "$bin" torture --seconds 12 --vprocs "$cores" --plan shared
  step torture-hybrid 40 "$bin" torture --seconds 8 --pes 4 --plan shared
fi
budget "${HYBRID_S:-300}"
for b in parfib coins sumeuler worpitzky maze mandelbrot blackscholes; do
  bench "hybrid-$b" "$b" --suite "$size" --pes "$pes" --cores "$cores" --plan split,shared \
    --repeat "${HYBRID_REPEAT:-3}"
done
budget "${SCALING_S:-600}"
for plan in ${SCALING_PLANS:-split shared}; do
  # Shortest first, so that a phase cut short still covers most of the suite.
  for b in gcbench dmm smvm raytracer lu_decomposition parfib matrix_multiplication nbody \
    mandelbrot quicksort spectralnorm floyd_warshall mandelbrot6 worpitzky coins game_of_life \
    blackscholes maze sumeuler binarytrees barnes-hut; do
    bench "scaling-$plan-$b" "$b" --suite "$size" --plan "$plan" --vprocs "1,$cores"
  done
done
tar -czf "$out.tar.gz" -C "$(dirname "$out")" "$(basename "$out")"
