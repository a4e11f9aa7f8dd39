#!/usr/bin/env bash
# Runs every fuzz target for SECONDS each (or until FUZZ_RUNS executions, when set), starting
# from the checked-in seeds; new inputs go to BUILD/corpus/<target> (kept between runs),
# crashes to BUILD/crashes/. Prints each target's executions and rate.
# Usage: [FUZZ_RUNS=N] fuzz/run.sh BUILD SECONDS [TARGET...]
set -euo pipefail
build=$1
seconds=$2
shift 2
cd "$(dirname "$0")/.."
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=(http_request signature normalize config rules junit)
mkdir -p "$build/crashes"
status=0
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/fuzz-$t.log"
  max_len=65536
  [[ $t == signature || $t == normalize ]] && max_len=16384
  runs=()
  [[ -n ${FUZZ_RUNS:-} ]] && runs=(-runs="$FUZZ_RUNS")
  if ! "$build/fuzz/fuzz_$t" -max_total_time="$seconds" "${runs[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=$max_len \
      -print_final_stats=1 -artifact_prefix="$build/crashes/$t-" "$build/corpus/$t" "fuzz/corpus/$t" >"$log" 2>&1; then
    echo "fuzz: $t FAILED (see $log and $build/crashes/)"
    status=1
  fi
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo '?')
  echo "fuzz: $t: $execs executions ($rate/s)"
done
exit $status
