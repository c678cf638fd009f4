#!/usr/bin/env bash
# Fuzzing campaigns over numagc's fuzz targets (fuzz/, cargo-fuzz + libFuzzer).
#
#   scripts/fuzz.sh [SECONDS] [TARGET...]
#
# Runs each TARGET (default: every target, `config descriptor capi`) for
# SECONDS (default 600) and prints, per target, the executions libFuzzer
# made, the time, the corpus size and whether it found anything (a crash,
# a panic, an abort, a timeout of one input over 10 s, or an input using
# more than 2 GiB). Exits 1 when any target found something; the inputs
# that did are in fuzz/artifacts/TARGET/ (replay one with
# `cargo fuzz run --sanitizer none --features libfuzzer TARGET FILE`, or copy it
# into fuzz/regressions/TARGET/ so that `cargo test --manifest-path
# fuzz/Cargo.toml` replays it for good).
#
# Toolchain: the stable one is enough. cargo-fuzz's default AddressSanitizer
# build needs `-Zsanitizer`, i.e. nightly, so the targets are built with
# `--sanitizer none` (libFuzzer's coverage instrumentation is stable rustc
# flags; debug assertions are on). FUZZ_SANITIZER=address builds them with
# ASan instead (on a stable toolchain through RUSTC_BOOTSTRAP=1, which the
# script sets; 2.5 times slower per input). cargo-fuzz itself is installed
# with `cargo install cargo-fuzz --locked` when it is missing (half a
# minute). The corpus grows in fuzz/corpus/TARGET/ (not committed) and is
# reused by the next campaign.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

seconds="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=(config descriptor capi)
fi
case "$seconds" in
  ''|*[!0-9]*) echo "usage: scripts/fuzz.sh [SECONDS] [TARGET...]" >&2; exit 2 ;;
esac

if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "installing cargo-fuzz (cargo install cargo-fuzz --locked)"
  cargo install cargo-fuzz --locked
fi
sanitizer="${FUZZ_SANITIZER:-none}"
if [ "$sanitizer" != none ] && ! rustc --version | grep -q nightly; then
  export RUSTC_BOOTSTRAP=1 # -Zsanitizer on a stable toolchain
fi

for t in "${targets[@]}"; do
  cargo fuzz build --sanitizer "$sanitizer" --features libfuzzer -O "$t"
done

found=0
summary=()
for t in "${targets[@]}"; do
  mkdir -p "fuzz/corpus/$t" "fuzz/artifacts/$t"
  log="fuzz/artifacts/$t/last-run.log"
  stamp=$(mktemp)
  before=$(find "fuzz/artifacts/$t" -type f ! -name '*.log' | wc -l)
  echo "== $t: ${seconds}s"
  status=0
  # -timeout: one input running over 10 s is a hang; -rss_limit_mb: an
  # input over 2 GiB is a finding; -max_len: programs are short.
  cargo fuzz run --sanitizer "$sanitizer" --features libfuzzer -O "$t" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=4096 -len_control=0 \
    -print_final_stats=1 >"$log" 2>&1 || status=$?
  after=$(find "fuzz/artifacts/$t" -type f ! -name '*.log' | wc -l)
  runs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE '[0-9]+' | head -1 || true)
  secs=$(grep -oE 'Done [0-9]+ runs in [0-9]+ second' "$log" | tail -1 | grep -oE '[0-9]+' | tail -1 || true)
  if [ -z "$runs" ]; then
    # Stopped early (a finding): the last status line has the count.
    runs=$(grep -oE '^#[0-9]+' "$log" | tail -1 | tr -d '#' || true)
    secs="?"
  fi
  corpus=$(find "fuzz/corpus/$t" -type f | wc -l)
  if [ "$status" -ne 0 ] || [ "$after" -gt "$before" ]; then
    found=1
    verdict="FOUND (exit $status): $(find "fuzz/artifacts/$t" -type f ! -name '*.log' -newer "$stamp" | head -3 | tr '\n' ' ')"
    grep -E 'panicked at|ERROR: libFuzzer|SUMMARY' "$log" | head -5 || true
  else
    verdict="nothing found"
  fi
  rm -f "$stamp"
  line="$t: ${runs:-0} executions in ${secs:-?} s, corpus $corpus inputs, $verdict"
  echo "$line"
  summary+=("$line")
done

echo
echo "== summary (${seconds}s per target; logs in fuzz/artifacts/TARGET/last-run.log)"
printf '%s\n' "${summary[@]}"
exit "$found"
