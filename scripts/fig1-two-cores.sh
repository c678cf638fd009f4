#!/usr/bin/env bash
# What two cores of this machine give Fig. 1 (issue 7's 2-thread speedup
# target): for each X, REPS rounds, each of them taking in turn
#   alone:    one 1-thread run;
#   together: two 1-thread runs at the same time (independent processes,
#             nothing shared: what the machine itself gives two programs);
#   2 threads: one 2-thread run (with --waits: each thread's time waiting at
#             the with-loops' barriers);
# for the no-allocation bound (--bound) and for numagc-rich (--rich). Prints
# per X and mode the medians and the median per-round ratios:
#   pair  = 2 * alone / (the slower of together): the machine's throughput
#           speedup for two independent runs;
#   speedup = alone / (2 threads): the 1 -> 2 thread speedup;
#   waited  = the 2-thread run's longer total wait of its two threads, ms.
# Usage: scripts/fig1-two-cores.sh [XS] [REPS]   (defaults: 1000,250,100,25 11)
set -euo pipefail
cd "$(dirname "$0")/.."
xs=${1:-1000,250,100,25}; reps=${2:-11}
cargo build --release -q -p numagc-arena-bench
w=target/release/arena-workload
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
secs() { sed -n 's/.*seconds=//p'; }
echo "X mode alone_median together_median 2threads_median pair speedup waited_ms (medians of $reps rounds)"
for x in ${xs//,/ }; do
  for mode in --bound --rich; do
    : > "$tmp/rows"
    for _ in $(seq "$reps"); do
      a=$($w fig1 --x "$x" --threads 1 $mode | secs)
      $w fig1 --x "$x" --threads 1 $mode > "$tmp/p1" &
      $w fig1 --x "$x" --threads 1 $mode > "$tmp/p2"
      wait
      b=$(secs < "$tmp/p1"); c=$(secs < "$tmp/p2")
      line=$($w fig1 --x "$x" --threads 2 $mode --waits)
      d=$(secs <<< "$line")
      e=$(sed -n 's/.* waited_ms=\([^ ]*\).*/\1/p' <<< "$line" | tr ',' '\n' | sort -g | tail -1)
      echo "$a $b $c $d $e" >> "$tmp/rows"
    done
    awk -v x="$x" -v mode="${mode#--}" '
      function median(v, n,   i, j, t) {
        for (i = 2; i <= n; i++) { t = v[i]; for (j = i - 1; j > 0 && v[j] > t; j--) v[j+1] = v[j]; v[j+1] = t }
        return n % 2 ? v[(n+1)/2] : (v[n/2] + v[n/2+1]) / 2
      }
      { n++; slow = ($2 > $3) ? $2 : $3
        al[n] = $1; to[n] = slow; tw[n] = $4; pr[n] = 2 * $1 / slow; sp[n] = $1 / $4; wt[n] = $5 }
      END { printf "%s %s %.4f %.4f %.4f %.3f %.3f %.2f\n", x, mode, median(al, n), median(to, n), median(tw, n), median(pr, n), median(sp, n), median(wt, n) }
    ' "$tmp/rows"
  done
done
