#!/usr/bin/env bash
# Speedup curves of the scale suite (issue 20, item 4): every benchmark at `--suite scale`
# on 1, 2, 4, 8, 16 vprocs (the powers of two up to the CPU count, and the CPU count itself),
# on each plan, REPEAT runs of each configuration alternated by the harness. Each benchmark
# is its own invocation with its own JSON and plots, so a run cut short (BUDGET_S, the
# seconds the whole script may take) keeps every benchmark that finished; the tables are
# printed as they come and collected in OUT/table.txt.
# Usage: scripts/bench-scaling.sh [BIN] [OUT] [REPEAT] [PLANS] [NAMES...]
#   BIN     a release `numagc` (default: build one with cargo; the 16-core machine has no
#           Rust toolchain, so a stripped binary is carried there, ../shared/scripts/device-pack.sh)
#   OUT     results directory (default docs/results/scaling)
#   REPEAT  runs per configuration (default 1)
#   PLANS   comma-separated plans (default split,shared)
#   NAMES   benchmarks (default: the whole suite)
# Environment: VPROCS overrides the vproc list; BUDGET_S (default 3000) bounds the run.
set -u
cd "$(dirname "$0")/.."
bin=${1:-}
out=${2:-docs/results/scaling}
repeat=${3:-1}
plans=${4:-split,shared}
shift $(( $# < 4 ? $# : 4 ))
if [ -z "$bin" ]; then
  cargo build --release -q -p numagc-cli || exit 1
  bin=target/release/numagc
fi
cpus=$(nproc)
if [ -z "${VPROCS:-}" ]; then
  VPROCS=""; k=1
  while [ "$k" -le "$cpus" ] && [ "$k" -le 16 ]; do
    VPROCS="$VPROCS${VPROCS:+,}$k"; k=$((k * 2))
  done
  last=$(( cpus < 16 ? cpus : 16 ))
  case ",$VPROCS," in *",$last,"*) ;; *) VPROCS="$VPROCS,$last" ;; esac
fi
if [ $# -gt 0 ]; then
  names="$*"
else
  # The names column of `bench --list` (every other line is a description).
  names=$("$bin" bench --list | awk 'NR > 1 && $0 !~ /^ / {print $1}')
fi
mkdir -p "$out"
{
  echo "date: $(date -u +%FT%TZ)"; echo "cpus: $cpus"; echo "vprocs: $VPROCS"
  echo "plans: $plans"; echo "repeat: $repeat"
  grep -m1 'model name' /proc/cpuinfo; grep MemTotal /proc/meminfo
  "$bin" --version 2>/dev/null
} >"$out/machine.txt"
end=$(( $(date +%s) + ${BUDGET_S:-3000} ))
: >"$out/table.txt"
for name in $names; do
  left=$(( end - $(date +%s) ))
  if [ "$left" -le 0 ]; then
    echo "$name: not run (BUDGET_S spent)" | tee -a "$out/table.txt"
    continue
  fi
  mkdir -p "$out/$name"
  timeout "$left" "$bin" bench "$name" --suite scale --vprocs "$VPROCS" --plan "$plans" \
    --repeat "$repeat" --quiet --json "$out/$name/runs.json" --plot "$out/$name" \
    | tee -a "$out/table.txt"
  rc=${PIPESTATUS[0]}
  [ "$rc" -eq 0 ] || echo "$name: exit status $rc" | tee -a "$out/table.txt"
done
